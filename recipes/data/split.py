"""What a session's trainer splits into training and held-out records, read as the trainer reads them
(recipes/training/worker.py), for the steps after training (export's calibration and parity questions, the
evaluation's held-out records): each objective's data form, and those records as conversations."""
from __future__ import annotations

from pathlib import Path

from recipes.data import datasets, preference, prompts


def records(ref: str | Path, objective: str, skip_bad: bool = False, images: bool = False) -> list:
    """The records ``datasets.train_validation`` splits for ``objective``: conversations (SFT), prompts with their
    reference answers (GRPO: recipes/data/prompts.py), pairs or KTO's labelled replies (DPO, KTO:
    recipes/data/preference.py) — so that a pair stays on one side of the split.

    Raises:
        DataError: as the objective's reader does (a file gone, malformed records without ``skip_bad``).
    """
    if objective == "sft":
        return datasets.load(ref, skip_bad=skip_bad, images=images).conversations
    if objective == "grpo":
        return prompts.load(ref, skip_bad=skip_bad).records
    return preference.load(ref, skip_bad=skip_bad).records


def as_conversations(recs: list, objective: str) -> list[list[dict]]:
    """:func:`records` as conversations: SFT's as they are, GRPO's prompts with their reference answer as the reply,
    a preference set's prompts with the chosen (desirable) reply."""
    if objective == "sft":
        return recs
    return prompts.as_conversations(recs) if objective == "grpo" else preference.chosen_conversations(recs)
