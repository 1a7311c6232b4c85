"""Step 7 — deploy: an OpenAI-compatible server on what was exported, detached, checked with a chat completion and a
streamed one.

The launch comes from the session, not retyped: the model directory and format (export step), the served name, the
chat template, the longest context from the memory model's KV-cache budget (:func:`recipes.memory.serving`), the GPU
memory utilization, tensor parallelism over the GPUs the strategy chose, and the LoRA adapter served unmerged when
asked (maximum LoRA rank from its adapter_config.json). Each engine's command is built and checked against its
argument table (:mod:`recipes.engines`), then against the installed engine's own ``--help``.

The server binds 127.0.0.1 unless the user asks for another address; then an API key is mandatory: generated once,
kept in ``<run>/serve/api_key`` (mode 0600), never in the session. ``transformers serve`` has no API key, so it
stays on loopback.
"""
from __future__ import annotations

import json
import os
import secrets
import shlex
import socket
import time
from pathlib import Path

from recipes import chat as chat_mod
from recipes import engines, jobs, memory
from recipes.base import Choice, Question, StepError, in_range, msg
from recipes.select_model import trusted

name = "deploy"
requires = ("download",)  # and the export when there is one
BACKENDS = ("transformers", "vllm", "sglang", "lmdeploy")
GPU_ENGINES = ("vllm", "sglang", "lmdeploy")
LOOPBACK = ("127.0.0.1", "localhost", "::1")
HEALTH_TIMEOUT_S = 900  # a GPU engine loads weights, profiles memory and captures CUDA graphs first
WEIGHT_FORMAT = {"merged": "bf16", "gptq-w4a16": "gptq", "awq-w4a16": "awq", "fp8-dynamic": "fp8", "bnb-4bit": "bnb4",
                 "bnb-8bit": "bnb8"}


def envs(ctx) -> Path:
    return Path(os.environ.get("YICHUI_ENVS") or ctx.home / "envs")


def port_free(host: str, port: int) -> bool:
    """Can a server listen on host:port? SO_REUSEADDR as uvicorn sets it, so TIME_WAIT leftovers do not count."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1", start: int = 8000) -> int:
    return next((p for p in range(start, start + 200) if port_free(host, p)), 0)


def adapter_info(ctx) -> dict | None:
    """The trained LoRA adapter that can be served unmerged: ``{"path", "rank"}`` (rank: the largest of ``r`` and
    ``rank_pattern`` in adapter_config.json), or None (full fine-tune, DoRA, no adapter on disk)."""
    path = ctx.outputs("train").get("adapter_dir")
    try:
        cfg = json.loads((Path(path) / "adapter_config.json").read_text()) if path else None
    except (OSError, ValueError):
        return None
    if not cfg or cfg.get("use_dora"):
        return None  # the engines serve plain LoRA; a DoRA adapter is served merged
    rank = max([int(cfg.get("r") or 0), *map(int, (cfg.get("rank_pattern") or {}).values())])
    return {"path": str(path), "rank": rank}


def _gpu(ctx) -> tuple[float, int]:
    """(GiB per GPU, GPUs on this machine) from the memory step, or what is detected now."""
    found = memory.detect_gpus()
    gpu = ctx.outputs("evaluate_memory").get("gpu") or {}
    return float(gpu.get("memory_gib") or (found[0]["memory_gib"] if found else 80.0)), len(found)


def serving_budget(ctx, a: dict) -> dict | None:
    """The memory model's serving estimate for the answers so far (None when the shape is unknown)."""
    shape = ctx.outputs("evaluate_memory").get("shape")
    if not shape:
        return None
    gib, _ = _gpu(ctx)
    fmt = WEIGHT_FORMAT.get(a.get("model", "merged"), "bf16") if a.get("model") != "adapter" else "bf16"
    return memory.serving(memory.shape_from_dict(shape), fmt, gib, a.get("gpu_memory_utilization", 0.9),
                          a.get("tensor_parallel", 1))


