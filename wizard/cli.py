"""yichui's command line (typer). The command table (wizard/README.md) is fixed here:

run (default) · demo · resume · replay · steps · show · status · stop · estimate · download · attach
(later issues add: serve start|status|logs|stop, chat)

Exit status: 0 done · 1 a step failed · 2 bad input (arguments, answers, session file) · 130 interrupted.
Imports stay light: torch and transformers load inside the steps that need them.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from pathlib import Path
from typing import List, Optional

import typer

from wizard import i18n

i18n.set_lang(i18n.detect_lang(sys.argv[1:]))
T = i18n.t

# quiet libraries: yichui draws its own progress; their logs go to the session log
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("HF_HUB_VERBOSITY", "error")  # retries are summed up in one line by recipes.hub
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")

app = typer.Typer(help=T("cli.help"), add_completion=False, pretty_exceptions_enable=False,
                  context_settings={"help_option_names": ["-h", "--help"]})

SetOpt = typer.Option(None, "--set", help=T("cli.opt.set"))
YesOpt = typer.Option(False, "--yes", "-y", help=T("cli.opt.yes"))
SessionArg = typer.Argument(None, help=T("cli.arg.session"), show_default=False)


def _ui():
    from wizard.console import UI

    return UI()


def _fail(key: str, code: int = 2, **args) -> "typer.Exit":
    _ui().error(T(key, **args))
    return typer.Exit(code)


def _session_error(e) -> "typer.Exit":
    return _fail(e.key, **e.params)


def _parse_sets(values: list[str] | None) -> dict:
    import recipes

    out: dict = {}
    for v in values or []:
        key, eq, raw = v.partition("=")
        step, dot, name = key.partition(".")
        if not eq or not dot or not step or not name:
            raise _fail("cli.bad_set", value=v)
        if step not in recipes.STEPS:
            raise _fail("cli.unknown_step", step=step, steps=", ".join(recipes.STEPS))
        out.setdefault(step, {})[name] = raw
    return out


def _log_to(session) -> None:
    logdir = session.run_dir / "logs"
    logdir.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(logdir / "wizard.log")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.captureWarnings(True)
    for noisy in ("httpx", "httpcore", "urllib3", "filelock"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _engine(session, ui, interactive: bool, overrides: dict, replay: dict | None = None,
            defaults: dict | None = None, new: bool = False) -> int:
    """Run the session. A new session is checked first (every --set key and typed value) and only then saved and
    locked, so a mistyped --set costs nothing and leaves no session behind."""
    from wizard.engine import AnswerError, Engine
    from wizard.prompter import QuestionaryPrompter

    prompter = QuestionaryPrompter() if interactive else None
    engine = Engine(session, ui, prompter, overrides=overrides, replay=replay, defaults=defaults)
    try:
        engine.precheck()
    except AnswerError as e:
        if new:
            import shutil

            shutil.rmtree(session.run_dir, ignore_errors=True)
        ui.error(i18n.render(e.msg))
        return 2
    if new:
        session.save()
        session.lock()
        ui.say(T("cli.new_session", id=session.id, path=str(session.path)))
    _log_to(session)
    _cpu_deepspeed()
    return engine.run()


def _cpu_deepspeed() -> None:
    """Without GPUs, tell DeepSpeed so before anything imports it (transformers does): it would guess the CPU
    itself, with a warning in the middle of the output."""
    from recipes import memory

    if not memory.detect_gpus():
        os.environ.setdefault("DS_ACCELERATOR", "cpu")


def _load_locked(ref: str | None, unfinished: bool = False):
    from wizard.session import Session, SessionError, find

    try:
        s = Session.load(find(ref, unfinished=unfinished))
        s.lock()
    except SessionError as e:
        raise _session_error(e)
    return s


@contextlib.contextmanager
def _demo_hub(ui, overrides: dict, on: bool = True):
    """For a demo session: build (once) and serve the tiny model while the block runs, and point the session's
    endpoint at this hub (a --set, since the URL changes between runs). Yields the demo's embedded answers (the
    defaults layer), or None for any other session."""
    if not on:
        yield None
        return
    from wizard import demo
    from wizard.session import home

    h = home()
    _cpu_deepspeed()
    if not demo.model_ready(h):
        ui.say(T("cli.demo.building", path=str(demo.hub_root(h))))
    demo.ensure_model(h)
    hub = demo.start_hub(h)
    ui.say(T("cli.demo.hub", url=hub.url, repo="yichui/tiny-qwen2-chat"))
    overrides.setdefault("select_model", {}).setdefault("endpoint", hub.url)
    try:
        yield demo.answers(hub.url)
    finally:
        hub.stop()


def _need_tty() -> None:
    if not sys.stdin.isatty():
        raise _fail("cli.no_tty")


@app.callback(invoke_without_command=True)
def main_callback(ctx: typer.Context,
                  lang: Optional[str] = typer.Option(None, "--lang", help=T("cli.lang"), show_default=False)):
    if lang is not None:
        lang = lang.lower()
        if lang not in i18n.LANGS:
            raise _fail("cli.bad_lang", value=lang)
        i18n.set_lang(lang)
    ctx.obj = {"lang": lang}  # what was asked for, not the locale's guess: `resume` records it
    if ctx.invoked_subcommand is None:
        ctx.invoke(run, task=None, from_=None, set_=None, yes=False)


def _preflight_machine() -> None:
    """`yichui doctor`'s checks that every session needs, before it starts: Python, and a writable YICHUI_HOME
    with room."""
    from recipes import doctor as doc
    from wizard.session import home

    for c in (doc.python_check(), doc.disk_check(home())):
        if c.blocking:
            raise _fail("cli.preflight", what=f"{c.name}: {c.found}", fix=c.fix)


def _ask_task() -> str:
    """The wizard's first question: what the user came for (recipes.TASKS)."""
    import recipes
    from recipes.base import Choice, Question, msg
    from wizard.prompter import QuestionaryPrompter

    q = Question("task", "select", "cli.task", default="finetune",
                 choices=[Choice(t, msg(f"task.{t}")) for t in recipes.TASKS])
    try:
        return QuestionaryPrompter().ask(q, "finetune", {})
    except KeyboardInterrupt:
        raise typer.Exit(130)


