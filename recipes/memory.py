"""A first, UNCALIBRATED model of peak GPU memory per GPU for training, built from components.

Every component says where its formula comes from. Issue 3 replaces this with a model calibrated on an H200;
until then the figures are labelled "uncalibrated" wherever they are shown. Units: bytes internally, GiB (2^30 bytes)
in every returned figure.
"""
from __future__ import annotations

import json
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

GIB = 2**30
CUDA_CONTEXT_GIB = 0.5   # torch's CUDA context + cuBLAS workspace, order of magnitude (uncalibrated)
FRAGMENTATION = 0.10     # caching-allocator slack over allocated bytes (uncalibrated)
NF4_BITS = 4.0           # QLoRA (Dettmers et al. 2023, §3): 4-bit NormalFloat weights
DQ_CONST_BITS = 0.127    # QLoRA §3 "Double Quantization": quantization constants cost 0.127 bits/parameter

GPUS = {  # target GPUs offered when none is detected: name, memory in GiB as nvidia-smi reports it
    "t4-16g": ("NVIDIA T4", 15.0), "a10-24g": ("NVIDIA A10", 22.5), "rtx4090-24g": ("NVIDIA GeForce RTX 4090", 23.6),
    "l40s-48g": ("NVIDIA L40S", 44.5), "a100-40g": ("NVIDIA A100 40GB", 39.4), "a100-80g": ("NVIDIA A100 80GB", 79.2),
    "h100-80g": ("NVIDIA H100 80GB", 79.2), "h200-141g": ("NVIDIA H200", 139.8),
}


@dataclass(frozen=True)
class Shape:
    """Parameter counts and dimensions of a decoder, from its config only (no weights).

    ``n_linear`` counts the parameters of the nn.Linear layers inside decoder blocks (what QLoRA quantizes and what
    LoRA's ``all-linear`` targets); ``lora_per_rank`` is Σ (in + out) over those layers, so a rank-r adapter has
    r × lora_per_rank parameters (Hu et al. 2021, §4.1: A ∈ R^{r×in}, B ∈ R^{out×r}).
    """

    n_params: int
    n_linear: int
    lora_per_rank: int
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    vocab: int
    intermediate: int


def shape_from_config(config: dict) -> Shape:
    """Exact counts by instantiating the model on the meta device (no memory, no download).

    Raises:
        ValueError: transformers does not know the architecture.
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "config.json").write_text(json.dumps(config))
        cfg = AutoConfig.from_pretrained(d)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    n_params = sum(p.numel() for p in model.parameters())  # tied embeddings counted once
    n_linear = lora = 0
    for mod_name, mod in model.named_modules():
        if isinstance(mod, torch.nn.Linear) and "lm_head" not in mod_name:
            n_linear += mod.weight.numel()
            lora += mod.in_features + mod.out_features
    text = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    heads = getattr(text, "num_attention_heads", 1)
    return Shape(n_params=n_params, n_linear=n_linear, lora_per_rank=lora, hidden=text.hidden_size,
                 layers=text.num_hidden_layers, heads=heads, kv_heads=getattr(text, "num_key_value_heads", None) or heads,
                 vocab=text.vocab_size, intermediate=getattr(text, "intermediate_size", 4 * text.hidden_size))


def estimate(shape: Shape, method: str, ckpt: bool, micro_batch: int = 1, seq: int = 2048, rank: int = 8) -> dict:
    """Predicted peak memory on one GPU for one training configuration (bf16 weights, AdamW, sdpa attention).

    Args:
        shape: from :func:`shape_from_config`.
        method: ``full`` | ``lora`` | ``qlora`` (LoRA on all linear layers of the decoder blocks).
        ckpt: activation checkpointing on.
        micro_batch: sequences per forward pass; seq: tokens per sequence; rank: LoRA rank.

    Returns:
        ``{"peak_gib", "components": {name: GiB}, "trainable": int, "calibrated": False}``.

    Formulas (bytes):
        weights      full/lora: 2·P (bf16). qlora: linear params at (4 + 0.127)/8 bytes (QLoRA §3, NF4 + double
                     quantization) and the rest at 2 bytes.
        adapter      LoRA params r·Σ(in+out) in fp32 (peft keeps adapters in fp32: autocast_adapter_dtype).
        gradients    full: 2·P (bf16 grads of bf16 params); LoRA: 4 bytes per adapter parameter.
        optimizer    AdamW keeps exp_avg and exp_avg_sq shaped like each parameter (torch.optim.AdamW):
                     full: 2·2·P in bf16; LoRA: 2·4 bytes per adapter parameter.
        activations  per layer s·b·h·34 bytes for a 16-bit transformer layer whose attention scores are not stored
                     (Korthikanti et al. 2022, "Reducing Activation Recomputation", §4.1, eq. 1 without the
                     5·a·s/h term, which sdpa/flash attention avoid). With checkpointing: 2·s·b·h per layer (the
                     saved layer inputs) plus one layer recomputed in full.
        logits       b·s·V·10: bf16 logits, their fp32 upcast in the loss, and the fp32 gradient
                     (transformers loss_utils.ForCausalLMLoss upcasts logits to float32).
        overhead     CUDA context 0.5 GiB + 10 % of the above for allocator fragmentation (uncalibrated).
    """
    if method not in ("full", "lora", "qlora"):
        raise ValueError(f"method must be full, lora or qlora, not {method!r}")
    P = shape.n_params
    s, b, h, L = seq, micro_batch, shape.hidden, shape.layers
    lora_params = rank * shape.lora_per_rank if method != "full" else 0
    if method == "qlora":
        weights = shape.n_linear * (NF4_BITS + DQ_CONST_BITS) / 8 + (P - shape.n_linear) * 2
    else:
        weights = 2 * P
    comp = {"weights": weights}
    if method == "full":
        comp |= {"gradients": 2 * P, "optimizer": 4 * P}
    else:
        comp |= {"adapter": 4 * lora_params, "gradients": 4 * lora_params, "optimizer": 8 * lora_params}
    per_layer_full = 34 * s * b * h
    comp["activations"] = (2 * s * b * h * L + per_layer_full) if ckpt else per_layer_full * L
    comp["logits"] = 10 * b * s * shape.vocab
    subtotal = sum(comp.values())
    comp["overhead"] = CUDA_CONTEXT_GIB * GIB + FRAGMENTATION * subtotal
    peak = sum(comp.values())
    return {"peak_gib": round(peak / GIB, 2), "components": {k: round(v / GIB, 6) for k, v in comp.items()},
            "trainable": P if method == "full" else lora_params, "calibrated": False}


def shape_dict(shape: Shape) -> dict:
    return asdict(shape)


def detect_gpus() -> list[dict]:
    """GPUs from ``nvidia-smi`` (no torch import): ``[{"name", "memory_gib"}]``; empty when there are none."""
    import shutil
    import subprocess

    exe = shutil.which("nvidia-smi")
    if not exe:
        return []
    try:
        out = subprocess.run([exe, "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=15).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    gpus = []
    for line in out.strip().splitlines():
        name, _, mib = line.rpartition(",")
        try:
            gpus.append({"name": name.strip(), "memory_gib": round(float(mib) / 1024, 1)})
        except ValueError:
            continue
    return gpus
