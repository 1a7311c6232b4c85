"""Each step's run on the tiny model, in order, with the real engine resolving answers against a real local hub.

The chain shares one session (module scope): select_model → evaluate_memory → choose_strategy → download → train →
export → deploy, then a QLoRA train + export on the same download.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

import recipes
from recipes import jobs
from recipes.memory import model as memory
from recipes.hub.server import HubServer
from recipes.demo.tiny_model import REPO_ID
from wizard import demo
from wizard.console import UI
from recipes.base import StepError
from recipes.serving import spec as specs
from wizard.engine import Engine, StepContext, check
from wizard.session import Session

# two training processes on one machine: on the CPU (gloo) anywhere; on GPUs only with one GPU per process
TWO_RANKS = pytest.mark.skipif(0 < len(memory.detect_gpus()) < 2,
                               reason="two processes need two GPUs on a machine that has GPUs (one per process)")


class Chain:
    def __init__(self, home: Path, answers: dict):
        self.session = Session.new("finetune", h=home)
        self.session.save()
        self.engine = Engine(self.session, UI(), None, replay=answers)

    def ctx(self, name):
        return StepContext(self.engine, name)

    def questions(self, name):
        return {q.key: q for q in recipes.load(name).questions(self.ctx(name))}

    def step(self, name, **overrides):
        self.engine.overrides = {name: overrides}
        mod = recipes.load(name)
        ctx = self.ctx(name)
        answers = self.engine.resolve(mod, ctx)
        out = mod.run(ctx, answers)
        out = out.to_dict() if hasattr(out, "to_dict") else out  # as the engine stores a typed result
        rec = self.session.steps[name]
        rec["outputs"].update(out)
        rec["status"] = "done"
        self.session.save()
        assert mod.is_done(ctx, rec)
        return out


@pytest.fixture(scope="module")
def chain(tmp_path_factory, tiny_model):
    home = tmp_path_factory.mktemp("steps-home")
    shutil.copytree(tiny_model, demo.hub_root(home) / REPO_ID)
    with HubServer(demo.hub_root(home)) as hub:
        answers = demo.answers(hub.url)
        answers["choose_strategy"] |= {"max_steps": 12, "save_steps": 5, "micro_batch": 4}
        answers["export"] |= {"formats": ["bnb-4bit"]}  # the demo's is 8-bit; the steps here check NF4
        c = Chain(home, answers)
        c.hub, c.home, c.tiny = hub, home, tiny_model
        yield c
        for job in jobs.find(c.session.run_dir):
            job.stop(timeout=10)


def test_select_model(chain):
    out = chain.step("select_model")
    assert out["architecture"] == "Qwen2ForCausalLM" and out["repo_id"] == REPO_ID
    assert out["config"] == json.loads((chain.tiny / "config.json").read_text())
    q = chain.questions("select_model")
    answers = {"source": "hf", "endpoint": chain.hub.url, "model": "other"}
    assert check(q["model_id"], "nobody/nothing", answers)[1].key == "hub.no_such_model"
    assert check(q["model_id"], "not an id", answers)[1].key == "select_model.bad_id"
    assert check(q["model_id"], REPO_ID, answers)[1] is None
    assert check(q["endpoint"], "ftp://x", answers)[1].key == "select_model.bad_endpoint"
    assert check(q["path"], str(chain.tiny), {"source": "local"})[1] is None
    assert check(q["path"], str(chain.home), {"source": "local"})[1].key == "hub.no_local_model"


def test_evaluate_memory_counts_parameters_exactly(chain):
    from transformers import AutoModelForCausalLM

    out = chain.step("evaluate_memory")
    model = AutoModelForCausalLM.from_pretrained(chain.tiny)
    assert out["shape"]["n_params"] == sum(p.numel() for p in model.parameters())
    assert len(out["estimates"]) == 6
    assert out["recommended"] == {"method": "lora", "activation_checkpointing": False}
    est = {(e["method"], e["activation_checkpointing"]): e for e in out["estimates"]}
    assert est[("lora", True)]["components"]["layers"] < est[("lora", False)]["components"]["layers"]
    assert est[("qlora", False)]["components"]["weights"] < est[("lora", False)]["components"]["weights"]
    assert all(e["fits"] and e["instance"]["count"] == 1 for e in out["estimates"])


def test_choose_strategy_renders_samples_and_checks_data(chain, tmp_path):
    """Before any weight byte: the samples come from the small files select_model fetched, and the strategy's smoke
    run trained 2 steps on a 2-layer random copy."""
    out = chain.step("choose_strategy")
    assert not [p for m, p, _ in chain.hub.hub.requests if p.endswith(".safetensors")]
    smoke = out["preflight"]
    assert smoke["ok"] and smoke["steps"] == 2 and smoke["layers"] == 2 and len(smoke["losses"]) == 2
    assert all(x == x and 0 < x < 20 for x in smoke["losses"])  # finite cross-entropy of random weights
    copy = json.loads((Path(smoke["dir"]) / "model" / "config.json").read_text())
    assert copy["num_hidden_layers"] == 2 and copy["hidden_size"] == json.loads(
        (chain.tiny / "config.json").read_text())["hidden_size"]
    assert out["n_records"] >= 200 and out["dataset_format"] == "alpaca"
    assert all("<|im_start|>assistant\n" in s for s in out["samples"]) and len(out["samples"]) == 2
    q = chain.questions("choose_strategy")
    good = tmp_path / "m.jsonl"
    good.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"},
                                             {"role": "assistant", "content": "hello"}]}) + "\n")
    assert check(q["dataset_path"], str(good), {})[1] is None
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"instruction": "a", "output": "b"}\n{"instruction": "c"\n')
    assert check(q["dataset_path"], str(bad), {})[1] is None  # readable: the malformed line is listed, not fatal
    assert q["bad_records"].when({"dataset": "local", "dataset_path": str(bad)})
    assert not q["bad_records"].when({"dataset": "local", "dataset_path": str(good)})
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(b"\xff\xfe\x00\x01")
    assert check(q["dataset_path"], str(binary), {})[1].key == "data.not_text"
    assert check(q["dataset_path"], str(tmp_path), {})[1].key == "data.is_folder"
    typed = tmp_path / "typed.jsonl"
    typed.write_text('{"instruction": "a", "output": "b"}\n{"instruction": 0, "output": null}\n')
    assert q["bad_records"].when({"dataset": "local", "dataset_path": str(typed)})
    assert check(q["dataset_path"], str(tmp_path / "x.txt"), {})[1].key == "data.no_file"
    (tmp_path / "x.txt").write_text("hi")
    assert check(q["dataset_path"], str(tmp_path / "x.txt"), {})[1].key == "data.bad_suffix"
    assert check(q["lora_targets"], "q_proj,nope_proj", {})[1].key == "choose_strategy.unknown_targets"
    assert check(q["lora_rank"], "0", {})[1].key == "answer.out_of_range"
    assert check(q["lora_targets"], "q_proj,v_proj", {})[1] is None
    assert check(q["lora_targets"], "q proj;", {})[1].key == "choose_strategy.bad_targets"


def test_download_verifies_and_records_the_commit(chain):
    out = chain.step("download")
    d = Path(out["model_dir"])
    for f in chain.tiny.iterdir():
        assert hashlib.sha256((d / f.name).read_bytes()).hexdigest() == hashlib.sha256(f.read_bytes()).hexdigest()
    repo = chain.hub.hub.repo(REPO_ID)
    assert out["commit"] == repo.commit and out["bytes"] == sum(f["size"] for f in repo.files.values())
    # the small files select_model fetched are copied, not fetched a second time
    assert out["copied_bytes"] > 0 and out["fetched_bytes"] == out["bytes"] - out["copied_bytes"]
    assert sum(1 for m, p, _ in chain.hub.hub.requests if m == "GET" and p.endswith("/tokenizer.json")) == 1
    gets = lambda: sum(1 for m, p, _ in chain.hub.hub.requests if m == "GET" and p.endswith("model.safetensors"))  # noqa
    before = gets()
    chain.step("download")  # complete files are not fetched again
    assert gets() == before


def test_train_runs_detached_and_writes_events_and_checkpoints(chain):
    out = chain.step("train")
    tdir = Path(out["train_dir"])
    assert out["steps"] == 12 and Path(out["adapter_dir"], "adapter_config.json").exists()
    events, _ = jobs.read_events(tdir / "events.jsonl")
    steps = [e for e in events if e["event"] == "step"]
    assert len(steps) == 12 and all(e["v"] == 1 for e in events)
    assert {"step", "loss", "lr", "tokens_per_s", "mem_gib", "total_steps"} <= set(steps[-1])
    assert [e["step"] for e in events if e["event"] == "checkpoint"] == [5, 10, 12]
    assert sorted(p.name for p in (tdir / "checkpoints").glob("checkpoint-*")) == ["checkpoint-10", "checkpoint-12"]
    assert out["samples"]["before"] and out["samples"]["after"]
    job = jobs.read(tdir / "trainer.pid.json")
    assert job.pid == chain.session.steps["train"]["outputs"]["trainer_pid"] and not job.alive()


def test_export_merge_matches_the_adapter_model_and_bnb4_loads(chain):
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
    q = bnb["quality"]  # NF4 changes the tiny model a little, not nothing and not everything
    assert 0 < q["kl_mean"] < 1.0 and 0.9 < q["ppl_ratio"] < 1.5 and q["samples"] == 8 and q["tokens"] > 100
    assert q["smoke"]["reply"] and q["smoke"]["tokens"] > 0
    card = Path(bnb["dir"], "README.md").read_text()
    assert f"{q['kl_mean']:.5f}" in card and "base_model: yichui/tiny-qwen2-chat" in card and "bitsandbytes" in card
    assert "merge check" in Path(out["merged_dir"], "README.md").read_text()


def test_export_refuses_bad_choices_before_any_work(chain, tmpfs):
    from recipes.quantization import quantize

    q = chain.questions("export")
    # the default engine is one the deploy step can start: none of the GPU engines is installed in the test stack
    assert q["serve_with"].resolve_default({}) == "transformers"
    awq = check(q["formats"], "awq-w4a16", {"serve_with": "vllm"})[1]
    assert (awq is None) if memory.detect_gpus() else awq.key == "export.needs_gpu"
    assert check(q["formats"], "fp8-dynamic", {"serve_with": "lmdeploy"})[1].key == "export.engine_cannot_load"
    assert check(q["formats"], "bnb-4bit", {"serve_with": "lmdeploy"})[1].key == "export.engine_cannot_load"
    assert check(q["formats"], "zip", {"serve_with": "transformers"})[1].key == "answer.not_a_choice"
    assert check(q["calibration_samples"], "4", {"formats": ["gptq-w4a16"]})[1].key == "export.too_few_calibration"
    assert check(q["calibration_samples"], "100000", {"formats": ["gptq-w4a16"]})[1].key == "export.calibration_over"
    import importlib.util

    gguf = check(q["formats"], "gguf-q8_0", {"serve_with": "llama.cpp"})[1]  # the [gguf] extra: CI runs without it
    assert (gguf is None) if importlib.util.find_spec("gguf") else gguf.key == "export.gguf_not_installed"
    q4km = check(q["formats"], "gguf-q4_k_m", {"serve_with": "llama.cpp"})[1]
    assert q4km is not None and q4km.key in ("export.gguf_not_installed", "export.gguf_needs_quantize")
    odd = {"hidden_size": 960, "intermediate_size": 2560}  # SmolLM2-360M: 960 is not a multiple of 128
    assert quantize.unsupported("gptq-w4a16", odd, gpu=True)[0] == "export.group_size"
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
    finally:
        edir.unlink()
        if saved:
            saved.rename(edir)


def test_deploy_serves_openai_compatible_chat_and_streaming(chain):
    from openai import OpenAI

    out = chain.step("deploy")
    assert out["endpoint"].startswith("http://127.0.0.1:") and out["reply"]
    client = OpenAI(base_url=out["endpoint"], api_key="unused")
    r = client.chat.completions.create(model=out["served_model"], max_tokens=8, temperature=0,
                                       messages=[{"role": "user", "content": "What is LoRA?"}])
    assert r.choices[0].message.content
    chunks = list(client.chat.completions.create(model=out["served_model"], max_tokens=8, stream=True,
                                                 messages=[{"role": "user", "content": "Hi"}]))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    q = chain.questions("deploy")
    assert check(q["host"], "0.0.0.0", {"backend": "transformers"})[1].key == "deploy.loopback_only"
    port = int(out["endpoint"].rsplit(":", 1)[1].split("/")[0])
    assert check(q["port"], str(port), {"host": "127.0.0.1"})[1].key == "deploy.port_in_use"
    refused = check(q["backend"], "vllm", {})[1]
    from wizard import i18n

    assert refused.key == "deploy.not_installed" and specs.recommended("vllm").install in i18n.render(refused)
    if not memory.detect_gpus():  # a GPU engine on a machine without one: the line says to serve with transformers
        assert "transformers here" in i18n.render(refused)
    assert out["finish_reason"] in ("stop", "length") and out["stream_finish_reason"] in ("stop", "length")
    assert out["streamed"] and out["api_key_file"] is None and out["args"][0] == out["model_dir"]
    job = jobs.read(chain.session.run_dir / "serve" / "server.pid.json")
    assert job.alive() and job.stop() and not job.alive()

    # the port was free when asked, and taken by the time the server would start: refused before spawning
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        answers = dict(chain.session.steps["deploy"]["answers"], port=taken.getsockname()[1])
        with pytest.raises(StepError) as e:
            recipes.load("deploy").run(chain.ctx("deploy"), answers)
    assert e.value.msg.key == "deploy.port_in_use"
    # a server that dies during start-up (a broken config.json): one error with the end of its log
    exported = chain.session.steps["export"]["outputs"]
    good = exported["merged_dir"]
    bad = Path(good).parent / "broken-merged"
    shutil.copytree(good, bad, dirs_exist_ok=True)
    (bad / "config.json").write_text("{oops")
    exported["merged_dir"] = str(bad)
    try:
        with pytest.raises(StepError) as e:
            recipes.load("deploy").run(chain.ctx("deploy"), dict(chain.session.steps["deploy"]["answers"]))
    finally:
        exported["merged_dir"] = good
        shutil.rmtree(bad)
    assert e.value.msg.key == "deploy.died" and e.value.msg.args["tail"]



def test_qlora_trains_and_merges_into_the_unquantized_base(chain):
    for name in ("train", "export"):
        shutil.rmtree(chain.session.run_dir / name, ignore_errors=True)
    chain.step("choose_strategy", method="qlora", max_steps="4", save_steps="2")
    out = chain.step("train")
    assert out["method"] == "qlora" and out["steps"] == 4
    cfg = json.loads(Path(out["adapter_dir"], "adapter_config.json").read_text())
    assert cfg["r"] == 16
    exp = chain.step("export", formats="")
    merged = json.loads(Path(exp["merged_dir"], "config.json").read_text())
    assert "quantization_config" not in merged and exp["artifacts"] == {}
    assert exp["merge_check"]["max_abs_logit_diff"] < 1e-4  # adapter on the unquantized base vs merged


def test_gptq_with_llm_compressor_in_its_own_environment(chain):
    """GPTQ W4A16 through llm-compressor, in the environment yichui builds for it (its pins differ from ours);
    the artifact reloads in the main environment (compressed-tensors) and its quality figures are written."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    exp = chain.step("export", formats="gptq-w4a16", calibration_samples="16", calibration_seq_len="128",
                     quality_samples="4")
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


