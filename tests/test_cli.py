"""The installed `yichui` command: start-up stays light, bad input gets one line and exit 2, files stay untouched."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import recipes
from conftest import sessions, yichui
from wizard import i18n
from wizard.session import SCHEMA_VERSION, Session


def test_help_lists_the_command_table_and_imports_no_torch(home):
    r = yichui(home, "--help")
    assert r.returncode == 0
    import re

    listed = set(re.findall(r"^\W*([a-z]+)\s{2,}", r.stdout, flags=re.M))  # the first word of each command row
    assert {"run", "demo", "resume", "replay", "steps", "show", "status", "stop", "estimate", "download", "delete",
            "attach"} <= listed, r.stdout
    heavy = ("torch", "transformers", "trl", "peft", "datasets", "matplotlib", "deepspeed", "huggingface_hub",
             "modelscope", "bitsandbytes")
    code = "import sys, wizard.cli, recipes; [recipes.load(n) for n in recipes.STEPS]; " \
           f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_width_nothing_fits_in_is_not_taken(home):
    """COLUMNS=0 (a script's empty width) made every command print nothing at all, --help included."""
    for cols in ("0", "abc"):
        helped = yichui(home, "--help", COLUMNS=cols)
        assert helped.returncode == 0 and "Usage" in helped.stdout and " run " in helped.stdout, (cols, helped.stdout)
        r = yichui(home, "status", COLUMNS=cols)
        assert r.returncode == 0 and "No sessions" in r.stdout, (cols, r.stdout, r.stderr)


def test_a_reader_that_stops_early_is_not_a_failure(home):
    """`yichui status | head -1` exited 1 (trial U): rich met the closed pipe and exited as if the command had
    failed. Here the pipe's reader is closed before the command writes, so every write meets it; a command that
    failed still exits as it did."""
    from conftest import YICHUI, env_for

    def closed_pipe(*args: str) -> subprocess.CompletedProcess:
        r, w = os.pipe()
        os.close(r)
        try:
            return subprocess.run([YICHUI, *args], stdout=w, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                  env=env_for(home, COLUMNS="80"), text=True, timeout=120)
        finally:
            os.close(w)
    config = str(Path(recipes.__file__).resolve().parent.parent / "bench" / "configs" / "qwen2.5-0.5b")
    # rich's console (help, tables, lines) and a plain print (--json): each met the closed pipe its own way
    for args in (("--help",), ("status",), ("show", "--all"), ("estimate", config, "--json")):
        got = closed_pipe(*args)
        assert got.returncode == 0 and got.stderr == "", (args, got.returncode, got.stderr)
    bad = closed_pipe("show", "no-such-session")
    assert bad.returncode == 2 and "no-such-session" in bad.stderr, bad.stderr


def test_serve_status_with_nothing_running_answers_and_exits_1(home):
    """`yichui serve status` when no server runs printed "error: No yichui server is running" (trial U): it is the
    status asked for — said on stdout, exit 1 as the command table has it; `serve logs` and `chat` keep the error."""
    st = yichui(home, "serve", "status", COLUMNS="200")
    assert st.returncode == 1 and st.stdout.startswith("No yichui server is running") and st.stderr == "", st
    logs = yichui(home, "serve", "logs", COLUMNS="200")
    assert logs.returncode == 1 and "error" in logs.stderr.lower() and "No yichui server" in logs.stderr, logs


def test_an_approximate_estimate_says_its_margin_on_stdout(home, tiny_model):
    """GaLore's memory is not calibrated: `yichui estimate` priced it with a 25 % margin but said only "Fits … to
    spare", and its "approximate" line went to stderr, lost by `> file` (trial U)."""
    r = yichui(home, "estimate", str(tiny_model), "--method", "galore", "--gpu", "a10-24g", COLUMNS="200")
    assert r.returncode == 0, r.stderr
    assert "within a 25 % margin (larger: galore is approximate)." in r.stdout, r.stdout
    assert "Approximate (not yet calibrated): galore." in r.stdout, r.stdout
    plain = yichui(home, "estimate", str(tiny_model), "--method", "lora", "--gpu", "a10-24g", COLUMNS="200")
    assert "to spare." in plain.stdout and "margin" not in plain.stdout and "pproximate" not in plain.stdout


def test_help_in_chinese(home):
    r = yichui(home, "--lang", "zh", "--help", COLUMNS="80")
    assert r.returncode == 0 and "会话" in r.stdout
    # issue 20, item 13: typer's own words in Chinese too, and a line with no space wraps instead of being cut
    assert "显示此帮助并退出" in r.stdout and "Show this message" not in r.stdout and "命令" in r.stdout
    assert "…" not in r.stdout and "不提任何" in r.stdout.replace("│", "").replace(" ", "").replace("\n", "")
    assert "用法：yichui" in r.stdout and "Usage" not in r.stdout  # click's prefix too (issue 46 trial I, N12)


def test_no_help_shows_a_catalogue_key(home):
    """Every command's --help says sentences, in both languages: the option help of `estimate` comes from the
    training spec's catalogue keys (renamed cli.opt.* → training.opt.* with issue 45, then printed raw — the tryout)."""
    import re

    from wizard import i18n

    dotted = re.compile(r"[a-z_]+(?:\.[a-z_0-9]+)+")
    for args in (["estimate"], ["run"], ["demo"], ["resume"], ["replay"], ["show"], ["doctor"], ["download"],
                 ["serve", "start"], ["chat"], []):
        for lang in ("en", "zh"):
            r = yichui(home, "--lang", lang, *args, "--help", COLUMNS="200")
            # a step's question key is also its --set name (select_model.model): those are meant
            keys = [k for k in dotted.findall(r.stdout) if k in i18n.CATALOG
                    and not (k.count(".") == 1 and k.split(".")[0] in recipes.STEPS)]
            assert r.returncode == 0 and not keys, (args, lang, keys)


@pytest.mark.slow
def test_estimate_help_keeps_every_option_name_whole_at_80_columns(home, tiny_model):
    """`yichui estimate --help` at 80 columns cut "--gpu-memory-utiliz…" and "--activation-checkp…" (rich's options
    table squeezed by --x/--no-x pairs). A switch now shows the flag that changes it; the other spelling still works."""
    import re

    for lang in ("en", "zh"):
        r = yichui(home, "--lang", lang, "estimate", "--help", COLUMNS="80")
        assert r.returncode == 0
        names = set(re.findall(r"--[a-z][a-z0-9-]*", r.stdout))
        assert not re.search(r"--[a-z0-9-]+…", r.stdout), r.stdout
        assert {"--gpu-memory-utilization", "--no-activation-checkpointing", "--attn-implementation", "--liger",
                "--compile-layers", "--packing", "--master-weights"} <= names, names
    switches = ("activation_checkpointing", "liger", "compile_layers", "packing")

    def config(*args):
        r = yichui(home, "estimate", str(tiny_model), *args, "--json")
        assert r.returncode == 0, r.stderr
        return [json.loads(r.stdout)["config"][k] for k in switches]

    assert config() == [True, False, False, False]
    assert config("--no-activation-checkpointing", "--liger", "--packing") == [False, True, False, True]
    assert config("--activation-checkpointing", "--no-liger", "--compile-layers") == [True, False, True, False]
    assert config("--no-ckpt") == [False, False, False, False]  # the older spelling
    assert config("--ckpt", "--packing") == [True, False, False, True]
    # both directions, or an older spelling against the new one: one line naming both, not a silent pick
    for args in (["--liger", "--no-liger"], ["--no-activation-checkpointing", "--activation-checkpointing"],
                 ["--no-activation-checkpointing", "--ckpt"], ["--seq", "256", "--seq-len", "128"]):
        r = yichui(home, "estimate", str(tiny_model), *args)
        assert r.returncode == 2 and "disagree" in r.stderr and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)


