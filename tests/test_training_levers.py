"""The trainer's speed levers (issue 21) change how fast it trains, not what it learns.

Real peft, real torch.compile (inductor's CPU backend), the real trainer process on the tiny model. The speed itself
is measured on the H200 (bench/results/2026-12-02-train-levers-h200.md); here: the same numbers come out.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from recipes.data.datasets import bundled_dataset_path

REPO = Path(__file__).resolve().parent.parent


def test_adapters_without_the_input_cast_compute_the_same_loss_and_gradients(tiny_model):
    """Under bf16 autocast peft copies each adapter's input to fp32 and autocast copies it back for the matmul;
    training with that cast off (peft's own switch, which the trainer sets for LoRA on a bf16 GPU) gives
    bit-identical losses and adapter gradients (dropout 0)."""
    import peft
    import torch
    import transformers
    from peft.helpers import disable_input_dtype_casting

    from recipes.training.spec import TrainerJob
    from recipes.training.worker import skips_adapter_input_cast

    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.bfloat16)
    model = peft.get_peft_model(model, peft.LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0,
                                                       target_modules="all-linear"))
    for name, p in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.02)  # B starts at 0: give the adapters a path that matters
    assert {p.dtype for p in model.parameters() if p.requires_grad} == {torch.float32}  # peft's fp32 adapters
    ids = torch.randint(0, model.config.vocab_size, (2, 32))

    def step():
        model.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        return loss.item(), {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}

    loss_cast, grads_cast = step()
    with disable_input_dtype_casting(model):
        loss, grads = step()
    assert loss == loss_cast
    assert all(torch.equal(grads[n], grads_cast[n]) for n in grads)
    # where the trainer switches it off: LoRA under bf16, unless a benchmark asks for peft's cast; not DoRA
    assert skips_adapter_input_cast(TrainerJob(method="lora"), bf16=True)
    assert not skips_adapter_input_cast(TrainerJob(method="lora"), bf16=False)
    assert not skips_adapter_input_cast(TrainerJob(method="dora"), bf16=True)
    assert not skips_adapter_input_cast(TrainerJob(method="lora", adapter_input_cast=True), bf16=True)


def test_the_sample_answer_after_training_runs_outside_autocast(tiny_model):
    """The trainer answers its sample question after training, outside the Trainer's autocast, so the cast is off
    only around training (generation without it fails: bf16 inputs meet fp32 adapters); with compiled layers the
    answer runs them eagerly."""
    import peft
    import torch
    import transformers
    from peft.helpers import disable_input_dtype_casting

    from recipes.training.worker import answer, compile_decoder_layers

    tok = transformers.AutoTokenizer.from_pretrained(tiny_model)
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.bfloat16)
    model = peft.get_peft_model(model, peft.LoraConfig(r=8, lora_alpha=16, target_modules="all-linear"))
    assert compile_decoder_layers(model) == model.config.num_hidden_layers
    with disable_input_dtype_casting(model), pytest.raises(RuntimeError, match="dtype"):
        with torch.no_grad(), torch.compiler.set_stance("force_eager"):
            model.generate(**tok("hello", return_tensors="pt"), max_new_tokens=2)
    assert isinstance(answer(model, tok, "What is LoRA?", max_new_tokens=4), str)
    with pytest.raises(RuntimeError, match="no decoder layer"):
        compile_decoder_layers(torch.nn.Sequential(torch.nn.Linear(2, 2)))


@pytest.mark.slow
def test_a_bf16_lora_run_answers_its_sample_question_after_training(tiny_model, tmp_path):
    """The whole trainer on its bf16 path (the CPU's bf16 autocast stands in for a GPU's: only the precision choice
    is forced), LoRA with the cast off during training and a sample question: it finishes and answers after."""
    (tmp_path / "spec.json").write_text(json.dumps({
        "model_dir": str(tiny_model), "method": "lora", "lora_rank": 8, "lora_alpha": 16, "lora_dropout": 0.0,
        "dataset_path": str(bundled_dataset_path()) + "#16", "seq_len": 128, "micro_batch": 2, "max_steps": 2,
        "save_steps": 2, "sample_question": "What is LoRA?", "device": "cpu"}))
    code = ("import sys, torch; from recipes.training import worker; "
            "worker._precision = lambda spec: ('cpu', 'cpu', True, torch.bfloat16, torch.bfloat16); "
            "sys.exit(worker.main(sys.argv[1]))")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "spec.json")], cwd=REPO, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    samples = json.loads((tmp_path / "samples.json").read_text())
    assert {"before", "after"} <= samples.keys() and (tmp_path / "result.json").is_file()


def _train(tdir: Path, model: Path, steps: int, **knobs) -> list[dict]:
    tdir.mkdir(parents=True, exist_ok=True)
    spec = {"model_dir": str(model), "method": "lora", "lora_rank": 8, "lora_alpha": 16, "lora_dropout": 0.0,
            "dataset_path": str(bundled_dataset_path()), "seq_len": 256, "micro_batch": 2, "max_steps": steps,
            "save_steps": 2, "save_final": False, "sample_question": None, "device": "cpu",
            "learning_rate": 1e-3} | knobs
    (tdir / "spec.json").write_text(json.dumps(spec))
    r = subprocess.run([sys.executable, "-m", "recipes.training.worker", str(tdir / "spec.json")], cwd=REPO,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    return [json.loads(x) for x in (tdir / "events.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_a_compile_that_fails_is_reported_as_such_not_as_a_crash(tiny_model, tmp_path):
    """Inductor without a working C++ compiler (CXX=/bin/false): the compile fails for real inside torch; the
    trainer's error event says ``compile`` (the train step then resumes without compiling: recipes/train.py)."""
    spec = {"model_dir": str(tiny_model), "method": "lora", "lora_rank": 8, "lora_alpha": 16, "lora_dropout": 0.0,
            "dataset_path": str(bundled_dataset_path()) + "#8", "seq_len": 128, "micro_batch": 2, "max_steps": 2,
            "save_steps": 2, "sample_question": None, "device": "cpu", "compile_layers": True}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    env = dict(os.environ, CXX="/bin/false", TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"))
    r = subprocess.run([sys.executable, "-m", "recipes.training.worker", str(tmp_path / "spec.json")], cwd=REPO,
                       capture_output=True, text=True, timeout=600, env=env)
    errors = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines() if '"error"' in x]
    assert r.returncode != 0 and [e["kind"] for e in errors] == ["compile"], (errors, r.stderr[-2000:])


@pytest.mark.slow
def test_compiled_layers_learn_what_eager_learns_and_resume(tiny_model, tmp_path):
    """torch.compile of every decoder layer: the same loss at every step as the eager trainer (fp32 on the CPU),
    checkpoints with the same tensors, and a resumed compiled run picks up where the checkpoint left."""
    from safetensors.torch import load_file

    eager = _train(tmp_path / "eager", tiny_model, 4)
    _train(tmp_path / "compiled", tiny_model, 2, compile_layers=True)
    resumed = _train(tmp_path / "compiled", tiny_model, 4, compile_layers=True)  # from checkpoint-2
    assert [e["event"] for e in resumed if e["event"] in ("start", "done")][-2:] == ["start", "done"]
    start = [e for e in resumed if e["event"] == "start"][-1]
    assert start.get("resumed_from") == "checkpoint-2", start
    losses = lambda evs: {e["step"]: e["loss"] for e in evs if e["event"] == "step"}  # noqa: E731
    assert set(losses(resumed)) == {1, 2, 3, 4}
    assert losses(resumed) == pytest.approx(losses(eager), rel=1e-4)
    a = load_file(tmp_path / "eager" / "checkpoints" / "checkpoint-4" / "adapter_model.safetensors")
    b = load_file(tmp_path / "compiled" / "checkpoints" / "checkpoint-4" / "adapter_model.safetensors")
    assert a.keys() == b.keys() and a
    assert all((a[k] - b[k]).abs().max().item() < 1e-4 for k in a)


def test_the_smoke_run_trains_eager_layers_and_the_eta_counts_the_compilation(tmp_path):
    """bench/results/2026-12-06-compile-shapes-h100.md: compiled layers recompiled three times (~18 s each) on unpacked
    data of many lengths on an H100. The smoke run's 2-layer copy runs eager (its two steps would pay a compile and a
    recompilation for nothing), everything else of the plan kept; the time given for the planned steps adds the
    compilation — the first compile, and on unpacked data three recompilations."""
    from dataclasses import replace

    from recipes.memory import planner
    from recipes.training import preflight
    from recipes.training.spec import TrainerJob

    plan = TrainerJob(method="lora", compile_layers=True, micro_batch=4, lora_rank=32, max_steps=500,
                      dataset_path="data.jsonl", model_dir="/models/real")
    smoke = preflight.smoke_spec(plan, tmp_path, "sample.jsonl")
    assert smoke.compile_layers is False and smoke.max_steps == preflight.STEPS
    assert (smoke.method, smoke.micro_batch, smoke.lora_rank) == ("lora", 4, 32)
    assert smoke.model_dir == str(tmp_path / "model") and smoke.dataset_path == "sample.jsonl"
    assert planner.compile_seconds(replace(plan, compile_layers=False)) == 0  # a TrainerJob is a TrainingSpec
    unpacked = planner.compile_seconds(replace(plan, packing=False))
    packed = planner.compile_seconds(replace(plan, packing=True))
    assert packed == planner.FIRST_COMPILE_S and unpacked == pytest.approx(packed + 3 * 17.5)


def test_a_dead_trainers_log_is_said_without_its_screen_of_metric_dicts():
    """Issue 46, trial E: after a kill -9 the error quoted ~20 of the Trainer's `{'loss': …}` lines (60 screen
    lines). The lines that are not metrics stay (a traceback's last lines), and the last metrics line says where it
    was."""
    from recipes.training.runner import died_tail

    log = "\n".join([f"{{'loss': '{9 - i / 10}', 'grad_norm': '1.0', 'epoch': '{i / 10}'}}" for i in range(20)]
                    + ["Traceback (most recent call last):", "  File \"x.py\", line 1", "RuntimeError: boom"])
    tail = died_tail(log).splitlines()
    assert tail[:3] == ["  Traceback (most recent call last):", "    File \"x.py\", line 1", "  RuntimeError: boom"]
    assert len(tail) == 4 and "'epoch': '1.9'" in tail[3]
    only = died_tail("\n".join(f"{{'loss': '{i}'}}" for i in range(30))).splitlines()
    assert only == ["  {'loss': '29'}"]
    assert died_tail("") == "  —"


def _wait_for(predicate, seconds: float, what: str):
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"not within {seconds} s: {what}")


