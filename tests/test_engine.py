"""The engine with small test steps: answer precedence, re-validation, re-prompts, missing answers, Ctrl-C, secrets.

The steps here are test fixtures; the engine, the session file and the i18n catalogue are the real ones.
"""
from __future__ import annotations

import json
import types

import pytest

import recipes
from recipes.base import Choice, Question, StepError, msg
from wizard import i18n
from wizard.console import UI
from wizard.engine import Engine
from wizard.session import Session


def make_step(name, questions, run=None):
    return types.SimpleNamespace(name=name, requires=(), questions=lambda ctx: questions,
                                 run=run or (lambda ctx, a: {"echo": dict(a)}), is_done=lambda ctx, rec: True)


def even(v, a):
    return None if v % 2 == 0 else msg("answer.out_of_range", lo=0, hi=0)


STEP_A = make_step("a", [
    Question("n", "int", "choose_strategy.lora_rank", default=8, validate=even),
    Question("mode", "select", "choose_strategy.method", default="lora",
             choices=[Choice("lora", "LoRA"), Choice("full", "full")]),
    Question("path", "text", "select_model.model_id", when=lambda a: a["mode"] == "full"),
    Question("flag", "confirm", "choose_strategy.packing", default=False),
    Question("token", "password", "select_model.model_id", secret=True, env="YICHUI_TEST_TOKEN"),
])
STEP_B = make_step("b", [Question("x", "float", "choose_strategy.learning_rate", default=0.5)])
STEPS = {"a": STEP_A, "b": STEP_B}


class Scripted:
    """A prompter that answers from a list and records what it was asked and what was pre-filled."""

    def __init__(self, replies):
        self.replies, self.asked = list(replies), []

    def ask(self, q, prefill, answers):
        self.asked.append((q.key, prefill))
        r = self.replies.pop(0)
        if r is KeyboardInterrupt:
            raise KeyboardInterrupt
        return prefill if r is ... else r


def engine(tmp_path, prompter=None, **kw):
    s = Session.new("test", ("a", "b"), tmp_path)
    s.save()
    return Engine(s, UI(), prompter, load=STEPS.__getitem__, **kw), s


@pytest.fixture(autouse=True)
def token(monkeypatch):
    monkeypatch.setenv("YICHUI_TEST_TOKEN", "s3cret-value")
    monkeypatch.setitem(recipes.TASKS, "test", ("a", "b"))  # the test steps' task, so sessions of it load
    monkeypatch.setattr(recipes, "STEPS", ("a", "b"))


def saved(s):
    return json.loads(s.path.read_text())


def test_defaults_non_interactive_and_the_secret_is_used_but_never_written(tmp_path):
    got = {}
    steps = dict(STEPS, a=make_step("a", STEP_A.questions(None), run=lambda ctx, a: got.update(a) or {"ok": True}))
    s = Session.new("test", ("a", "b"), tmp_path)
    s.save()
    assert Engine(s, UI(), None, load=steps.__getitem__).run() == 0
    data = saved(s)
    assert data["steps"]["a"]["answers"] == {"n": 8, "mode": "lora", "flag": False}
    assert got["token"] == "s3cret-value"
    assert "s3cret-value" not in s.path.read_text()
    assert data["steps"]["b"]["status"] == "done" and data["finished_at"]


def test_precedence_set_over_replay_over_resumed_over_default(tmp_path):
    e, s = engine(tmp_path, overrides={"a": {"n": "12"}}, replay={"a": {"n": 4, "mode": "full", "path": "p"},
                                                                 "b": {"x": 0.25}},
                  defaults={"a": {"n": 2, "flag": False, "mode": "lora"}})
    s.steps["a"]["answers"] = {"n": 6, "mode": "lora", "flag": True}  # as a resumed session would hold
    assert e.run() == 0
    a = saved(s)["steps"]["a"]["answers"]
    assert a == {"n": 12, "mode": "full", "path": "p", "flag": True}  # set > replay > resumed > default
    assert saved(s)["steps"]["b"]["answers"] == {"x": 0.25}


def test_each_answer_knows_where_it_came_from_in_this_run(tmp_path):
    """Ctx.source(key): the precedence layer that won, as the step sees it while it runs (the deploy step gives a
    saved port way when it is taken, never a --set one)."""
    seen = {}

    def run(ctx, a):
        seen.update({k: ctx.source(k) for k in ("n", "mode", "path", "flag", "nothing")})
        return {}

    steps = {"a": make_step("a", STEP_A.questions(None), run), "b": STEP_B}
    s = Session.new("test", ("a", "b"), tmp_path)
    s.save()
    s.steps["a"]["answers"] = {"flag": True}  # as a resumed session would hold
    e = Engine(s, UI(), None, load=steps.__getitem__, overrides={"a": {"n": "12"}},
               replay={"a": {"mode": "full", "path": "p"}})
    assert e.run() == 0
    assert seen == {"n": "set", "mode": "replay", "path": "replay", "flag": "resumed", "nothing": None}


def test_defaults_layer_replaces_question_defaults_below_resumed(tmp_path):
    e, s = engine(tmp_path, defaults={"a": {"n": 2, "flag": True}, "b": {"x": 0.75}})
    s.steps["b"]["answers"] = {"x": 0.125}
    assert e.run() == 0
    assert saved(s)["steps"]["a"]["answers"] == {"n": 2, "mode": "lora", "flag": True}
    assert saved(s)["steps"]["b"]["answers"] == {"x": 0.125}


def test_a_volatile_replayed_answer_that_no_longer_fits_gives_way_others_stop(tmp_path, capsys):
    steps = dict(STEPS, b=make_step("b", [Question("x", "int", "deploy.port", default=8, validate=even,
                                                   volatile=True)]))
    s = Session.new("test", ("a", "b"), tmp_path)
    s.save()
    assert Engine(s, UI(), None, load=steps.__getitem__, replay={"b": {"x": 7}}).run() == 0
    assert saved(s)["steps"]["b"]["answers"] == {"x": 8}  # the default, with a note naming the --set
    assert "The saved b.x=7 does not fit this machine now" in capsys.readouterr().err
    e, s = engine(tmp_path / "other", replay={"a": {"n": 7}})  # a decision, not a machine's resource: it stops
    assert e.run() == 2 and saved(s)["steps"]["a"]["answers"] == {}


