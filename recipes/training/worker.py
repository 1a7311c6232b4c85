"""Entry point of the trainer process: ``python -m recipes.training.worker SPEC.json`` (the train step starts it).
``… SPEC.json --wait-for-spec WIZARD_PID`` (the preflight smoke run): import the trainer's libraries first, then wait
for SPEC.json to be written (:func:`wait_for_spec`), so the imports overlap the copy's build in the wizard.

trl's SFTTrainer + peft + accelerate on the chosen device. Writes JSON-lines events (format v1, wizard/README.md) to
``events.jsonl`` beside the spec, checkpoints to ``checkpoints/checkpoint-N`` (every ``save_steps``, the last
``save_total_limit`` kept), the final adapter (or full model) to ``adapter/``, and ``result.json`` last, atomically:
its presence means training finished. Started again with checkpoints present, it resumes from the latest one
(model, optimizer, scheduler, RNG and data position, as the Trainer restores them).
"""
from __future__ import annotations

import json
import math
import os
import resource
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from recipes.base import Refusal
from recipes.rundir import TrainDir
from recipes.model import prequantized
from recipes.training.nvme import SwapShape
from recipes.training.spec import FULL_WEIGHTS, PREFERENCE_OBJECTIVES, TRANSFORMERS_ATTENTION, TrainerJob
from recipes.training.zero import ZeroSizes

EVENTS_VERSION = 1
# yichui's optimizer names → transformers' (OptimizerNames): torch's fused AdamW, bitsandbytes 8-bit and paged 8-bit
OPTIMIZERS = {"adamw": "adamw_torch_fused", "adamw8bit": "adamw_bnb_8bit", "paged": "paged_adamw_8bit"}


def deepspeed_config(stage: int, offload: str, device: str = "cpu", nvme_path: str = "",
                     swap: SwapShape | None = None, sizes: ZeroSizes | None = None) -> dict:
    """A DeepSpeed config for the HF Trainer: "auto" lets the Trainer fill batch sizes, precision and clipping from
    its own arguments (transformers' integrations/deepspeed.py), so the two never disagree. The buckets, prefetch,
    persistence and overlap are ``sizes`` (recipes/training/zero.py ZeroSizes, as numbers, so zero.Init reads them
    at load; DeepSpeed's own defaults, overlap off, when None). Offload of the optimizer
    states (stage ≥ 1) and, with ``offload="all"`` at stage 3, of the parameters to CPU memory — or, ``device``
    "nvme" (stage 3), to swap files under ``nvme_path`` (DeepSpeed's ZeRO-Infinity: docs "offload_param" /
    "offload_optimizer", device nvme; its async_io op does the reads and writes). Parameters on NVMe go through
    pinned buffers sized from the model (``swap``, recipes/training/nvme.py SwapShape), which also bound ZeRO-3's
    live and prefetched parameters. An offloaded optimizer must be DeepSpeed's (CPU Adam), hence the optimizer
    section then."""
    zero: dict = {"stage": stage, "overlap_comm": False, "contiguous_gradients": True}
    if sizes is not None:
        zero |= sizes.config(stage)
    if stage == 3:
        zero["stage3_gather_16bit_weights_on_model_save"] = True  # save_model writes whole weights
    to = {"device": "nvme", "nvme_path": nvme_path} if device == "nvme" else {"device": "cpu"}
    if offload in ("optimizer", "all"):
        zero["offload_optimizer"] = to | {"pin_memory": True}
    if offload == "all" and stage == 3:
        zero["offload_param"] = to | {"pin_memory": True}
        if device == "nvme":
            swap = swap or SwapShape(0, 0, 0)
            zero["offload_param"] |= swap.offload_param()
            zero |= swap.zero_limits()
    cfg = {"zero_optimization": zero, "bf16": {"enabled": "auto"}, "fp16": {"enabled": "auto"},
           "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
           "train_batch_size": "auto", "gradient_clipping": "auto"}
    if "offload_optimizer" in zero:
        cfg["optimizer"] = {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto",
                                                        "weight_decay": "auto"}}
    return cfg


def distribution_args(spec: TrainerJob, swap: SwapShape | None = None, hidden: int = 0) -> dict:
    """SFTConfig arguments for the chosen distribution: DeepSpeed ZeRO-1/2/3 or FSDP2 (full shard, one unit per
    decoder layer: accelerate wraps the model's ``_no_split_modules``); plain DDP needs none. ``swap``: what
    NVMe offload's parameter buffers must hold (recipes/training/nvme.py SwapShape); DeepSpeed's buckets and overlap
    are recipes/training/zero.py's (``spec.zero_sizes``: benchmarks compare "deepspeed", "auto" — transformers'
    rule from the ``hidden`` size — or overrides)."""
    dist, offload = spec.distribution, spec.offload
    if dist.startswith("zero"):
        stage = int(dist[-1])
        sizes = ZeroSizes.named(spec.zero_sizes, stage, spec.gpus, hidden)
        return {"deepspeed": deepspeed_config(stage, offload, spec.offload_device, spec.nvme_path, swap, sizes)}
    if dist == "fsdp2":
        return {"fsdp": True,
                "fsdp_config": {"version": 2, "auto_wrap_policy": "TRANSFORMER_BASED_WRAP", "reshard_after_forward": True,
                                "cpu_offload": offload != "none", "state_dict_type": "FULL_STATE_DICT",
                                "activation_checkpointing": bool(spec.activation_checkpointing)}}
    return {}


