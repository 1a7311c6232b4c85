#!/usr/bin/env python3
"""The whole chain on a GPU through yichui's own commands, then every export served by a real engine (issue 17).

    python bench/serve_chain.py run --work /root/chain --results /root/results [--engine vllm]
    python bench/serve_chain.py report RESULTS_DIR --md bench/results/DATE-serve-h200.md
    python bench/serve_chain.py warm --work W --results R [--session SID] [--targets merged,other-weights,bnb-4bit]
    python bench/serve_chain.py run --dry-run --work W --results R [...]   (CPU: each phase's `yichui` command, its
                                    --set keys checked as `yichui run` checks them; nothing built or started)

``run`` does, one phase after another, each appended to ``RESULTS/rows.jsonl`` the moment it ends (a phase that fails
is recorded with its error and the next one still runs):

1. ``base``: a base model of a real shape (``--shape``, bench/configs) with the tiny tokenizer and chat template,
   randomly initialised and briefly pre-trained on generic text on the GPU (what a machine without hub access can
   have; a random model never ends a turn, a pre-trained one learns to in fine-tuning).
2. ``chain``: ``yichui run --yes`` — LoRA rank 64 on the bundled data, export merged + ``--formats``, deploy on
   ``--engine`` bound to 0.0.0.0 (so with an API key; CUDA graphs with ``--graphs``), then evaluate with both models'
   replies from that engine (the fine-tuned one's server and a second one for the base): the held-out set and, with
   ``--gsm8k``, GSM8K — with the wall time of every step from the session file.
3. ``server:merged``: for the running server: /v1/models, HTTP 401 without the key and 200 with it (curl), the key in
   no file under the run directory or YICHUI_HOME's logs, and ``yichui chat`` with a question piped in.
4. ``load`` (``--load-requests``): ``bench/serve_load.py`` against that server and against ``transformers serve`` on
   the same GPU and model.
5. ``formats``, once per engine of ``--format-engines``: every export that engine loads (and the merged model when it
   is not the chain's engine, and the unmerged adapter) served by ``yichui run --task deploy --from``, without CUDA
   graphs (a functional check: each starts, lists, answers and stops), each checked as in 3. The chain's engine
   serves them all at once beside its server; another engine serves them one at a time on a GPU of its own.
6. ``holdout`` (``--holdout``): a model shape not used for the calibration (random weights, not trained) served alone
   with CUDA graphs: the engine's KV-cache size against the memory model's prediction.
7. ``warm`` (``--warm merged,other-weights,bnb-4bit``, or the ``warm`` command in a later device call on the same
   machine): issue 48's time to the first answer again, the chain's server stopped — the same merged model, the base
   (other weights of the same shape) and an export, each deployed alone as the chain's server was (CUDA graphs with
   ``--graphs``), with the engine's kernel caches the chain's first start left under YICHUI_HOME/cache/kernels; each
   row has the deploy step's start phases, the parity gate's figures and the cache's size before and after.

Environment: ``YICHUI_HOME`` (the sessions), ``YICHUI_ENVS`` (the engines' environments), and ``yichui`` beside
``sys.executable``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CONFIGS = Path(__file__).resolve().parent / "configs"
YICHUI = str(Path(sys.executable).parent / "yichui")
QUESTION = "What is LoRA?"


def home() -> Path:
    return Path(os.environ.get("YICHUI_HOME") or Path.home() / ".yichui")


def row(results: Path, phase: str, **fields) -> dict:
    r = {"phase": phase, "at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), **fields}
    with open(results / "rows.jsonl", "a") as f:
        f.write(json.dumps(r, default=str) + "\n")
    print(json.dumps(r, default=str)[:2000], flush=True)
    return r


def phase(results: Path, name: str, fn, *args, **kw):
    """Run one phase, record its row (with ``seconds`` and any error); never raises."""
    t0 = time.time()
    try:
        out = fn(*args, **kw) or {}
        return row(results, name, seconds=round(time.time() - t0, 1), **out)
    except Exception as e:  # recorded; the next phase still runs
        return row(results, name, seconds=round(time.time() - t0, 1), error=f"{type(e).__name__}: {e}"[-3000:],
                   trace=traceback.format_exc()[-3000:])


def sh(argv: list[str], log: Path, timeout: float, stdin: str | None = None, env: dict | None = None) -> int:
    with open(log, "a") as f:
        f.write(f"\n$ {' '.join(argv)}\n")
        f.flush()
        return subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, timeout=timeout, input=stdin, text=True,
                              env=env).returncode


# ---- 1. the base model ---------------------------------------------------------------------------------------------

def prepare(shape: str, dest: Path, pretrain_steps: int, seq: int = 512, batch: int = 32, lr: float = 1e-3) -> dict:
    """A model folder of ``shape``'s real config.json with the tiny tokenizer (its ids fit any vocabulary) and its
    ChatML template; random weights, pre-trained ``pretrain_steps`` causal-LM steps on generic text (fp32 master
    weights, bf16 autocast), saved in bf16."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, GenerationConfig

    from recipes.demo import tiny_model as tiny

    built, tmp = begin_build(dest)
    if built is not None:
        return built
    generic = tiny._generic_corpus()
    tok = tiny._train_tokenizer(generic + tiny._instruction_texts())
    eos = [tok.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|endoftext|>")]
    shutil.copy((Path(shape) if Path(shape).is_dir() else CONFIGS / shape) / "config.json", tmp / "config.json")
    cfg = AutoConfig.from_pretrained(tmp)
    cfg.eos_token_id, cfg.pad_token_id, cfg.bos_token_id = eos[0], eos[1], None
    torch.manual_seed(0)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    with torch.device(dev):
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32 if pretrain_steps else torch.bfloat16)
    losses = []
    t0 = time.time()
    if pretrain_steps:
        ids = tok("\n\n".join(generic), add_special_tokens=False)["input_ids"]
        data = torch.tensor(ids[: (len(ids) // seq) * seq]).view(-1, seq)
        gen = torch.Generator().manual_seed(0)
        opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0, fused=dev == "cuda")
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=pretrain_steps, pct_start=0.1)
        model.train()
        for _ in range(pretrain_steps):
            rows = data[torch.randint(0, data.shape[0], (batch,), generator=gen)].to(dev)
            with torch.autocast(dev, dtype=torch.bfloat16, enabled=dev == "cuda"):
                loss = model(input_ids=rows, labels=rows).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step(); sched.step(); opt.zero_grad(set_to_none=True)
            losses.append(round(loss.item(), 4))
        model = model.to(torch.bfloat16).eval()
    model.generation_config = GenerationConfig(eos_token_id=eos, pad_token_id=eos[1])
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    info = {"shape": shape, "parameters": sum(p.numel() for p in model.parameters()), "pretrain_steps": pretrain_steps,
            "pretrain_tokens": pretrain_steps * batch * seq, "pretrain_seconds": round(time.time() - t0, 1),
            "loss_first": losses[:3], "loss_last": losses[-3:], "tokenizer_vocab": len(tok), "dir": str(dest)}
    (tmp / "yichui_build.json").write_text(json.dumps(info, indent=2))
    del model
    if pretrain_steps:
        del opt, sched, data  # their memory goes back too: engines started later size their KV cache by what is free
    if dev == "cuda":
        torch.cuda.empty_cache()
    os.replace(tmp, dest)
    return info


def begin_build(dest: Path) -> tuple[dict | None, Path]:
    """A model folder built before (its ``yichui_build.json``), or None and an empty ``<dest>.tmp`` to build into
    (renamed into place when complete)."""
    if (dest / "yichui_build.json").exists():
        return json.loads((dest / "yichui_build.json").read_text()), dest
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    return None, tmp


def apart(fn, *args) -> dict:
    """``fn(*args)`` in a child process: this driver then holds no CUDA context (~0.5 GiB) while engines started
    later size their KV cache from the memory free at their start."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(fn, args)


def prepare_apart(*args) -> dict:
    """:func:`prepare` in a child process (:func:`apart`)."""
    return apart(prepare, *args)


def engine_args(a, engine: str) -> str:
    """The extra options ``--engine-args`` gives ``engine`` (SGLang carried without its FA3 library: triton
    attention and PyTorch sampling)."""
    return json.loads(a.engine_args).get(engine, "")


def place_gsm8k(src: str) -> None:
    """GSM8K's parquet files (openai/gsm8k's layout: main/{train,test}-00000-of-00001.parquet) where the evaluate
    step looks for them before fetching (YICHUI_HOME/datasets/hf/openai/gsm8k): the GPU machine reaches no hub."""
    dest = home() / "datasets" / "hf" / "openai" / "gsm8k"
    if not (Path(src) / "main").is_dir():  # given main/ itself (round 3 lost its GSM8K run to that)
        if not list(Path(src).glob("test-*.parquet")):
            raise SystemExit(f"--gsm8k {src}: neither main/ nor test-*.parquet there (bench/gsm8k_parquet.py writes them)")
        dest = dest / "main"
    shutil.copytree(src, dest, dirs_exist_ok=True)


def run_argv(task: str, sets: dict, *more: str) -> list[str]:
    """``yichui run --yes --task TASK [MORE…] --set k=v …``: a session that asks nothing."""
    return [YICHUI, "run", "--yes", "--task", task, *more, *(x for k, v in sets.items() for x in ("--set", f"{k}={v}"))]


def check_sets(task: str, sets: dict) -> dict:
    """``sets`` checked in this process as `yichui run --task TASK --set …` checks them before any work
    (wizard.engine.Engine.precheck, in a throwaway YICHUI_HOME whose port reservations stay there: a checked port is
    claimed, and this process outlives the check). A step or key the wizard does not have raises SystemExit with its
    message. A value refused, or a question not asked, may be this machine's doing (a GPU engine or AWQ on a CPU,
    unsloth not installed): returned as {"step.key": reason}, the other values checked without them (the caller
    judges; tests/test_bench_scripts.py names the ones a CPU refuses)."""
    import tempfile

    from wizard import i18n
    from wizard.engine import AnswerError, Engine
    from wizard.session import Session

    overrides: dict = {}
    for k, v in sets.items():
        step, _, key = k.partition(".")
        overrides.setdefault(step, {})[key] = str(v)
    refused: dict = {}
    runtime = os.environ.get("YICHUI_RUNTIME_DIR")
    with tempfile.TemporaryDirectory(prefix="yichui-sets-") as h:
        os.environ["YICHUI_RUNTIME_DIR"] = h
        try:
            session = Session.new(task, h=Path(h))  # one session: a port it claimed is its own on the next try
            while True:
                try:
                    Engine(session, None, overrides=overrides).precheck()
                    return refused
                except AnswerError as e:
                    step, _, key = str(e.msg.args.get("name", "")).partition(".")
                    here = e.msg.key in ("answer.invalid", "answer.set_not_asked")
                    if not here or key not in overrides.get(step, {}):
                        raise SystemExit(f"{task}: {i18n.render(e.msg)}") from None
                    refused[f"{step}.{key}"] = i18n.render(e.msg)
                    del overrides[step][key]
        finally:
            os.environ.pop("YICHUI_RUNTIME_DIR")
            if runtime is not None:
                os.environ["YICHUI_RUNTIME_DIR"] = runtime


def dry_row(results: Path, phase: str, task: str, sets: dict, *more: str) -> dict:
    """A dry run's phase: the command it would run, its --set values checked (:func:`check_sets`)."""
    return row(results, phase, dry_run=True, argv=run_argv(task, sets, *more), refused_here=check_sets(task, sets))