def test_invalid_resumed_answer_stops_a_run_with_yes_and_is_asked_again_interactively(tmp_path, capsys):
    """Issue 20, item 11: a saved answer that no longer validates (a hand edit, another machine) never gives way
    silently: with --yes the run stops with the line a replay gives (the file untouched); interactively a note names
    it and it is asked again, the default pre-filled; a volatile one (a port) gives way with a note."""
    e, s = engine(tmp_path)
    s.steps["a"]["answers"] = {"n": 7, "mode": "gone"}  # 7 fails validation, "gone" is no longer a choice
    s.save()
    assert e.run() == 2
    out, err = capsys.readouterr()
    assert "a.n=7 is not valid" in err and "--set a.n=VALUE" in err
    # the command to go on carries another answer: a bare `resume --yes` refused the same one again (issue 46 G)
    assert f"Continue with another answer: yichui resume {s.id} --yes --set a.n=VALUE" in out, out + err
    assert saved(s)["steps"]["a"]["answers"] == {"n": 7, "mode": "gone"} and saved(s)["steps"]["a"]["status"] == "pending"
    p = Scripted([...] * 10)  # Enter takes the pre-filled value each time
    e, s = engine(tmp_path / "asked", p)
    s.steps["a"]["answers"] = {"n": 7}
    assert e.run() == 0
    # left part-answered: the wizard offers to go on from there (kept); the invalid one is asked all the same
    assert p.asked[:2] == [("keep_answers", "keep"), ("n", 8)] and saved(s)["steps"]["a"]["answers"]["n"] == 8
    assert "The saved a.n=7 is no longer valid" in capsys.readouterr().err
    steps = dict(STEPS, b=make_step("b", [Question("x", "int", "deploy.port", default=8, validate=even,
                                                   volatile=True)]))
    s = Session.new("test", ("a", "b"), tmp_path / "volatile")
    s.steps["b"]["answers"] = {"x": 7}
    s.save()
    assert Engine(s, UI(), None, load=steps.__getitem__).run() == 0
    assert saved(s)["steps"]["b"]["answers"] == {"x": 8}
    assert "The saved b.x=7 is no longer valid" in capsys.readouterr().err


def test_a_set_answer_is_not_asked_interactively_and_an_invalid_one_is(tmp_path, capsys):
    """Issue 20, item 11: --set wins over every source, so an interactive run does not ask it (a line says it is
    preset); a --set value that does not validate is said so and asked, itself pre-filled."""
    p = Scripted([..., ..., ..., ...])
    e, s = engine(tmp_path, p, overrides={"a": {"n": "4", "mode": "full", "path": "p"}})
    assert e.run() == 0
    assert [k for k, _ in p.asked] == ["flag", "x"]
    assert saved(s)["steps"]["a"]["answers"] == {"n": 4, "mode": "full", "path": "p", "flag": False}
    out = capsys.readouterr().out
    assert "a.n = 4 (preset by --set)" in out and "a.mode = full (preset by --set)" in out
    p = Scripted(["6", ..., ..., ...])
    e, s = engine(tmp_path / "bad", p, overrides={"b": {"x": "0.25"}})
    e.precheck = lambda: None  # as when the --set is checked only when its step runs (a text answer)
    e.overrides["a"] = {"n": "5"}
    assert e.run() == 0
    assert p.asked[0] == ("n", "5") and saved(s)["steps"]["a"]["answers"]["n"] == 6
    assert "--set a.n='5' is not valid" in capsys.readouterr().err


def test_a_set_for_a_question_that_will_not_be_asked_is_refused_saying_why(tmp_path, capsys):
    """Issue 20, item 11: `--set choose_strategy.distribution=zero3` with one process was dropped silently. With --yes
    it is refused before any step runs; interactively when the answers that decide it are given."""
    steps = dict(STEPS, a=make_step("a", [
        Question("processes", "int", "choose_strategy.processes", default=1),
        Question("distribution", "select", "choose_strategy.distribution", when=lambda a: a["processes"] > 1,
                 default="ddp", choices=[Choice("ddp", "ddp"), Choice("zero3", "zero3")],
                 asked_if="choose_strategy.asked_if.several_processes")]))
    ran = []
    steps["b"] = make_step("b", [], run=lambda ctx, a: ran.append(1) or {})
    s = Session.new("test", ("a", "b"), tmp_path)
    s.save()
    assert Engine(s, UI(), None, load=steps.__getitem__, overrides={"a": {"distribution": "zero3"}}).run() == 2
    err = capsys.readouterr().err
    assert "--set a.distribution is not used" in err and "2 or more processes" in err
    assert saved(s)["steps"]["a"]["status"] == "pending"
    # with processes=2 set too, it is used
    s = Session.new("test", ("a", "b"), tmp_path / "two")
    s.save()
    assert Engine(s, UI(), None, load=steps.__getitem__,
                  overrides={"a": {"distribution": "zero3", "processes": "2"}}).run() == 0
    assert saved(s)["steps"]["a"]["answers"] == {"processes": 2, "distribution": "zero3"}
    # interactively: the user answers 1 process, so the --set cannot be used: refused before the step runs
    ran.clear()
    s = Session.new("test", ("a", "b"), tmp_path / "asked")
    s.save()
    assert Engine(s, UI(), Scripted(["1"]), load=steps.__getitem__,
                  overrides={"a": {"distribution": "zero3"}}).run() == 2
    assert "--set a.distribution is not used" in capsys.readouterr().err and not ran


