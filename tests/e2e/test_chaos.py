"""Chaos: 30 SIGKILLs of the whole yichui process tree (wizard, trainer, server) at random points of each step of one
fine-tune on the tiny model, each followed by `resume`, checking after every kill that the session file loads, that
no export folder is half-written, and at the end that no downloaded byte was fetched twice beyond the interrupted
ranges, that every training restart lost at most one checkpoint interval, that the downloaded files are the
hub's, and that the final artifacts (adapter, merged model, quantized copies, training losses, held-out loss) are
byte for byte those of the same fine-tune run without interruption. The kill delays come from fixed seeds plus one random seed, printed (pytest -s, or the failure message).
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import re
import subprocess
import time
from pathlib import Path

from conftest import YICHUI, env_for, kill_tree, sessions, stop_all

from recipes import jobs
from wizard.session import Session

FIXED_SEED = 20261130
SAVE_STEPS = 10
# (step number in the fine-tune's 8, how many kills, longest delay after its header in s)
PLAN = [(3, 3, 6.0), (4, 4, 2.5), (5, 10, 6.0), (6, 6, 3.0), (7, 5, 4.0), (8, 3, 1.5)]  # 3: strategy + smoke run
HEADER = re.compile(r"\[(\d)/8\]")
THROTTLE = 100_000  # bytes/s for the weights, so that kills land inside the download


def check_after_kill(home: Path, sid: str) -> None:
    Session.load(home / "sessions" / f"{sid}.json")  # valid, whatever the kill interrupted
    edir = home / "runs" / sid / "export"
    for d in edir.iterdir() if edir.exists() else []:
        if d.is_dir() and not d.name.startswith("."):  # a visible export folder is a complete one
            assert (d / "config.json").exists() or list(d.glob("*.gguf")), f"half-written export {d}"


def test_thirty_kills_then_resume_finishes_with_nothing_lost(home, hub):
    # the last kills' delays vary run to run; a failure's printed seed replays them: YICHUI_CHAOS_SEED=<seed>
    random_seed = int(os.environ.get("YICHUI_CHAOS_SEED") or random.SystemRandom().randrange(1, 10**9))
    print(f"chaos seeds: fixed {FIXED_SEED}, random {random_seed} (YICHUI_CHAOS_SEED={random_seed} replays it)")
    fixed, rnd = random.Random(FIXED_SEED), random.Random(random_seed)
    kills = [(step, top) for step, n, top in PLAN for _ in range(n)]
    assert len(kills) >= 30
    hub.hub.faults = [{"path": "*.safetensors", "throttle": THROTTLE}]
    sets = ["--set", f"select_model.endpoint={hub.url}", "--set", f"choose_strategy.save_steps={SAVE_STEPS}",
            "--set", "choose_strategy.save_total_limit=3", "--set", "choose_strategy.max_steps=60"]
    sid, log, download_kills, train_kills = None, [], 0, []
    phases = {"start": time.monotonic()}  # seconds per phase, printed with the kill log
    try:
        for i, (target, top) in enumerate(kills):
            rng = fixed if i < 20 else rnd
            delay = rng.uniform(0.2, top)
            argv = ["demo", *sets] if sid is None else ["resume", sid, "--yes", *sets]
            p = subprocess.Popen([YICHUI, *argv], env=env_for(home), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, start_new_session=True)
            at = 0
            for line in p.stdout:
                m = HEADER.search(line)
                if m and int(m.group(1)) >= target and "skipped" not in line:
                    at = int(m.group(1))
                    break
            if at == 0:  # finished before reaching the step: nothing left to interrupt there
                p.wait(timeout=60)
                log.append((i, target, None, p.returncode))
                continue
            time.sleep(delay)
            if p.poll() is not None:  # it finished within the delay: no kill this time
                log.append((i, target, at, "finished"))
                continue
            if sid is None:
                (s,) = sessions(home)
                sid = s["id"]
            run_dir = home / "runs" / sid
            if at == 4:
                download_kills += 1
            if at == 5:
                train_kills.append(_last_step(run_dir))
            kill_tree(p, run_dir)
            log.append((i, target, at, round(delay, 2)))
            check_after_kill(home, sid)
        phases["kills"] = time.monotonic()
        hub.hub.faults = []
        r = subprocess.run([YICHUI, "resume", sid, "--yes", *sets], env=env_for(home), stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, (log, r.stdout[-3000:], r.stderr[-2000:])
        killed = [x for x in log if x[2] is not None and x[3] != "finished"]
        assert len(killed) >= 30, log

        s = Session.load(home / "sessions" / f"{sid}.json")
        assert s.is_finished() and s.steps["evaluate"]["status"] == "done"
        # downloads: the weights were fetched once, plus at most what was in flight at each kill
        size = {p.name: p.stat().st_size for p in (hub.hub.root / "yichui" / "tiny-qwen2-chat").iterdir() if p.is_file()}
        sent = {Path(k).name: v for k, v in hub.hub.bytes_sent.items()}
        assert sent["model.safetensors"] <= size["model.safetensors"] + download_kills * (1 << 20), (sent, size)
        model_dir = Path(s.steps["download"]["outputs"]["model_dir"])
        for f in s.steps["download"]["outputs"]["files"]:  # byte for byte the hub's files
            mine, theirs = model_dir / f["path"], hub.hub.root / "yichui" / "tiny-qwen2-chat" / f["path"]
            assert hashlib.sha256(mine.read_bytes()).digest() == hashlib.sha256(theirs.read_bytes()).digest(), f
        assert not list(model_dir.rglob("*.yichui-part*"))
        # training: each restart resumed from a checkpoint at most one interval behind the last step it had logged
        events, _ = jobs.read_events(home / "runs" / sid / "train" / "events.jsonl")
        starts = [e for e in events if e["event"] == "start"]
        for e in starts[1:]:
            before = max((x["step"] for x in events if x["event"] == "step" and x["time"] < e["time"]), default=0)
            resumed = int((e.get("resumed_from") or "checkpoint-0").split("-")[1])
            assert before - resumed <= SAVE_STEPS, (before, resumed, log)
        assert s.steps["train"]["outputs"]["steps"] == 60

        # the same fine-tune, uninterrupted: training on a CPU with fixed seeds is deterministic, and a resume
        # restores model, optimizer, scheduler, RNG and data position, so the final artifacts are the same bytes
        phases["final resume"] = time.monotonic()
        stop_all(home)
        r = subprocess.run([YICHUI, "demo", *sets], env=env_for(home), stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-2000:])
        phases["uninterrupted run"] = time.monotonic()
        (ref,) = [Session.load(p) for p in (home / "sessions").glob("*.json") if p.stem != sid]
        for step, key, name in (("train", "adapter_dir", "adapter_model.safetensors"),
                                ("export", "merged_dir", "model.safetensors")):
            mine, theirs = (Path(x.steps[step]["outputs"][key]) / name for x in (s, ref))
            assert _sha(mine) == _sha(theirs), (step, name, log)
        for fmt, art in ref.steps["export"]["outputs"]["artifacts"].items():
            got = Path(s.steps["export"]["outputs"]["artifacts"][fmt]["dir"])
            for f in Path(art["dir"]).glob("*.safetensors"):
                assert _sha(got / f.name) == _sha(f), (fmt, f.name)
        assert json.loads((Path(s.steps["train"]["outputs"]["train_dir"]) / "result.json").read_text())["losses"] == \
            json.loads((Path(ref.steps["train"]["outputs"]["train_dir"]) / "result.json").read_text())["losses"]
        heldout = [x.steps["evaluate"]["outputs"]["parts"]["heldout:finetuned"]["loss"] for x in (s, ref)]
        assert heldout[0] == heldout[1], heldout
    finally:
        print("chaos kills (index, target step, step hit, delay s):", log)
        marks = list(phases.items())
        print("chaos phases (s):", {k: round(t - marks[i][1]) for i, (k, t) in enumerate(marks[1:])})
        stop_all(home)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _last_step(run_dir: Path) -> int:
    events, _ = jobs.read_events(run_dir / "train" / "events.jsonl")
    return max((e["step"] for e in events if e["event"] == "step"), default=0)
