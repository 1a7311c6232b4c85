"""One fine-tune, named as the field names it: the single home of its knobs and their defaults.

``choose_strategy`` produces a :class:`TrainingSpec` from its answers (the answer keys are the field names), the
memory model and the planner read one (recipes/memory/model.py, recipes/memory/planner.py), the trainer's ``spec.json`` is one
plus the run's own facts (model folder, data, device; recipes/train.py), and ``yichui estimate``'s training options
are generated from the fields that carry a ``flag`` (wizard/cli/tools.py). A default lives here and nowhere else.
"""
from __future__ import annotations

import dataclasses
import json
import re
import typing
from dataclasses import dataclass, field
from typing import Any

from recipes.base import Msg, Refusal

S = typing.TypeVar("S", bound="TrainingSpec")
METHODS = ("full", "lora", "qlora", "dora", "galore")
FULL_WEIGHTS = ("full", "galore")  # methods that train (and hold gradients for) every weight
OPTIMIZERS = ("adamw", "adamw8bit", "paged")
ATTENTION = ("sdpa", "flash", "eager")
# yichui's attention names → transformers' attn_implementation
TRANSFORMERS_ATTENTION = {"sdpa": "sdpa", "flash": "flash_attention_2", "eager": "eager"}
LOSSES = ("fused", "chunked", "full")
SHARDINGS = ("ddp", "zero1", "zero2", "zero3", "fsdp2")  # what the trainer runs (and the memory model knows)
DISTRIBUTIONS = (*SHARDINGS, "megatron")  # what choose_strategy offers: Megatron is refused there with the reason
DISTRIBUTION_LABEL = {"ddp": "DDP", "zero1": "ZeRO-1", "zero2": "ZeRO-2", "zero3": "ZeRO-3", "fsdp2": "FSDP2"}
OFFLOADS = ("none", "optimizer", "all")
OFFLOAD_DEVICES = ("cpu", "nvme")  # where offloaded states go: CPU memory, or files on a fast disk (ZeRO-3 only)
MASTER_WEIGHTS = ("fp32", "bf16")
# who runs the training step: yichui's trainer on transformers + peft, or unsloth's patched models and kernels in
# unsloth's own environment (recipes/training/backends.py), with the same Trainer loop, events and checkpoints
TRAINING_BACKENDS = ("transformers", "unsloth")
UNSLOTH_METHODS = ("lora", "qlora", "full")  # what unsloth trains and bench/results measured
# what the training optimizes: supervised fine-tuning on replies, Direct Preference Optimization on pairs of a
# preferred and a rejected reply (trl's DPOTrainer), or Kahneman-Tversky Optimization on replies each labelled
# desirable or not (trl's KTOTrainer; pairs are split into one of each) — recipes/data/preference.py —, or Group
# Relative Policy Optimization on prompts whose replies the model generates and reward functions score (trl's
# GRPOTrainer; recipes/data/prompts.py, recipes/training/rewards.py)
OBJECTIVES = ("sft", "dpo", "kto", "grpo")
PREFERENCE_OBJECTIVES = ("dpo", "kto")  # against a reference model, on preference data
# GRPO's reward functions (recipes/training/rewards.py): the reference answer's final number matched, the final
# answer marked ("#### N" or \\boxed{N}), the reply ended before the completion length, and the user's own Python file
REWARDS = ("accuracy", "format", "stops", "file")
# who generates GRPO's replies between optimizer steps: the trained model through transformers' generate, or vLLM
# colocated in the trainer's process on the same GPU (trl's use_vllm, vllm_mode "colocate": the weights pushed to it
# before each generation), in an environment of its own (recipes/training/backends.py)
GENERATIONS = ("transformers", "vllm")
# LoRA targets: peft's "all-linear", or module names separated by commas (",,," names none)
TARGETS = re.compile(r"all-linear|[A-Za-z_][\w.]*(,[A-Za-z_][\w.]*)*")


