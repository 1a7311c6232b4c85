"""Step 2 — evaluate GPU memory: detect GPUs (or let the user pick a target GPU) and show, per strategy, the
predicted peak memory per GPU, whether it fits with a 10 % margin, and the smallest cloud instance it fits on.
The model and its calibration: recipes/memory/model.py, bench/results/."""
from __future__ import annotations

from recipes.memory import model as memory
from recipes.base import Choice, Ctx, Question, Record, msg
from recipes.handoff import Gpu, MemoryEvaluation, ModelChoice, metadata_dir, trusted
from recipes.training.spec import DISTRIBUTION_LABEL, TrainingSpec, default_seq_len, limits

name = "evaluate_memory"
requires = ("select_model",)

# (method, activation checkpointing) in the order shown; micro-batch 1, LoRA rank 8 on all linear layers
STRATEGIES = [(m, c) for m in ("full", "lora", "qlora") for c in (False, True)]
PREFERENCE = (("lora", False), ("lora", True), ("qlora", True), ("full", True))


def questions(ctx: Ctx) -> list[Question]:
    gpus = memory.detect_gpus()
    lo, hi = limits("processes")
    choices = []
    if gpus:
        choices.append(Choice("detected", f"{gpus[0]['name']} ({gpus[0]['memory_gib']} GiB) × {len(gpus)}"))
    choices += [Choice(k, f"{n} ({g} GiB)") for k, (n, g) in memory.GPUS.items()]
    return [
        # with no GPU here the question says so itself: the line saying it came after the answer (issue 46 trial G)
        Question("target_gpu", "select", ("evaluate_memory.target_gpu_serve" if ctx.task == "deploy"
                                          else "evaluate_memory.target_gpu") + ("" if gpus else "_none"), choices=choices,
                 default="detected" if gpus else "a10-24g"),
        # the trainer's range for processes on a node (TrainingSpec), so the strategy never refuses what this took
        Question("gpu_count", "int", "evaluate_memory.gpu_count", default=len(gpus) or 1,
                 validate=lambda v, a: None if lo <= v <= hi else msg("answer.out_of_range", lo=lo, hi=hi)),
    ]


def target(answers: dict) -> Gpu:
    """The GPU sized for: the one detected, or a row of recipes.memory.model.GPUS; ``gpu_count`` of them."""
    if answers["target_gpu"] == "detected":
        g = memory.detect_gpus()[0]
        return Gpu(g["name"], g["memory_gib"], True, answers["gpu_count"])
    name_, gib = memory.GPUS[answers["target_gpu"]]
    return Gpu(name_, gib, False, answers["gpu_count"])


def assumed_seq(config: dict) -> int:
    return default_seq_len(config.get("max_position_embeddings"))


def shape_of(config: dict, code_dir=None) -> memory.Shape:
    return memory.shape_from_config(config, code_dir)


def training_for(method: str, ckpt: bool, seq: int, gpus: int) -> TrainingSpec:
    """The strategy rows: one GPU, or data parallel over ``gpus`` with the most sharding the method allows
    (recipes/memory/model.py sharded_distribution: ZeRO-3; QLoRA ZeRO-2)."""
    return TrainingSpec(method=method, activation_checkpointing=ckpt, seq_len=seq, processes=gpus,
                        distribution=memory.sharded_distribution(method) if gpus > 1 else "ddp")


