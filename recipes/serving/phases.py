"""An engine's start, phase by phase, read from its own log while it starts (issue 48: "no silent minute").

Each engine says in its log where its start is: the patterns below are the lines the engines print at the start of
each phase, taken from their real logs on the H200 (bench/results/2026-12-01-serve-h200-round4/: vLLM 0.26.0
``server-merged.log``, SGLang 0.5.17 ``sglang-graphs/server-holdout-sglang-*.log``, LMDeploy 0.18.0
``server-lmdeploy-merged.log``) and transformers serve on this machine. A phase is the latest one whose line has
appeared; one the engine skips (no CUDA graphs under --enforce-eager) is simply never seen. The deploy step shows the
phase and its time as progress and records when each began (``Deployment.start_phases``).

Phases, in the order engines go through them: ``start`` (the interpreter and the engine's imports), ``engine`` (the
engine process, the distributed setup), ``loading`` (the weights), ``compiling`` (torch.compile of the model),
``kv_cache`` (the memory profile and the KV cache), ``warmup`` (kernels built or tuned on first use — vLLM's silent
stretch, LMDeploy's warm-up), ``graphs`` (CUDA graph capture), ``api`` (the HTTP server up; it answers /health once
ready).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

ORDER = ("start", "engine", "loading", "compiling", "kv_cache", "warmup", "graphs", "api")

PATTERNS: dict[str, tuple[tuple[str, re.Pattern], ...]] = {name: tuple((p, re.compile(x)) for p, x in pats)
                                                           for name, pats in {
    "vllm": (("engine", r"Initializing a V1 LLM engine|Resolved architecture"),
             ("loading", r"Loading model from scratch|Loading weights|Loading safetensors checkpoint shards"),
             ("compiling", r"Dynamo bytecode transform|Compiling a graph for|torch\.compile takes"),
             ("kv_cache", r"Available KV cache memory|GPU KV cache size"),
             ("warmup", r"kernel_warmup|FlashInfer autotune|Kernel JIT monitor"),
             ("graphs", r"Capturing CUDA graphs?|Capturing cudagraphs|CUDA graph capturing"),
             ("api", r"Starting vLLM (API )?server|Application startup complete|Uvicorn running")),
    "sglang": (("engine", r"Init torch distributed begin"),
               ("loading", r"Load weight begin"),
               ("kv_cache", r"KV Cache is allocated|Memory pool end"),
               ("graphs", r"Capture (target )?(prefill |decode )?[Cc]uda graph begin|Capture (target )?(prefill |decode )?CUDA graph begin"),
               ("api", r"Started server process|Uvicorn running|Application startup complete"),
               ("warmup", r"fired up and ready")),  # its warm-up request, after the HTTP server is up
    "lmdeploy": (("engine", r"Build <\w+> executor|Connecting to AsyncRPCServer"),
                 ("loading", r"Building Model|Loading weights from safetensors"),
                 ("kv_cache", r"Building CacheEngine"),
                 ("warmup", r"Warming up model|Starting engine warmup"),
                 ("api", r"Started server process|Uvicorn running|Application startup complete")),
    "transformers": (("api", r"Started server process|Uvicorn running|Application startup complete"),),
}.items()}


@dataclass
class StartWatch:
    """Follows one engine's log as it starts: :meth:`poll` reads what was appended and returns the phase now.

    ``began``: phase → seconds after ``t0`` when its line first appeared (``start`` at 0), in the order they
    appeared; the log may be absent yet (the process has not opened it)."""

    engine: str
    log: Path
    t0: float = field(default_factory=time.monotonic)
    began: dict = field(default_factory=lambda: {"start": 0.0})
    _offset: int = 0
    _rest: str = ""

    @property
    def phase(self) -> str:
        """The phase begun last (``began`` keeps the order they appeared in the log)."""
        return next(reversed(self.began))

    def poll(self) -> str:
        try:
            with open(self.log, "rb") as f:
                f.seek(self._offset)
                chunk = f.read(1 << 20)  # a start writes kilobytes; a flood is read over several polls
        except OSError:
            return self.phase
        self._offset += len(chunk)
        # progress bars rewrite one line with \r: each rewrite counts as a line
        lines = (self._rest + chunk.decode("utf-8", "replace")).replace("\r", "\n").split("\n")
        self._rest = lines.pop()
        now = round(time.monotonic() - self.t0, 1)
        for line in lines:
            self.see(line, now)
        return self.phase

    def see(self, line: str, at: float) -> None:
        """Record the phase ``line`` begins (the first time), at ``at`` seconds."""
        for phase, pattern in PATTERNS.get(self.engine, ()):
            if phase not in self.began and pattern.search(line):
                self.began[phase] = at


def phases_of_log(engine: str, text: str) -> list[str]:
    """The phases ``text`` (a whole log) goes through, in the order they appear (tests and benchmarks)."""
    watch = StartWatch(engine, Path("/nonexistent"))
    for i, line in enumerate(text.replace("\r", "\n").splitlines()):
        watch.see(line, float(i + 1))
    return list(watch.began)