def test_a_replayed_answer_that_a_set_makes_invalid_is_refused_before_any_step(tmp_path, capsys):
    """The tryout: `replay --yes --set choose_strategy.micro_batch=3` of a GRPO session (4 replies a prompt, gradient
    accumulation 1) ran two steps, then refused the replayed grad_accum, and its resume refused the same. The
    replayed answers a --set makes invalid are checked with the --set values, before any step runs."""
    ran = []
    steps = {"a": make_step("a", [], run=lambda ctx, a: ran.append(1) or {}),  # a step before it (select_model)
             "b": make_step("b", [
                 Question("n", "int", "choose_strategy.num_generations", default=4),
                 Question("mb", "int", "choose_strategy.micro_batch", default=4),
                 Question("ga", "int", "choose_strategy.grad_accum", default=1,
                          validate=lambda v, a: None if (a["mb"] * v) % a["n"] == 0 else msg(
                              "training.grpo_groups", replies=a["mb"] * v, n=a["n"]))])}
    s = Session.new("test", ("a", "b"), tmp_path)
    s.save()
    replayed = {"b": {"n": 4, "mb": 4, "ga": 1}}
    assert Engine(s, UI(), None, load=steps.__getitem__, replay=replayed, overrides={"b": {"mb": "3"}}).run() == 2
    err = capsys.readouterr().err
    assert "b.ga=1 is not valid: GRPO scores replies in groups of 4" in err and not ran, (err, ran)
    # the same replay with a --set that keeps them whole runs
    assert Engine(s, UI(), None, load=steps.__getitem__, replay=replayed, overrides={"b": {"mb": "8"}}).run() == 0
    assert ran


def test_a_refused_answer_with_a_way_back_offers_alternatives_and_the_earlier_question(tmp_path, capsys):
    """Issue 20, item 1: a question that validates against the network (a hub endpoint, offline) is no dead end:
    after a refusal the user answers again, takes an alternative (a mirror), or goes back to an earlier question
    (another source), which is asked again with its answer pre-filled."""
    reachable = {"https://mirror", "local"}
    steps = dict(STEPS, a=make_step("a", [
        Question("source", "select", "select_model.source", default="hf",
                 choices=[Choice("hf", "hf"), Choice("local", "local")]),
        Question("endpoint", "text", "select_model.endpoint", default="https://down",
                 when=lambda a: a["source"] == "hf", way_back=("source",),
                 alternatives=lambda a: [Choice("https://mirror", "a mirror"), Choice("https://down", "official")],
                 validate=lambda v, a: None if v in reachable else msg("hub.unreachable", endpoint=v, error="down")),
        Question("model", "text", "select_model.model_id", default="m")]))
    # Enter (the default), refused → back to the source → local → the model
    p = Scripted([..., ..., "back:source", "local", ..., ...])
    s = Session.new("test", ("a", "b"), tmp_path)
    s.save()
    assert Engine(s, UI(), p, load=steps.__getitem__).run() == 0
    assert [k for k, _ in p.asked] == ["source", "endpoint", "after_refusal", "source", "model", "x"]
    assert p.asked[3] == ("source", "hf")  # its earlier answer pre-filled
    assert saved(s)["steps"]["a"]["answers"] == {"source": "local", "model": "m"}  # no stale endpoint
    assert "Cannot reach https://down" in capsys.readouterr().err
    # a mirror from the short list (the refused value itself is not offered again)
    p = Scripted([..., ..., "use:https://mirror", ..., ...])
    s = Session.new("test", ("a", "b"), tmp_path / "mirror")
    s.save()
    seen = []
    real_ask = p.ask
    p.ask = lambda q, pre, a: seen.append([c.value for c in q.resolve_choices(a)]) or real_ask(q, pre, a)
    assert Engine(s, UI(), p, load=steps.__getitem__).run() == 0
    assert saved(s)["steps"]["a"]["answers"] == {"source": "hf", "endpoint": "https://mirror", "model": "m"}
    assert ["again", "use:https://mirror", "back:source"] in seen
    # answering again keeps asking the same question, in a fresh field (typing was appended to the refused text:
    # issue 46 item 8; the warning above it shows what was refused)
    p = Scripted([..., ..., "again", "https://mirror", ..., ...])
    s = Session.new("test", ("a", "b"), tmp_path / "again")
    s.save()
    assert Engine(s, UI(), p, load=steps.__getitem__).run() == 0
    assert p.asked[3] == ("endpoint", None)
    assert saved(s)["steps"]["a"]["answers"]["endpoint"] == "https://mirror"


def test_interactive_prefills_the_winner_and_reprompts_on_invalid(tmp_path, capsys):
    p = Scripted(["3", "10", ..., False, ...])  # 3 is odd → warned and asked again
    e, s = engine(tmp_path, p, replay={"a": {"mode": "lora"}, "b": {"x": 0.1}})
    assert e.run() == 0
    assert p.asked[0] == ("n", 8) and p.asked[1] == ("n", "3") and p.asked[2] == ("mode", "lora")
    assert p.asked[4] == ("x", 0.1)
    assert saved(s)["steps"]["a"]["answers"] == {"n": 10, "mode": "lora", "flag": False}
    assert "between 0 and 0" in capsys.readouterr().err


def test_missing_answer_names_step_key_and_set(tmp_path, capsys):
    e, s = engine(tmp_path, replay={"a": {"mode": "full"}})  # path has no default
    assert e.run() == 2
    err = capsys.readouterr().err
    assert "a.path" in err and "--set a.path=VALUE" in err
    assert saved(s)["steps"]["a"]["status"] == "pending"


def test_invalid_set_value_stops_with_the_reason(tmp_path, capsys):
    e, s = engine(tmp_path, overrides={"a": {"n": "seven"}})
    assert e.run() == 2
    assert "a.n='seven'" in capsys.readouterr().err


def test_unknown_set_key_is_refused(tmp_path, capsys):
    e, s = engine(tmp_path, overrides={"a": {"nn": "2"}})
    assert e.run() == 2
    assert "no question 'nn'" in capsys.readouterr().err


def test_secret_through_set_is_refused(tmp_path, capsys):
    e, s = engine(tmp_path, overrides={"a": {"token": "x"}})
    assert e.run() == 2
    assert "YICHUI_TEST_TOKEN" in capsys.readouterr().err


