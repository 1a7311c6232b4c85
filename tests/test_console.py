"""The terminal layer without a terminal (a pipe or a log): progress is said in plain lines, not minutes of silence."""
from __future__ import annotations

import time

from wizard import console
from wizard.console import UI


def test_progress_without_a_terminal_says_how_far_it_is(capsys, monkeypatch):
    """Issue 46 (tryout): a first demo piped to a file was silent for minutes while it built the tiny model (a rich
    bar draws nothing without a terminal). Now a line every EVERY seconds, none while nothing moved, and the end."""
    monkeypatch.setattr(console._Lines, "EVERY", 0.05)
    ui = UI()
    assert not ui.is_terminal  # pytest captures stdout: a pipe, as for `yichui demo | tee log`
    with ui.progress("Pre-training", total=150, unit="steps") as bar:
        for step in (10, 10, 80, 150):
            time.sleep(0.06)
            bar.update(completed=step)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Pre-training"
    assert "  Pre-training: 10/150 (7 %)" in out and "  Pre-training: 80/150 (53 %)" in out
    assert out.count("  Pre-training: 10/150 (7 %)") == 1  # not repeated while it stands still
    assert out[-1] == "  Pre-training: 150/150 (100 %)"
    with ui.progress("Downloading", total=3 * 2**20, unit="B") as bar:
        time.sleep(0.06)
        bar.update(advance=2**20)
    assert "  Downloading: 1/3 MiB (33 %)" in capsys.readouterr().out
    with ui.progress("Quick", total=2) as bar:  # done before the first interval: only its title, as before
        bar.update(completed=2)
    assert capsys.readouterr().out.splitlines() == ["Quick"]


def test_the_loss_sparkline_shows_the_whole_run_s_trend():
    """Issue 46 item 14: at 3,000 steps the sparkline was the last 40 steps' noise; each character is now the mean
    of its share of the run, so a falling loss reads as falling."""
    import random

    from recipes.training.plots import BLOCKS, sparkline

    rng = random.Random(0)
    losses = [3.0 * 0.999 ** i + rng.uniform(-0.3, 0.3) for i in range(3000)]  # falls from ~3.0 to ~0.15, noisy
    line = sparkline(losses)
    assert len(line) == 40 and line[0] == BLOCKS[-1] and line[-1] == BLOCKS[0], line
    levels = [BLOCKS.index(c) for c in line]
    assert all(b <= a for a, b in zip(levels, levels[1:])), line  # the means fall step by step, as the loss does
    assert sparkline([2.0, 1.0]) == BLOCKS[-1] + BLOCKS[0] and sparkline([1.0]) == ""
    assert len(sparkline(losses[:7])) == 7  # fewer steps than characters: one each


def test_the_live_view_s_time_left_counts_down_and_says_when_it_saves():
    """Issue 46 item 14: "time left 6s" stayed up 45 s — frozen at the latest step event, and after the last step
    while the adapter was saved. It now counts down between events and says "saving" after the last step."""
    import types

    from recipes.training.runner import _fields
    from wizard import i18n

    ctx = types.SimpleNamespace(t=i18n.t)
    now = time.time()
    first = {"step": 1, "total_steps": 10, "time": now - 100}
    latest = {"step": 5, "total_steps": 10, "time": now - 30}  # 17.5 s a step: 87.5 s left then, 30 s ago
    left = int(_fields(ctx, first, latest, now - 100)[i18n.t("training.field.eta")].rstrip("s"))
    assert 56 <= left <= 58, left
    done = {"step": 10, "total_steps": 10, "time": now - 40}
    assert _fields(ctx, first, done, now - 100)[i18n.t("training.field.eta")] == "saving"
    late = {"step": 9, "total_steps": 10, "time": now - 60}  # overdue: 0, not a negative time
    assert _fields(ctx, first, late, now - 100)[i18n.t("training.field.eta")] == "0s"


