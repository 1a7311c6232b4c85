#!/usr/bin/env python3
"""A vision-language model of a real shape through the whole chain on a GPU, served by vLLM (issue 22).

    python bench/vlm_chain.py run --work /root/vlm-chain --results /root/vlm-results [--shape qwen2.5-vl-3b]
    python bench/vlm_chain.py report RESULTS_DIR [--md FILE]
    python bench/vlm_chain.py run --dry-run --work W --results R --train-images 4 --heldout-images 2
                                  (CPU: the data rendered, the chain's command with its answers checked; no model)

``run`` (on the GPU machine, after ``bash bench/serve_gpu.sh setup`` with yichui's stack and vLLM carried) appends
one row per phase to ``RESULTS/rows.jsonl`` as each ends (a failed phase is recorded with its error):

1. ``base``: a model folder of ``--shape``'s real config.json (bench/configs) with random bf16 weights and a Qwen2-VL
   processor (bench/vlm_memory.processor_files: a tiny BPE tokenizer with Qwen2-VL's vision tokens and a ChatML
   template) whose images are resized to at most ``--px``² pixels — not a released checkpoint (the GPU machine
   reaches no hub).
2. ``data``: the demo's rendered shapes (recipes/data/shapes.py) scaled to ``--px`` × ``--px`` (nearest
   neighbour: the edges stay sharp), ``--train-images`` for training and ``--heldout-images`` other ones held out.
3. ``chain``: ``yichui run --yes``: LoRA rank 64 on the language model with the projector trained whole, the vision
   tower frozen, ``image_size`` ``--px``; export merged; deploy on ``--engine`` beyond loopback (so with an API
   key); evaluate on the held-out images with both models' replies from that engine.
4. ``server``: the running server: listed models, HTTP 401 without the key and 200 with it, the key in no file,
   one chat request with an image inline (its reply and finish reason) and ``yichui chat`` with ``/image``.

Environment as bench/serve_chain.py's (``YICHUI_HOME``, ``yichui`` beside ``sys.executable``).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import serve_chain as sc  # noqa: E402  (bench/ is not a package)

QUESTION = "What colour is the shape?"


def prepare_vlm(shape: str, dest: Path, px: int) -> dict:
    """``dest``: ``shape``'s config.json with the processor's token ids, random weights (seed 0) saved in bf16, the
    processor at most ``px``² pixels per image. Returns what was built (also in ``dest/yichui_build.json``)."""
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText, GenerationConfig

    import vlm_memory as vm
    from recipes.model.vision import write_max_pixels

    built, tmp = sc.begin_build(dest)
    if built is not None:
        return built
    t0 = time.time()
    ids = vm.processor_files(tmp)
    write_max_pixels(tmp, px * px)
    src = Path(shape) if Path(shape).is_dir() else sc.CONFIGS / shape  # a folder: a shape of one's own
    cfg = json.loads((src / "config.json").read_text()) | ids
    (tmp / "config.json").write_text(json.dumps(cfg, indent=2))
    config = AutoConfig.from_pretrained(tmp)
    torch.manual_seed(0)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    with torch.device(dev):
        model = AutoModelForImageTextToText.from_config(config, dtype=torch.bfloat16)
    model.generation_config = GenerationConfig(eos_token_id=[ids["eos_token_id"], ids["pad_token_id"]],
                                               pad_token_id=ids["pad_token_id"])
    model.save_pretrained(tmp)
    info = {"shape": shape, "parameters": sum(p.numel() for p in model.parameters()),
            "class": type(model).__name__, "max_pixels": px * px, "build_seconds": round(time.time() - t0, 1),
            "dir": str(dest)}
    (tmp / "yichui_build.json").write_text(json.dumps(info, indent=2))
    del model
    if dev == "cuda":
        torch.cuda.empty_cache()
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)
    return info


def prepare_data(dest: Path, px: int, train_images: int, heldout_images: int) -> dict:
    """The shapes data (training: seed 0; held out: seed 1, other images) with every image scaled to ``px``."""
    from PIL import Image

    from recipes.data import shapes

    if (dest / "heldout.jsonl").exists():
        return {"train": str(dest / "train.jsonl"), "heldout": str(dest / "heldout.jsonl"), "px": px}
    dest.mkdir(parents=True, exist_ok=True)
    train = shapes.build(dest, train_images, seed=0, name="train.jsonl")
    shapes.build(dest, heldout_images, seed=1, name="heldout.jsonl")
    for p in (dest / "images").glob("*.png"):
        Image.open(p).convert("RGB").resize((px, px), Image.NEAREST).save(p)
    return {"train": str(train), "heldout": str(dest / "heldout.jsonl"), "px": px,
            "train_records": sum(1 for _ in open(train)),
            "heldout_records": sum(1 for _ in open(dest / "heldout.jsonl"))}


def chain_sets(a, base_dir: Path, data: dict) -> dict:
    """The chain's answers: LoRA with the projector trained, the merged export, the deploy, the held-out images."""
    sets = {"select_model.source": "local", "select_model.path": str(base_dir),
            "choose_strategy.method": "lora", "choose_strategy.lora_rank": 64, "choose_strategy.lora_alpha": 128,
            "choose_strategy.lora_dropout": 0.0, "choose_strategy.lora_targets": "all-linear",
            "choose_strategy.freeze_vision_tower": "yes", "choose_strategy.freeze_projector": "no",
            "choose_strategy.image_size": a.px, "choose_strategy.dataset": "local",
            "choose_strategy.dataset_path": data["train"], "choose_strategy.seq_len": 512,
            "choose_strategy.batch_size": a.micro_batch, "choose_strategy.micro_batch": a.micro_batch,
            "choose_strategy.grad_accum": 1, "choose_strategy.learning_rate": a.lr,
            "choose_strategy.max_steps": a.steps, "choose_strategy.save_steps": a.steps // 2,
            "choose_strategy.val_ratio": 0.05, "choose_strategy.sample_question": QUESTION,
            "export.serve_with": a.engine, "export.formats": "",
            "deploy.backend": a.engine, "deploy.model": "merged", "deploy.host": "0.0.0.0", "deploy.port": a.port,
            "deploy.cuda_graphs": "no", "deploy.gpu_memory_utilization": a.util,
            "evaluate.heldout": "file", "evaluate.heldout_path": data["heldout"],
            "evaluate.heldout_samples": 2 * a.heldout_images, "evaluate.max_new_tokens": 8,
            "evaluate.benchmarks": "", "evaluate.generate_with": "engine"}
    if a.engine == "transformers":  # loopback only, no engine options (a CPU rehearsal of this script)
        sets["deploy.host"] = "127.0.0.1"
        for k in ("deploy.cuda_graphs", "deploy.gpu_memory_utilization"):
            sets.pop(k)
    return sets


