"""Model hubs through their own clients: Hugging Face (huggingface_hub, any mirror via an endpoint) and ModelScope.

Used by select_model (config.json only, no weights) and download (the files of one revision, with a byte progress
bar and the commit recorded). Tokens come from the environment (HF_TOKEN / MODELSCOPE_API_TOKEN) or the hubs' own
login caches, read by the clients themselves; yichui never stores them.

File bytes are fetched by yichui's own resumable, verified downloader (recipes/hub/downloader.py) from the URLs
:func:`file_url` builds; listing, configs and tokens go through the hubs' clients.
"""
from __future__ import annotations

import fnmatch
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from recipes.base import Choice, StepError

# a hub id: org/name, neither part starting with a dot (no "..", no hidden folder once it is a local path)
REPO_ID = re.compile(r"[\w-][\w.-]*/[\w-][\w.-]*")


def is_repo_id(value: str | None) -> bool:
    """Whether ``value`` is a hub id (org/name) that is safe as a path below a folder."""
    return bool(value) and REPO_ID.fullmatch(value or "") is not None and ".." not in (value or "")

SOURCES = ("hf", "modelscope", "local")
DEFAULT_ENDPOINTS = {"hf": "https://huggingface.co", "modelscope": "https://www.modelscope.cn"}
ENDPOINT_ENV = {"hf": "HF_ENDPOINT", "modelscope": "MODELSCOPE_ENDPOINT"}
# offered after an endpoint is refused (a blocked huggingface.co is common for this tool's users)
MIRRORS = {"hf": ("https://hf-mirror.com",), "modelscope": ()}
SKIP_PATTERNS = ("original/*", "*.gguf", ".gitattributes", "*.md", "*.pdf", "*.png", "*.jpg")


def default_endpoint(source: str) -> str | None:
    if source not in ENDPOINT_ENV:
        return None
    return os.environ.get(ENDPOINT_ENV[source]) or DEFAULT_ENDPOINTS[source]


def endpoint_choices(source: str) -> list[Choice]:
    """The endpoints a user may switch to for ``source``: the environment's (HF_ENDPOINT / MODELSCOPE_ENDPOINT),
    the official one, the known mirrors; [] for a source with no endpoint."""
    urls = [os.environ.get(ENDPOINT_ENV[source], ""), DEFAULT_ENDPOINTS[source], *MIRRORS[source]] \
        if source in ENDPOINT_ENV else []
    return [Choice(u, u) for u in dict.fromkeys(u for u in urls if u)]


@dataclass
class RemoteFile:
    """One file of a listing: path, size in bytes (None: the listing did not say), sha256, git blob sha1."""

    path: str
    size: int | None
    sha256: str | None
    git_sha1: str | None = None


TOKEN_ENV = {"hf": "HF_TOKEN", "modelscope": "MODELSCOPE_API_TOKEN"}  # what each hub's client reads


def _quiet_modelscope() -> None:
    """modelscope_hub logs every listing at INFO on its own stderr handler: yichui says what happens itself, so only
    its warnings pass, unless the user chose a level (MODELSCOPE_LOG_LEVEL). Set on its logger, not through that
    variable: the legacy ``modelscope`` package reads the same variable as a number and fails on a name."""
    if os.environ.get("MODELSCOPE_LOG_LEVEL"):
        return
    import logging

    from modelscope_hub.utils.logger import get_logger

    sdk = get_logger()  # configures the SDK's logger once (INFO by default); the level set here then stays
    sdk.setLevel(max(sdk.level, logging.WARNING))


def _denied(source: str, repo_id: str, endpoint: str, fallback: str) -> StepError:
    """A 401/403 for a repository: the token set for that hub was refused, or (none set) ``fallback``'s line."""
    if auth_headers(source):
        return StepError("hub.token_refused", repo=repo_id, endpoint=endpoint, token=TOKEN_ENV[source])
    return StepError(fallback, repo=repo_id, endpoint=endpoint, token=TOKEN_ENV[source])


