"""Preference data (issue 47): the forms users have, each record checked and named by line with its reason; the
trainer's DPO on the tiny model through yichui's own trainer process."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from recipes.data import datasets, preference
from wizard import i18n

Q, A, B = "What is LoRA?", "A low-rank adapter.", "A kind of radio."


def write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_every_form_reads_as_trl_s_conversational_records(tmp_path):
    pair = {"prompt": [{"role": "user", "content": Q}], "chosen": [{"role": "assistant", "content": A}],
            "rejected": [{"role": "assistant", "content": B}]}
    system = [{"role": "system", "content": "Be brief."}]
    forms = {
        "text": {"prompt": Q, "chosen": A, "rejected": B},
        "messages": pair,
        "implicit": {"chosen": [{"role": "user", "content": Q}, {"role": "assistant", "content": A}],
                     "rejected": [{"role": "user", "content": Q}, {"role": "assistant", "content": B}]},
    }
    for name, row in forms.items():
        got = preference.read(write(tmp_path / f"{name}.jsonl", [row]))
        assert got.format == preference.PAIRED and got.records == [pair] and not got.bad, name
    sys_row = {"chosen": system + forms["implicit"]["chosen"], "rejected": system + forms["implicit"]["rejected"]}
    got = preference.read(write(tmp_path / "sys.jsonl", [sys_row])).records[0]
    assert got["prompt"] == system + pair["prompt"] and got["chosen"] == pair["chosen"]
    kto = preference.read(write(tmp_path / "kto.jsonl", [{"prompt": Q, "completion": A, "label": True}]))
    assert kto.format == preference.UNPAIRED and kto.records == [
        {"prompt": pair["prompt"], "completion": pair["chosen"], "label": True}]


def test_malformed_pairs_are_named_by_line_with_the_reason(tmp_path):
    rows = [{"prompt": Q, "chosen": A, "rejected": B},
            {"prompt": Q, "chosen": A, "rejected": A},
            {"prompt": Q, "chosen": A},                                   # no rejected: another form (or none)
            {"prompt": "", "chosen": A, "rejected": B},
            {"prompt": [{"role": "assistant", "content": Q}], "chosen": A, "rejected": B},
            {"chosen": [{"role": "user", "content": Q}, {"role": "assistant", "content": A}],
             "rejected": [{"role": "user", "content": "Other?"}, {"role": "assistant", "content": B}]},
            {"prompt": Q, "chosen": 5, "rejected": B},
            "{broken"]
    got = preference.read(write(tmp_path / "p.jsonl", rows))
    assert len(got.records) == 1 and got.total == 8
    assert [i18n.render(m) for m in got.bad] == [
        "p.jsonl:2 (chosen and rejected are the same)",
        "p.jsonl:3 ('rejected' is empty or missing)",
        "p.jsonl:4 ('prompt' is empty or missing)",
        "p.jsonl:5 ('prompt' ends with the assistant's turn, not the user's)",
        "p.jsonl:6 (chosen and rejected share no prompt ending with the user's turn)",
        "p.jsonl:7 ('chosen' is not text)",
        "p.jsonl:8 (not JSON)"]
    with pytest.raises(datasets.DataError) as e:
        preference.load(tmp_path / "p.jsonl")
    assert e.value.key == "data.bad_records" and e.value.params["count"] == 7
    assert len(preference.load(tmp_path / "p.jsonl", skip_bad=True).records) == 1
    with pytest.raises(datasets.DataError) as e:  # a supervised file given as preference data: said so
        preference.read(write(tmp_path / "sft.jsonl", [{"instruction": Q, "output": A}]))
    assert e.value.key == "data.not_preference"
    kto = preference.read(write(tmp_path / "k.jsonl", [{"prompt": Q, "completion": A, "label": "yes"},
                                                        {"prompt": Q, "completion": B, "label": "False"},  # as CSV
                                                        {"prompt": Q, "label": True},
                                                        {"prompt": Q, "completion": A}]))
    assert [i18n.render(m) for m in kto.bad] == ["k.jsonl:1 ('label' is \"yes\", not true or false)",
                                                 "k.jsonl:3 ('completion' is empty or missing)",
                                                 "k.jsonl:4 ('label' is empty or missing)"]
    assert kto.records[0]["label"] is False
    # bad input, round four: these crashed the reader or were misnamed
    odd = [{"prompt": [{"role": ["user"], "content": Q}], "chosen": A, "rejected": B},   # a role that is a list
           {"prompt": "\ud800", "chosen": A, "rejected": B},                              # a lone surrogate
           "[" * 100_000,                                                                 # too deep for the parser
           '{"prompt": ' + "9" * 5000 + ', "chosen": "a", "rejected": "b"}',               # 5,000 digits
           json.dumps({"prompt": "Line\u2028sep", "chosen": A, "rejected": B}, ensure_ascii=False)]  # raw U+2028
    got = preference.read(write(tmp_path / "odd.jsonl", [{"prompt": Q, "chosen": A, "rejected": B}, *odd]))
    assert [i18n.render(m) for m in got.bad] == [
        "odd.jsonl:2 (role \"['user']\" is not one of system, user, assistant)",
        "odd.jsonl:3 ('prompt' holds text that is not valid Unicode (a lone surrogate such as \\ud800))",
        "odd.jsonl:4 (not JSON)", "odd.jsonl:5 (not JSON)"]
    assert len(got.records) == 2 and got.records[1]["prompt"][0]["content"] == "Line\u2028sep"


def test_the_demo_s_pairs_prefer_the_answer_to_what_was_asked():
    convs = datasets.load_records(datasets.bundled_dataset_path())[:40]
    pairs = preference.from_conversations(convs)
    assert len(pairs) >= 38
    for p in pairs:
        conv = next(c for c in convs if c[:-1] == p["prompt"])
        chosen, rejected = p["chosen"][0]["content"], p["rejected"][0]["content"]
        assert p["chosen"] == [conv[-1]] and rejected != chosen and sorted(rejected.split()) == sorted(chosen.split())
    assert pairs == preference.from_conversations(convs)  # seeded


def train_in_worker(run, job: dict, rc: int = 0, **env: str) -> list[dict]:
    """``job`` (TrainerJob fields) trained by yichui's own trainer process in ``run`` (a TrainDir), with ``env`` added
    to its environment, exiting with ``rc``; its events."""
    import os
    import subprocess

    from recipes import jobs
    from recipes.training.spec import TrainerJob

    TrainerJob.from_dict(job).write(run.spec)
    p = subprocess.run([sys.executable, "-m", "recipes.training.worker", str(run.spec)], capture_output=True,
                       text=True, timeout=900, env=os.environ | env)
    assert p.returncode == rc, p.stderr[-3000:]
    return jobs.read_events(run.events)[0]


def tiny_lora_job(objective: str, model, data, steps: int) -> dict:
    """The tiny model's LoRA job of the preference trainer tests: a checkpoint every 10 steps, a quarter held out."""
    return {"objective": objective, "method": "lora", "lora_rank": 8, "model_dir": str(model),
            "dataset_path": str(data), "device": "cpu", "seq_len": 256, "micro_batch": 4, "max_steps": steps,
            "learning_rate": 1e-3, "lr_scheduler": "constant", "save_steps": 10, "val_ratio": 0.25,
            "sample_question": None}