def _from_session(new, old) -> list[str]:
    """Take over what ``old`` finished and the new task does not make itself (recipes.REUSABLE, recipes.INPUTS):
    those steps are not done again. Returns the steps taken over."""
    import copy

    import recipes
    from wizard.session import new_record

    taken = []
    for name in recipes.REUSABLE:
        rec = old.steps.get(name, {})
        if rec.get("status") != "done" or (name in recipes.TASKS[new.data["task"]] and name not in recipes.INPUTS):
            continue
        new.steps[name] = copy.deepcopy(rec) | {"copied_from": str(old.path)}
        taken.append(name)
    for name, rec in new.steps.items():  # what the task runs and the old session did not finish stays to do
        if name not in taken and rec["status"] == "skipped" and name in recipes.TASKS[new.data["task"]]:
            new.steps[name] = new_record()
    new.data["from_session"] = str(old.path)
    return taken


@app.command(help=T("cli.run"))
def run(task: Optional[str] = typer.Option(None, "--task", help=T("cli.opt.task"), show_default=False),
        from_: Optional[str] = typer.Option(None, "--from", help=T("cli.opt.from"), show_default=False),
        set_: Optional[List[str]] = SetOpt, yes: bool = YesOpt):
    import recipes
    from wizard.session import Session

    if task is not None and task not in recipes.TASKS:
        raise _fail("cli.unknown_task", task=task, tasks=", ".join(recipes.TASKS))
    overrides = _parse_sets(set_)
    old = _read(from_) if from_ else None
    if not yes:
        _need_tty()
    ui = _ui()
    _preflight_machine()
    if task is None:
        task = "finetune" if yes else _ask_task()
    s = Session.new(task)
    if old is not None:
        ui.say(T("cli.from_reused", old=old.id, steps=", ".join(_from_session(s, old)) or "—"))
    raise typer.Exit(_engine(s, ui, not yes, overrides, new=True))


@app.command(help=T("cli.demo"))
def demo(task: str = typer.Option("finetune", "--task", help=T("cli.opt.task")), set_: Optional[List[str]] = SetOpt):
    import recipes
    from wizard.session import Session

    if task not in recipes.TASKS:
        raise _fail("cli.unknown_task", task=task, tasks=", ".join(recipes.TASKS))
    t0 = time.time()
    overrides = _parse_sets(set_)
    ui = _ui()
    with _demo_hub(ui, overrides) as defaults:
        if task == "evaluate" and "evaluate" in defaults:  # no training split: the bundled conversations
            defaults["evaluate"]["heldout"] = "file"
        s = Session.new(task, demo=True)
        code = _engine(s, ui, False, overrides, defaults=defaults, new=True)
    if code == 0:
        ui.success(T("cli.demo.done", seconds=time.time() - t0))
    raise typer.Exit(code)


