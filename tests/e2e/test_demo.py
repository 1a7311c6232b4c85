"""`yichui demo` end to end (the README's first command), then `replay --yes` of the finished session, then a
replay with a missing answer (one test: a demo run costs minutes). Real processes throughout: the wizard, the detached trainer, `transformers serve`."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
from conftest import YICHUI, benchmark_repos, env_for, sessions, stop_all, yichui

import recipes
from recipes import jobs
from recipes.serving import client

SECRET = "hf_DoNotLeakThisTokenValue123"


BENCH = ["--set", "evaluate.benchmarks=gsm8k,mmlu", "--set", "evaluate.mmlu_subjects=high_school_computer_science",
         "--set", "evaluate.benchmark_limit=4", "--set", "evaluate.generate_with=engine"]


@pytest.fixture
def finished_demo(home, tmp_path):
    benchmark_repos(home / "cache" / "hub")  # the benchmark samples, served by the demo hub
    # as a user runs it: HOME theirs, no cache variables set — the demo writes nothing outside YICHUI_HOME (issue 46
    # item 4: it left huggingface_hub's and matplotlib's caches in the user's home)
    user = tmp_path / "user-home"
    user.mkdir()
    # and on a box without internet, HF_HUB_OFFLINE=1 set: the demo talks to its own hub on 127.0.0.1, which offline
    # mode refused too (found 2026-12-07: "Cannot reach http://127.0.0.1:…: offline mode is enabled")
    env = env_for(home, HF_TOKEN=SECRET, HOME=str(user), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    for var in ("HF_HOME", "HF_HUB_CACHE", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "MPLCONFIGDIR", "TRANSFORMERS_CACHE"):
        env.pop(var, None)
    r = subprocess.run([YICHUI, "demo", *BENCH], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert not list(user.iterdir()), sorted(str(p) for p in user.rglob("*"))
    (s,) = sessions(home)
    yield home, s, r
    stop_all(home)


def test_demo_then_replay(finished_demo):
    home, s, r = finished_demo
    assert [n for n, rec in s["steps"].items() if rec["status"] == "done"] == list(recipes.TASKS["finetune"])
    assert s["steps"]["chat"]["status"] == "skipped"
    train = s["steps"]["train"]["outputs"]
    assert train["steps"] >= 30 and train["last5_mean"] < 0.8 * train["first5_mean"], train
    deploy = s["steps"]["deploy"]["outputs"]
    assert deploy["reply"] and deploy["endpoint"].startswith("http://127.0.0.1:")
    # the demo trains until the model ends its turns: the export's check has teeth on the demo as on a real model
    export = s["steps"]["export"]["outputs"]
    assert export["merged_smoke"]["stopped"] and export["artifacts"]["bnb-8bit"]["quality"]["smoke"]["stopped"]
    assert deploy["finish_reason"] == deploy["stream_finish_reason"] == "stop", deploy
    assert "Before fine-tuning" in r.stdout and "After fine-tuning" in r.stdout
    # the reply under its label, each of its lines indented like the first (issue 46 item 14)
    assert "\n  ".join(deploy["reply"].splitlines()) in r.stdout, (deploy["reply"], r.stdout[-2000:])
    assert s["steps"]["download"]["outputs"]["commit"]
    # the evaluate step: held-out metrics of base and fine-tuned, both models' replies (held-out and GSM8K) from the
    # deploy step's engine — the fine-tuned one's server and a second one for the base, stopped after — MMLU in-process
    ev = s["steps"]["evaluate"]["outputs"]
    assert ev["columns"] == ["base", "finetuned"] and ev["heldout_samples"] == 15
    held_base, held_ft = ev["parts"]["heldout:base"], ev["parts"]["heldout:finetuned"]
    assert held_ft["loss"] < held_base["loss"] and held_ft["perplexity"] < held_base["perplexity"]  # it helped
    assert ev["verdict"]["beats"] is True and ev["verdict"]["checks"] == {"loss": True, "rouge_l": True}, ev["verdict"]
    assert "beats the base" in r.stdout and "beats the base" in yichui(home, "show", s["id"]).stdout
    assert held_ft["where"] == deploy["endpoint"] and ev["parts"]["bench:gsm8k:finetuned"]["where"] == deploy["endpoint"]
    base_url = held_base["where"]
    assert base_url.startswith("http://127.0.0.1:") and base_url != deploy["endpoint"], held_base
    assert ev["parts"]["bench:gsm8k:base"]["where"] == base_url
    assert len(held_base["answers"]) == 15 and held_base["answers"] != held_ft["answers"]
    base_job = jobs.read(home / "runs" / s["id"] / "evaluate" / "base-server.pid.json")
    assert base_job is not None and not base_job.alive()  # the base's server went with the step
    for part in ("bench:gsm8k:base", "bench:gsm8k:finetuned", "bench:mmlu:base", "bench:mmlu:finetuned"):
        assert ev["parts"][part]["samples"] == 4 and 0 <= ev["parts"][part]["score"] <= 1, part
    assert "held-out loss" in r.stdout and "Example 1" in r.stdout
    # the recap (issue 20, item 8): what was made, what runs, how to chat and to stop it
    recap = r.stdout[r.stdout.index(f"Recap of session {s['id']}"):]
    assert f"merged model: {s['steps']['export']['outputs']['merged_dir']}" in recap
    assert f"adapter: {train['adapter_dir']}" in recap and "evaluation report: " in recap
    assert "yichui servers running (1):" in recap and f"{s['id']}: {deploy['endpoint']}" in recap
    assert "(this session)" in recap and "GiB RAM" in recap
    assert f"yichui chat {s['id']}" in recap and f"yichui serve stop {s['id']}" in recap
    assert deploy["served_model"] == "tiny-qwen2-chat-lora"  # a short name, in the curl line too
    assert '"model": "tiny-qwen2-chat-lora"' in r.stdout
    report = (home / "runs" / s["id"] / "evaluate" / "report.md").read_text()
    assert "| held-out loss |" in report and "gsm8k" in report and ev["chart"].endswith("report.png")
    assert "The fine-tuned model beats the base" in report and f"finetuned = {deploy['endpoint']}" in report
    # the hub token reached no file the run wrote (session, logs, events, specs, checkpoints, exports, reports, the
    # metadata and model folders) and no output, `show` and `status` included
    written = [p for d in ("sessions", "runs", "meta", "models") for p in (home / d).rglob("*") if p.is_file()]
    assert len(written) > 50
    for f in written:
        assert SECRET.encode() not in f.read_bytes(), f
    shown = yichui(home, "show", s["id"]).stdout + yichui(home, "show", "--all").stdout
    assert SECRET not in r.stdout + r.stderr + shown + yichui(home, "status", s["id"]).stdout

    st = yichui(home, "status", s["id"])
    assert st.returncode == 0 and "server" in st.stdout and "running" in st.stdout
    # a newer session that failed must not hide the demo's server from `status` and `stop` without a SESSION
    bad = yichui(home, "run", "--yes", "--set", "select_model.source=local", "--set", "select_model.path=/nonexistent")
    assert bad.returncode == 2
    assert s["id"] in yichui(home, "status").stdout
    stop = yichui(home, "stop")
    assert stop.returncode == 0 and "Stopped server" in stop.stdout and s["id"] in stop.stdout
    assert "not running" in yichui(home, "status", s["id"]).stdout
    # restart after a stop: the deploy step again, nothing before it; kill -9 the wizard once the server answers
    wizard = subprocess.Popen([YICHUI, "serve", "start", s["id"]], env=env_for(home), stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = ""
    for line in wizard.stdout:
        seen += line
        if "Serving" in line:
            break
    assert "Training finished" not in seen
    os.kill(wizard.pid, signal.SIGKILL)
    wizard.wait(timeout=30)
    st = yichui(home, "serve", "status", s["id"])  # the server outlived the wizard, and is found from its pid file
    assert st.returncode == 0 and "running" in st.stdout, seen + st.stdout
    job = jobs.read(home / "runs" / s["id"] / "serve" / "server.pid.json")
    endpoint = json.loads((home / "sessions" / f"{s['id']}.json").read_text())["steps"]["deploy"]["outputs"]["endpoint"]
    assert client.first_model(endpoint)
    os.killpg(job.pid, signal.SIGKILL)  # the server crashes
    time.sleep(1)
    assert yichui(home, "serve", "status", s["id"]).returncode == 1
    served_at = endpoint.removeprefix("http://")  # show --all leaves the scheme out
    assert served_at not in yichui(home, "show", "--all").stdout  # the server column: only servers that run
    start = yichui(home, "serve", "start", s["id"], timeout=600)  # restart after a crash
    assert start.returncode == 0, start.stdout[-2000:] + start.stderr[-2000:]
    assert "Serving" in start.stdout and "Training finished" not in start.stdout
    assert yichui(home, "serve", "status", s["id"]).returncode == 0
    # the restart may take another port (another test's server can take the freed one): read the endpoint again
    endpoint = json.loads((home / "sessions" / f"{s['id']}.json").read_text())["steps"]["deploy"]["outputs"]["endpoint"]
    assert endpoint.removeprefix("http://") in yichui(home, "show", "--all").stdout
    shown = yichui(home, "show", s["id"])
    assert shown.returncode == 0 and shown.stdout.count("done") >= 7

    # a second task from the finished session: a quantized export, without training again
    q = yichui(home, "run", "--task", "quantize", "--from", s["id"], "--yes", "--set", "export.formats=bnb-8bit")
    assert q.returncode == 0, q.stdout[-2000:] + q.stderr[-2000:]
    qs = next(x for x in sessions(home) if x["task"] == "quantize")
    assert qs["steps"]["train"]["status"] == "done" and qs["steps"]["train"]["copied_from"].endswith(s["id"] + ".json")
    assert "Training finished" not in q.stdout and "Merging the lora result" in q.stdout
    assert set(qs["steps"]["export"]["outputs"]["artifacts"]) == {"bnb-8bit"}
    # the demo's server still runs: the quantize session's recap lists it, with the command to stop every server
    assert f"{s['id']}: {endpoint}" in q.stdout and "yichui serve stop --all" in q.stdout

    # the replay's deploy finds the demo's server on the saved port: the port gives way to a free one; without a
    # prompt the earlier server, another session's, keeps running (issue 46 item 3: only a prompt's tick or
    # --set deploy.stop_servers stops it)
    rp = yichui(home, "replay", s["id"], "--yes", "--set", "evaluate.benchmarks=", timeout=600)  # measured above
    assert rp.returncode == 0, rp.stdout[-3000:] + rp.stderr[-3000:]
    assert "The saved deploy.port=" in rp.stderr and "is in use" in rp.stderr  # the default (a free port) instead
    assert f"Stopped the server of session {s['id']}" not in rp.stdout
    assert jobs.read(home / "runs" / s["id"] / "serve" / "server.pid.json").alive()
    new = next(x for x in sessions(home) if x.get("replay_of"))
    assert "yichui servers running (2):" in rp.stdout and f"{new['id']}: " in rp.stdout
    assert new["steps"]["deploy"]["answers"]["stop_servers"] == []
    new["steps"]["deploy"]["answers"].pop("stop_servers")
    listed = yichui(home, "serve", "status", "--all", COLUMNS="200")  # both, each with its session and endpoint
    assert listed.returncode == 0 and s["id"] in listed.stdout and new["id"] in listed.stdout, listed.stdout
    none = yichui(home, "serve", "status", qs["id"])  # a session without a server still says the others run
    assert none.returncode != 0 and "2 more running" in none.stdout + none.stderr, none.stdout + none.stderr
    stop_all_servers = yichui(home, "serve", "stop", "--all")
    assert stop_all_servers.returncode == 0 and f"of session {new['id']}" in stop_all_servers.stdout
    assert f"of session {s['id']}" in stop_all_servers.stdout
    assert "No yichui server is running" in yichui(home, "serve", "stop", "--all").stdout
    assert new["steps"]["evaluate"]["status"] == "done" and new["steps"]["chat"]["status"] == "skipped"
    assert new["replay_of"].endswith(s["id"] + ".json")
    for name, rec in s["steps"].items():
        old_answers = dict(rec["answers"])
        new_answers = dict(new["steps"][name]["answers"])
        if name == "select_model":  # the demo hub moved to a new port; the rest is the same decision
            assert old_answers.pop("endpoint") != new_answers.pop("endpoint")
        if name == "deploy":  # its port was taken: the next free one
            assert old_answers.pop("port") != new_answers.pop("port")
        if name == "evaluate":  # the replay skipped the benchmarks (--set), the held-out part is the same decision
            assert new_answers.pop("benchmarks") == [] and old_answers.pop("benchmarks") == ["gsm8k", "mmlu"]
            for k in ("mmlu_subjects", "benchmark_limit", "benchmark_source", "benchmark_endpoint"):
                old_answers.pop(k, None)
        assert new_answers == old_answers, name
    same = lambda step, key: new["steps"][step]["outputs"][key] == s["steps"][step]["outputs"][key]  # noqa: E731
    assert same("evaluate_memory", "recommended") and same("download", "commit") and same("choose_strategy", "training")
    assert new["steps"]["train"]["outputs"]["steps"] == train["steps"]

    # a hand-edited copy that now needs an answer it does not hold: replay names the --set to give
    s["steps"]["select_model"]["answers"]["model"] = "other"  # model_id (no default) is now needed and absent
    edited = home / "edited.json"
    edited.write_text(json.dumps(s))
    r = yichui(home, "replay", str(edited), "--yes")
    assert r.returncode == 2
    assert "select_model.model_id" in r.stderr and "--set select_model.model_id=VALUE" in r.stderr
