#!/usr/bin/env python3
"""Training speed and memory: yichui's trainer against the peer (../shared/baselines/plain_hf_train.py, a plain
transformers + PEFT loop) side by side on the same GPU, random weights of real shapes.

    python bench/train_throughput.py measure --out $OUT/train.jsonl --peer .peer/plain_hf_train.py [--gpus 0,1]
    python bench/train_throughput.py report RESULTS.jsonl [--md PATH]

Each run is its own process on its own GPU (two GPUs: two queues at once). yichui's tokens/s is the median over the
steps after the first two (tokens of the batch / wall time between logged steps); the peer prints its own median.
Memory: what nvidia-smi shows (peak reserved + outside the allocator) for yichui, the peer's device_used_gib.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
CONFIGS = Path(__file__).resolve().parent / "configs"

def rounds(default: int) -> int:
    """Back-to-back rounds of a plan: $YICHUI_BENCH_ROUNDS, else the plan's default."""
    return int(os.environ.get("YICHUI_BENCH_ROUNDS", default))


# (queue, who, shape, method, rank, ckpt, micro-batch, extra yichui knobs); seq 2048 throughout
PLAN = [
    ("0", "peer", "qwen2.5-7b", "lora", 8, True, 1, {}),
    ("0", "yichui", "qwen2.5-7b", "lora", 8, True, 1, {}),
    ("0", "yichui", "qwen2.5-7b", "lora", 8, True, 1, {"liger": True}),
    ("0", "yichui", "qwen2.5-7b", "lora", 8, False, 4, {"liger": True}),
    ("0", "yichui", "qwen2.5-7b", "lora", 8, False, 2, {}),
    ("1", "peer", "qwen2.5-7b", "qlora", 64, True, 1, {}),
    ("1", "yichui", "qwen2.5-7b", "qlora", 64, True, 1, {}),
    ("1", "peer", "qwen2.5-0.5b", "full", 8, True, 1, {}),
    ("1", "yichui", "qwen2.5-0.5b", "full", 8, True, 1, {}),
    ("1", "yichui", "qwen2.5-0.5b", "full", 8, False, 4, {"liger": True}),
]
# where the speed gap at the same settings comes from: the peer and yichui again in one run, and yichui under
# torch.profiler for optimizer steps 4-6 (profile.json/profile.txt in its run directory, copied into the row)
PROFILE = [
    ("0", "peer", "qwen2.5-7b", "lora", 8, True, 1, {}),
    ("0", "yichui", "qwen2.5-7b", "lora", 8, True, 1, {}),
    ("0", "yichui", "qwen2.5-7b", "lora", 8, True, 1, {"profile_steps": [4, 6]}),
]
# the goals' rows only (a second run of the day, within the device time left)
GOALS = [
    ("0", "peer", "qwen2.5-7b", "lora", 8, True, 1, {}),
    ("0", "yichui", "qwen2.5-7b", "lora", 8, True, 1, {}),
    ("0", "yichui", "qwen2.5-7b", "lora", 8, False, 4, {"liger": True}),
    ("0", "peer", "qwen2.5-0.5b", "full", 8, True, 1, {}),
    ("1", "peer", "qwen2.5-7b", "qlora", 64, True, 1, {}),
    ("1", "yichui", "qwen2.5-7b", "qlora", 64, True, 1, {}),
    ("1", "yichui", "qwen2.5-0.5b", "full", 8, True, 1, {}),
    ("1", "yichui", "qwen2.5-0.5b", "full", 8, False, 4, {"liger": True}),
]
# same settings with nothing else on the machine: yichui's LoRA step is partly bound by the CPU launching kernels
# (profile: the GPU busy ~70 % of the step), so a second queue building weights beside it slows it down
ALONE = [
    ("0", "peer", "qwen2.5-7b", "lora", 8, True, 1, {}),
    ("0", "yichui", "qwen2.5-7b", "lora", 8, True, 1, {}),
    ("0", "peer", "qwen2.5-7b", "lora", 8, True, 1, {}),
    ("0", "yichui", "qwen2.5-7b", "lora", 8, True, 1, {}),
    ("0", "peer", "qwen2.5-0.5b", "full", 8, True, 1, {}),
    ("0", "yichui", "qwen2.5-0.5b", "full", 8, True, 1, {}),
]
# issue 21: unsloth beside the plain loop and yichui, identical settings (Qwen2.5-7B shape, LoRA r16 on all linear
# layers, 2048 tokens, micro-batch 1, checkpointing on), back-to-back rounds so each pair shares the machine's state
UNSLOTH = [("0", who, "qwen2.5-7b", "lora", 16, True, 1, {})
           for _ in range(rounds(2))
           for who in ("peer", "unsloth", "yichui")]