def test_a_preloaded_trainer_waits_for_its_spec_then_trains_it(tiny_model, tmp_path):
    """The smoke run's trainer (`--wait-for-spec`, recipes/training/preflight.py) is started before the copy is
    built: it imports its libraries, trains nothing while the spec is missing, then trains the spec once it is
    written — the losses of a trainer started cold on the same spec."""
    from recipes import jobs

    warm, cold = tmp_path / "warm", tmp_path / "cold"
    warm.mkdir()
    job = jobs.spawn("preflight", [sys.executable, "-m", "recipes.training.worker", str(warm / "spec.json"),
                                   "--wait-for-spec", str(os.getpid())], warm, cwd=REPO)
    from recipes.rundir import LIBRARIES_LOADED
    from wizard import i18n
    from wizard.cli.jobs import _job_detail

    # `yichui status` says what it does: loading (its imports take seconds), then waiting for the spec (it said "—":
    # issue 48 trial P; and "waiting" while it still loaded: trial Q)
    assert _job_detail(None, job) == i18n.t("cli.detail.starting")
    _wait_for(lambda: LIBRARIES_LOADED in Path(job.log).read_text(), 120, "the libraries loaded")
    assert job.alive() and not (warm / "events.jsonl").exists()
    assert _job_detail(None, job) == i18n.t("cli.detail.waiting_for_copy")
    cold_events = _train(cold, tiny_model, 2)  # the same spec, meanwhile, in a process of its own
    (warm / "spec.json.tmp").write_text((cold / "spec.json").read_text())
    os.replace(warm / "spec.json.tmp", warm / "spec.json")
    _wait_for(lambda: not job.alive(), 300, "the preloaded trainer done")
    assert _job_detail(None, job) == i18n.t("cli.detail.done")
    events = [json.loads(x) for x in (warm / "events.jsonl").read_text().splitlines()]
    assert [e["event"] for e in events if e["event"] in ("start", "done")] == ["start", "done"], job.log_tail(30)
    assert {e["pid"] for e in events} == {job.pid}
    losses = lambda evs: [e["loss"] for e in evs if e["event"] == "step"]  # noqa: E731
    assert losses(events) == pytest.approx(losses(cold_events), rel=1e-5) and len(losses(events)) == 2


