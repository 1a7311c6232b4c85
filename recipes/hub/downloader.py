"""yichui's downloader: files fetched with HTTP Range requests, resumable across processes, verified, atomic.

Each file is written to ``<target>.yichui-part`` beside its target, with a sidecar ``<target>.yichui-part.json``
holding the URL, the server's ETag, the commit, the size, the expected sha256 and, per byte range (segment), how many
bytes are on disk. The sidecar is rewritten (atomically) after the bytes it counts are written, so after a crash or
kill -9 it never claims more than the part file holds; a restart continues every segment from its last recorded byte,
after checking the sidecar against the server's ETag (a changed file starts over). A finished file is checked
against its sha256 (LFS files; git blob sha1 for small Hugging Face files), fetched once more if wrong, then renamed
onto its target. Large files are fetched as several ranges at once, several files at once.

Errors become one-line StepErrors (recipes/base.py); nothing fetched is thrown away except a file whose hash is wrong
or whose ETag changed.
"""
from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import itertools
import json
import os
import re
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable

from recipes.base import StepError

CHUNK = 256 << 10             # bytes per read from the socket (small enough for Ctrl-C to stop promptly)
SIDECAR_EVERY = 64 << 10      # update the sidecar after this many new bytes in a segment (bounds re-fetch after a kill)
SEGMENT_MIN = 16 << 20        # files larger than this are fetched as several ranges at once
RETRIES = 6                   # attempts per range before giving up (backoff 0.5 s, doubling, at most 8 s)
TIMEOUT = (10, 60)            # connect, read timeouts (s): a stalled connection is retried, never waited on forever
PART, SIDE = ".yichui-part", ".yichui-part.json"
LOCK = ".yichui-download.lock"  # in the target folder while a download runs there (folder_lock)
RETRY_AFTER_MAX = 60.0        # s: the longest Retry-After (429 / 503) waited for before the next attempt


def retry_after(value: str | None) -> float | None:
    """Seconds a ``Retry-After`` header asks for (RFC 9110 §10.2.3: delay-seconds or an HTTP-date), or None."""
    if not value:
        return None
    value = value.strip()[:64]
    if re.fullmatch(r"[0-9]{1,12}", value):  # ASCII digits only ("²".isdigit() is True)
        return float(value)
    from email.utils import parsedate_to_datetime

    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def hex_digest(value, n: int) -> str | None:
    """``value`` when it is a hash of ``n`` lowercase hex digits (sha256: 64, git blob sha1: 40), else None."""
    return value if isinstance(value, str) and re.fullmatch(f"[0-9a-f]{{{n}}}", value) else None


def weights_header_ok(path: Path, name: str) -> bool:
    """Whether a ``*.safetensors`` file opens as one (the safetensors library reads and checks its header: length,
    JSON, dtypes, tensors' byte ranges covering the data); other files: True. A weight file that does not is a
    failed download, not a training error on every resume (issue 46 item 19)."""
    if not name.endswith(".safetensors"):
        return True
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="numpy"):
            return True
    except (SafetensorError, OSError):
        return False


def header_size(value: str | None) -> int | None:
    """A byte count from a header (Content-Length, X-Linked-Size): ASCII digits, at most 19 (< 2^63), else None."""
    m = re.fullmatch(r"\s*([0-9]{1,19})\s*", value or "")
    return int(m.group(1)) if m else None


@dataclass
class Item:
    """One remote file: its path in the repository, where to fetch it, size in bytes, and what to check it against."""

    path: str
    url: str
    size: int
    sha256: str | None = None
    git_sha1: str | None = None


