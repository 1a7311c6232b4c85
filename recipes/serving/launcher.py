"""Entry point that starts a serving engine in this interpreter, its API key read from a file and kept out of sight.

    python launcher.py --entry vllm.entrypoints.cli.main:main [--key-file F --key-flag --api-key] -- serve DIR …

Two places would show the key, and both are closed here:

* the command line: ``/proc/<pid>/cmdline`` (what ``ps`` shows every user) keeps the argv this process was exec'd
  with, so a key appended to ``sys.argv`` here reaches the engine's parser without ever being visible there;
* the log: engines print their arguments when they start (vLLM's "non-default args: {… 'api_key': [...]}", SGLang's
  ``server_args=ServerArgs(… api_key=…)``). With a key, this process first forks a *redactor*: the engine's stdout
  and stderr (and those of every process it starts, which inherit them) become a pipe, and the redactor copies the
  pipe to the real output (the server log) with every occurrence of the key replaced by ``<redacted>``.

``--entry`` is ``module:function`` (called with no arguments) or ``runpy:module`` (run as ``python -m module``).
Standard library only: it runs in the engine's environment.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import runpy
import signal
import sys

MASK = b"<redacted>"


def redact(src: int, dst: int, secret: bytes) -> None:
    """Copy ``src`` to ``dst`` until end of file, every ``secret`` replaced by :data:`MASK`. A key split across two
    reads is still found: the last ``len(secret) - 1`` bytes wait for the next read."""
    keep = len(secret) - 1
    pending = b""
    while True:
        chunk = os.read(src, 65536)
        if not chunk:
            break
        pending = (pending + chunk).replace(secret, MASK)
        cut = max(0, len(pending) - keep)
        nl = pending.rfind(b"\n", 0, cut) + 1 or cut  # whole lines when possible: logs stay readable when tailed
        _write_all(dst, pending[:nl])
        pending = pending[nl:]
    _write_all(dst, pending.replace(secret, MASK))


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


def _start_redactor(secret: bytes) -> None:
    """Fork the redactor and point this process's stdout and stderr at it (see the module docstring)."""
    r, w = os.pipe()
    if os.fork() == 0:  # the redactor: outlives a SIGTERM to the group, so the engine's last lines still get through
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        os.close(w)
        try:
            redact(r, 1, secret)
        finally:
            os._exit(0)
    os.close(r)
    os.dup2(w, 1)
    os.dup2(w, 2)
    os.close(w)


KEY_RE = r"[A-Za-z0-9._~+/=-]{16,512}"  # recipes/serving/keys.py KEY_RE (this file runs in the engine's environment)


def _fail(text: str) -> None:
    """One line on stderr and exit 2: the launcher was given something it cannot start from."""
    sys.stderr.write(f"launcher: {text}\n")
    raise SystemExit(2)


def main(argv: list[str]) -> None:
    import re

    if "--" not in argv:
        _fail("usage: --entry MOD:FN [--key-file F --key-flag FLAG] -- ARGS…")
    cut = argv.index("--")
    opts, rest = argv[:cut], argv[cut + 1:]
    if len(opts) % 2:
        _fail(f"options come in pairs: {' '.join(opts)}")
    o = dict(zip(opts[::2], opts[1::2]))
    if "--entry" not in o:
        _fail("--entry MOD:FN or runpy:MODULE is required")
    kind, _, target = o["--entry"].partition(":")
    if not target:
        _fail(f"--entry {o['--entry']!r}: give MOD:FN or runpy:MODULE")
    if ("--key-file" in o) != ("--key-flag" in o):
        _fail("--key-file and --key-flag go together")
    if "--key-file" in o:
        try:
            with open(o["--key-file"]) as f:
                key = f.read().strip()
        except (OSError, UnicodeDecodeError) as e:
            _fail(f"cannot read the key file {o['--key-file']}: {type(e).__name__}")
        if not re.fullmatch(KEY_RE, key):  # an empty key would start the engine without authentication
            _fail(f"the key file {o['--key-file']} holds no usable key (empty, several lines or odd characters)")
        sys.stdout.flush()
        sys.stderr.flush()
        _start_redactor(key.encode())
        # one token, FLAG=KEY: a key that begins with "-" (secrets.token_urlsafe writes one in 64) read as an option
        # failed SGLang's start ("argument --api-key: expected one argument", on an H100, 2026-12-06)
        rest = rest + [f"{o['--key-flag']}={key}"]
    prog = target if kind == "runpy" else kind.split(".")[0]
    sys.argv = [prog, *rest]
    if kind == "runpy":
        try:
            found = importlib.util.find_spec(target) is not None
        except ImportError:
            found = False
        if not found:
            _fail(f"the engine's module {target} is not installed in {sys.executable}")
        runpy.run_module(target, run_name="__main__", alter_sys=True)  # the engine's own errors keep their traceback
        return
    try:
        module = importlib.import_module(kind)
    except ImportError as e:
        _fail(f"cannot import the engine's entry point {o['--entry']}: {e}")
    getattr(module, target)()


if __name__ == "__main__":  # guarded: engines that spawn workers re-import the main module
    main(sys.argv[1:])
