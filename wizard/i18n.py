"""The one catalogue of user-facing text, English and Chinese, and the functions that pick and format it.

Every message is ``CATALOG[key] = {"en": ..., "zh": ...}`` formatted with ``str.format(**args)``. The language comes
from ``--lang en|zh``, else the locale (LC_ALL / LC_MESSAGES / LANG starting with ``zh``), else English.
tests/test_i18n.py checks that every key has both languages and that every key used in the code exists.
"""
from __future__ import annotations

import os
from typing import Any, Mapping

from wizard import catalogue

LANGS = ("en", "zh")
_lang = "en"

CATALOG: dict[str, dict[str, str]] = catalogue.load()


def lang_from_argv(argv: list[str]) -> str | None:
    """The language given as ``--lang X`` / ``--lang=X`` (en or zh), or None."""
    for i, a in enumerate(argv):
        if a == "--lang" and i + 1 < len(argv) and argv[i + 1].lower() in LANGS:
            return argv[i + 1].lower()
        if a.startswith("--lang=") and a.split("=", 1)[1].lower() in LANGS:
            return a.split("=", 1)[1].lower()
    return None


def detect_lang(argv: list[str] | None = None, env: Mapping[str, str] | None = None) -> str:
    """``--lang X`` / ``--lang=X`` in argv, else the locale variables, else English."""
    given = lang_from_argv(argv or [])
    if given:
        return given
    variables = os.environ if env is None else env
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = variables.get(var)
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def set_lang(lang: str) -> None:
    global _lang
    if lang not in LANGS:
        raise ValueError(f"language must be one of {LANGS}")
    _lang = lang


def get_lang() -> str:
    return _lang


def _value(v: Any) -> Any:
    """A message's value as it formats: a Msg rendered; a list (of Msgs, names, numbers) its items rendered and joined
    as the language writes a list (:func:`join`) — a list joined with ", " before it reached the message read
    "a, b" inside Chinese text (issue 46 trial I, N12)."""
    if hasattr(v, "key") and hasattr(v, "args"):
        return render(v)
    if isinstance(v, (list, tuple)):  # names as they are: "choose_strategy.max_steps" is a key, not a message here
        return join(render(x) if hasattr(x, "key") and hasattr(x, "args") else x for x in v)
    return v


def join(items: Any) -> str:
    """Items of a list as the current language writes them: "a, b" in English, "a、b" in Chinese."""
    return ("、" if _lang == "zh" else ", ").join(str(x) for x in items)


_command: tuple[str, Any] | None = None  # (how `yichui` is typed here, the pattern of its commands in a message)


def set_command(typed: str, commands: list[str]) -> None:
    """Print the commands a message names (``yichui resume …``) as ``typed`` — the path that started this process
    when ``yichui`` is not on PATH (``.venv/bin/yichui``): the hints then work as printed (issue 46 item 1: "command
    not found"). ``commands``: the CLI's command names."""
    import re

    global _command
    # `yichui COMMAND`, `yichui -h`, and `yichui` alone in backquotes ("`yichui` starts a new one")
    _command = (typed, re.compile(r"(?<![\w./-])yichui(?= (?:" + "|".join(map(re.escape, commands))
                                  + r")\b| -h\b| --help\b|`)")) if typed != "yichui" else None


def t(key: str, /, **args: Any) -> str:
    """The text of ``key`` in the current language, formatted; an unknown key shows itself (tests catch it). The
    commands it names are spelled as they are typed here (:func:`set_command`)."""
    entry = CATALOG.get(key)
    if entry is None:
        return key + (f" {args}" if args else "")
    text = entry.get(_lang) or entry["en"]
    try:
        text = text.format(**{k: _value(v) for k, v in args.items()})
    except (KeyError, IndexError, ValueError):
        pass
    return _command[1].sub(_command[0].replace("\\", "\\\\"), text) if _command else text


def named(key: str, fallback: str) -> str:
    """The catalogue's word for a name (a step's title, a job's, a task's, a check's) where ``key`` has an entry,
    else ``fallback`` — the name as it is (a package's name, a job of a later yichui)."""
    return t(key) if key in CATALOG else fallback


def render(m: Any, /, **args: Any) -> str:
    """A recipes.base.Msg (its args may be Msgs too), a catalogue key, or literal text."""
    if hasattr(m, "key") and hasattr(m, "args"):
        return t(m.key, **m.args)
    if isinstance(m, str) and m in CATALOG:
        return t(m, **args)
    return str(m)
