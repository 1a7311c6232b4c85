"""The recap at the end of a run (issue 20, item 8): what the session made (paths), every yichui server still running
(session, endpoint, model, memory), and the commands for what comes next (chat, stop one, stop all).

Other sessions' files are input: one that cannot be read is shown by its server's pid file alone.
"""
from __future__ import annotations

from pathlib import Path

from wizard import i18n

T = i18n.t


def made(session) -> list[tuple[str, str]]:
    """(what, path) for each thing this session left on disk that still exists."""
    from recipes.handoff import Download, Evaluation, ExportResult, TrainingResult

    rows: list[tuple[str, str | None]] = []
    if session.record("download").status == "done":
        rows.append((T("recap.model"), session.result(Download).model_dir))
    trained = session.result(TrainingResult)
    rows += [(T("recap.adapter"), trained.adapter_dir), (T("recap.train_dir"), trained.train_dir),
             (T("recap.loss_png"), trained.loss_png)]
    if trained.train_dir:  # the experiment trackers' stores (W&B, MLflow, SwanLab) chosen at the strategy step
        from recipes.rundir import TrainDir

        rows.append((T("recap.trackers"), str(TrainDir(Path(trained.train_dir)).trackers)))
    exported = session.result(ExportResult)
    rows.append((T("recap.merged"), exported.merged_dir))
    for fmt, art in sorted(exported.artifacts.items()):
        rows.append((fmt, art.get("dir") if isinstance(art, dict) else None))
    evaluation = session.result(Evaluation)
    rows += [(T("recap.report"), evaluation.report), (T("recap.chart"), evaluation.chart),
             (T("recap.session"), str(session.path))]
    return [(what, str(p)) for what, p in rows if p and Path(str(p)).exists()]


def servers(home: Path) -> list[dict]:
    """Every yichui server running under ``home``: session id, pid, endpoint, served model, memory (GiB, resident and
    on the GPUs), oldest first."""
    from recipes import jobs, rundir
    from recipes.handoff import Deployment
    from recipes.serving import server
    from wizard.session import Session, SessionError

    out = []
    for sid, job in rundir.servers(home):
        try:
            dep = Session.load(home / "sessions" / f"{sid}.json").result(Deployment)
            endpoint, model, port = dep.endpoint, dep.served_model, dep.port
        except (SessionError, OSError, ValueError):
            endpoint, model, port = None, None, None
        port = port or server.port_of(job)  # a session deployed before the port was recorded: read from its argv
        gpu = jobs.gpu_bytes(job)
        out.append({"id": sid, "pid": job.pid, "endpoint": endpoint or (i18n.t("recap.port", port=port) if port else "?"),
                    "model": model or "?", "resident_gib": jobs.resident_bytes(job) / 2**30,
                    "gpu_gib": gpu / 2**30 if gpu is not None else None})
    return out


def server_line(s: dict, current: str | None = None) -> str:
    mem = T("recap.memory", gib=f"{s['resident_gib']:.2f}") + (
        T("recap.gpu_memory", gib=f"{s['gpu_gib']:.2f}") if s["gpu_gib"] else "")
    return T("recap.server", id=s["id"], endpoint=s["endpoint"], model=s["model"], pid=s["pid"], memory=mem) + (
        T("recap.this_session") if s["id"] == current else "")


def show(session, ui, home: Path) -> None:
    """Print the recap of ``session`` (English or Chinese), lines that keep their paths whole at any width."""
    from recipes.handoff import Deployment

    ui.say("")
    ui.say(T("recap.title", id=session.id))
    for what, path in made(session):
        ui.say("  " + T("ui.label_value", label=what, value=path))
    running = servers(home)
    if running:
        ui.say(T("recap.running", n=len(running)))
        for s in running:
            ui.say("  " + server_line(s, session.id))
    ours = any(s["id"] == session.id for s in running)
    ui.say(T("recap.next"))
    if ours:
        ui.say("  " + T("recap.chat", id=session.id))
        ui.say("  " + T("recap.stop", id=session.id))
    elif session.result(Deployment).reply:
        ui.say("  " + T("recap.start", id=session.id))
    if len(running) > 1 or (running and not ours):
        ui.say("  " + T("recap.stop_all"))
    ui.say("  " + T("recap.show", id=session.id))
