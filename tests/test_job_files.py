"""What `yichui status`, `stop`, `show` and `attach` read from disk is untrusted (trial S, a tester breaking them):
pid files, events, session fields, lock files. Real processes, real `yichui` commands, real FIFOs and links; each
case first shows the hostile state is really there (the process alive, the file a FIFO), then what yichui does."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import pytest
from conftest import yichui

from recipes import jobs
from wizard.session import Session


@pytest.fixture
def bystander():
    """A process that is not yichui's, in a session of its own (so it leads its process group, as a job does)."""
    p = subprocess.Popen(["sleep", "120"], start_new_session=True)
    yield p
    p.kill()
    p.wait()


def _pid_file(session: Session, name: str = "server", **fields) -> str:
    folder = session.run_dir / ("serve" if name == "server" else "train")
    folder.mkdir(parents=True, exist_ok=True)
    path = jobs.pid_path(folder, name)
    path.write_text(json.dumps({"name": name, "argv": ["x"], "started_at": time.time(), "log": "x.log",
                                "pid_file": str(path)} | fields))
    return str(path)


def test_stop_never_signals_a_process_it_did_not_start(home, bystander, tmp_path):
    """A pid file naming another live process — without a start time, or with that process's own start time while
    it does not lead a group of its own — is not a job of this session: `status` does not call it running and
    `stop` leaves it alone (it killed it, and said "Stopped", before)."""
    s = Session.new("finetune", h=home)
    s.save()
    _pid_file(s, pid=bystander.pid, start_ticks=None, pid_file=str(tmp_path / "elsewhere.pid.json"))
    st = yichui(home, "status", s.id)
    assert st.returncode == 0 and "not running" in st.stdout, st.stdout
    r = yichui(home, "stop", s.id)
    assert r.returncode == 0 and "Stopped" not in r.stdout, r.stdout
    time.sleep(0.3)
    assert bystander.poll() is None  # still running
    assert not (tmp_path / "elsewhere.stopped").exists()  # no marker where the file pointed
    # a child of this test (our process group, not its own): its real start time matches, yet it is not signalled
    child = subprocess.Popen(["sleep", "120"])
    try:
        ticks, _ = jobs._stat(child.pid)
        _pid_file(s, pid=child.pid, start_ticks=ticks)
        assert jobs.read(s.run_dir / "serve" / "server.pid.json").alive()
        r = yichui(home, "stop", s.id)
        assert r.returncode == 0 and "Stopped" not in r.stdout, r.stdout
        time.sleep(0.3)
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()


def test_pid_files_that_are_no_files_do_not_hang_status(home):
    """A FIFO where a pid file or the session's lock belongs blocked every read for ever; a link to /dev/zero read
    until memory ran out. Now they are no pid file and no lock holder."""
    s = Session.new("finetune", h=home)
    s.save()
    (s.run_dir / "train").mkdir(parents=True)
    os.mkfifo(s.run_dir / "train" / "trainer.pid.json")
    (s.run_dir / "serve").mkdir()
    (s.run_dir / "serve" / "server.pid.json").symlink_to("/dev/zero")
    os.mkfifo(s.path.with_name(s.path.name + ".lock"))
    for args in (("status",), ("status", s.id), ("stop", s.id), ("show", "--all")):
        r = yichui(home, *args, timeout=60)
        assert r.returncode == 0 and "Traceback" not in r.stderr, (args, r.stdout, r.stderr)


def test_odd_values_in_session_and_event_files_are_shown_not_fatal(home):
    """A session whose updated_at is a number broke every listing (a TypeError while sorting); text in brackets in
    an id, an answer or an event was read as rich markup (MarkupError, or swallowed); a step event without its step
    number was a KeyError in `status`."""
    odd = Session.new("finetune", h=home)
    odd.record("select_model").outputs.update(repo_id="org/[/x] [bold]model")
    odd.save()
    data = json.loads(odd.path.read_text())
    odd.path.write_text(json.dumps(data | {"updated_at": 5}))
    s = Session.new("finetune", h=home)
    s.save()
    train = s.run_dir / "train"
    job = jobs.spawn("trainer", ["sleep", "60"], train)
    try:
        (train / "events.jsonl").write_text(json.dumps({"v": 1, "event": "step"}) + "\n")
        st = yichui(home, "status")
        assert st.returncode == 0 and "Traceback" not in st.stderr and "step ?/?" in st.stdout, (st.stdout, st.stderr)
        (train / "events.jsonl").write_text(json.dumps({"v": 1, "event": "error", "message": "[/x] [bold]gone"}) + "\n")
        st = yichui(home, "status", s.id, COLUMNS="200")
        assert st.returncode == 0 and "[/x] [bold]gone" in st.stdout, (st.stdout, st.stderr)
    finally:
        job.stop(timeout=5)
    for args in (("show", "--all"), ("show", odd.id)):
        r = yichui(home, *args, COLUMNS="200")
        assert r.returncode == 0 and "Traceback" not in r.stderr, (args, r.stdout, r.stderr)
    assert "[/x] [bold]model" in yichui(home, "show", odd.id, COLUMNS="200").stdout