def test_subcommand_help_shows_placeholders_not_python_types(home):
    """Issue 20, item 13: `<bool>`, `<list[str]>`, `<str>` are Python; a flag shows nothing, a value a word."""
    for args in (["show"], ["run"], ["serve", "stop"], ["chat"], ["estimate"], ["download"]):
        r = yichui(home, *args, "--help", COLUMNS="100")
        assert r.returncode == 0 and "Examples" in r.stdout, args
        assert "<bool>" not in r.stdout and "<str>" not in r.stdout and "<list" not in r.stdout, (args, r.stdout)
    assert "STEP.KEY=VALUE" in yichui(home, "run", "--help", COLUMNS="100").stdout
    # a required argument bare, an optional one in brackets (typer writes "{SESSION}": issue 46 trial K)
    for args, usage in ((["delete"], "yichui delete [OPTIONS] SESSION"), (["replay"], "yichui replay [OPTIONS] SESSION"),
                        (["show"], "yichui show [OPTIONS] [SESSION]")):
        out = yichui(home, *args, "--help", COLUMNS="100").stdout
        line = next(x for x in out.splitlines() if "Usage:" in x)
        assert usage in line and "{" not in line, (args, out)


def test_wizard_without_a_terminal_points_to_replay_and_demo(home):
    Session.new("finetune", h=home).save()  # an unfinished session for `resume`
    for args in ([], ["run"], ["resume"]):
        r = yichui(home, *args)
        assert r.returncode == 2 and "replay SESSION --yes" in r.stderr and "demo" in r.stderr, args
    r = yichui(home, "--lang", "zh")
    assert r.returncode == 2 and "没有终端" in r.stderr


def test_bad_set_values(home):
    r = yichui(home, "run", "--yes", "--set", "nodot=1")
    assert r.returncode == 2 and "step.key=value" in r.stderr
    r = yichui(home, "run", "--yes", "--set", "nostep.key=1")
    assert r.returncode == 2 and "unknown step 'nostep'" in r.stderr
    r = yichui(home, "run", "--task", "bake", "--yes")
    assert r.returncode == 2 and "bake" in r.stderr


def test_no_sessions_yet(home):
    r = yichui(home, "show")
    assert r.returncode == 2 and "No sessions" in r.stderr
    r = yichui(home, "resume", "--yes")
    assert r.returncode == 2 and "No unfinished session" in r.stderr


def test_truncated_session_file_is_named_and_left_untouched(home):
    s = Session.new("finetune", h=home)
    s.save()
    s.path.write_text(s.path.read_text()[:40])
    before = s.path.read_bytes()
    for args in (["show", s.id], ["resume", s.id, "--yes"], ["replay", str(s.path), "--yes"], ["status", s.id]):
        r = yichui(home, *args)
        assert r.returncode == 2 and str(s.path) in r.stderr and "not valid JSON" in r.stderr, args
        assert len(r.stderr.strip().splitlines()) == 1
    assert s.path.read_bytes() == before


def test_newer_schema_is_refused_with_the_fix(home):
    s = Session.new("finetune", h=home)
    data = dict(s.data, schema_version=SCHEMA_VERSION + 1)
    s.path.parent.mkdir(parents=True, exist_ok=True)
    s.path.write_text(json.dumps(data))
    r = yichui(home, "resume", s.id, "--yes")
    assert r.returncode == 2 and "upgrade yichui" in r.stderr


def test_second_wizard_on_one_session_is_refused(home):
    s = Session.new("finetune", h=home)
    s.save()
    s.lock()  # this test process holds it, as a running wizard would
    r = yichui(home, "resume", s.id, "--yes")
    assert r.returncode == 2 and "another yichui" in r.stderr
    s.unlock()


def test_run_yes_with_a_missing_answer_names_the_set(home, hub):
    r = yichui(home, "run", "--yes", "--set", f"select_model.endpoint={hub.url}", "--set", "select_model.model=other")
    assert r.returncode == 2
    assert "select_model.model_id" in r.stderr and "--set select_model.model_id=VALUE" in r.stderr
    (s,) = sessions(home)
    assert s["steps"]["select_model"]["answers"] == {"source": "hf", "endpoint": hub.url, "model": "other"}


def test_run_yes_with_an_unknown_model_fails_cleanly(home, hub):
    r = yichui(home, "run", "--yes", "--set", f"select_model.endpoint={hub.url}", "--set", "select_model.model=other",
               "--set", "select_model.model_id=nobody/nothing")
    assert r.returncode == 2 and "No such model: nobody/nothing" in r.stderr


def test_steps_lists_every_step(home):
    import re

    import recipes

    r = yichui(home, "steps")
    assert r.returncode == 0
    listed = re.findall(r"^│ *\d+ │ (\w+) — ", r.stdout, re.M)
    assert listed == list(recipes.STEPS) and len(listed) == 9, r.stdout


def test_steps_keys_lists_what_set_takes(home):
    """Issue 46 item 8: the --set keys were hard to find (replay without --yes re-asks ~40 questions). `yichui steps
    --keys` lists every question's step.key, its kind and its allowed values, readable at 80 columns; the keys it
    lists are the ones --set accepts (a key it does not list is refused, naming the step's keys)."""
    import re

    r = yichui(home, "steps", "--keys", COLUMNS="80")
    assert r.returncode == 0, r.stderr
    keys = re.findall(r"^│ ([a-z_]+\.[a-z_]+) +│ (\w+) +│", r.stdout, re.M)
    listed = dict(keys)
    assert len(listed) >= 40 and all(len(line) <= 80 for line in r.stdout.splitlines() if line[:1] in "┏┃┡│└")
    assert listed["choose_strategy.lora_rank"] == "int" and listed["evaluate.benchmarks"] == "checkbox"
    assert re.search(r"│ choose_strategy\.method +│ select +│ lora, qlora, dora,", r.stdout)
    # (issue 46 item 7) a refused choice is not listed as allowed; a number shows its range and its default
    flat = " ".join(line.strip("│ ").replace("│", " ") for line in r.stdout.splitlines())
    flat = " ".join(flat.split())
    assert "full, galore (listed to say why not: q-galore)" in flat and "zero3, fsdp2 (listed to say why not: megatron)" \
        in flat, flat
    assert "LoRA rank r · 1 … 1024 · default 8" in flat
    # a checkbox says what it asks and how several, or none, are given (issue 46: the trackers row said neither)
    assert "experiment trackers" in flat and "any of wandb, mlflow, swanlab, as a,b (none: none)" in flat, flat
    bad = yichui(home, "run", "--yes", "--set", "choose_strategy.lora_rnak=8")
    assert bad.returncode == 2 and "lora_rank" in bad.stderr  # the step's keys, as listed
    assert "`yichui show SESSION` lists a session's own answers" in " ".join(r.stdout.split())