@pytest.mark.slow
def test_dpo_trains_in_yichui_s_trainer_resumes_and_prefers_the_chosen_on_held_out_pairs(tiny_model, tmp_path):
    """DPO through yichui's own trainer process (recipes/training/worker.py, trl's DPOTrainer, LoRA: the reference is
    the base with the adapter off): the held-out pairs' implicit reward prefers the chosen reply (accuracy and
    margin, 0 at the start by construction); out of memory at step 12 (the CUDA error injected: CI has no GPU), it
    exits as the train step expects (status 3, an "oom" error event) and, with the train step's recovery applied
    (half the micro-batch, twice the accumulation, checkpointing on), resumes from checkpoint-10; the adapter is
    saved."""
    from recipes.rundir import TrainDir
    from recipes.training.runner import recover
    from recipes.training.spec import TrainingSpec

    pairs = preference.from_conversations(datasets.load_records(datasets.bundled_dataset_path())[:64])
    data = write(tmp_path / "pairs.jsonl", pairs)
    run = TrainDir(tmp_path / "train")
    run.root.mkdir()
    job = tiny_lora_job("dpo", tiny_model, data, 20)
    first = train_in_worker(run, job, rc=3, YICHUI_INJECT_OOM="12:2")
    assert [(e["kind"], e["step"]) for e in first if e["event"] == "error"] == [("oom", 12)], first[-3:]
    change = recover(TrainingSpec(objective="dpo", micro_batch=4, grad_accum=1, activation_checkpointing=False))
    assert change["to"] == {"micro_batch": 2, "grad_accum": 2, "activation_checkpointing": True}, change
    events = train_in_worker(run, job | change["to"])
    starts = [e for e in events if e["event"] == "start"]
    assert starts[-1]["resumed_from"] == "checkpoint-10", starts
    steps = [e for e in events if e["event"] == "step"]
    assert {"reward_accuracies", "reward_margins"} <= set(steps[-1]), steps[-1]
    evals = [e for e in events if e["event"] == "eval"]
    assert [e["step"] for e in evals] == [10, 20]
    assert evals[-1]["reward_accuracies"] >= 0.9 and evals[-1]["reward_margins"] > 1.0, evals  # 16 held-out pairs
    assert evals[-1]["eval_loss"] < 0.3  # DPO's loss is log 2 = 0.693 at the start (policy = reference)
    assert (run.adapter / "adapter_config.json").is_file()
    # each model's own preference on the held-out pairs (recipes/evaluation/preference.py), base vs fine-tuned: the
    # base already prefers the fluent reply (it was pre-trained on these answers); DPO widens the margin
    from recipes.evaluation import preference as scores

    held = datasets.train_validation(pairs, 0.25)[1]
    got = scores.base_and_tuned(tiny_model, run.adapter, held)
    assert got["base"].pairs == got["finetuned"].pairs == 16
    assert got["finetuned"].accuracy >= got["base"].accuracy and got["finetuned"].margin > got["base"].margin + 5, got