# issue 21's levers, one at a time on the same job (7B LoRA r16, 2048 tokens, micro-batch 1, checkpointing on), each
# round beside both peers: peft's input cast as every peft user has it (the trainer before this lever), without it
# (yichui's default now), then Liger's kernels, torch.compile of each decoder layer, and both
LEVERS = [("0", who, "qwen2.5-7b", "lora", 16, True, 1, extra)
          for _ in range(rounds(1))
          for who, extra in (("peer", {}), ("unsloth", {}), ("yichui", {"adapter_input_cast": True}), ("yichui", {}),
                             ("yichui", {"liger": True}), ("yichui", {"compile_layers": True}),
                             ("yichui", {"liger": True, "compile_layers": True}))]
# the levers kept, in back-to-back rounds against both peers (identical settings as above)
PAIRS = [("0", who, "qwen2.5-7b", "lora", 16, True, 1, extra)
         for _ in range(rounds(3))
         for who, extra in (("peer", {}), ("unsloth", {}), ("yichui", {}), ("yichui", {"compile_layers": True}))]
# Liger with and without compile, and 50 steps at the LoRA default learning rate (2e-4) on the same data: does a
# lever change what is learned (the loss per step of each lever beside the trainer before the levers)
LOSS50 = {"learning_rate": 2e-4, "max_steps": 50}
LEVERS2 = [("0", "yichui", "qwen2.5-7b", "lora", 16, True, 1, x) for x in (
    {"liger": True}, {"liger": True, "compile_layers": True}, LOSS50 | {"adapter_input_cast": True}, LOSS50,
    LOSS50 | {"compile_layers": True})]
PLANS = {"main": PLAN, "profile": PROFILE, "goals": GOALS, "alone": ALONE, "unsloth": UNSLOTH, "levers": LEVERS,
         "pairs": PAIRS, "levers2": LEVERS2}
SEQ, STEPS = 2048, 8
_prepare_lock = threading.Lock()


