"""Prompts with checkable answers for GRPO (issue 47): read in the forms users have, checked record by record like
the supervised and preference formats (recipes/data/datasets.py, recipes/data/preference.py).

Forms (TRL's prompt-only format, https://huggingface.co/docs/trl/dataset_formats, and GSM8K's):
- ``prompt`` — text, or chat messages ending with the user's turn — with an optional reference ``answer`` (also
  spelled ``solution`` or ``ground_truth``: text or a number);
- ``question`` / ``answer`` — GSM8K's: the answer's worked solution ends with ``#### <final answer>``, and only that
  final answer is the reference.

Every record comes out as ``{"prompt": [messages], "answer": str | None}``; the reward functions read ``answer``
(recipes/training/rewards.py). A malformed record is named by its line with the reason (``data.why.*``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from recipes.base import Msg
from recipes.data import datasets
from recipes.data.datasets import BadRecord, DataError, refuse_bad
from recipes.data.preference import _turns

ANSWER_KEYS = ("answer", "solution", "ground_truth")  # the reference's names, first found wins
GSM8K_MARK = "####"  # GSM8K's worked solutions end with "#### <final answer>"
BUNDLED = Path(__file__).with_name("demo_prompts.jsonl")
MAX_ANSWER_CHARS = 10_000


@dataclass
class Prompts:
    """Records read from a file (``{"prompt": [messages], "answer": str | None}``), the malformed ones
    (``data.bad_at`` messages) and how many rows the file had."""

    records: list[dict]
    bad: list[Msg] = field(default_factory=list)
    total: int = 0

    @property
    def answered(self) -> int:
        """Records with a reference answer."""
        return sum(r["answer"] is not None for r in self.records)


def bundled_prompts_path() -> Path:
    return BUNDLED


def is_prompt_row(row: object) -> bool:
    """A record of this form: a ``prompt`` or ``question`` and no reply of its own (a reply makes it SFT or
    preference data)."""
    return isinstance(row, dict) and ("prompt" in row or "question" in row) \
        and not any(k in row for k in ("completion", "chosen", "rejected", "messages", "conversations", "output"))


def reference(value: object, gsm8k: bool) -> str | None:
    """A record's reference answer as text: a number's digits, text stripped; GSM8K's final answer after ``####``.
    None when absent. Raises BadRecord for another type, empty text or a GSM8K answer without its mark."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise BadRecord("data.why.answer_not_text", value=json.dumps(value)[:40])
    text = str(value).strip()
    if not text:
        raise BadRecord("data.why.empty", field="answer")
    if len(text) > MAX_ANSWER_CHARS:
        raise BadRecord("data.why.answer_too_long", n=len(text), most=MAX_ANSWER_CHARS)
    if gsm8k:
        if GSM8K_MARK not in text:
            raise BadRecord("data.why.gsm8k_no_mark")
        text = text.rsplit(GSM8K_MARK, 1)[1].strip()
        if not text:
            raise BadRecord("data.why.empty", field="answer")
    return text


def to_record(row: dict) -> dict:
    """One row as ``{"prompt": [messages], "answer": str | None}``. Raises BadRecord with the reason."""
    gsm8k = "prompt" not in row  # question/answer: GSM8K's form
    prompt = _turns(row.get("prompt", row.get("question")), "prompt" if not gsm8k else "question", "user")
    key = next((k for k in ANSWER_KEYS if k in row), None)
    return {"prompt": prompt, "answer": reference(row.get(key) if key else None, gsm8k and key == "answer")}


def read(ref: str | Path) -> Prompts:
    """Read a prompt dataset (``path`` or ``path#N``: a seeded sample of N records), listing malformed records.

    Raises:
        DataError: no such file, a folder, an unknown suffix, not UTF-8, no records, or a first record that is not a
            prompt (``data.not_prompts``: SFT or preference records, which carry their replies).
    """
    path, sample, rows = datasets.file_rows(ref)
    if not any(is_prompt_row(r) for _, r in rows):
        raise DataError("data.not_prompts", path=str(path))
    records: list[dict] = []
    bad: list[Msg] = []
    for n, row in rows:
        try:
            if row is None:
                raise BadRecord("data.why.not_json")
            if not isinstance(row, dict):
                raise BadRecord("data.why.not_object")
            if not is_prompt_row(row):
                raise BadRecord("data.why.not_a_prompt", keys=", ".join(map(str, row))[:60])
            records.append(to_record(row))
        except BadRecord as e:
            bad.append(Msg("data.bad_at", {"at": f"{path.name}:{n}", "why": e.msg}))
    records = datasets.seeded_sample(records, sample)
    return Prompts(records, bad, len(rows))


def load(ref: str | Path, skip_bad: bool = False) -> Prompts:
    """:func:`read`, refusing malformed records unless ``skip_bad`` (``data.bad_records``) and an empty result."""
    got = read(ref)
    refuse_bad(ref, got.bad, len(got.records), skip_bad)
    return got


def as_conversations(records: list[dict]) -> list[list[dict]]:
    """Each prompt with its reference answer as the assistant's reply (the answer itself, or empty when none): what
    the steps that read conversations — the template check, the sample shown — take."""
    return [r["prompt"] + [{"role": "assistant", "content": r["answer"] or ""}] for r in records]