def chain(a, base_dir: Path, data: dict, results: Path) -> dict:
    t0 = time.time()
    rc = sc.sh(sc.run_argv("finetune", chain_sets(a, base_dir, data)), results / "chain.log", timeout=3600)
    sid = sc.newest_session(t0 - 1)
    out = {"rc": rc, "wall_seconds": round(time.time() - t0, 1)}
    if sid:
        out |= sc.summary(sc.session(sid))
    return out


def image_checks(sid: str, data: dict, results: Path) -> dict:
    """:func:`serve_chain.check_server` (keys, listing, a text question) plus the image turns: one request through
    the engine with the first held-out image inline, and ``yichui chat`` with ``/image``."""
    from recipes.serving import client

    out = sc.check_server(sid, results, "vlm")
    dep = sc.session(sid)["steps"]["deploy"]["outputs"]
    key = Path(dep["api_key_file"]).read_text().strip() if dep.get("api_key_file") else None
    first = json.loads(Path(data["heldout"]).read_text().splitlines()[0])
    image = str(Path(data["heldout"]).parent / first["images"][0])
    question = first["messages"][0]["content"][-1]["text"]
    truth = first["messages"][1]["content"]
    truth = truth if isinstance(truth, str) else truth[0]["text"]
    t0 = time.time()
    r = client.complete(dep["endpoint"], dep["served_model"], client.user_turn(question, image), max_tokens=16,
                        api_key=key)
    out["image_request"] = {"image": image, "question": question, "reference": truth, "reply": r.text,
                            "finish_reason": r.finish_reason, "tokens": r.tokens,
                            "seconds": round(time.time() - t0, 2)}
    log = results / "chat-image.txt"
    rc = sc.sh([sc.YICHUI, "chat", sid, "--max-tokens", "16"], log, timeout=300,
               stdin=f"/image {image}\n{question}\n/exit\n")
    out["yichui_chat_image"] = {"rc": rc, "output": log.read_text(errors="replace")[-800:]}
    return out


