"""Start a serving engine in this interpreter, with its API key read from a file instead of the command line.

    python engine_launch.py --entry vllm.entrypoints.cli.main:main [--key-file F --key-flag --api-key] -- serve DIR …

``/proc/<pid>/cmdline`` (what ``ps`` shows every user) keeps the argv this process was exec'd with, so a key
appended to ``sys.argv`` here reaches the engine's parser without ever being visible there. ``--entry`` is
``module:function`` (called with no arguments) or ``runpy:module`` (run as ``python -m module``). Standard library
only: it runs in the engine's environment.
"""
from __future__ import annotations

import importlib
import runpy
import sys


def main(argv: list[str]) -> None:
    if "--" not in argv:
        raise SystemExit("engine_launch: usage: --entry MOD:FN [--key-file F --key-flag FLAG] -- ARGS…")
    cut = argv.index("--")
    opts, rest = argv[:cut], argv[cut + 1:]
    o = dict(zip(opts[::2], opts[1::2]))
    kind, _, target = o["--entry"].partition(":")
    if "--key-file" in o:
        with open(o["--key-file"]) as f:
            rest = rest + [o["--key-flag"], f.read().strip()]
    prog = target if kind == "runpy" else kind.split(".")[0]
    sys.argv = [prog, *rest]
    if kind == "runpy":
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        getattr(importlib.import_module(kind), target)()


if __name__ == "__main__":  # guarded: engines that spawn workers re-import the main module
    main(sys.argv[1:])
