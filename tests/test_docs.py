"""The README and the contracts page point at files that exist (issue 44: a figure's result file must be there)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")  # markdown links: [text](path)
PATH = re.compile(r"(?<![\w/])((?:bench/)?results/[\w./-]+?\.(?:md|jsonl|json|txt|log))")  # results named in prose


@pytest.mark.parametrize("page", ["README.md", "wizard/README.md", "bench/README.md"])
def test_every_relative_link_and_results_file_exists(page):
    doc = REPO / page
    text = doc.read_text(encoding="utf-8")
    targets = {m.group(1) for m in LINK.finditer(text) if not re.match(r"[a-z]+://", m.group(1))}
    missing = sorted(t for t in targets if not (doc.parent / t).exists() and not (REPO / t).exists())
    named = {m.group(1).rstrip(".") for m in PATH.finditer(text) if "DATE" not in m.group(1)}  # not a template
    missing += sorted(p for p in named if not (REPO / p).exists() and not (REPO / "bench" / p).exists())
    assert targets or named
    assert not missing, f"{page} points at files that do not exist: {missing}"
