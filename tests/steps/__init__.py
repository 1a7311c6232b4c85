"""The steps' tests, one file per step (a package, so that its conftest does not shadow tests/conftest.py)."""
