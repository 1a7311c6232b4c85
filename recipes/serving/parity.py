"""Train→serve parity (issue 48): does the engine show the served model the prompts it was trained on, and does it
answer as the merged model does in-process?

What is compared, for the sample question the train and export steps already asked:

- the prompt's tokens: the export step rendered the question through the chat template training used and recorded
  its token ids (recipes/quantization/quality.py smoke: ``prompt_ids``); the engine's rendering is read from its
  ``/tokenize`` endpoint where it has one (vLLM, SGLang: id by id), else from the completion's
  ``usage.prompt_tokens`` (transformers serve: the count). A difference fails the deploy step;
- the chat templates themselves: the served folder's against the training tokenizer's (the adapter's folder, which
  the trainer saved with it) — where they first differ is named in the failure;
- the first greedy reply tokens: the merged model's own in-process greedy reply (``reply_ids``, the export step's)
  against the engine's greedy reply. A difference is said as a warning, not a failure: an engine's kernels (and a
  quantized copy) may break a near-tie the other way without anything being wrong with the rendering.

The end-of-turn tokens are the deploy step's other check (replies must stop: recipes/deploy.py stop_cause).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Parity:
    """The comparison of one prompt. ``prompt_training``: tokens training renders the question to;
    ``prompt_served``: the engine's (None: it said nothing); ``by_ids``: the engine's ids were compared one by one
    (else the counts); ``first_diff``: the first differing position (ids compared); ``template_diff``: where the
    served folder's chat template first differs from training's (None: the same, or one of them has none);
    ``greedy_training`` / ``greedy_served``: the first greedy reply tokens of each, as text; ``greedy_match``."""

    prompt_training: int
    prompt_served: int | None
    by_ids: bool
    first_diff: int | None
    template_diff: str | None
    greedy_training: str
    greedy_served: str
    greedy_match: bool

    @property
    def prompt_ok(self) -> bool:
        return self.prompt_served == self.prompt_training and self.first_diff is None and self.template_diff is None

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


def compare(smoke: dict, served_ids: list[int] | None, served_count: int | None, served_reply: str,
            training_dir: str | Path | None, served_dir: str | Path, decode) -> Parity:
    """:class:`Parity` of the export's in-process ``smoke`` (``prompt_ids``, ``reply_ids``) and the engine's
    rendering (``served_ids`` from /tokenize, else ``served_count``) and greedy ``served_reply``; ``decode(ids)``
    turns reply ids into text (the served folder's tokenizer, special tokens skipped)."""
    want = [int(t) for t in smoke["prompt_ids"]]
    first = None
    if served_ids is not None:
        first = next((i for i, (x, y) in enumerate(zip(want, served_ids)) if x != y),
                     None if len(want) == len(served_ids) else min(len(want), len(served_ids)))
    diff = None
    trained, served = (chat_template(training_dir) if training_dir else None), chat_template(served_dir)
    if trained is not None and served is not None and (where := first_difference(trained, served)) is not None:
        diff = f"{where[0]}: {where[1]!r} vs {where[2]!r}"
    greedy = decode(smoke.get("reply_ids") or []).strip()
    return Parity(prompt_training=len(want), prompt_served=len(served_ids) if served_ids is not None else served_count,
                  by_ids=served_ids is not None, first_diff=first, template_diff=diff, greedy_training=greedy,
                  greedy_served=served_reply[:len(greedy) + 40], greedy_match=served_reply.strip().startswith(greedy))
