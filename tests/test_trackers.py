"""Experiment trackers beside TensorBoard (issue 48): W&B offline, MLflow's local file store and SwanLab offline,
through the Trainer's own report_to integrations, in yichui's real trainer process on the tiny model. Each store is
read back with its own format — W&B's run file (its LevelDB-style log of protobuf records), MLflow's client, SwanLab's
backup records — and must hold the loss of every step the events hold and the memory scalars."""
from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys

import pytest

from recipes.training import trackers


def _wandb_history(run_file) -> list[dict]:
    """The history rows of a W&B run file: a 7-byte header (":W&B", magic, version), then LevelDB's log format —
    32 KiB blocks of records with a 7-byte header (CRC32C, length, type: 1 full, 2 first, 3 middle, 4 last) — whose
    payloads are wandb_internal_pb2.Record messages (wandb/proto/wandb_internal.proto)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data, pos, block, payloads, part = run_file.read_bytes(), 7, 32768, [], b""
    assert data[:4] == b":W&B"
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:  # a block's tail too short for a header is padding
            pos += left
            continue
        _crc, n, kind = struct.unpack("<IHB", data[pos:pos + 7])
        pos += 7
        if n == 0 and kind == 0:
            pos += left - 7
            continue
        part += data[pos:pos + n]
        pos += n
        if kind in (1, 4):
            payloads.append(part)
            part = b""
    rows = []
    for raw in payloads:
        rec = pb.Record()
        rec.ParseFromString(raw)
        if rec.WhichOneof("record_type") == "history":
            rows.append({i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in rec.history.item})
    return rows


@pytest.mark.slow  # it trains (≈ 30 s): the full suite runs it, the quick loop does not
@pytest.mark.skipif(not all(trackers.installed(n) for n in trackers.TRACKERS),
                    reason="./install.sh --dev installs the trackers")
def test_each_tracker_s_local_store_holds_every_step_s_loss_and_the_memory_scalars(tiny_model, tmp_path):
    from recipes import jobs
    from recipes.data import datasets
    from recipes.rundir import TrainDir
    from recipes.training.spec import TrainerJob

    run = TrainDir(tmp_path / "runs" / "20261205-120000-abcd" / "train")
    run.root.mkdir(parents=True)
    TrainerJob.from_dict({"method": "lora", "model_dir": str(tiny_model), "device": "cpu", "seq_len": 128,
                          "dataset_path": f"{datasets.bundled_dataset_path()}#24", "micro_batch": 4, "max_steps": 3,
                          "save_steps": 0, "sample_question": None, "trackers": list(trackers.TRACKERS)}
                         ).write(run.spec)
    home = tmp_path / "home"  # nothing of the trackers' lands in the user's home: caches, settings, telemetry
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "MLFLOW_", "SWANLAB_"))}
    p = subprocess.run([sys.executable, "-m", "recipes.training.worker", str(run.spec)], capture_output=True,
                       text=True, timeout=600, env=env | {"HOME": str(home)})
    assert p.returncode == 0, p.stderr[-3000:]
    events, _ = jobs.read_events(run.events)
    losses = {e["step"]: e["loss"] for e in events if e["event"] == "step"}
    assert sorted(losses) == [1, 2, 3]
    assert not [str(f) for f in home.rglob("*") if re.search(r"wandb|mlflow|swanlab", str(f))]

    # W&B: the offline run, named after the run id, each step's train/loss and the memory scalar at its step
    wandb_files = list(trackers.store("wandb", run.trackers).glob("offline-run-*-20261205-120000-abcd/run-*.wandb"))
    assert len(wandb_files) == 1, list(run.trackers.rglob("*"))
    rows = _wandb_history(wandb_files[0])
    got = {r["train/global_step"]: r["train/loss"] for r in rows if "train/loss" in r}
    assert got == pytest.approx(losses, abs=1e-4)
    mem = [r["train/memory/cpu_peak_rss_gib"] for r in rows if "train/memory/cpu_peak_rss_gib" in r]
    assert len(mem) == 3 and all(m > 0.1 for m in mem)

    # MLflow: read with its own client from the local file store
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=trackers.store("mlflow", run.trackers).resolve().as_uri())
    exp = client.get_experiment_by_name(trackers.PROJECT)
    (found,) = client.search_runs([exp.experiment_id])
    assert found.info.run_name == "20261205-120000-abcd"
    assert {m.step: m.value for m in client.get_metric_history(found.info.run_id, "loss")} == \
        pytest.approx(losses, abs=1e-4)
    mem = client.get_metric_history(found.info.run_id, "memory/cpu_peak_rss_gib")
    assert len(mem) == 3 and all(m.value > 0.1 for m in mem)

    # SwanLab: the offline run's backup, one JSON record per line after a binary frame header
    (backup,) = trackers.store("swanlab", run.trackers).glob("run-*/backup.swanlab")
    scalars = [json.loads(m) for m in re.findall(rb'\{"model_type": "Scalar".*', backup.read_bytes())]
    got = {s["data"]["step"]: s["data"]["metric"]["data"] for s in scalars if s["data"]["key"] == "train/loss"}
    assert got == pytest.approx(losses, abs=1e-4)
    assert sum(s["data"]["key"] == "train/memory/cpu_peak_rss_gib" for s in scalars) == 3


def test_an_unknown_tracker_is_refused_and_the_view_commands_name_each_store(tmp_path):
    from recipes.base import Refusal
    from recipes.training.spec import TrainerJob

    with pytest.raises(Refusal) as e:
        TrainerJob.from_dict({"trackers": ["wandb", "neptune"]}).check()
    assert e.value.key == "training.bad_choice" and e.value.params["value"] == "neptune"
    TrainerJob.from_dict({"trackers": ["mlflow"]}).check()
    env = trackers.environment(["wandb", "mlflow", "swanlab"], tmp_path, "run-1")
    assert env["WANDB_MODE"] == "offline" and env["SWANLAB_MODE"] == "offline" and env["DO_NOT_TRACK"] == "true"
    assert not any("KEY" in k for k in env)  # no key asked for, none passed on
    from pathlib import Path

    for name in trackers.TRACKERS:
        command = trackers.view_command(name, tmp_path)
        assert str(trackers.store(name, tmp_path)) in command or \
            trackers.store(name, tmp_path).resolve().as_uri() in command
        program = next(w for w in command.split() if "=" not in w)  # as printed: runnable without PATH
        assert Path(program).is_absolute() and (Path(program).exists() or not trackers.installed(name)), command
