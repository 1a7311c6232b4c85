#!/usr/bin/env python3
"""Sharded training (DDP, DeepSpeed ZeRO-1/2/3, FSDP2) through yichui's own launcher path (torch.distributed.run +
recipes/training/worker.py), random weights of real shapes: peak memory per GPU against the memory model, tokens/s,
losses.

    python bench/distributed.py measure --grid two-gpu|one-gpu|one-gpu-speed --out $OUT/dist.jsonl [--work DIR]
                                        [--only NAMES] [--parallel N] [--dry-run]
    python bench/distributed.py report RESULTS.jsonl [MORE.jsonl …] [--md PATH]
    python bench/distributed.py snapshot SNAPSHOT.pickle START.json   # what was live at the peak, by allocation site

Grids:
- ``two-gpu`` (nvidia-h200-x2): a full fine-tune of the Qwen2.5-1.5B shape (AdamW, bf16, checkpointing, seq 2048) on
  one GPU (micro-batch 1 × accumulation 2) and on two (micro-batch 1 each) with DDP, ZeRO-2, ZeRO-3 and FSDP2 — the
  same effective batch and data, so the losses should match; and LoRA r8 with padding-free packing vs padding on
  conversations of 100 … 2,000 tokens (real tokens/s).
- ``one-gpu`` (nvidia-h200): every sharded plan in one process — the engines allocate their buffers there too (the
  bf16 module and flat buffers, fp32 masters, the reduce bucket, FSDP2's reduce-scatter pool), all but what gathering
  adds (recipes/memory/sharding.py) — on four shapes, full fine-tunes and LoRA, with and without offload, with
  DeepSpeed's old default buckets beside yichui's. Each row records a CUDA memory history; the device summarizes it
  (``snapshot``: the live blocks at the peak, grouped by the code that allocated them) and keeps only the summary.
  ``--parallel N`` runs up to N rows at once on the GPU while the memory model's predicted peaks fit in 85 % of it
  (peak memory is per process; such rows' tokens/s are not a measurement and are marked ``concurrent``).
- ``one-gpu-speed``: ZeRO-2 vs ZeRO-3 (yichui's sizes and DeepSpeed's defaults) vs FSDP2 in one process, one at a
  time: what ZeRO-3's hooks cost without any gathering (on one GPU the partition is the whole tensor).

``--dry-run`` (CPU): builds every row (model folder without weights, data, spec.json, the trainer's command) and
prints it as a JSON line instead of running it.
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

SEQ, STEPS = 2048, 10


def _run(shape, procs, dist, mb, ga, method="full", packing=False, dataset="long", **extra):
    return {"shape": shape, "processes": procs, "distribution": dist, "micro_batch": mb, "grad_accum": ga,
            "method": method, "packing": packing, "dataset": dataset} | extra


# name → a run; "-bf16": pure-bf16 weights instead of fp32 masters (the full fine-tune's default since 2026-11-29)
TWO_GPU = {
    "1gpu": _run("qwen2.5-1.5b", 1, "ddp", 1, 2),
    "1gpu-bf16": _run("qwen2.5-1.5b", 1, "ddp", 1, 2, master_weights="bf16"),
    "ddp": _run("qwen2.5-1.5b", 2, "ddp", 1, 1),
    "zero2": _run("qwen2.5-1.5b", 2, "zero2", 1, 1),
    "zero3": _run("qwen2.5-1.5b", 2, "zero3", 1, 1),
    "fsdp2": _run("qwen2.5-1.5b", 2, "fsdp2", 1, 1),
    "padded": _run("qwen2.5-1.5b", 1, "ddp", 4, 1, "lora", False, "varied"),
    "packed": _run("qwen2.5-1.5b", 1, "ddp", 4, 1, "lora", True, "varied"),
}


def _one(shape, dist, method="full", **extra):
    # no memory history under ZeRO-3: recording Python stacks broke DeepSpeed's ZeRO-3 linear in the recomputed
    # backward on the H200 (SystemError "returned NULL without setting an exception"; the same run without it trains)
    return _run(shape, 1, dist, 1, 1, method, memory_snapshot=dist != "zero3", steps=4, **extra)


ONE_GPU = {
    **{f"{s}-full-{d}": _one(f"qwen2.5-{s}", d) for s in ("0.5b", "1.5b") for d in ("zero1", "zero2", "zero3", "fsdp2")},
    **{f"3b-full-{d}": _one("qwen2.5-3b", d) for d in ("zero2", "zero3", "fsdp2")},
    **{f"1.5b-full-{d}-dsdefault": _one("qwen2.5-1.5b", d, zero_sizes="deepspeed") for d in ("zero2", "zero3")},
    "1.5b-full-zero2-nockpt": _one("qwen2.5-1.5b", "zero2", activation_checkpointing=False),
    "1.5b-full-fsdp2-nockpt": _one("qwen2.5-1.5b", "fsdp2", activation_checkpointing=False),
    "1.5b-full-zero2-offload": _one("qwen2.5-1.5b", "zero2", offload="optimizer"),
    "1.5b-full-zero3-offload": _one("qwen2.5-1.5b", "zero3", offload="all"),
    "1.5b-full-fsdp2-offload": _one("qwen2.5-1.5b", "fsdp2", offload="all"),
    **{f"7b-lora-{d}": _one("qwen2.5-7b", d, "lora") for d in ("zero2", "zero3", "fsdp2")},
    "1.5b-full-zero3-nosnap": _run("qwen2.5-1.5b", 1, "zero3", 1, 1, steps=4),
    "1.5b-full-ddp": _one("qwen2.5-1.5b", "ddp"),
}
ONE_GPU_SPEED = {f"speed-1.5b-{d}{tag}": _run("qwen2.5-1.5b", 1, d, 1, 1, steps=12, **kw)
                 for d, tag, kw in (("ddp", "", {}), ("zero2", "", {}), ("zero3", "", {}),
                                    ("zero3", "-dsdefault", {"zero_sizes": "deepspeed"}), ("fsdp2", "", {}))}
# ZeRO-3's per-parameter bookkeeping in one process (no gathering there): DeepSpeed's defaults with overlap, transformers'
# "auto" sizes with DeepSpeed's prefetch and persistence or larger ones (recipes/training/zero.py ZeroSizes.named)
ONE_GPU_SPEED |= {f"speed-1.5b-zero3-{tag}": _run("qwen2.5-1.5b", 1, "zero3", 1, 1, steps=12, zero_sizes=z)
                  for tag, z in (("ds-overlap", "deepspeed,overlap_comm=1"),
                                 ("h2-prefetch5e7", "auto,prefetch_bucket=5e7,persistence_threshold=1e5"),
                                 ("prefetch2e8-persist1e6", "auto,prefetch_bucket=2e8,persistence_threshold=1e6"))}
GRIDS = {"two-gpu": TWO_GPU, "one-gpu": ONE_GPU, "one-gpu-speed": ONE_GPU_SPEED}
RUNS = {**TWO_GPU, **ONE_GPU, **ONE_GPU_SPEED}


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


def job_of(name: str, model_dir: Path, data: Path, device: str, seq: int, steps: int):
    """The run ``name`` as the trainer reads it (memory_accuracy.trainer_job: unknown keys refused)."""
    from memory_accuracy import trainer_job

    r = RUNS[name]
    full = r["method"] == "full"
    extra = {k: v for k, v in r.items() if k in ("master_weights", "zero_sizes", "memory_snapshot", "offload",
                                                  "activation_checkpointing")}
    return trainer_job({
        "model_dir": str(model_dir), "init": "random", "method": r["method"], "lora_rank": 8, "lora_alpha": 16,
        "lora_dropout": 0.0, "lora_targets": "all-linear", "activation_checkpointing": full or r["packing"] is False,
        "dataset_path": str(data), "seq_len": seq, "micro_batch": r["micro_batch"], "grad_accum": r["grad_accum"],
        "learning_rate": 1e-5 if full else 1e-4, "max_steps": r.get("steps", steps), "save_steps": 0,
        "save_total_limit": 1, "save_final": False, "sample_question": None, "device": device,
        "attn_implementation": "sdpa", "optim": "adamw", "processes": r["processes"], "distribution": r["distribution"],
        "packing": r["packing"], "seed": 42, "master_weights": "fp32"} | extra)


def zero_sizes_of(r: dict, t):
    """The DeepSpeed sizes a row ran with (its ``zero_sizes``, recipes/training/zero.py ZeroSizes.named)."""
    from bench_fit import shape

    from recipes.training.zero import ZeroSizes

    return ZeroSizes.named(r.get("zero_sizes", "yichui"), t.zero, t.gpus, shape(r["shape"]).hidden) if t.zero else None


def predicted(name: str, seq: int, config: dict | None = None) -> dict:
    """The memory model's estimate for run ``name`` (rank 0), with the DeepSpeed sizes the run used."""
    from bench_fit import shape

    from recipes.memory import model as memory
    from recipes.training.spec import TrainingSpec
    r = RUNS[name]
    job = job_of(name, Path("."), Path("."), "cuda", seq, STEPS).to_dict()
    t = TrainingSpec.from_dict({k: v for k, v in job.items() if k != "save_steps"})  # 0 there: no checkpoints
    s = memory.shape_from_config(config) if config else shape(r["shape"])
    sizes = zero_sizes_of(r, t)
    return memory.estimate(s, t, zero_sizes=sizes)


