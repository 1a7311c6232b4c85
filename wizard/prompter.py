"""The only module that imports questionary: turns recipes.base.Question data into terminal prompts.

Uses ``unsafe_ask`` so Ctrl-C raises KeyboardInterrupt and the engine can save, print the resume command and exit 130.
"""
from __future__ import annotations

from typing import Any

from recipes.base import Question
from wizard import i18n


def _fit(label: str, indent: int = 3) -> str:
    """A choice's label wrapped to the terminal, later lines under the first one's text: prompt_toolkit cuts a long
    line at the edge (at 50 columns the model list lost its repository ids; issue 20, item 4)."""
    import shutil

    from prompt_toolkit.utils import get_cwidth

    width = shutil.get_terminal_size().columns - indent - 1
    if get_cwidth(label) <= width or width < 20:
        return label
    from wizard.console import wrap_words  # the console's own wrapping: between words, and between CJK characters

    return ("\n" + " " * indent).join(wrap_words(label, width).split("\n"))


def _wrap_question(text: str, tail: str = "") -> str:
    """A question wrapped between words to the terminal, later lines under the first one's text: the terminal folded
    long ones mid-word ("the fina|l one", zh "每个 G|PU"; issue 46 trials G and H). Its own line breaks are kept.
    ``tail``: what questionary writes after it on its last line (the keys' instruction), kept whole there or moved
    to a line of its own — it was folded "(arrow keys, En|ter)" (issue 46 trial I, N11)."""
    import shutil

    from prompt_toolkit.utils import get_cwidth

    width = shutil.get_terminal_size().columns - 3  # "? " before the first line, and the cursor's column
    lines = text.split("\n")
    if width < 20 or (all(get_cwidth(x) <= width for x in lines)
                      and get_cwidth(lines[-1]) + (1 + get_cwidth(tail) if tail else 0) <= width):
        return text
    from wizard.console import wrap_words

    mark = "#" * max(1, get_cwidth(tail))  # the tail as one unbreakable word of its width
    full = text + (" " + mark if tail else "")
    wrapped = "\n".join("\n  ".join(wrap_words(line, width).split("\n")) for line in full.split("\n"))
    if not tail:
        return wrapped
    # questionary adds " " + tail: the mark's own line keeps its indent so the tail stands under the text
    return wrapped[:-len(mark) - 1] if wrapped.endswith(" " + mark) else wrapped[:-len(mark)]


def _choice(label: str, value: Any, indent: int = 3, **kw: Any):
    """A questionary Choice whose title is ``label`` wrapped to the terminal (:func:`_fit`), the label itself kept
    for the one-line echo after the choice (:func:`_one_line_answers`)."""
    import questionary

    choice = questionary.Choice(title=_fit(label, indent), value=value, **kw)
    choice.yichui_label = label
    return choice


_echo_at = 0  # the cell where a select's echoed answer starts: "? " + the question's last line + " " (_ask sets it)


def _echo_wrapped(label: str) -> str:
    """The chosen label as echoed after its question, wrapped between words to the terminal: the terminal cut it
    mid-word at 80 columns ("(prompt → re" | "ply)", issue 46 trial J); on one line where it fits."""
    import shutil

    from prompt_toolkit.utils import get_cwidth

    from wizard.console import wrap_words

    width = shutil.get_terminal_size().columns - 1
    if _echo_at + get_cwidth(label) <= width or width - _echo_at < 20:
        return label
    return wrap_words(" " * _echo_at + label, width)[_echo_at:]


def _one_line_answers() -> None:
    """After a choice, questionary echoes its title: a wrapped one (see :func:`_fit`) would echo on two lines
    ("fits · 10.2 GiB …" then a stray "   off"). Its select prompt reads the chosen Choice through InquirerControl;
    a subclass gives the echo the title on one line."""
    import questionary.prompts.select as select
    from questionary.prompts.common import Choice, InquirerControl

    if getattr(select.InquirerControl, "yichui", False):
        return

    class OneLineAnswer(InquirerControl):
        yichui = True

        def get_pointed_at(self):
            choice = super().get_pointed_at()
            label = getattr(choice, "yichui_label", None)  # the label before _fit wrapped it (:func:`_choice`)
            if self.is_answered and label is not None:
                echo = _echo_wrapped(label)
                if echo != choice.title:
                    return Choice(echo, value=choice.value)
            return choice

    select.InquirerControl = OneLineAnswer


def _confirm_words() -> None:
    """questionary 2.1 echoes a confirm's answer as its constants "Yes"/"No" (prompts/confirm.py, imported by name):
    the catalogue's words instead, in the user's language (English was left in the zh UI: issue 46 item 14)."""
    from questionary.prompts import confirm

    confirm.YES, confirm.NO = i18n.t("ui.yes"), i18n.t("ui.no")


