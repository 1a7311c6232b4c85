"""A repository snapshot on disk: list a revision, select its files, check the disk, fetch them with yichui's
downloader (recipes/hub/downloader.py), verify them, and record what arrived.

The download step fetches a model with it, `yichui download` anything, the select_model step the model's small files
(:func:`fetch_metadata`), the strategy step a dataset and the evaluate step a benchmark's data.
"""
from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

from recipes.base import StepError, msg
from recipes.hub import client as hub
from recipes.hub import downloader

DISK_MARGIN = 1.05  # free disk must cover what remains + 5 %
# the small files (config, tokenizer, chat template, generation config) fetched before the weights: what the memory
# model, the chat-template check and the preflight smoke run need; weights and anything over 64 MiB are left out
METADATA_INCLUDE = ["*.json", "*.jinja", "tokenizer*", "*.model", "*.tiktoken", "*.txt"]
METADATA_EXCLUDE = ["*.safetensors", "*.bin", "*.pt", "*.pth", "*.gguf", "*.h5", "*.msgpack", "original/*", "*/*"]
METADATA_MAX_BYTES = 64 * 2**20


# Errors that say the user's own input is wrong (exit 2, as a bad answer in a session); every other error of a
# download is a failure of the world — network, hub, access, disk, hash — and exits 1 (wizard/README.md, exit status)
BAD_INPUT = frozenset({"hub.no_such_model", "hub.no_such_dataset", "hub.no_such_revision", "hub.nothing_selected"})


def size_text(n: int) -> str:
    """Bytes for a person: ``512 B``, ``3.4 MiB``, ``1.25 GiB`` (MiB = 2^20, GiB = 2^30 bytes)."""
    if n < 1 << 20:
        return f"{n} B" if n < 1 << 10 else f"{n / (1 << 10):.1f} KiB"
    return f"{n / (1 << 20):.1f} MiB" if n < 1 << 30 else f"{n / (1 << 30):.2f} GiB"


def remaining_bytes(local_dir: Path, files: list[hub.RemoteFile]) -> int:
    """Bytes still to fetch: complete files count 0, partial ones what their sidecar has not recorded yet."""
    return sum(0 if downloader.is_complete(local_dir / f.path, f.size, f.sha256, f.git_sha1)
               else max(0, f.size - downloader.recorded_bytes(local_dir / f.path, f.size, f.sha256)) for f in files)


