#!/usr/bin/env python3
"""Two-GPU sharding and padding-free packing, through yichui's own launcher path (torch.distributed.run +
recipes/training/worker.py), random weights of a Qwen2.5-1.5B shape.

    python bench/distributed.py measure --out $OUT/dist.jsonl [--work DIR] [--only NAMES]
    python bench/distributed.py report RESULTS.jsonl [MORE.jsonl …] [--md PATH]

Sharding: a full fine-tune (AdamW, bf16, checkpointing on, seq 2048) on one GPU (micro-batch 1 × accumulation 2)
and on two GPUs (micro-batch 1 each) with plain DDP, DeepSpeed ZeRO-2, ZeRO-3 and FSDP2 — the same effective batch
of 2 and the same data, so the losses should match the one-GPU run; rank 0's peak memory (nvidia-smi view) is
reported beside the memory model's prediction.
Packing: LoRA r8 on one GPU, micro-batch 4, on conversations whose lengths vary 20× (100 … 2,000 tokens): trl
padding each batch to its longest row against padding-free packing; the figure is real (non-pad) tokens per second
(trl's ``num_tokens`` counts the attention mask).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

SHAPE, SEQ, STEPS = "qwen2.5-1.5b", 2048, 10
# name → (processes, distribution, micro-batch, accumulation, method, packing, dataset); "-bf16": pure-bf16 weights
# instead of fp32 masters (the full fine-tune's default since the second run)
RUNS = {
    "1gpu": (1, "ddp", 1, 2, "full", False, "long"),
    "1gpu-bf16": (1, "ddp", 1, 2, "full", False, "long"),
    "ddp": (2, "ddp", 1, 1, "full", False, "long"),
    "zero2": (2, "zero2", 1, 1, "full", False, "long"),
    "zero3": (2, "zero3", 1, 1, "full", False, "long"),
    "fsdp2": (2, "fsdp2", 1, 1, "full", False, "long"),
    "padded": (1, "ddp", 4, 1, "lora", False, "varied"),
    "packed": (1, "ddp", 4, 1, "lora", True, "varied"),
}


def varied_dataset(path: Path, tokenizer_dir: Path, n: int = 600) -> None:
    """Conversations whose assistant turns are 100 … 2,000 tokens, log-uniform (a 20× spread)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    rng = random.Random(7)
    words = "model memory token layer batch weight gradient optimizer adapter rank attention logits".split()
    per_word = len(tok(" ".join(words * 20))["input_ids"]) / (len(words) * 20)
    with open(path, "w") as f:
        for i in range(n):
            tokens = int(100 * 20 ** rng.random())
            text = " ".join(rng.choice(words) for _ in range(int(tokens / per_word)))
            f.write(json.dumps({"messages": [{"role": "user", "content": f"Write text {i}."},
                                             {"role": "assistant", "content": text}]}) + "\n")


def run(name: str, model_dir: Path, data: dict, work: Path, device: str = "cuda") -> dict:
    from memory_accuracy import events, median_tokens_per_s

    from recipes.training.runner import trainer_env, worker_argv

    procs, dist, mb, ga, method, packing, ds = RUNS[name]
    tdir = work / "runs" / name
    subprocess.run(["rm", "-rf", str(tdir)])
    tdir.mkdir(parents=True)
    spec = {"model_dir": str(model_dir), "init": "random", "method": method, "lora_rank": 8, "lora_alpha": 16,
            "lora_dropout": 0.0, "lora_targets": "all-linear", "activation_checkpointing": method == "full",
            "dataset_path": str(data[ds]), "seq_len": SEQ, "micro_batch": mb, "grad_accum": ga,
            "learning_rate": 1e-5 if method == "full" else 1e-4, "max_steps": STEPS, "save_steps": 0,
            "save_total_limit": 1, "save_final": False, "sample_question": None, "device": device,
            "attn_implementation": "sdpa", "optim": "adamw", "processes": procs, "distribution": dist,
            "offload": "none", "packing": packing, "seed": 42,
            "master_weights": "bf16" if name.endswith("-bf16") else "fp32"}
    (tdir / "spec.json").write_text(json.dumps(spec))
    argv = worker_argv(spec, tdir / "spec.json")  # the train step's own launcher
    env = trainer_env() | {"CUDA_VISIBLE_DEVICES": "0,1" if procs > 1 else "0", "TOKENIZERS_PARALLELISM": "false"}
    t0 = time.time()
    with open(tdir / "trainer.log", "w") as log:
        rc = subprocess.run(argv, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, timeout=420).returncode
    evs = events(tdir)
    start = next((e for e in evs if e["event"] == "start"), {})
    row = {"name": name, "processes": procs, "distribution": dist, "micro_batch": mb, "grad_accum": ga,
           "method": method, "packing": packing, "dataset": ds, "shape": SHAPE, "seq": SEQ, "rc": rc,
           "master_weights": spec["master_weights"],
           "wall_s": round(time.time() - t0, 1), "sharding": start.get("sharding"),
           "losses": [e["loss"] for e in evs if e["event"] == "step"], "tokens_per_s": median_tokens_per_s(evs)}
    result = tdir / "result.json"
    if result.exists():
        r = json.loads(result.read_text())
        row |= (r.get("gpu_memory") or {}) | {"runtime_s": r["runtime_s"]}
    else:
        row["error"] = (tdir / "trainer.log").read_text()[-1500:]
    return row


