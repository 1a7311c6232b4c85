#!/usr/bin/env python3
"""Why compiled decoder layers learn a little faster early on (bench/results/2026-12-02-train-levers-h200.md): the
same LoRA steps in fp32, in bf16 autocast eagerly, and in bf16 autocast with each decoder layer compiled (CPU, a
4-layer Qwen2 of random weights, 8 AdamW steps on one batch). Prints each run's losses; the one whose loss falls
like fp32's is the more exact.

    python bench/compile_numerics.py [LR]     # default 1e-5; about a minute of inductor compiling on a CPU
    python bench/compile_numerics.py --steps 3 --backend aot_eager   # a quick check: traced, no kernels generated
"""
from __future__ import annotations

import argparse
import copy


def run(base, ids, dtype, autocast: bool, compiled: bool, lr: float, steps: int = 8,
        backend: str = "inductor") -> list[float]:
    import peft
    import torch

    model = copy.deepcopy(base).to(dtype)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.config.use_cache = False
    torch.manual_seed(1)
    model = peft.get_peft_model(model, peft.LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0,
                                                       target_modules="all-linear"))
    model.enable_input_require_grads()
    for m in model.modules():
        if isinstance(m, peft.tuners.tuners_utils.BaseTunerLayer):
            m.cast_input_dtype_enabled = False  # as yichui's trainer runs them
        if compiled and type(m).__name__.endswith("DecoderLayer"):
            m.compile(backend=backend)
    model.train()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    losses = []
    for _ in range(steps):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(round(loss.item(), 4))
    return losses


def main() -> None:
    import torch
    import transformers

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lr", nargs="?", type=float, default=1e-5)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--backend", default="inductor", help="torch.compile's backend for the compiled run")
    a = ap.parse_args()
    torch.manual_seed(0)
    cfg = transformers.Qwen2Config(hidden_size=256, intermediate_size=512, num_hidden_layers=4, num_attention_heads=4,
                                   num_key_value_heads=2, vocab_size=2000)
    base = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    ids = torch.randint(0, 2000, (2, 128))
    for name, dtype, autocast, compiled in (("fp32 eager", torch.float32, False, False),
                                            ("bf16 autocast eager", torch.bfloat16, True, False),
                                            ("bf16 autocast compiled", torch.bfloat16, True, True)):
        losses = run(base, ids, dtype, autocast, compiled, a.lr, a.steps, a.backend)
        print(f"{name:24s} drop {losses[0] - losses[-1]:.4f}  {losses}")


if __name__ == "__main__":
    main()
