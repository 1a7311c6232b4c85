"""yichui's engine: command line, session file, answer precedence, terminal UI."""
__version__ = "0.1.0"