@app.command(help=T("cli.resume"))
def resume(ctx: typer.Context, session: Optional[str] = SessionArg, yes: bool = YesOpt,
           set_: Optional[List[str]] = SetOpt):
    overrides = _parse_sets(set_)
    s = _load_locked(session, unfinished=session is None)
    given = (ctx.obj or {}).get("lang")
    if given:  # the latest explicit choice is the session's language from now on
        s.data["lang"] = given
    elif s.data.get("lang") in i18n.LANGS:  # the language the session was started in, whatever the locale now
        i18n.set_lang(s.data["lang"])
    ui = _ui()
    ui.say(T("cli.resuming", id=s.id, path=str(s.path)))
    if s.is_finished():
        ui.say(T("cli.already_finished", id=s.id))
        raise typer.Exit(0)
    if not yes:
        _need_tty()
    with _demo_hub(ui, overrides, bool(s.data.get("demo"))) as defaults:
        code = _engine(s, ui, not yes, overrides, defaults=defaults)
    raise typer.Exit(code)


@app.command(help=T("cli.replay"))
def replay(session: str = typer.Argument(..., help=T("cli.arg.session")), yes: bool = YesOpt,
           set_: Optional[List[str]] = SetOpt):
    from wizard.session import Session

    overrides = _parse_sets(set_)
    if not yes:
        _need_tty()
    old = _read(session)
    ui = _ui()
    s = Session.new(old.data["task"], tuple(n for n, r in old.steps.items() if r["status"] != "skipped"),
                    demo=bool(old.data.get("demo")), replay_of=str(old.path))
    ui.say(T("cli.replaying", path=str(old.path), id=s.id))
    with _demo_hub(ui, overrides, bool(old.data.get("demo"))):
        code = _engine(s, ui, not yes, overrides, replay={n: dict(r["answers"]) for n, r in old.steps.items()},
                       new=True)
    raise typer.Exit(code)


@app.command(help=T("cli.steps"))
def steps():
    import recipes

    _ui().table(T("cli.steps.title"), ["#", T("cli.col.step"), T("cli.col.description")],
                [(i, f"{n} — {T(f'step.{n}.title')}", T(f"step.{n}.desc")) for i, n in enumerate(recipes.STEPS, 1)])


def _brief(d: dict, skip=("config", "estimates", "files", "samples", "shape", "gpus_detected", "strategy",
                          "losses", "components")) -> str:
    items = [f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}" for k, v in d.items()
             if k not in skip and not isinstance(v, dict) and not (isinstance(v, list) and len(v) > 8)]
    text = ", ".join(items)
    return text if len(text) <= 90 else text[:87] + "..."


def _read(ref: str | None):
    from wizard.session import Session, SessionError, find

    try:
        return Session.load(find(ref))
    except SessionError as e:
        raise _session_error(e)


@app.command(help=T("cli.show"))
def show(session: Optional[str] = SessionArg,
         all_: bool = typer.Option(False, "--all", help=T("cli.opt.all"))):
    from wizard.session import all_sessions

    if all_:
        from recipes import jobs

        def server(x) -> str:  # the endpoint of a server that runs now
            job = jobs.read(x.run_dir / "serve" / "server.pid.json")
            return x.steps["deploy"]["outputs"].get("endpoint", "") if job is not None and job.alive() else ""

        unreadable: list = []
        found = all_sessions(unreadable=unreadable)
        ui = _ui()
        ui.table(T("cli.show.all_title"), ["id", T("cli.col.task"), T("cli.col.status"), T("cli.col.step"),
                                           T("cli.col.server"), T("cli.col.updated")],
                 [(x.id, x.data["task"], T("cli.finished" if x.is_finished() else "cli.unfinished"),
                   x.current_step() or "", server(x), (x.data.get("updated_at") or "")[:19]) for x in found])
        for e in unreadable:  # listed, not hidden: the user may want to mend or delete them
            ui.warn(T(e.key, **e.params))
        return
    s = _read(session)
    _ui().table(T("cli.show.title", id=s.id, task=s.data["task"], path=str(s.path)),
                [T("cli.col.step"), T("cli.col.status"), T("cli.col.answers"), T("cli.col.outputs")],
                [(n, T(f"status.{r['status']}") + (f": {r['error']}" if r.get("error") else ""), _brief(r["answers"]),
                  _brief(r["outputs"])) for n, r in s.steps.items()])
    exported = s.steps.get("export", {}).get("outputs", {})
    if exported.get("merged_dir"):  # each export with its quality figures
        from recipes import export

        columns, rows = export.table(exported)
        _ui().table(T("export.table"), [i18n.render(c) for c in columns],
                    [[i18n.render(v) if not isinstance(v, (str, int, float)) else v for v in r] for r in rows])
    evaluated = s.steps.get("evaluate", {}).get("outputs", {})
    if evaluated.get("table"):  # base vs fine-tuned, held-out and benchmarks
        _ui().table(T("evaluate.table"), [T("evaluate.col.metric"), *evaluated["columns"]],
                    [["—" if v is None else v for v in r] for r in evaluated["table"]])
        v = evaluated.get("verdict") or {}
        if v.get("beats") is not None:
            (_ui().say if v["beats"] else _ui().warn)(T("evaluate.beats" if v["beats"] else "evaluate.not_better",
                                                       figures=v.get("figures", "")))
        ui_path = evaluated.get("report")
        if ui_path:
            _ui().say(T("evaluate.report", path=ui_path))