@pytest.mark.slow  # it trains twice (≈ 30 s): the full suite runs it, the quick loop does not
def test_kto_trains_on_unequal_labelled_replies_weights_the_rarer_side_and_moves_each_the_right_way(tiny_model,
                                                                                                       tmp_path):
    """KTO through yichui's trainer (trl's KTOTrainer, LoRA: the reference is the base with the adapter off) on
    unpaired replies, twice as many desirable as undesirable: the undesirable side is weighted 2 (KTO's eq. 8, in the
    checkpoint's KTOConfig); stopped after a checkpoint, it resumes; on held-out replies the fine-tune raises the
    desirable replies' log-probability over the base's far more than the undesirable ones'."""
    import random

    import torch

    from recipes.evaluation import preference as scores
    from recipes.rundir import TrainDir

    pairs = preference.from_conversations(datasets.load_records(datasets.bundled_dataset_path())[:64])
    rows = [{"prompt": p["prompt"], "completion": p["chosen"], "label": True} for p in pairs] + \
        [{"prompt": p["prompt"], "completion": p["rejected"], "label": False} for p in pairs[::2]]
    random.Random(0).shuffle(rows)  # the two kinds mixed
    data = write(tmp_path / "kto.jsonl", rows)
    read = preference.load(data)
    assert read.format == preference.UNPAIRED and len(read.records) == 96
    train_recs, held = datasets.train_validation(read.records, 0.25)
    want = preference.kto_weights(train_recs)
    assert want[0] == 1.0 and 1.6 < want[1] < 2.5, want  # ~2 desirable per undesirable in the training split
    run = TrainDir(tmp_path / "train")
    run.root.mkdir()

    train_in_worker(run, tiny_lora_job("kto", tiny_model, data, 10))
    args = torch.load(run.checkpoints / "checkpoint-10" / "training_args.bin", weights_only=False)
    assert type(args).__name__ == "KTOConfig" and (args.desirable_weight, args.undesirable_weight) == want
    events = train_in_worker(run, tiny_lora_job("kto", tiny_model, data, 20))
    assert [e for e in events if e["event"] == "start"][-1]["resumed_from"] == "checkpoint-10"
    steps = [e for e in events if e["event"] == "step"]
    # trl logs KTO's margin for a micro-batch holding both kinds of reply, its KL estimate for every one
    assert all("kl" in e and "reward_accuracies" not in e for e in steps) and any("reward_margins" in e for e in steps)
    assert [e["step"] for e in events if e["event"] == "eval"] == [10, 20]
    assert (run.adapter / "adapter_config.json").is_file()
    # each held-out reply's log-probability, fine-tuned minus base (KTO's implicit reward / β)
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(run.adapter)
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32),
                                      str(run.adapter)).eval()
    tuned = [scores.reply_logprob(model, tok, r["prompt"], r["completion"]) for r in held]
    with model.disable_adapter():
        base = [scores.reply_logprob(model, tok, r["prompt"], r["completion"]) for r in held]
    moved = {side: [t - b for t, b, r in zip(tuned, base, held) if r["label"] == side] for side in (True, False)}
    assert moved[True] and moved[False], held
    mean = {k: sum(v) / len(v) for k, v in moved.items()}
    # seen: desirable +24 nats, undesirable +1.0 (the shuffled replies share every word with the desirable ones)
    assert mean[True] > 5 and mean[True] - mean[False] > 10, mean
    # the evaluate step's score of unpaired replies (no two replies of one prompt): desirable ranked over
    # undesirable by log p per token — the fine-tune ranks them better than the base, by a wider margin
    def ranked():
        return scores.unpaired_score([(scores.reply_logprob(model, tok, r["prompt"], r["completion"], per_token=True),
                                       r["label"]) for r in held])
    tuned_rank = ranked()
    with model.disable_adapter():
        base_rank = ranked()
    assert tuned_rank.kind == "unpaired" and tuned_rank.pairs == len(held)
    assert tuned_rank.accuracy > base_rank.accuracy and tuned_rank.margin > base_rank.margin, (base_rank, tuned_rank)
    with pytest.raises(ValueError):
        scores.unpaired_score([(0.1, True), (0.2, True)])  # one kind only: nothing to rank


