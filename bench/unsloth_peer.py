#!/usr/bin/env python3
"""Speed peer: unsloth (issue 21), on the same job as ../shared/baselines/plain_hf_train.py and yichui's trainer.

Runs in unsloth's own environment (bench/carry.sh unsloth: trl 1.15 and datasets 4 beside the image's transformers
5.17 and peft 0.21), never on yichui's path. Same interface and RESULT line as the plain peer:

  python3 unsloth_peer.py --config CONFIG.json --method lora|qlora|full --rank 16 --ckpt --batch 1 --seq 2048
      --weights DIR --tokenizer DIR

Random weights of the config's shape, written once in bf16 to ``--weights`` (unsloth loads a model from a folder);
the tokenizer is any small one (``--tokenizer``: only its files are needed; the token ids fed are random below the
model's vocabulary). The loop is the plain peer's: forward with labels, backward, fused AdamW, one micro-batch per
optimizer step; unsloth's own kernels and its gradient checkpointing ("unsloth": offloaded to CPU) are used — each
side's own kernels at identical settings. Prints one line: RESULT {json} (tokens/s from the median step after the
first two; memory as torch and nvidia-smi see it).
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
    a = ap.parse_args()
    t0 = time.time()
    write_weights(a.config, a.weights, a.tokenizer)
    written_s = time.time() - t0
    from unsloth import FastLanguageModel  # first: it patches transformers and peft on import

    import torch
    import transformers
    import unsloth

    model, _ = FastLanguageModel.from_pretrained(model_name=a.weights, max_seq_length=a.seq, dtype=torch.bfloat16,
                                                 load_in_4bit=a.method == "qlora", full_finetuning=a.method == "full",
                                                 local_files_only=True)
    if a.method != "full":
        model = FastLanguageModel.get_peft_model(model, r=a.rank, lora_alpha=2 * a.rank, lora_dropout=0.0,
                                                 target_modules=ALL_LINEAR, bias="none",
                                                 use_gradient_checkpointing="unsloth" if a.ckpt else False,
                                                 random_state=0)
    elif a.ckpt:
        model.gradient_checkpointing_enable()
    loaded_s = time.time() - t0 - written_s
    vocab = model.config.vocab_size
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-5, fused=True)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    model.train()
    times = []
    losses = []
    for _ in range(a.steps):
        ids = torch.randint(0, vocab, (a.batch, a.seq), device="cuda")
        torch.cuda.synchronize()
        t = time.time()
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.time() - t)
        losses.append(round(float(loss), 4))
    step_s = sorted(times[2:])[len(times[2:]) // 2]
    free, total = torch.cuda.mem_get_info()
    print("RESULT " + json.dumps(dict(
        method=a.method, rank=a.rank, ckpt=a.ckpt, batch=a.batch, seq=a.seq,
        n_params=sum(p.numel() for p in model.parameters()), n_trainable=sum(p.numel() for p in params),
        peak_alloc_gib=round(torch.cuda.max_memory_allocated() / 2**30, 3),
        peak_reserved_gib=round(torch.cuda.max_memory_reserved() / 2**30, 3),
        device_used_gib=round((total - free) / 2**30, 3), step_s=round(step_s, 4),
        tokens_per_s=round(a.batch * a.seq / step_s, 1), step_times=[round(x, 4) for x in times], losses=losses,
        weights_written_s=round(written_s, 1), loaded_s=round(loaded_s, 1),
        versions=dict(unsloth=unsloth.__version__, torch=torch.__version__,
                      transformers=transformers.__version__))), flush=True)


if __name__ == "__main__":
    main()
