"""A model hub on 127.0.0.1 that speaks the Hugging Face and ModelScope HTTP APIs, serving folders from disk: the
demo's hub and the tests'. Entry point too: ``python -m recipes.hub.server ROOT [--port N] [--faults F.json]``.

`yichui demo` serves the embedded tiny model from it and downloads it with the real hub clients, the path a real user
takes; the tests use it as their hub (the real hubs are unreachable there). Layout of ``root``: ``<org>/<name>/<files>``,
each such folder one model repository whose commit is a hash of its file list (path, sha256).

Endpoints, as the clients in huggingface_hub 2.4 and modelscope 1.40 call them (../shared/FACTS.md):

Hugging Face
    GET  /api/models/{repo}[/revision/{rev}]        model info: ``sha``, ``siblings``
    GET  /api/models/{repo}/tree/{rev}[/{path}]     files with ``size``, ``oid`` (git blob sha1), ``lfs.oid`` (sha256)
    HEAD /{repo}/resolve/{rev}/{path}               ``X-Repo-Commit``, ``ETag``, ``Content-Length``, ``Accept-Ranges``
    GET  /{repo}/resolve/{rev}/{path}               bytes, with ``Range: bytes=a-b`` → 206
    errors: 404 with ``X-Error-Code`` RepoNotFound / RevisionNotFound / EntryNotFound
  uploads (``HF_HUB_DISABLE_XET=1``: with xet the client asks ``GET …/xet-write-token/{rev}``, gets 404 and fails)
    POST /api/validate-yaml       {content, repoType}: asked first when the folder has a README.md → ``errors`` [],
                                  ``warnings`` [] (the metadata is not checked; no token needed)
    POST /api/repos/create        {name, organization, type?} → ``url``; exists: 409 with ``url`` (exist_ok)
    POST /api/models/{repo}/preupload/{rev}   {files: [{path, size, sample}]} → ``files[]``: path, ``uploadMode``
                                  ("lfs": an LFS suffix or ≥ 10 MiB; else "regular"), ``shouldIgnore`` false, ``oid``
                                  of the file already there (sha256 / git sha1): the client skips an unchanged file
    POST /{repo}.git/info/lfs/objects/batch   {operation, objects: [{oid, size}]} → ``objects[]``: oid, size and,
                                  unless stored already, ``actions.upload.href`` (a signed PUT here) and ``verify``
    PUT  /_yichui/lfs/{oid}?size=&Expires=&Signature=   the bytes (chunked too); sha256 or size ≠ the URL's → 400
    POST /{repo}.git/info/lfs/objects/verify  {oid, size} → 200 once stored, else 404
    POST /api/models/{repo}/commit/{rev}      NDJSON: ``header`` {summary, parentCommit?}, ``file`` {path, content
                                  base64}, ``lfsFile`` {path, oid, size}, ``deletedFile`` / ``deletedFolder`` {path}
                                  → ``commitOid``, ``commitUrl``; a stale parentCommit → 412
    without a token: 401 ``{"error": "Invalid username or password."}`` (a token the ``write_token`` mode does not
    know: "Invalid credentials in Authorization header"), which the client raises as HfHubHTTPError
ModelScope
    GET  /api/v1/models/{repo}/repo/files?Revision=&Recursive=    ``Data.Files[]``: Path, Name, Type, Size, Sha256
    GET  /api/v1/models/{repo}/repo?Revision=&FilePath=           bytes, with Range
    GET  /api/v1/models/{repo}[/revisions]                        model info and revisions
  uploads (``upload_folder`` creates the repository first, ignoring errors; it calls no login or user endpoint)
    POST /api/v1/models           {Path, Name, Visibility, License} → ``Data`` {Path, Name}; exists: 400 with
                                  ``Code`` 10010101001 (the client's AlreadyExistsError, exist_ok)
    POST /api/v1/repos/models/{repo}/info/lfs/objects/batch   as Hugging Face's (the PUT carries the token too)
    POST /api/v1/repos/models/{repo}/commit/{rev}   {commit_message, actions: [{action: create|update|delete,
                                  path, type: normal|lfs, size, sha256, content (base64)}]} → ``Success`` true
    without a token: 401 with ``Code`` 10010103009 (AuthenticationError)
Uploads on both: a path in the repository that is absolute, has a ``.``/``..``/empty part or leads out → 400. A commit
writes each file to a hidden temp file renamed over its path (downloads see it at once, never half of it) and is
recorded in ``Hub.commits[repo_id]`` ({paths, deleted, message}). LFS objects are kept by sha256 in
``root/.yichui-lfs``. ``POST /api/repos/create`` with ``type`` "dataset" creates ``root/datasets/<org>/<name>``.

Datasets live under ``root/datasets/<org>/<name>`` and are served at the same paths with ``/api/datasets/…`` and
``/datasets/{repo}/resolve/…`` (Hugging Face) or ``/api/v1/datasets/{repo}/repo/tree`` and ``…/repo?FilePath=``
(ModelScope).

As the real Hub, the model info lists each file's ``size``, ``blobId`` and ``lfs`` only when asked with
``blobs=true`` (huggingface_hub's ``files_metadata=True``); without, file names only.

Modes, for tests and benchmarks: ``POST /_yichui/modes`` with a JSON object, ``DELETE /_yichui/modes`` to clear:
``{"listing": "names"}`` lists file names without sizes or hashes on both hubs (a mirror that ignores ``blobs``, a
proxy that rewrites listings), while each file's HEAD still tells its size and ETag; ``{"head_size": false}``
answers a file's HEAD without ``Content-Length`` or ``X-Linked-Size`` (a proxy that strips them).
``{"private": TOKEN}`` answers every API and file request without ``Authorization: Bearer TOKEN`` as each hub answers
for a private repository: HTTP 401 with ``X-Error-Code: RepoNotFound`` (Hugging Face: a private repository looks
missing) or ModelScope's error envelope (code 10010103009).
``{"write_token": TOKEN}`` accepts uploads with that Bearer token only (without the mode: any non-empty token).
``{"cdn": true}`` answers a large (LFS) file's ``resolve`` with a 302 to storage on another host (``localhost`` on
the second port, as the Hub redirects to its CDN) carrying ``X-Linked-Size``, ``X-Linked-Etag`` (sha256) and
``X-Repo-Commit``; storage serves the bytes only behind the signed URL until it expires (``"cdn_ttl"`` seconds,
default 3600; ``"cdn_expired": n`` hands out the first n links already expired) and answers 403 otherwise, as signed
storage URLs do. ``Hub.cdn_auth`` records the Authorization header of every storage request (a token must not go
there).

Faults, for tests and benchmarks (loopback only): ``POST /_yichui/faults`` with a JSON list of rules, each
``{"path": glob, "drop_after": bytes, "throttle": bytes per s, "corrupt_at": file offset, "status": code,
"error_code": X-Error-Code, "retry_after": Retry-After header (with a status), "ignore_range": bool, "times": n}``
applied to file responses (``times``: to the first n matching responses; absent: to all). A rule with
``"upload": true`` (any upload request) or a stage (``"create"``, ``"preupload"``, ``"batch"``, ``"lfs"``: the PUT,
``"verify"``, ``"commit"``) applies to uploads instead (its ``status``, ``error_code`` and ``retry_after``); its glob
matches a path in the repository of the commit's or preupload's files, or ``*`` a request without one.
A rule with ``"api": true`` applies its ``status`` to API requests instead (model info, listings: both hubs; its
glob matches the request's path, e.g. ``/api/models/*``). ``DELETE /_yichui/faults`` clears them; ``GET /_yichui/stats`` returns the bytes sent per file and the request count;
``DELETE /_yichui/stats`` resets them.

Run standalone: ``python -m recipes.hub.server ROOT [--port P] [--faults FILE.json]`` prints its URL on the first line
of stdout.
"""
from __future__ import annotations