def cmd_run(a) -> None:
    results, work = Path(a.results), Path(a.work)
    results.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    sc.phase(results, "env", sc.versions, a)
    if a.dry_run:  # the data is made (CPU), the model is not: the chain's command and its answers checked
        data = prepare_data(work / f"shapes-{a.px}", a.px, a.train_images, a.heldout_images)
        sc.dry_row(results, "chain", "finetune", chain_sets(a, work / Path(a.shape).name, data))
        sc.row(results, "done")
        return
    base = sc.phase(results, "base", sc.apart, prepare_vlm, a.shape, work / Path(a.shape).name, a.px)
    data = sc.phase(results, "data", prepare_data, work / f"shapes-{a.px}", a.px, a.train_images, a.heldout_images)
    if base.get("error") or data.get("error"):
        sc.row(results, "done")
        return
    c = sc.phase(results, "chain", chain, a, Path(base["dir"]), data, results)
    sid = c.get("session")
    if sid and c.get("status", {}).get("deploy") == "done":
        sc.phase(results, "server", image_checks, sid, data, results)
    sc.stop_servers(results)
    sc.row(results, "done")


def cmd_report(a) -> None:
    rows = [json.loads(x) for x in open(Path(a.results) / "rows.jsonl")]
    by = {r["phase"]: r for r in rows}
    lines = []
    env, base, data, ch, srv = (by.get(k, {}) for k in ("env", "base", "data", "chain", "server"))
    lines += [f"GPU: {env.get('gpu')}; Python {env.get('python')}; versions {env.get('versions')}; "
              f"{env.get('engine')} {env.get('engine_version')}", "",
              f"Base: {base.get('shape')} ({base.get('class')}, {base.get('parameters'):,} parameters, random bf16 "
              f"weights, max_pixels {base.get('max_pixels')}) built in {base.get('build_seconds')} s" if base.get("shape")
              else f"Base: {base.get('error')}",
              f"Data: {data.get('train_records')} training / {data.get('heldout_records')} held-out records at "
              f"{data.get('px')} px", ""]
    lines += [f"Chain: rc {ch.get('rc')}, {ch.get('wall_seconds')} s; steps {ch.get('status')}",
              f"Step seconds: {ch.get('step_seconds')}", f"Errors: {ch.get('errors') or 'none'}",
              f"Train: {ch.get('train')}", f"Export: {ch.get('export')}",
              f"Deploy: { {k: (ch.get('deploy') or {}).get(k) for k in ('backend', 'engine_version', 'endpoint', 'start_seconds', 'reply', 'finish_reason', 'reply_tokens', 'kv_cache', 'image')} }",
              ""]
    ev = ch.get("evaluate") or {}
    if ev.get("table"):
        cols = ["metric", *(ev.get("columns") or [])]
        lines += ["| " + " | ".join(map(str, cols)) + " |", "|---|" + "---:|" * (len(cols) - 1)]
        lines += ["| " + " | ".join(map(str, r)) + " |" for r in ev["table"]]
        lines += ["", f"Verdict: {ev.get('verdict')}", ""]
    for k in ("models_listed", "http_without_key", "http_with_wrong_key", "http_with_key", "key_in_files",
              "key_in_command_lines", "image_request", "yichui_chat_image", "error"):
        if k in srv:
            lines.append(f"- {k}: {json.dumps(srv[k])[:600]}")
    text = "\n".join(lines) + "\n"
    if a.md:
        Path(a.md).write_text(text)
    print(text)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--work", required=True)
    r.add_argument("--results", required=True)
    r.add_argument("--shape", default="qwen2.5-vl-3b", help="a folder of bench/configs, or any folder with a config.json")
    r.add_argument("--engine", default="vllm")
    r.add_argument("--px", type=int, default=448, help="image side in pixels (a multiple of 28)")
    r.add_argument("--train-images", type=int, default=270)
    r.add_argument("--heldout-images", type=int, default=45)
    r.add_argument("--steps", type=int, default=200)
    r.add_argument("--micro-batch", type=int, default=16)
    r.add_argument("--lr", type=float, default=5e-4)
    r.add_argument("--port", type=int, default=8100)
    r.add_argument("--util", type=float, default=0.4)
    r.add_argument("--dry-run", action="store_true", help="render the data, check the chain's answers, print its "
                   "command to rows.jsonl; no model, no session")
    rp = sub.add_parser("report")
    rp.add_argument("results")
    rp.add_argument("--md")
    a = p.parse_args()
    cmd_run(a) if a.cmd == "run" else cmd_report(a)


if __name__ == "__main__":
    main()