def _job_detail(s, job) -> str:
    from recipes import jobs as jobs_mod

    if job.name == "trainer":
        events, _ = jobs_mod.read_events(s.run_dir / "train" / "events.jsonl")
        last = next((e for e in reversed(events) if e["event"] in ("step", "done", "error")), None)
        if last is None:
            return ""
        if last["event"] == "step":
            return T("cli.detail.step", step=last["step"], total=last.get("total_steps"), loss=last.get("loss"))
        if last["event"] == "done":
            return T("cli.detail.done")
        return T("cli.detail.error", message=last.get("message"))
    if job.name == "server":
        return s.steps.get("deploy", {}).get("outputs", {}).get("endpoint", "")
    return ""


def _estimate_config(model: str, source: str | None, endpoint: str | None, revision: str) -> dict:
    from recipes.hub import client as hub
    from recipes.base import StepError

    local = Path(model).expanduser()
    src = source or ("local" if local.exists() else "hf")
    try:
        return hub.fetch_config(src, str(local) if src == "local" else model,
                                endpoint or hub.default_endpoint(src), revision)
    except StepError as e:
        raise _fail(e.msg.key, **e.msg.args)


@app.command(help=T("cli.doctor"))
def doctor(session: Optional[str] = SessionArg):
    """GPU, driver and CUDA against torch, bf16, disk, RAM, optional engines with their install commands, hubs.
    Exit 1 when something this machine (or SESSION) needs is missing."""
    from recipes import doctor as doc
    from recipes.hub import client as hub
    from wizard.session import home

    needs: tuple = ()
    endpoints = {"hf": os.environ.get("HF_ENDPOINT") or hub.default_endpoint("hf"),
                 "modelscope": os.environ.get("MODELSCOPE_ENDPOINT") or hub.default_endpoint("modelscope")}
    if session is not None:
        s = _read(session)
        needs = doc.needs_of(s.data)
        sel = s.steps.get("select_model", {}).get("answers", {})
        if sel.get("source") in endpoints and sel.get("endpoint"):
            endpoints = {sel["source"]: sel["endpoint"]}  # the hub this session downloads from
    checks = doc.run_all(home(), endpoints, needs)
    ui = _ui()
    ui.table(T("cli.doctor.title"), [T("cli.doctor.col.check"), T("cli.doctor.col.verdict"), T("cli.doctor.col.found"),
                                     T("cli.doctor.col.fix")],
             [(c.name + (" *" if c.needed else ""), T(f"cli.doctor.{c.verdict}"), c.found, c.fix) for c in checks])
    blocking = [c.name for c in checks if c.blocking]
    if blocking:
        ui.error(T("cli.doctor.blocked", what=", ".join(blocking)))
        raise typer.Exit(1)
    ui.success(T("cli.doctor.ready"))