def _checkbox_echo(text: str, labels: list[str], titles: list[str]) -> None:
    """Say which choices a checkbox answer picked (``labels``; ``titles``: the same as the prompt showed them,
    wrapped), in the user's language. questionary 2.1 echoes "done", "done (2 selections)" or "[title]" after the
    question (prompts/checkbox.py: English, and not which ones — issue 46 item 14); on a terminal that echo is
    replaced: the cursor goes back over its lines (their display width over the terminal's columns) and the question
    is written again with the choices. Elsewhere a line follows it."""
    import shutil
    import sys

    chosen = "; ".join(labels) or i18n.t("ui.checkbox_none")
    if not sys.stdout.isatty():
        print(i18n.t("ui.checkbox_chosen", chosen=chosen), flush=True)
        return
    from prompt_toolkit.utils import get_cwidth

    n = len(titles)
    echo = "done" if n == 0 else f"[{titles[0]}]" if n == 1 else f"done ({n} selections)"
    cols = max(1, shutil.get_terminal_size().columns)
    lines = sum(max(1, -(-get_cwidth(part) // cols)) for part in f"? {text} {echo}".split("\n"))
    # CSI n F: to the start of the line n up; CSI J: clear to the end of the screen
    sys.stdout.write(f"\x1b[{lines}F\x1b[J? {text} {chosen}\n")
    sys.stdout.flush()


WORK_GAP_S = 1.0  # a question shown this long after the last answer: work ran between, keys typed then are stale


def _drop_typed_ahead() -> None:
    """Discard keys typed while work ran (a merge, a download) before this question was shown: a stray Enter there
    answered the next question with its default — it stopped another session's server (issue 46's tryout, N1). Keys
    typed while questions follow each other without work between are kept (a fast typist's answers)."""
    import sys

    try:
        if sys.stdin.isatty():
            import termios

            termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
    except (OSError, ValueError, ImportError):  # not a terminal after all, or no termios (Windows)
        pass


class QuestionaryPrompter:
    def __init__(self) -> None:
        self._answered_at: float | None = None  # time.monotonic() of the last answer

    def ask(self, q: Question, prefill: Any, answers: dict) -> Any:
        import time

        if self._answered_at is None or time.monotonic() - self._answered_at > WORK_GAP_S:
            _drop_typed_ahead()
        try:
            return self._ask(q, prefill, answers)
        finally:
            self._answered_at = time.monotonic()

    def _ask(self, q: Question, prefill: Any, answers: dict) -> Any:
        import questionary

        tail = {"select": "ui.select_instruction", "checkbox": "ui.checkbox_instruction"}.get(q.kind) or (
            ("ui.confirm_default_yes" if prefill is None or prefill else "ui.confirm_default_no")
            if q.kind == "confirm" else None)
        # a text's pre-filled answer is echoed after the question like a select's instruction: room for it on the
        # last line, or a line of its own ("…, or none): no" | "ne" at 80 columns: 46 trial L, L1)
        echoed = str(prefill) if q.kind in ("text", "path") and prefill not in (None, "") else ""
        text = _wrap_question(i18n.render(q.message), i18n.t(tail) if tail else echoed[:60])
        if q.kind == "select":
            global _echo_at
            from prompt_toolkit.utils import get_cwidth

            _echo_at = get_cwidth("? " + text.split("\n")[-1] + " ")
            _one_line_answers()
            choices = [_choice(i18n.render(c.label), c.value)
                       for c in q.resolve_choices(answers)]
            default = next((c for c in choices if c.value == prefill or str(c.value) == str(prefill)), None)
            return questionary.select(text, choices=choices, default=default,
                                      instruction=i18n.t("ui.select_instruction")).unsafe_ask()
        if q.kind == "checkbox":
            chosen = {str(x) for x in (prefill or [])}
            choices = [questionary.Choice(title=_fit(i18n.render(c.label), 6), value=c.value,
                                          checked=str(c.value) in chosen) for c in q.resolve_choices(answers)]
            picked = questionary.checkbox(text, choices=choices,
                                          instruction=i18n.t("ui.checkbox_instruction")).unsafe_ask()
            labels = [i18n.render(c.label) for c in q.resolve_choices(answers) if c.value in picked]
            _checkbox_echo(text, labels, [_fit(x, 6) for x in labels])
            return picked
        if q.kind == "confirm":
            yes = bool(prefill) if prefill is not None else True
            _confirm_words()
            # questionary 2.1 writes the answer right after a given instruction: a space between ("(y/N) no", not
            # "(y/N)no": issue 46's tryout, N4)
            return questionary.confirm(text, default=yes, instruction=i18n.t(
                "ui.confirm_default_yes" if yes else "ui.confirm_default_no") + " ").unsafe_ask()
        if q.kind == "password":
            return questionary.password(text).unsafe_ask()
        if q.kind == "path":
            # a text prompt completing paths on Tab: questionary.path shows completions while typing, and Enter
            # then closed them instead of answering (a typed folder took two Enters)
            from prompt_toolkit.completion import PathCompleter

            return questionary.text(text, default="" if prefill is None else str(prefill),
                                    completer=PathCompleter(expanduser=True),
                                    complete_while_typing=False).unsafe_ask()
        return questionary.text(text, default="" if prefill is None else str(prefill)).unsafe_ask()

