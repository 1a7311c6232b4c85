"""What every command shares: the typer app, the message and failure helpers, reading and running sessions."""
from __future__ import annotations

import contextlib
import logging
import os
import sys

import typer

from recipes.rundir import RunDir
from wizard import i18n

T = i18n.t



app = typer.Typer(help=T("cli.help"), add_completion=False, pretty_exceptions_enable=False,
                  context_settings={"help_option_names": ["-h", "--help"]})


SetOpt = typer.Option(None, "--set", help=T("cli.opt.set"))


YesOpt = typer.Option(False, "--yes", "-y", help=T("cli.opt.yes"))


SessionArg = typer.Argument(None, help=T("cli.arg.session"), show_default=False)


def new_ui():
    from wizard.console import UI

    return UI()


def fail(key: str, code: int = 2, **args) -> "typer.Exit":
    new_ui().error(T(key, **args))
    return typer.Exit(code)


def refused(e) -> "typer.Exit":
    return fail(e.key, **e.params)


def parse_sets(values: list[str] | None) -> dict:
    import recipes

    out: dict = {}
    for v in values or []:
        key, eq, raw = v.partition("=")
        step, dot, name = key.partition(".")
        if not eq or not dot or not step or not name:
            raise fail("cli.bad_set", value=v)
        if step not in recipes.STEPS:
            raise fail("cli.unknown_step", step=step, steps=list(recipes.STEPS))
        out.setdefault(step, {})[name] = raw
    return out