def run(name: str, model_dir: Path, data: dict, work: Path, device: str, seq: int, steps: int,
        gpus: str | None = None, dry: bool = False) -> dict:
    from memory_accuracy import events, launch, median_tokens_per_s, planned

    r = RUNS[name]
    tdir = work / "runs" / name
    subprocess.run(["rm", "-rf", str(tdir)])
    tdir.mkdir(parents=True)
    job = job_of(name, model_dir, data[r["dataset"]], device, seq, steps)
    visible = gpus or ("0,1" if r["processes"] > 1 else "0")
    argv, env = launch(job, tdir, visible if device == "cuda" else None)
    if dry:
        return planned(name, job, argv)
    t0 = time.time()
    with open(tdir / "trainer.log", "w") as log:
        rc = subprocess.run(argv, env=env | {"TOKENIZERS_PARALLELISM": "false"}, cwd=ROOT, stdout=log,
                            stderr=subprocess.STDOUT, timeout=900).returncode
    evs = events(tdir)
    start = next((e for e in evs if e["event"] == "start"), {})
    row = r | {"name": name, "seq": seq, "rc": rc, "master_weights": job.master_weights, "zero_sizes": job.zero_sizes,
               "offload": job.offload, "activation_checkpointing": job.activation_checkpointing,
               "steps": job.max_steps, "wall_s": round(time.time() - t0, 1), "sharding": start.get("sharding"),
               "losses": [e["loss"] for e in evs if e["event"] == "step"], "tokens_per_s": median_tokens_per_s(evs)}
    result = tdir / "result.json"
    if result.exists():
        res = json.loads(result.read_text())
        row |= (res.get("gpu_memory") or {}) | {"runtime_s": res["runtime_s"]}
    else:
        row["error"] = (tdir / "trainer.log").read_text()[-1500:]
    snap = tdir / "memory_snapshot.pickle"
    if snap.exists():  # summarized here, the pickle (tens of MiB) stays behind
        row["snapshot"] = summarize_snapshot(snap, tdir / "memory_snapshot_start.json")
        snap.unlink()
    return row