def test_out_of_memory_recovers_from_the_last_checkpoint(chain, monkeypatch):
    """The CUDA OOM error injected at step 5 (CI has no GPU): the step halves the micro-batch, doubles gradient
    accumulation, turns checkpointing on, resumes from checkpoint-4 and records what changed."""
    for name in ("train", "export"):
        shutil.rmtree(chain.session.run_dir / name, ignore_errors=True)
    chain.session.steps["train"]["outputs"] = {}
    chain.step("choose_strategy", preflight="false", method="lora", max_steps="8", save_steps="4", micro_batch="4", grad_accum="1",
               activation_checkpointing="false")
    monkeypatch.setenv("YICHUI_INJECT_OOM", "5:2")
    out = chain.step("train")
    assert out["steps"] == 8
    (change,) = out["recoveries"]
    assert change["from"] == {"micro_batch": 4, "grad_accum": 1, "activation_checkpointing": False}
    assert change["to"] == {"micro_batch": 2, "grad_accum": 2, "activation_checkpointing": True}
    events, _ = jobs.read_events(Path(out["train_dir"]) / "events.jsonl")
    assert [e["kind"] for e in events if e["event"] == "error"] == ["oom"]
    starts = [e for e in events if e["event"] == "start"]
    assert len(starts) == 2 and starts[1]["resumed_from"] == "checkpoint-4"
    spec = json.loads((Path(out["train_dir"]) / "spec.json").read_text())
    assert (spec["micro_batch"], spec["grad_accum"], spec["activation_checkpointing"]) == (2, 2, True)


