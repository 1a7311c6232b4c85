"""The session file (schema v5, see wizard/README.md): format, validation, migrations, atomic save, lock.

One JSON file per session at ``YICHUI_HOME/sessions/<id>.json``; the run directory is ``YICHUI_HOME/runs/<id>/``.
Saved after every answer and every status change by writing a temp file in the same folder, fsync, ``os.replace``
(and fsync of the folder), so a reader sees the old or the new file, never half of one. A session that fails to load
is never written back.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import fcntl
import json
import os
import secrets
import stat
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from recipes.base import Refusal

if TYPE_CHECKING:
    from recipes.handoff import Handoff
H = TypeVar("H", bound="Handoff")
from wizard import i18n

SCHEMA_VERSION = 6
STATUSES = ("pending", "running", "done", "failed", "skipped")
# the largest session file read: real ones are tens of KiB (answers and outputs, no weights or data)
MAX_BYTES = 16 * 2**20


def _v1_to_v2(data: dict) -> dict:
    """v2 adds choose_strategy's ``master_weights`` (fp32 | bf16) for a full fine-tune, fp32 by default. A v1 session
    trained full fine-tunes in pure bf16: it keeps doing so, so that a resumed run continues the same way."""
    rec = data.get("steps", {}).get("choose_strategy")
    if isinstance(rec, dict) and isinstance(rec.get("answers"), dict) \
            and rec["answers"].get("method") in ("full", "galore"):
        rec["answers"].setdefault("master_weights", "bf16")
        strategy = (rec.get("outputs") or {}).get("strategy")
        if isinstance(strategy, dict):
            strategy.setdefault("master_weights", "bf16")
    return data


def _v2_to_v3(data: dict) -> dict:
    """v3: export asks for the serving engine and a list of ``formats`` instead of ``bnb_4bit``, and records each
    quantized copy under ``artifacts`` (format → dir, bytes, tool, quality) instead of ``bnb4_dir``/``bnb4_bytes``.
    A v2 export was made for transformers serve."""
    rec = data.get("steps", {}).get("export")
    if not isinstance(rec, dict):
        return data
    answers = rec.get("answers")
    if isinstance(answers, dict) and "bnb_4bit" in answers:
        bnb = answers.pop("bnb_4bit")
        answers.setdefault("serve_with", "transformers")
        answers.setdefault("formats", ["bnb-4bit"] if bnb else [])
    out = rec.get("outputs")
    if isinstance(out, dict) and out.get("merged_dir"):
        artifacts = out.setdefault("artifacts", {})
        if out.get("bnb4_dir"):
            artifacts["bnb-4bit"] = {"dir": out.pop("bnb4_dir"), "bytes": out.pop("bnb4_bytes", 0),
                                     "format": "bnb-4bit", "tool": "bitsandbytes", "quality": None}
        out.setdefault("formats", ["merged"] + list(artifacts))
        out.setdefault("serve_with", "transformers")
    return data


def _v3_to_v4(data: dict) -> dict:
    """v4: every session holds every step (recipes.STEPS), those outside its task with status ``skipped``; the
    evaluate and chat steps are new. A v3 session (always a fine-tune) predates them: both are recorded as skipped,
    so a finished session stays finished (``yichui run --task evaluate --from SESSION`` evaluates it)."""
    steps = data.get("steps")
    if isinstance(steps, dict):
        for name in ("evaluate", "chat"):
            steps.setdefault(name, new_record() | {"status": "skipped"})
    return data


def _v4_to_v5(data: dict) -> dict:
    """v5: choose_strategy comes before download (its preflight smoke run needs the strategy before the weights are
    fetched), so the steps are stored in the new order. Records are kept as they are: a v4 session that downloaded
    and then stopped before choosing its strategy continues with choose_strategy, its download still done. The small
    files (config, tokenizer) that v5 keeps apart (select_model's ``meta_dir``) were, in v4, in the downloaded model:
    that folder is recorded as the session's ``meta_dir``."""
    import recipes

    steps = data.get("steps")
    if isinstance(steps, dict) and set(steps) == set(recipes.STEPS):
        data["steps"] = {name: steps[name] for name in recipes.STEPS}
        sel, dl = (steps[n].get("outputs") if isinstance(steps[n], dict) else None for n in ("select_model", "download"))
        if isinstance(sel, dict) and isinstance(dl, dict) and not sel.get("meta_dir") and dl.get("model_dir"):
            sel["meta_dir"] = dl["model_dir"]
    return data


class MigrationProblem(ValueError):
    """What an old file holds that its own schema did not allow, in that schema's names (said as it is)."""


def _v5_to_v6(data: dict) -> dict:
    """v6: choose_strategy's record types its seams (recipes/handoff.py StrategyChoice). v5's ``strategy`` (the
    answers, with skip_bad_records, val_ratio, images_per_sample) becomes ``training`` (TrainerJob's strategy
    fields), ``data`` (a DataChoice: source, path, repo, file, format, skip_bad_records, val_ratio and the record
    counts v5 kept beside it) and ``backup`` (an AdapterBackup, or null). Anything of the wrong type is moved as it
    is: the load's type check (StrategyChoice.problem) then names it."""
    from recipes.handoff import StrategyChoice, shown

    rec = data.get("steps", {}).get("choose_strategy") if isinstance(data.get("steps"), dict) else None
    if not isinstance(rec, dict):
        return data
    out = rec.get("outputs")
    if isinstance(out, dict) and "strategy" not in out and rec.get("status") == "done":
        raise MigrationProblem("steps.choose_strategy is done but its outputs lack strategy (set its status to "
                               "pending to run it again)")
    if not isinstance(out, dict) or "strategy" not in out:
        return data
    strategy = out.pop("strategy")
    if not isinstance(strategy, dict):  # said by the name the file has (v6 would call it training)
        raise MigrationProblem(f"steps.choose_strategy.outputs.strategy is {shown(strategy)}, not an object")
    out["training"] = StrategyChoice.strategy_of(strategy)
    backup = StrategyChoice.backup_of(strategy)
    out["backup"] = dataclasses.asdict(backup) if backup else None
    moved = {"path": out.pop("dataset_path", None), "format": out.pop("dataset_format", None),
             "n_records": out.pop("n_records", 0), "n_train": out.pop("n_train", 0),
             "n_validation": out.pop("n_validation", 0)}
    out["data"] = {"source": strategy.get("dataset", "bundled"), "repo": strategy.get("dataset_repo"),
                   "file": strategy.get("dataset_file"), "skip_bad_records": strategy.get("skip_bad_records", False),
                   "val_ratio": strategy.get("val_ratio", 0.0)} | moved
    return data


# from_version → function(data) -> data at from_version + 1
MIGRATIONS: dict[int, Callable[[dict], dict]] = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4, 4: _v4_to_v5,
                                                 5: _v5_to_v6}


