"""Periodic adapter backup to a hub (issue 23; the article: "定期上传 LoRA 权重至 ModelScope"): a detached job beside
the trainer that pushes every Nth checkpoint's adapter, and the final one, to a Hugging Face or ModelScope repository
through the hub's own client. Entry point: ``python -m recipes.training.backup TRAIN_DIR``, started by the train step
(recipes/train.py). Training never waits for it (another process); it resumes (what went up is in
``backup.jsonl``; a restarted job skips it, and tries again what an earlier job gave up); a failed upload is retried
and reported, never stops training.

Layout of the repository: ``checkpoints/checkpoint-N/`` per backed-up checkpoint, the final adapter at the root (so
the repository loads as the adapter: ``PeftModel.from_pretrained(base, repo)``). Only the adapter's own files go up
(ADAPTER_FILES), never the optimizer states. The token comes from the environment only (TOKEN_VARS), read by the
client itself: it never reaches the spec, the session or the log.

Files in TRAIN_DIR: ``backup.json`` (the :class:`AdapterBackup` and the save interval), ``backup.jsonl`` (events:
``uploaded`` {path_in_repo, seconds, files}, ``failed`` {path_in_repo, attempt, attempts, error}, ``gave_up``
{path_in_repo, error}, ``done``), ``backup.log`` and ``backup.pid.json`` (recipes/jobs.py).
"""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from recipes.rundir import TrainDir

HUBS = ("hf", "modelscope")  # select_model.source's names for the same hubs
HUB_NAMES = {"hf": "Hugging Face", "modelscope": "ModelScope"}
TOKEN_VARS = {"hf": "HF_TOKEN", "modelscope": "MODELSCOPE_API_TOKEN"}
ADAPTER_FILES = ["adapter_model.safetensors", "adapter_config.json", "adapter_model.bin"]
ATTEMPTS = 8            # per upload and job, then it is given up and reported (training goes on)
FIRST_WAIT_S = 2.0      # between attempts: 2, 4, … 60 s, ~3.5 min in all (a hub outage, a dropped link)
MAX_WAIT_S = 60.0
POLL_S = 2.0


@dataclass(frozen=True)
class AdapterBackup:
    """Where the adapters go: ``hub`` (one of HUBS), ``repo_id`` ("org/name", created private if missing),
    ``every``: every Nth checkpoint (checkpoint-k goes up when k / save_steps is a multiple of it)."""

    hub: str
    repo_id: str
    every: int = 1
    base_model: str | None = None  # the base's hub id, written into the uploaded adapter_config.json

    @property
    def token_var(self) -> str:
        return TOKEN_VARS[self.hub]


def write_config(tdir: Path, backup: AdapterBackup, save_steps: int) -> None:
    TrainDir(tdir).backup_choice.write_text(json.dumps(asdict(backup) | {"save_steps": save_steps}))


def read_config(tdir: Path) -> tuple[AdapterBackup, int]:
    d = json.loads(TrainDir(tdir).backup_choice.read_text())
    return AdapterBackup(d["hub"], d["repo_id"], int(d.get("every", 1)), d.get("base_model")), int(d["save_steps"])


def events(tdir: Path) -> list[dict]:
    from recipes import jobs

    return jobs.read_events(TrainDir(tdir).backup_events)[0]


def uploaded(tdir: Path) -> set[str]:
    """The paths in the repository already uploaded: not sent again, by this job or a later one."""
    return {e["path_in_repo"] for e in events(tdir) if e["event"] == "uploaded"}


def due(tdir: Path, backup: AdapterBackup, save_steps: int, skip: set[str]) -> list[tuple[Path, str]]:
    """(local folder, path in the repository) still to upload, ``skip`` left out: the checkpoints the trainer
    wrote (its ``checkpoint`` events) whose number is a multiple of ``save_steps × every``, oldest first — one
    rotated away before its turn is still listed, and reported as such — then the final adapter once the trainer
    wrote result.json."""
    from recipes import jobs

    steps = {e["step"] for e in jobs.read_events(TrainDir(tdir).events)[0] if e["event"] == "checkpoint"}
    out = [(TrainDir(tdir).checkpoints / f"checkpoint-{k}", f"checkpoints/checkpoint-{k}") for k in sorted(steps)
           if k % (save_steps * backup.every) == 0]
    result = TrainDir(tdir).result
    if result.is_file():
        adapter = json.loads(result.read_text()).get("adapter_dir")
        if adapter and Path(adapter).is_dir():
            out.append((Path(adapter), "."))
    done = uploaded(tdir) | skip
    return [(f, p) for f, p in out if p not in done]


