#!/usr/bin/env python3
"""Speed peer: unsloth (issue 21), on the same job as ../shared/baselines/plain_hf_train.py and yichui's trainer.

Runs in unsloth's own environment (bench/carry.sh unsloth: trl 1.15 and datasets 4 beside the image's transformers
5.17 and peft 0.21), never on yichui's path. Same interface and RESULT line as the plain peer:

  python3 unsloth_peer.py --config CONFIG.json --method lora|qlora|full --rank 16 --ckpt --batch 1 --seq 2048
      --weights DIR --tokenizer DIR [--data IDS.json --lr 2e-4] [--backend plain]

Random weights of the config's shape, written once in bf16 to ``--weights`` (unsloth loads a model from a folder);
the tokenizer is any small one (``--tokenizer``: only its files are needed; the token ids fed are random below the
model's vocabulary). The loop is the plain peer's: forward with labels, backward, fused AdamW, one micro-batch per
optimizer step; unsloth's own kernels and its gradient checkpointing ("unsloth": offloaded to CPU) are used — each
side's own kernels at identical settings. Prints one line: RESULT {json} (tokens/s from the median step after the
first two; memory as torch and nvidia-smi see it).

With ``--data`` (the token ids and labels yichui's trainer builds from the same conversations: train_throughput.py's
``loss_data``) each step takes the next row instead of random ids, and the loop is the Trainer's: constant learning
rate ``--lr``, no weight decay, gradients clipped to norm 1.0 — the 50-step loss comparison on the same data and the
same weights. ``--backend plain`` runs that same loop with transformers + PEFT alone (no unsloth import), the plain
loop's side of that comparison; bitsandbytes NF4 with double quantization for QLoRA, as yichui and the plain peer;
on a GPU the adapters run under bf16 autocast as in the Trainer, QLoRA's cast to bf16 as trl does (the 2026-12-02
rows ran before that: fp32 adapters without autocast). Adapters are initialised by each side (lora_A is random):
only the base weights are the same.
"""
import argparse
import json
import os
import shutil
import time

ALL_LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def write_weights(config: str, weights: str, tokenizer: str) -> None:
    """Random bf16 weights of the config's shape in ``weights`` (built on the GPU, saved once, reused)."""
    import torch
    import transformers

    if os.path.exists(os.path.join(weights, "model.safetensors.index.json")) or \
            os.path.exists(os.path.join(weights, "model.safetensors")):
        return
    cfg = transformers.AutoConfig.from_pretrained(config)
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        m = transformers.AutoModelForCausalLM.from_config(cfg)
    torch.set_default_dtype(torch.float32)
    tmp = weights + ".tmp"
    m.save_pretrained(tmp)
    for f in os.listdir(tokenizer):
        if f.startswith("tokenizer") or f.endswith(".jinja"):
            shutil.copy(os.path.join(tokenizer, f), tmp)
    del m
    torch.cuda.empty_cache()
    os.replace(tmp, weights)


def plain_model(a, torch, transformers, peft):
    """The same model with transformers + PEFT alone: bf16 weights from ``--weights`` (NF4 + double quantization for
    QLoRA, as yichui's trainer loads it), LoRA r/2r on all linear layers without dropout, non-reentrant
    checkpointing."""
    kw = {"dtype": torch.bfloat16 if torch.cuda.is_available() else torch.float32, "attn_implementation": "sdpa",
          "device_map": {"": 0} if torch.cuda.is_available() else None}
    if a.method == "qlora":
        kw["quantization_config"] = transformers.BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=torch.bfloat16)
    model = transformers.AutoModelForCausalLM.from_pretrained(a.weights, **kw)
    if a.ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.config.use_cache = False
    if a.method == "full":
        return model
    torch.manual_seed(42)  # the Trainer's seed (lora_A is still drawn in another order than yichui's: not equal)
    model = peft.get_peft_model(model, peft.LoraConfig(r=a.rank, lora_alpha=2 * a.rank, lora_dropout=0.0,
                                                       target_modules=ALL_LINEAR, task_type="CAUSAL_LM"))
    if a.method == "qlora":  # as trl's SFTTrainer does for a 4-bit model: bf16 adapters (it runs them under autocast)
        for p in model.parameters():
            if p.requires_grad:
                p.data = p.data.to(torch.bfloat16)
    if a.ckpt:
        model.enable_input_require_grads()
    return model


