"""yichui's engine: command line, session file, answer precedence, terminal UI."""
from recipes import __version__  # noqa: F401 - one version for the engine and the steps
