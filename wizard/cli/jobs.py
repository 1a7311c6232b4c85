"""Commands on a session's background jobs (the trainer, the server): attach, status, stop."""
from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from typing import Optional

import typer

from recipes.rundir import BACKUP, LIBRARIES_LOADED, PREFLIGHT, SERVER, TRAINER, RunDir, TrainDir
from wizard import i18n
from wizard.cli.common import (T, app, job_words, SessionArg, new_ui, fail, latest_that_ran, read_session, speak_session_language,
                               stop_unreadable, with_running_jobs)


def _job_detail(s, job) -> str:
    from recipes import jobs as jobs_mod

    if job.name in (TRAINER, PREFLIGHT):  # the training, or the smoke run before the download
        events, _ = jobs_mod.read_events(TrainDir(Path(job.pid_file).parent).events)
        last = next((e for e in reversed(events) if e["event"] in ("step", "done", "error")), None)
        if last is None:  # no step yet: a smoke run's trainer started early loads its libraries, then waits for
            if not job.alive():  # its copy's spec — said only once its log says the libraries are loaded (trial Q)
                return ""
            waiting = job.name == PREFLIGHT and not TrainDir(Path(job.pid_file).parent).spec.exists() \
                and LIBRARIES_LOADED in job.log_tail(30, this_run=True)  # a waiting trainer logs a few lines
            return T("cli.detail.waiting_for_copy" if waiting else "cli.detail.starting")
        if last["event"] == "step":
            detail = T("cli.detail.step", step=last.get("step", "?"), total=last.get("total_steps", "?"),
                       loss=last.get("loss", "?"))
            # GRPO: its reward, which its loss (around 0) does not show
            return detail + (T("cli.detail.reward", reward=f"{last['reward']:.3f}")
                             if isinstance(last.get("reward"), (int, float)) else "")
        if last["event"] == "done":  # its result is written; alive, it is still exiting (~2 s: trial Q)
            return T("cli.detail.done_exiting" if job.alive() else "cli.detail.done")
        return T("cli.detail.error", message=last.get("message"))
    if job.name == BACKUP:  # the adapter backup beside the trainer (recipes/training/backup.py)
        return backup_detail(Path(job.pid_file).parent)
    if job.name == SERVER:  # where it answers; a stopped one answers nowhere (trial R)
        from recipes.handoff import Deployment

        return (s.result(Deployment).endpoint or "") if job.alive() else ""
    return ""


def backup_detail(train_dir: Path) -> str:
    """What the adapter backup of a train folder has done: uploads, the last one, the last failure."""
    from recipes.training import backup

    done = backup.summary(train_dir)
    failing = done["gave_up"] | {p: e for p, (_, _, e) in done["failing"].items()}
    shown = lambda p: T("train.backup_final") if p == "." else p  # noqa: E731
    return T("cli.detail.backup", n=len(done["uploaded"]), last=shown((done["uploaded"] or ["—"])[-1])) + "".join(
        T("cli.detail.backup_failing", path=shown(p), error=e) for p, e in list(failing.items())[-1:])


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


