#!/usr/bin/env python3
"""Reliability on the GPU (issue 23): an out-of-memory error in the middle of training, after a checkpoint, and the
chaos run — kill -9 of the whole yichui process tree at random points of each step — on a real model shape.

    python bench/chaos_gpu.py run --work DIR --results DIR [--kills 30]     (GPU machine; serve_gpu.sh chaos)
    python bench/chaos_gpu.py run --dry-run --work DIR --results DIR      (CPU: the kill plan, each phase's command
                                                                           with its answers checked; nothing runs)

1. ``base``: the Qwen2.5-0.5B shape (real config.json), random weights pre-trained briefly, with the tiny tokenizer
   (bench/serve_chain.py prepare), in a child process.
2. ``oom``: ``yichui run --yes`` on that folder, LoRA, no smoke test, sequence length 8,192, micro-batch 64 without
   activation checkpointing, a checkpoint every 2 steps, on 1,920 short conversations and one long one
   (``--long-words``, ~1,500 tokens). Short micro-batches fit; the one holding the long conversation (every record
   padded to its length: 64 x ~1,500 tokens, logits over a 151,936-token vocabulary) cannot, wherever the trainer's
   shuffle puts it: a real CUDA out-of-memory error mid-run. The train step's rule (recipes/training/runner.py
   recover) halves the micro-batch, doubles the accumulation, turns checkpointing on and resumes from the last
   checkpoint; at 32 with checkpointing the long micro-batch fits.
   Recorded: the recoveries, the step of each start and the checkpoint it resumed from, losses.
3. ``chaos``: the tiny hub server (recipes/hub/server.py, weights throttled so kills land inside the download)
   serving the base; ``yichui run --yes`` fine-tunes it (LoRA, ``--chaos-steps`` steps, a checkpoint every ``--save-steps``), exports (merged +
   bnb-8bit), deploys with transformers serve and evaluates; ``--kills`` SIGKILLs spread over steps 3-8 as in
   tests/e2e/test_chaos.py, each followed by ``yichui resume``. After each kill: the session file loads, no visible
   export folder is half-written. At the end: the session finished; the weights were fetched once plus at most what
   was in flight at each kill, byte for byte the hub's; each restart resumed from a checkpoint at most one interval
   behind its last logged step; the steps a restart trained again have the losses they had before the kill
   (bf16 on a GPU: compared to 2 %, the figures recorded).

Rows go to RESULTS/rows.jsonl (bench/serve_chain.py row), wizard output to RESULTS/*.log.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_chain import YICHUI, dry_row, home, phase, prepare_apart, row, session  # noqa: E402

from recipes.jobs import kill_tree  # noqa: E402

# (step of the fine-tune's 8, share of the kills out of 30, longest delay after its header in s)
PLAN = [(3, 3, 12.0), (4, 4, 6.0), (5, 8, 30.0), (6, 6, 25.0), (7, 5, 15.0), (8, 4, 15.0)]


def kill_plan(kills: int, train_delay: float = 0.0) -> list[tuple[int, float]]:
    """``kills`` (step, longest delay) pairs in step order, each step's share of PLAN scaled to ``kills``, at least
    one per step: fewer kills still reach every step. ``train_delay``: the train step's longest delay instead of
    PLAN's (a GPU trainer takes ~25 s to its first step: kills meant to land after a checkpoint wait longer)."""
    return [(step, train_delay if step == 5 and train_delay else top) for step, n, top in PLAN
            for _ in range(max(1, round(n * kills / 30)))]
HEADER = re.compile(r"\[(\d)/8\]")
REPO = "bench/qwen2.5-0.5b-chaos"


def sets_argv(sets: dict) -> list[str]:
    return [x for k, v in sets.items() for x in ("--set", f"{k}={v}")]


def train_events(sid: str) -> list[dict]:
    from recipes import jobs

    return jobs.read_events(home() / "runs" / sid / "train" / "events.jsonl")[0]