def test_a_download_s_rate_counts_the_bytes_moved_now_not_those_already_on_disk():
    """Issue 46 item 14: a resumed download showed 81–321 MiB/s from a hub sending 0.15 MB/s — the bytes already on
    disk, set as the bar's start, counted in rich's rate. The start is now the bar's reset, not progress."""
    from rich.console import Console
    from rich.progress import Progress

    from wizard.console import _Bar

    with open("/dev/null", "w") as sink:
        p = Progress(console=Console(file=sink, force_terminal=True))
        task = p.add_task("download", total=100 * 2**20)
        bar = _Bar(p, task)
        bar.update(completed=90 * 2**20)  # an earlier run's 90 MiB
        for _ in range(5):
            time.sleep(0.1)
            bar.update(advance=2**16)  # 64 KiB every 0.1 s: 0.625 MiB/s
        assert 0.4 < p.tasks[0].speed / 2**20 < 0.8, p.tasks[0].speed
        assert p.tasks[0].completed == 90 * 2**20 + 5 * 2**16


def test_grpo_s_first_step_says_it_generates_and_scores_not_warm_up(tmp_path):
    """The GRPO tryout: while a slow reward file held the first step, the live view said "the first step (warm-up) is
    running". A real detached job writes the trainer's start event (objective grpo), waits, then its step and done
    events; the view said what the first step does and how long a silent reward function may take."""
    import contextlib
    import sys
    import types

    from recipes import jobs
    from recipes.rundir import TrainDir
    from recipes.training import rewards, runner
    from wizard import i18n

    tdir = TrainDir(tmp_path / "train")
    script = ("import json, os, sys, time\n"
              "def emit(**e):\n"
              "    with open(sys.argv[1], 'a') as f: f.write(json.dumps(e | {'pid': os.getpid(), 'time': time.time()}) + '\\n')\n"
              "emit(event='start', objective='grpo', device='cpu', total_steps=1)\n"
              "time.sleep(1.5)\n"
              "emit(event='step', step=1, total_steps=1, loss=0.1, reward=0.5)\n"
              "emit(event='done')\n")
    job = jobs.spawn("trainer", [sys.executable, "-c", script, str(tdir.events)], tdir.root)
    seen: list = []

    @contextlib.contextmanager
    def live(title):
        yield lambda fields: seen.append(dict(fields))
    ctx = types.SimpleNamespace(t=i18n.t, live=live, info=lambda m: None, warn=lambda m: None, session_id="s")
    runner.follow(ctx, job, tdir.root)
    states = {f.get(i18n.t("training.field.state")) for f in seen} - {None}
    said = i18n.t("training.state.first_step_grpo", seconds=f"{rewards.TIMEOUT_S:.0f}")
    assert said in states and "120 s" in said and not any("warm-up" in s for s in states), states


def test_the_exports_table_names_the_run_folder_once_and_fits_80_columns(monkeypatch):
    """Issue 46 item 14: the VLM demo's Exports table folded each row's folder over three lines at 80 columns. The
    folders share the run's export/ folder: the title says it once, each row names its own folder."""
    import io

    from rich.console import Console

    from recipes.handoff import ExportResult
    from wizard import i18n
    from wizard.console import UI

    base = "/home/someone/.yichui/runs/20261205-212233-4737/export"
    out = ExportResult(merged_dir=f"{base}/merged", merged_bytes=5 * 2**20, formats=["merged", "bnb-4bit", "gguf-q4_k_m"],
                       artifacts={f: {"dir": f"{base}/{f}", "bytes": 2**21,
                                      "quality": {"kl_mean": 0.0123, "ppl_ratio": 1.012, "smoke": {"stopped": True}}}
                                  for f in ("bnb-4bit", "gguf-q4_k_m")},
                       merged_smoke={"stopped": True})
    title, columns, rows = out.table()
    ui = UI()
    ui.out = Console(file=io.StringIO(), width=80, highlight=False)
    ui.table(i18n.render(title), [i18n.render(c) for c in columns],
             [[i18n.render(v) if not isinstance(v, (str, int, float)) else v for v in r] for r in rows])
    text = ui.out.file.getvalue()
    lines = text.splitlines()
    assert lines[0].rstrip() == f"Exports, in {base}" and max(len(x) for x in lines) <= 80, text
    body = [x for x in lines if x.startswith("│")]
    assert len(body) == 3 and [x.split("│")[2].strip() for x in body] == ["merged/", "bnb-4bit/", "gguf-q4_k_m/"], text
    # folders in different places keep their whole paths (no shared parent to name)
    out.artifacts["bnb-4bit"]["dir"] = "/elsewhere/bnb-4bit"
    title, _, rows = out.table()
    assert i18n.render(title) == "Exports" and rows[1][1] == "/elsewhere/bnb-4bit"


