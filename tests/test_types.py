"""The type checker (mypy, configured in pyproject.toml) over the wizard, the step modules and their hand-offs: the
typed records of recipes/handoff.py and the TrainingSpec mean something only while it passes."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_passes_over_the_wizard_and_the_steps():
    r = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "Success" in r.stdout and "source files" in r.stdout  # it read the files, not nothing