def test_a_preloaded_trainer_leaves_when_the_wizard_that_started_it_dies(tmp_path):
    """A wizard killed -9 while it builds the copy: its waiting trainer sees its parent gone and exits without
    training (nothing left holding memory for a spec that never comes)."""
    import signal

    code = ("import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-m', 'recipes.training.worker', "
            f"{str(tmp_path / 'spec.json')!r}, '--wait-for-spec', str(__import__('os').getpid())], stdout=open({str(tmp_path / 'log')!r}, 'w'), "
            "stderr=subprocess.STDOUT, start_new_session=True); print(p.pid, flush=True); time.sleep(600)")
    wizard = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True)
    pid = int(wizard.stdout.readline())
    log = tmp_path / "log"
    _wait_for(lambda: log.is_file() and "trainer libraries loaded" in log.read_text(), 120, "the libraries loaded")
    os.kill(wizard.pid, signal.SIGKILL)
    wizard.wait()

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"  # exited, not yet reaped

    _wait_for(gone, 30, "the waiting trainer gone")
    assert "no spec came" in log.read_text() and not (tmp_path / "events.jsonl").exists()


@pytest.mark.parametrize("shape", ["qwen2.5-0.5b", "gemma3-1b", "phi3-mini"])
def test_the_smoke_copy_is_initialized_once_as_transformers_initializes_it(shape, tiny_model, tmp_path, monkeypatch):
    """The 2-layer copy is built under transformers' no_init_weights, then init_weights runs once (preflight.
    _random_model): no layer gets torch's own init first (no uniform_ draw: it cost a 7B copy ~5 of 17 s), and the
    same tensors (names, shapes, dtypes) as a plain from_config build, each drawn as transformers draws it — finite,
    the same spread, norms and biases the same constants — tied weights saved once. The vocabulary is cut to 8,192
    rows to keep it quick."""
    import shutil

    import torch
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoModelForCausalLM

    from recipes.training import preflight

    meta = tmp_path / "meta"
    meta.mkdir()
    config = json.loads((REPO / "bench" / "configs" / shape / "config.json").read_text())
    small = {"torch_dtype": "bfloat16", "vocab_size": 8192}
    if config.get("pad_token_id") is not None:  # an embedding's padding row must be one of its rows
        small["pad_token_id"] = min(config["pad_token_id"], 8191)
    (meta / "config.json").write_text(json.dumps(config | small))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tiny_model / name, meta / name)
    draws = []
    uniform = torch.Tensor.uniform_
    monkeypatch.setattr(torch.Tensor, "uniform_", lambda t, *a, **k: draws.append(t.shape) or uniform(t, *a, **k))
    preflight.build_copy(meta, tmp_path / "copy")
    assert draws == []
    monkeypatch.undo()
    copy = load_file(tmp_path / "copy" / "model.safetensors")
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        torch.manual_seed(0)
        plain = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(tmp_path / "copy"))
        plain.save_pretrained(tmp_path / "plain")
    finally:
        torch.set_default_dtype(previous)
    reference = load_file(tmp_path / "plain" / "model.safetensors")
    assert copy.keys() == reference.keys() and copy
    for name, t in copy.items():
        r = reference[name]
        assert (t.shape, t.dtype) == (r.shape, r.dtype), name
        t, r = t.float(), r.float()
        assert torch.isfinite(t).all(), name
        if r.std() == 0 or r.numel() == 1:  # a constant (norm weights, biases): the same constant
            assert torch.equal(t, r), name
        else:
            assert abs(t.std() / r.std() - 1) < 0.05 and abs(t.mean() - r.mean()) < 0.01, name


