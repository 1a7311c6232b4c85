"""A serving engine's process: where it may listen, starting it detached, and waiting until it answers.

Used by the deploy step (the session's server) and the evaluate step (a second server of the same engine for the
base model, so that base and fine-tuned replies come from one engine).
"""
from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from recipes import jobs
from recipes.base import StepError
from recipes.serving import client, engines
from recipes.serving import spec as specs

LOOPBACK = ("127.0.0.1", "localhost", "::1")
HEALTH_TIMEOUT_S = 900  # a GPU engine loads weights, profiles memory and captures CUDA graphs first


def port_free(host: str, port: int) -> bool:
    """Can a server listen on host:port? SO_REUSEADDR as uvicorn sets it, so TIME_WAIT leftovers do not count."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def host_error(host: str) -> str | None:
    """Why a server cannot listen on ``host`` at all (no such name, not an address of this machine), or None:
    binding port 0 there, so a busy port is not mistaken for a bad address."""
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
            s.bind((host, 0))
    except OSError as e:
        return getattr(e, "strerror", None) or str(e)
    return None


def free_port(host: str = "127.0.0.1", start: int = 8000) -> int:
    """The first port from ``start`` (200 tried) a server can listen on at ``host``; 0 when none."""
    return next((p for p in range(start, start + 200) if port_free(host, p)), 0)


def _reservations(home: Path) -> Path:
    """Where reservations are kept: machine-wide, as ports are — one folder per user in the temporary directory,
    shared by every YICHUI_HOME of that user (two homes on one machine reserving in their own folders both took
    8000). ``home`` is kept for the callers; the folder does not depend on it."""
    import os
    import tempfile

    return Path(os.environ.get("YICHUI_RUNTIME_DIR") or Path(tempfile.gettempdir()) / f"yichui-{os.getuid()}") \
        / "ports"


def _holder(home: Path, port: int) -> dict | None:
    """The live reservation of ``port`` (``{"owner", "pid"}``), or None (none, unreadable, or its process gone)."""
    import json
    import os

    try:
        held = json.loads((_reservations(home) / f"{port}.json").read_text())
        os.kill(int(held["pid"]), 0)
    except (OSError, ValueError, KeyError, TypeError, ProcessLookupError):
        return None
    return held if isinstance(held, dict) else None


@contextlib.contextmanager
def _locked(home: Path) -> Iterator[Path]:
    """The reservations folder (made if missing), held under its lock (``.lock``, flock) for the block."""
    import fcntl

    d = _reservations(home)
    d.mkdir(parents=True, exist_ok=True)
    with open(d / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield d


def _claim(d: Path, home: Path, port: int, owner: str) -> str | None:
    """Under the lock: the session holding a live reservation of ``port`` when it is not ``owner``; else None,
    with ``port`` reserved for ``owner`` by this process unless ``owner`` already holds it (its server may)."""
    import json
    import os

    held = _holder(home, port)
    if held is not None:
        return None if held.get("owner") == owner else str(held.get("owner"))
    (d / f"{port}.json").write_text(json.dumps({"owner": owner, "pid": os.getpid()}))
    return None


def reserve_port(home: Path, owner: str, host: str = "127.0.0.1", start: int = 8000) -> int:
    """The first port from ``start`` (200 tried) a server can listen on at ``host`` that no other live yichui
    process has reserved, reserved for ``owner`` (a session id) in ``<runtime dir>/ports/<port>.json``
    (:func:`_reservations`) under a lock: two sessions choosing at the same moment (two demos started together, in
    one YICHUI_HOME or two) get different ports instead of the second failing at its launch after its training
    (issue 23). A reservation lasts while the process that made it runs, then while its server does
    (:func:`hand_over`); ``owner``'s own is given again. 0 when none."""
    with _locked(home) as d:
        return next((p for p in range(start, start + 200) if port_free(host, p) and _claim(d, home, p, owner) is None),
                    0)