@app.command(help=T("cli.estimate"))
def estimate(model: str = typer.Argument(..., help=T("cli.arg.model")),
             method: str = typer.Option("lora", "--method", help="full | lora | qlora | dora"),
             rank: int = typer.Option(8, "--rank", help=T("cli.opt.rank")),
             targets: str = typer.Option("all-linear", "--targets", help="all-linear | q_proj,v_proj,…"),
             dropout: float = typer.Option(0.05, "--dropout", help=T("cli.opt.dropout")),
             seq: Optional[int] = typer.Option(None, "--seq", help=T("cli.opt.seq"), show_default=False),
             batch: int = typer.Option(1, "--batch", help=T("cli.opt.batch")),
             ckpt: bool = typer.Option(True, "--ckpt/--no-ckpt", help=T("cli.opt.ckpt")),
             attn: str = typer.Option("sdpa", "--attn", help="sdpa | flash | eager"),
             optim: str = typer.Option("adamw", "--optim", help="adamw | adamw8bit | paged"),
             loss: str = typer.Option("fused", "--loss", help="fused | chunked | full"),
             gpus: int = typer.Option(1, "--gpus", help=T("cli.opt.gpus")),
             gpu_memory: Optional[float] = typer.Option(None, "--gpu-memory", help=T("cli.opt.gpu_memory")),
             gpu: Optional[str] = typer.Option(None, "--gpu", help=T("cli.opt.gpu")),
             zero: int = typer.Option(0, "--zero", help=T("cli.opt.zero")),
             offload: bool = typer.Option(False, "--offload", help=T("cli.opt.offload")),
             fsdp: bool = typer.Option(False, "--fsdp", help=T("cli.opt.fsdp")),
             serve: str = typer.Option("bf16", "--serve-format", help="bf16 | fp8 | awq | gptq | bnb4 | bnb8"),
             utilization: float = typer.Option(0.9, "--gpu-memory-utilization", help=T("cli.opt.utilization")),
             source: Optional[str] = typer.Option(None, "--source", help="hf | modelscope | local"),
             endpoint: Optional[str] = typer.Option(None, "--endpoint", help=T("cli.opt.endpoint")),
             revision: str = typer.Option("main", "--revision", help=T("cli.opt.revision")),
             as_json: bool = typer.Option(False, "--json", help=T("cli.opt.json"))):
    import dataclasses
    import json as _json
    import math

    from recipes import memory

    if gpu is not None and gpu not in memory.GPUS:
        raise _fail("cli.unknown_gpu", gpu=gpu, gpus=", ".join(memory.GPUS))
    for name, value, lo in (("--gpu-memory", gpu_memory, 1e-9), ("--seq", seq, 1), ("--batch", batch, 1),
                            ("--gpus", gpus, 1), ("--rank", rank, 1)):
        if value is not None and (not math.isfinite(value) or value < lo):
            raise _fail("cli.option_positive", option=name, value=value)  # before any hub is asked; nan, inf too
    try:  # the options are checked before any hub is asked
        t = memory.Training(method=method, rank=rank, targets=targets, dropout=dropout, ckpt=ckpt, attn=attn,
                            micro_batch=batch, seq=seq or 2048, optim=optim, loss=loss, gpus=gpus, zero=zero,
                            offload=offload, fsdp=fsdp)
        t.check()
    except memory.ConfigError as err:
        raise _fail(err.key, **err.params)
    config = _estimate_config(model, source, endpoint, revision)
    detected = memory.detect_gpus()
    gpu_name, gib = (memory.GPUS[gpu] if gpu else (T("cli.estimate.target_gpu"), gpu_memory) if gpu_memory
                     else (detected[0]["name"], detected[0]["memory_gib"]) if detected else (None, None))
    try:
        shape = memory.shape_from_config(config)
        if seq is None:  # the default: 2048 tokens, or the model's whole context when shorter
            seq = min(2048, shape.max_position or 2048)
            t = dataclasses.replace(t, seq=seq)
        elif shape.max_position and seq > shape.max_position:
            raise _fail("cli.seq_over_max", seq=seq, max=shape.max_position)
        e = memory.estimate(shape, t, gib)
        inst = memory.smallest_instance(shape, t)
        srv = memory.serving(shape, serve, gib or 80.0, utilization, gpus, gpu_name=gpu_name or "")
    except memory.ConfigError as err:
        raise _fail(err.key, **err.params)
    result = {"model": model, "peak_gib": e["peak_gib"], "components": e["components"], "fits": e.get("fits"),
              "margin_gib": e.get("margin_gib"), "gpu": gpu_name, "gpu_memory_gib": gib, "trainable": e["trainable"],
              "n_params": shape.n_params, "approximate": e["approximate"], "smallest_instance": inst,
              "serving": srv | {"format": serve, "utilization": utilization, "gpu_memory_gib": gib or 80.0},
              "config": {k: v for k, v in vars(t).items()}}
    if as_json:
        print(_json.dumps(result))
        return
    ui = _ui()
    ui.table(T("cli.estimate.title", model=model, n=f"{shape.n_params:,}", method=method, seq=seq, batch=batch),
             [T("evaluate_memory.col.component"), "GiB"],
             [(T(f"memory.part.{k}"), f"{v:.3f}") for k, v in e["components"].items() if v]
             + [(T("evaluate_memory.col.peak"), f"{e['peak_gib']:.2f}")])
    if gib:
        ui.say(T("cli.estimate.fit" if e["fits"] else "cli.estimate.nofit", gpu=gpu_name, gib=gib,
                 margin=f"{e['margin_gib']:+.2f}"))
    ui.say(T("cli.estimate.instance", instance=f"{inst['count']}× {inst['name']}") if inst else
           T("cli.estimate.no_instance"))
    ui.say(T("cli.estimate.serving", fmt=serve, weights=srv["weights_gib"], tokens=f"{srv['max_tokens']:,}",
             context=f"{srv['longest_context']:,}", util=utilization, gib=gib or 80.0))
    if e["approximate"]:
        ui.warn(T("evaluate_memory.approximate", what=", ".join(e["approximate"])))


