#!/usr/bin/env python3
"""The planner's speed grid (issue 44): tokens/s and peak memory of yichui's trainer over model shapes it was and was
not fitted on, one GPU, random weights of real shapes.

    python bench/speed_grid.py measure --out $OUT/rows.jsonl --work DIR [--call 1] [--only SHAPE,…] [--deadline S]
    python bench/speed_grid.py measure --dry-run --work DIR [--call N]   (CPU: every row's TrainerJob, printed)
    python bench/speed_grid.py measure --device cpu --config TINY/config.json --only qwen2.5-0.5b --steps 3 …
                                                                         (CPU: the same loop on the tiny model)

One process per shape (the imports once), its rows run in it one after another through the trainer itself
(``recipes.training.worker.train``: trl's SFTTrainer, peft, the spec the train step writes); between rows the model and
the trainer are dropped, the allocator's cache emptied and its peaks reset, and with compiled layers torch's compile
caches cleared (each row compiles as a fresh process would). Each row appends one JSON line to ``--out`` as it ends,
so a device call that runs out of time keeps what it measured. Every row: LoRA/QLoRA rank 16 on all linear layers;
``steps`` optimizer steps of one micro-batch each (gradient accumulation 1); its tokens/s per step from the trainer's
own events (tokens of the batch ÷ wall time between logged steps), the median taken by ``fit_speed.py`` after the
warm-up steps.

The shapes fitted on and the ones held out are named in ``fit_speed.py`` (FIT_SHAPES, HELD_OUT): the grid itself is
the same for both. ``--call N`` runs the shapes of device call N (CALLS): three calls of < 10 minutes each.
"""
from __future__ import annotations

import argparse
import gc
import json
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

STEPS = 12
# (method, activation checkpointing, sequence length, micro-batch, knobs beyond the defaults)
LORA_ROWS = [  # the most telling first: a shape cut short by the deadline keeps them
    ("lora", True, 2048, 1, {}),
    ("lora", False, 2048, 1, {}),
    ("lora", False, 2048, 4, {"compile_layers": True}),
    ("lora", True, 2048, 4, {}),
    ("lora", True, 8192, 1, {}),
    ("lora", False, 2048, 2, {"lora_dropout": 0.0}),
    ("lora", False, 512, 8, {}),
]
FULL_ROWS = [  # shapes up to ~4B: a full fine-tune fits one H200 with room
    ("full", True, 2048, 4, {"master_weights": "bf16"}),
    ("full", False, 1024, 2, {}),  # fp32 master weights (the wizard's default)
    ("full", False, 2048, 4, {"master_weights": "bf16", "compile_layers": True}),
]
QLORA_ROWS = [
    ("qlora", True, 2048, 1, {}),
    ("qlora", False, 1024, 4, {}),
]
# the catalogue's families beyond the fitted ones (issue 44 item 2), each with and without checkpointing; a MoE's
# experts are fused 3-D weights in transformers 5, which PEFT adapts through its ParamWrapper: dropout 0 only
FAMILY_ROWS = [
    ("lora", True, 2048, 1, {}),
    ("lora", False, 2048, 1, {}),
    ("lora", False, 2048, 2, {"lora_dropout": 0.0}),
    ("lora", False, 2048, 4, {"compile_layers": True}),
    ("lora", True, 2048, 4, {}),
    ("lora", True, 8192, 1, {}),
]
FAMILIES = {"gemma3-1b", "glm4-9b", "qwen3-30b-a3b"}
MOE = {"qwen3-30b-a3b"}
SMALL = {"qwen2.5-0.5b", "llama3.2-1b", "qwen2.5-1.5b", "qwen2.5-3b", "phi3-mini"}
QLORA_SHAPES = {"qwen2.5-1.5b", "llama3.1-8b", "qwen3-8b"}
# issue 47: DPO through the trainer (trl's DPOTrainer: chosen and rejected of each pair in one forward; the reference
# the base with the adapter off under LoRA/QLoRA, a frozen copy for a full fine-tune); ``--set dpo``
DPO_ROWS = [
    ("lora", True, 2048, 1, {"objective": "dpo"}),
    ("lora", False, 2048, 1, {"objective": "dpo"}),
    ("lora", True, 2048, 4, {"objective": "dpo"}),
    ("lora", True, 8192, 1, {"objective": "dpo"}),
]
DPO_FULL_ROWS = [("full", True, 2048, 2, {"objective": "dpo", "master_weights": "bf16"}),
                 ("full", True, 2048, 1, {"objective": "dpo"})]  # fp32 masters: yichui's bf16 reference