def sweep(model, a, torch) -> list[dict]:
    """Each side's best plan in a memory budget (issue 21): with the model loaded once, each micro-batch of
    ``--sweep`` in turn at ``--effective-batch`` sequences per optimizer step (gradient accumulation makes up the
    rest), ``--steps`` optimizer steps; tokens/s from the median step after the first, memory as the peak reserved
    plus what lies outside the allocator (nvidia-smi's view). Stops at an OOM or above ``--budget-gib``."""
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=a.lr, fused=True)
    vocab = model.config.vocab_size
    model.train()
    out = []
    for mb in sorted(int(x) for x in a.sweep.split(",")):
        if a.effective_batch % mb:
            continue
        accum = a.effective_batch // mb
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        times = []
        try:
            for _ in range(a.steps):
                torch.cuda.synchronize()
                t = time.time()
                for _ in range(accum):
                    ids = torch.randint(0, vocab, (mb, a.seq), device="cuda")
                    (model(input_ids=ids, labels=ids).loss / accum).backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
                torch.cuda.synchronize()
                times.append(time.time() - t)
        except torch.OutOfMemoryError:
            out.append({"micro_batch": mb, "grad_accum": accum, "oom": True})
            break
        free, total = torch.cuda.mem_get_info()
        outside = (total - free) / 2**30 - torch.cuda.memory_reserved() / 2**30
        peak = torch.cuda.max_memory_reserved() / 2**30
        step_s = sorted(times[1:])[len(times[1:]) // 2]
        out.append({"micro_batch": mb, "grad_accum": accum, "step_s": round(step_s, 4),
                    "tokens_per_s": round(a.effective_batch * a.seq / step_s, 1),
                    "peak_reserved_gib": round(peak, 3), "device_gib": round(peak + outside, 3),
                    "step_times": [round(x, 4) for x in times]})
        print(json.dumps(out[-1]), flush=True)
        if a.budget_gib and peak + outside > a.budget_gib:
            break
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--method", default="lora", choices=["full", "lora", "qlora"])
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--ckpt", action="store_true")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--data", default=None, help="JSON {input_ids: [[...]], labels: [[...]]}, one row per sequence")
    ap.add_argument("--lr", type=float, default=1e-5)
    ap.add_argument("--backend", default="unsloth", choices=["unsloth", "plain"])
    ap.add_argument("--sweep", default=None, help="micro-batches to try in turn, e.g. 1,2,4,8 (one load)")
    ap.add_argument("--effective-batch", type=int, default=8, help="sequences per optimizer step in --sweep")
    ap.add_argument("--budget-gib", type=float, default=None, help="--sweep stops above this device memory")
    a = ap.parse_args()
    t0 = time.time()
    write_weights(a.config, a.weights, a.tokenizer)
    written_s = time.time() - t0
    if a.backend == "unsloth":
        from unsloth import FastLanguageModel  # first: it patches transformers and peft on import

    import torch
    import transformers

    if a.backend == "unsloth":
        import unsloth

        version = unsloth.__version__
        model, _ = FastLanguageModel.from_pretrained(
            model_name=a.weights, max_seq_length=a.seq, dtype=torch.bfloat16, load_in_4bit=a.method == "qlora",
            full_finetuning=a.method == "full", local_files_only=True)
        if a.method != "full":
            model = FastLanguageModel.get_peft_model(model, r=a.rank, lora_alpha=2 * a.rank, lora_dropout=0.0,
                                                     target_modules=ALL_LINEAR, bias="none",
                                                     use_gradient_checkpointing="unsloth" if a.ckpt else False,
                                                     random_state=0)
        elif a.ckpt:
            model.gradient_checkpointing_enable()
    else:
        import peft

        version = "plain transformers + peft " + peft.__version__
        model = plain_model(a, torch, transformers, peft)
    loaded_s = time.time() - t0 - written_s
    if a.sweep:
        print("RESULT " + json.dumps(dict(sweep=sweep(model, a, torch), loaded_s=round(loaded_s, 1), backend=a.backend,
                                          versions=dict(unsloth=version, torch=torch.__version__,
                                                        transformers=transformers.__version__))), flush=True)
        return
    vocab = model.config.vocab_size
    rows = json.load(open(a.data)) if a.data else None
    steps = len(rows["input_ids"]) // a.batch if rows else a.steps
    params = [p for p in model.parameters() if p.requires_grad]
    # the Trainer's AdamW has no weight decay; torch's default (0.01) kept for the throughput runs as before
    opt = torch.optim.AdamW(params, lr=a.lr, fused=True, **({"weight_decay": 0.0} if rows else {}))
    cuda = torch.cuda.is_available()  # the plain backend also runs on a CPU (the bench's own check of its rows)
    dev = "cuda" if cuda else "cpu"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    sync()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    model.train()
    times = []
    losses = []
    for i in range(steps):
        if rows:
            ids = torch.tensor(rows["input_ids"][i * a.batch:(i + 1) * a.batch], device=dev)
            labels = torch.tensor(rows["labels"][i * a.batch:(i + 1) * a.batch], device=dev)
        else:
            ids = labels = torch.randint(0, vocab, (a.batch, a.seq), device=dev)
        sync()
        t = time.time()
        with torch.autocast(dev, dtype=torch.bfloat16, enabled=cuda and a.backend == "plain" and a.method != "full"):
            loss = model(input_ids=ids, labels=labels).loss  # the plain loop under the Trainer's bf16 autocast
        loss.backward()
        if rows:  # the Trainer's max_grad_norm
            torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync()
        times.append(time.time() - t)
        losses.append(round(float(loss), 4))
    step_s = sorted(times[2:])[len(times[2:]) // 2]
    free, total = torch.cuda.mem_get_info() if cuda else (0, 0)
    print("RESULT " + json.dumps(dict(
        method=a.method, rank=a.rank, ckpt=a.ckpt, batch=a.batch, seq=a.seq,
        n_params=sum(p.numel() for p in model.parameters()), n_trainable=sum(p.numel() for p in params),
        peak_alloc_gib=round(torch.cuda.max_memory_allocated() / 2**30, 3) if cuda else None,
        peak_reserved_gib=round(torch.cuda.max_memory_reserved() / 2**30, 3) if cuda else None,
        device_used_gib=round((total - free) / 2**30, 3), step_s=round(step_s, 4),
        tokens_per_s=round(ids.numel() / step_s, 1), step_times=[round(x, 4) for x in times], losses=losses,
        weights_written_s=round(written_s, 1), loaded_s=round(loaded_s, 1),
        backend=a.backend, lr=a.lr, data=a.data,
        versions=dict(unsloth=version, torch=torch.__version__,
                      transformers=transformers.__version__))), flush=True)


if __name__ == "__main__":
    main()
