"""GRPO's reward functions (issue 47): a small built-in set for prompts with checkable answers, and the user's own
Python file run in a separate process.

Built-ins (names in recipes/training/spec.py REWARDS), each 1.0 or 0.0 per reply:
- ``accuracy``: the reply's final answer equals the reference (``answer`` of recipes/data/prompts.py) — numbers
  compared as numbers (``1,000`` = ``1000.0``), text case- and space-insensitively. The final answer is the one
  marked (``#### N``, GSM8K's convention, or ``\\boxed{N}``), else the reply's last number. None (no score, trl leaves
  it out) for a prompt without a reference;
- ``format``: the reply marks its final answer (``#### N`` on its last line, or ``\\boxed{…}``);
- ``stops``: the reply ended with an end-of-sequence token before the completion length (a model that learns to
  stop — what a served fine-tune most often fails at).

The user's file: every top-level function named ``reward`` or ``reward_*`` with the signature
``(prompt: str, completion: str, answer: str | None) -> float | None`` is one reward function, summed with the
others. It runs in a child Python (isolated mode, an empty working folder, an environment without the user's tokens,
a memory limit, a timeout per batch): its exceptions, a wrong return type and a hang are named with the file and the
function, and never reach yichui's trainer as a traceback.
"""
from __future__ import annotations

import json
import math
import os
import re
import select
import subprocess
import sys
import tempfile
from pathlib import Path

from recipes.base import Refusal

MARKED = re.compile(r"####\s*([^\n]+?)\s*$|\\boxed\{([^{}]*)\}", re.MULTILINE)
NUMBER = re.compile(r"-?\$?\d[\d,]*(?:\.\d+)?|-?\.\d+")
BUILT_IN = ("accuracy", "format", "stops")
TIMEOUT_S = 120.0  # a batch of replies scored by the user's file
CHECK_TIMEOUT_S = 30.0  # the file loaded and tried on a few answers, before training: no minute of silence there
MEMORY_LIMIT = 4 << 30  # bytes of address space the user's file may map (RLIMIT_AS)
KEEP_ENV = ("PATH", "LANG", "LC_ALL", "PYTHONHASHSEED", "TZ")  # what the child sees of the trainer's environment


class RewardError(Refusal):
    """The user's reward file failed: not loadable, no reward function, raised, returned a non-number, or hung."""


def _text(item) -> str:
    """A prompt or reply as text: trl hands conversational ones as messages, plain ones as strings."""
    if isinstance(item, str):
        return item
    if isinstance(item, list) and item:
        last = item[-1]
        return str(last.get("content", "")) if isinstance(last, dict) else str(last)
    return ""


def final_answer(text: str) -> str | None:
    """The reply's final answer: the last marked one (``#### N`` or ``\\boxed{N}``), else its last number; None."""
    marked = [a or b for a, b in MARKED.findall(text)]
    if marked:
        return marked[-1].strip()
    numbers = NUMBER.findall(text)
    return numbers[-1] if numbers else None


def _as_number(text: str) -> float | None:
    t = text.strip().rstrip(".").replace(",", "").replace("$", "").replace(" ", "")
    try:
        x = float(t.rstrip("%"))
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def same_answer(got: str | None, reference: str) -> bool:
    """Numbers as numbers (within 1e-6 relative), else text case- and space-insensitively."""
    if got is None:
        return False
    a, b = _as_number(got), _as_number(reference)
    if a is not None and b is not None:
        return abs(a - b) <= 1e-6 * max(1.0, abs(b))
    norm = lambda s: " ".join(s.lower().strip().rstrip(".").split())  # noqa: E731
    return norm(got) == norm(reference)


def accuracy(prompts, completions, answer=None, **_) -> list[float | None]:
    answers = answer or [None] * len(completions)
    return [None if ref is None else float(same_answer(final_answer(_text(c)), str(ref)))
            for c, ref in zip(completions, answers)]


def format(prompts, completions, **_) -> list[float | None]:  # noqa: A001 - the reward's name in trl's logs
    out: list[float | None] = []
    for c in completions:
        text = _text(c).rstrip()
        last = text.rsplit("\n", 1)[-1]
        out.append(float(bool(re.fullmatch(r"\s*####\s*\S.*", last)) or "\\boxed{" in text))
    return out


