"""Commands that start, resume, replay and show sessions: run (the default), demo, resume, replay, steps, show."""
from __future__ import annotations

import json
import sys

import time
from typing import List, Optional

import typer
from pathlib import Path

from recipes.rundir import RunDir
from wizard import i18n
from wizard.cli.common import (T, app, SetOpt, YesOpt, SessionArg, new_ui, fail, parse_sets, run_engine, load_locked, demo_hub, need_tty,
                               task_words, read_session, refused, speak_session_language)


def main_callback(ctx: typer.Context,
                  lang: Optional[str] = typer.Option(None, "--lang", help=T("cli.lang"), show_default=False)):
    if lang is not None:
        lang = lang.lower()
        if lang not in i18n.LANGS:
            raise fail("cli.bad_lang", value=lang)
        i18n.set_lang(lang)
    ctx.obj = {"lang": lang}  # what was asked for, not the locale's guess: `resume` records it
    if ctx.invoked_subcommand is None:
        ctx.invoke(run, task=None, from_=None, set_=None, yes=False)


def _preflight_machine() -> None:
    """`yichui doctor`'s checks that every session needs, before it starts: Python, and a writable YICHUI_HOME
    with room."""
    from recipes import doctor as doc
    from wizard.i18n import render
    from wizard.session import home

    for c in (doc.python_check(), doc.disk_check(home())):
        if c.blocking:
            raise fail("cli.preflight", what=f"{c.name}: {render(c.found)}", fix=c.fix)


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
        rec = old.record(name)
        if rec.status != "done" or (name in recipes.TASKS[new.task] and name not in recipes.INPUTS):
            continue
        new.replace_record(name, copy.deepcopy(rec.data) | {"copied_from": str(old.path)})
        taken.append(name)
    for name, rec in new.records():  # what the task runs and the old session did not finish stays to do
        if name not in taken and rec.skipped and name in recipes.TASKS[new.task]:
            new.replace_record(name, new_record())
    new.taken_from(old)
    return taken


def run(task: Optional[str] = typer.Option(None, "--task", help=T("cli.opt.task"), show_default=False),
        from_: Optional[str] = typer.Option(None, "--from", help=T("cli.opt.from"), show_default=False),
        set_: Optional[List[str]] = SetOpt, yes: bool = YesOpt):
    import recipes
    from wizard.session import Session

    if task is not None and task not in recipes.TASKS:
        raise fail("cli.unknown_task", task=task, tasks=list(recipes.TASKS))
    overrides = parse_sets(set_)
    old = read_session(from_) if from_ else None
    if not yes:
        need_tty()
    ui = new_ui()
    _preflight_machine()
    if task is None:
        task = "finetune" if yes else _ask_task()
    s = Session.new(task)
    if old is not None:
        ui.say(T("cli.from_reused", old=old.id, steps=list(_from_session(s, old)) or "—"))
    raise typer.Exit(run_engine(s, ui, not yes, overrides, new=True))


def demo(task: str = typer.Option("finetune", "--task", help=T("cli.opt.demo_task")),
         set_: Optional[List[str]] = SetOpt):
    import recipes
    from wizard import demo as demos
    from wizard.session import Session

    if task not in recipes.TASKS and task not in demos.TASKS:
        raise fail("cli.unknown_task", task=task, tasks=[*recipes.TASKS, *demos.TASKS])
    t0 = time.time()
    overrides = parse_sets(set_)
    # a read-only or full YICHUI_HOME is said now, not after minutes of building the tiny model (the tester's N24)
    _preflight_machine()
    ui = new_ui()
    kind = demos.TASKS.get(task, True)  # the session's demo field
    with demo_hub(ui, overrides, kind) as defaults:
        if task == "evaluate" and "evaluate" in defaults:  # no training split: the bundled conversations
            defaults["evaluate"]["heldout"] = "file"
        s = Session.new("finetune" if task in demos.TASKS else task, demo=kind)
        code = run_engine(s, ui, False, overrides, defaults=defaults, new=True)
    if code == 0:
        ui.success(T("cli.demo.done", seconds=time.time() - t0))
    raise typer.Exit(code)