def run_peer(peer: Path, shape: str, method: str, rank: int, ckpt: bool, batch: int, gpu: str) -> dict:
    cmd = [sys.executable, str(peer), "--config", str(CONFIGS / shape / "config.json"), "--method", method,
           "--rank", str(rank), "--batch", str(batch), "--seq", str(SEQ), "--steps", str(STEPS)] + (["--ckpt"] if ckpt else [])
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "CUDA_VISIBLE_DEVICES": gpu})
    line = next((x for x in r.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        return {"rc": r.returncode, "error": (r.stderr or r.stdout)[-600:]}
    out = json.loads(line[7:])
    return {"rc": 0, "tokens_per_s": out["tokens_per_s"], "device_gib": out["device_used_gib"],
            "peak_reserved_gib": out["peak_reserved_gib"], "step_s": out["step_s"]}


def run_unsloth(work: Path, shape: str, method: str, rank: int, ckpt: bool, batch: int, gpu: str) -> dict:
    """bench/unsloth_peer.py in unsloth's own environment (its python: $YICHUI_UNSLOTH_PYTHON), weights written once
    under ``work``, the tokenizer from $YICHUI_UNSLOTH_TOKENIZER (any small one)."""
    python = os.environ.get("YICHUI_UNSLOTH_PYTHON", "python3")
    cmd = [python, str(Path(__file__).resolve().parent / "unsloth_peer.py"), "--config",
           str(CONFIGS / shape / "config.json"), "--method", method, "--rank", str(rank), "--batch", str(batch),
           "--seq", str(SEQ), "--steps", str(STEPS), "--weights", str(work / f"unsloth-weights-{shape}"),
           "--tokenizer", os.environ.get("YICHUI_UNSLOTH_TOKENIZER", "")] + (["--ckpt"] if ckpt else [])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"CUDA_VISIBLE_DEVICES": gpu}
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    line = next((x for x in r.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        return {"rc": r.returncode, "error": (r.stderr or r.stdout)[-3000:]}
    out = json.loads(line[7:])
    return {"rc": 0, "tokens_per_s": out["tokens_per_s"], "device_gib": out["device_used_gib"],
            "peak_reserved_gib": out["peak_reserved_gib"], "step_s": out["step_s"], "unsloth": out}


def run_yichui(work: Path, shape: str, method: str, rank: int, ckpt: bool, batch: int, extra: dict, gpu: str) -> dict:
    from memory_accuracy import events, measure_one, median_tokens_per_s, prepare_shape

    with _prepare_lock:  # one queue builds a shape's weights, on its own GPU; the other waits and reuses them
        model_dir = prepare_shape(shape, work, weights=method == "qlora", gpu=gpu)
    cfg = (shape, method, ckpt, SEQ, batch, {"lora_rank": rank, "lora_alpha": 2 * rank, "lora_dropout": 0.0} | extra)
    row = measure_one(cfg, model_dir, work, gpu, STEPS)
    tdir = work / "runs" / row["id"]
    evs = events(tdir)
    out = {"rc": row["rc"], "tokens_per_s": median_tokens_per_s(evs),
           "losses": [round(e["loss"], 4) for e in evs if e["event"] == "step" and e.get("loss") is not None],
           "device_gib": row.get("device_peak_gib"), "peak_reserved_gib": row.get("peak_reserved_gib"),
           "error": row.get("error")}
    if (tdir / "profile.json").exists():
        out["profile"] = json.loads((tdir / "profile.json").read_text()) | {
            "table": (tdir / "profile.txt").read_text()}
    return out


def cmd_measure(a) -> None:
    from memory_accuracy import environment

    work = Path(a.work or tempfile.mkdtemp(prefix="yichui-trainbench-"))
    env = environment()
    print(json.dumps(env), flush=True)
    out, lock = Path(a.out), threading.Lock()
    gpus = a.gpus.split(",")
    plan = PLANS[a.plan]

    def queue(q: str, gpu: str) -> None:
        for _, who, shape, method, rank, ckpt, batch, extra in [p for p in plan if p[0] == q]:
            t0 = time.time()
            res = (run_peer(Path(a.peer), shape, method, rank, ckpt, batch, gpu) if who == "peer"
                   else run_unsloth(work, shape, method, rank, ckpt, batch, gpu) if who == "unsloth"
                   else run_yichui(work, shape, method, rank, ckpt, batch, extra, gpu))
            row = {"who": who, "shape": shape, "method": method, "rank": rank, "ckpt": ckpt, "batch": batch,
                   "seq": SEQ, "extra": extra, "gpu": gpu, "wall_s": round(time.time() - t0, 1), "env": env} | res
            with lock:
                with open(out, "a") as f:
                    f.write(json.dumps(row) + "\n")
                print(f"{who:7s} {shape:13s} {method:6s} r{rank:<3d} ckpt={ckpt!s:5s} mb{batch} {extra} -> "
                      f"{res.get('tokens_per_s')} tok/s {res.get('device_gib')} GiB rc={res.get('rc')}", flush=True)

    threads = [threading.Thread(target=queue, args=(q, g)) for q, g in zip(sorted({p[0] for p in plan}), gpus)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def cmd_report(a) -> None:
    rows = [json.loads(x) for x in Path(a.results).read_text().splitlines() if x.strip()]
    peers = {(r["shape"], r["method"], r["rank"]): r for r in rows if r["who"] == "peer" and r.get("tokens_per_s")}
    lines = ["| run | tokens/s | GiB | speed vs peer | memory vs peer |", "|---|---:|---:|---:|---:|"]
    for r in rows:  # the first run built QLoRA weights on GPU 0 from the other queue: count that GPU's own process only
        if r["who"] == "yichui" and r.get("device_gib") and r["device_gib"] - r["peak_reserved_gib"] > 2:
            r["device_gib"], r["note"] = r["peak_reserved_gib"] + 0.749, "corrected"
    for r in rows:
        p = peers.get((r["shape"], r["method"], r["rank"]))
        name = (f"{r['who']} {r['shape']} {r['method']} r{r['rank']} ckpt {'on' if r['ckpt'] else 'off'} "
                f"mb {r['batch']} {' '.join(k for k, v in r['extra'].items() if v)}")
        if not r.get("tokens_per_s"):
            lines.append(f"| {name} | failed | | | |")
            continue
        sp = f"{r['tokens_per_s'] / p['tokens_per_s']:.2f}×" if p else ""
        mem = f"{r['device_gib'] / p['device_gib']:.2f}×" if p and r.get("device_gib") else ""
        lines.append(f"| {name} | {r['tokens_per_s']:.0f} | {r['device_gib']:.1f} | {sp} | {mem} |")
    from memory_accuracy import write_report

    write_report("\n".join(lines), a.md)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--out", required=True)
    m.add_argument("--peer", required=True)
    m.add_argument("--gpus", default="0,1")
    m.add_argument("--work", default=None)
    m.add_argument("--plan", default="main", choices=sorted(PLANS))
    r = sub.add_parser("report")
    r.add_argument("results")
    r.add_argument("--md", default=None)
    a = ap.parse_args()
    cmd_measure(a) if a.cmd == "measure" else cmd_report(a)


if __name__ == "__main__":
    main()
