#!/usr/bin/env python3
"""DeepSpeed ZeRO-3 with weights and optimizer states offloaded to NVMe files (ZeRO-Infinity; recipes/training/nvme.py)
against the same full fine-tune without offload, on one GPU: peak GPU memory (nvidia-smi's view), tokens/s, and
what the swap folder held. yichui's own trainer, one process under DeepSpeed, launched as the train step launches it
(torch.distributed.run, standalone: recipes.training.runner.worker_argv).

    python bench/nvme_offload.py --work DIR --swap DIR --out rows.jsonl [--shape qwen2.5-1.5b] [--steps 6]
    python bench/nvme_offload.py --work DIR --swap DIR --dry-run     (CPU: each variant's spec and command, printed)

libaio must be findable by DeepSpeed's async_io op (CFLAGS/LDFLAGS/CPATH/LIBRARY_PATH/LD_LIBRARY_PATH where it is not
installed system-wide).
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import memory_accuracy as ma  # noqa: E402


def trainer_rss() -> int:
    """Resident bytes (VmRSS) of every process running yichui's trainer (recipes.training.worker) now, not the
    launcher (torch.distributed.run) that started it."""
    import psutil

    return sum(p.info["memory_info"].rss for p in psutil.process_iter(["cmdline", "memory_info"])
               if "recipes.training.worker" in (p.info["cmdline"] or ())
               and "torch.distributed.run" not in p.info["cmdline"] and p.info["memory_info"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", required=True)
    ap.add_argument("--swap", required=True)
    ap.add_argument("--out", help="required but with --dry-run")
    ap.add_argument("--shape", default="qwen2.5-1.5b")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--variants", default="zero3,zero3-nvme", help="of zero3 (no offload), zero3-cpu (weights and "
                    "optimizer states to CPU memory), zero3-nvme")
    ap.add_argument("--dry-run", action="store_true", help="print each variant's spec and command; train nothing")
    a = ap.parse_args()
    if not a.out and not a.dry_run:
        ap.error("--out is required")
    ma.DRY_RUN = a.dry_run
    work, env = Path(a.work), ma.environment()
    model = ma.prepare_shape(a.shape, work, weights=False)
    variants = {"zero3": {"distribution": "zero3", "offload": "none"},
                "zero3-cpu": {"distribution": "zero3", "offload": "all", "offload_device": "cpu"},
                "zero3-nvme": {"distribution": "zero3", "offload": "all", "offload_device": "nvme", "nvme_path": a.swap}}
    for name in a.variants.split(","):
        extra = variants[name]
        peak, rss = [0], [0]
        stop = threading.Event()

        def watch():  # the swap folder's size while the run goes on (DeepSpeed removes its files at the end), and
            # the trainer's resident memory (pinned buffers and offloaded states are resident: VmRSS counts them)
            while not stop.wait(0.5):
                peak[0] = max(peak[0], sum(f.stat().st_size for f in Path(a.swap).rglob("*") if f.is_file()))
                rss[0] = max(rss[0], trainer_rss())

        t = threading.Thread(target=watch, daemon=True)
        t.start()
        cfg = (a.shape, "full", True, 1024, 1, extra)
        row = ma.measure_one(cfg, model, work / name, "0", a.steps)
        stop.set()
        t.join()
        if a.dry_run:
            print(json.dumps(row | {"variant": name}), flush=True)
            continue
        row |= {"variant": name, "env": env, "swap_peak_bytes": peak[0], "host_rss_peak_bytes": rss[0],
                "tokens_per_s": ma.median_tokens_per_s(ma.events(work / name / "runs" / row["id"]))}
        with open(a.out, "a") as f:
            f.write(json.dumps(row) + "\n")
        print(name, row["rc"], row.get("device_peak_gib"), row.get("tokens_per_s"), peak[0] / 2**30, rss[0] / 2**30,
              (row.get("error") or "")[-600:], flush=True)


if __name__ == "__main__":
    main()