def is_url(value: str) -> bool:
    """Whether ``value`` is an http(s) URL with a host and, if it names one, a port from 1 to 65535 (a port of 99999
    reached the HTTP library and was called "cannot reach": the tester's N21, issue 46)."""
    from urllib.parse import urlsplit

    if not re.match(r"https?://[^\s/]+", value or ""):
        return False
    try:
        parts = urlsplit(value)
        return bool(parts.hostname) and parts.port != 0
    except ValueError:  # "Port out of range 0-65535", a port that is not a number
        return False


def _missing(repo_id: str, endpoint: str, repo_type: str) -> StepError:
    return StepError("hub.no_such_dataset" if repo_type == "dataset" else "hub.no_such_model", repo=repo_id,
                     endpoint=endpoint)


def _local_disk(exc: Exception, source: str) -> StepError | None:
    """A file-system error of the hub client's own cache (HF_HOME / MODELSCOPE_CACHE read-only, a file where its
    folder goes, the disk full): said as the disk's, not as "cannot reach the hub" (issue 46 item 21)."""
    seen = exc
    for _ in range(4):  # the client may wrap it
        if isinstance(seen, OSError) and getattr(seen, "filename", None) and not isinstance(seen, ConnectionError):
            return StepError("hub.cache_unwritable", path=str(seen.filename), error=seen.strerror or type(seen).__name__,
                             var="HF_HOME" if source == "hf" else "MODELSCOPE_CACHE")
        seen = seen.__cause__ or seen.__context__  # type: ignore[assignment]
        if seen is None:
            return None
    return None


def _rate_limited(exc: Exception, endpoint: str, source: str) -> StepError | None:
    """HTTP 429 still after :func:`retrying`'s attempts: said as the hub limiting requests (with what helps), not as
    "not a model hub" (the tester's N9, issue 46)."""
    if _status(exc) == 429 or _status(getattr(exc, "__cause__", None)) == 429:
        from recipes.hub.downloader import RETRIES

        return StepError("hub.api_rate_limited", endpoint=endpoint, tries=RETRIES,
                         var="HF_TOKEN" if source == "hf" else "MODELSCOPE_API_TOKEN")
    return None


def _hf_errors(exc: Exception, repo_id: str, endpoint: str, revision: str, repo_type: str = "model") -> StepError:
    from huggingface_hub import errors

    if (disk := _local_disk(exc, "hf")) is not None:
        return disk
    if (limited := _rate_limited(exc, endpoint, "hf")) is not None:
        return limited
    if any(isinstance(e, errors.OfflineModeIsEnabled) for e in (exc, exc.__cause__, exc.__context__)):
        return StepError("hub.offline", repo=repo_id)  # said as the switch it is, not as a network down
    if isinstance(exc, errors.LocalEntryNotFoundError):  # no connection and nothing cached
        cause = exc.__cause__ or exc.__context__
        if type(cause) is errors.HfHubHTTPError:  # something answered, with an error no hub gives for a model
            return StepError("hub.bad_answer", endpoint=endpoint, error=_first_line(cause))
        return StepError("hub.unreachable", endpoint=endpoint,
                         error=f"{type(cause).__name__}: {_first_line(cause)}" if cause else type(exc).__name__)
    if isinstance(exc, errors.GatedRepoError):
        return StepError("hub.gated", repo=repo_id, endpoint=endpoint)
    if isinstance(exc, errors.RepositoryNotFoundError):  # with a 401 the Hub does not say which: missing or private
        if getattr(getattr(exc, "response", None), "status_code", None) == 401:
            return _denied("hf", repo_id, endpoint, "hub.missing_or_private")
        return _missing(repo_id, endpoint, repo_type)
    if isinstance(exc, errors.RevisionNotFoundError):
        return StepError("hub.no_such_revision", repo=repo_id, revision=revision)
    if isinstance(exc, errors.EntryNotFoundError):
        return StepError("hub.no_config", repo=repo_id)
    if type(exc) is errors.HfHubHTTPError:
        return StepError("hub.bad_answer", endpoint=endpoint, error=_first_line(exc))
    if isinstance(exc, (ValueError, TypeError, KeyError, AttributeError)):  # it answered, with no listing we can read
        return StepError("hub.bad_answer", endpoint=endpoint, error=f"{type(exc).__name__}: {_first_line(exc)}")
    return StepError("hub.unreachable", endpoint=endpoint, error=f"{type(exc).__name__}: {_first_line(exc)}")