def test_dpo_is_priced_with_twice_the_sequences_and_refused_where_it_does_not_run_yet():
    """`yichui estimate --objective dpo` (TrainingSpec.objective): chosen and rejected in one batch (twice the
    activations) without dropout (trl's disable_dropout), a full fine-tune's reference copy; the speed of the policy's
    step on that batch plus the reference's forward; the combinations not built or tested with it yet refused in one
    line."""
    from dataclasses import replace

    from recipes.base import Refusal
    from recipes.memory import model as memory
    from recipes.memory import planner
    from recipes.training.spec import TrainingSpec

    shape = memory.shape_from_config(json.loads(
        (__import__("pathlib").Path(__file__).parent.parent / "bench" / "configs" / "qwen2.5-0.5b" / "config.json")
        .read_text()))
    sft, dpo = TrainingSpec(micro_batch=2), TrainingSpec(micro_batch=2, objective="dpo")
    e_sft, e_dpo, e_sft4 = (memory.estimate(shape, t) for t in
                            (sft, dpo, replace(sft, micro_batch=4, lora_dropout=0.0)))
    assert e_dpo["components"] == e_sft4["components"] and not e_dpo["approximate"]  # LoRA: no 2nd copy
    assert e_dpo["peak_gib"] < memory.estimate(shape, replace(sft, micro_batch=4))["peak_gib"]  # no dropout kept
    assert planner.speed_modelled(dpo, shape)
    # trl counts both answers' tokens: 4 sequences a step; the reference's forward: one pass more than LoRA's
    # forward + backward + recompute
    sft4 = replace(sft, micro_batch=4, lora_dropout=0.0)
    assert planner.tokens_per_s(shape, dpo, planner.FIT_GPU) == pytest.approx(
        planner.tokens_per_s(shape, sft4, planner.FIT_GPU) * 3 / 4)
    # KTO's no-grad forwards priced term by term: the reference's (the base, its adapter off) costs less than the
    # policy's own, and less than a third of the supervised step's forward + backward + recompute
    ref = sum(planner.SECONDS_PER.get(k, 0.0) * v for k, v in planner.forward_terms(shape, sft4, False).items())
    adapter = sum(planner.SECONDS_PER.get(k, 0.0) * v for k, v in planner.forward_terms(shape, sft4, True).items())
    assert 0 < ref < adapter < planner.step_seconds(shape, sft4) / 3
    full = memory.estimate(shape, replace(dpo, method="full"))["phases"]
    full_sft = memory.estimate(shape, replace(sft, method="full", micro_batch=4))["phases"]
    for k in full:  # a full fine-tune's reference: a bf16 copy of the weights, its own row
        assert full[k]["components"]["reference"] == pytest.approx(shape.n_params * 2 / 2**30, abs=1e-3)
        if k != memory.PHASE_REFERENCE:
            assert full[k]["components"]["weights"] == full_sft[k]["components"]["weights"]
    # the reference's no-grad forward is its own moment: the policy's checkpointed layer inputs wait beside one
    # layer's MLP working set (trl runs it after the policy's forward; 2026-12-06-memory-refit.md)
    assert set(full) == set(full_sft) | {memory.PHASE_REFERENCE}
    ref = memory.estimate(shape, dpo)["phases"][memory.PHASE_REFERENCE]["components"]
    tokens = 2 * dpo.micro_batch * dpo.seq_len
    assert ref["reference_forward"] == pytest.approx(memory.REF_I * tokens * shape.intermediate / 2**30, abs=1e-3)
    assert ref["layers"] == pytest.approx(memory.CKPT_H * tokens * shape.layers * shape.hidden / 2**30, abs=1e-3)
    for bad, what in ((dict(method="galore"), "GaLore"), (dict(packing=True), "packing"),
                      (dict(compile_layers=True), "compiled layers"), (dict(training_backend="unsloth"), "unsloth")):
        with pytest.raises(Refusal) as e:
            replace(dpo, **bad).check()
        assert e.value.key == "training.objective_unsupported" and what in i18n.render(e.value.params["what"])
    with pytest.raises(Refusal) as e:  # said in the user's language, the setting too (it was English in Chinese)
        replace(dpo, packing=True).check()
    i18n.set_lang("zh")
    try:
        assert i18n.render(e.value.msg) == "DPO 暂不支持与 序列打包（packing） 同时使用：请去掉 序列打包（packing），或用 SFT 训练。"
    finally:
        i18n.set_lang("en")
    with pytest.raises(Refusal) as e:
        replace(dpo, objective="orpo").check()  # not an objective yichui has: said by the choices
    assert e.value.key == "training.bad_choice"
    # KTO: its micro-batch of at least 2 (trl's KL term); a KTO micro-batch keeps what SFT's keeps at dropout 0 (the
    # KL and reference forwards are no-grad); a full fine-tune adds the bf16 reference copy
    with pytest.raises(Refusal) as e:
        replace(dpo, objective="kto", micro_batch=1).check()
    assert e.value.key == "training.kto_micro_batch"
    kto = replace(dpo, objective="kto")
    e_kto = memory.estimate(shape, kto)
    assert e_kto["components"] == memory.estimate(shape, replace(sft, lora_dropout=0.0))["components"]
    assert not e_kto["approximate"] and planner.speed_modelled(kto, shape)
    kto2 = replace(sft, lora_dropout=0.0)  # the policy's step of its micro-batch, and three no-grad forwards
    nograd = [sum(planner.SECONDS_PER.get(k, 0.0) * v for k, v in planner.forward_terms(shape, kto2, p).items())
              for p in (True, False, False)]
    assert planner.step_seconds(shape, kto) == pytest.approx(planner.step_seconds(shape, kto2) + sum(nograd))
    full_kto = memory.estimate(shape, replace(kto, method="full"))["phases"]
    full_sft2 = memory.estimate(shape, replace(sft, method="full"))["phases"]
    for k in full_kto:  # KTO's reference too: its own row, beside the same weights
        assert full_kto[k]["components"]["reference"] == pytest.approx(shape.n_params * 2 / 2**30, abs=1e-3)
        if k != memory.PHASE_REFERENCE:
            assert full_kto[k]["components"]["weights"] == full_sft2[k]["components"]["weights"]
    assert all(p.micro_batch >= 2 for p in planner.plans(shape, kto, 8, "H200", 141.0)), "KTO plans start at 2"


def test_a_sample_of_no_records_is_said_as_the_supervised_reader_says_it(tmp_path):
    path = write(tmp_path / "p.jsonl", [{"prompt": Q, "chosen": A, "rejected": B}])
    for ref in (f"{path}#0", f"{path}#-1", f"{path}#abc"):
        with pytest.raises(datasets.DataError) as e:
            preference.read(ref)
        assert e.value.key == "data.bad_sample", ref
    assert len(preference.read(f"{path}#5").records) == 1


