"""Step 3 — download the chosen revision: file selection, free-disk check, byte progress, sha256 check, commit
recorded. A local model is used where it lies."""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from recipes import hub
from recipes.base import Question, StepError, msg

name = "download"
requires = ("select_model",)
DISK_MARGIN = 1.05  # free disk must cover what remains + 5 %


def _default_dir(ctx) -> str | None:
    sel = ctx.outputs("select_model")
    if sel.get("source") in ("local", None) or not sel.get("repo_id"):
        return None
    return str(ctx.home / "models" / sel["source"] / sel["repo_id"])


def questions(ctx) -> list[Question]:
    remote = ctx.outputs("select_model").get("source") != "local"
    return [Question("local_dir", "path", "download.local_dir", default=_default_dir(ctx), when=lambda a: remote)]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def run(ctx, answers: dict) -> dict:
    sel = ctx.outputs("select_model")
    if sel["source"] == "local":
        path = Path(sel["local_path"]).expanduser().resolve()
        ctx.info(msg("download.local", path=str(path)))
        return {"model_dir": str(path), "commit": None, "files": [], "bytes": 0}
    source, repo, endpoint = sel["source"], sel["repo_id"], sel["endpoint"]
    local_dir = Path(answers["local_dir"]).expanduser().resolve()
    commit, files = hub.list_files(source, repo, endpoint, sel.get("revision", "main"))
    files = hub.select_files(files)
    total = sum(f.size for f in files)
    have = sum(f.size for f in files if (local_dir / f.path).is_file() and (local_dir / f.path).stat().st_size == f.size)
    local_dir.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(local_dir).free
    if free < (total - have) * DISK_MARGIN:
        raise StepError("download.no_space", need=f"{(total - have) * DISK_MARGIN / 2**30:.2f}",
                        free=f"{free / 2**30:.2f}", path=str(local_dir))
    ctx.info(msg("download.plan", n=len(files), gib=f"{total / 2**30:.3f}", repo=repo,
                 commit=(commit or "")[:12] or sel.get("revision", "main"), path=str(local_dir)))
    fetch_rev = commit if source == "hf" else sel.get("revision", "main")
    with ctx.progress(msg("download.progress", repo=repo), total=total, unit="B") as bar:
        for f in files:
            hub.download_file(source, repo, f, endpoint, fetch_rev, local_dir, bar)
    for f in files:
        target = local_dir / f.path
        if not target.is_file() or target.stat().st_size != f.size:
            raise StepError("download.incomplete", file=f.path)
        if f.sha256 and _sha256(target) != f.sha256:
            target.unlink()
            raise StepError("download.bad_hash", file=f.path)
    return {"model_dir": str(local_dir), "commit": commit, "revision": sel.get("revision", "main"), "bytes": total,
            "files": [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in files]}


def is_done(ctx, record: dict) -> bool:
    out = record["outputs"]
    d = Path(out.get("model_dir") or "/nonexistent")
    return (d / "config.json").is_file() and all(
        (d / f["path"]).is_file() and (d / f["path"]).stat().st_size == f["size"] for f in out.get("files", []))
