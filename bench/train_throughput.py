#!/usr/bin/env python3
"""Training speed and memory: yichui's trainer against the peer (../shared/baselines/plain_hf_train.py, a plain
transformers + PEFT loop) side by side on the same GPU, random weights of real shapes.

    python bench/train_throughput.py measure --out $OUT/train.jsonl --peer .peer/plain_hf_train.py [--gpus 0,1]
    python bench/train_throughput.py report RESULTS.jsonl [--md PATH]
    python bench/train_throughput.py measure --dry-run --plan jobs,best,backend --peer P --out F --work DIR
                                      (CPU: every row's command or trainer spec, printed; nothing runs)

Each run is its own process on its own GPU (two GPUs: two queues at once). yichui's tokens/s is the median over the
steps after the first two (tokens of the batch / wall time between logged steps); the peer prints its own median.
Memory: what nvidia-smi shows (peak reserved + outside the allocator) for yichui, the peer's device_used_gib.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
CONFIGS = Path(__file__).resolve().parent / "configs"

def rounds(default: int) -> int:
    """Back-to-back rounds of a plan: $YICHUI_BENCH_ROUNDS, else the plan's default."""
    return int(os.environ.get("YICHUI_BENCH_ROUNDS", default))


# (queue, who, shape, method, rank, ckpt, micro-batch, extra yichui knobs); seq 2048 throughout
PLAN = [
    ("0", "peer", "qwen2.5-7b", "lora", 8, True, 1, {}),
    ("0", "yichui", "qwen2.5-7b", "lora", 8, True, 1, {}),
    ("0", "yichui", "qwen2.5-7b", "lora", 8, True, 1, {"liger": True}),
    ("0", "yichui", "qwen2.5-7b", "lora", 8, False, 4, {"liger": True}),
    ("0", "yichui", "qwen2.5-7b", "lora", 8, False, 2, {}),
    ("1", "peer", "qwen2.5-7b", "qlora", 64, True, 1, {}),
    ("1", "yichui", "qwen2.5-7b", "qlora", 64, True, 1, {}),
    ("1", "peer", "qwen2.5-0.5b", "full", 8, True, 1, {}),
    ("1", "yichui", "qwen2.5-0.5b", "full", 8, True, 1, {}),
    ("1", "yichui", "qwen2.5-0.5b", "full", 8, False, 4, {"liger": True}),
]
# where the speed gap at the same settings comes from: the peer and yichui again in one run, and yichui under
# torch.profiler for optimizer steps 4-6 (profile.json/profile.txt in its run directory, copied into the row)
PROFILE = [
    ("0", "peer", "qwen2.5-7b", "lora", 8, True, 1, {}),
    ("0", "yichui", "qwen2.5-7b", "lora", 8, True, 1, {}),
    ("0", "yichui", "qwen2.5-7b", "lora", 8, True, 1, {"profile_steps": [4, 6]}),
]
# the goals' rows only (a second run of the day, within the device time left)
GOALS = [
    ("0", "peer", "qwen2.5-7b", "lora", 8, True, 1, {}),
    ("0", "yichui", "qwen2.5-7b", "lora", 8, True, 1, {}),
    ("0", "yichui", "qwen2.5-7b", "lora", 8, False, 4, {"liger": True}),
    ("0", "peer", "qwen2.5-0.5b", "full", 8, True, 1, {}),
    ("1", "peer", "qwen2.5-7b", "qlora", 64, True, 1, {}),
    ("1", "yichui", "qwen2.5-7b", "qlora", 64, True, 1, {}),
    ("1", "yichui", "qwen2.5-0.5b", "full", 8, True, 1, {}),
    ("1", "yichui", "qwen2.5-0.5b", "full", 8, False, 4, {"liger": True}),
]
# same settings with nothing else on the machine: yichui's LoRA step is partly bound by the CPU launching kernels
# (profile: the GPU busy ~70 % of the step), so a second queue building weights beside it slows it down
ALONE = [
    ("0", "peer", "qwen2.5-7b", "lora", 8, True, 1, {}),
    ("0", "yichui", "qwen2.5-7b", "lora", 8, True, 1, {}),
    ("0", "peer", "qwen2.5-7b", "lora", 8, True, 1, {}),
    ("0", "yichui", "qwen2.5-7b", "lora", 8, True, 1, {}),
    ("0", "peer", "qwen2.5-0.5b", "full", 8, True, 1, {}),
    ("0", "yichui", "qwen2.5-0.5b", "full", 8, True, 1, {}),
]
# issue 21: unsloth beside the plain loop and yichui, identical settings (Qwen2.5-7B shape, LoRA r16 on all linear
# layers, 2048 tokens, micro-batch 1, checkpointing on), back-to-back rounds so each pair shares the machine's state
UNSLOTH = [("0", who, "qwen2.5-7b", "lora", 16, True, 1, {})
           for _ in range(rounds(2))
           for who in ("peer", "unsloth", "yichui")]
