"""Serving engines: their specs, their argument tables (recipes/serving/tables) and the launches built from them.

The tables were dumped from each engine version's own parser (recipes/serving/dump.py); the transformers table is
dumped again here from the installed transformers and must be identical. Every launch the deploy step can build, for
each engine version yichui has a table for, each format that version loads, with and without an unmerged adapter,
with and without CUDA graphs, on loopback or all addresses, is checked here by a reader of the table independent of
recipes.serving.engines.check_argv: it uses only that version's options. The help check runs against the real
`transformers serve --help`; with YICHUI_ENGINE_ENVS=DIR (DIR/<engine>-<version>/bin/python) also against vLLM,
SGLang and LMDeploy. An installed version without a committed table is launched from its own parser: here
transformers, with its table hidden.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from recipes.serving import engines, keys, launcher, server
from recipes.serving import spec as specs

ROOT = Path(__file__).resolve().parents[1]
GPU = specs.GPU_ENGINES


def versions():
    return [(e, s.version) for e, known in specs.SPECS.items() for s in known]


def launches():
    """Every (engine, version, format, adapter, host, eager) launch the deploy step can build."""
    for engine, version in versions():
        s, tab = specs.spec(engine, version), engines.table(engine, version)
        for fmt in engines.loads(s, tab):
            for adapter in ([None, {"path": "/a/adapter", "rank": 12}] if s.lora else [None]):
                for host in (["127.0.0.1"] if s.loopback_only else ["127.0.0.1", "0.0.0.0"]):
                    for eager in ((False, True) if s.gpu else (False,)):
                        yield engine, version, fmt, adapter, host, eager


def build(engine, fmt, adapter=None, host="127.0.0.1", version=None, eager=False):
    s = specs.spec(engine, version)
    gpu = s.gpu
    return engines.command(s, engines.table(engine, s.version), model_dir="/m/merged", fmt=fmt,
                           served_name="tiny-lora", host=host, port=8123,
                           chat_template="/m/merged/chat_template.jinja" if gpu else None,
                           max_model_len=4096 if gpu else None, gpu_util=0.9 if gpu else None,
                           tensor_parallel=2 if gpu else 1, adapter=adapter, api_key=host != "127.0.0.1",
                           weights_fraction=0.1 if gpu else None, eager=eager)


def typed(kind: str, value: str) -> bool:
    conv = {"int": int, "float": float, "json": json.loads, "str": str}[kind]
    try:
        conv(value)
    except ValueError:
        return False
    return True


def test_every_spec_has_its_versions_table_read_from_the_engines_parser():
    for engine, version in versions():
        tab = engines.table(engine, version)
        assert tab["engine"] == engine and tab["version"] == version and tab["source"]
        assert len(tab["flags"]) > 20
        for flag, spec in tab["flags"].items():
            assert flag in spec["aliases"] and spec["kind"] in ("int", "float", "str", "json", "bool", "flag",
                                                                 "switch") or spec["kind"].startswith("other:")
    assert {f.stem for f in engines.TABLES.glob("*.json")} == {f"{e}-{v}" for e, v in versions()}


def test_every_setting_of_every_spec_has_an_option_in_its_versions_table():
    for engine, version in versions():
        s, tab = specs.spec(engine, version), engines.table(engine, version)
        missing = [k for k in s.options if engines.option(s, tab, k) is None]
        assert not missing, (engine, version, missing)


def test_transformers_table_is_what_the_installed_transformers_parser_says(tmp_path):
    subprocess.run([sys.executable, str(engines.DUMP), "transformers", "--out", str(tmp_path / "t.json")],
                   capture_output=True, text=True, timeout=120, check=True)
    now = json.loads((tmp_path / "t.json").read_text())
    assert now["version"] == specs.recommended("transformers").version
    assert now["flags"] == engines.table("transformers")["flags"]


@pytest.mark.parametrize("engine,version,fmt,adapter,host,eager", list(launches()))
def test_every_launch_uses_only_its_versions_options_with_values_of_their_kind(engine, version, fmt, adapter, host,
                                                                              eager):
    launch = build(engine, fmt, adapter, host, version, eager)
    s, tab = specs.spec(engine, version), engines.table(engine, version)["flags"]
    assert launch.version == version
    args, i, seen = launch.args, 0, []
    if s.model_option is None:  # the model directory is the positional argument
        assert args[0] == "/m/merged"
        i = 1
    while i < len(args):
        flag = args[i]
        assert flag in tab, (engine, version, flag)
        spec = tab[flag]
        seen.append(spec["dest"])
        if spec["kind"] in ("flag", "switch"):
            i += 1
            continue
        value = args[i + 1]  # every launch gives an option one value, "+"/"*" options included
        assert not value.startswith("--") and typed(spec["kind"], value), (flag, value, spec["kind"])
        if spec["choices"] is not None:
            assert value in [str(c) for c in spec["choices"]], (flag, value)
        i += 2
    assert len(seen) == len(set(seen))  # no setting given twice
    if s.gpu:
        joined = " ".join(args)
        assert "0.9" in joined or s.utilization == "after_weights"  # the utilization reached the engine
        assert "4096" in args and "2" in args  # context length and tensor parallelism
        assert engines.option(s, engines.table(engine, version), "host") in args  # LMDeploy would bind 0.0.0.0
        assert (engines.option(s, engines.table(engine, version), "eager") in args) == eager
        if adapter:
            assert any(a.startswith("tiny-lora=/a/adapter") for a in args)
        assert launch.key_flag == (engines.option(s, engines.table(engine, version), "api_key")
                                   if host == "0.0.0.0" else None)
        assert launch.key_flag is None or launch.key_flag in tab


def test_versions_differ_where_their_parsers_do():
    """vLLM 0.26 spells the negation of a switch --no-…, 0.33 --disable-…; 0.33 lost bitsandbytes."""
    old, new = engines.table("vllm", "0.26.0"), engines.table("vllm", "0.33.0")
    assert "--no-enable-prefix-caching" in old["flags"] and "--no-enable-prefix-caching" not in new["flags"]
    assert "--disable-prefix-caching" in new["flags"] and "--disable-prefix-caching" not in old["flags"]
    assert "bnb-4bit" in engines.loads(specs.spec("vllm", "0.26.0"), old)
    assert "bnb-4bit" not in engines.loads(specs.spec("vllm", "0.33.0"), new)
    with pytest.raises(engines.EngineError) as e:
        build("vllm", "bnb-4bit", version="0.33.0")
    assert e.value.msg.key == "serving.format_unsupported"
    assert build("vllm", "bnb-4bit", version="0.26.0").args[-2:] == ["--quantization", "bitsandbytes"]


def test_the_install_hint_names_the_version_started_on_a_gpu(tmp_path):
    assert specs.recommended("vllm").version == "0.26.0" and specs.recommended("vllm").started
    assert "vllm==0.26.0" in engines.install_hint("vllm", tmp_path)
    assert str(tmp_path / "vllm-0.26.0") in engines.install_hint("vllm", tmp_path)
    assert specs.recommended("sglang").version == "0.5.17"  # started, although 0.5.23 has a table too
    assert specs.recommended("lmdeploy").version == "0.18.0" and specs.recommended("lmdeploy").started


def test_a_version_without_its_own_spec_takes_the_newest_older_one():
    assert specs.spec("vllm", "0.30.1").version == "0.26.0"
    assert specs.spec("vllm", "0.40.0").version == "0.33.0"
    assert specs.spec("vllm", "0.20.0").version == "0.26.0"  # older than any: the oldest
    assert specs.spec("vllm", "0.26.1rc1").version == "0.26.0"


def test_a_renamed_option_is_found_under_the_name_the_version_has():
    s = specs.spec("vllm", "0.26.0")
    fake = {"engine": "vllm", "version": "9.0", "positional": [{"dest": "m", "nargs": "?"}],
            "flags": {"-tp": {"dest": "tp", "kind": "int", "nargs": None, "choices": None, "default": 1,
                              "aliases": ["-tp"]}}}
    assert engines.option(s, fake, "tensor_parallel") == "-tp"  # the older name, the only one this table has
    assert engines.option(s, fake, "max_model_len") is None


def test_check_argv_refuses_unknown_flags_wrong_kinds_and_values_outside_the_choices():
    tab = engines.table("vllm", "0.33.0")
    for args, key in ((["/m", "--no-such-flag", "1"], "serving.flag_unknown"),
                      (["/m", "--port", "eighty"], "serving.flag_value"),
                      (["/m", "--gpu-memory-utilization", "most"], "serving.flag_value"),
                      (["/m", "--max-lora-rank", "12"], "serving.flag_value"),        # vLLM takes 1, 8, 16, 32, …
                      (["/m", "--quantization", "bitsandbytes"], "serving.flag_value"),  # gone from vLLM 0.33
                      (["/m", "--port"], "serving.flag_arity")):
        with pytest.raises(engines.EngineError) as e:
            engines.check_argv(tab, args)
        assert e.value.msg.key == key, args
    engines.check_argv(tab, ["/m", "--port", "8000", "--enable-lora", "--disable-prefix-caching"])
    with pytest.raises(engines.EngineError):  # vLLM 0.33 spells the negation --disable-…, not --no-…
        engines.check_argv(tab, ["/m", "--no-enable-prefix-caching"])
    engines.check_argv(engines.table("vllm", "0.26.0"), ["/m", "--no-enable-prefix-caching"])  # 0.26 does


def test_formats_come_from_the_specs_and_the_tables():
    assert set(engines.formats("sglang")) >= {"merged", "gptq-w4a16", "awq-w4a16", "fp8-dynamic"}
    assert engines.formats("lmdeploy") == ("merged",)  # its PyTorch engine does not load compressed-tensors
    assert "bnb-8bit" in engines.formats("transformers")


def test_lora_rank_is_raised_to_a_rank_the_engine_takes():
    v, sg = specs.spec("vllm"), specs.spec("sglang")
    assert engines.lora_rank(v, engines.table("vllm", v.version), 12) == 16
    assert engines.lora_rank(v, engines.table("vllm", v.version), 64) == 64
    assert engines.lora_rank(sg, engines.table("sglang", sg.version), 12) == 12  # no choices in SGLang's table
    with pytest.raises(engines.EngineError):
        engines.lora_rank(v, engines.table("vllm", v.version), 1024)


def test_transformers_serve_stays_on_loopback_and_serves_no_unmerged_adapter():
    for kw, key in (({"host": "0.0.0.0"}, "serving.loopback_only"), ({"adapter": {"path": "/a", "rank": 8}}, "serving.no_lora")):
        with pytest.raises(engines.EngineError) as e:
            build("transformers", "merged", **kw)
        assert e.value.msg.key == key


def test_help_check_against_the_real_transformers_serve(tmp_path):
    inst = engines.find("transformers", tmp_path)
    text = engines.help_text(inst, cache=tmp_path / "cache")
    cached = tmp_path / "cache" / f"transformers-{inst.version}.help.txt"
    assert cached.read_text() == text and "--port" in text  # kept: the next start does not import the engine
    cached.write_text(text + "\n--only-in-the-cache")
    assert engines.help_text(inst, cache=tmp_path / "cache").endswith("--only-in-the-cache")
    engines.check_help(inst, build("transformers", "merged"), text)
    bad = engines.Launch("transformers", inst.version, ["/m", "--host", "127.0.0.1", "--max-model-len", "9"], "x")
    with pytest.raises(engines.EngineError) as e:
        engines.check_help(inst, bad, text)
    assert e.value.msg.key == "serving.flag_not_in_help" and e.value.msg.args["flag"] == "--max-model-len"


def test_an_installed_version_without_a_committed_table_is_read_from_its_own_parser(tmp_path, monkeypatch):
    """transformers with its table hidden: the table comes from its parser (cached), the launch from that table."""
    hidden = tmp_path / "tables"
    hidden.mkdir()
    monkeypatch.setenv("YICHUI_ENGINE_TABLES", str(hidden))
    inst = engines.find("transformers", tmp_path)
    assert engines.committed("transformers", inst.version) is None
    tab = engines.table_for(inst, tmp_path / "cache")
    assert tab["origin"] == "parser" and Path(tab["path"]).parent == tmp_path / "cache"
    assert engines.formats("transformers", inst, tmp_path / "cache") == engines.loads(inst.spec, tab)
    assert "bnb-8bit" in engines.formats("transformers", inst, tmp_path / "cache")
    monkeypatch.delenv("YICHUI_ENGINE_TABLES")
    assert tab["flags"] == engines.table("transformers")["flags"]  # the same parser, read at launch
    launch = engines.command(inst.spec, tab, model_dir="/m", fmt="merged", served_name="x", host="127.0.0.1",
                             port=8000)
    assert launch.args[:3] == ["/m", "--host", "127.0.0.1"] and launch.version == inst.version
    engines.check_help(inst, launch)


def test_an_engine_whose_parser_cannot_be_read_is_one_line_naming_the_tested_versions(tmp_path, monkeypatch):
    monkeypatch.setenv("YICHUI_ENGINE_TABLES", str(tmp_path))
    broken = engines.Installed("vllm", sys.executable, "0.99.0", "main")  # vllm is not importable here
    with pytest.raises(engines.EngineError) as e:
        engines.table_for(broken, tmp_path / "cache")
    assert e.value.msg.key == "serving.no_table" and "0.26.0" in e.value.msg.args["tested"]
    assert "vllm" in e.value.msg.args["last"]  # the dump's own last line: No module named 'vllm'


@pytest.mark.skipif(not os.environ.get("YICHUI_ENGINE_ENVS"), reason="YICHUI_ENGINE_ENVS: folders of installed engines")
@pytest.mark.parametrize("engine", GPU)
def test_help_check_against_installed_gpu_engines(engine):
    inst = engines.find(engine, Path(os.environ["YICHUI_ENGINE_ENVS"]))
    if inst is None:
        pytest.skip(f"{engine} not under YICHUI_ENGINE_ENVS")
    text = engines.help_text(inst)
    for e, version, fmt, adapter, host, eager in launches():
        if e == engine and version == inst.spec.version:
            engines.check_help(inst, build(engine, fmt, adapter, host, version, eager), text)


PROBE = ("import json, subprocess, sys\n"
         "def main():\n"
         "    cmdline = open('/proc/self/cmdline', 'rb').read().split(b'\\0')\n"
         "    json.dump({'argv': sys.argv, 'cmdline': [c.decode() for c in cmdline if c]}, open(sys.argv[-2], 'w'))\n"
         "    print('non-default args:', {'api_key': sys.argv[-1:]}, flush=True)  # as vLLM logs its arguments\n"
         "    subprocess.run([sys.executable, '-c', 'import sys; sys.stderr.write(\"child sees \" + %r)' % sys.argv[-1]])\n")
# an engine that parses its options as vLLM's and SGLang's do (argparse)
ARGPARSE_PROBE = ("import argparse, json, sys\n"
                  "def main():\n"
                  "    ap = argparse.ArgumentParser()\n"
                  "    ap.add_argument('--out'); ap.add_argument('--api-key')\n"
                  "    a = ap.parse_args()\n"
                  "    json.dump({'api_key': a.api_key}, open(a.out, 'w'))\n")


def test_the_key_reaches_the_engine_but_no_command_line_and_no_log(tmp_path):
    """The launcher appends the key inside the process (not in /proc/PID/cmdline), and everything the engine and
    its children print reaches the log with the key replaced."""
    (tmp_path / "probe_engine.py").write_text(PROBE)
    key_file = keys.key_file(tmp_path / "serve")
    key = key_file.read_text().strip()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600 and len(key) >= 32
    assert keys.key_file(tmp_path / "serve") == key_file and key_file.read_text().strip() == key  # kept
    launch = engines.Launch("vllm", "0.26.0", ["/m", str(tmp_path / "seen.json")], "x", key_flag="--api-key")
    inst = engines.Installed("vllm", sys.executable, "0.26.0", "main")
    argv = engines.argv_for(inst, launch, key_file)
    argv[argv.index("--entry") + 1] = "probe_engine:main"
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        subprocess.run(argv, check=True, timeout=60, stdout=out, stderr=subprocess.STDOUT,
                       env=dict(os.environ, PYTHONPATH=str(tmp_path)))
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["argv"][-1] == f"--api-key={key}" and seen["argv"][1:3] == ["serve", "/m"]
    assert key not in " ".join(seen["cmdline"]) and key not in " ".join(argv)
    text = log.read_text()
    assert "non-default args" in text and "child sees --api-key=<redacted>" in text  # the engine's and its child's lines
    assert key not in text and text.count("<redacted>") == 2


def test_a_key_that_begins_with_a_dash_reaches_an_argparse_engine(tmp_path):
    """secrets.token_urlsafe begins a key with "-" once in 64: appended as two words, argparse read it as an option
    and SGLang exited at start ("argument --api-key: expected one argument", an H100, 2026-12-06); as FLAG=KEY it is
    the option's value."""
    (tmp_path / "argparse_engine.py").write_text(ARGPARSE_PROBE)
    key_file = tmp_path / "api_key"
    key = "-" + "k" * 42
    key_file.write_text(key + "\n")
    key_file.chmod(0o600)
    launch = engines.Launch("sglang", "0.5.17", ["--out", str(tmp_path / "seen.json")], "x", key_flag="--api-key")
    inst = engines.Installed("sglang", sys.executable, "0.5.17", "main")
    argv = engines.argv_for(inst, launch, key_file)
    argv[argv.index("--entry") + 1] = "argparse_engine:main"
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=dict(os.environ, PYTHONPATH=str(tmp_path)))
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "seen.json").read_text())["api_key"] == key