def starts_and_replays(events: list[dict]) -> dict:
    """Each trainer start (the step it resumed from) and, for the steps logged more than once (trained again after
    a kill or an OOM), the losses each time."""
    starts = [{"resumed_from": e.get("resumed_from"), "time": e["time"]} for e in events if e["event"] == "start"]
    seen: dict[int, list[float]] = {}
    for e in events:
        if e["event"] == "step" and e.get("loss") is not None:
            seen.setdefault(e["step"], []).append(e["loss"])
    replays = {s: v for s, v in seen.items() if len(v) > 1}
    worst = max((abs(v[-1] - v[0]) / max(abs(v[0]), 1e-9) for v in replays.values()), default=0.0)
    return {"starts": starts, "replayed_steps": len(replays), "replay_worst_rel_diff": round(worst, 5),
            "replays": {str(k): v for k, v in sorted(replays.items())[:40]}}


# ---- 2. an out-of-memory error after a checkpoint ------------------------------------------------------------------

def oom_data(path: Path, base: Path, long_words: int) -> dict:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(base)
    rng = random.Random(0)
    words = "model memory token layer batch weight gradient optimizer adapter rank attention logits".split()
    long_text = " ".join(rng.choice(words) for _ in range(long_words))
    with open(path, "w") as f:
        for i in range(1920):
            f.write(json.dumps({"messages": [{"role": "user", "content": f"Say the number {i} in words."},
                                             {"role": "assistant", "content": f"The number is {i}; " +
                                              " ".join(rng.choice(words) for _ in range(40))}]}) + "\n")
        f.write(json.dumps({"messages": [{"role": "user", "content": "Write a long text."},
                                         {"role": "assistant", "content": long_text}]}) + "\n")
    return {"long_tokens": len(tok(long_text)["input_ids"]), "records": 1921}


def oom_sets(base: Path, data: Path, max_steps: int) -> dict:
    """The oom phase's answers: LoRA at 8,192 tokens, micro-batch 64 without checkpointing, a checkpoint every 2."""
    return {"select_model.source": "local", "select_model.path": str(base), "choose_strategy.method": "lora",
            "choose_strategy.lora_rank": 16, "choose_strategy.dataset": "local",
            "choose_strategy.dataset_path": str(data), "choose_strategy.seq_len": 8192,
            "choose_strategy.micro_batch": 64, "choose_strategy.grad_accum": 1, "choose_strategy.packing": "false",
            "choose_strategy.activation_checkpointing": "false", "choose_strategy.max_steps": max_steps,
            "choose_strategy.save_steps": 2, "choose_strategy.val_ratio": 0, "choose_strategy.preflight": "false"}