def _log_to(session) -> None:
    log = RunDir(session.run_dir).wizard_log
    log.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(log)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.captureWarnings(True)
    for noisy in ("httpx", "httpcore", "urllib3", "filelock"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def run_engine(session, ui, interactive: bool, overrides: dict, replay: dict | None = None,
            defaults: dict | None = None, new: bool = False, announce: str | None = None) -> int:
    """Run the session. A new session is checked first (every --set key and typed value) and only then saved and
    locked, so a mistyped --set costs nothing and leaves no session behind; ``announce`` (a line: "Replaying …") is
    said once the check has passed, never for a run that does not start."""
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
    if announce:
        ui.say(announce)
    if new:
        session.save()
        session.lock()
        ui.say(T("cli.new_session", id=session.id, path=str(session.path)))
    _log_to(session)
    _cpu_deepspeed()
    rc = engine.run()
    if rc == 0:  # what was made, what runs, what next (issue 20, item 8)
        from wizard import recap
        from wizard.session import home

        recap.show(session, ui, home())
    return rc


def _cpu_deepspeed() -> None:
    """Without GPUs, tell DeepSpeed so before anything imports it (transformers does): it would guess the CPU
    itself, with a warning in the middle of the output."""
    from recipes.memory import model as memory

    if not memory.detect_gpus():
        os.environ.setdefault("DS_ACCELERATOR", "cpu")


def load_locked(ref: str | None, unfinished: bool = False):
    """The session a command will run (resume, serve start), locked. It writes logs, checkpoints and exports into its
    run folder: only its own under YICHUI_HOME, never a folder a hand-edited run_dir names (the tester's N12:
    training wrote into /tmp/…/victim) — refused in one line, exit 2, nothing written."""
    from wizard.session import Session, SessionError, find, own_run_dir

    try:
        s = Session.load(find(ref, unfinished=unfinished))
    except SessionError as e:
        raise refused(e)
    if s.run_dir.resolve() != own_run_dir(s.id):
        raise fail("cli.resume.odd_run_dir", path=str(s.path), run=str(s.run_dir), expected=str(own_run_dir(s.id)))
    try:
        s.lock()
    except SessionError as e:
        raise refused(e)
    return s


@contextlib.contextmanager
def demo_hub(ui, overrides: dict, demo=True, endpoint: str | None = None):
    """For a demo session (``demo``: the session's ``demo`` field, true or "vlm"): build (once) and serve the tiny
    model while the block runs, and point the session's endpoint at this hub (a --set, since the URL changes between
    runs; ``endpoint``: a resumed session's recorded hub, whose port is taken again when free). Yields the demo's
    embedded answers (the defaults layer), or None for any other session."""
    from wizard import demo as demos

    kind = demos.kind_of(demo)
    if kind is None:
        yield None
        return
    from wizard.session import home

    h = home()
    demos.isolate(h)
    _cpu_deepspeed()
    if not demos.model_ready(h, kind):  # ~30 s on 2 idle cores, many minutes on a busy box: a bar with an ETA (item 5)
        ui.say(T("cli.demo.building", path=str(demos.hub_root(h))))
        try:
            with ui.progress(T("cli.demo.pretraining"), total=demos.PRETRAIN_STEPS, unit="steps") as bar:
                demos.ensure_model(h, on_step=lambda step, loss: bar.update(completed=step), kind=kind)
        except KeyboardInterrupt:  # nothing half-built stays (the build renames a finished folder into place)
            ui.warn(T("cli.demo.build_interrupted"))
            raise typer.Exit(130)
        ui.say(T("cli.demo.built"))
    demos.ensure_model(h, kind=kind)
    hub = demos.start_hub(h, endpoint)
    ui.say(T("cli.demo.hub", url=hub.url, repo=demos._builder(kind).REPO_ID))
    from wizard.engine import DemoSet

    overrides.setdefault("select_model", {}).setdefault("endpoint", DemoSet(hub.url))
    try:
        yield demos.answers(hub.url, demo, h)
    finally:
        hub.stop()


def job_words(name: str) -> str:
    """A job's name (trainer, server, …) in the user's language; a name without an entry as it is."""
    return i18n.named(f"cli.job.{name}", name)


def task_words(task: str) -> str:
    """A session's task as listed (issue 46 trial I, N12: `finetune` in a Chinese table): the id `--task` takes, in
    Chinese with its name before it; a task without an entry as it is."""
    return i18n.named(f"task.name.{task}", task)


def need_tty() -> None:
    if not sys.stdin.isatty():
        raise fail("cli.no_tty")


def read_session(ref: str | None):
    """The session ``ref`` names (None: the most recent). A session named on the command line is answered in its
    language from here on unless --lang says otherwise (issue 20); the newest one taken for want of a name is not
    (it may be another user's habit, not this command's). A session a command finds by what it runs (attach: its
    trainer; chat, serve stop: its server; resume: the unfinished one) speaks its language as a named one does
    (issue 46 trial I, N7: resume spoke Chinese, attach's live view and chat English, for one session)."""
    from wizard.session import Session, SessionError, find

    try:
        s = Session.load(find(ref))
    except SessionError as e:
        raise refused(e)
    if ref is not None:
        speak_session_language(s)
    return s


def stop_unreadable(session: str, only: str | None = None) -> None:
    """The jobs of SESSION (``only``: the job of that name, e.g. its server) when its file cannot be read as a session
    any more (a hand edit, a newer yichui): found by its id in YICHUI_HOME/runs, stopped, the reason the file was
    refused said beside them — `stop` and `serve stop` said only the refusal and the server ran on (issue 46 trial J,
    J2). Returns quietly for a readable session or one that runs nothing.

    Raises:
        typer.Exit: 0 once its jobs are stopped."""
    from pathlib import Path

    from recipes import jobs
    from wizard.session import Session, SessionError, find, own_run_dir

    try:
        Session.load(find(session))
        return
    except SessionError as e:
        if e.key in ("session.not_found", "session.is_folder", "session.not_a_file", "session.locked"):
            return  # said as it is by the usual path
        refusal = e
    sid = Path(session).stem
    stopped = [j for j in jobs.find(own_run_dir(sid)) if (only is None or j.name == only) and j.stop()]
    if stopped:
        ui = new_ui()
        ui.warn(T(refusal.key, **refusal.params))
        for j in stopped:
            ui.say(T("cli.stopped", job=job_words(j.name), pid=j.pid, id=sid))
        raise typer.Exit(0)


def speak_session_language(s) -> None:
    """Speak the language the session was started in (its ``lang``), unless --lang was given."""
    if i18n.lang_from_argv(sys.argv[1:]) is None and s.lang in i18n.LANGS:
        i18n.set_lang(s.lang)


def latest_that_ran(job_file=None):
    """The most recent session that started a job (``job_file``: that one's pid file in a RunDir, e.g.
    ``lambda run: run.train.job()``; None: any) — the default of status, attach and stop when none runs: a session
    abandoned at its first question is no one's default (issue 46 item 12). Falls back to the most recent session."""
    from recipes import jobs
    from wizard.session import all_sessions

    ran = [s for s in all_sessions()
           if (jobs.read(job_file(RunDir(s.jobs_dir))) is not None if job_file else jobs.find(s.jobs_dir))]
    return ran[-1] if ran else read_session(None)


def with_running_jobs():
    """Sessions with a running job, most recent last."""
    from recipes import jobs
    from wizard.session import all_sessions

    return [s for s in all_sessions() if any(j.alive() for j in jobs.find(s.jobs_dir))]
