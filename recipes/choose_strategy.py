"""Step 3 — choose the training strategy and the data.

Method (LoRA / QLoRA / full), LoRA rank / alpha / dropout / target modules, activation checkpointing, micro-batch,
gradient accumulation, sequence length, learning rate, steps or epochs, checkpoint interval; the dataset (the bundled
one or a local json / jsonl in alpaca or messages format) with two samples rendered through the model's chat template.
Defaults come from the memory step's recommendation; the chosen configuration is estimated again. Every record is
rendered through the chat template, and (unless declined) the strategy is smoke-tested on a 2-layer random copy of
the architecture (recipes/training/preflight.py) — all before the weights are downloaded (the next step).
"""
from __future__ import annotations

import math
import re

from pathlib import Path

from recipes.data import datasets, preference, prompts
from recipes.memory import model as memory
from recipes.memory import planner, sharding
from recipes.model import prequantized
from recipes.hub import client as hub
from recipes.training import backends, backup, nvme, trackers
from recipes.base import Choice, Ctx, Msg, Question, Record, Refusal, StepError, in_range, msg
from recipes.handoff import DataChoice, MemoryEvaluation, ModelChoice, StrategyChoice, metadata_dir, trusted
from recipes.training.spec import DEFAULTS, DISTRIBUTIONS, FULL_WEIGHTS, OFFLOAD_DEVICES, OFFLOADS, MASTER_WEIGHTS, \
    GENERATIONS, OBJECTIVES, OPTIMIZERS, REWARDS, TARGETS, \
    TrainerJob, TrainingSpec, default_learning_rate, default_seq_len, least_micro_batch, limits

name = "choose_strategy"
requires = ("select_model", "evaluate_memory")


TARGETS_CHARS = 2000  # module names of any model fit in far fewer


def _targets_check(known: list[str]):
    def check(v, a):
        # the value cut as the spec cuts it: 120 KB of targets was echoed until the reason itself was cut off
        # (issue 46 trial J, J5)
        if len(v) > TARGETS_CHARS:  # the reason it is refused, not a rule it may well follow (46 trial K, K6)
            return msg("choose_strategy.targets_long", n=f"{len(v):,}", max=f"{TARGETS_CHARS:,}")
        if not TARGETS.fullmatch(v.replace(" ", "")):  # the spec's own rule
            return msg("training.bad_targets", value=v[:80] + ("…" if len(v) > 80 else ""))
        unknown = list(dict.fromkeys(t.strip() for t in v.split(",")
                                     if known and v != "all-linear" and t.strip() not in known))
        return msg("choose_strategy.unknown_targets", targets=unknown[:8] + (["…"] if len(unknown) > 8 else []),
                   known=list(known)) if unknown else None
    return check