def test_a_preloaded_trainer_whose_wizard_died_before_it_started_leaves_too(tmp_path):
    """Issue 48 trial P: the wizard killed -9 within ~0.1 s of starting the trainer — before the trainer could read
    its parent, which was then already init — left it waiting 15 minutes. The wizard gives its pid; a trainer whose
    parent is not that process leaves once its libraries are loaded."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    r = subprocess.run([sys.executable, "-m", "recipes.training.worker", str(tmp_path / "spec.json"), "--wait-for-spec",
                        gone.stdout.strip()], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "no spec came" in r.stdout, r.stdout + r.stderr[-2000:]
    assert not (tmp_path / "events.jsonl").exists()


def test_the_trainer_s_log_has_no_library_noise():
    """What the libraries print that is nothing for the user to act on stays out of the trainer's log: bitsandbytes
    0.50 on an AVX512-BF16 CPU logs at import "Failed to load CPU gemm_4bit_forward … pip install kernels" and falls
    back by itself (trial Q); transformers 5 warns "`is_gradient_checkpointing` is deprecated" when peft wraps a model
    (trial R). Each is first shown to appear without yichui's recipes imported (the bitsandbytes line only on a CPU
    that has the instruction set)."""
    code = ("import warnings; warnings.simplefilter('default')\n{first}import bitsandbytes, peft, transformers\n"
            "config = transformers.Qwen2Config(hidden_size=32, intermediate_size=64, num_hidden_layers=1,"
            " num_attention_heads=2, num_key_value_heads=1, vocab_size=64)\n"
            "peft.get_peft_model(transformers.AutoModelForCausalLM.from_config(config), peft.LoraConfig(r=2))\n")
    said = subprocess.run([sys.executable, "-c", code.format(first="")], capture_output=True, text=True, cwd=REPO,
                          timeout=180)
    assert said.returncode == 0 and "is_gradient_checkpointing" in said.stderr, said.stderr
    quiet = subprocess.run([sys.executable, "-c", code.format(first="import recipes.training.worker\n")],
                           capture_output=True, text=True, cwd=REPO, timeout=180)
    assert quiet.returncode == 0, quiet.stderr
    assert "is_gradient_checkpointing" not in quiet.stderr, quiet.stderr
    if "gemm_4bit_forward" in said.stdout + said.stderr:
        assert "gemm_4bit_forward" not in quiet.stdout + quiet.stderr, quiet.stderr