def test_terminal_escapes_in_session_and_event_files_are_shown_not_obeyed(home):
    """An ESC sequence in an answer or an event reached the terminal as it was (it could recolour, clear the screen or
    retitle the window): now every control character is written as \\xNN — tables, lines and the live view."""
    s = Session.new("finetune", h=home)
    s.record("select_model").outputs.update(repo_id="org/\x1b[2Jmodel\x07")
    s.save()
    train = s.run_dir / "train"
    job = jobs.spawn("trainer", ["sleep", "60"], train)
    try:
        (train / "events.jsonl").write_text(json.dumps({"v": 1, "event": "error", "message": "\x1b]0;pwned\x07gone"})
                                            + "\n")
        outs = [yichui(home, "status", s.id, COLUMNS="200"), yichui(home, "show", s.id, COLUMNS="200")]
    finally:
        job.stop(timeout=5)
    for r in outs:
        assert r.returncode == 0 and "Traceback" not in r.stderr, (r.stdout, r.stderr)
        assert "\x1b" not in r.stdout + r.stderr and "\x07" not in r.stdout + r.stderr, repr(r.stdout)
    assert "\\x1b]0;pwned\\x07gone" in outs[0].stdout, outs[0].stdout
    assert "org/\\x1b[2Jmodel\\x07" in outs[1].stdout, outs[1].stdout


def test_a_run_dir_naming_another_session_s_folder_gives_it_no_jobs(home):
    """A hand-edited session whose run_dir names another session's run folder showed that session's server as its
    own, and `yichui stop` on it stopped that server (trial S)."""
    owner = Session.new("finetune", h=home)
    owner.save()
    edited = Session.new("finetune", h=home)
    edited.data["run_dir"] = str(owner.run_dir)
    edited.save()
    server = jobs.spawn("server", ["sleep", "60"], owner.run_dir / "serve")
    try:
        st = yichui(home, "status", edited.id, COLUMNS="200")
        assert st.returncode == 0 and str(server.pid) not in st.stdout, st.stdout
        r = yichui(home, "stop", edited.id)
        assert r.returncode == 0 and "Stopped" not in r.stdout, r.stdout
        assert server.alive()
        assert str(server.pid) in yichui(home, "status", owner.id, COLUMNS="200").stdout
    finally:
        server.stop(timeout=5)


def test_an_empty_session_name_is_no_session(home):
    """`yichui stop "$ID"` with ID unset stopped the newest session's server."""
    s = Session.new("finetune", h=home)
    s.save()
    server = jobs.spawn("server", ["sleep", "60"], s.run_dir / "serve")
    try:
        for cmd in ("stop", "status"):
            r = yichui(home, cmd, "")
            assert r.returncode == 2 and "No session ''" in r.stderr, (cmd, r.stdout, r.stderr)
        assert server.alive()
    finally:
        server.stop(timeout=5)


def test_delete_touches_nothing_outside_its_home_and_says_deleted_only_when_it_is(home, tmp_path):
    """`delete --yes` removed a folder outside YICHUI_HOME that runs/<id> linked to (the file's run_dir naming it),
    said "Deleted" of a runs/<id> that was a file and stayed, went ahead past a garbled pid file while its server
    ran on, and created the target of a lock file linked to a missing path."""
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("mine")
    linked = Session.new("finetune", h=home)
    linked.data["run_dir"] = str(precious)
    linked.save()
    flat = Session.new("finetune", h=home)
    flat.save()
    for s in (linked, flat):  # the run folders a new session made, replaced
        shutil.rmtree(home / "runs" / s.id, ignore_errors=True)
    (home / "runs" / linked.id).symlink_to(precious)
    (home / "runs" / flat.id).write_text("not a folder")
    for s in (linked, flat):
        r = yichui(home, "delete", s.id, "--yes")
        assert r.returncode == 2 and "nothing deleted" in r.stderr and s.path.exists(), (r.stdout, r.stderr)
    assert (precious / "keep.txt").read_text() == "mine"
    garbled = Session.new("finetune", h=home)
    garbled.save()
    server = jobs.spawn("server", ["sleep", "60"], garbled.run_dir / "serve")
    try:
        pid_file = garbled.run_dir / "serve" / "server.pid.json"
        pid_file.write_text(pid_file.read_text()[:60])  # cut short: no job can be read from it any more
        r = yichui(home, "delete", garbled.id, "--yes")
        assert r.returncode == 2 and "cannot be read as a job's pid file" in r.stderr, (r.stdout, r.stderr)
        assert garbled.path.exists() and server.alive()
    finally:
        server.stop(timeout=5)
    locked = Session.new("finetune", h=home)
    locked.save()
    target = tmp_path / "outside" / "lock"
    target.parent.mkdir()
    locked.path.with_name(locked.path.name + ".lock").symlink_to(target)
    r = yichui(home, "delete", locked.id, "--yes")
    assert not target.exists(), (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and r.returncode != 0, (r.stdout, r.stderr)


def test_attach_says_when_the_trainer_s_compile_failed(home):
    """The trainer reports a failed torch.compile as an error event of kind "compile" and exits (the wizard goes on
    uncompiled); `yichui attach` following it ended in an uncaught CompileFailed traceback (trial S)."""
    s = Session.new("finetune", h=home)
    s.save()
    train = s.run_dir / "train"
    job = jobs.spawn("trainer", ["sleep", "2"], train)
    (train / "events.jsonl").write_text(json.dumps({"v": 1, "event": "error", "kind": "compile", "step": 3,
                                                    "message": "[/x] inductor failed", "pid": job.pid}) + "\n")
    r = yichui(home, "attach", s.id, timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr, (r.stdout, r.stderr)
    assert "Compiling the decoder layers failed" in r.stderr and "[/x] inductor failed" in r.stderr, r.stderr
    assert f"yichui resume {s.id}" in r.stderr