@app.command(help=T("cli.download"))
def download(repo_id: str = typer.Argument(..., help=T("cli.arg.repo")),
             source: str = typer.Option("hf", "--source", help="hf | modelscope"),
             endpoint: Optional[str] = typer.Option(None, "--endpoint", help=T("cli.opt.endpoint")),
             revision: str = typer.Option("main", "--revision", help=T("cli.opt.revision")),
             local_dir: Optional[Path] = typer.Option(None, "--local-dir", help=T("cli.opt.local_dir")),
             include: Optional[List[str]] = typer.Option(None, "--include", help=T("cli.opt.include")),
             exclude: Optional[List[str]] = typer.Option(None, "--exclude", help=T("cli.opt.exclude")),
             repo_type: str = typer.Option("model", "--repo-type", help="model | dataset")):
    """What `hf download` is to the hub, resumable and verified: the download step's code without a session."""
    import re

    from recipes.hub import snapshot as dl
    from recipes.hub import client as hub
    from recipes.base import StepError
    from wizard.session import home

    if source not in ("hf", "modelscope"):
        raise _fail("hub.unknown_source", source=source, sources="hf, modelscope")
    if repo_type not in ("model", "dataset"):
        raise _fail("cli.bad_repo_type", value=repo_type)
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo_id) or any(x in (".", "..") for x in repo_id.split("/")):
        raise _fail("select_model.bad_id", value=repo_id)
    if endpoint and not re.match(r"https?://[^/\s]+", endpoint):
        raise _fail("select_model.bad_endpoint", value=endpoint)
    ui = _ui()
    target = local_dir or home() / ("datasets" if repo_type == "dataset" else "models") / source / repo_id
    try:
        out = dl.fetch(source, repo_id, endpoint or hub.default_endpoint(source), revision, target,
                       lambda d, total, unit: ui.progress(i18n.render(d), total, unit),
                       lambda m: ui.say(i18n.render(m)), repo_type, include, exclude)
    except StepError as e:  # the exit status rule of wizard/README.md: 2 for the user's input, 1 for the world
        key = CLI_WORDING.get(e.msg.key, e.msg.key)  # this command's options, not the wizard's settings
        raise _fail(key, 2 if e.msg.key in dl.BAD_INPUT else 1, **e.msg.args)
    except KeyboardInterrupt:
        ui.warn(T("cli.download.interrupted", repo=repo_id))
        raise typer.Exit(130)
    ui.success(T("cli.download.done", path=out["model_dir"], commit=out["commit"] or revision,
                 size=dl.size_text(out["fetched_bytes"])))


# faults whose advice names a session's settings, in `yichui download`'s own words
CLI_WORDING = {"download.no_space": "cli.download.no_space", "hub.unreachable": "cli.download.unreachable",
               "download.size_unknown": "cli.download.size_unknown", "download.disk_full": "cli.download.disk_full",
               "download.rate_limited": "cli.download.rate_limited"}


class _ViewCtx:
    """The part of a step context that the training view needs, for `attach` (no session lock is taken)."""

    def __init__(self, ui, session_id: str):
        self.ui, self.session_id = ui, session_id

    def t(self, m, **args):
        return i18n.render(m, **args)

    def info(self, m, **args):
        self.ui.say(i18n.render(m, **args))

    def warn(self, m, **args):
        self.ui.warn(i18n.render(m, **args))

    def live(self, title):
        return self.ui.live(i18n.render(title))