def test_recovery_gives_up_when_nothing_is_left():
    from recipes.training.runner import recover
    from recipes.training.spec import TrainingSpec as S

    assert recover(S(micro_batch=1, grad_accum=8, activation_checkpointing=True)) is None
    assert recover(S(micro_batch=1, grad_accum=8, activation_checkpointing=False))["to"] == {
        "micro_batch": 1, "grad_accum": 8, "activation_checkpointing": True}
    assert recover(S(micro_batch=3, grad_accum=2, activation_checkpointing=True))["to"] == {
        "micro_batch": 1, "grad_accum": 6, "activation_checkpointing": True}


def test_dora_with_a_validation_split_and_a_hub_dataset(chain, tmp_path):
    """DoRA trains and merges; a hub dataset (served by the local hub, fetched by the downloader) with #N sampling
    and a 10 % validation split: eval events in the stream, held-out records never trained on."""
    import json as _json

    from recipes.data import datasets as data

    ds_dir = chain.home / "cache" / "hub" / "datasets" / "org" / "chat"
    ds_dir.mkdir(parents=True, exist_ok=True)
    convs = data.load_records(data.bundled_dataset_path())
    (ds_dir / "train.jsonl").write_text("".join(_json.dumps({"conversations": [
        {"from": "human", "value": c[0]["content"]}, {"from": "gpt", "value": c[1]["content"]}]}) + "\n"
        for c in convs))
    for name in ("train", "export"):
        shutil.rmtree(chain.session.run_dir / name, ignore_errors=True)
    chain.session.steps["train"]["outputs"] = {}
    out = chain.step("choose_strategy", preflight="false", method="dora", dataset="hub", dataset_repo="org/chat",
                     dataset_file="*.jsonl#120", val_ratio="0.1", max_steps="6", save_steps="3", micro_batch="2",
                     activation_checkpointing="false")
    assert out["dataset_format"] == "sharegpt" and out["n_records"] == 120
    assert (out["n_train"], out["n_validation"]) == (108, 12)
    assert out["dataset_path"].startswith(str(chain.home / "datasets" / "hf" / "org" / "chat"))
    tr = chain.step("train")
    events, _ = jobs.read_events(Path(tr["train_dir"]) / "events.jsonl")
    assert [e["step"] for e in events if e["event"] == "eval"] == [3, 6]
    cfg = _json.loads(Path(tr["adapter_dir"], "adapter_config.json").read_text())
    assert cfg["use_dora"] is True
    exp = chain.step("export", formats="")
    assert Path(exp["merged_dir"], "model.safetensors").exists()