# ---- 2. the session --------------------------------------------------------------------------------------------

def session(sid: str) -> dict:
    return json.loads((home() / "sessions" / f"{sid}.json").read_text())


def newest_session(after: float) -> str | None:
    found = [p for p in (home() / "sessions").glob("*.json") if p.stat().st_mtime >= after]
    return max(found, key=lambda p: p.stat().st_mtime).stem if found else None


def step_times(s: dict) -> dict:
    """Wall seconds of each step that ran, from the session file's timestamps."""
    out = {}
    for name, st in s["steps"].items():
        if st.get("started_at") and st.get("finished_at"):
            a, b = (dt.datetime.fromisoformat(st[k]) for k in ("started_at", "finished_at"))
            out[name] = round((b - a).total_seconds(), 1)
    return out


def summary(s: dict) -> dict:
    """What the checks need from a session: per-step times, the deploy step's outputs, the export's and the
    training's figures."""
    st = {k: v.get("outputs") or {} for k, v in s["steps"].items()}
    ex = st.get("export", {})
    return {"session": s["id"], "task": s["task"], "status": {k: v.get("status") for k, v in s["steps"].items()},
            "errors": {k: v.get("error") for k, v in s["steps"].items() if v.get("error")},
            "step_seconds": step_times(s), "deploy": {k: v for k, v in st.get("deploy", {}).items() if k != "args"},
            "deploy_args": st.get("deploy", {}).get("args"),
            "export": {"merged_smoke": ex.get("merged_smoke"), "merge_check": ex.get("merge_check"),
                       "artifacts": {f: {k: a.get(k) for k in ("seconds", "bytes", "tool", "quality")}
                                     for f, a in (ex.get("artifacts") or {}).items()}},
            "train": {k: st.get("train", {}).get(k) for k in ("steps", "train_loss", "first5_mean", "last5_mean",
                                                              "peak_mem_gib", "device", "samples")},
            "evaluate": {"table": st.get("evaluate", {}).get("table"), "columns": st.get("evaluate", {}).get("columns"),
                         "verdict": st.get("evaluate", {}).get("verdict"),
                         "parts": {k: {x: y for x, y in v.items() if x != "answers"} | {"answers": v.get("answers", [])[:3]}
                                   for k, v in (st.get("evaluate", {}).get("parts") or {}).items()}}}


def chain_sets(a, base_dir: Path, more: dict | None = None) -> dict:
    """The chain's answers: LoRA on the bundled data, the exports, the deploy on --engine, the evaluation."""
    formats = [f for f in a.formats.split(",") if f]
    sets = {"select_model.source": "local", "select_model.path": str(base_dir),
            "choose_strategy.method": "lora", "choose_strategy.lora_rank": 64, "choose_strategy.lora_alpha": 128,
            "choose_strategy.lora_dropout": 0.0, "choose_strategy.lora_targets": "all-linear",
            "choose_strategy.dataset": "bundled", "choose_strategy.seq_len": 512,
            "choose_strategy.batch_size": 16, "choose_strategy.micro_batch": 16, "choose_strategy.grad_accum": 1,
            "choose_strategy.learning_rate": a.lr, "choose_strategy.max_steps": a.steps,
            "choose_strategy.save_steps": a.steps, "choose_strategy.val_ratio": 0.05,
            "choose_strategy.sample_question": QUESTION,
            "export.serve_with": a.engine, "export.formats": ",".join(formats),
            "deploy.backend": a.engine, "deploy.model": "merged", "deploy.host": "0.0.0.0" if a.engine != "transformers"
            else "127.0.0.1", "deploy.port": a.port, "deploy.cuda_graphs": "yes" if a.graphs else "no",
            "deploy.gpu_memory_utilization": a.util, "deploy.engine_args": engine_args(a, a.engine),
            "evaluate.heldout": "training", "evaluate.heldout_samples": 16, "evaluate.max_new_tokens": 64,
            "evaluate.generate_with": a.eval_with}
    if a.engine == "transformers":
        for k in ("deploy.cuda_graphs", "deploy.gpu_memory_utilization", "deploy.engine_args"):
            sets.pop(k)
    if a.benchmark_limit:  # GSM8K through the engine, base and fine-tuned (the data placed by --gsm8k)
        sets |= {"evaluate.benchmarks": "gsm8k", "evaluate.benchmark_limit": a.benchmark_limit}
    return sets | (more or {})


