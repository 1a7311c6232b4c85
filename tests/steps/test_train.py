"""train: the detached trainer, its events and checkpoints, out-of-memory recovery, and every method and distribution
(QLoRA, DoRA, GaLore + packing, two processes, DeepSpeed ZeRO, two nodes), each from the same session.

The session is shared with the other files under tests/steps/ (conftest.py): ``chain.upto(step)`` runs what
is missing before the step, so this file runs alone and in any order."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from recipes import jobs
from recipes.base import StepError
from recipes.training import backup
from wizard import demo
from recipes.memory import model as memory

# two training processes on one machine: on the CPU (gloo) anywhere; on GPUs only with one GPU per process
TWO_RANKS = pytest.mark.skipif(0 < len(memory.detect_gpus()) < 2,
                               reason="two processes need two GPUs on a machine that has GPUs (one per process)")


def _fresh_train(chain):
    for name in ("train", "export"):
        shutil.rmtree(chain.session.run_dir / name, ignore_errors=True)
    chain.session.steps["train"]["outputs"] = {}


def _losses(tr) -> list[float]:
    return json.loads((Path(tr["train_dir"]) / "result.json").read_text())["losses"]


def _sharding(tr) -> str:
    events, _ = jobs.read_events(Path(tr["train_dir"]) / "events.jsonl")
    return [e for e in events if e["event"] == "start"][-1]["sharding"]


@pytest.mark.slow
def test_train_runs_detached_and_writes_events_and_checkpoints(chain):
    chain.upto("train")
    out = chain.step("train")
    tdir = Path(out["train_dir"])
    assert out["steps"] == 12 and Path(out["adapter_dir"], "adapter_config.json").exists()
    events, _ = jobs.read_events(tdir / "events.jsonl")
    steps = [e for e in events if e["event"] == "step"]
    assert len(steps) == 12 and all(e["v"] == 1 for e in events)
    assert {"step", "loss", "lr", "tokens_per_s", "mem_gib", "total_steps"} <= set(steps[-1])
    assert [e["step"] for e in events if e["event"] == "checkpoint"] == [5, 10, 12]
    assert sorted(p.name for p in (tdir / "checkpoints").glob("checkpoint-*")) == ["checkpoint-10", "checkpoint-12"]
    assert out["samples"]["before"] and out["samples"]["after"]
    job = jobs.read(tdir / "trainer.pid.json")
    assert job.pid == chain.session.steps["train"]["outputs"]["trainer_pid"] and not job.alive()


@pytest.mark.slow
def test_a_result_whose_adapter_is_gone_trains_again_from_the_last_checkpoint(chain, capsys):
    """Issue 46 item 18: with the adapter moved away but train/result.json left, resume said "running it again", then
    "Training finished" without training, then failed at export on every resume. The step's outputs are checked as a
    whole (is_done), and the re-run re-runs: from the last intact checkpoint, which saves the final adapter again."""
    from recipes import train as train_step

    chain.upto("train")
    out = chain.step("train")
    adapter, tdir = Path(out["adapter_dir"]), Path(out["train_dir"])
    shutil.move(adapter, tdir / "moved-away")
    assert not train_step.is_done(chain.ctx("train"), chain.session.record("train"))
    # and the optimizer's state gone from that checkpoint (issue 46 item 21): the Trainer resumes with a fresh one
    # without a word; the step says so
    (tdir / "checkpoints" / "checkpoint-12" / "optimizer.pt").unlink()
    again = chain.step("train")
    assert Path(again["adapter_dir"], "adapter_config.json").exists() and (tdir / "result.stale.json").exists()
    starts = [e for e in jobs.read_events(tdir / "events.jsonl")[0] if e["event"] == "start"]
    assert starts[-1].get("resumed_from") == "checkpoint-12"
    err = capsys.readouterr().err
    assert "which is gone: training again from the last intact checkpoint" in err
    assert "checkpoint-12 holds no optimizer state (optimizer.pt is missing)" in " ".join(err.split()), err


@pytest.mark.slow
def test_a_run_of_other_answers_is_set_aside_and_trained_again_from_step_0(chain, capsys):
    """Issue 46 trial I (N1): `resume --set choose_strategy.learning_rate=…` on a finished session said train runs
    again, then reported the old result and kept the adapter trained at the old rate under the new answer. A run
    whose spec.json differs from what the answers now ask (here: trained at ten times the rate) is moved aside,
    kept, and the training starts from step 0 with the answers as they are."""
    chain.upto("train")
    out = chain.step("train")
    tdir = Path(out["train_dir"])
    recorded = json.loads((tdir / "spec.json").read_text())
    lr = recorded["learning_rate"]
    (tdir / "spec.json").write_text(json.dumps(recorded | {"learning_rate": lr * 10}))
    chain.step("train")
    err = " ".join(capsys.readouterr().err.split())
    assert f"The training answers changed since this run trained (learning_rate {lr * 10!r} → {lr!r})" in err, err
    aside = sorted(tdir.parent.glob("train.before-*"))
    assert aside and (aside[-1] / "adapter" / "adapter_config.json").exists()  # the earlier run kept whole
    starts = [e for e in jobs.read_events(tdir / "events.jsonl")[0] if e["event"] == "start"]
    assert len(starts) == 1 and not starts[0].get("resumed_from")  # from step 0, not the old checkpoints
    assert json.loads((tdir / "spec.json").read_text())["learning_rate"] == lr


@pytest.mark.slow
def test_a_result_taken_over_from_another_session_resumes_from_its_last_checkpoint(chain, capsys, tmp_path):
    """Issue 46 trial I (N2): `run --task quantize --from SESSION` with the source's adapter moved away trained 400
    steps again from step 0, though the source's checkpoint-400 was intact. The source's latest complete checkpoint
    is taken over and the trainer resumes from it (at the last step: it only saves the final adapter)."""
    chain.upto("train")
    out = chain.step("train")
    tdir = Path(out["train_dir"])
    src = tmp_path / "source-session-train"
    shutil.copytree(tdir, src)
    shutil.move(src / "adapter", tmp_path / "moved-away")
    chain.session.record("train").outputs.update(train_dir=str(src), adapter_dir=str(src / "adapter"))
    shutil.rmtree(tdir)  # a session made --from another trains in its own folder, empty until then
    again = chain.step("train")
    said = capsys.readouterr()
    assert "The source session's checkpoint-12 is intact" in " ".join((said.out + said.err).split())
    starts = [e for e in jobs.read_events(tdir / "events.jsonl")[0] if e["event"] == "start"]
    assert starts[-1].get("resumed_from") == "checkpoint-12", starts
    assert again["train_dir"] == str(tdir) and Path(again["adapter_dir"], "adapter_config.json").exists()
    assert (src / "checkpoints" / "checkpoint-12" / "trainer_state.json").exists()  # the source's left as it was


def test_a_checkpoint_a_kill_cut_short_is_set_aside_and_the_last_complete_one_resumed(tmp_path):
    """A SIGKILL while the Trainer writes checkpoint-8 leaves a folder without trainer_state.json (written last);
    resuming from it fails (FileNotFoundError, seen on the unsloth backend's kill test). The train step sets it
    aside, kept, and the Trainer's own choice of the last checkpoint then takes checkpoint-4."""
    from transformers.trainer_utils import get_last_checkpoint

    from recipes.training.runner import checkpoints, set_aside_incomplete

    ck = tmp_path / "checkpoints"
    for step, complete in ((4, True), (8, False)):
        (ck / f"checkpoint-{step}").mkdir(parents=True)
        (ck / f"checkpoint-{step}" / "adapter_config.json").write_text("{}")
        if complete:
            (ck / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
    assert get_last_checkpoint(str(ck)).endswith("checkpoint-8")  # what the Trainer would resume from
    assert set_aside_incomplete(tmp_path) == ["checkpoint-8"]
    assert [p.name for p in checkpoints(tmp_path)] == ["checkpoint-4"]
    assert get_last_checkpoint(str(ck)).endswith("checkpoint-4")
    assert (ck / "incomplete-checkpoint-8" / "adapter_config.json").read_text() == "{}"  # kept
    assert set_aside_incomplete(tmp_path) == []


@pytest.mark.parametrize("cut", ["adapter_model.safetensors", "optimizer.pt", "trainer_state.json"])
def test_a_damaged_last_checkpoint_is_set_aside_and_the_intact_one_before_it_resumed(tmp_path, cut):
    """The tester's 21-5 and N6 (issue 46): a last checkpoint whose adapter, optimizer state or trainer state was
    cut short (a full disk, a partial copy) was picked on every resume and failed there with the library's raw
    error, the intact checkpoint before it never used. The train step sets it aside, kept, and says why."""
    import torch
    from safetensors.torch import save_file
    from transformers.trainer_utils import get_last_checkpoint

    from recipes.training.runner import checkpoints, damage, set_aside_damaged

    ck = tmp_path / "checkpoints"
    for step in (4, 8):  # written as the Trainer writes them: safetensors, torch.save's archive, JSON
        d = ck / f"checkpoint-{step}"
        d.mkdir(parents=True)
        save_file({"lora_A": torch.ones(64, 64)}, str(d / "adapter_model.safetensors"))
        torch.save({"state": {0: {"exp_avg": torch.zeros(64, 64)}}}, d / "optimizer.pt")
        (d / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": []}))
    assert damage(ck / "checkpoint-8") is None and set_aside_damaged(tmp_path) == []
    victim = ck / "checkpoint-8" / cut
    whole = victim.read_bytes()
    victim.write_bytes(whole[:len(whole) // 2])
    (name, what), = set_aside_damaged(tmp_path)
    assert name == "checkpoint-8" and cut in what, what
    assert [p.name for p in checkpoints(tmp_path)] == ["checkpoint-4"]
    assert get_last_checkpoint(str(ck)).endswith("checkpoint-4")
    assert (ck / "damaged-checkpoint-8" / cut).read_bytes() == whole[:len(whole) // 2]  # kept as it was
    assert set_aside_damaged(tmp_path) == []


def test_recovery_gives_up_when_nothing_is_left():
    from recipes.training.runner import recover
    from recipes.training.spec import TrainingSpec as S

    assert recover(S(micro_batch=1, grad_accum=8, activation_checkpointing=True)) is None
    assert recover(S(micro_batch=1, grad_accum=8, activation_checkpointing=False))["to"] == {
        "micro_batch": 1, "grad_accum": 8, "activation_checkpointing": True}
    assert recover(S(micro_batch=3, grad_accum=2, activation_checkpointing=True))["to"] == {
        "micro_batch": 1, "grad_accum": 6, "activation_checkpointing": True}
    # KTO estimates its KL term from the other replies of the micro-batch: never below 2 (trl refuses 1)
    assert recover(S(objective="kto", micro_batch=2, grad_accum=4, activation_checkpointing=True)) is None
    assert recover(S(objective="kto", micro_batch=4, grad_accum=1, activation_checkpointing=True))["to"] == {
        "micro_batch": 2, "grad_accum": 2, "activation_checkpointing": True}
    # GRPO's step holds whole groups: 6 × 2 replies stay 12 (3 × 4), never 2 × 6 … rounded
    for mb, ga in ((6, 2), (5, 4), (8, 1)):
        to = recover(S(objective="grpo", micro_batch=mb, grad_accum=ga, activation_checkpointing=True))["to"]
        assert to["micro_batch"] * to["grad_accum"] == mb * ga and to["micro_batch"] <= mb // 2, (mb, ga, to)


def test_allocation_failures_of_cuda_libraries_count_as_out_of_memory():
    import torch

    from recipes.training.worker import is_oom

    assert is_oom(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert is_oom(RuntimeError("CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported"))
    assert is_oom(RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"))
    assert not is_oom(RuntimeError("CUDA error: device-side assert triggered"))
    assert not is_oom(ValueError("CUDA out of memory"))  # not raised by torch: a message, not an allocation


@pytest.mark.slow
def test_out_of_memory_recovers_from_the_last_checkpoint(chain, variant, monkeypatch):
    """The CUDA OOM error injected at step 5 (CI has no GPU): the step halves the micro-batch, doubles gradient
    accumulation, turns checkpointing on, resumes from checkpoint-4 and records what changed.

    Meanwhile the adapter backup to the local hub (its Hugging Face upload API; huggingface_hub's own client):
    checkpoint-4, checkpoint-8 and the final adapter go up across the trainer's restart, the first commit the hub
    refuses (503) is retried and reported, and the token stays in the environment."""
    for name in ("train", "export"):
        shutil.rmtree(chain.session.run_dir / name, ignore_errors=True)
    chain.session.steps["train"]["outputs"] = {}
    token = "hf_backup_" + "x" * 20
    monkeypatch.setenv("HF_TOKEN", token)
    monkeypatch.setenv("HF_ENDPOINT", chain.hub.url)
    chain.step("choose_strategy", preflight="false", method="lora", max_steps="8", save_steps="4", micro_batch="4", grad_accum="1",
               activation_checkpointing="false", backup="hf", backup_repo="me/tiny-adapter", backup_every="1")
    chain.hub.hub.modes["write_token"] = token
    chain.hub.hub.faults = [{"upload": "commit", "path": "*", "status": 503, "times": 1}]
    monkeypatch.setenv("YICHUI_INJECT_OOM", "5:2")
    try:
        out = chain.step("train")
    finally:
        chain.hub.hub.faults = []
        chain.hub.hub.modes.pop("write_token", None)
    _check_backup(chain, out, "me/tiny-adapter", ["checkpoints/checkpoint-4", "checkpoints/checkpoint-8", "."], token)
    failed = [e for e in backup.events(Path(out["train_dir"])) if e["event"] == "failed"]
    assert len(failed) == 1 and "503" in failed[0]["error"], failed
    from conftest import yichui

    r = yichui(chain.home, "status", chain.session.id, COLUMNS="200")  # the backup job's line
    assert "adapter backup: 3 uploaded (last: final adapter" in r.stdout, r.stdout
    r = yichui(chain.home, "show", chain.session.id, COLUMNS="200")  # where to, as well, once the job is gone
    assert "adapter backup: 3 uploaded (last: final adapter" in r.stdout and "→ hf me/tiny-adapter" in r.stdout, \
        r.stdout
    assert out["steps"] == 8
    (change,) = out["recoveries"]
    assert change["from"] == {"micro_batch": 4, "grad_accum": 1, "activation_checkpointing": False}
    assert change["to"] == {"micro_batch": 2, "grad_accum": 2, "activation_checkpointing": True}
    events, _ = jobs.read_events(Path(out["train_dir"]) / "events.jsonl")
    assert [e["kind"] for e in events if e["event"] == "error"] == ["oom"]
    starts = [e for e in events if e["event"] == "start"]
    assert len(starts) == 2 and starts[1]["resumed_from"] == "checkpoint-4"
    spec = json.loads((Path(out["train_dir"]) / "spec.json").read_text())
    assert (spec["micro_batch"], spec["grad_accum"], spec["activation_checkpointing"]) == (2, 2, True)


@pytest.mark.slow
def test_the_unsloth_backend_recovers_from_oom_and_a_kill_and_merges(chain, variant, monkeypatch, unsloth_envs):
    """unsloth in its own environment (its CPU fallback here; bench/results/2026-12-02-unsloth-backend-h200 on a GPU)
    through the same train step: the trainer runs in that interpreter and its events name the backend; an
    out-of-memory error at step 5 is recovered from checkpoint-4; a SIGKILL of the trainer after checkpoint-8 is
    resumed from there by the step; the adapter is a peft adapter the export step merges."""
    import os
    import signal
    import threading

    from recipes import base
    from recipes.training import backends

    monkeypatch.setenv("YICHUI_ENVS", str(unsloth_envs))
    _fresh_train(chain)
    chain.step("choose_strategy", preflight="false", method="lora", training_backend="unsloth", max_steps="120",
               save_steps="4", micro_batch="4", grad_accum="1", activation_checkpointing="false")
    monkeypatch.setenv("YICHUI_INJECT_OOM", "5:2")
    tdir = chain.session.run_dir / "train"
    killed: list[int] = []

    def kill_after_checkpoint_8():  # the recovered launch (micro-batch 2), once checkpoint-8 is on disk
        end = time.monotonic() + 300
        while time.monotonic() < end and not killed:
            job = jobs.read(tdir / "trainer.pid.json")
            spec = json.loads((tdir / "spec.json").read_text()) if (tdir / "spec.json").exists() else {}
            if job and job.alive() and spec.get("micro_batch") == 2 and (tdir / "checkpoints" / "checkpoint-8").is_dir():
                os.killpg(job.pid, signal.SIGKILL)
                killed.append(job.pid)
            time.sleep(0.02)

    import time

    watcher = threading.Thread(target=kill_after_checkpoint_8)
    watcher.start()
    with pytest.raises(base.StepError, match="training.died"):
        chain.step("train")
    watcher.join()
    assert killed
    out = chain.step("train")  # the step again: a dead trainer is started again from its last checkpoint
    assert out["steps"] == 120
    (change,) = out["recoveries"]
    assert change["to"] == {"micro_batch": 2, "grad_accum": 2, "activation_checkpointing": True}
    events, _ = jobs.read_events(tdir / "events.jsonl")
    starts = [e for e in events if e["event"] == "start"]
    assert [e["resumed_from"] for e in starts][:2] == [None, "checkpoint-4"]
    # the kill lands while checkpoint-8 is written (set aside, resumed from checkpoint-4) or after (resumed from it)
    aside = (tdir / "checkpoints" / "incomplete-checkpoint-8").is_dir()
    assert starts[2]["resumed_from"] == ("checkpoint-4" if aside else "checkpoint-8"), aside
    assert {e["training_backend"] for e in starts} == {f"unsloth {backends.UNSLOTH_VERSION}"}
    assert [e["kind"] for e in events if e["event"] == "error"] == ["oom"]
    spec = json.loads((tdir / "spec.json").read_text())
    assert spec["interpreter"] == str(backends.unsloth_env(chain.home) / "bin" / "python")
    assert "Unsloth" in (tdir / "trainer.log").read_text()  # unsloth's own banner: its model, not a look-alike
    assert json.loads((tdir / "result.json").read_text())["training_backend"] == f"unsloth {backends.UNSLOTH_VERSION}"
    exp = chain.step("export", formats="")
    assert exp["merge_check"]["max_abs_logit_diff"] < 1e-4  # unsloth's adapter on the base vs the merged model


@pytest.mark.slow
def test_qlora_trains_and_merges_into_the_unquantized_base(chain, variant):
    for name in ("train", "export"):
        shutil.rmtree(chain.session.run_dir / name, ignore_errors=True)
    chain.step("choose_strategy", method="qlora", max_steps="4", save_steps="2")
    out = chain.step("train")
    assert out["method"] == "qlora" and out["steps"] == 4
    cfg = json.loads(Path(out["adapter_dir"], "adapter_config.json").read_text())
    assert cfg["r"] == 16
    exp = chain.step("export", formats="")
    merged = json.loads(Path(exp["merged_dir"], "config.json").read_text())
    assert "quantization_config" not in merged and exp["artifacts"] == {}
    assert exp["merge_check"]["max_abs_logit_diff"] < 1e-4  # adapter on the unquantized base vs merged


def _check_backup(chain, out: dict, repo_id: str, paths: list[str], token: str) -> None:
    """The backup job settled: ``paths`` uploaded in order, the hub's copies byte for byte the local adapter files
    (the final one at the repository's root), and the token nowhere on disk but the environment."""
    from recipes.hub.server import Hub

    tdir = Path(out["train_dir"])
    done = backup.summary(tdir)
    assert done["done"] and done["uploaded"] == paths and not done["gave_up"], done
    repo = Hub(demo.hub_root(chain.home)).repo(repo_id)
    assert repo is not None
    final = Path(out["adapter_dir"])
    assert (repo.folder / "adapter_model.safetensors").read_bytes() == (final / "adapter_model.safetensors").read_bytes()
    # the same config, but naming the base by its hub id (peft recorded the local folder): it loads anywhere
    sent, local = (json.loads((d / "adapter_config.json").read_text()) for d in (repo.folder, final))
    assert sent.pop("base_model_name_or_path") == "yichui/tiny-qwen2-chat" != local.pop("base_model_name_or_path")
    assert sent == local
    assert not list(tdir.rglob(".backup-*")), "the upload's temporary copy is left behind"
    for p in paths[:-1]:
        assert (repo.folder / p / "adapter_model.safetensors").stat().st_size > 0
        assert not list((repo.folder / p).glob("optimizer*"))  # adapters only, never the optimizer states
    for f in [chain.session.path, tdir / "backup.log", tdir / "trainer.log", tdir / "spec.json", tdir / "backup.json"]:
        assert token not in f.read_text(errors="replace"), f


@pytest.mark.slow
def test_dora_with_a_validation_split_and_a_hub_dataset(chain, variant, tmp_path, monkeypatch):
    """DoRA trains and merges; a hub dataset (served by the local hub, fetched by the downloader) with #N sampling
    and a 10 % validation split: eval events in the stream, held-out records never trained on. Its adapter is
    backed up to the local hub through ModelScope's client, one checkpoint in two (checkpoint-6) and the final."""
    import json as _json

    from recipes.data import datasets as data

    ds_dir = chain.home / "cache" / "hub" / "datasets" / "org" / "chat"
    ds_dir.mkdir(parents=True, exist_ok=True)
    convs = data.load_records(data.bundled_dataset_path())
    (ds_dir / "train.jsonl").write_text("".join(_json.dumps({"conversations": [
        {"from": "human", "value": c[0]["content"]}, {"from": "gpt", "value": c[1]["content"]}]}) + "\n"
        for c in convs))
    for name in ("train", "export"):
        shutil.rmtree(chain.session.run_dir / name, ignore_errors=True)
    chain.session.steps["train"]["outputs"] = {}
    token = "ms-backup-" + "y" * 20
    monkeypatch.setenv("MODELSCOPE_API_TOKEN", token)
    monkeypatch.setenv("MODELSCOPE_ENDPOINT", chain.hub.url)
    out = chain.step("choose_strategy", preflight="false", method="dora", dataset="hub", dataset_repo="org/chat",
                     dataset_file="*.jsonl#120", val_ratio="0.1", max_steps="6", save_steps="3", micro_batch="2",
                     activation_checkpointing="false", backup="modelscope", backup_repo="me/dora-adapter",
                     backup_every="2")
    assert out["data"]["format"] == "sharegpt" and out["data"]["n_records"] == 120
    assert (out["data"]["n_train"], out["data"]["n_validation"]) == (108, 12)
    assert out["data"]["path"].startswith(str(chain.home / "datasets" / "hf" / "org" / "chat"))
    assert out["data"]["source"] == "hub" and out["data"]["repo"] == "org/chat" and out["backup"] == {
        "hub": "modelscope", "repo_id": "me/dora-adapter", "every": 2, "base_model": None}
    tr = chain.step("train")
    events, _ = jobs.read_events(Path(tr["train_dir"]) / "events.jsonl")
    assert [e["step"] for e in events if e["event"] == "eval"] == [3, 6]
    cfg = _json.loads(Path(tr["adapter_dir"], "adapter_config.json").read_text())
    assert cfg["use_dora"] is True
    _check_backup(chain, tr, "me/dora-adapter", ["checkpoints/checkpoint-6", "."], token)
    exp = chain.step("export", formats="")
    assert Path(exp["merged_dir"], "model.safetensors").exists()


@pytest.mark.slow
@TWO_RANKS
def test_two_processes_data_parallel_on_cpu(chain, variant):
    """The same launcher as on several GPUs (torch.distributed.run), two CPU processes over gloo: one events
    stream (rank 0), the adapter saved once, the effective batch counting both processes."""
    for name in ("train", "export"):
        shutil.rmtree(chain.session.run_dir / name, ignore_errors=True)
    chain.session.steps["train"]["outputs"] = {}
    out = chain.step("choose_strategy", preflight="false", method="lora", dataset="bundled", processes="2", max_steps="6",
                     save_steps="3", micro_batch="2", grad_accum="1", val_ratio="0")
    assert out["effective_batch"] == 4
    tr = chain.step("train")
    assert tr["steps"] == 6
    result = json.loads((Path(tr["train_dir"]) / "result.json").read_text())
    assert result["processes"] == 2
    events, _ = jobs.read_events(Path(tr["train_dir"]) / "events.jsonl")
    assert [e["step"] for e in events if e["event"] == "step"] == [1, 2, 3, 4, 5, 6]
    assert {e["rank"] for e in events} == {0}
    spec = json.loads((Path(tr["train_dir"]) / "spec.json").read_text())
    assert spec["processes"] == 2 and "torch.distributed.run" in jobs.read(
        Path(tr["train_dir"]) / "trainer.pid.json").argv


@pytest.mark.slow
@TWO_RANKS
def test_deepspeed_zero_stages_match_data_parallel(chain, variant):
    """Two CPU processes (gloo) through the same launcher: plain DDP, DeepSpeed ZeRO-3, and ZeRO-2 with the
    optimizer states offloaded (DeepSpeed's CPU Adam). The Trainer really runs the asked sharding (the start event
    says what accelerate set up), and the sharded runs' losses match the DDP run's."""
    runs = {}
    for dist, offload in (("ddp", "none"), ("zero3", "none"), ("zero2", "optimizer")):
        _fresh_train(chain)
        sharded = {} if dist == "ddp" else {"offload": offload}  # asked only with a sharded distribution
        out = chain.step("choose_strategy", preflight="false", method="lora", dataset="bundled", processes="2", max_steps="4",
                         save_steps="2", micro_batch="2", grad_accum="1", val_ratio="0", distribution=dist,
                         activation_checkpointing="false", **sharded)
        assert out["training"]["distribution"] == dist and out["estimate"]["peak_gib"] > 0
        tr = chain.step("train")
        assert tr["steps"] == 4
        assert _sharding(tr) == {"ddp": "ddp", "zero3": "deepspeed-zero3", "zero2": "deepspeed-zero2"}[dist]
        assert Path(tr["adapter_dir"], "adapter_model.safetensors").exists()
        runs[dist] = _losses(tr)
    for dist in ("zero3", "zero2"):
        assert runs[dist] == pytest.approx(runs["ddp"], rel=2e-3), dist


@pytest.mark.slow
@TWO_RANKS
def test_sequence_parallel_trains_as_one_process_does(chain, variant):
    """Ulysses sequence parallelism (issue 43) through the train step: two CPU processes (gloo), ZeRO-3, each
    sequence split over both (accelerate's ParallelismConfig, DeepSpeed's ALST: one data-parallel replica, so the
    effective batch is one process's). The losses equal one plain process's on the same data, and the split the
    model's heads do not allow is refused at the question."""
    runs = {}
    for procs, extra in ((1, {}), (2, {"distribution": "zero3", "offload": "none", "sequence_parallel": "2"})):
        _fresh_train(chain)
        out = chain.step("choose_strategy", preflight="false", method="lora", dataset="bundled", processes=str(procs),
                         max_steps="4", save_steps="2", micro_batch="1", grad_accum="1", val_ratio="0",
                         activation_checkpointing="false", lora_dropout="0.0", **extra)
        assert out["effective_batch"] == 1 and out["training"].get("sequence_parallel", 1) == int(procs)
        tr = chain.step("train")
        assert tr["steps"] == 4
        runs[procs] = _losses(tr)
        spec = json.loads((Path(tr["train_dir"]) / "spec.json").read_text())
        assert spec["sequence_parallel"] == procs
    assert _sharding(tr) == "deepspeed-zero3"
    assert runs[2] == pytest.approx(runs[1], rel=2e-3)
    # killed after checkpoint-2 (its later files gone, as a kill leaves them): the train step resumes from it
    tdir = Path(tr["train_dir"])
    (tdir / "result.json").unlink()
    shutil.rmtree(tdir / "checkpoints" / "checkpoint-4")
    again = chain.step("train")
    result = json.loads((tdir / "result.json").read_text())
    assert again["steps"] == 4 and result["resumed_from"] == "checkpoint-2"
    # the tiny model has 4 heads and 2 KV heads: 3 ways is refused before anything runs, naming the degrees it takes
    q = chain.questions("choose_strategy")["sequence_parallel"]
    heads = {"processes": 3, "nodes": 1, "distribution": "zero3", "method": "lora", "seq_len": 64}
    err = q.validate(3, heads)
    assert err is not None and err.key == "memory.sp_heads" and err.args["ok"] == "1"
    assert q.validate(2, heads | {"processes": 2, "distribution": "zero2"}).key == "training.sp_needs_zero3"


@TWO_RANKS
def test_offload_to_nvme_checks_the_folder(chain, variant, libaio, monkeypatch, tmp_path, tmpfs):
    """ZeRO-3 offload to NVMe (issue 23): a folder it cannot write in and a disk without room (a 1 MiB tmpfs) are
    said at the question."""
    from recipes.base import Refusal

    for k, v in libaio.items():
        monkeypatch.setenv(k, v)
    (tmp_path / "file-not-folder").write_text("a file")
    for path, words in ((tmp_path / "file-not-folder" / "x", "Cannot write swap files in"), (tmpfs("1m"), "GiB free")):
        with pytest.raises(Refusal) as e:
            chain.step("choose_strategy", preflight="false", method="full", dataset="bundled", processes="2",
                       max_steps="4", distribution="zero3", offload="all", offload_device="nvme", nvme_path=str(path))
        assert e.value.key == "answer.invalid" and words in str(e.value.params["reason"]), e.value


@pytest.mark.skipif(not os.environ.get("YICHUI_SLOW"),
                    reason="YICHUI_SLOW=1: DeepSpeed's async_io JIT and the swapping take minutes on two cores (389 s)")
@TWO_RANKS
def test_offload_to_nvme_trains_as_ddp_does(chain, variant, libaio, monkeypatch, tmp_path):
    """Two processes train with weights and optimizer states swapped to files through DeepSpeed's async_io op on
    libaio (issue 23), their losses those of DDP."""
    for k, v in libaio.items():
        monkeypatch.setenv(k, v)
    swap, runs = tmp_path / "nvme", {}
    for dist, extra in (("ddp", {}), ("zero3", {"offload": "all", "offload_device": "nvme", "nvme_path": str(swap)})):
        _fresh_train(chain)
        chain.step("choose_strategy", preflight="false", method="lora", dataset="bundled", processes="2", max_steps="4",
                   save_steps="2", micro_batch="2", grad_accum="1", val_ratio="0", distribution=dist,
                   activation_checkpointing="false", **extra)
        tr = chain.step("train")
        assert tr["steps"] == 4 and _sharding(tr) == {"ddp": "ddp", "zero3": "deepspeed-zero3"}[dist]
        runs[dist] = _losses(tr)
    assert runs["zero3"] == pytest.approx(runs["ddp"], rel=2e-3)
    assert (swap / "zero_stage_3").is_dir(), list(swap.rglob("*"))[:10]  # DeepSpeed's swap folder (files removed)


@pytest.mark.slow
@TWO_RANKS
def test_two_nodes_meet_at_the_rendezvous_then_train(chain, variant, monkeypatch):
    """Two "nodes" on this machine (127.0.0.1 twice), one process each: the step writes node-1's script and the
    hostfile, waits at the rendezvous until the script is run (here by a thread, as a user would on the other
    host), then both train as one world of 2. Without the other node it fails with a one-line reason."""
    import socket
    import subprocess
    import threading
    import time

    from recipes.base import StepError

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    _fresh_train(chain)
    two_nodes = dict(preflight="false", method="lora", dataset="bundled", processes="1", nodes="2", hosts="127.0.0.1,127.0.0.1",
                     master_port=str(port), max_steps="4", save_steps="2", micro_batch="2", grad_accum="1",
                     val_ratio="0", activation_checkpointing="false")
    chain.step("choose_strategy", **two_nodes)
    tdir = chain.session.run_dir / "train"
    monkeypatch.setenv("YICHUI_RENDEZVOUS_TIMEOUT", "4")
    with pytest.raises(StepError) as e:
        chain.step("train")
    assert e.value.msg.key == "training.rendezvous_failed"
    assert (tdir / "launch" / "node-1.sh").exists()

    monkeypatch.setenv("YICHUI_RENDEZVOUS_TIMEOUT", "120")
    procs = []

    def other_node():
        script = tdir / "launch" / "node-1.sh"
        while not script.exists() or script.stat().st_mtime < started:
            time.sleep(0.2)
        procs.append(subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=600))

    started = time.time()
    (tdir / "launch" / "node-1.sh").unlink()
    t = threading.Thread(target=other_node, daemon=True)
    t.start()
    tr = chain.step("train")
    t.join(timeout=120)
    assert procs and procs[0].returncode == 0, procs and procs[0].stderr[-2000:]
    assert json.loads((tdir / "result.json").read_text())["processes"] == 2
    assert tr["steps"] == 4
    assert (tdir / "hostfile").read_text() == "127.0.0.1 slots=1\n127.0.0.1 slots=1\n"
    script = (tdir / "launch" / "node-1.sh").read_text()
    assert "--node_rank=1" in script and f"--master_port={port}" in script and "recipes.training.rendezvous" in script

    _fresh_train(chain)
    chain.step("choose_strategy", **two_nodes | {"hosts": "10.255.255.1,127.0.0.1"})
    with pytest.raises(StepError) as e:
        chain.step("train")
    assert e.value.msg.key == "training.master_not_here"


@pytest.mark.slow
def test_galore_and_padding_free_packing(chain, variant):
    """GaLore (every weight trained through transformers' galore_adamw, projection rank 8) with padding-free
    packing: a packed row carries several records, so a step sees more real tokens than the padded run, and the
    export copies the whole trained model."""
    seen = {}
    for packing in ("false", "true"):
        _fresh_train(chain)
        out = chain.step("choose_strategy", preflight="false", method="galore", galore_rank="8", dataset="bundled", processes="1", nodes="1",
                         max_steps="3", save_steps="3", micro_batch="2", grad_accum="1", val_ratio="0",
                         packing=packing, activation_checkpointing="false", learning_rate="1e-3")
        assert out["estimate"]["trainable"] > 0 and "galore" in out["estimate"]["approximate"]
        tr = chain.step("train")
        assert tr["steps"] == 3
        state = json.loads((Path(tr["train_dir"]) / "checkpoints" / "checkpoint-3" / "trainer_state.json").read_text())
        seen[packing] = [h["num_tokens"] for h in state["log_history"] if "num_tokens" in h][-1]
        events, _ = jobs.read_events(Path(tr["train_dir"]) / "events.jsonl")
        assert [e for e in events if e["event"] == "start"][-1]["optimizer"] == "galore_torch.adamw.AdamW"
    assert seen["true"] > 1.5 * seen["false"], seen
    exp = chain.step("export", formats="")
    assert Path(exp["merged_dir"], "model.safetensors").exists()


def test_hand_edited_lora_targets_are_refused_before_the_trainer_starts(variant):
    """The tester's N2 (issue 46): a done strategy hand-edited to LoRA targets the model does not have passed the
    load check (any names are text) and reached peft's raw NoMatchingPeftModuleError in the trainer on every resume.
    The train step checks them against the model's layers first: one line naming the known ones, and resume asks
    choose_strategy again."""
    c = variant
    c.session.steps["choose_strategy"]["outputs"]["training"]["lora_targets"] = "q_proj,nonexistent_proj"
    c.session.save()
    shutil.rmtree(c.session.run_dir / "train", ignore_errors=True)  # as the tester had it: no finished training to
    # reuse (the shared chain may have trained already; `variant` puts the folder back)
    with pytest.raises(StepError) as e:
        c.step("train")
    assert e.value.key == "memory.unknown_targets" and e.value.reask == "choose_strategy"
    assert e.value.params["targets"] == ["nonexistent_proj"] and "q_proj" in e.value.params["known"]
    assert not (c.session.run_dir / "train" / "trainer.pid.json").exists()