def oom(base: Path, results: Path, work: Path, long_words: int, max_steps: int) -> dict:
    data = work / "oom.jsonl"
    info = oom_data(data, base, long_words)
    sets = oom_sets(base, data, max_steps)
    t0 = time.time()
    # the fine-tune up to its export: stopped (kill -9) once the train step is done and the export begins
    p = subprocess.Popen([YICHUI, "run", "--yes", "--task", "finetune", *sets_argv(sets)], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    assert p.stdout is not None
    with open(results / "oom.log", "w") as log:
        for line in p.stdout:
            log.write(line)
            m = HEADER.search(line)
            if m and int(m.group(1)) >= 6:
                break
    sid = newest(t0)
    kill_tree(p, home() / "runs" / str(sid) if sid else None)
    rc = p.returncode
    keep_trainer_files(sid, results / "oom-train")
    s = session(sid) if sid else {}
    out = s.get("steps", {}).get("train", {}).get("outputs", {})
    return {"rc": rc, "session": sid, **info, "wall_seconds": round(time.time() - t0, 1),
            "train_status": s.get("steps", {}).get("train", {}).get("status"),
            "recoveries": out.get("recoveries"), "steps": out.get("steps"),
            **(starts_and_replays(train_events(sid)) if sid else {})}


def keep_trainer_files(sid: str | None, to: Path) -> None:
    """The trainer's log and events of session ``sid`` next to the results (the evidence of each start)."""
    import shutil

    tdir = home() / "runs" / str(sid) / "train"
    to.mkdir(parents=True, exist_ok=True)
    for f in [*tdir.glob("*.log"), tdir / "events.jsonl"] if sid else []:
        if f.is_file():
            shutil.copy2(f, to / f.name)


NEW_SESSION = re.compile(r"(?:New session|新会话) ([\w.-]+)")


def newest(after: float) -> str | None:
    found = [p for p in (home() / "sessions").glob("*.json") if p.stat().st_mtime >= after - 1]
    return max(found, key=lambda p: p.stat().st_ctime).stem if found else None


# ---- 3. kill -9 at random points of every step -----------------------------------------------------------------------

def leftovers(sid: str) -> int:
    """SIGKILL every process whose command line names session ``sid`` (a wizard, or a job it started, that outlived
    a driver ended by the device runner at a call's end); how many."""
    import psutil

    n = 0
    for p in psutil.process_iter(["cmdline"]):
        if p.pid != os.getpid() and any(sid in a for a in p.info["cmdline"] or ()):
            try:
                p.kill()
                n += 1
            except psutil.Error:
                pass
    return n


def chaos_sets(hub_url: str, max_steps: int, save_steps: int) -> dict:
    """The chaos phase's answers: the base from the hub at ``hub_url``, LoRA on the bundled data, bnb-8bit, served
    by transformers, evaluated."""
    return {"select_model.endpoint": hub_url, "select_model.model": "other", "select_model.model_id": REPO,
            "choose_strategy.method": "lora", "choose_strategy.lora_rank": 16, "choose_strategy.dataset": "bundled",
            "choose_strategy.seq_len": 512, "choose_strategy.micro_batch": 8, "choose_strategy.grad_accum": 1,
            "choose_strategy.max_steps": max_steps, "choose_strategy.save_steps": save_steps,
            "choose_strategy.save_total_limit": 3, "export.formats": "bnb-8bit", "export.serve_with": "transformers",
            "deploy.backend": "transformers", "evaluate.max_new_tokens": 48}


def chaos(base: Path, results: Path, work: Path, kills: int, seed: int, max_steps: int, save_steps: int,
          stop_at: float | None = None, train_delay: float = 0.0) -> dict:
    """The chaos phase; resumable across driver runs (a device call lasts at most 10 minutes, 30 kills take
    longer): the session, the kill log, the hub's port and the bytes it sent so far are kept in
    ``work/chaos-state.json`` after every kill, and a run finding it goes on from the next kill. Past ``stop_at``
    (epoch seconds) no new kill starts: the state is saved and ``{"paused": ...}`` returned."""
    import shutil

    from recipes.hub.server import HubServer
    from wizard.session import Session

    hub_root = work / "hub"
    if not (hub_root / REPO).exists():
        shutil.copytree(base, hub_root / REPO)
    weights = sum(p.stat().st_size for p in (hub_root / REPO).glob("*.safetensors"))
    state_file = work / "chaos-state.json"
    st = json.loads(state_file.read_text()) if state_file.exists() else \
        {"seed": seed, "sid": None, "log": [], "download_kills": 0, "bytes_sent": {}, "hub_port": 0, "runs": 0,
         "leftovers_killed": 0}
    st["runs"] += 1
    rng = random.Random(st["seed"])
    for _ in st["log"]:
        rng.random()  # the delays the earlier runs drew (uniform draws one random() each)
    if st["sid"]:
        st["leftovers_killed"] += leftovers(st["sid"])
    sent_before = dict(st["bytes_sent"])
    # the hub here is the local server on 127.0.0.1: serve_gpu.sh's HF_HUB_OFFLINE (no network there) would refuse it
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    plan = kill_plan(kills, train_delay)
    log, download_kills, sid = st["log"], st["download_kills"], st["sid"]

    def sent_now(hub) -> dict:
        return {k: sent_before.get(k, 0) + hub.hub.bytes_sent.get(k, 0) for k in {*sent_before, *hub.hub.bytes_sent}}

    def save(hub) -> None:
        st.update(sid=sid, log=log, download_kills=download_kills, bytes_sent=sent_now(hub), hub_port=hub.httpd.server_address[1])
        state_file.with_suffix(".tmp").write_text(json.dumps(st))
        os.replace(state_file.with_suffix(".tmp"), state_file)

    faults = [{"path": "*.safetensors", "throttle": max(weights // 6, 1 << 20)}] if len(log) < len(plan) else []
    with HubServer(hub_root, port=st["hub_port"], faults=faults) as hub:  # the same port: the session names its URL
        sets = chaos_sets(hub.url, max_steps, save_steps)
        for i, (target, top) in list(enumerate(plan))[len(log):]:
            if stop_at and time.time() > stop_at:
                save(hub)
                return {"paused": True, "session": sid, "kills_so_far": len(log), "runs": st["runs"]}
            delay = rng.uniform(0.3, top)
            argv = ["run", "--yes", "--task", "finetune", *sets_argv(sets)] if sid is None else \
                ["resume", sid, "--yes", *sets_argv(sets)]
            p = subprocess.Popen([YICHUI, *argv], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=env,
                                 stderr=subprocess.STDOUT, text=True, start_new_session=True)
            at, seen = 0, []
            assert p.stdout is not None
            for line in p.stdout:
                seen.append(line)
                if sid is None and (m := NEW_SESSION.search(line)):
                    sid = m.group(1)
                m = HEADER.search(line)
                if m and int(m.group(1)) >= target and "skipped" not in line:
                    at = int(m.group(1))
                    break
            with open(results / "chaos.log", "a") as f:
                f.write(f"\n=== kill {i}: target step {target}, delay {delay:.2f} s\n" + "".join(seen[-30:]))
            if at == 0:
                p.wait(timeout=600)
                log.append({"i": i, "target": target, "hit": None, "rc": p.returncode})
                if p.returncode != 0:  # the run itself failed: its output is in chaos.log; more kills prove nothing
                    raise RuntimeError(f"kill {i}: the wizard exited {p.returncode} before step {target}: "
                                       + "".join(seen[-5:]))
                continue
            time.sleep(delay)
            if p.poll() is not None:
                log.append({"i": i, "target": target, "hit": at, "finished": True})
                continue
            if sid is None:
                raise RuntimeError("no 'New session' line in the wizard's output: " + "".join(seen[-5:]))
            run_dir = home() / "runs" / str(sid)
            download_kills += at == 4
            last = max((e["step"] for e in train_events(sid) if e["event"] == "step"), default=0) if at == 5 else None
            kill_tree(p, run_dir)
            Session.load(home() / "sessions" / f"{sid}.json")  # valid, whatever the kill interrupted
            half = [d.name for d in (run_dir / "export").glob("*") if d.is_dir() and not d.name.startswith(".")
                    and not (d / "config.json").exists()] if (run_dir / "export").exists() else []
            log.append({"i": i, "target": target, "hit": at, "delay": round(delay, 2), "last_step": last,
                        "half_written_exports": half})
            save(hub)
        hub.hub.faults = []
        t0 = time.time()
        with open(results / "chaos.log", "a") as f:
            f.write("\n=== final resume\n")
            f.flush()
            rc = subprocess.run([YICHUI, "resume", str(sid), "--yes", *sets_argv(sets)], stdout=f,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=1800, env=env).returncode
        s = session(str(sid))
        steps = s["steps"]
        sent = {Path(k).name: v for k, v in sent_now(hub).items()}
        size = {p.name: p.stat().st_size for p in (hub_root / REPO).iterdir() if p.is_file()}
        model_dir = Path(steps["download"]["outputs"]["model_dir"])
        same = all(hashlib.sha256((model_dir / f["path"]).read_bytes()).digest() ==
                   hashlib.sha256((hub_root / REPO / f["path"]).read_bytes()).digest()
                   for f in steps["download"]["outputs"]["files"])
    keep_trainer_files(sid, results / "chaos-train")
    events = train_events(str(sid))
    behind = []
    for e in [x for x in events if x["event"] == "start"][1:]:
        before = max((x["step"] for x in events if x["event"] == "step" and x["time"] < e["time"]), default=0)
        behind.append(before - int((e.get("resumed_from") or "checkpoint-0").split("-")[1]))
    killed = [x for x in log if x.get("hit") and not x.get("finished")]
    state_file.unlink()
    return {"session": sid, "kills": len(killed), "kill_log": log, "final_rc": rc, "driver_runs": st["runs"],
            "leftovers_killed": st["leftovers_killed"],
            "final_resume_seconds": round(time.time() - t0, 1),
            "status": {k: v["status"] for k, v in steps.items()},
            "weights_bytes": sum(v for k, v in size.items() if k.endswith(".safetensors")),
            "weights_bytes_sent": sum(v for k, v in sent.items() if k.endswith(".safetensors")),
            "download_kills": download_kills, "files_match_hub": same,
            "restart_steps_behind": behind, "save_steps": save_steps,
            "half_written_exports_seen": sum(len(x.get("half_written_exports") or []) for x in log),
            "train_steps": steps["train"]["outputs"].get("steps"), "recoveries": steps["train"]["outputs"].get("recoveries"),
            "evaluate": {k: {m: v.get(m) for m in ("loss", "rouge_l")} for k, v in
                         (steps["evaluate"].get("outputs") or {}).get("parts", {}).items()},
            **starts_and_replays(events)}


def cmd_run(a) -> None:
    results, work = Path(a.results), Path(a.work)
    results.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    t_start = time.time()
    seed = a.seed or random.SystemRandom().randrange(1, 10**9)
    if a.dry_run:  # no base model, no hub: the plan and each phase's command, its answers checked
        base = work / Path(a.shape).name
        row(results, "plan", dry_run=True, seed=seed, kills=kill_plan(a.kills, a.train_delay))
        if "oom" in a.phases:
            dry_row(results, "oom", "finetune", oom_sets(base, work / "oom.jsonl", a.oom_steps))
        if "chaos" in a.phases:
            dry_row(results, "chaos", "finetune", chaos_sets("http://127.0.0.1:HUB-PORT", a.chaos_steps, a.save_steps))
        row(results, "done", seed=seed)
        return
    b = phase(results, "base", prepare_apart, a.shape, work / Path(a.shape).name, a.pretrain_steps)
    base = Path(b.get("dir") or work / Path(a.shape).name)
    if "oom" in a.phases:
        phase(results, "oom", oom, base, results, work, a.long_words, a.oom_steps)
    if "chaos" in a.phases:
        phase(results, "chaos", chaos, base, results, work, a.kills, seed, a.chaos_steps, a.save_steps,
              t_start + a.stop_after if a.stop_after else None, a.train_delay)
    for run_dir in (home() / "runs").glob("*"):  # nothing left running on the GPU
        from recipes import jobs

        for job in jobs.find(run_dir):
            job.stop(timeout=10)
    row(results, "done", seed=seed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--work", required=True)
    r.add_argument("--results", required=True)
    r.add_argument("--kills", type=int, default=30, help="spread over steps 3-8 as PLAN's shares")
    r.add_argument("--oom-steps", type=int, default=45)
    r.add_argument("--chaos-steps", type=int, default=120)
    r.add_argument("--save-steps", type=int, default=15, help="the chaos fine-tune's checkpoint interval")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--pretrain-steps", type=int, default=150)
    r.add_argument("--phases", default="oom,chaos")
    r.add_argument("--train-delay", type=float, default=0, help="the train step's longest delay before a kill "
                   "(default PLAN's 30 s)")
    r.add_argument("--stop-after", type=float, default=0, help="seconds after which the chaos phase starts no new "
                   "kill and pauses (work/chaos-state.json; the next run goes on from there): a device call's limit")
    r.add_argument("--long-words", type=int, default=700, help="words in the one long conversation of the oom "
                   "phase: its micro-batch of 64 must not fit, of 32 with checkpointing must")
    r.add_argument("--shape", default="qwen2.5-0.5b", help="a bench/configs name, or a folder with a config.json "
                   "(a CPU rehearsal: the tiny model's)")
    r.add_argument("--dry-run", action="store_true", help="the kill plan and each phase's command with its answers "
                   "checked, to rows.jsonl; nothing runs")
    a = ap.parse_args()
    cmd_run(a)


if __name__ == "__main__":
    main()