def _first_line(exc: Exception) -> str:
    lines = [x for x in str(exc).splitlines() if x.strip()]
    return lines[0] if lines else ""


def _ms_errors(exc: Exception, repo_id: str, endpoint: str, revision: str, repo_type: str = "model") -> StepError:
    from modelscope_hub.errors import AuthenticationError, PermissionDeniedError

    if (disk := _local_disk(exc, "modelscope")) is not None:
        return disk
    if (limited := _rate_limited(exc, endpoint, "modelscope")) is not None:
        return limited
    text = str(exc)
    if isinstance(exc, (AuthenticationError, PermissionDeniedError)) or \
            re.search(r"\b(401|403)\b|unauthori[sz]ed|forbidden", text, re.I):  # the legacy client's text
        return _denied("modelscope", repo_id, endpoint, "hub.denied")
    if isinstance(exc, (ValueError, TypeError, KeyError, AttributeError)) and "404" not in text:
        return StepError("hub.bad_answer", endpoint=endpoint, error=f"{type(exc).__name__}: {_first_line(exc)}")
    if "404" in text or "not found" in text.lower() or "not exist" in text.lower():
        if "revision" in text.lower() and revision not in ("main", "master", ""):  # ModelScope names what is missing
            return StepError("hub.no_such_revision", repo=repo_id, revision=revision)
        return _missing(repo_id, endpoint, repo_type)
    return StepError("hub.unreachable", endpoint=endpoint, error=f"{type(exc).__name__}: {_first_line(exc)}")


def offline() -> bool:
    """Whether huggingface_hub's offline mode is on, as the client that refuses reads it (HF_HUB_OFFLINE or
    TRANSFORMERS_OFFLINE, read when it is imported)."""
    from huggingface_hub import is_offline_mode

    return is_offline_mode()


def unreachable(source: str, endpoint: str | None) -> StepError | None:
    """One HEAD to the endpoint (5 s to connect, proxies from the environment as the hub clients use them): the
    hub.unreachable error when nothing answers there, else None. The clients retry a refused connection for ~23 s
    (huggingface_hub 2.4: 5 retries, backoff 1-8 s) or ~31 s (modelscope 1.40) per call, and a question makes up to
    three calls: a wrong endpoint should cost a moment, not a minute. Any HTTP answer, even an error status, counts
    as reachable (the client then says what it means). Skipped in offline mode (HF_HUB_OFFLINE), where the client
    reads its cache."""
    import requests

    if source not in ENDPOINT_ENV or offline():
        return None
    endpoint = endpoint or default_endpoint(source) or ""
    try:
        requests.head(endpoint, timeout=(5, 10), allow_redirects=False)
    except (requests.ConnectionError, requests.exceptions.InvalidURL, requests.exceptions.MissingSchema,
            requests.exceptions.InvalidSchema) as e:
        return StepError("hub.unreachable", endpoint=endpoint, error=f"{type(e).__name__}: {_reason(e)}")
    except requests.RequestException:  # e.g. a slow answer: something is there
        return None
    return None


def _reason(exc: Exception) -> str:
    """The innermost cause of a requests/urllib3 connection error, e.g. "[Errno 111] Connection refused"."""
    text = str(exc)
    m = re.search(r"(\[Errno -?\d+\][^'\")]*)", text)
    return m.group(1).strip() if m else _first_line(exc)


def _status(exc: BaseException | None) -> int | None:
    """The HTTP status an exception from either hub client carries (its own, or its cause's), or None."""
    for e in (exc, getattr(exc, "__cause__", None), getattr(exc, "__context__", None)):
        status = getattr(getattr(e, "response", None), "status_code", None) or getattr(e, "status_code", None)
        if isinstance(status, int):
            return status
    return None


