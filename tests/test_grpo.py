"""GRPO (issue 47, second slice): prompts with checkable answers in the forms users have, the built-in reward
functions, the user's reward file in its own process (its errors named, its hang cut, the user's tokens out of its
sight), the spec's rules, the memory model's generation phase, and trl's GRPOTrainer in yichui's own trainer process
raising a reward on the tiny model and resuming from a checkpoint."""
from __future__ import annotations

import json
import os
from dataclasses import replace
import subprocess
import sys
from pathlib import Path

import pytest
from test_preference import train_in_worker, write

from recipes.base import Refusal
from recipes.data import datasets, prompts
from recipes.memory import model as memory
from recipes.training import rewards
from recipes.training.spec import TrainingSpec
from wizard import i18n

REPO = Path(__file__).resolve().parents[1]
Q = "What is 2 + 3?"


def test_every_prompt_form_reads_with_its_reference_answer(tmp_path):
    user = [{"role": "user", "content": Q}]
    forms = {"text": ({"prompt": Q, "answer": "5"}, "5"),
             "messages": ({"prompt": user, "solution": 5}, "5"),
             "ground_truth": ({"prompt": Q, "ground_truth": "five"}, "five"),
             "gsm8k": ({"question": Q, "answer": "Two plus three.\n#### 5"}, "5"),
             "no answer": ({"prompt": Q}, None)}
    for name, (row, answer) in forms.items():
        got = prompts.read(write(tmp_path / f"{name}.jsonl", [row]))
        assert got.records == [{"prompt": user, "answer": answer}] and not got.bad, name
    rows = [{"prompt": Q, "answer": "5"},
            {"question": Q, "answer": "no mark"},                  # GSM8K's answer without its final "#### N"
            {"prompt": Q, "answer": ["5"]},
            {"prompt": "", "answer": "5"},
            {"prompt": Q, "completion": "5"},                       # a reply of its own: SFT data
            {"prompt": [{"role": "assistant", "content": Q}], "answer": "1"},
            "{broken"]
    got = prompts.read(write(tmp_path / "p.jsonl", rows))
    assert [i18n.render(m) for m in got.bad] == [
        "p.jsonl:2 (a GSM8K answer without its final '#### N')",
        "p.jsonl:3 ('answer' is [\"5\"], not text or a number)",
        "p.jsonl:4 ('prompt' is empty or missing)",
        "p.jsonl:5 (not a prompt record (keys prompt, completion): a reply of its own makes it SFT or preference data)",
        "p.jsonl:6 ('prompt' ends with the assistant's turn, not the user's)",
        "p.jsonl:7 (not JSON)"]
    with pytest.raises(datasets.DataError) as e:
        prompts.load(tmp_path / "p.jsonl")
    assert e.value.key == "data.bad_records" and e.value.params["count"] == 6
    with pytest.raises(datasets.DataError) as e:  # every record bad: skipping leaves none, said so (tryout)
        prompts.load(write(tmp_path / "all-bad.jsonl", rows[1:3]), skip_bad=True)
    assert e.value.key == "data.all_bad" and e.value.params["count"] == 2
    with pytest.raises(datasets.DataError) as e:  # … and not told to skip them when not skipping (trial W)
        prompts.load(tmp_path / "all-bad.jsonl")
    assert e.value.key == "data.all_bad" and "bad_records=skip" not in i18n.t(e.value.key, **e.value.params)
    with pytest.raises(datasets.DataError) as e:  # a supervised file given as prompts: said so
        prompts.read(write(tmp_path / "sft.jsonl", [{"instruction": Q, "output": "5"}]))
    assert e.value.key == "data.not_prompts"
    bundled = prompts.read(prompts.bundled_prompts_path())
    assert len(bundled.records) == 240 and bundled.answered == 240 and not bundled.bad


