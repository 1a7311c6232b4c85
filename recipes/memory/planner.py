"""The strategy planner: which activation checkpointing / micro-batch / gradient accumulation / kernels to train with.

Every candidate with the user's method, rank, sequence length and effective batch is checked against the memory
model (recipes/memory/model.py, a fit needs 10 % of the GPU free) and ranked by predicted throughput; the fastest is
preselected and the user may change any knob.

Cost model (tokens/s = achieved FLOP/s ÷ FLOPs per token):
    FLOPs per token    forward 2N, backward 4N for a full fine-tune; a frozen base (LoRA, QLoRA, DoRA) skips the
                       weight gradients: 2N; activation checkpointing recomputes the forward: +2N (Kaplan et al. 2020,
                       "Scaling Laws for Neural Language Models", §2.1: C ≈ 6N per token); attention adds
                       6·L·h·s per token (forward 2·L·h·s for the scores and the weighted sum, ×3 with backward).
    achieved FLOP/s    peak bf16 FLOP/s × MFU, MFU = MFU_MAX · x / (x + MFU_HALF) with x = tokens per micro-batch ×
                       hidden size: small matrices leave the GPU idle. × LIGER_SPEEDUP with Liger kernels, ×
                       QLORA_SPEED for the 4-bit dequantization, × COMPILE_SPEEDUP with compiled decoder layers,
                       × UNSLOTH_SPEEDUP on the unsloth backend (its kernels instead of compiled layers or Liger).
Memory on the unsloth backend is yichui's trainer's prediction: unsloth measured at or below it on every job (8B QLoRA
8.02 vs 8.63 GiB and the backend itself 7.88; 7B LoRA 16.39 vs 16.58 and 1.5B full 13.37 vs 13.81 with unsloth's own
loop, not the backend), so a plan that fits is expected to keep fitting (marked approximate).
The MFU constants are fitted on yichui's trainer on an H200 (bench/results/2026-12-02-train-jobs-h200.md,
bench/fit_speed.py); other GPUs are scaled by their dense bf16 peak.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass, replace

from recipes.base import Refusal
from recipes.memory import model as memory
from recipes.training.spec import FULL_WEIGHTS, TrainingSpec

# dense bf16 FLOP/s (TFLOP/s), H200 as measured (../shared/FACTS.md: 790); the others from the vendors' data sheets
# scaled by the same measured/nominal ratio (790/989)
PEAK_TFLOPS = {"NVIDIA T4": 52, "NVIDIA A10": 100, "NVIDIA L4": 97, "NVIDIA GeForce RTX 4090": 132,
               "NVIDIA L40S": 290, "NVIDIA A100 40GB": 249, "NVIDIA A100 80GB": 249, "NVIDIA H100 80GB": 790,
               "NVIDIA H200": 790}
# the eager trainer's MFU curve, fitted by bench/fit_speed.py on the 7B LoRA (micro-batch 1, 2048 tokens) and 1.5B full
# fine-tune (micro-batch 4) jobs of bench/results/2026-12-02-train-jobs-h200.md; the 8B QLoRA job (4096 tokens) held
# out: predicted 6,019 vs measured 5,742 tokens/s (+5 %)
MFU_MAX = 0.75          # at its ceiling (a larger one is not physical here; the measured range is short of saturation)
MFU_HALF = 8.4e6        # tokens × hidden at which half of MFU_MAX is reached
# bench/results/2026-12-02-train-levers-h200.md (7B LoRA r16, 2048 tokens, micro-batch 1, checkpointing on): Liger
# 4,881 tokens/s, inside the eager trainer's spread without it (4,442–6,878 over six runs) — no speedup shown (the
# 1.08 used before came from a run declared void); Liger with compiled layers 4,523 (its kernels break the compiled
# graph): never both
LIGER_SPEEDUP = 1.0
# compiled decoder layers ÷ the eager trainer, medians of the same job (bench/fit_speed.py): 7B LoRA r16 (five rounds,
# pairs 1.39–2.30×), 1.5B full fine-tune (six compiled runs beside three eager, 39,835 vs 27,607 tokens/s). QLoRA ran
# 1.96× but held 2.1× the memory (18.3 vs 8.6 GiB on Llama-3.1-8B): refused (TrainingSpec.check); other methods are
# not measured: no speedup predicted
COMPILE_SPEEDUP = {"lora": 1.76, "full": 1.44}
# the unsloth backend ÷ the eager trainer, medians of the same job (bench/fit_speed.py): 8B QLoRA r16 @4096 measured
# on the backend itself (five runs, bench/results/2026-12-02-unsloth-backend-h200); 7B LoRA r16 @2048 (five rounds)
# and the 1.5B full fine-tune @2048 mb4 (nine) from unsloth's own loop (bench/unsloth_peer.py) × 0.947, the backend's
# speed over that loop's on the QLoRA job (the Trainer's loop around unsloth's model). So the planner picks unsloth
# for QLoRA (compiled layers are refused there) and compiled layers for LoRA and bf16 full fine-tunes
UNSLOTH_SPEEDUP = {"lora": 1.32, "qlora": 1.66, "full": 1.38}
QLORA_SPEED = 0.80      # measured: QLoRA r64 against LoRA r8 at the same settings (2977 vs 3717 tokens/s)
MICRO_BATCHES = (1, 2, 4, 8, 16, 32)


@dataclass(frozen=True)
class Plan:
    ckpt: bool
    micro_batch: int
    grad_accum: int
    liger: bool
    peak_gib: float
    tokens_per_s: float
    fits: bool
    compile_layers: bool = False
    training_backend: str = "transformers"


def liger_available() -> bool:
    """Liger kernels need the liger-kernel package and a CUDA GPU (Triton)."""
    return importlib.util.find_spec("liger_kernel") is not None and bool(memory.detect_gpus())


def compile_available(t: TrainingSpec) -> bool:
    """Whether the planner proposes compiled decoder layers: a CUDA GPU with torch's Triton backend, and the jobs
    they were measured on — LoRA, or a full fine-tune with bf16 master weights, in one process (fp32 masters, DoRA,
    GaLore and sharded or several processes are not measured; the knob itself works there, yichui estimate
    --compile-layers; QLoRA is refused)."""
    measured = t.method == "lora" or (t.method == "full" and t.master_weights == "bf16")  # the full job: bf16
    return (measured and t.gpus == 1 and t.distribution == "ddp"
            and importlib.util.find_spec("triton") is not None and bool(memory.detect_gpus()))


def _allowed(t: TrainingSpec) -> bool:
    """Whether TrainingSpec.check accepts ``t`` (a kernel it refuses for the method, e.g. compiled QLoRA, is no plan)."""
    try:
        t.check()
    except Refusal:
        return False
    return True


def flops_per_token(shape: memory.Shape, method: str, ckpt: bool, seq: int) -> float:
    N = shape.n_params
    per = (2 + 4 if method in FULL_WEIGHTS else 2 + 2) * N + (2 * N if ckpt else 0)
    attn = 2 * shape.layers * shape.hidden * seq * (3 + (1 if ckpt else 0))
    return per + attn


def tokens_per_s(shape: memory.Shape, method: str, ckpt: bool, micro_batch: int, seq: int, gpu_name: str,
                 liger: bool = False, compile_layers: bool = False, backend: str = "transformers") -> float:
    """Predicted training tokens/s per GPU (see the module docstring for the model and its sources)."""
    peak = PEAK_TFLOPS.get(gpu_name, 100) * 1e12
    x = micro_batch * seq * shape.hidden
    mfu = MFU_MAX * x / (x + MFU_HALF)
    speed = peak * mfu / flops_per_token(shape, method, ckpt, seq)
    if liger:
        speed *= LIGER_SPEEDUP
    if method == "qlora":
        speed *= QLORA_SPEED
    if compile_layers:
        speed *= COMPILE_SPEEDUP.get(method, 1.0)
    if backend == "unsloth":
        speed *= UNSLOTH_SPEEDUP.get(method, 1.0)
    return speed


def predicted(shape: memory.Shape, t: TrainingSpec, gpu_name: str) -> float:
    """Predicted training tokens/s per GPU of ``t`` as it stands (its checkpointing, micro-batch, kernels) on
    ``gpu_name`` (:func:`tokens_per_s`)."""
    return tokens_per_s(shape, t.method, t.activation_checkpointing, t.micro_batch, t.seq_len, gpu_name, t.liger,
                        t.compile_layers, t.training_backend)


def speed_modelled(t: TrainingSpec) -> bool:
    """Whether the speed model covers ``t``: plain data parallel (one process, or DDP, whose per-GPU speed it
    assumes unchanged), nothing offloaded, no sequence split. ZeRO, FSDP2, offload and sequence parallelism change
    the speed in ways it does not model yet (bench/results/2026-12-04-sharded-one-gpu-h200.md: ZeRO-3 in one process
    at 0.58–0.63× ZeRO-2; NVMe offload at 0.02× ZeRO-3, bench/results/2026-12-03-nvme-offload-h200.md)."""
    return t.distribution == "ddp" and not t.offloaded and t.sequence_parallel == 1


def duration_text(seconds: float) -> str:
    """``seconds`` as a person reads a duration: "45 s", "12 min", "3 h 05 min", "2 d 4 h"."""
    s = max(0, int(round(seconds)))
    if seconds < 1:
        return "< 1 s"
    if s < 90:
        return f"{s} s"
    if s < 90 * 60:
        return f"{round(s / 60)} min"
    if s < 48 * 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


def plans(shape: memory.Shape, t: TrainingSpec, effective_batch: int, gpu_name: str, gpu_gib: float,
          liger: bool | None = None, compile_layers: bool | None = None, unsloth: bool = False) -> list[Plan]:
    """Every candidate (checkpointing on/off × micro-batches dividing the effective batch × Liger if available ×
    compiled layers if available × the unsloth backend if ``unsloth`` (installed: recipes/training/backends.py) —
    only the combinations TrainingSpec.check accepts), fitting ones first, fastest first.

    Args:
        t: the user's training configuration (method, rank, targets, dropout, sequence length, processes…);
            its ckpt and micro_batch are what the plans vary.
        effective_batch: sequences per optimizer step per process (micro-batch × gradient accumulation).
    """
    liger = liger_available() if liger is None else liger
    compiled = compile_available(t) if compile_layers is None else compile_layers
    kernels = [(False, False, "transformers")] + [
        k for k in ([(True, False, "transformers")] if liger else []) + ([(False, True, "transformers")] if compiled
                                                                         else [])
        + ([(False, False, "unsloth")] if unsloth else [])
        if _allowed(replace(t, liger=k[0], compile_layers=k[1], training_backend=k[2]))]
    out = []
    for ckpt in (False, True):
        for mb in MICRO_BATCHES:
            if mb > effective_batch or effective_batch % mb:
                continue
            for lg, cl, backend in kernels:
                est = memory.estimate(shape, replace(t, activation_checkpointing=ckpt, micro_batch=mb,
                                                     grad_accum=effective_batch // mb, liger=lg, compile_layers=cl,
                                                     training_backend="transformers"), gpu_gib)
                speed = tokens_per_s(shape, t.method, ckpt, mb, t.seq_len, gpu_name, lg, cl, backend)
                out.append(Plan(ckpt, mb, effective_batch // mb, lg, est["peak_gib"], round(speed, 1), est["fits"],
                                cl, backend))
    return sorted(out, key=lambda p: (not p.fits, -p.tokens_per_s, p.peak_gib))