def retrying(call):
    """``call()``, again after a transient answer (HTTP 429 or 5xx) — the download's rule (recipes/hub/downloader.py:
    RETRIES attempts, backoff 0.5 s doubling to at most 8 s) for every other hub request, so a hub that fails one
    request in three lists a model as it serves its files (issue 46 item 16). Other errors are raised at once."""
    import time

    from recipes.hub.downloader import RETRIES

    for attempt in range(1, RETRIES + 1):
        try:
            return call()
        except Exception as e:
            status = _status(e)
            if attempt == RETRIES or not (status == 429 or (status is not None and status >= 500)):
                raise
            time.sleep(min(8.0, 0.5 * 2 ** (attempt - 1)))


def fetch_config(source: str, ref: str, endpoint: str | None = None, revision: str = "main") -> dict:
    """Return the parsed config.json of a hub repository or local folder, without fetching weights.

    Raises:
        StepError: no such model / revision, no config.json, hub unreachable, config not JSON.
    """
    if source == "local":
        p = Path(ref).expanduser() / "config.json"
        if p.parent.exists() and not p.parent.is_dir():  # a file (config.json itself, a weights file): its folder
            if (p.parent.parent / "config.json").is_file():
                raise StepError("hub.file_not_folder", path=str(p.parent), folder=str(p.parent.parent))
            raise StepError("hub.not_a_folder", path=str(p.parent))  # a FIFO, /dev/null, a file elsewhere
        if not p.parent.is_dir():
            raise StepError("hub.no_such_folder", path=str(Path(ref).expanduser()))
        if not p.is_file():
            raise StepError("hub.no_local_model", path=str(Path(ref).expanduser()))
        path = p
    elif source == "hf":
        import huggingface_hub as hh

        down = unreachable(source, endpoint)
        try:  # nothing answers: a config cached earlier still serves
            path = retrying(lambda: hh.hf_hub_download(ref, "config.json", revision=revision, endpoint=endpoint,
                                                       local_files_only=down is not None))
        except Exception as e:
            raise down or _hf_errors(e, ref, endpoint or "", revision) from None
    elif source == "modelscope":
        _quiet_modelscope()
        from modelscope.hub.file_download import model_file_download

        if (down := unreachable(source, endpoint)) is not None:
            raise down
        try:
            path = retrying(lambda: model_file_download(ref, "config.json", revision=_ms_rev(revision),
                                                        endpoint=endpoint))
        except Exception as e:
            raise _ms_errors(e, ref, endpoint or "", revision) from None
    else:
        raise StepError("hub.unknown_source", source=source, sources=list(SOURCES))
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise StepError("hub.bad_config", repo=ref, error=str(e)) from None


def _ms_rev(revision: str) -> str:
    return "master" if revision in ("main", "", None) else revision


def list_files(source: str, repo_id: str, endpoint: str, revision: str,
               repo_type: str = "model") -> tuple[str | None, list[RemoteFile]]:
    """The commit a revision resolves to and the files in it: path, size in bytes, sha256 (LFS files on Hugging Face,
    every file on ModelScope), git blob sha1 (Hugging Face)."""
    if (down := unreachable(source, endpoint)) is not None:
        raise down
    if source == "hf":
        import huggingface_hub as hh

        api = hh.HfApi(endpoint=endpoint)
        try:
            info = _answered_within(LISTING_TIMEOUT, endpoint, lambda: retrying(lambda: (
                api.dataset_info if repo_type == "dataset" else api.model_info)(
                repo_id, revision=revision, files_metadata=True)))
            # a mirror may list names only (no ``blobs``): sizes and hashes unknown, never 0 (download.describe)
            files = [RemoteFile(s.rfilename, s.size, s.lfs.sha256 if s.lfs else None, None if s.lfs else s.blob_id)
                     for s in info.siblings or []]
        except StepError:
            raise
        except Exception as e:
            raise _hf_errors(e, repo_id, endpoint, revision, repo_type) from None
        return _checked(endpoint, info.sha, files)
    # modelscope 1.40 delegates to modelscope_hub; its file listing keeps each file's sha256 (the legacy wrapper
    # drops it) but not the commit, which the files API carries per file ("Revision"): read there, else None.
    _quiet_modelscope()
    from modelscope_hub import HubApi, RepoType

    try:
        kind = RepoType.DATASET if repo_type == "dataset" else RepoType.MODEL
        entries = _answered_within(LISTING_TIMEOUT, endpoint, lambda: retrying(
            lambda: HubApi(endpoint=endpoint).list_repo_files(repo_id, kind, revision=_ms_rev(revision),
                                                              recursive=True)))
        # ModelScope lists every file's Sha256; modelscope_hub reads a missing Size as 0, so 0 without a hash is a
        # listing that said nothing (a mirror, a proxy): unknown, asked for with a HEAD, never taken as an empty file
        files = [RemoteFile(f.path, None if not f.size and not f.sha256 else f.size, f.sha256 or None)
                 for f in entries if f.type != "tree"]
    except StepError:
        raise
    except Exception as e:
        raise _ms_errors(e, repo_id, endpoint, revision, repo_type) from None
    return _checked(endpoint, _ms_commit(repo_id, endpoint, revision, repo_type), files, strict_commit=False)