@TWO_RANKS
def test_two_processes_data_parallel_on_cpu(chain):
    """The same launcher as on several GPUs (torch.distributed.run), two CPU processes over gloo: one events
    stream (rank 0), the adapter saved once, the effective batch counting both processes."""
    for name in ("train", "export"):
        shutil.rmtree(chain.session.run_dir / name, ignore_errors=True)
    chain.session.steps["train"]["outputs"] = {}
    out = chain.step("choose_strategy", preflight="false", method="lora", dataset="bundled", processes="2", max_steps="6",
                     save_steps="3", micro_batch="2", grad_accum="1", val_ratio="0")
    assert out["effective_batch"] == 4
    tr = chain.step("train")
    assert tr["steps"] == 6
    result = json.loads((Path(tr["train_dir"]) / "result.json").read_text())
    assert result["processes"] == 2
    events, _ = jobs.read_events(Path(tr["train_dir"]) / "events.jsonl")
    assert [e["step"] for e in events if e["event"] == "step"] == [1, 2, 3, 4, 5, 6]
    assert {e["rank"] for e in events} == {0}
    spec = json.loads((Path(tr["train_dir"]) / "spec.json").read_text())
    assert spec["processes"] == 2 and "torch.distributed.run" in jobs.read(
        Path(tr["train_dir"]) / "trainer.pid.json").argv


