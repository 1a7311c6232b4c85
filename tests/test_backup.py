"""The adapter backup job (recipes/training/backup.py) as its own process against the local hub's upload API, on a
train folder laid out by hand (no training: tests/steps/test_train.py runs it beside real trainers)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from recipes.hub.server import HubServer
from recipes.training import backup

REPO = Path(__file__).resolve().parents[1]


def _adapter(folder: Path, seed: int) -> None:
    folder.mkdir(parents=True)
    (folder / "adapter_model.safetensors").write_bytes(os.urandom(2048) + bytes([seed]))
    (folder / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "/local/base", "r": 8}))
    (folder / "optimizer.pt").write_bytes(b"states" * 100)  # never uploaded


def test_a_checkpoint_rotated_away_is_reported_the_rest_goes_up_and_a_rerun_sends_nothing_twice(tmp_path):
    tdir = tmp_path / "train"
    _adapter(tdir / "checkpoints" / "checkpoint-4", 4)
    _adapter(tdir / "adapter", 9)
    # the trainer saved checkpoint-2 and checkpoint-4; save_total_limit already removed checkpoint-2
    (tdir / "events.jsonl").write_text("".join(json.dumps({"v": 1, "time": 0, "event": "checkpoint", "step": k,
                                                           "path": f"checkpoints/checkpoint-{k}"}) + "\n"
                                               for k in (2, 4)))
    (tdir / "result.json").write_text(json.dumps({"adapter_dir": str(tdir / "adapter")}))
    backup.write_config(tdir, backup.AdapterBackup("hf", "me/adapter", 1, "org/base"), 2)
    with HubServer(tmp_path / "hub") as hub:
        env = dict(os.environ, HF_ENDPOINT=hub.url, HF_TOKEN="hf_" + "z" * 20, HF_HUB_DISABLE_XET="1",
                   HF_HOME=str(tmp_path / "hf"))
        for _ in range(2):  # the second run: a resume after everything went up
            r = subprocess.run([sys.executable, "-m", "recipes.training.backup", str(tdir)], cwd=REPO, env=env,
                               capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, r.stderr[-2000:]
        done = backup.summary(tdir)
        assert done["done"] and done["uploaded"] == ["checkpoints/checkpoint-4", "."], done
        assert "removed before its upload" in done["gave_up"]["checkpoints/checkpoint-2"]
        assert len(hub.hub.commits["me/adapter"]) == 2  # the second run sent nothing again
        repo = hub.hub.repo("me/adapter")
        assert json.loads((repo.folder / "adapter_config.json").read_text())["base_model_name_or_path"] == "org/base"
        assert not list(repo.folder.rglob("optimizer.pt"))
        assert (repo.folder / "checkpoints/checkpoint-4/adapter_model.safetensors").read_bytes() == \
            (tdir / "checkpoints/checkpoint-4/adapter_model.safetensors").read_bytes()
