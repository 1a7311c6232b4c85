"""Experiment trackers beside TensorBoard (issue 48): Weights & Biases, MLflow and SwanLab, each opt-in at
choose_strategy and run through the Trainer's own ``report_to`` integrations (transformers/integrations/
integration_utils.py WandbCallback, MLflowCallback, SwanLabCallback), each writing to a store on this machine under
the run's ``train/trackers/``:

- ``wandb``: offline mode (``WANDB_MODE=offline``), the run in ``trackers/wandb/offline-run-*``; ``wandb sync`` uploads
  it later, with the user's own key (never asked for here);
- ``mlflow``: a local file store (``MLFLOW_TRACKING_URI=file:…/trackers/mlruns``; in maintenance mode since MLflow 3,
  still read by ``mlflow ui`` and moved to a database by ``mlflow migrate-filestore``);
- ``swanlab``: offline mode (``SWANLAB_MODE=offline``: its "local" mode needs the swanboard dashboard package), the
  run under ``trackers/swanlog``; ``swanlab sync`` uploads it.

Every store gets the same scalars as TensorBoard, the GPU (or CPU) memory ones too
(recipes/training/worker.py events_callback). A tracker that is not installed is refused at the question with the
line that installs it. Nothing here reaches the network: the online modes need a key yichui never handles.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

TRACKERS = ("wandb", "mlflow", "swanlab")
# what each is imported as (mlflow-skinny provides ``mlflow``), and the package that installs it
MODULES = {"wandb": "wandb", "mlflow": "mlflow", "swanlab": "swanlab"}
# pyproject.toml's "trackers" extra. swanlab 0.7.20: from 0.8 its get_run() raises where transformers 5.24's
# SwanLabCallback.setup expects None ("No active Run. Call swanlab.init() first.", seen with 0.8.5, 0.9.8, 0.10.3)
PACKAGES = {"wandb": "wandb==0.31.0", "mlflow": "mlflow-skinny==3.18.0", "swanlab": "swanlab==0.7.20"}
PROJECT = "yichui"  # the project / experiment every run is filed under


def installed(name: str) -> bool:
    """Whether tracker ``name``'s package can be imported by this Python (the trainer's, yichui's own)."""
    return importlib.util.find_spec(MODULES[name]) is not None


def install_command(name: str) -> str:
    """The line that installs tracker ``name`` into yichui's environment."""
    return f"{sys.executable} -m pip install '{PACKAGES[name]}'"


def store(name: str, trackers_dir: Path) -> Path:
    """Where tracker ``name`` keeps the runs of one training (``trackers_dir``: the run's ``train/trackers``)."""
    return trackers_dir / {"wandb": "wandb", "mlflow": "mlruns", "swanlab": "swanlog"}[name]


def environment(names: list[str] | tuple[str, ...], trackers_dir: Path, run_name: str) -> dict[str, str]:
    """The environment the Trainer's integrations read for ``names``: each writes to its :func:`store`, offline or
    local, under project ``yichui`` (the run's name is the Trainer's ``run_name``: the run id, recipes/training/
    worker.py trainer_config); a resumed trainer process continues the same W&B run (``WANDB_RUN_ID`` = ``run_name``,
    resume allowed)."""
    # nothing sent home, nothing written outside the run: the trackers' usage telemetry off, their caches, configs
    # and settings folders (~/.cache/wandb, ~/.config/wandb, ~/.config/mlflow, ~/.swanlab otherwise) in the store
    env: dict[str, str] = {"DO_NOT_TRACK": "true"}
    if "wandb" in names:
        env |= {f"WANDB_{k}_DIR": str(trackers_dir / "wandb-home" / k.lower()) for k in ("CACHE", "CONFIG", "DATA")}
        # WANDB_DIR: wandb makes its own "wandb/" folder inside it
        env |= {"WANDB_MODE": "offline", "WANDB_DIR": str(trackers_dir), "WANDB_PROJECT": PROJECT,
                "WANDB_RUN_ID": run_name.replace(":", "-"), "WANDB_RESUME": "allow",
                "WANDB_SILENT": "true", "WANDB_CONSOLE": "off", "WANDB_DISABLE_GIT": "true"}
    if "mlflow" in names:
        env |= {"MLFLOW_TRACKING_URI": store("mlflow", trackers_dir).resolve().as_uri(),
                "MLFLOW_EXPERIMENT_NAME": PROJECT, "MLFLOW_DISABLE_TELEMETRY": "true",
                # MLflow 3.18 keeps the file store in maintenance mode and refuses it unless asked: a database store
                # would need SQLAlchemy and Alembic beside mlflow-skinny (`mlflow migrate-filestore` moves it later)
                "MLFLOW_ALLOW_FILE_STORE": "true"}
    if "swanlab" in names:
        env |= {"SWANLAB_MODE": "offline", "SWANLAB_LOG_DIR": str(store("swanlab", trackers_dir)),
                "SWANLAB_SAVE_DIR": str(trackers_dir / "swanlab-home"),
                "SWANLAB_PROJECT": PROJECT}
    return env


def view_command(name: str, trackers_dir: Path) -> str:
    """How the user looks at (or uploads) tracker ``name``'s store: the tracker's own command from yichui's
    environment (its bin/, which need not be on PATH)."""
    where = store(name, trackers_dir)
    bin_ = Path(sys.executable).parent
    return {"wandb": f"{bin_ / 'wandb'} sync {where}/offline-run-*",
            "mlflow": f"MLFLOW_ALLOW_FILE_STORE=true {bin_ / 'mlflow'} ui --backend-store-uri {where.resolve().as_uri()}",
            "swanlab": f"{bin_ / 'swanlab'} sync {where}/run-*"}[name]


def tensorboard_scalars(path: str | Path) -> dict[str, list[tuple[int, float, float]]]:
    """Every scalar of one TensorBoard event file the trainer wrote: tag → [(step, value, wall time in s)], in order.
    Read as TensorBoard reads it — TFRecords (8-byte length, its CRC, the Event proto, its CRC) of tensorboardX's own
    Event messages — since the viewer's package (and its reader) is optional here."""
    import struct

    from tensorboardX.proto import event_pb2

    data, at = Path(path).read_bytes(), 0
    out: dict[str, list[tuple[int, float, float]]] = {}
    while at + 12 <= len(data):
        (n,) = struct.unpack("<Q", data[at:at + 8])
        event = event_pb2.Event.FromString(data[at + 12:at + 12 + n])
        at += 12 + n + 4
        for v in event.summary.value:
            out.setdefault(v.tag, []).append((event.step, v.simple_value, event.wall_time))
    return out
