"""The speed benchmark's fairness (issue 21): the token rows the peers are fed for the 50-step loss comparison are
the rows yichui's trainer builds from the same conversations. Real components on CPU: yichui's trainer subprocess
(bench/memory_accuracy.measure_one) and bench/unsloth_peer.py's transformers + PEFT loop (``--backend plain``; the
unsloth backend needs a GPU), the same written weights: the two loss sequences must be the same (to 4 decimals, the
peer's rounding) — for LoRA too, whose lora_A both sides draw after the Trainer's seed."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
SEQ, STEPS = 128, 3


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    import torch
    import transformers

    from recipes.demo import tiny_model as tiny

    d = tmp_path_factory.mktemp("bench-peers") / "tinyshape"
    d.mkdir()
    tok = tiny._train_tokenizer(tiny._generic_corpus()[:20])
    tok.save_pretrained(d)
    cfg = transformers.LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512)
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(cfg).save_pretrained(d)
    return d


@pytest.mark.slow
@pytest.mark.parametrize("method", ["full", "lora"])
def test_peers_see_the_rows_yichui_trains_on(model_dir, method, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import memory_accuracy
    import train_throughput

    work = model_dir.parent / method
    work.mkdir()
    rows = work / "rows.json"
    train_throughput.token_rows(model_dir, SEQ, STEPS, rows)
    data = json.loads(rows.read_text())
    assert len(data["input_ids"]) == STEPS and len(data["input_ids"][0]) == SEQ
    assert -100 in data["labels"][0] and data["labels"][0][-1] == data["input_ids"][0][-1]  # prompt masked only
    knobs = {"lora_rank": 8, "lora_alpha": 16, "lora_dropout": 0.0, "init": "pretrained", "learning_rate": 1e-3}
    row = memory_accuracy.measure_one(("tinyshape", method, True, SEQ, 1, knobs), model_dir, work, "", STEPS,
                                      device="cpu", same_rows=True)
    assert row["rc"] == 0, row.get("error")
    ours = [e["loss"] for e in memory_accuracy.events(work / "runs" / row["id"]) if e["event"] == "step"]
    r = subprocess.run([sys.executable, str(BENCH / "unsloth_peer.py"), "--config", str(model_dir / "config.json"),
                        "--method", method, "--rank", "8", "--ckpt", "--batch", "1", "--seq", str(SEQ),
                        "--weights", str(model_dir), "--tokenizer", str(model_dir), "--data", str(rows),
                        "--lr", "1e-3", "--backend", "plain"], capture_output=True, text=True, timeout=300)
    line = next((x for x in r.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, r.stderr[-2000:]
    theirs = json.loads(line[7:])["losses"]
    assert len(ours) == len(theirs) == STEPS
    # the same loss at every step: LoRA too, since both draw lora_A after seeding with the Trainer's seed — so a rank,
    # alpha or target that differed between the sides would show
    assert ours == pytest.approx(theirs, abs=1e-4)
    # and the rows make the model learn (the loss falls on both sides)
    assert theirs[-1] < theirs[0] and ours[-1] < ours[0]