@app.command(help=T("cli.attach"))
def attach(session: Optional[str] = SessionArg):
    from recipes import jobs
    from recipes.training import runner as train_runner
    from recipes.base import StepError
    from wizard.session import all_sessions

    if session:
        s = _read(session)
    else:
        training = [x for x in all_sessions() if (j := jobs.read(x.run_dir / "train" / "trainer.pid.json"))
                    and j.alive()]
        s = training[-1] if training else _read(None)
    job = jobs.read(s.run_dir / "train" / "trainer.pid.json")
    ui = _ui()
    if job is None or not job.alive():
        ui.say(T("cli.attach.none", id=s.id))
        raise typer.Exit(1)
    ctx = _ViewCtx(ui, s.id)
    try:
        train_runner.follow(ctx, job, s.run_dir / "train")
    except KeyboardInterrupt:
        ui.say(T("train.detached", pid=job.pid, id=s.id))
        raise typer.Exit(130)
    except StepError as e:
        raise _fail(e.msg.key, code=1, **e.msg.args)
    except train_runner.OutOfMemory:  # the wizard (resume) recovers from it
        raise _fail("cli.attach.oom", code=1, id=s.id)
    ui.success(T("cli.attach.done", id=s.id))


def _with_running_jobs():
    """Sessions with a running job, most recent last."""
    from recipes import jobs
    from wizard.session import all_sessions

    return [s for s in all_sessions() if any(j.alive() for j in jobs.find(s.run_dir))]


@app.command(help=T("cli.status"))
def status(session: Optional[str] = SessionArg):
    """SESSION's jobs; without SESSION, every session's running jobs (or the latest session's, if none runs)."""
    from recipes import jobs

    chosen = [_read(session)] if session else (_with_running_jobs() or [_read(None)])
    ui = _ui()
    for s in chosen:
        found = jobs.find(s.run_dir)
        if not found:
            ui.say(T("cli.no_jobs", id=s.id))
            continue
        ui.table(T("cli.status.title", id=s.id),
                 [T("cli.col.job"), "pid", T("cli.col.state"), T("cli.col.detail"), T("cli.col.log")],
                 [(j.name, j.pid, T("cli.state.running" if j.alive() else "cli.state.stopped"), _job_detail(s, j),
                   j.log) for j in found])


@app.command(help=T("cli.stop"))
def stop(session: Optional[str] = SessionArg):
    """Stop SESSION's jobs; without SESSION, those of the most recent session that has a running job."""
    from recipes import jobs

    if session:
        s = _read(session)
    else:
        running = _with_running_jobs()
        s = running[-1] if running else _read(None)
    ui = _ui()
    stopped = [j for j in jobs.find(s.run_dir) if j.stop()]
    for j in stopped:
        ui.say(T("cli.stopped", job=j.name, pid=j.pid, id=s.id))
    if not stopped:
        ui.say(T("cli.nothing_running", id=s.id))


serve_app = typer.Typer(help=T("cli.serve"), add_completion=False, no_args_is_help=True)
app.add_typer(serve_app, name="serve")


def _server_session(session: str | None):
    """SESSION, or the most recent session whose server runs (else the most recent session), and its server job."""
    from recipes import jobs

    def server(s):
        return jobs.read(s.run_dir / "serve" / "server.pid.json")

    if session:
        s = _read(session)
    else:
        running = [x for x in _with_running_jobs() if (j := server(x)) and j.alive()]
        s = running[-1] if running else _read(None)
    return s, server(s)


def _no_server(s, key: str) -> typer.Exit:
    """The one line for a session without a server: a task with no deploy step is pointed at `run --task deploy
    --from`, an unfinished deploy at `resume`, a stopped server at ``key``'s own advice."""
    deploy = s.steps.get("deploy", {})
    if deploy.get("status") == "skipped":
        return _fail("cli.serve.no_deploy_step", code=1, id=s.id, task=s.data.get("task", "?"))
    out = deploy.get("outputs", {})
    if not (out.get("reply") or out.get("endpoint")):
        return _fail("cli.serve.never_deployed", code=1, id=s.id)
    return _fail(key, code=1, id=s.id)


@serve_app.command("start", help=T("cli.serve.start"))
def serve_start(session: Optional[str] = SessionArg):
    """Start the session's server again (after a crash, a reboot or `yichui stop`) with the deploy step's recorded
    answers; the steps before it are not redone when their results are still there."""
    s, job = _server_session(session)
    if not s.steps.get("deploy", {}).get("outputs", {}).get("reply"):
        raise _no_server(s, "cli.serve.never_deployed")
    if job is not None and job.alive():
        _ui().say(T("cli.serve.already", id=s.id, pid=job.pid))
        return
    s = _load_locked(s.id)
    ui = _ui()
    with _demo_hub(ui, {}, bool(s.data.get("demo"))) as defaults:
        raise typer.Exit(_engine(s, ui, False, {}, defaults=defaults))