def test_the_built_in_rewards_read_final_answers_as_numbers():
    reply = lambda text: [[{"role": "assistant", "content": text}]]  # noqa: E731
    cases = [("The sum is 5.", "5", 1.0), ("#### 1,000", "1000", 1.0), ("So \\boxed{2.50}", "2.5", 1.0),
             ("3 then 4", "3", 0.0), ("#### 7\nor 5", "5", 0.0),   # the marked answer wins over the last number
             ("no number", "5", 0.0), ("Answer: Paris", "paris", 0.0), ("#### Paris", " paris ", 1.0)]
    for text, ref, want in cases:
        assert rewards.accuracy([Q], reply(text), answer=[ref]) == [want], (text, ref)
    assert rewards.accuracy([Q], reply("5"), answer=[None]) == [None]  # no reference: no score
    assert rewards.format([Q] * 3, reply("x\n#### 5") + reply("\\boxed{5}") + reply("#### 5\nmore")) == [1.0, 1.0, 0.0]
    stops = rewards.stops_reward({2}, 4)
    assert stops([Q] * 3, reply("a") * 3, completion_ids=[[5, 2], [5, 5, 5, 5], []]) == [1.0, 0.0, 0.0]


def _file(tmp_path, body: str) -> Path:
    p = tmp_path / "my_reward.py"
    p.write_text(body)
    return p