def claim_port(home: Path, owner: str, port: int) -> str | None:
    """Reserve ``port`` for ``owner`` as :func:`reserve_port` does, this port only: a port given by a saved answer
    (a resumed session) or ``--set`` must be held too, or another session's deploy reserves it meanwhile and both
    servers start on it (seen in the suite). Returns the session holding a live reservation instead (nothing
    written then), or None once claimed."""
    with _locked(home) as d:
        return _claim(d, home, port, owner)


def reserved_by_other(home: Path, port: int, owner: str) -> str | None:
    """The session that holds a live reservation of ``port``, when it is not ``owner``."""
    held = _holder(home, port)
    return str(held.get("owner")) if held is not None and held.get("owner") != owner else None


def client_base(host: str, port: int) -> str:
    """Where this machine reaches the server: a wildcard bind is reached on loopback."""
    h = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"http://[{h}]:{port}" if ":" in h else f"http://{h}:{port}"


def wait_healthy(job: jobs.Job, base: str, timeout: float = HEALTH_TIMEOUT_S,
                 on_poll: Callable[[], None] | None = None) -> None:
    """GET /health answers 200 (every engine has it, none asks for the key there); ``on_poll`` is called before each
    try (the deploy step reads the engine's start phases from its log there: recipes/serving/phases.py).

    Raises:
        StepError("serving.died"): the process exited first (the message holds its log's last lines).
        StepError("serving.timeout"): no answer within ``timeout`` seconds.
    """
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if on_poll is not None:
            on_poll()
        if not job.alive():
            raise StepError("serving.died", log=job.log, tail=job.log_tail(8, this_run=True))
        try:
            client.request_json(base + "/health", timeout=2)
            return
        except (OSError, ValueError):  # URLError is an OSError
            pass
        time.sleep(0.5)
    raise StepError("serving.timeout", seconds=timeout, log=job.log)


def start(name: str, inst: engines.Installed, launch: engines.Launch, directory: Path, port: int,
          key_file: Path | None = None, cwd: Path | None = None, home: Path | None = None) -> jobs.Job:
    """Spawn the engine detached (its own process group; log ``directory/<name>.log``, pid file beside it), in
    ``cwd`` when given (a model named by a relative path); ``port``: the one ``launch`` was made for (its
    reservation passes to the server); ``home``: YICHUI_HOME, whose cache/kernels/ keeps the engine's kernel caches."""
    job = jobs.spawn(name, engines.argv_for(inst, launch, key_file), directory,
                     env=engines.process_env(inst, home), cwd=cwd)
    hand_over(port, job.pid)
    return job


def hand_over(port: int, pid: int) -> None:
    """This process's reservation of ``port`` now lasts while ``pid`` (the server it started) runs: a wizard killed
    while its server is still starting (not yet listening) must not free the port for another session (seen in
    the chaos test: the next deploy reserved it, then the server bound it)."""
    import json
    import os

    if not _reservations(Path()).is_dir():
        return
    with _locked(Path()) as d:
        f = d / f"{port}.json"
        try:
            held = json.loads(f.read_text())
            if int(held["pid"]) == os.getpid():
                f.write_text(json.dumps(held | {"pid": pid}))
        except (OSError, ValueError, KeyError, TypeError):
            pass  # no reservation of ours (a --set port): nothing to hand over


def _option_value(job: jobs.Job, setting: str) -> str | None:
    """The value a server job was started with for ``setting`` (its spellings: every engine spec's options)."""
    spellings = {o for versions in specs.SPECS.values() for sp in versions for o in sp.options.get(setting, ())}
    argv = job.argv
    return next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a in spellings), None)


def port_of(job: jobs.Job) -> int | None:
    """The port a server job was started on, or None."""
    value = _option_value(job, "port")
    return int(value) if value and value.isdigit() else None


def served_name_of(job: jobs.Job) -> str | None:
    """The model name a server job answers to: its served-name option, else (an engine serving a model by path,
    transformers serve) the argument after ``serve``."""
    name = _option_value(job, "served_name")
    if name is None and "serve" in job.argv[:-1]:
        name = Path(job.argv[job.argv.index("serve") + 1]).name
    return name
