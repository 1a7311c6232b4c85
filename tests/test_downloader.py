"""yichui's downloader against the local hub with injected faults: resume, verification, errors, kill -9."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import YICHUI, env_for, wait_for

from recipes.hub import client as hub
from recipes.hub import downloader
from recipes.base import StepError
from recipes.hub.server import HubServer, weights_header

MB = 1 << 20


def safetensors_bytes(total: int) -> bytes:
    """A ``total``-byte safetensors file of random content (recipes.hub.server.weights_header)."""
    head = weights_header(total)
    return head + os.urandom(total - len(head))


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A hub root with a model (a 24 MiB weights file + config) and a dataset repository."""
    r = tmp_path_factory.mktemp("hubroot")
    m = r / "org" / "model"
    m.mkdir(parents=True)
    (m / "model.safetensors").write_bytes(safetensors_bytes(24 * MB))
    (m / "config.json").write_text(json.dumps({"model_type": "qwen2"}))
    (m / "pytorch_model.bin").write_bytes(b"duplicate weights")  # skipped: safetensors are there
    d = r / "datasets" / "org" / "data"
    d.mkdir(parents=True)
    (d / "train.jsonl").write_text('{"instruction": "a", "output": "b"}\n' * 1000)
    return r


@pytest.fixture
def server(root):
    with HubServer(root) as s:
        yield s


def settled(server, name: str) -> int:
    """Bytes the hub sent for ``name`` once its count stops moving."""
    last = -1
    while True:
        now = server.hub.bytes_sent.get(name, 0)
        if now == last:
            return now
        last = now
        time.sleep(0.3)


def leave_partial(server, dest: Path):
    """Start fetching the model slowly and stop at its first bytes: a partial file and its sidecar stay."""
    commit, its = items(server)
    stop = threading.Event()
    server.hub.faults = [{"path": "model.safetensors", "throttle": 40 * MB}]
    with pytest.raises(KeyboardInterrupt):
        downloader.Downloader(dest, commit=commit, stop=stop,
                              on_bytes=lambda p, n: stop.set() if p == "model.safetensors" else None).fetch(its)
    return commit, its


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def items(server, source="hf", repo="org/model", repo_type="model"):
    commit, files = hub.list_files(source, repo, server.url, "main", repo_type)
    files = hub.select_files(files)
    return commit, [downloader.Item(f.path, hub.file_url(source, repo, server.url, commit or "main", f.path, repo_type),
                                    f.size, f.sha256, f.git_sha1) for f in files]


@pytest.mark.parametrize("source", ["hf", "modelscope"])
def test_download_verified_with_faults_resumed_in_process(server, root, tmp_path, source, monkeypatch):
    monkeypatch.setattr(downloader, "SEGMENT_MIN", 4 * MB)  # several ranges at once for the 24 MiB file
    server.hub.faults = [{"path": "model.safetensors", "drop_after": 3 * MB, "times": 2},
                         {"path": "config.json", "status": 500, "times": 1}]
    commit, its = items(server, source)
    assert [i.path for i in its] == ["config.json", "model.safetensors"]
    out = downloader.Downloader(tmp_path, commit=commit, ranges=4).fetch(its)
    assert out["files"] == 2
    assert sha(tmp_path / "model.safetensors") == sha(root / "org/model/model.safetensors")
    assert server.hub.bytes_sent["model.safetensors"] == 24 * MB  # dropped ranges resumed, nothing fetched twice
    assert not list(tmp_path.glob("*.yichui-part*"))
    assert sum(1 for m, p, r in server.hub.requests if r and m == "GET") >= 5  # 4 ranges + retries
    again = downloader.Downloader(tmp_path, commit=commit).fetch(its)
    assert again == {"files": 2, "skipped": 2, "fetched_bytes": 0}


def test_a_range_from_byte_0_is_hashed_as_it_arrives_not_read_back(server, root, tmp_path, monkeypatch):
    """Verification reads from the disk only what its first range did not hash on the way in: nothing for a file
    fetched as one range, the earlier run's bytes for a resumed one, the other ranges' for a split one."""
    read = {}
    real = downloader._File.hash_until

    def counting(f, end):
        before = f.hashed
        real(f, end)
        read[f.item.path] = read.get(f.item.path, 0) + f.hashed - before

    monkeypatch.setattr(downloader._File, "hash_until", counting)
    commit, its = items(server)
    downloader.Downloader(tmp_path / "one", commit=commit).fetch(its)
    assert sha(tmp_path / "one" / "model.safetensors") == sha(root / "org/model/model.safetensors")
    assert read == {"config.json": 0, "model.safetensors": 0}

    read.clear()
    leave_partial(server, tmp_path / "resumed")
    side = json.loads((tmp_path / "resumed" / ("model.safetensors" + downloader.SIDE)).read_text())
    before = sum(s[2] for s in side["segments"])
    server.hub.faults = []
    read.clear()
    downloader.Downloader(tmp_path / "resumed", commit=commit).fetch(its)
    assert sha(tmp_path / "resumed" / "model.safetensors") == sha(root / "org/model/model.safetensors")
    assert read["model.safetensors"] == before > 0

    read.clear()
    monkeypatch.setattr(downloader, "SEGMENT_MIN", 4 * MB)
    downloader.Downloader(tmp_path / "split", commit=commit, ranges=4).fetch(its)
    assert sha(tmp_path / "split" / "model.safetensors") == sha(root / "org/model/model.safetensors")
    assert read["model.safetensors"] == 24 * MB - 6 * MB  # all but the first of 4 ranges