def test_a_user_s_reward_file_runs_in_its_own_process_and_its_errors_are_named(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_secret")  # the user's token: not in the reward file's sight
    ok = _file(tmp_path, "import os\nprint('loading')\n"  # its prints do not reach the answers' channel
                         "def reward_len(prompt, completion, answer):\n    print(completion)\n"
                         "    return len(completion)\n"
                         "def reward_env(prompt, completion, answer):\n"
                         "    return float('HF_TOKEN' in os.environ or os.getcwd() == %r)\n"
                         "def helper(x):\n    return x\n" % str(tmp_path))
    user = rewards.UserRewards(ok)
    try:
        assert user.functions == ["reward_env", "reward_len"]
        assert user.score(["p", "p"], ["ab", "abcd"], ["1", None]) == {"reward_len": [2.0, 4.0],
                                                                      "reward_env": [0.0, 0.0]}
        funcs = user.trl_functions()
        assert [f.__name__ for f in funcs] == ["env", "len"]  # trl logs rewards/<name>/mean
        completions = [[{"role": "assistant", "content": "xyz"}]]
        assert [f(prompts=["p"], completions=completions, answer=["1"]) for f in funcs] == [[0.0], [3.0]]
    finally:
        user.close()
    cases = {
        "def reward(p, c, a):\n    return {}['missing']\n": ("rewards.raised", "KeyError: 'missing' (line 2)"),
        "def reward(p, c, a):\n    return 'high'\n": ("rewards.not_a_number", "'high'"),
        "def reward(p, c, a):\n    return float('nan')\n": ("rewards.not_a_number", "nan"),
        "def reward(p, c a):\n    return 1\n": ("rewards.load", "SyntaxError"),
        "def score(p, c, a):\n    return 1\n": ("rewards.none_defined", None),
        "import sys\ndef reward(p, c, a):\n    sys.exit(3)\n": ("rewards.raised", "SystemExit: 3"),
        "import os\ndef reward(p, c, a):\n    os._exit(4)\n": ("rewards.died", None),
        "import sys\ndef reward(p, c, a):\n    sys.__stdout__.write('hi\\n'); sys.__stdout__.flush()\n": (
            "rewards.garbled", None),
        "def reward(p, c, a):\n    return len(bytearray(8 << 30))\n": ("rewards.raised", "MemoryError"),
    }
    for body, (key, detail) in cases.items():
        with pytest.raises(rewards.RewardError) as e:
            rewards.check_file(_file(tmp_path, body), [{"prompt": [{"role": "user", "content": Q}], "answer": "5"}])
        assert e.value.key == key, (body, e.value.key, e.value.params)
        if detail:
            assert detail in e.value.params["detail"], (body, e.value.params)
        assert str(tmp_path / "my_reward.py") in i18n.render(e.value.msg)
    hang = rewards.UserRewards(_file(tmp_path, "import time\ndef reward(p, c, a):\n    time.sleep(60)\n"),
                               timeout_s=1.0)
    with pytest.raises(rewards.RewardError) as e:
        hang.score(["p"], ["c"], [None])
    assert e.value.key == "rewards.timeout" and hang.proc.poll() is not None  # the hung process is gone
    with pytest.raises(rewards.RewardError) as e:
        rewards.UserRewards(tmp_path / "nowhere.py")
    assert e.value.key == "rewards.no_file"


def test_the_spec_refuses_what_grpo_cannot_run():
    ok = TrainingSpec(objective="grpo", micro_batch=4, grad_accum=2)  # 8 replies: one group of num_generations 8
    ok.check()
    assert ok.prompts_per_step == 1 and TrainingSpec(objective="grpo", micro_batch=16).prompts_per_step == 2
    for change, key in [({"micro_batch": 4, "grad_accum": 1}, "training.grpo_groups"),
                        ({"completion_length": 2048}, "training.grpo_completion"),
                        ({"rewards": ()}, "training.grpo_no_rewards"),
                        ({"rewards": ("accuracy", "vibes")}, "training.bad_choice"),
                        ({"rewards": ("file",)}, "training.reward_file_missing"),
                        ({"distribution": "zero3", "processes": 2}, "training.objective_unsupported"),
                        ({"packing": True}, "training.objective_unsupported")]:
        with pytest.raises(Refusal) as e:
            TrainingSpec(**{"objective": "grpo", "micro_batch": 8, **change}).check()
        assert e.value.key == key, (change, e.value.key)


def test_the_memory_model_prices_grpo_s_generation_and_its_reply_logits():
    shape = memory.shape_from_config(json.loads((REPO / "bench/configs/qwen2.5-7b/config.json").read_text()))
    base = dict(objective="grpo", micro_batch=8, seq_len=1024, completion_length=512)
    e = memory.estimate(shape, TrainingSpec(**base), 139.8)
    gen = e["phases"][memory.PHASE_GENERATE]["components"]
    kv = 8 * 1024 * memory.kv_bytes_per_token(shape) / memory.GIB  # the generation batch's KV cache
    assert gen["kv_cache"] == pytest.approx(kv, rel=1e-3) and "layers" not in gen
    assert "grpo" not in e["approximate"] and e["needed_margin"] == pytest.approx(0.10)  # as measured (LoRA, ckpt)
    for where in ({"activation_checkpointing": False}, {"grpo_beta": 0.04}, {"method": "qlora"},
                  {"method": "full", "grpo_beta": 0.04}):  # measured there too (2026-12-06)
        e2 = memory.estimate(shape, TrainingSpec(**base | where), 139.8)
        assert "grpo" not in e2["approximate"] and e2["needed_margin"] == pytest.approx(0.10), where
    for where in ({"method": "dora"}, {"method": "full", "activation_checkpointing": False},
                  {"method": "qlora", "activation_checkpointing": False}, {"processes": 2}):
        e2 = memory.estimate(shape, TrainingSpec(**base | where), 139.8)  # not measured there: said, wider margin
        assert "grpo" in e2["approximate"] and e2["needed_margin"] == pytest.approx(0.20), where
    # the training pass: trl's fused LM head over prompt + reply, as an SFT batch at dropout 0 with peft's input cast
    # kept (the replies are generated outside autocast)
    sft = memory.estimate(shape, TrainingSpec(**base | {"objective": "sft", "lora_dropout": 0.0,
                                                        "adapter_input_cast": True}), 139.8)
    assert e["phases"][memory.PHASE_BACKWARD]["components"] == pytest.approx(
        sft["phases"][memory.PHASE_BACKWARD]["components"])
    longer = memory.estimate(shape, TrainingSpec(**base | {"micro_batch": 1, "grad_accum": 64}), 139.8)
    assert longer["phases"][memory.PHASE_GENERATE]["components"]["kv_cache"] == pytest.approx(8 * kv, rel=1e-3)
    # a full fine-tune with a KL term holds trl's frozen reference copy; without one it does not
    full = lambda beta: memory.estimate(shape, TrainingSpec(**base | {"method": "full", "grpo_beta": beta}))  # noqa
    assert full(0.04)["components"]["reference"] == pytest.approx(2 * shape.n_params / memory.GIB, rel=1e-3)
    assert "reference" not in full(0.0)["components"]
    assert full(0.04)["components"]["weights"] == full(0.0)["components"]["weights"]


def test_estimate_prices_grpo_from_the_command_line():
    yichui = str(REPO / ".venv" / "bin" / "yichui")
    cfg = REPO / "bench" / "configs" / "qwen2.5-0.5b"
    r = subprocess.run([yichui, "estimate", str(cfg), "--objective", "grpo", "--gpu", "h200-141g", "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["config"]["micro_batch"] == 8 and got["config"]["lora_dropout"] == 0.0  # one group; no dropout
    assert memory.PHASE_GENERATE in got["phases"] and got["tokens_per_s"] is None  # speed: not predicted
    r = subprocess.run([yichui, "estimate", str(cfg), "--objective", "grpo", "--micro-batch", "3"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "groups of 8 per prompt" in r.stdout + r.stderr, r.stdout + r.stderr
    # a rule across options names the options that set it (the tryout: "raise the sequence length" — which flag?)
    assert "(options: --micro-batch, --grad-accum, --num-generations, --processes)" in r.stderr, r.stderr
    r = subprocess.run([yichui, "estimate", str(cfg), "--objective", "grpo", "--completion-length", "600",
                        "--seq-len", "512"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.strip().endswith("(options: --completion-length, --seq-len)"), r.stderr


def test_vllm_generation_is_grpo_s_only_refuses_qlora_and_is_priced_as_its_share_of_the_gpu():
    """GRPO's replies by vLLM colocated with the trainer (trl's colocate mode): only GRPO generates, QLoRA is refused
    (trl would load a 4-bit copy in vLLM: not measured); vLLM's share of the GPU is sized for the generation batch —
    its copy of the weights, its start-up profile and every reply's KV cache in whole 16-token blocks — and held
    beside every moment of the trainer's, in place of transformers' generation phase."""
    for change, key in [({"objective": "sft"}, "training.vllm_generation_grpo_only"),
                        ({"method": "qlora"}, "training.vllm_generation_qlora")]:
        with pytest.raises(Refusal) as e:
            TrainingSpec(**{"objective": "grpo", "micro_batch": 8, "generation": "vllm", **change}).check()
        assert e.value.key == key
    with pytest.raises(Refusal) as e:
        TrainingSpec(objective="grpo", micro_batch=8, generation="sglang").check()
    assert e.value.key == "training.bad_choice"

    shape = memory.shape_from_config(json.loads((REPO / "bench/configs/qwen2.5-7b/config.json").read_text()))
    t = TrainingSpec(objective="grpo", micro_batch=8, grad_accum=2, seq_len=1000, completion_length=512,
                     generation="vllm")
    v = memory.vllm_generation(shape, t, 139.8)
    total = 139.8 * (1 - memory.CUDA_RESERVED_FRACTION)
    kv_needed = 16 * 1008 * memory.kv_bytes_per_token(shape) / memory.GIB  # 1000 tokens fill 63 blocks of 16
    assert v["weights_gib"] == pytest.approx(2 * shape.n_params / memory.GIB, rel=1e-6)  # its own bf16 copy
    assert v["kv_gib"] >= kv_needed and v["pool_gib"] == pytest.approx(v["utilization"] * total, rel=1e-3)
    # rounded up to the next hundredth, plus one: never more than 2 % of the GPU beyond what it needs
    assert v["pool_gib"] - (v["weights_gib"] + v["overhead_gib"] + kv_needed) <= 0.02 * total
    e = memory.estimate(shape, t, 139.8)
    assert memory.PHASE_GENERATE not in e["phases"]  # vLLM generates: no transformers KV cache in the trainer
    for phase in e["phases"].values():
        assert phase["components"]["vllm"] == pytest.approx(v["held_gib"], rel=1e-3)  # the profile pass freed
    plain = memory.estimate(shape, replace(t, generation="transformers"), 139.8)
    assert e["phases"][memory.PHASE_BACKWARD]["peak_gib"] > plain["phases"][memory.PHASE_BACKWARD]["peak_gib"] \
        + v["held_gib"]  # its allocator slack grows with it too
    # measured under LoRA with checkpointing (2026-12-06); DoRA's not
    assert not {"grpo", "vllm-generation"} & set(e["approximate"]) and e["vllm"] == v
    dora = memory.estimate(shape, replace(t, method="dora"), 139.8)
    assert {"grpo", "vllm-generation"} <= set(dora["approximate"])
    given = memory.estimate(shape, replace(t, vllm_memory_utilization=0.3), 139.8)
    assert given["components"]["vllm"] == pytest.approx(0.3 * total - v["profile_gib"], rel=1e-3)
    with pytest.raises(Refusal) as err:  # a share too small for one sequence after its weights
        memory.estimate(shape, replace(t, vllm_memory_utilization=0.05), 139.8)
    assert err.value.key == "memory.vllm_share_too_small" and err.value.params["need"] > 0.05
    with pytest.raises(Refusal) as err:  # a share of which GPU?
        memory.estimate(shape, t)
    assert err.value.key == "memory.vllm_needs_gpu"


def test_the_trainer_asks_trl_for_colocated_vllm_with_the_planned_share(tmp_path):
    """The trainer's GRPOConfig for vLLM generation: trl's colocate mode with the recorded share and the sequence
    length as vLLM's longest sequence; refused in one line on a machine without a CUDA GPU, and without a share."""
    from recipes.training import worker
    from recipes.training.spec import TrainerJob

    job = TrainerJob(objective="grpo", micro_batch=8, seq_len=1024, completion_length=512, generation="vllm",
                     vllm_memory_utilization=0.21)
    assert worker.vllm_args(job, "cuda") == {"use_vllm": True, "vllm_mode": "colocate",
                                             "vllm_gpu_memory_utilization": 0.21, "vllm_max_model_length": 1024,
                                             "generation_kwargs": {"detokenize": False}}
    assert worker.vllm_args(replace(job, generation="transformers"), "cuda") == {}
    with pytest.raises(RuntimeError, match="CUDA GPU only"):
        worker.vllm_args(job, "cpu")
    with pytest.raises(RuntimeError, match="sizes vLLM's share"):
        worker.vllm_args(replace(job, vllm_memory_utilization=0.0), "cuda")
    config = worker.trainer_config(replace(job, generation="transformers"), tmp_path, "cpu", False, False)
    assert config.use_vllm is False  # transformers' generate: trl's default


def test_vllm_generation_without_its_environment_says_the_command_that_installs_it(tmp_path, monkeypatch):
    """vLLM pins its own torch and libraries: the trainer runs in vLLM's training environment, and where that is
    not installed the train step and the smoke run say so with the command that installs it."""
    from recipes.base import StepError
    from recipes.training import backends, runner
    from recipes.training.spec import TrainerJob

    monkeypatch.setenv("YICHUI_ENVS", str(tmp_path / "envs"))
    job = TrainerJob(objective="grpo", micro_batch=8, generation="vllm", vllm_memory_utilization=0.2)
    with pytest.raises(StepError) as e:
        runner.with_backend(job, tmp_path)
    assert e.value.key == "training.no_vllm_generation"
    command = e.value.params["command"]
    assert str(backends.vllm_generation_env(tmp_path)) in command and "vllm==0.26.0" in command \
        and "trl==1.16.0" in command
    text = i18n.render(e.value.msg)
    assert command in text and "resume" in text
    assert runner.with_backend(replace(job, generation="transformers"), tmp_path).interpreter == ""


def test_estimate_prices_vllm_generation_from_the_command_line():
    yichui = str(REPO / ".venv" / "bin" / "yichui")
    cfg = str(REPO / "bench" / "configs" / "qwen2.5-0.5b")
    r = subprocess.run([yichui, "estimate", cfg, "--objective", "grpo", "--generation", "vllm", "--gpu", "h200-141g",
                        "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["vllm"]["utilization"] > 0 and got["components"]["vllm"] == got["vllm"]["held_gib"]
    r = subprocess.run([yichui, "estimate", cfg, "--objective", "grpo", "--generation", "vllm", "--gpu", "h200-141g"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and f"vLLM takes {got['vllm']['utilization']} of the NVIDIA H200's memory" in r.stdout
    r = subprocess.run([yichui, "estimate", cfg, "--generation", "vllm", "--gpu", "h200-141g"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "vLLM generates replies for GRPO only" in r.stderr \
        and "(options: --generation, --objective)" in r.stderr, r.stderr


@pytest.mark.slow
def test_grpo_raises_the_reward_in_yichui_s_trainer_resumes_and_names_a_failing_reward(tiny_model, tmp_path):
    """trl's GRPOTrainer in yichui's trainer process (LoRA, β 0: no reference held): the demo's digits reward —
    the user's-file path, in its own process — rises from the babbling base's ~0; stopped after a checkpoint it
    resumes from it; a reward file that raises ends the run with the trainer's error event naming it."""
    from recipes.rundir import TrainDir

    job = {"objective": "grpo", "method": "lora", "lora_rank": 16, "lora_alpha": 32, "model_dir": str(tiny_model),
           "dataset_path": str(prompts.bundled_prompts_path()), "device": "cpu", "seq_len": 256, "micro_batch": 8,
           "num_generations": 4, "completion_length": 24, "rewards": ["accuracy", "file"],
           "reward_file": str(prompts.BUNDLED.with_name("demo_reward.py")), "learning_rate": 3e-3,
           "lr_scheduler": "constant", "save_steps": 10, "val_ratio": 0.1, "sample_question": None}
    run = TrainDir(tmp_path / "train")
    run.root.mkdir()
    train_in_worker(run, job | {"max_steps": 10})
    events = train_in_worker(run, job | {"max_steps": 30})
    assert [e for e in events if e["event"] == "start"][-1]["resumed_from"] == "checkpoint-10"
    steps = [e for e in events if e["event"] == "step"]
    assert {"reward", "reward_std", "reward_accuracy", "reward_digits", "completion_length", "clipped"} <= set(steps[-1])
    result = json.loads(run.result.read_text())
    first, last = result["rewards"][:5], result["rewards"][-5:]
    assert len(result["rewards"]) == 30 and sum(last) / 5 > sum(first) / 5 + 0.3, result["rewards"]
    bad = _file(tmp_path, "def reward(p, c, a):\n    raise ValueError('no score for ' + c[:5])\n")
    run2 = TrainDir(tmp_path / "train2")
    run2.root.mkdir()
    from recipes.training.spec import TrainerJob

    TrainerJob.from_dict(job | {"max_steps": 2, "rewards": ["file"], "reward_file": str(bad)}).write(run2.spec)
    p = subprocess.run([sys.executable, "-m", "recipes.training.worker", str(run2.spec)], capture_output=True,
                       text=True, timeout=600, env=os.environ | {"PYTHONPATH": str(REPO)})
    assert p.returncode == 1
    err = [json.loads(x) for x in run2.events.read_text().splitlines() if '"error"' in x][-1]
    assert err["kind"] == "refusal" and err["key"] == "rewards.raised" and "ValueError" in err["params"]["detail"]


def test_grpo_s_memory_holds_on_the_gpu_rows():
    """The committed GPU rows (bench/results/2026-12-05-grpo-gpu/ on an H100, …-2026-12-06-grpo-vllm-h200/ on an
    H200; measured with the prompt length each row's tokenizer gives): the memory model as committed within 3 % of
    every device peak with transformers' replies, and with vLLM's never under and at most 4 % over (it prices the
    share vLLM is given, of which vLLM fills a little less), or this fails."""
    rows = [json.loads(x) for d in ("2026-12-05-grpo-gpu", "2026-12-06-grpo-vllm-h200")
            for p in sorted((REPO / "bench/results" / d).glob("call*-grpo.jsonl")) for x in p.read_text().splitlines()]
    measured = [r for r in rows if r.get("kind") == "memory" and r.get("gpu_memory")]
    assert len(measured) >= 14 and sum(r["spec"].get("generation") == "vllm" for r in measured) >= 3
    for r in measured:
        shape = memory.shape_from_config(json.loads((REPO / "bench/configs" / r["shape"] / "config.json").read_text()))
        prompt = r["longest_prompt_tokens"] if r["longest_prompt_tokens"] > 8 else 65  # grpo_gpu.cmd_table
        t = TrainingSpec.from_dict(r["spec"] | {"seq_len": prompt + r["spec"]["completion_length"]})
        # the GPU's size sizes vLLM's share only: its rows ran on the H200 (139.8 GiB as CUDA reports it)
        got, want = memory.estimate(shape, t, 139.8)["peak_gib"], r["gpu_memory"]["device_peak_gib"]
        if t.generation == "vllm":
            assert 0 <= (got - want) / want <= 0.04, (r["id"], got, want)
        else:
            assert abs(got - want) / want <= 0.03, (r["id"], got, want)