def cmd_measure(a) -> None:
    from memory_accuracy import environment, prepare_shape, synthetic_dataset

    work = Path(a.work or tempfile.mkdtemp(prefix="yichui-distbench-"))
    env = environment()
    print(json.dumps(env), flush=True)
    global SEQ, STEPS
    SEQ, STEPS = a.seq, a.steps
    model_dir = prepare_shape(SHAPE, work, weights=False)
    if a.config:  # a dry run of the script on another config (e.g. the tiny model on CPU)
        import shutil
        shutil.copy(a.config, model_dir / "config.json")
    data = {"long": work / "long.jsonl", "varied": work / "varied.jsonl"}
    synthetic_dataset(data["long"], model_dir, SEQ, 2 * STEPS * 2)
    varied_dataset(data["varied"], model_dir)
    for name in (a.only.split(",") if a.only else RUNS):
        row = run(name, model_dir, data, work, a.device) | {"env": env}
        with open(a.out, "a") as f:
            f.write(json.dumps(row) + "\n")
        print(f"{name:7s} rc={row['rc']} {row.get('sharding')} {row.get('tokens_per_s')} tok/s "
              f"{row.get('device_peak_gib')} GiB losses {row['losses'][:3]}…{row['losses'][-2:]} "
              f"{row['wall_s']} s {row.get('error', '')[-300:]}", flush=True)


def predicted_gib(row: dict) -> float:
    """The memory model's peak per GPU for this row (rank 0)."""
    from bench_fit import shape

    from recipes.memory import model as memory
    from recipes.training.spec import TrainingSpec

    dist = row["distribution"]
    t = TrainingSpec(method=row["method"], lora_rank=8, lora_dropout=0.0,
                     activation_checkpointing=row["method"] == "full", micro_batch=row["micro_batch"],
                     grad_accum=row["grad_accum"], seq_len=row["seq"], processes=row["processes"],
                     distribution=dist, master_weights=row["master_weights"])
    return memory.estimate(shape(row["shape"]), t)["peak_gib"]


def load(paths: list[str]) -> list[dict]:
    """Rows of several measurement files, a later file's run replacing an earlier one of the same name. Rows from
    before the fp32-master default trained one GPU and DDP with pure-bf16 weights: they become "-bf16" runs."""
    by: dict = {}
    for p in paths:
        for x in Path(p).read_text().splitlines():
            if not x.strip():
                continue
            r = json.loads(x)
            if "master_weights" not in r:
                r["master_weights"] = "bf16"
                if r["method"] == "full" and r["distribution"] == "ddp" and not r["name"].endswith("-bf16"):
                    r["name"] += "-bf16"
            by[r["name"]] = r
    return list(by.values())


def cmd_report(a) -> None:
    rows = load(a.results)
    by = {r["name"]: r for r in rows}
    bases = [by.get(n, {}).get("losses") or [] for n in ("1gpu", "1gpu-bf16")]
    lines = ["| run | masters | sharding (as run) | GiB per GPU (measured) | predicted | error | tokens/s | "
             "max loss diff vs 1 GPU fp32 masters | … vs 1 GPU pure bf16 |", "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if r["dataset"] != "long":
            continue
        if not r.get("device_peak_gib"):
            lines.append(f"| {r['name']} | | failed (rc {r['rc']}) | | | | | | |")
            continue
        pred = predicted_gib(r)
        diffs = " | ".join(f"{max((abs(x - y) for x, y in zip(r['losses'], b)), default=float('nan')):.4f}"
                           for b in bases)
        masters = "fp32" if r["master_weights"] == "fp32" or r["distribution"] != "ddp" else "bf16"
        lines.append(f"| {r['name']} | {masters} | {r['sharding']} | {r['device_peak_gib']:.2f} | {pred:.2f} | "
                     f"{(pred - r['device_peak_gib']) / r['device_peak_gib'] * 100:+.1f} % | {r['tokens_per_s']} | "
                     f"{diffs} |")
    if "padded" in by and "packed" in by and by["padded"].get("tokens_per_s") and by["packed"].get("tokens_per_s"):
        p, q = by["padded"], by["packed"]
        lines += ["", "| data with lengths 100 … 2,000 tokens, LoRA r8, micro-batch 4 | real tokens/s | GiB |",
                  "|---|---:|---:|",
                  f"| padded to the longest row | {p['tokens_per_s']:.0f} | {p.get('device_peak_gib', 0):.1f} |",
                  f"| padding-free packing | {q['tokens_per_s']:.0f} | {q.get('device_peak_gib', 0):.1f} |",
                  f"| ratio | {q['tokens_per_s'] / p['tokens_per_s']:.2f}× | |"]
    from memory_accuracy import write_report

    write_report("\n".join(lines), a.md)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--out", required=True)
    m.add_argument("--work", default=None)
    m.add_argument("--only", default=None)
    m.add_argument("--device", default="cuda")
    m.add_argument("--seq", type=int, default=SEQ)
    m.add_argument("--steps", type=int, default=STEPS)
    m.add_argument("--config", default=None)
    r = sub.add_parser("report")
    r.add_argument("results", nargs="+")
    r.add_argument("--md", default=None)
    a = ap.parse_args()
    cmd_measure(a) if a.cmd == "measure" else cmd_report(a)


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
