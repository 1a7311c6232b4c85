"""Instruction datasets: read local json / jsonl files in alpaca or OpenAI-messages format as conversations.

A conversation is a list of ``{"role": "system"|"user"|"assistant", "content": str}`` dicts ending with an assistant
turn. Training uses trl's conversational prompt-completion form (prompt = every turn but the last, completion = the
last assistant turn), so the loss covers assistant tokens only whatever the model's chat template.
"""
from __future__ import annotations

import json
from pathlib import Path

FORMATS = ("alpaca", "messages")


class DataError(ValueError):
    """A dataset file that cannot be used. ``key``/``args`` name the catalogue message for the user."""

    def __init__(self, key: str, /, **args):
        super().__init__(f"{key}: {args}")
        self.key, self.params = key, args


def bundled_dataset_path() -> Path:
    return Path(__file__).parent / "data" / "demo_instructions.jsonl"


def _read_rows(path: Path) -> list[tuple[int, object]]:
    """(line number, parsed object) for a .jsonl file, or (index + 1, item) for a .json list."""
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
        except json.JSONDecodeError as e:
            raise DataError("data.bad_line", path=str(path), line=n, error=e.msg) from None
    return rows


def detect_format(row: object) -> str | None:
    if isinstance(row, dict):
        if isinstance(row.get("messages"), list):
            return "messages"
        if "instruction" in row and "output" in row:
            return "alpaca"
    return None


ROLES = ("system", "user", "assistant")


def _text(value, required: bool = True) -> str:
    """A field that must be text (non-empty when required); anything else marks the record malformed."""
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise TypeError("not text")
    return value


def _to_conversation(row: dict, fmt: str) -> list[dict]:
    if fmt == "alpaca":
        user = _text(row["instruction"]).strip()
        extra = _text(row.get("input"), required=False).strip()
        if extra:
            user += "\n\n" + extra
        system = _text(row.get("system"), required=False)
        conv = [{"role": "system", "content": system}] if system else []
        return conv + [{"role": "user", "content": user}, {"role": "assistant", "content": _text(row["output"])}]
    conv = []
    for m in row["messages"]:
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            raise TypeError("role")
        conv.append({"role": m["role"], "content": _text(m.get("content"), required=m["role"] != "system")})
    if not conv or conv[-1]["role"] != "assistant":
        raise KeyError("last message must come from the assistant")
    return conv


def load_records(path: str | Path) -> list[list[dict]]:
    """Read ``path`` (.json list or .jsonl) into conversations.

    Raises:
        DataError: unreadable file, unknown format, or malformed records (the first ones named by line number).
    """
    path = Path(path)
    if path.is_dir():
        raise DataError("data.is_folder", path=str(path))
    if not path.is_file():
        raise DataError("data.no_file", path=str(path))
    rows = _read_rows(path)
    if not rows:
        raise DataError("data.empty", path=str(path))
    fmt = detect_format(rows[0][1])
    if fmt is None:
        raise DataError("data.unknown_format", path=str(path), formats=", ".join(FORMATS))
    convs, bad = [], []
    for n, row in rows:
        try:
            if detect_format(row) != fmt:
                raise KeyError(fmt)
            convs.append(_to_conversation(row, fmt))
        except (KeyError, TypeError) as e:
            bad.append(f"{path.name}:{n}")
    if bad:
        raise DataError("data.bad_records", path=str(path), count=len(bad), where=", ".join(bad[:5]))
    return convs


def dataset_format(path: str | Path) -> str:
    rows = _read_rows(Path(path))
    return detect_format(rows[0][1]) if rows else "unknown"


def to_prompt_completion(convs: list[list[dict]]) -> list[dict]:
    """Conversations → trl's conversational prompt-completion records."""
    return [{"prompt": c[:-1], "completion": c[-1:]} for c in convs]
