"""The documentation's pages point at files that exist (issue 44: a figure's result file must be there), links resolve
from the page that holds them (as GitHub renders them), and the README stays a front door (issue 45: ≤ 150 lines)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")  # markdown links: [text](path)
PATH = re.compile(r"(?<![\w/.])((?:bench/)?results/[\w./-]+?\.(?:md|jsonl|json|txt|log))")  # results named in prose
PAGES = ["README.md", "wizard/README.md", "bench/README.md", "recipes/serving/tables/README.md",
         *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md"))]


@pytest.mark.parametrize("page", PAGES)
def test_every_relative_link_and_results_file_exists(page):
    doc = REPO / page
    text = doc.read_text(encoding="utf-8")
    targets = {m.group(1) for m in LINK.finditer(text) if not re.match(r"[a-z]+://|mailto:", m.group(1))}
    missing = sorted(t for t in targets if not (doc.parent / t).exists())  # relative to the page, not the repository
    named = {m.group(1).rstrip(".") for m in PATH.finditer(text) if "DATE" not in m.group(1)}  # not a template
    missing += sorted(p for p in named if not (REPO / p).exists() and not (REPO / "bench" / p).exists())
    assert not missing, f"{page} points at files that do not exist: {missing}"


def test_the_pages_are_found_and_hold_links():
    assert len(PAGES) >= 12  # README, contracts, bench, tables, docs/ (use, troubleshooting, developers, not-yet, 9 steps)
    assert all(LINK.search((REPO / p).read_text(encoding="utf-8")) or PATH.search((REPO / p).read_text(encoding="utf-8"))
               for p in ("README.md", "docs/steps/2-evaluate_memory.md", "docs/not-yet.md"))


def test_readme_is_a_front_door():
    """≤ 150 lines; the two commands first (CI runs the second: .ci/run); every step and docs page linked from it."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    assert "./install.sh && .venv/bin/yichui demo" in block
    assert "./install.sh --dev && .venv/bin/python -m pytest -q" in block
    assert ".venv/bin/python -m pytest -q" in (REPO / ".ci" / "run").read_text()
    linked = {m.group(1).rstrip("/") for m in LINK.finditer(text)}
    for p in sorted((REPO / "docs").rglob("*.md")):
        rel = str(p.relative_to(REPO))
        assert rel in linked or str(p.parent.relative_to(REPO)) in linked, f"README does not lead to {rel}"


@pytest.mark.parametrize("page", ["README.md", "wizard/README.md"])
def test_every_measured_figure_points_at_its_result(page):
    """Issue 44: a figure (a percentage, a ratio ×N, GiB, tokens/s) in the README or the contracts page stands in a
    paragraph or table row that links the result file (bench/results/) or the test that measures it."""
    text = (REPO / page).read_text(encoding="utf-8")
    figure = re.compile(r"\d[\d.,]*\s*(?:%|×|GiB|tokens/s)")
    units = [u for u in re.split(r"\n\s*\n|\n(?=\|)", text) if figure.search(u)]  # paragraphs and table rows
    bare = [u.strip()[:120] for u in units if "results/" not in u and "tests/" not in u and "bench/" not in u]
    assert len(units) >= (10 if page == "README.md" else 1) and not bare, bare
