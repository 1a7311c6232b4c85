"""Step 7 — deploy: an OpenAI-compatible server on what was exported, detached, checked with a chat completion and a
streamed one that must both end where the model ends its turn.

The launch comes from the session, not retyped: the model directory and format (export step), the served name, the
chat template, the longest context from the memory model's KV-cache budget (:func:`recipes.memory.model.serving`), the GPU
memory utilization, tensor parallelism over the GPUs the strategy chose, CUDA graphs or not, and the LoRA adapter
served unmerged when asked (maximum LoRA rank from its adapter_config.json). The options come from the installed
engine version's argument table — committed, or read from the engine's own parser when yichui has none for that
version (:mod:`recipes.serving.engines`) — and are checked against the engine's own ``--help`` before the start.

The replies are checked, not only received: both must end with ``finish_reason == "stop"`` within
:data:`STOP_CHECK_TOKENS`. When the export showed that the merged model stops and the served one does not, the step
fails with the likely cause (a server that never stops is a serving fault, not the model's); a model that never
stopped in the export's check either gets a warning. The engine's own KV-cache size (when it logs one) is recorded
beside the memory model's prediction.

The server binds 127.0.0.1 unless the user asks for another address; then an API key is mandatory: generated once,
kept in ``<run>/serve/api_key`` (mode 0600), never in the session, on a command line or in the server's log.
``transformers serve`` has no API key, so it stays on loopback.
"""
from __future__ import annotations

import json
import math
import re
import shlex
import time
from pathlib import Path

from recipes.rundir import SERVER, RunDir, ServeDir
from recipes import jobs, rundir
from recipes.memory import model as memory
from recipes.envs import envs_dir
from recipes.base import Choice, Ctx, Msg, Question, Record, StepError, in_range, msg
from recipes.handoff import (Deployment, Download, ExportResult, MemoryEvaluation, ModelChoice, StrategyChoice,
                             TrainingResult, trusted)
from recipes.serving import client, engines, keys, phases, server
from recipes.serving import parity as parity_
from recipes.serving import spec as specs
from recipes.serving.server import LOOPBACK, claim_port, client_base, host_error, port_free, reserve_port, \
    wait_healthy

name = "deploy"
requires = ("select_model", "evaluate_memory", "choose_strategy", "download", "train", "export")
BACKENDS = specs.ENGINES
GPU_ENGINES = specs.GPU_ENGINES
STOP_CHECK_TOKENS = 256  # the replies of the start-up check must end within this many tokens
STATUS_EVERY_S = 5.0  # the engine's start: its phase and time so far, refreshed at least this often
WEIGHT_FORMAT = {"merged": "bf16", "gptq-w4a16": "gptq", "awq-w4a16": "awq", "fp8-dynamic": "fp8", "bnb-4bit": "bnb4",
                 "bnb-8bit": "bnb8"}


def envs(ctx: Ctx) -> Path:
    """Where the engines' own environments live (the quantizer's too): ``YICHUI_ENVS``, else ``YICHUI_HOME/envs``."""
    return envs_dir(ctx.home)


class NotKnownYet(Exception):
    """A question's choices depend on steps of this run that have not finished yet (the engine's check of --set
    values before any work skips it; the step checks the answer when it runs)."""


def adapter_info(ctx: Ctx) -> dict | None:
    """The trained LoRA adapter that can be served unmerged: ``{"path", "rank"}`` (rank: the largest of ``r`` and
    ``rank_pattern`` in adapter_config.json), or None (full fine-tune, DoRA, no adapter on disk)."""
    path = ctx.result(TrainingResult).adapter_dir
    try:
        cfg = json.loads((Path(path) / "adapter_config.json").read_text()) if path else None
    except (OSError, ValueError):
        return None
    if not cfg or cfg.get("use_dora"):
        return None  # the engines serve plain LoRA; a DoRA adapter is served merged
    rank = max([int(cfg.get("r") or 0), *map(int, (cfg.get("rank_pattern") or {}).values())])
    return {"path": str(path), "rank": rank}


def _gpu(ctx: Ctx) -> tuple[float, int]:
    """(GiB per GPU, GPUs on this machine) from the memory step, or what is detected now."""
    found = memory.detect_gpus()
    gpu = ctx.result(MemoryEvaluation).gpu
    return float(gpu.memory_gib or (found[0]["memory_gib"] if found else 80.0)), len(found)


