#!/usr/bin/env python3
"""Fit the planner's speed constants (recipes/memory/planner.py) on committed H200 training measurements; print the
predicted beside the measured tokens/s for every job, the jobs not used for the fit marked held out.

    python bench/fit_speed.py [ROWS.jsonl ...]

Rows: train_throughput.py's, yichui's trainer only, the timing rows (8 steps) — not the 50-step loss rows; one
measured figure per job and switch = the median over its rounds. The MFU curve MFU_MAX · x / (x + MFU_HALF), x =
micro-batch × sequence × hidden, is fitted on the eager trainer's LoRA and full fine-tune jobs (FIT): MFU observed =
tokens/s × FLOPs per token ÷ peak; MFU_MAX by relative least squares (at most 0.75: a ceiling above that is not
physical here, and the measured range is short of saturation) for each MFU_HALF on a grid. COMPILE_SPEEDUP per method
= compiled ÷ eager median of the same job. UNSLOTH_SPEEDUP per method = unsloth ÷ the eager trainer, medians of the
same job: unsloth's side (bench/unsloth_peer.py) until rows of yichui's trainer on the unsloth backend exist
(``extra.training_backend: unsloth``), which then count instead. QLoRA keeps QLORA_SPEED; its job is held out.
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from recipes.memory import model as memory  # noqa: E402
from recipes.memory import planner  # noqa: E402

CONFIGS = Path(__file__).resolve().parent / "configs"
RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT = [RESULTS / "2026-12-02-train-levers-h200" / "call1-levers.jsonl",
           RESULTS / "2026-12-02-train-levers-h200" / "call2-pairs.jsonl",
           RESULTS / "2026-12-02-train-levers-h200" / "call3-pairs.jsonl",
           RESULTS / "2026-12-02-train-jobs-h200" / "train-jobs.jsonl",
           RESULTS / "2026-12-02-unsloth-backend-h200" / "train-backend.jsonl",
           RESULTS / "2026-12-02-unsloth-backend-h200" / "train-backend-qlora-round2.jsonl"]
FIT = {("qwen2.5-7b", "lora"), ("qwen2.5-1.5b", "full")}


def jobs(paths, who: str = "yichui", backend: str = "transformers") -> dict:
    """{(shape, method, ckpt, micro-batch, seq, compiled): [tokens/s, …]} of ``who``'s timing rows ("yichui": on
    ``backend``; "unsloth": the peer)."""
    out: dict = {}
    for path in paths:
        for line in Path(path).read_text().splitlines():
            r = json.loads(line) if line.strip() else {}
            x = r.get("extra", {})
            if r.get("who") != who or not r.get("tokens_per_s") or "loss_steps" in x or x.get("liger") \
                    or x.get("adapter_input_cast") or "max_steps" in x or "budget_gib" in x \
                    or (who == "yichui" and x.get("training_backend", "transformers") != backend):
                continue
            key = (r["shape"], r["method"], r["ckpt"], r["batch"], r.get("seq", 2048), bool(x.get("compile_layers")))
            out.setdefault(key, []).append(r["tokens_per_s"])
    return out


def unsloth_speedups(paths, measured: dict) -> dict:
    """{method: the unsloth backend ÷ the eager trainer}: from the backend's own rows where there are any; else
    unsloth's own loop (the peer) × the backend ÷ peer ratio of the jobs that have both (the Trainer's loop
    around unsloth's model costs a little)."""
    peer, backend = jobs(paths, "unsloth"), jobs(paths, "yichui", "unsloth")
    both = [statistics.median(backend[k]) / statistics.median(peer[k]) for k in backend if k in peer]
    loop = statistics.median(both) if both else 1.0
    out = {}
    for source, factor in ((peer, loop), (backend, 1.0)):  # the backend's rows win
        for key, tps in source.items():
            eager = measured.get(key)
            if eager and not key[5]:
                out[key[1]] = statistics.median(tps) * factor / eager
    print(f"backend ÷ unsloth's own loop: {loop:.3f} ({len(both)} job(s))")
    return out


def main() -> None:
    runs = jobs(sys.argv[1:] or DEFAULT)
    measured = {k: statistics.median(v) for k, v in runs.items()}
    shapes = {s: memory.shape_from_config(json.loads((CONFIGS / s / "config.json").read_text()))
              for s in {k[0] for k in measured}}
    x, obs = [], []
    for (s, method, ckpt, mb, seq, compiled), tps in measured.items():
        if compiled or (s, method) not in FIT:
            continue
        f = planner.flops_per_token(shapes[s], method, ckpt, seq)
        x.append(mb * seq * shapes[s].hidden)
        obs.append(tps * f / (planner.PEAK_TFLOPS["NVIDIA H200"] * 1e12))
    xa, oa = np.array(x, float), np.array(obs)
    best = None
    for half in np.linspace(1e6, 60e6, 591):
        g = xa / (xa + half)
        a = min(0.75, float((g / oa).sum() / (g * g / oa**2).sum()))
        err = float((((a * g - oa) / oa) ** 2).sum())
        if best is None or err < best[0]:
            best = (err, a, half)
    _, planner.MFU_MAX, planner.MFU_HALF = best
    speedups = {}
    for (s, method, ckpt, mb, seq, compiled), tps in measured.items():
        eager = measured.get((s, method, ckpt, mb, seq, False))
        if compiled and eager:
            speedups[method] = tps / eager
    print(f"MFU_MAX = {planner.MFU_MAX:.3f}, MFU_HALF = {planner.MFU_HALF:.3g}, COMPILE_SPEEDUP = "
          + ", ".join(f"{m}: {v:.2f}" for m, v in sorted(speedups.items())) + ", UNSLOTH_SPEEDUP = "
          + ", ".join(f"{m}: {v:.2f}" for m, v in sorted(unsloth_speedups(sys.argv[1:] or DEFAULT, measured).items())))
    for (s, method, ckpt, mb, seq, compiled), tps in sorted(measured.items()):
        p = planner.tokens_per_s(shapes[s], method, ckpt, mb, seq, "NVIDIA H200", compile_layers=compiled)
        fitted = (s, method) in FIT
        if compiled and method not in planner.COMPILE_SPEEDUP:
            print(f"  {s:13s} {method:6s} compiled: measured {tps:7.0f}, not offered (TrainingSpec.check refuses it)")
            continue
        print(f"  {s:13s} {method:6s} ckpt={ckpt!s:5s} mb{mb} {seq:5d} {'compiled' if compiled else 'eager   '} "
              f"runs {len(runs[(s, method, ckpt, mb, seq, compiled)])}  measured {tps:7.0f}  "
              f"predicted {p:7.0f}  {(p - tps) / tps:+.0%}  {'fitted' if fitted else 'held out'}")


if __name__ == "__main__":
    main()