def stops_reward(eos_ids: set[int], completion_length: int):
    """The ``stops`` reward for a tokenizer's end-of-sequence ids (the chat template's end of turn among them)."""
    def stops(prompts, completions, completion_ids=None, **_) -> list[float | None]:
        ids = completion_ids or [[] for _ in completions]
        return [float(bool(row) and row[-1] in eos_ids and len(row) <= completion_length) for row in ids]
    return stops


# -- the user's file, in its own process ---------------------------------------------------------------------------
_CHILD = r"""
import importlib.util, inspect, json, math, sys, traceback
path = sys.argv[1]
channel, sys.stdout = sys.stdout, sys.stderr  # the user's prints must not reach the answers' channel
def say(obj):
    channel.write(json.dumps(obj) + "\n"); channel.flush()
def where(e):
    tb = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == path]
    what = str(e)[:200] or ("over the 4 GiB a reward file may use" if isinstance(e, MemoryError) else "")
    return f"{type(e).__name__}: {what}" + (f" (line {tb[-1].lineno})" if tb else "")
try:
    spec = importlib.util.spec_from_file_location("yichui_user_rewards", path)
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
except BaseException as e:
    say({"error": "load", "detail": where(e)}); sys.exit(0)
funcs = {n: f for n, f in vars(mod).items() if callable(f) and inspect.isfunction(f)
         and f.__module__ == mod.__name__ and (n == "reward" or n.startswith("reward_"))}
say({"functions": sorted(funcs)})
for line in sys.stdin:
    batch = json.loads(line)
    out = {}
    for name in batch["functions"]:
        scores = []
        for p, c, a in zip(batch["prompts"], batch["completions"], batch["answers"]):
            try:
                r = funcs[name](p, c, a)
            except BaseException as e:
                say({"error": "raised", "function": name, "detail": where(e)}); sys.exit(0)
            if r is not None and (isinstance(r, bool) or not isinstance(r, (int, float)) or not math.isfinite(r)):
                say({"error": "not_a_number", "function": name, "detail": repr(r)[:80]}); sys.exit(0)
            scores.append(None if r is None else float(r))
        out[name] = scores
    say({"rewards": out})
"""


def _limit_memory() -> None:  # in the child, before it starts Python
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