import argparse
import base64
import email.utils
import fnmatch
import hashlib
import hmac
import json
import os
import re
import shutil
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import parse_qs, unquote, urlparse

LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".h5", ".msgpack", ".onnx")
LFS_MIN_SIZE = 10 << 20  # the Hub stores a file this large in LFS whatever its name
CHUNK = 1 << 20
REPO_ID = r"[\w-][\w.-]*/[\w-][\w.-]*"  # org/name: no part starts with a dot (no "..", no hidden folder)


def weights_header(total: int) -> bytes:
    """The first bytes of a ``total``-byte safetensors file holding one uint8 tensor over the rest (8-byte length,
    then the JSON header, padded to 8): tests and benchmarks write random bytes after it, a file as large as they
    need that still opens as safetensors (the downloader checks that)."""
    head = b""
    for _ in range(2):  # the header names the body's length, which the header's own length decides
        body = total - 8 - len(head)
        head = json.dumps({"w": {"dtype": "U8", "shape": [body], "data_offsets": [0, body]}}).encode()
        head += b" " * (-len(head) % 8)
    return len(head).to_bytes(8, "little") + head


def _git_blob_sha1(path: Path, size: int) -> str:
    h = hashlib.sha1(b"blob %d\0" % size)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:  # a commit's temp file, renamed meanwhile
        return 0.0


class Repo:
    """One served repository: its files with size, sha256 and git blob id, and a commit derived from them."""

    def __init__(self, repo_id: str, folder: Path):
        self.id, self.folder = repo_id, folder
        self.files: dict[str, dict] = {}
        for p in sorted(folder.rglob("*")):
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts):
                rel = p.relative_to(folder).as_posix()
                size = p.stat().st_size
                self.files[rel] = {"size": size, "sha256": _sha256(p), "oid": _git_blob_sha1(p, size),
                                   "lfs": rel.endswith(LFS_SUFFIXES)}
        self.commit = hashlib.sha1(json.dumps([(k, v["sha256"]) for k, v in self.files.items()]).encode()).hexdigest()
        self.mtime = email.utils.formatdate(max(_mtime(folder / f) for f in self.files) if self.files else 0,
                                            usegmt=True)

    def hf_entry(self, path: str) -> dict:
        f = self.files[path]
        e = {"type": "file", "oid": f["oid"], "size": f["size"], "path": path}
        if f["lfs"]:
            e["lfs"] = {"oid": f["sha256"], "size": f["size"], "pointerSize": 134}
        return e

    def etag(self, path: str) -> str:
        f = self.files[path]
        return f'"{f["sha256"] if f["lfs"] else f["oid"]}"'


class StaleParent(Exception):
    """A commit's parent is not the branch's head any more."""


def repo_path(folder: Path, path: str) -> str | None:
    """``path`` if it names a file inside the repository at ``folder``: relative, no ``.``/``..``/empty part, not
    under or over an existing file, not led out by a symlink. The client sends it: trust nothing."""
    parts = path.split("/")
    if not path or "\\" in path or "\0" in path or any(p in ("", ".", "..") for p in parts):
        return None
    target = folder / path
    try:
        target.resolve().relative_to(folder.resolve())
    except ValueError:
        return None
    if target.is_dir() or any((folder.joinpath(*parts[:i])).is_file() for i in range(1, len(parts))):
        return None
    return path