def serving_budget(ctx: Ctx, a: dict) -> dict | None:
    """The memory model's serving estimate for the answers so far (None when the shape is unknown): the weights of
    the chosen export (an unmerged adapter beside the base's bf16 weights), CUDA graphs or not, on the target GPU,
    as the chosen engine sizes its KV cache."""
    mem = ctx.result(MemoryEvaluation)
    shape = mem.model_shape()
    if shape is None:
        return None
    gib, _ = _gpu(ctx)
    adapter = adapter_info(ctx) if a.get("model") == "adapter" else None
    fmt = WEIGHT_FORMAT.get(a.get("model", "merged"), "bf16")
    if shape.prequantized_bytes and (adapter or not ctx.result(ExportResult).merged_dir):
        fmt = "prequantized"  # the downloaded base as it is: quantized (an unmerged adapter rides on it)
    targets = ctx.result(StrategyChoice).spec().lora_targets
    name = mem.gpu.name or ""
    return memory.serving(shape, fmt, gib, a.get("gpu_memory_utilization", 0.9), a.get("tensor_parallel", 1),
                          cuda_graphs=a.get("cuda_graphs", True), gpu_name=name,
                          adapter_params=shape.lora_params(adapter["rank"], targets) if adapter else 0,
                          engine=a.get("backend") or "vllm")


def questions(ctx: Ctx) -> list[Question]:
    exported = ctx.result(ExportResult)
    home_envs = envs(ctx)
    gpu_engine = lambda a: a.get("backend") in GPU_ENGINES  # noqa: E731
    shape = ctx.result(MemoryEvaluation).shape or {}

    def state(b):
        inst = engines.find(b, home_envs)
        return msg("deploy.installed_version", version=inst.version) if inst else msg("deploy.not_installed_short")

    def check_backend(v, a):
        if v == "transformers" and trusted(ctx):
            # transformers serve resolves the architecture by name among its own classes (model_manager._load_model)
            return msg("deploy.custom_code_transformers", version=specs.recommended("transformers").version)
        if v == "transformers":
            ok = engines.find(v, home_envs) and _has_uvicorn()
            return None if ok else msg("deploy.not_installed", backend=v, hint=engines.install_hint(v, home_envs))
        if engines.find(v, home_envs) is None:
            hint: str | Msg = engines.install_hint(v, home_envs)
            if specs.recommended(v).gpu and not memory.detect_gpus():  # no use installing it on this machine
                hint = msg("deploy.gpu_only_hint", hint=hint)
            return msg("deploy.not_installed", backend=v, hint=hint)
        return None

    def models(a):
        """The exports the chosen engine loads, and the adapter unmerged where the engine serves LoRA. Raises
        NotKnownYet before the training and export of this run have finished (a ``--set deploy.model=adapter``
        of a whole run is checked when the deploy step comes)."""
        if ctx.pending("train") or ctx.pending("export"):
            raise NotKnownYet("deploy.model")
        backend = a.get("backend", "transformers")
        inst = engines.find(backend, home_envs)
        loads = engines.formats(backend, inst, engines.cache_dir(ctx.home))
        out = [Choice("merged", msg("deploy.model.merged" if exported.merged_dir else "deploy.model.downloaded"))] + [
            Choice(f, msg("deploy.model.format", format=f)) for f in exported.artifacts if f in loads]
        if (inst.spec if inst else specs.recommended(backend)).lora and adapter_info(ctx):
            out.append(Choice("adapter", msg("deploy.model.adapter")))
        return out

    def check_host(v, a):
        if v not in LOOPBACK and specs.recommended(a.get("backend", "transformers")).loopback_only:
            return msg("serving.loopback_only", host=v)
        err = host_error(v)
        return msg("deploy.bad_host", host=v, error=err) if err else None

    own = jobs.read(RunDir(ctx.run_dir).serve.job)  # this session's server: stopped before the new one starts

    def check_port(v, a):
        if not 1 <= v <= 65535:
            return msg("answer.out_of_range", lo=1, hi=65535)
        # its own server's port is free for it (issue 46 trial I: a resume moved its endpoint 8000 → 8004)
        ours = own is not None and own.alive() and server.port_of(own) == v
        if not ours and not port_free(a.get("host", "127.0.0.1"), v):
            return msg("deploy.port_in_use", port=v)
        other = claim_port(ctx.home, ctx.session_id, v)  # held from now on, as the default's port is
        return msg("deploy.port_reserved", port=v, session=other) if other else None

    def check_tp(v, a):
        _, found = _gpu(ctx)
        if v < 1 or (found and v > found):
            return msg("answer.out_of_range", lo=1, hi=found or 1)
        heads = shape.get("heads") or 0
        if heads and memory.tensor_parallel(ctx.result(MemoryEvaluation).model_shape(), v) != v:
            return msg("deploy.tp_heads", tp=v, heads=heads, kv=shape.get("kv_heads") or heads,
                       width=shape.get("intermediate") or "?")
        return None

    def default_len(a):
        est = serving_budget(ctx, a)
        if not est:
            return 4096
        if est["longest_context"] < est["max_tokens"]:  # the model's own limit
            return max(1, est["longest_context"])
        return max(1, int(est["longest_context"] * 0.97))  # the KV cache's: 3 % below the prediction (±0.3 % measured)

    def check_len(v, a):
        est = serving_budget(ctx, a)
        if v < 1:
            return msg("answer.out_of_range", lo=1, hi=est["longest_context"] if est else v)
        if est and v > est["longest_context"]:
            return msg("deploy.context_too_long", tokens=v, most=est["longest_context"],
                       kv=est["kv_budget_gib"], util=a.get("gpu_memory_utilization", 0.9))
        return None

    def check_args(v, a):
        try:
            args = engines.split_args(v)
        except ValueError as e:
            return msg("deploy.engine_args_bad", error=str(e))
        backend = a.get("backend", "transformers")
        inst = engines.find(backend, home_envs)
        # the version's own options when its table is committed (else the run reads them from the engine, checks then)
        try:
            engines.check_extra(inst.spec if inst else specs.recommended(backend),
                                engines.committed(backend, inst.version) if inst else None, args)
        except engines.EngineError as e:
            return e.msg
        return None

    processes = ctx.result(StrategyChoice).spec().processes
    # servers of earlier sessions (a demo run twice, a model trained again): offered to stop first (issue 20, item 8),
    # none ticked — Enter stopped another session's good server when those serving the same name were (issue 46,
    # trial E); without a prompt (--yes) nothing another session started is stopped unless --set names it (item 3)
    others = [(sid, job) for sid, job in rundir.servers(ctx.home) if sid != ctx.session_id]
    return [
        Question("stop_servers", "checkbox", "deploy.stop_servers", when=lambda a: bool(others), volatile=True,
                 default=[],
                 choices=[Choice(sid, msg("deploy.server_label", id=sid, port=server.port_of(job) or "?",
                                          model=server.served_name_of(job) or "?",
                                          gib=f"{jobs.resident_bytes(job) / 2**30:.2f}")) for sid, job in others]),
        Question("backend", "select", "deploy.backend", validate=check_backend,
                 default=exported.serve_with if exported.serve_with in BACKENDS
                 and check_backend(exported.serve_with, {}) is None else "transformers",
                 implied=lambda a: (exported.serve_with, "export.serve_with") if exported.serve_with else None,
                 choices=[Choice(b, msg("deploy.backend.label", backend=b, state=state(b))) for b in BACKENDS]),
        Question("model", "select", "deploy.model", default="merged", choices=models),
        Question("host", "text", "deploy.host", default="127.0.0.1", validate=check_host),
        Question("port", "int", "deploy.port",
                 default=lambda a: reserve_port(ctx.home, ctx.session_id, a.get("host", "127.0.0.1")),
                 validate=check_port, volatile=True),
        Question("tensor_parallel", "int", "deploy.tensor_parallel", when=gpu_engine, validate=check_tp,
                 default=lambda a: max(1, min(processes, _gpu(ctx)[1] or 1))),
        Question("gpu_memory_utilization", "float", "deploy.gpu_memory_utilization", default=0.9, when=gpu_engine,
                 validate=in_range(0.1, 0.98)),
        Question("max_model_len", "int", "deploy.max_model_len", when=gpu_engine, default=default_len,
                 validate=check_len),
        Question("cuda_graphs", "confirm", "deploy.cuda_graphs", when=gpu_engine, default=True),
        Question("engine_args", "text", "deploy.engine_args", default="", validate=check_args, optional=True),
    ]