def test_the_committed_h200_dpo_rows_hold_the_memory_and_speed_models():
    """bench/results/2026-12-05-preference-h200: yichui's DPO on three shapes (LoRA, QLoRA, full). The memory model
    within the figures the result file states; a row that grows past them fails here."""
    import statistics

    from recipes.memory import model as memory
    from recipes.memory import planner

    root = Path(__file__).resolve().parent.parent / "bench"
    sys.path.insert(0, str(root))
    import fit_speed

    rows = [json.loads(x) for x in (root / "results" / "2026-12-05-preference-h200" / "dpo.jsonl").read_text()
            .splitlines()]
    assert len(rows) == 16 and {r["shape"] for r in rows} == {"qwen2.5-0.5b", "qwen2.5-3b", "llama3.1-8b"}
    mem = [memory.estimate(fit_speed.shape(r["shape"]), fit_speed.spec(r))["peak_gib"] / r["device_peak_gib"] - 1
           for r in rows]
    speed = [fit_speed.predict(r, planner.SECONDS_PER) / r["tokens_per_s"] - 1 for r in rows]
    # since the 2026-12-06 refit (bench/results/2026-12-06-memory-refit.md): −5.0 … +0.3 %; the −5.0 % is the 0.5B
    # 1 × 2,048 row, whose allocated peak the model holds within 1 % — the allocator kept 0.30 GiB beyond it, the
    # model's slack 0.16
    assert statistics.mean(abs(e) for e in mem) <= 0.03 and -0.055 <= min(mem) and max(mem) <= 0.06, mem
    # the reference's forward as one more pass (planner.dpo_reference_factor, derived): 9.2 %, 31.2 %
    assert statistics.median(abs(e) for e in speed) <= 0.10 and max(abs(e) for e in speed) <= 0.32, speed


def test_yichui_estimate_says_it_prices_dpo_and_counts_pairs(tmp_path):
    """Two estimates side by side must say which is DPO; its tokens/s counts both answers, so it says pairs/s."""
    import os
    import subprocess

    config = Path(__file__).resolve().parent.parent / "bench" / "configs" / "qwen2.5-3b"
    yichui = str(Path(sys.executable).parent / "yichui")

    def estimate(a: tuple):
        return subprocess.run([yichui, "estimate", str(config), "--gpu", "h200-141g", *a], capture_output=True,
                              text=True, cwd=tmp_path, env=dict(os.environ, YICHUI_HOME=str(tmp_path / "home"),
                                                                COLUMNS="200"))
    asked = [(), ("--objective", "dpo"), ("--objective", "dpo", "--loss", "full"),
             ("--objective", "dpo", "--loss", "chunked"), ("--objective", "dpo", "--lora-dropout", "0.1"),
             ("--objective", "kto", "--micro-batch", "1"), ("--objective", "kto", "--json"),
             ("--objective", "kto", "--micro-batch", "2", "--lora-dropout", "0.1", "--json"),
             ("--objective", "kto", "--micro-batch", "2", "--json"), ("--micro-batch", "2", "--lora-dropout", "0", "--json"),
             ("--objective", "kto", "--micro-batch", "2"),
             ("--objective", "dpo", "--method", "full", "--gpu", "Tesla T4", "--gpu-memory-utilization", "0.3")]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as pool:  # each command is its own process: side by side, not one after another
        answers = dict(zip(asked, pool.map(estimate, asked)))

    def run(*a):
        return answers[a]
    sft, dpo = run(), run("--objective", "dpo")
    assert sft.returncode == 0 and dpo.returncode == 0, dpo.stderr
    head = dpo.stdout.splitlines()[0]
    assert "DPO" in head and "DPO" not in sft.stdout.splitlines()[0]
    pairs = float(dpo.stdout.split("~")[2].split(" pairs/s")[0])  # "~6,435 tokens/s …(~1.57 pairs/s"
    tps = float(dpo.stdout.split("~")[1].split(" tokens/s")[0].replace(",", ""))
    assert pairs == pytest.approx(tps / (2 * 2048), abs=0.01)
    # the plain loop's estimate is an SFT trainer's: refused with DPO in one line, in the user's language
    for loss, what in (("full", "the plain loop's loss (--loss full)"), ("chunked", "a chunked SFT loss head")):
        bad = run("--objective", "dpo", "--loss", loss)
        assert bad.returncode == 2 and f"DPO does not run with {what}" in bad.stderr \
            and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    # trl turns dropout off under DPO: a dropout the user gives is named as unused, not silently dropped
    drop = run("--objective", "dpo", "--lora-dropout", "0.1")
    assert drop.returncode == 0 and "--lora-dropout 0.1 is not used" in drop.stdout, drop.stdout
    assert drop.stdout.split("~")[1] == dpo.stdout.split("~")[1]  # priced as without it
    assert "is not used" not in dpo.stdout
    # a plan that does not fit shows no speed, and a server that cannot hold its weights says so; --gpu takes the
    # driver's name of a GPU in the table (trial W)
    nofit = run("--objective", "dpo", "--method", "full", "--gpu", "Tesla T4", "--gpu-memory-utilization", "0.3")
    assert nofit.returncode == 0 and "Does NOT fit on NVIDIA T4" in nofit.stdout, nofit.stderr
    assert "tokens/s" not in nofit.stdout and "No speed shown: the plan does not fit" in nofit.stdout
    assert "Serving (bf16) at 0.3 of 15.0 GiB does NOT fit" in nofit.stdout and "KV cache for" not in nofit.stdout
    # KTO: its micro-batch of at least 2 (trl's KL term), its speed predicted per reply
    one = run("--objective", "kto", "--micro-batch", "1")
    assert one.returncode == 2 and "KTO needs a micro-batch of at least 2" in one.stderr, one.stderr
    least = run("--objective", "kto", "--json")  # not given: KTO's least, 2 (the wizard's plans start there too)
    assert least.returncode == 0 and json.loads(least.stdout)["config"]["micro_batch"] == 2, least.stderr
    dropped = json.loads(run("--objective", "kto", "--micro-batch", "2", "--lora-dropout", "0.1", "--json").stdout)
    assert dropped["config"]["lora_dropout"] == 0.0  # what is priced: trl turns dropout off
    kto = run("--objective", "kto", "--micro-batch", "2", "--json")
    assert kto.returncode == 0, kto.stderr
    got = json.loads(kto.stdout)
    # measured on the H200; its speed the supervised step of the micro-batch and three no-grad forwards
    assert got["records_per_s"] == pytest.approx(got["tokens_per_s"] / 2048, abs=1e-3)  # replies/s: one sequence
    assert "kto" not in got["approximate"] and got["tokens_per_s"] < json.loads(
        run("--micro-batch", "2", "--lora-dropout", "0", "--json").stdout)["tokens_per_s"]
    sft2 = json.loads(run("--micro-batch", "2", "--lora-dropout", "0", "--json").stdout)
    assert got["components"] == sft2["components"]  # the KL and reference forwards: no-grad, nothing kept
    said = run("--objective", "kto", "--micro-batch", "2")
    assert "KTO (labelled replies)" in said.stdout.splitlines()[0] and "not predicted" not in said.stdout, said.stdout
    replies = float(said.stdout.split("~")[2].split(" replies/s")[0])  # "~3,962 tokens/s …(~1.93 replies/s"
    assert replies == pytest.approx(float(said.stdout.split("~")[1].split(" tokens/s")[0].replace(",", "")) / 2048,
                                    abs=0.01)