# -- what was live at the peak --------------------------------------------------------------------------------------
SITES = ("deepspeed/", "torch/distributed/fsdp/", "accelerate/", "trl/", "peft/", "transformers/", "torch/optim/",
         "torch/utils/checkpoint", "recipes/")


def _site(frames: list[dict]) -> str:
    """The allocation's site: the innermost frame in one of the libraries that decide what is kept (SITES, in that
    order of precedence), as library/file.py:function; else the innermost frame."""
    for lib in SITES:
        for f in frames:
            if lib in f.get("filename", ""):
                path = f["filename"]
                return f"{path[path.index(lib):]}:{f.get('name', '?')}"
    f = frames[0] if frames else {}
    return f"{Path(f.get('filename', '?')).name}:{f.get('name', '?')}"


def summarize_snapshot(pickle_path: Path, start_json: Path, top: int = 25) -> dict:
    """Replays a ``torch.cuda.memory._snapshot()`` trace: allocated bytes (alloc / free_completed, from the recorded
    start: ``start_json`` holds what was allocated then) and reserved bytes (segment_map / segment_unmap with
    expandable segments, segment_alloc / segment_free without; from the segments reserved at the start) over time.
    Returns the moment of the allocated peak with the blocks live then by allocation site (GiB; ``peak_gib`` should
    equal the allocator's max_memory_allocated), and the moment reserved memory last grew to its peak: what was
    allocated then, the request that grew it and its site, and the live blocks then by site."""
    snap = pickle.loads(pickle_path.read_bytes())
    trace = snap["device_traces"][0] if snap.get("device_traces") else []
    start = json.loads(start_json.read_text()) if start_json.exists() else {}
    base, rbase = start.get("allocated", 0), start.get("reserved", 0)
    total, best, best_i = base, base, -1
    reserved, rbest, rbest_i, alloc_at_r = rbase, rbase, -1, base
    for i, e in enumerate(trace):
        a = e.get("action")
        if a == "alloc":
            total += e["size"]
        elif a == "free_completed":
            total -= e["size"]
        elif a in ("segment_map", "segment_alloc"):
            reserved += e["size"]
        elif a in ("segment_unmap", "segment_free"):
            reserved -= e["size"]
        if total > best:
            best, best_i = total, i
        if reserved > rbest:
            rbest, rbest_i, alloc_at_r = reserved, i, total

    def live_at(k: int) -> list:
        at: dict[int, int] = {}
        for i, e in enumerate(trace[:k + 1]):
            if e.get("action") == "alloc":
                at[e["addr"]] = i
            elif e.get("action") == "free_completed":
                at.pop(e["addr"], None)
        by: dict[str, float] = defaultdict(float)
        for i in at.values():
            by[_site(trace[i].get("frames") or [])] += trace[i]["size"]
        return sorted(by.items(), key=lambda kv: -kv[1])

    gib = 2 ** 30
    rows = live_at(best_i)
    out = {"peak_gib": round(best / gib, 4), "base_gib": round(base / gib, 4), "events": len(trace),
           "at_peak": [[k, round(v / gib, 4)] for k, v in rows[:top]],
           "rest_gib": round(sum(v for _, v in rows[top:]) / gib, 4),
           "peak_site": _site(trace[best_i].get("frames") or []) if best_i >= 0 else None}
    if rbest_i >= 0:  # the next allocation after the last growth is the request that needed it
        req = next((e for e in trace[rbest_i:] if e.get("action") == "alloc"), {})
        out["reserved"] = {"peak_gib": round(rbest / gib, 4), "base_gib": round(rbase / gib, 4),
                           "allocated_then_gib": round(alloc_at_r / gib, 4),
                           "request_gib": round(req.get("size", 0) / gib, 4),
                           "request_site": _site(req.get("frames") or []),
                           "live_then": [[k, round(v / gib, 4)] for k, v in live_at(rbest_i)[:12]]}
    return out


