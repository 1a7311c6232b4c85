"""yichui's command line (typer). The command table (wizard/README.md) is fixed here:

run (default) · demo · resume · replay · steps · show · status · stop
(later issues add: estimate, download, attach, serve start|status|logs|stop, chat)

Exit status: 0 done · 1 a step failed · 2 bad input (arguments, answers, session file) · 130 interrupted.
Imports stay light: torch and transformers load inside the steps that need them.
"""
from __future__ import annotations

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
            defaults: dict | None = None) -> int:
    from wizard.engine import Engine
    from wizard.prompter import QuestionaryPrompter

    _log_to(session)
    prompter = QuestionaryPrompter() if interactive else None
    return Engine(session, ui, prompter, overrides=overrides, replay=replay, defaults=defaults).run()


def _load_locked(ref: str | None, unfinished: bool = False):
    from wizard.session import Session, SessionError, find

    try:
        s = Session.load(find(ref, unfinished=unfinished))
        s.lock()
    except SessionError as e:
        raise _session_error(e)
    return s


def _demo_hub(ui, overrides: dict):
    """Build (once) and serve the tiny model; point the session's endpoint at this hub (a --set, since the URL
    changes between runs). Returns the server and the demo's embedded answers (the defaults layer)."""
    from wizard import demo
    from wizard.session import home

    h = home()
    ui.say(T("cli.demo.building", path=str(demo.hub_root(h))))
    demo.ensure_model(h)
    hub = demo.start_hub(h)
    ui.say(T("cli.demo.hub", url=hub.url, repo="yichui/tiny-qwen2-chat"))
    overrides.setdefault("select_model", {}).setdefault("endpoint", hub.url)
    return hub, demo.answers(hub.url)


def _need_tty() -> None:
    if not sys.stdin.isatty():
        raise _fail("cli.no_tty")


@app.callback(invoke_without_command=True)
def main_callback(ctx: typer.Context,
                  lang: Optional[str] = typer.Option(None, "--lang", help=T("cli.lang"), show_default=False)):
    if lang is not None:
        if lang not in i18n.LANGS:
            raise typer.BadParameter(f"{lang!r} ∉ {{en, zh}}", param_hint="--lang")
        i18n.set_lang(lang)
    if ctx.invoked_subcommand is None:
        ctx.invoke(run, task="finetune", set_=None, yes=False)


@app.command(help=T("cli.run"))
def run(task: str = typer.Option("finetune", "--task", help=T("cli.opt.task")), set_: Optional[List[str]] = SetOpt,
        yes: bool = YesOpt):
    import recipes
    from wizard.session import Session

    if task not in recipes.TASKS:
        raise _fail("cli.unknown_task", task=task, tasks=", ".join(recipes.TASKS))
    overrides = _parse_sets(set_)
    if not yes:
        _need_tty()
    ui = _ui()
    s = Session.new(task, recipes.TASKS[task])
    s.save()
    s.lock()
    ui.say(T("cli.new_session", id=s.id, path=str(s.path)))
    raise typer.Exit(_engine(s, ui, not yes, overrides))


@app.command(help=T("cli.demo"))
def demo(set_: Optional[List[str]] = SetOpt):
    import recipes
    from wizard.session import Session

    t0 = time.time()
    overrides = _parse_sets(set_)
    ui = _ui()
    hub, defaults = _demo_hub(ui, overrides)
    s = Session.new("finetune", recipes.TASKS["finetune"], demo=True)
    s.save()
    s.lock()
    ui.say(T("cli.new_session", id=s.id, path=str(s.path)))
    try:
        code = _engine(s, ui, False, overrides, defaults=defaults)
    finally:
        hub.stop()
    if code == 0:
        ui.success(T("cli.demo.done", seconds=time.time() - t0))
    raise typer.Exit(code)


@app.command(help=T("cli.resume"))
def resume(session: Optional[str] = SessionArg, yes: bool = YesOpt, set_: Optional[List[str]] = SetOpt):
    overrides = _parse_sets(set_)
    if not yes:
        _need_tty()
    s = _load_locked(session, unfinished=session is None)
    ui = _ui()
    ui.say(T("cli.resuming", id=s.id, path=str(s.path)))
    if s.is_finished():
        ui.say(T("cli.already_finished", id=s.id))
        raise typer.Exit(0)
    hub, defaults = _demo_hub(ui, overrides) if s.data.get("demo") else (None, None)
    try:
        code = _engine(s, ui, not yes, overrides, defaults=defaults)
    finally:
        if hub:
            hub.stop()
    raise typer.Exit(code)