def resume(ctx: typer.Context, session: Optional[str] = SessionArg, yes: bool = YesOpt,
           set_: Optional[List[str]] = SetOpt):
    overrides = parse_sets(set_)
    s = load_locked(session, unfinished=session is None)  # its own run folder only (load_locked)
    given = (ctx.obj or {}).get("lang")
    if given:  # the latest explicit choice is the session's language from now on
        s.lang = given
    elif s.lang in i18n.LANGS:  # the language the session was started in, whatever the locale now
        i18n.set_lang(s.lang)
    ui = new_ui()
    ui.say(T("cli.resuming", id=s.id, path=str(s.path)))
    if s.demo:  # the libraries' caches inside YICHUI_HOME from the first check on (issue 46 trial I: a resumed
        from wizard import demo as demos  # demo's --set check wrote the user's HF cache)
        from wizard.session import home

        demos.isolate(home())
    if s.is_finished():
        if overrides:  # checked, and a --set that changes a done step's answer runs it again (issue 46 item 20)
            from wizard.engine import AnswerError, Engine

            try:
                probe = Engine(s, ui, None, overrides)
                probe.precheck()
            except AnswerError as e:
                ui.error(i18n.render(e.msg))
                raise typer.Exit(2)
        if not overrides or probe.changed_done_step() is None:
            ui.say(T("cli.already_finished", id=s.id))
            raise typer.Exit(0)
    if not yes:
        need_tty()
    with demo_hub(ui, overrides, s.demo, s.record("select_model").outputs.get("endpoint")) as defaults:
        code = run_engine(s, ui, not yes, overrides, defaults=defaults)
    raise typer.Exit(code)


def replay(session: str = typer.Argument(..., help=T("cli.arg.session")), yes: bool = YesOpt,
           set_: Optional[List[str]] = SetOpt):
    from wizard.session import Session

    overrides = parse_sets(set_)
    if not yes:
        need_tty()
    old = read_session(session)
    ui = new_ui()
    if not yes:  # one question, not every one of its ~40 again (issue 46 item 8): --yes without typing it
        yes = _replay_recorded(old)
    s = Session.new(old.task, tuple(old.task_steps()), demo=old.demo, replay_of=str(old.path))
    with demo_hub(ui, overrides, old.demo):  # "Replaying …" once every --set key and value has passed the check
        code = run_engine(s, ui, not yes, overrides, replay={n: dict(r.answers) for n, r in old.records()},
                          new=True, announce=T("cli.replaying" if overrides else "cli.replaying_plain",
                                               path=str(old.path)))
    raise typer.Exit(code)


def _replay_recorded(old) -> bool:
    """In a terminal: replay with the session's recorded answers, asking nothing (True, as --yes), or go through its
    questions, each pre-filled (False). Ctrl-C here ends with 130, nothing written."""
    from recipes.base import Choice, Question, msg
    from wizard.prompter import QuestionaryPrompter

    n = sum(len(r.answers) for _, r in old.records())
    try:
        how = QuestionaryPrompter().ask(Question("replay_how", "select", "cli.replay_how",
                                                 choices=[Choice("recorded", msg("cli.replay_recorded", n=n)),
                                                          Choice("each", msg("cli.replay_each"))]), "recorded", {})
    except (KeyboardInterrupt, EOFError):
        raise typer.Exit(130)
    return how == "recorded"


def steps(keys: bool = typer.Option(False, "--keys", help=T("cli.opt.keys"))):
    import recipes

    ui = new_ui()
    ui.table(T("cli.steps.title"), ["#", T("cli.col.step"), T("cli.col.description")],
             [(i, f"{n} — {T(f'step.{n}.title')}", T(f"step.{n}.desc")) for i, n in enumerate(recipes.STEPS, 1)])
    if keys:
        ui.table(T("cli.steps.keys_title"), [T("cli.col.key"), T("cli.col.kind"), T("cli.col.values")], _question_keys())
        ui.say(T("cli.steps.keys_hint"))


