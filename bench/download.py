#!/usr/bin/env python3
"""Download benchmark on loopback: yichui's downloader against the Hugging Face and ModelScope clients, same server.

1. Throughput on a generated multi-file model (--total-mib, default 1024): `yichui download` vs
   `huggingface_hub.snapshot_download`, alternating, --rounds each; ratio of the medians.
2. Resume: a --kill-mib file (default 500) fetched while a SIGKILL lands at --kills random points (byte positions of
   the file, the same for every client; "5,10": two scenarios) and the process is restarted each time; total bytes the server sent / file size,
   and the final sha256. yichui for both sources; the peers: huggingface_hub (restarts from zero) and the
   ModelScope client.

    python bench/download.py [--total-mib 1024] [--kill-mib 500] [--rounds 3] [--kills 5,10] [--cdn] [--throttle-mib M]
                             [--out bench/results/DATE-download.json]

--cdn: the hub answers large files with a 302 to signed storage on another host, as the Hugging Face Hub does
(recipes/hub/server.py, modes); --throttle-mib: a per-response bandwidth cap in the throughput runs.

Every client is a separate process; the server (recipes.hub.server) is another, throttled for the kill scenario so the
kill points can be reached.
"""
from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from recipes.hub.server import weights_header  # noqa: E402

YICHUI = str(Path(sys.executable).parent / "yichui")
MB = 1 << 20
REPO = "bench/model"

PEER_HF = ("import sys, huggingface_hub as h; h.snapshot_download(sys.argv[1], endpoint=sys.argv[2], "
           "local_dir=sys.argv[3])")
PEER_MS = ("import os, sys; os.environ['MODELSCOPE_ENDPOINT'] = sys.argv[2]\n"
           "from modelscope.hub.snapshot_download import snapshot_download\n"
           "snapshot_download(sys.argv[1], local_dir=sys.argv[3])")


def make_repo(root: Path, files: dict[str, int]) -> None:
    d = root / REPO
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps({"model_type": "qwen2"}))
    for name, size in files.items():
        with open(d / name, "wb") as f:
            left = size
            if name.endswith(".safetensors"):  # a real header: the downloader opens weights before accepting them
                head = weights_header(size)
                f.write(head)
                left -= len(head)
            while left:
                n = min(left, 64 * MB)
                f.write(os.urandom(n))
                left -= n


MODES: dict = {}  # the hub's modes for every run (--cdn: large files redirected to signed storage on another host)


def start_hub(root: Path, faults: list | None = None):
    ff = None
    if faults:
        ff = root.parent / "faults.json"
        ff.write_text(json.dumps(faults))
    p = subprocess.Popen([sys.executable, "-m", "recipes.hub.server", str(root)] + (["--faults", str(ff)] if ff else []),
                         stdout=subprocess.PIPE, text=True, cwd=ROOT)
    url = p.stdout.readline().strip()
    urllib.request.urlopen(f"{url}/api/models/{REPO}").read()  # hash the files once before timing anything
    if MODES:
        urllib.request.urlopen(urllib.request.Request(url + "/_yichui/modes", json.dumps(MODES).encode(),
                                                      method="POST")).read()
    return p, url


def stats(url: str, reset: bool = False) -> dict:
    if reset:
        urllib.request.urlopen(urllib.request.Request(url + "/_yichui/stats", method="DELETE")).read()
        return {}
    return json.loads(urllib.request.urlopen(url + "/_yichui/stats").read())["bytes_sent"]


def client_cmd(kind: str, url: str, out: Path) -> list[str]:
    if kind == "yichui-hf":
        return [YICHUI, "download", REPO, "--source", "hf", "--endpoint", url, "--local-dir", str(out)]
    if kind == "yichui-modelscope":
        return [YICHUI, "download", REPO, "--source", "modelscope", "--endpoint", url, "--local-dir", str(out)]
    if kind == "huggingface_hub":
        return [sys.executable, "-c", PEER_HF, REPO, url, str(out)]
    return [sys.executable, "-c", PEER_MS, REPO, url, str(out)]


def env(work: Path) -> dict:
    """Each client gets fresh caches under ``work`` (removed with it): no run reuses another's bytes."""
    e = dict(os.environ, HF_HUB_DISABLE_PROGRESS_BARS="1", HF_HUB_DISABLE_TELEMETRY="1", PYTHONUNBUFFERED="1")
    e["YICHUI_HOME"] = e.get("YICHUI_HOME") or tempfile.mkdtemp(prefix="home-", dir=work)
    e["HF_HOME"] = tempfile.mkdtemp(prefix="hf-", dir=work)
    e["MODELSCOPE_CACHE"] = tempfile.mkdtemp(prefix="ms-", dir=work)
    return e


