"""Step 6 — export: merge the LoRA adapter into the base and save a servable model; optionally a bitsandbytes
4-bit copy.

After QLoRA the base is reloaded unquantized before merging (never merge into 4-bit weights). The export carries the
tokenizer, the chat template used in training and a generation config whose EOS tokens include the template's end
token. Each export is written into a temp folder and renamed when complete, so a half-written export never looks
finished.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from recipes.base import Choice, Question, StepError, msg

name = "export"
requires = ("download", "train")


def questions(ctx) -> list[Question]:
    return [
        Question("dtype", "select", "export.dtype", default="auto",
                 choices=[Choice("auto", msg("export.dtype.auto")), Choice("bfloat16", "bfloat16"),
                          Choice("float16", "float16"), Choice("float32", "float32")]),
        Question("bnb_4bit", "confirm", "export.bnb_4bit", default=True),
    ]


@contextlib.contextmanager
def _atomic_dir(final: Path):
    """Yield a temp folder beside ``final``; it replaces ``final`` on success and is removed on failure."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        yield tmp
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def merge(base_dir: str, adapter_dir: str, method: str, out: Path, dtype: str) -> None:
    """Merge ``adapter_dir`` into the unquantized base (or copy a full fine-tune) and save to ``out`` (safetensors).
    ``dtype``: "auto" (transformers: the config's dtype, else the checkpoint's) or a torch dtype name."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    if method in ("full", "galore"):  # every weight trained: the trainer saved a whole model
        model = AutoModelForCausalLM.from_pretrained(adapter_dir, dtype=dtype)
    else:
        from peft import PeftModel

        base = AutoModelForCausalLM.from_pretrained(base_dir, dtype=dtype)  # unquantized, also after QLoRA
        model = PeftModel.from_pretrained(base, adapter_dir).merge_and_unload()
    tok = AutoTokenizer.from_pretrained(adapter_dir if (Path(adapter_dir) / "tokenizer_config.json").exists()
                                        else base_dir)
    try:
        gen = GenerationConfig.from_pretrained(base_dir)
    except OSError:
        gen = GenerationConfig()
    eos = gen.eos_token_id if isinstance(gen.eos_token_id, list) else [gen.eos_token_id] if gen.eos_token_id is not None else []
    if tok.eos_token_id is not None and tok.eos_token_id not in eos:
        eos.append(tok.eos_token_id)  # the template's end-of-turn token: without it servers never stop
    gen.eos_token_id = eos
    if gen.pad_token_id is None and tok.pad_token_id is not None:
        gen.pad_token_id = tok.pad_token_id
    model.generation_config = gen
    model.save_pretrained(out)
    tok.save_pretrained(out)


def quantize_bnb4(merged: Path, out: Path) -> None:
    """Load the merged model with bitsandbytes NF4 (double quantization) and save the 4-bit checkpoint."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig

    cuda = torch.cuda.is_available()
    q = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                           bnb_4bit_compute_dtype=torch.bfloat16 if cuda else torch.float32)
    model = AutoModelForCausalLM.from_pretrained(merged, quantization_config=q,
                                                 device_map={"": 0} if cuda else {"": "cpu"})
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(merged).save_pretrained(out)


def _size(d: Path) -> int:
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file())


def run(ctx, answers: dict) -> dict:
    train = ctx.outputs("train")
    base_dir = ctx.outputs("download")["model_dir"]
    adapter = train.get("adapter_dir")
    if not adapter or not Path(adapter).is_dir():
        raise StepError("export.no_adapter", path=str(adapter))
    edir = ctx.run_dir / "export"
    merged = edir / "merged"
    need = _size(Path(base_dir)) * (2 if answers["bnb_4bit"] else 1)
    edir.mkdir(parents=True, exist_ok=True)
    if shutil.disk_usage(edir).free < need:
        raise StepError("export.no_space", need=f"{need / 2**30:.2f}", path=str(edir))
    ctx.info(msg("export.merging", method=train["method"], path=str(merged)))
    with _atomic_dir(merged) as tmp:
        merge(base_dir, adapter, train["method"], tmp, answers["dtype"])
    outputs = {"merged_dir": str(merged), "merged_bytes": _size(merged), "formats": ["merged"]}
    if answers["bnb_4bit"]:
        bnb = edir / "bnb-4bit"
        ctx.info(msg("export.bnb4", path=str(bnb)))
        with _atomic_dir(bnb) as tmp:
            quantize_bnb4(merged, tmp)
        outputs |= {"bnb4_dir": str(bnb), "bnb4_bytes": _size(bnb)}
        outputs["formats"].append("bnb-4bit")
    ctx.table(msg("export.table"), [msg("ui.col.format"), msg("ui.col.path"), "MiB"],
              [(f, outputs[k], round(outputs[k.replace("_dir", "_bytes")] / 2**20, 2))
               for f, k in (("merged", "merged_dir"), ("bnb-4bit", "bnb4_dir")) if k in outputs])
    return outputs


def is_done(ctx, record: dict) -> bool:
    out = record["outputs"]
    return bool(out.get("merged_dir")) and (Path(out["merged_dir"]) / "config.json").exists()