def _question_keys() -> list[tuple[str, str, str]]:
    """(step.key, kind, allowed values) of every question of every step, as a session that has run nothing yet asks
    them (a throwaway session in a temporary home): the keys --set takes. Choices that depend on what an earlier
    step finds (the model's plans, the exported formats) are said to be known at run time."""
    import tempfile

    import recipes
    from wizard import i18n
    from wizard.console import UI
    from wizard.engine import Engine, StepContext
    from wizard.session import Session

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        s = Session.new("finetune", tuple(recipes.STEPS), h=Path(tmp))
        engine = Engine(s, UI(), None)
        for name in recipes.STEPS:
            try:
                qs = recipes.load(name).questions(StepContext(engine, name))
            except Exception:  # noqa: BLE001 - a step whose questions need an earlier step's outputs
                rows.append((f"{name}.*", "", T("cli.steps.keys_at_run")))
                continue
            for q in qs:
                if q.secret:
                    values = T("cli.steps.keys_secret", env=q.env or "?")
                elif q.choices:
                    try:
                        choices = q.resolve_choices({})
                        values = ", ".join(str(c.value) for c in choices if not c.refused) or \
                            T("cli.steps.keys_at_run")
                        refused = [str(c.value) for c in choices if c.refused]
                        if refused:  # offered only to say why not (issue 46, item 7)
                            values += T("cli.steps.keys_refused", values=list(refused))
                        if q.kind == "checkbox":  # what it asks, and how several (or none) are given
                            values = T("cli.steps.keys_checkbox", what=i18n.render(q.message).rstrip(":：?？ "),
                                       values=values)
                    except Exception:  # noqa: BLE001 - choices computed from earlier answers
                        values = T("cli.steps.keys_at_run")
                elif q.kind == "confirm":
                    values = "yes, no"
                else:
                    values = i18n.render(q.message).rstrip(":：?？ ")
                    bounds = getattr(q.validate, "bounds", None)
                    if bounds:  # a number's range and its default when that does not hang on other answers
                        values += T("cli.steps.keys_range", lo=bounds[0], hi=bounds[1])
                    if q.kind in ("int", "float") and q.default is not None and not callable(q.default):
                        values += T("cli.steps.keys_default", default=q.default)
                rows.append((f"{name}.{q.key}", q.kind, values))
    return rows


BRIEF = 90  # characters of a step's answers or outputs in the `show` table; `show --json` has them whole


WIDE = 120  # terminal cells from which `show` lays a session out as a table (narrower: a paragraph per step)