def test_the_bundled_pairs_are_the_sign_off_preference_of_the_bundled_conversations():
    """recipes/data/demo_preferences.jsonl is what signed_off_pairs gives (regenerate it when the demo data
    changes); the chosen reply ends with the sign-off, the rejected is the same reply without it."""
    convs = datasets.load_records(datasets.bundled_dataset_path())
    bundled = preference.read(preference.bundled_preferences_path())
    assert bundled.format == preference.PAIRED and not bundled.bad
    assert bundled.records == preference.signed_off_pairs(convs) and len(bundled.records) == len(convs)
    for p in bundled.records:
        assert p["chosen"][0]["content"] == p["rejected"][0]["content"] + preference.SIGN_OFF
    # what export and the evaluation read from a preference set: each pair's prompt and chosen reply
    from recipes.data import split

    for path, objective in ((preference.bundled_preferences_path(), "dpo"), (datasets.bundled_dataset_path(), "sft")):
        assert split.as_conversations(split.records(path, objective), objective) == convs


def test_the_committed_trl_script_rows_put_yichui_at_or_above_trl_at_no_more_memory():
    """bench/results/2026-12-05-preference-h200/h100-dpo-peer2.jsonl: the same DPO job through TRL's own script and
    yichui's trainer, three rounds each on one H100 — the figures the result file and the README state."""
    import statistics

    path = Path(__file__).resolve().parent.parent / "bench" / "results" / "2026-12-05-preference-h200" \
        / "h100-dpo-peer2.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    trl = [r for r in rows if r.get("side") == "trl"]
    ours = [r for r in rows if r.get("side") != "trl"]
    assert len(trl) == len(ours) == 3
    ratio = statistics.median(r["tokens_per_s"] for r in ours) / statistics.median(r["tokens_per_s"] for r in trl)
    assert round(ratio, 2) == 1.16
    assert min(r["tokens_per_s"] for r in ours) > max(r["tokens_per_s"] for r in trl)
    assert max(r["device_peak_gib"] for r in ours) <= min(r["device_peak_gib"] for r in trl)


def test_a_held_out_file_of_pairs_is_scored_as_pairs_and_read_for_its_preferred_replies(tmp_path):
    """Issue 47: the evaluate step's "another file" takes a preference file too — its pairs are scored like the
    training split's (a preference session), its preferred replies are the references; KTO's unpaired records give
    their desirable replies and no pairs; a supervised file stays as it was."""
    from recipes.evaluate import _references, heldout_file

    pairs = write(tmp_path / "pairs.jsonl", [{"prompt": Q, "chosen": A, "rejected": B}] * 3)
    convs, got = heldout_file(str(pairs))
    assert len(got) == 3 and got[0]["chosen"][0]["content"] == A and convs[0][-1]["content"] == A
    unpaired = write(tmp_path / "kto.jsonl", [{"prompt": Q, "completion": A, "label": True},
                                              {"prompt": Q, "completion": B, "label": False}])
    convs, got = heldout_file(str(unpaired))
    assert got == [] and [c[-1]["content"] for c in convs] == [A]
    sft = write(tmp_path / "sft.jsonl", [{"messages": [{"role": "user", "content": Q},
                                                       {"role": "assistant", "content": A}]}])
    assert heldout_file(str(sft)) == ([[{"role": "user", "content": Q}, {"role": "assistant", "content": A}]], [])
    assert _references(str(pairs)) is None and _references(str(sft)) is None
    assert _references(str(tmp_path / "none.jsonl")).key == "data.no_file"


