"""The memory model on CPU: exact counts, hand-computed components, sharding arithmetic, serving, bad input, the
`estimate` command, and the committed H200 measurements (bench/results) still within the accuracy goal."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import yichui

from recipes.memory import model as memory
from recipes.base import Refusal
from recipes.training.spec import TrainingSpec

BENCH = Path(__file__).resolve().parent.parent / "bench"
GIB = 2**30


def config(name: str) -> dict:
    return json.loads((BENCH / "configs" / name / "config.json").read_text())


@pytest.fixture(scope="module")
def qwen7b():
    return memory.shape_from_config(config("qwen2.5-7b"))


def test_parameter_counts_are_exact(tiny_model):
    import torch
    from transformers import AutoModelForCausalLM

    assert memory.shape_from_config(config("qwen2.5-7b")).n_params == 7_615_616_512  # FACTS.md
    shape = memory.shape_from_config(json.loads((tiny_model / "config.json").read_text()))
    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    assert shape.n_params == sum(p.numel() for p in model.parameters())
    assert shape.n_linear == sum(m.weight.numel() for n, m in model.named_modules()
                                 if isinstance(m, torch.nn.Linear) and "lm_head" not in n)
    assert shape.tied and shape.kv_heads == 2 and shape.head_dim == 32


def test_lora_parameter_count_matches_peft(tiny_model):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    shape = memory.shape_from_config(json.loads((tiny_model / "config.json").read_text()))
    for targets in ("all-linear", "q_proj,v_proj"):
        model = AutoModelForCausalLM.from_pretrained(tiny_model)
        tm = targets if targets == "all-linear" else targets.split(",")
        peft_model = get_peft_model(model, LoraConfig(r=8, target_modules=tm, task_type="CAUSAL_LM"))
        trainable = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
        assert shape.lora_params(8, targets) == trainable, targets


def test_components_by_hand(qwen7b):
    P = qwen7b.n_params
    t = TrainingSpec(method="full", activation_checkpointing=True, seq_len=512, master_weights="bf16")
    ms = memory.model_states(qwen7b, t)
    assert (ms["weights"], ms["gradients"], ms["optimizer"]) == (2 * P, 2 * P, 4 * P)  # bf16 + AdamW in bf16
    ms = memory.model_states(qwen7b, TrainingSpec(method="full"))
    assert (ms["weights"], ms["gradients"], ms["optimizer"]) == (4 * P, 4 * P, 8 * P)  # fp32 masters (the default)
    # with gradient accumulation the backward pass starts with the previous micro-batches' gradients alive
    one, two = (memory.estimate(qwen7b, TrainingSpec(method="full", activation_checkpointing=True, grad_accum=g)) for g in (1, 2))
    # the optimizer step's peak, then the backward pass's; both moments are reported, the peak's parts in components
    assert (one["phase"], two["phase"]) == (memory.PHASE_STEP, memory.PHASE_BACKWARD)
    assert "layers" not in one["components"] and two["components"]["layers"] > 0
    assert one["phases"][memory.PHASE_BACKWARD]["components"]["layers"] > 0
    assert one["peak_gib"] == max(p["peak_gib"] for p in one["phases"].values())
    for e in (one, two):
        for p in e["phases"].values():
            assert p["peak_gib"] == pytest.approx(sum(p["components"].values()), abs=1e-3)
    assert two["peak_gib"] > one["peak_gib"]
    assert two["components"]["gradients"] == pytest.approx(4 * P / GIB, abs=1e-3)
    L = 8 * sum(m.in_sum + m.out_sum for m in qwen7b.linears.values())
    lora = memory.model_states(qwen7b, TrainingSpec(method="lora"))
    assert (lora["trainable"], lora["adapter"], lora["gradients"], lora["optimizer"]) == (L, 4 * L, 4 * L, 8 * L)
    q = memory.model_states(qwen7b, TrainingSpec(method="qlora"))
    assert q["weights"] == pytest.approx(qwen7b.n_linear * (0.5 + 1 / 64 + 4 / 16384) + (P - qwen7b.n_linear) * 2)
    # activations without checkpointing: tokens × layers × per-layer bytes, + the fused head's tile and states
    t = TrainingSpec(method="lora", activation_checkpointing=False, lora_dropout=0.0, seq_len=1024, micro_batch=2,
                     adapter_input_cast=True)
    act = memory.activations(qwen7b, t)
    per_layer = (memory.ACT_H * 3584 + memory.ACT_I * 18944
                 + memory.LORA_CAST * qwen7b.adapted_inputs_per_layer())
    assert act["layers"] == pytest.approx(2048 * 28 * per_layer + memory.BWD_I * 2048 * 18944)
    # yichui's trainer skips peft's input cast: without dropout the adapters keep LORA_NO_DROPOUT per input element
    # (measured, bench/results/2026-12-04-speed-model-h200.md), compiled layers nothing of their own
    uncast = memory.activations(qwen7b, TrainingSpec(**{**t.to_dict(), "adapter_input_cast": False}))
    assert act["layers"] - uncast["layers"] == pytest.approx(
        2048 * 28 * (2 - memory.LORA_NO_DROPOUT) * qwen7b.adapted_inputs_per_layer())
    dropout = dict(t.to_dict(), lora_dropout=0.05)
    assert memory.activations(qwen7b, TrainingSpec(**dropout)) == memory.activations(
        qwen7b, TrainingSpec(**{**dropout, "adapter_input_cast": False}))  # dropout's own output and mask either way
    # the head's tile has min(T, 4096) rows; sdpa keeps no attention scores
    assert act["logits"] == pytest.approx(2048 * 32768 * 2 + memory.HEAD_H * 2048 * 3584)
    assert act["attention_scores"] == 0


def test_checkpointing_and_longer_sequences(qwen7b):
    def peak(**kw):
        return memory.estimate(qwen7b, TrainingSpec(**kw))["peak_gib"]

    assert peak(activation_checkpointing=True, seq_len=4096) < peak(activation_checkpointing=False, seq_len=4096)
    assert peak(seq_len=8192) > peak(seq_len=2048) > peak(seq_len=512)
    assert peak(method="qlora") < peak(method="lora") < peak(method="full")
    assert peak(activation_checkpointing=False, attn_implementation="eager", seq_len=4096) > peak(activation_checkpointing=False, attn_implementation="sdpa", seq_len=4096)
    assert peak(activation_checkpointing=False, loss="full") > peak(activation_checkpointing=False, loss="fused")


def test_sharding_arithmetic(qwen7b):
    """What each engine allocates per GPU, moment by moment (recipes/memory/sharding.py, from DeepSpeed 0.19.8's and
    accelerate/torch FSDP2's code), for a full fine-tune of the 7B shape over 4 GPUs."""
    from recipes.memory import sharding
    from recipes.training.zero import ZeroSizes

    P, h, N = qwen7b.n_params, qwen7b.hidden, 4

    def phases(**kw):
        t = TrainingSpec(method="full", processes=N, activation_checkpointing=True, **kw)
        return memory.estimate(qwen7b, t)["phases"]

    def parts(e, phase):
        return {k: v * GIB for k, v in e[phase]["components"].items()}

    # plain data parallel: everything replicated, plus DDP's gradient buckets (a second copy of the gradients)
    ms = memory.model_states(qwen7b, TrainingSpec(method="full", processes=N, master_weights="bf16"))
    assert (ms["weights"], ms["gradients"], ms["optimizer"]) == (2 * P, 4 * P, 4 * P)
    # the sizes the trainer asks DeepSpeed for: its defaults, overlap at stage 3 over several GPUs only
    B = ZeroSizes.of(2, N).reduce_bucket
    assert B == 5e8 and not ZeroSizes.of(2, N).overlap_comm and ZeroSizes.of(3, N).overlap_comm
    assert not ZeroSizes.of(3, 1).overlap_comm and ZeroSizes.auto(h, 3).reduce_bucket == h * h
    assert ZeroSizes.named("auto,prefetch_bucket=2e8", 3, N, h) == replace(ZeroSizes.auto(h, 3), prefetch_bucket=200_000_000)
    # ZeRO-2: the bf16 module whole, fp32 masters and moments / N, a bf16 gradient partition; at the step a bf16 copy
    # and the fp32 conversion of the partition (2 + 4 bytes per element of T/N)
    z2 = phases(distribution="zero2")
    step = parts(z2, memory.PHASE_STEP)
    assert step["weights"] == pytest.approx(2 * P / GIB * GIB, rel=1e-3)
    assert (step["masters"], step["optimizer"], step["gradients"]) == pytest.approx((4 * P / N, 8 * P / N, 2 * P / N), rel=1e-3)
    assert step["step_temporaries"] == pytest.approx(6 * P / N, rel=1e-3)
    fb = parts(z2, memory.PHASE_BACKWARD)
    assert fb["comm_buffers"] == pytest.approx(2 * 2 * B, abs=2e-4 * GIB)  # the bucket and its flattened copy
    # the first step's holes: the module's freed weights, the fp64 norm temporary, the activations, less 2T/N
    act = sum(fb[k] for k in ("layers", "attention_scores", "logits") if k in fb)
    slice_ = min(qwen7b.largest, -(-P // N))
    assert step["holes"] == pytest.approx(2 * P + 8 * slice_ + act - 2 * P / N, abs=2e-3 * GIB)
    # ZeRO-1: the module's whole bf16 gradients until the backward ends
    assert parts(phases(distribution="zero1"), memory.PHASE_BACKWARD)["gradients"] == pytest.approx(2 * P + 2 * P / N, rel=1e-3)
    # ZeRO-3: everything / N, the bucket kept, the gathered window (stage3_max_live_parameters, bf16) in forward and
    # backward, one sub-group converted at the step
    z3 = phases(distribution="zero3")
    fb, step = parts(z3, memory.PHASE_BACKWARD), parts(z3, memory.PHASE_STEP)
    assert (fb["weights"], fb["masters"], fb["gradients"]) == pytest.approx((2 * P / N, 4 * P / N, 2 * P / N), rel=1e-3)
    assert fb["gathered"] == pytest.approx(2 * 1e9, rel=1e-3)
    assert step["step_temporaries"] == pytest.approx(6 * min(1e9, P / N), rel=1e-3)  # sub_group_size: 1e9
    # … but on one GPU nothing is gathered (the partition is the whole tensor)
    one = memory.estimate(qwen7b, TrainingSpec(method="full", distribution="zero3"))["phases"]
    assert one[memory.PHASE_BACKWARD]["components"].get("gathered", 0) == 0
    # offload: the states leave the GPU (optimizer: masters, moments and gradient partition; "all": the weights too)
    off = parts(phases(distribution="zero3", offload="all"), memory.PHASE_BACKWARD)
    assert off["masters"] == off["optimizer"] == off["weights"] == 0
    # FSDP2: fp32 shards (the masters themselves), fp32 gradient shards on the reduce-scatter stream, the tail unit
    # unsharded; its load (the model whole, upcast, the state dict alive while sharding) is a moment of its own
    f = phases(distribution="fsdp2")
    fb = parts(f, memory.PHASE_BACKWARD)
    assert (fb["weights"], fb["optimizer"], fb["gradients"]) == pytest.approx((4 * P / N, 8 * P / N, 4 * P / N), rel=1e-3)
    assert fb["gathered"] > 4 * qwen7b.vocab * h
    assert parts(f, memory.PHASE_LOAD)["weights"] == pytest.approx(4 * P + 4 * P / N, rel=1e-3)
    # every moment's total is its parts' sum, and the peak is the largest moment
    e = memory.estimate(qwen7b, TrainingSpec(method="full", processes=N, distribution="fsdp2"))
    assert e["peak_gib"] == max(p["peak_gib"] for p in e["phases"].values())
    assert sharding.layer_params(qwen7b) * qwen7b.layers == qwen7b.n_linear


def test_committed_sharded_rows_meet_the_goal():
    """bench/results (one H200: every sharded plan in one process; two H200s: the 1.5B shape, DeepSpeed's old
    sizes): predicted beside measured peak per GPU, offload rows aside (marked approximate). Held out: one GPU's
    rows within −3 %; the two-GPU rows (marked approximate: "sharding") within −5 % — FSDP2's read −3.6 % once the
    checkpointing terms were refitted (bench/results/2026-12-06-memory-refit.md; −2.8 % before)."""
    import sys

    sys.path.insert(0, str(BENCH))
    import distributed

    acc = [x for x in distributed.accuracy(distributed.load([str(p) for p in distributed.SHARDED_RESULTS]))
           if x["distribution"] != "ddp"]
    fit = [x["error"] for x in acc if not x["held_out"] and x["offload"] == "none"]
    held = [x for x in acc if x["held_out"] and x["offload"] == "none"]
    assert len(fit) >= 20 and len(held) >= 6
    assert sum(map(abs, fit)) / len(fit) <= 0.03 and min(fit) >= -0.03
    assert min(x["error"] for x in held if x["gpus"] == 1) >= -0.03
    assert min(x["error"] for x in held) >= -0.05 and sum(abs(x["error"]) for x in held) / len(held) <= 0.05
    # the offloaded ones are marked as not calibrated where they miss
    assert "offload" in memory.estimate(memory.shape_from_config(config("qwen2.5-1.5b")), TrainingSpec(
        method="full", distribution="zero3", offload="all"))["approximate"]


def test_sequence_parallel_divides_the_activations(qwen7b):
    """Ulysses (issue 43): per GPU the activations of seq / sp tokens, plus each layer's all-to-all copies (q, k, v,
    output; KV heads replicated up to the degree); refused where the heads or the distribution do not allow it."""
    from recipes.memory import sharding

    base = dict(method="lora", seq_len=32768, processes=4, distribution="zero3")
    one = memory.activations(qwen7b, TrainingSpec(**base))
    four = memory.activations(qwen7b, TrainingSpec(**base, sequence_parallel=4))
    local = memory.activations(qwen7b, TrainingSpec(**base | {"seq_len": 8192}))
    assert {k: four[k] for k in local} == local
    kv = max(qwen7b.kv_heads, 4)
    assert four["sp_buffers"] == 2 * (2 * qwen7b.heads + 2 * kv) * qwen7b.head_dim * 2 * 8192
    assert sum(four.values()) < sum(one.values()) / 3
    e = memory.estimate(qwen7b, TrainingSpec(**base, sequence_parallel=4))
    assert "sequence-parallel" in e["approximate"] and e["components"]["sp_buffers"] > 0
    # 28 heads and 4 KV heads: 1, 2, 4 over 8 GPUs (and 7 divides the heads but not the KV heads: no)
    assert sharding.sequence_parallel_degrees(qwen7b, 8) == [1, 2, 4]
    for bad, key in ((dict(base, processes=8, sequence_parallel=8), "memory.sp_heads"),
                     (dict(base, sequence_parallel=3), "training.sp_divides"),
                     (dict(base, distribution="zero2", sequence_parallel=2), "training.sp_needs_zero3"),
                     (dict(base, sequence_parallel=2, attn_implementation="eager"), "training.sp_attention"),
                     (dict(base, sequence_parallel=2, packing=True), "training.sp_packing_sdpa")):
        with pytest.raises(Refusal) as err:
            memory.estimate(qwen7b, TrainingSpec(**bad))
        assert err.value.key == key
    memory.estimate(qwen7b, TrainingSpec(**base, sequence_parallel=2, packing=True, attn_implementation="flash"))
    # the data-parallel degree is processes / sp: the effective batch counts replicas, not processes
    assert TrainingSpec(**base, sequence_parallel=2, micro_batch=2).effective_batch == 4
    # what a hand-edited session may hold is refused by the spec's own check (the train step runs it before a launch),
    # and QLoRA on sharded weights as the wizard refuses it
    for bad, key in ((dict(base, sequence_parallel="two"), "training.bad_number"),
                     (dict(base, method="qlora"), "training.qlora_sharded")):
        with pytest.raises(Refusal) as err:
            TrainingSpec(**bad).check()
        assert err.value.key == key


def test_kv_cache_and_serving_by_hand(qwen7b):
    assert memory.kv_bytes_per_token(qwen7b) == 28 * 4 * 128 * 2 * 2  # layers × KV heads × head dim × K,V × bf16
    s = memory.serving(qwen7b, "bf16", gpu_gib=80.0, utilization=0.9, gpu_name="NVIDIA H100 80GB HBM3")
    # vLLM's start-up profile: base + 3 MLP passes over 8192 batched tokens (a ≥ 70 GiB GPU) + CUDA graphs
    over = (memory.SERVING_BASE_GIB + memory.SERVING_GRAPHS_GIB) * GIB + 3 * 8192 * 18944 * 2
    budget = 0.9 * 80 * (1 - memory.CUDA_RESERVED_FRACTION) * GIB - 2 * qwen7b.n_params - over
    assert s["max_tokens"] == int(budget // (28 * 4 * 128 * 4)) and s["longest_context"] == 32768
    assert s["overhead_gib"] == round(over / GIB, 3)
    a100 = memory.serving(qwen7b, "bf16", gpu_gib=80.0, utilization=0.9, gpu_name="NVIDIA A100-SXM4-80GB")
    assert a100["overhead_gib"] < s["overhead_gib"]  # vLLM batches 2048 tokens on an A100, 8192 on an H100
    eager = memory.serving(qwen7b, "bf16", gpu_gib=80.0, utilization=0.9, cuda_graphs=False, gpu_name="H100")
    assert eager["max_tokens"] > s["max_tokens"]
    lora = memory.serving(qwen7b, "bf16", gpu_gib=80.0, utilization=0.9, adapter_params=40_000_000, gpu_name="H100")
    assert lora["weights_gib"] == round((2 * qwen7b.n_params + 80_000_000) / GIB, 3)
    awq = memory.serving(qwen7b, "awq", gpu_gib=24.0)
    assert awq["weights_gib"] < s["weights_gib"] / 2.5 and awq["max_tokens"] > 0
    assert not memory.serving(qwen7b, "bf16", gpu_gib=16.0)["fits"]


def test_serving_as_sglang_and_lmdeploy_size_their_kv_cache(qwen7b):
    total = 80 * (1 - memory.CUDA_RESERVED_FRACTION) * GIB
    w = 2 * qwen7b.n_params
    kv_tok = memory.kv_bytes_per_token(qwen7b)
    # SGLang: mem_fraction_static × (total − context) − weights − overhead, one bf16 adapter copy per slot
    sgl = memory.serving(qwen7b, "bf16", 80.0, 0.9, engine="sglang")
    budget = 0.9 * (total - memory.SGLANG_CONTEXT_GIB * GIB) - w - memory.SGLANG_OVERHEAD_GIB * GIB
    assert sgl["max_tokens"] == int(budget // kv_tok)
    slots = memory.serving(qwen7b, "bf16", 80.0, 0.9, engine="sglang", adapter_params=10_000_000)
    assert sgl["max_tokens"] - slots["max_tokens"] in range(int(8 * 2e7 // kv_tok), int(8 * 2e7 // kv_tok) + 2)
    # LMDeploy: cache_max_entry_count of what the weights and its logits buffers leave, in whole 64-token blocks
    lmd = memory.serving(qwen7b, "bf16", 80.0, 0.9, engine="lmdeploy", gpu_name="NVIDIA H100 80GB HBM3")
    share = memory.after_weights_fraction(0.9, w / (80 * GIB))
    assert share == round((0.9 - w / (80 * GIB)) / (1 - w / (80 * GIB)), 3)
    logits = (8192 + 2 * 1024) * qwen7b.vocab * 2  # max_prefill_token_num + 2 × max_batches (1024 on an H100)
    blocks = int(share * (total - memory.LMDEPLOY_CONTEXT_GIB * GIB - w - logits) // (64 * kv_tok))
    assert lmd["max_tokens"] == 64 * blocks and lmd["overhead_gib"] == round(logits / GIB, 3)
    assert memory.lmdeploy_max_batches("NVIDIA L4") == 128 and memory.lmdeploy_max_batches("A100-SXM4-80GB") == 384
    assert memory.after_weights_fraction(0.05, 0.2) == 0.05 and memory.after_weights_fraction(1.0, 0.0) == 0.95


def test_instance_sizing(qwen7b):
    lora = memory.smallest_instance(qwen7b, TrainingSpec(method="lora", seq_len=2048))
    assert lora["count"] == 1 and lora["gpu"] in ("a10-24g", "l4-24g")
    full = memory.smallest_instance(qwen7b, TrainingSpec(method="full", seq_len=2048, master_weights="bf16"))
    assert full["count"] == 1 and full["gpu"] in ("a100-80g", "h100-80g")
    # fp32 masters: 16 bytes per parameter (measured 116.5 GiB at 1,024 tokens on an H200)
    assert memory.smallest_instance(qwen7b, TrainingSpec(method="full", seq_len=2048))["gpu"] == "h200-141g"
    # a spec sharded over 8 processes is sized on each count as that many processes: on one GPU nothing divides
    # its states (ZeRO-3 in one process needs more than an H200 holds), on two they halve
    sharded = TrainingSpec(method="full", seq_len=2048, processes=8, distribution="zero3")
    inst = memory.smallest_instance(qwen7b, sharded)
    assert not memory.estimate(qwen7b, replace(sharded, processes=1), memory.GPUS["h200-141g"][1])["fits"]
    assert inst["count"] == 2 and inst["peak_gib"] == memory.estimate(qwen7b, replace(sharded, processes=2))["peak_gib"]
    huge = memory.smallest_instance(qwen7b, TrainingSpec(method="full", seq_len=65536, micro_batch=64, activation_checkpointing=False))
    assert huge is None
    # one rule with the fit line: a one-process plan that fits a GPU of the table is never sized onto a bigger one
    # (the L40S was left out of the search: "fits on L40S" beside "smallest instance: A100 80GB")
    assert set(memory.SIZING_GPUS) == set(memory.GPUS)
    for t in (TrainingSpec(method="full", seq_len=2048, master_weights="bf16", distribution="zero2", offload="optimizer"),
              TrainingSpec(method="lora", seq_len=8192), TrainingSpec(method="qlora", seq_len=32768)):
        inst = memory.smallest_instance(qwen7b, t)
        for key, (_, gib) in memory.GPUS.items():
            if memory.estimate(qwen7b, t, gib)["fits"]:
                assert inst["count"] == 1 and memory.GPUS[inst["gpu"]][1] <= gib, (t, key, inst)


def test_bad_input_is_named():
    with pytest.raises(memory.ConfigError) as e:
        memory.shape_from_config({"hidden_size": 8})
    assert e.value.key == "memory.no_model_type"
    bert = {"model_type": "bert", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
            "intermediate_size": 128, "vocab_size": 100}
    with pytest.raises(memory.ConfigError) as e:
        memory.shape_from_config(bert)
    assert e.value.key == "memory.unknown_architecture"
    shape = memory.shape_from_config(config("qwen2.5-0.5b"))
    with pytest.raises(memory.ConfigError) as e:
        memory.estimate(shape, TrainingSpec(lora_targets="q_proj,wrong_proj"))
    assert e.value.key == "memory.unknown_targets" and "wrong_proj" in e.value.params["targets"]
    with pytest.raises(Refusal):
        memory.estimate(shape, TrainingSpec(optim="sgd"))


def test_committed_h200_measurements_meet_the_goal():
    """bench/results: predicted vs measured device peak on the H200 (paged optimizer excluded: managed memory)."""
    import sys

    sys.path.insert(0, str(BENCH))
    import bench_fit as fit_memory

    rows = [r for r in fit_memory.load(fit_memory.DEFAULT) if r["optim"] != "paged"]
    errs = [e for _, _, e in fit_memory.errors(rows)]
    assert len(errs) >= 39
    assert sum(map(abs, errs)) / len(errs) <= 0.05
    assert max(map(abs, errs)) <= 0.10 and min(errs) >= -0.05


@pytest.mark.slow
def test_estimate_command_offline_on_a_folder_and_through_the_hub(home, hub, tiny_model):
    r = yichui(home, "estimate", str(BENCH / "configs" / "llama3.1-8b"), "--method", "qlora", "--gpu", "t4-16g",
               "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["fits"] is True and out["margin_gib"] > 0 and out["peak_gib"] == pytest.approx(
        sum(out["components"].values()), abs=0.01)
    # the planner's speed for the plan priced, on the GPU named (issue 44)
    from recipes.memory import planner
    from recipes.training.spec import TrainingSpec as Spec

    shape = memory.shape_from_config(config("llama3.1-8b"))
    assert out["speed_gpu"] == "NVIDIA T4" and out["tokens_per_s"] == pytest.approx(
        planner.predicted(shape, Spec.from_dict(out["config"]), "NVIDIA T4"), rel=1e-3)
    r = yichui(home, "estimate", "yichui/tiny-qwen2-chat", "--endpoint", hub.url, "--gpu-memory", "24", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["n_params"] == memory.shape_from_config(
        json.loads((tiny_model / "config.json").read_text())).n_params
    r = yichui(home, "estimate", "nobody/nothing", "--endpoint", hub.url)
    assert r.returncode == 2 and "No such model" in r.stderr
    r = yichui(home, "estimate", str(BENCH / "configs" / "qwen2.5-7b"), "--optim", "sgd")
    assert r.returncode == 2 and "sgd" in r.stderr
    if not memory.detect_gpus():  # no GPU here and none given: the serving line says what it assumed
        r = yichui(home, "estimate", str(BENCH / "configs" / "qwen2.5-7b"))
        assert r.returncode == 0 and "No GPU here and none given" in " ".join(r.stdout.split())
    r = yichui(home, "estimate", str(BENCH / "configs" / "qwen2.5-7b"), "--gpu", "v100")
    assert r.returncode == 2 and "v100" in r.stderr


@pytest.mark.slow
def test_estimate_serves_a_pre_quantized_checkpoint_as_stored(home, tmp_path):
    """`yichui estimate` on a W4A16 checkpoint: the serving line counts its packed weights unless --serve-format
    says otherwise (it assumed bf16 before: 2 bytes per linear weight)."""
    folder = tmp_path / "q7b"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config("qwen2.5-7b") | {"quantization_config": W4A16}))
    q = memory.shape_from_config(json.loads((folder / "config.json").read_text()))
    out = {}
    for fmt in (None, "bf16"):
        r = yichui(home, "estimate", str(folder), "--gpu", "h100-80g", "--json",
                   *(["--serve-format", fmt] if fmt else []))
        assert r.returncode == 0, r.stderr
        out[fmt] = json.loads(r.stdout)["serving"]
    assert out[None]["format"] == "prequantized" and out["bf16"]["format"] == "bf16"
    assert out[None]["weights_gib"] == pytest.approx(memory.weight_bytes(q, "prequantized") / GIB, abs=1e-3)
    assert out["bf16"]["weights_gib"] - out[None]["weights_gib"] > 8  # 6.5 B linear weights at ~0.52 bytes, not 2
    assert out[None]["max_tokens"] > out["bf16"]["max_tokens"]
    # trained as the wizard allows it (LoRA only), the file itself taken for its folder, and nothing pre-quantized
    # served as if it were
    r = yichui(home, "estimate", str(folder / "config.json"), "--method", "full")
    assert r.returncode == 2 and "is pre-quantized (W4A16 (compressed-tensors, group 128)): only LoRA trains" in \
        " ".join(r.stderr.split()), r.stderr
    assert yichui(home, "estimate", str(folder / "config.json"), "--json").returncode == 0
    r = yichui(home, "estimate", str(BENCH / "configs" / "qwen2.5-7b"), "--serve-format", "prequantized")
    assert r.returncode == 2 and "prequantized" in r.stderr and "bf16, fp8, awq, gptq, bnb4, bnb8" in r.stderr, r.stderr
    (folder / "config.json").write_text(json.dumps({k: v for k, v in config("qwen2.5-7b").items() if k != "hidden_size"}))
    r = yichui(home, "estimate", str(folder))
    assert r.returncode == 2 and "config.json does not state hidden_size" in " ".join(r.stderr.split()), r.stderr


@pytest.mark.slow
def test_estimate_names_the_plan_it_priced(home):
    """`yichui estimate` says which plan its figures are for (sharding over how many GPUs, offload and where), prices
    an offload to NVMe with the bytes DeepSpeed swaps to disk, says the serving line is per GPU under tensor
    parallelism, and takes a --gpu-memory that is the --gpu's own memory (80 for the table's 79.2 GiB) without
    calling it a disagreement (found by a new-user tryout)."""
    m = str(BENCH / "configs" / "qwen2.5-7b")
    r = yichui(home, "estimate", m, "--method", "full", "--distribution", "zero3", "--processes", "2",
               "--offload-device", "nvme", "--gpu", "h100-80g", "--gpu-memory", "80", COLUMNS="200")
    assert r.returncode == 0, r.stderr
    assert "full, 2048 tokens × micro-batch 1, checkpointing on; ZeRO-3 over 2 GPUs; offload to NVMe" in r.stdout, \
        r.stdout
    shape = memory.shape_from_config(config("qwen2.5-7b"))
    t = TrainingSpec(method="full", distribution="zero3", processes=2, offload="all", offload_device="nvme")
    assert f"DeepSpeed swaps {memory.nvme_bytes(shape, t) / GIB:.1f} GiB to disk" in r.stdout, r.stdout
    assert "with tensor parallelism over 2 GPUs, at 0.9 of 80.0 GiB each" in r.stdout, r.stdout
    j = json.loads(yichui(home, "estimate", m, "--method", "full", "--distribution", "zero3", "--offload-device", "nvme",
                          "--json").stdout)
    assert j["config"]["offload_device"] == "nvme" and j["config"]["offload"] == "all"
    assert j["peak_gib"] == pytest.approx(memory.estimate(shape, replace(t, processes=1))["peak_gib"], abs=0.01)
    # refused as the wizard refuses them (the options are checked by TrainingSpec.check, before anything is read)
    for bad, key in ((replace(t, distribution="zero2"), "training.nvme_needs_zero3"),
                     (TrainingSpec(method="galore", distribution="zero3"), "training.galore_sharded")):
        with pytest.raises(Refusal) as e:
            bad.check()
        assert e.value.key == key
    r = yichui(home, "--lang", "zh", "estimate", m, "--processes", "2", COLUMNS="200")
    assert "；DDP，2 个 GPU" in r.stdout and "2 个 GPU 张量并行" in r.stdout, r.stdout


def test_host_ram_of_an_offload_matches_the_h200_run():
    """host_bytes (the host RAM an offloaded plan holds) against the committed H200 rows: ZeRO-3 offloading weights
    and optimizer states of the 1.5B shape's full fine-tune to CPU memory held 34.57 GiB more than without offload;
    the NVMe buffers are the DeepSpeed config's own (nvme.SwapShape); nothing offloaded, nothing held."""
    rows = {r["variant"]: r for r in map(json.loads, (BENCH / "results" / "2026-12-04-host-ram-offload-h200" /
                                                      "rows.jsonl").read_text().splitlines())}
    measured = rows["zero3-cpu"]["host_rss_peak_bytes"] - rows["zero3"]["host_rss_peak_bytes"]
    shape = memory.shape_from_config(config("qwen2.5-1.5b"))
    t = TrainingSpec(method="full", distribution="zero3", offload="all", seq_len=1024)
    assert memory.host_bytes(shape, t)["total"] == pytest.approx(measured, rel=0.02)
    assert memory.host_bytes(shape, replace(t, offload="none"))["total"] == 0
    nv = memory.host_bytes(shape, replace(t, offload_device="nvme"))
    assert nv["states"] == 0 and nv["buffers"] == (2 * 7 + 4) * shape.vocab * shape.hidden * 2 \
        + memory.NVME_OPTIMIZER_BUFFERS * shape.vocab * shape.hidden * 4  # 18 bf16 + 4 fp32 embedding-sized buffers
    two_nodes = replace(t, nodes=2, processes=8)
    assert memory.host_bytes(shape, two_nodes)["total"] == memory.host_bytes(shape, t)["total"] // 2
    lora = memory.host_bytes(shape, replace(t, method="lora"))["total"]
    assert 2 * shape.n_params < lora < 2.2 * shape.n_params  # the frozen weights, and a small adapter's states (9 M)


def test_serving_splits_only_what_tensor_parallelism_can_split():
    """Tensor parallelism needs the heads, the KV heads and the MLP width to divide evenly (vLLM refuses other sizes),
    and past the KV heads' count each GPU keeps one KV head (replicated), not a fraction (found by a new-user tryout:
    8 GPUs were offered for a 28-head model, with 4 KV heads split eight ways)."""
    q7, q05, l8 = (memory.shape_from_config(config(n)) for n in ("qwen2.5-7b", "qwen2.5-0.5b", "llama3.1-8b"))
    assert memory.tensor_parallel(q7, 8) == 4 and memory.tensor_parallel(q05, 8) == 2
    assert memory.tensor_parallel(l8, 8) == 8 and memory.tensor_parallel(q7, 1) == 1
    assert memory.serving(q05, gpus=2)["kv_bytes_per_token"] == memory.kv_bytes_per_token(q05) // 2
    one_head = memory.kv_bytes_per_token(l8) // l8.kv_heads
    assert memory.serving(l8, gpus=8)["kv_bytes_per_token"] == one_head
    assert memory.serving(l8, gpus=16)["kv_bytes_per_token"] == one_head  # replicated, not halved again


def test_moe_and_quantized_configs_are_estimated_and_marked_approximate():
    moe = {"model_type": "qwen2_moe", "architectures": ["Qwen2MoeForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "moe_intermediate_size": 32,
           "shared_expert_intermediate_size": 64, "num_experts": 8, "num_experts_per_tok": 2, "vocab_size": 256}
    shape = memory.shape_from_config(moe)
    assert shape.experts == 8 and shape.intermediate == 2 * 32 + 64 and "moe" in shape.approximate
    assert "moe" in memory.estimate(shape, TrainingSpec())["approximate"]
    gptq = config("qwen2.5-0.5b") | {"quantization_config": {"quant_method": "gptq", "bits": 4}}
    assert "quantized:gptq" in memory.shape_from_config(gptq).approximate


W4A16 = {"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"],
         "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
             "num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": 128}}}}


def test_lora_on_a_pre_quantized_base_counts_its_packed_weights(qwen7b):
    """A compressed-tensors W4A16 base LoRA trains on kept quantized (recipes/training/packed.py): the decoder's
    linear weights at 4 bits + a bf16 scale per 128, the rest (embeddings, head, norms) bf16, plus one dequantized
    layer at a time; the GPTQ/AWQ formats (no trainable path here) stay counted as 16-bit."""
    from recipes.model import prequantized

    q = memory.shape_from_config(config("qwen2.5-7b") | {"quantization_config": W4A16})
    assert q.prequantized_bytes == 0.5 + 2 / 128 and "quantized:compressed-tensors" in q.approximate
    t = TrainingSpec(method="lora", seq_len=2048)
    dense, packed = memory.estimate(qwen7b, t), memory.estimate(q, t)
    want = qwen7b.n_linear * (0.5 + 2 / 128) + (qwen7b.n_params - qwen7b.n_linear) * 2
    assert packed["components"]["weights"] == pytest.approx(want / GIB, abs=1e-3)
    assert packed["components"]["dequantized_layer"] == pytest.approx(3 * 3584 * 18944 / GIB, abs=1e-3)
    assert dense["peak_gib"] - packed["peak_gib"] > 8  # 6.5 B linear weights: 2 bytes → ~0.52
    assert packed["trainable"] == dense["trainable"]
    # served as it is (an unmerged adapter on it): its own bytes, not bf16's
    assert memory.weight_bytes(q, "prequantized") == pytest.approx(want)
    assert memory.weight_bytes(qwen7b, "prequantized") == memory.weight_bytes(qwen7b, "bf16")
    gptq = memory.shape_from_config(config("qwen2.5-7b") | {"quantization_config": {"quant_method": "gptq"}})
    assert gptq.prequantized_bytes == 0 and memory.estimate(gptq, t)["peak_gib"] == dense["peak_gib"]
    # what is read from a config from outside: anything missing or of the wrong type is a reason, not a crash
    assert prequantized.read({"quantization_config": "x"}) is None
    assert not prequantized.read({"quantization_config": {"quant_method": "compressed-tensors"}}).trainable
    assert not prequantized.read({"quantization_config": W4A16 | {"format": "sparse-24-bitmask"}}).trainable
    bad = W4A16 | {"config_groups": {"g": {"weights": {"num_bits": "four"}}}}
    assert "not numbers" in prequantized.read({"quantization_config": bad}).reason
    assert prequantized.read({"quantization_config": W4A16}).label == "W4A16 (compressed-tensors, group 128)"


def test_planner_ranks_fitting_plans_by_predicted_speed(qwen7b):
    from recipes.memory import planner

    t = TrainingSpec(method="lora", seq_len=2048, lora_dropout=0.0)
    ranked = planner.plans(qwen7b, t, effective_batch=16, gpu_name="NVIDIA H200", gpu_gib=139.8, liger=True)
    best = ranked[0]
    assert best.fits and not best.ckpt and best.micro_batch >= 4 and best.liger  # as measured: 2.8× the peer's default
    assert all(p.micro_batch * p.grad_accum == 16 for p in ranked)
    fitting = [p for p in ranked if p.fits]
    assert fitting == sorted(fitting, key=lambda p: -p.tokens_per_s)
    small = planner.plans(qwen7b, t, effective_batch=16, gpu_name="NVIDIA A10", gpu_gib=22.5, liger=False)
    assert small[0].fits and small[0].ckpt and small[0].peak_gib <= 0.9 * 22.5  # a 24 GB card needs checkpointing
    assert not any(p.fits for p in planner.plans(qwen7b, TrainingSpec(method="full", seq_len=2048), 16,
                                                 "NVIDIA A10", 22.5, liger=False))
    # Liger's plans are estimated with Liger (measured: 56.9 GiB for 7B LoRA, no checkpointing, micro-batch 4)
    by = {(p.ckpt, p.micro_batch, p.liger): p for p in ranked}
    assert by[(False, 4, True)].peak_gib < by[(False, 4, False)].peak_gib
    # … with the trainer of that day, which cast every adapter's input (yichui's trainer no longer does)
    then = TrainingSpec(method="lora", seq_len=2048, lora_dropout=0.0, activation_checkpointing=False, micro_batch=4,
                        grad_accum=4, liger=True, adapter_input_cast=True)
    assert memory.estimate(qwen7b, then, 139.8)["peak_gib"] == pytest.approx(56.9, rel=0.05)


def test_planner_proposes_compiled_layers_where_they_were_measured(qwen7b, monkeypatch):
    from dataclasses import replace

    from recipes.memory import planner

    t = TrainingSpec(method="lora", seq_len=2048, lora_dropout=0.0, lora_rank=16)
    ranked = planner.plans(qwen7b, t, 1, "NVIDIA H200", 139.8, liger=True, compile_layers=True)
    assert ranked[0].compile_layers and not ranked[0].liger  # 1.76× the eager trainer; never with Liger (slower)
    assert not any(p.liger and p.compile_layers for p in ranked)
    by = {(p.ckpt, p.liger, p.compile_layers): p for p in ranked}
    # compiled layers: fewer launches and fused elementwise work (measured on ten shapes, speed_terms)
    assert 1.2 < by[(True, False, True)].tokens_per_s / by[(True, False, False)].tokens_per_s < 2.5
    assert by[(True, False, True)].peak_gib - by[(True, False, False)].peak_gib == pytest.approx(
        memory.COMPILE_GIB, abs=0.01)
    # measured there (bench/results/2026-12-02-train-levers-h200.md): 16.84 GiB compiled, 16.58 eager
    assert by[(True, False, True)].peak_gib == pytest.approx(16.84, rel=0.03)
    assert by[(True, False, False)].peak_gib == pytest.approx(16.58, rel=0.03)
    # the wizard's answer: a plan recorded before compiled layers existed is still one of the choices
    from recipes.choose_strategy import _plan_knobs, _plan_value

    eager, compiled = by[(True, False, False)], by[(True, False, True)]
    assert _plan_value(eager) == "ckpt=on,mb=1,liger=off"
    assert _plan_knobs({"plan": _plan_value(compiled)}) == {"ckpt": True, "mb": 1, "liger": False, "compile": True,
                                                            "backend": "transformers"}
    assert _plan_knobs({"plan": "ckpt=off,mb=4,liger=on"})["compile"] is False
    with pytest.raises(Refusal, match="liger_and_compile"):
        TrainingSpec(liger=True, compile_layers=True).check()
    # QLoRA ran faster compiled but held 2.1× the memory, which the model does not know: refused, never proposed
    with pytest.raises(Refusal, match="qlora_and_compile"):
        TrainingSpec(method="qlora", compile_layers=True).check()
    # only the measured jobs: LoRA or a full fine-tune in one process, on a CUDA GPU (none here)
    assert not planner.compile_available(t)
    with monkeypatch.context() as m:  # as on a CUDA machine with Triton
        m.setattr(planner.memory, "detect_gpus", lambda: [{"name": "NVIDIA H200", "memory_gib": 139.8}])
        m.setattr(planner.importlib.util, "find_spec", lambda name: object())
        assert [planner.compile_available(replace(t, method=k)) for k in ("lora", "full", "qlora", "dora", "galore")] \
            == [True, False, False, False, False]  # the full job was measured with bf16 master weights only
        assert planner.compile_available(replace(t, method="full", master_weights="bf16"))
        assert not planner.compile_available(replace(t, processes=2))
        qlora = planner.plans(qwen7b, replace(t, method="qlora"), 1, "NVIDIA H200", 139.8, liger=False)
        assert qlora and not any(p.compile_layers for p in qlora)
    asked = planner.plans(qwen7b, replace(t, method="qlora"), 1, "NVIDIA H200", 139.8, liger=False,
                          compile_layers=True)  # asked for explicitly: still never a QLoRA plan it would refuse
    assert asked and not any(p.compile_layers for p in asked)
    assert not any(p.compile_layers for p in planner.plans(qwen7b, t, 1, "NVIDIA H200", 139.8))


def test_planner_ranks_by_the_time_of_the_planned_steps_compiling_included(qwen7b):
    """Compiled layers are faster per step, but on unpacked data they recompile (~58 s on an H100,
    bench/results/2026-12-06-compile-shapes-h100.md): a run of a few steps finishes sooner eager, a long one
    compiled; with packing only the first compile is paid. Unknown steps: ranked by tokens/s as before."""
    from dataclasses import replace

    from recipes.memory import planner

    t = TrainingSpec(method="lora", seq_len=2048, lora_dropout=0.0, lora_rank=16, packing=False)
    by_speed = planner.plans(qwen7b, t, 1, "NVIDIA H200", 139.8, liger=False, compile_layers=True)
    assert by_speed[0].compile_layers and all(p.seconds is None for p in by_speed)
    short = planner.plans(qwen7b, t, 1, "NVIDIA H200", 139.8, liger=False, compile_layers=True, planned_steps=20)
    assert not short[0].compile_layers, "20 steps do not win back three recompilations"
    first = next(p for p in short if p.compile_layers and (p.ckpt, p.micro_batch) == (short[0].ckpt, 1))
    steps_s = 20 * 2048 / first.tokens_per_s
    assert first.seconds == pytest.approx(steps_s + planner.compile_seconds(replace(t, compile_layers=True)))
    assert planner.compile_seconds(replace(t, compile_layers=True)) > 50
    long = planner.plans(qwen7b, t, 1, "NVIDIA H200", 139.8, liger=False, compile_layers=True, planned_steps=5000)
    assert long[0].compile_layers and long[0].seconds < min(p.seconds for p in long if not p.compile_layers)
    # packed: the first compile only, so even a short run may compile (6.2 s against its faster steps)
    packed = planner.plans(qwen7b, replace(t, packing=True), 1, "NVIDIA H200", 139.8, liger=False,
                           compile_layers=True, planned_steps=200)
    assert packed[0].compile_layers
    assert [p.fits for p in short] == sorted((p.fits for p in short), reverse=True)  # fitting ones still first


def test_planner_offers_the_unsloth_backend_where_installed_and_only_what_it_runs(qwen7b):
    """unsloth is a candidate only when asked (installed, on a GPU: choose_strategy), ranked by its measured speed
    over the eager trainer, at the eager trainer's memory (unsloth measured at or below it), never with Liger or
    compiled layers, and never for a method or distribution it does not run."""
    from dataclasses import replace

    from recipes.memory import planner

    t = TrainingSpec(method="qlora", seq_len=4096, lora_dropout=0.0, lora_rank=16)
    assert not any(p.training_backend == "unsloth" for p in planner.plans(qwen7b, t, 8, "NVIDIA H200", 24.0))
    ranked = planner.plans(qwen7b, t, 8, "NVIDIA H200", 24.0, liger=True, compile_layers=True, unsloth=True)
    best = ranked[0]
    assert best.fits and best.training_backend == "unsloth" and not best.liger and not best.compile_layers
    same = next(p for p in ranked if p.training_backend == "transformers" and not p.liger and not p.compile_layers
                and (p.ckpt, p.micro_batch) == (best.ckpt, best.micro_batch))
    assert best.tokens_per_s == pytest.approx(planner.UNSLOTH_SPEEDUP["qlora"] * same.tokens_per_s, rel=1e-3)
    assert best.peak_gib == same.peak_gib
    # what unsloth does not run is no plan: DoRA, GaLore, fp32 masters, several processes
    for other in (replace(t, method="dora"), replace(t, method="galore"), replace(t, method="full"),
                  replace(t, processes=2)):
        assert not any(p.training_backend == "unsloth" for p in planner.plans(qwen7b, other, 8, "NVIDIA H200", 140.0,
                                                                            unsloth=True))
    assert any(p.training_backend == "unsloth" for p in planner.plans(
        qwen7b, replace(t, method="full", master_weights="bf16"), 8, "NVIDIA H200", 140.0, unsloth=True))
    with pytest.raises(Refusal, match="unsloth_unsupported"):
        replace(t, training_backend="unsloth", method="dora").check()
    assert replace(t, training_backend="unsloth", liger=True).unsloth_conflict() == "liger=True"
    assert memory.estimate(qwen7b, replace(t, training_backend="unsloth"))["approximate"] == ["unsloth"]
    from recipes.choose_strategy import _plan_knobs, _plan_value

    assert _plan_value(best).endswith(",backend=unsloth") and _plan_knobs({"plan": _plan_value(best)})["backend"] \
        == "unsloth"


def test_every_uncalibrated_switch_is_marked_approximate(qwen7b):
    t = TrainingSpec(method="dora", optim="paged", attn_implementation="flash", loss="full", packing=True,
                     compile_layers=True)
    assert memory.estimate(qwen7b, t)["approximate"] == ["compile", "paged", "flash", "packing", "loss-full"]
    # GaLore: within 0.1 % on the untied bf16-master rows it was read from, 17 % under on a shape it never saw
    # (issue 44): approximate everywhere, and it fits only with 25 % of the GPU free instead of 10 %
    g = memory.estimate(qwen7b, TrainingSpec(method="galore", master_weights="bf16"), 80.0)
    assert g["approximate"] == ["galore"] and g["needed_margin"] == pytest.approx(0.25)
    peak = g["peak_gib"]
    assert memory.estimate(qwen7b, TrainingSpec(method="galore", master_weights="bf16"), peak / 0.8)["fits"] is False
    assert memory.estimate(qwen7b, TrainingSpec(method="galore", master_weights="bf16"), peak / 0.74)["fits"] is True
    lora = memory.estimate(qwen7b, TrainingSpec(method="lora"), 80.0)
    assert lora["needed_margin"] == pytest.approx(0.10)


def test_galore_measured_on_five_shapes():
    """GaLore against the H200 rows of five runs, 0.5B-8B: the projection update's SVD transient (GALORE_SVD_BYTES per
    element of the largest weight it decomposes; the untied LM head is one, transformers' "all-linear" takes it) was
    fitted on the 7B row; the other four are held out. Before (low-rank states of the decoder's linears only, no
    transient) the 7B and 8B rows were 14-15 % under."""
    import sys

    sys.path.insert(0, str(BENCH))
    import bench_fit as fit_memory

    rows = fit_memory.load([BENCH / "results" / "2026-12-02-train-jobs-h200" / "memory-galore.jsonl"])
    errs = {r["id"]: e for r, _, e in fit_memory.errors(rows)}
    assert len(errs) == 5 and all(r["method"] == "galore" for r in rows)
    held_out = [e for k, e in errs.items() if not k.startswith("qwen2.5-7b")]
    assert len(held_out) == 4 and sum(map(abs, held_out)) / 4 <= 0.05, errs
    assert all(abs(e) <= 0.01 for k, e in errs.items() if k.split("-galore")[0] in ("qwen2.5-7b", "llama3.1-8b"))
    assert min(errs.values()) >= -0.08, errs  # the tied 0.5B row: allocated exact, the allocator's slack not


def test_dora_measured_on_four_shapes():
    """DoRA's saved outputs and dense temporaries (DORA_OUT) against the H200 rows of four shapes, 0.5B-8B: the 6
    bytes per output feature were read off the 1.5B row without checkpointing; the three with checkpointing are
    dominated by the temporaries, which come from peft's code, not from a fit."""
    import sys

    sys.path.insert(0, str(BENCH))
    import bench_fit as fit_memory

    rows = fit_memory.load([BENCH / "results" / "2026-12-02-memory-dora-h200.jsonl"])
    errs = {r["id"]: e for r, _, e in fit_memory.errors(rows)}
    assert len(errs) == 4 and all(r["method"] == "dora" for r in rows)
    assert max(map(abs, errs.values())) <= 0.02, errs
    held_out = [e for k, e in errs.items() if "-ckpt-" in k]
    assert len(held_out) == 3 and sum(map(abs, held_out)) / 3 <= 0.02


def test_speed_model_holds_on_the_shapes_it_was_not_fitted_on():
    """The planner's tokens/s on the committed H200 grid (bench/results/2026-12-04-speed-model-h200.md): its
    constants are the fit of the rows not held out, and on the four held-out shapes the median |error| stays within
    issue 44's goal (10 %) and the worst within what was reached (25.7 %; the goal is 25 %)."""
    import sys

    sys.path.insert(0, str(BENCH))
    import fit_speed
    from recipes.memory import planner

    rows = fit_speed.load(fit_speed.DEFAULT)
    assert len(rows) == 91
    _, errs = fit_speed.report(rows, planner.SECONDS_PER)
    for k, v in errs["coef"].items():  # the planner's constants are the fit, not typed by hand
        assert planner.SECONDS_PER[k] == pytest.approx(v, rel=2e-3, abs=1e-20), k
    held = sorted(abs(e) for e in errs["held_out"])
    assert len(held) == 36 and held[len(held) // 2] <= 0.10 and held[-1] <= 0.26


def test_qlora_speed_holds_on_held_out_shapes_run_after_the_term_was_committed():
    """QLoRA's per-module cost (planner.speed_terms quant_launches) was committed before these rows ran on an H100
    (bench/results/2026-12-06-qlora-speed-h100.md): on the three held-out shapes (Llama-3.2-1B, Phi-3-mini,
    Mistral-7B) the committed model stays within issue 44's goal, median |error| ≤ 10 % and worst ≤ 25 %; and the
    over-prediction on Qwen2.5's small shapes (+20…+30 %) does not grow past 35 %."""
    import statistics
    import sys

    sys.path.insert(0, str(BENCH))
    import fit_speed

    paths = sorted((BENCH / "results" / "2026-12-06-qlora-speed-h100").glob("*.jsonl"))
    _, rows = fit_speed.check(paths, "NVIDIA H100 80GB")
    held = [abs(r["error"]) for r in rows if r["held_out"]]
    assert len(held) == 6 and statistics.median(held) <= 0.10 and max(held) <= 0.25, held
    assert max(abs(r["error"]) for r in rows) <= 0.35


def test_a_gpu_is_priced_by_the_name_its_driver_reports():
    """The speed tables are keyed "NVIDIA H100 80GB"; the device says "NVIDIA H100 80GB HBM3" (nvidia-smi, torch), and
    was priced as an unknown GPU (an A10): 5,373 tokens/s predicted where 21,948 ran on an H100
    (bench/results/2026-12-06-dpo-fresh-h100.md). Every driver name of the table's GPUs finds its row; on the rows
    measured there the prediction for the device's own name is the table name's, within 25 %."""
    import statistics
    import sys

    sys.path.insert(0, str(BENCH))
    import fit_speed
    from recipes.memory import planner

    named = {"NVIDIA H100 80GB HBM3": "NVIDIA H100 80GB", "NVIDIA H100 PCIe": "NVIDIA H100 80GB",
             "NVIDIA A100-SXM4-80GB": "NVIDIA A100 80GB", "NVIDIA A100-PCIE-40GB": "NVIDIA A100 40GB",
             "Tesla T4": "NVIDIA T4", "NVIDIA A10G": "NVIDIA A10", "NVIDIA L4": "NVIDIA L4", "NVIDIA L40S": "NVIDIA L40S",
             "NVIDIA GeForce RTX 4090": "NVIDIA GeForce RTX 4090", "NVIDIA H200": "NVIDIA H200"}
    assert {n: planner.gpu_key(n) for n in named} == named
    assert planner.gpu_key("NVIDIA GeForce RTX 3090") is None and planner.gpu_key("") is None
    paths = sorted((BENCH / "results" / "2026-12-06-dpo-fresh-h100").glob("speed-repeat*.jsonl"))
    _, by_device = fit_speed.check(paths, "NVIDIA H100 80GB HBM3")
    _, by_table = fit_speed.check(paths, "NVIDIA H100 80GB")
    assert len(by_device) == 2 and [r["error"] for r in by_device] == [r["error"] for r in by_table]
    assert max(abs(r["error"]) for r in by_device) <= 0.25 and statistics.median(
        abs(r["error"]) for r in by_device) <= 0.15


def test_the_held_out_llama_rows_stay_within_the_goal_over_their_h100_repeats():
    """Issue 44's worst held-out row on the H200 grid (Llama-3.2-1B, fp32-master full fine-tune without
    checkpointing: −25.7 %, one run) and its bf16-master twin, run seven times on three H100 machines
    (bench/results/2026-12-06-dpo-fresh-h100.md, 2026-12-07-h100-repeats.md): each row's median over its runs against
    the prediction for the device's name stays within the goal's worst (25 %) — these rows were never fitted on."""
    import sys

    sys.path.insert(0, str(BENCH))
    import fit_speed

    paths = sorted((BENCH / "results" / "2026-12-06-dpo-fresh-h100").glob("speed-repeat*.jsonl")) + sorted(
        (BENCH / "results" / "2026-12-07-h100-repeats").glob("call*-grid*.jsonl"))
    loaded = fit_speed.load(paths)
    _, rows = fit_speed.check(paths, "NVIDIA H100 80GB HBM3")
    assert {r["id"] for r in rows} == {"llama3.2-1b-full-nockpt-s1024-b2", "llama3.2-1b-full-ckpt-s2048-b4-masterbf16"}
    assert all(len(loaded[r["id"]]["runs"]) == 7 and r["held_out"] for r in rows), loaded
    assert max(abs(r["error"]) for r in rows) <= 0.25, rows


def test_unsloth_qlora_factor_is_the_median_of_every_qlora_job_measured():
    """planner.UNSLOTH_SPEEDUP["qlora"] against the backend's QLoRA gain over the eager trainer on every job measured:
    the 2026-12-02 8B job (1.66×, bench/results/2026-12-02-train-vs-unsloth-h200.md) and the speed grid's paired rows
    (Llama-3.2-1B on an H200; Mistral-7B and Qwen3-8B on an H100, where 1.66× had priced unsloth 38–42 % fast):
    the factor is their median, and the eager trainer's own prediction held on those unseen shapes (within 25 %)."""
    import statistics
    import sys

    sys.path.insert(0, str(BENCH))
    import fit_speed
    from recipes.memory import planner

    pairs = lambda folder, gpu: fit_speed.unsloth_pairs(  # noqa: E731
        sorted((BENCH / "results" / folder).glob("*.jsonl")), gpu)[1]
    h200, h100 = pairs("2026-12-06-unsloth-grid-h200", "NVIDIA H200"), pairs("2026-12-06-unsloth-grid-h100",
                                                                             "NVIDIA H100 80GB")
    qlora = [r["ratio"] for r in h200 + h100 if r["method"] == "qlora"]
    assert len(qlora) == 3 and min(qlora) < 1.2
    assert planner.UNSLOTH_SPEEDUP["qlora"] == pytest.approx(statistics.median(qlora + [1.66]), abs=0.01)
    # (the H200's Llama-3.2-1B QLoRA eager row is +63…+69 %: the planner's docstring says so)
    assert len(h100) == 3 and all(r["held_out"] and abs(r["eager_error"]) <= 0.25 for r in h100)


def test_liger_factor_stays_within_the_paired_h200_rows():
    """planner.LIGER_SPEEDUP against Liger measured beside the eager trainer, paired and interleaved (ABBA) in one
    process on an H200 (bench/results/2026-12-05-liger-h200.md): the factor is no loss and at most the least gain of
    any paired job — the planner does not promise a gain the noise can hide."""
    import statistics

    from recipes.memory import planner

    rows = [json.loads(x) for x in (BENCH / "results" / "2026-12-05-liger-h200" / "liger-pair.jsonl")
            .read_text().splitlines()]
    sides: dict = {}
    for r in rows:
        sides.setdefault(r["id"].replace("-ligerTrue", ""), {True: [], False: []})[
            bool(r["knobs"].get("liger"))].append(r["tokens_per_s"])
    ratios = [sum(v[True]) / sum(v[False]) for v in sides.values()]
    assert len(ratios) == 4 and all(len(v[True]) == len(v[False]) == 2 for v in sides.values())
    assert 1.0 <= planner.LIGER_SPEEDUP <= min(ratios) and statistics.median(ratios) < 1.10, ratios


def test_cost_model_orders_the_measured_h200_runs():
    """The planner's predictions keep the order of the committed H200 measurements of one model."""
    rows = [json.loads(x) for x in (BENCH / "results" / "2026-11-29-train-h200-raw.jsonl").read_text().splitlines()]
    rows = [r for r in rows if r["who"] == "yichui" and r["shape"] == "qwen2.5-7b" and r["method"] == "lora"]
    from recipes.memory import planner

    shape = memory.shape_from_config(config("qwen2.5-7b"))
    pred = [planner.tokens_per_s(shape, TrainingSpec(method="lora", activation_checkpointing=r["ckpt"],
                                                     micro_batch=r["batch"], seq_len=r["seq"],
                                                     liger=bool(r["extra"].get("liger"))), "NVIDIA H200")
            for r in rows]
    measured = [r["tokens_per_s"] for r in rows]
    assert sorted(range(len(rows)), key=lambda i: pred[i]) == sorted(range(len(rows)), key=lambda i: measured[i])


def test_gpus_seen_through_cuda_visible_devices():
    smi = ("0, GPU-8f1a2b3c-0000-1111-2222-333344445555, NVIDIA H200, 143771\n"
           "1, GPU-9e0d1c2b-6666-7777-8888-9999aaaabbbb, NVIDIA A100-SXM4-80GB, 81920\n")  # csv, noheader, nounits
    h200, a100 = {"name": "NVIDIA H200", "memory_gib": 140.4}, {"name": "NVIDIA A100-SXM4-80GB", "memory_gib": 80.0}
    assert memory.parse_gpus(smi, None) == [h200, a100]
    assert memory.parse_gpus(smi, "1") == [a100]
    assert memory.parse_gpus(smi, "1,0") == [a100, h200]  # in the order given
    assert memory.parse_gpus(smi, "GPU-9e0d") == [a100]  # a UUID prefix, as CUDA takes it
    assert memory.parse_gpus(smi, "") == [] and memory.parse_gpus(smi, "-1") == []
    assert memory.parse_gpus(smi, "0,7,1") == [h200]  # CUDA stops at the first entry naming no GPU


def test_loss_full_stands_for_the_plain_transformers_loop():
    """`--loss full` (with --master-weights bf16 for a full fine-tune) against the plain transformers + PEFT loop's
    own H200 runs (bench/plain_memory.py): held-out runs — other shapes, or other switches — within 8 %, 5 % on
    average (the constants before missed these runs by −1.5 to −24 %, all under)."""
    import sys

    sys.path.insert(0, str(BENCH))
    import plain_memory

    rows = plain_memory.load()
    held = [(plain_memory.predict(r)["peak_gib"] - r["device_used_gib"]) / r["device_used_gib"]
            for r in rows if plain_memory.key(r) not in plain_memory.FIT]
    assert len(held) >= 5 and len(rows) >= 9
    assert sum(map(abs, held)) / len(held) <= 0.05 and max(map(abs, held)) <= 0.08
    # a full fine-tune with bf16 weights is what that loop runs: 59.2 GiB measured on the 7B shape, not 115.7
    qwen7b = memory.shape_from_config(config("qwen2.5-7b"))
    plain = TrainingSpec(method="full", master_weights="bf16", loss="full", seq_len=512)
    assert memory.estimate(qwen7b, plain)["peak_gib"] == pytest.approx(59.17, rel=0.03)
    assert memory.estimate(qwen7b, plain)["approximate"] == []
    # with fp32 masters that loop was never measured: said
    assert "loss-full" in memory.estimate(qwen7b, TrainingSpec(method="full", loss="full"))["approximate"]
    with pytest.raises(Refusal):
        memory.estimate(qwen7b, TrainingSpec(method="full", master_weights="fp16"))


LLAVA_15_7B = {  # llava-hf/llava-1.5-7b-hf: CLIP ViT-L/14 at 336 px, a two-layer projector, Llama-2-7B (Vicuna)
    "model_type": "llava", "architectures": ["LlavaForConditionalGeneration"], "image_token_index": 32000,
    "projector_hidden_act": "gelu", "vision_feature_layer": -2, "vision_feature_select_strategy": "default",
    "pad_token_id": 32001, "tie_word_embeddings": False,
    "text_config": {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
                    "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32064,
                    "max_position_embeddings": 4096, "rms_norm_eps": 1e-05},
    "vision_config": {"model_type": "clip_vision_model", "hidden_size": 1024, "intermediate_size": 4096,
                      "num_hidden_layers": 24, "num_attention_heads": 16, "image_size": 336, "patch_size": 14,
                      "projection_dim": 768},
}


def test_vision_language_configs_build_on_meta():
    """Qwen2.5-VL and LLaVA build image-text-to-text (transformers has no causal LM of them): every parameter
    counted, the vision side apart, and the LM's linear table without the vision tower's (CLIP's encoder layers are
    named ``.layers.`` and ``q_proj`` too)."""
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText

    from recipes.model.vision import is_vision_module

    qwen = memory.shape_from_config(config("qwen2.5-vl-3b"))
    assert qwen.n_params == 3_754_622_976 and qwen.vision_params == 668_684_288  # the published 3.75B
    assert (qwen.vision_layers, qwen.vision_hidden, qwen.vision_intermediate, qwen.vision_heads, qwen.vision_patch,
            qwen.vision_merge, qwen.vision_image_size) == (32, 1280, 3420, 16, 14, 2, 0)
    assert set(qwen.linears) == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
    assert qwen.linears["q_proj"].count == qwen.layers == 36 and qwen.hidden == 2048 and qwen.tied
    assert qwen.image_tokens(448) == 256 and qwen.image_tokens(896) == 1024 and qwen.vision_patches(448) == 1024
    assert qwen.image_tokens(500) == 324  # smart_resize: each side to the nearest multiple of 28 (504)
    assert qwen.approximate == ()  # the vision terms are measured on this family
    assert memory.shape_from_config(config("qwen2.5-vl-7b")).n_params == 8_292_166_656

    llava = memory.shape_from_config(LLAVA_15_7B)
    cfg = AutoConfig.for_model(**LLAVA_15_7B)
    with torch.device("meta"):
        model = AutoModelForImageTextToText.from_config(cfg)
    assert llava.n_params == sum(p.numel() for p in model.parameters())
    assert llava.vision_params == sum(p.numel() for n, p in model.named_parameters() if is_vision_module(n)) > 3e8
    lm_linears = [m for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and ".layers." in n
                  and not is_vision_module(n)]
    assert llava.n_linear == sum(m.weight.numel() for m in lm_linears)
    assert llava.linears["q_proj"].count == 32 and "fc1" not in llava.linears and "out_proj" not in llava.linears
    assert (llava.vision_layers, llava.vision_hidden, llava.vision_image_size, llava.vision_merge) == (24, 1024, 336, 1)
    assert llava.image_tokens() == llava.image_tokens(1024) == 576  # (336 / 14)², CLS dropped ("default")
    assert memory.shape_from_config(LLAVA_15_7B | {"vision_feature_select_strategy": "full"}).image_tokens() == 577
    assert "vision" in llava.approximate  # CLIP's tower is not measured


def test_the_estimate_grows_with_image_tokens():
    shape = memory.shape_from_config(config("qwen2.5-vl-7b"))
    peak = lambda **kw: memory.estimate(shape, TrainingSpec(method="lora", seq_len=512, **kw))  # noqa: E731
    text = peak()
    assert "vision_activations" not in text["components"] and text["peak_gib"] == peak(image_size=896)["peak_gib"]
    # an image adds its tokens to the sequence: 1024 image tokens at 896 px = a 1536-token text sequence
    assert peak(images_per_sample=1, image_size=896, activation_checkpointing=False)["peak_gib"] == \
        memory.estimate(shape, TrainingSpec(method="lora", seq_len=1536, activation_checkpointing=False))["peak_gib"]
    sizes = [peak(images_per_sample=n, image_size=px)["peak_gib"] for n, px in ((1, 224), (1, 448), (1, 896),
                                                                                  (2, 896), (2, 1344))]
    assert text["peak_gib"] < sizes[0] and sizes == sorted(sizes) and len(set(sizes)) == 5
    # a frozen tower is out of the backward pass (the trainer's tower_out_of_backward): nothing kept, with or
    # without checkpointing; a tower that trains keeps its blocks' bf16 inputs under checkpointing: 4096 patches ×
    # 32 layers × 1280 × 2 bytes
    assert "vision_activations" not in peak(images_per_sample=1, image_size=896)["components"]
    assert "vision_activations" not in peak(images_per_sample=1, image_size=896,
                                            activation_checkpointing=False)["components"]
    e = peak(images_per_sample=1, image_size=896, freeze_vision_tower=False)
    assert e["components"]["vision_activations"] == pytest.approx(4096 * 32 * 1280 * 2 / GIB, abs=1e-4)
    # padded micro-batches (image records are never truncated) cost more than the tokens alone
    b2 = peak(images_per_sample=1, image_size=448, micro_batch=2, activation_checkpointing=False)
    same_tokens = memory.estimate(shape, TrainingSpec(method="lora", seq_len=768, micro_batch=2,
                                                      activation_checkpointing=False))
    assert b2["peak_gib"] > same_tokens["peak_gib"]
    # a full fine-tune freezes the vision tower and projector: no gradients or AdamW states for them
    full = memory.estimate(shape, TrainingSpec(method="full", master_weights="bf16"))
    assert full["trainable"] == shape.n_params - shape.vision_params
    assert full["components"]["optimizer"] == pytest.approx(4 * full["trainable"] / GIB, abs=1e-3)
    with pytest.raises(Refusal):
        memory.estimate(shape, TrainingSpec(images_per_sample=-1))


def test_committed_vlm_h200_measurements_meet_the_goal():
    """bench/results/2026-12-02-memory-vlm-h200*: Qwen2.5-VL-3B and -7B on yichui's trainer (LoRA with and without
    checkpointing, full fine-tunes with bf16 and fp32 masters, 224-2016 px, one to three images per record) against
    the current memory model: mean |error| ≤ 5 %, never under by more than 5 % — the rows measured after the terms
    were set (held out, and round 4: the checkpointed rows again once the trainer kept the frozen tower out of the
    backward pass, predicted before they ran) too. The equal-length twins are diagnostics (the model assumes padded
    micro-batches); the checkpointed rows of rounds 1-2 ran a trainer that no longer runs ("superseded")."""
    import sys

    sys.path.insert(0, str(BENCH))
    import vlm_memory

    rows = vlm_memory.load(vlm_memory.RESULTS)
    errs = {r["id"] + ("-same" if r.get("same_length") else ""): (vlm_memory.role(r), e)
            for r, _, e in vlm_memory.predict(rows)}
    real = [e for k, (role, e) in errs.items() if role not in ("twin", "superseded")]
    held = [e for k, (role, e) in errs.items() if role in ("held out", "round 4")]
    assert len(real) >= 17 and len(held) >= 9 and {r["shape"] for r in rows} == {"qwen2.5-vl-3b", "qwen2.5-vl-7b"}
    for v in (real, held):
        assert sum(map(abs, v)) / len(v) <= 0.05 and min(v) >= -0.05, errs
    assert all(0 <= e <= 0.10 for role, e in errs.values() if role == "twin")  # over, on the safe side


def test_training_the_vision_side_is_counted_and_marked_approximate():
    """freeze_vision_tower / freeze_projector (recipes/model/vision.py): a full fine-tune trains what is not
    frozen; LoRA adds adapters on the tower's linear layers and the projector trained whole (modules_to_save)."""
    shape = memory.shape_from_config(config("qwen2.5-vl-3b"))
    proj = shape.vision_projector_params
    assert proj == 1280 + 5120 * 5120 + 5120 + 5120 * 2048 + 2048  # Qwen2.5-VL's merger: RMSNorm, two Linear
    tower = shape.vision_params - proj
    full = lambda **kw: memory.estimate(shape, TrainingSpec(method="full", master_weights="bf16", **kw))  # noqa
    assert full()["trainable"] == shape.n_params - tower - proj and full()["approximate"] == []
    assert full(freeze_projector=False)["trainable"] == shape.n_params - tower
    assert full(freeze_vision_tower=False, freeze_projector=False)["trainable"] == shape.n_params
    assert "vision-trained" in full(freeze_projector=False)["approximate"]
    lora = lambda **kw: memory.estimate(shape, TrainingSpec(method="lora", lora_rank=16, **kw))  # noqa: E731
    base = lora()["trainable"]
    assert base == shape.lora_params(16)
    assert lora(freeze_projector=False)["trainable"] == base + proj
    assert lora(freeze_vision_tower=False)["trainable"] == base + 16 * shape.vision_lora_io
    # a trained tower without checkpointing keeps its activations: far more than the frozen one's nothing
    t = dict(images_per_sample=1, image_size=896, activation_checkpointing=False)
    assert lora(freeze_vision_tower=False, **t)["components"]["vision_activations"] > 1.0


def test_estimates_not_calibrated_say_approximate():
    """Issue 44: what the H200 rows show under-predicted is priced with the word: families other than Qwen2/Llama/
    Mistral without checkpointing (Phi-3 −19 %, Qwen3 −8 % on bench/results/2026-12-04-speed-model-h200.md), and the
    plain-loop estimate for QLoRA or beyond 2,048 tokens; the same plans with checkpointing, or a calibrated family,
    do not."""
    phi3, qwen7 = (memory.shape_from_config(config(n)) for n in ("phi3-mini", "qwen2.5-7b"))
    approx = lambda s, **kw: memory.estimate(s, TrainingSpec(**kw), 140.0)["approximate"]  # noqa: E731
    assert "phi3 without checkpointing" in approx(phi3, method="lora", activation_checkpointing=False)
    assert approx(phi3, method="lora", activation_checkpointing=True) == []
    assert approx(qwen7, method="lora", activation_checkpointing=False) == []
    assert "plain loop" in approx(qwen7, method="qlora", loss="full")
    assert "plain loop" in approx(qwen7, method="lora", loss="full", seq_len=4096)
    assert "plain loop" not in approx(qwen7, method="lora", loss="full", seq_len=2048)


@pytest.mark.parametrize("field,value,key", [
    ("num_attention_heads", "abc", "memory.bad_dimension"), ("hidden_size", -1, "memory.bad_dimension"),
    ("hidden_size", 0, "memory.bad_dimension"), ("num_hidden_layers", 10**12, "memory.bad_dimension"),
    ("vocab_size", None, "memory.bad_dimension"), ("num_hidden_layers", 2.5, "memory.bad_dimension"),
    ("num_key_value_heads", 5, "memory.kv_heads")])
def test_broken_dimensions_in_config_are_named(field, value, key):
    """An untrusted config.json's dimensions are checked before transformers sees them (its validators raised their
    own errors, 0 divided, 10^12 layers built for minutes): one ConfigError naming the field (tryout, issue 46)."""
    with pytest.raises(memory.ConfigError) as e:
        memory.shape_from_config(config("qwen2.5-7b") | {field: value})
    assert e.value.key == key
    assert field in str(e.value.params.get("field", field))


# a Qwen3-MoE of the real layout at toy size: fused 3-D expert weights in transformers 5
TINY_MOE = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 64,
            "intermediate_size": 128, "moe_intermediate_size": 32, "num_experts": 4, "num_experts_per_tok": 2,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
            "vocab_size": 512, "max_position_embeddings": 512, "decoder_sparse_step": 1, "mlp_only_layers": [],
            "tie_word_embeddings": False}


@pytest.mark.slow
def test_lora_on_a_moe_s_fused_experts_is_counted_as_peft_builds_it_and_refused_with_dropout(tmp_path):
    """transformers 5 fuses a MoE's experts into 3-D weights; peft's "all-linear" then adapts them whole (its
    ParamWrapper, fused gate/up at twice the rank) — Qwen3-30B-A3B's rank-16 adapter is 1.0 B parameters, which the
    model counted as 13 M before and was 20 % under on the H200. The count comes from peft itself; peft refuses such
    an adapter with dropout or DoRA when the trainer builds it, so yichui refuses the plan first (one line, exit 2).
    When peft lifts either limit, the pytest.raises below fail: drop the refusal then."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM

    shape = memory.shape_from_config(TINY_MOE)
    build = lambda: AutoModelForCausalLM.from_config(AutoConfig.for_model(**TINY_MOE))  # noqa: E731
    torch.manual_seed(0)
    peft = get_peft_model(build(), LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules="all-linear",
                                              task_type="CAUSAL_LM"))
    trainable = sum(p.numel() for p in peft.parameters() if p.requires_grad)
    assert shape.param_lora_io > 0 and shape.lora_params(4) == trainable
    assert shape.param_lora_weights == sum(p.numel() for n, p in build().named_parameters() if p.ndim == 3) + \
        TINY_MOE["num_experts"] * TINY_MOE["hidden_size"] * TINY_MOE["num_hidden_layers"]  # + the routers
    for bad in ({"lora_dropout": 0.05}, {"use_dora": True}):
        with pytest.raises(ValueError, match="ParamWrapper"):
            get_peft_model(build(), LoraConfig(r=4, target_modules="all-linear", task_type="CAUSAL_LM",
                                               **({"lora_dropout": 0.0} | bad)))
    assert memory.adapter_problem(shape, TrainingSpec(method="lora")) == \
        ("memory.moe_dropout", {"dropout": 0.05})
    assert memory.adapter_problem(shape, TrainingSpec(method="dora", lora_dropout=0.0))[0] == "memory.moe_dora"
    for fine in (TrainingSpec(method="lora", lora_dropout=0.0), TrainingSpec(method="qlora", lora_dropout=0.0),
                 TrainingSpec(method="lora", lora_targets="q_proj,v_proj"), TrainingSpec(method="full")):
        assert memory.adapter_problem(shape, fine) is None
    for broken, key in (({"num_experts_per_tok": 8}, "memory.experts_per_token"),
                        ({"num_experts_per_tok": 0}, "memory.experts_per_token"),
                        ({"moe_intermediate_size": None}, "memory.missing_fields")):
        cfg = {k: v for k, v in (TINY_MOE | broken).items() if v is not None}
        with pytest.raises(memory.ConfigError) as err:
            memory.shape_from_config(cfg)
        assert err.value.key == key, broken
    dense = memory.shape_from_config(config("qwen2.5-0.5b"))
    assert dense.param_lora_io == 0 and memory.adapter_problem(dense, TrainingSpec(method="dora")) is None
    # without checkpointing every layer's merged expert copy stays for the backward pass
    e = memory.estimate(shape, TrainingSpec(method="lora", lora_dropout=0.0, activation_checkpointing=False))
    assert e["components"]["merged_experts"] * GIB >= 2 * shape.param_lora_weights
    with pytest.raises(memory.ConfigError) as err:
        memory.estimate(shape, TrainingSpec(method="lora"))
    assert err.value.key == "memory.moe_dropout"
    (tmp_path / "moe").mkdir()
    (tmp_path / "moe" / "config.json").write_text(json.dumps(TINY_MOE))
    r = yichui(tmp_path / "home", "estimate", str(tmp_path / "moe"), "--gpu", "h200-141g", "--lora-dropout", "0.05")
    assert r.returncode == 2 and "LoRA dropout 0" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = yichui(tmp_path / "home", "estimate", str(tmp_path / "moe"), "--json")  # not given: 0, as the wizard's default
    assert r.returncode == 0 and json.loads(r.stdout)["config"]["lora_dropout"] == 0.0, r.stderr


def test_the_catalogue_s_other_families_on_the_h200():
    """bench/results/2026-12-04-speed-families-h200.md (all three shapes held out of every fit): GLM-4-9B within 4 %
    of memory with and without checkpointing and its speed within issue 44's goal (−2.0 … +11.1 % since the 2026-12-06
    refit with QLoRA's per-module term, −3.2 … +9.8 % before); every family within 5 % with
    checkpointing; Gemma-3 without checkpointing approximate (up to 16 % over the model) with the wider margin; the
    MoE plans that ran out of the H200's memory are predicted not to fit; no speed shown for Gemma-3 or MoE, which
    the speed model misses by 1.26–3.0×."""
    import statistics
    import sys

    sys.path.insert(0, str(BENCH))
    import fit_speed
    from recipes.memory import planner

    _, rows = fit_speed.families(fit_speed.FAMILIES)
    assert len(rows) == 18
    glm = [r for r in rows if r["shape"] == "glm4-9b"]
    speed = sorted(abs(r["speed_error"]) for r in glm)  # issue 44's goal: median ≤ 10 %, worst ≤ 25 %
    assert len(glm) == 6 and all(abs(r["memory_error"]) <= 0.04 for r in glm)
    assert statistics.median(speed) <= 0.10 and speed[-1] <= 0.25, speed
    assert all(not any(a.endswith(memory.NO_CKPT_SUFFIX) for a in r["approximate"]) for r in glm)
    assert all(abs(r["memory_error"]) <= 0.05 for r in rows if r["ckpt"] and not r["shape"].startswith("gemma"))
    # Gemma-3 with checkpointing: under-predicted since the 2026-12-06 refit (−7.9 % at 8,192 tokens), so marked
    gemma_ckpt = [r for r in rows if r["shape"] == "gemma3-1b" and r["ckpt"]]
    assert gemma_ckpt and all("gemma3_text" + memory.CKPT_SUFFIX in r["approximate"] for r in gemma_ckpt)
    assert all(r["memory_error"] >= -(memory.FIT_MARGIN + memory.NO_CKPT_FAMILY_MARGIN) for r in gemma_ckpt)
    gemma = [r for r in rows if r["shape"] == "gemma3-1b" and not r["ckpt"]]
    assert gemma and all("gemma3_text" + memory.NO_CKPT_SUFFIX in r["approximate"] for r in gemma)
    assert all(r["memory_error"] >= -(memory.FIT_MARGIN + memory.NO_CKPT_FAMILY_MARGIN) for r in gemma)
    oom = [r for r in rows if r["oom"]]
    assert len(oom) == 3 and all(r["predicted_gib"] > (1 - memory.FIT_MARGIN) * 139.8 for r in oom)
    assert all(r["speed_error"] is None for r in rows if r["shape"] != "glm4-9b")
    assert not planner.speed_modelled(TrainingSpec(), fit_speed.shape("qwen3-30b-a3b"))
    assert planner.speed_modelled(TrainingSpec(), fit_speed.shape("glm4-9b"))


@pytest.mark.slow
def test_estimate_offload_moves_what_the_distribution_can_as_the_wizard_offers_it(home):
    """Issue 45 (rules in one home): `estimate --distribution zero2 --offload` was refused with the wizard's
    "choose 'Optimizer states'" line (the CLI asked for offload=all everywhere after the rule moved into the spec).
    --offload now moves the optimizer states under ZeRO-1/2 and the weights too under ZeRO-3/FSDP2 — the wizard's
    choices — and DDP, where nothing moves, is refused by TrainingSpec's rule in the option's words."""
    from recipes.base import Refusal
    from recipes.training.spec import TrainingSpec

    m = str(BENCH / "configs" / "qwen2.5-0.5b")
    for dist, moved in (("zero1", "optimizer"), ("zero2", "optimizer"), ("zero3", "all"), ("fsdp2", "all")):
        r = yichui(home, "estimate", m, "--method", "full", "--distribution", dist, "--offload", "--processes", "2",
                   "--gpu", "h100-80g", "--json")
        assert r.returncode == 0, (dist, r.stderr)
        out = json.loads(r.stdout)
        assert out["config"]["offload"] == moved and out["host_ram_gib"] > 0, (dist, out["config"])
    r = yichui(home, "estimate", m, "--method", "full", "--offload", "--processes", "2")
    assert r.returncode == 2 and "--offload moves ZeRO or FSDP states" in r.stderr, r.stderr
    with pytest.raises(Refusal) as e:  # the same rule, the wizard's and a session file's
        TrainingSpec(method="full", offload="optimizer", distribution="ddp", processes=2).check()
    assert e.value.key == "training.offload_needs_sharding"
