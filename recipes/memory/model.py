"""Peak GPU memory per GPU for training and serving, from a model's config.json alone.

Training peaks are predicted for yichui's own training path (recipes/training/worker.py: trl SFTTrainer + peft, bf16
autocast, trl's fused LM head, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) as nvidia-smi shows them: the
caching allocator's peak reserved memory plus what lies outside it (CUDA context, library handles).

The structure follows where the bytes are (each term cites its source below); the few empirical constants were fitted
on 39 configurations measured on an H200 (bench/memory_accuracy.py, bench/bench_fit.py, raw data and errors in
bench/results/). Units: bytes inside, GiB (2^30 bytes) in every returned figure.

Sources
    [ZeRO]    Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models", §3, §5:
              model states and their sharding over N data-parallel GPUs (stages 1/2/3).
    [MegAct]  Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", §4: activation
              memory per layer is linear in tokens × hidden size (s·b·h) plus the attention-score term (a·s²·b)
              that memory-efficient attention (sdpa, FlashAttention) does not store.
    [QLoRA]   Dettmers et al. 2023, §3: NF4 weights at 4 bits; double quantization stores the per-64-block absmax
              as 8-bit with one fp32 constant per 256 blocks (bitsandbytes Linear4bit).
    [LoRA]    Hu et al. 2021, §4.1: a rank-r adapter on W ∈ R^{out×in} has r·(in + out) parameters.
    [torch]   torch.optim.AdamW keeps exp_avg and exp_avg_sq shaped and typed like each parameter.
    [trl]     trl 1.16 trainer/utils.py add_fused_lm_head + kernels/chunked_logprob.py: log-probabilities in tiles
              of 4096 tokens × 32768 vocabulary entries instead of the (batch, seq, vocab) logits.
    [VLM]     transformers 5 modeling_qwen2_5_vl.py / modeling_llava.py: the vision tower encodes (H/14)·(W/14)
              patches (a fixed-size tower (S/14)² + CLS), the Qwen2-VL family merges 2 × 2 of them into one LM token;
              modeling_utils.enable_input_require_grads hooks every sub-model's input embedding. Vision-language
              terms measured on Qwen2.5-VL 3B/7B (bench/vlm_memory.py, bench/results/2026-12-02-memory-vlm-h200.md).
    [DS]      DeepSpeed runtime/zero/stage_1_and_2.py estimate_zero2_model_states_mem_needs and stage3.py
              estimate_zero3_model_states_mem_needs (the peers printed by the benchmark).
    [SP]      Jacobs et al. 2023, "DeepSpeed Ulysses", §3: sequence parallelism splits the sequence over P processes
              and exchanges heads by all-to-all before and after attention; deepspeed 0.19.8
              runtime/sequence_parallel/ulysses_sp.py (UlyssesSPAttentionHF) as accelerate 1.15 wires it.
"""
from __future__ import annotations

import functools
import json
import math
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from recipes.base import Msg, Refusal
from recipes.memory import sharding
from recipes.model import prequantized
from recipes.training.spec import FULL_WEIGHTS, PREFERENCE_OBJECTIVES, TrainingSpec

GIB = 2**30

# -- fitted on the H200 measurements (bench/bench_fit.py --split all; bench/results/2026-11-29-memory-h200.md), refitted
# 2026-12-06 once peft's cast-gradient term came apart from them (LORA_CAST_GRAD; bench/results/2026-12-06-memory-refit.md)
ACT_H = 12.65        # bytes per token per layer per hidden unit: norms (fp32 upcast), q/k/v/o activations, residual
ACT_I = 6.04         # bytes per token per layer per MLP intermediate unit: gate, up, SiLU, product (bf16)
ACT_FULL_H = 20.13   # extra per token per layer per hidden unit when every weight trains (norm weights' inputs, …)
QLORA_CAST = 1.24     # bytes per token per adapted input element under QLoRA (bf16 adapters: cheaper than LoRA's 2)
QLORA_DROPOUT = 2.96  # … and with LoRA dropout > 0 (the bf16 dropout output + its mask)
# QLoRA with checkpointing, the layer being recomputed: bytes per token per adapted input element beyond QLORA_CAST,
# fitted with the others once peft's cast gradient was out of the shared terms (the 2026-11-29 QLoRA rows alone read
# 1.07 and 1.11 at 7B and 8B); checked on rows it was not fitted on — 1.5B QLoRA (grid 7, predicted before it ran at
# −3.6 % without it), GRPO's 1.5B QLoRA row, DPO's QLoRA rows (bench/results/2026-12-06-memory-refit.md)
QLORA_CKPT_GRAD = 0.79
HEAD_H = 24.0        # bytes per token per hidden unit around the fused LM head (final norm, gathered states, fp32 grad)
CKPT_H = 2.0         # bytes per token per layer per hidden unit kept by activation checkpointing (the bf16 layer
                     # input, 2, and what the checkpointed LoRA layers keep besides)
CKPT_FLOW_H = 0.0    # bytes per token per hidden unit alive beside the recomputed layer (the gradient flowing back,
                     # the final norm's saved input): the fit's lower bound — ACT_H's recomputed layer covers it
# the training issue's switches, bench/results/2026-11-29-memory-h200-raw-round3.jsonl: LIGER_* fitted on the two
# Liger rows of the throughput bench and held out on five; FP32_CKPT_H and PACKED_H fitted on the rows they cover
LIGER_H = 4.71       # Liger's RMSNorm saves the bf16 input and one fp32 rstd per row instead of the fp32 upcast chain
LIGER_FULL_H = 5.46  # … and, when the norm weights train, no normalized copy for their gradient
FP32_CKPT_H = 3.5    # fp32 masters + checkpointing: kept per token per layer per hidden unit beyond the fp32 input
PACKED_H = 8.3       # padding-free packing without checkpointing: per token per layer per hidden unit (position
                     # ids and per-document attention bookkeeping); one row
BWD_I = 2.77         # bytes per token per MLP intermediate unit of the layer in backward (gradients of gate, up, SiLU)
FRAG_FRACTION = 0.0116  # reserved − allocated: the caching allocator's slack (expandable segments) …
FRAG_GIB = 0.138         # … as a fraction of the peak plus a constant
CONTEXT_GIB = 0.75     # outside the allocator: CUDA context + cuBLAS/cuDNN handles (H200, torch 2.11, CUDA 13: 0.749)
# several processes (recipes/memory/sharding.py; outside_allocator_gib): beyond CONTEXT_GIB per process, NCCL's
# communicators, measured on two H200s (bench/results/2026-11-29-distributed-h200*.jsonl; more GPUs are not measured)
# and, for a sharded plan in one process, on one (bench/results/2026-12-04-sharded-one-gpu-h200.md: ZeRO-1/2 1.68 GiB
# outside the allocator, ZeRO-3 and FSDP2 1.30)
COMM_GIB = {"ddp": 0.83, "fsdp2": 0.82, "deepspeed": 1.30}
ONE_PROCESS_COMM_GIB = {"zero12": 0.93, "zero3": 0.55, "fsdp2": 0.55}
# reserved − allocated beyond FRAG_* under FSDP2 (its all-gather and reduce-scatter streams keep pools of their own):
# fitted on the one-GPU rows of bench/results/2026-12-04-sharded-one-gpu-h200.md (0.52–0.63 GiB); DeepSpeed's is
# sharding.py's ``holes``
ENGINE_SLACK_GIB = {"fsdp2": 0.6}
# a plan fits when its predicted peak leaves this fraction of the GPU free; an estimate known to run under on shapes it
# was not fitted on asks for more: GaLore, reported 17 % under (issue 44), so 0.10 + 0.15 (a 17 % miss still fits)
FIT_MARGIN = 0.10
EXTRA_MARGIN = {"galore": 0.15, "grpo": 0.10}  # GRPO outside its measured plans (grpo_measured)
# a family's activations without checkpointing beyond NO_CKPT_FAMILIES: Phi-3 measured up to 18.7 % under, so
# 0.10 + 0.10 (bench/results/2026-12-04-speed-model-h200.md)
NO_CKPT_FAMILY_MARGIN = 0.10
NO_CKPT_SUFFIX = " without checkpointing"
# … and families whose checkpointed plans the 2026-12-06 refit under-predicts beyond 3 %: Gemma-3 (four norms a
# layer, GeLU-tanh) −4.7 and −7.9 % at 8,192 tokens a micro-batch (bench/results/2026-12-06-memory-refit.md), so
# its every plan is approximate, with NO_CKPT_FAMILY_MARGIN
CKPT_APPROX_PREFIXES = ("gemma",)
CKPT_SUFFIX = " with checkpointing"


# the names an estimate's "approximate" list holds (estimate(), shape_from_config()), each said in the user's
# language by approximate_words(); English keeps the name as recorded
APPROXIMATE_NAMES = ("vision", "moe", "sharding", "offload", "grpo", "plain loop", "galore", "compile", "paged",
                     "flash", "packing", "vision-trained", "unsloth", "loss-chunked", "nvme", "vllm-generation",
                     "sequence-parallel", "loss-full")


def approximate_words(name: str) -> Msg:
    """An entry of an estimate's ``approximate`` list as a message (English: the name itself; the zh UI showed
    "llava without checkpointing, vision": issue 46's tryout)."""
    if name.endswith(NO_CKPT_SUFFIX):
        return Msg("memory.approx.no_ckpt", {"family": name[:-len(NO_CKPT_SUFFIX)]})
    if name.endswith(CKPT_SUFFIX):
        return Msg("memory.approx.ckpt", {"family": name[:-len(CKPT_SUFFIX)]})
    if name.startswith("quantized:"):
        return Msg("memory.approx.quantized", {"method": name.split(":", 1)[1]})
    if name in APPROXIMATE_NAMES:
        return Msg("memory.approx." + name.replace(" ", "_").replace("-", "_"), {})
    return Msg("memory.approx.other", {"name": name})


def extra_margin(approximate: str) -> float:
    """The margin beyond FIT_MARGIN an ``approximate`` entry of :func:`estimate` asks for (0 for most)."""
    return NO_CKPT_FAMILY_MARGIN if approximate.endswith((NO_CKPT_SUFFIX, CKPT_SUFFIX)) else \
        EXTRA_MARGIN.get(approximate, 0.0)


# -- exact, from the implementations --------------------------------------------------------------------------------
LIGER_I = 2.0        # Liger's SwiGLU recomputes SiLU(gate) in backward instead of saving it (bf16, per I)
LORA_CAST = 2.0      # peft casts an adapted layer's input to the fp32 adapter dtype; autocast saves a bf16 copy
                     # (DoRA, and LoRA with ``adapter_input_cast``; yichui's LoRA trainer skips the cast, so
                     # without dropout its adapters save nothing beyond the base layer's own input)
DROPOUT_MASK = 1.0   # nn.Dropout keeps a bool mask per adapted input element
LORA_CAST_GRAD = 4.0  # with peft's cast (DoRA, ``adapter_input_cast``), the layer in backward under checkpointing
                      # holds an fp32 gradient per adapted input element of that layer (the cast's input is fp32):
                      # the 2026-11-29 trainer's checkpointed LoRA rows peaked 4.1 bytes per token and adapted input
                      # element of one layer above the same plans run without the cast on 2026-12-06 (0.5B: 0.30 GiB
                      # at 8,192 tokens, 0.59 at 16,384; 1.5B: 0.55 at 8,192; bench/results/2026-12-06-dpo-fresh-h100.md
                      # section 3); without checkpointing the head's backward peak hides it (identical allocations)
