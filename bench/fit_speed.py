#!/usr/bin/env python3
"""Fit the planner's speed model (recipes/memory/planner.py: speed_terms × SECONDS_PER) on the committed H200 grid,
and report predicted beside measured tokens/s, the held-out shapes apart.

    python bench/fit_speed.py [--md PATH] [--print-constants] [ROWS.jsonl ...]
    python bench/fit_speed.py --families [--md PATH]     (the other families: speed and memory, all held out)
    python bench/fit_speed.py --unsloth ROWS.jsonl … [--gpu NAME]   (the unsloth set: each backend beside the other)
    python bench/fit_speed.py --check ROWS.jsonl … [--gpu NAME]     (rows of another day or GPU against the model)

Rows: bench/speed_grid.py's (default: bench/results/2026-12-04-speed-model-h200/). One measured figure per row id =
the median of its runs (a run's figure is the median tokens/s of its steps after the first three). The model is linear
in its coefficients: seconds per optimizer step = Σ term × seconds per unit, so the fit is non-negative least
absolute relative error (each row's terms divided by its measured seconds, target 1: every row weighs alike whatever
its speed; iteratively reweighted non-negative least squares, so that a row measured at a slow moment weighs less), on
the shapes not in speed_grid.HELD_OUT. Leave-one-shape-out over the fitted shapes says how much the fit leans on any
one of them. ``--print-constants``: SECONDS_PER as the planner writes it.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from recipes.memory import model as memory  # noqa: E402
from recipes.memory import planner  # noqa: E402
from recipes.training.spec import TrainingSpec  # noqa: E402
from speed_grid import HELD_OUT, SETS, row_id  # noqa: E402

CONFIGS = Path(__file__).resolve().parent / "configs"
GRID = Path(__file__).resolve().parent / "results" / "2026-12-04-speed-model-h200"
ROBUST_ROUNDS = 30
DEFAULT = [GRID / f"{n}.jsonl" for n in ("call1", "call2", "call3", "repeat")]
# the catalogue's other families (speed_grid.FAMILIES), all held out: not in the fit, reported by --families
FAMILIES = [Path(__file__).resolve().parent / "results" / "2026-12-04-speed-families-h200" / "call4.jsonl"]


def load(paths) -> dict[str, dict]:
    """{row id: the row, ``runs`` = every run's tokens/s, ``tokens_per_s`` = their median}."""
    out: dict[str, dict] = {}
    for path in paths:
        for line in Path(path).read_text().splitlines():
            r = json.loads(line) if line.strip() else {}
            if r.get("rc") != 0 or not r.get("tokens_per_s"):
                continue
            row = out.setdefault(r["id"], r | {"runs": []})
            row["runs"].append(r["tokens_per_s"])
    for row in out.values():
        row["tokens_per_s"] = statistics.median(row["runs"])
    return out


def spec(row: dict) -> TrainingSpec:
    k = row.get("knobs", {})
    return TrainingSpec(method=row["method"], lora_rank=16, lora_alpha=32, lora_targets="all-linear",
                        lora_dropout=k.get("lora_dropout", 0.05), activation_checkpointing=row["ckpt"],
                        seq_len=row["seq"], micro_batch=row["batch"], grad_accum=1,
                        compile_layers=bool(k.get("compile_layers")), master_weights=k.get("master_weights", "fp32"),
                        objective=k.get("objective", "sft"), liger=bool(k.get("liger")))


_SHAPES: dict = {}


def shape(name: str) -> memory.Shape:
    if name not in _SHAPES:
        _SHAPES[name] = memory.shape_from_config(json.loads((CONFIGS / name / "config.json").read_text()))
    return _SHAPES[name]


def terms(row: dict) -> dict[str, float]:
    """Every term of one optimizer step (gradient accumulation 1: the grid's)."""
    mb, step = planner.speed_terms(shape(row["shape"]), spec(row))
    return mb | step


def fit(rows: list[dict]) -> dict[str, float]:
    """SECONDS_PER from ``rows``: non-negative, least absolute relative error (see the module docstring)."""
    names = sorted({k for r in rows for k in terms(r)})
    X = np.array([[terms(r)[n] for n in names] for r in rows], float)
    t = np.array([r["batch"] * r["seq"] / r["tokens_per_s"] for r in rows])
    A = X / t[:, None]
    norm = np.linalg.norm(A, axis=0)
    norm[norm == 0] = 1.0
    A = A / norm
    w = np.ones(len(rows))
    for _ in range(ROBUST_ROUNDS):  # iteratively reweighted: least absolute relative error (the median's measure)
        coef, _ = nnls(A * w[:, None], w)
        w = 1 / np.sqrt(np.maximum(np.abs(A @ coef - 1), 0.02))
    return {n: float(c / s) for n, c, s in zip(names, coef, norm)}


def predict(row: dict, seconds_per: dict) -> float:
    """Predicted tokens/s of ``row`` on the H200 with ``seconds_per`` (the grid's plans: gradient accumulation 1)."""
    return planner.sequences_per_record(spec(row)) * row["batch"] * row["seq"] / planner.step_seconds(shape(row["shape"]), spec(row), planner.FIT_GPU,
                                                             seconds_per)


def summary(errs: list[float]) -> str:
    a = sorted(abs(e) for e in errs)
    return (f"{len(a)} rows: median |error| {statistics.median(a):.1%}, worst {a[-1]:.1%}, "
            f"signed {min(errs):+.1%} … {max(errs):+.1%}") if a else "no rows"


def report(rows: dict[str, dict], seconds_per: dict | None) -> tuple[str, dict]:
    """The markdown tables and {"held_out": [errors], "fitted": [errors], "loso": [errors]}."""
    fitted = [r for r in rows.values() if r["shape"] not in HELD_OUT]
    coef = fit(fitted)
    use = coef if seconds_per is None else seconds_per
    errs = {"fitted": [], "held_out": [], "loso": []}
    lines = ["| row | runs | measured tokens/s | predicted | error | |", "|---|---:|---:|---:|---:|---|"]
    for rid, r in sorted(rows.items(), key=lambda kv: (kv[1]["shape"] in HELD_OUT, kv[0])):
        p = predict(r, use)
        e = p / r["tokens_per_s"] - 1
        held = r["shape"] in HELD_OUT
        errs["held_out" if held else "fitted"].append(e)
        runs = ", ".join(f"{x:,.0f}" for x in r["runs"])
        lines.append(f"| {rid} | {runs} | {r['tokens_per_s']:,.0f} | {p:,.0f} | {e:+.1%} | "
                     f"{'held out' if held else 'fitted'} |")
    for name in sorted({r["shape"] for r in fitted}):  # each fitted shape predicted by a fit without it
        c = fit([r for r in fitted if r["shape"] != name])
        errs["loso"] += [predict(r, c) / r["tokens_per_s"] - 1 for r in fitted if r["shape"] == name]
    by_method = {}
    for r in rows.values():
        if r["shape"] in HELD_OUT:
            by_method.setdefault(r["method"] + (" compiled" if r["knobs"].get("compile_layers") else ""), []).append(
                predict(r, use) / r["tokens_per_s"] - 1)
    spread = [max(r["runs"]) / min(r["runs"]) - 1 for r in rows.values() if len(r["runs"]) > 1]
    held_shapes = [s for s in HELD_OUT if any(r["shape"] == s for r in rows.values())]
    head = [f"- held out ({', '.join(held_shapes)}): {summary(errs['held_out'])}",
            f"- fitted shapes: {summary(errs['fitted'])}",
            f"- fitted shapes, each predicted by a fit without it (leave one shape out): {summary(errs['loso'])}",
            *[f"  - held out, {m}: {summary(e)}" for m, e in sorted(by_method.items())],
            f"- rows run twice ({len(spread)}): the faster run over the slower by "
            f"{statistics.median(spread):.0%} median, {max(spread, default=0):.0%} at most" if spread else "",
            "", "Seconds per unit (H200): " + ", ".join(f"{k} {v:.3g}" for k, v in sorted(use.items()))]
    return "\n".join(head + [""] + lines), errs | {"coef": coef}


def families(paths) -> tuple[str, list[dict]]:
    """Every row of ``paths`` (failed ones too: an out-of-memory row is a measurement), predicted beside measured:
    tokens/s (where planner.speed_modelled covers the plan) and peak memory (recipes/memory/model.py estimate,
    against the device's peak: peak reserved + outside the allocator). Returns (markdown table, one dict per row)."""
    out = []
    lines = ["| row | tokens/s | predicted | error | GiB measured | predicted | error | approximate |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for path in paths:
        for line in Path(path).read_text().splitlines():
            r = json.loads(line)
            sh, t = shape(r["shape"]), spec(r)
            e = memory.estimate(sh, t)
            tps = r.get("tokens_per_s") if r.get("rc") == 0 else None
            p = predict(r | {"tokens_per_s": tps}, planner.SECONDS_PER) if planner.speed_modelled(t, sh) else None
            gib = r.get("device_peak_gib") if not r.get("oom") else None
            d = {"id": r["id"], "shape": r["shape"], "ckpt": r["ckpt"], "oom": bool(r.get("oom")),
                 "speed_error": p / tps - 1 if p and tps else None, "memory_error": e["peak_gib"] / gib - 1 if gib
                 else None, "predicted_gib": e["peak_gib"], "approximate": e["approximate"]}
            out.append(d)
            cell = lambda v, f: f.format(v) if v is not None else "—"  # noqa: E731
            lines.append(f"| {r['id']} | {cell(tps, '{:,.0f}')} | {cell(p, '{:,.0f}')} | "
                         f"{cell(d['speed_error'], '{:+.1%}')} | "
                         f"{'out of memory' if d['oom'] else cell(gib, '{:.2f}')} | {e['peak_gib']:.2f} | "
                         f"{cell(d['memory_error'], '{:+.1%}')} | {', '.join(e['approximate'])} |")
    return "\n".join(lines), out


def unsloth_pairs(paths, gpu: str = planner.FIT_GPU) -> tuple[str, list[dict]]:
    """speed_grid's unsloth set: each unsloth row beside the eager trainer's row of the same knobs (medians of their
    alternated runs), the measured ratio beside planner.UNSLOTH_SPEEDUP, and both predictions' errors on ``gpu``
    (the eager prediction × the factor is what the wizard shows for an unsloth plan). Returns (markdown, rows)."""
    import dataclasses

    rows = load(paths)
    out = []
    lines = ["| row | eager runs | unsloth runs | unsloth ÷ eager | factor | eager predicted | error | "
             "unsloth predicted | error | |", "|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for rid, r in sorted(rows.items()):
        e = rows.get(rid.removesuffix("-backendunsloth"))
        if r["knobs"].get("training_backend") != "unsloth" or e is None:
            continue
        sh, t = shape(r["shape"]), spec(e)
        pe = planner.tokens_per_s(sh, t, gpu)
        pu = planner.tokens_per_s(sh, dataclasses.replace(t, training_backend="unsloth"), gpu)
        d = {"id": rid, "shape": r["shape"], "method": r["method"], "held_out": r["shape"] in HELD_OUT,
             "ratio": r["tokens_per_s"] / e["tokens_per_s"], "factor": planner.UNSLOTH_SPEEDUP.get(r["method"], 1.0),
             "eager_error": pe / e["tokens_per_s"] - 1, "unsloth_error": pu / r["tokens_per_s"] - 1}
        out.append(d)
        runs = lambda x: ", ".join(f"{v:,.0f}" for v in x["runs"])  # noqa: E731
        lines.append(f"| {rid} | {runs(e)} | {runs(r)} | {d['ratio']:.2f}× | {d['factor']:.2f}× | {pe:,.0f} | "
                     f"{d['eager_error']:+.1%} | {pu:,.0f} | {d['unsloth_error']:+.1%} | "
                     f"{'held out' if d['held_out'] else 'fitted shape'} |")
    head = [f"- unsloth predicted (eager × factor), held-out shapes: "
            f"{summary([d['unsloth_error'] for d in out if d['held_out']])}",
            f"- unsloth predicted, every shape: {summary([d['unsloth_error'] for d in out])}",
            f"- the eager trainer predicted, same rows: {summary([d['eager_error'] for d in out])}"]
    return "\n".join(head + ["", *lines]), out


def check(paths, gpu: str = planner.FIT_GPU, seconds_per: dict | None = None) -> tuple[str, list[dict]]:
    """Rows of another day or GPU (speed_grid's, e.g. ``--set qlora``) against the planner's prediction for ``gpu``
    (planner.tokens_per_s: the committed constants, or ``seconds_per``), each labelled by whether its shape is one
    the constants were fitted on; per row every run and their median. Returns (markdown, rows)."""
    rows = load(paths)
    out = []
    lines = ["| row | runs (tokens/s) | median | predicted | error | |", "|---|---|---:|---:|---:|---|"]
    for rid, r in sorted(rows.items(), key=lambda kv: (kv[1]["shape"] in HELD_OUT, kv[0])):
        sh, t = shape(r["shape"]), spec(r)
        if seconds_per is None:
            p = planner.tokens_per_s(sh, t, gpu)
        else:
            p = planner.sequences_per_record(t) * r["batch"] * r["seq"] / planner.step_seconds(sh, t, gpu, seconds_per)
        d = {"id": rid, "shape": r["shape"], "held_out": r["shape"] in HELD_OUT, "error": p / r["tokens_per_s"] - 1,
             "spread": max(r["runs"]) / min(r["runs"]) - 1}
        out.append(d)
        lines.append(f"| {rid} | {', '.join(f'{v:,.0f}' for v in r['runs'])} | {r['tokens_per_s']:,.0f} | {p:,.0f} | "
                     f"{d['error']:+.1%} | {'held out' if d['held_out'] else 'fitted shape'} |")
    head = [f"- held-out shapes: {summary([d['error'] for d in out if d['held_out']])}",
            f"- fitted shapes: {summary([d['error'] for d in out if not d['held_out']])}"]
    spread = [d["spread"] for d in out if d["spread"] > 0]
    if spread:
        head.append(f"- rows run twice ({len(spread)}): the faster run over the slower by "
                    f"{statistics.median(spread):.0%} median, {max(spread):.0%} at most")
    return "\n".join(head + ["", *lines]), out


def predicted(row_set: str) -> str:
    """speed_grid's set ``row_set`` as the planner and the memory model price it on the H200, a markdown table:
    written and committed before the rows run, so that they are held out."""
    lines = ["| row | predicted tokens/s | predicted GiB |", "|---|---:|---:|"]
    for name, rows in SETS[row_set].items():
        for row in rows:
            method, ckpt, seq, mb, knobs = row
            r = {"shape": name, "method": method, "ckpt": ckpt, "seq": seq, "batch": mb, "knobs": knobs}
            gib = memory.estimate(shape(name), spec(r), gpu_gib=140.0)["peak_gib"]
            lines.append(f"| {row_id(name, row)} | {predict(r, planner.SECONDS_PER):,.0f} | {gib:.2f} |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("rows", nargs="*")
    p.add_argument("--md")
    p.add_argument("--print-constants", action="store_true", help="SECONDS_PER fitted now, as Python")
    p.add_argument("--refit", action="store_true", help="report the fit made now instead of the planner's constants")
    p.add_argument("--families", action="store_true", help="the other families' rows (FAMILIES): speed and memory")
    p.add_argument("--unsloth", action="store_true", help="speed_grid's unsloth set: each backend beside the other")
    p.add_argument("--check", action="store_true", help="ROWS of another day or GPU against the committed model")
    p.add_argument("--gpu", default=planner.FIT_GPU, help="the GPU the rows ran on (--unsloth, --check)")
    p.add_argument("--predict", choices=sorted(SETS), help="a speed_grid set's rows priced, before they run")
    a = p.parse_args()
    if a.predict:
        print(predicted(a.predict))
        return
    table = check(a.rows, a.gpu) if a.check else unsloth_pairs(a.rows, a.gpu) if a.unsloth else \
        families(a.rows or FAMILIES) if a.families else None
    if table is not None:  # one of the other reports: its table alone
        print(table[0])
        if a.md:
            Path(a.md).write_text(table[0] + "\n")
        return
    rows = load(a.rows or DEFAULT)
    text, out = report(rows, None if a.refit else planner.SECONDS_PER)
    if a.print_constants:
        print("SECONDS_PER = {" + ", ".join(f'"{k}": {v:.4g}' for k, v in sorted(out["coef"].items())) + "}")
    print(text)
    if a.md:
        Path(a.md).write_text(text + "\n")


if __name__ == "__main__":
    main()
