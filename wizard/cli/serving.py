"""Commands on a session's server: serve start|status|logs|stop, chat."""
from __future__ import annotations

import os
import sys
from typing import Optional

import typer

from recipes.rundir import RunDir
from wizard.cli.common import (T, app, job_words, SessionArg, new_ui, fail, run_engine, load_locked, demo_hub, read_session, speak_session_language, stop_unreadable,
                               with_running_jobs)


serve_app = typer.Typer(help=T("cli.serve"), epilog=T("cli.example.serve"), add_completion=False,
                        no_args_is_help=True)



def _server_session(session: str | None, running_only: bool = False, asked_status: bool = False):
    """SESSION, or the most recent session whose server runs (else the most recent session, or with
    ``running_only`` one line saying no server runs — an error, or with ``asked_status`` the status asked for,
    on stdout: exit 1 either way), and its server job."""
    from recipes import jobs

    def server(s):
        return jobs.read(RunDir(s.jobs_dir).serve.job)

    if session:
        s = read_session(session)
    else:
        running = [x for x in with_running_jobs() if (j := server(x)) and j.alive()]
        if not running and running_only:  # chat, status, logs: the newest session may never have deployed
            if asked_status:  # the answer to `serve status`, not an error (trial U: "error: No yichui server …")
                new_ui().say(T("cli.serve.none_running_hint"))
                raise typer.Exit(1)
            raise fail("cli.serve.none_running_hint", code=1)
        if running:  # the session this command acts on, found by its running server: speak its language
            s = running[-1]
            speak_session_language(s)
        else:  # nobody's pick (issue 20: a session nobody named answered in its language): the locale's
            s = read_session(None)
    return s, server(s)


def _no_server(s, key: str) -> typer.Exit:
    """The one line for a session without a server: a task with no deploy step is pointed at `run --task deploy
    --from`, an unfinished deploy at `resume`, a stopped server at ``key``'s own advice."""
    from recipes.handoff import Deployment

    if s.record("deploy").skipped:
        return fail("cli.serve.no_deploy_step", code=1, id=s.id, task=s.task)
    out = s.result(Deployment)
    if not (out.reply or out.endpoint):
        return fail("cli.serve.never_deployed", code=1, id=s.id)
    return fail(key, code=1, id=s.id)


def serve_start(session: Optional[str] = SessionArg):
    """Start the session's server again (after a crash, a reboot or `yichui stop`) with the deploy step's recorded
    answers; the steps before it are not redone when their results are still there."""
    from recipes.handoff import Deployment

    s, job = _server_session(session)
    if not s.result(Deployment).reply:
        raise _no_server(s, "cli.serve.never_deployed")
    if job is not None and job.alive():
        new_ui().say(T("cli.serve.already", id=s.id, pid=job.pid))
        return
    s = load_locked(s.id)
    ui = new_ui()
    with demo_hub(ui, {}, s.demo) as defaults:
        raise typer.Exit(run_engine(s, ui, False, {}, defaults=defaults))


def serve_status(session: Optional[str] = SessionArg,
                 all_: bool = typer.Option(False, "--all", help=T("cli.opt.status_all"))):
    from recipes.handoff import Deployment

    if all_:  # every yichui server under YICHUI_HOME, as `serve stop --all` stops them
        from recipes import rundir
        from wizard.session import find, home
        from wizard.session import Session

        if session is not None:
            raise fail("cli.serve.all_and_session", session=session)
        running = rundir.servers(home())
        if not running:
            new_ui().say(T("cli.serve.none_running"))
            return
        rows = []
        for sid, job in running:
            try:
                out = Session.load(find(sid, home())).result(Deployment)
                endpoint, model = out.endpoint or "", out.served_model or ""
            except Exception:  # noqa: BLE001 - a session file gone or broken: its server is still listed
                endpoint = model = "?"
            rows.append((sid, job.pid, f"{endpoint}\n{model}", job.log))
        # the model under its endpoint and the logs below: five columns cut "http://127.0.0. / 0.1:8002/v1" and
        # "tiny-qwen2-ch / at-lora" at 80 columns (issue 46 trial I, item 14)
        ui = new_ui()
        ui.table(T("cli.serve.title_all"), [T("cli.col.session"), "pid", T("cli.col.endpoint_model")],
                 [r[:3] for r in rows])
        for sid, _, _, log in rows:
            ui.say(T("cli.serve.log_of", id=sid, path=log))
        return
    s, job = _server_session(session, running_only=True, asked_status=True)
    if job is None:
        _say_others(s.id)
        raise _no_server(s, "cli.serve.none")
    out = s.result(Deployment)
    ui = new_ui()  # the model under its endpoint, the log below (as with --all)
    ui.table(T("cli.serve.title", id=s.id), ["pid", T("cli.col.state"), T("cli.col.endpoint_model")],
             [(job.pid, T("cli.state.running" if job.alive() else "cli.state.stopped"),
               f"{out.endpoint or ''}\n{out.served_model or ''}".strip())])
    ui.say(T("cli.serve.log_of", id=s.id, path=job.log))
    if session is None or not job.alive():
        _say_others(s.id)
    if not job.alive():
        raise typer.Exit(1)