def upload(backup: AdapterBackup, folder: Path, path_in_repo: str) -> list[str]:
    """Upload ``folder``'s adapter files to ``path_in_repo`` of the repository (created private first if missing).
    Returns the files sent.

    Raises:
        FileNotFoundError: no adapter file in ``folder`` (the trainer removed the checkpoint meanwhile).
        Exception: whatever the hub's client raises (HTTP errors, no token, a dropped link).
    """
    files = [n for n in ADAPTER_FILES if (folder / n).is_file()]
    if not files:
        raise FileNotFoundError(f"{folder.name} was removed before its upload (save_total_limit keeps the last K)")
    if backup.base_model and (folder / "adapter_config.json").is_file():
        folder = _with_hub_base(folder, files, backup.base_model)
    message = f"yichui: adapter {path_in_repo if path_in_repo != '.' else 'final'}"
    where = "" if path_in_repo == "." else path_in_repo  # the repository's root
    if backup.hub == "hf":
        from huggingface_hub import HfApi

        api = HfApi()  # endpoint (HF_ENDPOINT) and token (HF_TOKEN) from the environment
        api.create_repo(backup.repo_id, private=True, exist_ok=True)
        api.upload_folder(repo_id=backup.repo_id, folder_path=folder, path_in_repo=where, allow_patterns=files,
                          commit_message=message)
    else:
        from modelscope.hub.api import HubApi

        # passed explicitly: modelscope_hub reads its environment once per process, at first use
        ms = HubApi(endpoint=os.environ.get("MODELSCOPE_ENDPOINT"), token=os.environ.get(backup.token_var))
        # first, alone: its upload_folder turns a refused token into a generic "files failed to upload"
        ms.create_repo(backup.repo_id, visibility="private", exist_ok=True)
        # use_cache=False: its upload cache would be written into the checkpoint folder
        ms.upload_folder(repo_id=backup.repo_id, folder_path=str(folder), path_in_repo=where, allow_patterns=files,
                         commit_message=message, use_cache=False)
    return files


def _with_hub_base(folder: Path, files: list[str], base_model: str) -> Path:
    """A copy of ``folder``'s adapter files (hard links where possible) whose adapter_config.json names the base by
    its hub id instead of the local folder peft recorded, so the uploaded adapter loads anywhere."""
    import os
    import shutil
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix=".backup-", dir=folder.parent))
    for n in files:
        if n == "adapter_config.json":
            cfg = json.loads((folder / n).read_text())
            cfg["base_model_name_or_path"] = base_model
            (tmp / n).write_text(json.dumps(cfg, indent=2) + "\n")
        else:
            try:
                os.link(folder / n, tmp / n)
            except OSError:
                shutil.copy2(folder / n, tmp / n)
    return tmp


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {text}"[:300]


def run(tdir: Path) -> int:
    """Upload what is due until the final adapter is settled (exit 0), or the trainer is gone without a result
    (exit 0: a resume starts this job again and it goes on where it was; what this job gave up is tried again)."""
    import shutil

    from recipes import jobs
    from recipes.training.worker import Events

    backup, save_steps = read_config(tdir)
    ev = Events(TrainDir(tdir).backup_events, None)
    tries: dict[str, int] = {}
    given_up: set[str] = set()
    while True:
        for folder, path in due(tdir, backup, save_steps, given_up):
            t0 = time.time()
            try:
                files = upload(backup, folder, path)
            except FileNotFoundError as e:  # the checkpoint was rotated away (save_total_limit) before its turn
                given_up.add(path)
                ev.emit("gave_up", path_in_repo=path, error=_first_line(e))
                continue
            except Exception as e:  # noqa: BLE001 - any client error: retried, then reported; training goes on
                tries[path] = tries.get(path, 0) + 1
                ev.emit("failed", path_in_repo=path, attempt=tries[path], attempts=ATTEMPTS, error=_first_line(e))
                if tries[path] >= ATTEMPTS:
                    given_up.add(path)
                    ev.emit("gave_up", path_in_repo=path, error=_first_line(e))
                else:
                    time.sleep(min(FIRST_WAIT_S * 2 ** (tries[path] - 1), MAX_WAIT_S))
                break  # due() again: a newer checkpoint may have come meanwhile, and order stays oldest first
            finally:
                for tmp in folder.parent.glob(".backup-*"):  # the copy _with_hub_base made
                    shutil.rmtree(tmp, ignore_errors=True)
            ev.emit("uploaded", path_in_repo=path, seconds=round(time.time() - t0, 2), files=files)
        else:
            if "." in uploaded(tdir) | given_up:
                ev.emit("done")
                return 0
            trainer = jobs.read(TrainDir(tdir).job())
            if not TrainDir(tdir).result.is_file() and (trainer is None or not trainer.alive()):
                return 0
            time.sleep(POLL_S)


def summary(tdir: Path) -> dict:
    """What went up so far: ``uploaded`` (paths), ``gave_up`` ({path: error}, not uploaded since), ``failing``
    ({path: (attempt, attempts, error)} of uploads failing now), ``done`` (the last job settled the final adapter)."""
    evs = events(tdir)
    up = [e["path_in_repo"] for e in evs if e["event"] == "uploaded"]
    gave = {e["path_in_repo"]: e["error"] for e in evs if e["event"] == "gave_up" and e["path_in_repo"] not in up}
    failing = {e["path_in_repo"]: (e["attempt"], e.get("attempts", ATTEMPTS), e["error"]) for e in evs
               if e["event"] == "failed" and e["path_in_repo"] not in up and e["path_in_repo"] not in gave}
    return {"uploaded": up, "gave_up": gave, "failing": failing, "done": bool(evs) and evs[-1]["event"] == "done"}


if __name__ == "__main__":
    # adapters are a few MiB: the LFS path (the client's own fallback) instead of the Xet protocol; read at import
    os.environ.setdefault("HF_HUB_DISABLE_XET", "1")
    sys.exit(run(Path(sys.argv[1])))
