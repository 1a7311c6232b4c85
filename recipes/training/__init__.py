"""Training: launching and following the trainer, and the preflight smoke run before the download."""
