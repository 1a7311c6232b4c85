"""Step 7 — deploy: an OpenAI-compatible server on the exported model, detached, checked with one chat completion.

`transformers serve` runs everywhere (the only engine that runs on a CPU); vLLM, SGLang and LMDeploy are shown as
installed or not, and launching them comes with the deploy issue. The server binds 127.0.0.1: `transformers serve`
has no API key, so it is refused on any other address.
"""
from __future__ import annotations

import importlib.util
import json
import shlex
import socket
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from recipes import jobs, memory, quantize
from recipes.base import Choice, Question, StepError, msg

name = "deploy"
requires = ("export",)
BACKENDS = {"transformers": "fastapi", "vllm": "vllm", "sglang": "sglang", "lmdeploy": "lmdeploy"}
LOOPBACK = ("127.0.0.1", "localhost", "::1")
HEALTH_TIMEOUT_S = 300


def installed(backend: str) -> bool:
    mod = BACKENDS[backend]
    return importlib.util.find_spec(mod) is not None and (backend != "transformers" or
                                                         importlib.util.find_spec("uvicorn") is not None)


def port_free(host: str, port: int) -> bool:
    """Can a server listen on host:port? SO_REUSEADDR as uvicorn sets it, so TIME_WAIT leftovers do not count."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1", start: int = 8000) -> int:
    return next((p for p in range(start, start + 200) if port_free(host, p)), 0)


def questions(ctx) -> list[Question]:
    exported = ctx.outputs("export")

    def models(a):
        """The exports the chosen engine loads (recipes/quantize.py ENGINE_FORMATS)."""
        loads = quantize.engine_formats(a.get("backend", "transformers"))
        return [Choice("merged", msg("deploy.model.merged"))] + [
            Choice(f, msg("deploy.model.format", format=f)) for f in exported.get("artifacts", {}) if f in loads]

    def check_backend(v, a):
        if v == "transformers":
            return None if installed(v) else msg("deploy.not_installed", backend=v, pip="transformers[serving]")
        return msg("deploy.backend_later", backend=v,
                   state=msg("deploy.installed") if installed(v) else msg("deploy.not_installed_short"))

    def check_host(v, a):
        return None if v in LOOPBACK else msg("deploy.loopback_only", host=v)

    def check_port(v, a):
        if not 1 <= v <= 65535:
            return msg("answer.out_of_range", lo=1, hi=65535)
        return None if port_free(a.get("host", "127.0.0.1"), v) else msg("deploy.port_in_use", port=v)

    return [
        Question("backend", "select", "deploy.backend", validate=check_backend,
                 default=exported["serve_with"] if exported.get("serve_with") in BACKENDS
                 and check_backend(exported["serve_with"], {}) is None else "transformers",
                 choices=[Choice(b, msg("deploy.backend.label", backend=b, state=msg(
                     "deploy.installed" if installed(b) else "deploy.not_installed_short"))) for b in BACKENDS]),
        Question("model", "select", "deploy.model", default="merged", choices=models),
        Question("host", "text", "deploy.host", default="127.0.0.1", validate=check_host),
        Question("port", "int", "deploy.port", default=lambda a: free_port(a.get("host", "127.0.0.1")),
                 validate=check_port),
    ]


def _http(url: str, body: dict | None = None, timeout: float = 120) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def wait_healthy(job: jobs.Job, base: str, timeout: float = HEALTH_TIMEOUT_S) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not job.alive():
            raise StepError("deploy.died", log=job.log, tail=job.log_tail(8))
        try:
            if _http(base + "/health", timeout=2).get("status") == "ok":
                return
        except (urllib.error.URLError, OSError, ValueError):
            pass
        time.sleep(0.5)
    raise StepError("deploy.timeout", seconds=timeout, log=job.log)


def chat(base: str, model: str, question: str, max_tokens: int = 48) -> str:
    r = _http(base + "/v1/chat/completions", {"model": model, "messages": [{"role": "user", "content": question}],
                                              "max_tokens": max_tokens, "temperature": 0})
    return r["choices"][0]["message"]["content"].strip()


def run(ctx, answers: dict) -> dict:
    exported = ctx.outputs("export")
    model_dir = exported["merged_dir"] if answers["model"] == "merged" else exported["artifacts"][answers["model"]]["dir"]
    host, port = answers["host"], answers["port"]
    sdir = ctx.run_dir / "serve"
    base = f"http://{host}:{port}"
    job = jobs.read(sdir / "server.pid.json")
    if job is not None and job.alive():
        ctx.info(msg("deploy.stopping_old", pid=job.pid))
        job.stop()
    exe = Path(sys.executable).parent / "transformers"
    argv = [str(exe), "serve", model_dir, "--host", host, "--port", str(port),
            "--device", "auto" if memory.detect_gpus() else "cpu"]
    job = jobs.spawn("server", argv, sdir)
    ctx.record(server_pid=job.pid, endpoint=base + "/v1")
    ctx.info(msg("deploy.starting", pid=job.pid, log=job.log))
    wait_healthy(job, base)
    served = _http(base + "/v1/models")["data"][0]["id"]
    samples = ctx.outputs("train").get("samples", {})
    question = samples.get("question") or "What is LoRA?"
    reply = chat(base, served, question)
    ctx.info(msg("deploy.ready", endpoint=base + "/v1", model=served, pid=job.pid))
    if samples.get("before") is not None:
        ctx.info(msg("deploy.before", question=question, answer=samples["before"]))
    ctx.info(msg("deploy.after", question=question, answer=reply))
    curl = (f"curl {base}/v1/chat/completions -H 'Content-Type: application/json' -d "
            + shlex.quote(json.dumps({"model": served, "messages": [{"role": "user", "content": question}]})))
    ctx.info(msg("deploy.curl", curl=curl))
    ctx.info(msg("deploy.stop_hint", id=ctx.session_id))
    return {"backend": answers["backend"], "endpoint": base + "/v1", "served_model": served, "model_dir": model_dir,
            "server_pid": job.pid, "log": job.log, "question": question, "reply": reply}


def is_done(ctx, record: dict) -> bool:
    """Deployed, and the server still runs: after a crash (or `yichui stop`) the step runs again with the same
    answers (`yichui serve start`)."""
    job = jobs.read(ctx.run_dir / "serve" / "server.pid.json")
    return bool(record["outputs"].get("reply")) and job is not None and job.alive()