def test_set_mistakes_are_caught_before_any_work_and_leave_no_session(home):
    for sets, text in ((["deploy.prot=9000"], "no question 'prot'"),
                       (["choose_strategy.learning_rate=0"], "choose_strategy.learning_rate"),
                       (["choose_strategy.lora_rank=abc"], "not a whole number"),
                       (["choose_strategy.packing=maybe"], "yes/no"),
                       (["export.formats=gptq-w4a16,bogus"], "'bogus' is not one of"),
                       (["export.serve_with=transformers", "export.formats=gguf-q8_0"],
                        "transformers does not load"),
                       # llama.cpp in a session that deploys: the deploy step does not start it (the tester's N7)
                       (["export.serve_with=llama.cpp"], "deploy step does not start llama.cpp"),
                       (["export.formats=gptq-w4a16", "export.calibration_samples=3"], "too few"),
                       # a question its step will not ask: its own reason where it has one (the tryout: DPO with
                       # packing was "asked only when the earlier answers … call for it"), else when it is asked
                       (["choose_strategy.objective=dpo", "choose_strategy.packing=true"],
                        "DPO does not run with packing yet"),
                       (["choose_strategy.method=dora", "choose_strategy.master_weights=bf16"],
                        "asked only for a full fine-tune (choose_strategy.method=full or galore)"),
                       (["choose_strategy.method=qlora", "choose_strategy.processes=2",
                         "choose_strategy.distribution=zero3"], "or LoRA. Change it with --set")):
        args = [a for x in sets for a in ("--set", x)]
        r = yichui(home, "run", "--yes", *args)
        assert r.returncode == 2 and text in r.stderr, (sets, r.stderr)
    assert not list((home / "sessions").glob("*.json")) if (home / "sessions").exists() else True
    assert not any((home / "runs").iterdir()) if (home / "runs").exists() else True