# -- fitted on bench/results/2026-12-04-speed-model-h200 (the shapes not held out; bench/fit_speed.py --memory) -------
# LoRA at dropout 0 in yichui's eager trainer, bytes per token per adapted input element: measured above what dropout
# 0.05 keeps once its cast and mask are counted (autograd holds lora_A's input per adapted layer: every dropout-0 eager
# plan without checkpointing was under-predicted by 12-27 %, issue 44); fitted rows −2.2 … −0.3 %, held out
# Llama-3.2 +1.3 %, Mistral −0.6 %, Qwen3 −6.8 %, Phi-3 −18.7 % (see NO_CKPT_FAMILIES). Measured without
# checkpointing only (with it, 2026-12-02-train-levers-h200.md's dropout-0 rows held without this term)
LORA_NO_DROPOUT = 1.0
# … and with checkpointing, in the layer being recomputed: a bf16 copy per adapted input element, 2 bytes. Chosen
# on the dropout-0 LoRA rows with checkpointing (DPO and KTO, whose trainers set dropout to 0: 17 rows of four shapes
# and the supervised dropout-0 row of 2026-12-02-train-levers-h200, bench/results/2026-12-06-memory-refit.md; 0, 1,
# 1.5, 2, 2.5 scanned: mean |error| 4.3, 3.0, 2.4, 1.8, 1.4 %, worst −10.8 … −5.0 %; 2.5 fits best, 2 is the copy)
LORA_NO_DROPOUT_CKPT = 2.0
# compiled decoder layers without checkpointing keep this fraction of the eager layer's activations (the fused
# elementwise chains save fewer intermediates); fitted rows −5.6 … +10.0 %, held out −14.5 … +12.2 %
COMPILED_ACT = 0.76
# families whose activations without checkpointing are calibrated (the same grid: the others measured above the model
# there — Phi-3's full multi-head K/V −6 … −19 %, Qwen3's q/k norms −3 … −8 % — and stay "approximate" without it;
# with checkpointing every family measured within −5.3 … +8.0 %); GLM-4-9B held out −3.8 … +1.3 % without it, Gemma-3
# −7.9 … −16.0 % (approximate), with it +0.6 … +4.1 % (bench/results/2026-12-04-speed-families-h200.md)
NO_CKPT_FAMILIES = ("qwen2", "llama", "mistral", "glm")
# DoRA (peft DoraLinearLayer.forward): the base and adapter outputs its rescaling saves for backward, bf16, plus 2 bytes
# measured beyond them (read off the 1.5B no-checkpointing row of bench/results/2026-12-02-memory-dora-h200.md) —
# per token per adapted output feature; and, in each adapted layer's forward, dense temporaries: an in × in fp32
# identity (get_lora_weight: lora_B(lora_A(eye))) and three out × in fp32 matrices (B·A, the weight in the input's
# dtype, their sum for the column norm), the largest layer's at a time
DORA_OUT = 6.0
# torch.compile of the decoder layers (compile_layers): 0.26 GiB more than eager on Qwen2.5-7B LoRA r16, 2048 tokens,
# checkpointing on (16.84 vs 16.58 GiB, bench/results/2026-12-02-train-levers-h200.md); one shape, a constant
COMPILE_GIB = 0.26
# GaLore's projection update (galore_torch GaLoreProjector.get_orthogonal_matrix): an fp32 copy of the gradient, U of
# torch.linalg.svd(full_matrices=False) at the same size, torch's column-major working copy for cuSOLVER and its
# workspace — 16 bytes per element of the weight decomposed, fitted on the Qwen2.5-7B row (its 545M-element LM head;
# bench/results/2026-12-02-train-jobs-h200.md), the Llama-3.1-8B and tied-head rows held out
GALORE_SVD_BYTES = 16.0
# image records are never truncated, so the sequences of a micro-batch differ in length and are padded: sdpa then
# gets a 4-D mask and leaves the FlashAttention kernel for one that takes a mask. Per decoder layer it keeps a bf16
# additive copy of the mask (PAD_SCORES bytes per position pair of each sequence: 2, derived; a free fit gave 2.1) and
# PAD_H bytes per token per hidden unit besides (fitted: padded vs equal-length twins of three rows,
# bench/results/2026-12-02-memory-vlm-h200.md)
PAD_H = 3.8
PAD_SCORES = 2.0
VIS_CKPT_H = 2.0      # bytes per patch per vision layer per vision hidden unit kept under activation checkpointing:
                     # each checkpointed vision block's bf16 input (see vision_activations)
EAGER_SCORES = 6.0   # eager attention keeps fp32 softmax output + its bf16 copy: 6 bytes per score (b·heads·s²)
EAGER_BACKWARD = 10.0  # … and its backward adds the probabilities' gradient, its fp32 upcast and the fp32 result
HEAD_TILE = 4096 * 32768 * 2  # trl's fused LM head: one bf16 tile of 4096 tokens × 32768 vocabulary entries
NF4_BYTES = 0.5 + 1 / 64 + 4 / (64 * 256)  # [QLoRA] 4-bit weight + 8-bit absmax per 64 + fp32 per 256 blocks
# --loss full: the plain transformers + PEFT loop (../shared/baselines/plain_hf_train.py: bf16 weights, no autocast,
# transformers' ForCausalLMLoss over materialized logits, the default allocator), fitted on its H200 rows
# (bench/plain_memory.py, bench/results/2026-12-02-memory-plain-h200.md)
FULL_LOGITS = 11.75      # bytes per logit (b·s·V), fitted: bf16 logits (2), their fp32 upcast in the loss (4), the
                         # fp32 gradient (4) and part of a second fp32 temporary in log-softmax's backward
PLAIN_LORA_INPUT = 4.0   # peft casts each adapter's input to fp32 and, without autocast, lora_A saves that copy
PLAIN_FRAG_GIB = 1.81    # reserved − allocated without expandable segments: the fitted rows' mean (1.2–2.5 GiB)

# GPUs for targets and instance sizing: memory as nvidia-smi reports it (GiB)
GPUS = {
    "t4-16g": ("NVIDIA T4", 15.0), "a10-24g": ("NVIDIA A10", 22.5), "l4-24g": ("NVIDIA L4", 22.5),
    "rtx4090-24g": ("NVIDIA GeForce RTX 4090", 23.6), "l40s-48g": ("NVIDIA L40S", 44.5),
    "a100-40g": ("NVIDIA A100 40GB", 39.4), "a100-80g": ("NVIDIA A100 80GB", 79.2),
    "h100-80g": ("NVIDIA H100 80GB", 79.2), "h200-141g": ("NVIDIA H200", 139.8),
}
# every GPU of the table, by memory: a plan said to fit one (estimate's fit line) is never sized onto a bigger one
# (the L40S was missing: "fits on L40S" beside "smallest instance: A100 80GB", issue 46's tryout)
SIZING_GPUS = ("t4-16g", "a10-24g", "l4-24g", "rtx4090-24g", "a100-40g", "l40s-48g", "a100-80g", "h100-80g",
               "h200-141g")
SIZING_COUNTS = (1, 2, 4, 8)


CALIBRATED_VLMS = ("qwen2_5_vl",)  # vision-language model types whose vision terms were measured (3B, 7B)
DEFAULT_IMAGE_SIZE = 448  # pixels per side assumed for a dynamic-resolution tower when the spec names no size
# the moments whose sum of live bytes can be the peak (see :func:`estimate`); the load only where the engine's
# start holds more than training does (FSDP2: recipes/memory/sharding.py)
PHASE_BACKWARD, PHASE_STEP, PHASE_LOAD = "forward_backward", "optimizer_step", "load"
PHASE_GENERATE = "generation"  # GRPO: the replies generated between optimizer steps
PHASE_REFERENCE = "reference"  # DPO, KTO: the reference model's no-grad forward beside the policy's kept activations
# transformers' generate: the sampled token's fp32 logits and probabilities per sequence (bytes per vocabulary entry)
GENERATE_LOGIT_BYTES = 12.0
ENCODER_ONLY = ("bert", "roberta", "xlm-roberta", "deberta", "deberta-v2", "distilbert", "albert", "electra",
                "modernbert", "camembert")


class ConfigError(Refusal):
    """A config.json the model cannot use."""


@dataclass(frozen=True)
class Linear:
    """The nn.Linear layers of the decoder blocks that share a name suffix (q_proj, …): how many, Σ in, Σ out."""

    count: int
    in_sum: int
    out_sum: int


