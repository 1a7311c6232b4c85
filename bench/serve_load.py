#!/usr/bin/env python3
"""A small load test of the OpenAI-compatible server the deploy step starts: N chat completions at each concurrency,
requests/s, p50/p99 latency and generated tokens/s.

    python bench/serve_load.py --out bench/results/DATE-serve-load-cpu.json [--model DIR] [--requests 16]

Without ``--model`` it serves the embedded tiny model (built in ~30 s). The server is started exactly as the deploy
step starts it (``transformers serve``, detached, 127.0.0.1), checked for health, loaded, then stopped.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
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


def load(base: str, model: str, concurrency: int, n: int, max_tokens: int) -> dict:
    """``n`` chat completions, ``concurrency`` at a time (threads), greedy, ``max_tokens`` each."""
    from recipes.deploy import _http

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
                r = _http(base + "/v1/chat/completions", {"model": model, "max_tokens": max_tokens, "temperature": 0,
                                                          "messages": [{"role": "user", "content": QUESTIONS[i % 4]}]})
                with lock:
                    latencies.append(time.perf_counter() - t0)
                    tokens.append((r.get("usage") or {}).get("completion_tokens"))
            except Exception as e:  # recorded, not fatal: the figure says how many failed
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
    gen = sum(t for t in tokens if t) if all(tokens) and tokens else None
    return {"concurrency": concurrency, "requests": n, "ok": len(lat), "errors": errors[:3], "wall_s": round(wall, 3),
            "requests_per_s": round(len(lat) / wall, 3), "p50_s": round(q(0.5), 3) if lat else None,
            "p99_s": round(q(0.99), 3) if lat else None, "mean_s": round(statistics.mean(lat), 3) if lat else None,
            "completion_tokens_per_s": round(gen / wall, 1) if gen else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default=None)
    ap.add_argument("--requests", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--concurrency", default="1,4,8")
    a = ap.parse_args()

    from importlib.metadata import version

    from recipes import deploy, jobs, tiny

    work = Path(tempfile.mkdtemp(prefix="yichui-serveload-"))
    model_dir = Path(a.model) if a.model else tiny.build(work / "tiny")
    port = deploy.free_port()
    base = f"http://127.0.0.1:{port}"
    argv = [str(Path(sys.executable).parent / "transformers"), "serve", str(model_dir), "--host", "127.0.0.1",
            "--port", str(port), "--device", "cpu"]
    job = jobs.spawn("server", argv, work)
    try:
        t0 = time.time()
        deploy.wait_healthy(job, base)
        ready_s = round(time.time() - t0, 1)
        model = deploy._http(base + "/v1/models")["data"][0]["id"]
        load(base, model, 1, 2, a.max_tokens)  # warm-up: the first request loads the model
        rows = [load(base, model, int(c), a.requests, a.max_tokens) for c in a.concurrency.split(",")]
    finally:
        job.stop()
    out = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "machine": platform.processor()
           or platform.machine(), "cpus": __import__("os").cpu_count(), "server": "transformers serve",
           "versions": {p: version(p) for p in ("transformers", "torch")}, "model": str(model_dir),
           "max_tokens": a.max_tokens, "health_after_s": ready_s, "rows": rows}
    Path(a.out).write_text(json.dumps(out, indent=2) + "\n")
    for r in rows:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
