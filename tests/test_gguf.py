"""GGUF exports through llama.cpp's own converter — a slow test, outside the default run: it fetches the ~75 MB
llama-cpp-python source release once (for the converter it vendors). Run it with

    .venv/bin/pip install -e '.[gguf]' && YICHUI_SLOW=1 .venv/bin/python -m pytest tests/test_gguf.py

The converter refuses tokenizers whose pre-tokenizer it does not know (the tiny model's self-trained BPE is one), so
the conversion is tested on a tiny Qwen2 whose tokenizer is Qwen2's own, rebuilt from the test vocabulary llama.cpp
ships (models/ggml-vocab-qwen2.gguf), and the refusal is tested on the tiny model.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from recipes.quantization import quality
from recipes.quantization import quantize

pytestmark = pytest.mark.skipif(
    os.environ.get("YICHUI_SLOW") != "1" or not all(importlib.util.find_spec(m) for m in ("gguf", "sentencepiece")),
    reason="slow GGUF test: YICHUI_SLOW=1 and pip install -e '.[gguf]'")


@pytest.fixture(scope="module")
def converter(tmp_path_factory) -> Path:
    return quantize.ensure_converter(tmp_path_factory.mktemp("home"))  # YICHUI_ENVS (conftest) keeps it


@pytest.fixture(scope="module")
def qwen2_vocab_model(converter, tmp_path_factory) -> Path:
    import shutil

    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    d = tmp_path_factory.mktemp("qwen2-vocab")
    shutil.copy(converter / "models" / "ggml-vocab-qwen2.gguf", d)
    tok = AutoTokenizer.from_pretrained(d, gguf_file="ggml-vocab-qwen2.gguf")
    torch.manual_seed(0)
    cfg = Qwen2Config(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True,
                      max_position_embeddings=512)
    out = d / "model"
    Qwen2ForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.mark.parametrize("fmt, max_kl", [("gguf-f16", 1e-4), ("gguf-q8_0", 1e-2)])
def test_known_tokenizer_converts_and_reloads(converter, qwen2_vocab_model, tmp_path, fmt, max_kl):
    out = tmp_path / fmt
    out.mkdir()
    path = quantize.convert_gguf(converter, qwen2_vocab_model, out, fmt, tmp_path / "work")
    assert path.exists() and path.suffix == ".gguf"
    texts = ["Hello world, this is a GGUF export test.", "LoRA trains two small matrices per layer."]
    q = quality.compare(qwen2_vocab_model, out, texts)  # the GGUF's own tokenizer and weights, through transformers
    assert q["tokens"] > 10 and 0 <= q["kl_mean"] < max_kl and abs(q["ppl_ratio"] - 1) < 0.05


def test_unknown_tokenizer_is_refused_with_a_clear_message(converter, tiny_model, tmp_path):
    with pytest.raises(quantize.QuantizeError) as e:
        quantize.convert_gguf(converter, tiny_model, tmp_path, "gguf-q8_0", tmp_path / "work")
    assert e.value.key == "quantization.gguf_unknown_tokenizer" and Path(e.value.params["log"]).exists()
    assert not list(tmp_path.glob("*.gguf"))