def test_lines_wrap_between_words_on_a_terminal_and_commands_stay_whole():
    """Issue 46's tryout: at 80 columns plain lines wrapped mid-word, commands to copy included ("yichui resume
    20261205-011 / 935-4b45"). On a terminal a line wraps between words and a command moves whole to the next line;
    piped output keeps one line per message (logs and scripts read it whole)."""
    import io

    from rich.console import Console

    from wizard.console import UI, wrap_words

    sid = "20261205-011935-4b45"
    text = (f"Session {sid} still runs its trainer (pid 12345): stop it first (yichui stop {sid}), then delete it; "
            f"or resume it with yichui resume {sid} --yes.")
    ui = UI()
    ui.out = Console(file=io.StringIO(), width=80, force_terminal=True, color_system=None, soft_wrap=True)
    ui.say(text)
    lines = ui.out.file.getvalue().splitlines()
    assert len(lines) == 3 and max(len(x) for x in lines) <= 80, lines
    assert f"(yichui stop {sid})," in lines[1] and lines[2] == f"yichui resume {sid} --yes."
    assert " ".join(lines) == text  # nothing lost, no word cut
    piped = UI()
    piped.out = Console(file=io.StringIO(), width=80, force_terminal=False, soft_wrap=True)
    piped.say(text)
    assert piped.out.file.getvalue() == text + "\n"
    # Chinese: the command whole on its line; the rest folds by character (no words to cut); indents kept
    zh = f"会话仍在运行：请用 `yichui resume {sid} --yes` 继续，或者先停止它再删除。"
    wrapped = wrap_words(zh, 40).splitlines()
    assert f"`yichui resume {sid} --yes`" in wrapped and "".join(wrapped).replace(" ", "") == zh.replace(" ", "")
    assert wrap_words("  " + "word " * 20, 30).splitlines()[1].startswith("  word")
    # Chinese breaks between characters (not only at spaces, which it rarely has), never before a closing mark, and
    # a pip command stays whole; "yichui" as a name in a sentence is a word, not a command swallowing the sentence
    zh = ("“可行”表示至少留出 10% 显存。估计按 yichui 训练流程计算（含激活与优化器状态），装不下时请换方法或用 "
          "pip install deepspeed==0.19.8 安装后重试，或者看看更长的说明文字。")
    lines = wrap_words(zh, 60).splitlines()
    from rich.cells import cell_len

    assert all(cell_len(x) <= 60 for x in lines) and any("pip install deepspeed==0.19.8" in x for x in lines), lines
    assert not any(x.startswith(("，", "。", "）")) for x in lines) and "按 yichui 训练" in "".join(lines), lines


def test_keys_typed_during_a_live_view_are_not_echoed_nor_kept():
    """Issue 46 item 14: an Enter in the training view moved the cursor and the view drew its title again below it;
    and what was typed then answered the next question. In a real pseudo-terminal: echo is off while the view is
    drawn, back on after, and the keys typed meanwhile are dropped."""
    import sys

    import pexpect

    script = (
        "import select, sys, termios, time\n"
        "from wizard.console import UI\n"
        "ui = UI()\n"
        "print('echo before', bool(termios.tcgetattr(0)[3] & termios.ECHO), flush=True)\n"
        "with ui.live('Training') as update:\n"
        "    print('echo during', bool(termios.tcgetattr(0)[3] & termios.ECHO), flush=True)\n"
        "    for i in range(8):\n"
        "        update({'step': i}); time.sleep(0.25)\n"
        "print('echo after', bool(termios.tcgetattr(0)[3] & termios.ECHO), flush=True)\n"
        "print('kept', bool(select.select([sys.stdin], [], [], 0.3)[0]), flush=True)\n")
    p = pexpect.spawn(sys.executable, ["-c", script], encoding="utf-8", dimensions=(24, 80), timeout=30,
                      cwd=str(__import__("pathlib").Path(__file__).resolve().parent.parent))
    p.expect("echo during (True|False)")
    during = p.match.group(1)
    p.send("\r\r")
    p.expect("echo after (True|False)")
    after = p.match.group(1)
    p.expect("kept (True|False)")
    kept = p.match.group(1)
    p.expect(pexpect.EOF)
    assert (during, after, kept) == ("False", "True", "False"), (during, after, kept, p.before)