def questions(ctx) -> list[Question]:
    exported = ctx.outputs("export")
    home_envs = envs(ctx)
    gpu_engine = lambda a: a.get("backend") in GPU_ENGINES  # noqa: E731
    shape = ctx.outputs("evaluate_memory").get("shape") or {}

    def state(b):
        return msg("deploy.installed") if engines.find(b, home_envs) else msg("deploy.not_installed_short")

    def check_backend(v, a):
        if v == "transformers" and trusted(ctx):
            # transformers serve resolves the architecture by name among its own classes (model_manager._load_model)
            return msg("deploy.custom_code_transformers", version=engines.PINNED["transformers"])
        if v == "transformers":
            ok = engines.find(v, home_envs) and _has_uvicorn()
            return None if ok else msg("deploy.not_installed", backend=v, hint="pip install 'transformers[serving]'")
        if engines.find(v, home_envs) is None:
            return msg("deploy.not_installed", backend=v, hint=engines.install_hint(v, home_envs))
        return None

    def models(a):
        """The exports the chosen engine loads, and the adapter unmerged where the engine serves LoRA."""
        loads = engines.formats(a.get("backend", "transformers"))
        out = [Choice("merged", msg("deploy.model.merged" if exported else "deploy.model.downloaded"))] + [
            Choice(f, msg("deploy.model.format", format=f)) for f in exported.get("artifacts", {}) if f in loads]
        if gpu_engine(a) and adapter_info(ctx):
            out.append(Choice("adapter", msg("deploy.model.adapter")))
        return out

    def check_host(v, a):
        if v not in LOOPBACK and a.get("backend") == "transformers":
            return msg("deploy.loopback_only", host=v)
        return None

    def check_port(v, a):
        if not 1 <= v <= 65535:
            return msg("answer.out_of_range", lo=1, hi=65535)
        return None if port_free(a.get("host", "127.0.0.1"), v) else msg("deploy.port_in_use", port=v)

    def check_tp(v, a):
        _, found = _gpu(ctx)
        if v < 1 or (found and v > found):
            return msg("answer.out_of_range", lo=1, hi=found or 1)
        heads = shape.get("heads") or 0
        if heads and heads % v:
            return msg("deploy.tp_heads", tp=v, heads=heads)
        return None

    def default_len(a):
        est = serving_budget(ctx, a)
        return max(1, est["longest_context"]) if est else 4096

    def check_len(v, a):
        est = serving_budget(ctx, a)
        if v < 1:
            return msg("answer.out_of_range", lo=1, hi=est["longest_context"] if est else v)
        if est and v > est["longest_context"]:
            return msg("deploy.context_too_long", tokens=v, most=est["longest_context"],
                       kv=est["kv_budget_gib"], util=a.get("gpu_memory_utilization", 0.9))
        return None

    strategy = ctx.answers("choose_strategy")
    return [
        Question("backend", "select", "deploy.backend", validate=check_backend,
                 default=exported["serve_with"] if exported.get("serve_with") in BACKENDS
                 and check_backend(exported["serve_with"], {}) is None else "transformers",
                 choices=[Choice(b, msg("deploy.backend.label", backend=b, state=state(b))) for b in BACKENDS]),
        Question("model", "select", "deploy.model", default="merged", choices=models),
        Question("host", "text", "deploy.host", default="127.0.0.1", validate=check_host),
        Question("port", "int", "deploy.port", default=lambda a: free_port(a.get("host", "127.0.0.1")),
                 validate=check_port, volatile=True),
        Question("tensor_parallel", "int", "deploy.tensor_parallel", when=gpu_engine, validate=check_tp,
                 default=lambda a: max(1, min(int(strategy.get("processes") or 1), _gpu(ctx)[1] or 1))),
        Question("gpu_memory_utilization", "float", "deploy.gpu_memory_utilization", default=0.9, when=gpu_engine,
                 validate=in_range(0.1, 0.98)),
        Question("max_model_len", "int", "deploy.max_model_len", when=gpu_engine, default=default_len,
                 validate=check_len),
    ]