DPO_QLORA_ROWS = [("qlora", True, 2048, 1, {"objective": "dpo"})]
DPO_SHAPES = {"qwen2.5-0.5b": DPO_ROWS + DPO_FULL_ROWS, "qwen2.5-3b": DPO_ROWS + DPO_QLORA_ROWS,
              "llama3.1-8b": DPO_ROWS + DPO_QLORA_ROWS}
# issue 44: Liger's kernels (fused RMSNorm, SwiGLU, RoPE and the chunked linear + cross-entropy) in the trainer;
# ``--set liger`` (liger-kernel must be importable)
LIGER_ROWS = [
    ("lora", True, 2048, 1, {"liger": True}),
    ("lora", False, 2048, 2, {"liger": True, "lora_dropout": 0.0}),
    ("lora", True, 8192, 1, {"liger": True}),
    ("lora", True, 2048, 4, {"liger": True}),
]
LIGER_FULL_ROWS = [("full", True, 2048, 4, {"liger": True, "master_weights": "bf16"})]
LIGER_SHAPES = {"qwen2.5-0.5b": LIGER_ROWS + LIGER_FULL_ROWS, "llama3.2-1b": LIGER_ROWS + LIGER_FULL_ROWS,
                "qwen2.5-7b": LIGER_ROWS, "mistral-7b": LIGER_ROWS}
# issue 44's bar for a planner factor: Liger beside the eager trainer paired and interleaved in one process, ABBA
# (eager, Liger, Liger, eager) for two knobs per shape; ``--set liger-pair``
_PAIR = [("lora", True, 2048, 4, {}), ("lora", True, 2048, 4, {"liger": True})]
_PAIR1 = [("lora", True, 2048, 1, {}), ("lora", True, 2048, 1, {"liger": True})]
LIGER_PAIR_ROWS = [_PAIR[0], _PAIR[1], _PAIR[1], _PAIR[0], _PAIR1[0], _PAIR1[1], _PAIR1[1], _PAIR1[0]]
LIGER_PAIR_SHAPES = {"qwen2.5-0.5b": LIGER_PAIR_ROWS, "qwen2.5-7b": LIGER_PAIR_ROWS}
# yichui's side of bench/dpo_peer.py (TRL's own DPO script on the same job): the same settings, and compiled layers
DPO_PEER_ROWS = [("lora", True, 2048, 2, {"objective": "dpo"}),
                 ("lora", True, 2048, 2, {"objective": "dpo", "compile_layers": True})]
# issue 47: KTO (trl's KTOTrainer: micro-batch ≥ 2 for its KL term; pairs split into a desirable and an undesirable
# reply each); ``--set kto``
KTO_ROWS = [("lora", True, 2048, 2, {"objective": "kto"}), ("lora", False, 2048, 2, {"objective": "kto"}),
            ("lora", True, 2048, 4, {"objective": "kto"})]