def _has_uvicorn() -> bool:
    import importlib.util

    return importlib.util.find_spec("uvicorn") is not None


GENERIC = re.compile(r"(merged|adapter|model|models|final|output|outputs|export|snapshots?|main|"
                     r"checkpoint-\d+|bnb-\d+bit|gptq-\w+|awq-\w+|fp8-\w+|[0-9a-f]{40})", re.I)


def _name_of(path: Path, name_or_path: object = None) -> str:
    """A model's name from its folder: the folder's own name unless it says nothing of the model (a local folder
    ``…/export/merged`` was served as model ``merged``, issue 46 item 14) — then the name config.json records
    (``_name_or_path``), else the nearest folder above whose name is not generic."""
    if not GENERIC.fullmatch(path.name):
        return path.name
    if isinstance(name_or_path, str) and name_or_path.strip() and not GENERIC.fullmatch(Path(name_or_path).name):
        return Path(name_or_path).name
    return next((p.name for p in path.parents if p.name and not GENERIC.fullmatch(p.name)), path.name)


def _served_name(ctx: Ctx, served: str = "merged") -> str:
    """The short name clients ask for: the model's folder or repo name, the method it was trained with, and the
    export served when it is a quantized copy (``tiny-qwen2-chat-lora``, ``tiny-qwen2-chat-lora-bnb-4bit``: the NF4
    copy went by the merged model's name; issue 46 trial G); characters a file name or an option could trip on
    become ``-``. ``served``: the deploy step's ``model`` answer (merged, adapter or an export's format)."""
    sel = ctx.result(ModelChoice)
    base = _name_of(Path(str(sel.name or "model")), (sel.config or {}).get("_name_or_path"))
    method = ctx.result(TrainingResult).method
    parts = [base] + ([method] if method else []) + ([served] if served not in ("merged", "adapter") else [])
    name = re.sub(r"[^\w.-]+", "-", "-".join(parts).lower()).lstrip("-.")
    return name or "model"