@dataclass(frozen=True)
class Shape:
    """Counts and dimensions of a decoder from its config (no weights).

    Attributes:
        n_params: parameters, tied embeddings counted once (= sum(p.numel()) of the empty-weights model).
        n_linear: parameters of the nn.Linear layers in the decoder blocks (what QLoRA quantizes).
        linears: suffix → Linear, for LoRA target selection.
        largest: elements of the largest parameter tensor (8-bit optimizers keep an fp32 copy of one at a time).
        intermediate: MLP width a token goes through (MoE: experts per token × expert width + shared experts).
        vision_*: a vision-language model's vision side (0 for a text model), see the fields below; hidden,
            layers, linears, … are the language model's.
    """

    n_params: int
    n_linear: int
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied: bool
    largest: int
    linears: dict = field(default_factory=dict)
    model_type: str = ""
    experts: int = 0
    max_position: int = 0
    sliding_window: int = 0
    approximate: tuple = ()
    # the vision side of a vision-language model built image-text-to-text (0 for a text model): parameters of the
    # tower and projector (modules named by recipes.model.vision.VISION_PARTS, counted in n_params too), and the
    # tower's geometry — encoder layers, width, MLP width, heads, patch side in pixels, the spatial merge (Qwen2-VL
    # family: 2 × 2 patches become one image token; 1: none) and, for towers of a fixed input size (CLIP in LLaVA),
    # that size in pixels (0: dynamic resolution) and whether the CLS position becomes an image token too
    vision_params: int = 0
    vision_projector_params: int = 0  # of vision_params: the projector's (recipes.model.vision.vision_part)
    vision_lora_io: int = 0  # Σ (in + out) over the tower's nn.Linear layers: a rank-r LoRA on them has r times this
    vision_layers: int = 0
    vision_hidden: int = 0
    vision_intermediate: int = 0
    vision_heads: int = 0
    vision_patch: int = 0
    vision_merge: int = 1
    vision_image_size: int = 0
    vision_cls_token: bool = False
    # a pre-quantized checkpoint LoRA trains on with the base kept quantized (recipes/model/prequantized.py):
    # bytes per weight of the decoder's linear layers as stored (4-bit groups of 128 with bf16 scales: 0.515625);
    # 0: not pre-quantized, the weights in the training dtype
    prequantized_bytes: float = 0.0
    # LoRA on parameters PEFT wraps whole rather than on nn.Linear layers: a MoE's fused 3-D expert weights (and its
    # router) under transformers 5, which peft's "all-linear" maps to ``target_parameters`` (its ParamWrapper, with
    # fused gate/up at twice the rank). param_lora_io: that LoRA's parameters at rank 1 (peft built on the meta
    # device counts them); param_lora_weights: elements of the wrapped weights, of which every forward makes a
    # merged copy (W + BA, torch.nn.utils.parametrize) that autograd keeps for the backward pass
    param_lora_io: int = 0
    param_lora_weights: int = 0

    def vision_patches(self, image_size: int = 0) -> int:
        """Patches the vision tower encodes for one ``image_size`` × ``image_size`` image (pixels): a fixed-size
        tower resizes every image to its own size ((size / patch)² + its CLS position); the Qwen2-VL family rounds
        each side to a multiple of patch × merge (its processor's smart_resize, between min and max pixels) and
        encodes every patch. 0 for a text model."""
        if not self.vision_patch:
            return 0
        if self.vision_image_size:
            return (self.vision_image_size // self.vision_patch) ** 2 + 1
        unit = self.vision_patch * self.vision_merge
        side = max(1, round((image_size or DEFAULT_IMAGE_SIZE) / unit)) * self.vision_merge
        return side * side

    def image_tokens(self, image_size: int = 0) -> int:
        """Tokens one image adds to the language model's sequence: the Qwen2-VL family's patches / merge² (448 ×
        448 pixels: 32² patches → 256 tokens); LLaVA's (size / patch)² (its default feature strategy drops CLS;
        ``full`` keeps it). 0 for a text model."""
        if not self.vision_patch:
            return 0
        if self.vision_image_size:
            return (self.vision_image_size // self.vision_patch) ** 2 + (1 if self.vision_cls_token else 0)
        return self.vision_patches(image_size) // self.vision_merge**2

    def lora_params(self, rank: int, targets: str = "all-linear") -> int:
        """[LoRA] r · Σ (in + out) over the targeted linear layers, plus r · param_lora_io for "all-linear" on a
        model whose expert weights peft wraps as parameters (measured: Qwen3-30B-A3B's adapter at rank 16 is 0.996 B
        parameters, 99 % of them on the experts; bench/results/2026-12-04-speed-families-h200.md)."""
        wrapped = self.param_lora_io if targets == "all-linear" else 0
        return rank * (sum(m.in_sum + m.out_sum for m in self.targeted(targets)) + wrapped)

    def adapted_inputs_per_layer(self, targets: str = "all-linear") -> float:
        """Σ in_features of the targeted layers of one decoder block (elements an adapter sees per token)."""
        return sum(m.in_sum for m in self.targeted(targets)) / self.layers

    def targeted(self, targets: str) -> list[Linear]:
        """The Linear groups LoRA adapts: every group for ``all-linear``, else the named ones.

        Raises:
            ConfigError: a name this model has no linear layer for.
        """
        if targets == "all-linear":
            return list(self.linears.values())
        names = [t.strip() for t in targets.split(",") if t.strip()]
        unknown = [n for n in names if n not in self.linears]
        if unknown:
            raise ConfigError("memory.unknown_targets", targets=list(unknown), known=list(self.linears))
        return [self.linears[n] for n in names]


def _text_config(cfg):
    return cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg


SHAPE_FIELDS = ("hidden_size", "num_hidden_layers", "vocab_size", "num_attention_heads")
# the dimensions read from an untrusted config.json and the largest each may be (far beyond any released model: a
# larger one is a broken file, and building it even on the meta device would take minutes and gigabytes)
DIMENSION_LIMITS = {"hidden_size": 1 << 17, "num_hidden_layers": 1024, "vocab_size": 1 << 22,
                    "num_attention_heads": 4096, "num_key_value_heads": 4096, "intermediate_size": 1 << 20,
                    "head_dim": 4096, "num_local_experts": 4096, "num_experts": 4096, "moe_intermediate_size": 1 << 20,
                    # 0 was accepted and priced a "longest context" of a million tokens (bad input, round four)
                    "max_position_embeddings": 1 << 24}


# MoE families whose expert width is its own field (moe_intermediate_size); Mixtral's experts use intermediate_size
MOE_WIDTH_FAMILIES = ("qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3", "olmoe", "qwen3_next")


def check_dimensions(config: dict) -> None:
    """Each dimension config.json (or its ``text_config``) states is a whole number from 1 to its DIMENSION_LIMITS
    entry, and the KV heads divide the attention heads (grouped-query attention shares each KV head among a whole
    number of query heads).

    Raises:
        ConfigError: ``memory.bad_dimension`` naming the field and its value.
    """
    # fields of the wrong type that transformers would trip on, or read letter by letter (architectures as one
    # string was listed "Q, w, e, n, 2, …" and called encoder-only)
    for key, typ, what in (("model_type", str, "a text"), ("architectures", list, "a list")):
        if key in config and not isinstance(config[key], typ):
            raise ConfigError("memory.bad_config", model_type=str(config.get("model_type"))[:40],
                              error=f"{key} is {json.dumps(config[key])[:40]}, not {what}")
    for part in (config, config.get("text_config")):
        if not isinstance(part, dict):
            continue
        for key, limit in DIMENSION_LIMITS.items():
            if key not in part:
                continue
            v = part[key]
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= limit:
                raise ConfigError("memory.bad_dimension", field=key, value=json.dumps(v)[:40], limit=f"{limit:,}")
        heads, kv = part.get("num_attention_heads"), part.get("num_key_value_heads")
        if isinstance(heads, int) and isinstance(kv, int) and heads % kv:
            raise ConfigError("memory.kv_heads", heads=heads, kv=kv)
        # a MoE routes each token to num_experts_per_tok of its experts, so that many must exist (issue 46 round 3:
        # 8 of 4 and 0 were priced); the expert width is stated where the family has one (transformers would fill
        # its class default in silently: a 30B model's width for a toy one)
        experts = part.get("num_experts", part.get("num_local_experts"))
        if isinstance(experts, int) and not isinstance(experts, bool) and experts > 0:
            per_tok = part.get("num_experts_per_tok")
            if per_tok is not None and (isinstance(per_tok, bool) or not isinstance(per_tok, int)
                                        or not 1 <= per_tok <= experts):
                raise ConfigError("memory.experts_per_token", value=json.dumps(per_tok)[:40], experts=experts)
            if part.get("model_type") in MOE_WIDTH_FAMILIES and "moe_intermediate_size" not in part:
                raise ConfigError("memory.missing_fields", fields="moe_intermediate_size")


def missing_fields(config: dict) -> list[str]:
    """The shape fields (:data:`SHAPE_FIELDS`) a config.json does not state, under their own names or the names its
    config class maps them to (GPT-2's ``n_embd``, …). transformers fills a missing one with its class default
    (LlamaConfig's hidden_size 4096) without a word, so the estimate and the training would be for another model;
    a config written by transformers always states them (they are not among PreTrainedConfig's own fields, which
    its diff leaves out). Not checked: a vision-language model's ``text_config`` (older transformers wrote it as a
    diff against its class defaults — LLaVA 1.5's has no hidden_size), and a ``model_type`` transformers does not
    know (its own code: :func:`shape_from_config` checks what that code builds)."""
    if not isinstance(config, dict) or isinstance(config.get("text_config"), dict):
        return []
    from transformers import CONFIG_MAPPING

    try:
        cls = CONFIG_MAPPING[config.get("model_type")]
    except KeyError:
        return []
    aliases = getattr(cls, "attribute_map", None) or {}
    return [k for k in SHAPE_FIELDS if k not in config and aliases.get(k) not in config]


_EMBEDDINGS = ("embed_tokens.weight", "wte.weight", "word_embeddings.weight", "embed_in.weight")


def weights_disagree(folder: Path, config: dict) -> list[tuple[str, object, int]]:
    """Where a model folder's safetensors weights contradict its config.json as transformers fills it in: the
    language model's input embedding (shape [vocab_size, hidden_size]) and its number of decoder layers (the
    indices under the embedding's prefix, ``layers.N`` / ``h.N`` / ``blocks.N``). transformers refuses the first
    only late ("ignore_mismatched_sizes"), and loads a checkpoint with more layers than the config says without a
    word — another model. This is what tells a VLM ``text_config`` that leaves a field out because it equals the
    class default (LLaVA 1.5) from one that lacks it.

    Returns (field, what the config gives, what the weights have) per disagreement; [] when they agree, or when
    there is nothing to compare (no safetensors, a header safetensors cannot read, no embedding found, an
    architecture transformers does not know). Reads the headers only (safetensors ``safe_open``), never the
    tensors; vision-tower tensors (names with ``vision``/``visual``) are left out."""
    import json
    import re

    from safetensors import SafetensorError, safe_open
    from transformers import AutoConfig

    folder = Path(folder)
    try:
        index = json.loads((folder / "model.safetensors.index.json").read_text())["weight_map"]
        where = {str(k): folder / str(v) for k, v in index.items()} if isinstance(index, dict) else {}
    except (OSError, ValueError, KeyError, TypeError):
        where = {}
    if not where:
        where = {}
        for f in sorted(folder.glob("*.safetensors")):
            try:
                with safe_open(str(f), framework="numpy") as st:
                    where.update({k: f for k in st.keys()})
            except (OSError, SafetensorError):
                return []
    text_names = [k for k in where if not re.search(r"vision|visual", k)]
    embed = next((k for k in text_names if k.endswith(_EMBEDDINGS)), None)
    if embed is None or not isinstance(config, dict) or "model_type" not in config:
        return []
    try:
        with safe_open(str(where[embed]), framework="numpy") as st:
            shape = st.get_slice(embed).get_shape()
        cfg = AutoConfig.for_model(config["model_type"], **{k: v for k, v in config.items() if k != "model_type"})
    except Exception:  # noqa: BLE001 — a config transformers rejects (its validators raise their own types) is
        return []      # refused elsewhere with its own line (shape_from_config); nothing to compare here
    text = _text_config(cfg)
    head, dot, _ = embed[: -len(".weight")].rpartition(".")
    prefix = head + dot  # "model." of "model.embed_tokens.weight", "" of "wte.weight"
    layers = {m.group(1) for k in text_names if (m := re.match(re.escape(prefix) + r"(?:layers|h|blocks)\.(\d+)\.", k))}
    found = [("vocab_size", shape[0]), ("hidden_size", shape[1] if len(shape) == 2 else None),
             ("num_hidden_layers", len(layers) or None)]
    return [(name, getattr(text, name, None), n) for name, n in found
            if n is not None and getattr(text, name, None) != n]


def disagreement(folder: Path, model: str) -> Msg | None:
    """:func:`weights_disagree` on a model folder's own config.json, as the one line that refuses it
    (``memory.weights_disagree``; ``memory.weights_unreadable`` first, for a weights file whose header safetensors
    refuses), or None when they agree or there is nothing to compare."""
    import json

    from safetensors import SafetensorError, safe_open

    # a weights file whose header does not parse (0 bytes, cut short, shapes that lie about the bytes) reached
    # training before (issue 46 item 21): safetensors' own check of each header, the tensors not read
    for f in sorted(Path(folder).glob("*.safetensors")):
        try:
            with safe_open(str(f), framework="numpy"):
                pass
        except (OSError, SafetensorError) as e:
            return Msg("memory.weights_unreadable", {"model": model, "file": f.name,
                                                     "error": " ".join(str(e).split())[:120]})
    try:
        config = json.loads((Path(folder) / "config.json").read_text())
    except (OSError, ValueError):
        return None  # the folder's config is checked (and refused) where it is read
    wrong = weights_disagree(folder, config)
    return Msg("memory.weights_disagree", {"model": model, "pairs": "; ".join(
        f"{name} {stated} ≠ {found}" for name, stated, found in wrong)}) if wrong else None


def shape_from_config(config: dict, code_dir: str | None = None) -> Shape:
    """Exact counts by instantiating the model on the meta device (no memory, no download).

    ``code_dir``: a folder with the model's own code (config.json + ``*.py``), given only when the user trusts it;
    the architecture is then built from that code (trust_remote_code).

    Raises:
        ConfigError: fields missing, or an architecture transformers cannot build as a causal LM (encoder-only,
            vision towers without a language model head, unknown model_type).
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    from recipes.model.vision import is_vision_module, vision_part

    if not isinstance(config, dict) or "model_type" not in config:
        raise ConfigError("memory.no_model_type")
    check_dimensions(config)
    try:
        cfg = AutoConfig.from_pretrained(code_dir, trust_remote_code=True) if code_dir else \
            AutoConfig.for_model(config["model_type"], **{k: v for k, v in config.items() if k != "model_type"})
    except Exception as e:  # noqa: BLE001 - transformers' validators raise their own types on an untrusted file
        # a field transformers' own validators refuse (rope_scaling "garbage"): a broken file, not an architecture
        # yichui does not support (it was called "encoder-only")
        said = " ".join(x.strip() for x in str(e).splitlines() if x.strip())
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

        if config.get("model_type") in CONFIG_MAPPING_NAMES:  # transformers knows the type: the file is what fails
            raise ConfigError("memory.bad_config", model_type=config.get("model_type"), error=said[:200]) from None
        raise ConfigError("memory.unknown_architecture", model_type=config.get("model_type"),
                          error=said[:120]) from None
    archs = config.get("architectures") or []
    generative = ("CausalLM", "LMHeadModel", "ConditionalGeneration")
    if (archs and not any(g in a for a in archs for g in generative)) or getattr(cfg, "is_encoder_decoder", False) \
            or (not archs and config.get("model_type") in ENCODER_ONLY):
        raise ConfigError("memory.unknown_architecture", model_type=config.get("model_type"),
                          error=", ".join(archs) or "encoder")
    text = _text_config(cfg)
    missing = ([] if code_dir else missing_fields(config)) or [k for k in SHAPE_FIELDS if getattr(text, k, None) is None]
    if missing:
        raise ConfigError("memory.missing_fields", fields=list(missing))
    # a vision-language model transformers builds no causal LM of (Qwen2-VL, Qwen2.5-VL, LLaVA): image-text-to-text,
    # as the trainer loads it (recipes/training/worker.py; recipes/model/vision.py has_causal_lm)
    vlm = isinstance(config.get("vision_config"), dict) and config["model_type"] not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    auto = AutoModelForImageTextToText if vlm else AutoModelForCausalLM
    if "quantization_config" in config and not isinstance(config["quantization_config"], dict):
        # transformers fails on it deep inside (AttributeError: 'str' object has no attribute 'to_dict')
        raise ConfigError("memory.bad_config", model_type=config.get("model_type"),
                          error=f"quantization_config is {str(config['quantization_config'])[:40]!r}, not an object")
    try:
        with torch.device("meta"):
            model = auto.from_config(cfg, trust_remote_code=bool(code_dir))
    except (ValueError, KeyError, TypeError, AttributeError) as e:  # a field of the wrong type transformers trips on
        # no causal LM class for this configuration: an architecture yichui cannot train; anything else is a field
        # of the file ("hidden_act": "zorblax" → KeyError, was called "encoder-only": issue 48 trial P)
        unknown = isinstance(e, ValueError) and "Unrecognized configuration class" in str(e)
        raise ConfigError("memory.unknown_architecture" if unknown else "memory.bad_config",
                          model_type=config.get("model_type"),
                          error=f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:120]) from None
    params = list(model.parameters())
    n_params = sum(p.numel() for p in params)
    linears: dict[str, list[int]] = {}
    n_linear = 0
    for name, mod in model.named_modules():
        # the language model's decoder blocks only: a vision encoder's blocks (CLIP's ``encoder.layers``) are not
        # what LoRA adapts or QLoRA quantizes
        if isinstance(mod, torch.nn.Linear) and "lm_head" not in name and ".layers." in f".{name}" \
                and not is_vision_module(name):
            n_linear += mod.weight.numel()
            acc = linears.setdefault(name.rsplit(".", 1)[-1], [0, 0, 0])
            acc[0] += 1
            acc[1] += mod.in_features
            acc[2] += mod.out_features
    h, layers = text.hidden_size, text.num_hidden_layers
    heads = text.num_attention_heads
    kv = getattr(text, "num_key_value_heads", None) or heads
    head_dim = getattr(text, "head_dim", None) or h // heads
    vision = _vision_geometry(cfg, config) if vlm else {}
    if vlm:
        vision["vision_params"] = sum(p.numel() for n, p in model.named_parameters() if is_vision_module(n))
        vision["vision_projector_params"] = sum(p.numel() for n, p in model.named_parameters()
                                                if vision_part(n) == "projector")
        vision["vision_lora_io"] = sum(m.in_features + m.out_features for n, m in model.named_modules()
                                       if isinstance(m, torch.nn.Linear) and vision_part(n) == "tower")
    # a vision-language model's vision side is calibrated for Qwen2.5-VL built image-text-to-text
    # (bench/results/2026-12-02-memory-vlm-h200.md); other towers (Qwen2-VL's, CLIP in LLaVA, …) and models with a
    # vision part built as a causal LM (Gemma-3's text data path) stay approximate
    approx = ["vision"] if any("ConditionalGeneration" in a for a in archs) and not (
        vlm and config["model_type"] in CALIBRATED_VLMS) else []
    pq = prequantized.read(config)
    if pq is not None:  # pre-quantized weights: not yet measured on a GPU (GPTQ/AWQ formats: counted as 16-bit)
        approx.append(f"quantized:{pq.method}")
    experts = int(getattr(text, "num_local_experts", 0) or getattr(text, "num_experts", 0) or 0)
    if experts:
        per_tok = int(getattr(text, "num_experts_per_tok", 1) or 1)
        inter = per_tok * int(getattr(text, "moe_intermediate_size", 0) or text.intermediate_size)
        inter += int(getattr(text, "shared_expert_intermediate_size", 0) or 0)
        approx.append("moe")
    else:
        inter = int(getattr(text, "intermediate_size", 0) or 4 * h)
    tied = bool(getattr(cfg, "tie_word_embeddings", False) or getattr(text, "tie_word_embeddings", False))
    window = getattr(text, "sliding_window", None) if getattr(text, "use_sliding_window", True) else None
    param_io, param_weights = _parameter_lora(model) if experts and not vlm else (0, 0)
    return Shape(n_params=n_params, n_linear=n_linear, hidden=h, intermediate=inter, layers=layers, heads=heads,
                 kv_heads=kv, head_dim=head_dim, vocab=text.vocab_size, tied=tied,
                 largest=max(p.numel() for p in params),
                 linears={k: Linear(*v) for k, v in linears.items()}, model_type=config.get("model_type", ""),
                 experts=experts, max_position=int(getattr(text, "max_position_embeddings", 0) or 0),
                 sliding_window=int(window or 0), approximate=tuple(approx),
                 prequantized_bytes=pq.weight_bytes_per_param() if pq is not None and pq.trainable else 0.0,
                 param_lora_io=param_io, param_lora_weights=param_weights, **vision)


def _parameter_lora(model) -> tuple[int, int]:
    """(param_lora_io, param_lora_weights) of Shape for a model on the meta device: peft's own "all-linear" at rank 1
    applied to it (what the trainer's LoraConfig does), counting the LoRA parameters of the wrapped parameters and
    the wrapped weights' elements. (0, 0) when peft wraps no parameter (every dense model) or cannot be applied."""
    import logging
    import warnings

    import torch

    # peft imports bitsandbytes, whose CPU backend warns on stderr that an optional kernel package is missing: noise
    # in an estimate's one-line output (the trainer's QLoRA runs do not depend on it)
    logging.getLogger("bitsandbytes").setLevel(logging.ERROR)
    from peft import LoraConfig, get_peft_model
    from peft.tuners.lora import ParamWrapper

    try:
        with torch.device("meta"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            peft_model = get_peft_model(model, LoraConfig(r=1, lora_alpha=1, lora_dropout=0.0,
                                                          target_modules="all-linear", task_type="CAUSAL_LM"))
    except Exception:  # noqa: BLE001 - an architecture peft cannot adapt: no parameter LoRA counted
        return 0, 0
    wrappers = [m for m in peft_model.modules() if isinstance(m, ParamWrapper)]
    io = sum(p.numel() for w in wrappers for n, p in w.named_parameters()
             if "lora_" in n and "base_layer" not in n)
    weights = sum(getattr(w.get_base_layer(), w.parameter_name).numel() for w in wrappers)
    return io, weights


def _vision_geometry(cfg, config: dict) -> dict:
    """The vision tower's geometry from its config (Shape's ``vision_*`` fields): Qwen2-VL names it ``depth``,
    ``embed_dim``, ``mlp_ratio`` (its ``hidden_size`` is the merger's output); Qwen2.5-VL ``depth``, ``hidden_size``,
    ``intermediate_size``; CLIP/SigLIP towers ``num_hidden_layers``, ``hidden_size``, ``intermediate_size``,
    ``image_size``."""
    v = getattr(cfg, "vision_config", None)
    if v is None:
        return {}
    hidden = int(getattr(v, "embed_dim", 0) or getattr(v, "hidden_size", 0) or 0)
    inter = int(getattr(v, "intermediate_size", 0) or hidden * float(getattr(v, "mlp_ratio", 4) or 4))
    merge = int(getattr(v, "spatial_merge_size", 0) or 0)
    fixed = 0 if merge else int(getattr(v, "image_size", 0) or 0)
    return {"vision_layers": int(getattr(v, "depth", 0) or getattr(v, "num_hidden_layers", 0) or 0),
            "vision_hidden": hidden, "vision_intermediate": inter,
            "vision_heads": int(getattr(v, "num_heads", 0) or getattr(v, "num_attention_heads", 0) or 0),
            "vision_patch": int(getattr(v, "patch_size", 0) or 14), "vision_merge": merge or 1,
            "vision_image_size": fixed,
            "vision_cls_token": bool(fixed) and config.get("vision_feature_select_strategy") == "full"}


def model_states(shape: Shape, t: TrainingSpec) -> dict:
    """Bytes of weights, adapter, gradients and optimizer states of one process before any sharding, and the
    optimizer step's extra.

    Returns ``{"weights", "adapter", "gradients", "optimizer", "step_extra", "trainable"}``.
    [ZeRO] §3: mixed-precision Adam needs 2Ψ (weights) + 2Ψ (grads) + KΨ (states). yichui trains bf16 weights with
    AdamW states in the parameter dtype [torch], so K = 4 for a full fine-tune; LoRA adapters are fp32 (peft's
    autocast_adapter_dtype), QLoRA adapters bf16 (trl casts them). Plain DDP adds its gradient buckets (a second
    gradient copy; calibrated on two H200s: bench/results/2026-11-29-distributed-h200.md). What ZeRO and FSDP2 hold
    instead is recipes/memory/sharding.py's.
    """
    P, wb = shape.n_params, t.weights_bytes
    weights: float
    adapter: float
    grads: float
    opt: float
    stage = 3 if t.fsdp else t.zero
    if masters_fp32(t):
        wb = 4  # fp32 weights, gradients and AdamW states; autocast's bf16 copies are activations
    if t.method in FULL_WEIGHTS:
        # a vision-language model's full fine-tune freezes the vision tower and projector
        # (recipes/model/vision.py freeze_vision): no gradients or optimizer states for them
        weights, trainable = wb * P, P - frozen_vision_params(shape, t)
        grads = wb * trainable
        adapter = 0
        opt = {"adamw": 2 * wb, "adamw8bit": 2, "paged": 2}[t.optim] * trainable
        if t.method == "galore":
            # [GaLore] (Zhao et al. 2024, §4, galore_torch GaLoreProjector "std"): each targeted (out × in) weight
            # keeps Adam's two states of its r × max(out, in) projected gradient and the min(out, in) × r
            # projection; the other parameters keep plain Adam states
            mats = galore_targets(shape)
            low = sum(c * (2 * t.rank * max(i, o) + t.rank * min(i, o)) for c, i, o in mats)
            opt = 2 * wb * (trainable - sum(c * i * o for c, i, o in mats)) + wb * low
    else:
        trainable = shape.lora_params(t.rank, t.lora_targets)
        if t.method == "dora":  # magnitude vector: one value per output feature of each adapted layer
            trainable += sum(m.out_sum for m in shape.targeted(t.lora_targets))
        if shape.vision_params and not t.freeze_vision_tower:  # LoRA on the tower's linear layers too
            trainable += t.rank * shape.vision_lora_io
        if t.method == "qlora":
            weights = shape.n_linear * NF4_BYTES + (P - shape.n_linear) * wb
            ab = 2
        elif shape.prequantized_bytes:  # LoRA on a pre-quantized base kept packed (recipes/training/packed.py)
            weights, ab = shape.n_linear * shape.prequantized_bytes + (P - shape.n_linear) * wb, 4
        else:
            weights, ab = wb * P, 4
        adapter, grads = ab * trainable, ab * trainable
        opt = {"adamw": 2 * ab, "adamw8bit": 2, "paged": 2}[t.optim] * trainable
        if shape.vision_params and not t.freeze_projector:
            # the projector trained whole (peft modules_to_save): a trainable copy in the weights' dtype, its
            # gradients and AdamW states
            proj = shape.vision_projector_params
            trainable += proj
            adapter += wb * proj
            grads += wb * proj
            opt += {"adamw": 2 * wb, "adamw8bit": 2, "paged": 2}[t.optim] * proj
    # the step's temporaries: 8-bit optimizers dequantize one tensor's states to fp32 at a time; with tied embeddings
    # a full fine-tune also holds the shared matrix's second gradient (embedding + LM head) in fp32
    step_extra: float = 8 * min(shape.largest, trainable) if t.optim != "adamw" else 0
    if t.method in FULL_WEIGHTS and shape.tied:
        step_extra += 4 * shape.vocab * shape.hidden
    if t.method == "galore":  # a projection update (step 1, then every 200) decomposes one weight at a time
        step_extra += GALORE_SVD_BYTES * max(i * o for _, i, o in galore_targets(shape))
    if t.gpus > 1 and not stage:
        grads *= 2  # DDP reduces through gradient buckets: a second copy of the gradients [torch DDP]
    return {"weights": weights, "adapter": adapter, "gradients": grads, "optimizer": opt, "step_extra": step_extra,
            "trainable": trainable}


def nvme_bytes(shape: Shape, t: TrainingSpec) -> int:
    """Bytes DeepSpeed ZeRO-3 swaps to NVMe for ``t`` (``offload_device`` "nvme"), over all GPUs: the optimizer's
    fp32 master weights and two Adam moments of the trainable parameters (12 bytes each, [ZeRO] §3), and with
    ``offload`` "all" the 16-bit weights (2 bytes per parameter) [ZeRO-Infinity] (Rajbhandari et al. 2021, §5).
    0 when nothing goes to NVMe."""
    if not t.nvme_offloaded:
        return 0
    ms = model_states(shape, replace(t, offload="none"))
    out = 12 * int(ms["trainable"])
    if t.offload == "all":
        out += 2 * shape.n_params
    return out


HOST_OFFLOAD_BYTES = 22  # host bytes per trainable parameter offloaded to CPU memory: ZeRO-Offload's 16 (fp32 master
# weights, two Adam moments, fp32 gradients; Ren et al. 2021 §4.1) + 6 measured beyond them — the H200 run of
# bench/results/2026-12-04-host-ram-offload-h200.md: 24.0 bytes per parameter in all for a full fine-tune with ZeRO-3
# offloading everything (with the 2 bytes of its bf16 weights); one run cannot tell which side the 6 belong to
NVME_OPTIMIZER_BUFFERS = 4  # DeepSpeed's offload_optimizer buffer_count default (runtime/zero/offload_config.py)


def host_ram_what(t: TrainingSpec) -> str:
    """The catalogue key naming what :func:`host_bytes` counts for ``t``'s offload."""
    if t.nvme_offloaded:
        return "memory.host_ram.nvme"
    return "memory.host_ram.cpu_all" if t.offload == "all" and (t.zero >= 3 or t.fsdp) \
        else "memory.host_ram.cpu"


def tensor_parallel(shape: Shape, gpus: int) -> int:
    """The most GPUs (≤ ``gpus``) tensor parallelism can split ``shape`` over: the attention heads and the MLP's
    intermediate size divide evenly, and the KV heads divide it or it divides them (replicated then) — vLLM
    refuses other sizes (vllm/config/model.py verify_with_parallel_config)."""
    def ok(d: int) -> bool:
        kv = shape.kv_heads or shape.heads
        return (not shape.heads or shape.heads % d == 0) and (not shape.intermediate or shape.intermediate % d == 0) \
            and (not kv or kv % d == 0 or d % kv == 0)
    return max(d for d in range(1, max(gpus, 1) + 1) if ok(d))


def host_bytes(shape: Shape, t: TrainingSpec) -> dict:
    """Host RAM (CPU memory) one node needs for what ``t`` offloads, beyond each process's own interpreter, CUDA
    context and data: ``{"states", "buffers", "total"}`` in bytes; all 0 when nothing is offloaded.

    - offload to CPU memory: the optimizer's fp32 master weights, two Adam moments and the fp32 gradient partition
      kept (pinned) on the CPU by ZeRO-Offload (Ren et al. 2021, "ZeRO-Offload", §4.1: 16 bytes per trainable
      parameter), :data:`HOST_OFFLOAD_BYTES` as measured; with ``offload`` "all" at ZeRO-3 also the 16-bit weights
      (2 bytes per parameter). Partitioned over all GPUs, so one node holds 1 / ``nodes`` of it.
    - offload to NVMe: the states live in files (:func:`nvme_bytes`); what stays in RAM is each process's pinned
      swap buffers: for the weights, yichui's ``offload_param`` buffers (recipes/training/nvme.py SwapShape:
      2 × a layer's swapped parameters + 4 buffers of the largest parameter, at least 1e8 elements, bf16), for the
      optimizer DeepSpeed's default 4 buffers of the largest trainable parameter in fp32.

    Calibrated on one run (CPU offload of everything, ZeRO-3, full fine-tune of the 1.5B shape: −0.2 %); LoRA,
    optimizer-only offload and the NVMe buffers are not measured."""
    if not t.offloaded:
        return {"states": 0, "buffers": 0, "total": 0}
    trainable = int(model_states(shape, replace(t, offload="none"))["trainable"])
    per_layer = [(m.in_sum // m.count) * (m.out_sum // m.count) for m in shape.linears.values() if m.count]
    largest = max([shape.vocab * shape.hidden, *per_layer])
    if not t.nvme_offloaded:
        states = HOST_OFFLOAD_BYTES * trainable + (2 * shape.n_params if t.offload == "all" and (t.zero >= 3 or t.fsdp) else 0)
        return {"states": states // t.nodes, "buffers": 0, "total": states // t.nodes}
    from recipes.training import nvme

    # the buffers the DeepSpeed config yichui writes (nvme.SwapShape), from the shape instead of the parameters
    swap = nvme.SwapShape(largest=largest, layer_params=sum(n >= nvme.PERSISTENCE_THRESHOLD for n in per_layer),
                          layer_numel=0).offload_param()
    params = swap["buffer_count"] * swap["buffer_size"] * 2 if t.offload == "all" else 0
    big = largest if t.method in FULL_WEIGHTS else t.lora_rank * max(max(shape.hidden, shape.intermediate), 1)
    buffers = t.processes * (params + NVME_OPTIMIZER_BUFFERS * big * 4)
    return {"states": 0, "buffers": buffers, "total": buffers}


def frozen_vision_params(shape: Shape, t: TrainingSpec) -> int:
    """Parameters a full fine-tune leaves frozen: a vision-language model's tower and projector, as ``t`` asks
    (recipes/model/vision.py freeze_vision; both by default)."""
    tower = shape.vision_params - shape.vision_projector_params
    return (tower if t.freeze_vision_tower else 0) + (shape.vision_projector_params if t.freeze_projector else 0)


def galore_targets(shape: Shape) -> list[tuple[int, int, int]]:
    """(count, in, out) of the weights GaLore projects: transformers' ``optim_target_modules="all-linear"`` takes
    every nn.Linear by module name, the LM head included — unless it is tied, when its one parameter is named after the
    embedding and stays with the plain Adam states (transformers trainer_optimizer, low-rank optimizer setup)."""
    mats = [(m.count, m.in_sum // m.count, m.out_sum // m.count) for m in shape.linears.values()]
    return mats if shape.tied else mats + [(1, shape.hidden, shape.vocab)]


def masters_fp32(t: TrainingSpec) -> bool:
    """Whether the model itself is held in fp32 (a full fine-tune with fp32 masters and neither ZeRO nor FSDP, which
    keep their own fp32 masters beside a bf16 module)."""
    return t.method in FULL_WEIGHTS and t.fp32_masters_asked and not t.zero and not t.fsdp and t.weights_bytes == 2


def engine_of(t: TrainingSpec) -> str:
    """Who holds the model states: "one" process, "ddp" (several, replicated), "deepspeed" (ZeRO-1/2/3) or "fsdp2"."""
    if t.fsdp:
        return "fsdp2"
    if t.zero:
        return "deepspeed"
    return "ddp" if t.gpus > 1 else "one"


def outside_allocator_gib(t: TrainingSpec) -> float:
    """Memory outside the caching allocator beyond the CUDA context (CONTEXT_GIB), per process: NCCL's
    communicators and their buffers (DeepSpeed clones the world group: a second communicator). Measured with two
    processes on two H200s (bench/results/2026-11-29-distributed-h200*.jsonl: DDP 1.577 GiB, FSDP2 1.573,
    ZeRO-2/3 2.052 in all) and with one process of a sharded plan on one H200 (ONE_PROCESS_COMM_GIB)."""
    engine = engine_of(t)
    if engine == "one":
        return 0.0
    if t.gpus == 1:
        return ONE_PROCESS_COMM_GIB["fsdp2" if t.fsdp else "zero3" if t.zero == 3 else "zero12"]
    return COMM_GIB[engine]


def activations(shape: Shape, t: TrainingSpec) -> dict:
    """Bytes of activations at the backward pass's peak, by part: ``layers``, ``attention_scores``, ``logits``.

    Per token and decoder layer [MegAct]: ACT_H·h + ACT_I·I (+ ACT_FULL_H·h for a full fine-tune), plus per adapted
    input element LORA_CAST + DROPOUT_MASK for LoRA with dropout (without dropout LORA_NO_DROPOUT, or
    LORA_NO_DROPOUT_CKPT in the layer being recomputed: yichui skips peft's input cast, unless
    ``adapter_input_cast``; DoRA keeps it: LORA_CAST), QLORA_CAST or QLORA_DROPOUT for QLoRA; DoRA adds
    DORA_OUT per adapted output feature and its dense temporaries once (see DORA_OUT). Eager attention adds
    EAGER_SCORES bytes per score (b·heads·s²) and layer, and EAGER_BACKWARD once for the layer in backward;
    sdpa/flash store none. With activation checkpointing only each layer's input stays (CKPT_H·h
    per token and layer), and one layer is recomputed at a time, beside CKPT_FLOW_H·h bytes per token (the gradient
    flowing back) and, per adapted input element, the cast's fp32 gradient where peft casts (LORA_CAST_GRAD) or
    QLORA_CKPT_GRAD under QLoRA: its activations or the LM head's working set, whichever is larger.
    The LM head [trl]: a 4096×32768 bf16 tile plus HEAD_H bytes per token and hidden unit. A full fine-tune also
    holds the head's fp32 weight gradient and its bf16 copy (6·V·h).
    ``loss == "full"`` is the plain transformers + PEFT loop instead: the (b, s, V) logits at FULL_LOGITS bytes
    each, PLAIN_LORA_INPUT (+ DROPOUT_MASK) per adapted input element, and with bf16 weights the head's bf16
    weight gradient (2·V·h).
    """
    if t.sequence_parallel > 1:
        # Ulysses [SP]: every per-token activation is the local shard's (seq / sp tokens); attention holds the whole
        # length for heads / sp heads, the same elements; each layer's all-to-all makes a contiguous copy of q, k, v
        # and the output and receives as much (KV heads replicated up to the degree), one layer at a time
        sp = t.sequence_parallel
        local = replace(t, seq_len=-(-t.seq_len // sp), sequence_parallel=1)
        out = activations(shape, local)
        kv = max(shape.kv_heads or shape.heads, sp)
        out["sp_buffers"] = 2.0 * (2 * shape.heads + 2 * kv) * shape.head_dim * 2 * local.micro_batch * local.seq_len
        return out
    T = t.micro_batch * t.seq_len
    h, L = shape.hidden, shape.layers
    lora = t.method not in FULL_WEIGHTS
    adapted = shape.adapted_inputs_per_layer(t.lora_targets) if lora else 0.0
    per_layer = ACT_H * h + ACT_I * shape.intermediate + (ACT_FULL_H * h if not lora else 0.0)
    if t.liger:
        per_layer -= LIGER_H * h + LIGER_I * shape.intermediate + (LIGER_FULL_H * h if not lora else 0.0)
    fp32 = masters_fp32(t)
    if t.packing and not t.activation_checkpointing:
        per_layer += PACKED_H * h
    if t.method in ("lora", "dora"):
        dropout = t.lora_dropout > 0
        # the copy lora_A saves: fp32 in the plain loop (no autocast), bf16 from peft's cast or dropout's output,
        # without the cast and dropout: LORA_NO_DROPOUT (LORA_NO_DROPOUT_CKPT in a recomputed layer), none compiled
        saved = (PLAIN_LORA_INPUT if t.loss == "full" else
                 LORA_CAST if t.method == "dora" or t.adapter_input_cast or dropout else
                 LORA_NO_DROPOUT_CKPT if t.activation_checkpointing else
                 0.0 if t.compile_layers else LORA_NO_DROPOUT)
        per_layer += (saved + (DROPOUT_MASK if dropout else 0.0)) * adapted
    elif t.method == "qlora":
        per_layer += (QLORA_DROPOUT if t.lora_dropout > 0 else QLORA_CAST) * adapted
    dora_dense = 0.0
    if t.method == "dora":
        groups = shape.targeted(t.lora_targets)
        per_layer += DORA_OUT * sum(m.out_sum for m in groups) / L
        dora_dense = 4.0 * max((m.in_sum // m.count) ** 2 + 3 * (m.in_sum // m.count) * (m.out_sum // m.count)
                               for m in groups)
    # padded micro-batches of image records under sdpa (see PAD_H): bytes per decoder layer
    padded = PAD_H * T * h + PAD_SCORES * t.micro_batch * t.seq_len**2 \
        if t.images_per_sample and t.micro_batch > 1 and t.attn_implementation == "sdpa" else 0.0
    n_scores = t.micro_batch * shape.heads * t.seq_len**2 if t.attn_implementation == "eager" else 0
    if t.loss == "full":
        head = FULL_LOGITS * T * shape.vocab + HEAD_H * T * h
    else:
        head = HEAD_TILE * min(T, 4096) / 4096 + HEAD_H * T * h
    if not lora:  # the head's weight gradient: fp32 + its bf16 copy (trl's fused head, fp32 masters); autograd's
        # bf16 gradient in the plain loop with bf16 weights and under DeepSpeed (its bf16 module; reduced into the
        # bucket from there); FSDP2's is in its unsharded tail (recipes/memory/sharding.py)
        head += (0 if t.fsdp else 2 if t.zero or (t.loss == "full" and not fp32) else 6) * shape.vocab * h
    # fp32 masters without checkpointing: autograd keeps autocast's bf16 copy of every weight until its backward
    casts = 2.0 * shape.n_params if fp32 and not t.activation_checkpointing else 0.0
    if t.activation_checkpointing:
        # the layer inputs are the residual stream: fp32 under fp32 masters
        kept = T * L * h * (2 * CKPT_H + FP32_CKPT_H if fp32 else CKPT_H)
        scores = (EAGER_SCORES + EAGER_BACKWARD) * n_scores
        layer = T * per_layer + BWD_I * T * shape.intermediate + CKPT_FLOW_H * T * h + dora_dense + padded
        if t.method in ("lora", "dora") and t.loss != "full" and (t.method == "dora" or t.adapter_input_cast):
            layer += LORA_CAST_GRAD * T * adapted
        elif t.method == "qlora":
            layer += QLORA_CKPT_GRAD * T * adapted
        if layer + scores >= head:
            return {"layers": kept + layer, "attention_scores": scores, "logits": 0.0}
        return {"layers": kept, "attention_scores": 0.0, "logits": head}
    scores = EAGER_SCORES * n_scores * L + EAGER_BACKWARD * n_scores
    if t.compile_layers:
        per_layer *= COMPILED_ACT
    return {"layers": T * L * per_layer + L * padded + BWD_I * T * shape.intermediate + casts + dora_dense,
            "attention_scores": scores, "logits": head}


# the reference model's no-grad forward (DPO, KTO): per token and MLP intermediate unit, what one decoder layer holds
# at once without autograd — act(gate(x)), up(x) and their product, bf16 (transformers' LlamaMLP/Qwen2MLP forward:
# gate(x) is freed once act() returns); the attention half of the layer holds less
REF_I = 6.0


def reference_phase(shape: Shape, t: TrainingSpec, act: dict) -> dict:
    """What the reference model's forward adds while the policy's graph waits for backward (trl 1.16: DPOTrainer
    ``_compute_loss`` and KTOTrainer run it under ``torch.no_grad`` with checkpointing off, after the policy's
    forward): the policy's kept activations (with checkpointing each layer's input, CKPT_H; without, every layer's
    saved tensors, ``act`` less the layer in backward) and one layer's no-grad working set, REF_I bytes per token and
    intermediate unit. ``t`` is the preference batch (:func:`preference_batch`), ``act`` its :func:`activations`.
    Bytes by part: ``layers``, ``reference_forward``."""
    T = t.micro_batch * t.seq_len
    if t.activation_checkpointing:
        kept = T * shape.layers * shape.hidden * (2 * CKPT_H + FP32_CKPT_H if masters_fp32(t) else CKPT_H)
    else:
        kept = act["layers"] - BWD_I * T * shape.intermediate
    return {"layers": float(kept), "reference_forward": REF_I * T * shape.intermediate}


def dpo_batch(t: TrainingSpec) -> TrainingSpec:
    """What trl's DPOTrainer runs for ``t`` as a supervised batch: chosen and rejected of each pair concatenated
    (2 × micro-batch sequences of at most seq_len tokens), without dropout (DPOConfig.disable_dropout, trl 1.16's
    default; the trainer never turns it off)."""
    return replace(t, micro_batch=2 * t.micro_batch, lora_dropout=0.0, objective="sft")


def preference_batch(t: TrainingSpec) -> TrainingSpec:
    """The supervised batch whose activations a preference objective keeps for backward: DPO's :func:`dpo_batch`;
    GRPO's micro-batch of prompt + reply sequences without dropout (the worker sets GRPOConfig.disable_dropout), its
    log-probabilities through trl's fused LM head as SFT's (trl 1.16 grpo_trainer.py _get_per_token_logps_and_entropies:
    ``fused_lm_head=True``) and with peft's input cast kept (the replies are generated outside autocast);
    KTO's micro-batch itself, without dropout (KTOConfig.disable_dropout) — its KL term's mismatched completions and
    the reference's log-probabilities come from no-grad forwards (trl 1.16 kto_trainer.py), transient, not kept.
    KTO: derived from trl's code before it was measured; on the H200 (bench/results/2026-12-05-kto-h200.md, two
    shapes, LoRA and a full fine-tune, 7 rows, no constant fitted) −4.2…+4.3 % of the device peak."""
    if t.objective == "dpo":
        return dpo_batch(t)
    if t.objective == "grpo":  # peft's input cast kept: the replies are generated outside autocast
        return replace(t, lora_dropout=0.0, objective="sft", adapter_input_cast=True)
    return replace(t, lora_dropout=0.0, objective="sft") if t.objective == "kto" else t


def grpo_measured(t: TrainingSpec) -> bool:
    """Whether a GRPO plan lies where the GPU rows were measured, one process each: LoRA or a full fine-tune with
    checkpointing and β 0 (bench/results/2026-12-05-grpo-gpu.md: four rows on an H100, three shapes, −2.6…+2.2 %,
    none fitted); LoRA without checkpointing, β > 0 (the reference) under LoRA and a full fine-tune, QLoRA with
    checkpointing, and vLLM's replies under LoRA and a full fine-tune (bench/results/2026-12-06-grpo-vllm-h200.md:
    H200, −0.6…+2.9 % predicted before they ran; vLLM +2.2…+3.4 %). Elsewhere (DoRA, QLoRA without checkpointing or
    with vLLM, a full fine-tune without checkpointing, several GPUs) the estimate is marked approximate, with
    EXTRA_MARGIN["grpo"]."""
    if t.gpus != 1 or t.distribution != "ddp" or t.method not in ("lora", "full", "qlora"):
        return False
    if t.method == "qlora":
        return t.activation_checkpointing and t.generation == "transformers"
    return t.activation_checkpointing or t.method == "lora"


def generation_phase(shape: Shape, t: TrainingSpec, backward: dict) -> dict:
    """What GRPO holds while it generates (trl 1.16 with transformers' generate, no vLLM): the states of the
    forward/backward moment (weights, adapter, optimizer states, gradients as they stand) without its activations,
    plus the KV cache of the whole generation batch — micro-batch × gradient accumulation replies (trl's
    generation_batch_size per process) of up to seq_len tokens each (:func:`kv_bytes_per_token`, bf16) — and the
    sampled position's fp32 logits and probabilities per reply. Derived from the libraries' code; on the GPU rows
    the peak fell in the training pass or the optimizer step, never here (bench/results/2026-12-05-grpo-gpu.md)."""
    replies = t.micro_batch * t.grad_accum
    kept = {k: v for k, v in backward.items() if k not in ("layers", "attention_scores", "logits")}
    return kept | {"kv_cache": float(replies * t.seq_len * kv_bytes_per_token(shape)),
                   "generation_logits": float(GENERATE_LOGIT_BYTES * replies * shape.vocab)}


VLLM_GENERATION_TOKENS = 4096  # trl 1.16's colocated LLM: max_num_batched_tokens (trl/generation/vllm_generation.py)
VLLM_BLOCK = 16  # vLLM's KV-cache block in tokens: each sequence holds whole blocks


def vllm_generation(shape: Shape, t: TrainingSpec, gpu_gib: float) -> dict:
    """vLLM colocated with the trainer for GRPO's replies (``t.generation == "vllm"``; trl 1.16's vllm_mode
    "colocate"): vLLM takes ``utilization`` × the memory CUDA reports at its start and keeps it for the whole run —
    its own bf16 copy of the weights (trl pushes the merged weights into it before each generation), the start-up
    profile of a 4,096-token pass (:func:`serving_overhead` at trl's max_num_batched_tokens) and the KV cache filling
    the rest (vLLM's sizing, :func:`serving`). Sized here, when ``t.vllm_memory_utilization`` is 0, for the whole
    generation batch at once — micro-batch × gradient accumulation replies of seq_len tokens in whole 16-token
    blocks — rounded up to the next 0.01 (one more for the rounding of vLLM's own sizing).

    Of the pool, the start-up profile's MLP pass (``profile_gib``) is freed once vLLM has sized its KV cache: it
    returns to torch's caching allocator, which the trainer shares in this process, so the training pass and the
    optimizer step see ``held_gib`` (the pool less that pass) beside them.

    Returns ``{"utilization", "pool_gib", "weights_gib", "overhead_gib", "profile_gib", "held_gib", "kv_gib",
    "kv_tokens_needed"}`` (GiB = 2^30 bytes). Derived from trl's and vLLM's code and the serving model's vLLM terms
    (measured for serving on an H200, bench/results/2026-12-01-serve-h200.md); colocated with the trainer on an H200,
    three shapes, +2.2…+3.4 % over (bench/results/2026-12-06-grpo-vllm-h200.md).

    Raises:
        ConfigError("memory.vllm_share_too_small"): a ``t.vllm_memory_utilization`` given that leaves no room for
            one sequence's KV cache after vLLM's weights and profile."""
    total = gpu_gib * (1 - CUDA_RESERVED_FRACTION) * GIB
    weights = weight_bytes(shape, "bf16")
    act = SERVING_MLP_PASSES * VLLM_GENERATION_TOKENS * shape.intermediate * 2
    over = SERVING_BASE_GIB * GIB + act + SERVING_GRAPHS_GIB * GIB  # trl leaves vLLM's CUDA graphs on
    per_seq = -(-t.seq_len // VLLM_BLOCK) * VLLM_BLOCK * kv_bytes_per_token(shape)
    needed = t.micro_batch * t.grad_accum * per_seq
    util = t.vllm_memory_utilization or math.ceil((weights + over + needed) / total * 100 + 1) / 100
    kv = util * total - weights - over
    if kv < per_seq:
        raise ConfigError("memory.vllm_share_too_small", util=util, need=round((weights + over + per_seq) / total, 3))
    return {"utilization": round(util, 2), "pool_gib": round(util * total / GIB, 4),
            "weights_gib": round(weights / GIB, 4), "overhead_gib": round(over / GIB, 4),
            "profile_gib": round(act / GIB, 4), "held_gib": round((util * total - act) / GIB, 4),
            "kv_gib": round(kv / GIB, 4), "kv_tokens_needed": int(needed // max(1, kv_bytes_per_token(shape)))}


def adapter_problem(shape: Shape, t: TrainingSpec) -> tuple[str, dict] | None:
    """Why peft cannot put ``t``'s adapter on ``shape``, as (catalogue key, params), or None: LoRA on a MoE's fused
    expert weights (``Shape.param_lora_io``: peft's ParamWrapper, reached by "all-linear") runs only at LoRA dropout
    0 and without DoRA (peft 0.21 raises ValueError in both cases, when the trainer builds the model)."""
    if t.method in FULL_WEIGHTS or not shape.param_lora_io or t.lora_targets != "all-linear":
        return None
    if t.method == "dora":
        return "memory.moe_dora", {}
    if t.lora_dropout > 0:
        return "memory.moe_dropout", {"dropout": t.lora_dropout}
    return None


def merged_experts(shape: Shape, t: TrainingSpec) -> float:
    """Bytes of the merged expert weights LoRA on a MoE's fused experts keeps (peft's ParamWrapper: each forward
    builds W + BA for the whole expert stack of a layer, torch.nn.utils.parametrize, and autograd keeps it for the
    backward pass; the backward makes its gradient, as large, one layer at a time). Without checkpointing every
    layer's copy stays, 16-bit, plus one layer's gradient; with it, the recomputed layer's copy and gradient.
    0 for dense models and named targets. Derived from peft 0.21's ParamWrapper; measured with checkpointing only
    (Qwen3-30B-A3B: bench/results/2026-12-04-speed-families-h200.md — without it the plan ran out of the H200's
    139.8 GiB, which this term predicts)."""
    if not shape.param_lora_weights or t.method in FULL_WEIGHTS or t.lora_targets != "all-linear":
        return 0.0
    layer = 2.0 * shape.param_lora_weights / shape.layers
    return 2 * layer if t.activation_checkpointing else 2.0 * shape.param_lora_weights + layer


def vision_activations(shape: Shape, t: TrainingSpec) -> float:
    """Bytes the vision tower adds at the backward pass's peak, for ``t.images_per_sample`` images of
    ``t.image_size`` pixels per sequence (0 for a text model or text records).

    Its weights are frozen by default (LoRA adapts the language model only, a full fine-tune freezes tower and
    projector: ``freeze_vision_tower``, ``freeze_projector``), and the trainer keeps a frozen tower out of the
    backward pass (recipes/model/vision.py tower_out_of_backward: transformers' ``enable_input_require_grads``
    would otherwise make its patch embedding's output require grad under activation checkpointing), so autograd
    keeps nothing of it: 0. A tower that trains keeps, with checkpointing, its blocks' inputs (VIS_CKPT_H bytes per
    patch, layer and vision hidden unit: bf16; measured on an H200 with the hook in place,
    bench/results/2026-12-02-memory-vlm-h200.md), without it each block's activations (the language model's
    per-layer terms at the tower's widths: derived, not measured, marked approximate)."""
    if not (t.images_per_sample and shape.vision_patch) or t.freeze_vision_tower:
        return 0.0
    patches = t.micro_batch * t.images_per_sample * shape.vision_patches(t.image_size)
    if t.activation_checkpointing:
        return VIS_CKPT_H * patches * shape.vision_layers * shape.vision_hidden
    return patches * shape.vision_layers * (ACT_H * shape.vision_hidden + ACT_I * shape.vision_intermediate)


def estimate(shape: Shape, t: TrainingSpec, gpu_gib: float | None = None, zero_sizes=None) -> dict:
    """Predicted peak memory per GPU, as nvidia-smi shows it, with its breakdown.

    Args:
        shape: from :func:`shape_from_config`.
        t: the training configuration.
        gpu_gib: memory of the GPU (GiB) to check the fit against, if any.

    Returns:
        ``{"peak_gib", "phase", "components": {name: GiB}, "phases", "trainable", "fits", "margin_gib",
        "approximate": [...]}``; ``phase`` is the moment the peak falls in (:data:`PHASE_BACKWARD`,
        :data:`PHASE_STEP`, or :data:`PHASE_LOAD` where an engine's start holds more), ``components`` what is live
        then, ``phases`` ``{phase: {"peak_gib", "components"}}`` for every moment, so a plan's fit can be read off
        each; ``fits`` needs a margin of 10 % of the GPU.

    Raises:
        ConfigError: an invalid choice or number in ``t``, unknown LoRA targets, a sequence split the heads do
            not allow, or an adapter peft cannot build on the model (:func:`adapter_problem`).

    The peak is the larger of two moments: the start of the backward pass (weights, optimizer states from the
    previous step, activations) and the optimizer step (weights, all gradients, states, the step's temporaries:
    ``step_temporaries``).
    Reserved = allocated·(1 + FRAG_FRACTION) + FRAG_GIB (``loss == "full"``, the plain loop's default allocator:
    allocated + PLAIN_FRAG_GIB); plus CONTEXT_GIB outside the allocator, and COMPILE_GIB with compiled layers.

    A vision-language model with ``t.images_per_sample`` images of ``t.image_size`` pixels per sequence [VLM]: the
    language model sees ``seq_len`` + images × :meth:`Shape.image_tokens` tokens per sequence (padded micro-batches:
    PAD_H, PAD_SCORES), the frozen tower adds :func:`vision_activations` (``components["vision_activations"]``), its
    weights are in ``weights``. Qwen2.5-VL 3B/7B on an H200: mean |error| 1.6 %, most under −3.2 % (24 rows).
    """
    t.check()
    if (problem := sharding.sequence_parallel_problem(shape, t) or adapter_problem(shape, t)) is not None:
        raise ConfigError(problem[0], **problem[1])
    vision_act = vision_activations(shape, t)
    if t.images_per_sample and shape.vision_patch:  # image tokens join the text tokens of every sequence
        t = replace(t, seq_len=t.seq_len + t.images_per_sample * shape.image_tokens(t.image_size))
    ms = model_states(shape, t)
    # DPO (trl's concatenated forward): chosen and rejected of each pair in one batch — twice the sequences, and no
    # dropout anywhere (DPOConfig.disable_dropout, on by default, sets every nn.Dropout's p to 0: LoRA's too, so
    # nothing of dropout is kept); the reference's log-probabilities come from a no-grad forward (LoRA: the base with
    # the adapter off, nothing more held; a full fine-tune: a frozen copy of the weights in the compute dtype, bf16 —
    # recipes/training/worker.py dpo_reference). Measured on three shapes (bench/results/2026-12-05-preference-h200.md)
    pref = preference_batch(t)
    act = activations(shape, pref)
    # a frozen reference copy for a full fine-tune: DPO and KTO, and GRPO with a KL term (β > 0; trl's own), in bf16;
    # its own row in the breakdown, except where an engine shards it with the weights (priced with them there)
    engine = engine_of(t)
    reference = shape.n_params * 2 if t.method in FULL_WEIGHTS and (
        t.objective in PREFERENCE_OBJECTIVES or (t.objective == "grpo" and t.grpo_beta)) else 0
    if reference and engine in ("deepspeed", "fsdp2"):
        ms = ms | {"weights": ms["weights"] + reference}
        reference = 0
    if vision_act:
        act["vision_activations"] = vision_act
    if shape.prequantized_bytes and t.method not in FULL_WEIGHTS:
        # recipes/training/packed.py rebuilds one layer's weight at a time in forward and backward: its unpacked
        # integers (1 byte each) and the dense weight, for the largest decoder linear layer (hidden × intermediate)
        act["dequantized_layer"] = (1 + t.weights_bytes) * shape.hidden * shape.intermediate
    merged = merged_experts(shape, t)
    if merged:
        act["merged_experts"] = merged
    states = {"weights": ms["weights"], "adapter": ms["adapter"], "optimizer": ms["optimizer"]} | \
        ({"reference": reference} if reference else {})
    # a full fine-tune's gradients are freed after each optimizer step (set_to_none), so the backward pass of the
    # first micro-batch starts without them; the later micro-batches of an accumulated step start with all of them
    grads_in_backward = 0 if t.method in FULL_WEIGHTS and t.grad_accum == 1 else ms["gradients"]
    phases = {PHASE_BACKWARD: states | {"gradients": grads_in_backward} | act,
              PHASE_STEP: states | {"gradients": ms["gradients"], "step_temporaries": ms["step_extra"]}}
    if t.objective in PREFERENCE_OBJECTIVES and engine in ("one", "ddp"):
        phases[PHASE_REFERENCE] = states | {"gradients": grads_in_backward} | {k: v for k, v in act.items()
                                            if k not in ("layers", "attention_scores", "logits")} | \
            reference_phase(shape, pref, act)
    if engine in ("deepspeed", "fsdp2"):  # what the engine itself allocates (recipes/memory/sharding.py)
        phases = {k: v for k, v in sharding.phases(shape, t, ms, act, zero_sizes).items() if v}
    vllm = None
    if t.objective == "grpo" and t.generation == "vllm":  # vLLM's pool beside every moment; it generates the replies
        if gpu_gib is None:
            raise ConfigError("memory.vllm_needs_gpu")
        vllm = vllm_generation(shape, t, gpu_gib)
        for comp in phases.values():  # its profile pass freed, the trainer's to reuse (vllm_generation)
            comp["vllm"] = vllm["held_gib"] * GIB
    elif t.objective == "grpo":
        phases[PHASE_GENERATE] = generation_phase(shape, t, phases[PHASE_BACKWARD])
    for comp in phases.values():
        allocated = sum(comp.values())
        comp["allocator"] = PLAIN_FRAG_GIB * GIB if t.loss == "full" else \
            FRAG_FRACTION * allocated + (FRAG_GIB + ENGINE_SLACK_GIB.get(engine, 0.0)) * GIB
        comp["cuda_context"] = (CONTEXT_GIB + outside_allocator_gib(t)) * GIB
        if t.compile_layers:
            comp["compile"] = COMPILE_GIB * GIB
    totals = {k: sum(c.values()) / GIB for k, c in phases.items()}
    phase = max(phases, key=lambda k: totals[k])  # ties: the first, the forward/backward pass
    peak = totals[phase]
    approx = list(shape.approximate)
    # measured: every sharded plan in one process (bench/results/2026-12-04-sharded-one-gpu-h200.md) and one shape's
    # on two GPUs with DeepSpeed's old sizes (…-2026-11-29-distributed-h200.md); several GPUs otherwise, and offload
    # with ZeRO-3 or FSDP2 (−42 % and −6 % on the rows measured), are not calibrated
    if t.gpus > 1:
        approx.append("sharding")
    if t.offloaded and (t.zero == 3 or t.fsdp):
        approx.append("offload")
    if t.objective == "grpo" and not grpo_measured(t):  # derived from the libraries' code, not measured there
        approx.append("grpo")
    # the plain-loop estimate was fitted on LoRA and full fine-tunes at ≤ 2,048 tokens
    # (bench/results/2026-12-02-memory-plain-h200.md); QLoRA there (prepare_model_for_kbit_training) and longer
    # sequences were reported under by up to 59 % (issue 44)
    if t.loss == "full" and (t.method == "qlora" or t.seq_len > 2048):
        approx.append("plain loop")
    if not t.activation_checkpointing and shape.model_type and shape.model_type not in NO_CKPT_FAMILIES:
        approx.append(f"{shape.model_type}{NO_CKPT_SUFFIX}")
    if t.activation_checkpointing and (shape.model_type or "").startswith(CKPT_APPROX_PREFIXES):
        approx.append(f"{shape.model_type}{CKPT_SUFFIX}")
    # switches not (yet) calibrated on a GPU: every one that is on
    # GaLore: within 0.1 % on the untied bf16-master rows it was read from, but reported 17 % under on a shape it
    # never saw (issue 44): approximate everywhere, and a plan fits only with EXTRA_MARGIN["galore"] more room
    approx += [name for name, on in (("galore", t.method == "galore"),
                                     ("compile", t.compile_layers), ("paged", t.optim == "paged"), ("flash", t.attn_implementation == "flash"),
                                     ("packing", t.packing),
                                     # a vision-language model's tower or projector trained: not measured
                                     ("vision-trained", bool(shape.vision_params) and not (
                                         t.freeze_vision_tower and t.freeze_projector)),
                                     # the eager trainer's prediction; unsloth measured at or below it (planner.py)
                                     ("unsloth", t.training_backend == "unsloth"),
                                     ("loss-chunked", t.loss == "chunked"),
                                     # GPU memory as with CPU offload; the disk's speed is not modelled
                                     ("nvme", t.nvme_offloaded),
                                     # vLLM colocated for GRPO's replies: measured under LoRA and a full
                                     # fine-tune (bench/results/2026-12-06-grpo-vllm-h200.md), not beyond
                                     ("vllm-generation", vllm is not None and not grpo_measured(t)),
                                     # Ulysses' terms are derived, not yet measured on GPUs
                                     ("sequence-parallel", t.sequence_parallel > 1),
                                     # --loss full is calibrated on the plain loop's LoRA and bf16 full fine-tunes
                                     ("loss-full", t.loss == "full" and (t.method not in ("lora", "full")
                                                                         or masters_fp32(t)))) if on]
    gib = {k: {n: round(v / GIB, 4) for n, v in c.items()} for k, c in phases.items()}
    out = {"peak_gib": round(peak, 3), "phase": phase, "components": gib[phase],
           "phases": {k: {"peak_gib": round(totals[k], 3), "components": c} for k, c in gib.items()},
           "trainable": int(ms["trainable"]), "approximate": approx}
    if vllm is not None:
        out["vllm"] = vllm
    if gpu_gib is not None:
        margin = FIT_MARGIN + max((extra_margin(a) for a in approx), default=0.0)
        out |= {"gpu_gib": gpu_gib, "margin_gib": round(gpu_gib - peak, 3), "fits": peak <= (1 - margin) * gpu_gib,
                "needed_margin": margin}
    return out


def breakdown(e: dict) -> tuple[list[str], list[tuple[str, ...]]]:
    """The breakdown table of an :func:`estimate`, as the evaluate_memory step and ``yichui estimate`` print it: one
    row per part (a ``memory.part.*`` catalogue key) live in either moment, its GiB in the forward/backward pass and
    at the optimizer step, then the totals. Returns (column keys, rows); the peak's column key is the ``…_peak``
    variant, so the reader sees which moment decides the fit and what is live then."""
    order = [k for k in (PHASE_BACKWARD, PHASE_REFERENCE, PHASE_STEP, PHASE_GENERATE, PHASE_LOAD) if k in e["phases"]]
    comps = [e["phases"][k]["components"] for k in order]
    tail = ("allocator", "cuda_context", "compile")  # what every moment adds, last
    parts = [k for k in dict.fromkeys(n for c in comps for n in c) if k not in tail and any(c.get(k) for c in comps)]
    parts += [k for k in tail if k in comps[0]]
    rows = [(f"memory.part.{k}", *(f"{c[k]:.3f}" if c.get(k) else "—" for c in comps)) for k in parts]
    rows.append(("memory.col.peak", *(f"{e['phases'][k]['peak_gib']:.2f}" for k in order)))
    cols = ["memory.col.component"] + [f"memory.phase.{k}" + ("_peak" if e["phase"] == k else "")
                                                for k in order]
    return cols, rows


def sharded_distribution(method: str) -> str:
    """How several GPUs share a plan that names no sharding, as the evaluate_memory rows and the instance sizing price
    it: ZeRO-3 (the most sharding); ZeRO-2 for QLoRA (its 4-bit weights are not sharded: TrainingSpec.check);
    plain DDP for GaLore (its optimizer is not shardable)."""
    return {"qlora": "zero2", "galore": "ddp"}.get(method, "zero3")


def smallest_instance(shape: Shape, t: TrainingSpec) -> dict | None:
    """The cheapest common cloud configuration (GPU count × type, in SIZING order) on which ``t`` fits.

    More than one GPU means data parallel with :func:`sharded_distribution` (model states divided by the count),
    unless ``t`` already chooses a sharding. Returns ``{"gpu", "count", "peak_gib"}`` or None when nothing in the
    table fits.
    """
    for count in SIZING_COUNTS:
        for key in SIZING_GPUS:
            name, gib = GPUS[key]
            # one GPU: the spec on one process; several: its sharding (the most it allows when it has none)
            tt = replace(t, processes=count, nodes=1,
                         distribution=t.distribution if count == 1 or t.zero or t.fsdp
                         else sharded_distribution(t.method),
                         # sequence parallelism over as many of the count as it divides (none on one GPU)
                         sequence_parallel=math.gcd(t.sequence_parallel, count))
            e = estimate(shape, tt, gib)
            if e["fits"]:
                return {"gpu": key, "name": name, "count": count, "peak_gib": e["peak_gib"]}
    return None


# -- serving --------------------------------------------------------------------------------------------------------
WEIGHT_FORMATS = ("bf16", "fp8", "awq", "gptq", "bnb4", "bnb8", "prequantized")
# Serving memory, calibrated on vLLM 0.26.0 on an H200 (bench/results/2026-12-01-serve-h200.md): KV cache =
# utilization × the memory CUDA reports − weights − the start-up profile's peak (vllm/v1/worker/gpu_worker.py
# determine_available_memory: requested − (weights + torch peak increase + non-torch increase) − CUDA graphs).
CUDA_RESERVED_FRACTION = 0.0043  # cudaMemGetInfo's total vs nvidia-smi's: 139.80 GiB of 143,771 MiB on an H200
SERVING_BASE_GIB = 0.346  # non-torch memory + the sampler's pass over max_num_seqs rows of logits (Qwen's 151,936
                          # vocabulary: fitted there, another vocabulary is not measured)
SERVING_GRAPHS_GIB = 0.015  # what the CUDA-graph estimate took from the KV cache (0.5B: 0.576 vs 0.561 GiB)
SERVING_MLP_PASSES = 3  # the profile's MLP peak: gate_up (2 × intermediate) + activation (1 ×), per batched token


# SGLang 0.5.17 (sglang/srt/mem_cache/kv_cache_configurator.py ``_profile_available_bytes``): KV cache = the memory
# free after the weights − (1 − mem_fraction_static) × the memory free at its first measurement, i.e. ≈
# mem_fraction_static × (CUDA's total − context) − weights − overhead. Fitted on an H200, eager, Qwen2.5-0.5B bf16;
# checked on FP8, a rank-64 adapter and Qwen2.5-1.5B (bench/results/2026-12-01-serve-h200-round3.md), and with
# CUDA graphs: +0.01 % / +0.21 % on 0.5B / 1.5B (…-round4.md; 0.5.17 keeps its pool after the capture).
SGLANG_CONTEXT_GIB = 0.58  # CUDA's total − what is free at SGLang's first measurement (its logs: 139.22 of 139.80)
SGLANG_OVERHEAD_GIB = 0.178  # taken between that measurement and the KV cache beside the weights (0.5B fit)
SGLANG_LORA_SLOTS = 8  # --max-loras-per-batch's default: a bf16 buffer per adapter slot at the served rank
# LMDeploy 0.18.0, PyTorch engine (lmdeploy/pytorch/engine/executor/base.py ``_get_runtime_size``,
# ``_update_num_gpu_blocks``): KV cache = cache_max_entry_count × (free after the weights − runtime), runtime =
# (max_prefill_token_num + 2 × max_batches) × vocabulary × 2 bytes (its logits buffers); whole blocks of 64 tokens.
LMDEPLOY_CONTEXT_GIB = 0.73  # CUDA's total − free before the weights, as far as our weight sizes go (0.5B fit;
# held out: Qwen2.5-1.5B +0.05 %, bench/results/2026-12-01-serve-h200-round4.md)
LMDEPLOY_PREFILL_TOKENS = 8192  # PytorchEngineConfig.max_prefill_token_num's default
LMDEPLOY_BLOCK = 64  # CacheConfig.block_size's default


def lmdeploy_max_batches(gpu_name: str) -> int:
    """LMDeploy's default max_batch_size on CUDA by GPU name (lmdeploy/utils.py ``get_max_batch_size``, 0.18.0)."""
    name = gpu_name.lower()
    for key, size in (("a100", 384), ("a800", 384), ("h100", 1024), ("h800", 1024), ("l20y", 1024), ("h200", 1024)):
        if key in name:
            return size
    return 128


def after_weights_fraction(utilization: float, weights_fraction: float) -> float:
    """The share of what the weights leave that gives an engine ``utilization`` of the GPU in all (LMDeploy's
    --cache-max-entry-count): ``(u − w) / (1 − w)``, clipped to [0.05, 0.95], 3 decimals (as the launch writes it)."""
    return round(min(0.95, max(0.05, (utilization - weights_fraction) / max(1e-6, 1 - weights_fraction))), 3)


def batched_tokens(gpu_gib: float, gpu_name: str = "") -> int:
    """vLLM's default ``max_num_batched_tokens`` for its API server: 8192 on GPUs of ≥ 70 GiB other than the A100,
    else 2048 (vllm/engine/arg_utils.py ``_get_default_max_num_seqs_and_batched_tokens``, 0.26.0): the tokens of
    the start-up profile's forward pass."""
    return 8192 if gpu_gib >= 70 and "a100" not in gpu_name.lower() else 2048


def serving_overhead(shape: Shape, gpu_gib: float, gpus: int = 1, cuda_graphs: bool = True,
                     gpu_name: str = "") -> float:
    """Bytes an engine keeps at start beside weights and KV cache, per GPU: :data:`SERVING_BASE_GIB` + the MLP
    activations of the profile's forward pass (:data:`SERVING_MLP_PASSES` × batched tokens × intermediate / tensor
    parallel × 2 bytes) + :data:`SERVING_GRAPHS_GIB` with CUDA graphs. Fitted on Qwen2.5-0.5B, checked on
    Qwen2.5-1.5B (bench/results/2026-12-01-serve-h200.md)."""
    act = SERVING_MLP_PASSES * batched_tokens(gpu_gib, gpu_name) * shape.intermediate / gpus * 2
    return SERVING_BASE_GIB * GIB + act + (SERVING_GRAPHS_GIB * GIB if cuda_graphs else 0)


def weight_bytes(shape: Shape, fmt: str) -> float:
    """Bytes of the weights in a serving format. Linear layers of the decoder blocks are quantized; embeddings,
    norms and the LM head stay 16-bit. int4 with group size 128 (AWQ/GPTQ): 4 bits + an fp16 scale and a 4-bit
    zero point per 128 weights; FP8: 1 byte + an fp32 scale per output channel; bnb4: NF4 + double quantization
    [QLoRA]; bnb8 (LLM.int8): 1 byte + an fp32 scale per output row."""
    other = (shape.n_params - shape.n_linear) * 2
    lin = shape.n_linear
    rows = sum(m.out_sum for m in shape.linears.values())
    per = {"bf16": 2 * lin, "fp8": lin + 4 * rows, "awq": lin * (0.5 + 2.5 / 128), "gptq": lin * (0.5 + 2.5 / 128),
           "bnb4": lin * NF4_BYTES, "bnb8": lin + 4 * rows,
           # a pre-quantized checkpoint served as it is (with an unmerged adapter): as its config.json says
           "prequantized": lin * (shape.prequantized_bytes or 2)}
    if fmt not in per:
        raise ConfigError("memory.bad_choice", name="format", value=fmt, choices=list(WEIGHT_FORMATS))
    return other + per[fmt]


def kv_bytes_per_token(shape: Shape, kv_dtype_bytes: int = 2) -> int:
    """KV cache per token: layers × KV heads × head dim × 2 (K and V) × dtype bytes."""
    return shape.layers * shape.kv_heads * shape.head_dim * 2 * kv_dtype_bytes


def serving(shape: Shape, fmt: str = "bf16", gpu_gib: float = 80.0, utilization: float = 0.9, gpus: int = 1,
            kv_dtype_bytes: int = 2, cuda_graphs: bool = True, gpu_name: str = "", adapter_params: int = 0,
            engine: str = "vllm") -> dict:
    """What fits when serving: the KV-cache budget when the engine may take ``utilization`` of the GPU memory (of
    the memory CUDA reports), in tokens, and the longest single context (capped by max_position_embeddings; a
    sliding window caps what one sequence keeps per layer, so the budget goes further).

    Each engine sizes its KV cache its own way: vLLM (and any engine without a model of its own) as
    ``u × total − weights − its start-up profile`` (:func:`serving_overhead`); SGLang as ``u × (total − context) −
    weights − overhead − adapter slots`` (:data:`SGLANG_OVERHEAD_GIB`); LMDeploy as ``cache_max_entry_count × (total
    − context − weights − logits buffers)``, its fraction from ``u`` by :func:`after_weights_fraction`.

    Args:
        gpu_gib: the GPU's memory as nvidia-smi reports it, GiB (2^30 bytes).
        adapter_params: parameters of a LoRA adapter served unmerged (bf16 beside the weights: one copy in vLLM and
            LMDeploy, one per adapter slot in SGLang).
        engine: ``vllm``, ``sglang`` or ``lmdeploy``.

    Returns ``{"weights_gib", "overhead_gib", "kv_bytes_per_token", "kv_budget_gib", "max_tokens",
    "longest_context", "fits"}`` per GPU with tensor parallelism over ``gpus`` (weights divided; KV heads divided,
    one kept per GPU when there are more GPUs than KV heads).
    Measured on an H200 against each engine's own count: vLLM 0.26.0 within 0.3 % on a held-out shape
    (bench/results/2026-12-01-serve-h200.md), SGLang 0.5.17 within 0.7 % eager and 0.21 % with CUDA graphs,
    LMDeploy 0.18.0 within 0.05 % (bench/results/2026-12-01-serve-h200-round3.md, …-round4.md).
    """
    if not 0 < utilization <= 1:
        raise ConfigError("memory.bad_number", name="utilization", value=utilization, lo="0 (excluded)", hi=1)
    total = gpu_gib * (1 - CUDA_RESERVED_FRACTION) * GIB  # what CUDA reports
    base = weight_bytes(shape, fmt) / gpus
    # each GPU keeps max(1, KV heads // tensor parallel) heads: more GPUs than KV heads replicate them
    # (vllm/config/model.py get_num_kv_heads)
    kv_tok = kv_bytes_per_token(shape, kv_dtype_bytes) * max(1, shape.kv_heads // gpus) / max(shape.kv_heads, 1) \
        if shape.kv_heads else kv_bytes_per_token(shape, kv_dtype_bytes) / gpus
    if engine == "sglang":
        w = base
        over = SGLANG_OVERHEAD_GIB * GIB + SGLANG_LORA_SLOTS * 2 * adapter_params / gpus
        budget = utilization * (total - SGLANG_CONTEXT_GIB * GIB) - w - over
    elif engine == "lmdeploy":
        w = base + 2 * adapter_params / gpus
        over = (LMDEPLOY_PREFILL_TOKENS + 2 * lmdeploy_max_batches(gpu_name)) * shape.vocab * 2
        share = after_weights_fraction(utilization, w / (gpu_gib * GIB))
        budget = share * (total - LMDEPLOY_CONTEXT_GIB * GIB - w - over)
        budget -= budget % (LMDEPLOY_BLOCK * kv_tok)
    else:
        w = base + 2 * adapter_params / gpus
        over = serving_overhead(shape, gpu_gib, gpus, cuda_graphs, gpu_name)
        budget = utilization * total - w - over
    tokens = max(0, int(budget // kv_tok)) if budget > 0 else 0
    longest = tokens
    if shape.sliding_window and tokens >= shape.sliding_window:
        longest = shape.max_position or tokens
    if shape.max_position:
        longest = min(longest, shape.max_position)
    return {"weights_gib": round(w / GIB, 3), "overhead_gib": round(over / GIB, 3), "kv_bytes_per_token": int(kv_tok),
            "kv_budget_gib": round(max(0.0, budget) / GIB, 3), "max_tokens": tokens, "longest_context": longest,
            "fits": budget > 0}


def shape_dict(shape: Shape) -> dict:
    return asdict(shape)


def shape_from_dict(d: dict) -> Shape:
    d = dict(d)
    d["linears"] = {k: Linear(**v) if isinstance(v, dict) else Linear(*v) for k, v in d.get("linears", {}).items()}
    d["approximate"] = tuple(d.get("approximate", ()))
    return Shape(**d)


@functools.cache
def detect_gpus() -> list[dict]:
    """The GPUs this process may use, from ``nvidia-smi`` (no torch import): ``[{"name", "memory_gib"}]``; empty when
    there are none. ``CUDA_VISIBLE_DEVICES`` narrows them as CUDA does (nvidia-smi itself ignores it). Asked once per
    process (several steps ask; the GPUs do not change). Callers must not mutate the list."""
    import shutil
    import subprocess

    exe = shutil.which("nvidia-smi")
    if not exe:
        return []
    try:
        out = subprocess.run([exe, "--query-gpu=index,uuid,name,memory.total", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=15).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return parse_gpus(out, os.environ.get("CUDA_VISIBLE_DEVICES"))


def parse_gpus(smi_csv: str, visible: str | None) -> list[dict]:
    """``nvidia-smi --query-gpu=index,uuid,name,memory.total --format=csv,noheader,nounits`` rows → the GPUs that
    ``visible`` (CUDA_VISIBLE_DEVICES: indices or UUID prefixes, in the order given; parsing stops at the first
    entry that names no GPU, as CUDA's does; unset = all) leaves, in that order. Memory in GiB (2^30 bytes)."""
    rows = []
    for line in smi_csv.strip().splitlines():
        parts = [x.strip() for x in line.split(",")]
        if len(parts) < 4:
            continue
        try:
            rows.append({"index": parts[0], "uuid": parts[1], "name": ",".join(parts[2:-1]),
                         "memory_gib": round(float(parts[-1]) / 1024, 1)})
        except ValueError:
            continue
    if visible is not None:
        picked = []
        for token in (t.strip() for t in visible.split(",")):
            match = next((r for r in rows if token and (r["index"] == token or str(r["uuid"]).startswith(token))),
                         None)
            if match is None or match in picked:
                break
            picked.append(match)
        rows = picked
    return [{"name": r["name"], "memory_gib": r["memory_gib"]} for r in rows]

