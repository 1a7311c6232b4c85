"""Detached jobs (the trainer, the model server): spawn, find again, check, stop.

A job runs in its own session and process group (``start_new_session``), stdin from /dev/null, stdout and stderr to
a log file, so it outlives the wizard, the terminal and the SSH link. Its pid file ``<dir>/<job>.pid.json`` holds
``pid``, ``start_ticks`` (field 22 of /proc/<pid>/stat, so a recycled pid is not mistaken for the job), ``argv``,
``started_at`` and ``log``. ``yichui status``/``stop``/``resume`` find jobs from these files alone.
"""
from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass
class Job:
    name: str
    pid: int
    start_ticks: int | None
    argv: list[str]
    started_at: float
    log: str
    pid_file: str

    def alive(self) -> bool:
        """Whether the process that was started is still running: the pid alone could be anyone's by now, so its
        start time must match too — a job whose start time is not known is not taken for alive (a pid file edited
        to another process's pid and no start time had `yichui stop` kill that process: trial S)."""
        ticks, state = _stat(self.pid)
        if ticks is None or self.start_ticks is None:
            return False
        return state not in ("Z", "X") and ticks == self.start_ticks

    def stop(self, timeout: float | None = None) -> bool:
        """SIGTERM the job's process group, then SIGKILL after ``timeout`` s (the trainer: 120 s, time to finish its
        step and write a checkpoint; others 20 s). True if it was running.

        Leaves ``<job>.stopped`` beside the pid file, so a wizard following the job knows it was stopped on purpose.
        """
        if not self.alive() or not self._leads_its_group():
            return False
        Path(self.pid_file).with_suffix("").with_suffix(".stopped").write_text(str(self.pid))
        if timeout is None:
            timeout = 120.0 if self.name in ("trainer", "preflight") else 20.0
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(self.pid, sig)
            except ProcessLookupError:
                break
            end = time.monotonic() + wait
            while time.monotonic() < end:
                if not self.alive():
                    return True
                time.sleep(0.1)
        return not self.alive()  # "stopped" is said of a process that is gone, not of a signal sent (trial S)

    def _leads_its_group(self) -> bool:
        """A job is spawned in a session of its own, so it leads its process group: a pid that does not is not one
        of ours, and its group is not signalled."""
        try:
            return os.getpgid(self.pid) == self.pid
        except OSError:
            return False

    def stop_requested(self) -> bool:
        marker = Path(self.pid_file).with_suffix("").with_suffix(".stopped")
        try:
            return marker.read_text().strip() == str(self.pid)
        except OSError:
            return False

    def log_tail(self, n: int = 15, this_run: bool = False) -> str:
        """The log's last ``n`` lines; ``this_run``: only those written since this job's start (the line :func:`spawn`
        writes) — a killed trainer's report quoted the run before it (issue 46 trial K, K2)."""
        try:
            lines = Path(self.log).read_text(errors="replace").splitlines()
        except OSError:
            return ""
        if this_run:
            starts = [i for i, x in enumerate(lines) if x.startswith(START_MARK)]
            lines = lines[starts[-1] + 1:] if starts else lines
        return "\n".join(lines[-n:])


def _stat(pid: int) -> tuple[int | None, str | None]:
    """(start time in clock ticks, state letter) of a pid, or (None, None) when there is no such process."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        if sys.platform.startswith("linux"):
            return None, None
        try:  # no procfs: fall back to a signal-0 probe
            os.kill(pid, 0)
        except OSError:
            return None, None
        return 0, "R"
    rest = raw[raw.rindex(")") + 2:].split()  # fields after "(comm)": state is field 3, starttime field 22
    return int(rest[19]), rest[0]


def foreign_env() -> dict:
    """This process's environment without its Python and virtualenv variables (PYTHONPATH, PYTHONHOME, VIRTUAL_ENV,
    …): for a job run by another interpreter (an engine's or the quantizer's own environment), which must see its
    own packages, not yichui's."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}


def pid_path(directory: Path, name: str) -> Path:
    """Where job ``name`` started in ``directory`` records itself."""
    return Path(directory) / f"{name}.pid.json"


def log_path(directory: Path, name: str) -> Path:
    """Job ``name``'s stdout + stderr."""
    return Path(directory) / f"{name}.log"


START_MARK = "── yichui: "  # the line spawn writes into a job's log before the job's own output (a log is appended)


def spawn(name: str, argv: list[str], directory: Path, env: dict | None = None, cwd: Path | None = None) -> Job:
    directory.mkdir(parents=True, exist_ok=True)
    log = log_path(directory, name)
    with open(log, "ab") as out, open(os.devnull, "rb") as devnull:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
        out.write(f"{START_MARK}{name} started {stamp} UTC ──\n".encode())
        out.flush()
        proc = subprocess.Popen(argv, stdin=devnull, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                close_fds=True, env=env, cwd=cwd)
    job = _record(name, proc.pid, list(argv), directory)
    proc.returncode = 0  # detached on purpose: never waited for here (silences Popen's ResourceWarning)
    return job