def run(ctx: Ctx, answers: dict) -> MemoryEvaluation:
    gpus = memory.detect_gpus()
    serving_view = ctx.task == "deploy"
    if not gpus:
        ctx.info(msg("evaluate_memory.no_gpu_serving" if serving_view else "evaluate_memory.no_gpu"))
    config = ctx.result(ModelChoice).config or {}
    shape = shape_of(config, str(metadata_dir(ctx)) if trusted(ctx) else None)
    gpu = target(answers)
    if serving_view:
        return serving(ctx, shape, gpu, gpus)
    seq = assumed_seq(config)
    rows, estimates = [], []
    # a base kept quantized trains with LoRA only (recipes/training/packed.py)
    strategies = [s for s in STRATEGIES if s[0] == "lora"] if shape.prequantized_bytes else STRATEGIES
    for method, ckpt in strategies:
        t = training_for(method, ckpt, seq, gpu.count)
        e = memory.estimate(shape, t, gpu.memory_gib)
        inst = memory.smallest_instance(shape, t)
        estimates.append({"method": method, "activation_checkpointing": ckpt, "instance": inst} | e)
        rows.append((method, ctx.t("ui.on" if ckpt else "ui.off"), f"{e['peak_gib']:.2f}",
                     ctx.t("ui.yes" if e["fits"] else "ui.no"), f"{e['margin_gib']:+.1f}",
                     f"{inst['count']}× {inst['name']}" if inst else "—"))
    ctx.table(msg("evaluate_memory.table", gpu=gpu.name, gib=gpu.memory_gib, n=gpu.count, seq=seq),
              [msg("evaluate_memory.col.method"), msg("evaluate_memory.col.ckpt"), msg("memory.col.peak"),
               msg("evaluate_memory.col.fits"), msg("evaluate_memory.col.margin"),
               msg("evaluate_memory.col.instance")], rows)
    by = {(e["method"], e["activation_checkpointing"]): e for e in estimates}
    chosen = next((p for p in PREFERENCE if p in by and by[p]["fits"]), None)
    if chosen is None:
        ctx.warn(msg("evaluate_memory.nothing_fits", gpu=gpu.name))
        chosen = ("lora", True) if shape.prequantized_bytes else ("qlora", True)
    best = by[chosen]
    cols, parts = memory.breakdown(best)
    dist = memory.sharded_distribution(chosen[0])
    plan = msg("evaluate_memory.breakdown_sharded", n=gpu.count, dist=DISTRIBUTION_LABEL[dist]) \
        if gpu.count > 1 else ""
    ctx.table(msg("evaluate_memory.breakdown", method=chosen[0], ckpt=ctx.t("ui.on" if chosen[1] else "ui.off"),
                  plan=plan),
              [msg(c) for c in cols], [(ctx.t(k), *v) for k, *v in parts])
    notes = sorted({a for e in estimates for a in e["approximate"]})
    ctx.info(msg("evaluate_memory.calibrated", params=f"{shape.n_params:,}"))
    if notes:
        ctx.warn(msg("evaluate_memory.approximate", what=[memory.approximate_words(n) for n in notes]))
    return MemoryEvaluation(gpu=gpu, gpus_detected=gpus, shape=memory.shape_dict(shape), seq_len_assumed=seq,
                            micro_batch_assumed=1, estimates=estimates,
                            recommended={"method": chosen[0], "activation_checkpointing": chosen[1]},
                            approximate=notes)


SERVING_FORMATS = ("bf16", "fp8", "gptq", "bnb4")


def serving(ctx: Ctx, shape: memory.Shape, gpu: Gpu, gpus: list) -> MemoryEvaluation:
    """The deploy task's view: per weight format, weights and KV-cache budget per GPU at utilization 0.9 with tensor
    parallelism over the GPUs, the tokens of KV cache that fit and the longest context (recipes.memory.model.serving)."""
    rows, est = [], {}
    formats = (("prequantized",) if shape.prequantized_bytes else ()) + SERVING_FORMATS  # as stored, first
    for fmt in formats:
        e = memory.serving(shape, fmt, gpu.memory_gib, 0.9, gpu.count, gpu_name=gpu.name or "")
        est[fmt] = e
        rows.append((fmt, f"{e['weights_gib']:.2f}", f"{e['kv_budget_gib']:.2f}", f"{e['max_tokens']:,}",
                     f"{e['longest_context']:,}", ctx.t("ui.yes" if e["fits"] else "ui.no")))
    ctx.table(msg("evaluate_memory.serving_table", gpu=gpu.name, gib=gpu.memory_gib, n=gpu.count),
              [msg("evaluate_memory.col.format"), msg("evaluate_memory.col.weights"), msg("evaluate_memory.col.kv"),
               msg("evaluate_memory.col.kv_tokens"), msg("evaluate_memory.col.longest"),
               msg("evaluate_memory.col.fits")], rows)
    fitting = next((f for f in formats if est[f]["fits"]), None)
    if fitting is None:
        ctx.warn(msg("evaluate_memory.nothing_fits", gpu=gpu.name))
    return MemoryEvaluation(gpu=gpu, gpus_detected=gpus, shape=memory.shape_dict(shape), serving=est,
                            recommended={"format": fitting})


def is_done(ctx: Ctx, record: Record) -> bool:
    return "recommended" in record.outputs
