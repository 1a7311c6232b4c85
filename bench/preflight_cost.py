#!/usr/bin/env python3
"""What the preflight smoke run costs on a GPU, and what it saves: recipes.training.preflight.smoke_run (the
choose_strategy step's code) on real model shapes — config.json of Qwen2.5-7B / Llama-3.1-8B, the tiny tokenizer (its ids fit any vocab) —
for LoRA, QLoRA (NF4) and a full fine-tune, plus one strategy that must fail (sequence length 16: no record fits).
Each row: seconds from nothing to the verdict (building the 2-layer random copy included; ``copy_built_s``: until
the copy is built and the spec written), peak reserved GPU memory
of the smoke run, the copy's parameters, and the bytes of the real weights that would have been downloaded first.

    python bench/preflight_cost.py --out $OUT/preflight.jsonl        (GPU machine: bash bench/gpu_run.sh preflight)
    python bench/preflight_cost.py --out F --work DIR --config TINY/config.json --cases 0   (CPU: the same smoke run,
                                                                 every case's shape replaced by that config)
"""
from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

BASE = {"lora_rank": 16, "lora_alpha": 32, "lora_dropout": 0.05, "lora_targets": "all-linear",
        "activation_checkpointing": True, "micro_batch": 4, "grad_accum": 4, "seq_len": 2048, "learning_rate": 2e-4,
        "processes": 1, "nodes": 1, "optim": "adamw", "packing": False, "save_total_limit": 1, "val_ratio": 0.05,
        "skip_bad_records": False, "master_weights": "bf16"}
CASES = [("qwen2.5-7b", {"method": "lora"}), ("qwen2.5-7b", {"method": "qlora"}),
         ("llama3.1-8b", {"method": "lora"}), ("qwen2.5-7b", {"method": "full", "learning_rate": 1e-5}),
         ("qwen2.5-7b", {"method": "lora", "seq_len": 16}),  # must fail: every record is cut away
         # the serving chain's plan (bench/serve_chain.py): compiled layers, no checkpointing — the smoke run's copy
         # trains eager layers since 2026-12-06 (preflight.smoke_spec), where it compiled them before
         ("qwen2.5-0.5b", {"method": "lora", "compile_layers": True, "activation_checkpointing": False})]


class Ctx:
    """The part of recipes.base.Ctx the preflight uses (smoke_run, runner.follow): where to work, how to speak."""

    def __init__(self, work: Path, rid: str):
        from wizard import i18n

        self.home, self.run_dir, self.session_id, self.task = work, work / "runs" / rid, rid, "finetune"
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.t = lambda m, **a: i18n.render(m, **a)

    def info(self, m, **a) -> None:
        print(self.t(m, **a), flush=True)

    warn = info

    @contextlib.contextmanager
    def live(self, title):
        """The trainer's live view as lines: the title, then the last fields it was given."""
        last: dict = {}
        print(self.t(title), flush=True)
        yield lambda fields: last.update(fields)
        print(json.dumps({k: str(v) for k, v in last.items() if not k.startswith("_")}, ensure_ascii=False), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default=None)
    ap.add_argument("--config", default=None, help="a config.json for every case instead of its shape's (the tiny "
                    "model's on a CPU)")
    ap.add_argument("--cases", default=None, help="comma list of case numbers (default: all)")
    ap.add_argument("--start", default="warm", help="warm: the trainer imports its libraries while the copy is built "
                    "(as the wizard does); cold: it starts after the build (before 2026-12-06); a comma list runs "
                    "each case once per entry, in that order, the order turned round on every other case")
    a = ap.parse_args()

    from memory_accuracy import environment

    env = environment()
    work = Path(a.work or tempfile.mkdtemp(prefix="yichui-preflight-"))
    starts, n = a.start.split(","), 0
    for i, (shape, over) in enumerate(CASES):
        if a.cases and str(i) not in a.cases.split(","):
            continue
        n += 1
        for start in starts if n % 2 else starts[::-1]:
            case(a, i, shape, over, start, work, env)


def case(a, i: int, shape: str, over: dict, start: str, work: Path, env: dict) -> None:
    """One smoke run of case ``i``, its trainer started ``start`` (warm | cold); its row appended to ``a.out``."""
    from memory_accuracy import prepare_shape, synthetic_dataset, trainer_job

    from recipes.base import StepError
    from recipes.memory import model as memory
    from recipes.rundir import RunDir, TrainDir
    from recipes.training import preflight

    meta = prepare_shape(shape, work, weights=False)
    if a.config:
        shutil.copy(a.config, meta / "config.json")
    data = work / f"{shape}.jsonl"
    if not data.exists():
        synthetic_dataset(data, meta, 1024, 256)
    strategy = BASE | over
    config = json.loads((meta / "config.json").read_text())
    full_bytes = memory.shape_from_config(config).n_params * 2  # the bf16 checkpoint a download would fetch
    t0 = time.time()
    knobs = ("method", "seq_len", "micro_batch", "grad_accum", "compile_layers", "activation_checkpointing")
    row = {"case": i, "shape": shape, "start": start, **{k: strategy.get(k) for k in knobs},
           "weights_download_gib": round(full_bytes / 2**30, 2)}
    ctx = Ctx(work, f"case-{i}")
    try:
        out = preflight.smoke_run(ctx, trainer_job(strategy | {"dataset_path": str(data)}), meta,
                                  warm_start=start == "warm")
        row |= {"ok": True, "params_m": round(out["params"] / 1e6, 1), "losses": out["losses"],
                "peak_mem_gib": out["peak_mem_gib"], "mem_kind": out["mem_kind"], "device": out["device"]}
    except StepError as e:
        row |= {"ok": False, "error_key": e.msg.key, "error": str(e.msg.args.get("error", ""))[:300]}
    spec = TrainDir(RunDir(ctx.run_dir).preflight.root).spec
    if spec.exists():  # the copy built and the spec written (the trainer waits for it): the wizard's own part, in s
        row["copy_built_s"] = round(spec.stat().st_mtime - t0, 1)
    row["seconds"] = round(time.time() - t0, 1)
    row |= env
    print(json.dumps(row), flush=True)
    with open(a.out, "a") as f:
        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