# -- measure --------------------------------------------------------------------------------------------------------
def cmd_measure(a) -> None:
    import memory_accuracy as ma

    ma.DRY_RUN = a.dry_run
    grid = GRIDS[a.grid]
    names = a.only.split(",") if a.only else list(grid)
    unknown = [n for n in names if n not in RUNS]
    if unknown:
        raise SystemExit(f"unknown runs: {', '.join(unknown)} (grid {a.grid}: {', '.join(grid)})")
    work = Path(a.work or tempfile.mkdtemp(prefix="yichui-distbench-"))
    env = {} if a.dry_run else ma.environment()
    if env:
        print(json.dumps(env), flush=True)
    shapes = {RUNS[n]["shape"] for n in names}
    dirs = {s: ma.prepare_shape(s, work, weights=False) for s in shapes}
    config = None
    if a.config:  # another config for every shape (e.g. the tiny model on CPU)
        import shutil

        for d in dirs.values():
            shutil.copy(a.config, d / "config.json")
        config = json.loads(Path(a.config).read_text())
    data = {}
    for s, d in dirs.items():
        data[s] = {"long": work / f"{s}-long.jsonl", "varied": work / f"{s}-varied.jsonl"}
        ma.synthetic_dataset(data[s]["long"], d, a.seq, 4 * a.steps * 2)
        if any(RUNS[n]["dataset"] == "varied" for n in names):
            varied_dataset(data[s]["varied"], d)

    def one(name: str) -> dict:
        s = RUNS[name]["shape"]
        row = run(name, dirs[s], data[s], work, a.device, a.seq, a.steps, dry=a.dry_run)
        return row if a.dry_run else row | {"env": env}

    def record(row: dict) -> None:
        with open(a.out, "a") as f:
            f.write(json.dumps(row) + "\n")
        if a.dry_run:
            print(json.dumps(row), flush=True)
            return
        snap = row.get("snapshot") or {}
        print(f"{row['name']:28s} rc={row['rc']} {row.get('sharding')} {row.get('tokens_per_s')} tok/s "
              f"{row.get('device_peak_gib')} GiB (alloc {row.get('peak_allocated_gib')}, snapshot "
              f"{snap.get('peak_gib')}) {row['wall_s']} s {row.get('error', '')[-300:]}", flush=True)

    if a.parallel <= 1 or a.dry_run or a.device != "cuda":
        for name in names:
            record(one(name))
        return
    # several rows at once on one GPU, while their predicted peaks fit in 85 % of it
    import concurrent.futures as cf

    budget = 0.85 * float(env.get("gpu_total_gib") or 80)
    need = {n: predicted(n, a.seq, config)["peak_gib"] * 1.2 + 2 for n in names}
    pending, running = sorted(names, key=lambda n: -need[n]), {}
    with cf.ThreadPoolExecutor(a.parallel) as pool:
        while pending or running:
            for n in list(pending):
                if len(running) < a.parallel and sum(need[m] for m in running.values()) + need[n] <= budget:
                    pending.remove(n)
                    running[pool.submit(one, n)] = n
            if not running:  # one row larger than the budget: alone
                n = pending.pop(0)
                running[pool.submit(one, n)] = n
            done, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
            for fut in done:
                alone = len(running) == 1 and not pending
                name = running.pop(fut)
                record(fut.result() | {"concurrent": not alone})