KTO_FULL_ROWS = [("full", True, 2048, 2, {"objective": "kto", "master_weights": "bf16"})]
KTO_SHAPES = {"qwen2.5-0.5b": KTO_ROWS + KTO_FULL_ROWS, "qwen2.5-7b": KTO_ROWS}
# issue 47: DPO and KTO on shapes no preference row has run on (Llama-3.2-1B, Qwen2.5-1.5B, Qwen3-8B), their memory
# and tokens/s predicted and committed before they run (bench/results/2026-12-07-preference-h100/predicted.md, committed before they ran;
# ``--set pref-heldout``
_DPO, _KTO = {"objective": "dpo"}, {"objective": "kto"}
PREF_HELDOUT_SHAPES = {
    "llama3.2-1b": [("lora", True, 2048, 2, _DPO), ("lora", False, 2048, 1, _DPO), ("lora", True, 2048, 2, _KTO),
                    ("lora", False, 2048, 2, _KTO), ("full", True, 2048, 2, _KTO | {"master_weights": "bf16"})],
    "qwen2.5-1.5b": [("lora", True, 4096, 1, _DPO), ("qlora", True, 2048, 1, _DPO), ("lora", True, 2048, 4, _KTO),
                     ("qlora", True, 2048, 2, _KTO)],
    "qwen3-8b": [("lora", True, 2048, 1, _DPO), ("lora", True, 2048, 2, _DPO), ("lora", True, 2048, 2, _KTO),
                 ("qlora", True, 2048, 2, _KTO)],
}
# issue 47: the one preference plan outside 3 % (Qwen2.5-0.5B, 4,096 tokens a micro-batch, −5.0 %: the allocator kept
# 0.30 GiB beyond the allocated peak where the model adds 0.16) beside supervised and DPO plans of 3,072–8,192 tokens,
# three with a CUDA memory history summarised into the row (distributed.summarize_snapshot); ``--set slack``.
# Asked before they ran: does the extra slack follow the micro-batch's scored tokens N (trl 1.16
# kernels/chunked_logprob.py: the LM head's bf16 tile is min(N, 4,096) × 32,768) — then SFT's 4,096 × 1 and
# 2,048 × 2 read ≈ 0.3 GiB like DPO's 2 × 2,048 — or the preference objective (its reference forward) — then they
# read ≈ 0.14 like SFT's other 0.5B rows, and DPO's 1,024 × 2 ≈ 0.3?
_SNAP = {"memory_snapshot": True}
SLACK_ROWS = [("lora", True, 2048, 1, _DPO | _SNAP), ("lora", True, 4096, 1, _SNAP), ("lora", True, 2048, 1, _SNAP),
              ("lora", True, 2048, 2, {}), ("lora", True, 1024, 2, _DPO), ("lora", True, 1536, 1, _DPO),
              ("lora", True, 3072, 1, _DPO), ("lora", True, 2048, 2, _KTO)]
# issue 44: the unsloth backend in the grid, beside the eager trainer on the same shapes and knobs; each backend runs
# in its own interpreter (unsloth's environment: recipes/training/backends.py), so the pairs alternate over processes,
# eager, unsloth, unsloth, eager per shape (PAIRED_BACKENDS); unsloth loads written weights. ``--set unsloth``
_UNSLOTH_KNOBS = [("lora", True, 2048, 2, {}), ("qlora", True, 2048, 1, {})]  # unsloth's own checkpointing either way
UNSLOTH_ROWS = _UNSLOTH_KNOBS + [(m, c, q, b, k | {"training_backend": "unsloth"}) for m, c, q, b, k in _UNSLOTH_KNOBS]
UNSLOTH_SHAPES = {s: UNSLOTH_ROWS for s in ("llama3.2-1b", "mistral-7b", "qwen3-8b", "qwen2.5-7b")}
PAIRED_BACKENDS = ("transformers", "unsloth", "unsloth", "transformers")
# issue 44: QLoRA on more shapes (the 2026-12-04 grid had it on two fitted shapes and one held out; on Llama-3.2-1B
# the prediction was +69 % over): three more fitted shapes, three held out, and Qwen2.5-1.5B again (its 2026-12-04
# rows: the same plans on another day or GPU); ``--set qlora --steps 33``
QLORA_SET_SHAPES = {s: QLORA_ROWS for s in ("qwen2.5-0.5b", "llama3.2-1b", "qwen2.5-1.5b", "qwen2.5-3b", "phi3-mini",
                                            "qwen2.5-7b", "mistral-7b")}
# issue 44: where a step's time goes on the shapes the speed model does not cover (Gemma-3: 1.26–1.94× optimistic;
# the MoE: 2.3–3.0×), beside a covered shape of Gemma-3-1B's size: torch.profiler over optimizer steps 4–6
# (recipes/training/worker.py profile_callback), each row's operator table beside the rows; ``--set profile --steps 8``
_PROFILED = [("lora", True, 2048, 1, {}), ("lora", False, 2048, 1, {})]
PROFILE_SHAPES = {"gemma3-1b": _PROFILED, "llama3.2-1b": _PROFILED,
                  "qwen3-30b-a3b": [("lora", True, 2048, 1, {"lora_dropout": 0.0})]}