def test_corrupt_bytes_are_fetched_again_once_then_reported(server, root, tmp_path):
    server.hub.faults = [{"path": "model.safetensors", "corrupt_at": 5 * MB, "times": 1}]
    commit, its = items(server)
    events = []
    downloader.Downloader(tmp_path, commit=commit, on_file=lambda p, s: events.append((p, s))).fetch(its)
    assert ("model.safetensors", "refetch") in events
    assert sha(tmp_path / "model.safetensors") == sha(root / "org/model/model.safetensors")
    server.hub.faults = [{"path": "model.safetensors", "corrupt_at": 5 * MB}]
    with pytest.raises(StepError) as e:
        downloader.Downloader(tmp_path / "again", commit=commit).fetch(its)
    assert e.value.msg.key == "hub.bad_hash"
    assert not (tmp_path / "again" / "model.safetensors").exists()


def test_stop_keeps_the_partial_and_the_next_run_fetches_only_the_rest(server, root, tmp_path):
    server.hub.faults = [{"path": "model.safetensors", "throttle": 40 * MB}]
    commit, its = items(server)
    stop = threading.Event()
    got = [0]

    def on_bytes(path, n):
        got[0] += n
        if got[0] > 10 * MB:
            stop.set()

    with pytest.raises(KeyboardInterrupt):
        downloader.Downloader(tmp_path, commit=commit, on_bytes=on_bytes, stop=stop).fetch(its)
    part = tmp_path / ("model.safetensors" + downloader.PART)
    side = json.loads((tmp_path / ("model.safetensors" + downloader.SIDE)).read_text())
    assert part.exists() and side["etag"] and side["commit"] == commit
    done = sum(s[2] for s in side["segments"])
    assert 10 * MB <= done < 24 * MB
    sent_before = settled(server, "model.safetensors")  # the hub may still be writing into the closed connection
    server.hub.faults = []
    downloader.Downloader(tmp_path, commit=commit).fetch(its)
    assert sha(tmp_path / "model.safetensors") == sha(root / "org/model/model.safetensors")
    assert server.hub.bytes_sent["model.safetensors"] - sent_before == 24 * MB - done


def test_a_changed_file_on_the_server_restarts_the_partial(server, root, tmp_path):
    commit, its = leave_partial(server, tmp_path)
    weights = root / "org/model/model.safetensors"
    original = weights.read_bytes()
    try:
        weights.write_bytes(safetensors_bytes(24 * MB))  # a new upload: new sha256, new ETag, new commit
        server.hub.faults = []
        commit2, its2 = items(server)
        sent_before = settled(server, "model.safetensors")
        statuses = []
        downloader.Downloader(tmp_path, commit=commit2, on_file=lambda p, s: statuses.append(s)).fetch(its2)
        assert sha(tmp_path / "model.safetensors") == sha(weights)
        # restarted from byte 0 because the sidecar no longer matches, not caught late by the hash and fetched again
        assert "refetch" not in statuses
        assert server.hub.bytes_sent["model.safetensors"] - sent_before == 24 * MB
    finally:
        weights.write_bytes(original)


def test_server_ignoring_range_restarts_that_file(server, root, tmp_path):
    commit, its = leave_partial(server, tmp_path)
    server.hub.faults = [{"path": "model.safetensors", "ignore_range": True}]
    statuses = []
    downloader.Downloader(tmp_path, commit=commit, on_file=lambda p, s: statuses.append(s)).fetch(its)
    assert sha(tmp_path / "model.safetensors") == sha(root / "org/model/model.safetensors")
    assert "refetch" not in statuses  # the 200 was noticed at once, not by a wrong hash at the end


@pytest.mark.parametrize("status,code,key", [(404, None, "hub.not_found"), (401, None, "hub.download_denied"),
                                             (403, "GatedRepo", "hub.download_gated")])
def test_http_errors_are_one_message(server, tmp_path, status, code, key):
    server.hub.faults = [{"path": "model.safetensors", "status": status, "error_code": code}]
    commit, its = items(server)
    with pytest.raises(StepError) as e:
        downloader.Downloader(tmp_path, commit=commit).fetch(its)
    assert e.value.msg.key == key
    if key == "hub.download_gated":
        assert e.value.msg.args["url"] == f"{server.url}/org/model"


@pytest.mark.slow
def test_drops_that_make_progress_never_exhaust_the_retries(server, root, tmp_path, monkeypatch):
    """Twelve dropped connections, each after 1 MiB, against 2 retries: every drop moved its range forward, so
    the count of failures in a row starts again and the download completes."""
    monkeypatch.setattr(downloader, "RETRIES", 2)
    server.hub.faults = [{"path": "model.safetensors", "drop_after": MB, "times": 12}]
    commit, its = items(server)
    downloader.Downloader(tmp_path, commit=commit).fetch(its)
    assert sha(tmp_path / "model.safetensors") == sha(root / "org/model/model.safetensors")
    assert server.hub.faults[0]["times"] == 0