def _record(name: str, pid: int, argv: list[str], directory: Path) -> Job:
    """Process ``pid`` recorded as job ``name``: its pid file written whole (a temporary file renamed into place)."""
    ticks, _ = _stat(pid)
    job = Job(name, pid, ticks, argv, time.time(), str(log_path(directory, name)), str(pid_path(directory, name)))
    tmp = Path(job.pid_file + ".tmp")
    tmp.write_text(json.dumps(asdict(job), indent=2))
    os.replace(tmp, job.pid_file)
    return job


def record_self(name: str, directory: Path) -> Job:
    """This process recorded as job ``name`` in ``directory`` (a pid file :func:`read` takes), for work the wizard
    does in its own process that another command should see — the first demo's model build. The caller removes the
    file when the work ends (:func:`forget`)."""
    directory.mkdir(parents=True, exist_ok=True)
    return _record(name, os.getpid(), list(sys.argv), directory)


def forget(job: Job) -> None:
    """Remove ``job``'s pid file (gone already: nothing to do)."""
    Path(job.pid_file).unlink(missing_ok=True)


def kill_tree(p: subprocess.Popen, run_dir: Path | None, wait: float = 20.0) -> None:
    """SIGKILL a wizard's process group and every job of its run directory (each in its own session), as a power
    cut would, and wait until they are gone (up to ``wait`` s each): the chaos tests and benchmarks."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait(timeout=60)
    found = find(run_dir) if run_dir else []
    for job in found:
        if job.alive():
            try:
                os.killpg(job.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for job in found:
        end = time.monotonic() + wait
        while job.alive() and time.monotonic() < end:
            time.sleep(0.05)


PID_FILE_LIMIT = 64 * 1024  # bytes: a pid file is ~300; anything larger is not one (a link to /dev/zero: trial S)


def read(pid_file: Path) -> Job | None:
    """The job recorded in ``pid_file``, or None when it is not a pid file :func:`spawn` could have written: not a
    regular file (a FIFO would block the read), too large, not JSON, a pid that is not a number above 1. Its name,
    log and own path are those of the file's place (``<dir>/<name>.pid.json``), whatever the file says: an edited
    path made `stop` write its marker elsewhere (trial S). Unknown keys are ignored."""
    pid_file = Path(pid_file)
    if not pid_file.name.endswith(".pid.json"):
        return None
    try:
        fd = os.open(pid_file, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > PID_FILE_LIMIT:
            return None
        data = json.loads(os.read(fd, PID_FILE_LIMIT + 1))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    if not isinstance(data, dict):
        return None
    pid, ticks, argv, started = data.get("pid"), data.get("start_ticks"), data.get("argv"), data.get("started_at")
    if type(pid) is not int or pid <= 1 or (ticks is not None and type(ticks) is not int):
        return None
    name = pid_file.name[:-len(".pid.json")]
    return Job(name, pid, ticks, [str(a) for a in argv] if isinstance(argv, list) else [],
               float(started) if isinstance(started, (int, float)) and not isinstance(started, bool) else 0.0,
               str(log_path(pid_file.parent, name)), str(pid_file))


def find(run_dir: Path) -> list[Job]:
    """Every job recorded under a session's run directory (``*/<job>.pid.json``)."""
    return [j for p in sorted(Path(run_dir).glob("*/*.pid.json")) if (j := read(p)) is not None]


def resident_bytes(job: Job) -> int:
    """Resident memory (RSS) of the job's process group — the job and the children it started — in bytes, from
    /proc (0 where there is none)."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            raw = stat.read_text()
            if int(raw[raw.rindex(")") + 2:].split()[2]) != job.pid:  # field 5: the process group
                continue
            rss_pages = int((stat.parent / "statm").read_text().split()[1])
        except (OSError, ValueError, IndexError):
            continue
        total += rss_pages * os.sysconf("SC_PAGE_SIZE")
    return total


def gpu_bytes(job: Job) -> int | None:
    """GPU memory the job's process group holds, in bytes (nvidia-smi's per-process used memory, MiB), or None
    without nvidia-smi."""
    import shutil

    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    total = 0
    for line in out.splitlines():
        try:
            pid, mib = (int(x) for x in line.split(","))
            if os.getpgid(pid) == job.pid:
                total += mib * 2**20
        except (ValueError, OSError):
            continue
    return total


def read_events(path: Path, offset: int = 0) -> tuple[list[dict], int]:
    """Complete JSON lines of an events file from byte ``offset``; returns (events, new offset)."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return [], offset
    end = data.rfind(b"\n") + 1  # a half-written last line waits for the next read
    events = []
    for line in data[:end].splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get("event"), str):  # anything else is not an event
            events.append(event)
    return events, offset + end