def test_missing_secret_names_the_environment_variable(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("YICHUI_TEST_TOKEN")
    e, s = engine(tmp_path)
    assert e.run() == 2
    assert "YICHUI_TEST_TOKEN" in capsys.readouterr().err


def test_ctrl_c_at_a_prompt_saves_answers_and_exits_130(tmp_path, capsys):
    p = Scripted(["4", "full", KeyboardInterrupt])
    e, s = engine(tmp_path, p)
    assert e.run() == 130
    data = saved(s)
    assert data["steps"]["a"]["answers"] == {"n": 4, "mode": "full"} and data["steps"]["a"]["status"] == "pending"
    assert f"yichui resume {s.id}" in capsys.readouterr().err
    # resume (issue 46 item 9, the tryout C: ~20 Enters to get back): one question — go on from where it stopped,
    # the answers given kept (said), the first missing one asked; or all again, pre-filled
    p2 = Scripted(["keep", "/data", ..., ...])
    e2 = Engine(Session.load(s.path), UI(), p2, load=STEPS.__getitem__)
    assert e2.run() == 0
    assert p2.asked[:2] == [("keep_answers", "keep"), ("path", None)]
    assert saved(s)["steps"]["a"]["answers"] == {"n": 4, "mode": "full", "path": "/data", "flag": False}
    assert "a.mode = full (" in capsys.readouterr().out
    e3, s3 = engine(tmp_path / "again", Scripted(["4", "full", KeyboardInterrupt]))
    assert e3.run() == 130
    p3 = Scripted(["change", ..., ..., "/data", ..., ...])
    assert Engine(Session.load(s3.path), UI(), p3, load=STEPS.__getitem__).run() == 0
    assert p3.asked[:3] == [("keep_answers", "keep"), ("n", 4), ("mode", "full")]


def test_many_answers_kept_on_resume_are_said_in_one_line(tmp_path, capsys):
    """Issue 46, trial E: "from where it stopped" printed 27 two-line notices, one per kept answer, before the next
    question. More than three are said together: how many, their keys, where to see and change them."""
    many = make_step("a", [Question(f"q{i}", "int", "choose_strategy.lora_rank", default=i) for i in range(6)])
    steps = {"a": many, "b": STEP_B}
    s = Session.new("test", ("a", "b"), tmp_path)
    s.save()
    assert Engine(s, UI(), Scripted([1, 2, 3, 4, 5, KeyboardInterrupt]), load=steps.__getitem__).run() == 130
    capsys.readouterr()
    p = Scripted(["keep", ..., ...])
    assert Engine(Session.load(s.path), UI(), p, load=steps.__getitem__).run() == 0
    out = capsys.readouterr().out
    assert p.asked[:2] == [("keep_answers", "keep"), ("q5", 5)]
    assert f"a: 5 answers kept as given before (q0, q1, q2, q3, q4); `yichui show {s.id}`" in " ".join(out.split())
    assert "answered before" not in out


def test_a_step_cut_short_while_running_resumes_with_its_answers_a_failed_one_asks_again(tmp_path, capsys):
    """Issue 46 item 9: resume asked again what the step had started running with (the download folder, "Train
    on:"). A step interrupted while running (Ctrl-C, kill -9: status running) carries on with its saved answers,
    each said in a line; one that failed says why and asks one question: run it again with the same answers (the
    network came back) or answer its questions again, pre-filled (the user may change what caused it)."""
    state = {"interrupt": True, "fail": False}

    def run(ctx, a):
        if state["interrupt"]:
            raise KeyboardInterrupt
        if state["fail"]:
            raise StepError("hub.no_such_model", repo="x/y", endpoint="http://h")
        return {"echo": dict(a)}

    steps = dict(STEPS, a=make_step("a", STEP_A.questions(None), run=run))
    p = Scripted(["4", "full", "/data", True])
    s = Session.new("test", ("a", "b"), tmp_path)
    s.save()
    assert Engine(s, UI(), p, load=steps.__getitem__).run() == 130
    assert saved(s)["steps"]["a"]["status"] == "pending" and saved(s)["steps"]["a"]["started_at"]
    state["interrupt"], state["fail"] = False, True
    p2 = Scripted([...])  # only b's question
    assert Engine(Session.load(s.path), UI(), p2, load=steps.__getitem__).run() == 1
    assert p2.asked == [] and "a: 4 answers kept as given before (n, mode, path, flag)" in \
        " ".join(capsys.readouterr().out.split())
    p3 = Scripted(["keep"])  # failed: why, said; the same answers chosen, nothing else asked — and it fails again
    assert Engine(Session.load(s.path), UI(), p3, load=steps.__getitem__).run() == 1
    assert p3.asked == [("keep_answers", "keep")]
    out = capsys.readouterr()
    assert "a failed last time:" in out.err + out.out and "x/y" in out.err + out.out
    state["fail"] = False
    p4 = Scripted(["change", ..., "lora", ..., ...])  # answered again, pre-filled; mode changed
    assert Engine(Session.load(s.path), UI(), p4, load=steps.__getitem__).run() == 0
    assert p4.asked[:3] == [("keep_answers", "keep"), ("n", 4), ("mode", "full")]
    assert saved(s)["steps"]["a"]["answers"]["mode"] == "lora"


def test_a_saved_answer_is_checked_quietly_what_its_validator_says_comes_when_it_is_given(tmp_path, capsys):
    """Issue 46 trial I (N9): answering a failed step's questions again printed the saved dataset's "40 of 40
    records are malformed" block before the path prompt, as if the file about to be given had failed. The saved
    answer is checked quietly; the validator's lines come when an answer is given at the prompt."""
    seen = []

    def questions(ctx):
        def noisy(v, a):
            seen.append(v)
            ctx.warn(msg("answer.out_of_range", lo=f"<{v}>", hi=0))  # what a data check says of the file
            return None
        return [Question("path", "text", "select_model.model_id", validate=noisy)]

    state = {"fail": True}

    def run(ctx, a):
        if state["fail"]:
            raise StepError("hub.no_such_model", repo="x/y", endpoint="http://h")
        return {"echo": dict(a)}

    steps = dict(STEPS, a=types.SimpleNamespace(name="a", requires=(), questions=questions, run=run,
                                                is_done=lambda ctx, rec: True))
    s = Session.new("test", ("a", "b"), tmp_path)
    s.save()
    assert Engine(s, UI(), Scripted(["/old"]), load=steps.__getitem__).run() == 1
    capsys.readouterr()
    state["fail"] = False
    p = Scripted(["change", "/new", ...])
    assert Engine(Session.load(s.path), UI(), p, load=steps.__getitem__).run() == 0
    assert p.asked[:2] == [("keep_answers", "keep"), ("path", "/old")]  # pre-filled with the saved one
    err = capsys.readouterr().err
    assert "<" + "/new>" in err and "</old>" not in err, err  # checked (seen) but not said
    assert seen[-2:] == ["/old", "/new"]


def test_step_error_marks_failed_with_the_message(tmp_path, capsys):
    def fail(ctx, a):
        raise StepError("hub.no_such_model", repo="x/y", endpoint="http://h")

    steps = dict(STEPS, b=make_step("b", [], run=fail))
    s = Session.new("test", ("a", "b"), tmp_path)
    s.save()
    assert Engine(s, UI(), None, load=steps.__getitem__).run() == 1
    rec = saved(s)["steps"]["b"]
    assert rec["status"] == "failed" and "x/y" in rec["error"]
    # run without a prompter (--yes, demo, no terminal): the hint carries --yes, which resume then needs (issue 46)
    out = capsys.readouterr().out
    assert f"continue with: yichui resume {s.id} --yes" in out and "Fix the cause" in out

    def killed(ctx, a):  # the trainer killed from outside (the 46 tryouts C and D): nothing to fix first
        raise StepError("training.died", pid=7, log="/r/train/trainer.log", tail="  {'loss': 3.0}")

    steps = dict(STEPS, b=make_step("b", [], run=killed))
    s = Session.new("test", ("a", "b"), tmp_path / "killed")
    s.save()
    assert Engine(s, UI(), None, load=steps.__getitem__).run() == 1
    captured = capsys.readouterr()
    assert f"Continue with: yichui resume {s.id} --yes" in captured.out and "Fix the cause" not in captured.out
    assert "killed, or it crashed" in captured.err and "  {'loss': 3.0}" in captured.err


def test_done_steps_are_skipped_on_resume(tmp_path):
    calls = []
    steps = {"a": make_step("a", [], run=lambda c, a: calls.append("a") or {}),
             "b": make_step("b", [], run=lambda c, a: calls.append("b") or {})}
    s = Session.new("test", ("a", "b"), tmp_path)
    s.steps["a"]["status"] = "done"
    s.save()
    assert Engine(s, UI(), None, load=steps.__getitem__).run() == 0
    assert calls == ["b"]


def test_a_done_step_whose_outputs_are_gone_runs_again_and_names_what_is_missing(tmp_path, capsys):
    """Issue 46 trial J (N2): "The outputs of train are gone from disk" named nothing; a step's optional `missing`
    names the path, in the line that says the step runs again."""
    calls = []
    gone = types.SimpleNamespace(name="a", requires=(), questions=lambda ctx: [], is_done=lambda ctx, rec: False,
                                 missing=lambda ctx, rec: "/runs/x/train/adapter",
                                 run=lambda c, a: calls.append("a") or {})
    steps = {"a": gone, "b": make_step("b", [], run=lambda c, a: calls.append("b") or {})}
    s = Session.new("test", ("a", "b"), tmp_path)
    s.steps["a"]["status"] = "done"
    s.save()
    assert Engine(s, UI(), None, load=steps.__getitem__).run() == 0 and calls == ["a", "b"]
    assert "The outputs of a are gone from disk (/runs/x/train/adapter is missing)" in capsys.readouterr().err


def test_a_set_that_changes_a_done_step_runs_it_again_and_the_steps_after(tmp_path, capsys):
    """Issue 46 item 20: `resume --set` on a done step was ignored ("done earlier, not asked again"), so an answer
    that caused a later failure could not be fixed through resume. A --set that changes it re-opens that step and
    the done ones after it, in one line; a --set equal to the answer recorded changes nothing."""
    calls = []
    steps = {"a": make_step("a", STEP_A.questions(None), run=lambda c, a: calls.append(("a", a["n"])) or {}),
             "b": make_step("b", STEP_B.questions(None), run=lambda c, a: calls.append(("b", a["x"])) or {})}
    s = Session.new("test", ("a", "b"), tmp_path)
    s.save()
    assert Engine(s, UI(), None, load=steps.__getitem__).run() == 0 and calls == [("a", 8), ("b", 0.5)]
    calls.clear()
    same = Engine(Session.load(s.path), UI(), None, overrides={"a": {"n": "8", "flag": "no"}}, load=steps.__getitem__)
    assert same.run() == 0 and calls == []  # nothing changed: nothing runs
    assert Engine(Session.load(s.path), UI(), None, overrides={"a": {"n": "6"}}, load=steps.__getitem__).run() == 0
    assert calls == [("a", 6), ("b", 0.5)]
    assert "--set changes a.n, answered when a ran: a runs again, and the steps done after it (b)" in \
        capsys.readouterr().err
    assert saved(s)["steps"]["a"]["answers"]["n"] == 6


def test_ctrl_c_at_a_reopened_step_s_questions_leaves_the_finished_session_as_it_was(tmp_path, capsys):
    """Issue 46 trial K (K1): Ctrl-C at the first question `resume DONE --set …` asked again left the finished
    session unfinished (every step from the re-opened one pending, its server running), so a plain resume picked
    it. Nothing had run: the re-opened steps are put back as they were and the --set value is not kept."""
    steps = {"a": make_step("a", STEP_A.questions(None)), "b": make_step("b", STEP_B.questions(None))}
    s = Session.new("test", ("a", "b"), tmp_path)
    s.save()
    assert Engine(s, UI(), None, load=steps.__getitem__).run() == 0
    whole = json.loads(s.path.read_text())
    before = whole["steps"]
    import time

    time.sleep(0.01)  # a save now would record another time (milliseconds)
    p = Scripted([KeyboardInterrupt])
    e = Engine(Session.load(s.path), UI(), p, overrides={"a": {"n": "6"}}, load=steps.__getitem__)
    assert e.run() == 130 and len(p.asked) == 1
    assert json.loads(s.path.read_text())["updated_at"] == whole["updated_at"]  # its time too (46 trial M)
    after = json.loads(s.path.read_text())["steps"]
    assert [after[n]["status"] for n in ("a", "b")] == ["done", "done"] and after["a"]["answers"] == before["a"]["answers"]
    out = capsys.readouterr().out
    assert "nothing changed, the session stays as it was" in out and "Give a valid value" not in out, out


def test_a_refused_set_on_a_done_step_leaves_the_session_as_it_was(tmp_path, capsys):
    """The tester's N11: `resume --yes --set choose_strategy.lora_targets=bogus_proj` on a finished session exited 2
    but left six done steps pending and the refused value saved, so a plain resume then failed the same way. A text
    answer is checked when its step asks it (its validator may read the model or ask a hub): refused there, the
    re-opened steps are put back as they were and the file keeps no trace of the value."""
    targets = Question("targets", "text", "choose_strategy.lora_targets", default="all-linear",
                       validate=lambda v, a: msg("memory.unknown_targets", targets=v, known="q_proj")
                       if v != "all-linear" and v != "q_proj" else None)
    steps = {"a": make_step("a", [targets], run=lambda c, a: {"targets": a["targets"]}),
             "b": make_step("b", STEP_B.questions(None), run=lambda c, a: {"x": a["x"]})}
    s = Session.new("test", ("a", "b"), tmp_path)
    s.save()
    assert Engine(s, UI(), None, load=steps.__getitem__).run() == 0
    before = s.path.read_bytes()
    e = Engine(Session.load(s.path), UI(), None, overrides={"a": {"targets": "bogus_proj"}}, load=steps.__getitem__)
    assert e.run() == 2
    said = capsys.readouterr()
    assert "No linear layers named bogus_proj" in said.err and "Nothing changed: the session stays as it was" in said.out
    after = json.loads(s.path.read_text())
    assert [after["steps"][n]["status"] for n in ("a", "b")] == ["done", "done"]
    assert after["steps"]["a"]["answers"]["targets"] == "all-linear" and "bogus_proj" not in s.path.read_text()
    assert {k: v for k, v in after.items() if k != "updated_at"} == \
        {k: v for k, v in json.loads(before).items() if k != "updated_at"}
    # a valid value re-opens and runs them
    ok = Engine(Session.load(s.path), UI(), None, overrides={"a": {"targets": "q_proj"}}, load=steps.__getitem__)
    assert ok.run() == 0 and json.loads(s.path.read_text())["steps"]["a"]["outputs"]["targets"] == "q_proj"


def test_messages_in_chinese(tmp_path, capsys):
    i18n.set_lang("zh")
    try:
        e, s = engine(tmp_path, replay={"a": {"mode": "full"}})
        assert e.run() == 2
        assert "没有答案" in capsys.readouterr().err
    finally:
        i18n.set_lang("en")


def test_checkbox_answers_are_lists_from_set_json_or_prompt():
    from wizard.engine import check

    q = Question("formats", "checkbox", "export.formats",
                 choices=[Choice("bnb-4bit", "NF4"), Choice("gptq-w4a16", "GPTQ")])
    assert check(q, "gptq-w4a16, bnb-4bit", {}) == (["gptq-w4a16", "bnb-4bit"], None)  # --set a,b
    assert check(q, ["bnb-4bit"], {}) == (["bnb-4bit"], None)                          # a replayed JSON list
    assert check(q, "", {}) == ([], None)                                              # none ticked
    assert check(q, "none", {}) == ([], None) == check(q, "None", {})                  # said so (issue 46)
    both = Question("x", "checkbox", "export.formats", choices=[Choice("none", "n"), Choice("a", "a")])
    assert check(both, "none", {}) == (["none"], None)                                 # unless it is a choice
    value, err = check(q, "bnb-4bit,zip", {})
    assert err.key == "answer.not_a_choice" and err.args["value"] == "zip"


def test_invalid_checkbox_set_is_refused_before_any_work(tmp_path, capsys):
    step = make_step("a", [Question("formats", "checkbox", "export.formats", choices=[Choice("bnb-4bit", "NF4")])])
    s = Session.new("test", ("a", "b"), tmp_path)
    s.save()
    e = Engine(s, UI(), None, load={"a": step, "b": STEP_B}.__getitem__, overrides={"a": {"formats": "zip"}})
    assert e.run() == 2
    assert "a.formats='zip'" in capsys.readouterr().err


def test_set_values_are_checked_against_earlier_set_answers_before_any_work(tmp_path, capsys):
    """A checkbox whose choices depend on an earlier answer: the --set values are checked in question order."""
    ran = []
    step = make_step("a", [
        Question("engine", "select", "export.serve_with", default="x", choices=[Choice("x", "X"), Choice("y", "Y")]),
        Question("formats", "checkbox", "export.formats",
                 choices=lambda a: [Choice("f1", "F1")] + ([Choice("f2", "F2")] if a["engine"] == "y" else []))],
        run=lambda ctx, a: ran.append(a) or {})
    s = Session.new("test", ("a", "b"), tmp_path)
    s.save()
    bad = Engine(s, UI(), None, load={"a": step, "b": STEP_B}.__getitem__,
                 overrides={"a": {"engine": "x", "formats": "f2"}})
    assert bad.run() == 2 and not ran
    assert "a.formats='f2'" in capsys.readouterr().err
    ok = Engine(s, UI(), None, load={"a": step, "b": STEP_B}.__getitem__,
                overrides={"a": {"engine": "y", "formats": "f2"}})
    assert ok.run() == 0 and ran[0]["formats"] == ["f2"]


def test_choices_known_only_after_an_earlier_step_of_the_run_are_checked_when_their_step_comes(tmp_path, capsys):
    """`yichui run --set deploy.model=adapter` on a whole run: the adapter choice exists once training has made one.
    A step whose choices depend on a required step still pending says so (ctx.pending; the deploy step raises
    NotKnownYet): the value is checked when its step runs — kept if the earlier step made it a choice, refused
    with the one line otherwise."""
    import types

    from recipes.deploy import NotKnownYet

    def b_questions(ctx):
        def models(a):
            if ctx.pending("a"):
                raise NotKnownYet("b.model")
            return [Choice("merged", "M")] + ([Choice("adapter", "A")] if ctx.outputs("a").get("adapter") else [])
        return [Question("model", "select", "deploy.model", default="merged", choices=models)]

    for made, code in ((True, 0), (False, 2)):
        ran = []
        a = make_step("a", [], run=lambda ctx, ans, made=made: {"adapter": made})
        b = types.SimpleNamespace(name="b", requires=("a",), questions=b_questions,
                                  run=lambda ctx, ans: ran.append(ans["model"]) or {}, is_done=lambda ctx, rec: True)
        s = Session.new("test", ("a", "b"), tmp_path / str(made))
        s.save()
        e = Engine(s, UI(), None, load={"a": a, "b": b}.__getitem__, overrides={"b": {"model": "adapter"}})
        assert e.run() == code
        assert s.steps["a"]["status"] == "done"  # the earlier step ran: the value was not refused before it
        if made:
            assert ran == ["adapter"]
        else:
            assert not ran and "b.model='adapter'" in capsys.readouterr().err


def test_a_path_answer_expands_the_home_folder(monkeypatch, tmp_path):
    from wizard.engine import check

    monkeypatch.setenv("HOME", str(tmp_path))
    q = Question("data", "path", "choose_strategy.dataset_path")
    assert check(q, "~/data.jsonl", {}) == (str(tmp_path / "data.jsonl"), None)
    assert check(Question("name", "text", "x"), "~keep", {}) == ("~keep", None)  # text stays as typed


def test_an_optional_text_answer_may_be_empty_others_may_not():
    """deploy.engine_args is optional: `--set deploy.engine_args=` (and Enter at its prompt) means none; a text
    question that is not optional still refuses an empty answer."""
    from wizard.engine import check

    assert check(Question("engine_args", "text", "deploy.engine_args", default="", optional=True), "", {}) == ("", None)
    assert check(Question("engine_args", "text", "deploy.engine_args", default="", optional=True), "  ", {}) == ("", None)
    assert check(Question("name", "text", "x", default=""), "", {})[1].key == "answer.empty"


def test_a_step_reads_only_the_steps_its_requires_names(tmp_path, monkeypatch):
    """Step b reads step a's outputs: refused while b's `requires` does not name a (the tests run strict), read once
    it does."""
    reader = make_step("b", [], run=lambda ctx, a: {"seen": ctx.outputs("a").get("echo")})
    monkeypatch.setitem(STEPS, "b", reader)
    e, s = engine(tmp_path, defaults={"a": {"n": 2}})
    assert e.run() == 1  # a bug: the step fails, its traceback in the log
    assert s.steps["b"]["status"] == "failed" and "UndeclaredRead" in json.dumps(s.steps["b"]["error"])
    reader.requires = ("a",)
    e2, s2 = engine(tmp_path / "again", defaults={"a": {"n": 2}})
    assert e2.run() == 0
    assert s2.steps["b"]["outputs"]["seen"]["n"] == 2


def test_a_failure_caused_by_an_earlier_answer_makes_resume_ask_that_step_again(tmp_path, capsys):
    """Issue 20, item 2: a later step refusing what an earlier answer chose (a model with no chat template, found by
    the strategy step) must not send resume straight back into the same error: that earlier step is asked again."""
    fail = {"on": True}

    def run_b(ctx, a):
        if fail["on"]:
            raise StepError("choose_strategy.no_chat_template", model="m").caused_by("a")
        return {}

    steps = dict(STEPS, b=make_step("b", STEP_B.questions(None), run=run_b))
    s = Session.new("test", ("a", "b"), tmp_path)
    s.save()
    assert Engine(s, UI(), None, load=steps.__getitem__).run() == 1
    assert "resume asks them again" in capsys.readouterr().out
    data = saved(s)
    assert data["steps"]["a"]["status"] == "pending" and data["steps"]["b"]["status"] == "failed"
    assert data["steps"]["a"]["answers"] == {"n": 8, "mode": "lora", "flag": False}  # kept: pre-filled when asked
    fail["on"] = False
    p = Scripted([...] * 4)
    assert Engine(Session.load(s.path), UI(), p, load=steps.__getitem__).run() == 0
    assert [k for k, _ in p.asked][:3] == ["n", "mode", "flag"]  # step a asked again, its answers pre-filled


def test_an_answer_an_earlier_step_settles_is_not_asked_again(tmp_path, capsys):
    """Issue 20, item 13: the serving engine was asked twice (export, then deploy). A question an earlier answer
    implies is not asked when that answer validates here (a line says so); --set wins; when it does not validate
    the reason is shown and the question asked."""
    exported, usable = {"engine": "transformers"}, {"transformers", "vllm"}  # the earlier choice; what is installed
    q = Question("backend", "select", "deploy.backend", default="transformers",
                 choices=[Choice("transformers", "t"), Choice("vllm", "v")],
                 validate=lambda v, a: None if v in usable else msg("answer.empty"),
                 implied=lambda a: (exported["engine"], "export.serve_with"))
    steps = dict(STEPS, a=make_step("a", [q]))

    def run(prompter=None, **kw):
        s = Session.new("test", ("a", "b"), tmp_path / str(len(list(tmp_path.iterdir()))))
        s.save()
        return Engine(s, UI(), prompter, load=steps.__getitem__, **kw).run(), s

    p = Scripted([...])
    rc, s = run(p)
    assert rc == 0 and [k for k, _ in p.asked] == ["x"] and saved(s)["steps"]["a"]["answers"] == {"backend": "transformers"}
    assert "a.backend = transformers (as export.serve_with" in capsys.readouterr().out
    rc, s = run(overrides={"a": {"backend": "vllm"}})  # a --set wins over it
    assert rc == 0 and saved(s)["steps"]["a"]["answers"] == {"backend": "vllm"}
    exported["engine"] = "vllm"  # chosen at export, but not installed here: said, and asked
    usable.discard("vllm")
    p = Scripted(["transformers", ...])
    rc, s = run(p)
    assert rc == 0 and p.asked[0][0] == "backend" and saved(s)["steps"]["a"]["answers"] == {"backend": "transformers"}
    assert "export.serve_with='vllm' cannot be used for a.backend here" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["read-only", "name-too-long"])
