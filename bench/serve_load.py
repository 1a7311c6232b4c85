#!/usr/bin/env python3
"""A load test of an OpenAI-compatible server: N chat completions at each concurrency, requests/s, p50/p99 latency
and generated tokens/s.

    python bench/serve_load.py --endpoint http://127.0.0.1:8100/v1 --model NAME [--key-file F] --label vllm --out F.json
    python bench/serve_load.py --serve-transformers DIR [--device cuda] --label transformers --out F.json
    python bench/serve_load.py --out F.json              # transformers serve on the embedded tiny model, on the CPU

With ``--endpoint`` it loads a server that runs already (the deploy step's, whatever the engine). Otherwise it starts
``transformers serve`` itself exactly as the deploy step starts it (detached, 127.0.0.1), checks its health, loads
it and stops it. The same prompts, greedy, the same token limit for every server, so two runs on the same model and
GPU compare engines and nothing else. Each row: ``concurrency``, ``requests``, ``ok``, ``errors`` (first three),
``wall_s``, ``requests_per_s``, ``p50_s``/``p99_s``/``mean_s`` latency of a whole completion, and
``completion_tokens_per_s`` (the servers' own ``usage.completion_tokens`` over the wall time).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

QUESTIONS = ["What is LoRA?", "What does QLoRA quantize?", "Why use gradient accumulation?", "What is a KV cache?"]


def load(endpoint: str, model: str, concurrency: int, n: int, max_tokens: int, key: str | None = None) -> dict:
    """``n`` chat completions, ``concurrency`` at a time (threads), greedy, ``max_tokens`` each."""
    from recipes.serving import client

    latencies, tokens, errors, lock = [], [], [], threading.Lock()
    todo = list(range(n))

    def worker():
        while True:
            with lock:
                if not todo:
                    return
                i = todo.pop()
            t0 = time.perf_counter()
            try:
                r = client.complete(endpoint, model, [{"role": "user", "content": QUESTIONS[i % 4]}], max_tokens,
                                    api_key=key)
                with lock:
                    latencies.append(time.perf_counter() - t0)
                    tokens.append(r.tokens)
            except Exception as e:  # recorded, not fatal: the row says how many failed
                with lock:
                    errors.append(f"{type(e).__name__}: {e}"[:200])

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    lat = sorted(latencies)
    q = lambda p: lat[min(len(lat) - 1, int(round(p * (len(lat) - 1))))] if lat else None  # noqa: E731
    gen = sum(tokens) if tokens and all(t is not None for t in tokens) else None
    return {"concurrency": concurrency, "requests": n, "ok": len(lat), "errors": errors[:3], "wall_s": round(wall, 3),
            "requests_per_s": round(len(lat) / wall, 3), "p50_s": round(q(0.5), 3) if lat else None,
            "p99_s": round(q(0.99), 3) if lat else None, "mean_s": round(statistics.mean(lat), 3) if lat else None,
            "completion_tokens": gen, "completion_tokens_per_s": round(gen / wall, 1) if gen else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--endpoint", help="a running server's base URL (ending in /v1)")
    ap.add_argument("--model", help="the served model's name (with --endpoint)")
    ap.add_argument("--key-file", help="the server's API key file (with --endpoint)")
    ap.add_argument("--serve-transformers", metavar="DIR", help="start transformers serve on DIR")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--label", default="")
    ap.add_argument("--requests", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--concurrency", default="1,4,8")
    a = ap.parse_args()

    from importlib.metadata import version

    from recipes import jobs
    from recipes.demo import tiny_model as tiny
    from recipes.serving import client, keys
    from recipes.serving import server as engine_server

    job = None
    key = keys.read_key(a.key_file)
    ready_s = None
    if a.endpoint:
        endpoint, model, server = a.endpoint.rstrip("/"), a.model, a.label or "endpoint"
    else:
        work = Path(tempfile.mkdtemp(prefix="yichui-serveload-"))
        model_dir = Path(a.serve_transformers) if a.serve_transformers else tiny.build(work / "tiny")
        # reserved as the deploy step reserves its port: a demo's server starting on this machine keeps its own
        port = engine_server.reserve_port(work, f"serve-load-{os.getpid()}")
        argv = [str(Path(sys.executable).parent / "transformers"), "serve", str(model_dir), "--host", "127.0.0.1",
                "--port", str(port), "--device", a.device]
        job = jobs.spawn("server", argv, work)
        engine_server.hand_over(port, job.pid)
        endpoint, server = f"http://127.0.0.1:{port}/v1", a.label or "transformers serve"
        t0 = time.time()
        engine_server.wait_healthy(job, endpoint[:-3])
        ready_s = round(time.time() - t0, 1)
        model = client.first_model(endpoint)
    try:
        load(endpoint, model, 1, 2, a.max_tokens, key)  # warm-up: the first request may load the model
        rows = [load(endpoint, model, int(c), a.requests, a.max_tokens, key) for c in a.concurrency.split(",")]
    finally:
        if job is not None:
            job.stop()
    gpu = None
    try:
        import subprocess

        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip() or None
    except OSError:
        pass
    out = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "server": server,
           "machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(), "gpu": gpu,
           "versions": {p: version(p) for p in ("transformers", "torch")}, "model": model, "endpoint": endpoint,
           "max_tokens": a.max_tokens, "health_after_s": ready_s, "rows": rows}
    Path(a.out).write_text(json.dumps(out, indent=2) + "\n")
    for r in rows:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
