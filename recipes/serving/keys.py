"""A server's API key: generated once into a 0600 file, read back by whoever talks to the server.

The key lives only in that file (``<run>/serve/api_key``): never in the session, on a command line (the launcher
hands it to the engine inside the process) or in the server's log (the launcher removes it from there). A key is
:data:`KEY_RE`: what ``secrets.token_urlsafe`` writes, or a key of the user's own of at least 16 such characters — no
whitespace, quote or backslash, which an engine would print escaped (out of the redactor's sight) or an HTTP header
would refuse (with the key in the error).
"""
from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

from recipes.rundir import ServeDir
from recipes.base import Refusal

KEY_RE = re.compile(r"[A-Za-z0-9._~+/=-]{16,512}")


class BadKey(Refusal):
    """The key file holds no usable key; ``why`` says what is wrong (the key itself is never in it)."""

    def __init__(self, path: Path, why: str):
        super().__init__("serving.bad_key", path=str(path), why=why)


def key_file(sdir: Path) -> Path:
    """The key file in ``sdir``, created on first use: 32 random bytes, URL-safe, file mode 0600 from its creation.

    Raises:
        BadKey: the file exists and holds no usable key (empty, several lines, characters outside :data:`KEY_RE`):
            an engine given an empty key serves without one, so nothing starts until it is fixed or deleted.
    """
    path = ServeDir(sdir).api_key
    if not path.exists():
        sdir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(32) + "\n")
    check(path)
    return path


def check(path: Path) -> str:
    """The key in ``path``, validated (see :class:`BadKey`)."""
    try:
        raw = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise BadKey(path, f"unreadable ({type(e).__name__})") from None
    key = raw.strip()
    if not key:
        raise BadKey(path, "empty")
    if "\n" in key:
        raise BadKey(path, "several lines")
    if not KEY_RE.fullmatch(key):
        raise BadKey(path, "characters other than letters, digits and ._~+/=- or fewer than 16 of them")
    return key


def read_key(path: str | Path | None) -> str | None:
    """The key in ``path``; None when there is no path or no usable key there."""
    try:
        return check(Path(path)) if path else None
    except BadKey:
        return None