def chain(a, base_dir: Path, results: Path, more: dict | None = None) -> dict:
    argv = run_argv("finetune", chain_sets(a, base_dir, more))
    cache = kernel_cache_bytes(a.engine)
    t0 = time.time()
    rc = sh(argv, results / "chain.log", timeout=3600)
    sid = newest_session(t0 - 1)
    out = {"rc": rc, "wall_seconds": round(time.time() - t0, 1), "kernel_cache_bytes_before": cache,
           "kernel_cache_bytes_after": kernel_cache_bytes(a.engine)}
    if sid:
        out |= summary(session(sid))
    return out


# ---- 3. checks on a running server -------------------------------------------------------------------------------

def curl_status(url: str, key: str | None, body: dict | None = None) -> int:
    argv = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "120", url]
    if body is not None:
        argv += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
    cfg = None
    if key:  # through curl's config on stdin: the key stays off this command line too
        cfg = f'header = "Authorization: Bearer {key}"\n'
        argv += ["-K", "-"]
    r = subprocess.run(argv, capture_output=True, text=True, input=cfg, timeout=180)
    return int(r.stdout.strip() or 0)


def key_leaks(key: str, where: list[Path]) -> list[str]:
    """Files under ``where`` that hold ``key`` (the key's own 0600 file excluded)."""
    leaks = []
    for root in where:
        for p in root.rglob("*") if root.is_dir() else []:
            if p.is_file() and p.name != "api_key":
                try:
                    if key.encode() in p.read_bytes():
                        leaks.append(str(p))
                except OSError:
                    pass
    return leaks


def _holds(path: Path, key: str) -> bool:
    try:
        return key.encode() in path.read_bytes()
    except OSError:
        return False


def check_server(sid: str, results: Path, label: str) -> dict:
    """401 without the key and 200 with it, the key in no file, and `yichui chat` against the session's server."""
    s = session(sid)
    dep = s["steps"]["deploy"]["outputs"]
    endpoint, model = dep["endpoint"], dep["served_model"]
    key = Path(dep["api_key_file"]).read_text().strip() if dep.get("api_key_file") else None
    body = {"model": model, "messages": [{"role": "user", "content": QUESTION}], "max_tokens": 64}
    out = {"session": sid, "endpoint": endpoint, "served_model": model, "engine": dep.get("backend"),
           "engine_version": dep.get("engine_version"), "start_seconds": dep.get("start_seconds"),
           "finish_reason": dep.get("finish_reason"), "stream_finish_reason": dep.get("stream_finish_reason"),
           "reply": dep.get("reply"), "reply_tokens": dep.get("reply_tokens"), "kv_cache": dep.get("kv_cache"),
           "engine_table": dep.get("engine_table")}
    from recipes.serving import client

    out["models_listed"] = client.models(endpoint, api_key=key)
    if key:
        out["http_without_key"] = curl_status(endpoint + "/chat/completions", None, body)
        out["http_with_wrong_key"] = curl_status(endpoint + "/chat/completions", "not-the-key", body)
        out["http_with_key"] = curl_status(endpoint + "/chat/completions", key, body)
        out["key_in_files"] = key_leaks(key, [Path(s["run_dir"]), home() / "sessions", results])
        out["key_in_command_lines"] = [p.parent.name for p in Path("/proc").glob("[0-9]*/cmdline")
                                       if _holds(p, key)]  # what `ps` shows every user
    log = results / f"chat-{label}.txt"
    t0 = time.time()
    rc = sh([YICHUI, "chat", sid, "--max-tokens", "128"], log, timeout=300, stdin=QUESTION + "\n/exit\n")
    text = log.read_text(errors="replace")
    out["yichui_chat"] = {"rc": rc, "seconds": round(time.time() - t0, 1), "output": text[-600:]}
    # the engine's own start-up lines about memory (vLLM: weights, KV cache), for the calibration
    try:
        lines = Path(dep["log"]).read_text(errors="replace").splitlines()
        out["engine_memory_lines"] = [x[-300:] for x in lines if re.search(
            r"KV cache|Model loading took|memory profiling|Memory profiling|non_torch|torch peak|CUDA graph|"
            r"Available KV|weights_memory|model weights take|KV Cache is allocated|Load weight end|CacheConfig\(|"
            r"max_total_num_tokens|mem usage|avail mem", x)][:40]
    except OSError:
        pass
    if Path(dep["log"]).exists():
        shutil.copy(dep["log"], results / f"server-{label}.log")
    return out


# ---- 4. load -----------------------------------------------------------------------------------------------------

def load(a, sid: str, results: Path) -> dict:
    dep = session(sid)["steps"]["deploy"]["outputs"]
    merged = session(sid)["steps"]["export"]["outputs"]["merged_dir"]
    common = [sys.executable, str(ROOT / "bench" / "serve_load.py"), "--requests", str(a.load_requests),
              "--concurrency", "1,8,64", "--max-tokens", "64"]
    argv = common + ["--endpoint", dep["endpoint"], "--model", dep["served_model"], "--label", a.engine,
                     "--out", str(results / "load-engine.json")]
    if dep.get("api_key_file"):
        argv += ["--key-file", dep["api_key_file"]]
    rc1 = sh(argv, results / "load.log", timeout=1200)
    rc2 = sh(common + ["--serve-transformers", merged, "--device", "cuda", "--label", "transformers",
                       "--out", str(results / "load-transformers.json")], results / "load.log", timeout=1800)
    out = {"rc": [rc1, rc2]}
    for name in ("engine", "transformers"):
        p = results / f"load-{name}.json"
        if p.exists():
            out[name] = json.loads(p.read_text())
    return out


# ---- 5. every export, served ---------------------------------------------------------------------------------------

def _wait(p: subprocess.Popen, timeout: float) -> int:
    """The exit status of ``p``, or 124 after killing it when it outlasts ``timeout`` (a start that hangs)."""
    try:
        return p.wait(timeout=max(1.0, timeout))
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return 124


