#!/usr/bin/env python3
"""Kernel launches of one decoder layer and of one LoRA adapter, per family, counted on the CPU (issue 44: the speed
model's eager host cost).

    python bench/layer_launches.py [--families llama,gemma3_text] [--out F.json]

On the small shapes the eager trainer is host-bound: the GPU waits on Python and kernel launches (torch.profiler on an
H100, bench/results/2026-12-06-gemma-moe-profile-h100.md: Gemma-3-1B's device kernels 0.27 s of 2.54 s wall). How
many launches a decoder layer makes differs by family — Gemma-3's six RMSNorms with fp32 upcasts against Llama's
two. That result file says what a speed model pricing these counts instead of "a layer" gave (tried, not adopted).

Counted with a TorchDispatchMode over a random model built from each family's config.json at small widths (launches
do not depend on widths): a 2-layer model's forward and backward (frozen weights, the input requiring a gradient, as
under LoRA) less a 1-layer model's; an adapter's: the same with peft's LoRA on every linear layer (rank 4) less without,
÷ the layer's 7 adapted modules, at dropout 0 and > 0. Ops that launch no kernel (views, detach, aliases) are left out.
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CONFIGS = Path(__file__).resolve().parent / "configs"
# one config per model type the speed model prices (bench/configs: the speed grid's shapes)
FAMILY_CONFIGS = {"qwen2": "qwen2.5-0.5b", "llama": "llama3.2-1b", "mistral": "mistral-7b", "phi3": "phi3-mini",
                  "qwen3": "qwen3-8b", "glm": "glm4-9b", "gemma3_text": "gemma3-1b"}
# no kernel: aliases of their input (``OpOverload.is_view`` misses these two)
_NO_KERNEL = {"lift_fresh", "detach"}


def small_config(path: Path, layers: int):
    """The family's config at small widths and ``layers`` decoder layers (layer types recomputed for that count)."""
    from transformers import AutoConfig

    c = json.loads(path.read_text())
    for k in ("layer_types", "bos_token_id", "eos_token_id", "architectures", "transformers_version", "auto_map",
              "torch_dtype", "dtype"):
        c.pop(k, None)
    c |= {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
          "head_dim": 16, "num_hidden_layers": layers, "vocab_size": 256, "max_window_layers": layers,
          "pad_token_id": 0}
    if c.get("sliding_window"):
        c["sliding_window"] = 8
    return AutoConfig.for_model(c.pop("model_type"), **c)


def launches(path: Path, layers: int, lora_dropout: float | None = None, full: bool = False) -> tuple[int, int]:
    """(forward, backward) kernel-launching aten ops of the model of :func:`small_config` on 32 tokens; ``full``:
    every weight trains (a full fine-tune's backward adds the weight gradients)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from transformers import AutoModelForCausalLM

    class Count(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.n: collections.Counter = collections.Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.overloadpacket.__name__
            if not func.is_view and name not in _NO_KERNEL:
                self.n[name] += 1
            return func(*args, **(kwargs or {}))

    torch.manual_seed(0)
    m = AutoModelForCausalLM.from_config(small_config(path, layers), attn_implementation="sdpa", dtype=torch.bfloat16)
    m.requires_grad_(full)
    if lora_dropout is not None:
        from peft import LoraConfig, get_peft_model

        m = get_peft_model(m, LoraConfig(r=4, target_modules="all-linear", lora_dropout=lora_dropout))
    m.train()
    ids = torch.randint(0, 256, (1, 32))
    emb = m.get_input_embeddings()(ids).detach().requires_grad_(True)
    with Count() as f:
        loss = m(inputs_embeds=emb, labels=ids).loss
    with Count() as b:
        loss.backward()
    return sum(f.n.values()), sum(b.n.values())


def per_layer(path: Path, lora_dropout: float | None = None, full: bool = False) -> tuple[int, int]:
    one, two = launches(path, 1, lora_dropout, full), launches(path, 2, lora_dropout, full)
    return two[0] - one[0], two[1] - one[1]


def table(configs: Path = CONFIGS, families: list[str] | None = None
          ) -> tuple[dict[str, tuple[int, int, int]], dict[bool, tuple[float, float]]]:
    """({model type: (forward, backward, a full fine-tune's backward) launches of a decoder layer}, {dropout > 0:
    (forward, backward) of one adapter, counted on Qwen2's layer})."""
    layers = {t: per_layer(configs / d / "config.json") + per_layer(configs / d / "config.json", full=True)[1:]
              for t, d in FAMILY_CONFIGS.items() if t == "qwen2" or not families or t in families}
    ref = configs / FAMILY_CONFIGS["qwen2"] / "config.json"
    adapters = {}
    for dropout in (0.0, 0.05):
        f, b = per_layer(ref, dropout)
        adapters[dropout > 0] = ((f - layers["qwen2"][0]) / 7, (b - layers["qwen2"][1]) / 7)
    return layers, adapters


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configs", default=str(CONFIGS))
    p.add_argument("--families", help="these model types only (comma-separated; Qwen2's is always counted)")
    p.add_argument("--out", help="the table as JSON")
    a = p.parse_args()
    layers, adapters = table(Path(a.configs), a.families.split(",") if a.families else None)
    out = {"layer": layers, "adapter": {"dropout": adapters[True], "no_dropout": adapters[False]}}
    print(json.dumps(out))
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