class Hub:
    """The repositories under ``root`` (re-scanned when a folder's listing changes)."""

    def __init__(self, root: Path, faults: list[dict] | None = None):
        self.root = Path(root)
        self._cache: dict[str, tuple[float, Repo]] = {}
        self._lock = threading.Lock()
        self.requests: list[tuple[str, str, str | None]] = []  # (method, path, Range header): for tests and logs
        self.faults: list[dict] = list(faults or [])
        self.modes: dict = {}
        self.bytes_sent: dict[str, int] = {}
        self.cdn_url = ""  # storage's base URL (HubServer sets it)
        self.cdn_auth: list[str | None] = []  # the Authorization header of each storage request
        self.cdn_refused: list[str] = []  # why storage refused a request (expired, bad signature)
        self.commits: dict[str, list[dict]] = {}  # repo id → each commit's {"paths", "deleted", "message"}: for tests
        self.lfs_store = self.root / ".yichui-lfs"  # uploaded LFS objects by sha256 (no repository: a dot folder)
        self._write_lock = threading.Lock()  # one commit at a time: each sees the commit before it
        self._secret = os.urandom(16)

    def sign(self, target: str, expires: int) -> str:
        return hmac.new(self._secret, f"{target}|{expires}".encode(), hashlib.sha256).hexdigest()

    def storage_link(self, target: str) -> str:
        """A signed storage URL for ``target`` (``kind/repo/path``), expiring per the modes."""
        with self._lock:
            expired = int(self.modes.get("cdn_expired", 0))
            if expired:
                self.modes["cdn_expired"] = expired - 1
        expires = int(time.time()) + (-60 if expired else int(self.modes.get("cdn_ttl", 3600)))
        return f"{self.cdn_url}/cdn/{target}?Expires={expires}&Signature={self.sign(target, expires)}"

    def take_fault(self, paths: list[str], stage: str | None = None) -> dict | None:
        """The first fault rule matching one of a request's file paths that still has uses left (and use it once):
        download rules for a file download (``stage`` None), ``"upload"`` rules (true or this stage) for an upload."""
        with self._lock:
            for rule in self.faults:
                kind, api = rule.get("upload"), bool(rule.get("api"))
                fits = api if stage == "api" else (kind in (True, stage) if stage else not kind) and not api
                if fits and rule.get("times", 1) != 0 and any(
                        fnmatch.fnmatch(p, rule.get("path", "*")) for p in paths):
                    if "times" in rule:
                        rule["times"] -= 1
                    return dict(rule)
        return None

    def folder(self, repo_id: str, kind: str = "model") -> Path | None:
        """Where a repository lives (whether or not it exists yet); None for an id that is not ``org/name``."""
        if not re.fullmatch(REPO_ID, repo_id):
            return None
        return self.root / ("datasets" if kind == "dataset" else "") / repo_id

    def has_object(self, oid: str, size: int | None = None) -> bool:
        p = self.lfs_store / oid
        return re.fullmatch(r"[0-9a-f]{64}", oid) is not None and p.is_file() and size in (None, p.stat().st_size)

    def commit(self, kind: str, repo_id: str, files: dict[str, bytes | str], deleted: list[str], message: str,
               parent: str | None = None) -> Repo:
        """Write a commit into the repository's folder: ``files`` maps a path to its bytes or to an LFS object's
        sha256 (already stored). Each file goes to a hidden temp file renamed over its path, so a download sees the
        old file or the new one, never half of one. Paths must be checked (``repo_path``) and objects present."""
        folder = self.folder(repo_id, kind)
        assert folder is not None
        with self._write_lock:
            before = self.repo(repo_id, kind)
            if parent and before is not None and parent != before.commit:
                raise StaleParent("A commit has happened since. Please refresh and try again.")
            for path, data in files.items():
                target = folder / path
                target.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
                try:
                    with os.fdopen(fd, "wb") as f:
                        if isinstance(data, bytes):
                            f.write(data)
                        else:
                            with open(self.lfs_store / data, "rb") as src:
                                shutil.copyfileobj(src, f, CHUNK)
                    os.replace(tmp, target)
                except BaseException:
                    Path(tmp).unlink(missing_ok=True)
                    raise
            for path in deleted:
                if (folder / path).is_dir():
                    shutil.rmtree(folder / path)
                else:
                    (folder / path).unlink(missing_ok=True)
            with self._lock:  # the folder's mtimes may not have moved within the clock's tick: rescan for sure
                self._cache.pop(f"{kind}:{repo_id}", None)
                self.commits.setdefault(repo_id, []).append(
                    {"paths": sorted(files), "deleted": sorted(deleted), "message": message})
            after = self.repo(repo_id, kind)
        assert after is not None
        return after

    def count(self, path: str, n: int) -> None:
        with self._lock:
            self.bytes_sent[path] = self.bytes_sent.get(path, 0) + n

    def repo(self, repo_id: str, kind: str = "model") -> Repo | None:
        folder = self.folder(repo_id, kind)
        if folder is None or not folder.is_dir():
            return None
        stamp = max((_mtime(p) for p in folder.rglob("*")), default=0.0)
        key = f"{kind}:{repo_id}"
        with self._lock:
            hit = self._cache.get(key)
            if hit is None or hit[0] != stamp:
                hit = (stamp, Repo(repo_id, folder))
                self._cache[key] = hit
            return hit[1]