LISTING_TIMEOUT = 60.0  # s: a hub that accepts the connection but never lists (the clients wait forever) is given up


def _answered_within(seconds: float, endpoint: str, call):
    """``call()``, or ``hub.unreachable`` when it has not returned within ``seconds`` (it runs on in a daemon thread,
    which the process does not wait for)."""
    import threading

    box: dict = {}

    def run():
        try:
            box["value"] = call()
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = e

    t = threading.Thread(target=run, name="yichui-listing", daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        raise StepError("hub.unreachable", endpoint=endpoint, error=f"no listing within {seconds:.0f} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _checked(endpoint: str, commit, files: list[RemoteFile], strict_commit: bool = True
             ) -> tuple[str | None, list[RemoteFile]]:
    """A listing as untrusted input: a commit of hex digits, names that are text, each once, none both a file and a
    folder, sizes that are whole numbers ≥ 0 (anything else: unknown, asked for with a HEAD), hashes of hex digits.

    Raises:
        StepError: ``hub.bad_answer`` naming what is wrong; ``hub.empty_listing`` when it lists no file.
    """
    from recipes.hub.downloader import hex_digest

    def bad(why: str) -> StepError:
        return StepError("hub.bad_answer", endpoint=endpoint, error=why)

    if commit is not None and not (isinstance(commit, str) and re.fullmatch(r"[0-9a-f]{7,64}", commit)):
        if strict_commit:
            raise bad(f"commit id {str(commit)[:40]!r}")
        commit = None  # ModelScope's per-file "Revision" is a courtesy: without it the branch name is used
    out, seen = [], set()
    for f in files:
        if not isinstance(f.path, str):
            raise bad(f"a file name that is not text: {str(f.path)[:40]!r}")
        if f.path in seen:
            raise bad(f"{f.path[:80]!r} listed twice")
        seen.add(f.path)
        size = f.size if isinstance(f.size, int) and not isinstance(f.size, bool) and f.size >= 0 else None
        out.append(RemoteFile(f.path, size, hex_digest(f.sha256, 64), hex_digest(f.git_sha1, 40)))
        if f.sha256 and not out[-1].sha256 or f.git_sha1 and not out[-1].git_sha1:
            raise bad(f"a hash of {f.path[:80]!r} that is not hexadecimal")
    folders = {"/".join(p.split("/")[:i]) for p in seen for i in range(1, p.count("/") + 1)}
    clash = sorted(seen & folders)
    if clash:
        raise bad(f"{clash[0][:80]!r} is listed as a file and as a folder")
    if not out:
        raise StepError("hub.empty_listing", endpoint=endpoint)
    return commit, out


def _ms_commit(repo_id: str, endpoint: str, revision: str, repo_type: str) -> str | None:
    import requests

    kind, tail = ("datasets", "repo/tree") if repo_type == "dataset" else ("models", "repo/files")
    try:
        r = requests.get(f"{endpoint.rstrip('/')}/api/v1/{kind}/{repo_id}/{tail}",
                         params={"Revision": _ms_rev(revision), "Recursive": "False"}, headers=auth_headers("modelscope"),
                         timeout=15)
        files = (r.json().get("Data") or {}).get("Files") or []
    except (requests.RequestException, ValueError, AttributeError):
        return None
    rev = next((f.get("Revision") or f.get("CommitId") for f in files if f.get("Revision") or f.get("CommitId")), None)
    return rev if rev and re.fullmatch(r"[0-9a-f]{7,64}", rev) else None


def select_files(files: list[RemoteFile], include: list[str] | None = None,
                 exclude: list[str] | None = None) -> list[RemoteFile]:
    """Pick what a loader needs: ``include`` / ``exclude`` globs as huggingface_hub applies them
    (``allow_patterns`` / ``ignore_patterns``); without ``include`` also safetensors over .bin/.pth duplicates and
    no original/ or GGUF."""
    from huggingface_hub.utils import filter_repo_objects

    picked = list(filter_repo_objects(files, allow_patterns=include or None, ignore_patterns=exclude or None,
                                      key=lambda f: f.path))
    if include:  # asked for by name
        return picked
    has_st = any(f.path.endswith(".safetensors") for f in files)
    return [f for f in picked if not any(fnmatch.fnmatch(f.path, p) for p in SKIP_PATTERNS)
            and not (has_st and f.path.endswith((".bin", ".pth", ".pt", ".msgpack", ".h5")))]


def file_url(source: str, repo_id: str, endpoint: str, revision: str, path: str, repo_type: str = "model") -> str:
    """Where a file's bytes are: Hugging Face ``/{repo}/resolve/{rev}/{path}`` (datasets under ``/datasets``),
    ModelScope ``/api/v1/{models|datasets}/{repo}/repo?Revision=&FilePath=``."""
    from urllib.parse import quote

    base = endpoint.rstrip("/")
    if source == "hf":
        prefix = "/datasets" if repo_type == "dataset" else ""
        return f"{base}{prefix}/{repo_id}/resolve/{quote(revision, safe='')}/{quote(path)}"
    kind = "datasets" if repo_type == "dataset" else "models"
    return f"{base}/api/v1/{kind}/{repo_id}/repo?Revision={quote(_ms_rev(revision))}&FilePath={quote(path)}"


def probe(source: str, repo_id: str, endpoints: list[str], revision: str = "main", path: str = "config.json",
          timeout: float = 10.0) -> list[dict]:
    """Time one small file from each endpoint: ``[{"endpoint", "ok", "latency_ms", "mib_s", "error"}]``, fastest
    first (unreachable ones last). Latency is the time to the first byte; speed over the whole file."""
    import time

    import requests

    out = []
    for ep in endpoints:
        url = file_url(source, repo_id, ep, revision, path)
        t0 = time.monotonic()
        try:
            with requests.get(url, stream=True, timeout=timeout, headers=auth_headers(source)) as r:
                r.raise_for_status()
                first, n = None, 0
                for block in r.iter_content(64 << 10):
                    first = first or time.monotonic()
                    n += len(block)
            total = time.monotonic() - t0
            out.append({"endpoint": ep, "ok": True, "latency_ms": round(((first or time.monotonic()) - t0) * 1000, 1),
                        "mib_s": round(n / 2**20 / max(total, 1e-6), 2), "error": None})
        except requests.RequestException as e:
            out.append({"endpoint": ep, "ok": False, "latency_ms": None, "mib_s": None,
                        "error": _first_line(e)[:120]})
    return sorted(out, key=lambda x: (not x["ok"], x["latency_ms"] or 0))


def auth_headers(source: str) -> dict:
    """The hub token as a request header, from the environment or the hub's own login cache (never stored)."""
    token = None
    if source == "hf":
        from huggingface_hub import get_token

        token = get_token()
    elif source == "modelscope":
        _quiet_modelscope()
        from modelscope_hub.config import HubConfig

        token = HubConfig().token  # MODELSCOPE_API_TOKEN, else the login saved by `modelscope login`
    return {"Authorization": f"Bearer {token}"} if token else {}
