"""The memory model: peak GPU memory for training and serving from config.json alone (model.py), and the
planner that ranks the configurations that fit by predicted speed (planner.py)."""
