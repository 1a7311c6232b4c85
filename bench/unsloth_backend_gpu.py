#!/usr/bin/env python3
"""The unsloth training backend through yichui's own commands on a GPU (issue 21): a real out-of-memory error
recovered by the train step, a kill -9 of the whole process tree after a checkpoint, and `yichui resume` finishing
from that checkpoint — with unsloth's model and kernels in unsloth's own environment.

    python bench/unsloth_backend_gpu.py --out DIR --work DIR --envs ENVS   (GPU machine; ENVS holds unsloth-<version>)
    … --model .cache/tiny/KEY --method lora --micro-batch 4 --seq 128   (the same chain on a CPU: no OOM there)
    … --dry-run   (CPU, no unsloth needed: the data and the wizard's command with its answers checked, printed)

Qwen2.5-1.5B shape (random bf16 weights, written once), QLoRA r16 on all linear layers, 2,048-token records,
micro-batch 64 without checkpointing (the memory model predicts far more than an H200 holds: the first launch runs
out of memory at step 1; the step halves the micro-batch, doubles gradient accumulation and turns checkpointing on),
16 optimizer steps, a checkpoint every 4. Once checkpoint-8 exists the wizard and the trainer are killed with
SIGKILL; `yichui resume --yes` must finish from checkpoint-8. Writes to DIR: the two wizard outputs, the trainer's
events, log tail, spec and result, the session file, and summary.json (what happened, read from the events).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

SAVE, KILL_AFTER = 4, 8


def yichui(args: list[str], log: Path, env: dict) -> subprocess.Popen:
    """The `yichui` command of this interpreter, in its own process group, output to ``log``."""
    return subprocess.Popen([sys.executable, "-m", "wizard.cli", *args], stdout=open(log, "w"),
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=ROOT,
                            start_new_session=True)


def kill_tree(p: subprocess.Popen, run_dir: Path) -> None:
    """SIGKILL the wizard's process group and every job it started (each in its own session)."""
    from recipes import jobs

    os.killpg(p.pid, signal.SIGKILL)
    p.wait(timeout=30)
    for job in jobs.find(run_dir):
        if job.alive():
            os.killpg(job.pid, signal.SIGKILL)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--envs", required=True, help="the folder holding unsloth-<version> (YICHUI_ENVS)")
    ap.add_argument("--deadline", type=float, default=900, help="seconds for the whole run")
    ap.add_argument("--shape", default="qwen2.5-1.5b", help="a bench/configs shape (random weights written on the GPU)")
    ap.add_argument("--model", default=None, help="a model folder instead of --shape")
    ap.add_argument("--method", default="qlora", choices=["lora", "qlora", "full"])
    ap.add_argument("--micro-batch", type=int, default=64)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--dry-run", action="store_true", help="print the wizard's command with its answers checked; "
                    "run nothing")
    a = ap.parse_args()
    STEPS = a.steps
    SEQ, MICRO_BATCH = a.seq, a.micro_batch
    import memory_accuracy as ma
    from memory_accuracy import prepare_shape, synthetic_dataset

    ma.DRY_RUN = a.dry_run  # no weights written for --shape
    out, work = Path(a.out), Path(a.work)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    t_start = time.time()
    model = Path(a.model).resolve() if a.model else prepare_shape(a.shape, work, weights=True)
    data = work / "data.jsonl"
    if not data.exists():
        synthetic_dataset(data, model, SEQ, STEPS * MICRO_BATCH)
    home = work / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")} | {
        "YICHUI_HOME": str(home), "YICHUI_ENVS": a.envs, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1",
        "COLUMNS": "100", "PYTHONPATH": str(ROOT)}
    sets = {"select_model.source": "local", "select_model.path": str(model),
            "choose_strategy.method": a.method, "choose_strategy.lora_rank": 16, "choose_strategy.lora_alpha": 32,
            "choose_strategy.lora_dropout": 0, "choose_strategy.dataset": "local",
            "choose_strategy.dataset_path": str(data), "choose_strategy.val_ratio": 0, "choose_strategy.seq_len": SEQ,
            "choose_strategy.batch_size": MICRO_BATCH, "choose_strategy.training_backend": "unsloth",
            "choose_strategy.activation_checkpointing": "false", "choose_strategy.micro_batch": MICRO_BATCH,
            "choose_strategy.grad_accum": 1, "choose_strategy.max_steps": STEPS, "choose_strategy.save_steps": SAVE,
            "choose_strategy.learning_rate": 2e-4, "choose_strategy.preflight": "false", "export.formats": ""}
    argv = ["run", "--task", "finetune", "--yes"] + [x for k, v in sets.items() for x in ("--set", f"{k}={v}")]
    if a.dry_run:
        from serve_chain import check_sets

        print(json.dumps({"dry_run": True, "argv": [sys.executable, "-m", "wizard.cli", *argv],
                          "refused_here": check_sets("finetune", sets), "kill_after": f"checkpoint-{KILL_AFTER}"}))
        return
    first = yichui(argv, out / "wizard-1.txt", env)
    ckpt, sid, run_dir = None, None, None
    while time.time() - t_start < a.deadline and first.poll() is None:
        sessions = sorted((home / "sessions").glob("*.json"), key=os.path.getmtime) if (home / "sessions").is_dir() \
            else []
        if sessions and sid is None:
            sid = sessions[-1].stem
            run_dir = home / "runs" / sid
        if run_dir and (run_dir / "train" / "checkpoints" / f"checkpoint-{KILL_AFTER}").is_dir():
            ckpt = f"checkpoint-{KILL_AFTER}"
            time.sleep(1.0)  # into the next steps: the kill loses work after the checkpoint
            kill_tree(first, run_dir)
            break
        time.sleep(0.1)
    summary: dict = {"session": sid, "killed_after": ckpt, "first_exit": first.poll()}
    if ckpt:
        second = yichui(["resume", sid, "--yes"], out / "wizard-2.txt", env)
        tdir = run_dir / "train"
        while time.time() - t_start < a.deadline and second.poll() is None:
            s = json.loads((home / "sessions" / f"{sid}.json").read_text())
            if s["steps"].get("export", {}).get("status") == "done":  # merged: deploy and evaluate are not the point
                break
            time.sleep(1.0)
        kill_tree(second, run_dir)
        summary["second_exit"] = second.poll()
    tdir = run_dir / "train" if run_dir else None
    if tdir and tdir.is_dir():
        from recipes import jobs

        events, _ = jobs.read_events(tdir / "events.jsonl")
        starts = [e for e in events if e["event"] == "start"]
        summary |= {"starts": [{k: e.get(k) for k in ("launch", "resumed_from", "training_backend", "total_steps")}
                               for e in starts],
                    "errors": [{k: e.get(k) for k in ("kind", "step", "message")} for e in events
                               if e["event"] == "error"],
                    "checkpoints": [e["step"] for e in events if e["event"] == "checkpoint"],
                    "steps": [[e["step"], e["loss"], e.get("tokens_per_s"), e.get("mem_gib")] for e in events
                              if e["event"] == "step"],
                    "done": any(e["event"] == "done" for e in events)}
        for name in ("events.jsonl", "spec.json", "result.json"):
            if (tdir / name).exists():
                (out / name).write_text((tdir / name).read_text())
        if (tdir / "trainer.log").exists():
            tail = [x for x in (tdir / "trainer.log").read_text(errors="replace").splitlines()
                    if "Token indices" not in x][-120:]
            (out / "trainer-log-tail.txt").write_text("\n".join(tail) + "\n")
        session = home / "sessions" / f"{sid}.json"
        (out / "session.json").write_text(session.read_text())
        s = json.loads(session.read_text())
        summary["recoveries"] = s["steps"]["train"]["outputs"].get("recoveries")
        summary["export"] = s["steps"].get("export", {}).get("status")
    summary["seconds"] = round(time.time() - t_start, 1)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps({k: v for k, v in summary.items() if k != "steps"}, indent=2))


if __name__ == "__main__":
    main()
