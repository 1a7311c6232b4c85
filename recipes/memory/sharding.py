"""What DeepSpeed ZeRO-1/2/3 and FSDP2 allocate per GPU, moment by moment, from the engines' own code and the config
yichui writes (recipes/training/zero.py ZeroSizes; recipes/training/worker.py distribution_args).

Bytes per GPU, allocated (the caching allocator's slack and what lies outside it are added by
recipes/memory/model.py estimate). P parameters, T trainable parameters, N GPUs (processes over all nodes), B the
reduce bucket in elements, S one decoder layer's parameters, L the largest parameter, V·h the embedding.

Sources (installed versions: deepspeed 0.19.8, accelerate 1.15, torch 2.11–2.13)
    [DS12]  deepspeed/runtime/zero/stage_1_and_2.py: the bf16 module's parameters flattened into one buffer (2P, all
            of them on every GPU); fp32 master partitions (4T/N) and AdamW's two fp32 moments (8T/N); stage 2's
            gradient partition ``grads_in_partition`` (bf16, 2T/N, allocated in each backward); stage 1 keeps the
            module's whole bf16 gradients (2T) until the backward ends; the reduce bucket (bf16, B elements; two
            with overlap_comm) and its flattened copy for the collective (2B). At the step: a bf16 copy of the
            partition's gradients and their fp32 conversion (2T/N + 4T/N), before that an fp64 norm temporary of
            the largest gradient slice (8 bytes each). Offloaded optimizer: the partition's gradients go to CPU
            memory through a 2L scratch buffer and 12 bytes per element of each slice (fp64 norm, fp32 cast).
    [DS3]   deepspeed/runtime/zero/stage3.py, partition_parameters.py, partitioned_param_coordinator.py: bf16
            parameter partitions (2P/N); fp32 masters and moments as above; a flat bf16 gradient partition (2T/N)
            and the reduce bucket (2B), both kept from the start; the step converts one sub-group at a time
            (2G + 4G, G = min(sub_group_size, T/N)). In forward and backward the gathered parameters: at most
            stage3_max_live_parameters elements in bf16 (with activation checkpointing the recomputed layers are
            reused within stage3_max_reuse_distance, so the window fills); none on one GPU (NoGatherHandle: the
            partition is the whole tensor). Offload: the partitions and states to CPU memory (optimizer: masters,
            moments and gradient partition; "all": the bf16 partitions too).
    [FSDP2] accelerate/utils/fsdp_utils.py fsdp2_prepare_model and torch/distributed/fsdp/_fully_shard/: trainable
            parameters upcast to fp32 and sharded (4T/N: the only copy, the master), frozen ones sharded in bf16;
            AdamW's moments 8T/N; fp32 gradient shards (4T/N) allocated on the reduce-scatter stream, whose pool the
            compute stream cannot reuse; per decoder layer in flight the bf16 unsharded parameters (2S), the
            all-gather output (2S, none on one GPU) and its copy-in (2S/N), in backward two layers and their bf16
            gradients; the tail unit (final norm and LM head, with tied embeddings the embedding) stays unsharded
            from the end of forward to the end of backward, with its bf16 gradient (2·2V·h). CPU offload: states on
            the CPU, each layer copied in (4S/N) and cast (2S/N).
The load (``PHASE_LOAD``): the trainer builds or loads the whole model on each GPU before the engine takes it, unless
ZeRO-3's zero.Init partitions it while it loads (recipes/training/worker.py). FSDP2 then upcasts the trainable
parameters to fp32 on the GPU and keeps the whole state dict alive while it shards (fsdp_utils.py original_sd): the
whole model (4T + the frozen weights) beside its shards (the same / N; offloaded, on the CPU, but the tail unit's
fp32 shard is made on the GPU first: 4·V·h). DeepSpeed ZeRO-1/2 flattens the module on the GPU only where it has the
room (stage_1_and_2.py: else on the CPU), so its load never decides a fit.
"""
from __future__ import annotations

from typing import Any