class SessionError(Refusal):
    """A session that cannot be used."""


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def home() -> Path:
    """YICHUI_HOME, default ~/.yichui."""
    return Path(os.environ.get("YICHUI_HOME") or Path.home() / ".yichui").expanduser().resolve()


def own_run_dir(sid: str) -> Path:
    """The run folder session ``sid`` may write into and delete: YICHUI_HOME/runs/<sid>, resolved — never a folder
    a hand-edited ``run_dir`` merely names."""
    return (home() / "runs" / sid).resolve()


def sessions_dir(h: Path | None = None) -> Path:
    return (h or home()) / "sessions"


def new_record() -> dict:
    return {"status": "pending", "answers": {}, "outputs": {}, "error": None, "started_at": None, "finished_at": None}


def _validate(data: Any, path: Path) -> None:
    def bad(what: str):
        raise SessionError("session.invalid", path=str(path), what=what)

    import recipes
    from recipes.base import msg
    from recipes.handoff import HANDOFFS, spec_problem

    if not isinstance(data, dict):
        bad("top level is not an object")
    for key, typ in (("id", str), ("task", str), ("steps", dict), ("run_dir", str), ("created_at", str)):
        if not isinstance(data.get(key), typ):
            bad(f"'{key}' missing or not a {typ.__name__}")
    if not data["run_dir"].strip():  # "" is the current folder: never a session's run folder
        bad("'run_dir' is empty")
    if data["task"] not in recipes.TASKS:
        bad(f"unknown task '{data['task']}' (tasks: {', '.join(recipes.TASKS)})")
    if list(data["steps"]) != list(recipes.STEPS):
        bad(f"the steps must be {', '.join(recipes.STEPS)} (those outside task '{data['task']}' skipped)")
    for name, rec in data["steps"].items():
        if not isinstance(rec, dict):
            bad(f"steps.{name} is not an object")
        if rec.get("status") not in STATUSES:
            bad(f"steps.{name}.status is {rec.get('status')!r}, not one of {', '.join(STATUSES)}")
        for key in ("answers", "outputs"):
            if not isinstance(rec.get(key), dict):
                bad(f"steps.{name}.{key} missing or not an object")
        kind = HANDOFFS.get(name)  # the record the steps after it will read, typed
        problem = kind.problem(rec["outputs"]) if kind else None
        if problem:
            bad(f"steps.{name}.outputs.{problem}")
        if kind and rec["status"] == "done" and (lacking := kind.done_problem(rec["outputs"])):
            bad(f"steps.{name} is done but its outputs lack {lacking} (set its status to pending to run it again)")
        if name == "choose_strategy" and rec["status"] == "done":  # what a resume trains, checked as the trainer
            for part, d in (("answers", rec["answers"]), ("outputs.training", rec["outputs"].get("training"))):
                problem = spec_problem(d, part, render=lambda r: i18n.render(msg(r.key, **r.params)))
                if problem:
                    bad(f"steps.{name}.{problem}")