PROFILE_STEPS = (4, 6)
SETS = {"dpo": DPO_SHAPES, "profile": PROFILE_SHAPES, "qlora": QLORA_SET_SHAPES, "kto": KTO_SHAPES, "liger": LIGER_SHAPES, "liger-pair": LIGER_PAIR_SHAPES,
        "dpo-peer": {s: DPO_PEER_ROWS for s in ("qwen2.5-3b", "llama3.1-8b")}, "unsloth": UNSLOTH_SHAPES,
        "pref-heldout": PREF_HELDOUT_SHAPES, "slack": {"qwen2.5-0.5b": SLACK_ROWS}}
# device calls: shapes in the order they run (small first: a call cut short keeps whole shapes)
CALLS = {1: ["qwen2.5-0.5b", "llama3.2-1b", "qwen2.5-1.5b", "phi3-mini", "qwen2.5-3b"],
         2: ["qwen2.5-7b", "mistral-7b", "llama3.1-8b"],
         3: ["qwen2.5-14b", "qwen3-8b"],
         4: ["gemma3-1b", "glm4-9b", "qwen3-30b-a3b"]}
# the shapes the speed model is fitted on; the others are held out (bench/fit_speed.py reports them apart): one of
# each family the fit has not seen (Llama-3.2's tied 1B, Phi-3's full multi-head attention, Mistral, Qwen3)
HELD_OUT = ("llama3.2-1b", "phi3-mini", "mistral-7b", "qwen3-8b") + tuple(sorted(FAMILIES))


def rows_for(shape: str, row_set: str = "grid") -> list[tuple]:
    if row_set != "grid":
        return SETS[row_set].get(shape, [])
    if shape in FAMILIES:
        return [(m, c, q, b, k | {"lora_dropout": 0.0}) if shape in MOE else (m, c, q, b, k)
                for m, c, q, b, k in FAMILY_ROWS]
    return LORA_ROWS + (FULL_ROWS if shape in SMALL else []) + (QLORA_ROWS if shape in QLORA_SHAPES else [])


def needs_weights(row: tuple) -> bool:
    """QLoRA quantizes while loading, and a full fine-tune's DPO reference is loaded from the folder (trl, and
    yichui's bf16 reference): both need written weights; the other rows build random ones in place."""
    return row[0] == "qlora" or (row[0] == "full" and row[4].get("objective") in ("dpo", "kto")) \
        or backend_of(row) == "unsloth"  # unsloth's FastLanguageModel loads a checkpoint


def backend_of(row: tuple) -> str:
    return row[4].get("training_backend", "transformers")


def row_id(shape: str, row: tuple) -> str:
    method, ckpt, seq, mb, knobs = row
    tail = "".join(f"-{k.replace('lora_', '').replace('_layers', '').replace('_weights', '').replace('training_', '')}{v}"
                   for k, v in sorted(knobs.items()))
    return f"{shape}-{method}-{'ckpt' if ckpt else 'nockpt'}-s{seq}-b{mb}{tail}"


def job_for(shape: str, row: tuple, model_dir: Path, data: Path, steps: int, device: str):
    """The TrainerJob of one row (memory_accuracy.trainer_job refuses a knob that is no TrainerJob field)."""
    from memory_accuracy import trainer_job

    method, ckpt, seq, mb, knobs = row
    return trainer_job({"model_dir": str(model_dir), "init": "pretrained" if needs_weights(row) else "random",
                        "method": method, "lora_rank": 16, "lora_alpha": 32, "lora_targets": "all-linear",
                        "activation_checkpointing": ckpt, "dataset_path": str(data), "seq_len": seq,
                        "micro_batch": mb, "grad_accum": 1, "learning_rate": 1e-5, "max_steps": steps,
                        "save_steps": 0, "save_total_limit": 1, "save_final": False, "sample_question": None,
                        "device": device, "attn_implementation": "sdpa", "packing": False, "val_ratio": 0.0,
                        "logging_steps": 1} | knobs)