# the tests below are about training, not the smoke run (test_choose_strategy_renders_samples_and_checks_data and the
# QLoRA test keep it): preflight="false" saves its ~10 s each in CI

def _fresh_train(chain):
    for name in ("train", "export"):
        shutil.rmtree(chain.session.run_dir / name, ignore_errors=True)
    chain.session.steps["train"]["outputs"] = {}


def _losses(tr) -> list[float]:
    return json.loads((Path(tr["train_dir"]) / "result.json").read_text())["losses"]


def _sharding(tr) -> str:
    events, _ = jobs.read_events(Path(tr["train_dir"]) / "events.jsonl")
    return [e for e in events if e["event"] == "start"][-1]["sharding"]


@TWO_RANKS
def test_deepspeed_zero_stages_match_data_parallel(chain):
    """Two CPU processes (gloo) through the same launcher: plain DDP, DeepSpeed ZeRO-3, and ZeRO-2 with the
    optimizer states offloaded (DeepSpeed's CPU Adam). The Trainer really runs the asked sharding (the start event
    says what accelerate set up), and the sharded runs' losses match the DDP run's."""
    runs = {}
    for dist, offload in (("ddp", "none"), ("zero3", "none"), ("zero2", "optimizer")):
        _fresh_train(chain)
        out = chain.step("choose_strategy", preflight="false", method="lora", dataset="bundled", processes="2", max_steps="4",
                         save_steps="2", micro_batch="2", grad_accum="1", val_ratio="0", distribution=dist,
                         offload=offload, activation_checkpointing="false")
        assert out["strategy"]["distribution"] == dist and out["estimate"]["peak_gib"] > 0
        tr = chain.step("train")
        assert tr["steps"] == 4
        assert _sharding(tr) == {"ddp": "ddp", "zero3": "deepspeed-zero3", "zero2": "deepspeed-zero2"}[dist]
        assert Path(tr["adapter_dir"], "adapter_model.safetensors").exists()
        runs[dist] = _losses(tr)
    for dist in ("zero3", "zero2"):
        assert runs[dist] == pytest.approx(runs["ddp"], rel=2e-3), dist


