#!/usr/bin/env python3
"""Compiled decoder layers on data of many lengths (issues 44 and 48): where the trainer's steps stall.

    python bench/compile_shapes.py run --work W --out ROWS.jsonl [--shape qwen2.5-0.5b] [--steps 40]
                                       [--variants eager,compiled,compiled-dynamic]
    python bench/compile_shapes.py run --device cpu --config TINY/config.json --variants eager --steps 3 …   (CPU)
    python bench/compile_shapes.py report ROWS.jsonl [...]

On an H100 the chain's training (bench/results/2026-12-06-time-to-serve-h100.md) stalled ~20 s before steps 2, 13 and
76 of 200 on the bundled data, which is not packed: each micro-batch is padded to its own longest record, so the
layers see a new sequence length at most steps. Each variant here is yichui's trainer in its own process, as the train
step starts it (memory_accuracy.launch: the spec, the worker command, the trainer's environment), on the bundled data
(recipes/data/demo_instructions.jsonl) with the shape's random weights, LoRA rank 16, micro-batch 16, no packing,
``--steps`` optimizer steps, each with empty Inductor and Triton caches of its own (a first training on a machine):

- ``eager``: layers not compiled;
- ``compiled``: ``compile_layers`` as the wizard offers it (recipes/training/worker.py compile_decoder_layers);
- ``compiled-dynamic``: the same with ``YICHUI_COMPILE_DYNAMIC=1`` (the layers compiled for symbolic shapes from
  the first step, so a new length does not recompile).

Each row: every step's wall time (the trainer's events: the time between logged steps), the stalls (a step over 5×
the median and over 1 s), and the median tokens/s of the steps after the third.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
DATA = ROOT / "recipes" / "data" / "demo_instructions.jsonl"
VARIANTS = ("eager", "compiled", "compiled-dynamic")


def job_for(model_dir: Path, variant: str, steps: int, device: str):
    from memory_accuracy import trainer_job

    return trainer_job({"model_dir": str(model_dir), "init": "random", "method": "lora", "lora_rank": 16,
                        "lora_alpha": 32, "lora_targets": "all-linear", "lora_dropout": 0.0,
                        "activation_checkpointing": False, "dataset_path": str(DATA), "seq_len": 512,
                        "micro_batch": 16, "grad_accum": 1, "learning_rate": 1e-4, "max_steps": steps,
                        "save_steps": 0, "save_total_limit": 1, "save_final": False, "sample_question": None,
                        "device": device, "packing": False, "val_ratio": 0.0, "logging_steps": 1,
                        "compile_layers": variant != "eager"})


def stalls(times: list[float]) -> tuple[list[float], list[tuple[int, float]]]:
    """Seconds of each logged step after the first (the time since the one before) and the stalls among them:
    (step number, seconds) for steps over 5× the median and over 1 s."""
    gaps = [b - a for a, b in zip(times, times[1:])]
    typical = statistics.median(gaps) if gaps else 0.0
    return gaps, [(i + 2, round(g, 2)) for i, g in enumerate(gaps) if g > max(5 * typical, 1.0)]


def run_one(a, model_dir: Path, variant: str) -> dict:
    from memory_accuracy import launch

    from recipes.jobs import read_events

    tdir = Path(a.work) / "runs" / variant
    shutil.rmtree(tdir, ignore_errors=True)
    tdir.mkdir(parents=True)
    job = job_for(model_dir, variant, a.steps, a.device)
    argv, env = launch(job, tdir)
    caches = tdir / "caches"  # a first training on this machine: nothing compiled before
    env = env | {"TORCHINDUCTOR_CACHE_DIR": str(caches / "inductor"), "TRITON_CACHE_DIR": str(caches / "triton")}
    if variant == "compiled-dynamic":
        env["YICHUI_COMPILE_DYNAMIC"] = "1"
    t0 = time.time()
    with open(tdir / "trainer.log", "w") as log:
        rc = subprocess.run(argv, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=a.timeout).returncode
    wall = time.time() - t0
    evs = read_events(tdir / "events.jsonl")[0]
    steps = [e for e in evs if e["event"] == "step"]
    started = next((e["time"] for e in evs if e["event"] in ("started", "model_loaded")), None)
    gaps, slow = stalls([e["time"] for e in steps])
    tps = [e.get("tokens_per_s") for e in steps[3:] if e.get("tokens_per_s")]
    return {"variant": variant, "shape": a.shape, "device": a.device, "rc": rc, "wall_s": round(wall, 1),
            "steps": len(steps), "first_step_after_start_s": round(steps[0]["time"] - t0, 1) if steps else None,
            "model_loaded_after_start_s": round(started - t0, 1) if started else None,
            "step_seconds": [round(g, 3) for g in gaps], "stalls": slow,
            "tokens": [e.get("tokens") for e in steps],
            "median_step_s": round(statistics.median(gaps), 3) if gaps else None,
            "tokens_per_s": round(statistics.median(tps), 1) if tps else None,
            "losses": [e.get("loss") for e in steps], "log_tail": (tdir / "trainer.log").read_text()[-1500:]}


def cmd_run(a) -> None:
    from memory_accuracy import environment, prepare_shape

    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    with open(out.with_suffix(".env.json"), "w") as f:
        json.dump(environment() if a.device == "cuda" else {"device": "cpu"}, f)
    if a.config:  # the tiny model on CPU
        model_dir = work / "model"
        model_dir.mkdir(exist_ok=True)
        for f in Path(a.config).parent.iterdir():
            if f.is_file():
                shutil.copy(f, model_dir / f.name)
    else:
        model_dir = prepare_shape(a.shape, work, False)
    t_end = time.time() + a.deadline if a.deadline else 0
    for variant in a.variants.split(","):
        if variant not in VARIANTS:
            raise SystemExit(f"--variants: {variant!r} is none of {', '.join(VARIANTS)}")
        if t_end and time.time() > t_end - 30:
            print(f"{variant}: skipped (deadline)", flush=True)
            continue
        r = run_one(a, model_dir, variant)
        with open(out, "a") as f:
            f.write(json.dumps(r) + "\n")
        print(f"{variant}: rc {r['rc']}, {r['steps']} steps in {r['wall_s']} s, first step at "
              f"{r['first_step_after_start_s']} s, median step {r['median_step_s']} s, stalls {r['stalls']}",
              flush=True)


def cmd_report(a) -> None:
    print("| variant | rc | wall s | first step at s | median step s | stalls (step: s) | tokens/s (median) |")
    print("|---|---:|---:|---:|---:|---|---:|")
    for path in a.rows:
        for line in Path(path).read_text().splitlines():
            r = json.loads(line)
            st = ", ".join(f"{s}: {g}" for s, g in r["stalls"]) or "none"
            print(f"| {r['variant']} | {r['rc']} | {r['wall_s']} | {r['first_step_after_start_s']} | "
                  f"{r['median_step_s']} | {st} | {r['tokens_per_s']} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--work", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--shape", default="qwen2.5-0.5b")
    r.add_argument("--config", help="a config.json used instead of the shape's (the tiny model on CPU)")
    r.add_argument("--device", default="cuda")
    r.add_argument("--steps", type=int, default=40)
    r.add_argument("--variants", default=",".join(VARIANTS))
    r.add_argument("--deadline", type=float, default=0, help="seconds: variants after it are skipped")
    r.add_argument("--timeout", type=float, default=400, help="seconds one variant may take")
    rep = sub.add_parser("report")
    rep.add_argument("rows", nargs="+")
    a = p.parse_args()
    {"run": cmd_run, "report": cmd_report}[a.cmd](a)


if __name__ == "__main__":
    main()