def test_a_confirm_s_echo_is_in_the_user_s_language():
    """questionary echoes a confirm's answer from its module constants (Yes/No); the prompter puts the catalogue's
    words there. Pinned to the questionary version whose prompts/confirm.py reads them by name."""
    import questionary
    from questionary.prompts import confirm

    from wizard import i18n
    from wizard.prompter import _confirm_words

    assert questionary.__version__ == "2.1.1"  # another version: check prompts/confirm.py still reads YES/NO
    i18n.set_lang("zh")
    try:
        _confirm_words()
        assert (confirm.YES, confirm.NO) == ("是", "否")
    finally:
        i18n.set_lang("en")
        _confirm_words()
    assert (confirm.YES, confirm.NO) == ("yes", "no")


def test_keys_typed_while_work_runs_do_not_answer_the_next_question():
    """Issue 46's tryout (N1): an Enter pressed twice at one question — the second landed while the export merged —
    answered deploy's "stop these servers first?" with its default, and another session's server was stopped. In a
    real pseudo-terminal: keys typed while work runs between two questions are dropped when the next one is shown;
    keys for questions that follow each other without work between are kept."""
    import sys

    import pexpect

    script = (
        "import time\n"
        "from recipes.base import Question\n"
        "from wizard.prompter import QuestionaryPrompter\n"
        "p = QuestionaryPrompter()\n"
        "a = p.ask(Question('name', 'text', 'answer.not_a_choice'), 'x', {})\n"
        "print('working', flush=True)\n"
        "time.sleep(2)\n"
        "b = p.ask(Question('stop', 'confirm', 'deploy.stop_servers'), True, {})\n"
        "print('answers', repr(a), repr(b), flush=True)\n")
    p = pexpect.spawn(sys.executable, ["-c", script], encoding="utf-8", dimensions=(24, 80), timeout=30,
                      cwd=str(__import__("pathlib").Path(__file__).resolve().parent.parent))
    p.expect(r"\?")  # the first question
    p.send("\r")
    p.expect("working")
    p.send("\r")  # a stray Enter while the work runs
    p.expect(r"\(Y/n\)")  # the second question is shown and waits: the stray Enter did not answer it
    assert p.expect([r"answers", pexpect.TIMEOUT], timeout=1.5) == 1  # still waiting after 1.5 s
    p.send("n\r")
    p.expect(r"answers '(.*)' (True|False)")
    assert p.match.group(2) == "False", p.before
    import re

    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", p.before)
    assert "(Y/n) no" in shown, shown  # the echo: a space between the instruction and the answer (the tryout's N4)
    p.expect(pexpect.EOF)


