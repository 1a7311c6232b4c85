"""Evaluation: the held-out comparison (heldout.py) and lm-eval benchmarks (harness.py)."""
