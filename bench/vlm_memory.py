#!/usr/bin/env python3
"""Memory-model accuracy for vision-language models (issue 22): predicted vs measured peak GPU memory of yichui's own
trainer fine-tuning Qwen2.5-VL shapes on image-text records.

Measure (GPU machine): for each row of the grid, a model folder with the real config.json (bench/configs/
qwen2.5-vl-*), a tiny tokenizer and Qwen2-VL processor (:func:`processor_files`; their token ids written into the
config, the vocabulary size kept) and processor limits that keep every image at its rendered size; image-text
records (recipes/data/shapes.py rendered and resized to N × N pixels, ``k`` images per record, an assistant turn of
about ``text`` tokens); then ``recipes.training.worker`` (its own process, ``init: random``: random bf16 weights of the
real shape) for a few steps, and the peak as nvidia-smi shows it (peak reserved + what lies outside the allocator,
the worker's own ``gpu_memory``). Images are never truncated: a sequence is its text tokens and its image tokens.

    python bench/vlm_memory.py measure --out rows.jsonl [--grid 1|2] [--work DIR] [--only ID,ID] [--steps 4]
    python bench/vlm_memory.py measure --dry-run --only ID --steps 1 --work DIR   (CPU: builds the row, prints it)

Report (CPU, from committed rows): the current recipes/memory/model.py beside each row, signed errors, the summary.

    python bench/vlm_memory.py report [ROWS.jsonl …] [--md FILE]   (default: the committed rows)
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
CONFIGS = Path(__file__).resolve().parent / "configs"
TEXT_TOKENS = 512  # the assistant turn's tokens (about): the text part of every sequence

# (shape, method, activation checkpointing, image side in pixels, images per record, micro-batch)
GRID = [
    ("qwen2.5-vl-3b", "lora", True, 224, 1, 4),
    ("qwen2.5-vl-3b", "lora", True, 448, 1, 2),
    ("qwen2.5-vl-3b", "lora", True, 896, 1, 1),
    ("qwen2.5-vl-3b", "lora", True, 448, 2, 2),
    ("qwen2.5-vl-3b", "lora", False, 224, 1, 4),
    ("qwen2.5-vl-3b", "lora", False, 448, 1, 2),
    ("qwen2.5-vl-3b", "lora", False, 896, 1, 1),
    ("qwen2.5-vl-3b", "full", True, 448, 1, 2),
    ("qwen2.5-vl-7b", "lora", True, 224, 1, 4),
    ("qwen2.5-vl-7b", "lora", True, 448, 1, 2),
    ("qwen2.5-vl-7b", "lora", True, 896, 1, 2),
    ("qwen2.5-vl-7b", "lora", True, 1344, 1, 1),
    ("qwen2.5-vl-7b", "lora", False, 448, 1, 1),
    ("qwen2.5-vl-7b", "lora", False, 896, 1, 1),
    ("qwen2.5-vl-3b", "full", False, 224, 1, 2),
    ("qwen2.5-vl-7b", "lora", False, 224, 2, 2),
]
# second round, held out (nothing fitted on it): larger images (2016²: 5184 image tokens, 20736 patches), three
# images per record, the wizard's default fp32 masters for a full fine-tune, a 7B full fine-tune, LoRA without dropout
GRID2 = [
    ("qwen2.5-vl-3b", "full", True, 896, 1, 2, {"master_weights": "fp32"}),
    ("qwen2.5-vl-3b", "lora", True, 2016, 1, 1),
    ("qwen2.5-vl-7b", "lora", True, 2016, 1, 2),
    ("qwen2.5-vl-7b", "lora", False, 1344, 2, 1),
    ("qwen2.5-vl-3b", "lora", False, 1344, 1, 2),
    ("qwen2.5-vl-7b", "full", True, 448, 1, 1),
    ("qwen2.5-vl-3b", "lora", True, 672, 3, 1),
    ("qwen2.5-vl-7b", "lora", True, 448, 1, 4, {"lora_dropout": 0.0}),
]
# third round: does padding cost the no-checkpointing rows of micro-batch > 1 their extra memory? The same rows with
# records of one length (no padding in a micro-batch)
GRID3 = [
    ("qwen2.5-vl-3b", "lora", False, 448, 1, 2, {"same_length": True}),
    ("qwen2.5-vl-3b", "lora", False, 1344, 1, 2, {"same_length": True}),
    ("qwen2.5-vl-7b", "lora", False, 224, 2, 2, {"same_length": True}),
]
# fourth round: the checkpointed rows again once the trainer keeps a frozen tower out of the backward pass
# (recipes/model/vision.py tower_out_of_backward; rounds 1-3 ran with transformers' hook on the tower's patch
# embedding, so their checkpointed rows held the tower's block inputs). Predicted before they ran.
GRID4 = [
    ("qwen2.5-vl-3b", "lora", True, 224, 1, 4, {"tower": "frozen-out"}),
    ("qwen2.5-vl-3b", "lora", True, 896, 1, 1, {"tower": "frozen-out"}),
    ("qwen2.5-vl-3b", "lora", True, 2016, 1, 1, {"tower": "frozen-out"}),
    ("qwen2.5-vl-3b", "lora", True, 672, 3, 1, {"tower": "frozen-out"}),
    ("qwen2.5-vl-3b", "full", True, 448, 1, 2, {"tower": "frozen-out"}),
    ("qwen2.5-vl-7b", "lora", True, 448, 1, 2, {"tower": "frozen-out"}),
    ("qwen2.5-vl-7b", "lora", True, 2016, 1, 2, {"tower": "frozen-out"}),
    ("qwen2.5-vl-7b", "full", True, 448, 1, 1, {"tower": "frozen-out"}),
]
GRIDS = {"1": GRID, "2": GRID2, "3": GRID3, "4": GRID4}


def row_id(shape, method, ckpt, px, k, batch, extra=None) -> str:
    tail = "".join(f"-{k_.replace('lora_', '').replace('master_weights', 'masters')}{v}"
                   for k_, v in sorted((extra or {}).items()))
    return f"{shape}-{method}-{'ckpt' if ckpt else 'nockpt'}-img{px}x{k}-b{batch}{tail}"


VISION_TOKENS = ["<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
# Qwen2-VL's chat template, reduced to text and image entries (an image: <|vision_start|><|image_pad|><|vision_end|>,
# which the processor expands into the image's tokens)
CHAT_TEMPLATE = (
    "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['content'] is string %}{{- message['content'] }}{%- else %}"
    "{%- for c in message['content'] %}"
    "{%- if c['type'] == 'image' %}{{- '<|vision_start|><|image_pad|><|vision_end|>' }}"
    "{%- elif c['type'] == 'text' %}{{- c['text'] }}{%- endif %}"
    "{%- endfor %}{%- endif %}{{- '<|im_end|>\\n' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
MIN_PIXELS, MAX_PIXELS = 56 * 56, 2016 * 2016  # any N × N image with N a multiple of 28 in between stays as it is


def processor_files(dest: Path) -> dict:
    """A Qwen2-VL processor's files in ``dest``: the tiny text model's BPE tokenizer (its ids fit any vocabulary) with
    Qwen2-VL's vision tokens and the chat template above, Qwen2-VL's image processor between MIN_PIXELS and
    MAX_PIXELS. Returns the special tokens' ids (for the config). Built here rather than from recipes/demo/tiny_vlm.py
    so that the measured rows do not move with the demo."""
    from transformers import Qwen2VLImageProcessorPil

    from recipes.demo import tiny_model as tiny
    from recipes.demo.tiny_vlm import standard_qwen2_vl_files
    from recipes.model.vision import _image_text_processor_class

    tok = tiny._train_tokenizer(tiny._generic_corpus()[:20])
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", *VISION_TOKENS]})
    tok.chat_template = CHAT_TEMPLATE
    image = Qwen2VLImageProcessorPil(min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS)
    _image_text_processor_class()(image_processor=image, tokenizer=tok, chat_template=CHAT_TEMPLATE).save_pretrained(dest)
    standard_qwen2_vl_files(dest)  # AutoProcessor builds the whole Qwen2VLProcessor on the GPU (torchvision)
    ids = {t: tok.convert_tokens_to_ids(t) for t in VISION_TOKENS + ["<|im_end|>", "<|endoftext|>"]}
    return {"image_token_id": ids["<|image_pad|>"], "video_token_id": ids["<|video_pad|>"],
            "vision_token_id": ids["<|image_pad|>"], "vision_start_token_id": ids["<|vision_start|>"],
            "vision_end_token_id": ids["<|vision_end|>"], "eos_token_id": ids["<|im_end|>"],
            "pad_token_id": ids["<|endoftext|>"], "bos_token_id": None}


def prepare_shape(shape: str, work: Path, config: dict | None = None) -> Path:
    """A model folder: the real config.json (or ``config``) with the processor's special-token ids, and the
    processor (:func:`processor_files`)."""
    d = work / shape
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    ids = processor_files(d)
    cfg = config or json.loads((CONFIGS / shape / "config.json").read_text())
    (d / "config.json").write_text(json.dumps(cfg | ids, indent=2))
    return d


def image_tokens(px: int, patch: int = 14, merge: int = 2) -> int:
    """Qwen2-VL-family image tokens of an N × N image the processor leaves as it is: (N/14)² patches / 2²."""
    return (px // patch) ** 2 // merge**2


def write_records(dest: Path, model_dir: Path, px: int, k: int, n: int,
                  same_length: bool = False) -> tuple[Path, list[int]]:
    """``n`` records of ``k`` rendered images of ``px`` × ``px`` and an assistant turn of about TEXT_TOKENS tokens;
    returns the jsonl and each record's tokens as the processor counts them (text + image tokens). The user turn
    numbers the record ("Describe 7."), so lengths differ by a token and a micro-batch is padded; ``same_length``:
    one question for all, every record of one length."""
    from PIL import Image

    from recipes.data import shapes
    from recipes.model.vision import load_processor

    proc = load_processor(model_dir)
    tok = proc.tokenizer
    rng = random.Random(px * 10 + k)
    (dest / "images").mkdir(parents=True, exist_ok=True)
    words = "model memory token layer batch weight gradient optimizer adapter rank attention logits".split()
    text = ""
    while len(tok(text)["input_ids"]) < TEXT_TOKENS:
        text += " ".join(rng.choice(words) for _ in range(64)) + ". "
    recs, counts = [], []
    colours, kinds = list(shapes.COLOURS), list(shapes.SHAPES)
    for i in range(n):
        paths, imgs = [], []
        for j in range(k):
            img = shapes.render(rng.choice(colours), rng.choice(kinds), rng).resize((px, px), Image.BICUBIC)
            rel = f"images/{i:03d}-{j}.png"
            img.save(dest / rel)
            paths.append(rel)
            imgs.append(img)
        ask = "Describe." if same_length else f"Describe {i}."
        msgs = [{"role": "user", "content": [{"type": "image"}] * k + [{"type": "text", "text": ask}]},
                {"role": "assistant", "content": text}]
        recs.append({"images": paths, "messages": msgs})
        full = proc.apply_chat_template(msgs, tokenize=False)
        counts.append(int(proc(text=[full], images=imgs, return_tensors="pt")["input_ids"].shape[1]))
    path = dest / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path, counts


def measure_one(cfg: tuple, model_dir: Path, work: Path, steps: int, device: str = "cuda") -> dict:
    import memory_accuracy as ma

    shape, method, ckpt, px, k, batch = cfg[:6]
    extra = cfg[6] if len(cfg) > 6 else {}
    rid = row_id(*cfg)
    tdir = work / "runs" / rid
    shutil.rmtree(tdir, ignore_errors=True)
    tdir.mkdir(parents=True)
    extra = dict(extra)
    same_length = extra.pop("same_length", False)
    tower = extra.pop("tower", "in-backward")  # rounds 1-3: the trainer before tower_out_of_backward
    data, counts = write_records(tdir, model_dir, px, k, batch * steps, same_length)
    job = ma.trainer_job({"model_dir": str(model_dir), "init": "random", "method": method, "lora_rank": 16,
                          "lora_alpha": 32, "lora_dropout": 0.05, "lora_targets": "all-linear",
                          "activation_checkpointing": ckpt, "dataset_path": str(data), "micro_batch": batch,
                          "grad_accum": 1, "learning_rate": 1e-5, "max_steps": steps, "save_steps": 0,
                          "save_total_limit": 1, "save_final": False, "sample_question": None, "device": device,
                          "attn_implementation": "sdpa", "optim": "adamw", "master_weights": "bf16"} | extra)
    argv, env = ma.launch(job, tdir)
    img_tok = image_tokens(px)
    if ma.DRY_RUN:
        return ma.planned(rid, job, argv, image_tokens=img_tok * k, seq_tokens=max(counts))
    t0 = time.time()
    with open(tdir / "trainer.log", "w") as log:
        rc = subprocess.run(argv, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT).returncode
    row = {"id": rid, "shape": shape, "method": method, "ckpt": ckpt, "image_px": px, "images": k, "batch": batch,
           "image_tokens": img_tok * k, "seq_tokens": max(counts), "seq_tokens_all": counts,
           "text_tokens": max(counts) - img_tok * k, "lora_rank": 16, "lora_dropout": job.lora_dropout,
           "master_weights": job.master_weights, "same_length": same_length, "tower": tower, "steps": steps, "rc": rc,
           "wall_s": round(time.time() - t0, 1)}
    result = tdir / "result.json"
    if result.exists():
        r = json.loads(result.read_text())
        row |= (r["gpu_memory"] or {}) | {"runtime_s": r["runtime_s"], "peak_mem_gib": r["peak_mem_gib"]}
    else:
        err = next((e for e in ma.events(tdir) if e["event"] == "error"), None)
        row["error"] = err["message"] if err else (tdir / "trainer.log").read_text()[-1500:]
    return row


def cmd_measure(a) -> None:
    import memory_accuracy as ma

    ma.DRY_RUN = a.dry_run
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    grid = [g for g in GRIDS[a.grid] if not a.only or row_id(*g) in a.only.split(",") or g[0] in a.only.split(",")]
    done = set()
    out = Path(a.out or os.devnull)
    if out.is_file():  # a resumed run skips what it measured
        done = {json.loads(x)["id"] for x in out.read_text().splitlines() if x.strip()}
    env = ma.environment()
    print(json.dumps(env), flush=True)
    dirs = {s: prepare_shape(s, work) for s in dict.fromkeys(g[0] for g in grid)}
    for cfg in grid:
        if row_id(*cfg) in done:
            continue
        row = measure_one(cfg, dirs[cfg[0]], work, a.steps, a.device)
        if ma.DRY_RUN:
            print(json.dumps(row), flush=True)
            continue
        row |= {"env": env}
        with open(out, "a") as f:
            f.write(json.dumps(row) + "\n")
        print(f"{row['id']:44s} rc={row['rc']} tokens={row['seq_tokens']} device_peak={row.get('device_peak_gib')} "
              f"wall={row['wall_s']}s {row.get('error', '')[-300:]}", flush=True)
    print(json.dumps({"phase": "done"}), flush=True)


def spec_of(r: dict):
    """The TrainingSpec a row ran, with its images (seq_len: the row's text tokens; the image tokens are added by
    the memory model from ``images_per_sample`` and ``image_size``)."""
    from recipes.training.spec import TrainingSpec

    return TrainingSpec(method=r["method"], lora_rank=r["lora_rank"], lora_alpha=2 * r["lora_rank"],
                        lora_dropout=r["lora_dropout"], activation_checkpointing=r["ckpt"], micro_batch=r["batch"],
                        seq_len=r["text_tokens"], master_weights=r["master_weights"],
                        images_per_sample=r["images"], image_size=r["image_px"])


def shape(name: str):
    from recipes.memory.model import shape_from_config

    return shape_from_config(json.loads((CONFIGS / name / "config.json").read_text()))


def predict(rows: list[dict]) -> list[tuple[dict, dict, float]]:
    from recipes.memory.model import estimate

    shapes: dict = {}
    out = []
    for r in rows:
        if r["shape"] not in shapes:
            shapes[r["shape"]] = shape(r["shape"])
        e = estimate(shapes[r["shape"]], spec_of(r))
        out.append((r, e, (e["peak_gib"] - r["device_peak_gib"]) / r["device_peak_gib"]))
    return out


def load(paths: list[str]) -> list[dict]:
    rows = []
    for p in paths:
        rows += [json.loads(x) for x in Path(p).read_text().splitlines() if x.strip()]
    return [r for r in rows if r.get("device_peak_gib")]


# what each committed row was used for: PAD_H was fitted on the padded rows of three equal-length twins (round 3);
# round 2 was measured after the model's terms were set (predictions written before, see the results page); the
# twins themselves are diagnostics (records of one length: the model assumes padded micro-batches)
PAD_FIT = ("qwen2.5-vl-3b-lora-nockpt-img448x1-b2", "qwen2.5-vl-3b-lora-nockpt-img1344x1-b2",
           "qwen2.5-vl-7b-lora-nockpt-img224x2-b2")
HELD_OUT = tuple(row_id(*g) for g in GRID2 if row_id(*g) not in PAD_FIT)
RESULTS = sorted((Path(__file__).resolve().parent / "results").glob("2026-12-02-memory-vlm-h200-raw*.jsonl"))


def role(r: dict) -> str:
    if r.get("same_length"):
        return "twin"
    if r.get("tower") == "frozen-out":
        return "round 4"
    if r["ckpt"]:  # the frozen tower was in the backward pass then (transformers' hook): no longer what runs
        return "superseded"
    return "fit" if r["id"] in PAD_FIT else "held out" if r["id"] in HELD_OUT else "round 1"


def summary(errs: list[float]) -> str:
    mae = sum(map(abs, errs)) / len(errs)
    return (f"{len(errs)} rows: mean |error| {mae:.1%}, worst {max(errs, key=abs):+.1%}, most under {min(errs):+.1%}"
            f" — goal (mean |error| ≤ 5 %, none under −5 %) {'met' if mae <= 0.05 and min(errs) >= -0.05 else 'NOT met'}")


def cmd_report(a) -> None:
    rows = sorted(load(a.results or RESULTS),
                  key=lambda r: (r["shape"], r["method"], not r["ckpt"], r["image_px"], r["images"], r["batch"]))
    lines = ["| shape | method | ckpt | image px × n | image tokens / seq | tokens / seq | micro-batch | measured GiB |"
             " yichui GiB | error | vision ckpt GiB | row |", "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    by_role: dict = {}
    for r, e, err in predict(rows):
        by_role.setdefault(role(r), []).append(err)
        method = r["method"] + (" fp32 masters" if r["method"] == "full" and r["master_weights"] == "fp32" else "") \
            + (" no dropout" if r["method"] == "lora" and not r["lora_dropout"] else "")
        lines.append(f"| {r['shape']} | {method} | {'yes' if r['ckpt'] else 'no'} | {r['image_px']} × {r['images']} | "
                     f"{r['image_tokens']} | {r['seq_tokens']} | {r['batch']} | {r['device_peak_gib']:.2f} | "
                     f"{e['peak_gib']:.2f} | {err:+.1%} | {e['components'].get('vision_activations', 0):.2f} | "
                     f"{role(r)}{' (equal lengths)' if r.get('same_length') else ''} |")
    real = [x for k, v in by_role.items() if k not in ("twin", "superseded") for x in v]
    out = [f"image records as they come (padded micro-batches), the trainer as it is now, all {summary(real)}"]
    out += [f"{k}: {summary(by_role[k])}" for k in ("round 1", "held out", "fit", "round 4") if by_role.get(k)]
    if by_role.get("superseded"):
        out.append("checkpointed rows of rounds 1-2, the frozen tower then in the backward pass (superseded by round "
                   f"4; the model now predicts the trainer without it): {summary(by_role['superseded'])}")
    if by_role.get("twin"):
        out.append(f"equal-length twins (diagnostic; the model assumes padding): {summary(by_role['twin'])}")
    text = "\n".join(lines + [""] + [f"- {x}" for x in out])
    print(text)
    if a.md:
        Path(a.md).write_text(text + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--out", help="required but with --dry-run")
    m.add_argument("--work", default="/tmp/yichui-vlm-mem")
    m.add_argument("--only", default=None, help="comma-separated row ids or shapes")
    m.add_argument("--steps", type=int, default=4)
    m.add_argument("--grid", default="1", choices=sorted(GRIDS))
    m.add_argument("--device", default="cuda")
    m.add_argument("--dry-run", action="store_true", help="build every row (processor, images, spec) and print it as "
                   "JSON; train nothing")
    r = sub.add_parser("report")
    r.add_argument("results", nargs="*", help="raw rows (default: the committed bench/results/2026-12-02-memory-vlm-h200-raw*.jsonl)")
    r.add_argument("--md", default=None, help="also write the table here")
    a = ap.parse_args()
    if a.cmd == "measure" and not a.out and not a.dry_run:
        ap.error("measure: --out is required")
    cmd_measure(a) if a.cmd == "measure" else cmd_report(a)


if __name__ == "__main__":
    main()