# -- report ---------------------------------------------------------------------------------------------------------
def load(paths: list[str]) -> list[dict]:
    """Rows of several measurement files, a later file's run replacing an earlier one of the same name. Rows from
    before the fp32-master default trained one GPU and DDP with pure-bf16 weights: they become "-bf16" runs; rows
    from before the one-GPU grid name no shape (the 1.5B)."""
    by: dict = {}
    for p in paths:
        for x in Path(p).read_text().splitlines():
            if not x.strip():
                continue
            r = json.loads(x)
            r.setdefault("shape", "qwen2.5-1.5b")
            if "master_weights" not in r:
                r["master_weights"] = "bf16"
                if r["method"] == "full" and r["distribution"] == "ddp" and not r["name"].endswith("-bf16"):
                    r["name"] += "-bf16"
            r.setdefault("zero_sizes", "deepspeed")  # every row before 2026-12-04 ran DeepSpeed's defaults
            by[r["name"]] = r
    return list(by.values())


def row_estimate(r: dict) -> dict:
    """The memory model's estimate for a measured row, as it ran (its own sizes, masters, offload)."""
    from bench_fit import shape

    from recipes.memory import model as memory
    from recipes.training.spec import TrainingSpec

    t = TrainingSpec(method=r["method"], lora_rank=8, lora_dropout=0.0,
                     activation_checkpointing=r.get("activation_checkpointing", r["method"] == "full"),
                     micro_batch=r["micro_batch"], grad_accum=r["grad_accum"], seq_len=r["seq"],
                     processes=r["processes"], distribution=r["distribution"], master_weights=r["master_weights"],
                     offload=r.get("offload", "none"), packing=r.get("packing", False))
    sizes = zero_sizes_of(r, t)
    return memory.estimate(shape(r["shape"]), t, zero_sizes=sizes)


SHARDED_RESULTS = [Path(__file__).resolve().parent / "results" / f for f in (
    "2026-11-29-distributed-h200.jsonl", "2026-11-29-distributed-h200-round2.jsonl",
    "2026-12-04-sharded-one-gpu-h200/rows.jsonl")]
HELD_OUT_SHAPE = "qwen2.5-3b"  # not looked at while the engines' terms were written (nor were the two-GPU rows' N)


def _engine(r: dict) -> str:
    d = r["distribution"]
    return "fsdp2" if d == "fsdp2" else "zero3" if d == "zero3" else "zero12" if d.startswith("zero") else d


def accuracy(rows: list[dict]) -> list[dict]:
    """Predicted beside measured peak per GPU (nvidia-smi's view: peak reserved + memory outside the allocator) for
    every row that trained on text records of one length. Rows run beside others on one GPU (``--parallel``, the
    one-gpu grid) have a valid allocator peak but not the device's used memory: their memory outside the allocator is
    the one measured for the same engine in a one-process run alone (the one-gpu-speed rows). ``held_out``: the
    3B shape and the two-GPU rows."""
    alone: dict[str, float] = {}
    for r in rows:
        if r["processes"] == 1 and (r["name"].startswith("speed-") or r["name"].endswith("-nosnap")) and not r.get("rc"):
            alone.setdefault(_engine(r), r["outside_allocator_gib"])
    out = []
    for r in rows:
        if r.get("rc") or r["dataset"] != "long" or not r.get("peak_reserved_gib"):
            continue
        shared = r["processes"] == 1 and r.get("device_call") and not (
            r["name"].startswith("speed-") or r["name"].endswith("-nosnap"))
        outside = alone.get(_engine(r)) if shared else r["outside_allocator_gib"]
        if outside is None:
            continue
        e = row_estimate(r)
        measured = r["peak_reserved_gib"] + outside
        out.append({"name": r["name"], "gpus": r["processes"], "distribution": r["distribution"],
                    "offload": r.get("offload", "none"), "shape": r["shape"], "measured_gib": round(measured, 3),
                    "predicted_gib": e["peak_gib"], "error": round((e["peak_gib"] - measured) / measured, 4),
                    "phase": e["phase"], "held_out": r["shape"] == HELD_OUT_SHAPE or r["processes"] > 1})
    return out


