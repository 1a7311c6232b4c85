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
from pathlib import Path

from recipes.base import Msg, msg

GIB = 2**30
PROBE_BYTES = 64 * 2**20   # written (and fsync'd) once to measure the disk
SLOW_GBPS = 1.0            # below this a step waits on the disk: said, not refused


def aio_missing() -> Msg | None:
    """Why DeepSpeed's async_io op cannot be built here (no libaio), or None when it can.

    DeepSpeed's own check (``AsyncIOBuilder().is_compatible()``: compiles a call of ``io_submit`` against
    ``-laio``; CFLAGS / LDFLAGS point it at a libaio outside the system paths). Seen on the H200 image (Python
    3.12, no setuptools): that check fails with "No module named 'distutils'", and DeepSpeed then refuses to build
    the op ("not compatible") — said as such (bench/results/2026-12-03-nvme-offload-h200.md)."""
    try:
        from deepspeed.ops.op_builder import AsyncIOBuilder
    except ImportError:
        return msg("choose_strategy.no_deepspeed")
    try:
        ok = AsyncIOBuilder().is_compatible(verbose=False)
    except ImportError as e:  # its check imports distutils: gone from Python 3.12 unless setuptools is installed
        return msg("choose_strategy.aio_check_failed", error=f"{type(e).__name__}: {e}")
    return None if ok else msg("choose_strategy.no_libaio")


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
        return msg("choose_strategy.nvme_unusable", path=str(p), error=e.strerror or str(e))
    free = shutil.disk_usage(p).free
    if free < 1.1 * need_bytes:
        return msg("choose_strategy.nvme_too_small", path=str(p), free=f"{free / GIB:.1f}",
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