def sequence_parallel_args(spec: TrainerJob, device: str) -> dict:
    """SFTConfig arguments for Ulysses sequence parallelism (``spec.sequence_parallel`` > 1), through accelerate's
    ParallelismConfig with DeepSpeed as its backend (ALST: the transformers guide "deepspeed_alst", accelerate's
    concept guide "sequence_parallelism"): the processes form data-parallel replicas of ``sequence_parallel`` each
    (dp_replicate × sp = the world); the Trainer wraps the data loader in DeepSpeed's UlyssesSPDataLoaderAdapter,
    which shards each batch's sequence, and trl adds the position ids it needs. Every batch is padded to a multiple of
    the degree; on the CPU (gloo, whose all-gather takes equal sizes only) to the whole sequence length, so that the
    ranks of a group all gather batches of one size."""
    sp = spec.sequence_parallel
    if sp <= 1:
        return {}
    from accelerate.utils import DeepSpeedSequenceParallelConfig, ParallelismConfig

    handler = DeepSpeedSequenceParallelConfig(sp_seq_length_is_variable=True,
                                              sp_attn_implementation=TRANSFORMERS_ATTENTION[spec.attn_implementation])
    return {"parallelism_config": ParallelismConfig(sp_backend="deepspeed", sp_size=sp,
                                                    dp_replicate_size=max(1, spec.gpus // sp), sp_handler=handler),
            "pad_to_multiple_of": spec.seq_len if device == "cpu" else sp,
            # a resume cannot skip the batches already seen: accelerate's skip_first_batches reads the data loader's
            # dataset, which DeepSpeed's UlyssesSPDataLoaderAdapter does not have (AttributeError on every resume).
            # The resumed run restores the weights, optimizer and schedule and starts the epoch's data again
            "ignore_data_skip": True}


RANK = int(os.environ.get("RANK", "0"))              # set by torch.distributed.run for several processes
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", "0"))
WORLD = int(os.environ.get("WORLD_SIZE", "1"))


class Events:
    """The events stream. With several processes only rank 0 writes, except errors (any rank may fail)."""

    def __init__(self, path: Path, launch: str | None):
        self.path, self.launch = path, launch
        self.f = open(path, "a", encoding="utf-8")
        self.last_step: int | None = None

    def emit(self, event: str, **fields) -> None:
        if RANK != 0 and event != "error":
            return
        rec = {"v": EVENTS_VERSION, "time": round(time.time(), 3), "event": event, "pid": os.getpid(),
               "launch": self.launch, "rank": RANK} | fields
        self.f.write(json.dumps(rec) + "\n")
        self.f.flush()


def peak_memory_gib(device: str) -> tuple[float, str]:
    """Peak reserved CUDA memory, or on CPU the process's peak resident set size (ru_maxrss is in KiB on Linux)."""
    if device == "cuda":
        import torch

        return round(torch.cuda.max_memory_reserved() / 2**30, 3), "cuda_peak_reserved"
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3), "cpu_peak_rss"


def memory_scalars(device: str) -> dict[str, float]:
    """What the trainer writes to TensorBoard every logging step under ``memory/`` (GiB = 2^30 bytes), to watch the
    trend the article asks for: on CUDA the allocator's allocated and reserved memory now and their peaks since the
    start; on the CPU the process's peak resident set."""
    if device != "cuda":
        return {"cpu_peak_rss_gib": peak_memory_gib(device)[0]}
    import torch

    g = lambda b: round(b / 2**30, 4)  # noqa: E731
    return {"allocated_gib": g(torch.cuda.memory_allocated()), "reserved_gib": g(torch.cuda.memory_reserved()),
            "peak_allocated_gib": g(torch.cuda.max_memory_allocated()),
            "peak_reserved_gib": g(torch.cuda.max_memory_reserved())}


def cuda_memory() -> dict:
    """GPU memory of this process in GiB: the caching allocator's peaks, and what lies outside the allocator
    (CUDA context, cuBLAS/cuDNN handles), so that ``device_peak_gib`` = peak reserved + outside is what
    nvidia-smi would have shown at the peak."""
    import torch

    free, total = torch.cuda.mem_get_info()
    outside = (total - free) - torch.cuda.memory_reserved()
    g = lambda b: round(b / 2**30, 4)  # noqa: E731
    peak_reserved = torch.cuda.max_memory_reserved()
    return {"peak_allocated_gib": g(torch.cuda.max_memory_allocated()), "peak_reserved_gib": g(peak_reserved),
            "outside_allocator_gib": g(outside), "device_peak_gib": g(peak_reserved + outside),
            "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")}


def expected_sharding(distribution: str) -> str:
    """What :func:`sharding` reports when the asked distribution really runs on several processes."""
    return f"deepspeed-{distribution}" if distribution.startswith("zero") else distribution


def sharding(trainer) -> str:
    """What the Trainer actually runs (not what was asked): "deepspeed-zero<N>", "fsdp<N>", "ddp" or "none"."""
    state = trainer.accelerator.state
    if trainer.is_deepspeed_enabled:
        return f"deepspeed-zero{state.deepspeed_plugin.zero_stage}"
    if trainer.is_fsdp_enabled:
        return f"fsdp{state.fsdp_plugin.fsdp_version}"
    return "ddp" if WORLD > 1 else "none"


def _qualname(obj) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def answer(model, tok, question: str, max_new_tokens: int = 48, keep_train_mode: bool = False,
           unsloth: bool = False, image: str | None = None) -> str:
    """Greedy answer to one user question through the chat template; ``image``: a file shown with the question
    (``tok`` then a vision-language model's processor).

    ``keep_train_mode``: generate in train mode. bitsandbytes repacks 4-bit weights for its CPU inference kernel the
    first time a layer runs in eval mode, and the repacked layer then fails in training (Linear4bit.forward).
    Qwen2/Llama-style decoders have no dropout by default, so the answer is the same. ``unsloth``: a model of the
    unsloth backend, switched to unsloth's inference mode and back (its training patches do not decode).
    """
    import torch

    if unsloth:
        from unsloth import FastLanguageModel

        FastLanguageModel.for_inference(model)
        try:
            return answer(model, tok, question, max_new_tokens)
        finally:
            FastLanguageModel.for_training(model)
    from recipes.model.vision import chat_inputs

    model.train() if keep_train_mode else model.eval()
    inputs = chat_inputs(tok, question, image).to(model.device)
    # compiled layers run eagerly here: decoding would recompile them for every cache length
    with torch.no_grad(), torch.compiler.set_stance("force_eager"):
        out = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False)
    return tok.decode(out[0][inputs["input_ids"].shape[1]:], skip_special_tokens=True).strip()


def sample_image(convs: list[list[dict]]) -> str | None:
    """The first image file of the records (an absolute path; inline image bytes are not recorded), or None."""
    for conv in convs:
        for m in conv:
            for part in m["content"] if isinstance(m["content"], list) else ():
                if part["type"] == "image" and isinstance(part["image"], str):
                    return part["image"]
    return None


# Out-of-memory errors that do not come as torch.OutOfMemoryError: allocation failures inside the CUDA driver,
# cuBLAS or cuDNN reach Python as a RuntimeError carrying their status text.
OOM_TEXT = ("CUDA out of memory", "CUDA error: out of memory", "CUBLAS_STATUS_ALLOC_FAILED",
            "CUDNN_STATUS_ALLOC_FAILED", "HIP out of memory")


def is_oom(e: BaseException) -> bool:
    """Whether ``e`` is a GPU out-of-memory error: torch.OutOfMemoryError, or a RuntimeError whose text is one of
    the allocation failures in OOM_TEXT."""
    return type(e).__name__ == "OutOfMemoryError" or (
        isinstance(e, RuntimeError) and any(t in str(e) for t in OOM_TEXT))


def is_compile_failure(e: BaseException) -> bool:
    """Whether ``e`` came from torch.compile's own machinery (Dynamo tracing or the Inductor backend), not from the
    model's code: e.g. torch 2.11's partitioner on Qwen2.5-0.5B with activation checkpointing ("Node add_641 was
    invalid, but is output", bench/results/2026-12-03-reliability-h200.md). The same step runs without compiling."""
    return type(e).__module__.startswith(("torch._dynamo", "torch._inductor")) or \
        type(e).__name__ in ("BackendCompilerFailed", "InternalTorchDynamoError")


