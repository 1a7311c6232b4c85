"""The session file: atomic save, the lock (from another real process), corrupted and newer files, lookup."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import recipes

from wizard.session import SCHEMA_VERSION, Session, SessionError, find


def make(home) -> Session:
    s = Session.new("finetune", h=home)
    s.save()
    return s


def test_new_session_layout(tmp_path):
    s = make(tmp_path)
    data = json.loads(s.path.read_text())
    assert s.path == tmp_path / "sessions" / f"{s.id}.json"
    assert data["schema_version"] == SCHEMA_VERSION and data["task"] == "finetune"
    assert list(data["steps"]) == list(recipes.STEPS)
    assert [n for n, r in data["steps"].items() if r["status"] == "pending"] == list(recipes.TASKS["finetune"])
    assert data["steps"]["chat"]["status"] == "skipped"
    assert (tmp_path / "runs" / s.id).is_dir() and data["run_dir"] == str(tmp_path / "runs" / s.id)


def test_save_is_atomic_when_the_write_fails(tmp_path, monkeypatch):
    s = make(tmp_path)
    before = s.path.read_bytes()
    s.steps["select_model"]["answers"]["model"] = "x"

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        s.save()
    assert s.path.read_bytes() == before  # the old file is whole
    assert [p.name for p in s.path.parent.iterdir() if p.name.endswith(".tmp")] == []  # no temp left behind


def test_lock_refuses_a_second_process(tmp_path):
    s = make(tmp_path)
    s.lock()
    code = ("import sys; from wizard.session import Session, SessionError\n"
            f"s = Session.load({str(s.path)!r})\n"
            "try:\n    s.lock()\nexcept SessionError as e:\n    print(e.key, e.params['pid']); sys.exit(3)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 3 and r.stdout.split() == ["session.locked", str(os.getpid())]
    s.unlock()
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_holder_names_the_other_yichui_that_runs_a_session(tmp_path):
    """attach's closing hint (46 trial M): while the wizard or a demo holds the session, `resume` would be refused,
    so attach says that yichui goes on by itself; holder() finds it without disturbing it."""
    s = make(tmp_path)
    assert Session.load(s.path).holder() is None  # no lock file yet
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from wizard.session import Session\n"
                               f"s = Session.load({str(s.path)!r}); s.lock(); print('locked', flush=True); "
                               "time.sleep(30)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert Session.load(s.path).holder() == str(holder.pid)
        assert Session.load(s.path).holder() == str(holder.pid)  # the probe left the holder's lock as it was
    finally:
        holder.kill()
        holder.wait()
    assert Session.load(s.path).holder() is None  # its lock went with it (kill -9)
    mine = Session.load(s.path)
    mine.lock()
    assert mine.holder() is None  # our own lock is no other yichui
    mine.unlock()


def test_binary_file_and_folder_are_refused(tmp_path):
    s = make(tmp_path)
    s.path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(SessionError) as e:
        Session.load(s.path)
    assert e.value.key == "session.not_text"
    with pytest.raises(SessionError) as e:
        Session.load(tmp_path)
    assert e.value.key == "session.is_folder"


def test_truncated_file_is_refused_and_left_untouched(tmp_path):
    s = make(tmp_path)
    text = s.path.read_text()
    s.path.write_text(text[: len(text) // 2])
    broken = s.path.read_bytes()
    with pytest.raises(SessionError) as e:
        Session.load(s.path)
    assert e.value.key == "session.not_json" and e.value.params["line"] >= 1
    assert s.path.read_bytes() == broken


@pytest.mark.parametrize("edit,what", [
    (lambda d: d.pop("steps"), "'steps'"),
    (lambda d: d["steps"]["download"].update(status="finished"), "steps.download.status"),
    (lambda d: d["steps"]["download"].update(answers=[]), "steps.download.answers"),
    (lambda d: d.update(schema_version="1"), "schema_version"),
    (lambda d: d["steps"].pop("train"), "the steps must be"),
    (lambda d: d["steps"].update(bogus=d["steps"]["train"]), "the steps must be"),
    (lambda d: d.update(task="bake"), "unknown task 'bake'"),
])
def test_hand_broken_file_names_what_is_wrong(tmp_path, edit, what):
    s = make(tmp_path)
    data = json.loads(s.path.read_text())
    edit(data)
    s.path.write_text(json.dumps(data))
    with pytest.raises(SessionError) as e:
        Session.load(s.path)
    assert e.value.key == "session.invalid" and what in e.value.params["what"]


def _strategy_done(answers: dict, strategy: dict):
    def edit(d):
        d["steps"]["choose_strategy"].update(status="done", answers=answers, outputs={"training": strategy})
    return edit


@pytest.mark.parametrize("edit,what", [  # issue 46 item 17: a done step's recorded answers and outputs, re-checked
    (_strategy_done({"method": "lora"}, {"method": "foo"}), "steps.choose_strategy.outputs.training.method is 'foo'"),
    (_strategy_done({"method": "lora", "micro_batch": -4}, {"method": "lora"}),
     "steps.choose_strategy.answers.micro_batch is -4"),
    (_strategy_done({"method": "lora"}, {"method": "lora", "micro_batch": "lots"}),
     "steps.choose_strategy.outputs.training.micro_batch is 'lots'"),
    (_strategy_done({"method": "lora"}, {"method": "lora", "micro_batch": True}),
     "steps.choose_strategy.outputs.training.micro_batch is True"),
    # a count given as 4.5 passed the range check and reached the trainer's raw ValueError (the tester's N1)
    (_strategy_done({"method": "lora", "micro_batch": 4.5}, {"method": "lora", "micro_batch": 4.5}),
     "steps.choose_strategy.answers.micro_batch is 4.5, not a whole number"),
    (_strategy_done({"method": "lora"}, {"method": "lora", "lora_rank": 16.0}),
     "steps.choose_strategy.outputs.training.lora_rank is 16.0, not a whole number"),
    (_strategy_done({"method": "lora", "lora_targets": 5}, {"method": "lora"}),
     "steps.choose_strategy.answers.lora_targets is 5, not text"),
    (_strategy_done({"method": "qlora", "distribution": "zero3"}, {"method": "lora"}),
     "steps.choose_strategy.answers: QLoRA"),
    # a done step whose outputs were emptied by hand: a resume called them "gone" and trained over the work there
    (lambda d: d["steps"]["train"].update(status="done", outputs={}), "steps.train is done but its outputs lack "
                                                                      "adapter_dir, method"),
    (lambda d: d["steps"]["deploy"].update(status="done", outputs={"endpoint": "http://127.0.0.1:8000/v1"}),
     "steps.deploy is done but its outputs lack served_model"),
    (lambda d: d["steps"]["choose_strategy"].update(status="done", outputs={"training": {}}),
     "steps.choose_strategy is done but its outputs lack training"),
    # a held-out share of 5 (the tester's N4): loaded, then the trainer's split
    (lambda d: d["steps"]["choose_strategy"].update(status="done", outputs={
        "training": {"method": "lora"}, "data": {"path": "d.jsonl", "val_ratio": 5}}),
     "data.val_ratio is 5, not within 0 … 0.5"),
])
def test_a_done_strategy_the_trainer_would_refuse_is_refused_at_load(tmp_path, edit, what):
    s = make(tmp_path)
    data = json.loads(s.path.read_text())
    edit(data)
    s.path.write_text(json.dumps(data))
    before = s.path.read_bytes()
    with pytest.raises(SessionError) as e:
        Session.load(s.path)
    assert e.value.key == "session.invalid" and what in e.value.params["what"], e.value.params["what"]
    assert s.path.read_bytes() == before
    from conftest import yichui

    r = yichui(tmp_path, "show", str(s.path))  # one line, the consistent exit status of invalid input, no traceback
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and what in r.stderr.replace("\n", " ")


def test_a_device_or_a_huge_file_is_not_read_as_a_session(tmp_path):
    """Issue 46 item 15: `yichui show /dev/zero` read the whole device (MemoryError, or the machine's memory)."""
    from conftest import yichui

    with pytest.raises(SessionError) as e:
        Session.load("/dev/zero")
    assert e.value.key == "session.not_a_file"
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(64 * 2**20)  # sparse: 64 MiB that cost no disk
    with pytest.raises(SessionError) as e:
        Session.load(big)
    assert e.value.key == "session.too_large"
    for path in ("/dev/zero", str(big)):
        r = yichui(tmp_path, "show", path, timeout=30)
        assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_newer_schema_is_refused(tmp_path):
    s = make(tmp_path)
    data = json.loads(s.path.read_text())
    data["schema_version"] = SCHEMA_VERSION + 1
    s.path.write_text(json.dumps(data))
    with pytest.raises(SessionError) as e:
        Session.load(s.path)
    assert e.value.key == "session.newer" and e.value.params["version"] == SCHEMA_VERSION + 1


def test_older_schema_goes_through_the_migrations(tmp_path, monkeypatch):
    from wizard import session as session_mod

    s = make(tmp_path)
    data = json.loads(s.path.read_text())
    data["schema_version"] = 0
    data["steps_v0"] = data.pop("steps")
    s.path.write_text(json.dumps(data))
    with pytest.raises(SessionError) as e:
        Session.load(s.path)
    assert e.value.key == "session.no_migration"
    monkeypatch.setitem(session_mod.MIGRATIONS, 0, lambda d: d | {"steps": d.pop("steps_v0")})
    loaded = Session.load(s.path)
    assert loaded.data["schema_version"] == SCHEMA_VERSION and "select_model" in loaded.steps


def test_find_takes_the_most_recent_unfinished(tmp_path):
    a = make(tmp_path)
    b = make(tmp_path)
    for r in b.steps.values():
        r["status"] = "skipped"  # finished (a done train or deploy must hold its outputs)
    b.save()
    assert find(None, tmp_path, unfinished=True) == a.path
    assert find(None, tmp_path) == b.path
    assert find(a.id, tmp_path) == a.path
    with pytest.raises(SessionError):
        find("no-such-id", tmp_path)


def test_v1_full_fine_tune_keeps_pure_bf16(tmp_path):
    """Migration 1 → 2: a v1 session's full fine-tune trained pure bf16 and keeps doing so on resume; LoRA is
    untouched."""
    s = make(tmp_path)
    data = json.loads(s.path.read_text())
    data["schema_version"] = 1
    data["steps"]["choose_strategy"]["answers"] = {"method": "full", "lora_rank": 8}
    data["steps"]["choose_strategy"]["outputs"] = {"strategy": {"method": "full"}}
    s.path.write_text(json.dumps(data))
    rec = Session.load(s.path).data["steps"]["choose_strategy"]
    assert rec["answers"]["master_weights"] == "bf16" and rec["outputs"]["training"]["master_weights"] == "bf16"
    data["steps"]["choose_strategy"]["answers"] = {"method": "lora"}
    data["steps"]["choose_strategy"]["outputs"] = {}
    s.path.write_text(json.dumps(data))
    assert "master_weights" not in Session.load(s.path).data["steps"]["choose_strategy"]["answers"]


def test_v2_export_answers_and_bnb_copy_become_formats_and_artifacts(tmp_path):
    s = make(tmp_path)
    data = json.loads(s.path.read_text())
    data["schema_version"] = 2
    data["steps"]["export"].update(answers={"dtype": "auto", "bnb_4bit": True}, status="done",
                                   outputs={"merged_dir": "/r/export/merged", "bnb4_dir": "/r/export/bnb-4bit",
                                            "bnb4_bytes": 123, "formats": ["merged", "bnb-4bit"]})
    s.path.write_text(json.dumps(data))
    rec = Session.load(s.path).data["steps"]["export"]
    assert rec["answers"] == {"dtype": "auto", "serve_with": "transformers", "formats": ["bnb-4bit"]}
    assert rec["outputs"]["artifacts"]["bnb-4bit"]["dir"] == "/r/export/bnb-4bit"
    assert "bnb4_dir" not in rec["outputs"] and rec["outputs"]["serve_with"] == "transformers"


@pytest.mark.parametrize("task", list(recipes.TASKS))
def test_a_task_runs_its_steps_and_records_the_others_as_skipped(tmp_path, task):
    s = Session.new(task, h=tmp_path)
    s.save()
    data = Session.load(s.path).data
    assert list(data["steps"]) == list(recipes.STEPS) and data["task"] == task
    assert [n for n, r in data["steps"].items() if r["status"] != "skipped"] == list(recipes.TASKS[task])


def test_v3_finished_fine_tune_gets_evaluate_and_chat_as_skipped_and_stays_finished(tmp_path):
    s = make(tmp_path)
    data = json.loads(s.path.read_text())
    data["schema_version"] = 3
    for name in ("evaluate", "chat"):
        data["steps"].pop(name)
    for r in data["steps"].values():
        r["status"] = "done"
    # what those steps recorded since v1 (a done one without it is refused: test_a_done_strategy_…)
    data["steps"]["choose_strategy"]["outputs"] = {"strategy": {"method": "lora"}, "dataset_path": "/d.jsonl"}
    data["steps"]["train"]["outputs"] = {"adapter_dir": "/a", "method": "lora"}
    data["steps"]["deploy"]["outputs"] = {"endpoint": "http://127.0.0.1:8000/v1", "served_model": "m"}
    s.path.write_text(json.dumps(data))
    loaded = Session.load(s.path)
    assert list(loaded.steps) == list(recipes.STEPS) and loaded.is_finished()
    assert loaded.steps["evaluate"]["status"] == loaded.steps["chat"]["status"] == "skipped"


def test_v4_session_stopped_after_its_download_continues_with_the_strategy(tmp_path):
    """v4 → v5: choose_strategy moved before download; the steps are stored in the new order, records untouched."""
    s = make(tmp_path)
    data = json.loads(s.path.read_text())
    old = ["select_model", "evaluate_memory", "download", "choose_strategy", "train", "export", "deploy", "evaluate",
           "chat"]
    data["schema_version"] = 4
    data["steps"] = {n: data["steps"][n] for n in old}
    for n in ("select_model", "evaluate_memory", "download"):
        data["steps"][n]["status"] = "done"
    data["steps"]["download"]["outputs"] = {"model_dir": "/m"}
    s.path.write_text(json.dumps(data))
    loaded = Session.load(s.path)
    assert list(loaded.steps) == list(recipes.STEPS) and loaded.current_step() == "choose_strategy"
    assert loaded.steps["download"]["status"] == "done" and loaded.steps["download"]["outputs"] == {"model_dir": "/m"}
    assert loaded.steps["select_model"]["outputs"]["meta_dir"] == "/m"  # v4 kept the small files with the weights


def test_v5_strategy_becomes_typed_training_data_and_backup(tmp_path):
    """v5 → v6: choose_strategy's one ``strategy`` object of answers becomes ``training`` (the TrainerJob's strategy
    fields), ``data`` (a DataChoice, with the counts v5 kept beside it) and ``backup`` (an AdapterBackup or null); the
    typed record reads them, and a resumed job trains what v5 recorded."""
    from recipes.handoff import StrategyChoice
    from recipes.training.backup import AdapterBackup

    s = make(tmp_path)
    data = json.loads(s.path.read_text())
    data["schema_version"] = 5
    strategy = {"method": "lora", "lora_rank": 32, "seq_len": 1024, "trackers": ["mlflow"], "dataset": "local",
                "dataset_path": "/answered.jsonl", "bad_records": "skip", "skip_bad_records": True, "val_ratio": 0.1,
                "images_per_sample": 0, "backup": "hf", "backup_repo": "me/adapters", "backup_every": 2,
                "plan": "ckpt=on,mb=2", "preflight": True, "sample_question": "Why?"}
    rec = data["steps"]["choose_strategy"]
    rec["status"], rec["answers"] = "done", dict(strategy)
    rec["outputs"] = {"strategy": strategy, "dataset_path": "/data.jsonl#50", "dataset_format": "alpaca",
                      "n_records": 50, "n_train": 45, "n_validation": 5, "fits": True}
    s.path.write_text(json.dumps(data))
    loaded = Session.load(s.path)
    out = loaded.data["steps"]["choose_strategy"]["outputs"]
    assert loaded.data["schema_version"] == SCHEMA_VERSION == 6 and "strategy" not in out
    assert "dataset" not in out["training"] and "backup" not in out["training"] and "val_ratio" not in out["training"]
    cs = StrategyChoice.from_dict(out)
    assert (cs.data.source, cs.data.path, cs.data.format, cs.data.n_train, cs.data.n_validation) == \
        ("local", "/data.jsonl#50", "alpaca", 45, 5)
    assert cs.backup == AdapterBackup("hf", "me/adapters", 2)
    job = cs.job(model_dir="/m")
    assert (job.lora_rank, job.seq_len, list(job.trackers), job.sample_question) == (32, 1024, ["mlflow"], "Why?")
    assert (job.dataset_path, job.skip_bad_records, job.val_ratio, job.model_dir) == ("/data.jsonl#50", True, 0.1, "/m")
    assert loaded.data["steps"]["choose_strategy"]["answers"] == strategy  # what replay asks is untouched
    # no backup chosen → null; a v5 strategy that is no object stays for the type check to name
    rec["outputs"] = {"strategy": {"method": "lora", "backup": "none"}, "dataset_path": "/d.jsonl"}
    s.path.write_text(json.dumps(data))
    out = Session.load(s.path).data["steps"]["choose_strategy"]["outputs"]
    assert out["backup"] is None and out["data"]["source"] == "bundled"
    # v6 records as hand-edited: each named by its field (the tryout: a missing method trained the default's, an
    # empty data path failed at the train step as "." a folder, a backup without a repository crashed)
    good = Session.load(s.path).data["steps"]["choose_strategy"]["outputs"]
    for edit, what in ((lambda o: o["training"].update(lora_rank=8) or o["training"].pop("method"),
                        "lack training.method"),
                       (lambda o: o["data"].update(path=""), "lack data.path"),
                       (lambda o: o["data"].update(source="ftp"), 'data.source is "ftp", not one of'),
                       (lambda o: o["data"].update(n_train="x"), 'data.n_train is "x", not an integer'),
                       (lambda o: o.update(backup={"hub": "hf"}), "backup.repo_id is null, not a repository id"),
                       (lambda o: o.update(backup="hf"), 'backup is "hf", not an object or null')):
        broken = json.loads(json.dumps(data))
        broken["schema_version"] = 6
        out6 = json.loads(json.dumps(good))
        edit(out6)
        broken["steps"]["choose_strategy"]["outputs"] = out6
        s.path.write_text(json.dumps(broken))
        with pytest.raises(SessionError) as e:
            Session.load(s.path)
        assert what in e.value.params["what"], (what, e.value.params["what"])
    rec["outputs"] = {"strategy": "lora"}
    s.path.write_text(json.dumps(data))
    with pytest.raises(SessionError, match='outputs.strategy is "lora", not an object'):  # v5's own name
        Session.load(s.path)
    rec["outputs"] = {"fits": True}  # done, without what a done v5 step always recorded
    s.path.write_text(json.dumps(data))
    with pytest.raises(SessionError, match="is done but its outputs lack strategy"):
        Session.load(s.path)


SAVER = """
import sys, time
from wizard.session import Session
s = Session.load(sys.argv[1])
s.lock()
print("ready", flush=True)
sys.stdin.readline()  # go
i = 0
while True:
    i += 1
    s.steps["train"]["outputs"]["log"] = ["x" * 200] * (2000 + i % 500)  # ~0.5 MB: a save takes a while
    s.steps["train"]["outputs"]["i"] = i
    s.save()
"""


@pytest.mark.slow
def test_kill_9_in_the_middle_of_saves_never_leaves_a_broken_session(tmp_path):
    """30 SIGKILLs of a process that does nothing but save (temp file, fsync, rename): after each the file loads,
    and the next process to lock the session clears the temp files the kills left."""
    import random
    import signal
    import time

    s = make(tmp_path)
    rng = random.Random(20261130)
    seen, cut_short = set(), 0
    tmp_files = lambda: list(tmp_path.glob("sessions/.*.tmp"))  # noqa: E731
    for _ in range(30):
        p = subprocess.Popen([sys.executable, "-c", SAVER, str(s.path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True,
                             cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        try:
            assert p.stdout.readline().strip() == "ready"  # it holds the lock and waits before its first save
            assert not tmp_files()  # what the previous kill left was cleared by taking the lock
            p.stdin.write("go\n")
            p.stdin.flush()
            time.sleep(rng.uniform(0.01, 0.4))
        finally:
            p.send_signal(signal.SIGKILL)
            p.wait()
        loaded = Session.load(s.path)  # the old file or the new one, never half of one
        seen.add(loaded.steps["train"]["outputs"].get("i"))
        cut_short += bool(tmp_files())
    assert len(seen) > 10  # the kills landed at many different saves
    assert cut_short >= 3  # and often inside one (a temp file left behind)


def test_a_symbolic_link_loop_is_named_as_such_not_as_no_session(tmp_path):
    """Issue 46 (bad input): a SESSION that is a link pointing at itself read as "No session …"; a broken link too."""
    from wizard.session import find

    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(SessionError) as e:
        Session.load(find(str(tmp_path / "a"), tmp_path))
    assert e.value.key == "session.unreadable" and "symbolic links" in e.value.params["error"].lower()
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere.json")
    with pytest.raises(SessionError) as e:
        Session.load(find(str(tmp_path / "gone"), tmp_path))
    assert e.value.key == "session.not_found"
    from conftest import yichui

    r = yichui(tmp_path, "show", str(tmp_path / "a"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Cannot read the session file" in r.stderr


@pytest.mark.parametrize("text,key", [
    ("[" * 200_000, "session.not_json"),                                 # RecursionError in the parser
    ('{"schema_version": ' + "9" * 5000 + "}", "session.not_json"),      # more digits than int() takes
    ('{"schema_version": 1, "steps": []}', "session.invalid"),            # the migrations read step records
    ('{"schema_version": 2, "steps": "abc"}', "session.invalid"),
    ('{"schema_version": 3, "steps": {"train": 5}}', "session.invalid"),
])
def test_a_session_file_that_breaks_the_parser_or_the_migrations_is_refused_in_one_line(tmp_path, text, key):
    """Issue 46 (bad input, round four): these crashed load with a traceback — and with it show --all, status and
    delete for every session under that home."""
    path = tmp_path / "sessions" / "x.json"
    path.parent.mkdir()
    path.write_text(text)
    with pytest.raises(SessionError) as e:
        Session.load(path)
    assert e.value.key == key
    from wizard.session import all_sessions

    bad: list = []
    assert all_sessions(tmp_path, bad) == [] and len(bad) == 1  # listed as unreadable, not a crash