def _by_short_name(launch: engines.Launch, model_dir: str, sdir: Path, name: str) -> engines.Launch:
    """An engine that serves a model by its path (transformers serve) gets a link ``sdir/<name>`` to it and is
    started in ``sdir``: clients ask for ``name``, not an absolute path (issue 20, item 8)."""
    import dataclasses

    link = sdir / name
    sdir.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(Path(model_dir).resolve(), target_is_directory=True)
    return dataclasses.replace(launch, args=[name if a == model_dir else a for a in launch.args], served_model=name,
                               listed_name=name)


def _target(ctx: Ctx, answers: dict) -> tuple[str, str, dict | None]:
    """(model directory, format, adapter) the answers ask to serve."""
    exported = ctx.result(ExportResult)
    base_dir = str(ctx.result(Download).model_dir)
    choice = answers["model"]
    if choice == "adapter":
        adapter = adapter_info(ctx)
        if adapter is None:
            raise StepError("deploy.no_adapter")
        return base_dir, "merged", adapter
    if choice == "merged":  # the merged model, or the downloaded one when nothing was exported (deploy/chat tasks)
        return exported.merged_dir or base_dir, "merged", None
    return exported.artifacts[choice]["dir"], choice, None


def plan(ctx: Ctx, answers: dict, inst: engines.Installed, tab: dict) -> tuple[engines.Launch, str, dict | None]:
    """The launch for these answers in the installed version's options (checked against ``tab``), the model
    directory, and the adapter."""
    model_dir, fmt, adapter = _target(ctx, answers)
    spec = inst.spec
    template = Path(model_dir) / "chat_template.jinja"
    est = serving_budget(ctx, answers) if spec.gpu else None
    gib, _ = _gpu(ctx)
    launch = engines.command(
        spec, tab, model_dir=model_dir, fmt=fmt, served_name=_served_name(ctx, answers["model"]), host=answers["host"],
        port=answers["port"], chat_template=str(template) if template.exists() else None,
        max_model_len=answers.get("max_model_len"), gpu_util=answers.get("gpu_memory_utilization"),
        tensor_parallel=answers.get("tensor_parallel", 1), adapter=adapter,
        api_key=answers["host"] not in LOOPBACK, device="auto" if memory.detect_gpus() else "cpu",
        weights_fraction=est["weights_gib"] / gib if est else None, trust_remote_code=trusted(ctx),
        eager=spec.gpu and not answers.get("cuda_graphs", True), extra=engines.split_args(answers.get("engine_args")))
    return launch, model_dir, adapter


def kv_cache_tokens(spec: specs.EngineSpec, log: str) -> int | None:
    """The KV-cache size in tokens the engine logged at start (the spec's ``kv_tokens_log`` pattern), or None."""
    if not spec.kv_tokens_log:
        return None
    try:
        text = Path(log).read_text(errors="replace")
    except OSError:
        return None
    for found in reversed(re.findall(spec.kv_tokens_log, text)):
        numbers = [x.replace(",", "") for x in (found if isinstance(found, tuple) else (found,))]
        if all(x.isdigit() for x in numbers):
            return math.prod(int(x) for x in numbers)  # LMDeploy logs blocks and tokens per block
    return None