def main(spec_path: str) -> int:
    spec = TrainerJob.read(spec_path)
    tdir = Path(spec_path).parent
    ev = Events(TrainDir(tdir).events, spec.launch)
    try:
        if spec.training_backend == "unsloth":
            import importlib

            importlib.import_module("unsloth")  # first: it patches transformers, peft and trl as it is imported
        return train(spec, tdir, ev)
    except Refusal as e:  # something the user can act on (the reward file raised): said in their language
        ev.emit("error", kind="refusal", step=ev.last_step, key=e.key,
                params={k: str(v) for k, v in e.params.items()}, message=e.key)
        return 1
    except Exception as e:
        traceback.print_exc()
        kind = "oom" if is_oom(e) else "compile" if spec.compile_layers and is_compile_failure(e) else "exception"
        ev.emit("error", kind=kind, step=ev.last_step,
                message=f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        return 3 if kind == "oom" else 1


def _precision(spec: TrainerJob):
    """(device, this process's device, bf16?, compute dtype, weights dtype). fp32 master weights (a full fine-tune's
    default): weights, gradients and AdamW states stay fp32 and bf16 autocast runs the matmuls, so small updates are
    not rounded away. DeepSpeed and FSDP2 keep fp32 masters of their own beside a bf16 module, so the model is
    loaded in bf16 for them."""
    import torch

    device = spec.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    where = f"cuda:{LOCAL_RANK}" if device == "cuda" else "cpu"
    bf16 = device == "cuda" and torch.cuda.is_bf16_supported()
    dtype = torch.bfloat16 if bf16 else torch.float32
    sharded = spec.distribution != "ddp"
    masters = torch.float32 if spec.method in FULL_WEIGHTS and spec.master_weights == "fp32" and not sharded \
        else dtype
    return device, where, bf16, dtype, masters


def reference_model(spec: TrainerJob, device: str, where: str, dtype, masters, vlm: bool):
    """A preference objective's reference model (DPO, KTO), or None for trl's own: under LoRA/QLoRA/DoRA the base with the adapter switched off (no
    copy); for a full fine-tune trl loads a frozen copy in the policy's dtype — with fp32 master weights an fp32 copy,
    4 bytes a weight (trl/trainer/dpo_trainer.py, ``ref_model_init_kwargs.setdefault("dtype", self.model.dtype)``).
    The reference only runs no-grad forwards under bf16 autocast, whose matmuls see bf16 weights either way, so here
    it is loaded in the compute dtype: 2 bytes a weight (recipes/memory/model.py prices that copy). Its
    log-probabilities differ from the fp32 policy's by rounding: the first loss of a 0.5B-shape run on the H200 was
    0.7275, not ln 2 (bench/results/2026-12-05-preference-h200.md)."""
    if spec.method not in FULL_WEIGHTS or masters == dtype:
        return None
    _, ref = load_model(spec, device, where, dtype, dtype, vlm)
    return ref.eval()


def load_model(spec: TrainerJob, device: str, where: str, dtype, masters, vlm: bool = False,
               zero_init: bool = False):
    """The tokenizer (a vision-language model's processor) and the model to train: pretrained (NF4 for QLoRA), or —
    benchmarks, ``init: random`` — random weights of the config's shape built in place in the training dtype
    (building in fp32 and casting would put a 2× spike into the measured peak). ``vlm``: image-text training of a
    vision-language model (AutoModelForImageTextToText and its processor). ``zero_init``: DeepSpeed ZeRO-3's config
    is live (the SFTConfig exists), so transformers builds or loads the model under zero.Init, each weight
    partitioned as it comes: no device placement here."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, AutoTokenizer, BitsAndBytesConfig

    from recipes.model import vision

    code = spec.trust_remote_code  # the user's recorded yes to the model's own code
    attn = TRANSFORMERS_ATTENTION[spec.attn_implementation]
    if spec.training_backend == "unsloth":
        return load_unsloth(spec, dtype, vlm)
    auto = AutoModelForImageTextToText if vlm else AutoModelForCausalLM
    tok = vision.load_processor(spec.model_dir) if vlm else \
        AutoTokenizer.from_pretrained(spec.model_dir, trust_remote_code=code)
    if vlm and spec.image_size and vision.max_pixels(spec.model_dir):  # the chosen resolution (dynamic towers)
        vision.set_max_pixels(tok.image_processor, spec.image_size ** 2)
    if spec.init == "random":
        from transformers import AutoConfig

        torch.manual_seed(0)
        cfg = AutoConfig.from_pretrained(spec.model_dir, trust_remote_code=code)
        previous = torch.get_default_dtype()
        torch.set_default_dtype(dtype)
        try:
            with torch.device("cpu" if zero_init else where):  # zero.Init places the partitions itself
                model = auto.from_config(cfg, attn_implementation=attn, trust_remote_code=code)
        finally:
            torch.set_default_dtype(previous)
        if not zero_init:
            model.to(masters)  # bf16 → fp32 is exact: every precision starts from the same weights
        return tok, model
    load_kw = {"dtype": masters, "attn_implementation": attn, "trust_remote_code": code}
    if spec.method == "qlora":
        load_kw["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=dtype)
    if device == "cuda" and not zero_init:
        load_kw["device_map"] = {"": LOCAL_RANK}
    pq = prequantized.read(json.loads((Path(spec.model_dir) / "config.json").read_text()))
    if pq is not None:  # a pre-quantized base: LoRA with the base kept quantized, else nothing
        if not pq.trainable or spec.method != "lora" or spec.distribution in ("zero3", "fsdp2"):
            raise RuntimeError(f"{spec.model_dir} is pre-quantized ({pq.label}, {pq.reason or 'LoRA only'}): "
                               f"method {spec.method} / {spec.distribution} cannot train on it")
        model = auto.from_pretrained(spec.model_dir, **load_kw)
        from recipes.training import packed

        model.yichui_packed = packed.keep_packed(model)  # reported in result.json
        return tok, model
    return tok, auto.from_pretrained(spec.model_dir, **load_kw)


def load_unsloth(spec: TrainerJob, dtype, vlm: bool = False):
    """The tokenizer and model through unsloth (``training_backend: unsloth``, in unsloth's environment): its
    patched model (NF4 with ``load_in_4bit`` for QLoRA), and for LoRA/QLoRA its PEFT wrapper with its own
    activation checkpointing ("unsloth": the saved layer inputs go to CPU memory) — the Trainer then leaves
    checkpointing to it; a full fine-tune too (unsloth turns it on unless told otherwise). A full fine-tune keeps
    bf16 weights (TrainingSpec.unsloth_conflict refuses fp32 masters). "all-linear": the names of the model's linear
    layers but its output head (unsloth wants names).

    Raises:
        RuntimeError: ``init: random`` (unsloth loads from a folder: benchmarks write the weights first), or
            image-text records.
    """
    from unsloth import FastLanguageModel

    if spec.init == "random":
        raise RuntimeError("training_backend unsloth loads weights from model_dir; init 'random' is not supported")
    import torch

    from recipes.model import vision

    if vlm:  # unsloth's FastVisionModel: not wired or measured
        raise RuntimeError("training_backend unsloth: image-text training is not supported on it yet")
    full = spec.method in FULL_WEIGHTS
    ckpt = "unsloth" if spec.activation_checkpointing else False  # its default is on, whatever the Trainer says
    model, tok = FastLanguageModel.from_pretrained(
        model_name=spec.model_dir, max_seq_length=spec.seq_len, dtype=dtype, load_in_4bit=spec.method == "qlora",
        full_finetuning=full, local_files_only=True, trust_remote_code=spec.trust_remote_code,
        device_map={"": LOCAL_RANK}, use_gradient_checkpointing=ckpt)
    if not full:
        targets = spec.lora_targets
        linear = sorted({n.rsplit(".", 1)[-1] for n, m in model.named_modules()  # the model's own names (Phi-3:
                         if isinstance(m, torch.nn.Linear) and not n.endswith("lm_head")  # qkv_proj, gate_up_proj)
                         and not vision.is_vision_module(n)})
        model = FastLanguageModel.get_peft_model(
            model, r=spec.lora_rank, lora_alpha=spec.lora_alpha, lora_dropout=spec.lora_dropout, bias="none",
            target_modules=linear if targets == "all-linear" else [t.strip() for t in targets.split(",")],
            use_gradient_checkpointing=ckpt, random_state=spec.seed)
    tok = getattr(tok, "tokenizer", tok)  # a processor for vision models: its text tokenizer
    return tok, model


def _checkpointing_arg() -> str:
    """The Trainer's name for activation checkpointing: transformers 5.24 calls it ``activation_checkpointing``
    (``gradient_checkpointing`` a deprecated alias), older ones — unsloth's environment may hold one — only
    ``gradient_checkpointing``."""
    import dataclasses

    from transformers import TrainingArguments

    names = {f.name for f in dataclasses.fields(TrainingArguments)}
    return "activation_checkpointing" if "activation_checkpointing" in names else "gradient_checkpointing"


def _kto_weights(records: list[dict]) -> tuple[float, float]:
    """preference.kto_weights; (1.0, 1.0) for replies of one kind only — a smoke run's few records can be
    (choose_strategy refuses a whole file of one kind)."""
    from recipes.data import preference

    try:
        return preference.kto_weights(records)
    except ValueError:
        return 1.0, 1.0


def trainer_config(spec: TrainerJob, ckpt_dir: Path, device: str, bf16: bool, has_eval: bool, images: bool = False,
                   swap: SwapShape | None = None, hidden: int = 0, kto_weights: tuple[float, float] = (1.0, 1.0),
                   run_name: str = ""):
    """trl's SFTConfig (DPOConfig, KTOConfig for those objectives) for the spec: the TrainingSpec's names mapped onto
    the Trainer's. ``images``: image-text records, never truncated (a cut through an image's tokens fails the batch:
    trl's own warning). ``swap``: the model's parameter sizes for NVMe offload, ``hidden`` its hidden size for
    DeepSpeed's buckets (:func:`distribution_args`). ``kto_weights``: KTO's (desirable, undesirable) weights, from
    the training records (recipes/data/preference.py kto_weights). ``run_name``: the run's name in the trackers."""
    from trl import DPOConfig, GRPOConfig, KTOConfig, SFTConfig

    CHECKPOINTING_ARG = _checkpointing_arg()
    method = spec.method
    # the objective's own options: SFT's packing; DPO's β (the reference: the base with the adapter switched off under
    # LoRA, a frozen copy for a full fine-tune — trl's DPOTrainer with ref_model None)
    config, own = (DPOConfig, {"beta": spec.dpo_beta} | ({"loss_type": ["sigmoid", "sft"],
                                                          "loss_weights": [1.0, spec.sft_loss_weight]}
                                                         if spec.sft_loss_weight else {})) \
        if spec.objective == "dpo" else \
        (KTOConfig, {"beta": spec.kto_beta, "desirable_weight": kto_weights[0], "undesirable_weight": kto_weights[1]}) \
        if spec.objective == "kto" else \
        (GRPOConfig, {"num_generations": spec.num_generations, "max_completion_length": spec.completion_length,
                      "beta": spec.grpo_beta, "log_completions": False,
                      # no dropout, as DPO and KTO: the replies' log-probabilities must be the same policy's
                      # when they are generated and when they are trained on (the memory model prices it so)
                      "disable_dropout": True} | vllm_args(spec, device)) \
        if spec.objective == "grpo" else \
        (SFTConfig, {"packing": spec.packing, "packing_strategy": "bfd"})
    # GRPO's sequences are a prompt and a generated reply: no max_length (the completion length bounds the reply)
    length = {} if spec.objective == "grpo" else {"max_length": None if images else spec.seq_len}
    return config(**own,
        output_dir=str(ckpt_dir), max_steps=spec.max_steps or -1, num_train_epochs=spec.epochs or 1.0,
        per_device_train_batch_size=spec.micro_batch, gradient_accumulation_steps=spec.grad_accum,
        learning_rate=spec.learning_rate, lr_scheduler_type=spec.lr_scheduler,
        warmup_steps=spec.warmup_steps, logging_steps=spec.logging_steps,
        save_strategy="steps" if spec.save_steps else "no", save_steps=spec.save_steps or 500,
        save_total_limit=spec.save_total_limit,
        **{CHECKPOINTING_ARG: spec.activation_checkpointing and spec.distribution != "fsdp2"
           and not (spec.training_backend == "unsloth" and method not in FULL_WEIGHTS)},
        **length,
        use_cpu=device == "cpu", bf16=bf16, seed=spec.seed, data_seed=spec.seed,
        ddp_backend=("gloo" if device == "cpu" else "nccl") if WORLD > 1 else None,
        optim="galore_adamw" if method == "galore" else OPTIMIZERS[spec.optim],
        optim_target_modules="all-linear" if method == "galore" else None,
        optim_args=f"rank={spec.galore_rank},update_proj_gap=200,scale=0.25" if method == "galore" else None,
        report_to=["tensorboard", *dict.fromkeys(spec.trackers)], disable_tqdm=True,  # each once
        run_name=run_name or None,  # the trackers' run (recipes/training/trackers.py)
        dataloader_num_workers=0,
        eval_strategy="steps" if has_eval else "no", eval_steps=spec.save_steps or 500,
        use_liger_kernel=spec.liger, **distribution_args(spec, swap, hidden), **sequence_parallel_args(spec, device),
        # a vision side that trains gets no gradient in a micro-batch of text records only, and LLaVA's last CLIP
        # layer (vision_feature_layer -2) never does: DDP must look for unused parameters
        **({"ddp_find_unused_parameters": True}
           if images and WORLD > 1 and not (spec.freeze_vision_tower and spec.freeze_projector) else {}),
        # unsloth's trainer logs no num_tokens (trl's): the Trainer counts the tokens instead (the events' tokens/s)
        **({"include_num_input_tokens_seen": "non_padding"} if spec.training_backend == "unsloth" else {}))


def vllm_args(spec: TrainerJob, device: str) -> dict:
    """GRPOConfig's options for replies generated by vLLM colocated in this process (``spec.generation == "vllm"``;
    trl 1.16's vllm_mode "colocate"): its share of the GPU's memory, as choose_strategy sized it (recipes/memory/model.py
    vllm_generation) or the user gave it, and its longest sequence, the spec's sequence length (prompt + reply). {} for
    transformers' generate.

    Raises:
        RuntimeError: vLLM asked for without a CUDA GPU (choose_strategy offers it only with one), or without a
            share (0: never sized)."""
    if spec.objective != "grpo" or spec.generation != "vllm":
        return {}
    if device != "cuda":
        raise RuntimeError("vLLM generates GRPO's replies on a CUDA GPU only; this trainer runs on " + device
                           + ": set generation to transformers")
    if not spec.vllm_memory_utilization:  # choose_strategy records the memory model's share (0 asks for it)
        raise RuntimeError("vllm_memory_utilization is 0: the strategy step sizes vLLM's share of the GPU; "
                           "give one (0.05-0.95)")
    return {"use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": spec.vllm_memory_utilization,
            "vllm_max_model_length": spec.seq_len,
            # trl decodes the reply ids itself; vLLM's own decoding would only cost time (and fails on ids past
            # the tokenizer's vocabulary, which a model with a padded vocabulary may sample)
            "generation_kwargs": {"detokenize": False}}


def backend_name(spec: TrainerJob) -> str:
    """The training backend that runs, with its version where it is not yichui's own: "transformers",
    "unsloth 2026.10.9"."""
    if spec.training_backend != "unsloth":
        return "transformers"
    import unsloth

    return f"unsloth {unsloth.__version__}"


# transformers' integrations of the trackers beside TensorBoard (recipes/training/trackers.py)
TRACKER_CALLBACKS = ("WandbCallback", "MLflowCallback", "SwanLabCallback")


def events_callback(ev: Events, device: str, method: str, resumed_from: str | None, stop_signal: list[int],
                    backend: str = "transformers", objective: str = "sft"):
    """The Trainer callback writing the events stream (start, step, eval, checkpoint); a stop signal seen makes the
    step that ends now save a checkpoint and stop. Its ``trainer`` is set once the Trainer exists."""
    from transformers import TrainerCallback

    class EventsCallback(TrainerCallback):
        trainer: Any = None  # set once the Trainer exists

        def __init__(self):
            self.t_last, self.tokens_last = time.time(), None

        def on_train_begin(self, args, state, control, **kw):
            t = self.trainer
            ev.emit("start", total_steps=state.max_steps, resumed_from=resumed_from, device=device, method=method,
                    objective=objective,
                    processes=WORLD, sharding=sharding(t), training_backend=backend,
                    optimizer=_qualname(getattr(t.optimizer, "optimizer", t.optimizer)))

        def on_log(self, args, state, control, logs=None, **kw):
            logs = logs or {}
            if "loss" not in logs:
                return
            # trl's count of the batches' tokens; unsloth's patched trainer logs none: the Trainer's own count then
            now, tokens = time.time(), logs.get("num_tokens", logs.get("num_input_tokens_seen"))
            tps = None
            if tokens is not None and self.tokens_last is not None and now > self.t_last:
                tps = round((float(tokens) - self.tokens_last) / (now - self.t_last), 1)
            self.t_last, self.tokens_last = now, float(tokens) if tokens is not None else None
            mem, mem_kind = peak_memory_gib(device)
            scalars = {f"memory/{name}": value for name, value in memory_scalars(device).items()}
            for cb in self.trainer.callback_handler.callbacks:  # transformers' TensorBoardCallback, once it has begun
                writer = getattr(cb, "tb_writer", None)
                if writer is not None:
                    for name, value in scalars.items():
                        writer.add_scalar(name, value, state.global_step)
                elif type(cb).__name__ in TRACKER_CALLBACKS:  # the other trackers: through their own on_log
                    cb.on_log(args, state, control, logs=dict(scalars))
            ev.emit("step", step=state.global_step, total_steps=state.max_steps, epoch=round(state.epoch or 0, 4),
                    loss=round(float(logs["loss"]), 5), lr=float(logs.get("learning_rate", 0)),
                    grad_norm=float(logs["grad_norm"]) if logs.get("grad_norm") is not None else None,
                    tokens_per_s=tps, mem_gib=mem, mem_kind=mem_kind,
                    # DPO, KTO (trl's names without "rewards/"): how often and by how much the policy prefers the
                    # chosen (desirable); KTO's KL estimate
                    **{k.replace("rewards/", "reward_"): round(float(v), 5) for k, v in logs.items()
                       if k in ("rewards/accuracies", "rewards/margins", "kl")},
                    # GRPO: the mean summed reward and each function's, the replies' mean length and the share cut
                    # at the completion length (trl's names: reward, rewards/<function>/mean, completions/…)
                    **grpo_scalars(logs))

        def on_step_end(self, args, state, control, **kw):
            ev.last_step = state.global_step
            if stop_signal:  # asked to stop (yichui stop, a closing terminal): lose no step
                control.should_save = True
                control.should_training_stop = True

        def on_evaluate(self, args, state, control, metrics=None, **kw):
            if metrics and "eval_loss" in metrics:
                ev.emit("eval", step=state.global_step, eval_loss=round(float(metrics["eval_loss"]), 5),
                        **{k.replace("eval_rewards/", "reward_").replace("eval_kl", "kl"): round(float(v), 5)
                           for k, v in metrics.items()
                           if k in ("eval_rewards/accuracies", "eval_rewards/margins", "eval_kl")})

        def on_save(self, args, state, control, **kw):
            ev.emit("checkpoint", step=state.global_step, path=f"checkpoints/checkpoint-{state.global_step}")

    return EventsCallback()


def grpo_scalars(logs: dict) -> dict:
    """GRPO's logged figures under the events' names: ``reward`` (mean summed reward), ``reward_std``,
    ``reward_<function>`` (each function's mean), ``completion_length`` (mean tokens) and ``clipped`` (share of replies
    cut at the completion length)."""
    out = {}
    for k, v in logs.items():
        name = {"reward": "reward", "reward_std": "reward_std", "completions/mean_length": "completion_length",
                "completions/clipped_ratio": "clipped"}.get(k)
        if name is None and k.startswith("rewards/") and k.endswith("/mean"):
            name = "reward_" + k[len("rewards/"):-len("/mean")]
        if name is not None and isinstance(v, (int, float)) and math.isfinite(v):
            out[name] = round(float(v), 5)
    return out


LOOP_FILE = "yichui_loop.json"  # in each checkpoint: the training loop's seconds up to it, over every segment


def loop_seconds(checkpoint: str | None) -> float:
    """Seconds the training loop ran before ``checkpoint`` was written, summed over the segments a resume joined
    (its LOOP_FILE); 0.0 without one."""
    try:
        return float(json.loads((Path(str(checkpoint)) / LOOP_FILE).read_text())["seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0


def loop_clock(before: float, t0: float):
    """The callback writing LOOP_FILE into each checkpoint: ``before`` (earlier segments) + this segment's time
    since ``t0``, so "training loop N s" counts the whole run after a resume, not only its last part."""
    from transformers import TrainerCallback

    class LoopClock(TrainerCallback):
        def on_save(self, args, state, control, **kw):
            if RANK == 0:
                path = Path(args.output_dir) / f"checkpoint-{state.global_step}" / LOOP_FILE
                if path.parent.is_dir():
                    path.write_text(json.dumps({"seconds": round(before + time.time() - t0, 2)}))

    return LoopClock()


def injected_oom(at: int, over: int, micro_batch: int):
    """Test hook (CI has no GPU): ``YICHUI_INJECT_OOM="STEP:MICRO_BATCH"`` raises the CUDA out-of-memory error at
    optimizer step STEP while the micro-batch is larger than MICRO_BATCH."""
    import torch
    from transformers import TrainerCallback

    class InjectedOOM(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if state.global_step == at and micro_batch > over:
                raise torch.OutOfMemoryError("CUDA out of memory (injected by YICHUI_INJECT_OOM)")

    return InjectedOOM()


def model_sizes(spec: TrainerJob, vlm: bool) -> dict:
    """:func:`trainer_config`'s ``swap`` and ``hidden`` from the config alone (the model on the meta device), for a
    config that must exist before the model loads (ZeRO-3's zero.Init)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText

    cfg = AutoConfig.from_pretrained(spec.model_dir, trust_remote_code=spec.trust_remote_code)
    with torch.device("meta"):
        meta = (AutoModelForImageTextToText if vlm else AutoModelForCausalLM).from_config(
            cfg, trust_remote_code=spec.trust_remote_code)
    return {"swap": SwapShape.of([(n, p.numel()) for n, p in meta.named_parameters()]),
            "hidden": int(cfg.get_text_config().hidden_size)}


def _write_json(path: Path, data: dict) -> None:
    """``data`` to ``path`` whole or not at all (a temp file beside it, then os.replace): the other ranks read
    samples.json at their start while rank 0 writes it (seen in CI: a ZeRO run's rank read it empty,
    JSONDecodeError)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False, indent=2))
    os.replace(tmp, path)


def before_sample_callback(ev: Events, tok, question: str, samples_file: Path):
    """The sample question answered before training by a model that zero.Init partitioned: at train begin, inside
    DeepSpeed's engine (its hooks gather each layer), every rank generating; rank 0 records it."""
    from transformers import TrainerCallback

    class BeforeSample(TrainerCallback):
        def on_train_begin(self, args, state, control, model=None, **kw):
            text = answer(model, tok, question)
            model.train()
            if RANK == 0:
                _write_json(samples_file, {"question": question, "image": None, "before": text})
                ev.emit("sample", phase="before", question=question, answer=text)

    return BeforeSample()


def train(spec: TrainerJob, tdir: Path, ev: Events) -> int:
    """Train ``spec`` in ``tdir`` (checkpoints/, adapter/, samples.json, result.json), resuming from the latest
    checkpoint there. Returns the exit status: 0 done, 128 + N stopped by signal N (a checkpoint was written)."""
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers.trainer_utils import get_last_checkpoint
    from trl import SFTTrainer

    from recipes.data import datasets as data
    from recipes.model import vision

    device, where, bf16, dtype, masters = _precision(spec)
    method = spec.method
    ckpt_dir = TrainDir(tdir).checkpoints
    os.environ["TENSORBOARD_LOGGING_DIR"] = str(TrainDir(tdir).tensorboard)  # transformers' TensorBoardCallback reads it
    run_name = tdir.resolve().parent.name  # the session's run id (runs/<id>/train)
    if spec.trackers:  # each tracker's integration reads its store and mode from the environment
        from recipes.training import trackers

        TrainDir(tdir).trackers.mkdir(exist_ok=True)  # swanlab wants its settings folder's parent to exist
        os.environ.update(trackers.environment(spec.trackers, TrainDir(tdir).trackers, run_name))
    last = get_last_checkpoint(str(ckpt_dir)) if ckpt_dir.is_dir() else None
    if device == "cuda":
        torch.cuda.init()
    preferring = spec.objective in PREFERENCE_OBJECTIVES
    grpo = spec.objective == "grpo"
    from recipes.data import preference

    if preferring:  # pairs {"prompt", "chosen", "rejected"} or KTO's {"prompt", "completion", "label"} as messages
        pairs = preference.load(spec.dataset_path, skip_bad=spec.skip_bad_records).records
        convs = preference.chosen_conversations(pairs)  # the sample question's image, the vision checks: none
    elif grpo:  # prompts {"prompt": messages, "answer": reference or None}: the model writes the replies
        from recipes.data import prompts as prompt_data

        pairs = prompt_data.load(spec.dataset_path, skip_bad=spec.skip_bad_records).records
        convs = prompt_data.as_conversations(pairs)
    else:
        convs = data.load_records(spec.dataset_path, skip_bad=spec.skip_bad_records, images=True)
    images = any(data.has_images(c) for c in convs)
    if images and not vision.is_vision_model(spec.model_dir):
        raise RuntimeError(f"{spec.dataset_path} has image records and {spec.model_dir} is not a vision-language model")
    # the image-text path with images, or for a model transformers builds no causal LM of (Qwen2-VL, LLaVA); text
    # data on Gemma-3, Llama-4, … (a vision part in the config) trains as before: AutoModelForCausalLM, the tokenizer
    vlm = images or (vision.is_vision_model(spec.model_dir) and not vision.has_causal_lm(spec.model_dir))
    split: list = pairs if preferring or grpo else convs
    train_convs, val_convs = data.train_validation(split, spec.val_ratio)  # a pair stays on one side (KTO too)
    if grpo:  # held-out prompts are the evaluate step's (trl's GRPO eval would generate num_generations each)
        val_convs = []
    kto_weights = _kto_weights(preference.unpaired(train_convs)) if spec.objective == "kto" else (1.0, 1.0)
    # ZeRO-3: the SFTConfig (and with it DeepSpeed's config, which transformers reads at load) comes first, so
    # zero.Init partitions every weight as it loads — no GPU ever holds the whole model (modelled as such:
    # recipes/memory/sharding.py)
    zero_init = spec.distribution == "zero3"
    args = None
    if zero_init:
        args = trainer_config(spec, ckpt_dir, device, bf16, bool(val_convs), images=vlm, kto_weights=kto_weights,
                              run_name=run_name, **model_sizes(spec, vlm))
        _ = args.device  # accelerate's process group, which zero.Init reads the world size from
        import deepspeed

        deepspeed.init_distributed(dist_backend="gloo" if device == "cpu" else "nccl")
    tok, model = load_model(spec, device, where, dtype, masters, vlm, zero_init)

    samples_file = TrainDir(tdir).samples
    samples = json.loads(samples_file.read_text()) if samples_file.exists() else {}
    # a model partitioned by zero.Init answers only inside DeepSpeed's engine, all ranks together: at train begin
    question = spec.sample_question
    ask_before = question is not None and "before" not in samples
    if RANK == 0 and question is not None and ask_before and not zero_init:
        kbit_cpu = method == "qlora" and device == "cpu"
        image = sample_image(convs) if vlm else None  # the question asked of the data's first image
        samples = {"question": question, "image": image,
                   "before": answer(model, tok, question, keep_train_mode=kbit_cpu,
                                    unsloth=spec.training_backend == "unsloth", image=image)}
        _write_json(samples_file, samples)
        ev.emit("sample", phase="before", question=samples["question"], answer=samples["before"])

    if vlm and spec.freeze_vision_tower:  # no activations kept nor backward run for a tower that does not learn
        vision.tower_out_of_backward(model)
    as_dataset = vision.image_dataset if vlm else Dataset.from_list  # image-text records: the Image feature
    records = (lambda rs: rs) if spec.objective in ("dpo", "grpo") else preference.unpaired \
        if spec.objective == "kto" else data.to_prompt_completion  # noqa: E731
    train_ds = as_dataset(records(train_convs))
    eval_ds = as_dataset(records(val_convs)) if val_convs else None
    peft_config = None
    if method not in FULL_WEIGHTS and spec.training_backend != "unsloth":  # unsloth wrapped it at load_unsloth
        targets = spec.lora_targets
        peft_config = LoraConfig(r=spec.lora_rank, lora_alpha=spec.lora_alpha, lora_dropout=spec.lora_dropout,
                                 target_modules=vision.language_targets(model, targets,
                                                                        tower=not spec.freeze_vision_tower) if vlm else
                                 targets if targets == "all-linear" else [t.strip() for t in targets.split(",")],
                                 # a projector that trains: whole, saved with the adapter, merged by the export
                                 modules_to_save=vision.projector_modules(model)
                                 if vlm and not spec.freeze_projector else None,
                                 task_type="CAUSAL_LM", use_dora=method == "dora")
    elif vlm and method in FULL_WEIGHTS:
        # the language model trains; the vision tower and projector keep their weights unless chosen to train
        vision.freeze_vision(model, tower=spec.freeze_vision_tower, projector=spec.freeze_projector)
    if args is None:
        args = trainer_config(spec, ckpt_dir, device, bf16, eval_ds is not None, images=vlm, kto_weights=kto_weights,
                              run_name=run_name,
                          swap=SwapShape.of([(n, p.numel()) for n, p in model.named_parameters()]),
                          hidden=int(model.config.get_text_config().hidden_size))

    stop_signal: list[int] = []  # SIGTERM / SIGHUP seen: checkpoint at the end of this step, then stop

    def _graceful(signum, frame):
        stop_signal.append(signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _graceful)

    events = events_callback(ev, device, method, Path(last).name if last else None, stop_signal, backend_name(spec),
                             spec.objective)
    callbacks = [events]
    inject = os.environ.get("YICHUI_INJECT_OOM")
    if inject:
        at, over = (int(x) for x in inject.split(":"))
        callbacks.append(injected_oom(at, over, spec.micro_batch))
    if spec.profile_steps and RANK == 0:
        callbacks.append(profile_callback(tdir, *spec.profile_steps))
    if zero_init and question is not None and ask_before:
        callbacks.append(before_sample_callback(ev, tok, question, samples_file))
    from trl import DPOTrainer, GRPOTrainer, KTOTrainer

    user_rewards = None
    if grpo:  # the reference, when β > 0, is trl's own (the base with the adapter off under LoRA)
        from recipes.training import rewards

        reward_funcs, user_rewards = rewards.functions(spec.rewards, spec.reward_file, eos_ids(tok, model),
                                                       spec.completion_length)
        trainer_class, own = GRPOTrainer, {"reward_funcs": reward_funcs}
    else:
        trainer_class, own = ({"dpo": DPOTrainer, "kto": KTOTrainer}[spec.objective],
                              {"ref_model": reference_model(spec, device, where, dtype, masters, vlm)}) \
            if preferring else (SFTTrainer, {})
    try:
        trainer = trainer_class(model=model, args=args, train_dataset=train_ds, eval_dataset=eval_ds,
                                processing_class=tok, peft_config=peft_config, callbacks=callbacks, **own)
        return _run(spec, tdir, ev, trainer, tok, events, last, samples, device, stop_signal)
    finally:
        if user_rewards is not None:
            user_rewards.close()


def eos_ids(tok, model) -> set[int]:
    """The token ids that end a reply: the tokenizer's end of sequence and the generation config's (a chat model's
    end-of-turn among them)."""
    ids = {tok.eos_token_id} if tok.eos_token_id is not None else set()
    gen = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids |= set(gen) if isinstance(gen, (list, tuple)) else {gen} if gen is not None else set()
    return {int(i) for i in ids}


def _run(spec: TrainerJob, tdir: Path, ev: Events, trainer, tok, events, last: str | None, samples: dict,
         device: str, stop_signal: list[int]) -> int:
    """Train with the built ``trainer`` (resuming from ``last``), then stop on a signal or finish."""
    import torch
    from peft.helpers import disable_input_dtype_casting

    bf16 = _precision(spec)[2]
    if spec.compile_layers:
        compile_decoder_layers(trainer.model)
    events.trainer = trainer
    asked, got = spec.distribution, sharding(trainer)
    if WORLD > 1 and expected_sharding(asked) != got:
        raise RuntimeError(f"asked for {asked}, the Trainer runs {got} (FSDP runs on GPUs only)")
    t0, before = time.time(), loop_seconds(last)
    trainer.add_callback(loop_clock(before, t0))
    if spec.memory_snapshot and device == "cuda":  # benchmarks: what is allocated when, with its Python stack
        (tdir / "memory_snapshot_start.json").write_text(json.dumps({"allocated": torch.cuda.memory_allocated(),
                                                                     "reserved": torch.cuda.memory_reserved()}))
        # clear_history: a benchmark runs several rows in one process; each row's history starts with it
        torch.cuda.memory._record_memory_history(max_entries=2_000_000, stacks="python", clear_history=True)
    with disable_input_dtype_casting(trainer.model, active=skips_adapter_input_cast(spec, bf16)):
        out = trainer.train(resume_from_checkpoint=last)
    if spec.memory_snapshot and device == "cuda" and RANK == 0:
        torch.cuda.memory._dump_snapshot(str(tdir / "memory_snapshot.pickle"))
        torch.cuda.memory._record_memory_history(enabled=None)
    runtime = before + time.time() - t0
    if stop_signal:
        if RANK == 0:
            ev.emit("stopped", step=trainer.state.global_step, signal=signal.Signals(stop_signal[0]).name,
                    checkpoint=f"checkpoints/checkpoint-{trainer.state.global_step}")
        _leave_process_group()
        return 128 + stop_signal[0]
    return _finish(spec, tdir, ev, trainer, tok, out, runtime, samples, last, got, device)


def _finish(spec: TrainerJob, tdir: Path, ev: Events, trainer, tok, out, runtime: float, samples: dict,
            last: str | None, got: str, device: str) -> int:
    """Save the adapter (or model), answer the sample question again, write result.json last, atomically."""
    gpu_memory = cuda_memory() if device == "cuda" else None
    adapter = TrainDir(tdir).adapter
    if spec.save_final:
        trainer.save_model(str(adapter))  # collective under several processes; rank 0 writes
        if RANK == 0:
            tok.save_pretrained(str(adapter))
            from recipes.model.vision import MODEL_CLASS_FILE

            (adapter / MODEL_CLASS_FILE).write_text(json.dumps({"image_text": hasattr(tok, "image_processor")}))
    # with sharded weights (ZeRO-3, FSDP2) every forward pass is collective: all ranks generate, rank 0 records
    after = answer(trainer.model, tok, spec.sample_question, unsloth=spec.training_backend == "unsloth",
                   image=samples.get("image")) \
        if spec.sample_question and (RANK == 0 or got in ("deepspeed-zero3", "fsdp2")) else None
    try:
        if RANK != 0:
            return 0
        samples_file = TrainDir(tdir).samples
        if after is not None:
            # the "before" answer may have been written during training (before_sample_callback)
            samples = json.loads(samples_file.read_text()) if samples_file.exists() else samples
            samples.setdefault("question", spec.sample_question)
            samples["after"] = after
            _write_json(samples_file, samples)
            ev.emit("sample", phase="after", question=samples["question"], answer=after)
        losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
        eval_losses = [[h["step"], round(h["eval_loss"], 5)] for h in trainer.state.log_history if "eval_loss" in h]
        mem, mem_kind = peak_memory_gib(device)
        result = {"adapter_dir": str(adapter), "method": spec.method, "device": device,
                  "steps": trainer.state.global_step,
                  # the mean of every logged step, all segments: the Trainer's own figure after a resume divides
                  # only this segment's losses by all the steps
                  "train_loss": round(sum(losses) / len(losses) if losses else out.training_loss, 5),
                  "losses": [round(x, 5) for x in losses],
                  "first5_mean": round(sum(losses[:5]) / max(1, len(losses[:5])), 5),
                  "last5_mean": round(sum(losses[-5:]) / max(1, len(losses[-5:])), 5),
                  "resumed_from": Path(last).name if last else None, "runtime_s": round(runtime, 2),
                  "peak_mem_gib": mem, "mem_kind": mem_kind, "gpu_memory": gpu_memory, "samples": samples,
                  "eval_losses": eval_losses, "processes": WORLD, "training_backend": backend_name(spec),
                  # a pre-quantized base kept quantized: its layers, their bytes held, their bytes in bf16
                  "packed_base": getattr(_base_model(trainer.model), "yichui_packed", None)}
        if spec.objective == "grpo":  # the mean summed reward of each logged step's replies
            result["rewards"] = [round(h["reward"], 5) for h in trainer.state.log_history
                                 if isinstance(h.get("reward"), (int, float)) and math.isfinite(h["reward"])]
        tmp = tdir / "result.json.tmp"
        tmp.write_text(json.dumps(result, ensure_ascii=False, indent=2))
        os.replace(tmp, TrainDir(tdir).result)
        ev.emit("done", step=trainer.state.global_step, adapter="adapter", train_loss=result["train_loss"])
        return 0
    finally:
        _leave_process_group()


def _base_model(model):
    """The transformers model under PEFT's wrappers (PeftModel → LoraModel → the model)."""
    get = getattr(model, "get_base_model", None)
    return get() if callable(get) else model


def skips_adapter_input_cast(spec: TrainerJob, bf16: bool) -> bool:
    """Whether training runs with peft's input cast switched off (peft.helpers.disable_input_dtype_casting).

    Under bf16 autocast (the Trainer's mixed precision) peft's LoRA forward copies the input activation to the fp32
    adapter dtype (``LoraLayer._cast_input_dtype``), and autocast copies it straight back to bf16 for ``lora_A``'s
    matmul: two copies of a (tokens × in_features) activation per adapted layer, forward and recomputation, plus
    their gradients — ~2,900 copy kernels per step for Qwen2.5-7B's 196 adapted layers
    (bench/results/profiles/2026-11-29-yichui-7b-lora-ckpt-mb1.txt). Without the cast the matmuls see the same bf16
    operands (autocast casts the small fp32 adapter weights instead): the same result at dropout 0; with dropout its
    mask is drawn on the bf16 activation. The fp32 adapter weights, gradients and AdamW states are untouched. LoRA
    only (DoRA's variant keeps it); ``adapter_input_cast`` (benchmarks) keeps it too. Only around training: the
    sample answers run outside autocast and need the cast — and so does GRPO, which generates its replies inside
    training, outside autocast (bf16 input into an fp32 lora_A: a dtype error on the H100)."""
    return bf16 and spec.method == "lora" and not spec.adapter_input_cast and spec.training_backend == "transformers" \
        and spec.objective != "grpo"


def compile_decoder_layers(model) -> int:
    """torch.compile each decoder layer in place (``nn.Module.compile``; in training the layers share one compiled
    graph because torch inlines module attributes as inputs), fusing the elementwise work between the matmuls —
    norms, rotary, SwiGLU, the adapters' scaling and adds — into fewer kernels. transformers' gradient checkpointing
    (GradientCheckpointingLayer wraps the layer's forward) is traced into the compiled region. Returns the layers
    compiled.

    ``YICHUI_COMPILE_DYNAMIC=1`` (bench/compile_shapes.py only): compiled for symbolic shapes from the first step
    (``dynamic=True``) instead of torch's default, which compiles for the first shape and again, dynamic, at the
    next one.

    Raises:
        RuntimeError: the model has no ``…DecoderLayer`` modules (GPT-2-style blocks): nothing would be compiled.
    """
    import torch

    dynamic = True if os.environ.get("YICHUI_COMPILE_DYNAMIC") == "1" else None
    layers = [m for m in model.modules() if type(m).__name__.endswith("DecoderLayer")]
    if not layers:
        raise RuntimeError(f"compile_layers: {type(model).__name__} has no decoder layer named …DecoderLayer")
    # a graph per input shape the data brings (padded lengths) and per training/eval mode, per layer at worst
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 2 * len(layers) + 8)
    for m in layers:
        m.compile(dynamic=dynamic)
    return len(layers)


def profile_callback(tdir: Path, first: int, last: int):
    """Where a step's time goes (benchmarks: ``"profile_steps": [first, last]`` in the spec): torch.profiler over
    optimizer steps first..last (1-based), written to ``profile.txt`` (operators by device time) and
    ``profile.json`` (wall seconds, summed device-kernel seconds, number of steps)."""
    import torch
    from transformers import TrainerCallback

    class _Profile(TrainerCallback):
        prof, t0 = None, 0.0

        def on_step_begin(self, args, state, control, **kw):
            if state.global_step + 1 == first:
                acts = [torch.profiler.ProfilerActivity.CPU] + \
                    ([torch.profiler.ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
                self.prof = torch.profiler.profile(activities=acts)
                self.prof.__enter__()
                self.t0 = time.time()

        def on_step_end(self, args, state, control, **kw):
            if self.prof is None or state.global_step != last:
                return
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            wall = time.time() - self.t0
            self.prof.__exit__(None, None, None)
            avg = self.prof.key_averages()
            cuda = torch.autograd.DeviceType.CUDA
            kernel_us = sum(e.self_device_time_total for e in avg if e.device_type == cuda)
            by_ops_us = sum(e.self_device_time_total for e in avg if e.device_type != cuda)  # the same, via CPU ops
            (tdir / "profile.txt").write_text(avg.table(sort_by="self_device_time_total" if kernel_us else
                                                        "self_cpu_time_total", row_limit=40))
            (tdir / "profile.json").write_text(json.dumps({"steps": last - first + 1, "wall_s": round(wall, 4),
                                                           "device_kernel_s": round(kernel_us / 1e6, 4),
                                                           "device_by_ops_s": round(by_ops_us / 1e6, 4)}))
            self.prof = None

    return _Profile()


def _leave_process_group() -> None:
    """Every rank waits for rank 0's final writes, then leaves the process group: a rank that exits while gloo's
    threads still run aborts ("terminate called without an active exception")."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def _exit_now(code: int) -> None:
    """Leave without the interpreter's teardown when several processes trained: objects still holding the process
    group (the DDP wrapper, the Trainer) are destroyed there in any order, and gloo's threads can abort the process
    with SIGABRT after a finished run (seen on the second node of a two-node CPU run, intermittently). Everything
    the run leaves is written by then (result.json, events, checkpoints); the streams are flushed first."""
    import ctypes
    import logging

    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    try:  # C stdio buffers too (NCCL, bitsandbytes print there); os._exit skips them
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass
    os._exit(code)


WARM_WAIT_S = 900  # the longest a preloaded trainer waits for its spec (a VLM copy's build takes ~1 min)


def _preload() -> None:
    """Import what :func:`train` imports first (torch, datasets, peft, transformers' Trainer, trl) and set up CUDA
    where there is a GPU: 18–25 s of a trainer's start on an H100 machine, 6–8 s on a 2-core CPU
    (bench/results/2026-12-07-preflight-warm-h100.md, 2026-12-06-preflight-warm-cpu.md)."""
    import torch
    from datasets import Dataset  # noqa: F401
    from peft import LoraConfig  # noqa: F401
    from transformers import AutoModelForCausalLM  # noqa: F401  (how the model is loaded)
    from transformers.trainer_utils import get_last_checkpoint  # noqa: F401
    from trl import SFTTrainer  # noqa: F401

    if torch.cuda.is_available():  # its environment (visible devices, allocator settings) was set at spawn
        torch.cuda.init()


def wait_for_spec(spec_path: str, parent: int, limit_s: float = WARM_WAIT_S) -> bool:
    """Preload the libraries, then wait until ``spec_path`` exists (written whole, TrainerJob.write). Returns False
    without training when ``parent`` (the wizard's pid, given by it) is no longer this process's parent — a wizard
    killed while it built the copy, even before this process started (issue 48 trial P: read at start, the
    parent was already init) — or after ``limit_s`` seconds: nothing is left running for a spec that never comes."""
    t0 = time.monotonic()
    _preload()
    from recipes.rundir import LIBRARIES_LOADED

    print(f"{LIBRARIES_LOADED} in {time.monotonic() - t0:.1f} s; waiting for {spec_path}", flush=True)
    while not Path(spec_path).exists():
        if os.getppid() != parent or time.monotonic() - t0 > limit_s:
            print("yichui: no spec came (the wizard stopped); exiting", flush=True)
            return False
        time.sleep(0.05)
    return True


if __name__ == "__main__":
    if "--wait-for-spec" in sys.argv[2:] and not wait_for_spec(sys.argv[1], int(sys.argv[3])):
        sys.exit(0)
    rc = main(sys.argv[1])
    if WORLD > 1:
        _exit_now(rc)
    sys.exit(rc)
