"""`yichui demo --task finetune-grpo` end to end (issue 47, GRPO): the tiny text model trained with trl's
GRPOTrainer (LoRA) on the bundled arithmetic prompts, its replies scored by the accuracy reward and by the bundled
reward file (recipes/data/demo_reward.py, run in its own process: the share of digits), killed with SIGKILL after its
first checkpoint and resumed, merged, served by a real `transformers serve`, and evaluated on the held-out prompts by
the same rewards, base beside fine-tuned.

The tiny base babbles prose: almost no digits, almost never the answer. GRPO raises what it can earn — the digits
share — and the evaluation says that accuracy did not come with it (a reward hacked, named as such)."""
from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import demo_killed_after_first_checkpoint, sessions, stop_all, yichui

import recipes


def test_grpo_demo_survives_a_kill_raises_its_reward_and_says_what_it_traded(home):
    try:
        s = demo_killed_after_first_checkpoint(home, "finetune-grpo")
        assert s["demo"] == "grpo" and s["task"] == "finetune"
        r = yichui(home, "resume", s["id"], "--yes", timeout=900)
        out = r.stdout + r.stderr
        assert r.returncode == 0, out[-4000:]
        (s,) = sessions(home)
        assert [n for n, rec in s["steps"].items() if rec["status"] == "done"] == list(recipes.TASKS["finetune"])

        cs = s["steps"]["choose_strategy"]
        assert cs["answers"]["objective"] == "grpo" and cs["outputs"]["data"]["format"] == "prompts"
        train = s["steps"]["train"]["outputs"]
        result = json.loads((Path(train["train_dir"]) / "result.json").read_text())
        assert train["steps"] == 40 and result["resumed_from"].startswith("checkpoint-"), result  # not from scratch
        rewards = result["rewards"]
        assert re.search(r"Reward [\d.]+ \(first 5 logged\) → [\d.]+ \(last 5\)", out), out[-3000:]
        assert sum(rewards[-5:]) / 5 > sum(rewards[:5]) / 5 + 0.3, rewards  # the digits share rose in training
        events = [json.loads(x) for x in (Path(train["train_dir"]) / "events.jsonl").read_text().splitlines()]
        step = [e for e in events if e["event"] == "step"][-1]
        assert {"reward_accuracy", "reward_digits", "completion_length"} <= set(step), step

        deploy = s["steps"]["deploy"]["outputs"]
        assert deploy["backend"] == "transformers" and deploy["reply"], deploy  # served and answering

        ev = s["steps"]["evaluate"]["outputs"]
        base, ft = ev["parts"]["reward:base"], ev["parts"]["reward:finetuned"]
        assert ft["reward digits"] > base["reward digits"] + 0.3, (base, ft)
        assert ev["verdict"]["checks"] == {"reward": True} and ev["verdict"]["beats"] is True
        rows = {row[0]: row[1:] for row in ev["table"]}
        assert rows["held-out reward"] == [base["reward"], ft["reward"]]
        assert "held-out reward accuracy" in rows
        if ft["reward accuracy"] < base["reward accuracy"]:  # traded away: said in the headline, not after it
            assert "but these rewards fell while their sum rose (reward accuracy" in " ".join(out.split()), out[-3000:]
            assert "beats the base on the held-out set" not in out
            # and said again where it is looked up later: `yichui show` and report.md (the tryout: both left it out)
            shown = yichui(home, "show", s["id"], COLUMNS="200")
            assert "but these rewards fell while their sum rose" in " ".join((shown.stdout + shown.stderr).split())
            assert "**Warning:**" in Path(ev["report"]).read_text() and "fell" in Path(ev["report"]).read_text()
        assert "| held-out reward digits |" in Path(ev["report"]).read_text()
        assert "on 16 prompts (their reference answers as the replies)" in " ".join(out.split()), out[-3000:]
    finally:
        stop_all(home)
