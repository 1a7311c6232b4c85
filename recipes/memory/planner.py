"""The strategy planner: which activation checkpointing / micro-batch / gradient accumulation / kernels to train with.

Every candidate with the user's method, rank, sequence length and effective batch is checked against the memory
model (recipes/memory/model.py, a fit needs 10 % of the GPU free) and ranked by the predicted time of the planned
steps (their tokens at its tokens/s, plus compiling the layers), or by tokens/s where the steps are not known yet;
the first is preselected and the user may change any knob.

Speed model (tokens/s = tokens of an optimizer step ÷ its predicted seconds, :func:`step_seconds`): the step is
priced term by term — matmul and attention FLOPs, bytes moved by the memory-bound work (elementwise chains, LoRA's
adapters and dropout, the fp32 logits, QLoRA's dequantization, fp32 masters' casts), launches and Python per decoder
layer and per adapted module (eager or compiled), checkpointing's recomputed forward and per-layer cost, the
optimizer, and the loop's fixed cost per step (:func:`speed_terms` says each one's formula) — × seconds per unit
fitted on yichui's trainer on an H200 (SECONDS_PER: bench/fit_speed.py on
bench/results/2026-12-04-speed-model-h200.md, ten shapes 0.5B–14B, LoRA/QLoRA/full, checkpointing on and off,
micro-batch 1–8, 512–8192 tokens, eager and compiled; fitted on six shapes, the four others held out: median |error|
7.5 %, worst 25.7 %, where the old curve was 1.00–2.66× optimistic, median 1.41×). At small micro-batches the
eager trainer is bound by launches and Python, not FLOP/s: what the single MFU curve it replaces missed. Other GPUs:
the FLOP terms scale by the dense bf16 peak, the byte terms by the memory bandwidth, launches and the loop stay (the
host's; not measured beyond the H200). Liger: × LIGER_SPEEDUP; the unsloth backend: × UNSLOTH_SPEEDUP (measured on
three jobs; on held-out shapes the backend gave 1.20–1.44× LoRA against the factor's 1.32×, and 1.17–1.56× QLoRA,
whose factor is now the median of every QLoRA job measured, 1.47×: bench/results/2026-12-06-unsloth-grid-h200.md,
2026-12-06-unsloth-grid-h100.md). QLoRA: priced per 4-bit module and pass
(``quant_launches``: bitsandbytes' Python and kernel launch, whatever the module's size), added after the 1B rows above
came out +63…+69 % over; refitted on the 2026-12-04 grid alone, then on an H100 (bench/results/2026-12-06-qlora-speed-
h100.md) three held-out shapes' QLoRA plans within −10.8 … +13.3 %, while Qwen2.5-0.5B's and 3B's (QLoRA plans not in the
fit) stay +20 … +30 % over.
Memory on the unsloth backend is yichui's trainer's prediction: unsloth measured at or below it on every job (8B QLoRA
8.02 vs 8.63 GiB and the backend itself 7.88; 7B LoRA 16.39 vs 16.58 and 1.5B full 13.37 vs 13.81 with unsloth's own
loop, not the backend), so a plan that fits is expected to keep fitting (marked approximate).
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass, replace

from recipes.base import Msg, Refusal, msg
from recipes.memory import model as memory
from recipes.training.spec import FULL_WEIGHTS, TrainingSpec

# dense bf16 FLOP/s (TFLOP/s), H200 as measured (../shared/FACTS.md: 790); the others from the vendors' data sheets
# scaled by the same measured/nominal ratio (790/989)
PEAK_TFLOPS = {"NVIDIA T4": 52, "NVIDIA A10": 100, "NVIDIA L4": 97, "NVIDIA GeForce RTX 4090": 132,
               "NVIDIA L40S": 290, "NVIDIA A100 40GB": 249, "NVIDIA A100 80GB": 249, "NVIDIA H100 80GB": 790,
               "NVIDIA H200": 790}
# memory bandwidth (TB/s), the vendors' data sheets: the byte terms scale by it from the H200's
BANDWIDTH_TBS = {"NVIDIA T4": 0.32, "NVIDIA A10": 0.6, "NVIDIA L4": 0.3, "NVIDIA GeForce RTX 4090": 1.0,
                 "NVIDIA L40S": 0.864, "NVIDIA A100 40GB": 1.555, "NVIDIA A100 80GB": 2.039,
                 "NVIDIA H100 80GB": 3.35, "NVIDIA H200": 4.8}
FIT_GPU = "NVIDIA H200"
# seconds per unit of each term on the H200, fitted by bench/fit_speed.py (non-negative, least absolute relative
# error) on the shapes of bench/results/2026-12-04-speed-model-h200.md not held out; a term the fit set
# to 0 is one the rows could not tell from the others
SECONDS_PER = {"activation_bytes_compiled": 0, "activation_bytes_eager": 0, "adapter_bytes_compiled": 1.089e-12,
               "adapter_bytes_eager": 9.922e-15, "adapter_launches_compiled": 6.908e-05,
               "adapter_launches_eager": 0.0002531, "attention_flop": 2.108e-15, "checkpointed_layers": 0.0006998,
               "dequant_bytes": 0, "dropout_bytes": 1.34e-13, "layer_launches_compiled": 0,
               "layer_launches_eager": 0.0004433, "logits_bytes": 0, "master_cast_bytes": 1.026e-12,
               "matmul_flop": 1.494e-15, "optimizer_bytes": 0, "optimizer_tensors": 0, "quant_launches": 0.000204,
               "recompute_flop": 1.132e-15, "step": 0.05806, "weight_bytes": 0}
# the unsloth backend ÷ the eager trainer, medians of the same job (bench/results/2026-12-02-train-jobs-h200.md,
# 2026-12-02-unsloth-backend-h200): 7B LoRA r16 @2048 and the 1.5B full fine-tune @2048 mb4 from unsloth's own loop ×
# 0.947 (the backend's speed over that loop's). QLoRA: the median of the four jobs measured on the backend — 8B @4096
# 1.66× (H200, five runs), Llama-3.2-1B 1.50–1.56× (H200), Qwen3-8B 1.40× and Mistral-7B 1.17× (H100:
# bench/results/2026-12-06-unsloth-grid-h100.md, where 1.66× had priced both 38–42 % fast). Not in the 2026-12-04
# grid: applied to the eager trainer's prediction
UNSLOTH_SPEEDUP = {"lora": 1.32, "qlora": 1.47, "full": 1.38}
# Liger's kernels: paired and interleaved beside the eager trainer on an H200, 1.03–1.23× per job (median 1.05×),
# inside the run-to-run spread (bench/results/2026-12-05-liger-h200.md): no gain promised
LIGER_SPEEDUP = 1.0
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
    seconds: float | None = None  # the planned optimizer steps and the layers' compilation (plans' planned_steps)
    approximate: tuple = ()  # the plan's estimate's "approximate" entries (memory.estimate): said in its line


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


def speed_terms(shape: memory.Shape, t: TrainingSpec) -> tuple[dict[str, float], dict[str, float]]:
    """What one micro-batch and one optimizer step of ``t`` cost, term by term, in the units SECONDS_PER prices:
    (per micro-batch, per optimizer step). T = micro-batch × sequence tokens; passes = forward + recompute (with
    activation checkpointing) + backward.

    Per micro-batch:
        matmul_flop         2·N_lin·T per forward pass (N_lin: the decoder's linear weights) and per backward for
                            the input gradients, + 2·N_lin·T more for the weight gradients of a full fine-tune; the
                            LM head 2·V·h·T forward and backward (Kaplan et al. 2020, §2.1: C ≈ 6N per token)
        attention_flop      causal attention 2·s²·H_q per sequence and layer forward (QKᵀ and the weighted sum,
                            half the square), ×(forwards + 2.5) with FlashAttention's recomputing backward (Dao 2022)
        weight_bytes        bf16 weights read by every pass (2 bytes × N_lin, LM head included): small micro-batches
                            are bound by this rather than by FLOP/s (the roofline)
        activation_bytes_*  elementwise traffic, T·L·(h + I)·2 bytes per pass (norms, rotary, SiLU·up, residuals);
                            *_compiled with compiled decoder layers (fused)
        adapter_bytes_*     LoRA's own traffic, T·Σ(in + out)·2 bytes per pass over the adapted layers
        dropout_bytes       LoRA dropout > 0 copies each adapted layer's input: T·Σ in·2 bytes per pass (eager)
        logits_bytes        the fp32 logits and their loss, T·V·4 bytes × 3
        layer_launches_*    L per pass: a decoder layer's kernel launches and Python (eager / compiled)
        adapter_launches_*  adapted modules per pass: LoRA's extra kernels and peft's Python around them
        master_cast_bytes   fp32 master weights: cast to bf16 on every pass (6 bytes per parameter: read 4, write 2)
        dequant_bytes       QLoRA: NF4 → bf16 dequantization of N_lin on every pass (½ byte read, 2 written)
        quant_launches      QLoRA: every 4-bit linear module per pass (adapted or not): bitsandbytes' Linear4bit
                            runs its own Python and a dequantization kernel per call, whatever the module's size —
                            what makes a small shape's QLoRA step host-bound
        checkpointed_layers activation checkpointing: L checkpointed layers (the RNG state saved and restored, the
                            forward's Python run again)
        recompute_flop      activation checkpointing: the recomputed forward's 2·N_lin·T priced on its own (it runs
                            inside autograd's backward, slower than the first forward)
    Per optimizer step:
        step                the loop around it (data, logging, callbacks: one per logged step)
        optimizer_bytes     AdamW over the trainable parameters: 16 bytes each (parameter, gradient, two moments)
        optimizer_tensors   trainable tensors (foreach kernels, gradient clipping's norms)
    """
    full = t.method in FULL_WEIGHTS
    T = t.micro_batch * t.seq_len
    fwd = 2 if t.activation_checkpointing else 1
    passes = fwd + 1
    n_lin = shape.n_linear
    head = shape.vocab * shape.hidden
    targets = [] if full else shape.targeted(t.lora_targets)
    io = sum(x.in_sum + x.out_sum for x in targets)
    modules = sum(x.count for x in targets)
    mb = {k: v * passes for k, v in _pass_terms(shape, t, policy=True).items()}  # forward, recompute, backward
    # a full fine-tune's weight gradients; the LM head forward and backward (and its weight gradient), read twice
    mb["matmul_flop"] += (2 * n_lin * T if full else 0) + 2 * head * T * (3 if full else 2)
    mb["weight_bytes"] += 2 * head * 2
    mb |= {
        "attention_flop": _attention_flop(shape, t) * (fwd + 2.5),
        "dropout_bytes": T * sum(x.in_sum for x in targets) * 2 * passes
        if (targets and t.lora_dropout > 0 and not t.compile_layers) else 0,
        "logits_bytes": T * shape.vocab * 4 * 3,
        "checkpointed_layers": shape.layers if t.activation_checkpointing else 0,
        "recompute_flop": 2 * n_lin * T if t.activation_checkpointing else 0,
    }
    trainable = shape.n_params if full else t.lora_rank * io
    tensors = (shape.layers * (len(shape.linears) + 2) + 3) if full else 2 * modules
    step = {"step": 1.0, "optimizer_bytes": 16 * trainable, "optimizer_tensors": float(tensors)}
    return mb, step


# a device's name as the driver reports it (torch.cuda.get_device_name, nvidia-smi) → the tables' name: "NVIDIA H100
# 80GB HBM3", "NVIDIA A100-SXM4-80GB", "Tesla T4", "NVIDIA A10G" were not found and were priced as an A10 — 4.6× too
# slow on a real H100 (bench/results/2026-12-06-dpo-fresh-h100.md). First match wins (L40S before L4, A100 before A10).
_GPU_PATTERNS = ((r"H200", "NVIDIA H200"), (r"H100", "NVIDIA H100 80GB"), (r"A100\b.*80\s?GB?", "NVIDIA A100 80GB"),
                 (r"A100", "NVIDIA A100 40GB"), (r"L40S", "NVIDIA L40S"), (r"\bL4\b", "NVIDIA L4"),
                 (r"\bA10G?\b", "NVIDIA A10"), (r"\bT4\b", "NVIDIA T4"), (r"RTX 4090", "NVIDIA GeForce RTX 4090"))


def gpu_key(gpu_name: str | None) -> str | None:
    """The name of ``gpu_name``'s row in PEAK_TFLOPS / BANDWIDTH_TBS (a table name as it is, a driver's name by its
    model: the H100's variants all as the SXM one); None for a GPU the tables do not know."""
    import re

    if not gpu_name or gpu_name in PEAK_TFLOPS:
        return gpu_name or None
    name = gpu_name.upper().replace("-", " ")
    return next((key for pat, key in _GPU_PATTERNS if re.search(pat, name)), None)


def _scale(term: str, gpu_name: str) -> float:
    """How much longer a term takes on ``gpu_name`` than on the H200 it was fitted on: FLOP terms by the dense bf16
    peak, byte terms by the memory bandwidth, launches and the loop unchanged (the host's). A GPU the tables do not
    know is priced as an A10."""
    key = gpu_key(gpu_name)
    if term.endswith("_flop"):
        return PEAK_TFLOPS[FIT_GPU] / PEAK_TFLOPS.get(key or "", 100)
    if term.endswith("_bytes"):
        return BANDWIDTH_TBS[FIT_GPU] / BANDWIDTH_TBS.get(key or "", 0.6)
    return 1.0


def step_seconds(shape: memory.Shape, t: TrainingSpec, gpu_name: str = FIT_GPU,
                 seconds_per: dict[str, float] | None = None) -> float:
    """Predicted seconds of one optimizer step of ``t`` (gradient accumulation × micro-batch + the step itself) on
    ``gpu_name`` (:func:`speed_terms` × SECONDS_PER, scaled by :func:`_scale`). DPO: the supervised step of its
    concatenated pairs × :func:`dpo_reference_factor`; KTO: the supervised step of its micro-batch plus its three
    no-grad forwards (:data:`KTO_NO_GRAD_FORWARDS`), each priced by :func:`forward_terms` at the same SECONDS_PER."""
    c = SECONDS_PER if seconds_per is None else seconds_per
    cost = lambda terms: sum(c.get(k, 0.0) * v * _scale(k, gpu_name) for k, v in terms.items())  # noqa: E731
    if t.objective == "dpo":
        return dpo_reference_factor(t) * step_seconds(shape, memory.dpo_batch(t), gpu_name, seconds_per)
    if t.objective == "kto":
        batch = memory.preference_batch(t)
        extra = sum(cost(forward_terms(shape, batch, policy)) for policy in KTO_NO_GRAD_FORWARDS)
        return step_seconds(shape, batch, gpu_name, seconds_per) + batch.grad_accum * extra
    mb, step = speed_terms(shape, t)
    return t.grad_accum * cost(mb) + cost(step)


def _policy_passes(t: TrainingSpec) -> int:
    """The policy's forward-sized passes of a supervised micro-batch: forward, backward (input gradients: one
    forward's matmuls under LoRA; input and weight gradients: two for a full fine-tune), and the recomputed forward
    with checkpointing."""
    return 1 + (2 if t.method in memory.FULL_WEIGHTS else 1) + (1 if t.activation_checkpointing else 0)


def dpo_reference_factor(t: TrainingSpec) -> float:
    """A DPO step over the supervised step of its concatenated batch (recipes/memory/model.py dpo_batch): the
    reference model's no-grad forward of the same batch as one more of the policy's passes (:func:`_policy_passes`).
    Derived from the passes, not fitted: on the H200 rows of three shapes median |error| 9.2 %, worst 31.2 %
    (bench/results/2026-12-05-preference-h200.md); on six held-out rows of three other shapes on an H100 5.1 %,
    10.7 % (bench/results/2026-12-07-preference-h100.md) — where the reference's forward priced term by term
    (:func:`forward_terms`, KTO's way) read 22.9 %, 26.4 %, optimistic on all six; which of the two DPO keeps was
    chosen on those rows."""
    passes = _policy_passes(t)
    return (passes + 1) / passes


# KTO's no-grad forwards beside the policy's forward and backward, each of its micro-batch (trl 1.16): the policy's
# own of the KL term's mismatched completions (True: its adapter runs, fp32 masters are cast), then the reference's
# of those and of the completions (kto_trainer.py _compute_kl_logps, _compute_loss)
KTO_NO_GRAD_FORWARDS = (True, False, False)


def forward_terms(shape: memory.Shape, t: TrainingSpec, policy: bool) -> dict[str, float]:
    """One no-grad forward of ``t``'s micro-batch in :func:`speed_terms`' units: what speed_terms prices per pass,
    for one pass — the linear layers' and the LM head's 2·N·T FLOPs, causal attention forward only, the weights read
    once, elementwise traffic, NF4 dequantized; the ``policy``'s own forward also its adapter's traffic and launches
    and fp32 masters' cast (the reference: LoRA's base with the adapter off, a full fine-tune's bf16 copy,
    worker.dpo_reference) — with no backward, recompute or checkpointing (trl runs the reference under
    ``disable_gradient_checkpointing``) and no optimizer step. Derived from the supervised terms, not fitted; KTO's
    step with three of them: on the H200 rows of bench/results/2026-12-05-kto-h200.md median |error| 8.8 %, worst
    19.7 % (a factor over the passes, as DPO's: 26.9 %, 50.9 %, too slow on all seven), and on seven held-out rows of
    three other shapes on an H100 9.7 %, 19.1 % (bench/results/2026-12-07-preference-h100.md) — on the median of
    those and a second run on another H100, 18.1 %, +30.1 %, optimistic on six of seven
    (bench/results/2026-12-07-preference-h200.md)."""
    terms = _pass_terms(shape, t, policy)
    terms["matmul_flop"] += 2 * shape.vocab * shape.hidden * t.micro_batch * t.seq_len  # the LM head's forward
    terms["weight_bytes"] += 2 * shape.vocab * shape.hidden
    return terms | {"attention_flop": _attention_flop(shape, t)}


def _attention_flop(shape: memory.Shape, t: TrainingSpec) -> float:
    """Causal attention's forward FLOPs of ``t``'s micro-batch: 2·s²·H_q·d per sequence and layer (QKᵀ and the
    weighted sum, half the square)."""
    return 2 * t.micro_batch * t.seq_len ** 2 * shape.heads * shape.head_dim * shape.layers


def _pass_terms(shape: memory.Shape, t: TrainingSpec, policy: bool) -> dict[str, float]:
    """One forward-sized pass of ``t``'s micro-batch through the decoder layers (the LM head and attention aside), in
    :func:`speed_terms`' units: the linear layers' 2·N_lin·T FLOPs, their bf16 weights read, elementwise traffic, each
    layer's launches, NF4 dequantization; the ``policy``'s own pass (not a frozen reference's) also its adapter's
    traffic and launches and fp32 masters' cast."""
    full = t.method in memory.FULL_WEIGHTS
    T = t.micro_batch * t.seq_len
    targets = shape.targeted(t.lora_targets) if (policy and not full) else []
    compiled = t.compile_layers
    kind = "compiled" if compiled else "eager"
    other = "eager" if compiled else "compiled"
    per = {
        "matmul_flop": 2 * shape.n_linear * T,
        "weight_bytes": 2 * shape.n_linear,
        f"activation_bytes_{kind}": T * shape.layers * (shape.hidden + shape.intermediate) * 2,
        f"adapter_bytes_{kind}": T * sum(x.in_sum + x.out_sum for x in targets) * 2,
        f"layer_launches_{kind}": shape.layers,
        f"adapter_launches_{kind}": sum(x.count for x in targets),
        "master_cast_bytes": 6 * shape.n_params if (policy and full and t.master_weights == "fp32") else 0,
        "dequant_bytes": 2.5 * shape.n_linear if t.method == "qlora" else 0,
        "quant_launches": sum(x.count for x in shape.linears.values()) if t.method == "qlora" else 0,
    }
    return per | {f"{name}_{other}": 0 for name in ("activation_bytes", "adapter_bytes", "layer_launches",
                                                    "adapter_launches")}


def sequences_per_record(t: TrainingSpec) -> int:
    """Sequences the trainer runs per training record: 2 for DPO (a pair's chosen and rejected), else 1."""
    return 2 if t.objective == "dpo" else 1


def tokens_per_s(shape: memory.Shape, t: TrainingSpec, gpu_name: str) -> float:
    """Predicted training tokens/s per GPU of ``t`` as it stands (its checkpointing, micro-batch, kernels) on
    ``gpu_name``: tokens of an optimizer step ÷ :func:`step_seconds`; × UNSLOTH_SPEEDUP on the unsloth backend,
    × LIGER_SPEEDUP with Liger's kernels."""
    # tokens as trl counts them: DPO's chosen and rejected both (two sequences a pair)
    speed = sequences_per_record(t) * t.grad_accum * t.micro_batch * t.seq_len / \
        step_seconds(shape, t, gpu_name)
    if t.training_backend == "unsloth":
        speed *= UNSLOTH_SPEEDUP.get(t.method, 1.0)
    if t.liger:
        speed *= LIGER_SPEEDUP
    return speed


def predicted(shape: memory.Shape, t: TrainingSpec, gpu_name: str) -> float:
    """Predicted training tokens/s per GPU of ``t`` (:func:`tokens_per_s`)."""
    return tokens_per_s(shape, t, gpu_name)


# model types whose speed the grid measured within the model's goal (bench/results/2026-12-04-speed-model-h200.md:
# fitted qwen2, llama; held out mistral, qwen3, phi3; bench/results/2026-12-04-speed-families-h200.md: glm held out,
# −3 … +10 %). Measured outside it, so no speed is shown: Gemma-3 (1.26–1.94× optimistic: its 262k vocabulary, six
# norms per layer and sliding-window masks are terms the model lacks) and MoE models (Qwen3-30B-A3B 2.3–3.0×:
# transformers' per-expert loop and peft's merged expert weights); other families are not measured.
SPEED_FAMILIES = ("qwen2", "llama", "mistral", "qwen3", "phi3", "glm")


def speed_modelled(t: TrainingSpec, shape: memory.Shape | None = None) -> bool:
    """Whether the speed model covers ``t`` on ``shape`` (a dense model of SPEED_FAMILIES; None: the plan alone,
    any model): yichui's trainer (not the plain loop ``--loss full`` prices), a method
    of the grid (not GaLore, whose optimizer it did not measure), plain data parallel (one process, or DDP, whose
    per-GPU speed it assumes unchanged), nothing offloaded, no sequence split. ZeRO, FSDP2, offload and sequence parallelism change
    the speed in ways it does not model yet (bench/results/2026-12-04-sharded-one-gpu-h200.md: ZeRO-3 in one process
    at 0.58–0.63× ZeRO-2; NVMe offload at 0.02× ZeRO-3, bench/results/2026-12-03-nvme-offload-h200.md)."""
    family = shape is None or (not shape.experts and shape.model_type in SPEED_FAMILIES)
    return (family and t.distribution == "ddp" and not t.offloaded and t.sequence_parallel == 1
            and t.objective != "grpo"  # GRPO's time is its replies' generation, token by token, which the model
            # has no term for
            and t.method != "galore" and t.loss != "full")


# compiled decoder layers' compilation on the host (bench/results/2026-12-06-compile-shapes-h100.md, one H100, Qwen2.5-
# 0.5B's shape, LoRA): the first compile delayed the first step by 6.2 s; on unpacked data (micro-batches padded to
# their own longest record) the layers recompiled at the 2nd and 3rd new lengths and at the first smaller micro-batch,
# 16.6–19.3 s each (the chain's 200-step run: 18.6–20.3 s, at three steps too); fixed-length micro-batches (packing)
# recompiled nothing after the first step (the 2026-12-04 grid's compiled rows)
FIRST_COMPILE_S = 6.2
RECOMPILE_S = 17.5
RECOMPILES_UNPACKED = 3


def compile_seconds(t: TrainingSpec) -> float:
    """Seconds a run of ``t`` spends compiling its decoder layers, beyond its steps' time: 0 without compiled layers;
    the first compile, and without packing RECOMPILES_UNPACKED recompilations (see the constants' source). Measured
    on one host (an H100 machine's 16 cores): Inductor compiles on the CPU, so another host takes another time."""
    if not t.compile_layers:
        return 0.0
    return FIRST_COMPILE_S + (0 if t.packing else RECOMPILES_UNPACKED * RECOMPILE_S)


def duration_msg(seconds: float) -> Msg:
    """``seconds`` as a person reads a duration, in the user's language (the catalogue's ``memory.duration.*``:
    "约需 1 s" was left in English in the zh wizard, issue 46 trial E): "45 s", "12 min", "3 h 05 min", "2 d 4 h";
    under a second reads "1 s" (the catalogue's sentences say "about {eta}": "about < 1 s" read as a typo)."""
    s = max(1, int(round(seconds)))
    if s < 90:
        return msg("memory.duration.s", n=s)
    if s < 90 * 60:
        return msg("memory.duration.min", n=round(s / 60))
    if s < 48 * 3600:
        return msg("memory.duration.h_min", h=s // 3600, m=f"{s % 3600 // 60:02d}")
    return msg("memory.duration.d_h", d=s // 86400, h=s % 86400 // 3600)


def plans(shape: memory.Shape, t: TrainingSpec, effective_batch: int, gpu_name: str, gpu_gib: float,
          liger: bool | None = None, compile_layers: bool | None = None, unsloth: bool = False,
          planned_steps: int = 0, speed_seq: int | None = None) -> list[Plan]:
    """Every candidate (checkpointing on/off × micro-batches dividing the effective batch × Liger if available ×
    compiled layers if available × the unsloth backend if ``unsloth`` (installed: recipes/training/backends.py) —
    only the combinations TrainingSpec.check accepts), fitting ones first, then the soonest done.

    Args:
        t: the user's training configuration (method, rank, targets, dropout, sequence length, packing,
            processes…); its ckpt and micro_batch are what the plans vary.
        effective_batch: sequences per optimizer step per process (micro-batch × gradient accumulation).
        planned_steps: optimizer steps the run will take (0: unknown). Given, each plan's ``seconds`` is their time
            at its tokens/s plus its compilation (:func:`compile_seconds`), and plans are ranked by it: compiled
            layers are faster per step but, on unpacked data, spend ~58 s recompiling (bench/results/2026-12-06-
            compile-shapes-h100.md), which a short run does not win back. Unknown: ranked by tokens/s.
        speed_seq: tokens per sequence the trainer will run, for the speed and time (unpacked data: its longest
            record, when shorter than seq_len); the memory stays priced at seq_len. None: seq_len.
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
            if mb > effective_batch or effective_batch % mb or mb < t.least_micro_batch:
                continue
            for lg, cl, backend in kernels:
                pt = replace(t, activation_checkpointing=ckpt, micro_batch=mb, grad_accum=effective_batch // mb,
                             liger=lg, compile_layers=cl, training_backend=backend)
                est = memory.estimate(shape, replace(pt, training_backend="transformers"), gpu_gib)
                run = replace(pt, seq_len=speed_seq or t.seq_len)  # the sequences the trainer will run
                speed = tokens_per_s(shape, run, gpu_name)
                seconds = planned_steps * sequences_per_record(pt) * effective_batch * run.seq_len / speed \
                    + compile_seconds(pt) if planned_steps and speed > 0 else None
                out.append(Plan(ckpt, mb, effective_batch // mb, lg, est["peak_gib"], round(speed, 1), est["fits"],
                                cl, backend, seconds, tuple(est["approximate"])))
    return sorted(out, key=lambda p: (not p.fits, p.seconds if p.seconds is not None else -p.tokens_per_s,
                                      p.peak_gib))
