"""A server's API key: generated once into a 0600 file, read back by whoever talks to the server.

The key lives only in that file (``<run>/serve/api_key``): never in the session, on a command line (the launcher
hands it to the engine inside the process) or in the server's log (the launcher removes it from there).
"""
from __future__ import annotations

import os
import secrets
from pathlib import Path


def key_file(sdir: Path) -> Path:
    """The key file in ``sdir``, created on first use: 32 random bytes, URL-safe, file mode 0600 from its creation."""
    path = sdir / "api_key"
    if not path.exists():
        sdir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(32) + "\n")
    return path


def read_key(path: str | Path | None) -> str | None:
    """The key in ``path``; None when there is no path or the file cannot be read."""
    try:
        return Path(path).read_text().strip() if path else None
    except OSError:
        return None
