"""The sizes yichui writes into DeepSpeed's ``zero_optimization``: one rule that the trainer's config
(recipes/training/worker.py deepspeed_config) and the memory model (recipes/memory/sharding.py) both read, so the
buffers the model prices are the ones the trainer asks for. Written as numbers, so that DeepSpeed's zero.Init, which
reads the config before the Trainer fills in "auto", sees them too.

The sizes are DeepSpeed 0.19.8's defaults (runtime/zero/config.py: reduce bucket 5e8 elements, stage-3 prefetch
bucket 5e7, parameter persistence threshold 1e5, live and reuse limits and sub-group size 1e9). transformers'
"auto" rule (integrations/deepspeed.py: reduce bucket h², prefetch 0.9·h², persistence 10·h), which accelerate's stock
configs ask for, was measured slower on an H200 (Qwen2.5-1.5B shape, full fine-tune, ZeRO-3 in one process: 2,215
vs 2,949 tokens/s with DeepSpeed's sizes, the same memory; bench/results/2026-12-04-sharded-one-gpu-h200.md).

overlap_comm: on at stage 3 over several GPUs (DeepSpeed's own stage-3 default, which yichui had turned off: ZeRO-3
ran at 0.28× ZeRO-2's tokens/s on two H200s then, bench/results/2026-11-29-distributed-h200.md — the effect of
turning it on there is not measured yet); off in one process, where nothing travels and it cost 8 % (2,949 vs 3,207
tokens/s), and at stages 1/2, where it would double the reduce bucket.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

DEFAULT_LIMIT = 1_000_000_000  # DeepSpeed's stage3_max_live_parameters / max_reuse_distance / sub_group_size


@dataclass(frozen=True)
class ZeroSizes:
    """Elements (not bytes) of DeepSpeed's ZeRO buffers and thresholds."""

    reduce_bucket: int
    prefetch_bucket: int
    persistence_threshold: int
    overlap_comm: bool
    max_live: int = DEFAULT_LIMIT
    max_reuse: int = DEFAULT_LIMIT
    sub_group: int = DEFAULT_LIMIT

    @classmethod
    def of(cls, stage: int, gpus: int) -> ZeroSizes:
        """What yichui writes at ZeRO ``stage`` over ``gpus`` processes (see the module docstring)."""
        return cls(reduce_bucket=500_000_000, prefetch_bucket=50_000_000, persistence_threshold=100_000,
                   overlap_comm=stage == 3 and gpus > 1)

    @classmethod
    def deepspeed_defaults(cls, stage: int) -> ZeroSizes:
        """DeepSpeed's defaults with overlap_comm off: what yichui wrote before 2026-12-04 (the two-GPU rows of
        bench/results/2026-11-29-distributed-h200*.jsonl were measured so)."""
        return replace(cls.of(stage, 1), overlap_comm=False)

    @classmethod
    def auto(cls, hidden: int, stage: int) -> ZeroSizes:
        """transformers' "auto" sizes for a model of hidden size ``hidden`` (what accelerate's stock configs get)."""
        h2 = hidden * hidden
        return cls(reduce_bucket=h2, prefetch_bucket=int(0.9 * h2), persistence_threshold=10 * hidden,
                   overlap_comm=stage == 3)

    @classmethod
    def named(cls, text: str, stage: int, gpus: int, hidden: int) -> ZeroSizes:
        """A benchmark's sizes (TrainerJob.zero_sizes): ``BASE[,field=value,…]`` with BASE "yichui" (:meth:`of`),
        "deepspeed" (:meth:`deepspeed_defaults`) or "auto" (:meth:`auto`), the fields overriding it; a text that
        starts with an override means yichui's."""
        base, *more = text.split(",")
        if "=" in base:
            base, more = "yichui", [base, *more]
        out = {"deepspeed": cls.deepspeed_defaults(stage), "auto": cls.auto(hidden, stage)}.get(base) \
            or cls.of(stage, gpus)
        kw: dict[str, Any] = {k: (v not in ("0", "false") if k == "overlap_comm" else int(float(v)))
                              for k, v in (kv.split("=", 1) for kv in more)}
        return replace(out, **kw)

    def config(self, stage: int) -> dict:
        """The ``zero_optimization`` keys for these sizes."""
        out = {"overlap_comm": self.overlap_comm, "reduce_bucket_size": self.reduce_bucket}
        if stage == 3:
            out |= {"stage3_prefetch_bucket_size": self.prefetch_bucket,
                    "stage3_param_persistence_threshold": self.persistence_threshold,
                    "stage3_max_live_parameters": self.max_live, "stage3_max_reuse_distance": self.max_reuse,
                    "sub_group_size": self.sub_group}
        return out