def test_the_committed_h200_kto_rows_hold_the_memory_model():
    """bench/results/2026-12-05-kto-h200: yichui's KTO (trl's KTOTrainer) on two shapes, LoRA with and without
    checkpointing at micro-batch 2 and 4, and a full fine-tune: the memory model, derived from trl's code before the
    rows (within −4.2…+4.3 % then), since 2026-12-06 with LORA_NO_DROPOUT_CKPT chosen on these and DPO's rows; the
    speed model's KTO step."""
    import statistics

    from recipes.memory import model as memory
    from recipes.memory import planner

    root = Path(__file__).resolve().parent.parent / "bench"
    sys.path.insert(0, str(root))
    import fit_speed

    rows = [json.loads(x) for x in (root / "results" / "2026-12-05-kto-h200" / "kto.jsonl").read_text().splitlines()]
    assert len(rows) == 7 and all(r["knobs"]["objective"] == "kto" and r["rc"] == 0 for r in rows)
    mem = [memory.estimate(fit_speed.shape(r["shape"]), fit_speed.spec(r))["peak_gib"] / r["device_peak_gib"] - 1
           for r in rows]
    # −5.0 … +0.7 % since the 2026-12-06 refit: the 0.5B 2 × 2,048 row as DPO's 0.5B row (the allocator's slack)
    assert statistics.mean(abs(e) for e in mem) <= 0.03 and -0.055 <= min(mem) and max(mem) <= 0.05, mem
    # speed: the KL term's and the reference's three no-grad forwards priced term by term (planner.forward_terms,
    # derived, no constant fitted on these rows): median 8.8 %, worst 19.7 % (a factor over the passes: 11–52 % under)
    speed = [fit_speed.predict(r, planner.SECONDS_PER) / r["tokens_per_s"] - 1 for r in rows]
    assert statistics.median(abs(e) for e in speed) <= 0.09 and max(abs(e) for e in speed) <= 0.20, speed


def test_a_full_fine_tune_s_reference_copy_has_its_own_row():
    """A preference objective's frozen reference (a full fine-tune: a bf16 copy of the weights) is its own row of
    the breakdown, not folded into "weights" (so a user sees what DPO adds); the peak is unchanged by the split."""
    from recipes.memory import model as memory
    from recipes.training.spec import TrainingSpec

    shape = memory.shape_from_config(json.loads((Path(__file__).resolve().parent.parent / "bench" / "configs"
                                                 / "qwen2.5-1.5b" / "config.json").read_text()))
    for objective, extra in (("dpo", {}), ("kto", {"micro_batch": 2}), ("grpo", {"grpo_beta": 0.04, "micro_batch": 8})):
        e = memory.estimate(shape, TrainingSpec(method="full", master_weights="bf16", objective=objective, **extra))
        parts = dict((k, v) for k, *v in memory.breakdown(e)[1])
        assert "memory.part.reference" in parts, (objective, parts)
        comps = e["phases"][e["phase"]]["components"]
        assert comps["reference"] == pytest.approx(shape.n_params * 2 / 2**30, abs=1e-3)
    lora = memory.estimate(shape, TrainingSpec(method="lora", objective="dpo"))  # the base with the adapter off
    assert "reference" not in lora["phases"][lora["phase"]]["components"]


def test_unpaired_preference_rows_and_verdict():
    """The evaluate step's table names an unpaired score for what it is (the ranking's AUC, nats per token), and the
    verdict judges it as a paired one: higher is better on both."""
    from recipes import evaluate

    parts = {f"preference:{m}": {"accuracy": a, "margin": g, "pairs": 24, "kind": "unpaired"}
             for m, a, g in (("base", 0.41, -0.2), ("finetuned", 0.83, 0.9))}
    rows = {r[0]: r[1:] for r in evaluate.summary(parts, ["base", "finetuned"], [])}
    assert rows["held-out preference accuracy (unpaired: AUC)"] == [0.41, 0.83]
    assert rows["held-out preference margin (unpaired: per token)"] == [-0.2, 0.9]
    parts |= {"heldout:base": {"loss": 2.0}, "heldout:finetuned": {"loss": 2.5}}
    assert evaluate.verdict(parts)["beats"] is True