def _brief(d: dict, skip=("config", "estimates", "files", "samples", "shape", "gpus_detected", "strategy",
                          "losses", "components", "table", "columns", "examples", "parts", "args", "eval_losses",
                          "recoveries", "approximate", "formats", "training"), limit: int = 0) -> str:
    limit = limit or BRIEF
    # a nested record worth a glance is shown by its fields (choose_strategy's data: path, format, counts)
    d = {k2: v2 for k, v in d.items() for k2, v2 in (v.items() if k == "data" and isinstance(v, dict) else [(k, v)])}
    items = [f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}" for k, v in d.items()
             if k not in skip and v not in (None, []) and not isinstance(v, dict)
             and not (isinstance(v, list) and len(v) > 8)]
    text = ", ".join(items)
    if len(text) <= limit:
        return text
    kept: list[str] = []  # whole items, then "…": a value is never cut inside (a path, a URL: issue 46 item 14)
    for item in items:
        if len(", ".join(kept + [item])) > limit - 1:
            break
        kept.append(item)
    if kept:
        return ", ".join(kept) + "…"
    cut = text[:limit - 1]
    at = cut.rfind(" ")  # one item longer than the limit: at a word's end where it has one
    return (cut[:at] if at > limit // 2 else cut).rstrip(", ") + "…"


def delete(session: str = typer.Argument(..., help=T("cli.arg.session")),
           yes: bool = typer.Option(False, "--yes", "-y", help=T("cli.opt.yes_delete"))):
    """Delete SESSION: its session file and its run folder (checkpoints, exports, logs). Refused while one of its jobs
    runs or another yichui has it open; asks first unless --yes (issue 46 item 12)."""
    import shutil

    from recipes import jobs
    from wizard.session import Session, SessionError, find

    from wizard.session import home, own_run_dir, sessions_dir

    if not session.strip():  # an empty SESSION ("$ID" unset) would mean the newest one: never for a deletion
        raise fail("cli.delete.no_session")
    path: Path | None = None
    try:
        path = find(session)
        s: Session | None = Session.load(path)
        speak_session_language(s)  # as every command on a named session (issue 46 trial J: delete spoke English)
    except SessionError as e:
        # only a session file that cannot be read any more (show --all lists it) goes without loading: a regular
        # *.json under YICHUI_HOME/sessions — never another file, a folder, a device or a path that is not there
        p = path or Path(session).expanduser()
        if not (e.key in ("session.invalid", "session.not_json", "session.not_text", "session.newer",
                          "session.no_migration", "session.too_large") and p.suffix == ".json" and p.is_file()
                and not p.is_symlink() and p.resolve().parent == sessions_dir().resolve()):
            raise refused(e)
        path, s = p, None
    own = home() / "runs" / path.stem  # its run folder is a folder: not a link (it led outside YICHUI_HOME, or in a
    if own.is_symlink() or (own.exists() and not own.is_dir()):  # loop) nor a file, "deleted" untouched (trial S)
        raise fail("cli.delete.run_not_folder", run=str(own))
    # an unreadable session's jobs too, by its id: its server was deleted from under it (issue 46 trial J, J2)
    running = [j for j in jobs.find(s.jobs_dir if s is not None else own_run_dir(path.stem)) if j.alive()]
    if running:
        raise fail("cli.delete.running", id=path.stem, job=running[0].name, pid=running[0].pid)
    # a pid file that cannot be read may be a running job's: its process would outlive every command (trial S)
    garbled = [p for p in own.glob("*/*.pid.json") if jobs.read(p) is None]
    if garbled:
        raise fail("cli.delete.unreadable_job", file=str(garbled[0]), id=path.stem)
    if s is not None:
        try:
            s.lock()
        except SessionError as e:
            raise refused(e)
    # only yichui's own: the session file under YICHUI_HOME/sessions/ (a copy elsewhere names another's run folder)
    # and the run folder YICHUI_HOME/runs/<its id> — never a folder the file's run_dir merely names (a hand-edited
    # "" or YICHUI_HOME would have taken the current folder or every session with it)
    if path.resolve().parent != sessions_dir().resolve() or path.is_symlink():
        raise fail("cli.delete.not_in_home", path=str(path), sessions=str(sessions_dir()))
    expected = own_run_dir(path.stem)
    # an unreadable file's own run folder by its id: the file leaving it behind was a leak (issue 46 trial J, J2)
    run_dir = s.run_dir if s is not None else (expected if expected.is_dir() else None)
    if run_dir is not None and (not str(run_dir).strip() or run_dir.resolve() != expected):
        raise fail("cli.delete.odd_run_dir", path=str(path), run=str(run_dir), expected=str(expected))
    size = sum(f.stat().st_size for f in run_dir.rglob("*") if f.is_file()) if run_dir and run_dir.is_dir() else 0
    ui = new_ui()
    # other sessions made with --from this one name files in its run folder (a quantize task's adapter): said before
    # anything goes — deleting it silently made a later deploy of theirs train again (issue 46 trial G)
    users = _sessions_using(run_dir, path) if run_dir is not None else []
    if users:
        ui.warn(T("cli.delete.used_by", run=str(run_dir), ids=i18n.join(users[:5]) + (" …" if len(users) > 5 else "")))
    if not yes:
        if not sys.stdin.isatty():
            raise fail("cli.delete.no_tty", id=s.id if s is not None else str(path))
        if not typer.confirm(T("cli.delete.confirm", path=str(path), run=str(run_dir or "—"),
                               gib=f"{size / 2**30:.2f}"), default=False):
            ui.say(T("cli.delete.kept", path=str(path)))
            raise typer.Exit(1)
    if run_dir is not None and run_dir.exists():
        try:
            shutil.rmtree(run_dir)
        except OSError as e:  # said, and the session file kept: "Deleted" only of what is gone (trial S)
            raise fail("cli.delete.failed", run=str(run_dir), error=f"{type(e).__name__}: {e}", path=str(path),
                       code=1)
    path.unlink(missing_ok=True)
    path.with_name(path.name + ".lock").unlink(missing_ok=True)
    ui.say(T("cli.deleted", path=str(path), run=str(run_dir or "—"), gib=f"{size / 2**30:.2f}"))


def _sessions_using(run_dir: Path, own: Path) -> list[str]:
    """Ids of the other session files under YICHUI_HOME/sessions whose text names a path inside ``run_dir`` (their
    answers or outputs point at its files), newest last; files too large or unreadable are passed over."""
    from wizard.session import sessions_dir

    inside = json.dumps(str(run_dir.resolve()) + "/")[1:-1]  # as the JSON file spells the path
    found = []
    for f in sorted(sessions_dir().glob("*.json")):
        if f.resolve() == own.resolve():
            continue
        try:
            if f.stat().st_size < 16 * 2**20 and inside in f.read_text(encoding="utf-8", errors="replace"):
                found.append(f.stem)
        except OSError:
            continue
    return found


def show(session: Optional[str] = SessionArg,
         all_: bool = typer.Option(False, "--all", help=T("cli.opt.all")),
         as_json: bool = typer.Option(False, "--json", help=T("cli.opt.show_json"))):
    from wizard.session import all_sessions

    if as_json and not all_:  # every answer and output whole (the table cuts long ones); the file holds no secret
        import json

        print(json.dumps(read_session(session).data, indent=2, ensure_ascii=False))
        return

    if all_:
        from recipes import jobs
        from recipes.handoff import Deployment

        def server(x) -> str:  # the endpoint of a server that runs now (its scheme left out: it is http)
            job = jobs.read(RunDir(x.jobs_dir).serve.job)
            url = (x.result(Deployment).endpoint or "") if job is not None and job.alive() else ""
            return url.removeprefix("http://")

        def step(x) -> str:  # "done", or where it stands: "3/8 download" (the name left out at 80 columns)
            if x.is_finished():
                return T("cli.step_done")
            names = x.task_steps()
            at = x.current_step()
            where = f"{names.index(at) + 1}/{len(names)}" if at in names else "?"
            return where if narrow else f"{where} {at}{training(x)}"

        def training(x) -> str:  # a trainer running now is said (46 trial L, L7): under the model at 80 columns,
            job = jobs.read(RunDir(x.jobs_dir).train.job())  # after the step on a wide terminal
            return ("\n" if narrow else " ") + T("cli.show.training_now") if job is not None and job.alive() else ""

        def model(x) -> str:  # the model chosen (its name without the organisation at 80 columns), or "—"
            from recipes.handoff import ModelChoice

            m = x.result(ModelChoice)
            name = m.repo_id or (Path(m.local_path).name if m.local_path else "") or x.record("select_model").answers.get(
                "model_id") or ""
            short = name.rsplit("/", 1)[-1]
            return ((short if len(short) <= 20 else short[:19] + "…") if narrow else name) or "—"

        def updated(x) -> str:  # UTC; the year left out at 80 columns
            return x.updated_at[5 if narrow else 0:16].replace("T", " ")

        unreadable: list = []
        found = all_sessions(unreadable=unreadable)
        ui = new_ui()
        narrow = ui.out.width < 110  # one line per session at 80 columns, no word cut (issue 20, item 13)

        def broken(e) -> tuple[str, str]:  # an unreadable file's id and its server's pid if one runs (its row)
            from wizard.session import own_run_dir

            sid = Path(str(e.params.get("path", "?"))).stem
            job = jobs.read(RunDir(own_run_dir(sid)).serve.job) if sid != "?" else None
            return sid, f"pid {job.pid}" if job is not None and job.alive() else ""
        # a file that no longer loads has a row too, said unreadable (its reason below): it and its server looked
        # gone when stderr was not read (issue 46 trial J, J4)
        bad = [broken(e) for e in unreadable]
        if narrow:  # 80 columns: the model on a second line under the id, so no address or word is cut
            ui.table(T("cli.show.all_title_utc"), [T("cli.col.id_model"), T("cli.col.task"), T("cli.col.step"),
                                                   T("cli.col.server"), T("cli.col.updated_short")],
                     [(f"{x.id}\n{model(x)}" + training(x), task_words(x.task).replace("（", "\n（"), step(x),
                       server(x), updated(x)) for x in found]  # zh: the task's id under its name, not cut
                     + [(sid, "?", T("cli.show.unreadable_row"), srv, "") for sid, srv in bad])
        else:
            ui.table(T("cli.show.all_title_utc"), ["id", T("cli.col.task"), T("cli.col.model"), T("cli.col.step"),
                                                   T("cli.col.server"), T("cli.col.updated_short")],
                     [(x.id, task_words(x.task), model(x), step(x), server(x), updated(x)) for x in found]
                     + [(sid, "?", "?", T("cli.show.unreadable_row"), srv, "") for sid, srv in bad])
        for e in unreadable:  # listed, not hidden: the user may want to mend or delete them
            ui.warn(T(e.key, **e.params))
        return
    if session is None:  # the newest session that got anywhere: one abandoned at its first question is no default
        # (issue 46 item 12 for status and attach; trial I: `show` still showed it, all steps pending)
        from recipes import jobs

        begun = [x for x in all_sessions()
                 if any(r.status in ("running", "done", "failed") or r.answers or r.outputs for _, r in x.records())
                 or jobs.find(x.jobs_dir)]
        s = begun[-1] if begun else read_session(None)
    else:
        s = read_session(session)
    shown = new_ui()
    limit = BRIEF if shown.out.width >= WIDE else 3 * BRIEF  # a paragraph per step has room for more
    rows = [(n, T(f"status.{r.status}") + (f": {r.error}" if r.error else ""), _brief(r.answers, limit=limit),
             _brief(r.outputs, limit=limit)) for n, r in s.records()]
    if shown.out.width >= WIDE:
        shown.table(T("cli.show.title", id=s.id, task=task_words(s.task), path=str(s.path)),
                    [T("cli.col.step"), T("cli.col.status"), T("cli.col.answers"), T("cli.col.outputs")], rows)
    else:  # four columns at 80 cells folded values mid-token (issue 46 item 14): a step per paragraph, words whole
        shown.say(T("cli.show.title", id=s.id, task=task_words(s.task), path=str(s.path)))
        for name, status, answers, outputs in rows:
            shown.say(f"{name} · {status}")
            for label, text in ((T("cli.col.answers"), answers), (T("cli.col.outputs"), outputs)):
                if text:
                    shown.say("    " + T("ui.label_value", label=label, value=text))
    if any(x.endswith("…") for row in rows for x in row[2:]):
        new_ui().say(T("cli.show.cut", id=s.id))
    from recipes.handoff import Evaluation, ExportResult, column_words, metric_words

    ui = new_ui()
    chosen = RunDir(s.jobs_dir).train.backup_choice
    if chosen.is_file():  # the adapter backup: where to, and what went up (as `yichui status` says it)
        import json

        from wizard.cli.jobs import backup_detail

        try:
            where = json.loads(chosen.read_text())
            ui.say(T("cli.show.backup", hub=where.get("hub"), repo=where.get("repo_id"),
                     detail=backup_detail(chosen.parent)))
        except (OSError, ValueError, AttributeError):
            pass  # a backup.json cut short: the backup job reports it
    exported = s.result(ExportResult)
    if exported.merged_dir:  # each export with its quality figures
        title, columns, rows = exported.table()
        ui.table(i18n.render(title), [i18n.render(c) for c in columns],
                 [[i18n.render(v) if not isinstance(v, (str, int, float)) else v for v in r] for r in rows])
    evaluated = s.result(Evaluation)
    if evaluated.table:  # base vs fine-tuned, held-out and benchmarks
        ui.table(T("evaluate.table"), [T("evaluate.col.metric"), *(column_words(c, T) for c in evaluated.columns)],
                 [[metric_words(str(r[0]), T)] + ["—" if v is None else v for v in r[1:]] for r in evaluated.table])
        if (said := evaluated.headline(T)) is not None:  # the evaluate step's own line (a reward that fell too)
            (ui.warn if said[0] else ui.say)(i18n.render(said[1]))
        for caveat in evaluated.caveats():  # too few held out, as the step said it
            ui.warn(i18n.render(caveat))
        if evaluated.report:
            ui.say(T("evaluate.report", path=evaluated.report))
