"""LoRA on a pre-quantized base kept quantized (recipes/training/packed.py), in process on the tiny model written as a
compressed-tensors W4A16 checkpoint by compressed-tensors' own compressor (round-to-nearest scales; the end-to-end
run on yichui's own GPTQ export is tests/steps/test_export.py)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

W4A16 = {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": 128}


@pytest.fixture(scope="module")
def w4a16_tiny(tiny_model, tmp_path_factory) -> Path:
    import torch
    from compressed_tensors.compressors.pack_quantized.base import PackedQuantizationCompressor
    from compressed_tensors.quantization import QuantizationArgs, QuantizationScheme
    from safetensors.torch import load_file, save_file

    d = tmp_path_factory.mktemp("w4a16") / "tiny-w4a16"
    shutil.copytree(tiny_model, d)
    scheme = QuantizationScheme(targets=["Linear"], weights=QuantizationArgs(**W4A16))
    out = {}
    for k, v in load_file(d / "model.safetensors").items():
        if k.endswith("_proj.weight") and ".layers." in k:
            w = v.to(torch.bfloat16)
            scale = (w.reshape(w.shape[0], -1, 128).abs().amax(-1) / 7.5).clamp(min=1e-8)
            for n, t in PackedQuantizationCompressor.compress({"weight": w, "weight_scale": scale}, scheme).items():
                out[k[:-len("weight")] + n] = t
        else:
            out[k] = v
    save_file(out, d / "model.safetensors", metadata={"format": "pt"})
    cfg = json.loads((d / "config.json").read_text())
    cfg["quantization_config"] = {"quant_method": "compressed-tensors", "format": "pack-quantized",
                                  "quantization_status": "compressed", "ignore": ["lm_head"],
                                  "config_groups": {"group_0": {"targets": ["Linear"], "weights": W4A16}}}
    (d / "config.json").write_text(json.dumps(cfg))
    return d


def test_the_packed_base_computes_what_transformers_decompressed_computes(w4a16_tiny):
    """Same logits and same input gradients as the model transformers decompresses (its first-forward hook), with
    every decoder linear layer holding only its packed int32 values and bf16 scales; LoRA's A and B are the only
    trainable tensors and they get gradients."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from recipes.training.packed import PackedLinear, keep_packed

    packed = AutoModelForCausalLM.from_pretrained(w4a16_tiny, dtype=torch.float32)
    info = keep_packed(packed)
    dense = AutoModelForCausalLM.from_pretrained(w4a16_tiny, dtype=torch.float32)  # decompressed at first forward
    assert info["layers"] == 14 and not info["compiled"]  # 2 layers × 7 linear; no compile on CPU
    assert info["packed_bytes"] < 0.3 * info["dense_bytes"]
    layers = [m for m in packed.modules() if isinstance(m, PackedLinear)]
    held = [t for m in layers for t in (*m.parameters(), *m.buffers())]
    assert len(layers) == 14 and {t.dtype for t in held} <= {torch.int32, torch.int64, torch.float32}
    assert not any(t.requires_grad for t in held)  # frozen parameters (DDP broadcasts buffers every step)
    assert not any(n.endswith("proj.weight") for n, _ in packed.named_parameters())  # no dense copy anywhere
    ids = torch.tensor([[5, 17, 42, 99, 7, 3]])
    emb_p = packed.get_input_embeddings()(ids).detach().requires_grad_(True)
    emb_d = dense.get_input_embeddings()(ids).detach().requires_grad_(True)
    out_p, out_d = packed(inputs_embeds=emb_p).logits, dense(inputs_embeds=emb_d).logits
    assert torch.equal(out_p, out_d)
    out_p.sum().backward()
    out_d.sum().backward()
    assert torch.allclose(emb_p.grad, emb_d.grad, atol=1e-5)

    peft_model = get_peft_model(packed, LoraConfig(r=4, target_modules="all-linear", task_type="CAUSAL_LM"))
    trainable = [n for n, p in peft_model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    peft_model(ids, labels=ids).loss.backward()
    assert all(p.grad is not None for n, p in peft_model.named_parameters() if "lora_A" in n)
