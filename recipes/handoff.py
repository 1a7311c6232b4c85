"""What one step hands the steps after it, read through the step context: shared facts about the chosen model, so
that no step imports another step for them (wizard/README.md, "step protocol").

    trusted(ctx)       the user said yes to running the model's own code (every loader passes trust_remote_code)
    metadata_dir(ctx)  the folder of the model's small files (config, tokenizer, chat template)
"""
from __future__ import annotations

from pathlib import Path

from recipes.hub import snapshot


def trusted(ctx) -> bool:
    """Whether the user said yes to running the model's own code (select_model's ``trust_remote_code``)."""
    return bool(ctx.outputs("select_model").get("trust_remote_code"))


def metadata_dir(ctx) -> Path:
    """Where the model's small files are: select_model's metadata folder (a v4 session's downloaded model, set by its
    migration), else — that folder gone — fetched again (:func:`recipes.hub.snapshot.fetch_metadata`).

    Raises:
        StepError: as :func:`recipes.hub.snapshot.fetch`.
    """
    sel = ctx.outputs("select_model")
    d = sel.get("meta_dir")
    if d and (Path(d) / "config.json").is_file():
        return Path(d)
    return snapshot.fetch_metadata(ctx.home, ctx.progress, sel)[0]
