"""A pre-quantized base model (config.json's ``quantization_config``): what it is, and whether LoRA can train on it
with the base kept quantized in memory. Reads config.json only (no torch): select_model, the memory model and the
strategy step use it; recipes/training/packed.py holds the weights.

Trainable here: compressed-tensors checkpoints (llm-compressor's format: yichui's own GPTQ/AWQ/FP8 exports, the
RedHatAI / neuralmagic models) whose linear layers keep integer or FP8 weights with their scales — the packed
("pack-quantized"), plain integer ("int-quantized"), FP8 ("float-quantized") and fake-quantized ("naive-quantized")
formats. Not here: the GPTQ and AWQ checkpoint formats (quant_method "gptq" / "awq": transformers 5 reads them
through gptqmodel, which this stack does not carry — auto-gptq and autoawq do not install with transformers 5,
../shared/FACTS.md), sparse formats and FP4.
"""
from __future__ import annotations

from dataclasses import dataclass

# compressed-tensors formats whose weights compressed_tensors' compressor for the format can rebuild one linear
# layer at a time (compressed_tensors.compressors.<format>: decompress(state_dict, scheme))
TRAINABLE_FORMATS = ("pack-quantized", "int-quantized", "float-quantized", "naive-quantized")


@dataclass(frozen=True)
class PreQuantized:
    """The base's quantization as its config.json says. ``bits``: the weights' bits (4 for W4A16); ``group_size``:
    weights per scale (0: one scale per output channel or per tensor); ``scale_bytes``: bytes of one scale (2: the
    bf16/fp16 scales llm-compressor writes); ``reason``: why LoRA cannot train on it here ('' when it can)."""

    method: str              # quant_method: "compressed-tensors", "gptq", "awq", "fp8", "bitsandbytes", …
    format: str = ""         # compressed-tensors' format ("pack-quantized", …)
    bits: int = 16
    group_size: int = 0
    scale_bytes: int = 2
    reason: str = ""

    @property
    def trainable(self) -> bool:
        return not self.reason

    @property
    def label(self) -> str:
        """As a user reads it: "W4A16 (compressed-tensors, group 128)"."""
        detail = f"{self.method}, group {self.group_size}" if self.group_size else self.method
        return f"W{self.bits}A16 ({detail})" if self.bits < 16 else self.method

    def weight_bytes_per_param(self) -> float:
        """Bytes per weight of a quantized linear layer: the packed value plus its share of a scale (and, for
        asymmetric schemes, a zero point: counted as a second scale — an over-count of ≤ 1/group_size byte)."""
        per_scale = self.scale_bytes / self.group_size if self.group_size else 0.0
        return self.bits / 8 + per_scale


def read(config: dict | None) -> PreQuantized | None:
    """The quantization of a config.json (a dict from outside: any field may be missing or of the wrong type), or
    None when it has no ``quantization_config``."""
    q = (config or {}).get("quantization_config") if isinstance(config, dict) else None
    if not isinstance(q, dict):
        return None
    method = str(q.get("quant_method") or "?")
    if method != "compressed-tensors":
        return PreQuantized(method=method, reason=f"quant_method {method!r}")
    fmt = str(q.get("format") or "")
    groups = q.get("config_groups")
    found = [g.get("weights") for g in groups.values() if isinstance(g, dict)] if isinstance(groups, dict) else []
    weights: list[dict] = [w for w in found if isinstance(w, dict)]
    if not weights:
        return PreQuantized(method=method, format=fmt, reason="no quantized weights in config_groups")
    w = weights[0]
    try:
        bits, group = int(w.get("num_bits") or 16), int(w.get("group_size") or 0)
    except (TypeError, ValueError):
        return PreQuantized(method=method, format=fmt, reason="num_bits/group_size are not numbers")
    if fmt not in TRAINABLE_FORMATS:
        return PreQuantized(method=method, format=fmt, bits=bits, group_size=group, reason=f"format {fmt!r}")
    if bits > 8 or bits < 2:
        return PreQuantized(method=method, format=fmt, bits=bits, group_size=group, reason=f"{bits}-bit weights")
    return PreQuantized(method=method, format=fmt, bits=bits, group_size=group)