class StepRecord:
    """One step's record in the session document, as a view: what is set here is written there (saved with the
    session). ``status`` one of STATUSES; ``answers`` and ``outputs`` the step's dicts (mutable); ``error`` the
    failure's one line or None; ``started_at``/``finished_at`` ISO times or None."""

    __slots__ = ("data",)

    def __init__(self, data: dict):
        self.data = data

    status = property(lambda self: self.data["status"], lambda self, v: self.data.__setitem__("status", v))
    answers = property(lambda self: self.data["answers"], lambda self, v: self.data.__setitem__("answers", v))
    outputs = property(lambda self: self.data["outputs"], lambda self, v: self.data.__setitem__("outputs", v))
    error = property(lambda self: self.data.get("error"), lambda self, v: self.data.__setitem__("error", v))
    started_at = property(lambda self: self.data.get("started_at"))
    finished_at = property(lambda self: self.data.get("finished_at"))

    @property
    def skipped(self) -> bool:
        return self.status == "skipped"

    def update(self, **fields: Any) -> None:
        """Set several fields at once (status, error, started_at, finished_at, outputs …)."""
        self.data.update(fields)


class Session:
    """A loaded session. ``data`` is the JSON document; ``path`` where it lives. Outside this module the document
    is read and written through the accessors (``record``, ``records``, ``task`` …), not indexed."""

    def __init__(self, path: Path, data: dict):
        self.path, self.data = Path(path), data
        self._lock_fd: int | None = None

    # -- creation and loading -------------------------------------------------------------------------------
    @classmethod
    def new(cls, task: str, steps: tuple[str, ...] | None = None, h: Path | None = None, demo: bool | str = False,
            replay_of: str | None = None) -> "Session":
        """A new session of ``task``: every step of recipes.STEPS, pending when the task runs it (``steps``, default
        the task's own), skipped otherwise."""
        import recipes

        run = set(steps if steps is not None else recipes.TASKS[task])
        from wizard import __version__

        h = h or home()
        sid = _dt.datetime.now().strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)
        data = {
            "schema_version": SCHEMA_VERSION, "yichui_version": __version__, "id": sid, "task": task,
            "demo": demo, "replay_of": replay_of, "lang": i18n.get_lang(),
            "created_at": now(), "updated_at": now(), "finished_at": None,
            "run_dir": str(h / "runs" / sid),
            "steps": {name: new_record() | ({} if name in run else {"status": "skipped"}) for name in recipes.STEPS},
        }
        s = cls(sessions_dir(h) / f"{sid}.json", data)
        Path(s.run_dir).mkdir(parents=True, exist_ok=True)
        return s

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Session":
        """Read, validate and migrate a session file.

        Raises:
            SessionError: missing, not JSON (names line/column), wrong shape, or a schema newer than this yichui.
        """
        path = Path(path)
        try:
            st = path.stat()
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError
            if not stat.S_ISREG(st.st_mode):  # a device (/dev/zero), FIFO or socket: never read (it may not end)
                raise SessionError("session.not_a_file", path=str(path))
            if st.st_size > MAX_BYTES:
                raise SessionError("session.too_large", path=str(path), mib=f"{st.st_size / 2**20:,.0f}",
                                   limit=MAX_BYTES // 2**20)
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise SessionError("session.not_found", path=str(path)) from None
        except IsADirectoryError:
            raise SessionError("session.is_folder", path=str(path)) from None
        except UnicodeDecodeError:
            raise SessionError("session.not_text", path=str(path)) from None
        except OSError as e:  # a symbolic-link loop, no permission, an I/O error: said as such, not "no session"
            raise SessionError("session.unreadable", path=str(path), error=e.strerror or str(e)) from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise SessionError("session.not_json", path=str(path), line=e.lineno, col=e.colno, error=e.msg) from None
        except (RecursionError, ValueError) as e:  # nested 100,000 deep; an integer of more than 4,300 digits
            raise SessionError("session.not_json", path=str(path), line="?", col="?",
                               error=type(e).__name__ + ": " + str(e).splitlines()[0][:80]) from None
        if not isinstance(data, dict) or not isinstance(data.get("schema_version"), int):
            raise SessionError("session.invalid", path=str(path), what="'schema_version' missing or not an integer")
        version = data["schema_version"]
        if version > SCHEMA_VERSION:
            raise SessionError("session.newer", path=str(path), version=version, known=SCHEMA_VERSION)
        while version < SCHEMA_VERSION:
            if version not in MIGRATIONS:
                raise SessionError("session.no_migration", path=str(path), version=version)
            try:
                data = MIGRATIONS[version](data)
            except MigrationProblem as e:
                raise SessionError("session.invalid", path=str(path), what=str(e)) from None
            except (KeyError, TypeError, AttributeError, ValueError) as e:  # an old file edited by hand
                raise SessionError("session.invalid", path=str(path),
                                   what=f"schema {version} could not be migrated ({type(e).__name__}: {e})"[:200]) \
                    from None
            version = data["schema_version"] = version + 1
        _validate(data, path)
        return cls(path, data)

    # -- accessors ---------------------------------------------------------------------------------------------
    @property
    def id(self) -> str:
        return self.data["id"]

    @property
    def run_dir(self) -> Path:
        return Path(self.data["run_dir"])

    @property
    def jobs_dir(self) -> Path:
        """Where this session's jobs (trainer, server) are looked for by status, stop, attach and serve: its own run
        folder YICHUI_HOME/runs/<id>, whatever the file's ``run_dir`` says — a hand-edited one naming another
        session's folder showed (and `stop` stopped) that session's jobs (trial S). The steps only ever run in it
        (resume refuses another)."""
        return own_run_dir(self.id)

    @property
    def steps(self) -> dict[str, dict]:
        return self.data["steps"]

    @property
    def task(self) -> str:
        return self.data["task"]

    @property
    def demo(self) -> bool | str:
        """False, or the demo this session runs (True: the text demo, or the demo's name)."""
        return self.data.get("demo") or False

    @property
    def lang(self) -> str | None:
        """The language the session was started in (en, zh), None in files written before it was recorded."""
        return self.data.get("lang")

    @lang.setter
    def lang(self, value: str) -> None:
        self.data["lang"] = value

    @property
    def updated_at(self) -> str:
        value = self.data.get("updated_at")
        return value if isinstance(value, str) else ""  # sessions sort by it: a number there broke every listing

    def record(self, step: str) -> StepRecord:
        """The record of ``step`` (one of recipes.STEPS: every session holds each, skipped where its task does not
        run it)."""
        return StepRecord(self.data["steps"][step])

    def records(self) -> list[tuple[str, StepRecord]]:
        """(step, record) for every step, in the order they run."""
        return [(n, StepRecord(r)) for n, r in self.data["steps"].items()]

    def task_steps(self) -> list[str]:
        """The steps this session's task runs (numbered 1..n on screen): every one not skipped at creation or since."""
        return [n for n, r in self.records() if not r.skipped]

    def replace_record(self, step: str, data: dict) -> None:
        """Put ``data`` (a record: see new_record) in place of ``step``'s record."""
        self.data["steps"][step] = data

    def finish(self) -> None:
        self.data["finished_at"] = now()

    def taken_from(self, other: "Session") -> None:
        """Record that this session took finished steps over from ``other`` (run --from)."""
        self.data["from_session"] = str(other.path)

    def result(self, kind: type[H]) -> H:
        """The outputs of the step ``kind`` belongs to (recipes/handoff.py), typed; defaults where it has not run."""
        return kind.from_dict(self.record(kind.STEP).outputs)

    def is_finished(self) -> bool:
        return all(r.status in ("done", "skipped") for _, r in self.records())

    def current_step(self) -> str | None:
        return next((n for n, r in self.records() if r.status not in ("done", "skipped")), None)

    # -- writing -----------------------------------------------------------------------------------------------
    def save(self, updated_at: str | None = None) -> None:
        """Atomic write: temp file in the same folder, flush, fsync, os.replace, fsync the folder. ``updated_at``: the
        time to record instead of now (a change undone puts the session back as it was, its time too)."""
        self.data["updated_at"] = updated_at or now()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(self.data, f, indent=2, ensure_ascii=False)
                f.write("\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        dfd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)

    def lock(self) -> None:
        """Take the advisory lock (flock on ``<id>.json.lock``) for this process's lifetime.

        The kernel drops it when the process dies, kill -9 included, so a lock is never stale.

        Raises:
            SessionError: another live process holds it (its pid is named).
        """
        lock_path = self._lock_path()
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        # not through a link: one to a missing path had the lock created outside YICHUI_HOME (trial S)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = ""
            for _ in range(20):  # the holder writes its pid just after taking the lock
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
                if holder:
                    break
                time.sleep(0.05)
            os.close(fd)
            holder = holder or "?"
            raise SessionError("session.locked", path=str(self.path), pid=holder) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._lock_fd = fd
        for stale in self.path.parent.glob(f".{self.path.name}.*.tmp"):  # saves cut short by kill -9: only we write
            stale.unlink(missing_ok=True)

    def _lock_path(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")

    def holder(self) -> str | None:
        """The pid of another live yichui holding this session's lock (see :meth:`lock`), or None. A probe: a shared
        lock taken and dropped at once (it fails against the holder's exclusive one)."""
        lock_path = self._lock_path()
        if self._lock_fd is not None or not lock_path.exists():
            return None
        try:  # without blocking: a FIFO there blocked `status` for ever (trial S)
            fd = os.open(lock_path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:  # not ours to read (another user's, a dangling link): no holder `status` can name
            return None
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # no lock the wizard took (a FIFO, a device)
            os.close(fd)
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        except BlockingIOError:
            return os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
        finally:
            os.close(fd)

    def unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None


def find(ref: str | None, h: Path | None = None, unfinished: bool = False) -> Path:
    """Resolve a session reference: a path to a file, an id, a part of one id only (its last four characters, as
    `ab12` of 20261201-101500-ab12, or its beginning — as git takes a short hash), or (None) the most recently
    updated session.

    Raises:
        SessionError: nothing matches (``session.not_found``), or the part matches several ids
            (``session.ambiguous``, naming them).
    """
    h = h or home()
    if ref is not None and not ref.strip():  # "" (an unset $ID) is no session, not "the newest" (trial S)
        raise SessionError("session.not_found", path=repr(ref))  # named visibly: "No session '' …" (trial T)
    if ref:
        p = Path(ref).expanduser()
        if p.suffix == ".json" or p.exists() or p.is_symlink():  # a broken link or a loop: load says which
            return p
        cand = sessions_dir(h) / f"{ref}.json"
        if cand.exists():
            return cand
        if "/" not in ref and len(ref) >= 4:  # a short id: unique among the session files' names
            hits = sorted(f for f in sessions_dir(h).glob("*.json")
                          if f.stem.endswith(ref) or f.stem.startswith(ref))
            if len(hits) == 1:
                return hits[0]
            if hits:
                raise SessionError("session.ambiguous", path=ref,
                                   ids=[f.stem for f in hits[:5]] + (["…"] if len(hits) > 5 else []))
        raise SessionError("session.not_found", path=ref)
    candidates = [s for s in all_sessions(h) if not (unfinished and s.is_finished())]
    if not candidates:
        raise SessionError("session.none_unfinished" if unfinished else "session.none", home=str(h))
    return candidates[-1].path


def all_sessions(h: Path | None = None, unreadable: list | None = None) -> list[Session]:
    """Every readable session file under ``h``, least recently updated first. Unreadable ones are left out; their
    SessionErrors are appended to ``unreadable`` when given."""
    out = []
    for p in sorted(sessions_dir(h or home()).glob("*.json")):
        try:
            out.append(Session.load(p))
        except SessionError as e:
            if unreadable is not None:
                unreadable.append(e)
    return sorted(out, key=lambda s: s.updated_at)
