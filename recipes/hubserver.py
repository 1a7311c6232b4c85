"""A model hub on 127.0.0.1 that speaks the Hugging Face and ModelScope HTTP APIs, serving folders from disk.

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

Run standalone: ``python -m recipes.hubserver ROOT [--port P]`` prints its URL on the first line of stdout.
"""
from __future__ import annotations

import argparse
import email.utils
import hashlib
import json
import os
import re
import threading
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

    def __init__(self, root: Path):
        self.root = Path(root)
        self._cache: dict[str, tuple[float, Repo]] = {}
        self._lock = threading.Lock()
        self.requests: list[tuple[str, str, str | None]] = []  # (method, path, Range header): for tests and logs

    def repo(self, repo_id: str) -> Repo | None:
        if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo_id):
            return None
        folder = self.root / repo_id
        if not folder.is_dir():
            return None
        stamp = max((p.stat().st_mtime for p in folder.rglob("*")), default=0.0)
        with self._lock:
            hit = self._cache.get(repo_id)
            if hit is None or hit[0] != stamp:
                hit = (stamp, Repo(repo_id, folder))
                self._cache[repo_id] = hit
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
        size, start, end = f["size"], 0, f["size"] - 1
        rng = self.headers.get("Range")
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
        self.send_header("Content-Length", str(length))
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
        with open(repo.folder / path, "rb") as fh:
            fh.seek(start)
            left = length
            while left > 0:
                block = fh.read(min(CHUNK, left))
                if not block:
                    break
                try:
                    self.wfile.write(block)
                except (BrokenPipeError, ConnectionResetError):
                    return
                left -= len(block)

    # -- routing -----------------------------------------------------------------------------------------------
    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        url = urlparse(self.path)
        path, query = unquote(url.path), parse_qs(url.query)
        self.hub.requests.append((self.command, self.path, self.headers.get("Range")))
        if path.startswith("/api/v1/"):
            return self._modelscope(path[len("/api/v1/"):], query)
        if path.startswith("/api/models/"):
            return self._hf_api(path[len("/api/models/"):], query)
        m = re.fullmatch(r"/([\w.-]+/[\w.-]+)/resolve/([^/]+)/(.+)", path)
        if m:
            return self._hf_resolve(*m.groups())
        if path in ("/", "/health"):
            return self._json({"status": "ok"})
        self._hf_error("NotFound", "not found")

    def _hf_api(self, rest: str, query: dict) -> None:
        m = re.fullmatch(r"([\w.-]+/[\w.-]+)(?:/(revision|tree)/([^/]+)(?:/(.*))?)?", rest.rstrip("/"))
        if not m:
            return self._hf_error("NotFound", "not found")
        repo_id, kind, rev, sub = m.groups()
        repo = self.hub.repo(repo_id)
        if repo is None:
            return self._hf_error("RepoNotFound", f"Repository Not Found for url: {self.path}.", 404)
        if rev is not None and not self._revision_ok(repo, rev):
            return self._hf_error("RevisionNotFound", f"Invalid rev id: {rev}", 404)
        if kind == "tree":
            prefix = (sub or "").strip("/")
            files = [p for p in repo.files if not prefix or p.startswith(prefix + "/")]
            if query.get("recursive", ["false"])[0].lower() not in ("true", "1"):
                files = [p for p in files if "/" not in p[len(prefix) + 1 if prefix else 0:]]
            return self._json([repo.hf_entry(p) for p in files])
        siblings = [{"rfilename": p, "size": f["size"], "blobId": f["oid"],
                     **({"lfs": {"sha256": f["sha256"], "size": f["size"], "pointerSize": 134}} if f["lfs"] else {})}
                    for p, f in repo.files.items()]
        self._json({"_id": repo.commit[:24], "id": repo.id, "modelId": repo.id, "sha": repo.commit,
                    "private": False, "gated": False, "disabled": False, "downloads": 0, "likes": 0,
                    "lastModified": "2026-01-01T00:00:00.000Z", "tags": [], "library_name": "transformers",
                    "siblings": siblings, "usedStorage": sum(f["size"] for f in repo.files.values())})

    def _hf_resolve(self, repo_id: str, rev: str, path: str) -> None:
        repo = self.hub.repo(repo_id)
        if repo is None:
            return self._hf_error("RepoNotFound", "Repository not found", 404)
        if not self._revision_ok(repo, rev):
            return self._hf_error("RevisionNotFound", f"Invalid rev id: {rev}", 404)
        if path not in repo.files:
            return self._hf_error("EntryNotFound", f"Entry not found: {path}", 404)
        extra = {"X-Repo-Commit": repo.commit}
        if repo.files[path]["lfs"]:
            extra |= {"X-Linked-Etag": repo.etag(path), "X-Linked-Size": str(repo.files[path]["size"])}
        self._send_file(repo, path, extra)

    def _modelscope(self, rest: str, query: dict) -> None:
        m = re.fullmatch(r"models/([\w.-]+/[\w.-]+)(/repo/files|/repo|/revisions)?/?", rest)
        if not m:
            return self._ms_error("not found")
        repo = self.hub.repo(m.group(1))
        if repo is None:
            return self._ms_error(f"model {m.group(1)} not found")
        rev = query.get("Revision", ["master"])[0]
        if not self._revision_ok(repo, rev) and rev != "v1.0.0":
            return self._ms_error(f"revision {rev} not found")
        tail = m.group(2) or ""
        if tail == "/repo/files":
            files = [{"Path": p, "Name": p.rsplit("/", 1)[-1], "Type": "blob", "Size": f["size"],
                      "Sha256": f["sha256"], "IsLFS": f["lfs"], "Revision": repo.commit, "Mode": "33188",
                      "CommitId": repo.commit, "CommittedDate": 0}
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


class HubServer:
    """A running hub: ``with HubServer(root) as hub: hub.url``. Binds 127.0.0.1 unless ``host`` says otherwise."""

    def __init__(self, root: str | os.PathLike, host: str = "127.0.0.1", port: int = 0):
        self.hub = Hub(Path(root))
        handler = type("BoundHandler", (Handler,), {"hub": self.hub})
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self.url = f"http://{host}:{self.httpd.server_address[1]}"
        self._thread: threading.Thread | None = None

    def start(self) -> "HubServer":
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="yichui-hub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "HubServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m recipes.hubserver", description=__doc__.splitlines()[0])
    ap.add_argument("root")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    a = ap.parse_args(argv)
    server = HubServer(a.root, a.host, a.port)
    print(server.url, flush=True)
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
