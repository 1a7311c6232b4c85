#!/usr/bin/env python3
"""OOM recovery on a real GPU: a configuration that cannot fit raises a real CUDA out-of-memory error in yichui's
trainer; the train step's rule (recipes.training.runner.recover: half the micro-batch, twice the accumulation, checkpointing
on) is applied until the run fits, exactly as the step does between launches; the effective batch stays the same.

    python bench/oom_recovery.py --out $OUT/oom.jsonl      (GPU machine)
    python bench/oom_recovery.py --dry-run --work DIR      (CPU: each attempt's spec and command as the rule would
                                                            make them if every launch ran out of memory, printed)

Qwen2.5-0.5B shape, random weights, full fine-tune, 2,048 tokens, micro-batch 64 without checkpointing (the memory
model predicts ~170 GiB of activations on a 140 GiB H200), 3 optimizer steps.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="required but with --dry-run")
    ap.add_argument("--micro-batch", type=int, default=64)
    ap.add_argument("--work", default=None)
    ap.add_argument("--dry-run", action="store_true", help="print every attempt the rule would make; train nothing")
    a = ap.parse_args()
    if not a.out and not a.dry_run:
        ap.error("--out is required")

    from dataclasses import replace

    import memory_accuracy as ma

    from recipes.training.runner import recover

    ma.DRY_RUN = a.dry_run
    work = Path(a.work or tempfile.mkdtemp(prefix="yichui-oom-"))
    model_dir = ma.prepare_shape("qwen2.5-0.5b", work, weights=False)
    data = work / "data.jsonl"
    ma.synthetic_dataset(data, model_dir, 2048, 3 * a.micro_batch)
    spec = ma.trainer_job({"model_dir": str(model_dir), "init": "random", "method": "full",
                           "activation_checkpointing": False, "dataset_path": str(data), "seq_len": 2048,
                           "micro_batch": a.micro_batch, "grad_accum": 1, "learning_rate": 1e-5, "max_steps": 3,
                           "save_steps": 0, "save_total_limit": 1, "save_final": False, "sample_question": None,
                           "device": "cuda", "attn_implementation": "sdpa", "optim": "adamw",
                           "master_weights": "bf16"})
    env = ma.environment()
    attempts = []
    for attempt in range(8):
        tdir = work / f"run-{attempt}"
        tdir.mkdir(exist_ok=True)
        argv, trainer_env = ma.launch(spec, tdir)
        if a.dry_run:  # as if this launch ran out of memory
            print(json.dumps(ma.planned(f"run-{attempt}", spec, argv)), flush=True)
            change = recover(spec)
            if change is None:
                break
            spec = replace(spec, **change["to"])
            continue
        t0 = time.time()
        with open(tdir / "trainer.log", "w") as log:
            rc = subprocess.run(argv, cwd=ROOT, env=trainer_env, stdout=log, stderr=subprocess.STDOUT).returncode
        evs = ma.events(tdir)
        err = next((e for e in evs if e["event"] == "error"), None)
        row = {"attempt": attempt, "micro_batch": spec.micro_batch, "grad_accum": spec.grad_accum,
               "activation_checkpointing": spec.activation_checkpointing, "rc": rc,
               "seconds": round(time.time() - t0, 1), "error_kind": err.get("kind") if err else None,
               "error": (err or {}).get("message", "")[:300],
               "steps": [e["step"] for e in evs if e["event"] == "step"],
               "peak_gib": next((e.get("mem_gib") for e in reversed(evs) if e["event"] == "step"), None)}
        attempts.append(row)
        print(json.dumps(row), flush=True)
        if rc == 0 or not err or err.get("kind") != "oom":
            break
        change = recover(spec)  # the train step's own rule
        if change is None:
            break
        spec = replace(spec, **change["to"])
    if a.dry_run:
        return
    with open(a.out, "a") as f:
        f.write(json.dumps({"env": env, "attempts": attempts,
                            "recovered": attempts[-1]["rc"] == 0 and len(attempts) > 1}) + "\n")


if __name__ == "__main__":
    main()
