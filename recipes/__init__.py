"""yichui's steps, one module each, in the order the wizard runs them, plus the domain code they stand on.

Importing this package is cheap: step modules import torch / transformers inside ``run`` only.
"""
from __future__ import annotations

import importlib
import logging
import warnings

# bitsandbytes (0.50) on a CPU with AVX512-BF16 — the GPU hosts' Xeons too — fetches a CPU kernel through `kernels`
# at import and, when it cannot, logs "Failed to load CPU gemm_4bit_forward … pip install kernels", then falls back
# by itself (bitsandbytes/backends/cpu/ops.py): nothing for the user to do, so kept out of the trainer's log
logging.getLogger("bitsandbytes.backends.cpu.ops").addFilter(lambda r: "gemm_4bit_forward" not in r.getMessage())
# transformers 5 deprecates the property peft and trl read on every model they wrap: the trainer's log opened with
# the FutureWarning (trial R), about code that is not the user's
warnings.filterwarnings("ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning)

__version__ = "0.1.0"  # pyproject.toml's; the session file and the model cards record it

# the strategy is chosen (and smoke-tested on a 2-layer random copy) before the weights are downloaded
STEPS = ("select_model", "evaluate_memory", "choose_strategy", "download", "train", "export", "deploy", "evaluate",
         "chat")

# task → the steps it runs, in order; a session holds every step, those outside its task recorded as skipped
TASKS = {
    "finetune": ("select_model", "evaluate_memory", "choose_strategy", "download", "train", "export", "deploy",
                 "evaluate"),
    "deploy": ("select_model", "evaluate_memory", "download", "deploy"),
    "quantize": ("select_model", "download", "export"),
    "evaluate": ("select_model", "download", "evaluate"),
    "chat": ("select_model", "download", "deploy", "chat"),
}
# what a task started from another session (`--from`) takes over when that session finished it: the model and its
# download always; training and export when the new task does not make them itself
REUSABLE = ("select_model", "evaluate_memory", "choose_strategy", "download", "train", "export")
INPUTS = ("select_model", "evaluate_memory", "download")


def load(name: str):
    """Return the step module ``recipes.<name>`` (it satisfies recipes.base.Step)."""
    if name not in STEPS:
        raise KeyError(name)
    return importlib.import_module(f"recipes.{name}")
