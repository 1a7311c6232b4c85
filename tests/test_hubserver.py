"""The local hub against the real clients: huggingface_hub and modelscope download from it, errors map to theirs."""
from __future__ import annotations

import hashlib
import json
import urllib.request
from pathlib import Path

import pytest

from recipes.hub import client as hub_mod
from recipes.base import StepError
from recipes.demo.tiny_model import REPO_ID


def sha256(p):
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_huggingface_hub_snapshot_download(hub, tmp_path, tiny_model):
    import huggingface_hub as hh

    d = hh.snapshot_download(REPO_ID, endpoint=hub.url, local_dir=tmp_path / "snap")
    for f in tiny_model.iterdir():
        assert sha256(Path(d) / f.name) == sha256(f)
    info = hh.HfApi(endpoint=hub.url).model_info(REPO_ID, files_metadata=True)
    st = next(s for s in info.siblings if s.rfilename == "model.safetensors")
    assert st.lfs.sha256 == sha256(tiny_model / "model.safetensors") and len(info.sha) == 40


def test_huggingface_hub_errors(hub, tmp_path):
    import huggingface_hub as hh
    from huggingface_hub import errors

    with pytest.raises(errors.RepositoryNotFoundError):
        hh.hf_hub_download("nobody/nothing", "config.json", endpoint=hub.url, cache_dir=tmp_path)
    with pytest.raises(errors.RevisionNotFoundError):
        hh.hf_hub_download(REPO_ID, "config.json", revision="no-branch", endpoint=hub.url, cache_dir=tmp_path)
    with pytest.raises(errors.EntryNotFoundError):
        hh.hf_hub_download(REPO_ID, "missing.json", endpoint=hub.url, cache_dir=tmp_path)


def test_modelscope_client_download(hub, tmp_path, tiny_model, monkeypatch):
    from modelscope.hub.snapshot_download import snapshot_download

    monkeypatch.setenv("MODELSCOPE_ENDPOINT", hub.url)
    d = snapshot_download(REPO_ID, local_dir=str(tmp_path / "ms"), endpoint=hub.url)
    assert sha256(Path(d) / "model.safetensors") == sha256(tiny_model / "model.safetensors")


def test_range_requests(hub, tiny_model):
    url = f"{hub.url}/{REPO_ID}/resolve/main/model.safetensors"
    req = urllib.request.Request(url, headers={"Range": "bytes=100-199"})
    with urllib.request.urlopen(req) as r:
        assert r.status == 206 and r.headers["Content-Range"].startswith("bytes 100-199/")
        assert r.read() == (tiny_model / "model.safetensors").read_bytes()[100:200]
    head = urllib.request.Request(url, method="HEAD")
    with urllib.request.urlopen(head) as r:
        assert r.headers["X-Repo-Commit"] and r.headers["ETag"].strip('"') == sha256(tiny_model / "model.safetensors")


@pytest.mark.parametrize("source", ["hf", "modelscope"])
def test_fetch_config_and_listing_through_yichui(hub, source, tiny_model):
    cfg = hub_mod.fetch_config(source, REPO_ID, hub.url)
    assert cfg == json.loads((tiny_model / "config.json").read_text())
    commit, files = hub_mod.list_files(source, REPO_ID, hub.url, "main")
    assert {f.path for f in files} == {p.name for p in tiny_model.iterdir()}
    assert commit == hub.hub.repo(REPO_ID).commit  # ModelScope too: read from its files API
    assert all(f.sha256 or f.git_sha1 for f in files)
    with pytest.raises(StepError) as e:
        hub_mod.fetch_config(source, "nobody/nothing", hub.url)
    assert e.value.msg.key == "hub.no_such_model"


@pytest.mark.parametrize("source", ["hf", "modelscope"])
def test_unreachable_endpoint_is_one_clear_error_after_one_attempt(source):
    """The hub clients retry a dead connection for ~25 s per call; yichui asks once and says so."""
    import socket
    import threading

    for call in (hub_mod.fetch_config, lambda *a: hub_mod.list_files(*a, "main")):
        with pytest.raises(StepError) as e:
            call(source, "nobody/never-cached", "http://127.0.0.1:9")  # nothing listens: refused
        assert e.value.msg.key == "hub.unreachable" and "Connection refused" in e.value.msg.args["error"]

    # something that accepts and hangs up at once, counting the attempts
    srv = socket.create_server(("127.0.0.1", 0))
    attempts = []

    def accept():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            attempts.append(1)
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    url = f"http://127.0.0.1:{srv.getsockname()[1]}"
    try:
        for call in (hub_mod.fetch_config, lambda *a: hub_mod.list_files(*a, "main")):
            attempts.clear()
            with pytest.raises(StepError) as e:
                call(source, "nobody/never-cached", url)
            assert e.value.msg.key == "hub.unreachable" and len(attempts) == 1, attempts
    finally:
        srv.close()


def test_a_cached_config_serves_when_the_hub_is_down(home, tiny_model):
    from recipes.hub.server import HubServer

    with HubServer(home / "cache" / "hub") as server:
        url = server.url
        assert hub_mod.fetch_config("hf", REPO_ID, url)["model_type"] == "qwen2"
    assert hub_mod.fetch_config("hf", REPO_ID, url) == json.loads((tiny_model / "config.json").read_text())


def test_file_selection_prefers_safetensors():
    F = hub_mod.RemoteFile
    files = [F("model.safetensors", 1, None), F("pytorch_model.bin", 1, None), F("original/consolidated.pth", 1, None),
             F("model-q4.gguf", 1, None), F("config.json", 1, None), F("README.md", 1, None)]
    assert [f.path for f in hub_mod.select_files(files)] == ["model.safetensors", "config.json"]
    assert [f.path for f in hub_mod.select_files(files, include=["*.gguf"])] == ["model-q4.gguf"]
    both = hub_mod.select_files(files + [F("original/model.safetensors", 1, None)], include=["*.safetensors"],
                                exclude=["original/*"])
    assert [f.path for f in both] == ["model.safetensors"]  # an exclude still applies to what include picked
    assert [f.path for f in hub_mod.select_files(files, exclude=["config.json"])] == ["model.safetensors"]