def test_a_step_the_filesystem_refuses_fails_in_one_line_and_keeps_the_session(tmp_path, capsys, tmpfs, where):
    """A step writing into a read-only filesystem, or a 10,000-character file name (issue 23): one line naming the
    step, the path (shortened) and the system's reason, exit 1, the session file valid and the step resumable —
    not "export failed: OSError …" with the whole path."""
    target = (tmpfs("1m", ro=True) / "export" / "merged") if where == "read-only" else tmp_path / ("x" * 10_000)

    def write(ctx, a):
        target.mkdir(parents=True)
        return {}

    steps = dict(STEPS, b=make_step("b", STEP_B.questions(None), run=write))
    s = Session.new("test", ("a", "b"), tmp_path / "home")
    s.save()
    assert Engine(s, UI(), None, load=steps.__getitem__).run() == 1
    err = capsys.readouterr()
    lines = [x for x in (err.out + err.err).splitlines() if x.startswith("error:")]
    assert len(lines) == 1, err
    reason = "Read-only file system" if where == "read-only" else "File name too long"
    assert "b could not write or read" in lines[0] and reason in lines[0] and "yichui resume" in lines[0], lines[0]
    assert len(lines[0]) < 600 and "x" * 100 not in lines[0]
    data = saved(s)
    assert data["steps"]["a"]["status"] == "done" and data["steps"]["b"]["status"] == "failed"
    assert reason in data["steps"]["b"]["error"]