class UserRewards:
    """The user's reward file in a child process, started once, asked one batch at a time.

    Raises RewardError ("rewards.no_file" | "rewards.load" | "rewards.none_defined" | "rewards.raised" |
    "rewards.not_a_number" | "rewards.timeout" | "rewards.died" | "rewards.garbled")."""

    def __init__(self, path: str | os.PathLike, timeout_s: float = TIMEOUT_S):
        self.path = Path(path).expanduser().resolve()
        if self.path.is_dir():
            raise RewardError("rewards.is_folder", path=str(path))
        if not self.path.is_file():
            raise RewardError("rewards.no_file", path=str(path))
        self.timeout_s = timeout_s
        self._cwd = tempfile.TemporaryDirectory(prefix="yichui-rewards-")
        # -I ignores PYTHON* variables: -B keeps its bytecode out of the user's folder
        env = {k: os.environ[k] for k in KEEP_ENV if k in os.environ} | {"HOME": self._cwd.name}
        self.proc = subprocess.Popen([sys.executable, "-I", "-B", "-c", _CHILD, str(self.path)], cwd=self._cwd.name,
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, preexec_fn=_limit_memory,
                                     start_new_session=True)
        first = self._read()
        self.functions: list[str] = first.get("functions", [])
        if not self.functions:
            self.close()
            raise RewardError("rewards.none_defined", path=str(self.path))

    def _read(self) -> dict:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], self.timeout_s)
        if not ready:
            self.close()
            raise RewardError("rewards.timeout", path=str(self.path), s=int(self.timeout_s))
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            self.close()
            raise RewardError("rewards.died", path=str(self.path), code=code)
        try:
            got = json.loads(line)
        except ValueError:  # written past the child's guard (sys.__stdout__, os.write(1, …))
            self.close()
            raise RewardError("rewards.garbled", path=str(self.path), line=line.strip()[:80]) from None
        if "error" in got:
            self.close()
            raise RewardError("rewards." + got["error"], path=str(self.path), function=got.get("function", ""),
                              detail=got.get("detail", ""))
        return got

    def score(self, prompts: list[str], completions: list[str], answers: list[str | None]) -> dict[str, list]:
        """Each function's scores for the batch: {name: [float | None per reply]}."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps({"functions": self.functions, "prompts": prompts,
                                              "completions": completions, "answers": answers}) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            code = self.proc.wait()
            self.close()
            raise RewardError("rewards.died", path=str(self.path), code=code) from None
        return self._read()["rewards"]

    def trl_functions(self) -> list:
        """One trl reward function per user function (trl logs each under its name); one batch per call of the
        first, the others read what it got."""
        cache: dict = {}

        def make(name: str, first: bool):
            def fn(prompts, completions, answer=None, **_):
                if first:  # trl calls the functions in order on the same batch
                    cache["got"] = self.score([_text(p) for p in prompts], [_text(c) for c in completions],
                                              list(answer or [None] * len(completions)))
                return cache["got"][name]
            # trl logs it as rewards/<name>/mean (the events' reward_<name>): "reward_digits" → "digits"; "reward",
            # or a name a built-in has, → file_<name>
            short = "file" if name == "reward" else name.removeprefix("reward_")
            fn.__name__ = "file_" + short if name != "reward" and short in (*BUILT_IN, "file") else short
            return fn
        return [make(n, i == 0) for i, n in enumerate(self.functions)]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._cwd.cleanup()


def check_file(path: str | os.PathLike, records: list[dict]) -> list[str]:
    """Load the user's file and score the first records' reference answers as replies (before any training): its
    function names. Raises RewardError as :class:`UserRewards`."""
    user = UserRewards(path, timeout_s=CHECK_TIMEOUT_S)
    try:
        probe = records[:4] or [{"prompt": [{"role": "user", "content": "1 + 1?"}], "answer": "2"}]
        user.score([_text(r["prompt"]) for r in probe], [r.get("answer") or "" for r in probe],
                   [r.get("answer") for r in probe])
        return user.functions
    finally:
        user.close()


def functions(names, reward_file: str, eos_ids: set[int], completion_length: int) -> tuple[list, UserRewards | None]:
    """trl reward functions for the spec's ``rewards`` (built-ins by name, "file" the user's functions), and the
    user's process to close after training (None without one)."""
    out: list = []
    user = None
    for name in names:
        if name == "accuracy":
            out.append(accuracy)
        elif name == "format":
            out.append(format)
        elif name == "stops":
            out.append(stops_reward(eos_ids, completion_length))
        elif name == "file":
            user = UserRewards(reward_file)
            out += user.trl_functions()
    return out, user


def score_texts(names, reward_file: str, prompts: list, replies: list[str], answers: list) -> dict:
    """The reward functions on replies given as text (the evaluate step's held-out replies): {"reward": mean summed
    reward, "reward <function>": each one's mean}. ``stops`` needs the reply's tokens and is left out here.
    Raises RewardError as :class:`UserRewards`."""
    chosen = [n for n in names if n != "stops"]
    funcs, user = functions(chosen, reward_file, set(), 0)
    try:
        completions = [[{"role": "assistant", "content": r}] for r in replies]
        per = {}
        for f in funcs:
            got = f(prompts=prompts, completions=completions, answer=answers)
            per[f.__name__] = [float("nan") if x is None else float(x) for x in got]
    finally:
        if user is not None:
            user.close()
    if not per or not replies:
        return {}
    sums = [sum(v[i] for v in per.values() if not math.isnan(v[i])) for i in range(len(replies))]
    mean = lambda xs: round(sum(xs) / len(xs), 4) if xs else None  # noqa: E731
    return {"reward": mean(sums)} | {f"reward {k}": mean([x for x in v if not math.isnan(x)]) for k, v in per.items()}