# issue 21's levers, one at a time on the same job (7B LoRA r16, 2048 tokens, micro-batch 1, checkpointing on), each
# round beside both peers: peft's input cast as every peft user has it (the trainer before this lever), without it
# (yichui's default now), then Liger's kernels, torch.compile of each decoder layer, and both
LEVERS = [("0", who, "qwen2.5-7b", "lora", 16, True, 1, extra)
          for _ in range(rounds(1))
          for who, extra in (("peer", {}), ("unsloth", {}), ("yichui", {"adapter_input_cast": True}), ("yichui", {}),
                             ("yichui", {"liger": True}), ("yichui", {"compile_layers": True}),
                             ("yichui", {"liger": True, "compile_layers": True}))]
# the levers kept, in back-to-back rounds against both peers (identical settings as above)
PAIRS = [("0", who, "qwen2.5-7b", "lora", 16, True, 1, extra)
         for _ in range(rounds(3))
         for who, extra in (("peer", {}), ("unsloth", {}), ("yichui", {}), ("yichui", {"compile_layers": True}))]
# Liger with and without compile, and 50 steps at the LoRA default learning rate (2e-4) on the same data: does a
# lever change what is learned (the loss per step of each lever beside the trainer before the levers)
LOSS50 = {"learning_rate": 2e-4, "max_steps": 50}
LEVERS2 = [("0", "yichui", "qwen2.5-7b", "lora", 16, True, 1, x) for x in (
    {"liger": True}, {"liger": True, "compile_layers": True}, LOSS50 | {"adapter_input_cast": True}, LOSS50,
    LOSS50 | {"compile_layers": True})]
# issue 21's other two jobs, each at a fixed effective batch (one micro-batch per optimizer step): Llama-3.1-8B-shape
# QLoRA r16 at 4096 tokens (micro-batch 1) and a Qwen2.5-1.5B-shape full fine-tune at 2048 tokens (micro-batch 4,
# pure bf16 weights on every side). First the 50-step loss comparison on the same weights and the same data (bench
# keys: "loss_steps", "lr"; the rows also time every side), then back-to-back throughput rounds, compiled layers once.
QLORA8 = ("llama3.1-8b", "qlora", 16, True, 1)
FULL15 = ("qwen2.5-1.5b", "full", 16, True, 4)


def loss_rows(job: tuple, seq: int, lr: float) -> list:
    return [("0", who, *job, {"seq": seq, "loss_steps": 50, "lr": lr}) for who in ("plain", "unsloth", "yichui")]


def pair_rows(job: tuple, seq: int, n_rounds: int) -> list:
    return ([("0", who, *job, {"seq": seq}) for _ in range(n_rounds) for who in ("peer", "unsloth", "yichui")]
            + [("0", "yichui", *job, {"seq": seq, "compile_layers": True})])


