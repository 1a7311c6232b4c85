"""NVMe offload's DeepSpeed settings and the trainer's environment for DeepSpeed's op builds (issue 23). What they
fix was seen on the H200 (bench/results/2026-12-03-nvme-offload-h200.md); the run itself: tests/steps/test_train.py."""
from __future__ import annotations

from recipes.training.nvme import PERSISTENCE_THRESHOLD, SwapShape
from recipes.training.runner import plain_arch_list, trainer_env
from recipes.training.worker import deepspeed_config


def _qwen_like(layers: int, hidden: int, inter: int, vocab: int) -> list[tuple[str, int]]:
    named = [("model.embed_tokens.weight", vocab * hidden)]
    for i in range(layers):
        p = f"model.layers.{i}."
        named += [(p + "self_attn.q_proj.weight", hidden * hidden), (p + "self_attn.q_proj.bias", hidden),
                  (p + "self_attn.o_proj.weight", hidden * hidden), (p + "mlp.up_proj.weight", hidden * inter),
                  (p + "mlp.down_proj.weight", inter * hidden), (p + "input_layernorm.weight", hidden)]
    return named + [("model.norm.weight", hidden)]


def test_swap_buffers_cover_a_layer_and_the_limits_stay_within_one():
    """The Qwen2.5-1.5B-like case that ran out of DeepSpeed's 5 default buffers: the swapped parameters of a layer
    (≥ the persistence threshold) set the buffer count, the largest parameter (the embedding) the buffer size, one
    decoder layer's elements (not the embedding's) the reuse distance and prefetch bucket."""
    s = SwapShape.of(_qwen_like(layers=3, hidden=1536, inter=8960, vocab=151936))
    layer = 2 * 1536 * 1536 + 2 * 1536 * 8960 + 2 * 1536
    assert (s.largest, s.layer_params, s.layer_numel) == (151936 * 1536, 4, layer)
    cfg = deepspeed_config(3, "all", "nvme", "/swap", s)["zero_optimization"]
    assert cfg["offload_param"] == {"device": "nvme", "nvme_path": "/swap", "pin_memory": True,
                                    "buffer_count": 12, "buffer_size": 151936 * 1536}
    assert cfg["offload_optimizer"]["device"] == "nvme"
    assert cfg["stage3_max_reuse_distance"] == cfg["stage3_prefetch_bucket_size"] == layer
    # small parameters stay on the GPU whole: they take no buffer; a buffer is never below DeepSpeed's default
    tiny = SwapShape.of([("model.layers.0.w", PERSISTENCE_THRESHOLD - 1), ("model.layers.0.v", PERSISTENCE_THRESHOLD)])
    assert tiny.layer_params == 1 and tiny.offload_param() == {"buffer_count": 6, "buffer_size": int(1e8)}
    # CPU offload keeps DeepSpeed's own settings
    cpu = deepspeed_config(3, "all", "cpu", "", s)["zero_optimization"]
    assert cpu["offload_param"] == {"device": "cpu", "pin_memory": True} and "stage3_max_reuse_distance" not in cpu


def test_the_trainer_gets_an_arch_list_deepspeed_can_parse(monkeypatch):
    """GPU images set TORCH_CUDA_ARCH_LIST=9.0a for Hopper; DeepSpeed's op build parses "0a" as a number and fails.
    The trainer's environment carries the numbers only, +PTX kept; unset stays unset."""
    assert plain_arch_list("9.0a") == "9.0"
    assert plain_arch_list("8.0 9.0a;10.0f+PTX") == "8.0;9.0;10.0+PTX"
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0a")
    assert trainer_env()["TORCH_CUDA_ARCH_LIST"] == "9.0"
    monkeypatch.delenv("TORCH_CUDA_ARCH_LIST")
    assert "TORCH_CUDA_ARCH_LIST" not in trainer_env()
