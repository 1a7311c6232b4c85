"""Runs a session's steps in order: answer precedence, validation, saving, resume and replay.

Answer precedence for every question (wizard/README.md): ``--set step.key=value`` > replay file > the resumed
session's own answer (re-validated, dropped when no longer valid) > the question's default. Interactively the winning
value pre-fills the prompt; non-interactively (``--yes``, ``demo``, ``replay --yes``) nothing is asked and a question
with no value stops the run naming ``step.key`` and the ``--set`` (or, for a secret, the environment variable).
"""
from __future__ import annotations

import copy
import logging
import os
import traceback
from pathlib import Path
from typing import Any, TypeVar

import recipes
from recipes.rundir import RunDir
from recipes.base import Choice, Msg, Question, Refusal, msg
from recipes.handoff import Handoff
from wizard import i18n
from wizard.session import Session, StepRecord, now

log = logging.getLogger("yichui")
H = TypeVar("H", bound=Handoff)


class AnswerError(Refusal):
    """A non-interactive run cannot get a valid answer for ``step.key``; the message says why and what to do."""

    def __init__(self, m: Msg):
        super().__init__(m.key, **m.args)


def _truthy(raw: str) -> bool | None:
    s = str(raw).strip().lower()
    return True if s in ("1", "true", "yes", "y", "on") else False if s in ("0", "false", "no", "n", "off") else None