def run_shape(a) -> None:
    """The child process: every row of one shape (of one backend with ``--backend``), in this process (see the
    module docstring)."""
    if a.backend == "unsloth" and not a.dry_run:
        import unsloth  # noqa: F401  (first: it patches transformers, peft and trl as it is imported)
    from memory_accuracy import synthetic_dataset, synthetic_preferences

    from recipes.jobs import read_events
    from recipes.training import worker

    shape = a.shape
    rows = [r for r in rows_for(shape, a.set) if (not a.rows or row_id(shape, r) in a.rows.split(","))
            and (not a.backend or backend_of(r) == a.backend)]
    work = Path(a.work)
    weights = any(needs_weights(r) for r in rows)
    model_dir = Path(a.weights_from) if a.weights_from else \
        prepare_config(shape, work, a.config, weights and not a.dry_run)
    t_end = float(a.until or 0)
    for row in rows:
        rid = row_id(shape, row)
        tdir = work / "runs" / rid
        shutil.rmtree(tdir, ignore_errors=True)
        tdir.mkdir(parents=True)
        data = tdir / "data.jsonl"
        seq, mb = (a.seq or row[2]), row[3]
        row = (row[0], row[1], seq, mb, row[4])
        if row[4].get("objective") in ("dpo", "kto"):
            synthetic_preferences(data, model_dir, seq, mb * a.steps)
        else:
            synthetic_dataset(data, model_dir, seq, mb * a.steps)
        job = job_for(shape, row, model_dir, data, a.steps, a.device)
        if a.weights_from:  # a peer's written weights (bench/dpo_peer.py): the same model on both sides
            job = replace(job, init="pretrained")
        if a.set == "profile":
            job = replace(job, profile_steps=PROFILE_STEPS)
        job.write(tdir / "spec.json")
        if a.dry_run:
            print(json.dumps({"id": rid, "dry_run": True, "spec": job.to_dict()}), flush=True)
            continue
        if t_end and time.time() > t_end:
            out = {"id": rid, "skipped": "deadline"}
        else:
            out = measure_row(worker, read_events, job, tdir, a.device)
        out = {"id": rid, "shape": shape, "method": row[0], "ckpt": row[1], "seq": seq, "batch": mb,
               "knobs": row[4], "steps": a.steps} | out
        if (tdir / "memory_snapshot.pickle").exists():  # the slack set: when reserved memory grew, and for what
            from distributed import summarize_snapshot
            out["snapshot"] = summarize_snapshot(tdir / "memory_snapshot.pickle", tdir / "memory_snapshot_start.json")
        if (tdir / "profile.json").exists():  # the profile set: totals in the row, the operator table beside it
            out["profile"] = json.loads((tdir / "profile.json").read_text())
            shutil.copy(tdir / "profile.txt", Path(a.out).with_name(f"{rid}.profile.txt"))
        with open(a.out, "a") as f:
            f.write(json.dumps(out) + "\n")
        print(f"{rid}: {out.get('tokens_per_s')} tok/s {out.get('device_peak_gib')} GiB "
              f"{out.get('error', '')[:200]}", flush=True)


def prepare_config(shape: str, work: Path, config: str | None, weights: bool) -> Path:
    """The shape's model folder (memory_accuracy.prepare_shape); ``config``: another config.json in its place (the
    tiny model on CPU), copied with its weights."""
    from memory_accuracy import prepare_shape

    if config is None:
        return prepare_shape(shape, work, weights)
    d = work / shape
    d.mkdir(parents=True, exist_ok=True)
    src = Path(config).parent
    for f in src.iterdir():
        if f.is_file():
            shutil.copy(f, d / f.name)
    return d


def measure_row(worker, read_events, job, tdir: Path, device: str) -> dict:
    import torch

    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    if job.compile_layers:
        torch._dynamo.reset()
    t0 = time.time()
    ev = worker.Events(tdir / "events.jsonl", None)
    out: dict = {}
    try:
        rc = worker.train(job, tdir, ev)
    except Exception as e:  # the row fails, the next rows still run
        rc = 1
        out = {"error": f"{type(e).__name__}: {str(e)[:400]}", "oom": worker.is_oom(e)}
    finally:
        ev.f.close()
        gc.collect()
        if device == "cuda":
            mem = worker.cuda_memory()
            torch.cuda.empty_cache()
    evs = read_events(tdir / "events.jsonl")[0]
    steps = [e for e in evs if e["event"] == "step"]
    out |= {"rc": rc, "wall_s": round(time.time() - t0, 1),
            "step_tokens_per_s": [e.get("tokens_per_s") for e in steps],
            "losses": [e.get("loss") for e in steps]}
    tps = [x for x in out["step_tokens_per_s"][3:] if x]
    out["tokens_per_s"] = round(statistics.median(tps), 1) if tps else None
    if device == "cuda":
        out |= mem
    return out