def test_a_checkbox_answer_is_said_in_the_user_s_language_with_the_choices():
    """Issue 46 item 14: questionary echoes a checkbox answer as "done (2 selections)" — English in the zh wizard,
    and not which ones. In a real pseudo-terminal, zh, two of three choices picked: after questionary's echo the
    prompter moves the cursor back over it (CSI F), clears (CSI J) and writes the question again with the chosen
    labels; nothing after that says "done"."""
    import re
    import sys

    import pexpect

    script = (
        "from recipes.base import Choice, Question\n"
        "from wizard import i18n\n"
        "from wizard.prompter import QuestionaryPrompter\n"
        "i18n.set_lang('zh')\n"
        "q = Question('trackers', 'checkbox', 'choose_strategy.trackers',\n"
        "             choices=[Choice('a', '甲 第一个'), Choice('b', '乙 第二个'), Choice('c', '丙')])\n"
        "print('GOT', QuestionaryPrompter().ask(q, [], {}), flush=True)\n")
    p = pexpect.spawn(sys.executable, ["-c", script], encoding="utf-8", dimensions=(24, 80), timeout=30,
                      env=dict(__import__("os").environ, TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1"),
                      cwd=str(__import__("pathlib").Path(__file__).resolve().parent.parent))
    p.expect("丙")  # the choices are shown
    p.send(" ")      # pick the first
    p.send("\x1b[B")  # down
    p.send(" ")      # pick the second
    p.send("\r")
    p.expect(r"GOT \['a', 'b'\]")
    out = p.before
    p.expect(pexpect.EOF)
    echo = out.rindex("done (2 selections)")  # questionary's own, then replaced
    after = out[echo:]
    m = re.search(r"\x1b\[(\d+)F\x1b\[J\? (.*)", after)
    assert m, repr(after)
    assert int(m.group(1)) >= 2  # the question wraps at 80 columns: both lines of the echo are gone over
    # the question wrapped between words since trial H: its lines joined back
    rewritten = re.sub(r"\s*\r?\n\s*", "", after[m.start(2):].split("GOT")[0]).rstrip()
    assert "同时记录到这些实验跟踪工具" in rewritten and rewritten.endswith("甲 第一个; 乙 第二个"), repr(rewritten)
    assert "done" not in after[m.start():]


def test_commands_and_code_printed_to_copy_stay_on_one_line_at_80_columns():
    """Issue 46, trial E: doctor's `… python -m` / `pip install tensorboard` came out on two lines (pasted, the second
    ran the wrong pip) and deploy's Python example broke inside a string (a SyntaxError when pasted)."""
    from wizard.console import wrap_words

    py = "/tmp/trial46-E/yichui/.venv/bin/python"
    doctor = f"  [3] tensorboard: {py} -m pip install tensorboard, then more words that need a wrap here"
    assert any(line.strip().startswith(f"{py} -m pip install tensorboard") for line in wrap_words(doctor, 80).split("\n"))
    logdir = "/tmp/x/home/runs/20261206-065927-ca74/train/tensorboard"
    status = (f"TensorBoard events: {logdir} — the viewer is not installed here: {py} -m pip install tensorboard, "
              f"then {py} -m tensorboard.main --logdir {logdir} (or copy the folder to a machine that has it)")
    lines = wrap_words(status, 80).split("\n")
    assert f"{py} -m tensorboard.main --logdir {logdir}" in lines  # whole, and the sentence after it wraps apart
    # deploy's examples, an argument a line since trial Q (on one line the terminal folded them mid-word): no line of
    # them is broken at 80 columns, pasted as printed they are Python and one shell command, and only a line holding
    # the long key path or the request's JSON is wider than 80
    import shlex

    from recipes.deploy import curl_line, python_example
    from wizard import i18n

    key = "/tmp/trial-q/yichui-home/runs/20261207-065036-fd84/deploy/api_key"
    for lang in ("en", "zh"):
        i18n.set_lang(lang)
        code = i18n.t("deploy.python", code=python_example("http://127.0.0.1:8000", "m", "什么是 LoRA？", key))
        curl = i18n.t("deploy.curl", curl=curl_line("http://127.0.0.1:8000", "m", "What's 'LoRA'?", key))
        for text in (code, curl):
            lines = text.split("\n")
            assert wrap_words(text, 80).split("\n") == lines and len(lines) >= 5, text
            assert all(len(x) <= 80 for x in lines if key not in x and "-d '" not in x), text
        compile("\n".join(code.split("\n")[1:]), "<copied>", "exec")  # as printed: indented, trial R's IndentationError
        words = shlex.split("\n".join(curl.split("\n")[1:]).replace("\\\n", " "))
        assert words[0] == "curl" and words[-2] == "-d" and "What's 'LoRA'?" in words[-1], words
    i18n.set_lang("en")


def test_a_chinese_plan_label_wraps_by_columns_not_characters(monkeypatch):
    """Issue 46 trial G: in the zh UI each plan in the list was cut at 80 columns (its compiled-layers knob unseen)
    while the English one wrapped: the label's width was counted in characters, a CJK character takes two columns.
    Now every line of the choice fits the terminal and nothing of the label is lost."""
    import os

    from prompt_toolkit.utils import get_cwidth

    from wizard import prompter

    monkeypatch.setattr("shutil.get_terminal_size", lambda *a, **k: os.terminal_size((80, 24)))
    label = ("可行 4.2 GiB，约 12,345 token/秒，约 12 分钟：微批 4 × 4，检查点关，Liger 关，编译开")
    lines = prompter._fit(label).split("\n")
    assert len(lines) == 2 and all(get_cwidth(x) <= 80 - 3 - 1 for x in lines), lines
    assert "".join(x.strip() for x in lines).replace(" ", "") == label.replace(" ", "")
    # broken where a line may break (after a space or CJK punctuation), not inside a word
    assert lines[-1].strip().endswith("编译开") and label.startswith(lines[0]) and label[len(lines[0])] in " ，"
    # the echo after the choice: the label as it was, wrapped from where the echo starts (trial J), not _fit's
    import questionary.prompts.select as select

    prompter._one_line_answers()
    monkeypatch.setattr(prompter, "_echo_at", get_cwidth("? 训练方案： "))
    control = select.InquirerControl([prompter._choice(label, "v")])
    control.is_answered = True
    echo = control.get_pointed_at().title
    assert echo == prompter._echo_wrapped(label) and "".join(echo.split()) == "".join(label.split()), echo
    english = "fits 4.2 GiB, ~12,345 tok/s, ~12 min: micro-batch 4 × 4, checkpointing off, Liger off, compiled layers on"
    assert all(not x.startswith("   ") or x[3] != " " for x in prompter._fit(english).split("\n"))
    assert [x.strip() for x in prompter._fit(english).split("\n")][-1].endswith("compiled layers on")


def test_a_long_question_wraps_between_words(monkeypatch):
    """Issue 46 trials G and H: questionary left long questions to the terminal, which folded them mid-word at 80
    columns ("the fina|l one"). Now they wrap between words (or after CJK punctuation), nothing lost."""
    import os

    from prompt_toolkit.utils import get_cwidth

    from wizard import prompter

    monkeypatch.setattr("shutil.get_terminal_size", lambda *a, **k: os.terminal_size((80, 24)))
    q = ("Plan (fitting ones first, then the soonest done, compiling included; tokens/s per GPU on NVIDIA A10; "
         "every knob can still be changed):")
    lines = prompter._wrap_question(q).split("\n")
    assert len(lines) == 2 and all(get_cwidth(x) <= 77 for x in lines)
    assert " ".join(x.strip() for x in lines) == q
    zh = "训练方案（可行的在前，其次是最早训完的，含编译时间；速度为 NVIDIA A10 上每个 GPU 的 token/秒；之后每项仍可修改）："
    assert all(get_cwidth(x) <= 77 for x in prompter._wrap_question(zh).split("\n"))
    assert "".join(x.strip() for x in prompter._wrap_question(zh).split("\n")).replace(" ", "") == zh.replace(" ", "")
    assert prompter._wrap_question("Short?") == "Short?"


def test_a_question_s_key_instruction_stays_whole_after_it(monkeypatch):
    """Issue 46 trial I (N11): questionary writes the keys' instruction after the question's last line, and the
    terminal folded it "(arrow keys, En|ter)" / "vLL|M". The wrap counts it: on the last line when it fits, else on
    a line of its own under the text; in Chinese too."""
    import os

    from prompt_toolkit.utils import get_cwidth

    from wizard import prompter

    monkeypatch.setattr("shutil.get_terminal_size", lambda *a, **k: os.terminal_size((80, 24)))
    tail = "(arrow keys, Enter)"
    for n in range(40, 140, 3):  # every place the end of the question can fall
        q = ("word " * 40)[:n].strip() + "?"
        shown = (prompter._wrap_question(q, tail) + " " + tail).split("\n")
        assert all(get_cwidth(x) <= 77 for x in shown), (n, shown)
        assert shown[-1].endswith(tail) and " ".join(x.strip() for x in shown) == q + " " + tail, (n, shown)
    zh_tail = "（方向键选择，回车确认）"
    q = "用哪个推理引擎部署模型？（vLLM、SGLang、LMDeploy 需要 NVIDIA GPU；transformers 也可在 CPU 上运行）"
    shown = (prompter._wrap_question(q, zh_tail) + " " + zh_tail).split("\n")
    assert all(get_cwidth(x) <= 77 for x in shown) and shown[-1].endswith(zh_tail), shown
    assert prompter._wrap_question("Short?", tail) == "Short?"


def test_chinese_wraps_keep_commands_units_and_brackets_whole():
    """Issue 46 trial J (J3): at 80 columns the zh Ctrl-C hint cut the session id ("…resume 20261206-170907-ce" /
    "ab": Chinese text run into a command was one unbreakable piece), "token/" | "秒" and "留出文件（" | "evaluate…）"
    broke apart. The text breaks, the command after it stays whole; a unit with its slash and an opening bracket
    with what follows stay on one line."""
    from rich.cells import cell_len

    from wizard.console import wrap_words

    cmd = ".venv/bin/yichui resume 20261206-170907-ceab"
    lines = wrap_words("已中断，已保存目前的答案。继续请运行：" + cmd, 80).split("\n")
    assert lines[-1].endswith(cmd) and all(cell_len(x) <= 80 for x in lines), lines
    for width in range(30, 70):
        lines = wrap_words("预测速度：每个 GPU 约 49,852 token/秒，另有留出文件（evaluate.heldout=file）可用。", width).split("\n")
        assert not any(x.endswith(("token/", "（")) for x in lines), (width, lines)
        assert "".join(x.strip() for x in lines).replace(" ", "") == \
            "预测速度：每个GPU约49,852token/秒，另有留出文件（evaluate.heldout=file）可用。"


def test_a_chosen_answer_s_echo_wraps_between_words(monkeypatch):
    """Issue 46 trial J (J3): questionary echoes the chosen label after the question on one line, and the terminal
    cut it mid-word at 80 columns ("(prompt → re" | "ply)"). The echo wraps between words from where it starts,
    under itself; a short one stays as it is."""
    import os

    from prompt_toolkit.utils import get_cwidth

    from wizard import prompter

    monkeypatch.setattr("shutil.get_terminal_size", lambda *a, **k: os.terminal_size((80, 24)))
    label = "SFT — supervised fine-tuning on conversations (prompt → reply)"
    monkeypatch.setattr(prompter, "_echo_at", get_cwidth("? Training objective: "))
    lines = prompter._echo_wrapped(label).split("\n")
    assert len(lines) == 2 and prompter._echo_at + get_cwidth(lines[0]) <= 79 and get_cwidth(lines[1]) <= 79
    assert " ".join(x.strip() for x in lines) == label and lines[1].strip() == "reply)"
    assert prompter._echo_wrapped("LoRA") == "LoRA"


def test_a_text_question_leaves_room_for_its_prefilled_answer(monkeypatch):
    """Issue 46 trial L (L1): a text question's pre-filled answer is echoed after its last line, and the terminal
    folded it "…, or none): no" | "ne" at 80 columns. The wrap counts it as it counts a select's instruction."""
    import os

    import questionary
    from prompt_toolkit.utils import get_cwidth

    from recipes.base import Question
    from wizard import prompter

    monkeypatch.setattr("shutil.get_terminal_size", lambda *a, **k: os.terminal_size((80, 24)))
    seen = {}

    class Asked:
        def __init__(self, message, default=""):
            seen["message"], seen["default"] = message, default

        def unsafe_ask(self):
            return seen["default"]

    monkeypatch.setattr(questionary, "text", lambda message, default="", **kw: Asked(message, default))
    key = "deploy.compare_endpoints"
    long = "Compare the speed of other endpoints first (comma-separated URLs, or none):"
    from wizard import i18n

    for n in range(0, 30):  # every place the question's end can fall
        monkeypatch.setitem(i18n.CATALOG, key, {"en": "x " * n + long, "zh": long})
        got = prompter.QuestionaryPrompter()._ask(Question("compare", "text", key), "none", {})
        shown = ("? " + seen["message"] + " " + got).split("\n")
        assert got == "none" and all(get_cwidth(x) <= 79 for x in shown), (n, shown)
