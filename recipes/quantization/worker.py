"""Entry point of the quantizer process: ``python -m recipes.quantization.worker SPEC.json``, run by
recipes/quantization/quantize.py inside the llm-compressor environment (its own transformers; imports nothing else of
yichui's).

SPEC: ``{"format", "merged_dir", "out_dir", "scheme", "modifier", "calibration": [rendered chat texts],
"max_seq_length"}``. Writes the compressed-tensors checkpoint and the tokenizer to ``out_dir`` (the caller's temp
folder) and ``quantize_result.json`` beside the spec.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from llmcompressor import oneshot
    from llmcompressor.modifiers import quantization

    t0 = time.time()
    cuda = torch.cuda.is_available()
    code = bool(spec.get("trust_remote_code"))  # the user's recorded yes to the model's own code
    model = AutoModelForCausalLM.from_pretrained(spec["merged_dir"], dtype="auto", trust_remote_code=code,
                                                 device_map="auto" if cuda else None)
    tok = AutoTokenizer.from_pretrained(spec["merged_dir"], trust_remote_code=code)
    if spec["modifier"] == "AWQModifier":
        from llmcompressor.modifiers.awq import AWQModifier as modifier
    else:
        modifier = getattr(quantization, spec["modifier"])
    recipe = modifier(targets="Linear", scheme=spec["scheme"], ignore=["lm_head"])
    kw = {}
    if spec["calibration"]:
        from datasets import Dataset

        ds = Dataset.from_dict({"text": spec["calibration"]}).map(
            lambda x: tok(x["text"], truncation=True, max_length=spec["max_seq_length"], add_special_tokens=False),
            remove_columns=["text"])
        kw = {"dataset": ds, "max_seq_length": spec["max_seq_length"], "num_calibration_samples": len(ds)}
    oneshot(model=model, recipe=recipe, **kw)
    model.save_pretrained(spec["out_dir"], save_compressed=True)
    tok.save_pretrained(spec["out_dir"])
    Path(spec_path).with_name("quantize_result.json").write_text(json.dumps(
        {"seconds": round(time.time() - t0, 2), "calibration_samples": len(spec["calibration"])}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
