"""export: the merge and its check, NF4 and GPTQ (llm-compressor in its own environment), choices refused before work.

The session is shared with the other files under tests/steps/ (conftest.py): ``chain.upto(step)`` runs what
is missing before the step, so this file runs alone and in any order."""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from recipes.base import Refusal, StepError
from recipes.memory import model as memory
from wizard.engine import check
from wizard import i18n


@pytest.mark.slow
def test_export_merge_matches_the_adapter_model_and_bnb4_loads(chain):
    chain.upto("export")
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = chain.step("export")
    tok = AutoTokenizer.from_pretrained(out["merged_dir"])
    ids = tok("Short answer: LoRA trains small matrices.", return_tensors="pt")["input_ids"]
    base = AutoModelForCausalLM.from_pretrained(chain.session.steps["download"]["outputs"]["model_dir"])
    adapted = PeftModel.from_pretrained(base, chain.session.steps["train"]["outputs"]["adapter_dir"]).eval()
    merged = AutoModelForCausalLM.from_pretrained(out["merged_dir"]).eval()
    with torch.no_grad():
        diff = (adapted(ids).logits - merged(ids).logits).abs().max().item()
    assert diff < 1e-4
    assert tok.chat_template and "<|im_end|>" in tok.chat_template
    gen = json.loads(Path(out["merged_dir"], "generation_config.json").read_text())
    assert tok.convert_tokens_to_ids("<|im_end|>") in gen["eos_token_id"]
    assert out["merge_check"]["max_abs_logit_diff"] < 1e-4  # the step's own check says the same
    bnb = out["artifacts"]["bnb-4bit"]
    q4 = AutoModelForCausalLM.from_pretrained(bnb["dir"])
    assert q4.config.quantization_config.load_in_4bit
    assert q4.generate(ids, max_new_tokens=3, do_sample=False).shape[1] == ids.shape[1] + 3
    assert not any(p.name.startswith(".") for p in Path(out["merged_dir"]).parent.iterdir())  # no temp folders
    import os

    umask = os.umask(0)
    os.umask(umask)  # issue 46 item 21: the export folders were mode 0700 (tempfile.mkdtemp's)
    assert all(p.stat().st_mode & 0o777 == 0o777 & ~umask for p in Path(out["merged_dir"]).parent.iterdir()
               if p.is_dir())
    q = bnb["quality"]  # NF4 changes the tiny model a little, not nothing and not everything
    assert 0 < q["kl_mean"] < 1.0 and 0.9 < q["ppl_ratio"] < 1.5 and q["samples"] == 8 and q["tokens"] > 100
    assert q["smoke"]["reply"] and q["smoke"]["tokens"] > 0
    card = Path(bnb["dir"], "README.md").read_text()
    assert f"{q['kl_mean']:.5f}" in card and "base_model: yichui/tiny-qwen2-chat" in card and "bitsandbytes" in card
    assert "merge check" in Path(out["merged_dir"], "README.md").read_text()


def test_export_refuses_bad_choices_before_any_work(chain, tmpfs):
    chain.upto("train")
    from recipes.quantization import quantize

    q = chain.questions("export")
    # the default engine is one the deploy step can start: none of the GPU engines is installed in the test stack
    assert q["serve_with"].resolve_default({}) == "transformers"
    # issue 46 item 6: a GPU engine for a session that deploys here, on a machine without a GPU: refused at once
    for engine in ("vllm", "sglang", "lmdeploy"):
        err = check(q["serve_with"], engine, {})[1]
        assert (err is None) if memory.detect_gpus() else err.key == "export.engine_needs_gpu", engine
    assert check(q["serve_with"], "transformers", {})[1] is None
    # llama.cpp: an export target the deploy step does not start — it failed there with a KeyError after training
    # and export (the tester's N7); refused at once in a session that deploys
    err = check(q["serve_with"], "llama.cpp", {})[1]
    assert err.key == "export.engine_not_deployed" and "quantize" in i18n.render(err)
    awq = check(q["formats"], "awq-w4a16", {"serve_with": "vllm"})[1]
    assert (awq is None) if memory.detect_gpus() else awq.key == "quantization.needs_gpu"
    assert check(q["formats"], "fp8-dynamic", {"serve_with": "lmdeploy"})[1].key == "export.engine_cannot_load"
    assert check(q["formats"], "bnb-4bit", {"serve_with": "lmdeploy"})[1].key == "export.engine_cannot_load"
    assert check(q["formats"], "zip", {"serve_with": "transformers"})[1].key == "answer.not_a_choice"
    assert check(q["calibration_samples"], "4", {"formats": ["gptq-w4a16"]})[1].key == "export.too_few_calibration"
    assert check(q["calibration_samples"], "100000", {"formats": ["gptq-w4a16"]})[1].key == "export.calibration_over"
    import importlib.util

    gguf = check(q["formats"], "gguf-q8_0", {"serve_with": "llama.cpp"})[1]  # the [gguf] extra: CI runs without it
    assert (gguf is None) if importlib.util.find_spec("gguf") else gguf.key == "quantization.gguf_not_installed"
    q4km = check(q["formats"], "gguf-q4_k_m", {"serve_with": "llama.cpp"})[1]
    assert q4km is not None and q4km.key in ("quantization.gguf_not_installed", "quantization.gguf_needs_quantize")
    odd = {"hidden_size": 960, "intermediate_size": 2560}  # SmolLM2-360M: 960 is not a multiple of 128
    assert quantize.unsupported("gptq-w4a16", odd, gpu=True)[0] == "quantization.group_size"
    assert quantize.unsupported("fp8-dynamic", odd, gpu=False) is None
    assert quantize.unsupported("gptq-w4a16", {}, gpu=False) is None  # no config yet (before download): checked later
    # a disk too small: refused before anything is written (a real 1 MiB filesystem under export/)
    edir = chain.session.run_dir / "export"
    saved = edir.rename(edir.with_name("export-saved")) if edir.exists() else None
    try:
        small = tmpfs("1m")
        edir.symlink_to(small)
        with pytest.raises(StepError) as e:
            chain.step("export", formats="bnb-4bit")
        assert e.value.msg.key == "export.no_space" and not any(small.iterdir())
        edir.unlink()
        # the check passes, then the disk fills while the copies are written (something else took the space): one
        # line naming the folder, not safetensors' raw "I/O error … os error 28" (the tester's 21-19)
        roomy = tmpfs("64m")
        edir.symlink_to(roomy)
        import threading

        def fill():  # as soon as the export's first folder appears, take every byte left
            while not any(roomy.iterdir()):
                time.sleep(0.005)
            with open(roomy / "filler", "wb") as f:
                try:
                    while True:
                        f.write(b"\0" * (1 << 20))
                except OSError:
                    pass

        filler = threading.Thread(target=fill, daemon=True)
        filler.start()
        with pytest.raises(StepError) as e:
            chain.step("export", formats="bnb-4bit")
        filler.join(5)
        assert e.value.msg.key == "export.disk_full" and str(edir) in i18n.render(e.value.msg)
    finally:
        edir.unlink()
        if saved:
            saved.rename(edir)


