"""Training backends other than yichui's own trainer: where their environment lives and whether it is installed.

unsloth (issue 21) pins trl ≤ 1.15 and datasets < 5, older than yichui's main environment, so it lives in an
environment of its own beside the serving engines and the quantizer (``YICHUI_ENVS``, else ``YICHUI_HOME/envs``):
``<envs>/unsloth-<version>/bin/python``, a venv of its own (unsloth's pins decide its transformers and peft). The trainer
(recipes/training/worker.py) runs in that interpreter with the project on its path; the train step, events,
checkpoints, resume and OOM recovery are the same as with yichui's trainer.
"""
from __future__ import annotations

import functools
import subprocess
from dataclasses import dataclass
from pathlib import Path

UNSLOTH_VERSION = "2026.10.9"  # measured on the H200 (bench/results/2026-12-02-train-jobs-h200.md)
# what unsloth needs beside yichui's stack (bench/carry/unsloth-2026.10.9.txt carries the same to the GPU machine)
# (tensorboard: the trainer's scalars)
UNSLOTH_REQUIREMENTS = (f"unsloth=={UNSLOTH_VERSION}", f"unsloth_zoo=={UNSLOTH_VERSION}", "trl==1.15.0",
                        "datasets>=3,<5", "tensorboard")


@dataclass(frozen=True)
class Backend:
    name: str
    python: str    # the interpreter of its environment
    version: str


def unsloth_env(home: Path) -> Path:
    """``<envs>/unsloth-<version>``: beside the quantizer's and the serving engines' (recipes.envs)."""
    from recipes.envs import envs_dir

    return envs_dir(Path(home)) / f"unsloth-{UNSLOTH_VERSION}"


@functools.lru_cache(maxsize=None)
def _installed_version(python: str) -> str | None:
    """unsloth's version as ``python`` sees it, or None (no such interpreter, not installed, or it hangs)."""
    from recipes.jobs import foreign_env

    try:
        out = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('unsloth'))"],
                             capture_output=True, text=True, timeout=60, env=foreign_env())
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def find_unsloth(home: Path) -> Backend | None:
    """unsloth's environment under ``home`` when it is installed there, else None. Only the recorded version's
    folder counts: another version was not measured."""
    python = unsloth_env(home) / "bin" / "python"
    if not python.exists():
        return None
    version = _installed_version(str(python))
    return Backend("unsloth", str(python), version) if version else None


def install_command(home: Path) -> str:
    """The commands that create unsloth's environment: a venv, then unsloth's pins (pip brings the CUDA torch and
    the transformers, peft and accelerate versions unsloth accepts)."""
    import shlex
    import sys

    env = shlex.quote(str(unsloth_env(home)))
    reqs = " ".join(shlex.quote(r) for r in UNSLOTH_REQUIREMENTS)
    return f"{shlex.quote(sys.executable)} -m venv {env} && {env}/bin/pip install {reqs}"


def process_env() -> dict:
    """The trainer's environment in a backend's own interpreter: without the main environment's PYTHONPATH, with the
    project on the path (the worker runs as ``-m recipes.training.worker``), unsloth's usage statistics off."""
    from recipes.jobs import foreign_env

    root = Path(__file__).resolve().parent.parent.parent
    return foreign_env() | {"PYTHONPATH": str(root), "UNSLOTH_DISABLE_STATISTICS": "1"}