@serve_app.command("status", help=T("cli.serve.status"))
def serve_status(session: Optional[str] = SessionArg):
    s, job = _server_session(session)
    if job is None:
        raise _no_server(s, "cli.serve.none")
    out = s.steps.get("deploy", {}).get("outputs", {})
    _ui().table(T("cli.serve.title", id=s.id), ["pid", T("cli.col.state"), "endpoint", "model", T("cli.col.log")],
                [(job.pid, T("cli.state.running" if job.alive() else "cli.state.stopped"), out.get("endpoint", ""),
                  out.get("served_model", ""), job.log)])
    if not job.alive():
        raise typer.Exit(1)


@serve_app.command("logs", help=T("cli.serve.logs"))
def serve_logs(session: Optional[str] = SessionArg,
               lines: int = typer.Option(40, "-n", "--lines", help=T("cli.opt.lines"))):
    s, job = _server_session(session)
    if job is None:
        raise _no_server(s, "cli.serve.none")
    print(job.log_tail(lines))


@serve_app.command("stop", help=T("cli.serve.stop"))
def serve_stop(session: Optional[str] = SessionArg):
    s, job = _server_session(session)
    if job is None or not job.stop():
        _ui().say(T("cli.nothing_running", id=s.id))
        return
    _ui().say(T("cli.stopped", job=job.name, pid=job.pid, id=s.id))


@app.command(help=T("cli.chat"))
def chat(session: Optional[str] = SessionArg,
         endpoint: Optional[str] = typer.Option(None, "--endpoint", help=T("cli.opt.endpoint_chat")),
         model: Optional[str] = typer.Option(None, "--model", help=T("cli.opt.model_chat")),
         max_tokens: int = typer.Option(256, "--max-tokens")):
    """A terminal chat with the running endpoint: streamed replies, multi-turn, /reset, /exit."""
    import urllib.error

    from recipes import chat as chat_mod

    if endpoint is None:
        s, job = _server_session(session)
        out = s.steps.get("deploy", {}).get("outputs", {})
        if job is None or not job.alive() or not out.get("endpoint"):
            raise _no_server(s, "cli.chat.no_server")
        endpoint, model = out["endpoint"], model or out.get("served_model")
        from recipes.serving import keys

        key = keys.read_key(out.get("api_key_file"))
    else:
        key = os.environ.get("OPENAI_API_KEY")  # another endpoint: the key the openai client would use
    ui = _ui()
    if not endpoint.startswith(("http://", "https://")):
        raise _fail("cli.chat.bad_endpoint", endpoint=endpoint)
    try:
        from recipes.serving import client

        model = model or client.first_model(endpoint, api_key=key)
    except urllib.error.HTTPError as e:
        if e.code == 404 and not endpoint.rstrip("/").endswith("/v1"):
            raise _fail("cli.chat.add_v1", code=1, endpoint=endpoint.rstrip("/"))
        raise _fail("cli.chat.unreachable", code=1, endpoint=endpoint, error=str(e))
    except (OSError, ValueError, KeyError, IndexError) as e:
        raise _fail("cli.chat.unreachable", code=1, endpoint=endpoint, error=str(e))
    chat_mod.repl(endpoint, model, key, T, ui.say, ui.error, max_tokens)


def _as_interrupt(signum, frame):
    raise KeyboardInterrupt  # SIGTERM / SIGHUP (a closed terminal): saved and resumable, like Ctrl-C


def _lang_first(argv: list[str]) -> list[str]:
    """``--lang X`` / ``--lang=X`` moved to the front, where the command line takes it: users put it after the
    command too (``yichui resume --lang zh``)."""
    front, rest, i = [], [], 0
    while i < len(argv):
        if argv[i] == "--lang" and i + 1 < len(argv):
            front += argv[i:i + 2]
            i += 2
            continue
        (front if argv[i].startswith("--lang=") else rest).append(argv[i])
        i += 1
    return front + rest


def main() -> None:
    import signal

    sys.argv[1:] = _lang_first(sys.argv[1:])

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _as_interrupt)
    try:
        app()
    except OSError as e:  # a read-only or full YICHUI_HOME, a folder given as a file, ...: one line, nothing lost
        _ui().error(T("cli.os_error", path=str(e.filename or ""), error=e.strerror or str(e)))
        sys.exit(2)


if __name__ == "__main__":
    main()