def stop_cause(model_dir: str) -> tuple[str, dict]:
    """Why a served model may not stop, read from the served directory: its generation_config.json lists no EOS
    id for the chat template's end-of-turn token, else the template, else the engine (catalogue key, params). The
    files are the model's, so untrusted: anything that is not the expected shape counts as absent."""
    d = Path(model_dir)

    def obj(name: str) -> dict | None:
        try:
            v = json.loads((d / name).read_text())
        except (OSError, ValueError, UnicodeDecodeError):
            return None
        return v if isinstance(v, dict) else None

    gen, tok = obj("generation_config.json"), obj("tokenizer_config.json")
    if gen is None or tok is None:
        return "deploy.stop_cause.no_config", {"dir": model_dir}
    eos = gen.get("eos_token_id")
    eos = {e for e in (eos if isinstance(eos, list) else [eos]) if isinstance(e, int)}
    end = tok.get("eos_token")
    end = end.get("content") if isinstance(end, dict) else end
    # the end-of-turn token's id: tokenizer.json's added tokens (what transformers 5 writes), else the older
    # tokenizer_config.json's added_tokens_decoder
    ids = {}
    decoder = tok.get("added_tokens_decoder")
    for k, v in (decoder.items() if isinstance(decoder, dict) else []):
        if isinstance(v, dict) and str(k).isdigit():
            ids[int(k)] = v.get("content")
    added = (obj("tokenizer.json") or {}).get("added_tokens")
    for t in added if isinstance(added, list) else []:
        if isinstance(t, dict) and isinstance(t.get("id"), int):
            ids[t["id"]] = t.get("content")
    end_id = next((i for i, c in ids.items() if c == end), None) if isinstance(end, str) else None
    if end_id is not None and end_id not in eos:
        return "deploy.stop_cause.eos", {"dir": model_dir, "token": end, "id": end_id, "eos": sorted(eos)}
    if not (d / "chat_template.jinja").exists() and not tok.get("chat_template"):
        return "deploy.stop_cause.template", {"dir": model_dir}
    return "deploy.stop_cause.engine", {"dir": model_dir}


def _asked(what: str, fn, log: str):
    """Call ``fn`` (one request to the server); an unreachable server, an HTTP error or an answer that is not the
    API's is one line naming what was asked and the server's log."""
    try:
        return fn()
    except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
        raise StepError("deploy.bad_answer", what=what, error=f"{type(e).__name__}: {e}"[:300], log=log) from None


# answer sources (Ctx.source) of a port nobody asked for in this run: a taken one gives way to a free one. The others
# (--set, the prompt, or unknown: run called without the engine's resolve) are the user's port, which fails instead
SAVED_PORT = ("resumed", "replay", "default")


def _watch_start(ctx: Ctx, inst, job, base: str, t0: float) -> phases.StartWatch:
    """Wait for the server's /health, showing the engine's start phase by phase (read from its log as it writes it,
    recipes/serving/phases.py) with the time so far — vLLM's first start is minutes, most of it once silent. The
    view is refreshed when the phase changes and every STATUS_EVERY_S seconds. Returns the watch (when each phase
    began). Raises as wait_healthy."""
    watch = phases.StartWatch(inst.engine, Path(job.log), t0)
    shown: list = ["", 0.0]  # the phase shown, and when
    with ctx.live(msg("deploy.start_title", engine=inst.engine, pid=job.pid)) as update:
        def poll() -> None:
            phase, now = watch.poll(), time.monotonic()
            if phase != shown[0] or now - shown[1] >= STATUS_EVERY_S:
                shown[:] = [phase, now]
                update({ctx.t("deploy.field.phase"): ctx.t("deploy.phase." + phase),
                        ctx.t("deploy.field.elapsed"): f"{now - t0:.0f}s"})
        wait_healthy(job, base, on_poll=poll)
        watch.poll()
        update({ctx.t("deploy.field.phase"): ctx.t("deploy.phase.ready"),
                ctx.t("deploy.field.elapsed"): f"{time.monotonic() - t0:.0f}s", "_final": True})
    return watch


def _under_label(text: object) -> str:
    """A reply shown under its label (the catalogue indents its first line by two spaces): every further line too, so
    that a multi-line reply stays under the label instead of running out to the margin (issue 46 item 14)."""
    return "\n  ".join(str(text or "").splitlines())


def _port_now(ctx: Ctx, host: str, port: int) -> int:
    """The port to serve on, checked just before the start: ``port`` while it is free and not reserved by another
    live session (it is claimed for this one then). When it was taken since the question was answered (another
    session's server took it while this one was stopped, or in the seconds since), a saved one (resumed, replayed)
    or the default gives way to a free port chosen as the question's default is (:func:`reserve_port`), said in one
    line; a port the user gave in this very run (``--set``, the prompt: ``ctx.source``) fails with one line.

    Raises:
        StepError("deploy.port_in_use" | "deploy.port_reserved"): the user's own port is taken, or none is free.
    """
    if not port_free(host, port):  # another server, another session
        taken = StepError("deploy.port_in_use", port=port)
        by: Msg = msg("deploy.taken_by_process")
    elif other := claim_port(ctx.home, ctx.session_id, port):  # reserved by another session since (its server loading)
        taken = StepError("deploy.port_reserved", port=port, session=other)
        by = msg("deploy.taken_by_session", session=other)
    else:
        return port
    if ctx.source("port") not in SAVED_PORT:
        raise taken
    moved = reserve_port(ctx.home, ctx.session_id, host)
    if not moved:
        raise taken
    ctx.info(msg("deploy.port_moved", port=port, by=by, new=moved))
    return moved


