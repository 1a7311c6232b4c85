"""`yichui demo --task finetune-dpo` end to end (issue 47): the tiny text model preference-tuned with DPO (LoRA, the
SFT loss on the chosen reply beside it) on the bundled pairs, killed with SIGKILL mid-training and resumed, merged,
served by a real `transformers serve`, and evaluated on the held-out pairs — each model's own preference (log p of
the chosen reply against the rejected one), base beside fine-tuned.

The bundled pairs prefer each reply with its sign-off over the same reply without it (recipes/data/preference.py
signed_off_pairs): summed log-probabilities favour the shorter reply, so the base prefers the rejected one on every
held-out pair, and only training can turn that round on prompts it never saw.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import demo_killed_after_first_checkpoint, sessions, stop_all, yichui

import recipes
from recipes.data import preference


@pytest.fixture
def dpo_home(home):
    yield home
    stop_all(home)


def test_dpo_demo_survives_a_kill_serves_and_prefers_the_chosen_reply_above_the_base(dpo_home):
    home = dpo_home
    s = demo_killed_after_first_checkpoint(home, "finetune-dpo")
    assert s["demo"] == "dpo" and s["task"] == "finetune"
    r = yichui(home, "resume", s["id"], "--yes", timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    (s,) = sessions(home)
    assert [n for n, rec in s["steps"].items() if rec["status"] == "done"] == list(recipes.TASKS["finetune"])

    cs = s["steps"]["choose_strategy"]
    assert cs["answers"]["objective"] == "dpo" and cs["outputs"]["data"]["format"] == preference.PAIRED
    pair = preference.read(preference.bundled_preferences_path()).records[0]
    chosen, rejected = cs["outputs"]["samples"]  # the first pair, both replies through the chat template
    assert chosen.count(pair["chosen"][0]["content"]) == 1 and rejected.count(pair["rejected"][0]["content"]) == 1
    assert "Done." in chosen and "Done." not in rejected
    train = s["steps"]["train"]["outputs"]
    result = json.loads((Path(train["train_dir"]) / "result.json").read_text())
    assert train["steps"] == 150 and result["resumed_from"].startswith("checkpoint-"), result  # not from scratch
    events = [json.loads(x) for x in (Path(train["train_dir"]) / "events.jsonl").read_text().splitlines()]
    evals = [e for e in events if e["event"] == "eval"]
    assert evals and evals[-1]["reward_accuracies"] >= 0.9, evals[-1:]  # trl's implicit reward, relative to the base

    # served: the merged model answers in the data's style and stops by itself
    deploy = s["steps"]["deploy"]["outputs"]
    assert deploy["backend"] == "transformers" and deploy["finish_reason"] == "stop", deploy
    assert deploy["reply"].startswith("Short answer:") and deploy["reply"].endswith("Done."), deploy

    # held-out pairs: the base prefers the rejected reply, the fine-tuned model the chosen one
    ev = s["steps"]["evaluate"]["outputs"]
    assert ev["columns"] == ["base", "finetuned"]
    base, ft = ev["parts"]["preference:base"], ev["parts"]["preference:finetuned"]
    assert base["pairs"] == ft["pairs"] == 15
    assert base["accuracy"] <= 0.2 and ft["accuracy"] >= 0.8 and ft["accuracy"] > base["accuracy"], (base, ft)
    assert base["margin"] < 0 < ft["margin"], (base, ft)
    assert ev["verdict"]["beats"] is True and set(ev["verdict"]["checks"]) == {"preference accuracy",
                                                                              "preference margin"}
    rows = {row[0]: row[1:] for row in ev["table"]}
    assert rows["held-out preference accuracy"] == [base["accuracy"], ft["accuracy"]]
    report = Path(ev["report"]).read_text()
    assert "| held-out preference accuracy |" in report and "| held-out preference margin |" in report
    # the replies side by side: the held-out pairs' prompts and chosen replies
    ex = ev["examples"][0]
    assert ex["reference"].endswith("Done.") and ex["finetuned"] and ex["base"]


def test_dpo_demo_refuses_unpaired_and_malformed_preference_data(dpo_home, tmp_path):
    """KTO's unpaired records are not DPO's pairs: refused before anything runs, in one line; a pair whose chosen
    and rejected replies are the same is a bad record named by file and line (the demo aborts on bad records)."""
    kto = tmp_path / "kto.jsonl"
    kto.write_text(json.dumps({"prompt": "Hi?", "completion": "Hello. Done.", "label": True}) + "\n")
    r = yichui(dpo_home, "demo", "--task", "finetune-dpo", "--set", "choose_strategy.dataset=local",
               "--set", f"choose_strategy.dataset_path={kto}", timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 2, out[-3000:]
    assert "holds unpaired labelled replies (KTO's prompt / completion / label), not pairs" in out, out[-2000:]
    rows = preference.read(preference.bundled_preferences_path()).records[:20]
    rows[3] = rows[3] | {"rejected": rows[3]["chosen"]}
    bad = tmp_path / "pairs.jsonl"
    bad.write_text("".join(json.dumps(x) + "\n" for x in rows))
    r = yichui(dpo_home, "demo", "--task", "finetune-dpo", "--set", "choose_strategy.dataset=local",
               "--set", f"choose_strategy.dataset_path={bad}", timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 2, out[-3000:]  # before any step: the data's refusal without a prompt (issue 46, 21-8)
    assert "pairs.jsonl:4 (chosen and rejected are the same)" in out, out[-2000:]
    assert not list((dpo_home / "runs").glob("*/train/checkpoints"))


def test_kto_demo_survives_a_kill_splits_the_pairs_and_prefers_the_chosen_reply_above_the_base(dpo_home):
    """The same demo with KTO (issue 47's acceptance: the DPO/KTO demo end to end, kill -9 and resume): each pair
    split into a desirable and an undesirable reply, trl's KTOTrainer, killed with SIGKILL after its first checkpoint
    and resumed from it, merged, served and evaluated on the held-out pairs — the base prefers the rejected reply,
    the KTO model the chosen one."""
    s = demo_killed_after_first_checkpoint(dpo_home, "finetune-dpo", "--set", "choose_strategy.objective=kto")
    r = yichui(dpo_home, "resume", s["id"], "--yes", timeout=900)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    (s,) = sessions(dpo_home)
    assert [n for n, rec in s["steps"].items() if rec["status"] == "done"] == list(recipes.TASKS["finetune"])
    cs = s["steps"]["choose_strategy"]
    assert cs["answers"]["objective"] == "kto" and cs["outputs"]["training"]["micro_batch"] >= 2
    train = s["steps"]["train"]["outputs"]
    result = json.loads((Path(train["train_dir"]) / "result.json").read_text())
    assert result["resumed_from"].startswith("checkpoint-") and result["steps"] == train["steps"], result
    events = [json.loads(x) for x in (Path(train["train_dir"]) / "events.jsonl").read_text().splitlines()]
    assert any("kl" in e for e in events if e["event"] == "step")  # trl's KTO, not DPO
    ev = s["steps"]["evaluate"]["outputs"]
    base, ft = ev["parts"]["preference:base"], ev["parts"]["preference:finetuned"]
    assert base["accuracy"] <= 0.2 and ft["accuracy"] >= 0.8, (base, ft)
    assert ev["verdict"]["beats"] is True


def test_kto_on_unpaired_labelled_replies_through_every_step_ranks_desirable_over_undesirable(dpo_home, tmp_path):
    """KTO's own data form through the whole wizard (issue 47): labelled replies, no prompt answered twice, twice as
    many desirable as undesirable — trained with KTO's class weights, merged, served, and evaluated on the held-out
    replies by the unpaired score (the AUC of desirable over undesirable, per-token log-probabilities), base beside
    fine-tuned, named as such in the table and the report."""
    pairs = preference.read(preference.bundled_preferences_path()).records
    rows = [{"prompt": p["prompt"], "completion": p["chosen" if i % 3 else "rejected"], "label": bool(i % 3)}
            for i, p in enumerate(pairs)]
    data = tmp_path / "kto.jsonl"
    data.write_text("".join(json.dumps(x) + "\n" for x in rows))
    r = yichui(dpo_home, "demo", "--task", "finetune-dpo", "--set", "choose_strategy.objective=kto",
               "--set", "choose_strategy.dataset=local", "--set", f"choose_strategy.dataset_path={data}", timeout=900)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    (s,) = sessions(dpo_home)
    assert [n for n, rec in s["steps"].items() if rec["status"] == "done"] == list(recipes.TASKS["finetune"])
    cs = s["steps"]["choose_strategy"]["outputs"]
    assert cs["data"]["format"] == preference.UNPAIRED, cs["data"]
    result = json.loads((Path(s["steps"]["train"]["outputs"]["train_dir"]) / "result.json").read_text())
    assert result["steps"] == s["steps"]["train"]["outputs"]["steps"] and not result["resumed_from"], result
    ev = s["steps"]["evaluate"]["outputs"]
    base, ft = ev["parts"]["preference:base"], ev["parts"]["preference:finetuned"]
    assert base["kind"] == ft["kind"] == "unpaired" and base["pairs"] == ft["pairs"] >= 10, (base, ft)
    assert ft["accuracy"] >= 0.8 and ft["accuracy"] > base["accuracy"] and ft["margin"] > base["margin"], (base, ft)
    assert ev["verdict"]["beats"] is True
    table = {row[0]: row[1:] for row in ev["table"]}
    assert table["held-out preference accuracy (unpaired: AUC)"] == [base["accuracy"], ft["accuracy"]]
    assert "| held-out preference accuracy (unpaired: AUC) |" in Path(ev["report"]).read_text()
    deploy = s["steps"]["deploy"]["outputs"]
    assert deploy["finish_reason"] == "stop" and deploy["reply"].endswith("Done."), deploy