def formats(a, sid: str, results: Path, engine: str, port: int) -> dict:
    """Every export of session ``sid`` that ``engine`` loads, the merged model when it is not the chain's engine,
    and the adapter, each deployed by ``yichui run --task deploy --from``: started ``--stagger`` s apart (their
    imports overlap; an engine profiling memory while another releases some can fail its start), and any that
    failed started once more alone. Each deploy is given ``--deploy-timeout`` seconds."""
    from recipes.serving import engines

    s = session(sid)
    inst = engines.find(engine, Path(os.environ.get("YICHUI_ENVS") or home() / "envs"))
    loads = engines.formats(engine, inst, engines.cache_dir(home()))
    exported = [f for f in (s["steps"]["export"]["outputs"].get("artifacts") or {}) if f in loads]
    targets = format_targets(a, engine, exported)
    label = lambda fmt: f"{engine}-{fmt}"  # noqa: E731

    def start(i: int, fmt: str, attempt: int) -> subprocess.Popen:
        argv = run_argv("deploy", format_sets(a, engine, fmt, port + i + 20 * attempt), "--from", sid)
        return subprocess.Popen(argv, stdout=open(results / f"deploy-{label(fmt)}.log", "a"), stderr=subprocess.STDOUT)

    out = {}
    t_start = time.time()
    if engine != a.engine:  # one at a time: SGLang's memory fraction counts what other processes hold (it fails
        # to size its KV cache beside them), and each start then sees the whole GPU, as a user's would
        for i, fmt in enumerate(targets):
            t0 = time.time()
            rc = _wait(start(i, fmt, 0), a.deploy_timeout)
            out[fmt] = {"rc": rc, "attempt": 0, "wall_seconds": round(time.time() - t0, 1), "concurrent_start": False}
            d = _deploy_session(engine, fmt, t0, sid)
            if d:
                out[fmt] |= summary(d)
                if d["steps"]["deploy"]["status"] == "done":
                    out[fmt]["server"] = _safe(check_server, d["id"], results, label(fmt))
                else:  # the engine's own error is in its log, not in the deploy step's one line
                    keep_log(d, results, label(fmt))
                sh([YICHUI, "serve", "stop", d["id"]], results / "stop.log", timeout=120)
        return {"engine": engine, "formats": out}
    for attempt in (0, 1):
        todo = [f for f in targets if f not in out or out[f]["rc"] != 0]
        if not todo:
            break
        procs = {}
        for fmt in todo:
            procs[fmt] = (start(targets.index(fmt), fmt, attempt), time.time())
            if attempt == 0:
                time.sleep(a.stagger)
            else:  # alone, one after another
                _wait(procs[fmt][0], a.deploy_timeout)
        for fmt, (p, started) in procs.items():
            rc = _wait(p, a.deploy_timeout - (time.time() - started))
            out[fmt] = {"rc": rc, "attempt": attempt, "wall_seconds": round(time.time() - started, 1),
                        "concurrent_start": attempt == 0 and len(todo) > 1}
    for fmt in out:
        d = _deploy_session(engine, fmt, t_start, sid)
        if d:
            out[fmt] |= summary(d)
            if d["steps"]["deploy"]["status"] == "done":
                out[fmt]["server"] = _safe(check_server, d["id"], results, label(fmt))
    return {"engine": engine, "formats": out}


def format_targets(a, engine: str, exported: list[str]) -> list[str]:
    """What phase 5 serves with ``engine``: the merged model when it is not the chain's engine, the exports it
    loads, the adapter."""
    return (["merged"] if engine != a.engine else []) + exported + (["adapter"] if engine != "transformers" else [])


def format_sets(a, engine: str, fmt: str, port: int) -> dict:
    """The deploy answers of one export served in phase 5 (``yichui run --task deploy --from`` the chain)."""
    return {"deploy.backend": engine, "deploy.model": fmt, "deploy.host": "127.0.0.1" if engine == "transformers"
            else "0.0.0.0", "deploy.port": port, "deploy.cuda_graphs": "no",
            "deploy.gpu_memory_utilization": a.format_util, "deploy.engine_args": engine_args(a, engine)}


def _deploy_session(engine: str, fmt: str, since: float, chain_sid: str) -> dict | None:
    """The newest deploy session saved since ``since`` that served ``fmt`` with ``engine``."""
    found = None
    for path in sorted((home() / "sessions").glob("*.json"), key=lambda p: p.stat().st_mtime):
        if path.stat().st_mtime < since - 5 or path.stem == chain_sid:
            continue
        d = json.loads(path.read_text())
        answers = d["steps"]["deploy"].get("answers") or {}
        if d.get("task") == "deploy" and answers.get("model") == fmt and answers.get("backend") == engine:
            found = d
    return found


def keep_log(d: dict, results: Path, label: str) -> None:
    """A failed deploy's engine log, beside the results (a started one's is copied by check_server)."""
    log = Path(d["run_dir"]) / "serve" / "server.log"
    if log.exists():
        shutil.copy(log, results / f"server-{label}.log")


def _safe(fn, *args):
    try:
        return fn(*args)
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"[-2000:]}


def stop_servers(results: Path) -> None:
    for path in (home() / "sessions").glob("*.json"):
        sh([YICHUI, "serve", "stop", path.stem], results / "stop.log", timeout=120)


# ---- 6. a shape not used for the calibration -----------------------------------------------------------------

def holdout(a, results: Path, engine: str, port: int) -> dict:
    """The held-out shape (random weights) deployed alone on ``engine``: its KV cache against the memory model's.
    The chain's engine starts with CUDA graphs at --util; another engine eager at --format-util, as its formats."""
    d = prepare_apart(a.holdout, Path(a.work) / Path(a.holdout).name, 0)
    own = engine == a.engine
    graphs = own or (a.cmd == "one" and a.graphs)
    argv = run_argv("deploy", holdout_sets(a, engine, port, d["dir"]))
    label = "holdout" if own else f"holdout-{engine}-{Path(a.holdout).name}{'-graphs' if graphs else ''}"
    t0 = time.time()
    rc = sh(argv, results / f"{label}.log", timeout=1800)
    sid = newest_session(t0 - 1)
    out = {"rc": rc, "model": d, "engine": engine, "label": label}
    if sid:
        s = session(sid)
        out |= summary(s)
        if s["steps"]["deploy"]["status"] == "done":
            out["server"] = _safe(check_server, sid, results, label)
        else:
            keep_log(s, results, label)
        sh([YICHUI, "serve", "stop", sid], results / "stop.log", timeout=120)
    return out


def holdout_sets(a, engine: str, port: int, model_dir: str) -> dict:
    """The deploy answers of the held-out shape (phase 6; `one`'s every shape)."""
    own = engine == a.engine
    graphs = own or (a.cmd == "one" and a.graphs)
    return {"select_model.source": "local", "select_model.path": model_dir, "deploy.backend": engine,
            "deploy.model": "merged", "deploy.host": "127.0.0.1", "deploy.port": port,
            "deploy.cuda_graphs": "yes" if graphs else "no",
            "deploy.gpu_memory_utilization": a.util if own else a.format_util,
            "deploy.engine_args": engine_args(a, engine)}


# ---- 7. time to serve again (issue 48) ---------------------------------------------------------------------

WARM_TARGETS = "merged,other-weights,bnb-4bit"


def kernel_cache_bytes(engine: str = "") -> int:
    """Bytes under YICHUI_HOME/cache/kernels (recipes/serving/engines.py kernel_cache_env), of ``engine``'s folders
    only when given (``<engine>-<version>``): 0 before that engine's first start on this machine."""
    root = home() / "cache" / "kernels"
    if not root.is_dir():
        return 0
    return sum(p.stat().st_size for d in root.glob(f"{engine}-*" if engine else "*") for p in d.rglob("*")
               if p.is_file())