@pytest.mark.parametrize("choice", ["back", "stop"])
def test_in_the_wizard_a_failure_an_earlier_answer_caused_offers_to_go_back_there_now(tmp_path, capsys, choice):
    """Issue 46 item 4: a model accepted at step 1 and refused at download ended the wizard; now the refusal is said
    and the user may go back to that step at once (its answers pre-filled), or stop (resume asks it then)."""
    tries = []

    def run_b(ctx, a):
        tries.append(ctx.answers("a")["n"])
        if ctx.answers("a")["n"] == 8:
            raise StepError("choose_strategy.no_chat_template", model="m").caused_by("a")
        return {}

    b = make_step("b", STEP_B.questions(None), run=run_b)
    b.requires = ("a",)
    steps = dict(STEPS, b=b)
    s = Session.new("test", ("a", "b"), tmp_path)
    s.save()
    # a: mode, flag (n set); b: x; the refusal: go back or stop; a again: n = 4, mode, flag; b: x
    p = Scripted([..., ..., ..., choice, 4, ..., ..., ...])
    # step a's n comes from --set (as a scripted start would give it): going back asks it all the same, pre-filled
    code = Engine(s, UI(), p, load=steps.__getitem__, overrides={"a": {"n": "8"}}).run()
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert out.count(i18n.t("choose_strategy.no_chat_template", model="m")) == 1, out  # said once
    asked = [k for k, _ in p.asked]
    assert asked[:4] == ["mode", "flag", "x", "after_failure"]
    if choice == "back":
        assert code == 0 and tries == [8, 4] and asked[4:] == ["n", "mode", "flag", "x"]
        assert p.asked[4] == ("n", 8)  # pre-filled with the answer that led to the refusal
        assert saved(s)["steps"]["a"]["answers"]["n"] == 4 and saved(s)["steps"]["b"]["status"] == "done"
    else:
        assert code == 1 and tries == [8] and "resume asks them again" in out
        assert saved(s)["steps"]["a"]["status"] == "pending" and saved(s)["steps"]["b"]["status"] == "failed"