def test_unwritable_home_is_one_line(home, tmp_path):
    blocker = tmp_path / "file-not-folder"
    blocker.write_text("x")
    r = yichui(home, "run", "--yes", YICHUI_HOME=str(blocker / "home"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "is not writable" in r.stderr
    # the demo too, before minutes of building the tiny model (the tester's N24: 4 minutes, then the error)
    r = yichui(home, "demo", YICHUI_HOME=str(blocker / "home"), timeout=60)
    assert r.returncode == 2 and "is not writable" in r.stderr and "Building the tiny demo model" not in r.stdout, \
        r.stdout + r.stderr


def test_show_all_lists_sessions(home):
    a = Session.new("finetune", h=home)
    a.save()
    r = yichui(home, "show", "--all")
    assert r.returncode == 0 and a.id in r.stdout and "1/8" in r.stdout  # where it stands
    # in Chinese the task is named, its id (what --task takes) beside it (issue 46 trial I, N12: bare `finetune`)
    r = yichui(home, "--lang", "zh", "show", "--all", COLUMNS="120")
    assert "微调（finetune）" in r.stdout, r.stdout
    r = yichui(home, "--lang", "zh", "show", a.id, COLUMNS="120")
    assert "微调（finetune）" in r.stdout, r.stdout
    r = yichui(home, "--lang", "zh", "show", "--all", COLUMNS="80")  # the id under the name, never "…（finetune" | "）"
    rows = r.stdout.splitlines()
    at = next(i for i, x in enumerate(rows) if a.id in x)
    assert "│ 微调 " in rows[at] and "（finetune）" in rows[at + 1], r.stdout
    b = Session.new("finetune", h=home)
    b.save()
    b.path.write_text(b.path.read_text()[:40])  # truncated: listed as a warning, not silently left out
    r = yichui(home, "show", "--all")
    assert r.returncode == 0 and a.id in r.stdout
    assert str(b.path) in r.stdout + r.stderr and "not valid JSON" in r.stdout + r.stderr


def test_doctor_lists_the_machine_and_fails_on_what_a_session_needs(home):
    r = yichui(home, "doctor")
    assert r.returncode == 0, r.stdout + r.stderr
    for name in ("python", "torch", "GPU", "disk", "host RAM", "deepspeed", "bitsandbytes", "vllm", "llm-compressor"):
        assert name in r.stdout, name
    # each install command on one line of its own below the table, whole, so it can be copied (issue 20, item 13)
    from recipes.serving import spec as specs
    from recipes.memory import model as memory

    def vllm_fix(out: str) -> bool:
        return any(line.endswith(f"'{specs.recommended('vllm').install}'") and line.lstrip().startswith("[")
                   for line in out.splitlines())
    # without an NVIDIA GPU the GPU engines are "not here", no install command (issue 46 trial I, N13)
    assert vllm_fix(r.stdout) == bool(memory.detect_gpus()), r.stdout
    if not memory.detect_gpus():
        assert "runs on NVIDIA" in r.stdout and "not here" in r.stdout, r.stdout
    # issue 46 items 2 and 14: the events' viewer is named (status prints its command); GPU kernels only with a GPU
    import importlib.util

    if importlib.util.find_spec("tensorboard") is None:
        assert "tensorboard: " in r.stdout and "-m pip install tensorboard" in r.stdout, r.stdout
    if not memory.detect_gpus():
        assert "flash-attn" not in r.stdout and "liger-kernel" not in r.stdout, r.stdout
    if "liger-kernel: " in r.stdout:  # into yichui's own environment, not whichever pip is on PATH
        assert f"liger-kernel: {sys.executable} -m pip install liger-kernel" in r.stdout, r.stdout
    s = Session.new("deploy", h=home)
    s.steps["deploy"]["answers"] = {"backend": "vllm"}
    s.save()
    r = yichui(home, "doctor", s.id)
    assert r.returncode == 1 and "Missing what is needed: vllm" in r.stderr
    assert vllm_fix(r.stdout), r.stdout  # needed: its install command, GPU or not
    # in Chinese the findings and the fixes are Chinese too (only versions, paths and commands stay as they are);
    # an unreachable hub's fix names that hub's variable alone
    r = yichui(home, "--lang", "zh", "doctor", HF_ENDPOINT="http://127.0.0.1:9", MODELSCOPE_ENDPOINT="http://127.0.0.1:9")
    assert r.returncode == 0, r.stdout + r.stderr
    for english in ("serving engine", "GiB free", "available", "exports", "unreachable", "to a mirror", "kernels"):
        assert english not in r.stdout, (english, r.stdout)
    assert "推理服务引擎" in r.stdout and "无法访问" in r.stdout, r.stdout
    assert "hub hf: export HF_ENDPOINT=https://hf-mirror.com（或其他" in r.stdout, r.stdout  # a command to copy
    assert "hub modelscope: 把 MODELSCOPE_ENDPOINT 设为" in r.stdout, r.stdout


def test_doctor_tells_a_hub_from_a_web_server_that_is_not_one(home, hub, tmp_path):
    """Issue 46 item 7 (trial L): a plain web server answering 404 was "ok … answers (HTTP 404)". doctor asks each
    endpoint for a model as its hub's API would be asked: the local hub (answering as both hubs) is ok, a plain
    http.server is a warning that says what it answered and how to fix it."""
    import http.server
    import threading

    (tmp_path / "www").mkdir()
    handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(*a, directory=str(tmp_path / "www"), **k)  # noqa
    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    try:
        plain = f"http://127.0.0.1:{web.server_port}"
        r = yichui(home, "doctor", HF_ENDPOINT=hub.url, MODELSCOPE_ENDPOINT=plain, COLUMNS="200")
        assert r.returncode == 0, r.stdout + r.stderr
        hf_line = next(x for x in r.stdout.splitlines() if "hub hf" in x)
        ms_line = next(x for x in r.stdout.splitlines() if "hub modelscope" in x)
        assert "ok" in hf_line and "not as a model hub" not in hf_line, r.stdout
        assert "not as a model hub's API does" in ms_line and "HTTP 404" in ms_line, r.stdout
        assert "MODELSCOPE_ENDPOINT" in r.stdout  # the fix names the variable
        r = yichui(home, "doctor", HF_ENDPOINT=plain, MODELSCOPE_ENDPOINT=hub.url, COLUMNS="200")
        assert "not as a model hub's API does" in next(x for x in r.stdout.splitlines() if "hub hf" in x), r.stdout
        assert "not as a model hub" not in next(x for x in r.stdout.splitlines() if "hub modelscope" in x), r.stdout
    finally:
        web.shutdown()


def test_resume_speaks_the_sessions_language(home, hub):
    r = yichui(home, "--lang", "zh", "run", "--yes", "--set", f"select_model.endpoint={hub.url}",
               "--set", "select_model.model=other")
    assert r.returncode == 2
    (s,) = sessions(home)
    assert s["lang"] == "zh"
    r = yichui(home, "resume", "--yes")  # the test's locale is C.UTF-8: English, but the session was started in zh
    assert r.returncode == 2 and "继续会话" in r.stdout and "--set select_model.model_id=" in r.stderr, r.stdout
    r = yichui(home, "resume", "--yes", "--lang", "en")  # an explicit --lang (anywhere) wins and is remembered
    assert r.returncode == 2 and "Resuming session" in r.stdout
    (s,) = sessions(home)
    assert s["lang"] == "en"


def test_attach_says_stopped_not_detached_when_the_trainer_is_stopped_elsewhere(home):
    """Issue 20, item 3: a trainer stopped from another shell (it writes its `stopped` event and exits) is reported
    as stopped and resumable by the shell that follows it, never as "detached: training goes on"."""
    import sys

    from recipes import jobs
    from wizard.session import Session

    s = Session.new("finetune", h=home)
    s.save()
    tdir = s.run_dir / "train"
    trainer = ("import json, os, time; time.sleep(2); "
               f"open({str(tdir / 'events.jsonl')!r}, 'a').write(json.dumps({{'v': 1, 'time': time.time(), "
               "'event': 'stopped', 'pid': os.getpid(), 'launch': None, 'rank': 0, 'step': 3, 'signal': 'SIGTERM', "
               "'checkpoint': 'checkpoints/checkpoint-3'}) + '\\n')")
    job = jobs.spawn("trainer", [sys.executable, "-c", trainer], tdir)
    try:
        r = yichui(home, "attach", timeout=60)  # no SESSION: the newest training, named (46 trial L, L6)
    finally:
        job.stop(timeout=5)
    out = r.stdout + r.stderr
    assert r.returncode == 130, out
    assert f"Following the training of session {s.id} (the newest training now" in " ".join(out.split()), out
    assert i18n.t("training.stopped", pid=job.pid, id=s.id).split(";")[0] in " ".join(out.split())
    assert "Detached" not in out


def test_status_names_the_smoke_run_apart_from_the_training(home):
    """Issue 20, item 6: the preflight smoke run is listed as `preflight` with its own progress, not as the trainer."""
    import sys

    from recipes import jobs
    from wizard.session import Session

    s = Session.new("finetune", h=home)
    s.save()
    pdir = s.run_dir / "preflight"
    pdir.mkdir(parents=True)
    (pdir / "events.jsonl").write_text(json.dumps({"v": 1, "time": 0, "event": "step", "pid": 0, "launch": None,
                                                   "rank": 0, "step": 1, "total_steps": 2, "loss": 7.5}) + "\n")
    job = jobs.spawn("preflight", [sys.executable, "-c", "import time; time.sleep(30)"], pdir)
    try:
        r = yichui(home, "status", s.id, COLUMNS="200")
    finally:
        job.stop(timeout=5)
    assert r.returncode == 0, r.stderr
    row = next(line for line in r.stdout.splitlines() if str(job.pid) in line)
    assert "smoke test" in row and "trainer" not in row and "1/2" in row  # the job named in words


def test_commands_on_a_session_speak_its_language(home):
    """Issue 20, item 13: `stop` (and every command that reads a session it is given) answers in the session's
    language unless --lang says otherwise; a session chosen by default does not change the language."""
    from wizard.session import Session

    i18n.set_lang("zh")
    try:
        s = Session.new("finetune", h=home)
        s.save()
    finally:
        i18n.set_lang("en")
    r = yichui(home, "stop", s.id, LANG="en_US.UTF-8")
    assert r.returncode == 0 and "没有正在运行的任务" in r.stdout, r.stdout + r.stderr
    r = yichui(home, "--lang", "en", "stop", s.id)
    assert "Nothing is running" in r.stdout
    # issue 20's trial: with no SESSION given, `chat` / `status` picked the newest session and answered in its
    # language (Chinese in an English terminal), and `chat` said "never deployed" about a session nobody named
    r = yichui(home, "chat", LANG="en_US.UTF-8")
    assert r.returncode == 1 and "No yichui server is running" in r.stderr and "从未" not in r.stderr, r.stderr
    r = yichui(home, "status", LANG="en_US.UTF-8")
    assert "没有" not in r.stdout + r.stderr, r.stdout
    # issue 46 trial I (N7): a session found by what it runs (here its server) is the one the command acts on, as
    # resume's unfinished one is: it speaks its language, as resume did and chat / attach's live view did not
    from recipes import jobs

    jobs.spawn("server", ["sleep", "60"], s.run_dir / "serve")
    r = yichui(home, "serve", "stop", LANG="en_US.UTF-8")
    assert r.returncode == 0 and f"已停止会话 {s.id} 的服务" in r.stdout, r.stdout + r.stderr


def test_tables_at_80_columns_keep_words_and_urls_whole(home):
    """Issue 20, item 13: at 80 columns `show --all` split "unfinish/ed" and "http://127.0.0.1:8/002/v1" across
    lines. A column is now no narrower than its longest word while the table fits the terminal; with the model
    column (issue 46 item 12) the model stands on a second line under the id."""
    from recipes import jobs

    s = Session.new("finetune", h=home)
    s.steps["deploy"]["outputs"]["endpoint"] = "http://127.0.0.1:8002/v1"
    s.steps["select_model"]["outputs"]["repo_id"] = "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B"  # a long name
    s.save()
    done = Session.new("finetune", h=home)  # a finished one with its server running (the trial's overflow)
    done.steps["deploy"]["outputs"]["endpoint"] = "http://127.0.0.1:8003/v1"
    for rec in done.steps.values():
        rec["status"] = "done"
    done.steps["choose_strategy"]["outputs"]["training"] = {"method": "lora"}  # what a done one always records
    done.steps["train"]["outputs"].update(adapter_dir=str(home / "a"), method="lora")
    done.steps["deploy"]["outputs"]["served_model"] = "tiny-qwen2-chat-lora"
    done.save()
    running = [jobs.spawn("server", ["sleep", "60"], x.run_dir / "serve") for x in (s, done)]  # in the servers' place
    training = Session.new("finetune", h=home)  # a trainer running now is said in its row (46 trial L, L7)
    training.save()
    running.append(jobs.spawn("trainer", ["sleep", "60"], training.run_dir / "train"))
    try:
        r = yichui(home, "show", "--all", COLUMNS="80")
        out = r.stdout.splitlines()
        at = next(i for i, x in enumerate(out) if training.id in x)
        assert "(training)" in out[at + 2] and "(training)" not in "".join(out[:at]), r.stdout  # under its model
        wide = yichui(home, "show", "--all", COLUMNS="160").stdout
        assert "1/8 select_model (training)" in next(x for x in wide.splitlines() if training.id in x), wide
        # serve status cut "http://127.0.0. / 0.1:8002/v1" and "tiny-qwen2-ch / at-lora" (issue 46 trial I): the
        # model under its endpoint, the log on a line of its own
        for args in (["--all"], [done.id]):
            st = yichui(home, "serve", "status", *args, COLUMNS="80")
            table = [x for x in st.stdout.splitlines() if not x.startswith("Log of")]  # a path: as long as it is
            assert st.returncode == 0 and max(len(x) for x in table) <= 80, st.stdout
            assert "http://127.0.0.1:8003/v1" in st.stdout and " tiny-qwen2-chat-lora " in st.stdout, st.stdout
            assert f"Log of {done.id}: {running[1].log}" in st.stdout, st.stdout
    finally:
        for job in running:
            job.stop(timeout=5)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert max(len(x) for x in lines) <= 80
    row = next(x for x in lines if s.id in x)  # one line per session: where it stands, its server, when
    assert "1/8" in row and "127.0.0.1:8002/v1" in row and s.data["updated_at"][5:16].replace("T", " ") in row, \
        r.stdout
    assert "done" in next(x for x in lines if done.id in x)
    wide = yichui(home, "show", "--all", COLUMNS="140").stdout  # wider: the step's name too
    assert "1/8 select_model" in wide


def test_matplotlib_keeps_its_cache_under_yichui_home(tmp_path):
    """Issue 46 trial J (J1): a fine-tune wrote ~/.cache/matplotlib and ~/.config/matplotlib when it drew loss.png.
    After yichui's entry point has run, matplotlib's cache and config folder are under YICHUI_HOME (and the jobs it
    starts inherit the setting); a user's own MPLCONFIGDIR is kept."""
    code = ("import sys\nsys.argv = ['yichui', 'steps']\nfrom wizard import cli\ntry:\n    cli.main()\n"
            "except SystemExit:\n    pass\nimport matplotlib\nprint('DIR', matplotlib.get_cachedir())")
    env = {k: v for k, v in os.environ.items() if k != "MPLCONFIGDIR"} | {
        "HOME": str(tmp_path / "user"), "YICHUI_HOME": str(tmp_path / "yh")}
    (tmp_path / "user").mkdir()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120).stdout
    assert f"DIR {tmp_path / 'yh' / 'cache' / 'matplotlib'}" in out, out
    assert not any((tmp_path / "user").iterdir())
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=env | {"MPLCONFIGDIR": str(tmp_path / "mine")}).stdout
    assert f"DIR {tmp_path / 'mine'}" in out, out


