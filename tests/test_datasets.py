"""Dataset formats, files and record checks (recipes/data/datasets.py)."""
from __future__ import annotations

import json

import pytest

from recipes.data import datasets as data

CONV = [{"role": "user", "content": "What is LoRA?"}, {"role": "assistant", "content": "Low-rank adapters."}]


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("row,fmt", [
    ({"instruction": "What is LoRA?", "input": "", "output": "Low-rank adapters."}, "alpaca"),
    ({"conversations": [{"from": "human", "value": "What is LoRA?"}, {"from": "gpt", "value": "Low-rank adapters."}]},
     "sharegpt"),
    ({"messages": CONV}, "messages"),
    ({"prompt": "What is LoRA?", "completion": "Low-rank adapters."}, "prompt_completion"),
    ({"prompt": CONV[:1], "completion": CONV[1:]}, "prompt_completion"),
])
def test_every_format_becomes_the_same_conversation(tmp_path, row, fmt):
    loaded = data.read(write(tmp_path / "d.jsonl", [row]))
    assert loaded.format == fmt and loaded.conversations == [CONV] and not loaded.bad


def test_json_csv_and_parquet_files(tmp_path):
    rows = [{"instruction": f"q{i}", "input": "", "output": f"a{i}"} for i in range(5)]
    (tmp_path / "d.json").write_text(json.dumps(rows))
    import pandas as pd

    pd.DataFrame(rows).to_csv(tmp_path / "d.csv", index=False)
    pd.DataFrame(rows).to_parquet(tmp_path / "d.parquet")
    for name in ("d.json", "d.csv", "d.parquet"):
        loaded = data.read(tmp_path / name)
        assert loaded.format == "alpaca" and len(loaded.conversations) == 5, name
    pd.DataFrame([{"messages": json.dumps(CONV)}]).to_csv(tmp_path / "m.csv", index=False)
    assert data.read(tmp_path / "m.csv").conversations == [CONV]  # JSON cells decoded


def test_malformed_records_are_listed_by_line_then_skipped_or_refused(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join([
        json.dumps({"instruction": "a", "output": "b"}),
        '{"instruction": "broken json',
        json.dumps({"instruction": "", "output": "b"}),          # empty instruction
        json.dumps({"instruction": 3, "output": None}),           # not text
        json.dumps({"messages": CONV}),                           # another format
        json.dumps({"instruction": "c", "output": "d"}),
    ]) + "\n")
    loaded = data.read(path)
    assert loaded.bad == ["d.jsonl:2", "d.jsonl:3", "d.jsonl:4", "d.jsonl:5"] and len(loaded.conversations) == 2
    with pytest.raises(data.DataError) as e:
        data.load_records(path)
    assert e.value.key == "data.bad_records" and e.value.params["count"] == 4
    assert len(data.load_records(path, skip_bad=True)) == 2


def test_conversation_rules(tmp_path):
    for row in ({"messages": [{"role": "user", "content": "hi"}]},                       # no assistant answer
                {"messages": [{"role": "assistant", "content": "hi"}]},                  # no user turn
                {"messages": [{"role": "robot", "content": "hi"}, CONV[1]]},              # unknown role
                {"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": 5}]}):
        assert data.read(write(tmp_path / "d.jsonl", [row])).bad == ["d.jsonl:1"], row


def test_sampling_and_validation_split_are_seeded(tmp_path):
    path = write(tmp_path / "d.jsonl", [{"instruction": f"q{i}", "output": f"a{i}"} for i in range(50)])
    a = data.read(f"{path}#10").conversations
    assert len(a) == 10 and a == data.read(f"{path}#10").conversations
    assert len(data.read(f"{path}#500").conversations) == 50
    train, val = data.train_validation(data.load_records(path), 0.2)
    assert (len(train), len(val)) == (40, 10) and not {str(c) for c in train} & {str(c) for c in val}
    assert data.train_validation(data.load_records(path), 0.0) == (data.load_records(path), [])


@pytest.mark.parametrize("content,key", [(b"", "data.empty"), (b"\xff\xfe", "data.not_text"),
                                         (b'{"foo": 1}\n', "data.unknown_format")])
def test_unusable_files_are_named(tmp_path, content, key):
    path = tmp_path / "d.jsonl"
    path.write_bytes(content)
    with pytest.raises(data.DataError) as e:
        data.read(path)
    assert e.value.key == key