def warm_sets(a, target: str, port: int, base_dir: str) -> tuple[dict, tuple[str, ...]]:
    """The answers of one warm deploy and the options before them: ``other-weights`` deploys the base folder (the
    same shape, other weights) as a new session; the others (``merged``, an export, ``adapter``) ``--from`` the
    chain's session (``CHAIN-SESSION``: filled in by the caller). Served as the chain's server was: bound beyond
    loopback with a key, CUDA graphs as ``--graphs``, the same share of the GPU."""
    common = {"deploy.backend": a.engine, "deploy.host": "0.0.0.0" if a.engine != "transformers" else "127.0.0.1",
              "deploy.port": port, "deploy.cuda_graphs": "yes" if a.graphs else "no",
              "deploy.gpu_memory_utilization": a.util, "deploy.engine_args": engine_args(a, a.engine)}
    if a.engine == "transformers":
        for k in ("deploy.cuda_graphs", "deploy.gpu_memory_utilization", "deploy.engine_args"):
            common.pop(k)
    if target == "other-weights":
        return {"select_model.source": "local", "select_model.path": base_dir, "deploy.model": "merged"} | common, ()
    return {"deploy.model": target} | common, ("--from", "CHAIN-SESSION")


def warm(a, chain_sid: str, base_dir: str, results: Path, target: str, port: int, label: str = "") -> dict:
    """One deploy after the chain's (its server stopped): the command's wall time to its end (the engine started,
    a reply and a streamed one, the parity gate), the deploy step's outputs, the engine's kernel cache before and
    after (0 before: its first start on this machine); the server stopped after. ``label`` names its log."""
    sets, more = warm_sets(a, target, port, base_dir)
    more = tuple(chain_sid if x == "CHAIN-SESSION" else x for x in more)
    label = label or f"warm-{target}"
    cache = kernel_cache_bytes(a.engine)
    t0 = time.time()
    rc = sh(run_argv("deploy", sets, *more), results / f"{label}.log", timeout=a.deploy_timeout)
    out = {"target": target, "engine": a.engine, "rc": rc, "wall_seconds": round(time.time() - t0, 1),
           "kernel_cache_bytes_before": cache, "kernel_cache_bytes_after": kernel_cache_bytes(a.engine)}
    sid = newest_session(t0 - 1)
    if sid and sid != chain_sid:
        d = session(sid)
        out |= summary(d)
        if d["steps"]["deploy"]["status"] != "done":
            keep_log(d, results, label)
        sh([YICHUI, "serve", "stop", sid], results / "stop.log", timeout=120)
    return out


def warm_all(a, chain_sid: str, base_dir: str, results: Path) -> None:
    """Every ``--warm`` target in turn (one may come twice: a first start, then again), each alone on the GPU
    (every server stopped before it)."""
    for i, target in enumerate(t for t in a.warm.split(",") if t):
        stop_servers(results)
        phase(results, "warm", warm, a, chain_sid, base_dir, results, target, a.port + 70 + i,
              f"warm-{a.engine}-{i}-{target}")


def cmd_warm(a) -> None:
    """Phase 7 alone, in a later device call on the machine that ran the chain (its YICHUI_HOME, its kernel
    caches): ``--session`` or the newest finetune session whose deploy step is done."""
    results = Path(a.results)
    results.mkdir(parents=True, exist_ok=True)
    sid = a.session
    if not sid:
        done = [p for p in (home() / "sessions").glob("*.json")
                if (d := json.loads(p.read_text())).get("task") == "finetune"
                and d["steps"].get("deploy", {}).get("status") == "done"]
        if not done:
            raise SystemExit(f"no finetune session with its deploy step done under {home()}")
        sid = max(done, key=lambda p: p.stat().st_mtime).stem
    base_dir = session(sid)["steps"]["select_model"]["answers"]["path"]
    a.warm = a.targets
    rows = results / "rows.jsonl"
    if not rows.exists() or '"phase": "env"' not in rows.read_text():  # the GPU and versions these rows ran on
        phase(results, "env", versions, a)
    warm_all(a, sid, base_dir, results)
    stop_servers(results)
    row(results, "done")


def versions(a) -> dict:
    from importlib.metadata import PackageNotFoundError, version

    from recipes.serving import engines

    v = {}
    for p in ("torch", "transformers", "peft", "trl", "bitsandbytes", "compressed-tensors"):
        try:
            v[p] = version(p)
        except PackageNotFoundError:
            v[p] = None
    inst = engines.find(a.engine, Path(os.environ.get("YICHUI_ENVS") or home() / "envs"))
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip() if shutil.which("nvidia-smi") else None
    return {"args": vars(a), "versions": v, "engine": a.engine, "engine_version": inst.version if inst else None,
            "engine_python": inst.python if inst else None, "gpu": smi, "python": sys.version.split()[0]}


def quantized_base(a, base_dir: Path, results: Path) -> dict:
    """Issue 23: the base written as a compressed-tensors W4A16 checkpoint (bench/packed_lora.py quantize_folder:
    the layout of a GPTQ export), LoRA trained on it kept quantized (recipes/training/packed.py), the adapter served
    unmerged on that quantized base by the chain's engine (``deploy.model`` "adapter"), no further exports."""
    from packed_lora import quantize_folder

    q = quantize_folder(base_dir, base_dir.with_name(base_dir.name + "-w4a16"))
    b = argparse.Namespace(**(vars(a) | {"formats": "", "benchmark_limit": 0}))
    out = chain(b, q, results, {"deploy.model": "adapter"})
    if out.get("status", {}).get("deploy") == "done":
        out["server"] = _safe(check_server, out["session"], results, "adapter-on-w4a16")
    if out.get("session"):
        res = Path(session(out["session"])["run_dir"]) / "train" / "result.json"
        out["packed_base"] = json.loads(res.read_text()).get("packed_base") if res.exists() else None
    return out


def dry_run(a, results: Path, work: Path) -> None:
    """Each phase's command, its answers checked, in the order ``run`` takes them; the base model is not built
    (its folder named), no session or server is started."""
    base = str(work / Path(a.shape).name)
    if a.quantized_base:
        b = argparse.Namespace(**(vars(a) | {"formats": "", "benchmark_limit": 0}))
        sets = chain_sets(b, Path(base + "-w4a16"), {"deploy.model": "adapter"})
        dry_row(results, "quantized_base", "finetune", sets)
        return
    dry_row(results, "chain", "finetune", chain_sets(a, Path(base)))
    for i, engine in enumerate(e for e in a.format_engines.split(",") if e):
        for j, fmt in enumerate(format_targets(a, engine, [f for f in a.formats.split(",") if f])):
            dry_row(results, "formats", "deploy", format_sets(a, engine, fmt, a.port + 100 * (i + 1) + j), "--from",
                    "CHAIN-SESSION")
    for i, engine in enumerate(e for e in (a.holdout_engines.split(",") if a.holdout else []) if e):
        dry_row(results, "holdout", "deploy", holdout_sets(a, engine, a.port + 50 + i,
                                                           str(work / Path(a.holdout).name)))
    for i, target in enumerate(t for t in a.warm.split(",") if t):
        sets, more = warm_sets(a, target, a.port + 70 + i, base)
        dry_row(results, "warm", "deploy", sets, *more)