def fetch(source: str, repo_id: str, endpoint: str, revision: str, local_dir: Path, progress, say,
          repo_type: str = "model", include: list[str] | None = None, exclude: list[str] | None = None,
          stop: threading.Event | None = None, seed: Path | None = None, max_file_bytes: int | None = None,
          title: str = "hub.progress") -> dict:
    """List, select, check the disk, download and verify. Returns the outputs recorded in the session.

    Args:
        seed: a folder holding verified files of the same commit (the metadata fetched by select_model): those are
            copied instead of fetched again.
        max_file_bytes: leave out files larger than this.
        title: the catalogue key of the progress view's title.
        progress: a context-manager factory ``progress(description, total, unit)`` whose handle has ``update`` and
            ``file(path, total)`` (wizard.console.UI.progress).
        say: prints one catalogue message.

    Raises:
        StepError: anything the user must act on (no such repo or file, access, disk, network, hash).
        KeyboardInterrupt: Ctrl-C; partial files and their sidecars stay for the next run.
    """
    local_dir = Path(local_dir).expanduser().resolve()
    commit, listed = hub.list_files(source, repo_id, endpoint, revision, repo_type)
    # Hugging Face URLs pin the commit, so every file comes from one snapshot; ModelScope takes branch or tag names
    ref = commit if source == "hf" and commit else revision
    url = lambda f: hub.file_url(source, repo_id, endpoint, ref, f.path, repo_type)  # noqa: E731
    files = hub.select_files(listed, include, exclude)
    for f in files:  # before any request names the file
        downloader.safe_relpath(f.path)
    unknown = [f for f in files if f.size is None]
    if unknown:  # a listing of names only: each file's HEAD tells its size (never taken as 0) and what hash it can
        say(msg("hub.describing", n=len(unknown)))
        head = downloader.Downloader(local_dir, hub.auth_headers(source), stop=stop)
        for f in unknown:
            it = head.describe(downloader.Item(f.path, url(f), 0, f.sha256, f.git_sha1))
            f.size, f.sha256, f.git_sha1 = it.size, it.sha256, it.git_sha1
        unhashed = [f.path for f in unknown if not f.sha256 and not f.git_sha1]
        if unhashed:
            say(msg("hub.size_only", n=len(unhashed), files=list(unhashed[:3])))
    files = [f for f in files if max_file_bytes is None or f.size <= max_file_bytes]
    if not files:
        raise StepError("hub.nothing_selected", repo=repo_id, n=len(listed))
    total = sum(f.size for f in files)
    local_dir.mkdir(parents=True, exist_ok=True)
    left = remaining_bytes(local_dir, files)  # what is still to be written here, by a copy (seed) or a download
    free = shutil.disk_usage(local_dir).free
    if free < left * DISK_MARGIN:  # refused before any file is written, the lock's too
        raise StepError("hub.no_space", need=size_text(int(left * DISK_MARGIN)), free=size_text(free),
                        path=str(local_dir))
    with downloader.folder_lock(local_dir):  # before the first line about the folder: a second run says busy
        seeded = _seed(local_dir, Path(seed), files) if seed else 0
        left = remaining_bytes(local_dir, files)
        say(msg("hub.plan", n=len(files), size=size_text(total), repo=repo_id, commit=(commit or revision)[:12],
                path=str(local_dir), left=size_text(left)))
        if 0 < left < total:  # an earlier run's bytes: said, so that a user sees the download continue, not restart
            say(msg("hub.resuming", size=size_text(total - left)))
        items = [downloader.Item(f.path, url(f), f.size, f.sha256, f.git_sha1) for f in files]
        with progress(msg(title if left else "hub.verify", repo=repo_id), total, "B") as bar:
            bar.update(completed=total - left)
            subs: dict = {}

            sizes = {f.path: f.size for f in files}

            def on_file(path: str, status: str) -> None:
                if status == "start":
                    subs[path] = bar.file(path, sizes[path])
                elif status == "done" and path in subs:
                    subs.pop(path).done()
                elif status == "refetch":
                    say(msg("hub.refetch", file=path))

            def on_bytes(path: str, n: int) -> None:
                bar.update(advance=n)
                if path in subs:
                    subs[path].update(advance=n)

            d = downloader.Downloader(local_dir, hub.auth_headers(source), commit, on_bytes=on_bytes, on_file=on_file,
                                      stop=stop)
            stats = d.fetch(items)
        return {"model_dir": str(local_dir), "source": source, "repo_type": repo_type, "commit": commit,
                "revision": revision, "bytes": total, "fetched_bytes": stats["fetched_bytes"], "copied_bytes": seeded,
                "files": [{"path": f.path, "size": f.size, "sha256": f.sha256, "git_sha1": f.git_sha1} for f in files]}


def _seed(local_dir: Path, seed: Path, files: list[hub.RemoteFile]) -> int:
    """Copy files already fetched (and verified) into ``seed`` that ``local_dir`` lacks, when size and hash match
    the listing; returns the bytes copied."""
    copied = 0
    if seed.resolve() == local_dir:
        return 0
    for f in files:
        src, dest = seed / f.path, local_dir / f.path
        if downloader.is_complete(dest, f.size, f.sha256, f.git_sha1) or \
                not downloader.is_complete(src, f.size, f.sha256, f.git_sha1):
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(dest.name + ".seed.tmp")
        shutil.copyfile(src, tmp)
        os.replace(tmp, dest)
        if f.sha256 or f.git_sha1:
            downloader.record_verified(dest, f.sha256, f.git_sha1)
        copied += f.size
    return copied


def fetch_metadata(home: Path, progress, sel: dict) -> tuple[Path, str | None]:
    """The small files of the chosen revision (METADATA_INCLUDE: config, tokenizer, chat template; the model's own
    ``*.py`` too when the user trusts its code) into ``YICHUI_HOME/meta/<source>/<repo>/<commit>``, without the
    weights (``home``: YICHUI_HOME; ``progress``: as :func:`fetch`'s). Returns (folder, commit); a local model is its
    own folder.

    Raises:
        StepError: as :func:`fetch`.
    """
    if sel.get("source") == "local":
        return Path(sel["local_path"]), None
    commit, _ = hub.list_files(sel["source"], sel["repo_id"], sel["endpoint"], sel.get("revision", "main"))
    dest = home / "meta" / sel["source"] / sel["repo_id"] / (commit or sel.get("revision", "main"))
    include = METADATA_INCLUDE + (["*.py"] if sel.get("trust_remote_code") else [])
    fetch(sel["source"], sel["repo_id"], sel["endpoint"], sel.get("revision", "main"), dest, progress,
          lambda m: None, include=include, exclude=METADATA_EXCLUDE, max_file_bytes=METADATA_MAX_BYTES,
          title="hub.metadata_progress")
    return dest, commit