@dataclass
class _File:
    item: Item
    dest: Path
    part: Path
    side: Path
    etag: str | None = None
    segments: list = field(default_factory=list)   # [start, end (exclusive), done]
    lock: threading.Lock = field(default_factory=threading.Lock)
    refetched: bool = False
    since_flush: dict = field(default_factory=dict)
    side_len: int = -1
    whole: bool = False     # the server ignored a Range: once its other ranges end, one stream from byte 0
    restarts: int = 0       # such restarts so far
    hasher: object = None   # the hash of bytes [0, hashed), fed by the range that starts at byte 0 as it arrives
    hashed: int = 0

    def expected(self) -> tuple[str, str | None]:
        """("sha256", hex) for an LFS file, ("sha1", git object id) for a small one, (.., None) without a hash."""
        return ("sha256", self.item.sha256) if self.item.sha256 else ("sha1", self.item.git_sha1)

    def new_hasher(self) -> None:
        """Start the hash of the kind :meth:`expected` names, at byte 0."""
        self.hashed, self.hasher = 0, new_hash(self.expected()[0], self.item.size)

    def hash_until(self, end: int) -> None:
        """Feed the hash the bytes [hashed, end) from the part file (a resumed range's bytes from an earlier run,
        or the other ranges' once the first has ended)."""
        with open(self.part, "rb") as fh:
            fh.seek(self.hashed)
            while self.hashed < end:
                block = fh.read(min(8 << 20, end - self.hashed))
                if not block:
                    raise OSError(errno.EIO, f"{self.part}: shorter than its sidecar says")
                self.hasher.update(block)
                self.hashed += len(block)


def safe_relpath(path: str) -> str:
    """A hub file name usable under the local folder: relative, no ``..``, no drive or absolute root.

    Raises:
        StepError: ``hub.unsafe_path``.
    """
    if not isinstance(path, str):
        raise StepError("hub.unsafe_path", path=repr(path))
    p = PurePosixPath(path)
    segments = path.split("/")
    # "." and empty segments ("a/./b", "a//b", "a/") would name another file than the hub's once normalised;
    # control characters (NUL, newlines) and names past the filesystem's limits cannot be written as listed;
    # a name ending like yichui's own files would be taken for a partial download, or removed as one
    if (not path or p.is_absolute() or any(x in ("", ".", "..") for x in segments) or "\\" in path
            or ":" in segments[0] or any(ord(c) < 32 or c == "\x7f" for c in path)
            or len(path.encode()) > 4000 or any(len(x.encode()) > 255 for x in segments)
            or segments[-1].endswith((PART, SIDE)) or segments[-1] in (VERIFIED, LOCK)):
        raise StepError("hub.unsafe_path", path=path)
    return str(p)


VERIFIED = ".yichui-verified.json"  # per folder: name → the hash a file was verified against, and its stat then
_verified_lock = threading.Lock()
_hashed: dict = {}  # (path, size, mtime_ns, sha256, git_sha1) → bool: a file hashed once in this process


def _stamp(dest: Path, sha256: str | None, git_sha1: str | None) -> dict:
    st = dest.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256, "git_sha1": git_sha1}


def _verified(folder: Path) -> dict:
    try:
        d = json.loads((folder / VERIFIED).read_text())
        return d if isinstance(d, dict) else {}
    except (OSError, ValueError):
        return {}


def record_verified(dest: Path, sha256: str | None, git_sha1: str | None) -> None:
    """Note that ``dest`` (as it is now: size, modification time) holds the content of these hashes."""
    with _verified_lock:
        d = _verified(dest.parent)
        d[dest.name] = _stamp(dest, sha256, git_sha1)
        tmp = dest.parent / (VERIFIED + f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(d, indent=0, sort_keys=True))
        os.replace(tmp, dest.parent / VERIFIED)


