"""The catalogue of user-facing text: one module per namespace (the part of a key before its first dot), each
holding ``MESSAGES = {key: {"en": ..., "zh": ...}}`` for its keys only. wizard/i18n.py merges them;
tests/test_i18n.py checks both languages, the namespaces and that every key the code uses exists."""
from __future__ import annotations

import importlib

NAMESPACES = ('cli', 'task', 'status', 'ui', 'answer', 'engine', 'deploy', 'session', 'step', 'data', 'hub', 'select_model', 'download', 'evaluate_memory', 'choose_strategy', 'train', 'export', 'evaluate', 'chat', 'memory', 'recap', 'rewards', 'training', 'serving', 'quantization',
              'evaluation')


def load() -> dict[str, dict[str, str]]:
    """Every namespace's messages in one dict.

    Raises:
        ValueError: a key outside its module's namespace, or defined twice.
    """
    out: dict[str, dict[str, str]] = {}
    for ns in NAMESPACES:
        for key, text in importlib.import_module(f"wizard.catalogue.{ns}").MESSAGES.items():
            if key.split(".")[0] != ns or key in out:
                raise ValueError(f"catalogue key {key!r} in wizard/catalogue/{ns}.py: wrong namespace or defined twice")
            out[key] = text
    return out