class Draft:
    """What the question groups share: the model (ModelChoice), its memory evaluation, unsloth's environment, and
    the chosen data, read once per reference and objective (validated, counted, sampled and checked for malformed
    records from that one read; a file answered again is read again — the user may have mended it)."""

    def __init__(self, ctx: Ctx):
        self.ctx = ctx
        self.mem = ctx.result(MemoryEvaluation)
        self.sel = ctx.result(ModelChoice)
        # unsloth's environment, when installed; yichui runs it for text models only (its VLM path is not wired)
        self.unsloth = backends.find_unsloth(ctx.home) if not vision_model(ctx) else None
        self.recommended = {"method": DEFAULTS.method,
                            "activation_checkpointing": DEFAULTS.activation_checkpointing} | self.mem.recommended
        self._read: dict[tuple[str, str], object] = {}  # (reference, objective) → what was read, or its DataError
        self._firsts: dict[str, str | None] = {}  # reference → the question of its first image record
        self._longest: dict[str, int] = {}  # reference → tokens of its longest record through the chat template

    # -- the data ---------------------------------------------------------------------------------------------------
    def read(self, ref: str, objective: str, again: bool = False):
        """The data as ``objective`` reads it (:func:`_read`), from the one read of ``ref`` (``again``: read anew).

        Raises:
            DataError: as the readers do (remembered, so raised again without reading)."""
        if again or (ref, objective) not in self._read:
            try:
                self._read[(ref, objective)] = _read(ref, objective)
            except datasets.DataError as e:
                self._read[(ref, objective)] = e
        got = self._read[(ref, objective)]
        if isinstance(got, datasets.DataError):
            raise got
        return got

    def dataset_ok(self, v, a):
        try:
            loaded = self.read(v, a.get("objective", "sft"), again=True)
        except datasets.DataError as e:
            return e.msg
        good = len(loaded.conversations if isinstance(loaded, datasets.Loaded) else loaded.records)
        if loaded.bad and not good:  # nothing to skip to: asked for another file here, not 20 questions later
            return Msg("data.all_bad", {"path": str(datasets.split_sample(v)[0]), "count": len(loaded.bad),
                                        "where": loaded.bad[:3]}, alone=True)
        if loaded.bad and self.ctx.interactive:  # the question that follows; without a prompt the refusal says it
            self.ctx.warn(msg("data.bad_records_found", count=len(loaded.bad), total=loaded.total,
                              where=loaded.bad[:5]))
        if isinstance(loaded, prompts.Prompts):  # GRPO: the accuracy reward needs reference answers
            return msg("choose_strategy.grpo_no_answers", path=v) \
                if "accuracy" in _rewards(a) and loaded.records and not loaded.answered else None
        if isinstance(loaded, preference.Preferences) and a.get("objective") == "kto":  # both forms, both kinds
            replies = preference.unpaired(loaded.records)
            good = sum(r["label"] for r in replies)
            if not replies or 0 < good < len(replies):  # none read: the malformed records are said at the start
                return None
            return msg("choose_strategy.kto_one_sided", path=v, desirable=good, undesirable=len(replies) - good)
        if isinstance(loaded, preference.Preferences):  # DPO: pairs only
            return None if loaded.format == preference.PAIRED else msg(
                "choose_strategy.unpaired_for_dpo", path=v, objective=a["objective"].upper())
        n_images = sum(datasets.has_images(c) for c in loaded.conversations)
        if n_images and not vision_model(self.ctx):  # asked again, not at the end
            return msg("choose_strategy.images_need_vlm", path=v, n=n_images)
        return None

    def records(self, a) -> int | None:
        """Records of the chosen data when it is on this machine (:func:`_local_data`)."""
        ref = _local_data(a)
        if ref is None:
            return None
        try:
            got = self.read(ref, a.get("objective", "sft"))
        except datasets.DataError:
            return None
        return len(got.conversations if isinstance(got, datasets.Loaded) else got.records) or None

    def has_bad(self, a) -> bool:
        """Whether the local file chosen has malformed records (the question of what to do with them)."""
        ref = a.get("dataset_path") if a.get("dataset") == "local" else None
        if not ref:
            return False
        try:
            return bool(self.read(ref, a.get("objective", "sft")).bad)
        except datasets.DataError:
            return False

    def abort_check(self, v, a):
        """Without a prompt (--yes, demo), "abort" on a file with malformed records is the data's refusal, said as an
        answer the run cannot go on with (exit 2, before any step: the precheck asks it) — it exited 1 after the
        step started, its reason said twice (the tester's 21-8). Interactively "stop, I will fix the file" stops
        there and then: the step fails with the malformed records named (the answers so far kept for resume) — it
        asked ~20 more questions and ran the smoke test first (issue 46 trial G).

        Raises:
            StepError: interactively, "abort" on a file with malformed records."""
        if v != "abort" or not self.has_bad(a):
            return None
        loaded = self.read(a["dataset_path"], a.get("objective", "sft"))
        # a file with no good record is refused at its path (dataset_ok): here some are good
        refusal = Msg("data.bad_records", {"path": str(datasets.split_sample(a["dataset_path"])[0]),
                                           "count": len(loaded.bad), "where": loaded.bad[:5]}, alone=True)
        if self.ctx.interactive:
            raise StepError(refusal.key, **refusal.args)
        return refusal

    def first_image_question(self, a) -> str | None:
        """A vision-language model's sample question: the text of the first image record's first user turn (the
        trainer asks it of that record's image, before and after training, and so does the deploy check)."""
        ref = _local_data(a)
        if ref is None or not vision_model(self.ctx):
            return None
        if ref not in self._firsts:
            try:
                convs = self.read(ref, "sft").conversations
            except datasets.DataError:
                convs = []
            first = next((c for c in convs if datasets.has_images(c)), None)
            turn = next((m for m in first if m["role"] == "user"), None) if first else None
            text = " ".join(p["text"] for p in turn["content"] if p["type"] == "text").strip() \
                if turn and isinstance(turn["content"], list) else ""
            self._firsts[ref] = text or None
        return self._firsts[ref]

    def save_steps(self, a) -> int:
        """A checkpoint about four times in the run it plans (at most every DEFAULTS.save_steps optimizer steps), so
        that the default interval fires before the end (issue 20, item 9)."""
        steps = self.planned_steps(a)
        return max(1, min(DEFAULTS.save_steps, steps // 4)) if steps else DEFAULTS.save_steps

    def speed_seq(self, a) -> int:
        """Tokens per sequence the trainer will run, as the strategy's time is given at the end (:func:`finalize`'s
        est_seq): seq_len with packing, else the data's longest record within it (micro-batches are padded to their
        longest) — the plan list priced every plan at seq_len and promised ~3 s where the time said next was ~54 s
        (issue 46 trial G). seq_len where the data is not on this machine, or not text conversations."""
        t = training(a)
        ref = _local_data(a)
        if t.packing or ref is None or t.objective != "sft" or vision_model(self.ctx):
            return t.seq_len
        if ref not in self._longest:
            try:
                from transformers import AutoTokenizer

                tok = AutoTokenizer.from_pretrained(metadata_dir(self.ctx), trust_remote_code=trusted(self.ctx))
                convs = self.read(ref, "sft").conversations
                self._longest[ref] = _longest_tokens(tok, _render_all(tok, convs)) if tok.chat_template else 0
            except (datasets.DataError, StepError, OSError, ValueError):  # said where the step reads them
                self._longest[ref] = 0
        return min(t.seq_len, self._longest[ref]) if self._longest[ref] else t.seq_len

    def planned_steps(self, a) -> int:
        """Optimizer steps the answers so far plan: max_steps, else the records less the held-out share × epochs ÷
        records per step (the defaults where not asked yet; before micro-batch and accumulation are, the batch answered:
        their defaults made every record a step at the plan question, issue 46 trial H); 0 when the data is not on
        this machine."""
        steps = a.get("max_steps") or 0
        n = self.records(a)
        if "micro_batch" not in a and "batch_size" in a:
            a = a | _least(a) | {"grad_accum": max(1, a["batch_size"] // _least(a)["micro_batch"])}
        if not steps and n:
            steps = math.ceil(n * (1 - a.get("val_ratio", 0.0)) / training(a).prompts_per_step * a.get("epochs", 1.0))
        return steps

    def repo_ok(self, v, a):
        """An id, and one the hub lists now (checked here, not after 20 more questions: issue 20's trial)."""
        if not hub.is_repo_id(v):
            return msg("select_model.bad_id", value=v)
        source, endpoint = _dataset_hub(self.ctx)
        down = hub.unreachable(source, endpoint)  # a moment, not the clients' retries
        if down:
            return down.msg
        try:
            hub.list_files(source, v, endpoint, "main", "dataset")
        except StepError as e:
            return e.msg
        return None

    # -- the plan ---------------------------------------------------------------------------------------------------
    def plan_choices(self, a) -> list[Choice]:
        """The planner's ranking for the answers so far; fitting plans first, then the soonest done (the planned steps
        where the data is known, :meth:`planned_steps`; compiling counted). The unsloth backend is
        a candidate where it is installed and a CUDA GPU is here (its speed is measured on GPUs only)."""
        mem = self.mem
        shape = mem.model_shape()
        if shape is None or "seq_len" not in a or "batch_size" not in a:
            return []
        t = training(a | {"activation_checkpointing": True, **_least(a)})
        modelled = planner.speed_modelled(t, shape)
        out = []
        for p in planner.plans(shape, t, a["batch_size"], mem.gpu.name or "", mem.gpu.memory_gib or 80.0,
                               unsloth=self.unsloth is not None and bool(memory.detect_gpus()),
                               planned_steps=self.planned_steps(a) if modelled else 0,
                               speed_seq=self.speed_seq(a) if modelled else None):
            on = lambda x: msg("ui.on" if x else "ui.off")  # noqa: E731
            knobs = dict(ckpt=on(p.ckpt), mb=p.micro_batch, ga=p.grad_accum, liger=on(p.liger),
                         compiled=on(p.compile_layers), gib=f"{p.peak_gib:.1f}",
                         fits=msg("choose_strategy.plan.fits" if p.fits else "choose_strategy.plan.too_big"))
            # the speed only where the model covers the plan (planner.speed_modelled), the time where steps are known
            label = msg("choose_strategy.plan.label_unmodelled", **knobs) if not modelled else \
                msg("choose_strategy.plan.label", tps=f"{p.tokens_per_s:,.0f}", **knobs) if p.seconds is None else \
                msg("choose_strategy.plan.label_eta", tps=f"{p.tokens_per_s:,.0f}",
                    eta=planner.duration_msg(p.seconds), **knobs)
            if p.training_backend == "unsloth":
                label = msg("choose_strategy.plan.on_unsloth", label=label)
            if p.approximate:  # not calibrated (GaLore, a family's plan without checkpointing): said in the line
                label = msg("choose_strategy.plan.approximate", label=label,
                            what=[memory.approximate_words(n) for n in p.approximate])
            out.append(Choice(_plan_value(p), label))
        return out

    def backend_check(self, v, a):
        return spec_refusal(a, "training_backend", training_backend=v)

    def targets_check(self, v: str, a: dict):
        if (err := _targets_check(list((self.mem.shape or {}).get("linears", {})))(v, a)) is not None:
            return err
        shape = self.mem.model_shape()
        problem = memory.adapter_problem(shape, training(a | {"lora_targets": v})) if shape else None
        return msg(problem[0], **problem[1]) if problem else None

    def dropout_default(self, a) -> float:
        """0 where LoRA reaches a MoE's fused experts (peft runs them only without dropout), else the default."""
        shape = self.mem.model_shape()
        return 0.0 if shape is not None and shape.param_lora_io else DEFAULTS.lora_dropout

    # -- the layout over GPUs and nodes -----------------------------------------------------------------------------
    def fits(self, a: dict, **change) -> bool:
        """Whether the least plan of the answers with ``change`` (checkpointing on, the objective's least
        micro-batch) fits the GPU, by the memory model."""
        t = training(a | {"activation_checkpointing": True, **_least(a), **change})
        return memory.estimate(self.mem.model_shape(), t, self.mem.gpu.memory_gib)["fits"]

    def distribution_asked(self, a) -> bool:
        """Several processes; or one whose plain plan (checkpointing on, micro-batch 1) does not fit its GPU, where
        ZeRO with offload is what makes it fit (ZeRO-Offload / ZeRO-Infinity on one GPU)."""
        if a["processes"] * a.get("nodes", 1) > 1:
            return True
        if self.mem.model_shape() is None or not memory.detect_gpus():
            return False
        return not self.fits(a, distribution="ddp", offload="none")

    def nvme_need(self, a) -> int:
        """Bytes the chosen offload puts on the disk (recipes/memory/model.py nvme_bytes)."""
        shape = self.mem.model_shape()
        return memory.nvme_bytes(shape, training(a | {"offload_device": "nvme"})) if shape is not None else 0

    def default_distribution(self, a) -> tuple[str, str]:
        """The least sharding that fits (memory model, checkpointing on, micro-batch 1): DDP, ZeRO-2, ZeRO-3, ZeRO-3
        with each sequence split over the GPUs (:meth:`default_sequence_parallel`), then ZeRO-3 with everything
        offloaded."""
        if self.mem.model_shape() is None:
            return "ddp", "none"
        for dist, off in (("ddp", "none"), ("zero2", "none"), ("zero3", "none"), ("zero3", "all")):
            if self.fits(a, distribution=dist, offload=off):
                return dist, off
            if (dist, off) == ("zero3", "none") and self.default_sequence_parallel(a | {"distribution": dist}) > 1:
                return dist, off
        return "zero3", "all"

    def default_sequence_parallel(self, a) -> int:
        """1 when the plan fits without it (checkpointing on, micro-batch 1); else the smallest degree the model's
        heads and the processes allow that makes it fit (recipes/memory/sharding.py), else 1."""
        shape = self.mem.model_shape()
        gpus = a["processes"] * a.get("nodes", 1)
        if shape is None or gpus < 2 or a.get("distribution") != "zero3":
            return 1
        base = a | {"offload": a.get("offload", "none")}
        for sp in sharding.sequence_parallel_degrees(shape, gpus):
            if training(base | {"sequence_parallel": sp}).sequence_parallel_conflict() is None \
                    and self.fits(base, sequence_parallel=sp):
                return sp
        return 1

    def sequence_parallel_check(self, v: int, a: dict):
        if (err := in_range(*limits("sequence_parallel"))(v, a)) is not None:
            return err
        t = training(a | {"sequence_parallel": v})
        shape = self.mem.model_shape()
        problem = t.sequence_parallel_conflict() or (sharding.sequence_parallel_problem(shape, t) if shape else None)
        return msg(problem[0], **problem[1]) if problem else None


def _lora(a: dict) -> bool:
    return a.get("method") not in FULL_WEIGHTS


def _sft(a: dict) -> bool:
    return a.get("objective", "sft") == "sft"


def _grpo(a: dict) -> bool:
    return a.get("objective") == "grpo"


def questions(ctx: Ctx) -> list[Question]:
    """choose_strategy's questions, in the order asked: what is optimized, the method and adapter, the data, the
    sequence and the GPUs, the batch and the plan, the run (steps, checkpoints, backup, trackers, the smoke run) —
    each group a function of the one :class:`Draft`."""
    d = Draft(ctx)
    return [*_objective_questions(d), *_method_questions(d), *_data_questions(d), *_layout_questions(d),
            *_batch_questions(d), *_run_questions(d)]


def _objective_questions(d: Draft) -> list[Question]:
    """What the training optimizes: supervised replies (SFT), a preference between replies (DPO, KTO) or rewards of the
    model's own replies (GRPO), and their knobs."""
    return [
        # what the training optimizes: the supervised replies, or a preference between two replies (trl's trainers)
        Question("objective", "select", "choose_strategy.objective", default=DEFAULTS.objective,
                 choices=[Choice(o, msg("choose_strategy.objective." + o)) for o in OBJECTIVES],
                 validate=lambda v, a: msg("training.objective_unsupported", objective=v.upper(),
                                           what=msg("training.conflict.vision_model"))
                 if v != "sft" and vision_model(d.ctx) else None),
        Question("dpo_beta", "float", "choose_strategy.dpo_beta",
                 asked_if="choose_strategy.asked_if.dpo", default=DEFAULTS.dpo_beta,
                 when=lambda a: a.get("objective") == "dpo", validate=in_range(*limits("dpo_beta"))),
        Question("sft_loss_weight", "float", "choose_strategy.sft_loss_weight",
                 asked_if="choose_strategy.asked_if.dpo", default=DEFAULTS.sft_loss_weight,
                 when=lambda a: a.get("objective") == "dpo", validate=in_range(*limits("sft_loss_weight"))),
        Question("kto_beta", "float", "choose_strategy.kto_beta",
                 asked_if="choose_strategy.asked_if.kto", default=DEFAULTS.kto_beta,
                 when=lambda a: a.get("objective") == "kto", validate=in_range(*limits("kto_beta"))),
        # GRPO: how its replies are scored, how many per prompt and how long, and how far from the reference
        Question("rewards", "checkbox", "choose_strategy.rewards",
                 asked_if="choose_strategy.asked_if.grpo", default=list(DEFAULTS.rewards), when=_grpo,
                 choices=[Choice(r, msg("choose_strategy.reward." + r)) for r in REWARDS], validate=_rewards_check),
        Question("reward_file", "path", "choose_strategy.reward_file",
                 asked_if="choose_strategy.asked_if.reward_file", when=lambda a: "file" in _rewards(a),
                 validate=_reward_file_check, way_back=("rewards",)),
        Question("num_generations", "int", "choose_strategy.num_generations",
                 asked_if="choose_strategy.asked_if.grpo", default=DEFAULTS.num_generations,
                 when=_grpo, validate=in_range(*limits("num_generations"))),
        Question("completion_length", "int", "choose_strategy.completion_length",
                 asked_if="choose_strategy.asked_if.grpo", default=DEFAULTS.completion_length, when=_grpo,
                 validate=in_range(*limits("completion_length"))),
        Question("grpo_beta", "float", "choose_strategy.grpo_beta",
                 asked_if="choose_strategy.asked_if.grpo", default=DEFAULTS.grpo_beta, when=_grpo,
                 validate=in_range(*limits("grpo_beta"))),
        # who generates the replies: transformers in the trainer, or vLLM colocated on the GPU (its own environment)
        Question("generation", "select", "choose_strategy.generation",
                 asked_if="choose_strategy.asked_if.grpo_gpu", default=DEFAULTS.generation,
                 when=lambda a: _grpo(a) and bool(memory.detect_gpus()),
                 choices=[Choice(g, msg("choose_strategy.generation." + g)) for g in GENERATIONS],
                 validate=lambda v, a: _generation_check(d.ctx, v, a)),
        Question("vllm_memory_utilization", "float", "choose_strategy.vllm_memory_utilization",
                 asked_if="choose_strategy.asked_if.vllm", default=DEFAULTS.vllm_memory_utilization,
                 when=lambda a: _grpo(a) and a.get("generation") == "vllm",
                 validate=in_range(*limits("vllm_memory_utilization"))),
    ]


def _generation_check(ctx: Ctx, v: str, a: dict):
    """vLLM for GRPO's replies: a CUDA GPU here, its training environment installed (the command that installs it
    otherwise), then the spec's rules (QLoRA)."""
    if v != "vllm":
        return None
    if not memory.detect_gpus():
        return msg("choose_strategy.vllm_needs_gpu")
    from recipes.training import backends

    if backends.find_vllm_generation(ctx.home) is None:
        return msg("training.no_vllm_generation", env=str(backends.vllm_generation_env(ctx.home)),
                   version=backends.VLLM_GENERATION_VERSION, command=backends.install_command(ctx.home, "vllm"))
    return spec_refusal(a, "generation", generation=v)


def _method_questions(d: Draft) -> list[Question]:
    """The method (LoRA, QLoRA, DoRA, full, GaLore), its master weights, and the adapter: rank, alpha, dropout, target
    modules."""
    return [
        Question("method", "select", "choose_strategy.method", default=d.recommended["method"],
                 choices=[Choice("lora", msg("choose_strategy.method.lora")),
                          Choice("qlora", msg("choose_strategy.method.qlora")),
                          Choice("dora", msg("choose_strategy.method.dora")),
                          Choice("full", msg("choose_strategy.method.full")),
                          Choice("galore", msg("choose_strategy.method.galore")),
                          # shown so that the reason is said where it is looked for (issue 23: no half version)
                          Choice("q-galore", msg("choose_strategy.method.q_galore"), refused=True)],
                 validate=lambda v, a: msg("choose_strategy.q_galore_unsupported") if v == "q-galore" else
                 _prequantized_check(d.sel, v) or spec_refusal(a, "method", method=v)),
        Question("galore_rank", "int", "choose_strategy.galore_rank",
                 asked_if="choose_strategy.asked_if.galore", default=DEFAULTS.galore_rank,
                 when=lambda a: a.get("method") == "galore", validate=in_range(*limits("galore_rank"))),
        Question("master_weights", "select", "choose_strategy.master_weights",
                 asked_if="choose_strategy.asked_if.full", default=DEFAULTS.master_weights,
                 when=lambda a: a.get("method") in FULL_WEIGHTS,
                 choices=[Choice(m, msg("choose_strategy.master_weights." + m)) for m in MASTER_WEIGHTS]),
        Question("lora_rank", "int", "choose_strategy.lora_rank",
                 asked_if="choose_strategy.asked_if.lora", default=DEFAULTS.lora_rank, when=_lora,
                 validate=in_range(*limits("lora_rank"))),
        Question("lora_alpha", "int", "choose_strategy.lora_alpha",
                 asked_if="choose_strategy.asked_if.lora", default=lambda a: 2 * a["lora_rank"], when=_lora,
                 validate=in_range(*limits("lora_alpha"))),
        # not under a preference objective: trl turns every dropout off there (DPOConfig.disable_dropout)
        Question("lora_dropout", "float", "choose_strategy.lora_dropout",
                 asked_if="choose_strategy.asked_if.lora_sft", default=d.dropout_default,
                 when=lambda a: _lora(a) and _sft(a),
                 validate=in_range(*limits("lora_dropout"))),
        Question("lora_targets", "text", "choose_strategy.lora_targets",
                 asked_if="choose_strategy.asked_if.lora", default=DEFAULTS.lora_targets, when=_lora,
                 validate=d.targets_check, way_back=("lora_dropout", "method")),
    ]


def _data_questions(d: Draft) -> list[Question]:
    """The data: bundled, a local file or a hub dataset, what to do with malformed records, a vision-language model's
    vision side and image size, the held-out share."""
    return [
        Question("dataset", "select", "choose_strategy.dataset", default="bundled",
                 choices=lambda a: [Choice("bundled", msg("choose_strategy.dataset.bundled" if _sft(a) else
                                                          "choose_strategy.dataset.bundled_prompts" if _grpo(a) else
                                                          "choose_strategy.dataset.bundled_pairs")),
                          Choice("local", msg("choose_strategy.dataset.local" if _sft(a) else
                                              "choose_strategy.dataset.local_kto" if a.get("objective") == "kto" else
                                              "choose_strategy.dataset.local_prompts" if _grpo(a) else
                                              "choose_strategy.dataset.local_pairs")),
                          Choice("hub", msg("choose_strategy.dataset.hub"))]),
        # a refused file: answer again, or go back to the data's source (the bundled set) or to the objective (a
        # supervised file given for DPO) — issue 46 item 8: there was no way back
        Question("dataset_path", "path", "choose_strategy.dataset_path",
                 asked_if="choose_strategy.asked_if.local_data", when=lambda a: a.get("dataset") == "local",
                 validate=d.dataset_ok, way_back=("dataset", "objective")),
        Question("dataset_repo", "text", "choose_strategy.dataset_repo",
                 asked_if="choose_strategy.asked_if.hub_data", when=lambda a: a.get("dataset") == "hub",
                 validate=d.repo_ok, way_back=("dataset",)),
        Question("dataset_file", "text", "choose_strategy.dataset_file",
                 asked_if="choose_strategy.asked_if.hub_data", default="*",
                 when=lambda a: a.get("dataset") == "hub"),
        Question("bad_records", "select", "choose_strategy.bad_records",
                 asked_if="choose_strategy.asked_if.bad_records", default="abort", when=d.has_bad,
                 choices=[Choice("abort", msg("choose_strategy.bad_records.abort")),
                          Choice("skip", msg("choose_strategy.bad_records.skip"))], validate=d.abort_check),
        # a vision-language model: which of its vision side trains beside the language model (frozen by default)
        Question("freeze_vision_tower", "confirm", "choose_strategy.freeze_vision_tower",
                 asked_if="choose_strategy.asked_if.vision", default=True,
                 when=lambda a: may_be_vision(d.ctx)),
        # not for QLoRA: the projector's layers are 4-bit there and cannot train whole (peft modules_to_save)
        Question("freeze_projector", "confirm", "choose_strategy.freeze_projector",
                 asked_if="choose_strategy.asked_if.vision", default=True,
                 when=lambda a: may_be_vision(d.ctx) and a.get("method") != "qlora"),
        # a dynamic-resolution processor (Qwen2-VL family): the most pixels per image, as a side (N: N × N pixels),
        # which sets the image tokens per image and with them memory and speed; 0 keeps the model's own
        Question("image_size", "int", "choose_strategy.image_size",
                 asked_if="choose_strategy.asked_if.vision", default=0, validate=_image_size_check,
                 when=lambda a: may_be_vision(d.ctx) and (not d.sel.config
                                                        or bool(_model_pixels(d.ctx)))),
        Question("val_ratio", "float", "choose_strategy.val_ratio", default=0.05, validate=in_range(0.0, 0.5)),
    ]


def _layout_questions(d: Draft) -> list[Question]:
    """The sequence length and where the training runs: processes, nodes, the distribution over them, offload and the
    sequence split."""
    return [
        Question("seq_len", "int", "choose_strategy.seq_len", default=default_seq_len(d.sel.max_position),
                 validate=lambda v, a: in_range(limits("seq_len")[0],
                                                d.sel.max_position or limits("seq_len")[1])(v, a) or (
                     msg("training.grpo_completion", completion=a["completion_length"], seq=v)
                     if _grpo(a) and v <= a.get("completion_length", 0) else None)),
        Question("processes", "int", "choose_strategy.processes", validate=_processes_check,
                 default=d.mem.gpu.count
                 if memory.detect_gpus() else 1),
        Question("nodes", "int", "choose_strategy.nodes", default=DEFAULTS.nodes, validate=in_range(*limits("nodes"))),
        Question("hosts", "text", "choose_strategy.hosts", when=lambda a: a.get("nodes", 1) > 1,
                 asked_if="choose_strategy.asked_if.several_nodes",
                 validate=_hosts_check),
        Question("master_port", "int", "choose_strategy.master_port", default=29500,
                 when=lambda a: a.get("nodes", 1) > 1, validate=in_range(1024, 65535),
                 asked_if="choose_strategy.asked_if.several_nodes"),
        Question("distribution", "select", "choose_strategy.distribution",
                 when=d.distribution_asked, default=lambda a: d.default_distribution(a)[0],
                 asked_if="choose_strategy.asked_if.several_processes",
                 choices=[Choice(d, msg("choose_strategy.distribution." + d), refused=d == "megatron")
                          for d in DISTRIBUTIONS],
                 validate=lambda v, a: _distribution_check(v, a) or (
                     msg("choose_strategy.prequantized_sharded", model=d.sel.name)
                     if v in ("zero3", "fsdp2") and prequantized.read(d.sel.config) is not None else None)),
        Question("offload", "select", "choose_strategy.offload",
                 when=lambda a: a.get("distribution", "ddp") not in ("ddp", "megatron"),
                 asked_if="choose_strategy.asked_if.sharded",
                 default=lambda a: d.default_distribution(a)[1],
                 choices=[Choice(o, msg("choose_strategy.offload." + o)) for o in OFFLOADS],
                 validate=lambda v, a: spec_refusal(a, "offload", offload=v, offload_device="cpu",
                                                    sequence_parallel=1)),
        # ZeRO-Infinity: the offloaded states in files on a fast disk instead of CPU memory (DeepSpeed, stage 3)
        Question("offload_device", "select", "choose_strategy.offload_device", default="cpu",
                 when=lambda a: a.get("distribution") == "zero3" and a.get("offload", "none") != "none",
                 asked_if="choose_strategy.asked_if.zero3_offload",
                 choices=[Choice(d, msg("choose_strategy.offload_device." + d)) for d in OFFLOAD_DEVICES],
                 validate=lambda v, a: (nvme.aio_missing() if v == "nvme" else None) or spec_refusal(
                     a, "offload_device", offload_device=v, sequence_parallel=1)),
        Question("nvme_path", "path", "choose_strategy.nvme_path",
                 when=lambda a: a.get("offload_device") == "nvme",
                 asked_if="choose_strategy.asked_if.nvme", validate=lambda v, a: nvme.path_problem(v, d.nvme_need(a))),
        # Ulysses sequence parallelism: offered with ZeRO-3 over several GPUs; its default splits a sequence that
        # does not fit otherwise
        Question("sequence_parallel", "int", "choose_strategy.sequence_parallel",
                 when=lambda a: a["processes"] * a.get("nodes", 1) > 1 and a.get("distribution") == "zero3",
                 asked_if="choose_strategy.asked_if.sequence_parallel", default=d.default_sequence_parallel,
                 validate=d.sequence_parallel_check),
    ]


def _batch_questions(d: Draft) -> list[Question]:
    """The batch and the plan: the batch size, the planner's plans, checkpointing, micro-batch, gradient accumulation,
    the backend and kernels, packing, the optimizer."""
    return [
        # GRPO: replies per optimizer step, whole groups of num_generations (two prompts' by default)
        Question("batch_size", "int", "choose_strategy.batch_size",
                 default=lambda a: 2 * a["num_generations"] if _grpo(a) else 16,
                 validate=_least_and_groups(in_range(1, 65536), lambda v: msg("training.kto_micro_batch", mb=v),
                                        groups=True)),
        Question("plan", "select", msg("choose_strategy.plan", gpu=d.mem.gpu.name or "?"), choices=d.plan_choices,
                 default=lambda a: (d.plan_choices(a) or [Choice(None, "")])[0].value),
        Question("activation_checkpointing", "confirm", "choose_strategy.activation_checkpointing",
                 default=lambda a: _plan_knobs(a)["ckpt"] if a.get("plan")
                 else d.recommended["activation_checkpointing"]),
        Question("micro_batch", "int", "choose_strategy.micro_batch",
                 validate=_least_and_groups(in_range(*limits("micro_batch")),
                                        lambda v: msg("training.kto_micro_batch", mb=v)),
                 default=lambda a: _plan_knobs(a)["mb"] if a.get("plan") else a["num_generations"] if _grpo(a)
                 else least_micro_batch(a.get("objective", "sft"))),
        Question("grad_accum", "int", "choose_strategy.grad_accum",
                 validate=lambda v, a: in_range(*limits("grad_accum"))(v, a) or (
                     spec_refusal(a, "grad_accum", grad_accum=v)),
                 default=lambda a: max(1, a["batch_size"] // a["micro_batch"])),
        Question("training_backend", "select", "choose_strategy.training_backend", when=lambda a: d.unsloth is not None,
                 choices=lambda a: [Choice("transformers", msg("choose_strategy.training_backend.transformers"))] + (
                     [Choice("unsloth", msg("choose_strategy.training_backend.unsloth",
                                            version=d.unsloth.version if d.unsloth else ""))]
                     if d.backend_check("unsloth", a) is None else []),  # only where it runs this method and layout
                 default=lambda a: _plan_knobs(a)["backend"] if a.get("plan") else DEFAULTS.training_backend,
                 validate=d.backend_check,
                 asked_if=msg("choose_strategy.asked_if.training_backend", version=backends.UNSLOTH_VERSION,
                              env=str(backends.unsloth_env(d.ctx.home)), command=backends.install_command(d.ctx.home))),
        Question("liger", "confirm", "choose_strategy.liger",
                 asked_if="choose_strategy.asked_if.liger",
                 when=lambda a: planner.liger_available() and a.get("training_backend") != "unsloth",
                 default=lambda a: _plan_knobs(a)["liger"] if a.get("plan") else False),
        Question("compile_layers", "confirm", "choose_strategy.compile_layers",
                 when=lambda a: planner.compile_available(training(a)) and not a.get("liger")
                 and a.get("training_backend") != "unsloth" and _sft(a),
                 asked_if="choose_strategy.asked_if.compile_layers",
                 default=lambda a: _plan_knobs(a)["compile"] if a.get("plan") else False),
        Question("packing", "confirm", "choose_strategy.packing",
                 asked_if="choose_strategy.asked_if.sft", default=DEFAULTS.packing, when=_sft,
                 validate=lambda v, a: spec_refusal(a, "packing", packing=v)),
        Question("optim", "select", "choose_strategy.optim",
                 asked_if="choose_strategy.asked_if.not_galore", default=DEFAULTS.optim,
                 when=lambda a: a["method"] != "galore",
                 choices=[Choice(o, msg("choose_strategy.optim." + o)) for o in OPTIMIZERS]),
    ]


def _run_questions(d: Draft) -> list[Question]:
    """The run: learning rate, steps or epochs, checkpoints, the adapters' backup, trackers, the sample question and
    the smoke run."""
    return [
        Question("learning_rate", "float", "choose_strategy.learning_rate",
                 default=lambda a: default_learning_rate(a["method"]), validate=in_range(*limits("learning_rate"))),
        Question("max_steps", "int", "choose_strategy.max_steps", default=DEFAULTS.max_steps,
                 validate=in_range(*limits("max_steps"))),
        Question("epochs", "float", "choose_strategy.epochs",
                 asked_if="choose_strategy.asked_if.epochs", default=DEFAULTS.epochs,
                 when=lambda a: a.get("max_steps") == 0,
                 validate=in_range(*limits("epochs"))),
        Question("save_steps", "int", "choose_strategy.save_steps", default=d.save_steps,
                 validate=in_range(*limits("save_steps"))),
        Question("save_total_limit", "int", "choose_strategy.save_total_limit", default=DEFAULTS.save_total_limit,
                 validate=in_range(*limits("save_total_limit"))),
        # periodic adapter backup (recipes/training/backup.py): adapters only, never a full model's checkpoints
        Question("backup", "select", "choose_strategy.backup", default="none",
                 when=lambda a: a["method"] in ADAPTER_METHODS,
                 asked_if="choose_strategy.asked_if.adapter",
                 choices=[Choice(h, msg("choose_strategy.backup." + h)) for h in ("none", *backup.HUBS)],
                 validate=_backup_token_check),
        Question("backup_repo", "text", "choose_strategy.backup_repo", when=_backing_up,
                 asked_if="choose_strategy.asked_if.backup", validate=_backup_repo_check),
        Question("backup_every", "int", "choose_strategy.backup_every", default=1, when=_backing_up,
                 asked_if="choose_strategy.asked_if.backup", validate=in_range(1, 10_000)),
        # a vision-language model is asked about the data's first image: its first question fits that image
        # experiment trackers beside TensorBoard, each to a store on this machine (recipes/training/trackers.py)
        Question("trackers", "checkbox", "choose_strategy.trackers", default=[],
                 choices=[Choice(n, msg("choose_strategy.tracker." + n) if trackers.installed(n) else
                                 msg("choose_strategy.tracker_not_installed", tracker=msg("choose_strategy.tracker." + n)))
                          for n in trackers.TRACKERS],
                 validate=_trackers_check),
        Question("sample_question", "text", "choose_strategy.sample_question",
                 # in the user's language (issue 46 trial G: English in the zh wizard)
                 default=lambda a: d.first_image_question(a) or d.ctx.t(msg("choose_strategy.sample_question_default")),
                 validate=_sample_question_check),
        Question("preflight", "confirm", "choose_strategy.preflight", default=True),
    ]


SAMPLE_QUESTION_CHARS = 2000  # asked before and after training, at deploy and by chat: a question, not a document


def _sample_question_check(v, a):
    """A sample question of at most SAMPLE_QUESTION_CHARS characters with some text in it (issue 46 trial I: a
    120 KB one was taken silently and asked of the model at every check)."""
    if not str(v).strip():
        return msg("choose_strategy.sample_question_empty")
    if len(str(v)) > SAMPLE_QUESTION_CHARS:
        return msg("choose_strategy.sample_question_long", n=f"{len(str(v)):,}", max=f"{SAMPLE_QUESTION_CHARS:,}")
    return None


ADAPTER_METHODS = ("lora", "qlora", "dora")


def _prequantized_check(sel: ModelChoice, method: str):
    """A pre-quantized base trains with LoRA only (recipes/training/packed.py keeps it quantized); one whose format
    cannot be held that way trains with nothing."""
    pq = prequantized.read(sel.config)
    if pq is None:
        return None
    if not pq.trainable:
        return msg("choose_strategy.prequantized_unsupported", model=sel.name, what=pq.reason)
    if method != "lora":
        return msg("choose_strategy.prequantized_lora_only", model=sel.name, label=pq.label, method=method)
    return None


def _trackers_check(v, a):
    """The trackers chosen: known ones, installed here (else the line that installs the first missing one)."""
    if not isinstance(v, list) or any(n not in trackers.TRACKERS for n in v):
        return msg("answer.not_a_choice", value=str(v)[:80], choices=list(trackers.TRACKERS))
    missing = [n for n in v if not trackers.installed(n)]
    return msg("choose_strategy.tracker_missing", tracker=missing[0], command=trackers.install_command(missing[0])) \
        if missing else None


def _least_and_groups(check, refusal, groups: bool = False):
    """``check`` (an in_range validator, its ``.bounds`` kept for `yichui steps --keys`), refusing with
    ``refusal(value)`` first a number under the objective's least micro-batch (KTO: 2); with ``groups`` (the batch
    size) under GRPO, a number of replies that is not whole groups of num_generations."""
    def wrapped(v, a):
        if groups and a.get("objective") == "grpo" and isinstance(v, int) and v % a.get("num_generations", 1):
            return msg("training.grpo_groups", replies=v, n=a["num_generations"])
        return refusal(v) if v < least_micro_batch(a.get("objective", "sft")) else check(v, a)
    wrapped.bounds = check.bounds  # type: ignore[attr-defined]
    return wrapped


def _least(a: dict) -> dict:
    """The smallest micro-batch the objective trains with, for the probes that ask the memory model whether a plan
    fits (KTO: 2); GRPO's one reply per micro-batch, accumulated over a prompt's group of num_generations."""
    if a.get("objective") == "grpo":
        return {"micro_batch": 1, "grad_accum": a.get("num_generations", DEFAULTS.num_generations)}
    return {"micro_batch": least_micro_batch(a.get("objective", "sft"))}


def _rewards(a: dict) -> list:
    """The reward functions chosen so far (GRPO), as a list."""
    r = a.get("rewards", list(DEFAULTS.rewards))
    return list(r) if isinstance(r, (list, tuple)) else [r]


def _rewards_check(v, a):
    """At least one, each a known reward function."""
    if not isinstance(v, list) or any(r not in REWARDS for r in v):
        return msg("answer.not_a_choice", value=str(v)[:80], choices=list(REWARDS))
    return msg("training.grpo_no_rewards") if not v else None


def _reward_file_check(v, a):
    """The user's reward file loads in its own process and defines a reward function (recipes/training/rewards.py):
    said here, not after the download and the smoke run."""
    from recipes.training import rewards

    try:
        names = rewards.check_file(v, [])
    except rewards.RewardError as e:
        return e.msg
    return None if names else msg("rewards.none_defined", path=v)


def _backing_up(a: dict) -> bool:
    return a.get("method") in ADAPTER_METHODS and a.get("backup", "none") != "none"


def _backup_token_check(v: str, a: dict):
    """A hub backup needs its token in the environment (the only place yichui takes it from), checked now rather
    than at the first checkpoint."""
    import os

    if v in backup.TOKEN_VARS and not os.environ.get(backup.TOKEN_VARS[v]):  # another value: not a choice
        return msg("choose_strategy.backup_no_token", hub=backup.HUB_NAMES[v], var=backup.TOKEN_VARS[v])
    return None


def _backup_repo_check(v: str, a: dict):
    if not hub.is_repo_id(v):
        return msg("select_model.bad_id", value=v)
    return None


def training(answers: dict) -> TrainingSpec:
    """The spec these answers choose (their keys are its field names); what the trainer runs and the memory model
    estimates: plain data parallel keeps the whole model states on every GPU; ZeRO-1/2/3 and FSDP2 (sharded like
    ZeRO-3) divide them over all processes of all nodes."""
    return TrainingSpec.from_dict(answers)


def _processes_check(v: int, a: dict):
    """1..64; on a machine with GPUs at most one process per GPU it has (two processes cannot share one: NCCL
    refuses a duplicate GPU). Without GPUs, processes train on the CPU (gloo), as many as asked."""
    if (err := in_range(*limits("processes"))(v, a)) is not None:
        return err
    gpus = memory.detect_gpus()
    if gpus and v > len(gpus):
        return msg("choose_strategy.processes_over_gpus", n=v, gpus=len(gpus))
    return None


_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?|\[?[0-9A-Fa-f:]+\]?")


def _hosts_check(v: str, a: dict):
    """Comma-separated host names or addresses, one per node; the first is this machine (the master)."""
    from recipes.training.rendezvous import split_hosts

    hosts = split_hosts(v)
    bad = [h for h in hosts if not _HOST.fullmatch(h)]
    if bad:
        return msg("choose_strategy.bad_host", host=bad[0])
    if len(hosts) != a.get("nodes", 1):
        return msg("choose_strategy.hosts_count", count=len(hosts), nodes=a.get("nodes", 1))
    return None


def spec_refusal(a: dict, field: str, **change):
    """The message of the first rule the answers ``a`` with ``change`` applied break that involves ``field`` (the
    question being answered; TrainingSpec.problems), or None: the wizard asks the spec (the one home of the
    cross-field rules, which ``yichui estimate``, the planner and the trainer ask too) instead of restating its
    rules, and says each at a question of its own fields. ``change`` also sets questions still to come that an
    earlier pass answered back to values that refuse nothing."""
    found = training(a | change).problems(field)
    return msg(found[0].refusal.key, **found[0].refusal.params) if found else None


def _distribution_check(v: str, a: dict):
    """What this machine lacks for ``v`` (DeepSpeed, GPUs for FSDP2), then the spec's rules for it."""
    import importlib.util

    if v == "megatron":
        return msg("choose_strategy.megatron_out_of_scope")
    if v.startswith("zero") and importlib.util.find_spec("deepspeed") is None:
        return msg("training.no_deepspeed")
    if v == "fsdp2" and not memory.detect_gpus():
        return msg("choose_strategy.fsdp_needs_gpus")
    return spec_refusal(a, "distribution", distribution=v, offload="none", offload_device="cpu", sequence_parallel=1)


def _plan_value(p) -> str:
    """The plan's answer: ``ckpt=on|off,mb=N,liger=on|off`` and ``,compile=on`` when it compiles the layers (a plan
    recorded before compiled layers existed stays a valid answer)."""
    return (f"ckpt={'on' if p.ckpt else 'off'},mb={p.micro_batch},liger={'on' if p.liger else 'off'}"
            + (",compile=on" if p.compile_layers else "")
            + (f",backend={p.training_backend}" if p.training_backend != "transformers" else ""))


def _plan_knobs(a: dict) -> dict:
    """The knobs of a plan answer (no ``compile`` part: not compiled; no ``backend`` part: yichui's trainer)."""
    kv = dict(part.split("=") for part in str(a["plan"]).split(","))
    return {"ckpt": kv["ckpt"] == "on", "mb": int(kv["mb"]), "liger": kv["liger"] == "on",
            "compile": kv.get("compile") == "on", "backend": kv.get("backend", "transformers")}


def _dataset_hub(ctx: Ctx) -> tuple[str, str]:
    """(source, endpoint) a hub dataset comes from: the model's hub, or (a local model) Hugging Face at HF_ENDPOINT."""
    sel = ctx.result(ModelChoice)
    source = sel.source if sel.source in ("hf", "modelscope") else "hf"
    return source, (sel.endpoint if sel.source == source else None) or str(hub.default_endpoint(source))


def dataset_path(ctx: Ctx, answers: dict) -> str:
    """The dataset reference (``path`` or ``path#N``): bundled, local, or a file of a hub dataset fetched with the
    download step's code into YICHUI_HOME/datasets (the pattern may end in ``#N``)."""
    if answers["dataset"] == "bundled":
        return _bundled(answers.get("objective", "sft"))
    if answers["dataset"] == "local":
        return answers["dataset_path"]
    import fnmatch

    from recipes.hub import snapshot

    source, endpoint = _dataset_hub(ctx)
    pattern, sample = datasets.split_sample(answers.get("dataset_file") or "*")
    out = snapshot.fetch(source, answers["dataset_repo"], endpoint, "main",
                         ctx.home / "datasets" / source / answers["dataset_repo"], ctx.progress, ctx.info,
                         repo_type="dataset")
    files = sorted(f["path"] for f in out["files"] if f["path"].endswith(datasets.SUFFIXES)
                   and fnmatch.fnmatch(f["path"], str(pattern)))
    if not files:
        raise StepError("choose_strategy.no_data_file", repo=answers["dataset_repo"], pattern=str(pattern))
    ref = str(Path(out["model_dir"]) / files[0])
    return f"{ref}#{sample}" if sample else ref


def _say_what_deploy_needs(ctx: Ctx) -> None:
    """Before training, not after it and the export (issue 46 item 21): a model that runs its own code is served by
    vLLM or SGLang only (transformers serve resolves architectures among its own classes); said now when neither is
    installed here and the task deploys, with the line that installs one — training goes on (the copy may be served
    on another machine)."""
    import recipes
    from recipes.envs import envs_dir
    from recipes.serving import engines
    from recipes.serving import spec as specs

    if not trusted(ctx) or "deploy" not in recipes.TASKS.get(ctx.task, ()):
        return
    if any(engines.find(e, envs_dir(ctx.home)) for e in specs.GPU_ENGINES):
        return
    hint = engines.install_hint(specs.GPU_ENGINES[0], envs_dir(ctx.home)) if memory.detect_gpus() else \
        msg("choose_strategy.serve_on_a_gpu_machine")  # no use installing a GPU engine on this machine
    ctx.warn(msg("choose_strategy.custom_code_needs_gpu_engine", hint=hint))


def run(ctx: Ctx, answers: dict) -> StrategyChoice:
    from transformers import AutoTokenizer

    path = dataset_path(ctx, answers)
    skip = answers.get("bad_records") == "skip"
    rejected: list = []  # a preference objective's rejected replies (prompt + rejected), rendered and shown too
    if answers.get("objective", "sft") == "sft":
        loaded = datasets.load(path, skip_bad=skip, images=True)  # image records: for a vision-language model only
        convs, fmt = loaded.conversations, loaded.format
        units: list = convs  # what the trainer splits and steps over
    elif answers["objective"] == "grpo":  # prompts; the replies are the model's own, scored by the reward functions
        got = prompts.load(path, skip_bad=skip)
        units, fmt = got.records, "prompts"
        if "accuracy" in _rewards(answers) and not got.answered:
            raise StepError("choose_strategy.grpo_no_answers", path=path)
        convs = [r["prompt"] for r in units]
    else:  # preference records (the trainer's), seen through their preferred replies; KTO's unpaired form not DPO's
        pairs = preference.load(path, skip_bad=skip)
        kto = answers["objective"] == "kto"
        if pairs.format != preference.PAIRED and not kto:
            raise StepError("choose_strategy.unpaired_for_dpo", path=path, objective=answers["objective"].upper())
        units, fmt = pairs.records, pairs.format
        convs = preference.chosen_conversations(units)
        rejected = [r["prompt"] + r["rejected"] for r in units if "rejected" in r] + \
            [r["prompt"] + r["completion"] for r in units if "completion" in r and not r["label"]]

    read = loaded if answers.get("objective", "sft") == "sft" else got if answers["objective"] == "grpo" else pairs
    if read.bad and not ctx.interactive:  # skipped: which ones (asked interactively, after the file's question)
        ctx.warn(msg("data.bad_records_found", count=len(read.bad), total=read.total, where=read.bad[:5]))
    n_images = sum(datasets.has_images(c) for c in convs)
    vlm = vision_model(ctx)
    if n_images and not vlm:  # read and checked; a text model cannot take them
        raise StepError("choose_strategy.images_need_vlm", path=path, n=n_images)
    train, held = datasets.train_validation(units, answers.get("val_ratio", 0.0))
    if answers.get("objective") == "kto":  # both kinds of reply among those trained on; the rarer weighted up
        trained = preference.unpaired(train)
        n_good = sum(r["label"] for r in trained)
        try:
            weights = preference.kto_weights(trained)
        except ValueError:
            raise StepError("choose_strategy.kto_one_sided", path=path, desirable=n_good,
                            undesirable=len(trained) - n_good) from None
    meta = metadata_dir(ctx)
    if n_images:  # the processor's chat template renders them, as the trainer will (image entries as parts)
        from recipes.model import vision

        try:
            tok = vision.load_processor(meta)
        except (OSError, ValueError, ImportError, AttributeError) as e:
            raise StepError("choose_strategy.no_processor", model=ctx.result(ModelChoice).repo_id or meta,
                            error=str(e).splitlines()[0][:160] if str(e) else type(e).__name__) from None
        shown = [r["prompt"] + r["completion"] for r in datasets.to_prompt_completion(convs)]
    else:
        tok, shown = AutoTokenizer.from_pretrained(meta, trust_remote_code=trusted(ctx)), convs
    if not tok.chat_template:
        raise StepError("choose_strategy.no_chat_template",
                        model=ctx.result(ModelChoice).repo_id or meta).caused_by("select_model")
    _say_what_deploy_needs(ctx)
    if answers.get("offload_device") == "nvme":  # the disk the states will be swapped to, measured once
        try:
            gbps = nvme.write_speed(answers["nvme_path"])
        except OSError as e:
            raise StepError("training.nvme_unusable", path=answers["nvme_path"],
                            error=e.strerror or str(e)) from None
        (ctx.warn if gbps < nvme.SLOW_GBPS else ctx.info)(msg(
            "choose_strategy.nvme_speed", path=answers["nvme_path"], gbps=f"{gbps:.2f}", slow=nvme.SLOW_GBPS))
    if (plan := training(answers)).offloaded:  # the offloaded states (or NVMe's swap buffers) in this machine's RAM
        _say_host_ram(ctx, plan)
    grpo = answers.get("objective") == "grpo"
    rendered = _render_all(tok, shown, generation_prompt=grpo) + _render_all(tok, rejected)
    if rejected:  # the first pair (KTO: desirable and undesirable reply): both, as the trainer renders them
        samples = [rendered[0], rendered[len(shown)]]
        ctx.info(msg("choose_strategy.sample_pair" if fmt == preference.PAIRED else "choose_strategy.sample_unpaired",
                     chosen=samples[0], rejected=samples[1]))
    else:
        samples = rendered[:2]
        for i, s in enumerate(samples, 1):
            ctx.info(msg("choose_strategy.sample", i=i, text=s))
    ctx.info(msg("choose_strategy.dataset_summary", n=len(units), path=path, format=fmt, train=len(train),
                 val=len(held)))
    if grpo:  # how the replies are made and scored, and the reward file tried on the data's own answers
        spec = training(answers)
        if "file" in spec.rewards:
            from recipes.training import rewards

            names = rewards.check_file(spec.reward_file, units)
            ctx.info(msg("choose_strategy.reward_file_ok", path=spec.reward_file, functions=list(names)))
        ctx.info(msg("choose_strategy.grpo_plan", answered=sum(r["answer"] is not None for r in units), n=len(units),
                     g=spec.num_generations, c=spec.completion_length, p=spec.prompts_per_step,
                     rewards=list(spec.rewards), beta=spec.grpo_beta))
    if rejected and answers["objective"] == "kto":  # what the trainer's loss will be, and the weights it takes
        ctx.info(msg("choose_strategy.kto_loss", beta=training(answers).kto_beta, desirable=n_good,
                     undesirable=len(trained) - n_good, wd=weights[0], wu=weights[1]))
    elif rejected:  # DPO's, plus the SFT term when one is weighted in
        spec = training(answers)
        ctx.info(msg("choose_strategy.dpo_loss_sft" if spec.sft_loss_weight else "choose_strategy.dpo_loss",
                     beta=spec.dpo_beta, weight=spec.sft_loss_weight))
    mem = ctx.result(MemoryEvaluation)
    gpu = mem.gpu
    # the memory model counts each record's images (its image tokens and the tower's activations): the most any has
    images = max((sum(p["type"] == "image" for m in c if isinstance(m["content"], list) for p in m["content"])
                  for c in convs), default=0)
    # and their size: the side chosen, else (0: the processor's own limit) the largest image of the data within it
    side = answers.get("image_size") or (_data_image_side(convs, _model_pixels(ctx)) if images else 0)
    # sequences as long as the data's longest record (micro-batches are padded to their longest), unless packing
    # fills every one to seq_len; image records are never truncated, so seq_len does not bound them
    longest = _longest_tokens(getattr(tok, "tokenizer", tok), rendered)
    seq = training(answers).seq_len
    packed = bool(answers.get("packing")) and not images
    est_seq = seq if packed or not longest else longest if images else min(seq, longest)
    if grpo:  # a prompt and its generated reply: the longest prompt plus the completion length, within seq_len
        if longest and longest + training(answers).completion_length > seq:
            record = max(range(len(shown)), key=lambda i: len(rendered[i])) + 1  # the longest, by its text
            raise StepError("choose_strategy.grpo_prompt_too_long", tokens=longest, record=record,
                            completion=training(answers).completion_length, seq=seq,
                            most=ctx.result(ModelChoice).max_position or limits("seq_len")[1])
        est_seq = (longest or seq - training(answers).completion_length) + training(answers).completion_length
    sized = {}  # vLLM's share of the GPU for GRPO's replies, when yichui sizes it: every reply at the full seq_len
    if grpo and answers.get("generation") == "vllm" and not answers.get("vllm_memory_utilization"):
        vllm = memory.vllm_generation(mem.model_shape(), training(answers), gpu.memory_gib)
        sized = {"vllm_memory_utilization": vllm["utilization"]}
        t_full = training(answers)
        ctx.info(msg("choose_strategy.vllm_share", util=vllm["utilization"], gib=f"{vllm['pool_gib']:.1f}",
                     gpu=gpu.name, weights=f"{vllm['weights_gib']:.1f}", kv=f"{vllm['kv_gib']:.1f}",
                     replies=t_full.micro_batch * t_full.grad_accum, seq=t_full.seq_len))
    est = memory.estimate(mem.model_shape(), training(answers | sized | {"images_per_sample": images,
                                                                         "image_size": side, "seq_len": est_seq}),
                          gpu.memory_gib)
    fits = est["fits"]
    basis = msg("choose_strategy.seq_longest", tokens=est_seq) if est_seq != seq or images else \
        msg("choose_strategy.seq_setting", tokens=seq)
    ctx.info(msg("choose_strategy.estimate", peak=est["peak_gib"], gpu=gpu.name, gib=gpu.memory_gib,
                 margin=f"{est['margin_gib']:+.1f}", basis=ctx.t(basis)))
    if est["approximate"]:  # priced with a larger margin where it asks for one (memory.extra_margin)
        ctx.warn(msg("evaluate_memory.approximate", what=[memory.approximate_words(n) for n in est["approximate"]]))
    if not fits:
        ctx.warn(msg("choose_strategy.may_not_fit", peak=est["peak_gib"], gib=gpu.memory_gib,
                     pct=f"{est['needed_margin'] * 100:.0f}"))
    # the speed model's tokens/s on the target GPU for the chosen knobs, and how long the planned steps take at it
    t = training(answers | {"seq_len": est_seq})
    per_gpu = planner.predicted(mem.model_shape(), t, gpu.name or "")
    tps = per_gpu * t.gpus
    # KTO trains on replies: a pair is two records there (preference.unpaired)
    n_trained = len(preference.unpaired(train)) if t.objective == "kto" else len(train)
    steps = t.max_steps or math.ceil(n_trained * t.epochs / max(1, t.prompts_per_step))  # GRPO: prompts per step
    if train and t.prompts_per_step > n_trained:  # every optimizer step sees some records twice (issue 46 item 21)
        ctx.warn(msg("choose_strategy.batch_over_data", batch=t.effective_batch, mb=t.micro_batch, ga=t.grad_accum,
                     gpus=t.data_parallel, n=n_trained))
    modelled = planner.speed_modelled(t, mem.model_shape())
    if modelled:
        compiling = planner.compile_seconds(t)
        ctx.info(msg("choose_strategy.eta", tps=f"{per_gpu:,.0f}", gpu=gpu.name, n=t.gpus, seq=est_seq, steps=steps,
                     eta=planner.duration_msg(steps * planner.sequences_per_record(t) * t.effective_batch
                                              * est_seq / tps + compiling)))
        if compiling:
            ctx.info(msg("choose_strategy.eta_compile" if t.packing else "choose_strategy.eta_recompile",
                         seconds=f"{compiling:.0f}", n=planner.RECOMPILES_UNPACKED,
                         each=f"{planner.RECOMPILE_S:.0f}"))
    else:
        ctx.info(msg("choose_strategy.eta_unknown_grpo" if t.objective == "grpo" else "choose_strategy.eta_unknown",
                     steps=steps))
    data = DataChoice(source=answers.get("dataset", "bundled"), path=path, repo=answers.get("dataset_repo"),
                      file=answers.get("dataset_file"), format=fmt, skip_bad_records=skip,
                      val_ratio=answers.get("val_ratio", 0.0), n_records=len(units), n_train=len(train),
                      n_validation=len(held))
    chosen = StrategyChoice(training=StrategyChoice.strategy_of(answers | sized | {"images_per_sample": images}),
                            data=data,
                            backup=StrategyChoice.backup_of(answers), samples=samples, estimate=est, fits=fits,
                            effective_batch=training(answers).effective_batch,
                            predicted_tokens_per_s=round(tps, 1) if modelled else None, planned_steps=steps)
    if answers.get("preflight", True):
        from recipes.training import preflight

        chosen.preflight = preflight.smoke_run(ctx, chosen.job(trust_remote_code=trusted(ctx)), meta,
                                               available=len(units))
    return chosen


def _model_pixels(ctx: Ctx) -> int | None:
    from recipes.model import vision

    return vision.max_pixels(metadata_dir(ctx))


def _data_image_side(convs: list, limit: int | None, n: int = 256) -> int:
    """The side (pixels) of the largest image among the first ``n`` image records, as a dynamic-resolution
    processor keeps it: its area capped at ``limit`` pixels; 0 for a fixed-size tower (``limit`` None: the memory
    model takes the tower's own size) or when no image opens. PIL reads only the headers."""
    if not limit:
        return 0
    import io

    from PIL import Image

    area = 0
    seen = 0
    for c in convs:
        parts = [p for m in c if isinstance(m["content"], list) for p in m["content"] if p["type"] == "image"]
        for p in parts:
            src = p["image"]
            try:
                with Image.open(io.BytesIO(src) if isinstance(src, bytes) else src) as img:
                    area = max(area, img.width * img.height)
            except (OSError, ValueError, Image.DecompressionBombError):
                continue
        seen += bool(parts)
        if seen >= n:
            break
    return int(math.sqrt(min(area, limit))) if area else 0


def _image_size_check(v: int, a: dict):
    """0 (the model's own), or a side of 28 (one merged patch of Qwen2-VL) to 16384 pixels."""
    return None if v == 0 else in_range(28, limits("image_size")[1])(v, a)


def _local_data(a: dict) -> str | None:
    """The chosen data's reference when it is on this machine (bundled or a local file); None for a hub dataset
    (fetched when the step runs)."""
    if a.get("dataset") == "bundled":
        return _bundled(a.get("objective", "sft"))
    return a.get("dataset_path") if a.get("dataset") == "local" else None


def _bundled(objective: str) -> str:
    """The bundled data of an objective: conversations (SFT), arithmetic prompts (GRPO), else preference pairs."""
    return str(datasets.bundled_dataset_path() if objective == "sft" else prompts.bundled_prompts_path()
               if objective == "grpo" else preference.bundled_preferences_path())


def _read(ref: str, objective: str):
    """The dataset as the objective reads it: ``datasets.read`` (conversations) for SFT, ``prompts.read`` for GRPO,
    ``preference.read`` (pairs) otherwise. Raises DataError as they do."""
    return datasets.read(ref) if objective == "sft" else prompts.read(ref) if objective == "grpo" \
        else preference.read(ref)


def may_be_vision(ctx: Ctx) -> bool:
    """A vision-language model, or not known yet (a --set checked before step 1 has run: its questions are
    offered then, and asked — or refused as unused — once the model is known)."""
    return not ctx.result(ModelChoice).config or vision_model(ctx)


def vision_model(ctx: Ctx) -> bool:
    """Whether the chosen model is a vision-language model (its config.json has a ``vision_config``)."""
    config = ctx.result(ModelChoice).config or {}
    return isinstance(config, dict) and isinstance(config.get("vision_config"), dict)


LONGEST_CANDIDATES = 2048


def _longest_tokens(tokenizer, rendered: list[str]) -> int:
    """The most tokens of any rendered record (an image placeholder counts one: the memory model adds each image's
    tokens itself), counted on the :data:`LONGEST_CANDIDATES` longest by characters — tokenizing every record of a
    large dataset would take minutes; tokens per character differ by script, not enough to move the longest record
    out of the top 2,048 in practice. 0 when nothing could be counted."""
    top = sorted(rendered, key=len, reverse=True)[:LONGEST_CANDIDATES]
    try:
        ids = tokenizer(top, add_special_tokens=False)["input_ids"] if top else []
    except Exception:  # a tokenizer that cannot batch strings: the setting's seq_len stands
        return 0
    return max((len(x) for x in ids), default=0)


def _say_host_ram(ctx: Ctx, t: TrainingSpec) -> None:
    """How much host RAM the chosen offload holds (recipes/memory/model.py host_bytes) against what this machine has
    available: a warning when it does not fit (DeepSpeed would fail pinning it, or the kernel kill the trainer, after
    the download), said, not refused: the figure is calibrated on one run only."""
    from recipes import doctor

    need = memory.host_bytes(ctx.result(MemoryEvaluation).model_shape(), t)["total"]
    have = doctor.host_memory()
    if have is None:
        return
    gib = memory.GIB
    args = {"need": f"{need / gib:.1f}", "avail": f"{have[0] / gib:.1f}", "total": f"{have[1] / gib:.1f}",
            "what": msg(memory.host_ram_what(t))}
    if need > have[0]:
        ctx.warn(msg("choose_strategy.host_ram_short", **args))
    else:
        ctx.info(msg("choose_strategy.host_ram", **args))


def _render_all(tok, convs: list, generation_prompt: bool = False) -> list[str]:
    """Every conversation through the chat template (text only, no tokenizing: seconds for 100k records), so that a
    template that rejects some record (a system turn, an unknown role) is found here, not at that record in training.

    Raises:
        StepError: the first record the template rejects, with the template's own message.
    """
    out = []
    for i, c in enumerate(convs, 1):
        try:
            out.append(tok.apply_chat_template(c, tokenize=False, add_generation_prompt=generation_prompt))
        except Exception as e:  # jinja2's TemplateError, or whatever the template raises
            raise StepError("choose_strategy.template_failed", record=i,
                            error=f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:200]) from None
    return out


def is_done(ctx: Ctx, record: Record) -> bool:
    return "training" in record.outputs