from recipes.training.spec import FULL_WEIGHTS, TrainingSpec
from recipes.training.zero import ZeroSizes

Shape = Any  # recipes.memory.model.Shape, which imports this module (its counts: n_params, n_linear, layers, …)


def layer_params(shape: Shape) -> int:
    """Parameters of one decoder layer (its linear layers; norms are a rounding error): FSDP2's unit."""
    return shape.n_linear // max(shape.layers, 1)


def phases(shape: Shape, t: TrainingSpec, ms: dict, act: dict, sizes: ZeroSizes | None = None) -> dict:
    """Allocated bytes per GPU in each moment of a sharded plan (ZeRO-1/2/3 or FSDP2): ``{"forward_backward":
    {part: bytes}, "optimizer_step": {…}, "load": {…}}`` — parts weights, masters, optimizer, gradients,
    comm_buffers, gathered, step_temporaries, holes and the activation parts of ``act``.

    ``holes`` (the optimizer step): what the caching allocator keeps reserved but cannot hand to the first step's
    large new tensors (AdamW's moments, the fp32 gradients), measured with torch.cuda.memory's history on an H200
    (bench/results/2026-12-04-sharded-one-gpu-h200.md: the reserved peak is the first step's, when the moments are
    created). ZeRO-1/2: the module's original weights freed when DeepSpeed flattens them into its own buffer (all
    of them, bf16), the fp64 norm temporary and the backward pass's activations, less the bf16 gradient copy not yet
    made at that moment (2T/N); offloaded, the freed weights alone. ZeRO-3 (weights partitioned as they load): one
    sub-group's fp32 gradient (4G), a bound that held on every row measured (over by 2–10 %); offloaded, none
    modelled (one row, 2.3 GiB unexplained: marked approximate).

    Args:
        ms: recipes.memory.model.model_states (``weights`` as held before sharding, ``trainable``).
        act: recipes.memory.model.activations.
        sizes: the DeepSpeed sizes the trainer writes (default: recipes/training/zero.py's).
    """
    P, T, N = shape.n_params, int(ms["trainable"]), t.gpus
    full = t.method in FULL_WEIGHTS
    frozen = ms["weights"] if not full else 2.0 * (P - T)  # a frozen base as the trainer holds it (bf16, NF4, …)
    L = min(shape.largest, T) if full else T
    if t.fsdp:
        return _fsdp2(shape, t, P, T, N, frozen, act)
    stage = t.zero
    z = sizes or ZeroSizes.of(stage, N)
    B = z.reduce_bucket
    # DeepSpeed casts the module to bf16: trainable parameters in bf16 beside their fp32 masters
    module = 2.0 * T + frozen
    offload = t.offloaded
    masters, moments = (0.0, 0.0) if offload else (4.0 * T / N, 8.0 * T / N)
    if t.optim != "adamw":  # 8-bit moments (2 bytes per parameter); DeepSpeed's own optimizer when offloaded
        moments = 0.0 if offload else 2.0 * T / N
    act_bytes = sum(act.values())
    if stage in (1, 2):
        grads_part = 0.0 if offload else 2.0 * T / N
        bucket = 2.0 * B * (2 if z.overlap_comm else 1) + 2.0 * min(B, T)  # + its flattened copy
        # stage 1: the module's whole bf16 gradients until the backward ends
        grads_fb = grads_part + (2.0 * T if stage == 1 else 0.0)
        slice_ = min(L, -(-T // N))
        step_tmp = 2.0 * shape.largest + 12.0 * slice_ if offload else max(6.0 * T / N, 8.0 * slice_)
        holes = 2.0 * T if offload else max(0.0, 2.0 * T + 8.0 * slice_ + act_bytes - 2.0 * T / N)
        fb = {"weights": module, "masters": masters, "optimizer": moments, "gradients": grads_fb,
              "comm_buffers": bucket} | act
        step = {"weights": module, "masters": masters, "optimizer": moments, "gradients": grads_part,
                "step_temporaries": step_tmp, "holes": holes if full else 0.0}
        return {"forward_backward": fb, "optimizer_step": step, "load": {}}
    # stage 3; the parameters are fetched to the GPU (gathered) over several GPUs, or from the CPU when offloaded
    params = 0.0 if offload and t.offload == "all" else (2.0 * T + frozen) / N
    grads_part = 0.0 if offload else 2.0 * T / N
    gathered = 2.0 * min(z.max_live, P) if N > 1 or t.offload == "all" else 0.0
    G = min(z.sub_group, -(-T // N))
    fb = {"weights": params, "masters": masters, "optimizer": moments, "gradients": grads_part,
          "comm_buffers": 2.0 * B, "gathered": gathered} | act
    step = {"weights": params, "masters": masters, "optimizer": moments, "gradients": grads_part,
            "comm_buffers": 2.0 * B, "step_temporaries": 0.0 if offload else 6.0 * G,
            "holes": 4.0 * G if full and not offload else 0.0}
    return {"forward_backward": fb, "optimizer_step": step, "load": {}}


def _fsdp2(shape: Shape, t: TrainingSpec, P: int, T: int, N: int, frozen: float, act: dict) -> dict:
    S = layer_params(shape)
    tail = 2 * 2.0 * shape.vocab * shape.hidden  # the unsharded tail and its bf16 gradient
    offload = t.offloaded
    # accelerate upcasts trainable parameters to fp32 (the master) and leaves frozen ones as they are
    whole = 4.0 * T + frozen
    weights = 0.0 if offload else whole / N
    moments = 0.0 if offload else (8.0 if t.optim == "adamw" else 2.0) * T / N
    grads = 0.0 if offload else 4.0 * T / N  # the reduce-scatter stream's pool: reserved from the first backward on
    units = 2.0 * S * (2 + (1 if N > 1 else 0)) + 2.0 * S / N + 2.0 * S  # two layers, all-gather out, copy-in, grads
    if offload:
        units += 6.0 * S / N  # each layer copied in from the CPU (fp32) and cast to bf16
    fb = {"weights": weights, "optimizer": moments, "gradients": grads, "gathered": units + tail} | act
    step = {"weights": weights, "optimizer": moments, "gradients": grads}
    # the model whole on the GPU, trainable parameters upcast, beside the shards fully_shard makes (on the CPU when
    # offloaded) while the state dict keeps the whole tensors alive
    # (offloaded, the tail unit's fp32 shard is made on the GPU first: 4·V·h, seen in the memory history)
    load = {"weights": whole + (4.0 * shape.vocab * shape.hidden if offload else whole / N)}
    return {"forward_backward": fb, "optimizer_step": step, "load": load}


def sequence_parallel_degrees(shape: Shape, gpus: int) -> list[int]:
    """The degrees of Ulysses sequence parallelism ``shape`` allows over ``gpus`` processes: dividing the processes
    and the attention heads, and the KV heads dividing it or it them (K and V replicated then;
    deepspeed/runtime/sequence_parallel/ulysses_sp.py UlyssesSPAttentionHF checks both)."""
    kv = shape.kv_heads or shape.heads
    return [d for d in range(1, gpus + 1) if gpus % d == 0 and shape.heads % d == 0 and (kv % d == 0 or d % kv == 0)]


def sequence_parallel_problem(shape: Shape, t: TrainingSpec) -> tuple[str, dict] | None:
    """Why ``shape`` cannot be split ``t.sequence_parallel`` ways, as (catalogue key, params), or None: heads that
    do not divide (see :func:`sequence_parallel_degrees`), or sliding-window attention (accelerate refuses models
    whose attention is not over the whole sequence)."""
    sp = t.sequence_parallel
    if sp <= 1:
        return None
    if shape.sliding_window:
        return "memory.sp_window", {}
    ok = sequence_parallel_degrees(shape, max(t.gpus, sp))
    if sp not in ok:
        return "memory.sp_heads", {"heads": shape.heads, "kv": shape.kv_heads or shape.heads, "sp": sp,
                                            "ok": ", ".join(map(str, ok))}
    return None