def test_distribution_choices_refused_with_a_reason(chain):
    q = chain.questions("choose_strategy")
    a = {"method": "lora", "processes": 2, "nodes": 1}
    assert check(q["distribution"], "megatron", a)[1].key == "choose_strategy.megatron_out_of_scope"
    fsdp = check(q["distribution"], "fsdp2", a)[1]
    assert (fsdp is None) if memory.detect_gpus() else fsdp.key == "choose_strategy.fsdp_needs_gpus"
    assert check(q["distribution"], "zero3", a | {"method": "qlora"})[1].key == "choose_strategy.qlora_sharded"
    assert check(q["distribution"], "zero2", a)[1] is None
    n = len(memory.detect_gpus())  # one process per GPU; as many as asked on the CPU
    over = check(q["processes"], str(max(n, 1) + 1), a)[1]
    assert (over.key == "choose_strategy.processes_over_gpus") if n else over is None
    assert check(q["processes"], "65", a)[1].key == "answer.out_of_range"
    assert check(q["offload"], "all", a | {"distribution": "zero2"})[1].key == "choose_strategy.offload_all_needs_zero3"
    assert check(q["hosts"], "10.0.0.1", {"nodes": 2})[1].key == "choose_strategy.hosts_count"
    assert check(q["hosts"], "10.0.0.1,bad host", {"nodes": 2})[1].key == "choose_strategy.bad_host"
    assert check(q["hosts"], "10.0.0.1, node-2.cluster", {"nodes": 2})[1] is None


