"""A repository that ships its own Python code runs only after an explicit yes recorded in the session; then every
step that loads the model (memory model, preflight smoke run, training, merge, quantization, evaluation, server)
passes trust_remote_code and the whole fine-tune goes through."""
from __future__ import annotations

import json
from pathlib import Path

from conftest import CUSTOM_REPO, custom_code_repo, sessions, stop_all, yichui

from recipes.hub import downloader
from wizard import i18n


def test_custom_code_runs_only_after_a_recorded_yes(home, tiny_model, tmp_path):
    repo = custom_code_repo(home / "cache" / "hub", tiny_model)
    marker = tmp_path / "code-ran"
    env = {"YICHUI_TEST_CODE_MARKER": str(marker)}
    pick = ["--set", "select_model.model=other", "--set", f"select_model.model_id={CUSTOM_REPO}"]
    try:
        r = yichui(home, "demo", *pick, "--set", "choose_strategy.sample_question=Custom code?", **env)
        assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
        errors = [x for x in r.stderr.splitlines() if x.startswith(i18n.t("ui.error_prefix").strip())]
        assert len(errors) == 1 and "ships its own Python code" in errors[0] and "trust_remote_code=yes" in errors[0]
        assert not marker.exists()  # nothing of the repository ran
        (s,) = sessions(home)
        assert s["steps"]["select_model"]["answers"]["trust_remote_code"] is False
        assert s["steps"]["select_model"]["status"] == "failed" and not (home / "models").exists()

        r = yichui(home, "resume", s["id"], "--yes", "--set", "select_model.trust_remote_code=yes", **env)
        # everything up to the export runs the repository's code; transformers serve cannot (it resolves the
        # architecture among its own classes), and the deploy step says so in one line before starting anything
        assert r.returncode == 2, r.stdout[-3000:] + r.stderr[-3000:]
        assert "loads only architectures built into transformers" in r.stderr.strip().splitlines()[-1]
        # … and said before training, not only after it (issue 46 item 21): at the strategy step
        said = " ".join(r.stderr.split())
        assert "This model runs its own code: the deploy step can serve it with vLLM or SGLang only" in said, said
        assert "serve the exported model on one" in said
        (s,) = sessions(home)
        assert [n for n, x in s["steps"].items() if x["status"] == "done"] == [
            "select_model", "evaluate_memory", "choose_strategy", "download", "train", "export"]
        # the --set of a later step, given to the run that stopped at step 1, was kept for the resume
        assert s["steps"]["choose_strategy"]["answers"]["sample_question"] == "Custom code?"
        sel = s["steps"]["select_model"]
        assert sel["answers"]["trust_remote_code"] is True and sel["outputs"]["trust_remote_code"] is True
        code = sel["outputs"]["custom_code"]
        assert code["commit"] == s["steps"]["download"]["outputs"]["commit"]
        assert {f["path"]: f["sha256"] for f in code["files"]} == {
            p.name: downloader.hash_file(p, "sha256") for p in repo.glob("*.py")}
        assert "Running the model's own code" in r.stdout + r.stderr and s["steps"]["choose_strategy"]["outputs"]["preflight"]["ok"]
        merged = Path(s["steps"]["export"]["outputs"]["merged_dir"])
        assert (merged / "modeling_yichui.py").is_file() and json.loads((merged / "config.json").read_text())["auto_map"]
        assert s["steps"]["export"]["outputs"]["artifacts"]["bnb-8bit"]["quality"]["ppl_ratio"] > 0

        # the evaluation of that session loads base and fine-tuned model with the recorded yes
        r = yichui(home, "run", "--task", "evaluate", "--from", s["id"], "--yes", **env)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        ev = [x for x in sessions(home) if x["task"] == "evaluate"][0]["steps"]["evaluate"]["outputs"]["parts"]
        assert ev["heldout:finetuned"]["loss"] < ev["heldout:base"]["loss"]
        ran = set(marker.read_text().split())  # the wizards, the smoke run's trainer and the real one
        run_dir = home / "runs" / s["id"]
        for job, pid_file in (("preflight", "preflight.pid.json"), ("train", "trainer.pid.json")):
            assert str(json.loads((run_dir / job / pid_file).read_text())["pid"]) in ran, job
        assert len(ran) >= 4
    finally:
        stop_all(home)