def _say_others(sid: str) -> None:
    """One line when servers of other sessions run (issue 46: beside the newest session's, or a stopped one's, they
    went unseen)."""
    from recipes import rundir
    from wizard.session import home

    others = [x for x, _ in rundir.servers(home()) if x != sid]
    if others:
        new_ui().say(T("cli.serve.more_running", n=len(others)))


def serve_logs(session: Optional[str] = SessionArg,
               lines: int = typer.Option(40, "-n", "--lines", help=T("cli.opt.lines"))):
    s, job = _server_session(session, running_only=True)
    if job is None:
        raise _no_server(s, "cli.serve.none")
    print(job.log_tail(lines))


def serve_stop(session: Optional[str] = SessionArg,
               all_: bool = typer.Option(False, "--all", help=T("cli.opt.stop_all"))):
    if all_:  # every yichui server under YICHUI_HOME, whichever session started it (issue 20, item 8)
        from recipes import jobs, rundir
        from wizard.session import home

        if session is not None:
            raise fail("cli.serve.all_and_session", session=session)
        ui = new_ui()
        running = rundir.servers(home())
        if not running:
            ui.say(T("cli.serve.none_running"))
            return
        for sid, job in running:
            if job.stop():
                ui.say(T("cli.stopped", job=job_words(job.name), pid=job.pid, id=sid))
        return
    if session is not None:
        stop_unreadable(session, only="server")
    s, job = _server_session(session)
    if job is None or not job.stop():
        new_ui().say(T("cli.nothing_running", id=s.id))
        return
    new_ui().say(T("cli.stopped", job=job_words(job.name), pid=job.pid, id=s.id))


def chat(session: Optional[str] = SessionArg,
         endpoint: Optional[str] = typer.Option(None, "--endpoint", help=T("cli.opt.endpoint_chat")),
         model: Optional[str] = typer.Option(None, "--model", help=T("cli.opt.model_chat")),
         max_tokens: int = typer.Option(256, "--max-tokens", help=T("cli.opt.max_tokens"))):
    """A terminal chat with the running endpoint: streamed replies, multi-turn, /reset, /exit."""
    import urllib.error

    from recipes.handoff import Deployment
    from recipes.serving import client

    served_here = endpoint is None  # a yichui session's server (its id in the last line's stop command)
    if endpoint is None:
        s, job = _server_session(session, running_only=True)
        out = s.result(Deployment)
        if job is None or not job.alive() or not out.endpoint:
            raise _no_server(s, "cli.chat.no_server")
        endpoint, model = out.endpoint, model or out.served_model
        from recipes.model.vision import is_vision_model

        vision: bool | None = is_vision_model(out.model_dir) if out.model_dir else None
        from recipes.serving import keys

        key = keys.read_key(out.api_key_file)
        if session is None:  # picked for the user: which one (the newest session with a server running)
            new_ui().say(T("cli.chat.session", id=s.id))
    else:
        key = os.environ.get("OPENAI_API_KEY")  # another endpoint: the key the openai client would use
        vision = None
        # an HTTP header carries printable ASCII only: a key with a newline (a pasted line) or another alphabet was
        # sent, refused by the HTTP library and the server blamed (the tester's 21-7, N10); the key is never echoed
        if key is not None and not all(" " < c <= "~" for c in key):
            raise fail("cli.chat.bad_key", what=T("cli.chat.bad_key_newline") if any(c in key for c in "\r\n")
                       else T("cli.chat.bad_key_other"))
    ui = new_ui()
    from recipes.hub.client import is_url

    if not is_url(endpoint):  # a scheme, a host, a port that exists (99999 was "cannot reach")
        raise fail("cli.chat.bad_endpoint", endpoint=endpoint)
    try:
        model = model or client.first_model(endpoint, api_key=key)
    except urllib.error.HTTPError as e:
        if e.code == 404 and not endpoint.rstrip("/").endswith("/v1"):
            raise fail("cli.chat.add_v1", code=1, endpoint=endpoint.rstrip("/"))
        raise fail("serving.chat.unreachable", code=1, endpoint=endpoint, error=str(e))
    except (OSError, ValueError, KeyError, IndexError) as e:
        raise fail("serving.chat.unreachable", code=1, endpoint=endpoint, error=str(e))
    if sys.stdin.isatty():  # line editing and the Up arrow's history for input() (issue 46 item 10)
        import readline  # noqa: F401

    client.repl(endpoint, model, key, T, ui.say, ui.error, max_tokens, vision=vision,
                session=s.id if served_here else None)
