#!/usr/bin/env python3
"""`yichui estimate --loss full` against the loop it stands for: the plain transformers + PEFT loop
(../shared/baselines/plain_hf_train.py), measured on the H200 (bench/results/2026-12-02-memory-plain-h200.jsonl).

    python bench/plain_memory.py fit      # fit FULL_LOGITS and PLAIN_FRAG_GIB on the FIT rows, print them
    python bench/plain_memory.py report [--md PATH]   # every row with recipes/memory/model.py's current constants

The loop runs bf16 weights (a full fine-tune's AdamW states bf16 too: --master-weights bf16), no autocast,
transformers' ForCausalLMLoss over materialized logits, and torch's default allocator (no expandable segments).
FULL_LOGITS is fitted on the allocated peaks, PLAIN_FRAG_GIB on reserved − allocated, both on the FIT rows only; the other rows are held out (other shapes, or other switches on a fitted shape).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from recipes.memory import model as memory  # noqa: E402
from recipes.training.spec import TrainingSpec  # noqa: E402

CONFIGS = Path(__file__).resolve().parent / "configs"
ROWS = Path(__file__).resolve().parent / "results" / "2026-12-02-memory-plain-h200.jsonl"
# (shape, method, checkpointing, micro-batch, sequence length) of the rows the constants are fitted on
FIT = {("qwen2.5-0.5b", "lora", False, 2, 2048), ("qwen2.5-1.5b", "full", False, 1, 1024),
       ("qwen2.5-1.5b", "lora", True, 1, 4096), ("qwen2.5-0.5b", "full", True, 1, 2048)}


def key(r: dict) -> tuple:
    return r["shape"], r["method"], r["ckpt"], r["batch"], r["seq"]


def spec(r: dict) -> TrainingSpec:
    return TrainingSpec(method=r["method"], lora_rank=r["rank"], lora_alpha=2 * r["rank"], lora_dropout=0.0,
                        activation_checkpointing=r["ckpt"], micro_batch=r["batch"], seq_len=r["seq"],
                        master_weights="bf16", loss="full")


def predict(r: dict) -> dict:
    shape = memory.shape_from_config(json.loads((CONFIGS / r["shape"] / "config.json").read_text()))
    e = memory.estimate(shape, spec(r))
    c = e["components"]
    return {"peak_gib": e["peak_gib"], "alloc_gib": sum(c.values()) - c["allocator"] - c["cuda_context"]}


def load() -> list[dict]:
    return [json.loads(x) for x in ROWS.read_text().splitlines() if x.strip()]


def fit() -> None:
    rows = [r for r in load() if key(r) in FIT]
    best = None
    for fl in np.arange(8.0, 20.01, 0.25):
        memory.FULL_LOGITS = float(fl)
        err = sum(((predict(r)["alloc_gib"] - r["peak_alloc_gib"]) / r["peak_alloc_gib"]) ** 2 for r in rows)
        if best is None or err < best[0]:
            best = (err, float(fl))
    memory.FULL_LOGITS = best[1]
    # the allocator's slack as a constant: a fraction of the allocated peak (least squares on these rows: 0.066 ×
    # allocated + 1.06 GiB) extrapolated to 3.8 GiB on the 57 GiB 7B run, which had 1.44
    slack = float(np.mean([r["peak_reserved_gib"] - r["peak_alloc_gib"] for r in rows]))
    print(f"FULL_LOGITS = {best[1]}\nPLAIN_FRAG_GIB = {slack:.3f}")


def report(md: str | None) -> None:
    lines = ["| run | measured GiB | predicted GiB | error | fitted on |", "|---|---:|---:|---:|---|"]
    held = []
    for r in load():
        p = predict(r)["peak_gib"]
        e = (p - r["device_used_gib"]) / r["device_used_gib"]
        fitted = key(r) in FIT
        if not fitted:
            held.append(e)
        name = (f"{r['shape']} {r['method']}{' r' + str(r['rank']) if r['method'] != 'full' else ''} "
                f"ckpt {'on' if r['ckpt'] else 'off'} mb {r['batch']} × {r['seq']}")
        lines.append(f"| {name} | {r['device_used_gib']:.2f} | {p:.2f} | {e:+.1%} | {'yes' if fitted else 'held out'} |")
    mae = sum(map(abs, held)) / len(held)
    lines += ["", f"Held out: {len(held)} runs, mean |error| {mae:.1%}, worst {max(held, key=abs):+.1%}, "
                  f"most under {min(held):+.1%}."]
    text = "\n".join(lines)
    print(text)
    if md:
        Path(md).write_text(text + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("fit")
    r = sub.add_parser("report")
    r.add_argument("--md", default=None)
    a = ap.parse_args()
    fit() if a.cmd == "fit" else report(a.md)


if __name__ == "__main__":
    main()