def cmd_run(a) -> None:
    results, work = Path(a.results), Path(a.work)
    results.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    phase(results, "env", versions, a)
    if a.gsm8k:
        place_gsm8k(a.gsm8k)
    if a.dry_run:
        dry_run(a, results, work)
        return row(results, "done")
    base = phase(results, "base", prepare_apart, a.shape, work / Path(a.shape).name, a.pretrain_steps)
    if a.quantized_base:  # this chain alone
        phase(results, "quantized_base", quantized_base, a, Path(base.get("dir") or work / Path(a.shape).name), results)
        stop_servers(results)
        return row(results, "done")
    c = phase(results, "chain", chain, a, Path(base.get("dir") or work / Path(a.shape).name), results)
    sid = c.get("session")
    if sid and c.get("status", {}).get("deploy") == "done":
        phase(results, "server:merged", check_server, sid, results, "merged")
        if a.load_requests:
            phase(results, "load", load, a, sid, results)
        if a.warm:
            warm_all(a, sid, str(base.get("dir") or work / Path(a.shape).name), results)
    for i, engine in enumerate(e for e in a.format_engines.split(",") if e):
        if engine != a.engine:
            stop_servers(results)  # another engine's servers start on a GPU of their own
        if sid and c.get("status", {}).get("export") == "done":  # beside the main server: --util + N × --format-util ≤ 1
            phase(results, "formats", formats, a, sid, results, engine, a.port + 100 * (i + 1))
    stop_servers(results)
    for i, engine in enumerate(e for e in (a.holdout_engines.split(",") if a.holdout else []) if e):
        phase(results, "holdout", holdout, a, results, engine, a.port + 50 + i)
        stop_servers(results)
    row(results, "done")


def memory_rows(results: Path) -> list[dict]:
    """Every engine start of the run (the chain's server, each format's, each held-out shape's): the engine's
    KV-cache tokens, the prediction made at deploy time (the memory model of that day) and the current model's."""
    from recipes.memory import model as memory

    rows = [json.loads(x) for x in (results / "rows.jsonl").read_text().splitlines() if x.strip()]
    env = next((r for r in rows if r["phase"] == "env"), None)
    parent = results.parent / "rows.jsonl"
    if env is None and parent.exists():  # later rows of the same machine in a subfolder: the run's env row
        env = next((json.loads(x) for x in parent.read_text().splitlines() if '"phase": "env"' in x), None)
    env = env or {}
    format_util = (env.get("args") or {}).get("format_util", 0.1)  # runs before args were recorded: the default
    # the GPU as nvidia-smi named it ("NAME, TOTAL MiB, DRIVER"); runs before it was recorded: the H200
    gpu = [x.strip() for x in str(env.get("gpu") or "NVIDIA H200, 143771 MiB").split(",")]
    gpu_name, total_gib = gpu[0].removesuffix(" HBM3"), float(gpu[1].split()[0]) / 1024
    shapes = {k: memory.shape_from_config(json.loads((CONFIGS / k / "config.json").read_text()))
              for k in ("qwen2.5-0.5b", "qwen2.5-1.5b")}
    fmt_key = {"gptq-w4a16": "gptq", "awq-w4a16": "awq", "fp8-dynamic": "fp8", "bnb-4bit": "bnb4"}
    runs = []  # (name, kind, shape, format, deploy outputs, deploy argv)
    for r in rows:
        if r["phase"] == "chain" and r.get("deploy", {}).get("kv_cache"):
            runs.append(("merged", "fit", "qwen2.5-0.5b", "merged", r["deploy"], r.get("deploy_args") or []))
        elif r["phase"] == "formats":
            for f, o in r.get("formats", {}).items():
                if (o.get("deploy") or {}).get("kv_cache"):
                    runs.append((f, "formats", "qwen2.5-0.5b", f, o["deploy"], o.get("deploy_args") or []))
        elif r["phase"] == "warm" and (r.get("deploy") or {}).get("kv_cache"):  # served again (issue 48)
            fmt = "merged" if r["target"] == "other-weights" else r["target"]
            runs.append((f"{r['target']} again", "fit", "qwen2.5-0.5b", fmt, r["deploy"], r.get("deploy_args") or []))
        elif r["phase"] == "holdout" and (r.get("deploy") or {}).get("kv_cache"):
            shape = Path((r.get("model") or {}).get("shape") or "qwen2.5-1.5b").name
            runs.append(("merged", "held out" if shape != "qwen2.5-0.5b" else "fit", shape, "merged", r["deploy"],
                         r.get("deploy_args") or []))
    lora = shapes["qwen2.5-0.5b"].lora_params(64, "all-linear")
    out = []
    for name, kind, shape, fmt, dep, argv in runs:
        engine = dep.get("backend") or "vllm"
        util = next((float(argv[i + 1]) for i, x in enumerate(argv[:-1])
                     if x in ("--gpu-memory-utilization", "--mem-fraction-static")), format_util)
        eager = any(x in argv for x in ("--enforce-eager", "--disable-cuda-graph", "--eager-mode"))
        if shape not in shapes:
            continue
        pred = memory.serving(shapes[shape], fmt_key.get(fmt, "bf16"), total_gib, util, cuda_graphs=not eager,
                              gpu_name=gpu_name, adapter_params=lora if fmt == "adapter" else 0, engine=engine)
        rep, then = dep["kv_cache"].get("reported_tokens"), dep["kv_cache"].get("predicted_tokens")
        out.append({"run": f"{engine} {name}", "kind": kind, "shape": shape, "format": fmt, "utilization": util,
                    "cuda_graphs": not eager, "reported_tokens": rep, "predicted_then": then,
                    "predicted_now": pred["max_tokens"],
                    "error_then_pct": round((then / rep - 1) * 100, 2) if rep and then else None,
                    "error_now_pct": round((pred["max_tokens"] / rep - 1) * 100, 2) if rep else None})
    return out


def cmd_one(a) -> None:
    """One engine started alone on each shape of ``--shape`` in turn, random weights (no training, no export): the
    deploy step's checks, the server checks and its KV cache; for an engine carried on its own in a short device
    call. ``--graphs``: with CUDA graphs (the deploy step's default), else eager."""
    results = Path(a.results)
    results.mkdir(parents=True, exist_ok=True)
    a.engine = a.serve
    phase(results, "env", versions, a)
    for i, shape in enumerate(a.shape.split(",")):
        a.holdout, a.engine = shape, ""  # holdout(): an engine other than the chain's, at --format-util
        phase(results, "holdout", holdout, a, results, a.serve, a.port + i)
        stop_servers(results)
    row(results, "done")


def root_cause(results: Path, label: str) -> str | None:
    """The first exception line in a failed start's engine log (the cause, before the wrappers' errors)."""
    log = results / f"server-{label}.log"
    if not log.exists():
        return None
    first = next((x for x in log.read_text(errors="replace").splitlines() if re.match(r"^[\w.]*(Error|Exception): ", x)), None)
    return f"`{first.strip()}` (engine log)" if first else None