def test_persistent_server_errors_give_up_with_a_resume_hint(server, tmp_path, monkeypatch):
    monkeypatch.setattr(downloader, "RETRIES", 2)
    server.hub.faults = [{"path": "model.safetensors", "status": 500}]
    commit, its = items(server)
    with pytest.raises(StepError) as e:
        downloader.Downloader(tmp_path, commit=commit).fetch(its)
    assert e.value.msg.key == "hub.network"


@pytest.mark.parametrize("bad", ["../evil.bin", "/etc/passwd", "a/../../b", "C:/x", ""])
def test_unsafe_file_names_are_refused(bad, tmp_path):
    with pytest.raises(StepError) as e:
        downloader.Downloader(tmp_path).fetch([downloader.Item(bad, "http://127.0.0.1:9/x", 1)])
    assert e.value.msg.key == "hub.unsafe_path"


@pytest.fixture
def small_disk(tmpfs):
    """An 8 MiB tmpfs: a real full disk (ENOSPC), not a mocked one."""
    return tmpfs("8m")


def test_disk_full_keeps_the_partial(server, small_disk):
    commit, its = items(server)
    with pytest.raises(StepError) as e:
        downloader.Downloader(small_disk, commit=commit).fetch(its)
    assert e.value.msg.key == "hub.disk_full"
    assert (small_disk / ("model.safetensors" + downloader.SIDE)).exists()


def test_preflight_refuses_before_any_byte_when_the_disk_is_too_small(server, small_disk):
    import contextlib

    from recipes.hub import snapshot

    with pytest.raises(StepError) as e:
        snapshot.fetch("hf", "org/model", server.url, "main", small_disk, lambda *a: contextlib.nullcontext(), print)
    assert e.value.msg.key == "hub.no_space" and e.value.msg.args["path"] == str(small_disk.resolve())
    assert not any(small_disk.iterdir()) and "model.safetensors" not in server.hub.bytes_sent


def test_stop_is_prompt_even_on_a_stalled_connection(server, tmp_path):
    server.hub.faults = [{"path": "model.safetensors", "throttle": 64 << 10}]  # 64 KiB/s: a stalled link
    commit, its = items(server)
    stop = threading.Event()
    threading.Timer(1.5, stop.set).start()
    t = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        downloader.Downloader(tmp_path, commit=commit, stop=stop).fetch(its)
    assert time.monotonic() - t < 6
    assert (tmp_path / ("model.safetensors" + downloader.SIDE)).exists()


@pytest.mark.parametrize("source", ["hf", "modelscope"])
def test_dataset_repositories(server, root, tmp_path, source):
    commit, its = items(server, source, "org/data", "dataset")
    downloader.Downloader(tmp_path, commit=commit).fetch(its)
    assert (tmp_path / "train.jsonl").read_bytes() == (root / "datasets/org/data/train.jsonl").read_bytes()


