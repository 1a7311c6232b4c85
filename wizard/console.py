"""The only module that prints (rich). Human output on stdout, errors on stderr; live views only on a terminal."""
from __future__ import annotations

import contextlib
import os
import time
from typing import Any, Sequence

from rich.console import Console
from rich.live import Live
from rich.progress import (BarColumn, DownloadColumn, MofNCompleteColumn, Progress, ProgressColumn,
                           TaskProgressColumn, TextColumn, TimeRemainingColumn)
from rich.table import Column
from rich.table import Table
from rich.text import Text

from wizard import i18n


# C0 and C1 control characters other than tab and newline, shown as \\xNN: text from outside (a session file, an
# event, a file name in a message) must not drive the terminal — an ESC sequence could recolour, move the cursor or
# retitle the window (trial S). rich strips only BEL, BS, VT, FF and CR.
_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x00, 0x09), *range(0x0b, 0x20), *range(0x7f, 0xa0)]}


def printable(text: str) -> str:
    """``text`` with control characters (ESC, NUL, CR, …; not tab or newline) written as ``\\xNN``."""
    return text.translate(_CONTROLS)


class _BinarySpeed(ProgressColumn):
    """Transfer speed in MiB/s (2^20 bytes), the unit of the sizes beside it (rich's own column is decimal MB/s)."""

    def render(self, task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("?" if speed is None else f"{speed / 2**20:.1f} MiB/s", style="progress.data.speed")


class _Bar:
    """The handle a step's ``ctx.progress`` yields; a no-op when there is no terminal.
    ``file(name, total)`` adds a sub-bar (one per file being downloaded), removed by its ``done()``."""

    def __init__(self, progress: Progress | None = None, task=None):
        self._p, self._task = progress, task
        self._moved = False

    def update(self, completed=None, advance=None, total=None, **fields: Any) -> None:
        if self._p is None:
            return
        if completed is not None and advance is None and not self._moved:
            # where it starts (a download's bytes already on disk): not progress made now — as an update it counted
            # in rich's rate, which showed 81–321 MiB/s from a hub sending 0.15 MB/s (issue 46 item 14)
            self._p.reset(self._task, completed=completed, **({"total": total} if total is not None else {}))
            return
        self._moved = True
        kw = {k: v for k, v in (("completed", completed), ("advance", advance), ("total", total)) if v is not None}
        self._p.update(self._task, **kw)

    def file(self, name: str, total: float) -> "_Bar":
        if self._p is None:
            return _Bar()
        return _Bar(self._p, self._p.add_task("  " + printable(name), total=total))  # a hub's file name

    def done(self) -> None:
        if self._p is not None:
            self._p.remove_task(self._task)


class _Lines(_Bar):
    """The handle without a terminal (a pipe, a log file): a plain line of how far it is at most every ``EVERY``
    seconds, and one at the end, so a first demo's model build or a long download piped to a log is not minutes of
    silence (issue 46, tryout)."""

    EVERY = 10.0  # seconds: nothing silent past 10 s (46 trial N: 15–17 s between pre-training lines)

    def __init__(self, say, description: str, total: float | None, unit: str):
        super().__init__()
        self._say, self._desc, self._total, self._unit = say, description, total, unit
        self._done, self._last = 0.0, time.monotonic()
        self._said: str | None = None

    def update(self, completed=None, advance=None, total=None, **fields: Any) -> None:
        self._total = total if total is not None else self._total
        self._done = completed if completed is not None else self._done + (advance or 0)
        if time.monotonic() - self._last >= self.EVERY:
            self.say_now()

    def say_now(self) -> None:
        self._last = time.monotonic()
        line = self._line()
        if line != self._said:  # nothing moved since the last line: not repeated
            self._said = line
            self._say(line)

    def _line(self) -> str:
        mib = self._unit == "B"
        done, total = (self._done / 2**20, self._total / 2**20 if self._total else None) if mib else \
            (self._done, self._total)
        unit = " MiB" if mib else ""
        if total:
            return f"  {self._desc}: {done:,.0f}/{total:,.0f}{unit} ({100 * done / total:.0f} %)"
        return f"  {self._desc}: {done:,.0f}{unit}"


# what a command to copy starts with: yichui and one of its commands (or an option), pip install, tensorboard --logdir
_SUBCOMMANDS = {"run", "demo", "resume", "replay", "show", "status", "stop", "attach", "delete", "serve", "chat",
                "estimate", "download", "doctor", "steps", "logs", "start"}


def _cjk(c: str) -> bool:
    return "\u2e80" <= c <= "\u9fff" or "\uff00" <= c <= "\uffef" or "\u3000" <= c <= "\u303f"


def _command_starts(w: str, nxt: str) -> bool:
    base = w.rstrip("`").lstrip("(（“\"'`")
    return (base.endswith("yichui") and (nxt.strip("`),.") in _SUBCOMMANDS or nxt.startswith("-"))) \
        or (base.endswith("pip") and nxt == "install") or (base == "tensorboard" and nxt.startswith("--")) \
        or (base.endswith(("python", "python3")) and nxt == "-m") \
        or (w.startswith("`") and w.count("`") == 1)


def _words(line: str) -> list[str]:
    """The words of ``line`` for wrapping, a command to copy kept as one: from ``yichui <command>`` (``pip install``,
    ``tensorboard --logdir``, or a backtick) to the word that closes it (a backtick, a parenthesis, a full stop, a
    comma) or the first word of Chinese text after it, so that the terminal never shows it split over two lines a
    copy would break; ``yichui`` as a name in a sentence is a word like another."""
    words = line.split(" ")
    out: list[str] = []
    command = False
    for i, w in enumerate(words):
        # "… --logdir PATH (or copy it …)", "… install X — `yichui doctor` …": what follows is not the command
        if command and not (w and (_cjk(w[0]) or w[0] in "(（—–" or (w[0] == "`" and "`" not in out[-1]))):
            out[-1] += " " + w
            command = not (any(c in w for c in "`)）。") or w.endswith((".", ",", ";", "，", "；")))
            continue
        out.append(w)
        command = _command_starts(w, words[i + 1] if i + 1 < len(words) else "")
    return out


# Chinese punctuation a line never starts with: it stays with the character before it
_NO_BREAK_BEFORE = "，。、；：！？）」』》”’"
_NO_BREAK_AFTER = tuple("（「『《“‘")  # opening marks a line never ends with


def _units(line: str) -> list[tuple[str, bool]]:
    """``line`` as the pieces a wrap may break between, each with whether a space precedes it: a word (or a whole
    command, :func:`_words`) of Latin text; within Chinese text every character (a closing mark kept with the one
    before it)."""
    out: list[tuple[str, bool]] = []
    for k, w in enumerate(_words(line)):
        command = ""
        if " " in w and any(_cjk(c) for c in w[:w.index(" ")]):
            # Chinese text run into a command ("继续请运行：.venv/bin/yichui resume ID"): the text may break, the
            # command after it stays whole — as one piece the line overran and the terminal cut the id (46 J)
            cut = max(i for i, c in enumerate(w[:w.index(" ")]) if _cjk(c)) + 1
            w, command = w[:cut], w[cut:]
        if not command and (" " in w or not any(_cjk(c) for c in w)):
            out.append((w, k > 0))
            continue
        piece, first = "", True
        for c in w:
            if not _cjk(c) or piece.endswith("/"):  # "token/秒" is one unit, not "token/" | "秒" (46 J)
                piece += c
                continue
            if piece:
                out.append((piece, k > 0 and first))
                piece, first = "", False
            if c in _NO_BREAK_BEFORE and out and not first:
                out[-1] = (out[-1][0] + c, out[-1][1])
                continue
            out.append((c, k > 0 and first))
            first = False
        if piece:
            out.append((piece, k > 0 and first))
        if command:
            out.append((command, False))
    # an opening bracket never ends a line ("或提供留出文件（" | "evaluate.heldout=file）"): it goes with what follows
    merged: list[tuple[str, bool]] = []
    for piece, space in out:
        if merged and merged[-1][0].endswith(_NO_BREAK_AFTER) and not space:
            merged[-1] = (merged[-1][0] + piece, merged[-1][1])
        else:
            merged.append((piece, space))
    return merged


# the lines of code the steps print to copy (deploy.curl, deploy.python): never broken, nor the lines indented
# deeper that follow one (a command's `\` continuations, a call's arguments)
_CODE = ("curl ", "from openai ", "client = ", "reply = ", "print(")


def wrap_words(text: str, width: int) -> str:
    """``text`` wrapped at ``width`` terminal cells between words — and between the characters of Chinese text —
    (the terminal folded it mid-word: issue 46's tryout), each continuation indented as its line; a word or command
    wider than the line stays whole for the terminal to fold (copying it then gives it back unbroken)."""
    from rich.cells import cell_len

    out = []
    code = None  # the indentation of the statement of code above, None outside code
    for line in text.split("\n"):
        depth = len(line) - len(line.lstrip(" "))
        if line.lstrip(" ").startswith(_CODE):
            code = depth
        elif code is None or depth <= code:
            code = None
        if code is not None or cell_len(line) <= width:
            out.append(line)  # a line of code (deploy's curl and Python example) stays whole to copy
            continue
        indent = " " * depth
        cur = indent
        for piece, space in _units(line.lstrip(" ")):
            candidate = cur + (" " if space and cur.strip() else "") + piece
            if cur.strip() and cell_len(candidate) > width:
                out.append(cur)
                candidate = indent + piece
            cur = candidate
        out.append(cur)
    return "\n".join(out)


@contextlib.contextmanager
def _unechoed():
    """While a live view is drawn, keys typed are not echoed (an Enter moved the cursor and the view drew its title
    again below: issue 46 item 14) and are dropped when it ends (they would answer the next question). No-op without
    a terminal on stdin."""
    import sys

    try:
        import termios

        fd = sys.stdin.fileno()
        before = termios.tcgetattr(fd) if sys.stdin.isatty() else None
    except (ImportError, OSError, ValueError, AttributeError):
        before = None
    if before is None:
        yield
        return
    quiet = list(before)
    quiet[3] &= ~termios.ECHO
    try:
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
        yield
    finally:
        try:
            termios.tcflush(fd, termios.TCIFLUSH)
            termios.tcsetattr(fd, termios.TCSANOW, before)
        except (OSError, termios.error):
            pass


def sane_columns() -> None:
    """COLUMNS=0 (or "abc", or 5) made rich print nothing at all, --help included: such a value is dropped, and the
    terminal's own width (or 80) is used instead of a width nothing fits in."""
    cols = os.environ.get("COLUMNS", "")
    if cols and not (cols.isdigit() and int(cols) >= 20):
        del os.environ["COLUMNS"]


class UI:
    def __init__(self):
        self.out = Console(highlight=False, soft_wrap=True)
        self.err = Console(stderr=True, highlight=False, soft_wrap=True)

    @property
    def is_terminal(self) -> bool:
        return self.out.is_terminal

    def _fit(self, console: Console, text: str) -> str:
        """On a terminal, ``text`` wrapped between words at its width; piped or redirected, as it is (one line per
        line: logs and the tests read them whole)."""
        text = printable(text)
        return wrap_words(text, console.width) if console.is_terminal else text

    def say(self, text: str = "") -> None:
        self.out.print(Text(self._fit(self.out, text)))

    def success(self, text: str) -> None:
        self.out.print(Text(self._fit(self.out, text), style="bold green"))

    def warn(self, text: str) -> None:
        self.err.print(Text(self._fit(self.err, text), style="yellow"))

    def error(self, text: str) -> None:
        self.err.print(Text(self._fit(self.err, i18n.t("ui.error_prefix") + text), style="bold red"))

    def step_header(self, i: int, n: int, name: str, done: bool = False, skipped: bool = False) -> None:
        title = i18n.t(f"step.{name}.title")
        if skipped:  # nothing to do for this session (no download for an endpoint): not "done earlier"
            self.out.print(Text(f"– [{i}/{n}] {title} — " + i18n.t("ui.step_not_needed"), style="dim"))
        elif done:
            self.out.print(Text(f"✓ [{i}/{n}] {title} — " + i18n.t("ui.step_already_done"), style="dim"))
        else:
            self.out.rule(Text(f"[{i}/{n}] {title}", style="bold cyan"), align="left")

    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        # the title as a line of its own, wrapped between words at the terminal's width: rich wraps a title at the
        # table's width, and cut "(22.5 GiB" / ")," at 80 columns (issue 46 trial I, N11)
        if title:
            self.out.print(Text(self._fit(self.out, title), style="italic"))
        t = Table(title_justify="left")
        cells = [["" if v is None else printable(str(v)) for v in r] for r in rows]
        # a column is no narrower than its longest word (up to 40) while the table fits the terminal: words wrap
        # whole, not "unfinish/ed" or a URL folded mid-port (issue 20, item 13)
        mins = [min(40, max((len(w) for r in cells for w in (r[i].split() if i < len(r) else [])), default=0))
                for i in range(len(columns))]
        # the first column (ids, names) is never cut: its whole width counts; where even whole words do not fit
        # (40 columns) rich's own folding is left to fit the table to the terminal
        first = max([len(columns[0]) if columns else 0] + [len(r[0]) for r in cells if r])
        if len(mins) < 2 or first + sum(mins[1:]) + 3 * len(mins) + 1 > self.out.width:
            mins = [0] * len(mins)
        for i, c in enumerate(columns):
            t.add_column(c, no_wrap=i == 0, overflow="fold", min_width=(mins[i] or None) if i else None)
        for r in cells:  # as Text: a value in brackets ("[/x]" in a session file, a log) is not rich markup
            t.add_row(*(Text(c) for c in r))
        self.out.print(t)

    @contextlib.contextmanager
    def progress(self, description: str, total: float | None = None, unit: str = ""):
        description = printable(description)
        if not self.is_terminal:
            self.say(description)
            lines = _Lines(self.say, description, total, unit)
            yield lines
            if lines._said is not None:  # a long one said how far it was: where it ended, too
                lines.say_now()
            return
        narrow = self.out.width < 100  # 80 columns: one line per row, the name cut short rather than wrapped
        cols = [TextColumn("{task.description}", markup=False, table_column=Column(no_wrap=True, overflow="ellipsis",
                                                                     max_width=24 if narrow else 48)),
                BarColumn(bar_width=12 if narrow else 40), TaskProgressColumn()]
        if unit == "B":
            cols += [DownloadColumn(binary_units=True, table_column=Column(no_wrap=True)),
                     _BinarySpeed(table_column=Column(no_wrap=True))]
        elif unit and total:  # counted things (steps): "120/300"
            cols += [MofNCompleteColumn(table_column=Column(no_wrap=True))]
        cols += [TimeRemainingColumn()]
        with Progress(*cols, console=self.out, transient=False) as p:
            task = p.add_task(description, total=total)
            yield _Bar(p, task)
            if next(x for x in p.tasks if x.id == task).total is None:  # an open-ended one ended: shown full, not an empty bar left behind
                p.update(task, total=1, completed=1)

    @contextlib.contextmanager
    def live(self, title: str):
        """Yield ``update(fields)``: a refreshed table on a terminal, a plain line (at most every 2 s) otherwise."""
        def render(fields: dict) -> Table:
            t = Table(title=Text(title), title_justify="left", show_header=False)
            t.add_column(style="cyan"); t.add_column()
            for k, v in fields.items():
                if not k.startswith("_"):  # "_final" and the like steer the view, they are not shown
                    t.add_row(Text(printable(k)), Text(printable(str(v))))  # not markup: the values come from the trainer's events
            return t

        if self.is_terminal:
            lv = Live(render({}), console=self.out, refresh_per_second=4, transient=False)
            lv.start()
            with _unechoed():
                try:
                    yield lambda fields: lv.update(render(fields))
                finally:
                    try:
                        lv.stop()
                    except OSError:  # the terminal is gone (SIGHUP, a dropped SSH link): nothing left to draw on
                        pass
            return
        last = [0.0]

        def line(fields: dict) -> None:
            if time.monotonic() - last[0] >= 2 or fields.get("_final"):
                last[0] = time.monotonic()
                self.say("  " + "  ".join(f"{k}={v}" for k, v in fields.items() if not k.startswith("_")))
        yield line
