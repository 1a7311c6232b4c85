"""Instruction datasets → conversations.

Files: json (a list), jsonl, csv and parquet (the last two read with the `datasets` library). Formats, detected from
the first record: alpaca (instruction / input / output [/ system]), sharegpt (conversations: from / value), OpenAI
messages (messages: role / content), prompt/completion (strings, or lists of messages). A path may end in ``#N``: a
seeded random sample of N records.

A conversation is a list of ``{"role": "system"|"user"|"assistant", "content": str}`` dicts ending with an assistant
turn. Training uses trl's conversational prompt-completion form (prompt = every turn but the last, completion = the
last assistant turn), so the loss covers assistant tokens only, whatever the model's chat template.
"""
from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from recipes.base import Refusal

FORMATS = ("alpaca", "sharegpt", "messages", "prompt_completion")
SUFFIXES = (".json", ".jsonl", ".csv", ".parquet")
ROLES = ("system", "user", "assistant")
OPENAI_ROLES = {r: r for r in ROLES}  # messages / prompt-completion turns already use the chat-template roles
SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant", "system": "system",
                  "chatgpt": "assistant", "bing": "assistant", "bard": "assistant"}
SAMPLE_SEED = 42


class DataError(Refusal):
    """A dataset that cannot be used."""


@dataclass
class Loaded:
    """Conversations read from a file, the detected format, and the records that were malformed (``file:line``)."""

    conversations: list[list[dict]]
    format: str
    bad: list[str] = field(default_factory=list)
    total: int = 0


def bundled_dataset_path() -> Path:
    return Path(__file__).parent / "demo_instructions.jsonl"


def split_sample(ref: str | Path) -> tuple[Path, int | None]:
    """``sft.jsonl#200`` → (Path("sft.jsonl"), 200); no suffix → (path, None)."""
    m = re.fullmatch(r"(.+)#(\d+)", str(ref))
    return (Path(m.group(1)), int(m.group(2))) if m else (Path(ref), None)


def _read_rows(path: Path) -> list[tuple[int, object]]:
    """(line or row number, parsed record)."""
    if path.suffix in (".csv", ".parquet"):
        from datasets import load_dataset

        try:
            table = load_dataset(path.suffix[1:], data_files=str(path), split="train")
        except Exception as e:  # noqa: BLE001 - the library's parse errors, told as one line
            raise DataError("data.bad_table", path=str(path), error=str(e).splitlines()[0][:160]) from None
        first = 2 if path.suffix == ".csv" else 1  # csv: line 1 is the header
        return [(i + first, {k: _decode(v) for k, v in row.items()}) for i, row in enumerate(table)]
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise DataError("data.not_text", path=str(path)) from None
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise DataError("data.bad_json", path=str(path), line=e.lineno, error=e.msg) from None
        if not isinstance(data, list):
            raise DataError("data.not_a_list", path=str(path))
        return list(enumerate(data, 1))
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append((n, json.loads(line)))
        except json.JSONDecodeError:
            rows.append((n, None))  # a malformed line: listed with the other bad records
    return rows


def _decode(v):
    """csv cells holding JSON lists (conversations, messages) become lists."""
    if isinstance(v, str) and v[:1] == "[":
        try:
            return json.loads(v)
        except ValueError:
            return v
    return v


def detect_format(row: object) -> str | None:
    if not isinstance(row, dict):
        return None
    if isinstance(row.get("messages"), list):
        return "messages"
    if isinstance(row.get("conversations"), list):
        return "sharegpt"
    if "instruction" in row and "output" in row:
        return "alpaca"
    if "prompt" in row and "completion" in row:
        return "prompt_completion"
    return None


def _text(value, required: bool = True) -> str:
    """A field that must be text (non-empty when required); anything else marks the record malformed."""
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise TypeError("not text")
    return value


def _turns(items, role_key: str, text_key: str, roles: dict) -> list[dict]:
    conv = []
    for m in items:
        if not isinstance(m, dict) or m.get(role_key) not in roles:
            raise TypeError("role")
        role = roles[m[role_key]]
        conv.append({"role": role, "content": _text(m.get(text_key), required=role != "system")})
    return conv


