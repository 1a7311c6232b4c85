"""The demo's own model: the tiny chat model the project builds offline (tiny_model.py)."""
