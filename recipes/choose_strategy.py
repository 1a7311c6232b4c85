"""Step 4 — choose the training strategy and the data.

Method (LoRA / QLoRA / full), LoRA rank / alpha / dropout / target modules, activation checkpointing, micro-batch,
gradient accumulation, sequence length, learning rate, steps or epochs, checkpoint interval; the dataset (the bundled
one or a local json / jsonl in alpaca or messages format) with two samples rendered through the model's chat template.
Defaults come from the memory step's recommendation; the chosen configuration is estimated again.
"""
from __future__ import annotations

import re

from recipes import datasets, memory
from recipes.base import Choice, Question, StepError, msg

name = "choose_strategy"
requires = ("select_model", "evaluate_memory", "download")


def _range(lo, hi):
    return lambda v, a: None if lo <= v <= hi else msg("answer.out_of_range", lo=lo, hi=hi)


def _targets_check(known: list[str]):
    def check(v, a):
        ok = v == "all-linear" or re.fullmatch(r"[A-Za-z_][\w.]*(,[A-Za-z_][\w.]*)*", v.replace(" ", ""))
        if not ok:
            return msg("choose_strategy.bad_targets", value=v)
        unknown = [t.strip() for t in v.split(",") if known and v != "all-linear" and t.strip() not in known]
        return msg("choose_strategy.unknown_targets", targets=", ".join(unknown), known=", ".join(known)) \
            if unknown else None
    return check


def _dataset_ok(v, a):
    try:
        datasets.load_records(v)
    except datasets.DataError as e:
        return msg(e.key, **e.params)
    return None


def questions(ctx) -> list[Question]:
    rec = ctx.outputs("evaluate_memory").get("recommended", {"method": "lora", "activation_checkpointing": True})
    max_pos = int(ctx.outputs("select_model").get("config", {}).get("max_position_embeddings") or 4096)
    lora = lambda a: a.get("method") != "full"  # noqa: E731
    return [
        Question("method", "select", "choose_strategy.method", default=rec["method"],
                 choices=[Choice("lora", msg("choose_strategy.method.lora")),
                          Choice("qlora", msg("choose_strategy.method.qlora")),
                          Choice("full", msg("choose_strategy.method.full"))]),
        Question("lora_rank", "int", "choose_strategy.lora_rank", default=8, when=lora, validate=_range(1, 1024)),
        Question("lora_alpha", "int", "choose_strategy.lora_alpha", default=lambda a: 2 * a["lora_rank"], when=lora,
                 validate=_range(1, 4096)),
        Question("lora_dropout", "float", "choose_strategy.lora_dropout", default=0.05, when=lora,
                 validate=_range(0.0, 0.9)),
        Question("lora_targets", "text", "choose_strategy.lora_targets", default="all-linear", when=lora,
                 validate=_targets_check(list(ctx.outputs("evaluate_memory").get("shape", {}).get("linears", {})))),
        Question("activation_checkpointing", "confirm", "choose_strategy.activation_checkpointing",
                 default=rec["activation_checkpointing"]),
        Question("dataset", "select", "choose_strategy.dataset", default="bundled",
                 choices=[Choice("bundled", msg("choose_strategy.dataset.bundled")),
                          Choice("local", msg("choose_strategy.dataset.local"))]),
        Question("dataset_path", "path", "choose_strategy.dataset_path", when=lambda a: a.get("dataset") == "local",
                 validate=_dataset_ok),
        Question("seq_len", "int", "choose_strategy.seq_len", default=min(2048, max_pos), validate=_range(16, max_pos)),
        Question("micro_batch", "int", "choose_strategy.micro_batch", default=1, validate=_range(1, 4096)),
        Question("grad_accum", "int", "choose_strategy.grad_accum", default=4, validate=_range(1, 4096)),
        Question("learning_rate", "float", "choose_strategy.learning_rate",
                 default=lambda a: 1e-5 if a.get("method") == "full" else 2e-4, validate=_range(1e-8, 1.0)),
        Question("max_steps", "int", "choose_strategy.max_steps", default=0, validate=_range(0, 10_000_000)),
        Question("epochs", "float", "choose_strategy.epochs", default=1.0, when=lambda a: a.get("max_steps") == 0,
                 validate=_range(0.01, 1000)),
        Question("save_steps", "int", "choose_strategy.save_steps", default=50, validate=_range(1, 10_000_000)),
        Question("save_total_limit", "int", "choose_strategy.save_total_limit", default=3, validate=_range(1, 1000)),
        Question("sample_question", "text", "choose_strategy.sample_question", default="What is LoRA?"),
    ]


def training(answers: dict, gpus: int = 1) -> memory.Training:
    """The memory model's view of these answers (what recipes/train_worker.py will run)."""
    return memory.Training(method=answers["method"], rank=answers.get("lora_rank", 8),
                           targets=answers.get("lora_targets", "all-linear"), dropout=answers.get("lora_dropout", 0.0),
                           ckpt=answers["activation_checkpointing"], micro_batch=answers["micro_batch"],
                           seq=answers["seq_len"], gpus=gpus, zero=3 if gpus > 1 else 0)


def dataset_path(answers: dict) -> str:
    return str(datasets.bundled_dataset_path()) if answers["dataset"] == "bundled" else answers["dataset_path"]


def run(ctx, answers: dict) -> dict:
    from transformers import AutoTokenizer

    path = dataset_path(answers)
    try:
        convs = datasets.load_records(path)
    except datasets.DataError as e:
        raise StepError(e.key, **e.params) from None
    tok = AutoTokenizer.from_pretrained(ctx.outputs("download")["model_dir"])
    if not tok.chat_template:
        raise StepError("choose_strategy.no_chat_template", model=ctx.outputs("download")["model_dir"])
    samples = [tok.apply_chat_template(c, tokenize=False) for c in convs[:2]]
    for i, s in enumerate(samples, 1):
        ctx.info(msg("choose_strategy.sample", i=i, text=s))
    ctx.info(msg("choose_strategy.dataset_summary", n=len(convs), path=path, format=datasets.dataset_format(path)))
    shape = memory.shape_from_dict(ctx.outputs("evaluate_memory")["shape"])
    gpu = ctx.outputs("evaluate_memory")["gpu"]
    est = memory.estimate(shape, training(answers, gpu.get("count", 1)), gpu["memory_gib"])
    fits = est["fits"]
    ctx.info(msg("choose_strategy.estimate", peak=est["peak_gib"], gpu=gpu["name"], gib=gpu["memory_gib"],
                 margin=f"{est['margin_gib']:+.1f}"))
    if not fits:
        ctx.warn(msg("choose_strategy.may_not_fit", peak=est["peak_gib"], gib=gpu["memory_gib"]))
    return {"strategy": dict(answers), "dataset_path": path, "dataset_format": datasets.dataset_format(path),
            "n_records": len(convs), "samples": samples, "estimate": est, "fits": fits,
            "effective_batch": answers["micro_batch"] * answers["grad_accum"]}


def is_done(ctx, record: dict) -> bool:
    return "strategy" in record["outputs"]