def is_complete(dest: Path, size: int, sha256: str | None = None, git_sha1: str | None = None) -> bool:
    """A file in place whose content is the listing's: its size, and — when the listing gives a hash — recorded as
    verified against that hash and unchanged since (size and modification time, :data:`VERIFIED`), or else hashed
    now (once per process) and recorded. A file of the right size from another commit, or changed on disk, is not
    complete; without any hash the size is all there is to check."""
    try:
        st = dest.stat()
    except OSError:
        return False
    if not dest.is_file() or st.st_size != size:
        return False
    if not sha256 and not git_sha1:
        return True
    if _verified(dest.parent).get(dest.name) == _stamp(dest, sha256, git_sha1):
        return True
    key = (str(dest), st.st_size, st.st_mtime_ns, sha256, git_sha1)
    if key not in _hashed:
        _hashed[key] = hash_file(dest, "sha256" if sha256 else "sha1") == (sha256 or git_sha1)
        if _hashed[key]:
            record_verified(dest, sha256, git_sha1)
    return _hashed[key]


def recorded_bytes(dest: Path, size: int, sha256: str | None) -> int:
    """Bytes of ``dest`` its partial download's sidecar records as on disk, 0 when there is none or it belongs to
    another file (size or sha256 differ). The URL, ETag and commit are checked when the download starts."""
    try:
        side = json.loads(dest.with_name(dest.name + SIDE).read_text())
        if side.get("size") != size or side.get("sha256") != sha256:
            return 0
        return sum(s[2] for s in side["segments"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def segments_for(size: int, ranges: int) -> list[list[int]]:
    """Split ``size`` bytes into at most ``ranges`` segments of at least SEGMENT_MIN bytes (one for small files)."""
    n = max(1, min(ranges, size // SEGMENT_MIN)) if size > SEGMENT_MIN else 1
    step = -(-size // n) if size else 0
    return [[i * step, min(size, (i + 1) * step), 0] for i in range(n)] if size else [[0, 0, 0]]


def new_hash(algo: str, size: int):
    """An empty sha256, or (``algo="sha1"``) the start of a git object id: sha1 of ``blob <size>\\0`` + content."""
    return hashlib.sha256() if algo == "sha256" else hashlib.sha1(b"blob %d\0" % size)


def hash_file(path: Path, algo: str) -> str:
    """sha256 of a file, or (``algo="sha1"``) its git object id (:func:`new_hash`)."""
    h = new_hash(algo, path.stat().st_size)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(8 << 20), b""):
            h.update(block)
    return h.hexdigest()


@contextlib.contextmanager
def folder_lock(folder: Path):
    """One download into ``folder`` at a time (an exclusive flock on ``folder/.yichui-download.lock``, released when
    the process ends, however it ends). Re-entrant within a process: the snapshot holds it from its first line about
    the folder, the downloader inside it again.

    Raises:
        StepError: ``hub.busy`` (with the holder's pid) while another process downloads there.
    """
    import fcntl

    folder.mkdir(parents=True, exist_ok=True)
    key = str(folder.resolve())
    with _held_lock:
        if _held.get(key):
            _held[key] += 1
            nested = True
        else:
            nested = False
    if nested:
        try:
            yield
        finally:
            with _held_lock:
                _held[key] -= 1
        return
    fh = open(folder / LOCK, "a+")
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            raise StepError("hub.busy", path=str(folder), pid=fh.read().strip() or "?") from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        with _held_lock:
            _held[key] = 1
        try:
            yield
        finally:
            with _held_lock:
                _held.pop(key, None)
    finally:
        fh.close()


_held: dict[str, int] = {}  # folders this process holds the lock of → how deep (folder_lock)
_held_lock = threading.Lock()


class Downloader:
    """Fetch ``items`` into ``local_dir``.

    Args:
        local_dir: the model folder (created).
        headers: sent with every request (authorization); never written anywhere.
        commit: recorded in each sidecar; a sidecar of another commit is not resumed.
        workers: ranges fetched at once, over all files.
        ranges: at most this many ranges for one large file.
        on_bytes: ``(path, n)`` called for every n bytes written (progress).
        on_file: ``(path, status)`` with status "start", "done", "skipped" or "refetch".
        stop: set it to stop promptly (Ctrl-C); what was fetched stays, the sidecars are current.
    """

    def __init__(self, local_dir: Path, headers: dict | None = None, commit: str | None = None, workers: int = 8,
                 ranges: int = 4, on_bytes: Callable[[str, int], None] | None = None,
                 on_file: Callable[[str, str], None] | None = None, stop: threading.Event | None = None):
        import requests
        from requests.adapters import HTTPAdapter

        self.local_dir = Path(local_dir)
        self.commit, self.workers, self.ranges = commit, workers, ranges
        self.on_bytes = on_bytes or (lambda p, n: None)
        self.on_file = on_file or (lambda p, s: None)
        self.stop = stop or threading.Event()
        self.http = requests.Session()
        self.http.headers.update(headers or {})
        adapter = HTTPAdapter(pool_connections=workers, pool_maxsize=workers * 2)
        self.http.mount("http://", adapter)
        self.http.mount("https://", adapter)
        self.fetched = 0  # bytes received over the network in this run
        self._active: set = set()  # responses being read: closed on stop so no worker waits on a stalled socket
        self._active_lock = threading.Lock()

    # -- public --------------------------------------------------------------------------------------------------
    def fetch(self, items: list[Item]) -> dict:
        """Download every item; returns ``{"files", "skipped", "fetched_bytes"}``.

        Raises:
            StepError: access denied / not found / disk full / hash still wrong / retries exhausted / unsafe name.
            KeyboardInterrupt: after ``stop`` was set (Ctrl-C); partial files and sidecars are kept.
        """
        with folder_lock(self.local_dir):
            # one HEAD per file (its ETag): at once, not one round trip after another
            with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="yichui-prep") as pool:
                files = list(pool.map(self._prepare, items))
            todo = [f for f in files if f is not None]
            skipped = len(files) - len(todo)
            if todo:
                self._run(todo)
        return {"files": len(files), "skipped": skipped, "fetched_bytes": self.fetched}

    def describe(self, it: Item) -> Item:
        """``it`` with the size and hashes its listing lacked, from the file's HEAD, read as huggingface_hub's
        ``get_hf_file_metadata`` reads it (file_download.py): size from ``X-Linked-Size`` (a large file redirected to
        storage) or ``Content-Length``; ``X-Linked-Etag`` is a large file's sha256, a directly served file's 40-hex
        ``ETag`` its git blob sha1 and a 64-hex one its sha256 (a mirror serving a large file itself); other ETags
        (storage MD5s) are no hash. A relative redirect (a renamed
        repository) is followed as the hub client does; an absolute one (storage) only when it gave no size, with a
        HEAD that carries no token (another host).

        Raises:
            StepError: ``hub.size_unknown`` when no answer gives a size; :meth:`_request`'s errors.
        """
        from urllib.parse import urljoin

        url = it.url
        for _ in range(3):
            r = self._request("HEAD", Item(it.path, url, 0), allow_redirects=False)
            loc = r.headers.get("Location", "")
            if not (r.is_redirect and loc.startswith("/") and not r.headers.get("X-Linked-Size")):
                break
            url = urljoin(url, loc)
        redirect = 300 <= r.status_code < 400
        size = header_size(r.headers.get("X-Linked-Size"))
        if size is None and not redirect and r.status_code == 200:
            size = header_size(r.headers.get("Content-Length"))
        if size is None and r.is_redirect and loc:
            import requests

            try:
                size = header_size(requests.head(urljoin(url, loc), allow_redirects=True, timeout=TIMEOUT).headers
                                   .get("Content-Length"))
            except requests.RequestException:
                size = None
        if size == 0:  # an empty file by its headers: its GET must say so too (a HEAD can be wrong)
            g = self._request("GET", Item(it.path, it.url, 0), stream=True)
            body = g.raw.read(1)
            g.close()
            size = None if body or header_size(g.headers.get("Content-Length")) not in (0, None) else 0
        if size is None:
            raise StepError("hub.size_unknown", file=it.path, url=it.url)
        linked = (r.headers.get("X-Linked-Etag") or "").strip('"').lower()
        etag = (r.headers.get("ETag") or "").strip('"').lower()
        # a mirror serving a large file itself carries its sha256 in the ETag (64 hex): as good as X-Linked-Etag
        return Item(it.path, it.url, size, it.sha256 or hex_digest(linked, 64) or hex_digest(etag, 64),
                    it.git_sha1 or (None if linked else hex_digest(etag, 40)))

    # -- preparation -----------------------------------------------------------------------------------------
    def _prepare(self, it: Item) -> _File | None:
        rel = safe_relpath(it.path)
        dest = self.local_dir / rel
        etag = None
        if not it.sha256 and not it.git_sha1:  # a listing without hashes: every hash the hub gives is used
            etag = self._etag(it)
            tag = (etag or "").lower()  # X-Linked-Etag or a mirror's ETag: sha256; a direct file's: git blob sha1
            it = dataclasses.replace(it, sha256=hex_digest(tag, 64), git_sha1=hex_digest(tag, 40))
        if is_complete(dest, it.size, it.sha256, it.git_sha1) and weights_header_ok(dest, it.path):
            self.on_file(it.path, "skipped")
            return None
        f = _File(it, dest, dest.with_name(dest.name + PART), dest.with_name(dest.name + SIDE))
        f.etag = etag or self._etag(it)
        side = self._read_side(f)
        if side is not None:
            f.segments = side["segments"]
        else:
            self._reset(f, segments_for(it.size, self.ranges))
        return f

    def _reset(self, f: _File, segments: list[list[int]]) -> None:
        """Start ``f`` over: no sidecar first (a kill now must not leave one claiming bytes), then an empty sparse
        part file of full size (ranges are written in place), then the new sidecar."""
        f.side.unlink(missing_ok=True)
        with f.lock:
            f.segments = segments
            f.hasher, f.hashed = None, 0
        f.dest.parent.mkdir(parents=True, exist_ok=True)
        with open(f.part, "wb") as fh:
            fh.truncate(f.item.size)
        self._write_side(f)

    def _etag(self, it: Item) -> str | None:
        """The server's ETag for the file (X-Linked-Etag when the hub redirects large files to storage)."""
        r = self._request("HEAD", it, allow_redirects=False)
        return (r.headers.get("X-Linked-Etag") or r.headers.get("ETag") or "").strip('"') or None

    def _read_side(self, f: _File) -> dict | None:
        try:
            side = json.loads(f.side.read_text())
        except (OSError, ValueError):
            return None
        same = (side.get("url") == f.item.url and side.get("size") == f.item.size
                and side.get("sha256") == f.item.sha256 and side.get("etag") == f.etag
                and side.get("commit") == self.commit and f.part.is_file() and f.part.stat().st_size == f.item.size)
        return side if same else None

    def _write_side(self, f: _File) -> None:
        """Record progress. The byte counts are padded to a fixed width, so an update has the same length as the
        file and is written in place with one pwrite (cheap enough for every 64 KiB); anything else is written to a
        temp file and renamed. Either way a reader sees a whole sidecar."""
        head = json.dumps({"url": f.item.url, "etag": f.etag, "commit": self.commit, "size": f.item.size,
                           "sha256": f.item.sha256})[:-1]
        segs = ", ".join(f"[{a}, {b}, {d:<20d}]" for a, b, d in f.segments)
        text = (f'{head}, "segments": [{segs}]}}\n').encode()
        if f.side_len == len(text) and f.side.exists():
            fd = os.open(f.side, os.O_WRONLY)
            try:
                os.pwrite(fd, text, 0)
            finally:
                os.close(fd)
            return
        tmp = f.side.with_name(f.side.name + ".tmp")
        tmp.write_bytes(text)
        os.replace(tmp, f.side)
        f.side_len = len(text)

    def _discard(self, f: _File) -> None:
        f.part.unlink(missing_ok=True)
        f.side.unlink(missing_ok=True)

    # -- transfer --------------------------------------------------------------------------------------------
    def _request(self, method: str, it: Item, headers: dict | None = None, stream: bool = False,
                 allow_redirects: bool = True):
        import requests

        for attempt in itertools.count():  # _backoff raises after RETRIES failures
            if self.stop.is_set():
                raise KeyboardInterrupt
            try:
                r = self.http.request(method, it.url, headers=headers, stream=stream, timeout=TIMEOUT,
                                      allow_redirects=allow_redirects)
            except requests.RequestException as e:
                self._backoff(attempt, it, e)
                continue
            if r.status_code in (401, 403) and r.history:  # storage refused the hub's signed link (it expired
                r.close()                                  # or was cut short): resolve the file again
                if attempt + 1 >= RETRIES:
                    from urllib.parse import urlparse

                    raise StepError("hub.link_expired", file=it.path, host=urlparse(r.url).netloc,
                                    status=r.status_code)
                self._backoff(attempt, it, f"HTTP {r.status_code} from storage")
                continue
            if r.status_code in (401, 403):
                gated = r.headers.get("X-Error-Code") == "GatedRepo"
                raise StepError("hub.download_gated" if gated else "hub.download_denied", file=it.path,
                                status=r.status_code, url=it.url.split("/resolve/")[0].split("/api/")[0])
            if r.status_code == 404:
                raise StepError("hub.not_found", file=it.path, url=it.url)
            if r.status_code >= 500 or r.status_code == 429:
                r.close()
                wait = retry_after(r.headers.get("Retry-After"))
                longer = wait is not None and wait > RETRY_AFTER_MAX  # not waited for in silence: said at once
                if r.status_code == 429 and (attempt + 1 >= RETRIES or longer):
                    raise StepError("hub.rate_limited", file=it.path,
                                    seconds=int(min(wait if wait is not None else RETRY_AFTER_MAX, 10**9)))
                if longer:
                    raise StepError("hub.network", file=it.path,
                                    error=f"HTTP {r.status_code}, Retry-After {int(min(wait, 10**9))} s")
                self._backoff(attempt, it, f"HTTP {r.status_code}", wait)
                continue
            return r

    def _check_answer(self, f: _File, r, start: int) -> None:
        """The answer is the part that was asked for, of a file of the expected size: a 206's Content-Range starts at
        ``start`` and gives the file's size as its total, a 200's Content-Length is the file's size.

        Raises:
            StepError: ``hub.size_mismatch`` (the hub serves another file than it described; partial kept).
        """
        if r.status_code == 206:
            m = re.fullmatch(r"\s*bytes\s+([0-9]+)-([0-9]+)/([0-9]+|\*)\s*", r.headers.get("Content-Range") or "")
            ok = m is not None and int(m.group(1)) == start and m.group(3) in ("*", str(f.item.size))
            got = f"Content-Range {(r.headers.get('Content-Range') or '')[:60]!r} for bytes {start}-"
        else:
            n = header_size(r.headers.get("Content-Length"))
            ok, got = n is None or n == f.item.size, n
        if not ok:
            r.close()
            self._flush_quietly(f)
            raise StepError("hub.size_mismatch", file=f.item.path, expected=f.item.size, got=got)

    def _backoff(self, attempt: int, it: Item, why, wait: float | None = None) -> None:
        """Wait before attempt ``attempt + 1`` (0.5 s doubling, at most 8 s; longer when the server's Retry-After
        says so, at most RETRY_AFTER_MAX); raise ``hub.network`` once RETRIES attempts in a row have failed."""
        if attempt + 1 >= RETRIES:
            raise StepError("hub.network", file=it.path, error=str(why).splitlines()[0][:200])
        end = time.monotonic() + max(min(8.0, 0.5 * 2**attempt), min(wait or 0.0, RETRY_AFTER_MAX))
        while time.monotonic() < end:
            if self.stop.is_set():
                raise KeyboardInterrupt
            time.sleep(0.05)

    def _segment(self, f: _File, idx: int) -> None:
        """Fetch what is missing of one segment, retrying from the last byte on disk. Only failures in a row count
        against RETRIES: a connection that moved the segment forward starts the count again (a long download over
        a flaky link must not fail for drops spread over hours)."""
        import requests
        import urllib3

        seg = f.segments[idx]
        attempt = 0
        while True:
            start, end, done = seg
            if start + done >= end:
                return
            headers = {"Range": f"bytes={start + done}-{end - 1}"}
            r = self._request("GET", f.item, headers=headers, stream=True)
            with self._active_lock:
                self._active.add(r)
            try:
                if r.status_code == 200 and (start + done > 0 or end < f.item.size):
                    raise _RangeIgnored()
                if r.status_code not in (200, 206):
                    raise StepError("hub.http", file=f.item.path, status=r.status_code)
                self._check_answer(f, r, start + done)
                # one socket read at a time (read1): the bytes that arrived before a connection dropped are written,
                # where a read that fills CHUNK would raise and discard them
                r.raw.enforce_content_length = False
                # the range from byte 0 hashes what it writes, in order: a file fetched as one range needs no
                # second read to be verified (bytes of an earlier run are hashed from the disk first)
                hashing = start == 0 and f.expected()[1] is not None
                if hashing:
                    if f.hasher is None:
                        f.new_hasher()
                    f.hash_until(start + done)
                with open(f.part, "r+b") as fh:
                    pos = start + done
                    while True:
                        if self.stop.is_set():
                            raise KeyboardInterrupt
                        block = r.raw.read1(CHUNK)[: end - pos]
                        if not block:
                            break
                        if hashing:
                            f.hasher.update(block)
                            f.hashed += len(block)
                        view = memoryview(block)
                        while view:  # a short write (a disk filling up) counts only what reached the file
                            n = os.pwrite(fh.fileno(), view, pos)
                            if n <= 0:
                                raise OSError(errno.ENOSPC, "short write")
                            pos += n
                            self._advance(f, idx, n)
                            view = view[n:]
                        if pos >= end:
                            break
                if seg[0] + seg[2] >= end:
                    self._flush(f, idx, force=True)
                    return
                raise requests.ConnectionError("connection closed early")
            except (requests.RequestException, urllib3.exceptions.HTTPError, ConnectionError) as e:
                self._flush(f, idx, force=True)
                attempt = 0 if seg[2] > done else attempt
                self._backoff(attempt, f.item, e)
                attempt += 1
            except OSError as e:
                if e.errno == errno.ENOSPC:
                    self._flush_quietly(f)
                    raise StepError("hub.disk_full", file=f.item.path, path=str(self.local_dir)) from None
                raise
            finally:
                with self._active_lock:
                    self._active.discard(r)
                r.close()

    def _advance(self, f: _File, idx: int, n: int) -> None:
        with f.lock:
            f.segments[idx][2] += n
            f.since_flush[idx] = f.since_flush.get(idx, 0) + n
            self.fetched += n
        self.on_bytes(f.item.path, n)
        self._flush(f, idx)

    def _flush(self, f: _File, idx: int, force: bool = False) -> None:
        with f.lock:
            if force or f.since_flush.get(idx, 0) >= SIDECAR_EVERY:
                f.since_flush[idx] = 0
                try:
                    self._write_side(f)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    # the disk is full: the previous sidecar stays (it claims less than is on disk, never more)
                    raise StepError("hub.disk_full", file=f.item.path, path=str(self.local_dir)) from None

    def _flush_quietly(self, f: _File) -> None:
        """Best effort, on the way out (interrupt, full disk): record what is on disk, never raise over the
        original error."""
        with f.lock:
            try:
                self._write_side(f)
            except OSError:
                pass  # the previous sidecar stays valid

    def _finish(self, f: _File) -> bool:
        """Verify and move into place (in a worker: hashing what the first range did not hash runs beside the other
        files' transfers). False: the hash was wrong once, the file is to be fetched again."""
        _, want = f.expected()
        if want:
            if f.hasher is None:
                f.new_hasher()
            f.hash_until(f.item.size)
        hash_ok = not want or f.hasher.hexdigest() == want
        header_ok = hash_ok and weights_header_ok(f.part, f.item.path)
        if hash_ok and want and not header_ok:  # the very file the hub lists is broken there: fetching it again
            self._discard(f)  # cannot help
            raise StepError("hub.broken_in_repo", file=f.item.path)
        if not header_ok:
            if f.refetched:
                self._discard(f)
                raise StepError("hub.bad_hash" if want else "hub.bad_weights", file=f.item.path)
            f.refetched = True
            self.on_file(f.item.path, "refetch")
            self._reset(f, segments_for(f.item.size, self.ranges))
            return False
        os.replace(f.part, f.dest)
        if want:
            record_verified(f.dest, f.item.sha256, f.item.git_sha1)
        f.side.unlink(missing_ok=True)
        self.on_file(f.item.path, "done")
        return True

    def _run(self, files: list[_File]) -> None:
        pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="yichui-dl")
        pending: dict = {}  # future → its file; a file is finished when it has none left
        verifying: set = set()  # the futures of _finish

        def submit(f: _File, announce: bool = True) -> None:
            if announce:
                self.on_file(f.item.path, "start")
            missing = [i for i, s in enumerate(f.segments) if s[0] + s[2] < s[1]]
            for i in missing:
                pending[pool.submit(self._segment, f, i)] = f
            if not missing:  # all on disk (its last range ended, or a resumed part): verify it
                fut = pool.submit(self._finish, f)
                verifying.add(fut)
                pending[fut] = f

        try:
            for f in files:
                submit(f)
            while pending:
                done, _ = wait(list(pending), timeout=0.2, return_when=FIRST_COMPLETED)
                for fut in done:
                    f = pending.pop(fut, None)
                    if f is None:  # cancelled by a range of its file that ended before it in this turn
                        continue
                    if fut in verifying:
                        verifying.discard(fut)
                        if not fut.result():  # the hash was wrong once: fetched again from byte 0
                            submit(f)
                        continue
                    try:
                        fut.result()
                    except _RangeIgnored:
                        f.whole = True
                        for other in [k for k, v in pending.items() if v is f]:
                            if other.cancel():  # not started; a running one ends by itself (at the same 200)
                                pending.pop(other)
                    if any(v is f for v in pending.values()):
                        continue  # its other ranges still run: they share the partial file and its segments
                    if f.whole:
                        f.whole, f.restarts = False, f.restarts + 1
                        if f.restarts > RETRIES:
                            raise StepError("hub.range_ignored", file=f.item.path, n=RETRIES)
                        self._reset(f, [[0, f.item.size, 0]])  # the server ignores Range: one stream from byte 0
                        submit(f)
                    else:
                        submit(f, announce=False)  # every range done: verified in the pool
        except BaseException:
            self.stop.set()
            for fut in pending:
                fut.cancel()
            with self._active_lock:
                for r in list(self._active):
                    try:
                        r.close()  # wakes a worker blocked on the socket
                    except Exception:  # noqa: BLE001 - closing from another thread may race; the worker stops anyway
                        pass
            pool.shutdown(wait=True)
            for f in files:
                if f.part.exists():
                    self._flush_quietly(f)
            raise
        pool.shutdown(wait=True)


class _RangeIgnored(Exception):
    """The server answered a Range request with the whole file."""
