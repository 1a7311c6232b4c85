"""Datasets: reading and checking chat data in its common shapes (datasets.py) and the bundled demo data."""