def test_a_run_that_warned_does_not_end_with_all_steps_done_and_repeats_its_warnings(tmp_path, capsys):
    """Issue 46 (a new user's first hour, item 2): a deploy whose model never stops warned, then the run said "All
    steps done" — the warnings scrolled away. The end now says the run warned and lists each warning in one line."""
    def warns(ctx, a):
        ctx.warn(msg("deploy.no_stop", tokens=256, why="no EOS"))
        return {}
    steps = {"a": make_step("a", [], run=warns), "b": make_step("b", [], run=lambda c, a: {})}
    s = Session.new("test", ("a", "b"), tmp_path)
    s.save()
    assert Engine(s, UI(), None, load=steps.__getitem__).run() == 0
    out = capsys.readouterr().out
    assert "All steps done" not in out and "All steps ran, with 1 warning(s) to read first" in out, out
    assert "  a: The served model does not end its reply within 256 tokens; it did not in the export's check" in out
    quiet = {"a": make_step("a", [], run=lambda c, a: {}), "b": make_step("b", [], run=lambda c, a: {})}
    s2 = Session.new("test", ("a", "b"), tmp_path)
    s2.save()
    assert Engine(s2, UI(), None, load=quiet.__getitem__).run() == 0
    assert "All steps done" in capsys.readouterr().out


def test_a_value_the_demo_sets_itself_is_not_said_to_be_the_users_set(tmp_path, capsys):
    """Issue 46, trial E: replaying a demo session question by question said `select_model.endpoint = http://…
    (preset by --set)` with no --set given: the demo points the session at its own hub, new on every run."""
    from wizard.engine import DemoSet

    e, s = engine(tmp_path, Scripted([..., ..., ...]),
                  overrides={"a": {"n": "6", "mode": "full", "path": DemoSet("http://h:1")}})
    assert e.run() == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "a.path = http://h:1 (the demo's local hub" in out and "a.n = 6 (preset by --set)" in out
    assert saved(s)["steps"]["a"]["answers"]["path"] == "http://h:1"