def _has_uvicorn() -> bool:
    import importlib.util

    return importlib.util.find_spec("uvicorn") is not None


def api_key_file(sdir: Path) -> Path:
    """The server's API key: generated once (32 random bytes, URL-safe), file mode 0600 from its creation."""
    path = sdir / "api_key"
    if not path.exists():
        sdir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(32) + "\n")
    return path


def read_key(path: str | Path | None) -> str | None:
    try:
        return Path(path).read_text().strip() if path else None
    except OSError:
        return None


def client_base(host: str, port: int) -> str:
    """Where this machine reaches the server: a wildcard bind is reached on loopback."""
    h = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"http://[{h}]:{port}" if ":" in h else f"http://{h}:{port}"


def wait_healthy(job: jobs.Job, base: str, timeout: float = HEALTH_TIMEOUT_S) -> None:
    """GET /health answers 200 (every engine has it, none asks for the key there)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not job.alive():
            raise StepError("deploy.died", log=job.log, tail=job.log_tail(8))
        try:
            chat_mod.request_json(base + "/health", timeout=2)
            return
        except (OSError, ValueError):  # URLError is an OSError
            pass
        time.sleep(0.5)
    raise StepError("deploy.timeout", seconds=timeout, log=job.log)


def chat(base: str, model: str, question: str, max_tokens: int = 48, key: str | None = None) -> str:
    r = chat_mod.request_json(base + "/v1/chat/completions", {
        "model": model, "messages": [{"role": "user", "content": question}], "max_tokens": max_tokens,
        "temperature": 0}, api_key=key)
    return r["choices"][0]["message"]["content"].strip()


def _served_name(ctx) -> str:
    sel = ctx.outputs("select_model")
    base = Path(str(sel.get("repo_id") or sel.get("local_path") or "model")).name
    method = ctx.outputs("train").get("method")
    return (f"{base}-{method}" if method else base).lower()


def plan(ctx, answers: dict) -> tuple[engines.Launch, str, dict | None]:
    """The launch for these answers (checked against the table), the model directory, and the adapter."""
    exported = ctx.outputs("export")
    backend, choice = answers["backend"], answers["model"]
    adapter = None
    if choice == "adapter":
        adapter = adapter_info(ctx)
        if adapter is None:
            raise StepError("deploy.no_adapter")
        model_dir, fmt = ctx.outputs("download")["model_dir"], "merged"
    elif choice == "merged":  # the merged model, or the downloaded one when nothing was exported (deploy/chat tasks)
        model_dir, fmt = exported.get("merged_dir") or ctx.outputs("download")["model_dir"], "merged"
    else:
        model_dir, fmt = exported["artifacts"][choice]["dir"], choice
    template = Path(model_dir) / "chat_template.jinja"
    est = serving_budget(ctx, answers) if backend in GPU_ENGINES else None
    gib, _ = _gpu(ctx)
    launch = engines.command(
        backend, model_dir=model_dir, fmt=fmt, served_name=_served_name(ctx), host=answers["host"],
        port=answers["port"], chat_template=str(template) if template.exists() and backend != "lmdeploy" else None,
        max_model_len=answers.get("max_model_len"), gpu_util=answers.get("gpu_memory_utilization"),
        tensor_parallel=answers.get("tensor_parallel", 1), adapter=adapter,
        api_key=answers["host"] not in LOOPBACK, device="auto" if memory.detect_gpus() else "cpu",
        weights_fraction=est["weights_gib"] / gib if est else None, trust_remote_code=trusted(ctx))
    return launch, model_dir, adapter


def run(ctx, answers: dict) -> dict:
    backend, host, port = answers["backend"], answers["host"], answers["port"]
    launch, model_dir, adapter = plan(ctx, answers)
    inst = engines.find(backend, envs(ctx))
    if inst is None:
        raise StepError("deploy.not_installed", backend=backend, hint=engines.install_hint(backend, envs(ctx)))
    if inst.version != engines.PINNED[backend]:
        ctx.warn(msg("deploy.other_version", engine=backend, installed=inst.version, pinned=engines.PINNED[backend]))
    engines.check_help(inst, launch)
    sdir = ctx.run_dir / "serve"
    key_file = api_key_file(sdir) if launch.key_flag else None
    key = read_key(key_file)
    old = jobs.read(sdir / "server.pid.json")
    if old is not None and old.alive():
        ctx.info(msg("deploy.stopping_old", pid=old.pid))
        old.stop()
    if not port_free(host, port):  # taken since the question was answered (another server, another session)
        raise StepError("deploy.port_in_use", port=port)
    job = jobs.spawn("server", engines.argv_for(inst, launch, key_file), sdir)
    base = client_base(host, port)
    ctx.record(server_pid=job.pid, endpoint=base + "/v1", api_key_file=str(key_file) if key_file else None)
    ctx.info(msg("deploy.starting", pid=job.pid, log=job.log))
    wait_healthy(job, base)
    listed = [m["id"] for m in chat_mod.request_json(base + "/v1/models", api_key=key).get("data", [])]
    served = model_dir if backend == "transformers" else launch.served_model  # transformers names it by its path
    time.sleep(0.5)  # a server of ours that could not bind its port has exited by now
    if not job.alive():
        raise StepError("deploy.died", log=job.log, tail=job.log_tail(8))
    if served not in listed:  # whoever answers on this port, it is not the server we started
        job.stop()
        raise StepError("deploy.not_ours", port=port, models=", ".join(listed)[:200] or "?")
    samples = ctx.outputs("train").get("samples", {})
    question = samples.get("question") or "What is LoRA?"
    reply = chat(base, served, question, key=key)
    streamed = "".join(chat_mod.stream(base + "/v1", served, [{"role": "user", "content": question}], 48,
                                       api_key=key, temperature=0))
    ctx.info(msg("deploy.ready", endpoint=base + "/v1", model=served, pid=job.pid))
    if samples.get("before") is not None:
        ctx.info(msg("deploy.before", question=question, answer=samples["before"]))
    ctx.info(msg("deploy.after" if ctx.outputs("train") else "deploy.reply", question=question, answer=reply))
    ctx.info(msg("deploy.streamed", chars=len(streamed)))
    auth = " -H \"Authorization: Bearer $(cat " + shlex.quote(str(key_file)) + ")\"" if key_file else ""
    curl = (f"curl {base}/v1/chat/completions -H 'Content-Type: application/json'{auth} -d "
            + shlex.quote(json.dumps({"model": served, "messages": [{"role": "user", "content": question}]})))
    ctx.info(msg("deploy.curl", curl=curl))
    key_expr = f"open({str(key_file)!r}).read().strip()" if key_file else '"none"'
    ctx.info(msg("deploy.python", code=f"from openai import OpenAI\n  client = OpenAI(base_url={base + '/v1'!r}, "
                 f"api_key={key_expr})\n  print(client.chat.completions.create(model={served!r}, messages=[{{'role': "
                 f"'user', 'content': {question!r}}}]).choices[0].message.content)"))
    if key_file:
        ctx.info(msg("deploy.key_file", path=str(key_file)))
    ctx.info(msg("deploy.stop_hint", id=ctx.session_id))
    return {"backend": backend, "engine_version": inst.version, "endpoint": base + "/v1", "served_model": served,
            "model_dir": model_dir, "adapter": adapter, "args": launch.args, "server_pid": job.pid, "log": job.log,
            "api_key_file": str(key_file) if key_file else None, "question": question, "reply": reply,
            "streamed": streamed}


def is_done(ctx, record: dict) -> bool:
    """Deployed, and the server still runs: after a crash (or `yichui stop`) the step runs again with the same
    answers (`yichui serve start`)."""
    job = jobs.read(ctx.run_dir / "serve" / "server.pid.json")
    return bool(record["outputs"].get("reply")) and job is not None and job.alive()