def time_to_serve(starts: list[tuple[str, dict]]) -> list[str]:
    """The table of deploys: the kernel cache found (MiB), the engine's start phases as the deploy step saw them
    (seconds after the engine's start), the deploy step's wall seconds and yichui's own share of them (the step less
    the engine's start), the parity gate's prompt check and greedy match."""
    out = ["| deploy | kernel cache found (MiB) | engine start phases (s) | engine ready (s) | deploy step (s) | "
           "yichui's own (s) | prompt parity | greedy tokens |", "|---|---:|---|---:|---:|---:|---|---|"]
    for name, r in starts:
        d = r.get("deploy") or {}
        phases = d.get("start_phases") or {}
        ready, step = d.get("start_seconds"), (r.get("step_seconds") or {}).get("deploy")
        own = round(step - ready, 1) if ready is not None and step is not None else None
        par = d.get("parity") or {}
        prompt = ("same" if par.get("prompt_ok") else "DIFFERS") + (" (ids)" if par.get("by_ids") else " (count)") \
            if par else "—"
        every = [par] + [o for o in par.get("others") or [] if isinstance(o, dict)] if par else []
        diffs = [o["logprob_diff"] for o in every if isinstance(o.get("logprob_diff"), (int, float))]
        # each prompt's greedy tokens (the sample question and the held-out ones, 2026-12-07 on) and the largest
        # log-prob difference on agreed tokens, where the engine reports log-probs
        greedy = (f"{sum(bool(o.get('greedy_match')) for o in every)}/{len(every)} same"
                  + (f", Δlogp ≤ {max(diffs):.3f}" if diffs else "")) if par else "—"
        failed = next(iter((r.get("errors") or {}).values()), f"rc {r.get('rc')}")
        err = "" if d else f" (failed: {failed})"
        found = r.get("kernel_cache_bytes_before")
        out.append(f"| {name}{err[:200]} | {'—' if found is None else f'{found / 2**20:,.0f}'} | "
                   + " → ".join(f"{k} {v}" for k, v in phases.items()) + f" | {ready if ready is not None else '—'} | "
                   f"{step if step is not None else '—'} | {own if own is not None else '—'} | {prompt} | {greedy} |")
    return out