def test_the_held_out_preference_rows_hold_the_memory_and_speed_models():
    """bench/results/2026-12-07-preference-h100: DPO and KTO on three shapes no preference row had run on, priced
    before they ran (predicted.md) — the memory model within 3 % on every row (−1.6…+1.5 % when committed), the
    speed model within the figures the result file states; and the 8B DPO job beside TRL's own script."""
    import statistics

    from recipes.memory import model as memory
    from recipes.memory import planner

    root = Path(__file__).resolve().parent.parent / "bench"
    sys.path.insert(0, str(root))
    import fit_speed
    import speed_grid

    d = root / "results" / "2026-12-07-preference-h100"
    rows = [json.loads(x) for x in (d / "pref-heldout.jsonl").read_text().splitlines()]
    expected = {speed_grid.row_id(s, r) for s, rs in speed_grid.PREF_HELDOUT_SHAPES.items() for r in rs}
    assert {r["id"] for r in rows} == expected and all(r["rc"] == 0 for r in rows)
    assert "H100" in json.loads((d / "pref-heldout.env.json").read_text())["gpu"]
    mem = [memory.estimate(fit_speed.shape(r["shape"]), fit_speed.spec(r))["peak_gib"] / r["device_peak_gib"] - 1
           for r in rows]
    assert max(abs(e) for e in mem) <= 0.03 and statistics.mean(abs(e) for e in mem) <= 0.012, mem
    speed = {r["id"]: planner.tokens_per_s(fit_speed.shape(r["shape"]), fit_speed.spec(r), "NVIDIA H100 80GB HBM3")
             / r["tokens_per_s"] - 1 for r in rows}
    # 8.2 %, 19.1 % (DPO's six 5.1 %, 10.7 %; KTO's seven 9.7 %, 19.1 %) with the planner as it is; predicted
    # before they ran with DPO's reference priced as KTO's forwards are: 11.6 %, 26.4 % (result file)
    assert statistics.median(abs(e) for e in speed.values()) <= 0.085 and max(map(abs, speed.values())) <= 0.20, speed
    assert statistics.median(abs(e) for k, e in speed.items() if k.endswith("dpo")) <= 0.055, speed
    for r in rows:  # predicted.md, written before the rows ran, names every row with the H200's price
        assert f"| {r['id']} |" in (d / "predicted.md").read_text(), r["id"]

    peer = [json.loads(x) for f in ("dpo-peer-8b.jsonl", "dpo-peer-8b-r3.jsonl")
            for x in (d / f).read_text().splitlines()]
    trl = [r for r in peer if r.get("side") == "trl"]
    ours = [r for r in peer if r.get("side") != "trl"]
    assert len(trl) == len(ours) == 3 and all(r["rc"] == 0 for r in peer)
    ratio = statistics.median(r["tokens_per_s"] for r in ours) / statistics.median(r["tokens_per_s"] for r in trl)
    assert round(ratio, 2) == 1.12 and min(r["tokens_per_s"] for r in ours) > max(r["tokens_per_s"] for r in trl)
    assert max(r["device_peak_gib"] for r in ours) <= min(r["device_peak_gib"] for r in trl)


def test_the_h200_peer_round_the_allocator_rows_and_the_second_runs_say_what_the_result_file_says():
    """bench/results/2026-12-07-preference-h200: DPO beside TRL's own script on the H200 (yichui ahead at no more
    device memory); the 0.5B plan of 4,096 tokens a micro-batch under-predicted alike for the supervised and the
    preference objectives, with random or written weights (the allocator, not DPO); the held-out rows' second runs —
    memory within 3 % on each, speed on the median of two runs as stated."""
    import statistics

    from recipes.memory import model as memory
    from recipes.memory import planner

    root = Path(__file__).resolve().parent.parent / "bench"
    sys.path.insert(0, str(root))
    import fit_speed

    d = root / "results" / "2026-12-07-preference-h200"
    load = lambda f: [json.loads(x) for x in (d / f).read_text().splitlines() if x.strip()]  # noqa: E731
    assert "H200" in json.loads((d / "peer3b.env.json").read_text())["gpu"]
    peer = load("peer3b.jsonl")
    trl = [r for r in peer if r.get("side") == "trl"]
    ours = [r for r in peer if r.get("side") != "trl"]
    assert len(trl) == len(ours) == 1 and all(r["rc"] == 0 for r in peer)
    assert round(ours[0]["tokens_per_s"] / trl[0]["tokens_per_s"], 2) == 1.05
    assert ours[0]["device_peak_gib"] <= trl[0]["device_peak_gib"]

    def error(r):
        knobs = {k: v for k, v in r["knobs"].items() if k != "memory_snapshot"}
        return memory.estimate(fit_speed.shape(r["shape"]), fit_speed.spec(r | {"knobs": knobs}))["peak_gib"] \
            / r["device_peak_gib"] - 1

    for f in ("h100-slack.jsonl", "load-random.jsonl", "load-written.jsonl"):
        rows = {r["id"].replace("-memory_snapshotTrue", ""): r for r in load(f)}
        sft, dpo = rows["qwen2.5-0.5b-lora-ckpt-s2048-b2"], rows["qwen2.5-0.5b-lora-ckpt-s2048-b1-objectivedpo"]
        assert sft["peak_reserved_gib"] == dpo["peak_reserved_gib"] == 1.834, f
        assert -0.055 <= error(sft) <= -0.045 and -0.055 <= error(dpo) <= -0.045, (f, error(sft), error(dpo))

    first = {r["id"]: r for r in load("../2026-12-07-preference-h100/pref-heldout.jsonl")}
    second = {r["id"]: r for r in load("h100-pref-dpo2.jsonl") + load("h100-pref-kto2.jsonl")}
    assert second.keys() == first.keys() and all(r["rc"] == 0 for r in second.values())
    assert max(abs(error(r)) for r in second.values()) <= 0.03
    speed = {k: planner.tokens_per_s(fit_speed.shape(r["shape"]), fit_speed.spec(r), "NVIDIA H100 80GB HBM3")
             / statistics.median([r["tokens_per_s"], first[k]["tokens_per_s"]]) - 1 for k, r in second.items()}
    # 10.0 %, +30.1 % over both; DPO 5.6 %, +11.6 %; KTO 18.1 %, +30.1 % (the result file, section 3)
    assert round(statistics.median(map(abs, speed.values())), 3) == 0.100 and round(max(speed.values()), 3) == 0.301
    assert round(statistics.median(abs(e) for k, e in speed.items() if k.endswith("dpo")), 3) == 0.056