def test_install_puts_yichui_on_path_or_says_how(tmp_path):
    """Issue 46 item 1: after ./install.sh `yichui` was "command not found" while every hint says `yichui …`. With
    ~/.local/bin on PATH it is linked there (and runs from any folder); without, the line that puts it on PATH."""
    root = Path(__file__).resolve().parent.parent
    bin_ = tmp_path / ".local" / "bin"
    env = {"HOME": str(tmp_path), "PATH": f"{bin_}:/usr/bin:/bin"}
    r = subprocess.run([str(root / "install.sh"), "--link"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and (bin_ / "yichui").resolve() == (root / ".venv" / "bin" / "yichui").resolve()
    ran = subprocess.run(["yichui", "steps"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0 and "select_model" in ran.stdout
    (bin_ / "yichui").unlink()
    r = subprocess.run([str(root / "install.sh"), "--link"], env=env | {"PATH": "/usr/bin:/bin"},
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and not (bin_ / "yichui").exists()
    assert f'export PATH="{root}/.venv/bin:$PATH"' in r.stdout
    # … and, not linked, every hint it prints names the path it was started by, which works as printed (the README's
    # first command is `.venv/bin/yichui demo`: the demo's `yichui chat …` was "command not found", the tryout's N3)
    r = subprocess.run([".venv/bin/yichui", "show", "nothing-here"], env=env | {"PATH": "/usr/bin:/bin",
                       "YICHUI_HOME": str(tmp_path / "h")}, cwd=root, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "(`.venv/bin/yichui show --all` lists them)" in r.stderr, r.stderr
    r = subprocess.run(["yichui", "show", "nothing-here"],
                       env=env | {"PATH": f"{root}/.venv/bin:/usr/bin:/bin", "YICHUI_HOME": str(tmp_path / "h")},
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "(`yichui show --all` lists them)" in r.stderr, r.stderr


def test_status_lists_a_wizard_between_jobs_and_stop_names_the_sessions_left(home):
    """Trial R: while a wizard exported (no job of its own: the trainer gone, no server yet) its session dropped out
    of `yichui status`; `yichui stop` stopped one session's jobs without a word of the others still running; a
    stopped server kept its endpoint in the detail column."""
    from recipes import jobs
    from wizard.session import Session

    busy = Session.new("finetune", h=home)
    busy.record("export").update(status="running")
    busy.save()
    wizard = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom wizard.session import Session\n"
                               "Session.load(sys.argv[1]).lock()\nprint('locked', flush=True)\ntime.sleep(60)",
                               str(busy.path)], cwd=Path(__file__).resolve().parent.parent, stdout=subprocess.PIPE,
                              text=True)
    served = Session.new("finetune", h=home)
    served.save()
    server = jobs.spawn("server", ["sleep", "60"], served.run_dir / "deploy")
    other = Session.new("finetune", h=home)
    other.record("deploy").outputs.update(endpoint="http://127.0.0.1:9/v1")
    other.save()
    second = jobs.spawn("server", ["sleep", "60"], other.run_dir / "deploy")
    try:
        assert wizard.stdout.readline().strip() == "locked"
        st = yichui(home, "status", COLUMNS="80")
        assert st.returncode == 0 and busy.id in st.stdout, st.stdout
        row = next(x for x in st.stdout.splitlines() if "wizard" in x)
        assert str(wizard.pid) in row and "step 6/8: Export" in row and "running" in row, st.stdout
        assert st.stdout.index(busy.id) < st.stdout.index(served.id) < st.stdout.index(other.id)  # oldest first
        assert "http://127.0.0.1:9/v1" in st.stdout, st.stdout  # a running server: where it answers
        r = yichui(home, "stop")  # the newest session's server; the other one named
        assert r.returncode == 0 and f"of session {other.id}" in r.stdout, r.stdout
        assert f"1 other session(s) still run jobs: {served.id}" in r.stdout, r.stdout
        shown = yichui(home, "status", other.id, COLUMNS="80").stdout
        assert "not running" in shown and "127.0.0.1:9" not in shown, shown
        assert server.alive() and not second.alive()
    finally:
        wizard.kill()
        wizard.wait()
        server.stop(timeout=5)
        second.stop(timeout=5)


def test_status_of_several_training_sessions_says_how_to_get_tensorboard_once(home):
    """Trial R: every session's block in `yichui status` carried a five-line TensorBoard install hint (55 lines for
    three sessions): each training session names its events folder, the hint comes once under them all."""
    import importlib.util

    from recipes import jobs

    started = []
    for _ in range(2):
        s = Session.new("finetune", h=home)
        s.save()
        (s.run_dir / "train" / "tensorboard").mkdir(parents=True)
        started.append((s, jobs.spawn("trainer", ["sleep", "60"], s.run_dir / "train")))
    try:
        out = yichui(home, "status", COLUMNS="80").stdout
        for s, _ in started:
            assert str(s.run_dir / "train" / "tensorboard") in " ".join(out.split()), out
        if importlib.util.find_spec("tensorboard") is None:
            assert out.count("pip install tensorboard") == 1 and out.count("TensorBoard events") == 2, out
        else:
            assert "pip install tensorboard" not in out and out.count("-m tensorboard.main") == 2, out
    finally:
        for _, job in started:
            job.stop(timeout=5)


def test_abandoned_sessions_are_no_default_and_can_be_deleted(home):
    """Issue 46 item 12: a session left at its first question became the default of status/attach/stop; no command
    deleted a session; show --all had no model column."""
    import time

    from recipes import jobs
    from wizard.session import Session

    empty = yichui(home, "status")  # nothing ever ran: a state, as `stop` says it, not an error (trial Q)
    assert empty.returncode == 0 and "No sessions in" in empty.stdout and not empty.stderr, (empty.stdout, empty.stderr)
    worked = Session.new("finetune", h=home)
    worked.record("select_model").outputs.update(repo_id="yichui/tiny-qwen2-chat", source="hf")
    worked.save()
    job = jobs.spawn("trainer", ["sleep", "30"], worked.run_dir / "train")
    try:
        time.sleep(0.05)
        # its last event says training ended while the process still runs: "finished", not yet gone (trial Q)
        (worked.run_dir / "train" / "events.jsonl").write_text(json.dumps({"v": 1, "event": "done", "step": 3}) + "\n")
        live = yichui(home, "status")
        assert live.returncode == 0 and "finished (exiting)" in live.stdout, live.stdout
        abandoned = Session.new("finetune", h=home)
        abandoned.save()  # the newest session, which never started anything
        r = yichui(home, "delete", worked.id, "--yes")
        assert r.returncode == 2 and f"yichui stop {worked.id}" in r.stderr and worked.path.exists()
        assert yichui(home, "stop").returncode == 0 and not job.alive()  # the running one, not the newest
        # nothing runs now: said of all, not of a session picked by age (issue 46 trial G)
        again = yichui(home, "stop")
        assert again.returncode == 0 and "No yichui job is running" in again.stdout and worked.id not in again.stdout
        att = yichui(home, "attach")
        assert att.returncode == 1 and "No training is running under this YICHUI_HOME" in att.stdout, att.stdout
        st = yichui(home, "status")
        assert st.returncode == 0 and worked.id in st.stdout and abandoned.id not in st.stdout, st.stdout
        assert "finished" in st.stdout and "exiting" not in st.stdout, st.stdout  # stopped: finished, gone
        shown = yichui(home, "show", "--all", COLUMNS="80")
        assert "model" in shown.stdout and "tiny-qwen2-chat" in shown.stdout, shown.stdout
        shown = yichui(home, "show")  # nor of show (issue 46 trial I)
        assert shown.returncode == 0 and worked.id in shown.stdout and abandoned.id not in shown.stdout, shown.stdout
        asked = yichui(home, "delete", abandoned.id)  # no terminal to ask on: --yes is needed, nothing is deleted
        assert asked.returncode == 2 and abandoned.path.exists()
        gone = yichui(home, "delete", abandoned.id, "--yes")
        assert gone.returncode == 0 and "Deleted" in gone.stdout
        assert not abandoned.path.exists() and not abandoned.run_dir.exists() and worked.path.exists()
        assert yichui(home, "show", abandoned.id).returncode == 2
    finally:
        job.stop()


def test_a_session_file_that_no_longer_loads_can_still_stop_its_server_and_be_deleted(home):
    """Issue 46 trial J (J2): after a hand edit broke a session file, `serve stop SESSION` and `delete SESSION`
    said only the refusal and its server ran on (only `serve stop --all` stopped it). The server is found by the
    session's id: stopped, the refusal said beside it; delete refuses while it runs and deletes once it is stopped."""
    from recipes import jobs
    from recipes.rundir import SERVER, RunDir

    s = Session.new("finetune", h=home)
    s.save()
    job = jobs.spawn(SERVER, ["sleep", "60"], RunDir(s.run_dir).serve.root)
    data = json.loads(s.path.read_text())
    data["steps"]["train"] = 5  # no longer a session yichui can read
    s.path.write_text(json.dumps(data))
    try:
        listed = yichui(home, "show", "--all", COLUMNS="80")  # a row of its own, with its server (J4)
        row = next((x for x in listed.stdout.splitlines() if s.id in x), "")
        assert "unreadable" in row and f"pid {job.pid}" in row, listed.stdout
        r = yichui(home, "delete", s.id, "--yes")
        assert r.returncode == 2 and f"yichui stop {s.id}" in r.stderr and s.path.exists() and job.alive(), r.stderr
        r = yichui(home, "stop", s.id)  # as the line says
        assert r.returncode == 0 and f"(pid {job.pid})" in r.stdout and "not a valid yichui session" in r.stderr, \
            r.stdout + r.stderr
        assert not job.alive()
        r = yichui(home, "delete", s.id, "--yes")
        assert r.returncode == 0 and not s.path.exists() and not s.run_dir.exists(), r.stdout + r.stderr
    finally:
        job.stop()


def test_status_at_80_columns_keeps_the_endpoint_whole_and_reads_the_trainer_s_events(home):
    """Issue 46 (tryout): `yichui status` cut the server's endpoint into pieces at 80 columns (a fifth column held
    the log's path); the trainer's line reads its last step from train/events.jsonl."""
    from recipes import jobs
    from recipes.rundir import SERVER, TRAINER, RunDir

    s = Session.new("finetune", h=home)
    s.steps["deploy"]["outputs"]["endpoint"] = "http://127.0.0.1:18023/v1"
    s.save()
    run = RunDir(s.run_dir)
    run.train.root.mkdir(parents=True)
    run.train.events.write_text(json.dumps({"v": 1, "event": "step", "step": 7, "total_steps": 30, "loss": 1.25}) + "\n")
    running = [jobs.spawn(TRAINER, ["sleep", "60"], run.train.root), jobs.spawn(SERVER, ["sleep", "60"], run.serve.root)]
    try:
        for lang, step in (("en", "step 7/30, loss 1.25"), ("zh", "第 7/30 步，损失 1.25")):
            r = yichui(home, "--lang", lang, "status", s.id, COLUMNS="80")
            assert r.returncode == 0, r.stderr
            # the table within 80 columns; the logs' paths below it, each on its own line, whole (trial J)
            table = [x for x in r.stdout.splitlines() if not x.startswith(("Log of", "服务的日志", "训练进程的日志"))]
            assert max(len(x) for x in table) <= 80, r.stdout
            assert any(x.endswith(f"：{run.train.log()}" if lang == "zh" else f": {run.train.log()}")
                       for x in r.stdout.splitlines()), r.stdout
            assert "http://127.0.0.1:18023/v1" in r.stdout and step in r.stdout, r.stdout
            flat = "".join(c for c in r.stdout if not c.isspace() and c != "│")  # the cell's folded lines joined
            assert str(run.train.log()) in flat and str(run.serve.log) in flat, r.stdout
    finally:
        for job in running:
            job.stop(timeout=5)


def test_show_says_what_it_cut_and_json_gives_it_whole(home):
    """Issue 46 (tryout): `show SESSION` cut long answers mid-word with no way to see them; now the cut is marked,
    said once, and `show SESSION --json` prints the session file's answers and outputs whole."""
    s = Session.new("finetune", h=home)
    long_path = "/data/" + "very-long-folder-name/" * 6 + "train.jsonl"
    s.steps["choose_strategy"]["answers"].update(dataset="local", dataset_path=long_path, learning_rate=0.0002)
    s.save()
    r = yichui(home, "show", s.id, COLUMNS="200")
    assert r.returncode == 0, r.stderr
    assert long_path not in r.stdout and "…" in r.stdout and f"yichui show {s.id} --json" in r.stdout, r.stdout
    r = yichui(home, "show", s.id, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["id"] == s.id and doc["steps"]["choose_strategy"]["answers"]["dataset_path"] == long_path
    short = Session.new("finetune", h=home)  # nothing cut: no hint
    assert "--json" not in yichui(home, "show", short.id, COLUMNS="200").stdout


def test_the_typer_internals_yichui_patches_are_there_in_the_pinned_version():
    """Issue 45: the library patches live in one place (wizard/cli/__init__.py _help_in_language); this pins what they
    rely on, so an upgrade of typer that moves them fails here, not as an English or cut --help in a user's hands."""
    from importlib.metadata import version

    import typer._click.core as click_core
    import typer.core
    import typer.rich_utils as ru

    assert version("typer") == "0.29.2"  # pyproject.toml's pin: change both together
    assert callable(click_core.Command.get_help_option) and callable(ru._make_rich_text)
    assert hasattr(typer.core.TyperArgument, "display_type_rich") and callable(ru.rich_format_error)
    import typer._click.exceptions as ce

    assert {"param", "ctx"} <= set(vars(ce.MissingParameter("x"))) and hasattr(ce.NoSuchOption("--x"), "possibilities")
    for name in ("ARGUMENTS_PANEL_TITLE", "OPTIONS_PANEL_TITLE", "COMMANDS_PANEL_TITLE", "DEFAULT_STRING",
                 "REQUIRED_LONG_STRING"):
        assert isinstance(getattr(ru, name), str), name


def test_a_usage_mistake_is_one_line_in_the_user_s_language(home):
    """Issue 46 item 8: a bare `yichui delete` printed typer's box (usage, a hint, a framed error); yichui's own
    refusals are one line. Exit 2 as before (bad input)."""
    for args, line in ((["delete"], "error: SESSION is missing — `yichui delete -h` shows its usage."),
                       (["show", "--jsn"], "error: there is no option --jsn (did you mean --json?) — `yichui show -h`"
                                           " shows its usage."),
                       (["--lang", "zh", "delete"], "错误：缺少 SESSION——`yichui delete -h` 可查看用法。"),
                       # bare `yichui` is the wizard, but --set belongs to run (issue 46 trial K, K3)
                       (["--set", "a.b=1"], "error: there is no option --set; a new session takes it after run: "
                                            "`yichui run --set …` — `yichui -h` shows its usage.")):
        r = yichui(home, *args)
        assert r.returncode == 2 and r.stderr.strip() == line and "╭" not in r.stderr, (args, r.stderr)


def test_delete_removes_only_yichui_s_own_session_and_run_folder(home, tmp_path):
    """Issue 46 (bad input, round four): `delete ""` deleted the newest session; a session file whose run_dir named
    YICHUI_HOME (or "") deleted the whole home (or the current folder); deleting a copy of a session file deleted the
    original's run folder. Each is now refused in one line, exit 2, nothing deleted."""
    import shutil

    from conftest import YICHUI, env_for
    from wizard.session import Session

    scratch = tmp_path / "cwd"  # a regression that deletes "the current folder" deletes only this
    scratch.mkdir()

    def yichui(home, *args):  # noqa: F811 - as conftest's, run in the scratch folder
        return subprocess.run([YICHUI, *args], env=env_for(home), cwd=scratch, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120)

    keep = Session.new("finetune", h=home)
    keep.save()
    (keep.run_dir / "train").mkdir(parents=True)
    (keep.run_dir / "train" / "checkpoint").write_text("precious")
    r = yichui(home, "delete", "", "--yes")
    assert r.returncode == 2 and "Name the session to delete" in r.stderr and keep.path.exists()
    copy = tmp_path / "copy.json"
    shutil.copy(keep.path, copy)
    r = yichui(home, "delete", str(copy), "--yes")
    assert r.returncode == 2 and "is not a session file of this YICHUI_HOME" in r.stderr, r.stderr
    assert copy.exists() and (keep.run_dir / "train" / "checkpoint").exists()
    odd = Session.new("finetune", h=home)
    odd.data["run_dir"] = str(home)  # hand-edited to name the whole home
    odd.save()
    r = yichui(home, "delete", odd.id, "--yes")
    assert r.returncode == 2 and "nothing deleted" in r.stderr, r.stderr
    assert odd.path.exists() and keep.path.exists() and (keep.run_dir / "train" / "checkpoint").exists()
    odd.data["run_dir"] = ""  # the current folder: an invalid session now, whose file and own run folder go
    odd.save()
    own = home / "runs" / odd.id  # YICHUI_HOME/runs/<its id>, with a log in it
    own.mkdir(parents=True, exist_ok=True)
    (own / "wizard.log").write_text("x")
    assert "'run_dir' is empty" in yichui(home, "show", odd.id).stderr
    r = yichui(home, "delete", odd.id, "--yes")
    assert r.returncode == 0 and not odd.path.exists() and not own.exists(), r.stdout + r.stderr
    assert f"its run folder {own}" in " ".join(r.stdout.split()), r.stdout
    assert keep.path.exists() and (keep.run_dir / "train" / "checkpoint").exists() and Path.cwd().exists()
    assert keep.path.exists() and (keep.run_dir / "train" / "checkpoint").exists()
    # a session made --from this one names its adapter: deleting it says so first (issue 46 trial G: a later deploy
    # of the other session trained again, unannounced)
    child = Session.new("quantize", h=home)
    child.data["from"] = keep.id
    child.steps["train"]["outputs"] = {"adapter_dir": str(keep.run_dir / "train" / "checkpoint")}
    child.save()
    r = yichui(home, "delete", keep.id, "--yes")
    assert r.returncode == 0 and not keep.path.exists(), r.stdout + r.stderr
    assert f"Sessions made from it use files of its run folder {keep.run_dir}: {child.id}" in r.stdout + r.stderr


def test_commands_are_wired_in_one_place():
    """Issue 45: commands registered by import side effect (decorators spread over four modules); they are wired in
    wizard/cli/__init__.py's tables only, and every one of them is there."""
    import re

    import wizard.cli as cli

    for mod in ("sessions", "tools", "jobs", "serving", "common"):
        text = (Path(cli.__file__).parent / f"{mod}.py").read_text()
        assert not re.search(r"^@\w+\.(command|callback)\(|add_typer\(", text, re.M), mod
    names = {c.name for c in cli.app.registered_commands}
    assert names == {n for n, *_ in cli.COMMANDS} | {"chat"}
    assert {c.name for c in cli.serving.serve_app.registered_commands} == {n for n, *_ in cli.SERVE_COMMANDS}


def test_show_at_80_columns_keeps_every_value_whole(home):
    """Issue 46 item 14: `show` in an 80-column terminal folded values mid-token (`endpoint=http://127.0.0` /
    `.1:35173`, `…/evaluate/repor` / `t.m…`). In a real pseudo-terminal of 80 columns: a paragraph per step, lines
    broken between items, never inside one, and an item cut short only as a whole."""
    import re

    import pexpect

    from conftest import YICHUI, env_for

    s = Session.new("finetune", h=home)
    long_dir = str(home / "runs" / s.id / "evaluate" / "a-rather-long-folder-name-for-the-report")
    s.record("select_model").update(status="done", answers={"source": "hf", "endpoint": "http://127.0.0.1:35173",
                                                            "model": "other", "model_id": "yichui/tiny-qwen2-chat"})
    s.record("evaluate").update(status="done", answers={"heldout": "file"},
                                outputs={"heldout_samples": 90, "report": long_dir + "/report.md",
                                         "chart": long_dir + "/report.png"})
    s.save()
    env = env_for(home) | {"COLUMNS": "80", "LINES": "60"}
    t = pexpect.spawn(YICHUI, ["show", s.id], env=env, encoding="utf-8", dimensions=(60, 80), timeout=60)
    t.expect(pexpect.EOF)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", t.before).replace("\r", "")
    lines = text.splitlines()
    assert max(len(x) for x in lines) <= 80 or any(len(x) > 80 and " " not in x.strip() for x in lines), text
    for value in ("endpoint=http://127.0.0.1:35173", "model_id=yichui/tiny-qwen2-chat", f"report={long_dir}/report.md"):
        assert any(value in x for x in lines), (value, text)  # on one line, whole
    assert "select_model · " in text and "    answers: " in text


def test_replay_in_a_terminal_asks_once_whether_to_use_the_recorded_answers(home):
    """Issue 46 item 8: `yichui replay SESSION` without --yes started at the first of ~40 questions again. In a real
    pseudo-terminal it asks one question: its recorded answers, asking nothing (as --yes: here the recorded hub is
    unreachable, so the replay stops at select_model without asking anything), or each question pre-filled (zh: the
    first question comes, pre-filled; Ctrl-C there ends with 130)."""
    import re

    import pexpect

    from conftest import YICHUI, env_for

    s = Session.new("finetune", h=home)
    s.record("select_model").update(status="done", answers={"source": "hf", "endpoint": "http://127.0.0.1:9",
                                                            "model": "other", "model_id": "yichui/tiny-qwen2-chat"})
    s.save()
    env = env_for(home) | {"COLUMNS": "80", "LINES": "40", "TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1"}
    t = pexpect.spawn(YICHUI, ["--lang", "en", "replay", s.id], env=env, encoding="utf-8", dimensions=(40, 80),
                      timeout=120)
    t.expect("Replay this session:")
    t.expect("with its 4 recorded answers, asking nothing")
    t.send("\r")
    t.expect(pexpect.EOF)
    t.close()
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", t.before)
    assert t.exitstatus not in (0, 130), text
    assert "Where does the model come from?" not in text and "127.0.0.1:9" in text, text

    z = pexpect.spawn(YICHUI, ["--lang", "zh", "replay", s.id], env=env, encoding="utf-8", dimensions=(40, 80),
                      timeout=120)
    z.expect("重放此会话：")
    z.expect("逐个回答问题")
    z.send("\x1b[B")
    z.send("\r")
    z.expect("模型来自哪里？")  # the first question, asked (its recorded answer pre-filled)
    z.send("\x03")
    z.expect(pexpect.EOF)
    z.close()
    assert z.exitstatus == 130


def test_resume_refuses_a_run_folder_a_hand_edited_session_names_outside_its_own(home, tmp_path):
    """The tester's N12 (issue 46): a session file whose run_dir was edited to a foreign folder was resumed and
    training wrote logs/ and train/ there (delete already refused it). resume refuses it in one line, exit 2, and
    writes nothing there; the file is untouched."""
    import subprocess

    from conftest import YICHUI, env_for

    s = Session.new("finetune", h=home)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine")
    s.data["run_dir"] = str(victim)
    s.record("select_model").update(status="done", answers={"source": "local", "path": str(home)})
    s.save()
    before = s.path.read_bytes()
    r = subprocess.run([YICHUI, "--lang", "en", "resume", s.id, "--yes"], env=env_for(home), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"names the run folder {victim}, not {(home / 'runs' / s.id).resolve()}: not resumed" in r.stderr
    assert sorted(p.name for p in victim.iterdir()) == ["keep.txt"] and s.path.read_bytes() == before


def test_a_dead_job_s_log_lines_are_its_own_run_s(tmp_path):
    """Issue 46 trial K (K2): a log is appended run after run, and a trainer killed before it wrote anything was
    reported with the previous run's last lines (a "pip install kernels" warning read as the crash's cause). Each
    start writes a line into the log; a dead job's lines are those after its own."""
    from recipes import jobs
    from recipes.training.runner import died_tail

    import time

    first = jobs.spawn("trainer", [sys.executable, "-c", "print('Failed to load kernels: pip install kernels')"], tmp_path)
    deadline = time.monotonic() + 10
    while first.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    second = jobs.spawn("trainer", ["sleep", "30"], tmp_path)
    second.stop(timeout=5)
    assert "pip install kernels" in second.log_tail(40)  # the whole log keeps both runs, each after its start line
    assert second.log_tail(40, this_run=True) == "" and died_tail(second.log_tail(40, this_run=True)) == "  —"
    assert Path(second.log).read_text().count(jobs.START_MARK) == 2


def test_a_session_is_found_by_its_last_four_characters_or_its_beginning(home):
    """Issue 46 trial K (K8): 20261201-101500-ab12 is long to type; its unique end or beginning finds it, as git takes
    a short hash, and a part that several ids share is refused, naming them."""
    made = [Session.new("finetune", h=home) for _ in range(3)]
    for s in made:
        s.save()
    first = made[0].data["id"]
    r = yichui(home, "show", first[-4:])
    assert r.returncode == 0 and f"Session {first}" in r.stdout, r.stderr
    others = [s.data["id"] for s in made[1:]]
    start = next(first[:n] for n in range(16, 21) if not any(o.startswith(first[:n]) for o in others))
    r = yichui(home, "show", start)  # its beginning, as far as it is its own
    assert r.returncode == 0 and f"Session {first}" in r.stdout, r.stderr
    r = yichui(home, "show", first[:8])  # the date: every session of the day
    assert r.returncode == 2 and "part of several session ids" in r.stderr
    assert all(s.data["id"] in r.stderr for s in made)
    r = yichui(home, "--lang", "zh", "delete", first[:8], "--yes")
    assert r.returncode == 2 and "多个会话 ID" in r.stderr and all(s.path.exists() for s in made)
    r = yichui(home, "show", "zzzz")
    assert r.returncode == 2 and "No session zzzz" in r.stderr


def test_replay_with_a_key_no_step_asks_says_nothing_of_replaying(home):
    """Issue 46 item 21 (trial L): `replay S --set choose_strategy.nokey=1` printed "Replaying …" before the key was
    refused; the refusal now comes first and alone (exit 2, no session written), and a good --set still says it."""
    s = Session.new("finetune", h=home)
    s.save()
    r = yichui(home, "replay", s.id, "--yes", "--set", "choose_strategy.nokey=1")
    assert r.returncode == 2 and "choose_strategy.nokey" in r.stderr, r.stdout + r.stderr
    assert "Replaying" not in r.stdout + r.stderr
    assert len(sessions(home)) == 1


def test_a_model_id_without_model_other_is_refused_before_any_hub_is_asked(home, hub):
    """Issue 46 trial L (M2): `--set select_model.model_id=ORG/NAME` alone was refused with the default catalogue
    model's error (a run with that model where the hub has it); it is refused as not asked, naming the answer it
    needs, before anything reads a hub. With model=other it runs."""
    from recipes.demo.tiny_model import REPO_ID

    r = yichui(home, "run", "--task", "deploy", "--yes", "--set", f"select_model.endpoint={hub.url}",
               "--set", f"select_model.model_id={REPO_ID}")
    assert r.returncode == 2 and "select_model.model=other" in r.stderr, r.stdout + r.stderr
    assert "Reading config.json" not in r.stdout + r.stderr and sessions(home) == []
    r = yichui(home, "run", "--task", "deploy", "--yes", "--set", f"select_model.endpoint={hub.url}",
               "--set", f"select_model.model={REPO_ID}")
    assert r.returncode == 2 and f"--set select_model.model=other --set select_model.model_id={REPO_ID}" in r.stderr