def run(ctx: Ctx, answers: dict) -> Deployment:
    backend, host, port = answers["backend"], answers["host"], answers["port"]
    inst = engines.find(backend, envs(ctx))
    if inst is None:
        raise StepError("deploy.not_installed", backend=backend, hint=engines.install_hint(backend, envs(ctx)))
    cache = engines.cache_dir(ctx.home)
    tab = engines.table_for(inst, cache)
    if tab["origin"] == "parser":
        ctx.info(msg("deploy.table_from_parser", engine=backend, version=inst.version, path=tab["path"]))
    launch, model_dir, adapter = plan(ctx, answers, inst, tab)
    engines.check_help(inst, launch, cache=cache)
    sdir = RunDir(ctx.run_dir).serve.root
    # keys.BadKey when the file holds no usable key: an engine given an empty key serves everyone, so nothing starts
    key_file = keys.key_file(sdir) if launch.key_flag else None
    key = keys.read_key(key_file)
    for sid, job in rundir.servers(ctx.home):
        if sid in answers.get("stop_servers", []) and job.stop():
            ctx.info(msg("deploy.stopped_other", id=sid, pid=job.pid))
    old = jobs.read(ServeDir(sdir).job)
    if old is not None and old.alive():
        ctx.info(msg("deploy.stopping_old", pid=old.pid))
        old.stop()
    if (moved := _port_now(ctx, host, port)) != port:  # taken since it was answered: another free one, said so
        answers["port"] = ctx.answers(name)["port"] = port = moved  # the session's answer is the port served on
        launch, model_dir, adapter = plan(ctx, answers, inst, tab)
    if inst.spec.served_by_path:
        launch = _by_short_name(launch, model_dir, sdir, _served_name(ctx, answers["model"]))
    t0 = time.monotonic()
    job = server.start(SERVER, inst, launch, sdir, port, key_file, cwd=sdir if inst.spec.served_by_path else None,
                       home=ctx.home)
    base = client_base(host, port)
    ctx.record(server_pid=job.pid, endpoint=base + "/v1", api_key_file=str(key_file) if key_file else None)
    ctx.info(msg("deploy.starting", pid=job.pid, log=job.log))
    try:
        return _check(ctx, answers, inst, tab, launch, job, base, key, key_file, model_dir, adapter, t0)
    except Exception:  # a server that failed its start-up check does not stay behind, holding the port and the GPU
        job.stop()
        raise


def curl_line(base: str, served: str, question: str, key_file: Path | str | None) -> str:
    """The `curl` command the deploy step prints to try the endpoint ``base`` (no /v1): the key read from its file
    at run time (never on the line), the request's JSON with the question's own characters — escaped (\\u4ec0…) it
    was unreadable in Chinese (issue 46 trial I, N12). An option a line, joined by `` \\`` continuations: on one line
    the terminal folded it mid-word at 80 columns (trial Q); pasted as printed, the shell reads one command."""
    parts = [f"curl {base}/v1/chat/completions", "-H 'Content-Type: application/json'"]
    if key_file:
        parts.append("-H \"Authorization: Bearer $(cat " + shlex.quote(str(key_file)) + ")\"")
    parts.append("-d " + shlex.quote(json.dumps({"model": served, "messages": client.user_turn(question)},
                                                ensure_ascii=False)))
    return " \\\n  ".join(parts)


def python_example(base: str, served: str, question: str, key_file: Path | str | None) -> str:
    """The OpenAI-client example the deploy step prints, flush left (indented, pasted into a file it was an
    IndentationError: trial R), each statement's arguments on lines of their own so that it reads at 80 columns
    (trial Q); a line is never broken inside a string (pasted, a SyntaxError: issue 46 trial E)."""
    key_expr = f"open({str(key_file)!r}).read().strip()" if key_file else "'none'"
    return (f"from openai import OpenAI\n"
            f"client = OpenAI(base_url={base + '/v1'!r},\n"
            f"                api_key={key_expr})\n"
            f"reply = client.chat.completions.create(\n"
            f"    model={served!r},\n"
            f"    messages=[{{'role': 'user', 'content': {question!r}}}])\n"
            f"print(reply.choices[0].message.content)")


