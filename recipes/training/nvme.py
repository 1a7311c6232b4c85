"""DeepSpeed ZeRO-3 offload to NVMe (ZeRO-Infinity): what is checked before a run swaps its states to a disk.

DeepSpeed reads and writes the swap files through its ``async_io`` op, compiled on first use against libaio
(``deepspeed.ops.op_builder.AsyncIOBuilder``); the files go to ``<nvme_path>/zero_stage_3/…`` (its
``offload_param`` / ``offload_optimizer`` sections, recipes/training/worker.py deepspeed_config). A path without
room for them fails mid-run with a write error, a slow disk makes every step wait on it: both are said before.
"""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from recipes.base import Msg, msg

GIB = 2**30
PROBE_BYTES = 64 * 2**20   # written (and fsync'd) once to measure the disk
SLOW_GBPS = 1.0            # below this a step waits on the disk: said, not refused
PERSISTENCE_THRESHOLD = 100_000  # DeepSpeed's stage3_param_persistence_threshold default: smaller parameters stay
                                 # on the GPU whole, never swapped


@dataclass(frozen=True)
class SwapShape:
    """What DeepSpeed's parameter swapper must hold at once, from the model's parameters (elements, not bytes).

    ZeRO-3 with ``offload_param`` on NVMe reads each parameter's partition into one of ``buffer_count`` pinned CPU
    buffers of ``buffer_size`` elements, and keeps it there while the parameter is gathered on the GPU. DeepSpeed's
    defaults (5 buffers; a parameter kept gathered when it is used again within 1e9 elements, prefetch 5e7 elements)
    run out of buffers on a real model: "Not enough buffers 0 for swapping 1" (DeepSpeed issue #3062; seen on the
    H200 with the Qwen2.5-1.5B shape, bench/results/2026-12-03-nvme-offload-h200.md). So the reuse distance, the
    prefetch bucket and the live limit are one decoder layer here, and the buffers cover the layer in use, the
    parameters still kept within that distance and the ones prefetched, with room for a layer boundary."""

    largest: int       # the largest parameter (a buffer holds any partition)
    layer_params: int  # the most swapped parameters (≥ PERSISTENCE_THRESHOLD elements) in one decoder layer
    layer_numel: int   # the most elements in one decoder layer

    @classmethod
    def of(cls, named: list[tuple[str, int]]) -> SwapShape:
        """From ``(name, elements)`` per parameter; a layer is the name up to its first number ("model.layers.3"),
        a parameter outside numbered layers (embeddings, final norm) a layer of its own, whose elements (a large
        embedding) do not set the per-layer window unless the model has no numbered layers."""
        params: dict[str, int] = {}
        numel: dict[str, int] = {}
        numbered: set[str] = set()
        for name, n in named:
            parts = name.split(".")
            cut = next((i for i, p in enumerate(parts) if p.isdigit()), None)
            key = name if cut is None else ".".join(parts[:cut + 1])
            if cut is not None:
                numbered.add(key)
            numel[key] = numel.get(key, 0) + n
            params[key] = params.get(key, 0) + (n >= PERSISTENCE_THRESHOLD)
        return cls(largest=max((n for _, n in named), default=0), layer_params=max(params.values(), default=0),
                   layer_numel=max((numel[k] for k in numbered or numel), default=0))

    def offload_param(self) -> dict:
        """The ``offload_param`` buffer fields: 2 × a layer's swapped parameters + 4 buffers (the layer in use and
        the next, a boundary between two), each the largest parameter (and at least DeepSpeed's 1e8 default).
        Pinned CPU memory: buffer_count × buffer_size × 2 bytes (bf16)."""
        return {"buffer_count": 2 * self.layer_params + 4, "buffer_size": max(int(1e8), self.largest)}

    def zero_limits(self) -> dict:
        """ZeRO-3's reuse distance, prefetch bucket and live limit, in elements, bounded by one decoder layer."""
        layer = max(self.layer_numel, 1)
        return {"stage3_max_reuse_distance": layer, "stage3_prefetch_bucket_size": layer,
                "stage3_max_live_parameters": 2 * layer}


def aio_missing() -> Msg | None:
    """Why DeepSpeed's async_io op cannot be built here (no libaio), or None when it can.

    DeepSpeed's own check (``AsyncIOBuilder().is_compatible()``: compiles a call of ``io_submit`` against
    ``-laio``; CFLAGS / LDFLAGS point it at a libaio outside the system paths). Seen on the H200 image (Python
    3.12, no setuptools): that check fails with "No module named 'distutils'", and DeepSpeed then refuses to build
    the op ("not compatible") — said as such (bench/results/2026-12-03-nvme-offload-h200.md)."""
    try:
        from deepspeed.ops.op_builder import AsyncIOBuilder
    except ImportError:
        return msg("training.no_deepspeed")
    try:
        ok = AsyncIOBuilder().is_compatible(verbose=False)
    except ImportError as e:  # its check imports distutils: gone from Python 3.12 unless setuptools is installed
        return msg("training.aio_check_failed", error=f"{type(e).__name__}: {e}")
    return None if ok else msg("training.no_libaio")


def path_problem(path: str, need_bytes: int) -> Msg | None:
    """Why ``path`` cannot hold ``need_bytes`` of swap files (not a folder it can create and write in, or not
    enough free space with a 10 % margin), or None."""
    p = Path(path).expanduser()
    try:
        p.mkdir(parents=True, exist_ok=True)
        probe = p / ".yichui-write-probe"
        probe.write_bytes(b"x")
        probe.unlink()
    except OSError as e:
        return msg("training.nvme_unusable", path=str(p), error=e.strerror or str(e))
    free = shutil.disk_usage(p).free
    if free < 1.1 * need_bytes:
        return msg("training.nvme_too_small", path=str(p), free=f"{free / GIB:.1f}",
                   need=f"{1.1 * need_bytes / GIB:.1f}")
    return None


def write_speed(path: str, size: int = PROBE_BYTES) -> float:
    """Sequential write speed of the disk under ``path`` in GB/s (10^9 bytes): ``size`` bytes in 8 MiB blocks,
    fsync'd, the file removed after. Raises OSError when it cannot write there."""
    p = Path(path).expanduser() / ".yichui-speed-probe"
    block = os.urandom(8 * 2**20)
    t0 = time.perf_counter()
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for _ in range(max(1, size // len(block))):
            os.write(fd, block)
        os.fsync(fd)
    finally:
        os.close(fd)
        seconds = time.perf_counter() - t0
        p.unlink(missing_ok=True)
    return size / max(seconds, 1e-9) / 1e9
