"""yichui's steps, one module each, in the order the wizard runs them, plus the domain code they stand on.

Importing this package is cheap: step modules import torch / transformers inside ``run`` only.
"""
from __future__ import annotations

import importlib

STEPS = ("select_model", "evaluate_memory", "download", "choose_strategy", "train", "export", "deploy")

# task → the steps it runs, in order (issue 8 adds deploy / quantize / evaluate / chat tasks)
TASKS = {"finetune": STEPS}


def load(name: str):
    """Return the step module ``recipes.<name>`` (it satisfies recipes.base.Step)."""
    if name not in STEPS:
        raise KeyError(name)
    return importlib.import_module(f"recipes.{name}")
