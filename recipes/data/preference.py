"""Preference data (issue 47): pairs of a preferred and a rejected reply for DPO, unpaired labelled replies for KTO,
read in the forms users have and checked record by record like the supervised formats (recipes/data/datasets.py).

Forms (TRL's dataset formats, https://huggingface.co/docs/trl/dataset_formats):
- ``prompt`` / ``chosen`` / ``rejected`` — each text, or a list of chat messages (the prompt's ending with the user's
  turn, chosen and rejected the assistant's reply) — "explicit prompt";
- ``chosen`` / ``rejected`` as whole conversations that share their first turns — "implicit prompt": the shared turns
  are the prompt, the rest of each the reply;
- ``prompt`` / ``completion`` / ``label`` (true: a desirable reply) — KTO's unpaired form.

Every record comes out conversational, as TRL's trainers take it: ``{"prompt": [messages], "chosen": [assistant
turn(s)], "rejected": [assistant turn(s)]}`` (pairs) or ``{"prompt", "completion", "label"}`` (unpaired). A malformed
record is named by its line with the reason (``data.why.*``), never silently dropped.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from recipes.base import Msg
from recipes.data import datasets
from recipes.data.datasets import OPENAI_ROLES, SAMPLE_SEED, BadRecord, DataError, refuse_bad, valid_unicode

PAIRED, UNPAIRED = "preference", "unpaired"  # DPO's pairs, KTO's labelled replies
FORMATS = (PAIRED, UNPAIRED)


@dataclass
class Preferences:
    """Records read from a file, their form (:data:`PAIRED` or :data:`UNPAIRED`), the malformed ones (``data.bad_at``
    messages) and how many rows the file had."""

    records: list[dict]
    format: str
    bad: list[Msg] = field(default_factory=list)
    total: int = 0


def detect(row: object) -> str | None:
    """:data:`PAIRED` for a record with ``chosen`` and ``rejected``, :data:`UNPAIRED` for ``completion`` and
    ``label``, else None."""
    if not isinstance(row, dict):
        return None
    if "chosen" in row and "rejected" in row:
        return PAIRED
    if "completion" in row and "label" in row:
        return UNPAIRED
    return None


def _turns(value: object, name: str, last: str | None) -> list[dict]:
    """A field as chat messages: text becomes one turn of role ``last``; a list must be messages of known roles,
    each with text, the last one of role ``last`` (when given)."""
    if isinstance(value, str):
        if not value.strip():
            raise BadRecord("data.why.empty", field=name)
        if not valid_unicode(value):
            raise BadRecord("data.why.bad_unicode", field=name)
        return [{"role": last or "user", "content": value}]
    if not isinstance(value, list) or not value:
        raise BadRecord("data.why.empty" if value in (None, []) else "data.why.not_text", field=name)
    out = []
    for m in value:
        if not isinstance(m, dict):
            raise BadRecord("data.why.turn_not_object")
        if not isinstance(m.get("role"), str) or m.get("role") not in OPENAI_ROLES:
            raise BadRecord("data.why.bad_role", key="role", role=str(m.get("role"))[:40],
                            roles=list(OPENAI_ROLES))
        text = m.get("content")
        if not isinstance(text, str) or (not text.strip() and m["role"] != "system"):
            raise BadRecord("data.why.empty" if text in (None, "") or (isinstance(text, str) and not text.strip())
                            else "data.why.not_text", field=f"{name}.content")
        if not valid_unicode(text):
            raise BadRecord("data.why.bad_unicode", field=f"{name}.content")
        out.append({"role": OPENAI_ROLES[m["role"]], "content": text})
    if last is not None and out[-1]["role"] != last:
        raise BadRecord("data.why.last_not", field=name, role=out[-1]["role"], wanted=last)
    return out


def to_record(row: dict, form: str) -> dict:
    """One row in TRL's conversational form. Raises BadRecord with the reason."""
    if form == UNPAIRED:
        label = row.get("label")
        if isinstance(label, str) and label.strip().lower() in ("true", "false"):  # as a CSV cell says it
            row = row | {"label": label.strip().lower() == "true"}
        if not isinstance(row.get("label"), bool):
            raise BadRecord("data.why.label_not_bool", value=json.dumps(row.get("label"))[:20])
        return {"prompt": _turns(row.get("prompt"), "prompt", "user"),
                "completion": _turns(row.get("completion"), "completion", "assistant"), "label": row["label"]}
    if "prompt" in row:  # explicit prompt
        prompt = _turns(row.get("prompt"), "prompt", "user")
        chosen = _turns(row.get("chosen"), "chosen", "assistant")
        rejected = _turns(row.get("rejected"), "rejected", "assistant")
    else:  # implicit: whole conversations; the turns they share are the prompt
        whole_c, whole_r = _turns(row.get("chosen"), "chosen", "assistant"), \
            _turns(row.get("rejected"), "rejected", "assistant")
        n = 0
        while n < min(len(whole_c), len(whole_r)) - 1 and whole_c[n] == whole_r[n]:
            n += 1
        prompt, chosen, rejected = whole_c[:n], whole_c[n:], whole_r[n:]
        if not prompt or prompt[-1]["role"] != "user" or any(m["role"] != "assistant" for m in chosen + rejected):
            raise BadRecord("data.why.no_shared_prompt")
    if chosen == rejected:
        raise BadRecord("data.why.chosen_is_rejected")
    return {"prompt": prompt, "chosen": chosen, "rejected": rejected}