@pytest.mark.parametrize("chunk", [1, 3, 7, 4096])
def test_the_redactor_finds_a_key_split_across_reads(tmp_path, chunk):
    secret = b"s3cr3t-key-0123456789"
    data = (b"start " + secret + b" middle\n" + secret * 3 + b"\nend " + secret[:5]) * 50
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_bytes(data)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the writer: pieces of `chunk` bytes, so the secret straddles reads
        os.close(r)
        for i in range(0, len(data), chunk):
            os.write(w, data[i:i + chunk])
        os._exit(0)
    os.close(w)
    with open(dst, "wb") as f:
        launcher.redact(r, f.fileno(), secret)
    os.close(r)
    os.waitpid(pid, 0)
    assert dst.read_bytes() == data.replace(secret, launcher.MASK)


def test_the_kv_cache_size_is_read_from_a_real_vllm_log():
    """The start-up log of vLLM 0.26.0 on an H200 (bench/results): the spec's pattern finds the KV-cache size."""
    from recipes import deploy

    log = ROOT / "bench" / "results" / "2026-12-01-serve-h200" / "server-merged.log"
    assert deploy.kv_cache_tokens(specs.spec("vllm", "0.26.0"), str(log)) == 5_976_320
    assert deploy.kv_cache_tokens(specs.spec("transformers"), str(log)) is None  # no pattern: nothing claimed
    assert deploy.kv_cache_tokens(specs.spec("vllm", "0.26.0"), str(ROOT / "no-such.log")) is None


