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
ModelScope
    GET  /api/v1/models/{repo}/repo/files?Revision=&Recursive=    ``Data.Files[]``: Path, Name, Type, Size, Sha256
    GET  /api/v1/models/{repo}/repo?Revision=&FilePath=           bytes, with Range
    GET  /api/v1/models/{repo}[/revisions]                        model info and revisions

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
``{"cdn": true}`` answers a large (LFS) file's ``resolve`` with a 302 to storage on another host (``localhost`` on
the second port, as the Hub redirects to its CDN) carrying ``X-Linked-Size``, ``X-Linked-Etag`` (sha256) and
``X-Repo-Commit``; storage serves the bytes only behind the signed URL until it expires (``"cdn_ttl"`` seconds,
default 3600; ``"cdn_expired": n`` hands out the first n links already expired) and answers 403 otherwise, as signed
storage URLs do. ``Hub.cdn_auth`` records the Authorization header of every storage request (a token must not go
there).

Faults, for tests and benchmarks (loopback only): ``POST /_yichui/faults`` with a JSON list of rules, each
``{"path": glob, "drop_after": bytes, "throttle": bytes per s, "corrupt_at": file offset, "status": code,
"error_code": X-Error-Code, "retry_after": Retry-After header (with a status), "ignore_range": bool, "times": n}`` applied to file responses (``times``: to the first n
matching responses; absent: to all); ``DELETE /_yichui/faults`` clears them; ``GET /_yichui/stats`` returns the bytes
sent per file and the request count; ``DELETE /_yichui/stats`` resets them.

Run standalone: ``python -m recipes.hub.server ROOT [--port P] [--faults FILE.json]`` prints its URL on the first line
of stdout.
"""
from __future__ import annotations

import argparse
import email.utils
import fnmatch
import hashlib
import hmac
import json
import os
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".h5", ".msgpack", ".onnx")
CHUNK = 1 << 20


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
        self.mtime = email.utils.formatdate(max((folder / f).stat().st_mtime for f in self.files) if self.files else 0,
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

    def take_fault(self, path: str) -> dict | None:
        """The first fault rule matching a file path that still has uses left (and use it once)."""
        with self._lock:
            for rule in self.faults:
                if fnmatch.fnmatch(path, rule.get("path", "*")) and rule.get("times", 1) != 0:
                    if "times" in rule:
                        rule["times"] -= 1
                    return dict(rule)
        return None

    def count(self, path: str, n: int) -> None:
        with self._lock:
            self.bytes_sent[path] = self.bytes_sent.get(path, 0) + n

    def repo(self, repo_id: str, kind: str = "model") -> Repo | None:
        if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo_id):
            return None
        folder = self.root / ("datasets" if kind == "dataset" else "") / repo_id
        if not folder.is_dir():
            return None
        stamp = max((p.stat().st_mtime for p in folder.rglob("*")), default=0.0)
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
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _hf_error(self, code: str, message: str, status: int = 404) -> None:
        self._json({"error": message}, status, {"X-Error-Code": code, "X-Error-Message": message})

    def _ms_error(self, message: str, status: int = 404) -> None:
        self._json({"Code": 10010205001, "Message": message, "Success": False, "RequestId": "local"}, status)

    def _revision_ok(self, repo: Repo, rev: str) -> bool:
        return rev in ("main", "master", repo.commit, "")

    def _send_file(self, repo: Repo, path: str, extra: dict) -> None:
        f = repo.files[path]
        fault = self.hub.take_fault(path) if self.command == "GET" else None
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
        self._hf_error("NotFound", "not found")

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
                return self._json({"Code": 10010103009, "Message": "AccessToken is invalid or expired",
                                   "Success": False, "RequestId": "local"}, 401)
            return self._hf_error("RepoNotFound", "Repository Not Found for url: " + self.path + ". If you are "
                                  "trying to access a private or gated repo, make sure you are authenticated.", 401)
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

    do_DELETE = do_POST

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
            t = threading.Thread(target=srv.serve_forever, name=name, daemon=True)
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
    ap = argparse.ArgumentParser(prog="python -m recipes.hub.server", description=__doc__.splitlines()[0])
    ap.add_argument("root")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--faults", default=None, help="a JSON file with fault rules")
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