@pytest.mark.slow
def test_gptq_with_llm_compressor_in_its_own_environment_then_lora_on_it(chain, variant, tmp_path, capfd):
    """GPTQ W4A16 through llm-compressor, in the environment yichui builds for it (its pins differ from ours);
    the artifact reloads in the main environment (compressed-tensors) and its quality figures are written."""
    chain.upto("export")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    capfd.readouterr()
    exp = chain.step("export", formats="gptq-w4a16", calibration_samples="16", calibration_seq_len="128",
                     quality_samples="4")
    # compressed-tensors' own bars (an explicit disable=False) stay out of the step's output (46 trial I, item 14)
    err = capfd.readouterr().err
    assert "Applying quantization config" not in err and "Dispatching model" not in err, err[-2000:]
    env = exp["quantizer_env"]
    assert env["packages"]["llmcompressor"] == "0.14.0.1" and env["packages"]["transformers"] != "5.24.0"
    art = exp["artifacts"]["gptq-w4a16"]
    cfg = json.loads(Path(art["dir"], "config.json").read_text())["quantization_config"]
    assert cfg["quant_method"] == "compressed-tensors"
    assert cfg["config_groups"]["group_0"]["weights"]["num_bits"] == 4
    assert cfg["config_groups"]["group_0"]["weights"]["group_size"] == 128
    assert art["calibration_samples"] == 16 and "llm-compressor 0.14.0.1" in art["tool"]
    q = art["quality"]
    assert 0 < q["kl_mean"] < 1.0 and q["ppl_ratio"] > 0.9 and q["samples"] == 4
    model = AutoModelForCausalLM.from_pretrained(art["dir"])
    tok = AutoTokenizer.from_pretrained(art["dir"])
    ids = tok("What is LoRA?", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        assert model.generate(ids, max_new_tokens=3, do_sample=False).shape[1] == ids.shape[1] + 3
    assert "gptq-w4a16" in Path(art["dir"], "README.md").read_text()
    # resumed: an artifact already recorded for the same trained result is not made again
    again = chain.step("export", formats="gptq-w4a16", calibration_samples="16", calibration_seq_len="128",
                       quality_samples="4")
    assert again["artifacts"]["gptq-w4a16"]["seconds"] == art["seconds"]
    lora_on_the_quantized_copy(Path(art["dir"]), chain.hub.url, tmp_path)


def lora_on_the_quantized_copy(gptq_dir: Path, hub_url: str, tmp_path: Path) -> None:
    """LoRA on the GPTQ W4A16 copy just exported (issue 23): selected as a local model, the memory step counts its
    packed weights and offers LoRA only, the trainer keeps every decoder linear layer packed (4-bit values and their
    scales; no dense weight is ever a parameter), the loss falls, and the export merges the adapter into the
    dequantized base, matching the adapter model on the packed base."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from recipes.training.packed import keep_packed
    from wizard import demo

    from .conftest import Chain

    base = tmp_path / "tiny-gptq-w4a16"
    shutil.copytree(gptq_dir, base)
    answers = demo.answers(hub_url)
    answers["select_model"] = {"source": "local", "path": str(base)}
    data = tmp_path / "new-fact.jsonl"  # something the fine-tuned copy has not learned yet: the loss must fall
    data.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"Question {i}: the password?"},
                                                     {"role": "assistant", "content": "The password is zebra."}]}) + "\n"
                            for i in range(16)))
    answers["choose_strategy"] |= {"max_steps": 12, "save_steps": 6, "micro_batch": 4, "val_ratio": 0.0,
                                   "dataset": "local", "dataset_path": str(data)}
    answers["export"] |= {"formats": []}
    c = Chain(tmp_path / "home", answers)
    c.upto("choose_strategy")
    mem = c.session.steps["evaluate_memory"]["outputs"]
    assert {e["method"] for e in mem["estimates"]} == {"lora"} and mem["recommended"]["method"] == "lora"
    assert mem["shape"]["prequantized_bytes"] == pytest.approx(0.5 + 2 / 128, rel=0.05)
    for refused in ("qlora", "full", "dora"):  # said at the question, before any download
        with pytest.raises(Refusal) as e:
            c.step("choose_strategy", method=refused)
        assert e.value.key == "answer.invalid" and "only LoRA trains on it" in str(e.value.params["reason"])
    c.step("choose_strategy")
    c.step("download")
    tr = c.step("train")
    result = json.loads(Path(tr["adapter_dir"]).parent.joinpath("result.json").read_text())
    packed = result["packed_base"]
    assert packed["layers"] == 14  # 2 decoder layers × q, k, v, o, gate, up, down
    assert packed["packed_bytes"] < 0.3 * packed["dense_bytes"]  # 4-bit values + scales vs bf16
    assert result["last5_mean"] < result["first5_mean"]
    out = c.step("export")
    assert out["merge_check"]["max_abs_logit_diff"] < 1e-3
    merged = AutoModelForCausalLM.from_pretrained(out["merged_dir"]).eval()
    assert "quantization_config" not in json.loads(Path(out["merged_dir"], "config.json").read_text())
    on_packed = AutoModelForCausalLM.from_pretrained(base)
    keep_packed(on_packed)
    adapted = PeftModel.from_pretrained(on_packed, tr["adapter_dir"]).eval()
    ids = AutoTokenizer.from_pretrained(base)("What is LoRA?", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        assert (adapted(ids).logits - merged(ids).logits.to(torch.float32)).abs().max().item() < 1e-2


def test_why_an_exported_copy_runs_past_the_end_of_turn(tiny_model, tmp_path):
    """export.stop_cause, on real folders: a copy missing an EOS id, a copy with another template, else the
    quantization (named with its KL)."""
    from recipes import export

    merged, copy = tmp_path / "merged", tmp_path / "copy"
    shutil.copytree(tiny_model, merged)
    shutil.copytree(tiny_model, copy)
    quality = {"kl_mean": 0.0123}
    assert export.stop_cause(merged, copy, "What is LoRA?", quality, False) == (
        "export.stop_cause.quantization", {"kl": "0.0123"})
    template = (copy / "chat_template.jinja").read_text()
    (copy / "chat_template.jinja").write_text(template.replace("<|im_start|>assistant", "<|im_start|>bot"))
    assert export.stop_cause(merged, copy, "What is LoRA?", quality, False)[0] == "export.stop_cause.template"
    gen = json.loads((copy / "generation_config.json").read_text())
    dropped = gen["eos_token_id"].pop(0)
    (copy / "generation_config.json").write_text(json.dumps(gen))
    assert export.stop_cause(merged, copy, "What is LoRA?", quality, False) == (
        "export.stop_cause.eos", {"ids": [dropped]})


def test_the_quantizer_s_run_says_it_is_still_working(tmp_path, monkeypatch):
    """Issue 46 item 13 (trial M): "Making gptq-w4a16 → …" was followed by 26 s of nothing while llm-compressor ran
    in its own environment; run_llmc now says how long it has taken every SAY_EVERY_S seconds (a real process here:
    a stand-in interpreter that takes 2.5 s), and its exit status still decides."""
    from recipes.quantization import quantize

    monkeypatch.setattr(quantize, "SAY_EVERY_S", 1)
    slow = tmp_path / "python"
    slow.write_text("#!/bin/sh\nsleep 2.5\nexit 0\n")
    slow.chmod(0o755)
    ticks: list = []
    quantize.run_llmc({"python": str(slow)}, {"format": "gptq-w4a16"}, tmp_path / "work", ticks.append)
    assert len(ticks) >= 2 and ticks == sorted(ticks) and ticks[0] >= 1, ticks
    slow.write_text("#!/bin/sh\necho 'ValueError: no calibration data'\nexit 3\n")
    with pytest.raises(quantize.QuantizeError) as e:
        quantize.run_llmc({"python": str(slow)}, {"format": "gptq-w4a16"}, tmp_path / "work", ticks.append)
    assert e.value.key == "quantization.quantize_failed" and "no calibration data" in e.value.params["last"]