def _to_conversation(row: dict, fmt: str) -> list[dict]:
    if fmt == "alpaca":
        user = _text(row["instruction"]).strip()
        extra = _text(row.get("input"), required=False).strip()
        if extra:
            user += "\n\n" + extra
        system = _text(row.get("system"), required=False)
        conv = [{"role": "system", "content": system}] if system else []
        conv += [{"role": "user", "content": user}, {"role": "assistant", "content": _text(row["output"])}]
    elif fmt == "sharegpt":
        conv = _turns(row["conversations"], "from", "value", SHAREGPT_ROLES)
        if row.get("system"):
            conv = [{"role": "system", "content": _text(row["system"])}] + conv
    elif fmt == "messages":
        conv = _turns(row["messages"], "role", "content", OPENAI_ROLES)
    else:
        p, c = row["prompt"], row["completion"]
        prompt = _turns(p, "role", "content", OPENAI_ROLES) if isinstance(p, list) else \
            [{"role": "user", "content": _text(p)}]
        completion = _turns(c, "role", "content", OPENAI_ROLES) if isinstance(c, list) else \
            [{"role": "assistant", "content": _text(c)}]
        conv = prompt + completion
    if not conv or conv[-1]["role"] != "assistant" or not any(m["role"] == "user" for m in conv):
        raise KeyError("a conversation needs a user turn and must end with the assistant")
    return conv


def read(ref: str | Path) -> Loaded:
    """Read a dataset (``path`` or ``path#N``) into conversations, listing malformed records instead of stopping.

    Raises:
        DataError: no such file, a folder, not UTF-8, unreadable table, empty, or a first record of no known format.
    """
    path, sample = split_sample(ref)
    head, hash_, tail = str(ref).rpartition("#")
    if hash_ and (sample == 0 or (sample is None and Path(head).is_file())):  # file.jsonl#0, #-5, #abc
        raise DataError("data.bad_sample", path=head, value=tail)
    if path.is_dir():
        raise DataError("data.is_folder", path=str(path))
    if not path.is_file():
        raise DataError("data.no_file", path=str(path))
    if path.suffix not in SUFFIXES:
        raise DataError("data.bad_suffix", path=str(path), suffixes=", ".join(SUFFIXES))
    rows = _read_rows(path)
    if not rows:
        raise DataError("data.empty", path=str(path))
    fmt = next(filter(None, (detect_format(r) for _, r in rows)), None)
    if fmt is None:
        raise DataError("data.unknown_format", path=str(path), formats=", ".join(FORMATS))
    convs, bad = [], []
    for n, row in rows:
        try:
            if detect_format(row) != fmt or not isinstance(row, dict):
                raise KeyError(fmt)
            convs.append(_to_conversation(row, fmt))
        except (KeyError, TypeError):
            bad.append(f"{path.name}:{n}")
    if sample is not None and sample < len(convs):
        picked = sorted(random.Random(SAMPLE_SEED).sample(range(len(convs)), sample))
        convs = [convs[i] for i in picked]
    return Loaded(convs, fmt, bad, len(rows))


def load(ref: str | Path, skip_bad: bool = False) -> Loaded:
    """A dataset ready to train on; malformed records abort (naming the first ones) unless ``skip_bad``.

    Raises:
        DataError: as :func:`read`, and ``data.bad_records`` for malformed records when not skipping.
    """
    loaded = read(ref)
    path = str(split_sample(ref)[0])
    if loaded.bad and not skip_bad:
        raise DataError("data.bad_records", path=path, count=len(loaded.bad), where=", ".join(loaded.bad[:5]))
    if not loaded.conversations:
        raise DataError("data.empty", path=path)
    return loaded


def load_records(ref: str | Path, skip_bad: bool = False) -> list[list[dict]]:
    """The conversations of :func:`load`."""
    return load(ref, skip_bad).conversations


def train_validation(convs: list[list[dict]], val_ratio: float, seed: int = SAMPLE_SEED) -> tuple[list, list]:
    """A seeded split: ``val_ratio`` of the conversations (at least one when the ratio is > 0) held out."""
    if val_ratio <= 0 or len(convs) < 2:
        return convs, []
    n_val = max(1, int(round(len(convs) * val_ratio)))
    order = list(range(len(convs)))
    random.Random(seed).shuffle(order)
    held = set(order[:n_val])
    return [c for i, c in enumerate(convs) if i not in held], [c for i, c in enumerate(convs) if i in held]


def to_prompt_completion(convs: list[list[dict]]) -> list[dict]:
    """Conversations → trl's conversational prompt-completion records."""
    return [{"prompt": c[:-1], "completion": c[-1:]} for c in convs]