class Handler(BaseHTTPRequestHandler):
    server_version = "yichui-hub/1"
    protocol_version = "HTTP/1.1"
    hub: Hub

    def log_message(self, fmt, *args):  # quiet: tests and the demo read hub.requests instead
        pass

    # -- helpers -----------------------------------------------------------------------------------------------
    def _json(self, obj, status: int = 200, headers: dict | None = None) -> None:
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        for k, v in ({"Content-Type": "application/json"} | (headers or {})).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _hf_error(self, code: str, message: str, status: int = 404) -> None:
        self._json({"error": message}, status, {"X-Error-Code": code, "X-Error-Message": message})

    def _ms_error(self, message: str, status: int = 404, code: int = 10010205001) -> None:
        self._json({"Code": code, "Message": message, "Success": False, "RequestId": "local"}, status)

    def _ms_unauthorized(self) -> None:  # ModelScope's answer to a missing or wrong token
        self._ms_error("AccessToken is invalid or expired", 401, 10010103009)

    def _revision_ok(self, repo: Repo, rev: str) -> bool:
        return rev in ("main", "master", repo.commit, "")

    def _send_file(self, repo: Repo, path: str, extra: dict) -> None:
        f = repo.files[path]
        fault = self.hub.take_fault([path]) if self.command == "GET" else None
        if fault and fault.get("status"):
            headers = {"X-Error-Code": fault["error_code"]} if fault.get("error_code") else {}
            if fault.get("retry_after") is not None:
                headers["Retry-After"] = str(fault["retry_after"])
            return self._json({"error": f"injected {fault['status']}"}, fault["status"], headers)
        size, start, end = f["size"], 0, f["size"] - 1
        rng = None if fault and fault.get("ignore_range") else self.headers.get("Range")
        status = 200
        if rng:
            m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng.strip())
            if not m or (m.group(1) == "" and m.group(2) == ""):
                return self._hf_error("RangeNotSatisfiable", "bad range", 416)
            if m.group(1) == "":
                start = max(0, size - int(m.group(2)))
            else:
                start = int(m.group(1))
                end = min(end, int(m.group(2))) if m.group(2) else end
            if start >= size and size > 0:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = 206
        length = max(0, end - start + 1)
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        sized = self.command != "HEAD" or self.hub.modes.get("head_size", True)
        if sized:
            self.send_header("Content-Length", str(length))
        else:
            extra = {k: v for k, v in extra.items() if k != "X-Linked-Size"}
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", repo.etag(path))
        self.send_header("Last-Modified", repo.mtime)
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        for k, v in extra.items():
            self.send_header(k, v)
        self.end_headers()
        if self.command == "HEAD":
            return
        drop = fault.get("drop_after") if fault else None
        throttle = fault.get("throttle") if fault else None
        corrupt = fault.get("corrupt_at") if fault else None
        sent, t0 = 0, time.monotonic()
        block_size = 64 << 10 if throttle else CHUNK  # throttled: small steady writes, as a link would deliver
        with open(repo.folder / path, "rb") as fh:
            fh.seek(start)
            left = length if drop is None else min(length, drop)
            while left > 0:
                block = fh.read(min(block_size, left))
                if not block:
                    break
                if corrupt is not None and start + sent <= corrupt < start + sent + len(block):
                    i = corrupt - start - sent
                    block = block[:i] + bytes([block[i] ^ 0xFF]) + block[i + 1:]
                try:
                    self.wfile.write(block)
                except (BrokenPipeError, ConnectionResetError):
                    break
                sent += len(block)
                self.hub.count(path, len(block))
                left -= len(block)
                if throttle:
                    ahead = sent / throttle - (time.monotonic() - t0)
                    if ahead > 0:
                        time.sleep(ahead)
        if sent < length:  # a dropped connection: the client sees fewer bytes than Content-Length promised
            self.close_connection = True

    # -- routing -----------------------------------------------------------------------------------------------
    def do_HEAD(self):
        self.do_GET()

    def do_POST(self):
        if urlparse(self.path).path == "/_yichui/modes":
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                modes = json.loads(body or b"{}")
            except ValueError:
                modes = None
            if not isinstance(modes, dict):
                return self._json({"error": "modes must be a JSON object"}, 400)
            self.hub.modes = modes
            return self._json({"modes": modes})
        if urlparse(self.path).path == "/_yichui/faults":
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                rules = json.loads(body or b"[]")
            except ValueError:
                return self._json({"error": "faults must be a JSON list"}, 400)
            self.hub.faults = list(rules if isinstance(rules, list) else [rules])
            return self._json({"faults": len(self.hub.faults)})
        self._upload()

    def do_DELETE(self):
        path = urlparse(self.path).path
        if path == "/_yichui/faults":
            self.hub.faults = []
            return self._json({"faults": 0})
        if path == "/_yichui/modes":
            self.hub.modes = {}
            return self._json({"modes": {}})
        if path == "/_yichui/stats":
            self.hub.bytes_sent.clear()
            self.hub.requests.clear()
            return self._json({"reset": True})
        self._hf_error("NotFound", "not found")

    def do_GET(self):
        url = urlparse(self.path)
        path, query = unquote(url.path), parse_qs(url.query)
        if path == "/_yichui/stats":
            return self._json({"bytes_sent": self.hub.bytes_sent, "requests": len(self.hub.requests)})
        self.hub.requests.append((self.command, self.path, self.headers.get("Range")))
        token = self.hub.modes.get("private")
        if token and self.headers.get("Authorization") != f"Bearer {token}":  # a private repository, as each hub
            if path.startswith("/api/v1/"):                                   # answers it without a valid token
                return self._ms_unauthorized()
            return self._hf_error("RepoNotFound", "Repository Not Found for url: " + self.path + ". If you are "
                                  "trying to access a private or gated repo, make sure you are authenticated.", 401)
        if path.startswith("/api/") and (fault := self.hub.take_fault([path], "api")) and fault.get("status"):
            return self._json({"error": f"injected {fault['status']}"}, fault["status"])
        if path.startswith("/api/v1/"):
            return self._modelscope(path[len("/api/v1/"):], query)
        if path.startswith("/api/models/"):
            return self._hf_api(path[len("/api/models/"):], query)
        if path.startswith("/api/datasets/"):
            return self._hf_api(path[len("/api/datasets/"):], query, kind="dataset")
        m = re.fullmatch(r"/(datasets/)?([\w.-]+/[\w.-]+)/resolve/([^/]+)/(.+)", path)
        if m:
            return self._hf_resolve(m.group(2), m.group(3), m.group(4), "dataset" if m.group(1) else "model")
        if path in ("/", "/health"):
            return self._json({"status": "ok"})
        self._hf_error("NotFound", "not found")

    def _hf_api(self, rest: str, query: dict, kind: str = "model") -> None:
        m = re.fullmatch(r"([\w.-]+/[\w.-]+)(?:/(revision|tree)/([^/]+)(?:/(.*))?)?", rest.rstrip("/"))
        if not m:
            return self._hf_error("NotFound", "not found")
        repo_id, what, rev, sub = m.groups()
        repo = self.hub.repo(repo_id, kind)
        if repo is None:
            return self._hf_error("RepoNotFound", f"Repository Not Found for url: {self.path}.", 404)
        if rev is not None and not self._revision_ok(repo, rev):
            return self._hf_error("RevisionNotFound", f"Invalid rev id: {rev}", 404)
        if what == "tree":
            prefix = (sub or "").strip("/")
            files = [p for p in repo.files if not prefix or p.startswith(prefix + "/")]
            if query.get("recursive", ["false"])[0].lower() not in ("true", "1"):
                files = [p for p in files if "/" not in p[len(prefix) + 1 if prefix else 0:]]
            return self._json([repo.hf_entry(p) for p in files])
        blobs = query.get("blobs", ["false"])[0].lower() in ("true", "1") and self.hub.modes.get("listing") != "names"
        siblings = [{"rfilename": p, **({"size": f["size"], "blobId": f["oid"], **(
                     {"lfs": {"sha256": f["sha256"], "size": f["size"], "pointerSize": 134}} if f["lfs"] else {})}
                     if blobs else {})} for p, f in repo.files.items()]
        self._json({"_id": repo.commit[:24], "id": repo.id, "modelId": repo.id, "sha": repo.commit,
                    "private": False, "gated": False, "disabled": False, "downloads": 0, "likes": 0,
                    "lastModified": "2026-01-01T00:00:00.000Z", "tags": [], "library_name": "transformers",
                    "siblings": siblings, "usedStorage": sum(f["size"] for f in repo.files.values())})

    def _hf_resolve(self, repo_id: str, rev: str, path: str, kind: str = "model") -> None:
        repo = self.hub.repo(repo_id, kind)
        if repo is None:
            return self._hf_error("RepoNotFound", "Repository not found", 404)
        if not self._revision_ok(repo, rev):
            return self._hf_error("RevisionNotFound", f"Invalid rev id: {rev}", 404)
        if path not in repo.files:
            return self._hf_error("EntryNotFound", f"Entry not found: {path}", 404)
        extra = {"X-Repo-Commit": repo.commit}
        if repo.files[path]["lfs"]:
            extra |= {"X-Linked-Etag": repo.etag(path), "X-Linked-Size": str(repo.files[path]["size"])}
            if self.hub.modes.get("cdn") and self.hub.cdn_url:  # the Hub's 302 to its storage on another host
                link = self.hub.storage_link(f"{kind}/{repo_id}/{path}")
                self.send_response(302)
                for k, v in (extra | {"Location": link, "ETag": repo.etag(path), "Content-Length": "0"}).items():
                    self.send_header(k, v)
                return self.end_headers()
        self._send_file(repo, path, extra)

    def _modelscope(self, rest: str, query: dict) -> None:
        m = re.fullmatch(r"(models|datasets)/([\w.-]+/[\w.-]+)(/repo/files|/repo/tree|/repo|/revisions)?/?", rest)
        if not m:
            return self._ms_error("not found")
        kind = "dataset" if m.group(1) == "datasets" else "model"
        repo_id, tail = m.group(2), m.group(3) or ""
        repo = self.hub.repo(repo_id, kind)
        if repo is None:
            return self._ms_error(f"{kind} {repo_id} not found")
        rev = query.get("Revision", ["master"])[0]
        if not self._revision_ok(repo, rev):
            return self._ms_error(f"revision {rev} not found")
        if tail in ("/repo/files", "/repo/tree"):
            names = self.hub.modes.get("listing") == "names"
            files = [{"Path": p, "Name": p.rsplit("/", 1)[-1], "Type": "blob",
                      **({} if names else {"Size": f["size"], "Sha256": f["sha256"]}), "IsLFS": f["lfs"],
                      "Revision": repo.commit, "Mode": "33188", "CommitId": repo.commit, "CommittedDate": 0}
                     for p, f in repo.files.items()]
            return self._json({"Code": 200, "Data": {"Files": files}, "Message": "success", "Success": True})
        if tail == "/repo":
            fp = query.get("FilePath", [""])[0]
            if fp not in repo.files:
                return self._ms_error(f"file {fp} not found")
            return self._send_file(repo, fp, {"X-Repo-Commit": repo.commit})
        if tail == "/revisions":
            return self._json({"Code": 200, "Data": {"RevisionMap": {"Branches": [{"Revision": "master"}], "Tags": []}},
                               "Success": True})
        org, name = repo.id.split("/")
        self._json({"Code": 200, "Data": {"Name": name, "Path": org, "ModelType": [], "Revision": "master",
                                          "LatestCommitId": repo.commit}, "Success": True})


    # -- uploads -----------------------------------------------------------------------------------------------
    def _body(self) -> Iterator[bytes]:
        """The request body, block by block (``Content-Length`` or chunked: httpx sends a file object chunked)."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while n := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                while n > 0:
                    block = self.rfile.read(min(CHUNK, n))
                    if not block:
                        return
                    n -= len(block)
                    yield block
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
                pass
            return
        left = int(self.headers.get("Content-Length") or 0)
        while left > 0:
            block = self.rfile.read(min(CHUNK, left))
            if not block:
                return
            left -= len(block)
            yield block

    def _writer(self, ms: bool) -> bool:
        """Whether the request may write: a Bearer token (the ``write_token`` mode's, if set). If not, answer as
        each hub does (Hugging Face: 401 with its message, which the client shows; ModelScope: its 401 envelope)."""
        auth = self.headers.get("Authorization") or ""
        token = auth[len("Bearer "):].strip() if auth.startswith("Bearer ") else ""
        want = str(self.hub.modes.get("write_token") or "")
        if token and (not want or hmac.compare_digest(token.encode(), want.encode())):
            return True
        if ms:
            self._ms_unauthorized()
        else:  # no X-Error-Code: the client raises HfHubHTTPError (401) carrying the message
            msg = "Invalid credentials in Authorization header" if token else "Invalid username or password."
            self._json({"error": msg}, 401, {"X-Error-Message": msg})
        return False

    def _upload_fault(self, ms: bool, stage: str, paths: list[str] | None = None) -> bool:
        """Answer an injected fault for this upload request (matched on its files' paths; "" when it has none)."""
        fault = self.hub.take_fault(paths or [""], stage)
        if not fault or not fault.get("status"):
            return False
        headers = {"X-Error-Code": fault["error_code"]} if fault.get("error_code") else {}
        if fault.get("retry_after") is not None:
            headers["Retry-After"] = str(fault["retry_after"])
        message = f"injected {fault['status']}"
        self._json({"Code": fault["status"], "Message": message, "Success": False, "RequestId": "local"} if ms
                   else {"error": message}, fault["status"], headers)
        return True

    def _bad(self, ms: bool, message: str, status: int = 400, code: str = "BadRequest") -> None:
        if ms:
            self._ms_error(message, status)
        else:
            self._hf_error(code, message, status)

    def _base(self) -> str:
        return "http://" + (self.headers.get("Host") or "127.0.0.1")  # as the client reached us (HTTP/1.1: Host)

    def _upload(self) -> None:
        """The POSTs of an upload, both hubs: create a repository, preupload, LFS batch and verify, commit."""
        path = unquote(urlparse(self.path).path)
        self.hub.requests.append((self.command, self.path, None))
        body = b"".join(self._body())  # read it all first: an answer before it would leave it in the connection
        ms = path.startswith("/api/v1/")
        kind, repo_id, rev = "model", "", None
        if path == "/api/validate-yaml":  # upload_folder asks it first for a README.md (PEFT writes one): all fine
            return self._json({"errors": [], "warnings": []})
        if path in ("/api/repos/create", "/api/v1/models"):
            stage = "create"
        elif m := re.fullmatch(rf"/api/(models|datasets)/({REPO_ID})/(preupload|commit)/([^/]+)", path):
            kind, repo_id, stage, rev = m.group(1)[:-1], m.group(2), m.group(3), m.group(4)
        elif m := re.fullmatch(rf"/(datasets/)?({REPO_ID})\.git/info/lfs/objects/(batch|verify)", path):
            kind, repo_id, stage = "dataset" if m.group(1) else "model", m.group(2), m.group(3)
        elif m := re.fullmatch(rf"/api/v1/repos/(models|datasets)/({REPO_ID})/(info/lfs/objects/batch|commit/(.+))",
                               path):
            kind, repo_id, stage, rev = m.group(1)[:-1], m.group(2), "commit" if m.group(4) else "batch", m.group(4)
        else:
            return self._ms_error("not found") if ms else self._hf_error("NotFound", "not found")
        if not self._writer(ms):
            return
        try:  # what the client sent is untrusted: a field of the wrong type or missing is a 400, not a crash
            req: Any = [json.loads(x) for x in body.splitlines() if x.strip()] if stage == "commit" and not ms \
                else json.loads(body or b"{}")
            if stage == "create":
                return self._create(ms, req)
            repo = self.hub.repo(repo_id, kind)
            if repo is None:
                return self._ms_error(f"{kind} {repo_id} not found") if ms else self._hf_error(
                    "RepoNotFound", f"Repository Not Found for url: {self.path}.", 404)
            if rev is not None and not self._revision_ok(repo, rev):
                return self._ms_error(f"revision {rev} not found") if ms else self._hf_error(
                    "RevisionNotFound", f"Invalid rev id: {rev}", 404)
            if stage == "commit":
                return self._ms_commit(repo, kind, req) if ms else self._hf_commit(repo, kind, req)
            if stage == "preupload":
                return self._preupload(repo, req["files"])
            if self._upload_fault(ms, stage):
                return
            if stage == "verify":
                if not self.hub.has_object(req["oid"], req["size"]):
                    return self._hf_error("EntryNotFound", f"object {req['oid']} not found", 404)
                return self._json({"success": True})
            self._json({"transfer": "basic", "objects": [self._lfs_object(kind, repo_id, o) for o in req["objects"]],
                        "hash_algo": "sha256"}, headers={"Content-Type": "application/vnd.git-lfs+json"})
        except (ValueError, KeyError, TypeError, AttributeError) as e:  # bad JSON or base64 are ValueErrors
            self._bad(ms, f"malformed request: {e!r}")

    def _create(self, ms: bool, req: dict) -> None:
        if ms:  # ModelScope: {"Path": org, "Name": name, "Visibility", "License", ...}
            kind, org, name = "model", req["Path"], req["Name"]
        else:  # Hugging Face: {"name", "organization", "type", "visibility"/"private"} (no organization: the
            kind, org, name = req.get("type") or "model", req["organization"], req["name"]  # user's, unsupported)
        repo_id = f"{org}/{name}"
        folder = self.hub.folder(repo_id, kind) if kind in ("model", "dataset") and isinstance(org, str) \
            and isinstance(name, str) else None
        if folder is None:
            return self._bad(ms, f"invalid repo id {repo_id} (org/name) or type {kind}")
        if self._upload_fault(ms, "create"):
            return
        url = f"{self._base()}/{'datasets/' if kind == 'dataset' else ''}{repo_id}"
        if folder.is_dir():  # what exist_ok looks for: HF a 409 with the url, ModelScope its "exists" code
            if ms:
                return self._ms_error(f"model {repo_id} already exists", 400, 10010101001)
            msg = f"You already created this {kind} repo"
            return self._json({"error": msg, "url": url}, 409, {"X-Error-Message": msg})
        folder.mkdir(parents=True, exist_ok=True)
        if ms:
            return self._json({"Code": 200, "Data": {"Path": org, "Name": name}, "Message": "success",
                               "Success": True})
        self._json({"url": url, "name": repo_id, "id": repo_id})

    def _preupload(self, repo: Repo, files: list) -> None:
        """Each file's ``uploadMode`` (lfs by name or size, else regular) and, for a file the repository has, its
        ``oid`` (sha256 for lfs, git blob sha1 for regular): the client skips a file whose oid did not change."""
        if self._upload_fault(False, "preupload", [f["path"] for f in files]):
            return
        out = []
        for f in files:
            mode = "lfs" if f["path"].endswith(LFS_SUFFIXES) or f["size"] >= LFS_MIN_SIZE else "regular"
            have = repo.files.get(f["path"])
            oid = (have["sha256"] if mode == "lfs" else have["oid"]) if have else None
            out.append({"path": f["path"], "uploadMode": mode, "shouldIgnore": False, "oid": oid})
        self._json({"files": out, "commitOid": repo.commit})

    def _lfs_object(self, kind: str, repo_id: str, o: dict) -> dict:
        """One object of the git-lfs batch answer: none of ``actions`` when the store has it; else an upload (a PUT
        to a signed URL here, as the Hub hands out a presigned storage URL: the PUT carries no token) and a verify."""
        oid, size = o["oid"], o["size"]
        if not re.fullmatch(r"[0-9a-f]{64}", oid) or not isinstance(size, int) or size < 0:
            return {"oid": str(oid), "size": 0, "error": {"code": 422, "message": "oid: a sha256; size: an int"}}
        if self.hub.has_object(oid, size):
            return {"oid": oid, "size": size}
        expires = int(time.time()) + 3600
        put = (f"{self._base()}/_yichui/lfs/{oid}?size={size}&Expires={expires}"
               f"&Signature={self.hub.sign(f'lfs/{oid}/{size}', expires)}")
        verify = f"{self._base()}/{'datasets/' if kind == 'dataset' else ''}{repo_id}.git/info/lfs/objects/verify"
        return {"oid": oid, "size": size, "authenticated": True,
                "actions": {"upload": {"href": put, "expires_in": 3600}, "verify": {"href": verify}}}

    def _commit(self, ms: bool, repo: Repo, kind: str, files: dict[str, bytes | str], deleted: list[str],
                message: str, parent: str | None = None) -> Repo | None:
        """Check a commit's paths and LFS objects, then write it (None when it was refused: answered already)."""
        refused = next((f"Invalid path in repo: {p!r}" for p in list(files) + deleted
                        if repo_path(repo.folder, p) is None), None)
        refused = refused or next((f"{p}: LFS object {data} was not uploaded" for p, data in files.items()
                                   if isinstance(data, str) and not self.hub.has_object(data)), None)
        if refused:
            self._bad(ms, refused)
            return None
        gone = next((p for p in deleted if p not in repo.files and not any(f.startswith(p + "/") for f in repo.files)),
                    None)
        if gone is not None:
            self._bad(ms, f"A file with this name doesn't exist: {gone}", 404, "EntryNotFound")
            return None
        if self._upload_fault(ms, "commit", list(files) + deleted):
            return None
        try:
            return self.hub.commit(kind, repo.id, files, deleted, message, parent)
        except StaleParent as e:  # the Hub's answer to a parentCommit that is not the head any more
            self._bad(ms, str(e), 412, "PreconditionFailed")
        except OSError as e:  # a full disk: the client sees a server error, as from the real hub
            self._bad(ms, f"could not write the commit: {e.strerror}", 500, "InternalError")
        return None

    def _hf_commit(self, repo: Repo, kind: str, lines: list) -> None:
        """NDJSON: {"key": "header", "value": {summary, description, parentCommit?}}, then "file" {path, content
        (base64), encoding}, "lfsFile" {path, algo, oid, size}, "deletedFile" / "deletedFolder" {path}."""
        if parse_qs(urlparse(self.path).query).get("create_pr"):
            return self._hf_error("BadRequest", "pull requests are not supported here", 400)
        header: dict = {}
        files: dict[str, bytes | str] = {}
        deleted = []
        for line in lines:
            key, v = line["key"], line["value"]
            if key == "header":
                header = v
            elif key == "file":
                files[v["path"]] = base64.b64decode(v["content"], validate=True)
            elif key == "lfsFile":
                if "size" in v and not self.hub.has_object(v["oid"], v["size"]):  # a copy sends no size
                    return self._hf_error("BadRequest", f"{v['path']}: no LFS object {v['oid']} of {v['size']} "
                                          "bytes", 400)
                files[v["path"]] = v["oid"]
            elif key in ("deletedFile", "deletedFolder"):
                deleted.append(v["path"])
            else:
                return self._hf_error("BadRequest", f"unknown commit entry {key!r}", 400)
        after = self._commit(False, repo, kind, files, deleted, header.get("summary", ""), header.get("parentCommit"))
        if after is not None:
            url = f"{self._base()}/{'datasets/' if kind == 'dataset' else ''}{repo.id}/commit/{after.commit}"
            self._json({"success": True, "commitOid": after.commit, "commitUrl": url, "hookOutput": ""})

    def _ms_commit(self, repo: Repo, kind: str, req: dict) -> None:
        """{"commit_message", "actions": [{action: create|update|delete, path, type: normal|lfs, size, sha256,
        content (base64), encoding}]}."""
        files: dict[str, bytes | str] = {}
        deleted = []
        for a in req["actions"]:
            if a["action"] == "delete":
                deleted.append(a["path"])
            elif a.get("type") == "lfs":
                if not self.hub.has_object(a["sha256"], a["size"]):
                    return self._ms_error(f"{a['path']}: no LFS object {a['sha256']} of {a['size']} bytes", 400)
                files[a["path"]] = a["sha256"]
            else:
                files[a["path"]] = base64.b64decode(a["content"], validate=True)
        after = self._commit(True, repo, kind, files, deleted, str(req.get("commit_message", "")))
        if after is not None:  # the client reads nothing of Data but Success
            self._json({"Code": 200, "Data": {"CommitId": after.commit, "Revision": "master"}, "Message": "success",
                        "Success": True})

    def do_PUT(self):
        """An LFS object's bytes, to the signed URL of the batch answer: stored once their sha256 and size are the
        URL's (400 otherwise, as storage refuses a bad digest)."""
        url = urlparse(self.path)
        self.hub.requests.append((self.command, url.path, None))
        m = re.fullmatch(r"/_yichui/lfs/([0-9a-f]{64})", url.path)
        q = parse_qs(url.query)
        self.hub.lfs_store.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".put.", dir=self.hub.lfs_store)
        h, n = hashlib.sha256(), 0
        try:
            with os.fdopen(fd, "wb") as f:  # read it all first, as in _upload
                for block in self._body():
                    h.update(block)
                    n += len(block)
                    f.write(block)
            try:
                size, expires, sig = int(q["size"][0]), int(q["Expires"][0]), q["Signature"][0]
            except (KeyError, ValueError, IndexError):
                size, expires, sig = -1, 0, ""
            if not m or expires < time.time() or not hmac.compare_digest(
                    sig, self.hub.sign(f"lfs/{m.group(1)}/{size}", expires)):
                return self._json({"error": "SignatureDoesNotMatch or expired"}, 403)
            if self._upload_fault(False, "lfs"):
                return
            if h.hexdigest() != m.group(1) or n != size:
                return self._json({"error": f"BadDigest: got sha256 {h.hexdigest()} of {n} bytes, want "
                                            f"{m.group(1)} of {size}"}, 400)
            os.replace(tmp, self.hub.lfs_store / m.group(1))
        finally:
            Path(tmp).unlink(missing_ok=True)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.send_header("ETag", f'"{m.group(1)}"')
        self.end_headers()


class StorageHandler(Handler):
    """The storage host behind the Hub's redirects: bytes for a valid, unexpired signed URL; 403 otherwise."""

    server_version = "yichui-storage/1"

    def do_GET(self):
        url = urlparse(self.path)
        self.hub.cdn_auth.append(self.headers.get("Authorization"))
        self.hub.requests.append((self.command, "storage:" + self.path, self.headers.get("Range")))
        m = re.fullmatch(r"/cdn/(model|dataset)/([\w.-]+/[\w.-]+)/(.+)", unquote(url.path))
        q = parse_qs(url.query)
        try:
            expires, sig = int(q["Expires"][0]), q["Signature"][0]
        except (KeyError, ValueError, IndexError):
            expires, sig = 0, ""
        if not m or not hmac.compare_digest(sig, self.hub.sign(f"{m.group(1)}/{m.group(2)}/{m.group(3)}", expires)):
            return self._storage_denied("SignatureDoesNotMatch")
        if expires < time.time():
            return self._storage_denied("Request has expired")
        repo = self.hub.repo(m.group(2), m.group(1))
        if repo is None or m.group(3) not in repo.files:
            return self._storage_denied("NoSuchKey")
        self._send_file(repo, m.group(3), {})

    def do_POST(self):
        self._storage_denied("MethodNotAllowed")

    do_DELETE = do_PUT = do_POST

    def _storage_denied(self, why: str) -> None:
        self.hub.cdn_refused.append(why)
        body = f"<?xml version='1.0'?><Error><Code>AccessDenied</Code><Message>{why}</Message></Error>".encode()
        self.send_response(403)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address):  # a client that hangs up mid-file is normal here
        pass