def attach(session: Optional[str] = SessionArg):
    from recipes import jobs
    from recipes.training import runner as train_runner
    from recipes.base import StepError
    from wizard.session import all_sessions

    if session:
        s = read_session(session)
    else:
        training = [x for x in all_sessions() if (j := jobs.read(RunDir(x.jobs_dir).train.job()))
                    and j.alive()]
        if not training:  # none to pick: said of all, not of a session picked by age (issue 46 trial G)
            ui = new_ui()
            ui.say(T("cli.attach.none_any"))
            # a trainer that died unfinished is what the user came for: where it stopped and how to go on (46 J)
            died = [x for x in all_sessions() if _trainer_died(x)]
            if died:  # in that session's language, as attach SESSION says it
                speak_session_language(died[-1])
                ui.warn(_trainer_died(died[-1]) or "")
            raise typer.Exit(1)
        s = training[-1]
        speak_session_language(s)  # found by its running trainer, as resume finds its session: its language
    job = jobs.read(RunDir(s.jobs_dir).train.job())
    ui = new_ui()
    if job is None or not job.alive():
        ui.say(_trainer_died(s) or T("cli.attach.none", id=s.id))
        raise typer.Exit(1)
    # which session is followed (46 trial L, L6: the live view began with the trainer's pid alone); picked by age, so
    # said whether or not SESSION was given
    ui.say(T("cli.attach.session" if session else "cli.attach.session_newest", id=s.id))
    ctx = _ViewCtx(ui, s.id)
    try:
        train_runner.follow(ctx, job, RunDir(s.jobs_dir).train.root)
    except train_runner.Stopped:  # follow said so (`yichui stop` from another shell): nothing is left to follow
        raise typer.Exit(130)
    except KeyboardInterrupt:
        ui.say(T("train.detached", pid=job.pid, id=s.id))
        raise typer.Exit(130)
    except StepError as e:
        raise fail(e.msg.key, code=1, **e.msg.args)
    except train_runner.CompileFailed as failed:  # the trainer stopped; the wizard (resume) goes on uncompiled
        held = s.holder()
        raise fail("cli.attach.compile_failed_held" if held else "cli.attach.compile_failed", code=1, id=s.id,
                   pid=held or "", error=failed.message)
    except train_runner.OutOfMemory:  # the wizard (resume) recovers from it
        held = s.holder()
        raise fail("cli.attach.oom_held" if held else "cli.attach.oom", code=1, id=s.id, pid=held or "")
    # the yichui that runs the session (the wizard, a demo) goes on by itself; `resume` is refused while it holds
    # the session (46 trial M: the hint pointed to a command that failed)
    held = s.holder()
    ui.success(T("cli.attach.done_held", id=s.id, pid=held) if held else T("cli.attach.done", id=s.id))


def _trainer_died(s) -> str | None:
    """A line for a session whose trainer ended before its run finished (killed, crashed: no result.json, the train
    step not done) with where it stopped and the command that continues it; None otherwise (issue 46 trial I: after a
    kill -9, status dropped the session and attach pointed at status, neither at resume)."""
    from recipes import jobs
    from recipes.training.runner import checkpoints

    tdir = RunDir(s.jobs_dir).train
    job = jobs.read(tdir.job())
    if job is None or job.alive() or tdir.result.exists() or ("train" in s.steps and s.record("train").status == "done"):
        return None
    last = checkpoints(tdir.root)
    # `yichui stop` or a step before the first: said as such, not as a bare "?" (issue 48 trial P)
    detail = _job_detail(s, job) or T("cli.detail.before_first_step")
    at = T("cli.detail.stopped", detail=detail) if job.stop_requested() else detail
    return T("cli.trainer_died", id=s.id, at=at,
             checkpoint=last[-1].name if last else T("cli.no_checkpoint"))