def throughput(work: Path, total_mib: int, rounds: int, throttle_mib: float = 0) -> dict:
    """Each client in turn, both hubs' APIs (yichui and huggingface_hub on the HF API, yichui and the ModelScope
    client on ModelScope's); ``throttle_mib``: every response capped at that many MiB/s (a per-connection limit)."""
    root = work / "hub-tp"
    n = 4
    make_repo(root, {f"model-0000{i + 1}-of-0000{n}.safetensors": total_mib * MB // n for i in range(n)})
    hub, url = start_hub(root, [{"path": "*", "throttle": int(throttle_mib * MB)}] if throttle_mib else None)
    kinds = ("yichui-hf", "huggingface_hub", "yichui-modelscope", "modelscope")
    times = {k: [] for k in kinds}
    try:
        for r in range(rounds):
            for kind in (kinds if r % 2 == 0 else kinds[::-1]):
                out = work / f"tp-{kind}"
                shutil.rmtree(out, ignore_errors=True)
                t = time.monotonic()
                subprocess.run(client_cmd(kind, url, out), env=env(work), check=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
                times[kind].append(time.monotonic() - t)
                shutil.rmtree(out, ignore_errors=True)
    finally:
        hub.terminate()
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"total_mib": total_mib, "files": n + 1, "seconds": times, "throttle_mib_s": throttle_mib or None,
            "mib_per_s": {k: round(total_mib / v, 1) for k, v in med.items()},
            "ratio_yichui_over_peer": round(med["huggingface_hub"] / med["yichui-hf"], 3),
            "ratio_yichui_over_modelscope": round(med["modelscope"] / med["yichui-modelscope"], 3)}


def partial_bytes(out: Path, name: str) -> int:
    """How far a client is into ``name``: yichui's sidecar, else the size of the temporary file it wrote to last
    (a client that starts over writes a new or truncated one; one that resumes keeps growing the same)."""
    side = out / (name + ".yichui-part.json")
    if side.exists():
        try:
            return sum(s[2] for s in json.loads(side.read_text())["segments"])
        except (OSError, ValueError):
            return 0
    newest = (0.0, 0)
    for p in out.rglob("*") if out.exists() else []:
        try:
            st = p.stat()
            if p.is_file() and p.name != name and st.st_size > 4096:
                newest = max(newest, (st.st_mtime, st.st_size))
        except OSError:
            continue
    return newest[1]


def kill_scenario(work: Path, kill_mib: int, kinds: list[str], seed: int, kills: int = 10) -> dict:
    root = work / "hub-kill"
    name = "model.safetensors"
    size = kill_mib * MB
    make_repo(root, {name: size})
    want = hashlib.sha256((root / REPO / name).read_bytes()).hexdigest()
    rng = random.Random(seed)
    points = sorted(rng.uniform(0.05, 0.95) for _ in range(kills))
    hub, url = start_hub(root, [{"path": name, "throttle": 60 * MB}])
    results = {}
    try:
        for kind in kinds:
            out = work / f"kill-{kind}"
            shutil.rmtree(out, ignore_errors=True)
            stats(url, reset=True)
            kills, t0 = 0, time.monotonic()
            for frac in points:
                p = subprocess.Popen(client_cmd(kind, url, out), env=env(work), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
                end = time.monotonic() + 120
                while time.monotonic() < end and p.poll() is None and partial_bytes(out, name) < frac * size:
                    time.sleep(0.02)
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
                    kills += 1
                p.wait()
                if (out / name).exists():
                    break
            subprocess.run(client_cmd(kind, url, out), env=env(work), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=600)
            sent = stats(url).get(name, 0)
            ok = (out / name).exists() and hashlib.sha256((out / name).read_bytes()).hexdigest() == want
            results[kind] = {"kills": kills, "bytes_sent": sent, "ratio_to_size": round(sent / size, 3),
                             "sha256_ok": ok, "seconds": round(time.monotonic() - t0, 1)}
            print(kind, results[kind], flush=True)
    finally:
        hub.terminate()
    return {"file_mib": kill_mib, "kills": kills, "kill_points": [round(x, 3) for x in points], "throttle_mib_s": 60,
            "clients": results}


def versions() -> dict:
    from importlib.metadata import version

    return {m: version(m) for m in ("huggingface_hub", "modelscope", "modelscope_hub", "requests")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--total-mib", type=int, default=1024)
    ap.add_argument("--kill-mib", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=20261129)
    ap.add_argument("--out", default=None)
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument("--cdn", action="store_true", help="the hub redirects large files to signed storage (HF API)")
    ap.add_argument("--throttle-mib", type=float, default=0, help="throughput: each response capped at MiB/s")
    ap.add_argument("--kills", default="10", help="kill scenarios to run: SIGKILLs per download, comma list")
    a = ap.parse_args()
    if a.cdn:
        MODES["cdn"] = True
    work = Path(tempfile.mkdtemp(prefix="yichui-dlbench-"))
    try:
        result = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                  "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, loopback", "versions": versions(),
                  "hub_modes": dict(MODES)}
        if not a.skip_throughput:
            result["throughput"] = throughput(work, a.total_mib, a.rounds, a.throttle_mib)
            print(json.dumps(result["throughput"]), flush=True)
        result["kill"] = {n: kill_scenario(work, a.kill_mib, ["yichui-hf", "yichui-modelscope", "huggingface_hub",
                                                              "modelscope"], a.seed, int(n)) for n in a.kills.split(",")}
        print(json.dumps(result, indent=2))
        if a.out:
            Path(a.out).write_text(json.dumps(result, indent=2) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