class HubServer:
    """A running hub: ``with HubServer(root) as hub: hub.url``. Binds 127.0.0.1 unless ``host`` says otherwise."""

    def __init__(self, root: str | os.PathLike, host: str = "127.0.0.1", port: int = 0,
                 faults: list[dict] | None = None):
        self.hub = Hub(Path(root), faults)
        handler = type("BoundHandler", (Handler,), {"hub": self.hub})
        self.httpd = _QuietServer((host, port), handler)
        self.httpd.daemon_threads = True
        self.url = f"http://{host}:{self.httpd.server_address[1]}"
        # storage: another host name for the same loopback (clients strip a token on a redirect to another host)
        self.storage = _QuietServer((host, 0), type("BoundStorage", (StorageHandler,), {"hub": self.hub}))
        self.storage.daemon_threads = True
        self.hub.cdn_url = f"http://{'localhost' if host == '127.0.0.1' else host}:{self.storage.server_address[1]}"
        self._threads: list[threading.Thread] = []

    def start(self) -> "HubServer":
        for name, srv in (("yichui-hub", self.httpd), ("yichui-storage", self.storage)):
            # polled every 20 ms: stop() returns at once (the default 0.5 s made each stop cost ~1 s)
            t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, name=name, daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def stop(self) -> None:
        for srv in (self.httpd, self.storage):
            srv.shutdown()
            srv.server_close()

    def __enter__(self) -> "HubServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    # the module's first paragraph whole (its first line alone stopped mid-sentence: 46 trial L, L9)
    ap = argparse.ArgumentParser(prog="python -m recipes.hub.server",
                                 description=" ".join((__doc__ or "").split("\n\n")[0].split()),
                                 epilog="Fault rules and modes: the module's docstring "
                                        "(python -c 'import recipes.hub.server as s; help(s)').")
    ap.add_argument("root", help="folder of <org>/<name>/<files>, one model repository each")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0: a free port (the URL is printed first)")
    ap.add_argument("--faults", default=None, help="a JSON file with fault rules (a list: see the epilog)")
    a = ap.parse_args(argv)
    faults = json.loads(Path(a.faults).read_text()) if a.faults else None
    server = HubServer(a.root, a.host, a.port, faults)
    print(server.url, flush=True)
    threading.Thread(target=server.storage.serve_forever, name="yichui-storage", daemon=True).start()
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