def status(session: Optional[str] = SessionArg):
    """SESSION's jobs; without SESSION, every session with a running job or a wizard running one of its steps, and
    those whose trainer died unfinished (or the latest session's, if there are none), oldest first."""
    from recipes import jobs
    from wizard.session import all_sessions

    if session is not None:  # "" (an unset $ID) is a name that matches nothing, not "every session" (trial S)
        chosen = [read_session(session)]
    else:
        from wizard import demo
        from wizard.session import home

        if (builder := demo.build_in_progress(home())) is not None:  # its session comes after the build (trial T)
            new_ui().say(T("cli.status.demo_building", pid=builder.pid,
                           seconds=f"{max(0.0, time.time() - builder.started_at):.0f}"))
        running = with_running_jobs()
        ids = {x.id for x in running}
        every = all_sessions()
        if not every:  # nothing has run: a state to report, as `stop` does, not an error (trial Q)
            if builder is None:
                new_ui().say(T("session.none", home=str(home())))
            return
        # a wizard between jobs (exporting, evaluating) runs no job: the session dropped out of status (trial R)
        chosen = [x for x in every if x.id in ids or x.holder() or _trainer_died(x)] or [latest_that_ran()]
    ui = new_ui()
    viewer = importlib.util.find_spec("tensorboard") is not None  # the events are written without it
    # the loss, learning rate and memory/* scalars the trainer writes every logging step: for a session asked for,
    # or one training now — with three servers up, three blocks of it filled the screen (trial R)
    found_in = {s.id: jobs.find(s.jobs_dir) for s in chosen}
    boards = {s.id: tb for s in chosen if (tb := RunDir(s.jobs_dir).train.tensorboard).is_dir() and (
        session is not None or len(chosen) == 1 or any(j.name == TRAINER and j.alive() for j in found_in[s.id]))}
    for s in chosen:
        found = found_in[s.id]
        rows = [(job_words(j.name), j.pid, T("cli.state.running" if j.alive() else "cli.state.stopped"),
                 _job_detail(s, j) or "—") for j in found]
        if wizard := s.holder():  # the wizard (or a resume, replay) holding the session's lock
            rows.append((job_words("wizard"), wizard, T("cli.state.running"), _wizard_detail(s)))
        if not rows:
            ui.say(T("cli.no_jobs", id=s.id))
            continue
        # the log under the detail: as a fifth column its path squeezed the endpoint into pieces at 80 columns
        # and the logs below it, a line each: a path in a cell was folded mid-id at 80 columns (46 trial J)
        ui.table(T("cli.status.title", id=s.id), [T("cli.col.job"), "pid", T("cli.col.state"), T("cli.col.detail")],
                 rows)
        for j in found:
            ui.say(T("cli.status.log_of", job=job_words(j.name), path=j.log))
        if died_line := _trainer_died(s):
            ui.warn(died_line)
        if (board := boards.get(s.id)) is None:
            continue
        if viewer:
            ui.say(T("cli.status.tensorboard", path=str(board), python=sys.executable))
        else:  # how to install it: with its folder when there is one, once under them all otherwise
            ui.say(T("cli.status.tensorboard_missing" if len(boards) == 1 else "cli.status.tensorboard_events",
                     path=str(board), python=sys.executable))
    if not viewer and len(boards) > 1:
        ui.say(T("cli.status.tensorboard_install", python=sys.executable))


def _wizard_detail(s) -> str:
    """What a wizard holding session ``s`` is doing: the step its record says is running, else at a question."""
    name = next((n for n, r in s.records() if r.status == "running"), None)
    if name is None:
        return T("cli.detail.wizard_asking")
    names = s.task_steps()
    return T("cli.detail.wizard_step", i=names.index(name) + 1 if name in names else "?", n=len(names),
             step=i18n.t(f"step.{name}.title"))


def stop(session: Optional[str] = SessionArg):
    """Stop SESSION's jobs; without SESSION, those of the most recent session that has a running job."""
    from recipes import jobs

    if session is not None:  # "" (an unset $ID) stopped the newest session's server (trial S)
        stop_unreadable(session)
        s = read_session(session)
    else:
        running = with_running_jobs()
        if not running:  # nothing anywhere: said of all, not of the session that ran last (issue 46 trial G)
            new_ui().say(T("cli.nothing_running_any"))
            return
        s = running[-1]
        speak_session_language(s)  # found by its running job: its language (46 trial K)
    ui = new_ui()
    stopped = [j for j in jobs.find(s.jobs_dir) if j.stop()]
    for j in stopped:
        ui.say(T("cli.stopped", job=job_words(j.name), pid=j.pid, id=s.id))
        if j.name == "trainer":  # what it saved on the way out, and how to go on (issue 46 trial J, J10)
            from recipes.training.runner import checkpoints

            last = checkpoints(RunDir(s.jobs_dir).train.root)
            if last:
                ui.say(T("cli.stopped_checkpoint", checkpoint=last[-1].name, id=s.id))
    if not stopped:
        ui.say(T("cli.nothing_running", id=s.id))
    if session is None and (others := [x for x in with_running_jobs() if x.id != s.id]):  # one at a time (trial R)
        ui.say(T("cli.others_running", n=len(others), ids=", ".join(x.id for x in others)))
