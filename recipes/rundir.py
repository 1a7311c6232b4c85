"""The run directory's layout (wizard/README.md section 2): every path under ``YICHUI_HOME/runs/<session id>/`` is
named here and nowhere else, so a file moves in one place and the contract page has one counterpart in code
(tests/test_architecture.py refuses the file names as string literals in other modules).

``RunDir(run_dir)`` is cheap (paths only; nothing is created or read): a step builds it from ``ctx.run_dir``, the
command line from ``Session.run_dir``. A job's pid file and log come from :mod:`recipes.jobs`' own naming
(``<dir>/<job>.pid.json``, ``<dir>/<job>.log``), with the job names below.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from recipes import jobs

# the detached jobs' names (recipes/jobs.py spawn): each one's pid file and log are <dir>/<name>.pid.json / .log
TRAINER = "trainer"          # train/ and, for a smoke run of a yichui before 2026-12-02, preflight/
PREFLIGHT = "preflight"      # the smoke run, in preflight/
BACKUP = "backup"            # the adapter backup beside the trainer, in train/
SERVER = "server"            # the deployed server, in serve/
# the line a smoke run's early-started trainer writes to its log once its libraries are loaded
# (recipes/training/worker.py wait_for_spec); `yichui status` reads it
LIBRARIES_LOADED = "yichui: trainer libraries loaded"
BASE_SERVER = "base-server"  # the evaluation's second server (the base model), in evaluate/


@dataclass(frozen=True)
class TrainDir:
    """``train/`` — and ``preflight/``, laid out the same (the smoke run is a 2-step training of a 2-layer copy)."""

    root: Path

    def job(self, name: str = TRAINER) -> Path:
        return jobs.pid_path(self.root, name)

    def log(self, name: str = TRAINER) -> Path:
        return jobs.log_path(self.root, name)

    @property
    def spec(self) -> Path:  # what the trainer was asked to do (recipes/training/spec.py TrainerJob)
        return self.root / "spec.json"

    @property
    def events(self) -> Path:  # JSON lines, format v1 (wizard/README.md section 5)
        return self.root / "events.jsonl"

    @property
    def result(self) -> Path:  # written last, atomically: its presence means training finished
        return self.root / "result.json"

    @property
    def stale_result(self) -> Path:  # a result.json whose adapter was gone, set aside before training again
        return self.root / "result.stale.json"

    @property
    def samples(self) -> Path:  # the sample question's answer before and after training
        return self.root / "samples.json"

    @property
    def checkpoints(self) -> Path:  # checkpoint-N/ folders, complete once trainer_state.json is there
        return self.root / "checkpoints"

    @property
    def adapter(self) -> Path:  # the final adapter (LoRA/QLoRA/DoRA) or model (full), with the tokenizer
        return self.root / "adapter"

    @property
    def model(self) -> Path:  # preflight/ only: the 2-layer copy with random weights
        return self.root / "model"

    @property
    def backup_choice(self) -> Path:  # the adapter backup chosen (no token)
        return self.root / "backup.json"

    @property
    def backup_events(self) -> Path:  # the backup job's events
        return self.root / "backup.jsonl"

    @property
    def launch(self) -> Path:  # several nodes: node-R.sh per node
        return self.root / "launch"

    @property
    def hostfile(self) -> Path:  # several nodes: "<host> slots=<processes>" per node (DeepSpeed's format)
        return self.root / "hostfile"

    @property
    def tensorboard(self) -> Path:
        return self.root / "tensorboard"

    @property
    def trackers(self) -> Path:  # the experiment trackers' local stores (recipes/training/trackers.py)
        return self.root / "trackers"

    @property
    def loss_png(self) -> Path:
        return self.root / "loss.png"


@dataclass(frozen=True)
class ServeDir:
    """``serve/``: the deployed server's job, its log, its API key and the links an engine serves by path."""

    root: Path

    @property
    def job(self) -> Path:
        return jobs.pid_path(self.root, SERVER)

    @property
    def log(self) -> Path:
        return jobs.log_path(self.root, SERVER)

    @property
    def api_key(self) -> Path:  # mode 0600, only when the server binds beyond loopback; the session keeps its path
        return self.root / "api_key"


@dataclass(frozen=True)
class EvaluateDir:
    """``evaluate/``: the report and the base model's second server."""

    root: Path

    @property
    def base_server_job(self) -> Path:
        return jobs.pid_path(self.root, BASE_SERVER)

    @property
    def report_md(self) -> Path:
        return self.root / "report.md"

    @property
    def report_png(self) -> Path:
        return self.root / "report.png"


@dataclass(frozen=True)
class RunDir:
    """``YICHUI_HOME/runs/<session id>/``."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def wizard_log(self) -> Path:  # the wizard's log (tracebacks of unexpected errors)
        return self.logs / "wizard.log"

    @property
    def preflight(self) -> TrainDir:
        return TrainDir(self.root / "preflight")

    @property
    def train(self) -> TrainDir:
        return TrainDir(self.root / "train")

    @property
    def export(self) -> Path:  # merged/, <format>/, .work-<format>/
        return self.root / "export"

    @property
    def serve(self) -> ServeDir:
        return ServeDir(self.root / "serve")

    @property
    def evaluate(self) -> EvaluateDir:
        return EvaluateDir(self.root / "evaluate")


def runs(home: Path) -> Path:
    """``YICHUI_HOME/runs/``: one run directory per session, named by its id."""
    return Path(home) / "runs"


def servers(home: Path) -> list[tuple[str, jobs.Job]]:
    """The model server of every session under ``home`` that runs now: (session id, job), oldest start first."""
    found = [(r.name, j) for r in runs(home).glob("*")
             if (j := jobs.read(RunDir(r).serve.job)) is not None and j.alive()]
    return sorted(found, key=lambda x: x[1].started_at)