# the 8B QLoRA loss rows last, in a plan of their own (the longest rows: three loads of 8B and 150 steps of 4096)
JOBS = loss_rows(FULL15, 2048, 1e-5) + pair_rows(FULL15, 2048, rounds(3)) + pair_rows(QLORA8, 4096, rounds(3) - 2)
JOBS_LOSS8B = loss_rows(QLORA8, 4096, 2e-4)
# each side's best plan in the same memory (issue 21): a 24 GiB budget, 8 sequences per optimizer step. unsloth tries
# micro-batches 1-8 with its checkpointing in one load (unsloth_peer.py --sweep; the fastest within the budget
# counts); yichui runs what its planner recommends for a 24 GiB GPU (the planner's predicted tokens/s and peak beside)
BEST = [("0", who, *job, {"seq": seq, "budget_gib": 24.0})
        for job, seq in ((("qwen2.5-7b", "lora", 16, True, 8), 2048), (QLORA8[:4] + (8,), 4096),
                         (FULL15[:4] + (8,), 2048))
        for who in ("unsloth-best", "yichui-best")]
# the unsloth backend (yichui's trainer with unsloth's model and kernels, recipes/training/backends.py) beside unsloth's
# own loop on the 8B QLoRA job, back-to-back; then the 1.5B full job's compiled trainer beside both peers, five rounds
BACKEND = ([("0", who, *QLORA8, {"seq": 4096} | x) for _ in range(rounds(3))
            for who, x in (("unsloth", {}), ("yichui", {"training_backend": "unsloth"}))]
           + [("0", who, *FULL15, {"seq": 2048} | x) for _ in range(rounds(5))
              for who, x in (("peer", {}), ("unsloth", {}), ("yichui", {"compile_layers": True}))])
PLANS = {"main": PLAN, "profile": PROFILE, "goals": GOALS, "alone": ALONE, "unsloth": UNSLOTH, "levers": LEVERS,
         "pairs": PAIRS, "levers2": LEVERS2, "jobs": JOBS,
         "jobs-loss8b": JOBS_LOSS8B, "best": BEST, "backend": BACKEND,
         "best-qlora": [r for r in BEST if r[3] == "qlora"],
         "backend-qlora": [r for r in BACKEND if r[3] == "qlora"]}
SEQ, STEPS = 2048, 8
BENCH_KEYS = ("seq", "loss_steps", "lr", "budget_gib")  # read by this script, not knobs of yichui's trainer
_prepare_lock = threading.Lock()


def run_peer(peer: Path, shape: str, method: str, rank: int, ckpt: bool, batch: int, gpu: str, seq: int) -> dict:
    cmd = [sys.executable, str(peer), "--config", str(CONFIGS / shape / "config.json"), "--method", method,
           "--rank", str(rank), "--batch", str(batch), "--seq", str(seq), "--steps", str(STEPS)] \
        + (["--ckpt"] if ckpt else [])
    out, failed = result(cmd, {**os.environ, "CUDA_VISIBLE_DEVICES": gpu})
    return failed or {"rc": 0, "tokens_per_s": out["tokens_per_s"], "device_gib": out["device_used_gib"],
                      "peak_reserved_gib": out["peak_reserved_gib"], "step_s": out["step_s"]}


