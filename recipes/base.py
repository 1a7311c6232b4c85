"""The step contract every recipe module fulfils (see wizard/README.md, "Step protocol").

A step is a module under ``recipes/`` exposing ``name``, ``requires``, ``questions(ctx)``, ``run(ctx, answers)`` and
``is_done(ctx, record)``. Steps never import questionary or rich: they ask through :class:`Question` data and report
through the :class:`Ctx` the engine hands them, so each one runs from plain answers in a temporary directory.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ContextManager, Protocol, Sequence, TypeVar

H = TypeVar("H")  # a hand-off record type (recipes/handoff.py; not imported here: handoff builds on this module)

KINDS = ("text", "int", "float", "select", "checkbox", "confirm", "path", "password")


@dataclass(frozen=True)
class Msg:
    """A user-facing message: a catalogue key (wizard/i18n.py) and the values it formats with."""

    key: str
    args: dict = field(default_factory=dict)
    # a validator's refusal of what the answer names (the data file's records), not of the answer: said alone, not
    # as "KEY=VALUE is not valid: …" (which blamed a valid answer for the file's malformed records; issue 46 trial G)
    alone: bool = False


def msg(key: str, /, **args: Any) -> Msg:
    return Msg(key, args)


def in_range(lo, hi):
    """A Question validator: the value lies in [lo, hi] (``.bounds`` says which, for `yichui steps --keys`)."""
    def check(v, a):
        return None if lo <= v <= hi else Msg("answer.out_of_range", {"lo": lo, "hi": hi})
    check.bounds = (lo, hi)  # type: ignore[attr-defined]
    return check


@dataclass(frozen=True)
class Choice:
    """One option of a ``select`` or ``checkbox`` question. ``label`` is literal text (model ids) or a catalogue :class:`Msg`."""

    value: Any
    label: str | Msg
    # shown so that the reason is said where it is looked for (Q-GaLore, Megatron), never accepted: not a value
    # `yichui steps --keys` lists as allowed
    refused: bool = False


Answers = dict  # key → parsed value, in the order the questions were answered


@dataclass
class Question:
    """A question as data (copier's model). The engine decides whether and how it is asked.

    Attributes:
        key: answer key, unique within the step; addressed as ``step.key`` by ``--set``.
        kind: one of KINDS; ``int``/``float`` are text prompts parsed and checked by the engine.
        message: catalogue key of the prompt text (a Msg when it carries values).
        default: a value, or a function of the answers given so far in this step.
        choices: for ``select`` and ``checkbox``: the options, or a function of the answers so far. A checkbox's
            answer is the list of chosen values (``--set step.key=a,b``; empty: ``--set step.key=``).
        validate: ``(value, answers) -> Msg | None``; a Msg is shown and the question asked again
            (non-interactively: the run stops naming ``step.key``).
        when: ``(answers) -> bool``; False skips the question (and drops any stale answer).
        secret: never written to the session; read from ``env`` or asked with a hidden prompt.
        env: environment variable that supplies a secret.
        volatile: the answer names a resource of this machine at this moment (a free port): a replayed answer that
            no longer validates gives way to the next source, with a note, as a resumed one does.
        optional: a text answer may be empty (``--set step.key=``): "none" (e.g. extra engine options).
        way_back: keys of earlier questions of this step that lead here (e.g. the hub endpoint leads to the model
            id). Interactively, after a refused answer the user chooses: answer again, one of ``alternatives``, or
            go back to one of these — so an answer that cannot pass here (no network) is never a dead end.
        alternatives: ``(answers) -> [Choice]`` offered after a refused answer (e.g. hub mirrors).
        asked_if: catalogue key (or a Msg, when it needs values) saying when the question is asked (for a ``--set``
            of it that is not used).
        implied: ``(answers) -> (value, source) | None``: an earlier step's answer that settles this one (the deploy
            engine chosen at export; ``source`` names it, e.g. ``export.serve_with``). Used without asking when it
            validates, unless ``--set`` or a replay gives another, and shown as a line; asked when it does not
            validate, the reason shown.
    """

    key: str
    kind: str
    message: str | Msg  # a catalogue key, or a Msg where the prompt names values (the plan's GPU)
    default: Any = None
    choices: Sequence[Choice] | Callable[[Answers], Sequence[Choice]] = ()
    validate: Callable[[Any, Answers], Msg | None] | None = None
    when: Callable[[Answers], bool] | None = None
    secret: bool = False
    env: str | None = None
    volatile: bool = False
    optional: bool = False
    way_back: tuple[str, ...] = ()
    alternatives: Callable[[Answers], Sequence[Choice]] | None = None
    asked_if: str | Msg | None = None
    implied: Callable[[Answers], tuple[Any, str] | None] | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown question kind {self.kind!r}")

    def resolve_default(self, answers: Answers) -> Any:
        return self.default(answers) if callable(self.default) else self.default

    def resolve_choices(self, answers: Answers) -> list[Choice]:
        return list(self.choices(answers) if callable(self.choices) else self.choices)


class Refusal(Exception):
    """The one error type of yichui: something the user can act on, as a catalogue key and its parameters.

    ``key``/``params`` name the message (wizard/catalogue/); ``msg`` is the same as a :class:`Msg`. The engine and
    the cli say it in one line and exit non-zero; the narrower names below only say where it was raised, so a
    caller may catch one kind, and nothing translates one into another.
    """

    reask: str | None = None  # the earlier step whose answer caused it: resume asks that step again

    def __init__(self, key: str, /, **params: Any):
        super().__init__(f"{key} {params}")
        self.key, self.params = key, params

    def caused_by(self, step: str) -> "Refusal":
        """Name the earlier step whose answer led here (a model with no chat template: select_model), so that
        resume asks it again instead of failing the same way."""
        self.reask = step
        return self

    @property
    def msg(self) -> Msg:
        return Msg(self.key, self.params)


class StepError(Refusal):
    """Raised by a step for a failure the user can act on."""


class Progress(Protocol):
    def update(self, completed: float | None = None, advance: float | None = None, total: float | None = None,
               **fields: Any) -> None: ...


class Ctx(Protocol):
    """What a step may use. Implemented by wizard.engine.StepContext."""

    home: Path            # YICHUI_HOME
    run_dir: Path         # YICHUI_HOME/runs/<session id>
    session_id: str
    task: str             # the session's task (recipes.TASKS)
    interactive: bool

    def t(self, m: Msg | str, **args: Any) -> str: ...
    def outputs(self, step: str) -> dict: ...
    def result(self, kind: type[H]) -> H: ...  # a required step's outputs, typed (recipes/handoff.py)
    def answers(self, step: str) -> dict: ...
    def source(self, key: str) -> str | None: ...  # where this run's answer to this step's question came from
    def pending(self, step: str) -> bool: ...  # a required step of this task that has not finished yet
    def info(self, m: Msg | str, **args: Any) -> None: ...
    def warn(self, m: Msg | str, **args: Any) -> None: ...
    def table(self, title: Msg | str, columns: Sequence[Msg | str], rows: Sequence[Sequence[Any]]) -> None: ...
    def progress(self, description: Msg | str, total: float | None = None, unit: str = "") -> ContextManager[Progress]: ...
    def live(self, title: Msg | str) -> ContextManager[Callable[[dict], None]]: ...
    def record(self, **outputs: Any) -> None: ...  # save partial outputs now (e.g. a job's pid) before run returns


class Record(Protocol):
    """A step's record as the engine hands it to ``is_done`` (wizard/session.py StepRecord): its recorded outputs
    (the raw dict the session file holds) and status."""

    outputs: dict
    status: str


class Step(Protocol):
    name: str
    requires: tuple[str, ...]

    def questions(self, ctx: Ctx) -> list[Question]: ...
    def run(self, ctx: Ctx, answers: Answers) -> Any: ...  # the step's record (recipes/handoff.py) or a dict
    def is_done(self, ctx: Ctx, record: Record) -> bool: ...
