"""Train→serve parity (issue 48): does the engine show the served model the prompts it was trained on, and does it
answer as the merged model does in-process?

What is compared, for the sample question the train and export steps already asked and (since 2026-12-07) up to two
held-out questions the export step asked too (recipes/export.py ``_parity_questions``):

- the prompt's tokens: the export step rendered each question through the chat template training used and recorded
  its token ids (recipes/quantization/quality.py smoke: ``prompt_ids``); the engine's rendering is read from its
  ``/tokenize`` endpoint where it has one (vLLM, SGLang: id by id), else from the completion's
  ``usage.prompt_tokens`` (transformers serve: the count). A difference fails the deploy step, naming both
  renderings at the first differing token (a thinking tag, a generation-start token, a system line);
- the chat templates themselves: the served folder's against the training tokenizer's (the adapter's folder, which
  the trainer saved with it) — where they first differ is named in the failure;
- the first greedy reply tokens (:data:`recipes.quantization.quality.PARITY_TOKENS`): the merged model's own
  in-process greedy reply (``reply_ids``, with each token's log-probability and its lead over the runner-up,
  ``reply_logprobs`` / ``reply_margins``) against the engine's greedy reply and, where the engine reports them
  (OpenAI's ``logprobs``: vLLM, SGLang), its log-probabilities. Where the served reply departs from the trained
  one at a token the trained model led by at least :data:`SURE_MARGIN` nats, the merged model or its adapter served
  at 16 bits fails the step: that is not numerics breaking a near-tie but another model (the base served, an
  adapter not applied, other weights). A departure at a near-tie, or by a quantized copy, is said as a warning.
  The largest log-probability difference over the tokens both agree on is reported (``logprob_diff``).

The end-of-turn tokens are the deploy step's other check (replies must stop: recipes/deploy.py stop_cause).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TypeGuard
from pathlib import Path


SURE_MARGIN = 2.0  # nats: a token the trained model gives ≥ e² ≈ 7.4× the probability of any other. 16-bit
# engines' log-probabilities differ from the in-process ones by far less — vLLM 0.26 on an H100: ≤ 0.056 nats over
# 15 prompt-deploys, merged, adapter and NF4 (bench/results/2026-12-07-serve-chain-warm-h100.md) — so a departure
# there is no near-tie.
LOGPROB_WARN = 0.5  # nats: a larger difference on agreed tokens is said (the weights or the numerics differ)


@dataclass
class Parity:
    """The comparison of one prompt. ``question``: the prompt asked; ``prompt_training``: tokens training renders the
    question to; ``prompt_served``: the engine's (None: it said nothing); ``by_ids``: the engine's ids were compared
    one by one (else the counts); ``first_diff``: the first differing position (ids compared), with
    ``diff_training`` / ``diff_served`` the text of each rendering from there; ``template_diff``: where the served
    folder's chat template first differs from training's (None: the same, or one of them has none);
    ``greedy_training`` / ``greedy_served``: the first greedy reply tokens of each, as text; ``greedy_match``;
    ``diverged_at``: the reply token where the served reply departs (None: it does not), ``margin`` the trained
    model's lead there in nats (None: not recorded); ``logprob_diff``: the largest |difference| in nats of the log-
    probabilities of the reply tokens both agree on (None: the engine reports none); ``compared_tokens``."""

    prompt_training: int
    prompt_served: int | None
    by_ids: bool
    first_diff: int | None
    template_diff: str | None
    greedy_training: str
    greedy_served: str
    greedy_match: bool
    question: str = ""
    diff_training: str = ""
    diff_served: str = ""
    diverged_at: int | None = None
    margin: float | None = None
    logprob_diff: float | None = None
    compared_tokens: int = 0
    others: list = field(default_factory=list)  # the held-out questions' Parity dicts (on the sample question's)

    @property
    def prompt_ok(self) -> bool:
        return self.prompt_served == self.prompt_training and self.first_diff is None and self.template_diff is None

    def departs(self) -> bool:
        """The served reply leaves the trained one where the trained model was sure (:data:`SURE_MARGIN`)."""
        return self.diverged_at is not None and self.margin is not None and self.margin >= SURE_MARGIN

    def to_dict(self) -> dict:
        from dataclasses import asdict

        return asdict(self) | {"prompt_ok": self.prompt_ok}


def chat_template(folder: str | Path) -> str | None:
    """The chat template a tokenizer folder carries, as transformers reads it: ``chat_template.jinja``, else
    ``chat_template.json``'s, else ``tokenizer_config.json``'s ``chat_template`` (a string, or a list of named ones:
    "default"'s); None when it has none or the files are not readable JSON."""
    folder = Path(folder)
    try:
        if (folder / "chat_template.jinja").is_file():
            return (folder / "chat_template.jinja").read_text()
        for name in ("chat_template.json", "tokenizer_config.json"):
            if (folder / name).is_file():
                value = json.loads((folder / name).read_text()).get("chat_template")
                if isinstance(value, list):
                    value = next((t.get("template") for t in value if isinstance(t, dict)
                                  and t.get("name") == "default"), None)
                if isinstance(value, str):
                    return value
    except (OSError, ValueError, AttributeError):
        return None
    return None


def first_difference(a: str, b: str, context: int = 24) -> tuple[int, str, str] | None:
    """Where ``a`` and ``b`` first differ: (character offset, ``a`` there, ``b`` there), ``context`` characters
    each; None when equal."""
    if a == b:
        return None
    n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return n, a[n:n + context], b[n:n + context]


def well_formed(smoke) -> TypeGuard[dict]:
    """Whether ``smoke`` (an entry of the export's ``merged_smoke``, read from the session file: input) has what
    :func:`compare` reads, of the types it reads them as: ``question`` text, ``prompt_ids`` and ``reply_ids`` lists
    of ints, ``reply_logprobs`` / ``reply_margins`` (optional) lists of numbers."""
    def ints(v) -> bool:
        return isinstance(v, list) and all(type(x) is int for x in v)

    def numbers(v) -> bool:
        return v is None or (isinstance(v, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                           for x in v))

    return isinstance(smoke, dict) and isinstance(smoke.get("question"), str) and ints(smoke.get("prompt_ids")) \
        and ints(smoke.get("reply_ids") or []) and numbers(smoke.get("reply_logprobs")) \
        and numbers(smoke.get("reply_margins"))


def divergence(pieces: list[str], served: str) -> int | None:
    """The reply token where ``served`` (text) stops following the trained reply, given ``pieces[k]``: the trained
    reply's first k+1 tokens decoded; None when it follows all of them. Compared as text without the spaces around
    it (the client strips a reply), so one token served as two is no departure; a piece ending inside a character
    (byte-level tokens split a Han character: decoded as U+FFFD) is compared up to that character."""
    got = served.strip()
    for k, text in enumerate(pieces):
        if not got.startswith(text.rstrip("\ufffd").strip()):
            return k
    return None


def compare(smoke: dict, served_ids: list[int] | None, served_count: int | None, served_reply: str,
            training_dir: str | Path | None, served_dir: str | Path, decode,
            served_logprobs: list[tuple[str, float]] | None = None) -> Parity:
    """:class:`Parity` of the export's in-process ``smoke`` (``prompt_ids``, ``reply_ids``, and where recorded
    ``reply_logprobs`` / ``reply_margins``) and the engine's rendering (``served_ids`` from /tokenize, else
    ``served_count``), greedy ``served_reply`` and its ``served_logprobs`` ([(token text, log-prob)], None: not
    reported); ``decode(ids)`` turns ids into text (the served folder's tokenizer, special tokens skipped)."""
    want = [int(t) for t in smoke["prompt_ids"]]
    first = None
    diff_training = diff_served = ""
    if served_ids is not None:
        first = next((i for i, (x, y) in enumerate(zip(want, served_ids)) if x != y),
                     None if len(want) == len(served_ids) else min(len(want), len(served_ids)))
        if first is not None:  # what each side has there, special tokens shown (a <think>, an <|im_start|>)
            diff_training = decode(want[first:first + 8], False)
            diff_served = decode(served_ids[first:first + 8], False)
    diff = None
    trained, served = (chat_template(training_dir) if training_dir else None), chat_template(served_dir)
    if trained is not None and served is not None and (where := first_difference(trained, served)) is not None:
        diff = f"{where[0]}: {where[1]!r} vs {where[2]!r}"
    ids = [int(t) for t in smoke.get("reply_ids") or []]
    greedy = decode(ids).strip()
    pieces = [decode(ids[:k + 1]) for k in range(len(ids))]
    at = divergence(pieces, served_reply)
    margins = smoke.get("reply_margins") if isinstance(smoke.get("reply_margins"), list) else []
    margin = float(margins[at]) if at is not None and at < len(margins) else None
    lp_diff = None
    logprobs = smoke.get("reply_logprobs") if isinstance(smoke.get("reply_logprobs"), list) else []
    if served_logprobs and logprobs:
        agreed = len(pieces) if at is None else at
        text, diffs = "", []
        for k, (token, lp) in enumerate(served_logprobs[:min(agreed, len(logprobs))]):
            text += token
            if text.lstrip() != pieces[k].lstrip():  # tokenized otherwise from here: positions no longer pair up
                break
            diffs.append(abs(lp - float(logprobs[k])))
        lp_diff = round(max(diffs), 4) if diffs else None
    return Parity(prompt_training=len(want), prompt_served=len(served_ids) if served_ids is not None else served_count,
                  by_ids=served_ids is not None, first_diff=first, template_diff=diff, greedy_training=greedy,
                  greedy_served=served_reply[:len(greedy) + 40], greedy_match=at is None,
                  question=str(smoke.get("question") or ""), diff_training=diff_training, diff_served=diff_served,
                  diverged_at=at, margin=margin, logprob_diff=lp_diff, compared_tokens=len(ids))