@app.command(help=T("cli.replay"))
def replay(session: str = typer.Argument(..., help=T("cli.arg.session")), yes: bool = YesOpt,
           set_: Optional[List[str]] = SetOpt):
    from wizard.session import Session, SessionError, find

    overrides = _parse_sets(set_)
    if not yes:
        _need_tty()
    try:
        old = Session.load(find(session))
    except SessionError as e:
        raise _session_error(e)
    ui = _ui()
    s = Session.new(old.data["task"], tuple(old.steps), demo=bool(old.data.get("demo")), replay_of=str(old.path))
    s.save()
    s.lock()
    ui.say(T("cli.replaying", path=str(old.path), id=s.id))
    hub, _ = _demo_hub(ui, overrides) if old.data.get("demo") else (None, None)
    try:
        code = _engine(s, ui, not yes, overrides, replay={n: dict(r["answers"]) for n, r in old.steps.items()})
    finally:
        if hub:
            hub.stop()
    raise typer.Exit(code)


@app.command(help=T("cli.steps"))
def steps():
    import recipes

    _ui().table(T("cli.steps.title"), ["#", T("cli.col.step"), T("cli.col.description")],
                [(i, f"{n} — {T(f'step.{n}.title')}", T(f"step.{n}.desc")) for i, n in enumerate(recipes.STEPS, 1)])


def _brief(d: dict, skip=("config", "estimates", "files", "samples", "shape", "gpus_detected", "strategy",
                          "losses", "components")) -> str:
    items = [f"{k}={v}" for k, v in d.items() if k not in skip and not isinstance(v, (dict, list))]
    text = ", ".join(items)
    return text if len(text) <= 90 else text[:87] + "..."


def _read(ref: str | None):
    from wizard.session import Session, SessionError, find

    try:
        return Session.load(find(ref))
    except SessionError as e:
        raise _session_error(e)


@app.command(help=T("cli.show"))
def show(session: Optional[str] = SessionArg):
    s = _read(session)
    _ui().table(T("cli.show.title", id=s.id, task=s.data["task"], path=str(s.path)),
                [T("cli.col.step"), T("cli.col.status"), T("cli.col.answers"), T("cli.col.outputs")],
                [(n, T(f"status.{r['status']}") + (f": {r['error']}" if r.get("error") else ""), _brief(r["answers"]),
                  _brief(r["outputs"])) for n, r in s.steps.items()])


def _job_detail(s, job) -> str:
    from recipes import jobs as jobs_mod

    if job.name == "trainer":
        events, _ = jobs_mod.read_events(s.run_dir / "train" / "events.jsonl")
        last = next((e for e in reversed(events) if e["event"] in ("step", "done", "error")), None)
        if last is None:
            return ""
        if last["event"] == "step":
            return f"step {last['step']}/{last.get('total_steps')} loss {last.get('loss')}"
        return last["event"] + (f": {last.get('message')}" if last["event"] == "error" else "")
    if job.name == "server":
        return s.steps.get("deploy", {}).get("outputs", {}).get("endpoint", "")
    return ""


@app.command(help=T("cli.status"))
def status(session: Optional[str] = SessionArg):
    from recipes import jobs

    s = _read(session)
    found = jobs.find(s.run_dir)
    ui = _ui()
    if not found:
        ui.say(T("cli.no_jobs", id=s.id))
        return
    ui.table(T("cli.status.title", id=s.id),
             [T("cli.col.job"), "pid", T("cli.col.state"), T("cli.col.detail"), T("cli.col.log")],
             [(j.name, j.pid, T("cli.state.running" if j.alive() else "cli.state.stopped"), _job_detail(s, j), j.log)
              for j in found])


@app.command(help=T("cli.stop"))
def stop(session: Optional[str] = SessionArg):
    from recipes import jobs

    s = _read(session)
    ui = _ui()
    stopped = [j for j in jobs.find(s.run_dir) if j.stop()]
    for j in stopped:
        ui.say(T("cli.stopped", job=j.name, pid=j.pid))
    if not stopped:
        ui.say(T("cli.nothing_running", id=s.id))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