def cmd_report(a) -> None:
    rows = load(a.results)
    by = {r["name"]: r for r in rows}
    bases = [by.get(n, {}).get("losses") or [] for n in ("1gpu", "1gpu-bf16")]
    lines = ["| run | GPUs | masters | sharding (as run) | GiB per GPU (measured) | predicted | error | phase | "
             "tokens/s | max loss diff vs 1 GPU fp32 masters |", "|---|---:|---|---|---:|---:|---:|---|---:|---:|"]
    for r in rows:
        if r["dataset"] != "long":
            continue
        if not r.get("device_peak_gib"):
            lines.append(f"| {r['name']} | {r['processes']} | | failed (rc {r['rc']}) | | | | | | |")
            continue
        e = row_estimate(r)
        pred = e["peak_gib"]
        diff = max((abs(x - y) for x, y in zip(r["losses"], bases[0])), default=float("nan"))
        masters = "fp32" if r["master_weights"] == "fp32" or r["distribution"] != "ddp" else "bf16"
        tps = f"{r['tokens_per_s']}" + (" (concurrent)" if r.get("concurrent") else "")
        lines.append(f"| {r['name']} | {r['processes']} | {masters} | {r['sharding']} | {r['device_peak_gib']:.2f} | "
                     f"{pred:.2f} | {(pred - r['device_peak_gib']) / r['device_peak_gib'] * 100:+.1f} % | "
                     f"{e['phase']} | {tps} | {diff:.4f} |")
    acc = accuracy(rows)
    if acc:
        lines += ["", "| run | GPUs | distribution | offload | measured GiB | predicted | error | moment of the peak | "
                      "held out |", "|---|---:|---|---|---:|---:|---:|---|---|"]
        lines += [f"| {x['name']} | {x['gpus']} | {x['distribution']} | {x['offload']} | {x['measured_gib']:.2f} | "
                  f"{x['predicted_gib']:.2f} | {x['error'] * 100:+.1f} % | {x['phase']} | "
                  f"{'yes' if x['held_out'] else ''} |" for x in acc]
    if "padded" in by and "packed" in by and by["padded"].get("tokens_per_s") and by["packed"].get("tokens_per_s"):
        p, q = by["padded"], by["packed"]
        lines += ["", "| data with lengths 100 … 2,000 tokens, LoRA r8, micro-batch 4 | real tokens/s | GiB |",
                  "|---|---:|---:|",
                  f"| padded to the longest row | {p['tokens_per_s']:.0f} | {p.get('device_peak_gib', 0):.1f} |",
                  f"| padding-free packing | {q['tokens_per_s']:.0f} | {q.get('device_peak_gib', 0):.1f} |",
                  f"| ratio | {q['tokens_per_s'] / p['tokens_per_s']:.2f}× | |"]
    from memory_accuracy import write_report

    write_report("\n".join(lines), a.md)


def cmd_snapshot(a) -> None:
    print(json.dumps(summarize_snapshot(Path(a.pickle), Path(a.start)), indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--grid", default="two-gpu", choices=sorted(GRIDS))
    m.add_argument("--out", required=True)
    m.add_argument("--work", default=None)
    m.add_argument("--only", default=None)
    m.add_argument("--device", default="cuda")
    m.add_argument("--seq", type=int, default=SEQ)
    m.add_argument("--steps", type=int, default=STEPS)
    m.add_argument("--config", default=None, help="another config.json for every shape (the tiny model on CPU)")
    m.add_argument("--parallel", type=int, default=1)
    m.add_argument("--dry-run", action="store_true")
    r = sub.add_parser("report")
    r.add_argument("results", nargs="+")
    r.add_argument("--md", default=None)
    s = sub.add_parser("snapshot")
    s.add_argument("pickle")
    s.add_argument("start")
    a = ap.parse_args()
    {"measure": cmd_measure, "report": cmd_report, "snapshot": cmd_snapshot}[a.cmd](a)


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
