#!/usr/bin/env python3
"""Export formats on a GPU: GPTQ W4A16, AWQ W4A16 and FP8 through llm-compressor (in the environment yichui builds
for it) and bitsandbytes NF4, each timed and checked against the bf16 model with recipes/quantization/quality.py.

    YICHUI_WHEELS=.whl-llmc:.whl python bench/export_quality.py measure --out $OUT/export.jsonl [--work DIR]
    python bench/export_quality.py report RESULTS.jsonl [--md PATH]
    python bench/export_quality.py measure --dry-run --work DIR   (CPU: the model folder without weights, the
                                                                   calibration texts, each quantizer's spec, printed)

The model: Qwen2.5-0.5B's shape (bench/configs) with random bf16 weights and the tiny tokenizer — what a GPU
machine without hub access can have. It measures that each quantizer finishes, how long it takes, and how far its
output drifts from the bf16 model; random weights are not a trained model, so the KL figures say nothing about the
quality loss on a real checkpoint. Calibration: 128 synthetic conversations × 512 tokens.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

SHAPE, CALIB, SEQ, HELD = "qwen2.5-0.5b", 128, 512, 16
FORMATS = ("gptq-w4a16", "awq-w4a16", "fp8-dynamic", "bnb-4bit")


def texts(model_dir: Path, n: int, seed: int) -> list[str]:
    import random

    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    rng = random.Random(seed)
    words = "model memory token layer batch weight gradient optimizer adapter rank attention logits".split()
    return [tok.apply_chat_template([{"role": "user", "content": f"Question {i}: " + " ".join(rng.choices(words, k=20))},
                                     {"role": "assistant", "content": " ".join(rng.choices(words, k=300))}],
                                    tokenize=False) for i in range(n)]


def llmc_spec(f: str, model_dir: Path, out: Path, calib: list[str]) -> dict:
    """recipes/quantization/worker.py's spec for format ``f``, as the export step writes it."""
    from recipes.quantization import quantize

    fmt = quantize.FORMATS[f]
    return {"format": f, "merged_dir": str(model_dir), "out_dir": str(out), "scheme": fmt.scheme,
            "modifier": fmt.modifier, "calibration": calib if fmt.calibrated else [], "max_seq_length": SEQ}


def cmd_measure(a) -> None:
    import memory_accuracy as ma

    from recipes.quantization import quality
    from recipes.quantization import quantize

    ma.DRY_RUN = a.dry_run  # the model folder without weights, no quantizer environment, nothing quantized
    work = Path(a.work or tempfile.mkdtemp(prefix="yichui-exportbench-"))
    env_info = ma.environment()
    print(json.dumps(env_info), flush=True)
    model_dir = ma.prepare_shape(SHAPE, work, weights=True)  # random bf16 weights, saved
    t0 = time.time()
    env = {"packages": None} if a.dry_run else quantize.ensure_env(work, print)
    print("quantizer env", json.dumps(env), f"{time.time() - t0:.1f} s", flush=True)
    calib, held = texts(model_dir, CALIB, 1), texts(model_dir, HELD, 2)
    for f in a.formats.split(","):
        fmt, out = quantize.FORMATS[f], work / f
        if a.dry_run:
            spec = llmc_spec(f, model_dir, out, calib) if fmt.tool == "llmc" else {"bits": fmt.bits}
            print(json.dumps({"format": f, "dry_run": True, "tool": fmt.tool, "held_out_texts": len(held)}
                             | spec | {"calibration": len(spec.get("calibration", []))}), flush=True)
            continue
        t0 = time.time()
        row = {"format": f, "shape": SHAPE, "env": env_info, "quantizer_env": env["packages"]}
        try:
            if fmt.tool == "bnb":
                quantize.quantize_bnb(model_dir, out, fmt.bits)
            else:
                quantize.run_llmc(env, llmc_spec(f, model_dir, out, calib), work / f".work-{f}")
            row["seconds"] = round(time.time() - t0, 1)
            row["bytes"] = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
            t1 = time.time()
            row["quality"] = quality.compare(model_dir, out, held, question="What is a gradient?")
            row["check_seconds"] = round(time.time() - t1, 1)
        except Exception as e:  # record and go on with the next format
            row["error"] = f"{type(e).__name__}: {e}"[-1500:]
            log = work / f".work-{f}" / "quantize.log"
            if log.exists():
                row["log_tail"] = log.read_text(errors="replace")[-1500:]
        with open(a.out, "a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(f, {k: v for k, v in row.items() if k not in ("env", "quantizer_env")}, flush=True)


def cmd_report(a) -> None:
    from memory_accuracy import write_report

    rows = [json.loads(x) for x in Path(a.results).read_text().splitlines() if x.strip()]
    rows = list({r["format"]: r for r in rows}.values())  # a later attempt at a format replaces an earlier one
    lines = ["| format | quantize s | check s | MiB | mean KL (nats) | perplexity ratio | reply stops |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['format']} | failed: {r['error'][:120]} | | | | | |")
            continue
        q = r["quality"]
        lines.append(f"| {r['format']} | {r['seconds']} | {r['check_seconds']} | {r['bytes'] / 2**20:.0f} | "
                     f"{q['kl_mean']:.5f} | {q['ppl_ratio']:.4f} | {(q.get('smoke') or {}).get('stopped')} |")
    write_report("\n".join(lines), a.md)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--out", help="required but with --dry-run")
    m.add_argument("--work", default=None)
    m.add_argument("--formats", default=",".join(FORMATS))
    m.add_argument("--dry-run", action="store_true", help="print each quantizer's spec; quantize nothing")
    r = sub.add_parser("report")
    r.add_argument("results")
    r.add_argument("--md", default=None)
    a = ap.parse_args()
    if a.cmd == "measure" and not a.out and not a.dry_run:
        ap.error("measure: --out is required")
    cmd_measure(a) if a.cmd == "measure" else cmd_report(a)


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