def cmd_measure(a) -> None:
    """The driver: one child process per shape, in order, each with the trainer's environment."""
    from recipes.training.runner import trainer_env
    from memory_accuracy import environment

    shapes = CALLS[a.call] if a.call else list(SETS[a.set]) if a.set != "grid" else \
        [s for c in CALLS.values() for s in c]
    if a.only:
        shapes = [s for s in a.only.split(",")]
    Path(a.work).mkdir(parents=True, exist_ok=True)
    if not a.dry_run:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        with open(Path(a.out).with_suffix(".env.json"), "w") as f:
            json.dump(environment() if a.device == "cuda" else {"device": "cpu"}, f)
    t_end = time.time() + a.deadline if a.deadline else 0
    for shape in shapes:
        if t_end and time.time() > t_end - 20:
            print(f"{shape}: skipped (deadline)", flush=True)
            continue
        from recipes.training.spec import TrainerJob

        # the unsloth set: each backend in its own interpreter, alternated (PAIRED_BACKENDS); else one process
        for backend in PAIRED_BACKENDS if a.set == "unsloth" else ("",):
            python = unsloth_python() if backend == "unsloth" and not a.dry_run else sys.executable
            env = trainer_env(TrainerJob(device=a.device, interpreter="" if python == sys.executable else python)) \
                | {"TOKENIZERS_PARALLELISM": "false"}
            argv = [python, __file__, "shape", "--shape", shape, "--work", a.work, "--out", str(a.out),
                    "--steps", str(a.steps), "--device", a.device, "--until", str(t_end), "--set", a.set]
            for flag, v in (("--config", a.config), ("--rows", a.rows), ("--seq", a.seq), ("--backend", backend)):
                if v:
                    argv += [flag, str(v)]
            if a.dry_run:  # the child's own code, in this process: one interpreter's imports, not one per shape
                run_shape(parser().parse_args([*argv[2:], "--dry-run"]))
                continue
            rc = subprocess.run(argv, env=env, cwd=ROOT).returncode
            if rc:
                print(f"{shape}: the shape's process ({backend or 'all rows'}) exited {rc}", flush=True)


def unsloth_python() -> str:
    """unsloth's interpreter under YICHUI_HOME (recipes/training/backends.py), or exit saying where it was looked for."""
    from recipes.training import backends
    from wizard.session import home

    found = backends.find_unsloth(home())
    if found is None:
        sys.exit(f"unsloth is not installed in {backends.unsloth_env(home())} (bench/README.md: carry.sh unsloth)")
    return found.python


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("measure", "shape"):
        m = sub.add_parser(name)
        m.add_argument("--out", default="rows.jsonl")
        m.add_argument("--work", required=True)
        m.add_argument("--steps", type=int, default=STEPS)
        m.add_argument("--device", default="cuda")
        m.add_argument("--config", help="a config.json used for every shape (the tiny model on CPU)")
        m.add_argument("--rows", help="only these row ids (comma-separated)")
        m.add_argument("--seq", type=int, help="every row at this sequence length (CPU)")
        m.add_argument("--dry-run", action="store_true")
        m.add_argument("--backend", default="", help="only the rows of this training backend (the unsloth set)")
        m.add_argument("--set", default="grid", choices=["grid", *SETS],
                       help="grid: the speed model's rows; dpo: DPO_SHAPES (issue 47); liger: LIGER_SHAPES")
        if name == "measure":
            m.add_argument("--call", type=int, choices=sorted(CALLS))
            m.add_argument("--only", help="these shapes (comma-separated)")
            m.add_argument("--deadline", type=float, default=0, help="seconds: rows after it are skipped")
        else:
            m.add_argument("--shape", required=True)
            m.add_argument("--weights-from", help="a model folder with written weights, loaded (init pretrained)")
            m.add_argument("--until", default="0")
    return p


def main() -> None:
    a = parser().parse_args()
    if a.cmd == "measure":
        cmd_measure(a)
    else:
        run_shape(a)


if __name__ == "__main__":
    main()
