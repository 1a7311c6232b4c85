"""Where the environments of engines whose pins conflict with the main environment live (llm-compressor, the serving
engines, unsloth): one folder each under ``envs_dir``. A module of its own so that quantization, serving and training
can all find them without importing each other."""
from __future__ import annotations

import os
from pathlib import Path


def envs_dir(home: Path) -> Path:
    """``YICHUI_ENVS`` if set (tests share one), else ``YICHUI_HOME/envs``."""
    return Path(os.environ.get("YICHUI_ENVS") or home / "envs")