@TWO_RANKS
def test_two_nodes_meet_at_the_rendezvous_then_train(chain, monkeypatch):
    """Two "nodes" on this machine (127.0.0.1 twice), one process each: the step writes node-1's script and the
    hostfile, waits at the rendezvous until the script is run (here by a thread, as a user would on the other
    host), then both train as one world of 2. Without the other node it fails with a one-line reason."""
    import socket
    import subprocess
    import threading
    import time

    from recipes.base import StepError

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    _fresh_train(chain)
    two_nodes = dict(preflight="false", method="lora", dataset="bundled", processes="1", nodes="2", hosts="127.0.0.1,127.0.0.1",
                     master_port=str(port), max_steps="4", save_steps="2", micro_batch="2", grad_accum="1",
                     val_ratio="0", activation_checkpointing="false")
    chain.step("choose_strategy", **two_nodes)
    tdir = chain.session.run_dir / "train"
    monkeypatch.setenv("YICHUI_RENDEZVOUS_TIMEOUT", "4")
    with pytest.raises(StepError) as e:
        chain.step("train")
    assert e.value.msg.key == "train.rendezvous_failed"
    assert (tdir / "launch" / "node-1.sh").exists()

    monkeypatch.setenv("YICHUI_RENDEZVOUS_TIMEOUT", "120")
    procs = []

    def other_node():
        script = tdir / "launch" / "node-1.sh"
        while not script.exists() or script.stat().st_mtime < started:
            time.sleep(0.2)
        procs.append(subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=600))

    started = time.time()
    (tdir / "launch" / "node-1.sh").unlink()
    t = threading.Thread(target=other_node, daemon=True)
    t.start()
    tr = chain.step("train")
    t.join(timeout=120)
    assert procs and procs[0].returncode == 0, procs and procs[0].stderr[-2000:]
    assert json.loads((tdir / "result.json").read_text())["processes"] == 2
    assert tr["steps"] == 4
    assert (tdir / "hostfile").read_text() == "127.0.0.1 slots=1\n127.0.0.1 slots=1\n"
    script = (tdir / "launch" / "node-1.sh").read_text()
    assert "--node_rank=1" in script and f"--master_port={port}" in script and "recipes.training.rendezvous" in script

    _fresh_train(chain)
    chain.step("choose_strategy", **two_nodes | {"hosts": "10.255.255.1,127.0.0.1"})
    with pytest.raises(StepError) as e:
        chain.step("train")
    assert e.value.msg.key == "train.master_not_here"


def test_galore_and_padding_free_packing(chain):
    """GaLore (every weight trained through transformers' galore_adamw, projection rank 8) with padding-free
    packing: a packed row carries several records, so a step sees more real tokens than the padded run, and the
    export copies the whole trained model."""
    seen = {}
    for packing in ("false", "true"):
        _fresh_train(chain)
        out = chain.step("choose_strategy", preflight="false", method="galore", galore_rank="8", dataset="bundled", processes="1", nodes="1",
                         max_steps="3", save_steps="3", micro_batch="2", grad_accum="1", val_ratio="0",
                         packing=packing, activation_checkpointing="false", learning_rate="1e-3")
        assert out["estimate"]["trainable"] > 0 and "galore" in out["estimate"]["approximate"]
        tr = chain.step("train")
        assert tr["steps"] == 3
        state = json.loads((Path(tr["train_dir"]) / "checkpoints" / "checkpoint-3" / "trainer_state.json").read_text())
        seen[packing] = [h["num_tokens"] for h in state["log_history"] if "num_tokens" in h][-1]
        events, _ = jobs.read_events(Path(tr["train_dir"]) / "events.jsonl")
        assert [e for e in events if e["event"] == "start"][-1]["optimizer"] == "galore_torch.adamw.AdamW"
    assert seen["true"] > 1.5 * seen["false"], seen
    exp = chain.step("export", formats="")
    assert Path(exp["merged_dir"], "model.safetensors").exists()


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


def test_the_verdict_says_when_fine_tuning_did_not_help():
    """evaluate.verdict: every metric both models have must favour the fine-tuned one (lower loss, higher ROUGE-L)."""
    from recipes import evaluate

    better = {"heldout:base": {"loss": 3.0, "rouge_l": 0.1}, "heldout:finetuned": {"loss": 2.0, "rouge_l": 0.4}}
    assert evaluate.verdict(better) == {"beats": True, "checks": {"loss": True, "rouge_l": True},
                                        "figures": "loss 2.0 vs 3.0, rouge_l 0.4 vs 0.1"}
    worse = {"heldout:base": {"loss": 2.0, "rouge_l": 0.4}, "heldout:finetuned": {"loss": 2.5, "rouge_l": 0.5}}
    assert evaluate.verdict(worse)["checks"] == {"loss": False, "rouge_l": True} and not evaluate.verdict(worse)["beats"]
    endpoint_only = {"heldout:base": {"loss": None, "rouge_l": 0.2}, "heldout:finetuned": {"loss": None, "rouge_l": 0.2}}
    assert evaluate.verdict(endpoint_only)["checks"] == {"rouge_l": False}  # a tie is no gain
    assert evaluate.verdict({"heldout:finetuned": {"loss": 1.0}}) is None  # no base: nothing to compare