def read(ref: str | Path) -> Preferences:
    """Read a preference dataset (``path`` or ``path#N``: a seeded sample of N records), listing malformed records.

    Raises:
        DataError: no such file, a folder, an unknown suffix, not UTF-8, no records, or a first record of no
            preference form (``data.not_preference``).
    """
    path, sample, rows = datasets.file_rows(ref)
    form = next(filter(None, (detect(r) for _, r in rows)), None)
    if form is None:
        raise DataError("data.not_preference", path=str(path))
    records: list[dict] = []
    bad: list[Msg] = []
    for n, row in rows:
        try:
            if row is None:
                raise BadRecord("data.why.not_json")
            if not isinstance(row, dict):
                raise BadRecord("data.why.not_object")
            if form == PAIRED and detect(row) is None and ("chosen" in row or "rejected" in row):
                raise BadRecord("data.why.empty", field="rejected" if "chosen" in row else "chosen")
            if form == UNPAIRED and detect(row) is None and ("completion" in row or "label" in row):
                raise BadRecord("data.why.empty", field="label" if "completion" in row else "completion")
            if detect(row) != form:
                raise BadRecord("data.why.other_format", found=detect(row) or "?", format=form,
                                keys=", ".join(map(str, row))[:60])
            records.append(to_record(row, form))
        except BadRecord as e:
            bad.append(Msg("data.bad_at", {"at": f"{path.name}:{n}", "why": e.msg}))
    records = datasets.seeded_sample(records, sample)
    return Preferences(records, form, bad, len(rows))


def load(ref: str | Path, skip_bad: bool = False) -> Preferences:
    """:func:`read`, refusing malformed records unless ``skip_bad`` (``data.bad_records``) and an empty result."""
    got = read(ref)
    refuse_bad(ref, got.bad, len(got.records), skip_bad)
    return got


SIGN_OFF = " Done."  # how every bundled demo answer ends (recipes/data/demo_instructions.jsonl)


def bundled_preferences_path() -> Path:
    """The bundled preference set (:func:`signed_off_pairs` of the bundled conversations, committed; the tests
    check it is still what that function gives)."""
    return Path(__file__).parent / "demo_preferences.jsonl"


def signed_off_pairs(convs: list[list[dict]]) -> list[dict]:
    """The bundled preference set: each conversation's reply chosen as it is (ending with :data:`SIGN_OFF`), the
    same reply without its sign-off rejected — a preference a base model does not have (summed log-probabilities
    favour the shorter reply: the tiny base prefers the rejected on every held-out pair) and that a model can learn
    on some prompts and show on others it never saw. Conversations whose reply does not end with the sign-off are
    left out."""
    out = []
    for conv in convs:
        reply = conv[-1]["content"]
        if conv[-1]["role"] != "assistant" or not reply.endswith(SIGN_OFF) or not reply[:-len(SIGN_OFF)].strip():
            continue
        out.append({"prompt": conv[:-1], "chosen": [conv[-1]],
                    "rejected": [{"role": "assistant", "content": reply[:-len(SIGN_OFF)]}]})
    return out


def chosen_conversations(records: list[dict]) -> list[list[dict]]:
    """Preference records as the supervised conversations of their preferred replies (a pair's prompt + chosen, an
    unpaired record's prompt + completion when labelled desirable): what export's calibration and quality check and
    the evaluation's replies read from a preference set."""
    return [r["prompt"] + r["chosen"] for r in records if "chosen" in r] + \
        [r["prompt"] + r["completion"] for r in records if "completion" in r and r["label"]]


def unpaired(records: list[dict]) -> list[dict]:
    """Records in KTO's unpaired form (``{"prompt", "completion", "label"}``): a pair gives its chosen reply labelled
    desirable and its rejected one undesirable, next to each other (trl's ``unpair_preference_dataset`` does the same;
    done here so that the counts the KTO weights come from are known before the trainer starts); unpaired records
    stay as they are."""
    out = []
    for r in records:
        if "chosen" in r:
            out += [{"prompt": r["prompt"], "completion": r["chosen"], "label": True},
                    {"prompt": r["prompt"], "completion": r["rejected"], "label": False}]
        else:
            out.append(r)
    return out


def kto_weights(records: list[dict]) -> tuple[float, float]:
    """KTO's (desirable_weight, undesirable_weight) for unpaired ``records``: the rarer side weighted up so that
    λ_D·n_D / (λ_U·n_U) = 1, the lower end of the range KTO's paper recommends, [1, 4/3] (Ethayarajh et al. 2024,
    arXiv 2402.01306, eq. 8; trl's KTOTrainer warns outside it). Equal counts (every pair split): (1.0, 1.0).

    Raises:
        ValueError: no desirable or no undesirable record (KTO needs both).
    """
    n_d = sum(1 for r in records if r["label"])
    n_u = len(records) - n_d
    if not n_d or not n_u:
        raise ValueError(f"KTO needs desirable and undesirable replies: {n_d} desirable, {n_u} undesirable")
    return (round(n_u / n_d, 4), 1.0) if n_u >= n_d else (1.0, round(n_d / n_u, 4))


def from_conversations(convs: list[list[dict]], seed: int = SAMPLE_SEED) -> list[dict]:
    """A preference set made from supervised conversations (the demo's): each conversation's own reply chosen, the
    same words in a shuffled order rejected — a preference for a fluent answer over word salad, which a model can
    learn on some prompts and show on others it never saw (a reply taken from another conversation would not do:
    on held-out pairs it is a reply the training preferred). Conversations must end with the assistant; replies of
    fewer than four words are left out."""
    rng = random.Random(seed)
    out = []
    for conv in convs:
        words = conv[-1]["content"].split()
        if len(words) < 4:
            continue
        shuffled = words[:]
        while shuffled == words:
            rng.shuffle(shuffled)
        out.append({"prompt": conv[:-1], "chosen": [conv[-1]],
                    "rejected": [{"role": "assistant", "content": " ".join(shuffled)}]})
    return out
