#!/usr/bin/env python3
"""yichui's DPO beside TRL's own DPO example script on the same job (issue 47: tokens/s ≥ 1.0× at ≤ its memory).

    python bench/dpo_peer.py rounds --shape qwen2.5-3b --rounds 3 --steps 34 --out $OUT/dpo-peer.jsonl --work DIR
    python bench/dpo_peer.py rounds … --rounds 1 --first 2     (a later device call: round 2, yichui first)
    python bench/dpo_peer.py peer --model DIR --data FILE --seq N --mb N --steps N --out ROWS.jsonl   (one peer run)
    python bench/dpo_peer.py rounds --dry-run --work DIR          (CPU: both sides' commands, printed)
    python bench/dpo_peer.py peer --cpu --model TINY --data PAIRS --seq 64 --mb 1 --steps 4 …  (CPU: the peer itself)

The peer is ``trl/scripts/dpo.py`` as TRL ships it (its ``main`` and ``make_parser``), with the flags its docstring
shows for LoRA (``--use_peft``) set to the job's: rank 16, alpha 32, all linear layers, dropout 0.05, bf16, sdpa,
gradient checkpointing (DPOConfig's default), ``max_length`` = the sequence length, one micro-batch per optimizer step.
The one thing added to it is a Trainer callback that notes the wall time and trl's own ``num_tokens`` at every logged
step (the same count and clock yichui's events use) and the GPU's peak at the end. yichui's side is the trainer itself
(``speed_grid.py shape --set dpo``: the spec the train step writes). Both read the same preference pairs (prompt,
chosen, rejected as messages, each answer longer than the sequence: ``memory_accuracy.synthetic_preferences``) and
the same written weights. A round runs peer, yichui eager, yichui compiled, each a fresh process; the rounds alternate
which side goes first. Each run's figure is the median tokens/s of its steps after the first three.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from speed_grid import DPO_PEER_ROWS  # noqa: E402

YICHUI_ROWS = dict(zip(("eager", "compiled"), DPO_PEER_ROWS))
SEQ, MB = DPO_PEER_ROWS[0][2], DPO_PEER_ROWS[0][3]


def peer_argv(model: Path, data_dir: Path, out_dir: Path, seq: int, mb: int, steps: int, cpu: bool = False
              ) -> list[str]:
    """TRL's script's flags for the job (its LoRA example, the job's values); ``cpu``: fp32 on the CPU (the tiny
    model's check)."""
    return ["--model_name_or_path", str(model), "--dataset_name", str(data_dir), "--output_dir", str(out_dir),
            "--use_peft", "--lora_r", "16", "--lora_alpha", "32", "--lora_dropout", "0.05",
            "--lora_target_modules", "all-linear", "--per_device_train_batch_size", str(mb),
            "--gradient_accumulation_steps", "1", "--max_steps", str(steps), "--max_length", str(seq),
            "--learning_rate", "1e-5", "--logging_steps", "1",
            *(["--use_cpu", "--dtype", "float32"] if cpu else ["--bf16", "true", "--dtype", "bfloat16"]),
            "--attn_implementation", "sdpa", "--gradient_checkpointing", "--report_to", "none",
            "--save_strategy", "no", "--seed", "42"]


def cmd_peer(a) -> None:
    """One run of TRL's script with the step clock; appends {"side": "trl", ...} to ``--out``."""
    import torch
    import trl
    from transformers import TrainerCallback
    from trl.scripts import dpo

    from recipes.training.worker import cuda_memory

    steps: list[tuple[float, float, float]] = []

    class Clock(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "loss" in logs and "num_tokens" in logs:
                steps.append((time.time(), float(logs["num_tokens"]), float(logs["loss"])))

    train = trl.DPOTrainer.train

    def timed_train(self, *args, **kw):
        self.add_callback(Clock())
        return train(self, *args, **kw)

    trl.DPOTrainer.train = timed_train
    data_dir = Path(a.work) / "peer-data"
    shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.mkdir(parents=True)
    shutil.copy(a.data, data_dir / "train.jsonl")
    out_dir = Path(a.work) / "peer-out"
    shutil.rmtree(out_dir, ignore_errors=True)
    argv = peer_argv(Path(a.model), data_dir, out_dir, a.seq, a.mb, a.steps, a.cpu)
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    t0 = time.time()
    parser = dpo.make_parser()
    script_args, training_args, model_args, dataset_args = parser.parse_args_and_config(
        args=argv, fail_with_unknown_args=True)
    dpo.main(script_args, training_args, model_args, dataset_args)
    tps = [round((n1 - n0) / (t1 - t0_), 1) for (t0_, n0, _), (t1, n1, _) in zip(steps, steps[1:])]
    row = {"side": "trl", "id": a.id, "rc": 0, "wall_s": round(time.time() - t0, 1),
           "step_tokens_per_s": [None] + tps, "losses": [s[2] for s in steps], "trl": trl.__version__}
    rest = [x for x in row["step_tokens_per_s"][3:] if x]
    row["tokens_per_s"] = round(statistics.median(rest), 1) if rest else None
    if torch.cuda.is_available():
        row |= cuda_memory()
    with open(a.out, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(f"trl: {row['tokens_per_s']} tok/s {row.get('device_peak_gib')} GiB", flush=True)


def cmd_rounds(a) -> None:
    """The driver: ``--rounds`` rounds of peer / yichui eager / yichui compiled, fresh processes, alternating."""
    import speed_grid
    from memory_accuracy import environment, prepare_shape, synthetic_preferences

    from recipes.training.runner import trainer_env
    from recipes.training.spec import TrainerJob

    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    model = prepare_shape(a.shape, work, weights=not a.dry_run)
    data = work / "pairs.jsonl"
    synthetic_preferences(data, model, SEQ, MB * a.steps)
    env = trainer_env(TrainerJob(device="cuda")) | {"TOKENIZERS_PARALLELISM": "false"}
    if not a.dry_run:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        with open(Path(a.out).with_suffix(".env.json"), "w") as f:
            json.dump(environment(), f)
    t_end = time.time() + a.deadline if a.deadline else 0
    ids = {side: speed_grid.row_id(a.shape, row) for side, row in YICHUI_ROWS.items()}
    for r in range(a.first - 1, a.first - 1 + a.rounds):  # a later call goes on with --first N (the order alternates)
        sides = [x for x in (["trl", "eager", "compiled"] if r % 2 == 0 else ["compiled", "eager", "trl"])
                 if x in a.sides.split(",")]
        for side in sides:
            if t_end and time.time() > t_end:
                print(f"round {r + 1} {side}: skipped (deadline)", flush=True)
                continue
            if side == "trl":
                argv = [sys.executable, __file__, "peer", "--model", str(model), "--data", str(data), "--seq",
                        str(SEQ), "--mb", str(MB), "--steps", str(a.steps), "--out", str(a.out), "--work",
                        str(work), "--id", f"{a.shape}-trl-round{r + 1}"]
            else:  # yichui's trainer: the speed grid's child, on the same pairs (its own copy of them)
                argv = [sys.executable, str(HERE / "speed_grid.py"), "shape", "--set", "dpo-peer", "--shape", a.shape,
                        "--rows", ids[side], "--work", str(work / f"yichui-{side}"), "--out", str(a.out),
                        "--steps", str(a.steps), "--device", "cuda", "--weights-from", str(model)]
            if a.dry_run:
                print(json.dumps({"round": r + 1, "side": side, "argv": argv}), flush=True)
                continue
            rc = subprocess.run(argv, env=env, cwd=ROOT).returncode
            print(f"round {r + 1} {side}: exit {rc}", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("rounds")
    r.add_argument("--shape", default="qwen2.5-3b")
    r.add_argument("--rounds", type=int, default=3)
    r.add_argument("--first", type=int, default=1, help="the first round's number: odd rounds run TRL first")
    r.add_argument("--steps", type=int, default=34)
    r.add_argument("--out", default="dpo-peer.jsonl")
    r.add_argument("--work", required=True)
    r.add_argument("--deadline", type=float, default=0)
    r.add_argument("--dry-run", action="store_true")
    r.add_argument("--sides", default="trl,eager,compiled", help="which sides run in each round")
    q = sub.add_parser("peer")
    for flag in ("--model", "--data", "--out", "--work", "--id"):
        q.add_argument(flag, required=True)
    for flag in ("--seq", "--mb", "--steps"):
        q.add_argument(flag, type=int, required=True)
    q.add_argument("--cpu", action="store_true", help="fp32 on the CPU (the tiny model)")
    a = p.parse_args()
    cmd_rounds(a) if a.cmd == "rounds" else cmd_peer(a)


if __name__ == "__main__":
    main()