def least_micro_batch(objective: str) -> int:
    """The smallest micro-batch ``objective`` trains with: trl's KTOTrainer estimates KTO's KL term from the other
    replies of the micro-batch and refuses 1 (trl 1.16 kto_trainer.py); every other objective 1."""
    return 2 if objective == "kto" else 1


def _knob(default: Any, flag: str | None, *old: str, help: str = "", lo: float | None = None,
          hi: float | None = None, choices: tuple = ()) -> Any:
    """A field; with a ``flag`` also a ``yichui estimate`` option (the field's own name there), ``old`` the spellings
    kept working (hidden from --help), ``help`` its catalogue key or literal text. ``lo``..``hi``: the range a
    number may take (the wizard's question and the spec's check use the same), ``choices`` the values it may have."""
    return field(default=default, metadata={"flag": flag, "old": old, "help": help, "lo": lo, "hi": hi,
                                            "choices": choices})


@dataclass(frozen=True)
class Problem:
    """A rule a TrainingSpec breaks: the ``fields`` it involves (the wizard's question keys, the cli's option names
    without dashes) and the refusal that says it."""

    fields: tuple[str, ...]
    refusal: Refusal


# objective_conflict's settings → the fields that set them (choose_strategy.conflict.<what>)
CONFLICT_FIELDS = {"galore": ("method",), "packing": ("packing",), "sequence_parallel": ("sequence_parallel",),
                   "compile_layers": ("compile_layers",), "unsloth": ("training_backend",),
                   "images": ("images_per_sample",), "plain_loss": ("loss",), "chunked_loss": ("loss",),
                   "sharded": ("distribution",), "nodes": ("nodes",)}