def memory_curves(results: Path) -> list[str]:
    """The training run's CUDA memory scalars as TensorBoard shows them (``*.tfevents`` copied into the results
    folder from the run's train/tensorboard): each memory tag at the first steps, a tenth, half and the end, and its
    largest value, in GiB."""
    from recipes.training.trackers import tensorboard_scalars

    lines = []
    for path in sorted(results.glob("*.tfevents")):
        every = tensorboard_scalars(path)
        sc = {k: v for k, v in every.items() if k.startswith("memory/")}
        if not sc:
            continue
        steps = sorted({s for v in sc.values() for s, _, _ in v})
        at = sorted({steps[0], steps[min(1, len(steps) - 1)], steps[len(steps) // 10], steps[len(steps) // 2],
                     steps[-1]})
        lines += ["", f"`{path.name}` ({len(steps)} steps):", "",
                  "| GiB | " + " | ".join(f"step {s}" for s in at) + " | largest |", "|---" + "|---:" * (len(at) + 1) + "|"]
        for tag, v in sc.items():
            by = {s: x for s, x, _ in v}
            lines.append(f"| {tag.split('/', 1)[1]} | " + " | ".join(f"{by[s]:.3f}" if s in by else "—" for s in at)
                         + f" | {max(x for _, x, _ in v):.3f} |")
        loss = every.get("train/loss", [])
        gaps = [(b[0], b[2] - a[2]) for a, b in zip(loss, loss[1:])]
        if len(gaps) > 2:  # the logged steps' wall times: where the loop stalled
            typical = statistics.median(g for _, g in gaps)
            slow = [f"before step {st}: {g:.1f} s" for st, g in gaps if g > max(5 * typical, 1.0)]
            lines += ["", f"Logged steps {loss[0][0]}–{loss[-1][0]}: {loss[-1][2] - loss[0][2]:.1f} s of wall time, a "
                      f"median {typical:.2f} s between logged steps" + (f"; stalls {'; '.join(slow)}" if slow else "")]
    return (["", "### The trainer's CUDA memory scalars in TensorBoard (GiB = 2^30 bytes)"] + lines) if lines else []


def cmd_report(a) -> None:
    """Tables from a results folder (raw rows and the engines' logs), printed as markdown."""
    results = Path(a.results)
    rows = [json.loads(x) for x in (results / "rows.jsonl").read_text().splitlines() if x.strip()]
    by = {}
    for r in rows:
        by.setdefault(r["phase"], []).append(r)
    chain = next((r for r in by.get("chain", []) if r.get("session")), {})  # none: a `one` run
    resumed = results / "chain-session.json"  # the chain's session as it stood after a `yichui resume` by hand
    if resumed.exists():
        chain = chain | summary(json.loads(resumed.read_text()))
    lines = ["### Engine × format", "",
             "| served | start s | /v1/models | reply (tokens, finish) | stream finish | no key | wrong key | key | "
             "key in files | `yichui chat` |", "|---|---:|---|---|---|---:|---:|---:|---|---|"]
    eager = any(x in (chain.get("deploy_args") or []) for x in ("--enforce-eager", "--disable-cuda-graph", "--eager-mode"))
    served = [(f"{m.get('engine')} merged{' (eager)' if eager else ''}", m) for m in by.get("server:merged", [])[-1:]]
    failed = []
    last = {fr.get("engine", "vllm"): fr for fr in by.get("formats") or []}  # each engine's last run
    for fr in last.values():
        for f, o in fr.get("formats", {}).items():
            if o.get("server"):
                served.append((f"{fr.get('engine', 'vllm')} {f} (eager)", o["server"]))
            else:
                err = root_cause(results, f"{fr.get('engine', 'vllm')}-{f}") or \
                    next(iter((o.get("errors") or {}).values()), None) or f"rc {o.get('rc')}"
                failed.append(f"- {fr.get('engine', 'vllm')} {f}: {str(err)[:400]}")
    for h in by.get("holdout", []):
        shape = Path((h.get("model") or {}).get("shape") or "").name
        if h.get("server"):
            graphs = not any(x in (h.get("deploy_args") or []) for x in ("--enforce-eager", "--disable-cuda-graph",
                                                                            "--eager-mode"))
            served.append((f"{h.get('engine', 'vllm')} {shape} random weights{'' if graphs else ' (eager)'}",
                           h["server"]))
        else:
            err = root_cause(results, h.get("label") or f"holdout-{h.get('engine')}") or \
                next(iter((h.get("errors") or {}).values()), None) or f"rc {h.get('rc')}"
            failed.append(f"- {h.get('engine', 'vllm')} {shape}: {str(err)[:400]}")
    for name, sv in served:
        chat = sv.get("yichui_chat") or {}
        answered = "Short answer" in chat.get("output", "")
        lines.append(f"| {name} | {sv.get('start_seconds')} | {', '.join(sv.get('models_listed') or [])} | "
                     f"{sv.get('reply_tokens')}, {sv.get('finish_reason')} | {sv.get('stream_finish_reason')} | "
                     f"{sv.get('http_without_key')} | {sv.get('http_with_wrong_key')} | {sv.get('http_with_key')} | "
                     f"{'none' if sv.get('key_in_files') == [] else sv.get('key_in_files')} | "
                     f"rc {chat.get('rc')}{', answered' if answered else ''} |")
    if failed:
        lines += ["", "Did not serve:", ""] + failed
    lines += ["", "### KV cache reported by each engine at start, and the memory model's prediction at deploy", "",
              "| served | engine tokens | predicted | error |", "|---|---:|---:|---:|"]
    for name, sv in served:
        kv = sv.get("kv_cache") or {}
        rep, pred = kv.get("reported_tokens"), kv.get("predicted_tokens")
        err = f"{(pred / rep - 1) * 100:+.1f} %" if rep and pred else "—"
        lines.append(f"| {name} | {rep if rep is not None else '—'} | {pred if pred is not None else '—'} | {err} |")
    ev = chain.get("evaluate") or {}
    if ev.get("parts"):
        lines += ["", "### Evaluation through the engine: base and fine-tuned both served", "",
                  "| part | where | loss | ROUGE-L | exact match | GSM8K | samples | seconds |",
                  "|---|---|---:|---:|---:|---:|---:|---:|"]
        for k, v in ev["parts"].items():
            lines.append(f"| {k} | {v.get('where')} | {v.get('loss', '—')} | {v.get('rouge_l', '—')} | "
                         f"{v.get('exact_match', '—')} | {v.get('score', '—')} | {v.get('samples')} | {v.get('seconds')} |")
        lines += ["", f"Verdict: {ev.get('verdict')}"]
    rows_m = memory_rows(results)
    if rows_m:
        lines += ["", "### KV cache: the engine's against the memory model's", "",
                  "| run | shape | format | util | graphs | engine tokens | predicted at deploy | error | "
                  "memory model now | error |", "|---|---|---|---:|---|---:|---:|---:|---:|---:|"]
    for m in rows_m:
        then = f"{m['predicted_then']:,} | {m['error_then_pct']:+.2f} %" if m["predicted_then"] else "— | —"
        lines.append(f"| {m['run']} ({m['kind']}) | {m['shape']} | {m['format']} | {m['utilization']} | "
                     f"{'yes' if m['cuda_graphs'] else 'no'} | {m['reported_tokens']:,} | {then} | "
                     f"{m['predicted_now']:,} | {m['error_now_pct']:+.2f} % |")
    load = (by.get("load") or [{}])[-1]
    if load.get("engine") and load.get("transformers"):
        lines += ["", "### Load: the deploy step's vLLM against transformers serve, same GPU, same model", "",
                  "| concurrent | server | ok | requests/s | p50 s | p99 s | generated tokens/s | ratio (req/s) |",
                  "|---:|---|---:|---:|---:|---:|---:|---:|"]
        for e, t in zip(load["engine"]["rows"], load["transformers"]["rows"]):
            for label, r in (("vLLM", e), ("transformers", t)):
                ratio = f"{e['requests_per_s'] / t['requests_per_s']:.1f}×" if label == "vLLM" else ""
                lines.append(f"| {r['concurrency']} | {label} | {r['ok']}/{r['requests']} | {r['requests_per_s']} | "
                             f"{r['p50_s']} | {r['p99_s']} | {r['completion_tokens_per_s']} | {ratio} |")
    def start_name(w: dict) -> str:  # runs before the engine was recorded: the chain's vLLM
        first = w.get("kernel_cache_bytes_before") == 0
        return f"{w.get('engine') or 'vllm'} {'first start' if first else 'again'}: {w.get('target')}"

    starts = ([(f"{(chain.get('deploy') or {}).get('backend') or 'vllm'} first start (chain's deploy)", chain)]
              if chain.get("deploy") else []) + [(start_name(w), w) for w in by.get("warm", [])]
    if starts:
        lines += ["", "### Time to the first answer, first start and again (issue 48)", ""] + time_to_serve(starts)
    lines += memory_curves(results)
    if not chain.get("step_seconds"):
        print("\n".join(lines))
        return
    # resumed by hand: the first command's wall time is not the chain's; the steps' own times are
    total = round(sum(chain["step_seconds"].values()), 1) if resumed.exists() else chain["wall_seconds"]
    lines += ["", "### Time to a served model (wall seconds per step, from the session file)", "",
              "| " + " | ".join(chain["step_seconds"]) + " | total |", "|" + "---:|" * (len(chain["step_seconds"]) + 1),
              "| " + " | ".join(str(v) for v in chain["step_seconds"].values()) + f" | {total} |"]
    print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    common = argparse.ArgumentParser(add_help=False)  # what `run` and `one` share
    common.add_argument("--work", required=True)
    common.add_argument("--results", required=True)
    common.add_argument("--format-util", type=float, default=0.1, help="each format server's (they run beside the "
                        "main one; the deploy step takes 0.1 at least); `one`: its server's")
    common.add_argument("--engine-args", default=json.dumps({"sglang": "--attention-backend triton "
                                                                       "--sampling-backend pytorch"}),
                        help="JSON: engine → its extra options (deploy.engine_args)")
    r = sub.add_parser("run", parents=[common])
    r.add_argument("--engine", default="vllm")
    r.add_argument("--shape", default="qwen2.5-0.5b")
    r.add_argument("--holdout", default="qwen2.5-1.5b", help="a shape for phase 6 ('' to skip it)")
    r.add_argument("--holdout-engines", default="vllm", help="the engines that serve the held-out shape (comma list)")
    r.add_argument("--pretrain-steps", type=int, default=300)
    r.add_argument("--steps", type=int, default=400)
    r.add_argument("--lr", type=float, default=5e-4)
    r.add_argument("--port", type=int, default=8100)
    r.add_argument("--util", type=float, default=0.5, help="the main server's GPU memory utilization")
    r.add_argument("--format-engines", default="vllm", help="the engines that serve every export in turn (comma list)")
    r.add_argument("--graphs", action="store_true", help="the chain's server with CUDA graphs (for the load benchmark)")
    r.add_argument("--deploy-timeout", type=float, default=480, help="seconds each format's deploy may take")
    r.add_argument("--gsm8k", default="", help="a folder of GSM8K's parquet files (main/test-…), for the evaluate step")
    r.add_argument("--benchmark-limit", type=int, default=50, help="GSM8K questions per model (0: no benchmark)")
    r.add_argument("--load-requests", type=int, default=64)
    r.add_argument("--formats", default="gptq-w4a16,awq-w4a16,fp8-dynamic,bnb-4bit",
                   help="the exports the chain makes (bnb-4bit: vLLM 0.26's --quantization bitsandbytes)")
    r.add_argument("--quantized-base", action="store_true", help="instead of the chain: LoRA on the base written "
                   "as W4A16 (kept quantized), the adapter served unmerged on it")
    r.add_argument("--stagger", type=float, default=20.0, help="seconds between the format servers' starts")
    r.add_argument("--dry-run", action="store_true", help="each phase's command with its answers checked, to "
                   "rows.jsonl; nothing built or started")
    r.add_argument("--eval-with", default="engine", help="evaluate.generate_with: engine (a second server for the "
                   "base) or local (in-process)")
    r.add_argument("--warm", default="", help=f"phase 7's deploys after the chain's (comma list, e.g. {WARM_TARGETS})")
    w = sub.add_parser("warm", parents=[common], help="phase 7 alone, after a `run` on this machine")
    w.add_argument("--session", default="", help="the chain's session (default: the newest finetune session "
                   "whose deploy is done)")
    w.add_argument("--targets", default=WARM_TARGETS)
    w.add_argument("--engine", default="vllm")
    w.add_argument("--port", type=int, default=8100)
    w.add_argument("--util", type=float, default=0.5)
    w.add_argument("--graphs", action="store_true")
    w.add_argument("--deploy-timeout", type=float, default=480)
    o = sub.add_parser("one", parents=[common], help="one engine on a random-weight shape: deploy, server checks, "
                       "KV cache")
    o.add_argument("--serve", required=True, help="the engine")
    o.add_argument("--shape", default="qwen2.5-0.5b", help="one shape or a comma list, served one after another")
    o.add_argument("--port", type=int, default=8150)
    o.add_argument("--graphs", action="store_true", help="with CUDA graphs (default: eager)")
    p = sub.add_parser("report")
    p.add_argument("results")
    p.add_argument("--md")
    a = ap.parse_args()
    {"run": cmd_run, "report": cmd_report, "one": cmd_one, "warm": cmd_warm}[a.cmd](a)


if __name__ == "__main__":
    main()
