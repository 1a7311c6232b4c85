#!/usr/bin/env python3
"""GSM8K for a machine that reaches no hub: openai/grade-school-math's JSON lines written in openai/gsm8k's layout.

    python bench/gsm8k_parquet.py grade_school_math/data .gsm8k   # → .gsm8k/main/{train,test}-00000-of-00001.parquet

The hub dataset openai/gsm8k ("main" config) is the same 7,473 training and 1,319 test problems, each a
``question`` and an ``answer`` ending in ``#### <number>``; serve_chain.py ``--gsm8k`` places the folder where the
evaluate step looks before it fetches (YICHUI_HOME/datasets/hf/openai/gsm8k).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def main(src: str, dest: str) -> None:
    out = Path(dest) / "main"
    out.mkdir(parents=True, exist_ok=True)
    for split in ("train", "test"):
        rows = [json.loads(line) for line in (Path(src) / f"{split}.jsonl").read_text().splitlines() if line.strip()]
        table = pa.table({"question": [r["question"] for r in rows], "answer": [r["answer"] for r in rows]})
        pq.write_table(table, out / f"{split}-00000-of-00001.parquet")
        print(f"{split}: {len(rows)} problems")


if __name__ == "__main__":
    main(*sys.argv[1:3])
