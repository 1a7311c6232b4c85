"""The embedded default that `yichui demo` runs: the tiny model on a local hub, and the answers to every question."""
from __future__ import annotations

import json
from pathlib import Path

from recipes.data import datasets
from recipes.demo import tiny_model as tiny


def hub_root(home: Path) -> Path:
    return home / "cache" / "hub"


def model_ready(home: Path) -> bool:
    marker = hub_root(home) / tiny.REPO_ID / "yichui_build.json"
    try:
        return json.loads(marker.read_text()).get("build_version") == tiny.BUILD_VERSION
    except (OSError, ValueError):
        return False


PRETRAIN_STEPS = 300


def ensure_model(home: Path, on_step=None) -> None:
    """Build the tiny model into the demo hub root unless a build of this version is there; ``on_step(step, loss)``
    follows its pre-training (:data:`PRETRAIN_STEPS` steps)."""
    dest = hub_root(home) / tiny.REPO_ID
    if model_ready(home):
        return
    if dest.exists():
        import shutil

        shutil.rmtree(dest)
    tiny.build(dest, PRETRAIN_STEPS, on_step=on_step)


def start_hub(home: Path):
    from recipes.hub.server import HubServer

    return HubServer(hub_root(home)).start()


def answers(hub_url: str) -> dict:
    """Every answer of the demo, as the defaults layer (``--set`` and resumed answers win). Tuned so 2 CPU cores
    finish in minutes:
    60 LoRA steps on micro-batches of 8 at a high learning rate, which a 0.7 M-parameter model needs to move."""
    return {
        "select_model": {"source": "hf", "endpoint": hub_url, "model": "yichui-tiny", "revision": "main"},
        "evaluate_memory": {},  # the question's defaults: the GPUs found here, else an A10 as the target
        "download": {},
        "choose_strategy": {"method": "lora", "lora_rank": 16, "lora_alpha": 32, "lora_dropout": 0.0,
                            "lora_targets": "all-linear", "activation_checkpointing": False, "dataset": "bundled",
                            "seq_len": 256, "batch_size": 8, "micro_batch": 8, "grad_accum": 1, "learning_rate": 3e-3,
                            "max_steps": 150, "save_steps": 50, "save_total_limit": 2, "val_ratio": 0.05,
                            "sample_question": "What is LoRA?"},
        "train": {"device": "auto"},
        "export": {"dtype": "auto", "serve_with": "transformers", "formats": ["bnb-8bit"], "quality_samples": 8},
        "deploy": {"backend": "transformers", "model": "merged", "host": "127.0.0.1"},
        # held-out: the training split (fine-tune) or 16 bundled conversations (the evaluate task)
        "evaluate": {"heldout": "training", "heldout_path": f"{datasets.bundled_dataset_path()}#16",
                     "heldout_samples": 16, "max_new_tokens": 32, "benchmarks": []},
        "chat": {"question": "What is LoRA?"},
    }