@pytest.mark.slow
@pytest.mark.parametrize("source", ["hf", "modelscope"])
def test_kill_9_of_the_download_command_then_the_same_command_continues(root, tmp_path, home, source):
    """A real `yichui download` process killed with SIGKILL mid-file, three times, then finished by the same command:
    what the hub sent stays within the file size plus what was in flight at each kill."""
    faults = tmp_path / "faults.json"
    faults.write_text(json.dumps([{"path": "model.safetensors", "throttle": 12 * MB}]))
    srv = subprocess.Popen([sys.executable, "-m", "recipes.hub.server", str(root), "--faults", str(faults)],
                           stdout=subprocess.PIPE, text=True)
    try:
        url = srv.stdout.readline().strip()
        out = tmp_path / "out"
        cmd = [YICHUI, "download", "org/model", "--source", source, "--endpoint", url, "--local-dir", str(out)]
        part = out / ("model.safetensors" + downloader.PART)
        side = out / ("model.safetensors" + downloader.SIDE)

        def done_bytes():
            try:
                return sum(s[2] for s in json.loads(side.read_text())["segments"])
            except (OSError, ValueError):
                return 0

        for k in range(3):
            p = subprocess.Popen(cmd, env=env_for(home), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            target = (k + 1) * 5 * MB
            wait_for(lambda: done_bytes() >= target, 60, what=f"{target} bytes on disk")
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
            assert part.exists()
        kept = done_bytes()
        r = subprocess.run(cmd, env=env_for(home, COLUMNS="200", LANG="C.UTF-8"), capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        assert sha(out / "model.safetensors") == sha(root / "org/model/model.safetensors")
        from recipes.hub import snapshot as dl
        from wizard import i18n

        on_disk = kept + (root / "org/model/config.json").stat().st_size  # the part and the finished config.json
        assert i18n.t("hub.resuming", size=dl.size_text(on_disk)) in r.stdout, r.stdout  # the user sees it go on
        import urllib.request

        sent = json.loads(urllib.request.urlopen(url + "/_yichui/stats").read())["bytes_sent"]["model.safetensors"]
        assert sent <= 24 * MB + 3 * 2 * MB, sent  # at most ~one sidecar interval + a socket buffer per kill
    finally:
        srv.terminate()


def test_a_server_ignoring_range_on_a_fresh_many_range_download_is_one_stream(server, root, tmp_path, monkeypatch):
    """Issue 18: several ranges of one file answered 200 and taken in by the same turn of the loop (it waits here
    until every running range has ended, as a busy machine does by chance): the file restarts once as one stream
    from byte 0 (it crashed with a KeyError on the second one)."""
    import concurrent.futures as cf

    monkeypatch.setattr(downloader, "SEGMENT_MIN", 4 * MB)  # several ranges at once for the 24 MiB file
    monkeypatch.setattr(downloader, "wait", lambda fs, timeout, return_when: cf.wait(fs, 5, cf.ALL_COMPLETED))
    commit, its = items(server)
    server.hub.faults = [{"path": "model.safetensors", "ignore_range": True}]
    statuses = []
    downloader.Downloader(tmp_path, commit=commit, ranges=8, workers=8,
                          on_file=lambda p, s: statuses.append((p, s))).fetch(its)
    assert sha(tmp_path / "model.safetensors") == sha(root / "org/model/model.safetensors")
    assert all((tmp_path / i.path).is_file() for i in its)
    assert ("model.safetensors", "refetch") not in statuses


@pytest.mark.parametrize("bad", [".", "./", "a/./b", "a/.", "a//b", "a/"])
def test_dot_and_empty_path_segments_are_refused(bad):
    with pytest.raises(StepError) as e:
        downloader.safe_relpath(bad)
    assert e.value.msg.key == "hub.unsafe_path"


def download_cmd(home, server, source, out, *more, **env):
    from conftest import yichui

    return yichui(home, "download", "org/model", "--source", source, "--endpoint", server.url, "--local-dir", str(out),
                  *more, **({"LANG": "C.UTF-8", "COLUMNS": "200"} | env))


def one_line(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("source", ["hf", "modelscope"])
def test_a_listing_of_names_only_is_completed_from_each_files_head(server, root, tmp_path, home, source):
    """Issue 18: a mirror listing names without sizes or hashes. It wrote a 0-byte model.safetensors and said
    "nothing left to fetch"; now each file's HEAD gives its size (and, on Hugging Face, its sha256 from
    X-Linked-Etag and the git blob id of small files), so every file arrives whole and verified."""
    from wizard import i18n

    server.hub.modes = {"listing": "names"}
    r = download_cmd(home, server, source, tmp_path / "out")
    assert r.returncode == 0, r.stdout + r.stderr
    assert one_line(i18n.t("hub.describing", n=2)) in one_line(r.stdout)
    for name in ("model.safetensors", "config.json"):
        assert sha(tmp_path / "out" / name) == sha(root / "org/model" / name)
    heads = [p for m, p, _ in server.hub.requests if m == "HEAD" and "model.safetensors" in p]
    assert heads  # the size came from the file's HEAD, not from the listing
    if source == "hf":  # verified by hash: a corrupted byte is fetched again once, then refused in one line
        server.hub.faults = [{"path": "model.safetensors", "corrupt_at": MB}]
        r = download_cmd(home, server, source, tmp_path / "again")
        assert r.returncode == 1
        assert one_line(i18n.t("hub.bad_hash", file="model.safetensors")) in one_line(r.stderr + r.stdout)
        assert not (tmp_path / "again" / "model.safetensors").exists()


def test_a_file_whose_size_nobody_gives_is_refused_before_any_byte(server, tmp_path, home):
    from wizard import i18n

    server.hub.modes = {"listing": "names", "head_size": False}
    r = download_cmd(home, server, "hf", tmp_path / "out")
    assert r.returncode == 1, r.stdout + r.stderr  # the hub's fault, not the user's input
    first = next(p for p in ("config.json", "model.safetensors"))
    url = hub.file_url("hf", "org/model", server.url, hub.list_files("hf", "org/model", server.url, "main")[0], first)
    assert one_line(i18n.t("cli.download.size_unknown", file=first, url=url)) in one_line(r.stderr + r.stdout)
    assert not server.hub.bytes_sent  # nothing fetched …
    assert not any(p.is_file() and p.stat().st_size == 0 for p in (tmp_path / "out").rglob("*"))  # … no 0-byte file


def test_exit_status_is_2_for_the_users_input_and_1_for_the_world(server, tmp_path, home, tmpfs):
    from wizard import i18n

    r = download_cmd(home, server, "hf", tmp_path / "a", "--revision", "no-such-branch")
    assert r.returncode == 2 and one_line(i18n.t("hub.no_such_revision", repo="org/model", revision="no-such-branch")) \
        in one_line(r.stderr + r.stdout)
    r = download_cmd(home, server, "modelscope", tmp_path / "a", "--revision", "v9")  # ModelScope says which
    assert r.returncode == 2 and one_line(i18n.t("hub.no_such_revision", repo="org/model", revision="v9")) \
        in one_line(r.stderr + r.stdout)
    r = download_cmd(home, server, "hf", tmp_path / "b", "--include", "*.nothing")
    assert r.returncode == 2, r.stderr
    from conftest import yichui

    for argv in (["../model"], ["org/.."], ["org/model", "--endpoint", "notaurl"]):
        r = yichui(home, "download", *argv, "--local-dir", str(tmp_path / "x"))
        assert r.returncode == 2 and "Traceback" not in r.stderr, (argv, r.stderr)
    assert not (tmp_path / "x").exists()
    disk = tmpfs("8m")  # a real full disk: the plan refuses before any byte
    r = download_cmd(home, server, "hf", disk)
    assert r.returncode == 1 and "Not enough disk" in one_line(r.stderr + r.stdout)
    server.hub.faults = [{"path": "model.safetensors", "status": 403}]
    r = download_cmd(home, server, "hf", tmp_path / "c")
    assert r.returncode == 1, r.stderr


@pytest.mark.parametrize("source,key,variable", [("hf", "hub.missing_or_private", "HF_TOKEN"),
                                                  ("modelscope", "hub.denied", "MODELSCOPE_API_TOKEN")])
def test_a_private_repository_names_the_hubs_token_and_the_token_opens_it(server, root, tmp_path, home, source, key,
                                                                           variable):
    """Each hub answers a private repository without a valid token with a 401 (the Hub's says "RepoNotFound": a
    private repository looks missing). One line naming that hub's own token variable, exit 1 (the world refused),
    nothing written; the token in that variable then opens it, and is printed nowhere."""
    from wizard import i18n

    token = "hf_private_test_token_0123456789"
    server.hub.modes = {"private": token}
    r = download_cmd(home, server, source, tmp_path / "a")
    assert r.returncode == 1, r.stderr
    want = one_line(i18n.t(key, repo="org/model", endpoint=server.url, token=variable))
    assert want in one_line(r.stderr + r.stdout) and "Traceback" not in r.stderr
    assert not (tmp_path / "a").exists() or not list((tmp_path / "a").rglob("*.safetensors*"))
    r = download_cmd(home, server, source, tmp_path / "a", **{variable: "not-the-token"})
    assert r.returncode == 1 and "not-the-token" not in r.stdout + r.stderr
    assert one_line(i18n.t("hub.token_refused", repo="org/model", endpoint=server.url, token=variable)) in \
        one_line(r.stderr + r.stdout)
    r = download_cmd(home, server, source, tmp_path / "a", **{variable: token})
    assert r.returncode == 0, r.stderr
    assert sha(tmp_path / "a" / "model.safetensors") == sha(root / "org/model/model.safetensors")
    assert token not in r.stdout + r.stderr


@pytest.mark.parametrize("source", ["hf", "modelscope"])
def test_a_missing_dataset_is_called_a_dataset(server, source):
    with pytest.raises(StepError) as e:
        hub.list_files(source, "org/no-such-data", server.url, "main", "dataset")
    assert e.value.msg.key == "hub.no_such_dataset"


@pytest.mark.slow
def test_429_waits_as_long_as_retry_after_says_then_a_persistent_one_is_one_line(server, root, tmp_path, monkeypatch):
    server.hub.faults = [{"path": "model.safetensors", "status": 429, "retry_after": 2, "times": 2}]
    commit, its = items(server)
    t = time.monotonic()
    downloader.Downloader(tmp_path / "a", commit=commit).fetch(its)
    assert time.monotonic() - t >= 4  # two Retry-After: 2 waited in full (the backoff alone is 0.5 + 1 s)
    assert sha(tmp_path / "a" / "model.safetensors") == sha(root / "org/model/model.safetensors")
    monkeypatch.setattr(downloader, "RETRIES", 2)
    server.hub.faults = [{"path": "model.safetensors", "status": 429, "retry_after": "Wed, 21 Oct 2015 07:28:00 GMT"}]
    with pytest.raises(StepError) as e:
        downloader.Downloader(tmp_path / "b", commit=commit).fetch(its)
    assert e.value.msg.key == "hub.rate_limited" and e.value.msg.args["file"] == "model.safetensors"
    assert downloader.retry_after("7") == 7.0 and downloader.retry_after("soon") is None


def test_storage_redirects_carry_no_token_and_expired_links_are_resolved_again(server, root, tmp_path, monkeypatch):
    """The Hub answers a large file's resolve with a 302 to signed storage on another host: the token stays with
    the hub, the bytes come from storage, and a link that expired is resolved again at the hub (a signed URL is
    never retried as such); links that keep failing end in one line with the partial kept."""
    server.hub.modes = {"cdn": True, "cdn_expired": 2}
    server.hub.faults = [{"path": "model.safetensors", "drop_after": 3 * MB, "times": 2}]
    commit, its = items(server)
    token = {"Authorization": "Bearer hf_secret_token"}
    downloader.Downloader(tmp_path / "a", token, commit=commit).fetch(its)
    assert sha(tmp_path / "a" / "model.safetensors") == sha(root / "org/model/model.safetensors")
    assert server.hub.cdn_auth and not any(server.hub.cdn_auth)  # storage never saw the token
    assert "Request has expired" in server.hub.cdn_refused  # at least one link had expired (the HEAD takes one)
    storage = [p for m, p, _ in server.hub.requests if m == "GET" and p.startswith("storage:")]
    resolved = [p for m, p, _ in server.hub.requests if m == "GET" and "/resolve/" in p and "safetensors" in p]
    assert len(storage) == len(resolved) >= 4  # each storage request on a fresh link from the hub, none replayed
    monkeypatch.setattr(downloader, "RETRIES", 2)
    server.hub.faults = []
    server.hub.modes = {"cdn": True, "cdn_expired": 100}
    with pytest.raises(StepError) as e:
        downloader.Downloader(tmp_path / "b", token, commit=commit).fetch(its)
    assert e.value.msg.key == "hub.link_expired" and e.value.msg.args["status"] == 403
    assert e.value.msg.args["host"].startswith("localhost:")


@pytest.mark.parametrize("mode", [{"cdn": True}, {"listing": "names"}, {"listing": "names", "cdn": True}])
def test_the_hub_client_downloads_through_each_fixture_mode(server, root, tmp_path, mode):
    """The fixture's fidelity: huggingface_hub's own snapshot_download fetches the repository through each mode, as
    it does from the real Hub, and sends storage no token. The fixture sends no Xet headers, so the client takes
    plain resolve downloads (Xet storage itself is out of reach offline)."""
    import huggingface_hub

    server.hub.modes = dict(mode)
    out = huggingface_hub.snapshot_download("org/model", endpoint=server.url, local_dir=tmp_path / "hf",
                                            token="hf_secret_token", cache_dir=tmp_path / "cache")
    assert sha(Path(out) / "model.safetensors") == sha(root / "org/model/model.safetensors")
    assert not any(server.hub.cdn_auth)
    if mode.get("cdn"):
        assert server.hub.cdn_auth  # the bytes came from storage


def test_the_modelscope_client_downloads_through_a_names_only_listing(server, root, tmp_path):
    """The fixture's fidelity on ModelScope's API: the ModelScope client's own snapshot_download fetches through a
    listing without Size or Sha256 (it sizes files from the download itself), as it does from a real mirror."""
    server.hub.modes = {"listing": "names"}
    # its own process: the client reads MODELSCOPE_ENDPOINT once, when first imported
    script = ("import sys\nfrom modelscope.hub.snapshot_download import snapshot_download\n"
              "print(snapshot_download('org/model', local_dir=sys.argv[1]))")
    r = subprocess.run([sys.executable, "-c", script, str(tmp_path / "ms")], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, MODELSCOPE_ENDPOINT=server.url,
                                             MODELSCOPE_CACHE=str(tmp_path / "cache")))
    assert r.returncode == 0, r.stderr[-2000:]
    for name in ("model.safetensors", "config.json"):
        assert sha(tmp_path / "ms" / name) == sha(root / "org/model" / name)


def test_a_file_of_the_same_size_from_another_commit_or_changed_on_disk_is_fetched_again(tmp_path):
    """A re-run kept an old config.json of the same length after the hub moved to a new commit, and accepted a
    downloaded file damaged on disk: a file counts as complete only while it is what the listing's hash says."""
    repo = tmp_path / "hub" / "org" / "m"
    repo.mkdir(parents=True)
    (repo / "config.json").write_text('{"hidden_size": 64}')
    (repo / "model.safetensors").write_bytes(safetensors_bytes(2 * MB))
    out = tmp_path / "out"
    with HubServer(tmp_path / "hub") as srv:
        def fetch():
            commit, files = hub.list_files("hf", "org/m", srv.url, "main")
            its = [downloader.Item(f.path, hub.file_url("hf", "org/m", srv.url, commit, f.path), f.size, f.sha256,
                                   f.git_sha1) for f in files]
            return downloader.Downloader(out, commit=commit).fetch(its)

        assert fetch()["skipped"] == 0
        assert fetch()["skipped"] == 2  # unchanged: nothing hashed or fetched again
        (repo / "config.json").write_text('{"hidden_size": 96}')  # a new commit, same size
        assert fetch()["skipped"] == 1 and (out / "config.json").read_text() == '{"hidden_size": 96}'
        with open(out / "model.safetensors", "r+b") as f:  # damaged on disk, same size
            f.seek(MB)
            f.write(b"XXXX")
        assert fetch()["skipped"] == 1 and sha(out / "model.safetensors") == sha(repo / "model.safetensors")


def test_a_second_download_into_the_same_folder_is_one_line(server, tmp_path, home):
    """Another process downloading into the folder: the second `yichui download` says so before any line about the
    folder (it said "Resuming" first), exit 1, nothing touched; once the holder is gone the download runs. Within one
    process the lock is re-entrant (the snapshot holds it, its downloader takes it again)."""
    from wizard import i18n

    out = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from pathlib import Path; "
                               "from recipes.hub import downloader; held = downloader.folder_lock(Path(sys.argv[1])); held.__enter__(); "
                               "print('held', flush=True); time.sleep(120)", str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        r = download_cmd(home, server, "hf", out)
        assert r.returncode == 1
        assert one_line(i18n.t("hub.busy", path=str(out), pid=str(holder.pid))) in one_line(r.stdout + r.stderr)
        assert "still to fetch" not in r.stdout and not (out / "model.safetensors").exists()
    finally:
        holder.kill()
        holder.wait()
    commit, its = items(server)
    with downloader.folder_lock(out):
        downloader.Downloader(out, commit=commit).fetch(its)  # the lock went with its holder; nested here
    assert sha(out / "model.safetensors") == sha(server.hub.root / "org/model/model.safetensors")


def test_a_disk_filling_mid_block_records_only_the_bytes_that_reached_the_file(server, root, small_disk):
    """A write cut short by a full disk: the sidecar counts what is in the part file, not the whole block (the
    resumed file was damaged, and once reported done)."""
    commit, its = items(server)
    with pytest.raises(StepError) as e:
        downloader.Downloader(small_disk, commit=commit).fetch(its)
    assert e.value.msg.key == "hub.disk_full"
    side = json.loads((small_disk / ("model.safetensors" + downloader.SIDE)).read_text())
    part = (small_disk / ("model.safetensors" + downloader.PART)).read_bytes()
    src = (root / "org/model/model.safetensors").read_bytes()
    assert sum(s[2] for s in side["segments"]) > 0
    for start, _, done in side["segments"]:
        assert part[start:start + done] == src[start:start + done]


# -- a hub that answers wrongly on purpose (issue 18's bad-input trial): each case a listing and file answers ----------
CFG = b'{"model_type": "qwen2"}\n'
COMMIT = "c0ffee" + "0" * 34


def hostile(siblings=None, sha=COMMIT, raw_listing=None, head=None, get=None):
    """A real HTTP server on 127.0.0.1 with Hugging Face's paths: ``siblings`` (default: config.json, sized, with its
    git blob id), ``raw_listing`` (bytes instead of JSON), ``head(handler)`` / ``get(handler)`` answering a file."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    blob = hashlib.sha1(b"blob %d\0" % len(CFG) + CFG).hexdigest()
    sibs = siblings if siblings is not None else [{"rfilename": "config.json", "size": len(CFG), "blobId": blob}]

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def send(self, code, body=b"", headers=None):
            self.send_response(code)
            for k, v in {"Content-Length": str(len(body)), **(headers or {})}.items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_HEAD(self):
            if "/resolve/" in self.path and head:
                return head(self)
            self.do_GET()

        def do_GET(self):
            if self.path.startswith("/api/models/"):
                return self.send(200, raw_listing if raw_listing is not None else json.dumps(
                    {"id": "org/m", "sha": sha, "siblings": sibs}).encode(), {"Content-Type": "application/json"})
            if "/resolve/" in self.path:
                if get and self.command == "GET":
                    return get(self)
                return self.send(200, CFG, {"ETag": f'"{blob}"'})
            self.send(200, b"{}")

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def fetch_from(srv, out):
    import contextlib

    from recipes.hub import snapshot

    class Bar:  # the progress view's handle, drawing nothing
        def update(self, **k):
            pass

        def done(self):
            pass

        def file(self, *a):
            return self

    return snapshot.fetch("hf", "org/m", f"http://127.0.0.1:{srv.server_address[1]}", "main", out,
                          lambda *a: contextlib.nullcontext(Bar()), lambda m: None)


@pytest.mark.parametrize("case, key", [
    (dict(siblings=[{"rfilename": "a\x00b.json", "size": 3}]), "hub.unsafe_path"),
    (dict(siblings=[{"rfilename": "w.json.yichui-part", "size": 3}]), "hub.unsafe_path"),
    (dict(siblings=[{"rfilename": "x" * 300, "size": 3}]), "hub.unsafe_path"),
    (dict(siblings=[{"rfilename": 5, "size": 3}]), "hub.bad_answer"),
    (dict(siblings=[{"rfilename": "a", "size": 3}, {"rfilename": "a/b", "size": 3}]), "hub.bad_answer"),
    (dict(siblings=[{"rfilename": "c.json", "size": 3}, {"rfilename": "c.json", "size": 3}]), "hub.bad_answer"),
    (dict(sha="abc\nerror: a line of the hub's own"), "hub.bad_answer"),
    (dict(raw_listing=b"<html>not json</html>"), "hub.bad_answer"),
    (dict(siblings=[]), "hub.empty_listing"),
    # sizes a HEAD cannot give: superscript digits, 5000 digits, a 302 without Location
    (dict(siblings=[{"rfilename": "config.json"}], head=lambda h: h.send(200, headers={"X-Linked-Size": "1\u00b9"})),
     "hub.size_unknown"),
    (dict(siblings=[{"rfilename": "config.json"}], head=lambda h: h.send(200, headers={"X-Linked-Size": "9" * 5000})),
     "hub.size_unknown"),
    (dict(siblings=[{"rfilename": "config.json"}], head=lambda h: h.send(302)), "hub.size_unknown"),
    # a HEAD that says 0 bytes for a file whose GET has some
    (dict(siblings=[{"rfilename": "config.json"}], head=lambda h: h.send(200)), "hub.size_unknown"),
    # answers that are not the part asked for, or not the size described
    (dict(siblings=[{"rfilename": "config.json", "size": 10}]), "hub.size_mismatch"),
    # a 206 that always starts at byte 0, whatever was asked: the second request (from byte 14) gets it
    (dict(get=lambda h: h.send(206, CFG[:14], {"Content-Range": f"bytes 0-13/{len(CFG)}"})), "hub.size_mismatch"),
    # Retry-After that is no number, or longer than is waited for in silence
    (dict(get=lambda h: h.send(429, headers={"Retry-After": "\u00b2"})), "hub.rate_limited"),
    (dict(get=lambda h: h.send(429, headers={"Retry-After": "999999"})), "hub.rate_limited"),
])
def test_a_hostile_hub_is_one_line_and_leaves_no_file_called_done(case, key, tmp_path, monkeypatch):
    monkeypatch.setattr(downloader, "RETRIES", 2)
    srv = hostile(**case)
    try:
        with pytest.raises(StepError) as e:
            fetch_from(srv, tmp_path / "out")
        assert e.value.msg.key == key, e.value.msg
    finally:
        srv.shutdown()
    done = [p for p in (tmp_path / "out").rglob("*") if p.is_file() and not p.name.startswith(".")
            and not p.name.endswith((downloader.PART, downloader.SIDE))]
    assert done == []  # nothing in place as if downloaded


def test_bytes_before_a_dropped_connection_are_kept(tmp_path):
    """Every answer ends after 4000 bytes: each run keeps what arrived (it lost any read short of 256 KiB)."""
    data = os.urandom(10_000)
    sha256 = hashlib.sha256(data).hexdigest()

    def get(h):
        if "w.bin" not in h.path:
            return h.send(200, CFG)
        a = int(h.headers.get("Range", "bytes=0-")[6:].split("-")[0])
        h.send_response(206)
        h.send_header("Content-Length", str(len(data) - a))
        h.send_header("Content-Range", f"bytes {a}-{len(data) - 1}/{len(data)}")
        h.end_headers()
        h.wfile.write(data[a:a + 4000])
        h.close_connection = True

    srv = hostile(siblings=[{"rfilename": "w.bin", "size": len(data), "lfs": {"sha256": sha256, "size": len(data), "pointerSize": 134}},
                            {"rfilename": "config.json", "size": len(CFG)}], get=get)
    try:
        fetch_from(srv, tmp_path / "out")
    finally:
        srv.shutdown()
    assert (tmp_path / "out" / "w.bin").read_bytes() == data


def test_a_listing_without_hashes_still_verifies_by_the_etag_and_the_weights_header(server, root, tmp_path, home):
    """Issue 46 item 19: with a listing of names only, a mirror serving a large file itself (its ETag the sha256)
    had the file "checked by size only", so a corrupted byte was accepted and training failed on a bad safetensors
    header on every resume. The ETag's sha256 is used (a corrupted byte is fetched again), and a weight file whose
    header does not parse is a failed download, not a training error."""
    from wizard import i18n

    server.hub.modes = {"listing": "names"}
    server.hub.faults = [{"path": "model.safetensors", "corrupt_at": MB, "times": 1}]
    r = download_cmd(home, server, "modelscope", tmp_path / "out")  # ModelScope's file API: the ETag of the file
    assert r.returncode == 0, r.stdout + r.stderr
    assert sha(tmp_path / "out" / "model.safetensors") == sha(root / "org/model" / "model.safetensors")
    assert one_line(i18n.t("hub.size_only", n=1, files="model.safetensors")) not in one_line(r.stdout)
    # the header check itself, on files a hub could send
    good = tmp_path / "good.safetensors"
    good.write_bytes(safetensors_bytes(4096))
    assert downloader.weights_header_ok(good, "good.safetensors")
    for bad in (b"", b"\x00" * 64, (10**9).to_bytes(8, "little") + b"{}", (2).to_bytes(8, "little") + b"[]",
                (40).to_bytes(8, "little") + b'{"w": {"data_offsets": [0, 99999]}}    '):
        p = tmp_path / "bad.safetensors"
        p.write_bytes(bad)
        assert not downloader.weights_header_ok(p, "bad.safetensors"), bad
    assert downloader.weights_header_ok(p, "bad.bin")  # only safetensors have a header to check


def test_a_broken_weights_file_the_hub_lists_as_it_is_is_not_fetched_again(tmp_path):
    """A safetensors file whose header does not parse although its hash matches the listing: the repository holds
    it broken. Said so, once (it was "did not match its hash twice … run again later", which cannot help)."""
    repo = tmp_path / "hub" / "org" / "broken"
    repo.mkdir(parents=True)
    (repo / "config.json").write_text('{"hidden_size": 64}')
    (repo / "model.safetensors").write_bytes(b"\x07" * 4096)  # header length 0x0707… : no header
    with HubServer(tmp_path / "hub") as srv:
        commit, files = hub.list_files("hf", "org/broken", srv.url, "main")
        its = [downloader.Item(f.path, hub.file_url("hf", "org/broken", srv.url, commit, f.path), f.size, f.sha256,
                               f.git_sha1) for f in files]
        with pytest.raises(StepError) as e:
            downloader.Downloader(tmp_path / "out", commit=commit).fetch(its)
        assert e.value.msg.key == "hub.broken_in_repo"
        assert srv.hub.bytes_sent.get("model.safetensors") == 4096  # once
        assert not (tmp_path / "out" / "model.safetensors").exists()
