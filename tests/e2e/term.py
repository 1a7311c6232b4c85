"""A yichui process in a real pseudo-terminal (pexpect), shared by the pty tests: ``ask`` waits for a prompt's
text, then types; the transcript is kept for failure messages."""
from __future__ import annotations

import re

import pexpect
from conftest import YICHUI, env_for

DOWN, UP, ENTER, CLEAR, CTRL_C, SPACE = "\x1b[B", "\x1b[A", "\r", "\x15", "\x03", " "


class Term:
    def __init__(self, home, *args, lang="en", rows=50, cols=120, **env):
        env = env_for(home, TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1", COLUMNS=str(cols),
                      LANG="zh_CN.UTF-8" if lang == "zh" else "C.UTF-8", **env)
        self.p = pexpect.spawn(YICHUI, list(args), env=env, encoding="utf-8", dimensions=(rows, cols), timeout=90)
        self.log: list[str] = []
        self.p.logfile_read = self

    def write(self, s):  # pexpect logfile
        self.log.append(s)

    def flush(self):
        pass

    def screen(self) -> str:
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", "".join(self.log))

    def expect(self, text, timeout=90):
        """Wait for ``text``; a space in it matches a line break too (the terminal's lines wrap between words)."""
        try:
            self.p.expect(r"\s+".join(re.escape(w) for w in text.split(" ")), timeout=timeout)
        except (pexpect.TIMEOUT, pexpect.EOF):
            raise AssertionError(f"never saw {text!r}; screen ended with:\n{self.screen()[-3000:]}") from None

    def ask(self, prompt, keys="", clear=False, enter=True):
        self.expect(prompt)
        if clear:
            self.p.send(CLEAR)
        self.p.send(keys)
        if enter:
            self.p.send(ENTER)

    def finish(self, timeout=300) -> int:
        self.p.expect(pexpect.EOF, timeout=timeout)
        self.p.close()
        return self.p.exitstatus

    def quit(self) -> int:
        """Ctrl-C, then the exit status."""
        self.p.send(CTRL_C)
        return self.finish(30)