def result(cmd: list[str], env: dict) -> tuple[dict, dict | None]:
    """Run a peer; (its RESULT line's JSON, None), or ({}, {"rc", "error": the output's tail}) when it printed none.
    A dry run: ({}, {"dry_run": True, "argv": cmd}), nothing run."""
    import memory_accuracy as ma

    if ma.DRY_RUN:
        return {}, {"dry_run": True, "argv": cmd}
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    line = next((x for x in r.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        return {}, {"rc": r.returncode, "error": (r.stderr or r.stdout)[-3000:]}
    return json.loads(line[7:]), None


def unsloth_peer(python: str, work: Path, shape: str, method: str, rank: int, seq: int, gpu: str) -> tuple:
    """(command prefix, environment) of bench/unsloth_peer.py on the shape's random weights, written once under
    ``work`` by memory_accuracy.prepare_shape (the same weights yichui's rows load; its tiny tokenizer beside)."""
    from memory_accuracy import prepare_shape

    with _prepare_lock:  # one 16 GB write for the 8B shape, not one per side
        weights = prepare_shape(shape, work, weights=True, gpu=gpu)
    cmd = [python, str(Path(__file__).resolve().parent / "unsloth_peer.py"), "--config",
           str(CONFIGS / shape / "config.json"), "--method", method, "--rank", str(rank), "--seq", str(seq),
           "--weights", str(weights), "--tokenizer", str(weights)]
    return cmd, {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"CUDA_VISIBLE_DEVICES": gpu}


def run_unsloth(work: Path, shape: str, method: str, rank: int, ckpt: bool, batch: int, gpu: str, seq: int,
                loss: dict | None = None, backend: str = "unsloth") -> dict:
    """bench/unsloth_peer.py in unsloth's own environment (its python: $YICHUI_UNSLOTH_PYTHON). ``loss`` ({"data",
    "lr"}): the 50-step comparison on yichui's weights and token rows; ``backend="plain"``: the same loop with
    transformers + PEFT alone, in this script's environment."""
    python = os.environ.get("YICHUI_UNSLOTH_PYTHON", "python3") if backend == "unsloth" else sys.executable
    cmd, env = unsloth_peer(python, work, shape, method, rank, seq, gpu)
    cmd += ["--batch", str(batch), "--steps", str(STEPS), "--backend", backend] + (["--ckpt"] if ckpt else [])
    if loss:
        cmd += ["--data", str(loss["data"]), "--lr", str(loss["lr"])]
    out, failed = result(cmd, env)
    return failed or {"rc": 0, "tokens_per_s": out["tokens_per_s"], "device_gib": out["device_used_gib"],
                      "peak_reserved_gib": out["peak_reserved_gib"], "step_s": out["step_s"],
                      "losses": out["losses"], "unsloth": out}


def run_yichui(work: Path, shape: str, method: str, rank: int, ckpt: bool, batch: int, extra: dict, gpu: str,
               seq: int = SEQ, loss: dict | None = None) -> dict:
    """yichui's trainer (memory_accuracy.measure_one). ``loss`` ({"steps", "lr"}): the 50-step comparison — the
    shape's written weights ("pretrained"), identical conversations, the learning rate given."""
    from memory_accuracy import events, measure_one, median_tokens_per_s, prepare_shape

    on_unsloth = extra.get("training_backend") == "unsloth"  # unsloth loads a folder: the written weights
    with _prepare_lock:  # one queue builds a shape's weights, on its own GPU; the other waits and reuses them
        model_dir = prepare_shape(shape, work, weights=method == "qlora" or loss is not None or on_unsloth, gpu=gpu)
    knobs = {"lora_rank": rank, "lora_alpha": 2 * rank, "lora_dropout": 0.0} | extra
    if loss:
        knobs |= {"init": "pretrained", "learning_rate": loss["lr"]}
    if on_unsloth:  # yichui's trainer on the unsloth backend, in unsloth's environment ($YICHUI_UNSLOTH_PYTHON)
        knobs |= {"init": "pretrained", "interpreter": os.environ.get("YICHUI_UNSLOTH_PYTHON", "python3")}
    cfg = (shape, method, ckpt, seq, batch, knobs)
    row = measure_one(cfg, model_dir, work, gpu, loss["steps"] if loss else STEPS, same_rows=loss is not None)
    if row.get("dry_run"):
        return row
    tdir = work / "runs" / row["id"]
    evs = events(tdir)
    out = {"rc": row["rc"], "tokens_per_s": median_tokens_per_s(evs),
           "losses": [round(e["loss"], 4) for e in evs if e["event"] == "step" and e.get("loss") is not None],
           "device_gib": row.get("device_peak_gib"), "peak_reserved_gib": row.get("peak_reserved_gib"),
           "error": row.get("error")}
    if (tdir / "profile.json").exists():
        out["profile"] = json.loads((tdir / "profile.json").read_text()) | {
            "table": (tdir / "profile.txt").read_text()}
    return out


def run_unsloth_best(work: Path, shape: str, method: str, rank: int, effective: int, seq: int, budget: float,
                     gpu: str) -> dict:
    """unsloth's best plan within ``budget`` GiB: unsloth_peer.py --sweep 1,2,4,8 at ``effective`` sequences per
    optimizer step, its checkpointing on; the fastest micro-batch whose memory stays within the budget."""
    cmd, env = unsloth_peer(os.environ.get("YICHUI_UNSLOTH_PYTHON", "python3"), work, shape, method, rank, seq, gpu)
    out, failed = result(cmd + ["--ckpt", "--steps", "5", "--sweep", "1,2,4,8", "--effective-batch", str(effective),
                                "--budget-gib", str(budget)], env)
    if failed:
        return failed
    tried = out["sweep"]
    fit = [c for c in tried if not c.get("oom") and c["device_gib"] <= budget]
    best = max(fit, key=lambda c: c["tokens_per_s"], default=None)
    return {"rc": 0, "tried": tried, "plan": best, "tokens_per_s": best and best["tokens_per_s"],
            "device_gib": best and best["device_gib"]}


def run_yichui_best(work: Path, shape: str, method: str, rank: int, effective: int, seq: int, budget: float,
                    gpu: str) -> dict:
    """yichui's recommended plan for a ``budget`` GiB GPU (planner.plans' first, on this machine: Liger and compiled
    layers where available), measured with the trainer; its predicted tokens/s and peak recorded beside."""
    from recipes.memory import model as memory
    from recipes.memory import planner
    from recipes.training.spec import TrainingSpec

    sh = memory.shape_from_config(json.loads((CONFIGS / shape / "config.json").read_text()))
    t = TrainingSpec(method=method, lora_rank=rank, lora_alpha=2 * rank, lora_dropout=0.0, seq_len=seq,
                     master_weights="bf16")
    unsloth = bool(os.environ.get("YICHUI_UNSLOTH_PYTHON"))  # installed beside: the planner may choose it
    plan = planner.plans(sh, t, effective, "NVIDIA H200", budget, unsloth=unsloth)[0]
    knobs = {"grad_accum": plan.grad_accum, "liger": plan.liger, "compile_layers": plan.compile_layers,
             "training_backend": plan.training_backend}
    res = run_yichui(work, shape, method, rank, plan.ckpt, plan.micro_batch, knobs, gpu, seq) if plan.fits else {}
    return res | {"plan": {"ckpt": plan.ckpt, "micro_batch": plan.micro_batch, "grad_accum": plan.grad_accum,
                           "liger": plan.liger, "compile_layers": plan.compile_layers, "fits": plan.fits,
                           "training_backend": plan.training_backend},
                  "predicted_tokens_per_s": plan.tokens_per_s, "predicted_peak_gib": plan.peak_gib}


def loss_data(work: Path, shape: str, seq: int, batch: int, steps: int, gpu: str) -> Path:
    """The token rows yichui's trainer makes of the identical conversations measure_one(same_rows=True) writes, for
    the peers: trl's conversational prompt-completion tokenization (prompt with the generation prompt; the
    completion starts where prompt and prompt+completion diverge; loss on the completion only, label -100 elsewhere),
    truncated to ``seq`` keeping the start. Returns the JSON file's path (written once)."""
    from memory_accuracy import prepare_shape

    with _prepare_lock:
        model_dir = prepare_shape(shape, work, weights=True, gpu=gpu)
    path = work / f"loss-rows-{shape}-s{seq}-b{batch}x{steps}.json"
    if not path.exists():
        token_rows(model_dir, seq, batch * steps, path)
    return path


def token_rows(model_dir: Path, seq: int, n: int, path: Path) -> None:
    """``n`` copies of the token row (input_ids, labels) of measure_one's identical conversation, as trl tokenizes
    it (see loss_data), written to ``path`` as JSON {"input_ids": [[…]], "labels": [[…]]}."""
    from memory_accuracy import synthetic_dataset
    from transformers import AutoTokenizer

    conv = path.with_suffix(".jsonl")
    synthetic_dataset(conv, model_dir, seq, 1, numbered=False)
    messages = json.loads(conv.read_text().splitlines()[0])["messages"]
    tok = AutoTokenizer.from_pretrained(model_dir)
    prompt = tok.apply_chat_template(messages[:-1], add_generation_prompt=True, tokenize=True,
                                     return_dict=True)["input_ids"]
    ids = tok.apply_chat_template(messages, tokenize=True, return_dict=True)["input_ids"]
    start = next((i for i, (x, y) in enumerate(zip(prompt, ids)) if x != y), min(len(prompt), len(ids)))
    labels = [-100] * start + ids[start:]
    path.write_text(json.dumps({"input_ids": [ids[:seq]] * n, "labels": [labels[:seq]] * n}))


def cmd_measure(a) -> None:
    import memory_accuracy as ma

    ma.DRY_RUN = a.dry_run
    work = Path(a.work or tempfile.mkdtemp(prefix="yichui-trainbench-"))
    env = ma.environment()
    print(json.dumps(env), flush=True)
    out, lock, failed = Path(a.out), threading.Lock(), []
    gpus = a.gpus.split(",")
    plan = [row for name in a.plan.split(",") for row in PLANS[name]]

    def queue(q: str, gpu: str) -> None:
        try:
            run_queue(q, gpu)
        except Exception as e:  # the script fails (a thread's error alone would not)
            failed.append(e)
            raise

    def run_queue(q: str, gpu: str) -> None:
        for _, who, shape, method, rank, ckpt, batch, extra in [p for p in plan if p[0] == q]:
            t0 = time.time()
            seq, knobs = extra.get("seq", SEQ), {k: v for k, v in extra.items() if k not in BENCH_KEYS}
            loss = None
            if "loss_steps" in extra:
                loss = {"steps": extra["loss_steps"], "lr": extra["lr"]}
                if who != "yichui":
                    loss["data"] = loss_data(work, shape, seq, batch, extra["loss_steps"], gpu)
            if who.endswith("-best"):  # ``batch`` is the effective batch here: each side picks its micro-batch
                res = (run_unsloth_best if who == "unsloth-best" else run_yichui_best)(
                    work, shape, method, rank, batch, seq, extra["budget_gib"], gpu)
            else:
                res = None
            res = res or (run_peer(Path(a.peer), shape, method, rank, ckpt, batch, gpu, seq) if who == "peer"
                   else run_unsloth(work, shape, method, rank, ckpt, batch, gpu, seq, loss,
                                    "plain" if who == "plain" else "unsloth") if who in ("unsloth", "plain")
                   else run_yichui(work, shape, method, rank, ckpt, batch, knobs, gpu, seq, loss))
            row = {"who": who, "shape": shape, "method": method, "rank": rank, "ckpt": ckpt, "batch": batch,
                   "seq": seq, "extra": extra, "gpu": gpu, "wall_s": round(time.time() - t0, 1), "env": env} | res
            if a.dry_run:
                with lock:
                    print(json.dumps({k: v for k, v in row.items() if k != "env"}), flush=True)
                continue
            with lock:
                with open(out, "a") as f:
                    f.write(json.dumps(row) + "\n")
                print(f"{who:7s} {shape:13s} {method:6s} r{rank:<3d} ckpt={ckpt!s:5s} mb{batch} {extra} -> "
                      f"{res.get('tokens_per_s')} tok/s {res.get('device_gib')} GiB rc={res.get('rc')}", flush=True)

    threads = [threading.Thread(target=queue, args=(q, g)) for q, g in zip(sorted({p[0] for p in plan}), gpus)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        raise SystemExit(f"measure: {type(failed[0]).__name__}: {failed[0]}")


def cmd_report(a) -> None:
    rows = [json.loads(x) for x in Path(a.results).read_text().splitlines() if x.strip()]
    peers = {(r["shape"], r["method"], r["rank"]): r for r in rows if r["who"] == "peer" and r.get("tokens_per_s")}
    lines = ["| run | tokens/s | GiB | speed vs peer | memory vs peer |", "|---|---:|---:|---:|---:|"]
    for r in rows:  # the first run built QLoRA weights on GPU 0 from the other queue: count that GPU's own process only
        if r["who"] == "yichui" and r.get("device_gib") and r["device_gib"] - r["peak_reserved_gib"] > 2:
            r["device_gib"], r["note"] = r["peak_reserved_gib"] + 0.749, "corrected"
    for r in rows:
        p = peers.get((r["shape"], r["method"], r["rank"]))
        name = (f"{r['who']} {r['shape']} {r['method']} r{r['rank']} ckpt {'on' if r['ckpt'] else 'off'} "
                f"mb {r['batch']} {' '.join(k for k, v in r['extra'].items() if v)}")
        if not r.get("tokens_per_s"):
            lines.append(f"| {name} | failed | | | |")
            continue
        sp = f"{r['tokens_per_s'] / p['tokens_per_s']:.2f}×" if p else ""
        mem = f"{r['device_gib'] / p['device_gib']:.2f}×" if p and r.get("device_gib") else ""
        lines.append(f"| {name} | {r['tokens_per_s']:.0f} | {r['device_gib']:.1f} | {sp} | {mem} |")
    from memory_accuracy import write_report

    write_report("\n".join(lines), a.md)


def cmd_jobs_report(a) -> None:
    """Issue 21's jobs (plan ``jobs`` + ``jobs-loss8b``): back-to-back rounds with their ratios, compiled layers, MFU
    (6N FLOPs per token ÷ the measured 790 TFLOP/s bf16 peak), memory as nvidia-smi shows it, and the 50-step losses
    on the same weights and data side by side (yichui's from its trainer log when its row did not come back)."""
    import re
    import statistics

    from bench_fit import shape

    rows = [json.loads(x) for f in a.results for x in Path(f).read_text().splitlines() if x.strip()]
    out = []
    for name, method in (("qwen2.5-1.5b", "full"), ("llama3.1-8b", "qlora")):
        job = [r for r in rows if r["shape"] == name and r["method"] == method and not r["who"].endswith("-best")]
        if not job:
            continue
        r0 = job[0]
        n6 = 6 * shape(name).n_params
        mfu = lambda t: f"{t * n6 / 790e12:.0%}"  # noqa: E731
        out += [f"### {name} {method}, {r0['seq']} tokens, micro-batch {r0['batch']}, checkpointing on, no packing",
                "", "| round | plain loop | unsloth | yichui eager | yichui ÷ unsloth | yichui ÷ plain |",
                "|---|---:|---:|---:|---:|---:|"]
        timing = [r for r in job if "loss_steps" not in r["extra"] and not r["extra"].get("compile_layers")
                  and r.get("tokens_per_s")]
        # a round: plain, unsloth, yichui back to back (a failed run breaks its round, which is left out)
        rounds_ = [timing[i:i + 3] for i in range(len(timing) - 2)
                   if [r["who"] for r in timing[i:i + 3]] == ["peer", "unsloth", "yichui"]]
        for i, (pl, un, yi) in enumerate(rounds_, 1):
            p_, u_, y_ = pl["tokens_per_s"], un["tokens_per_s"], yi["tokens_per_s"]
            out.append(f"| {i} | {p_:,.0f} | {u_:,.0f} | {y_:,.0f} | {y_ / u_:.2f}× | {y_ / p_:.2f}× |")
        comp = [r for r in job if r["extra"].get("compile_layers")]
        med = {who: statistics.median(r["tokens_per_s"] for r in timing if r["who"] == who)
               for who in ("peer", "unsloth", "yichui")}
        mem = {who: max(r["device_gib"] for r in timing if r["who"] == who) for who in ("peer", "unsloth", "yichui")}
        out += ["", "| run | tokens/s (median) | MFU (6N) | GiB (nvidia-smi) |", "|---|---:|---:|---:|"]
        for who, label in (("peer", "plain loop"), ("unsloth", "unsloth"), ("yichui", "yichui eager")):
            out.append(f"| {label} | {med[who]:,.0f} | {mfu(med[who])} | {mem[who]:.2f} |")
        for r in comp:
            out.append(f"| yichui compiled layers (one run, after round {len(rounds_)}) | {r['tokens_per_s']:,.0f} | "
                       f"{mfu(r['tokens_per_s'])} | {r['device_gib']:.2f} |")
            out.append(f"| → compiled ÷ unsloth (median) | {r['tokens_per_s'] / med['unsloth']:.2f}× | | "
                       f"{r['device_gib'] / mem['unsloth']:.2f}× |")
        loss = {r["who"]: r for r in job if "loss_steps" in r["extra"]}
        losses = {who: r.get("losses") or [] for who, r in loss.items()}
        if "yichui" not in loss and a.yichui_log:  # its row did not come back: the Trainer's own log lines
            text = Path(a.yichui_log).read_text()
            losses["yichui"] = [float(x) for x in re.findall(r"\{'loss': '([0-9.e+-]+)'", text)]
        if losses:
            steps = [1, 2, 5, 10, 20, 30, 40, 50]
            whos = [w for w in ("plain", "unsloth", "yichui") if len(losses.get(w, [])) >= 50]
            lr = next(r["extra"]["lr"] for r in job if "loss_steps" in r["extra"])
            out += ["", f"50 steps on the same weights and data (lr {lr}, constant, clip 1.0, no weight decay):", "",
                    "| step | " + " | ".join(whos) + " | largest gap |", "|---:|" + "---:|" * (len(whos) + 1)]
            for st in steps:
                v = [losses[w][st - 1] for w in whos]
                out.append(f"| {st} | " + " | ".join(f"{x:.4g}" for x in v) +
                           f" | {(max(v) - min(v)) / max(abs(min(v)), 1e-9):.1%} |")
            for w in whos:
                if w in loss:
                    out.append(f"\n{w}: {loss[w]['tokens_per_s']:,.0f} tokens/s over the 50 steps, "
                               f"{loss[w]['device_gib']:.2f} GiB")
        out.append("")
    best = [r for r in rows if r["who"].endswith("-best")]
    if best:
        out += ["### Each side's best plan in the same memory (24 GiB budget, 8 sequences per optimizer step)", "",
                "| job | side | plan | tokens/s | GiB | yichui ÷ unsloth | predicted tokens/s | predicted GiB |",
                "|---|---|---|---:|---:|---:|---:|---:|"]
        for un, yi in zip(best[::2], best[1::2]):
            for r in (un, yi):
                pl = r.get("plan") or {}
                plan = (f"mb {pl.get('micro_batch')} × {pl.get('grad_accum')}, ckpt {'on' if pl.get('ckpt', True) else 'off'}"
                        + (", compiled" if pl.get("compile_layers") else "") + (", Liger" if pl.get("liger") else ""))
                ratio = (f"{yi['tokens_per_s'] / un['tokens_per_s']:.2f}×"
                         if r is yi and yi.get("tokens_per_s") and un.get("tokens_per_s") else "")
                tps, gib = r.get("tokens_per_s"), r.get("device_gib")
                out.append(f"| {r['shape']} {r['method']} {r['seq']} | {r['who'][:-5]} | {plan} | "
                           f"{tps and f'{tps:,.0f}' or 'failed'} | {gib and f'{gib:.2f}' or ''} | {ratio} | "
                           f"{r.get('predicted_tokens_per_s') or ''} | {r.get('predicted_peak_gib') or ''} |")
        out.append("")
    from memory_accuracy import write_report

    write_report("\n".join(out), a.md)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--out", required=True)
    m.add_argument("--peer", required=True)
    m.add_argument("--gpus", default="0,1")
    m.add_argument("--work", default=None)
    m.add_argument("--plan", default="main", help="one of " + ", ".join(sorted(PLANS)) + " (a comma list: one "
                   "after another)")
    m.add_argument("--dry-run", action="store_true", help="print what each row would run; run nothing")
    r = sub.add_parser("report")
    r.add_argument("results")
    r.add_argument("--md", default=None)
    j = sub.add_parser("jobs-report")
    j.add_argument("results", nargs="+")
    j.add_argument("--yichui-log", default=None, help="yichui's 8B QLoRA 50-step trainer log, when its row is missing")
    j.add_argument("--md", default=None)
    a = ap.parse_args()
    if a.cmd == "measure" and not set(a.plan.split(",")) <= PLANS.keys():
        ap.error(f"--plan {a.plan}: not among {', '.join(sorted(PLANS))}")
    {"measure": cmd_measure, "report": cmd_report, "jobs-report": cmd_jobs_report}[a.cmd](a)


if __name__ == "__main__":
    main()