@dataclass(frozen=True)
class TrainingSpec:
    """The knobs of one fine-tune. Sequence length is tokens per sequence (with packing: the packed length)."""

    objective: str = _knob("sft", "--objective", help="sft | dpo | kto | grpo", choices=OBJECTIVES)
    # DPO's β: how far the trained policy may move from the reference (trl's DPOConfig.beta, its default)
    dpo_beta: float = _knob(0.1, None, lo=0.001, hi=10.0)
    # the SFT loss on the chosen reply added to DPO's with this weight (trl's loss_type ["sigmoid", "sft"]; RPO,
    # LLaMA-Factory's pref_ftx): keeps the chosen replies likely, where DPO alone may lower both; 0: DPO alone
    sft_loss_weight: float = _knob(0.0, None, lo=0.0, hi=100.0)
    # KTO's β (trl's KTOConfig.beta, its default); the desirable and undesirable weights are set from the data's
    # counts (recipes/training/worker.py kto_weights)
    kto_beta: float = _knob(0.1, None, lo=0.001, hi=10.0)
    # GRPO (trl's GRPOConfig): replies generated per prompt (num_generations; each micro-batch counts replies, so
    # micro-batch × gradient accumulation × data-parallel replicas must be a multiple of it), the longest reply in
    # tokens (max_completion_length; the sequence length bounds prompt + reply), the KL coefficient β against the
    # reference (trl's default 0: no reference model held), the reward functions summed (REWARDS) and the user's
    # reward file when "file" is one of them
    num_generations: int = _knob(8, "--num-generations", help="training.opt.num_generations", lo=2, hi=1024)
    completion_length: int = _knob(256, "--completion-length", help="training.opt.completion_length", lo=1, hi=1 << 20)
    grpo_beta: float = _knob(0.0, "--grpo-beta", help="training.opt.grpo_beta", lo=0.0, hi=10.0)
    rewards: tuple[str, ...] = ("accuracy", "format")
    generation: str = _knob("transformers", "--generation", help="training.opt.generation", choices=GENERATIONS)
    # vLLM's share of the GPU's memory (its own copy of the weights, its KV cache, its start-up profile: trl's
    # vllm_gpu_memory_utilization); 0: sized by the memory model for the generation batch (recipes/memory/model.py
    # vllm_share)
    vllm_memory_utilization: float = _knob(0.0, "--vllm-memory-utilization", help="training.opt.vllm_util",
                                           lo=0.0, hi=0.95)
    reward_file: str = ""
    method: str = _knob("lora", "--method", help="full | lora | qlora | dora | galore", choices=METHODS)
    lora_rank: int = _knob(8, "--lora-rank", "--rank", help="training.opt.rank", lo=1, hi=1024)
    lora_alpha: int = _knob(16, None, lo=1, hi=4096)
    lora_dropout: float = _knob(0.05, "--lora-dropout", "--dropout", help="training.opt.dropout", lo=0.0, hi=0.9)
    lora_targets: str = _knob("all-linear", "--lora-targets", "--targets", help="all-linear | q_proj,v_proj,…")
    galore_rank: int = _knob(128, "--galore-rank", help="training.opt.galore_rank", lo=1, hi=8192)
    # full fine-tune without ZeRO/FSDP: fp32 weights + bf16 autocast, or pure bf16
    master_weights: str = _knob("fp32", "--master-weights", help="training.opt.master_weights", choices=MASTER_WEIGHTS)
    activation_checkpointing: bool = _knob(True, "--activation-checkpointing/--no-activation-checkpointing",
                                           "--ckpt/--no-ckpt", help="training.opt.ckpt")
    attn_implementation: str = _knob("sdpa", "--attn-implementation", "--attn", help="sdpa | flash | eager",
                                     choices=ATTENTION)
    micro_batch: int = _knob(1, "--micro-batch", "--batch", help="training.opt.batch", lo=1, hi=4096)
    grad_accum: int = _knob(1, "--grad-accum", help="training.opt.grad_accum", lo=1, hi=4096)
    seq_len: int = _knob(2048, "--seq-len", "--seq", help="training.opt.seq", lo=16, hi=1 << 20)
    optim: str = _knob("adamw", "--optim", help="adamw | adamw8bit | paged", choices=OPTIMIZERS)
    # the LM head's loss: yichui's fused head, a chunked one, or "full" — the plain transformers + PEFT loop
    # (materialized logits, no autocast), which only the memory model knows: yichui estimate for other trainers
    loss: str = _knob("fused", "--loss", help="training.opt.loss", choices=LOSSES)
    weights_bytes: int = 2  # bf16 weights (2 bytes); fp32 would be 4
    liger: bool = _knob(False, "--liger/--no-liger", help="training.opt.liger")
    # torch.compile of each decoder layer (recipes/training/worker.py compile_decoder_layers)
    compile_layers: bool = _knob(False, "--compile-layers/--no-compile-layers", help="training.opt.compile_layers")
    # peft's cast of each adapter's input to the fp32 adapter dtype under bf16 autocast, as every peft user has it;
    # yichui's LoRA trainer skips it (worker.skips_adapter_input_cast). Benchmarks turn it back on, and runs
    # measured before 2026-12-02 had it (the memory model's LORA_CAST)
    adapter_input_cast: bool = False
    packing: bool = _knob(False, "--packing/--no-packing", help="training.opt.packing")
    training_backend: str = _knob("transformers", "--training-backend", help="transformers | unsloth",
                                  choices=TRAINING_BACKENDS)
    distribution: str = _knob("ddp", "--distribution", help="ddp | zero1 | zero2 | zero3 | fsdp2",
                              choices=SHARDINGS)
    offload: str = "none"  # ZeRO optimizer states (stage 3 / FSDP: "all" also the weights) to CPU memory
    # … or, DeepSpeed ZeRO-3 only, to files under nvme_path (ZeRO-Infinity: DeepSpeed's offload device "nvme",
    # through its async_io op, which needs libaio)
    offload_device: str = "cpu"
    nvme_path: str = ""
    processes: int = _knob(1, "--processes", "--gpus", help="training.opt.gpus", lo=1, hi=64)  # per node
    # Ulysses sequence parallelism (DeepSpeed's ALST through accelerate's ParallelismConfig): each sequence split over
    # this many processes, attention heads exchanged by all-to-all; the data-parallel degree is processes / this.
    # 1: off
    sequence_parallel: int = _knob(1, "--sequence-parallel", help="training.opt.sequence_parallel", lo=1, hi=64)
    nodes: int = _knob(1, None, lo=1, hi=1024)
    learning_rate: float = _knob(2e-4, None, lo=1e-8, hi=1.0)
    lr_scheduler: str = "constant_with_warmup"
    warmup_steps: int = 0
    max_steps: int = _knob(0, None, lo=0, hi=10_000_000)  # 0: train for ``epochs``
    epochs: float = _knob(1.0, None, lo=0.01, hi=1000)
    save_steps: int = _knob(50, None, lo=1, hi=10_000_000)
    save_total_limit: int = _knob(3, None, lo=1, hi=1000)
    seed: int = 42
    # image-text records on a vision-language model: images in each sequence and their side in pixels (0: the
    # model's own input size, or the memory model's DEFAULT_IMAGE_SIZE for a dynamic-resolution tower). Only the
    # memory model reads them: seq_len stays the text tokens, each image adds its tokens to the sequence (image records
    # are never truncated) and its share of the vision tower (recipes/memory/model.py). 0 images: text records
    images_per_sample: int = _knob(0, "--images-per-sample", help="training.opt.images_per_sample", lo=0, hi=256)
    # a vision-language model's vision side (recipes/model/vision.py): frozen by default, as LLaMA-Factory's
    # freeze_vision_tower / freeze_multi_modal_projector; trained: LoRA on the tower's linear layers (a full
    # fine-tune: its weights), the projector whole (peft modules_to_save)
    freeze_vision_tower: bool = True
    freeze_projector: bool = True
    image_size: int = _knob(0, "--image-size", help="training.opt.image_size", lo=0, hi=16384)

    # -- derived views ------------------------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        """The rank the trainable parameters have: GaLore's projection rank, else the LoRA rank."""
        return self.galore_rank if self.method == "galore" else self.lora_rank

    @property
    def gpus(self) -> int:
        """Processes of all nodes (one GPU each)."""
        return self.processes * self.nodes

    @property
    def zero(self) -> int:
        """DeepSpeed ZeRO stage 0-3 (0: not ZeRO)."""
        return int(self.distribution[-1]) if self.distribution.startswith("zero") else 0

    @property
    def fsdp(self) -> bool:
        return self.distribution == "fsdp2"

    @property
    def offloaded(self) -> bool:
        return self.offload != "none"

    @property
    def nvme_offloaded(self) -> bool:
        """Offloaded states go to NVMe files, not CPU memory."""
        return self.offloaded and self.offload_device == "nvme"

    @property
    def fp32_masters_asked(self) -> bool:
        return self.master_weights == "fp32"

    @property
    def data_parallel(self) -> int:
        """Data-parallel replicas: all processes, or with sequence parallelism the groups that share one sequence."""
        return max(1, self.gpus // self.sequence_parallel)

    @property
    def effective_batch(self) -> int:
        """Sequences per optimizer step over all processes: micro-batch × gradient accumulation × data-parallel
        replicas (processes / sequence_parallel)."""
        return self.micro_batch * self.grad_accum * self.data_parallel

    # -- building one -------------------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls: type[S], d: dict) -> S:
        """The spec inside ``d`` (a strategy's answers, a spec.json): its known keys; absent ones take the defaults,
        other keys are not the spec's and are left out."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known and v is not None})

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def check(self) -> None:
        """Raises the first of :meth:`problems` (a hand-edited session, a spec.json, the trainer's own check).

        Raises:
            Refusal: "training.bad_choice" | "training.bad_number" | "training.bad_text" (a value outside its choices or its
            range, nan and inf too, or not text), or one of the cross-field rules' keys (:meth:`problems`).
        """
        for problem in self._rules():
            raise problem.refusal

    def problems(self, field: str | None = None) -> list["Problem"]:
        """Every rule this spec breaks, each with the fields it involves, in the order :meth:`check` tries them;
        with ``field``, those that involve it (the wizard says each at the question of one of its fields: a rule
        between the method and the distribution at either, never at an unrelated question).

        The cross-field rules: QLoRA or GaLore sharded, NVMe offload off ZeRO-3, offload under DDP, ``offload=all``
        off ZeRO-3/FSDP2, a sequence split the layout cannot take (:meth:`sequence_parallel_conflict`), no LoRA
        target, Liger with compiled layers, QLoRA with compiled layers, the unsloth backend with what it does not run
        (:meth:`unsloth_conflict`), a micro-batch under the objective's least (KTO: 2), what the objective does not
        run with (:meth:`objective_conflict`), GRPO's own (:meth:`_grpo_rules`)."""
        found = list(self._rules())
        return [p for p in found if field in p.fields] if field else found

    def _rules(self) -> typing.Iterator["Problem"]:
        typed = True  # the cross-field rules read values of their fields' types: asked only then
        for f in dataclasses.fields(self):
            value, meta = getattr(self, f.name), f.metadata
            if meta.get("choices") and value not in meta["choices"]:
                typed = False
                yield Problem((f.name,), Refusal("training.bad_choice", name=f.name, value=value,
                                                 choices=list(meta["choices"])))
            lo, hi = meta.get("lo"), meta.get("hi")
            # not a number (a hand-edited session's "two", or true) is out of range too; False for nan
            if lo is not None and hi is not None and not (isinstance(value, (int, float))
                                                          and not isinstance(value, bool) and lo <= value <= hi):
                typed = False
                yield Problem((f.name,), Refusal("training.bad_number", name=f.name, value=value, lo=lo, hi=hi))
            elif isinstance(f.default, int) and not isinstance(f.default, bool) and isinstance(value, float) \
                    and lo is not None:  # a count (micro-batch, rank, steps) given 4.5: the trainer's raw ValueError
                typed = False
                yield Problem((f.name,), Refusal("training.not_whole", name=f.name, value=value))
            if isinstance(f.default, str) and not isinstance(value, str):  # a text field given a number or a list
                typed = False
                yield Problem((f.name,), Refusal("training.bad_text", name=f.name, value=value))
        if not typed:
            return
        if self.offload not in OFFLOADS:
            yield Problem(("offload",), Refusal("training.bad_choice", name="offload", value=self.offload,
                                                choices=list(OFFLOADS)))
            return  # the rules below read it
        if self.offload_device not in OFFLOAD_DEVICES:
            yield Problem(("offload_device",), Refusal("training.bad_choice", name="offload_device",
                                                       value=self.offload_device, choices=list(OFFLOAD_DEVICES)))
            return
        layout = ("method", "distribution")
        if self.method == "qlora" and self.distribution in ("zero3", "fsdp2"):  # 4-bit weights are not sharded
            yield Problem(layout, Refusal("training.qlora_sharded"))
        if self.method == "galore" and self.distribution != "ddp":  # GaLore's projected optimizer is not sharded
            yield Problem(layout, Refusal("training.galore_sharded"))
        if self.nvme_offloaded and self.distribution != "zero3":  # DeepSpeed swaps to NVMe at stage 3 only
            yield Problem(("offload_device", "distribution"), Refusal("training.nvme_needs_zero3"))
        if self.offloaded and self.distribution == "ddp":  # DDP keeps every state on the GPU: nothing would move
            yield Problem(("offload", "distribution"), Refusal("training.offload_needs_sharding"))
        if self.offload == "all" and self.distribution not in ("zero3", "fsdp2"):  # parameters sharded only there
            yield Problem(("offload", "distribution"), Refusal("training.offload_all_needs_zero3"))
        if (conflict := self.sequence_parallel_conflict()) is not None:
            yield Problem(("sequence_parallel", "processes", "nodes", "distribution", "attn_implementation",
                           "packing"), Refusal(conflict[0], **conflict[1]))
        if self.method not in FULL_WEIGHTS and not TARGETS.fullmatch(self.lora_targets.replace(" ", "")):
            yield Problem(("lora_targets", "method"), Refusal("training.bad_targets",
                                                              value=self.lora_targets[:80]))
        if self.liger and self.compile_layers:  # Liger's kernels break the compiled graph: 2.2× slower measured
            yield Problem(("liger", "compile_layers"), Refusal("training.liger_and_compile"))
        if self.method == "qlora" and self.compile_layers:  # 2.1× the eager trainer's memory measured, not modelled
            yield Problem(("method", "compile_layers"), Refusal("training.qlora_and_compile"))
        if (what := self.unsloth_conflict()) is not None:
            yield Problem(("training_backend", what.split("=")[0]),
                          Refusal("training.unsloth_unsupported", what=what))
        if self.micro_batch < self.least_micro_batch:  # KTO's KL term
            yield Problem(("micro_batch", "objective"), Refusal("training.kto_micro_batch", mb=self.micro_batch))
        if (what := self.objective_conflict()) is not None:  # the setting named in the user's language
            yield Problem(("objective", *CONFLICT_FIELDS.get(what.rsplit(".", 1)[-1], ())),
                          Refusal("training.objective_unsupported", objective=self.objective.upper(),
                                  what=Msg(what)))
        if self.objective == "grpo":
            yield from self._grpo_rules()
        if self.generation == "vllm" and self.objective != "grpo":  # only GRPO generates while it trains
            yield Problem(("generation", "objective"), Refusal("training.vllm_generation_grpo_only"))
        elif self.generation == "vllm" and self.method == "qlora":
            # trl would load vLLM's copy in bitsandbytes 4-bit and push the merged adapter into it: not measured
            yield Problem(("generation", "method"), Refusal("training.vllm_generation_qlora"))

    def _grpo_rules(self) -> typing.Iterator["Problem"]:
        """GRPO's own rules: whole groups of replies per optimizer step (trl's GRPOConfig: the generation batch, micro-batch
        × gradient accumulation × data-parallel replicas, a multiple of num_generations), a reply shorter than the
        sequence, known reward functions, and a reward file when one is asked for. Keys: "training.grpo_groups"
        | "training.grpo_completion" | "training.bad_choice" | "training.grpo_no_rewards" |
        "training.reward_file_missing"."""
        replies = self.micro_batch * self.grad_accum * self.data_parallel
        if replies % self.num_generations:
            yield Problem(("micro_batch", "grad_accum", "num_generations", "processes", "nodes"),
                          Refusal("training.grpo_groups", replies=replies, n=self.num_generations))
        if self.completion_length >= self.seq_len:
            yield Problem(("completion_length", "seq_len"), Refusal("training.grpo_completion",
                                                                   completion=self.completion_length, seq=self.seq_len))
        rewards = self.rewards if isinstance(self.rewards, (list, tuple)) else [self.rewards]
        if not rewards:
            yield Problem(("rewards",), Refusal("training.grpo_no_rewards"))
        for r in rewards:
            if r not in REWARDS:
                yield Problem(("rewards",), Refusal("training.bad_choice", name="rewards", value=str(r)[:40],
                                                    choices=list(REWARDS)))
                break
        if "file" in rewards and not (isinstance(self.reward_file, str) and self.reward_file.strip()):
            yield Problem(("reward_file", "rewards"), Refusal("training.reward_file_missing"))

    @property
    def prompts_per_step(self) -> int:
        """GRPO: prompts in one optimizer step (each generates num_generations replies); else the effective batch."""
        return max(1, self.effective_batch // self.num_generations) if self.objective == "grpo" \
            else self.effective_batch

    @property
    def least_micro_batch(self) -> int:
        """The smallest micro-batch the objective trains with: 2 for KTO (its KL term), else 1."""
        return least_micro_batch(self.objective)

    def objective_conflict(self) -> str | None:
        """What a preference objective does not run with yet (not built or not tested with it): GaLore, packing,
        a sequence split, compiled layers (measured wrong: on the H200 the compiled trainer's DPO loss fell to 0.0 at
        step 2 where the eager one's was 0.41–0.47 on the same pairs, bench/results/2026-12-05-preference-h200.md),
        the unsloth backend, image records, the plain loop's or a chunked SFT loss head (memory-model options priced
        for an SFT trainer; trl computes DPO's log-probabilities itself). The setting's catalogue key (``training.conflict.*``); None for SFT
        or when it runs."""
        if self.objective == "sft":
            return None
        return next(("training.conflict." + what for what, bad in (
            ("galore", self.method == "galore"), ("packing", self.packing),
            ("sequence_parallel", self.sequence_parallel > 1), ("compile_layers", self.compile_layers),
            ("unsloth", self.training_backend == "unsloth"), ("images", self.images_per_sample > 0),
            ("plain_loss", self.loss == "full"),  # the plain transformers + PEFT loop's estimate: an SFT trainer
            ("chunked_loss", self.loss == "chunked"),  # an SFT head's pricing; DPO's log-probabilities are trl's
            # GRPO generates between optimizer steps: with weights sharded every generated token would gather them
            # (trl's ds3_gather_for_generation); not built or measured here
            ("sharded", self.objective == "grpo" and self.distribution in ("zero3", "fsdp2")),
            ("nodes", self.objective == "grpo" and self.nodes > 1),
        ) if bad), None)

    def sequence_parallel_conflict(self) -> tuple[str, dict] | None:
        """Why this spec cannot split its sequences ``sequence_parallel`` ways, as (catalogue key, params), or None.
        The model's heads are checked with its shape (recipes/memory/sharding.py sequence_parallel_problem).

        - the degree divides the processes (accelerate: dp_replicate × sp = world size);
        - DeepSpeed ZeRO-3: Ulysses runs on DeepSpeed (accelerate's sp_backend "deepspeed"), and under ZeRO-1/2
          DeepSpeed 0.19.8 sums the sequence group's gradients (the loss all-gather's backward adds them, the
          reduction divides by the data-parallel degree only): measured on gloo, the gradient norm came out
          sp× too large, ZeRO-3 exact (a helper's check, /tmp/sp-research in the 2026-12-04 session);
        - sdpa or FlashAttention (accelerate refuses eager and flex: utils/dataclasses.py
          DeepSpeedSequenceParallelConfig);
        - no padding-free packing with sdpa: the attention mask is dropped under Ulysses, so packed documents would
          attend across each other (FlashAttention separates them by position ids)."""
        sp = self.sequence_parallel
        if sp <= 1:
            return None
        if self.gpus % sp:
            return "training.sp_divides", {"sp": sp, "gpus": self.gpus}
        if self.distribution != "zero3":
            return "training.sp_needs_zero3", {"sp": sp, "distribution": self.distribution}
        if self.attn_implementation == "eager":
            return "training.sp_attention", {"attn": self.attn_implementation}
        if self.packing and self.attn_implementation == "sdpa":
            return "training.sp_packing_sdpa", {}
        return None

    def unsloth_conflict(self) -> str | None:
        """What of this spec the unsloth backend does not run, as the field=value that names it, or None. unsloth
        brings its own kernels and checkpointing (no Liger, no compiled layers), trains LoRA, QLoRA and a bf16 full
        fine-tune (DoRA and GaLore are not measured with it), in one process (its open-source release trains on one
        GPU)."""
        if self.training_backend != "unsloth":
            return None
        for name, bad in (("method", self.method not in UNSLOTH_METHODS), ("liger", self.liger),
                          ("compile_layers", self.compile_layers),
                          ("master_weights", self.method == "full" and self.master_weights != "bf16"),
                          ("processes", self.gpus > 1), ("distribution", self.distribution != "ddp")):
            if bad:
                return f"{name}={getattr(self, name)}"
        return None


DEFAULTS = TrainingSpec()


def limits(name: str) -> tuple[Any, Any]:
    """(least, largest) value field ``name`` may take, or (None, None) when it has no range."""
    meta = next(f.metadata for f in dataclasses.fields(TrainingSpec) if f.name == name)
    return meta.get("lo"), meta.get("hi")


def default_seq_len(max_position: int | None) -> int:
    """The sequence length a question or an estimate starts from: 2048 tokens, or the model's whole context
    (config.json's max_position_embeddings) when shorter."""
    return min(DEFAULTS.seq_len, int(max_position or DEFAULTS.seq_len))


def default_learning_rate(method: str) -> float:
    """1e-5 when every weight trains, else the adapter's 2e-4 (the peers' defaults: LLaMA-Factory, axolotl)."""
    return 1e-5 if method in FULL_WEIGHTS else DEFAULTS.learning_rate


def cli_fields() -> list[dataclasses.Field]:
    """The fields ``yichui estimate`` offers as options (those with a flag)."""
    return [f for f in dataclasses.fields(TrainingSpec) if f.metadata.get("flag")]


@dataclass(frozen=True)
class TrainerJob(TrainingSpec):
    """What one trainer process runs (its ``spec.json``; recipes/training/worker.py): a :class:`TrainingSpec` and this
    run's own facts. Written by the train step and the preflight smoke run, read by the trainer and the benchmarks."""

    model_dir: str = ""
    dataset_path: str = ""          # a reference: ``path`` or ``path#N`` (recipes/data/datasets.py)
    device: str = "auto"            # auto | cpu | cuda
    trust_remote_code: bool = False  # the user's recorded yes to the model's own code
    sample_question: str | None = None  # answered before and after training
    skip_bad_records: bool = False
    val_ratio: float = 0.0          # held-out share of the records for the eval loss
    hosts: str = ""                 # several nodes: one host per node, the first is the master
    master_port: int = 29500
    logging_steps: int = 1
    init: str = "pretrained"        # "random": random weights of the config's shape (benchmarks)
    interpreter: str = ""           # the Python that runs the trainer: the backend's environment; "" yichui's own
    save_final: bool = True         # write adapter/ (the smoke run does not)
    profile_steps: tuple[int, int] | None = None  # benchmarks: torch.profiler over these optimizer steps
    launch: str | None = None       # this launch's id; its events carry it
    # benchmarks: DeepSpeed's bucket sizes and overlap as yichui writes them ("yichui", recipes/training/zero.py),
    # DeepSpeed's defaults with overlap off ("deepspeed", as written before 2026-12-04), transformers' "auto" rule
    # ("auto"), or "field=value,…" over yichui's; and a CUDA memory history of the run, dumped to
    # memory_snapshot.pickle beside the spec (torch.cuda.memory._record_memory_history)
    zero_sizes: str = "yichui"
    memory_snapshot: bool = False
    # experiment trackers beside TensorBoard, each writing to a store on this machine (recipes/training/trackers.py)
    trackers: tuple[str, ...] = ()

    def check(self) -> None:
        """TrainingSpec.check, and the trackers known (a hand-edited session's "foo" refused in one line).

        Raises:
            Refusal: as TrainingSpec.check; "training.bad_choice" for an unknown tracker.
        """
        super().check()
        from recipes.training.trackers import TRACKERS

        bad = [n for n in self.trackers if n not in TRACKERS] if isinstance(self.trackers, (list, tuple)) \
            else [self.trackers]
        if bad:
            raise Refusal("training.bad_choice", name="trackers", value=str(bad[0])[:40], choices=list(TRACKERS))

    def write(self, path) -> None:
        """Written whole or not at all (a temp file beside it, then os.replace): a reader — the trainer starting,
        the steps, a test watching the run — never sees half of it (seen: JSONDecodeError on a read mid-write)."""
        import os
        from pathlib import Path

        tmp = Path(str(path) + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=2, ensure_ascii=False))
        os.replace(tmp, path)

    @classmethod
    def read(cls, path) -> TrainerJob:
        from pathlib import Path

        return cls.from_dict(json.loads(Path(path).read_text()))
