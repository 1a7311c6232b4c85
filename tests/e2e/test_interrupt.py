"""Interruption with real kill -9: the wizard alone (resume re-attaches to the same trainer), then wizard and trainer
(resume continues from the last checkpoint), on a run long enough to interrupt (400 steps, checkpoint every 20)."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time

from conftest import YICHUI, env_for, kill9, sessions, stop_all, wait_for, yichui

import recipes
from recipes import jobs
from recipes.training.trackers import tensorboard_scalars

LONG = ["--set", "choose_strategy.max_steps=400", "--set", "choose_strategy.save_steps=20",
        "--set", "choose_strategy.save_total_limit=3"]


def spawn(home, log, *args):
    return subprocess.Popen([YICHUI, *args], env=env_for(home), stdin=subprocess.DEVNULL,
                            stdout=open(log, "w"), stderr=subprocess.STDOUT)


def last_step(run_dir) -> int:
    events, _ = jobs.read_events(run_dir / "train" / "events.jsonl")
    return max((e["step"] for e in events if e["event"] == "step"), default=0)


def test_kill_wizard_then_both_and_resume(home, tmp_path):
    try:
        _scenario(home, tmp_path)
    finally:
        stop_all(home)


def _scenario(home, tmp_path):
    wizard = spawn(home, tmp_path / "demo.log", "demo", *LONG)
    (s,) = wait_for(lambda: sessions(home), 120, what="the session file")
    run_dir = home / "runs" / s["id"]
    wait_for(lambda: last_step(run_dir) >= 25, 240, what="training past the first checkpoint")

    # 1. kill -9 the wizard alone: the trainer (own session, stdin /dev/null) goes on
    kill9(wizard.pid)
    wizard.wait()
    trainer = jobs.read(run_dir / "train" / "trainer.pid.json")
    assert trainer.alive()
    step_at_kill = last_step(run_dir)
    assert json.loads((home / "sessions" / f"{s['id']}.json").read_text())["steps"]["train"]["status"] == "running"

    resumed = spawn(home, tmp_path / "resume1.log", "resume", s["id"], "--yes")
    wait_for(lambda: f"Re-attaching to the running trainer (pid {trainer.pid})" in (tmp_path / "resume1.log").read_text(),
             60, what="resume to re-attach")
    wait_for(lambda: last_step(run_dir) > step_at_kill + 5, 60, what="training to go on under the re-attached view")
    assert trainer.alive()

    # 2. `yichui stop` sends SIGTERM: the trainer ends its step, writes a checkpoint there and exits; nothing is lost
    stop = yichui(home, "stop", s["id"])
    assert stop.returncode == 0
    assert resumed.wait(timeout=120) == 130  # the re-attached wizard saw the stop: resumable, not failed
    events, _ = jobs.read_events(run_dir / "train" / "events.jsonl")
    (stopped,) = [e for e in events if e["event"] == "stopped"]
    assert stopped["signal"] == "SIGTERM" and stopped["step"] == last_step(run_dir)
    # the stop names the checkpoint it left (issue 46 trial J, J10)
    assert f"Its last checkpoint is checkpoint-{stopped['step']}" in stop.stdout, stop.stdout
    assert (run_dir / "train" / "checkpoints" / f"checkpoint-{stopped['step']}").is_dir()
    resumed = spawn(home, tmp_path / "resume2.log", "resume", s["id"], "--yes")
    wait_for(lambda: f"Resuming training from checkpoint-{stopped['step']}" in (tmp_path / "resume2.log").read_text(),
             120, what="resume from the checkpoint written at the stop")
    wait_for(lambda: last_step(run_dir) > stopped["step"] + 3, 120, what="training to go on after the stop")
    trainer = jobs.read(run_dir / "train" / "trainer.pid.json")

    # 3. kill -9 the wizard and the trainer: resume restarts from the last checkpoint
    kill9(resumed.pid)
    resumed.wait()
    wait_for(lambda: 3 <= last_step(run_dir) % 20 <= 15, 60, what="a step between two checkpoints")
    os.killpg(trainer.pid, signal.SIGKILL)
    wait_for(lambda: not trainer.alive(), 10, what="the trainer to die")
    steps_done = last_step(run_dir)
    assert steps_done < 400, "training finished before it could be interrupted"
    ckpts = sorted(int(p.name.split("-")[1]) for p in (run_dir / "train" / "checkpoints").glob("checkpoint-*"))
    assert ckpts and ckpts[-1] > 0

    # status (no SESSION) and attach say the trainer died and which command continues it (issue 46 trial I: the
    # session dropped out of status, attach pointed at status)
    for argv in (("status",), ("attach", s["id"]), ("attach",)):  # attach alone too (trial J)
        said = yichui(home, *argv)
        text = " ".join((said.stdout + said.stderr).split())
        assert f"The trainer of session {s['id']} ended before finishing" in text and \
            f"resume {s['id']}` continues from it" in text and "(step " in text, (argv, text)
    loop_before = json.loads((run_dir / "train" / "checkpoints" / f"checkpoint-{ckpts[-1]}" / "yichui_loop.json")
                             .read_text())["seconds"]  # read now: the resumed run rotates old checkpoints away
    r = yichui(home, "resume", s["id"], "--yes", timeout=600)
    assert r.returncode == 0, r.stdout[-3000:]
    assert f"Resuming training from checkpoint-{ckpts[-1]}" in r.stdout
    result = json.loads((run_dir / "train" / "result.json").read_text())
    assert result["resumed_from"] == f"checkpoint-{ckpts[-1]}" and result["steps"] == 400
    # "training loop N s" counts every segment up to the checkpoint resumed from, not only the last one (item 13)
    assert loop_before > 0 and result["runtime_s"] > loop_before
    assert f"training loop {result['runtime_s']} s" in r.stdout
    new_trainer = jobs.read(run_dir / "train" / "trainer.pid.json")
    assert new_trainer.pid != trainer.pid
    events, _ = jobs.read_events(run_dir / "train" / "events.jsonl")
    restart = [e for e in events if e["event"] == "start" and e["pid"] == new_trainer.pid]
    assert restart and restart[0]["resumed_from"] == f"checkpoint-{ckpts[-1]}"
    first_new_step = min(e["step"] for e in events if e["event"] == "step" and e["pid"] == new_trainer.pid)
    assert first_new_step == ckpts[-1] + 1  # no step lost beyond the checkpoint interval, none repeated before it
    # exact resume: the steps between the checkpoint and the kill, trained again, see the same samples from the same
    # weights, optimizer and RNG, so they log the same losses (a shifted data position would change them)
    before = {e["step"]: e["loss"] for e in events if e["event"] == "step" and e["pid"] == trainer.pid}
    after = {e["step"]: e["loss"] for e in events if e["event"] == "step" and e["pid"] == new_trainer.pid}
    redone = sorted(set(before) & set(after))
    assert redone and redone[0] == ckpts[-1] + 1, (ckpts, steps_done)
    assert [after[k] for k in redone] == [before[k] for k in redone]
    final = json.loads((home / "sessions" / f"{s['id']}.json").read_text())
    assert [n for n, rec in final["steps"].items() if rec["status"] == "done"] == list(recipes.TASKS["finetune"])
    assert final["steps"]["deploy"]["outputs"]["reply"]


def test_attach_from_another_shell_follows_to_the_end(home, tmp_path):
    """`yichui attach` (no session given) finds the running trainer, shows its view and returns when it finishes;
    the loss curve PNG and TensorBoard events are in the run directory afterwards."""
    try:
        wizard = spawn(home, tmp_path / "demo.log", "demo", "--set", "choose_strategy.max_steps=120",
                       "--set", "choose_strategy.save_steps=40")
        (s,) = wait_for(lambda: sessions(home), 120, what="the session file")
        run_dir = home / "runs" / s["id"]
        wait_for(lambda: last_step(run_dir) >= 5, 240, what="training to start")
        started = jobs.read(run_dir / "train" / "trainer.pid.json").started_at
        attached_at = time.time()
        r = yichui(home, "attach", timeout=300)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        assert f"Training of session {s['id']} finished" in r.stdout
        # "elapsed" counts from the trainer's start, not from the attach (issue 20, item 13)
        first_elapsed = int(re.search(r"elapsed=(\d+)s", r.stdout).group(1))
        assert first_elapsed >= int(attached_at - started) - 1, (first_elapsed, attached_at - started)
        assert wizard.wait(timeout=300) == 0
        assert (run_dir / "train" / "loss.png").stat().st_size > 5000
        (events_file,) = list((run_dir / "train" / "tensorboard").rglob("events.out.tfevents.*"))
        # the memory trend beside the loss (issue 23): one value per logging step, the process's peak on a CPU
        rss = [(step, v) for step, v, _ in tensorboard_scalars(events_file)["memory/cpu_peak_rss_gib"]]
        assert len(rss) >= 100 and all(v > 0.05 for _, v in rss) and rss[-1][0] == 120, rss[-3:]
        # the viewer as this environment runs it (its `tensorboard` script is not on PATH when yichui is not)
        shown = " ".join(yichui(home, "status", s["id"]).stdout.split())
        assert f"-m tensorboard.main --logdir {run_dir / 'train' / 'tensorboard'}" in shown, shown
        assert yichui(home, "attach").returncode == 1  # nothing is training now
    finally:
        stop_all(home)