def short_path(path: Any, keep: int = 120) -> str:
    """A path as an error line shows it: whole up to ``keep`` characters, else its start and end around "…" (a
    10,000-character name must not fill the screen); "?" when the error named none."""
    text = "?" if path is None else str(path)
    return text if len(text) <= keep else text[: keep // 2] + "…" + text[-(keep // 2):]


def coerce(q: Question, raw: Any, answers: dict) -> tuple[Any, Msg | None]:
    """Parse ``raw`` (a typed value from JSON, or a string from --set / a text prompt) for question ``q``.

    Returns ``(value, None)`` or ``(raw, error message)``.
    """
    if q.kind == "int":
        text = str(raw).strip()
        if len(text.lstrip("+-")) > 18 and text.lstrip("+-").isdigit():  # a whole number, just far too large
            return raw, msg("answer.int_too_long", value=_clip(raw), digits=len(text.lstrip("+-")))
        try:
            return int(text), None
        except ValueError:
            return raw, msg("answer.not_int", value=_clip(raw))
    if q.kind == "float":
        try:
            return float(str(raw).strip()), None
        except ValueError:
            return raw, msg("answer.not_float", value=_clip(raw))
    if q.kind == "confirm":
        if isinstance(raw, bool):
            return raw, None
        b = _truthy(raw)
        return (b, None) if b is not None else (raw, msg("answer.not_bool", value=_clip(raw)))
    if q.kind == "select":
        choices = q.resolve_choices(answers)
        for c in choices:
            if c.value == raw or str(c.value) == str(raw):
                return c.value, None
        return raw, msg("answer.not_a_choice", value=_clip(raw), choices=[str(c.value) for c in choices])
    if q.kind == "checkbox":
        raw = [x.strip() for x in str(raw).split(",") if x.strip()] if not isinstance(raw, (list, tuple)) else raw
        by = {str(c.value): c.value for c in q.resolve_choices(answers)}
        if [str(x).lower() for x in raw] == ["none"] and "none" not in by:  # "none" chooses nothing (issue 46)
            raw = []
        bad = [x for x in raw if str(x) not in by]
        if bad:
            return raw, msg("answer.not_a_choice", value=bad[0], choices=list(by)) if by else \
                msg("answer.no_choices", value=bad[0])
        return [by[str(x)] for x in raw], None
    if q.kind in ("text", "path", "password"):
        s = "" if raw is None else str(raw).strip()
        if q.kind == "path" and s.startswith("~"):  # a shell would have expanded it; --set and prompts do not
            s = os.path.expanduser(s)
        return (s, None) if s or q.optional else (s, msg("answer.empty"))
    return raw, None


def check(q: Question, raw: Any, answers: dict) -> tuple[Any, Msg | None]:
    value, err = coerce(q, raw, answers)
    if err is None and q.validate is not None:
        err = q.validate(value, answers)
    elif err is not None and q.validate is not None and (
            (q.kind == "checkbox" and isinstance(value, list)) or (q.kind == "select" and isinstance(value, str))):
        # a value outside this moment's choices may be one the validator can explain (e.g. a format another
        # serving engine loads, a training backend that does not run the chosen method)
        err = q.validate(value, answers) or err
    return value, err


def _same(raw: Any, recorded: Any) -> bool:
    """Whether a --set value (text, as given) says what the recorded answer says (typed as its question parsed it)."""
    if isinstance(recorded, bool):
        return str(raw).strip().lower() in ("yes", "y", "true", "1", "on") if recorded else \
            str(raw).strip().lower() in ("no", "n", "false", "0", "off")
    if isinstance(recorded, list):
        given = raw if isinstance(raw, list) else [x.strip() for x in str(raw).split(",") if x.strip()]
        return [str(x) for x in given] == [str(x) for x in recorded]
    if isinstance(recorded, (int, float)):
        try:
            return float(raw) == float(recorded)
        except (TypeError, ValueError):
            return False
    return str(raw) == str(recorded)


LONGEST = 240  # characters of a value an error line echoes: a 100,000-character --set was echoed whole (item 21)


def _clip(value: Any, longest: int = LONGEST) -> Any:
    """A value as an error line echoes it: whole up to ``longest`` characters, else its start and its length."""
    if isinstance(value, str) and len(value) > longest:
        return value[:longest // 2] + i18n.t("answer.clipped", n=f"{len(value):,}")
    return value


def _shown(value: Any) -> str:
    """An answer as a user typed it (a checkbox's list as a,b)."""
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def names_default(q: Question, raw: Any, answers: dict) -> bool:
    """Whether a --set for ``q``, which its step will not ask, only names the question's default: it changes nothing,
    so it stands (a script naming ``choose_strategy.training_backend=transformers`` works where unsloth is absent)."""
    try:  # a text's or path's validator may ask a hub: such a value is compared as given
        value, err = check(q, raw, answers) if q.kind in CHECKED_EARLY else (raw, None)
        default = q.default(answers) if callable(q.default) else q.default
    except Exception:  # noqa: BLE001 - a default that cannot be worked out here: not the default
        return False
    return err is None and value == default


# the kinds of answer checked before any step runs: their validators read the answers only (a text's or a path's may
# read a file or ask a hub: the step checks those)
CHECKED_EARLY = ("int", "float", "confirm", "select", "checkbox")


def _not_asked(step: str, q: Question, raw: Any = None, answers: dict | None = None) -> "AnswerError":
    """The refusal of a --set for ``q``, which its step will not ask. When the question's own check refuses the value
    with the answers so far, that reason is said (DPO with packing: "DPO does not run with packing", not "asked only
    when …" — the tryout); else when the question is asked."""
    if answers is not None and q.kind in CHECKED_EARLY:  # a path's or text's validator may read files or ask a hub
        try:
            err = check(q, raw, answers)[1]
        except Exception:  # noqa: BLE001 - a check that needs what only the run knows: the generic line then
            err = None
        if err is not None:
            return _invalid(f"{step}.{q.key}", raw, err)
    why = q.asked_if if isinstance(q.asked_if, Msg) else msg(q.asked_if or "answer.asked_if_generic")
    return AnswerError(msg("answer.set_not_asked", name=f"{step}.{q.key}", why=why))


def _invalid(name: str, raw: Any, err: Msg) -> "AnswerError":
    """A --set value its question refuses, with the reason, ended as a sentence (the next one follows it)."""
    if err.alone:  # a refusal of what the answer names, not of the answer (recipes.base.Msg)
        return AnswerError(err)
    reason = i18n.render(err)
    if isinstance(raw, str) and len(raw) > LONGEST:  # the line shows the value once (trial L: 100,000 characters twice)
        for shown in (raw, repr(_clip(raw)), _clip(raw)):  # whole, or clipped by the check's own message
            reason = reason.replace(shown, i18n.t("answer.the_value"))
    reason = _clip(reason, 4 * LONGEST).rstrip()
    if not reason.endswith((".", "。", "!", "?", "！", "？", ")", "）")):
        reason += "。" if i18n.get_lang() == "zh" else "."
    return AnswerError(msg("answer.invalid", name=name, value=_clip(raw), reason=reason))


class UndeclaredRead(AssertionError):
    """A step read the outputs or answers of a step its ``requires`` does not name (a programming error)."""


class StepContext:
    """The ``Ctx`` a step receives (recipes.base.Ctx)."""

    def __init__(self, engine: "Engine", step: str):
        self._e, self._step = engine, step
        # the steps whose outputs and answers it may read: itself and its ``requires``
        self._reads = {step, *getattr(engine.load(step), "requires", ())}
        self.home = engine.home
        self.run_dir = engine.session.run_dir
        self.session_id = engine.session.id
        self.task = engine.session.task
        self.interactive = engine.prompter is not None

    def t(self, m: Msg | str, **args: Any) -> str:
        return i18n.render(m, **args)

    def outputs(self, step: str) -> dict:
        """The raw outputs of ``step`` as the session file holds them (a step reads its own partial outputs so;
        another step's through :meth:`result`)."""
        self._check_read(step)
        return self._e.session.record(step).outputs

    def result(self, kind: type[H]) -> H:
        """The outputs of the step ``kind`` belongs to (recipes/handoff.py), typed; that step must be one this
        step ``requires``."""
        self._check_read(kind.STEP)
        return self._e.session.result(kind)

    def answers(self, step: str) -> dict:
        self._check_read(step)
        return self._e.session.record(step).answers

    def source(self, key: str) -> str | None:
        """Where this run's answer to the step's question ``key`` came from (the precedence of section 4):
        ``set`` (--set), ``replay``, ``resumed`` (the session's earlier answer), ``default`` (the demo's embedded
        answer or the question's default), ``implied`` (an earlier step's answer), ``asked`` (given or confirmed at
        the prompt in this run); None when this run did not resolve it (the step asked nothing: its recorded answers
        stand)."""
        return self._e.sources.get(self._step, {}).get(key)

    def pending(self, step: str) -> bool:
        """Whether ``step`` (one this step requires) is in this session's task and has not finished yet: choices
        that depend on its outputs are not known before the run reaches it (a --set for them is checked then)."""
        self._check_read(step)
        return self._e.session.record(step).status in ("pending", "running", "failed")

    def _check_read(self, step: str) -> None:
        """A step reads only what it declares (``requires``): with YICHUI_STRICT_REQUIRES=1 (the tests) any other
        read raises, so a hand-off no declaration names cannot creep in."""
        if step not in self._reads and os.environ.get("YICHUI_STRICT_REQUIRES") == "1":
            raise UndeclaredRead(f"step {self._step!r} reads {step!r}, which its `requires` does not name")

    def info(self, m: Msg | str, **args: Any) -> None:
        if not self._e._quiet:
            self._e.ui.say(i18n.render(m, **args))

    def warn(self, m: Msg | str, **args: Any) -> None:
        if self._e._quiet:  # a saved answer being checked (Engine._candidates)
            return
        text = i18n.render(m, **args)
        self._e.warnings.append((self._step, text))  # said again when the run ends: warnings scroll away
        self._e.ui.warn(text)

    def table(self, title, columns, rows) -> None:
        self._e.ui.table(i18n.render(title), [i18n.render(c) for c in columns],
                         [[i18n.render(v) if isinstance(v, Msg) else v for v in r] for r in rows])

    def progress(self, description, total=None, unit=""):
        return self._e.ui.progress(i18n.render(description), total=total, unit=unit)

    def live(self, title):
        return self._e.ui.live(i18n.render(title))

    def record(self, **outputs: Any) -> None:
        self._e.session.record(self._step).outputs.update(outputs)
        self._e.session.save()


class DemoSet(str):
    """A ``--set`` value the demo gives itself (its local hub's URL, new on every run), said as the demo's, not the
    user's (a replay said "preset by --set" with no --set given: issue 46, trial E)."""


class Engine:
    """Drives one session.

    Args:
        session: the loaded (and locked) session.
        ui: wizard.console.UI.
        prompter: a prompter (interactive) or None (nothing is asked).
        overrides: ``{step: {key: raw string}}`` from ``--set``.
        replay: ``{step: {key: value}}`` from a replayed session file.
        defaults: ``{step: {key: value}}`` replacing the questions' own defaults (the demo's embedded answers).
        load: step name → step module (tests pass their own steps).
    """

    def __init__(self, session: Session, ui, prompter=None, overrides: dict | None = None,
                 replay: dict | None = None, defaults: dict | None = None, load=recipes.load):
        self.session, self.ui, self.prompter, self.load = session, ui, prompter, load
        self.overrides = overrides or {}
        self.warnings: list[tuple[str, str]] = []  # (step, text) said by the steps during this run
        self.replay = replay or {}
        self.defaults = defaults or {}
        self.home = Path(session.run_dir).parent.parent  # YICHUI_HOME: runs/<id>/ lies under it
        self._unlocked: set[str] = set()
        # the records a --set re-opened, as they were (_reopen_changed): put back when that --set is refused
        self._reopened: dict[str, dict] = {}
        self._reopened_at: str | None = None  # the session's updated_at before the re-open
        self.sources: dict[str, dict[str, str]] = {}  # step → key → where this run's answer came from (source())
        self._quiet = False  # the steps' info and warn lines are held back (a saved answer being checked)

    # -- answers -----------------------------------------------------------------------------------------------
    def _candidates(self, step: str, q: Question, resumed: dict, answers: dict, earlier: dict):
        """(source, raw value) in precedence order; the resumed answer only if it still validates. ``earlier``: the
        answers given before the user went back to an earlier question (pre-filled, checked when given)."""
        if q.key in self.overrides.get(step, {}) and q.key not in self._unlocked:
            yield "set", self.overrides[step][q.key]
        if q.key in earlier:
            yield "earlier", earlier[q.key]
        if q.key in self.replay.get(step, {}):
            raw = self.replay[step][q.key]
            err = check(q, raw, answers)[1] if q.volatile else None
            if err is None:
                yield "replay", raw
            else:  # e.g. the saved port is taken now (the replayed session's own server)
                self.ui.warn(i18n.t("engine.replay_gives_way", name=f"{step}.{q.key}", value=_clip(raw),
                                    reason=_clip(i18n.render(err), 4 * LONGEST).rstrip(".。")))
        if q.key in resumed:
            # checked quietly: what a validator says of the saved answer (a dataset's malformed records) read as
            # if the file about to be asked for had failed (issue 46 trial I, N9); said again if it is given again
            self._quiet = True
            try:
                value, err = check(q, resumed[q.key], answers)
            finally:
                self._quiet = False
            if err is None:
                yield "resumed", value
            elif self.prompter is None and not q.volatile:  # a decision: --yes stops as a replay does (item 11)
                raise _invalid(f"{step}.{q.key}", resumed[q.key], err)
            else:  # never silently (issue 20, item 11): interactively it is asked again, the next source pre-filled
                self.ui.warn(i18n.t("engine.resumed_invalid" if self.prompter else "engine.resumed_gives_way",
                                    name=f"{step}.{q.key}", value=_clip(resumed[q.key]),
                                    # inside parentheses: without its own end ("choose another.):", trial I)
                                    reason=_clip(i18n.render(err), 4 * LONGEST).rstrip().rstrip(".。")))
        if q.key in self.defaults.get(step, {}):
            yield "default", self.defaults[step][q.key]
        default = q.resolve_default(answers)
        if default is not None:
            yield "default", default

    def _secret(self, step: str, q: Question):
        value = os.environ.get(q.env or "")
        if value:
            return value
        if self.prompter is None:
            raise AnswerError(msg("answer.missing_secret", name=f"{step}.{q.key}", env=q.env or "?"))
        return self.prompter.ask(q, None, {})

    def _ask(self, step: str, q: Question, raw: Any, answers: dict, by_key: dict) -> tuple[str, Any]:
        """Ask ``q`` until an answer passes: ("answer", value), or ("back", key) when the user chose to change an
        earlier answer after a refusal (``q.way_back``)."""
        assert self.prompter is not None
        while True:
            raw = self.prompter.ask(q, raw, answers)
            value, err = check(q, raw, answers)
            while err is not None and q.way_back:
                self.ui.warn(i18n.render(err))
                alternatives = [a for a in (q.alternatives(answers) if q.alternatives else [])
                                if str(a.value) != str(raw)]
                choices = ([Choice("again", msg("engine.answer_again"))]
                           + [Choice("use:" + str(a.value), msg("engine.use_alternative", choice=i18n.render(a.label)))
                              for a in alternatives]
                           + [Choice("back:" + k, msg("engine.go_back", question=i18n.render(by_key[k].message).rstrip(":：")))
                              for k in q.way_back if k in answers])
                what = self.prompter.ask(Question("after_refusal", "select", "engine.after_refusal", choices=choices),
                                         "again", answers)
                if what.startswith("back:"):
                    return "back", what[5:]
                if not what.startswith("use:"):
                    if q.kind in ("text", "path", "int", "float"):  # a fresh field: typing added to the refused
                        raw = None                                   # text (issue 46 item 8); the warning shows it
                    break
                raw = next(a.value for a in alternatives if str(a.value) == what[4:])
                value, err = check(q, raw, answers)
            if err is None:
                return "answer", value
            if not q.way_back:
                self.ui.warn(i18n.render(err))

    def resolve(self, step_mod, ctx: StepContext) -> dict:
        name = step_mod.name
        rec = self.session.record(name)
        resumed = dict(rec.answers)
        # the step ran with these answers and was cut short (Ctrl-C, kill -9, its outputs gone since): a resume
        # carries on with them, said, not asked again (issue 46 item 9); a failed step asks again, pre-filled
        started = rec.started_at is not None and rec.status != "failed"
        kept = False  # answers given before the run stopped inside this step's questions, kept
        answers: dict = {}
        earlier: dict = {}  # answers given before going back to an earlier question
        self._unlocked = set()  # --set values given up interactively (refused, or gone back to)
        sources = self.sources[name] = {}
        qs = step_mod.questions(ctx)
        if not qs and rec.answers:
            return dict(rec.answers)  # the step asks nothing now (e.g. re-attaching): its recorded answers stand
        if rec.status == "failed" and rec.answers and self.prompter is not None and not self.overrides.get(name):
            started = self._same_answers(name, rec)  # one question, not all of them again (issue 46 item 9)
        elif rec.status == "pending" and rec.answers and not started and not rec.finished_at \
                and self.prompter is not None and not self.overrides.get(name) and not self.replay.get(name) \
                and _partly_answered(qs, rec.answers):
            # stopped while its questions were answered (Ctrl-C, a closed terminal): carry on from there, or again
            started = kept = self._keep_answers(name, rec)  # (the 46 tryout C: ~20 Enters to get back)
        by_key = {q.key: q for q in qs}
        kept_now: list[tuple[str, object]] = []  # answers carried over, said together (27 lines each: trial 46-E)

        def say_kept() -> None:
            if len(kept_now) <= 3:
                for key, v in kept_now:
                    self.ui.say(i18n.t("engine.answered_kept" if kept else "engine.resumed_kept",
                                       name=f"{name}.{key}", value=_shown(v)))
            else:
                self.ui.say(i18n.t("engine.kept_many", n=len(kept_now), step=name,
                                   keys=[k for k, _ in kept_now], id=self.session.id))
            kept_now.clear()

        i = 0
        while i < len(qs):
            q = qs[i]
            i += 1
            if q.when is not None and not q.when(answers):
                if q.key in self.overrides.get(name, {}) and q.key not in self._unlocked \
                        and not names_default(q, self.overrides[name][q.key], answers):
                    # a --set is a decision: refused as soon as the answers that decide it leave it out (item 11)
                    raise _not_asked(name, q, self.overrides[name][q.key], answers)
                continue
            if q.secret:  # used for this run only: never saved
                answers[q.key] = self._secret(name, q)
                continue
            settled = q.implied(answers) if q.implied and q.key not in self.overrides.get(name, {}) \
                and q.key not in self.replay.get(name, {}) and q.key not in earlier and q.key not in resumed else None
            if settled is not None:  # an earlier step's answer settles it (issue 20, item 13): not asked twice
                value, err = check(q, settled[0], answers)
                if err is None:
                    self.ui.say(i18n.t("engine.implied", name=f"{name}.{q.key}", value=_shown(value),
                                       source=settled[1]))
                    answers[q.key] = rec.answers[q.key] = value
                    sources[q.key] = "implied"
                    self.session.save()
                    continue
                self.ui.warn(i18n.t("engine.implied_invalid", name=f"{name}.{q.key}", value=settled[0],
                                    source=settled[1], reason=_clip(i18n.render(err), 4 * LONGEST)))
            source, raw = next(self._candidates(name, q, resumed, answers, earlier), (None, None))
            if self.prompter is None:
                if source is None:
                    raise AnswerError(msg("answer.missing", name=f"{name}.{q.key}"))
                # a resumed answer was checked by _candidates (a validator may fetch from a hub: not twice)
                value, err = (raw, None) if source == "resumed" else check(q, raw, answers)
                if err is not None:
                    raise _invalid(f"{name}.{q.key}", raw, err)
            else:
                value, err = check(q, raw, answers) if source == "set" else (None, None)
                if source == "set" and err is None:  # --set wins over every source: not asked (item 11)
                    say_kept()
                    self.ui.say(i18n.t("engine.preset_demo" if isinstance(raw, DemoSet) else "engine.preset",
                                       name=f"{name}.{q.key}", value=_shown(value)))
                elif source == "resumed" and started:  # checked by _candidates
                    value = raw
                    kept_now.append((q.key, value))
                else:
                    say_kept()
                    if err is not None:
                        self.ui.warn(i18n.t("engine.preset_invalid", name=f"{name}.{q.key}", value=_clip(raw),
                                            reason=_clip(i18n.render(err), 4 * LONGEST)))
                        self._unlocked.add(q.key)
                    outcome, value = self._ask(name, q, raw, answers, by_key)
                    if outcome == "back":  # ask from that question on again, what was given pre-filled
                        i = next(j for j, x in enumerate(qs) if x.key == value)
                        for x in qs[i:]:
                            if x.key in answers:
                                earlier[x.key] = answers.pop(x.key)
                        self._unlocked.add(value)
                        continue
                    source = "asked"  # given or confirmed at the prompt, whatever pre-filled it
            answers[q.key] = value
            sources[q.key] = str(source)  # never None here: a run without a value stopped above, a prompt gave "asked"
            earlier.pop(q.key, None)
            rec.answers[q.key] = value
            self.session.save()
        say_kept()
        # exactly the answers used this time (stale keys of skipped questions go); secrets never reach the file
        secret = {q.key for q in qs if q.secret}
        rec.answers = {k: v for k, v in answers.items() if k not in secret}
        self.session.save()
        return answers

    def precheck(self) -> None:
        """Check every ``--set`` before any work: the key exists, is no secret, and a typed value (int, float,
        yes/no, a fixed choice) parses and passes its validation.

        Raises:
            AnswerError: naming ``step.key`` and what to do.
        """
        for name, sets in self.overrides.items():
            if self.session.record(name).skipped:
                raise AnswerError(msg("answer.step_not_in_task", name=f"{name}.{next(iter(sets), '')}", step=name,
                                      task=self.session.task))
            step_mod = self.load(name)
            questions = step_mod.questions(StepContext(self, name))
            qs = {q.key: q for q in questions}
            for key in sets:
                if key not in qs:
                    if len(qs) <= 12:
                        raise AnswerError(msg("answer.unknown_key", name=f"{name}.{key}", step=name, key=key,
                                              keys=list(qs)))
                    import difflib  # a step of ~60 questions: the near ones, not all on one line (46 trial L, L4)

                    near = difflib.get_close_matches(key, list(qs), n=3)
                    raise AnswerError(msg("answer.unknown_key_many", name=f"{name}.{key}", step=name, key=key,
                                          count=len(qs), close=msg("answer.did_you_mean", keys=near) if near else ""))
                if qs[key].secret:
                    raise AnswerError(msg("answer.secret_via_set", name=f"{name}.{key}", env=qs[key].env or "?"))
            given = {**self.defaults.get(name, {}), **self.session.record(name).answers,
                     **self.replay.get(name, {})}
            # first without checking any value but the typed --set ones (no hub asked): a --set whose question the
            # other answers leave unasked is refused before an earlier default is checked — `--set
            # select_model.model_id=…` alone was refused as the default catalogue model's error (46 trial L, M2)
            self._walk(name, questions, sets, given, strict=False)
            self._walk(name, questions, sets, given, strict=True)

    def _walk(self, name: str, questions: list, sets: dict, given: dict, strict: bool) -> None:
        """Answer a step's ``questions`` in order — the ``--set`` values, else ``given`` (defaults, recorded and
        replayed answers), else each question's default — so that choices and validators that depend on earlier
        answers check each ``--set`` value before any step runs. A ``--set`` for a question the answers leave unasked
        is refused. ``strict``: a typed value that fails its check is refused, and so is a given or default one that
        the ``--set`` values make invalid (checked only without a prompter, where nobody could answer again).
        Defaults and validators that need what only the run knows are left to the step.

        Raises:
            AnswerError: naming ``step.key`` and what to do.
        """
        answers: dict = {}
        for q in questions:
            try:
                if q.when is not None and not q.when(answers):
                    if q.key in sets and not names_default(q, sets[q.key], answers):
                        raise _not_asked(name, q, sets[q.key], answers)  # refused now, not after the questions before
                    continue
                if q.key in sets and q.kind in CHECKED_EARLY:  # typed as the step would read it
                    value, err = check(q, sets[q.key], answers)
                    if err is not None and strict:
                        raise _invalid(f"{name}.{q.key}", sets[q.key], err)
                    answers[q.key] = value if err is None else sets[q.key]
                elif strict and sets and self.prompter is None and q.kind in CHECKED_EARLY \
                        and not (q.choices and not q.resolve_choices(answers)):  # choices known at run time
                    # a replayed or recorded answer — or the default — the --set values make invalid (GRPO's
                    # groups with another micro-batch; heldout=none with no benchmark, refused only at step 8
                    # before: the tester's N8): said now, not after the steps before it have run
                    value = given[q.key] if q.key in given else q.resolve_default(answers)
                    answers[q.key], err = check(q, value, answers)
                    if err is not None:
                        raise _invalid(f"{name}.{q.key}", value, err)
                else:  # text answers are checked by the step (their validators may ask a hub)
                    answers[q.key] = sets[q.key] if q.key in sets else given[q.key] if q.key in given \
                        else q.resolve_default(answers)
            except AnswerError:
                raise
            except Exception:  # noqa: BLE001 - a default or validator that needs what only the run knows
                continue

    # -- running -----------------------------------------------------------------------------------------------
    def run(self) -> int:
        """Run every pending step. Returns the process exit status (0, 1 failed, 2 bad answer, 130 interrupted)."""
        s = self.session
        try:
            self.precheck()
        except AnswerError as e:
            self.ui.error(i18n.render(e.msg))
            return 2
        self._reopen_changed()
        # --set values for steps not run yet are kept with them at once, as given: a run that stops earlier (a failed
        # step) resumes with them; each is parsed and validated again when its step runs
        for name, sets in self.overrides.items():
            if s.record(name).status in ("pending", "failed"):
                s.record(name).answers.update(sets)
        s.save()
        names = s.task_steps()  # numbered 1..n
        while True:  # once, or again from an earlier step the user went back to (a refusal it caused)
            for i, name in enumerate(names, 1):
                rec = s.record(name)
                step_mod = self.load(name)
                ctx = StepContext(self, name)
                why = getattr(step_mod, "skip", None) and step_mod.skip(ctx)
                if why:  # nothing to do for this session (e.g. no download for an endpoint): recorded, not run
                    rec.update(status="skipped", outputs={"skipped": why})
                    s.save()
                    self.ui.step_header(i, len(names), name, skipped=True)
                    continue
                if rec.status == "done":
                    if step_mod.is_done(ctx, rec):
                        self.ui.step_header(i, len(names), name, done=True)
                        continue
                    key = f"engine.redo.{name}"
                    gone = getattr(step_mod, "missing", None) and step_mod.missing(ctx, rec)
                    self.ui.warn(i18n.t(key if key in i18n.CATALOG else "engine.redo", step=name) if not gone else
                                 i18n.t("engine.redo_missing", step=name, path=gone))
                self.ui.step_header(i, len(names), name)
                try:
                    answers = self.resolve(step_mod, ctx)
                    rec.update(status="running", started_at=now(), error=None)
                    s.save()
                    outputs = step_mod.run(ctx, answers)
                except KeyboardInterrupt:
                    if name in self._reopened and rec.status != "running":
                        # Ctrl-C at a re-opened step's questions: nothing ran, so the finished session stays as it
                        # was, its --set not kept — it became unfinished with its server running (46 trial K, K1)
                        self._undo_reopen()
                        try:
                            self.ui.say("")  # the value was fine: the user stopped (46 trial L, L3)
                            self.ui.say(i18n.t("engine.reopen_interrupted", step=name))
                        except OSError:
                            pass
                        return 130
                    rec.status = "pending"
                    s.save()
                    try:
                        self.ui.say("")
                        self.ui.warn(i18n.t("engine.interrupted", id=s.id, yes=self._yes_flag()))
                    except OSError:  # the terminal is gone (SIGHUP): the session is saved, resume says the rest
                        pass
                    return 130
                except AnswerError as e:
                    if name in self._reopened:  # the --set that re-opened done steps is refused: they stay done,
                        self._undo_reopen()     # the refused value is not kept (the tester's N11)
                        self.ui.error(i18n.render(e.msg))
                        self.ui.say(i18n.t("engine.reopen_undone", step=name))
                        return 2
                    rec.status = "pending"
                    s.save()
                    self.ui.error(i18n.render(e.msg))
                    # a refused answer: the command goes on with another one (a bare resume --yes refused the same
                    # recorded --set again; issue 46 trial G)
                    refused = e.msg.args.get("name") if e.msg.key == "answer.invalid" else None
                    self.ui.say(i18n.t("engine.resume_hint_set", id=s.id, yes=self._yes_flag(), name=refused)
                                if refused else self._resume_hint())
                    return 2
                except Refusal as e:  # any of yichui's errors: one line that says what to do
                    reask = e.reask if e.reask in names[:i - 1] else None
                    if reask:  # an earlier answer caused it: resume asks from that step on
                        for earlier in names[names.index(reask):i - 1]:
                            s.record(earlier).update(status="pending", started_at=None)  # asked again
                    if reask and self._go_back(rec, i18n.render(e.msg), reask):
                        break  # from the top: the steps before it are done, that one is asked again (issue 46 item 4)
                    return self._fail(rec, i18n.render(e.msg), reask, said=bool(reask) and self.prompter is not None,
                                      cause=e.key not in NO_CAUSE)
                except Exception as e:  # a bug or an unexpected library error: keep the traceback in the log
                    log.error("step %s failed:\n%s", name, traceback.format_exc())
                    if isinstance(e, OSError) and e.filename is not None:  # the filesystem's answer (read-only, full,
                        # a name too long): one line naming the file, shortened; a connection's error is not one of these
                        return self._fail(rec, i18n.t("engine.os_error", step=name, path=short_path(e.filename),
                                                      error=e.strerror or type(e).__name__, id=s.id))
                    return self._fail(rec, i18n.t("engine.crashed", step=name, error=f"{type(e).__name__}: {e}"[:500],
                                                  log=str(RunDir(s.run_dir).wizard_log)))
                rec.outputs.update(outputs.to_dict() if isinstance(outputs, Handoff) else outputs or {})
                rec.update(status="done", finished_at=now())
                s.save()
            else:
                break
        s.finish()
        s.save()
        if self.warnings:  # "All steps done" is not the last word on a run that warned (a model that never stops)
            self.ui.say(i18n.t("engine.finished_with_warnings", id=s.id, path=str(s.path), n=len(self.warnings)))
            for step, text in self.warnings:
                self.ui.say("  " + i18n.t("ui.label_value", label=_title(step), value=_first_line(text, 600)))
        else:
            self.ui.success(i18n.t("engine.finished", id=s.id, path=str(s.path)))
        return 0

    def changed_done_step(self) -> tuple[str, list[str]] | None:
        """The first done step (in task order) whose recorded answers a --set changes, with the keys it changes;
        None when no --set changes a done step's answer."""
        for name in self.session.task_steps():
            rec = self.session.record(name)
            diff = [k for k, v in self.overrides.get(name, {}).items()
                    if rec.status == "done" and not _same(v, rec.answers.get(k))]
            if diff:
                return name, diff
        return None

    def _reopen_changed(self) -> None:
        """A --set that changes the answer of a step done earlier re-opens it and every done step after it (said in
        one line): resume --set is how an answer that caused a later failure is fixed (issue 46 item 20). A --set
        equal to the recorded answer changes nothing."""
        found = self.changed_done_step()
        if found is None:
            return
        first, changed = found
        s, names = self.session, self.session.task_steps()
        later = [n for n in names[names.index(first) + 1:] if s.record(n).status == "done"]
        self._reopened = {n: copy.deepcopy(s.record(n).data) for n in [first, *later]}
        self._reopened_at = s.updated_at or None
        for n in [first, *later]:
            s.record(n).update(status="pending", started_at=None)
        s.save()
        keys = [f"{first}.{k}" for k in changed]
        self.ui.warn(i18n.t("engine.reopened", keys=keys, step=first, later=list(later)) if later else
                     i18n.t("engine.reopened_alone", keys=keys, step=first))
        if self.prompter is not None:  # its questions come again, pre-filled: ~25 Enters to change one number (46 J)
            self.ui.say(i18n.t("engine.reopened_asked", step=first))

    def _undo_reopen(self) -> None:
        """The records _reopen_changed re-opened, put back as they were (status, answers, outputs) and saved."""
        for n, data in self._reopened.items():
            rec = self.session.record(n)
            rec.data.clear()
            rec.data.update(data)
        self._reopened = {}
        self.session.save(updated_at=self._reopened_at)  # "nothing changed": its time neither (46 trial M)

    def _go_back(self, rec: StepRecord, text: str, reask: str) -> bool:
        """In the wizard, after a refusal an earlier step's answer caused (a model the hub refuses at download): say
        it and offer to go back to that step now instead of ending the run — a way back, as a refused answer has at
        its own question. True when the user goes back (this step is pending again); False without a terminal or
        when the user stops here."""
        if self.prompter is None:
            return False
        self.ui.error(text)
        try:
            what = self.prompter.ask(Question("after_failure", "select", "engine.after_failure",
                                              choices=[Choice("back", msg("engine.back_to_step", step=reask)),
                                                       Choice("stop", msg("engine.stop_here"))]), "back", {})
        except (KeyboardInterrupt, EOFError):  # Ctrl-C at this question: stop here, the step recorded as failed
            what = "stop"
        if what != "back":
            return False
        # the user goes back to change that step's answers: a --set of them gives way (asked, pre-filled), or going
        # back would run the same answers into the same refusal
        self.overrides.pop(reask, None)
        rec.update(status="pending", started_at=None, error=None)
        self.session.save()
        return True

    def _same_answers(self, name: str, rec: StepRecord) -> bool:
        """A step that failed last time (a download cut by the network, a trainer that raised), resumed in the
        wizard: run it again with the answers it ran with (True), or answer its questions again, pre-filled
        (False). Its error is said first."""
        if rec.error:
            self.ui.warn(i18n.t("engine.failed_before", step=_title(name), error=_first_line(rec.error)))
        return self._keep_or_change("engine.retry_how", msg("engine.retry_same", step=_title(name)))

    def _keep_answers(self, name: str, rec: StepRecord) -> bool:
        """A step left while its questions were being answered, resumed in the wizard: keep the answers given and
        ask from the first one missing (True), or go through them all again, pre-filled (False)."""
        return self._keep_or_change("engine.keep_how", msg("engine.keep_continue", n=len(rec.answers)))

    def _keep_or_change(self, question: str, keep: Msg) -> bool:
        """One select: the recorded answers (``keep``, the default; True) or each question again, pre-filled."""
        return self.prompter.ask(Question("keep_answers", "select", question,
                                          choices=[Choice("keep", keep), Choice("change", msg("engine.retry_change"))]),
                                 "keep", {}) == "keep"

    def _yes_flag(self) -> str:
        """" --yes" for a run without a prompter (no terminal, --yes, demo): resume then needs it too (issue 46)."""
        return "" if self.prompter is not None else " --yes"

    def _resume_hint(self, cause: bool = True) -> str:
        return i18n.t("engine.resume_hint" if cause else "engine.resume_hint_plain", id=self.session.id,
                      yes=self._yes_flag())

    def _fail(self, rec: StepRecord, text: str, reask: str | None = None, said: bool = False,
              cause: bool = True) -> int:
        rec.update(status="failed", error=text, finished_at=now())
        self.session.save()
        if not said:  # _go_back said it already
            self.ui.error(text)
        if reask:
            self.ui.say(i18n.t("engine.reask", step=reask))
        self.ui.say(self._resume_hint(cause))
        return 1


# failures with nothing to fix first (a trainer killed from outside): the resume hint says only how to go on
NO_CAUSE = frozenset({"training.died"})


def _partly_answered(qs: list, answers: dict) -> bool:
    """Whether ``answers`` stop short of the questions they lead to: one asked (its ``when`` holds for the answers
    before it, or it has none), not secret, and not answered. A condition that cannot be judged counts as asked."""
    for q in qs:
        if q.secret or q.key in answers:
            continue
        try:
            if q.when is None or q.when(answers):
                return True
        except Exception:  # noqa: BLE001 - a condition needing an answer not given yet: the question would come
            return True
    return False


def _title(step: str) -> str:
    """A step's name as the user reads it (its header's title), not its key ("choose_strategy 上次失败", trial I)."""
    return i18n.named(f"step.{step}.title", step)


def _first_line(text: str, n: int = 160) -> str:
    """A warning's first line, cut at a word to ``n`` characters (the run's end lists each in one line)."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= n else line[:n].rsplit(" ", 1)[0] + " …"
