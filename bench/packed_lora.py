#!/usr/bin/env python3
"""LoRA on a pre-quantized base kept quantized (recipes/training/packed.py) against LoRA on the same base in bf16:
peak GPU memory (what nvidia-smi shows: peak reserved + outside the allocator), tokens/s, and the memory model's
prediction for both, in the same run on the same GPU.

The quantized base is the bf16 checkpoint of random weights (bench/memory_accuracy.py prepare_shape) written as a
compressed-tensors W4A16 checkpoint (4-bit, symmetric, groups of 128, bf16 scales, lm_head left in bf16) —
round-to-nearest scales through compressed-tensors' own compressor: GPTQ's calibration changes the values, not the
layout, so memory and speed are the same as for a GPTQ export of that shape.

    python bench/packed_lora.py measure --work DIR --out rows.jsonl [--steps 8] [--eager-too]   # GPU machine
    python bench/packed_lora.py report rows.jsonl [--md out.md]                   # anywhere
    python bench/packed_lora.py measure --work DIR --dry-run [--dense DIR --device cpu]   # CPU: quantize, print runs
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import memory_accuracy as ma  # noqa: E402

W4A16 = {"quant_method": "compressed-tensors", "format": "pack-quantized", "quantization_status": "compressed",
         "ignore": ["lm_head"], "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
             "num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": 128}}}}
# (shape, activation checkpointing, sequence length, micro-batch): each measured on the bf16 and the W4A16 base
GRID = [
    ("qwen2.5-7b", True, 2048, 1),
    ("qwen2.5-7b", False, 1024, 2),
    ("qwen2.5-1.5b", True, 2048, 4),
]


def quantize_folder(dense: Path, out: Path, device: str = "cuda") -> Path:
    """``dense`` (bf16 safetensors) written as a compressed-tensors W4A16 checkpoint in ``out``, one tensor at a
    time on the GPU."""
    import shutil

    import torch
    from compressed_tensors.compressors.pack_quantized.base import PackedQuantizationCompressor
    from compressed_tensors.quantization import QuantizationArgs, QuantizationScheme
    from safetensors import safe_open
    from safetensors.torch import save_file

    if (out / "config.json").is_file():
        return out
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    w = W4A16["config_groups"]["group_0"]["weights"]
    scheme = QuantizationScheme(targets=["Linear"], weights=QuantizationArgs(**w))
    for f in dense.iterdir():
        if f.suffix != ".safetensors" and f.name != "model.safetensors.index.json":
            shutil.copy(f, tmp / f.name)
    for f in sorted(dense.glob("*.safetensors")):
        tensors = {}
        with safe_open(str(f), "pt", device=device) as src:
            for k in src.keys():
                t = src.get_tensor(k)
                if k.endswith("_proj.weight") and ".layers." in k:  # the decoder's linear layers
                    g = t.reshape(t.shape[0], -1, w["group_size"])
                    scale = (g.abs().amax(-1) / 7.5).clamp(min=1e-8).to(torch.bfloat16)
                    for n, v in PackedQuantizationCompressor.compress({"weight": t, "weight_scale": scale},
                                                                      scheme).items():
                        tensors[k[:-len("weight")] + n] = v.contiguous().cpu()
                else:
                    tensors[k] = t.cpu()
        save_file(tensors, tmp / f.name, metadata={"format": "pt"})
    index = dense / "model.safetensors.index.json"
    if index.exists():  # the shards' index names each tensor's file: the packed names now
        idx = json.loads(index.read_text())
        wm = {}
        for k, file in idx["weight_map"].items():
            if k.endswith("_proj.weight") and ".layers." in k:
                for n in ("weight_packed", "weight_scale", "weight_shape"):
                    wm[k[:-len("weight")] + n] = file
            else:
                wm[k] = file
        idx["weight_map"] = wm
        (tmp / index.name).write_text(json.dumps(idx, indent=2))
    cfg = json.loads((dense / "config.json").read_text())
    cfg["quantization_config"] = W4A16
    (tmp / "config.json").write_text(json.dumps(cfg, indent=2))
    tmp.rename(out)
    return out


def cmd_measure(a) -> None:
    ma.DRY_RUN = a.dry_run  # the quantize runs (no weights without --dense: config and tokenizer only), no trainer
    work, out = Path(a.work), Path(a.out or os.devnull)
    work.mkdir(parents=True, exist_ok=True)
    env = ma.environment()
    print(json.dumps(env), flush=True)
    for shape, ckpt, seq, batch in GRID:
        if a.only and shape not in a.only.split(","):
            continue
        t0 = time.time()
        # --dense: a CPU rehearsal on a small folder of bf16 weights (its config's hidden size a multiple of 128)
        dense = Path(a.dense) if a.dense else ma.prepare_shape(shape, work, weights=True)
        packed = work / f"{shape}-w4a16"
        # in a process of its own: a CUDA context and cached blocks held here would count in every measurement
        subprocess.run([sys.executable, __file__, "quantize", str(dense), str(packed), "--device", a.device],
                       check=True)
        prep = round(time.time() - t0, 1)
        variants = [("bf16", dense, "1"), ("w4a16", packed, "1")]
        if a.eager_too and (shape, ckpt, seq, batch) == GRID[0]:  # without torch.compile: the speed it gains
            variants.append(("w4a16-eager", packed, "0"))
        for base, d, compiled in variants:
            os.environ["YICHUI_PACKED_COMPILE"] = compiled
            cfg = (shape, "lora", ckpt, seq, batch, {"init": "pretrained"})
            row = ma.measure_one(cfg, d, work / base, "0", a.steps, a.device) | {"base": base, "env": env,
                                                                      "prepare_s": prep}
            if a.dry_run:
                print(json.dumps({k: v for k, v in row.items() if k != "env"} | {"packed_compile": compiled}),
                      flush=True)
                continue
            tdir = work / base / "runs" / row["id"]
            row["tokens_per_s"] = ma.median_tokens_per_s(ma.events(tdir))
            res = tdir / "result.json"
            if res.exists():
                row["packed_base"] = json.loads(res.read_text()).get("packed_base")
            with open(out, "a") as f:
                f.write(json.dumps(row) + "\n")
            print(f"{base:6s} {row['id']:44s} rc={row['rc']} device={row.get('device_peak_gib')} "
                  f"reserved={row.get('peak_reserved_gib')} tok/s={row['tokens_per_s']} wall={row['wall_s']}s",
                  flush=True)


def cmd_report(a) -> None:
    import bench_fit as fit

    from recipes.memory import model as memory

    rows = [r for r in fit.load(a.results)]
    lines = ["| configuration | base | measured GiB | yichui GiB | error | tokens/s | packed layers (bytes held / bf16) |",
             "|---|---|---:|---:|---:|---:|---|"]
    pairs: dict = {}
    for r in rows:
        cfg = json.loads((ma.CONFIGS / r["shape"] / "config.json").read_text())
        if r["base"].startswith("w4a16"):
            cfg["quantization_config"] = W4A16
        p = memory.estimate(memory.shape_from_config(cfg), fit.training(r | {"adapter_input_cast": False}))
        e = (p["peak_gib"] - r["device_gib"]) / r["device_gib"]
        pk = r.get("packed_base") or {}
        held = f"{pk['layers']}: {pk['packed_bytes'] / 2**30:.2f} / {pk['dense_bytes'] / 2**30:.2f} GiB" if pk else "—"
        lines.append(f"| {r['id']} | {r['base']} | {r['device_gib']:.2f} | {p['peak_gib']:.2f} | {e:+.1%} | "
                     f"{r.get('tokens_per_s') or '—'} | {held} |")
        pairs.setdefault(r["id"], {})[r["base"]] = r
    lines += ["", "| configuration | memory w4a16 / bf16 | tokens/s w4a16 / bf16 |", "|---|---:|---:|"]
    for rid, p in pairs.items():
        if {"bf16", "w4a16"} <= p.keys():
            b, q = p["bf16"], p["w4a16"]
            speed = f"{q['tokens_per_s'] / b['tokens_per_s']:.2f}" if q.get("tokens_per_s") and b.get("tokens_per_s") \
                else "—"
            lines.append(f"| {rid} | {q['device_gib'] / b['device_gib']:.2f} | {speed} |")
    text = "\n".join(lines)
    print(text)
    if a.md:
        Path(a.md).write_text(text + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--work", required=True)
    m.add_argument("--out", help="required but with --dry-run")
    m.add_argument("--steps", type=int, default=8)
    m.add_argument("--only", default="")
    m.add_argument("--device", default="cuda")
    m.add_argument("--dense", help="a folder of bf16 weights to use for every shape (CPU rehearsal)")
    m.add_argument("--eager-too", action="store_true", help="also the first shape without the compiled rebuild")
    m.add_argument("--dry-run", action="store_true", help="prepare and quantize, then print each run; train nothing")
    q = sub.add_parser("quantize")
    q.add_argument("dense")
    q.add_argument("out")
    q.add_argument("--device", default="cuda")
    r = sub.add_parser("report")
    r.add_argument("results", nargs="+")
    r.add_argument("--md")
    a = ap.parse_args()
    if a.cmd == "measure" and not a.out and not a.dry_run:
        ap.error("measure: --out is required")
    if a.cmd == "quantize":
        quantize_folder(Path(a.dense), Path(a.out), a.device)
    else:
        {"measure": cmd_measure, "report": cmd_report}[a.cmd](a)


if __name__ == "__main__":
    main()