def _check(ctx: Ctx, answers, inst, tab, launch, job, base, key, key_file, model_dir, adapter, t0) -> Deployment:
    """The start-up check of a spawned server (see the module docstring) and the step's outputs."""
    backend, port = answers["backend"], answers["port"]
    watch = _watch_start(ctx, inst, job, base, t0)
    start_s = round(time.monotonic() - t0, 1)
    listed = _asked("/v1/models", lambda: client.models(base + "/v1", api_key=key), job.log)
    time.sleep(0.5)  # a server of ours that could not bind its port has exited by now
    if not job.alive():
        raise StepError("serving.died", log=job.log, tail=job.log_tail(8, this_run=True))
    served = launch.served_model
    if launch.listed_name not in listed:  # whoever answers on this port, it is not the server we started
        raise StepError("deploy.not_ours", port=port, models=", ".join(map(str, listed))[:200] or "?")
    trained = ctx.result(TrainingResult)
    samples = trained.samples
    question = samples.get("question") or "What is LoRA?"
    image = trained.sample_image  # a vision-language model's sample: the question asked of that image
    turn = client.user_turn(question, image)
    reply = _asked("a chat completion", lambda: client.complete(base + "/v1", served, turn, STOP_CHECK_TOKENS,
                                                                api_key=key), job.log)
    streamed = _asked("a streamed chat completion", lambda: client.stream(
        base + "/v1", served, turn, STOP_CHECK_TOKENS, api_key=key, temperature=0), job.log)
    # which copy answers under that name (the merged model was served as "…-lora" without saying so: trial U)
    choice, merged = answers.get("model"), ctx.result(ExportResult).merged_dir
    what = msg("deploy.what.adapter", adapter=adapter["path"], path=model_dir) if adapter else \
        msg("deploy.what.merged", path=model_dir) if choice == "merged" and merged else \
        msg("deploy.what.format", format=choice, path=model_dir) if choice not in (None, "merged") else \
        msg("deploy.what.model", path=model_dir)
    ctx.info(msg("deploy.ready", endpoint=base + "/v1", model=served, pid=job.pid, seconds=start_s, what=what))
    if image:
        ctx.info(msg("deploy.image", path=image))
    if samples.get("before") is not None:
        ctx.info(msg("deploy.before", question=question, answer=_under_label(samples["before"])))
    ctx.info(msg("deploy.after" if trained.adapter_dir else "deploy.reply", question=question,
                 answer=_under_label(reply.text)))
    ctx.info(msg("deploy.streamed", chars=len(streamed.text), finish=streamed.finish_reason))
    parity = _parity(ctx, base, served, turn, key, model_dir, backend, job, adapter is not None) if not image else None
    if reply.stopped and streamed.stopped:
        ctx.info(msg("deploy.stops", tokens=reply.tokens if reply.tokens is not None else "?"))
    else:
        smoke = ctx.result(ExportResult).merged_smoke
        key_, params = stop_cause(model_dir)
        why = msg(key_, **params)
        if isinstance(smoke, dict) and smoke.get("stopped") is True:  # the model stops (the export saw it): the serving does not
            raise StepError("deploy.never_stops", engine=backend, tokens=STOP_CHECK_TOKENS, why=why, log=job.log)
        ctx.warn(msg("deploy.no_stop" if isinstance(smoke, dict) else "deploy.no_stop_unchecked",
                     tokens=STOP_CHECK_TOKENS, why=why))
    est = serving_budget(ctx, answers) if inst.spec.gpu else None
    kv = {"reported_tokens": kv_cache_tokens(inst.spec, job.log),
          "predicted_tokens": est["max_tokens"] if est else None}
    if kv["reported_tokens"] and kv["predicted_tokens"]:
        ctx.info(msg("deploy.kv_cache", reported=f"{kv['reported_tokens']:,}", predicted=f"{kv['predicted_tokens']:,}",
                      error=f"{(kv['predicted_tokens'] / kv['reported_tokens'] - 1) * 100:+.1f}"))
    ctx.info(msg("deploy.curl", curl=curl_line(base, served, question, key_file)))
    ctx.info(msg("deploy.python", code=python_example(base, served, question, key_file)))
    if key_file:
        ctx.info(msg("deploy.key_file", path=str(key_file)))
    ctx.info(msg("deploy.stop_hint", id=ctx.session_id))
    return Deployment(backend=backend, engine_version=inst.version, engine_table=tab["origin"],
                      host=answers["host"], port=port,
                      endpoint=base + "/v1", served_model=served, model_dir=model_dir, adapter=adapter,
                      args=launch.args, server_pid=job.pid, log=job.log, start_seconds=start_s,
                      start_phases=watch.began | {"ready": start_s},
                      api_key_file=str(key_file) if key_file else None, question=question, image=image,
                      reply=reply.text,
                      finish_reason=reply.finish_reason, reply_tokens=reply.tokens, streamed=streamed.text,
                      stream_finish_reason=streamed.finish_reason, kv_cache=kv,
                      parity=parity.to_dict() if parity else None)


