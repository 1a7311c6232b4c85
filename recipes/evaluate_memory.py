"""Step 2 — evaluate GPU memory: detect GPUs (or let the user pick a target GPU) and show, per strategy, the
predicted peak memory per GPU and whether it fits. The figures are UNCALIBRATED (recipes/memory.py)."""
from __future__ import annotations

from recipes import memory
from recipes.base import Choice, Question, msg

name = "evaluate_memory"
requires = ("select_model",)

STRATEGIES = [(m, c) for m in ("full", "lora", "qlora") for c in (False, True)]
MARGIN = 0.10  # a configuration "fits" with at least 10 % of the GPU left


def questions(ctx) -> list[Question]:
    gpus = memory.detect_gpus()
    choices = []
    if gpus:
        choices.append(Choice("detected", f"{gpus[0]['name']} ({gpus[0]['memory_gib']} GiB) × {len(gpus)}"))
    choices += [Choice(k, f"{n} ({g} GiB)") for k, (n, g) in memory.GPUS.items()]
    return [
        Question("target_gpu", "select", "evaluate_memory.target_gpu", choices=choices,
                 default="detected" if gpus else "a10-24g"),
        Question("gpu_count", "int", "evaluate_memory.gpu_count", default=len(gpus) or 1,
                 validate=lambda v, a: None if 1 <= v <= 1024 else msg("answer.out_of_range", lo=1, hi=1024)),
    ]


def target(answers: dict) -> dict:
    if answers["target_gpu"] == "detected":
        g = memory.detect_gpus()[0]
        return {"name": g["name"], "memory_gib": g["memory_gib"], "detected": True}
    name_, gib = memory.GPUS[answers["target_gpu"]]
    return {"name": name_, "memory_gib": gib, "detected": False}


def assumed_seq(config: dict) -> int:
    return min(2048, int(config.get("max_position_embeddings") or 2048))


def run(ctx, answers: dict) -> dict:
    gpus = memory.detect_gpus()
    if not gpus:
        ctx.info(msg("evaluate_memory.no_gpu"))
    config = ctx.outputs("select_model")["config"]
    shape = memory.shape_from_config(config)
    gpu = target(answers) | {"count": answers["gpu_count"]}
    seq = assumed_seq(config)
    rows, estimates = [], []
    for method, ckpt in STRATEGIES:
        e = memory.estimate(shape, method, ckpt, micro_batch=1, seq=seq)
        fits = e["peak_gib"] <= gpu["memory_gib"] * (1 - MARGIN)
        estimates.append({"method": method, "activation_checkpointing": ckpt, "fits": fits,
                          "margin_gib": round(gpu["memory_gib"] - e["peak_gib"], 2)} | e)
        c = e["components"]
        r3 = lambda x: f"{x:.3f}"  # noqa: E731
        rows.append((method, "on" if ckpt else "off", r3(c["weights"]),
                     r3(c.get("gradients", 0) + c.get("optimizer", 0) + c.get("adapter", 0)),
                     r3(c["activations"]), r3(c["logits"]), r3(c["overhead"]), f"{e['peak_gib']:.2f}",
                     "✓" if fits else "✗"))
    ctx.table(msg("evaluate_memory.table", gpu=gpu["name"], gib=gpu["memory_gib"], seq=seq),
              ["method", "ckpt", "weights", "grad+opt", "activ.", "logits", "overhead", "peak", "fits"],
              rows)
    ctx.info(msg("evaluate_memory.uncalibrated", params=f"{shape.n_params:,}"))
    recommended = next(({"method": e["method"], "activation_checkpointing": e["activation_checkpointing"]}
                        for pref in (("lora", False), ("lora", True), ("qlora", True), ("full", True))
                        for e in estimates if (e["method"], e["activation_checkpointing"]) == pref and e["fits"]),
                       None)
    if recommended is None:
        ctx.warn(msg("evaluate_memory.nothing_fits", gpu=gpu["name"]))
        recommended = {"method": "qlora", "activation_checkpointing": True}
    return {"gpu": gpu, "gpus_detected": gpus, "shape": memory.shape_dict(shape), "seq_len_assumed": seq,
            "micro_batch_assumed": 1, "estimates": estimates, "recommended": recommended, "calibrated": False}


def is_done(ctx, record: dict) -> bool:
    return "recommended" in record["outputs"]