def test_why_a_served_model_may_not_stop(tiny_model, tmp_path):
    """deploy.stop_cause reads the served folder: an EOS id missing for the template's end-of-turn token is named."""
    import shutil

    from recipes import deploy

    d = tmp_path / "m"
    shutil.copytree(tiny_model, d)
    key, params = deploy.stop_cause(str(d))
    assert key == "deploy.stop_cause.engine"  # the tiny model names <|im_end|> among its EOS ids
    gen = json.loads((d / "generation_config.json").read_text())
    added = json.loads((d / "tokenizer.json").read_text())["added_tokens"]
    end = next(t["id"] for t in added if t["content"] == "<|im_end|>")
    gen["eos_token_id"] = [i for i in gen["eos_token_id"] if i != end]
    (d / "generation_config.json").write_text(json.dumps(gen))
    key, params = deploy.stop_cause(str(d))
    assert key == "deploy.stop_cause.eos" and params["id"] == end and params["token"] == "<|im_end|>"
    (d / "generation_config.json").unlink()
    assert deploy.stop_cause(str(d))[0] == "deploy.stop_cause.no_config"


def test_a_key_file_without_a_usable_key_starts_nothing(tmp_path):
    """An engine given an empty key serves without one: the key file is checked, and the launcher refuses too."""
    sdir = tmp_path / "serve"
    good = keys.key_file(sdir)
    assert keys.KEY_RE.fullmatch(good.read_text().strip())
    for bad, why in (("", "empty"), ("  \n", "empty"), ("firstLine0123456789\nsecondLine0123456789", "several lines"),
                     ("short", "characters"), ("Back\\slash0123456789", "characters")):
        good.write_text(bad)
        with pytest.raises(keys.BadKey) as e:
            keys.key_file(sdir)
        assert why in e.value.params["why"] and e.value.key == "serving.bad_key"
        assert not bad.strip() or bad.strip() not in str(e.value)  # the message never carries the key
        assert keys.read_key(good) is None
        r = subprocess.run([sys.executable, str(engines.LAUNCHER), "--entry", "json:dumps", "--key-file", str(good),
                            "--key-flag", "--api-key", "--", "x"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no usable key" in r.stderr
        assert not bad.strip() or bad.strip() not in r.stderr


def test_the_launcher_refuses_bad_arguments_in_one_line(tmp_path):
    for argv, text in (([], "usage"), (["--entry", "json:dumps", "x"], "usage"),
                       (["--", "x"], "--entry"), (["--entry", "json", "--", "x"], "MOD:FN"),
                       (["--entry", "json:dumps", "--key-file", str(tmp_path / "none"), "--", "x"], "go together"),
                       (["--entry", "json:dumps", "--key-file", str(tmp_path / "none"), "--key-flag", "--k", "--", "x"],
                        "cannot read the key file"),
                       (["--entry", "no_such_engine.cli:main", "--", "x"], "cannot import"),
                       (["--entry", "runpy:no_such_engine", "--", "x"], "not installed")):
        r = subprocess.run([sys.executable, str(engines.LAUNCHER), *argv], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and r.stderr.startswith("launcher: ") and r.stderr.count("\n") == 1, (argv, r.stderr)
        assert text in r.stderr, (argv, r.stderr)


def test_a_damaged_table_is_named_and_a_damaged_cached_one_is_read_again(tmp_path, monkeypatch):
    tables = tmp_path / "tables"
    tables.mkdir()
    monkeypatch.setenv("YICHUI_ENGINE_TABLES", str(tables))
    inst = engines.find("transformers", tmp_path)
    for content, why in (('{"engine": "transformers", "flags": {', "JSONDecodeError"), ("{}", "'engine'"),
                         ("[1, 2]", "not a JSON object"),
                         ('{"engine": "t", "version": "1", "positional": [], "flags": {"--port": {}}}', "--port")):
        (tables / f"transformers-{inst.version}.json").write_text(content)
        engines._read.cache_clear()
        with pytest.raises(engines.EngineError) as e:
            engines.table_for(inst, tmp_path / "cache")
        assert e.value.msg.key == "serving.bad_table" and why in e.value.msg.args["why"], content
        assert e.value.msg.args["path"].endswith(f"transformers-{inst.version}.json")
    (tables / f"transformers-{inst.version}.json").unlink()
    cached = tmp_path / "cache" / f"transformers-{inst.version}.json"
    cached.parent.mkdir()
    cached.write_text("{}")  # a damaged cache entry: read again from the engine's parser
    engines._read.cache_clear()
    tab = engines.table_for(inst, tmp_path / "cache")
    assert tab["origin"] == "parser" and "--port" in tab["flags"] and json.loads(cached.read_text())["flags"]


def test_a_damaged_help_cache_is_read_again_before_a_launch_is_refused(tmp_path):
    inst = engines.find("transformers", tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / f"transformers-{inst.version}.help.txt").write_bytes(b"\x00garbage")
    engines.check_help(inst, build("transformers", "merged"), cache=cache)  # read again from the engine: passes
    assert "--port" in (cache / f"transformers-{inst.version}.help.txt").read_text()
    (cache / f"transformers-{inst.version}.help.txt").unlink()
    (cache / f"transformers-{inst.version}.help.txt").mkdir()  # not a file: left aside
    engines.check_help(inst, build("transformers", "merged"), cache=cache)


def test_stop_cause_reads_odd_model_files_as_absent(tiny_model, tmp_path):
    import shutil

    from recipes import deploy

    d = tmp_path / "m"
    shutil.copytree(tiny_model, d)
    for name, content in (("generation_config.json", "[1, 2]"), ("generation_config.json", '{"eos_token_id": {"a": 1}}'),
                          ("tokenizer_config.json", '{"eos_token": 5, "added_tokens_decoder": {"x": 1}}'),
                          ("tokenizer.json", '{"added_tokens": "none"}')):
        saved = (d / name).read_text()
        (d / name).write_text(content)
        key, _ = deploy.stop_cause(str(d))
        assert key.startswith("deploy.stop_cause."), (name, content)
        (d / name).write_text(saved)


def test_a_server_answering_garbage_is_one_line_naming_what_was_asked(tmp_path):
    """A real HTTP server whose /v1/models is not JSON: the deploy step's request helper turns it into one line."""
    import http.server
    import threading

    from recipes import deploy
    from recipes.base import StepError
    from recipes.serving import client

    class Garbage(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"<html>not an API</html>")

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Garbage)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{srv.server_address[1]}/v1"
        with pytest.raises(StepError) as e:
            deploy._asked("/v1/models", lambda: client.models(base), "/x/server.log")
        assert e.value.msg.key == "deploy.bad_answer" and "JSONDecodeError" in e.value.msg.args["error"]
    finally:
        srv.shutdown()


def test_an_address_of_no_interface_is_not_called_a_busy_port():
    from recipes import deploy

    assert server.host_error("127.0.0.1") is None and server.host_error("0.0.0.0") is None
    assert server.host_error("example.invalid") and server.host_error("192.0.2.123")  # no such name / no such interface


def test_extra_engine_options_are_checked_against_the_versions_options():
    """deploy.engine_args: the user's own options reach the launch after the ones yichui sets, checked like them;
    an option yichui sets from the session (or the key's) is refused, and so is one the version lacks."""
    s = specs.spec("sglang", "0.5.17")
    tab = engines.table("sglang", "0.5.17")
    common = dict(model_dir="/m/merged", fmt="merged", served_name="m", host="0.0.0.0", port=8123, api_key=True)
    extra = engines.split_args("--attention-backend triton --sampling-backend 'pytorch'")
    launch = engines.command(s, tab, extra=extra, **common)
    assert launch.args[-4:] == ["--attention-backend", "triton", "--sampling-backend", "pytorch"]
    for given, key in ((["--port", "9"], "serving.engine_args_owned"), (["--api-key", "k" * 20], "serving.engine_args_owned"),
                       (["--mem-fraction-static=0.5"], "serving.engine_args_owned"),
                       (["--no-such-option"], "serving.engine_args_unknown"),
                       (["--attention-backend", "warp-drive"], "serving.flag_value")):
        with pytest.raises(engines.EngineError) as e:
            engines.command(s, tab, extra=given, **common)
        assert e.value.msg.key == key, (given, e.value.msg)
    with pytest.raises(ValueError):
        engines.split_args("--chat-template 'unclosed")
    assert engines.split_args(None) == [] and engines.split_args("") == []


def test_an_adapter_is_asked_for_by_the_name_each_engine_reads():
    """/v1/models lists the adapter's name on every engine; SGLang serves the base model for a request that carries
    only that name (it reads ``base:adapter``), so the deploy step's check and every client use its form."""
    adapter = {"path": "/a/adapter", "rank": 64}
    for engine, version, request in (("vllm", "0.26.0", "tiny-lora"), ("sglang", "0.5.17", "tiny-lora-base:tiny-lora"),
                                     ("lmdeploy", "0.18.0", "tiny-lora")):
        launch = build(engine, "merged", adapter, version=version)
        assert (launch.served_model, launch.listed_name) == (request, "tiny-lora"), engine
        plain = build(engine, "merged", version=version)
        assert plain.served_model == plain.listed_name == "tiny-lora"


def test_the_kv_cache_size_is_read_from_a_real_sglang_log_and_lmdeploys_blocks_are_multiplied(tmp_path):
    """SGLang 0.5.17's start-up log on an H200 (bench/results, round 2); LMDeploy's line as its executor formats it
    (lmdeploy/pytorch/engine/executor/base.py: CacheConfig's repr at INFO; no LMDeploy start succeeded yet)."""
    from recipes import deploy

    log = ROOT / "bench" / "results" / "2026-12-01-serve-h200-round2" / "server-sglang-merged.log"
    assert deploy.kv_cache_tokens(specs.spec("sglang", "0.5.17"), str(log)) == 1_027_726
    lm = tmp_path / "lmdeploy.log"
    lm.write_text("Building CacheEngine with config: \nCacheConfig(max_batches=256, block_size=64, num_cpu_blocks=0, "
                  "num_gpu_blocks=4231, kernel_block_size=64, window_size=-1)\n")
    assert deploy.kv_cache_tokens(specs.spec("lmdeploy", "0.18.0"), str(lm)) == 64 * 4231
    assert "--log-level" in build("lmdeploy", "merged", version="0.18.0").args  # INFO, or that line is not printed