def _parity(ctx: Ctx, base: str, served: str, turn: list[dict], key: str | None, model_dir: str, backend: str, job,
            on_adapter: bool = False) -> parity_.Parity | None:
    """The train→serve parity gate (recipes/serving/parity.py) on the sample question and the held-out questions the
    export asked: a prompt the engine renders otherwise than training did fails the step (the server is stopped by
    the caller), and so does a greedy reply that leaves the trained model's where it was sure, from the merged model
    or its adapter at 16 bits; a departure at a near-tie, or by a quantized copy, is said. Returns the sample
    question's :class:`Parity` (the others under its ``others``), or None (said) when the export recorded no
    in-process rendering to compare with."""
    export = ctx.result(ExportResult)
    smoke = export.merged_smoke
    if not export.merged_dir:  # the deploy task: a downloaded model, nothing trained to compare
        ctx.info(msg("deploy.parity_no_export"))
        return None
    if not parity_.well_formed(smoke) or smoke.get("question") != turn[0]["content"]:
        ctx.info(msg("deploy.parity_unchecked"))
        return None
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir, trust_remote_code=trusted(ctx))
    # the merged model, or its adapter on the base at 16 bits, must answer as in-process; a quantized copy may not
    strict = on_adapter or Path(model_dir).resolve() == Path(export.merged_dir).resolve()
    more: list = listed if isinstance(listed := smoke.get("more"), list) else []
    asked = [smoke] + [m for m in more if parity_.well_formed(m)]  # the session file is input: odd entries skipped
    results = []
    for one in asked:
        messages = client.user_turn(one["question"])
        ids = _asked("the engine's tokenization", lambda: client.tokenize(base + "/v1", served, messages, api_key=key),
                     job.log)
        greedy = _asked("a greedy completion with log-probabilities", lambda: client.complete(
            base + "/v1", served, messages, max(1, len(one.get("reply_ids") or [])), api_key=key, logprobs=True),
            job.log)
        got = parity_.compare(one, ids, greedy.prompt_tokens, greedy.text, ctx.result(TrainingResult).adapter_dir,
                              model_dir, lambda xs, skip=True: tok.decode(xs, skip_special_tokens=skip),
                              greedy.logprobs)
        if got.prompt_served is not None and not got.prompt_ok:
            where = msg("deploy.parity_template", where=got.template_diff) if got.template_diff else \
                msg("deploy.parity_at", pos=got.first_diff, training=got.diff_training, served=got.diff_served) \
                if got.first_diff is not None else ""
            raise StepError("deploy.parity_prompt", engine=backend, served=got.prompt_served,
                            training=got.prompt_training, where=where, question=_short(one["question"]), log=job.log)
        if strict and got.departs() and got.diverged_at is not None:
            raise StepError("deploy.parity_departs", engine=backend, question=_short(one["question"]),
                            at=got.diverged_at + 1, training=got.greedy_training, served=got.greedy_served,
                            margin=f"{got.margin:.1f}", log=job.log)
        results.append(got)
    first = results[0]
    if first.prompt_served is None:
        ctx.warn(msg("deploy.parity_no_count", engine=backend))
    else:
        # a count alone does not show the same rendering: said as what it is (issue 46 trial G)
        ctx.info(msg("deploy.parity_ok", n=len(results), how=msg("deploy.parity_by_ids")) if first.by_ids else
                 msg("deploy.parity_count_ok", n=len(results)))
    agreed = [r for r in results if r.greedy_match]
    diffs = [r.logprob_diff for r in results if r.logprob_diff is not None]
    ctx.info(msg("deploy.parity_greedy_ok", same=len(agreed), n=len(results), tokens=first.compared_tokens,
                 lp=msg("deploy.parity_logprobs", diff=f"{max(diffs):.3f}") if diffs else
                 msg("deploy.parity_no_logprobs", engine=backend)))
    for r in results:
        if not r.greedy_match:
            ctx.warn(msg("deploy.parity_greedy", training=r.greedy_training, served=r.greedy_served,
                         margin="?" if r.margin is None else f"{r.margin:.1f}", id=ctx.session_id))
    if strict and diffs and max(diffs) > parity_.LOGPROB_WARN:
        ctx.warn(msg("deploy.parity_logprobs_far", diff=f"{max(diffs):.2f}", limit=parity_.LOGPROB_WARN))
    first.others = [r.to_dict() for r in results[1:]]  # recorded beside the sample question's figures
    return first


def _short(text: str, n: int = 60) -> str:
    """A question as named in a message: its first ``n`` characters on one line."""
    one = " ".join(text.split())
    return one if len(one) <= n else one[:n - 1] + "…"


def is_done(ctx: Ctx, record: Record) -> bool:
    """Deployed, and the server still runs: after a crash (or `yichui stop`) the step runs again with the same
    answers (`yichui serve start`)."""
    job = jobs.read(RunDir(ctx.run_dir).serve.job)
    return bool(record.outputs.get("reply")) and job is not None and job.alive()
