"""Serving engines' argument tables (recipes/engine_tables) and the launches built from them.

The tables were dumped from each pinned engine's own parser (recipes/engine_dump.py); the transformers table is dumped
again here from the installed transformers and must be identical. Every launch the deploy step can build, for each
engine, each format it loads, with and without an unmerged adapter and on loopback or all addresses, is checked here
by a reader of the table independent of recipes.engines.check_argv. The help check runs against the real
`transformers serve --help`; with YICHUI_ENGINE_ENVS=DIR (DIR/<engine>-<version>/bin/python) also against vLLM,
SGLang and LMDeploy.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from recipes import deploy, engines

ROOT = Path(__file__).resolve().parents[1]
GPU = ("vllm", "sglang", "lmdeploy")


def launches():
    """Every (engine, format, adapter, host) launch the deploy step can build."""
    for engine in engines.PINNED:
        for fmt in engines.formats(engine):
            for adapter in ([None] if engine == "transformers" else [None, {"path": "/a/adapter", "rank": 12}]):
                for host in (["127.0.0.1"] if engine == "transformers" else ["127.0.0.1", "0.0.0.0"]):
                    yield engine, fmt, adapter, host


def build(engine, fmt, adapter=None, host="127.0.0.1"):
    gpu = engine in GPU
    return engines.command(engine, model_dir="/m/merged", fmt=fmt, served_name="tiny-lora", host=host, port=8123,
                           chat_template="/m/merged/chat_template.jinja" if gpu else None,
                           max_model_len=4096 if gpu else None, gpu_util=0.9 if gpu else None,
                           tensor_parallel=2 if gpu else 1, adapter=adapter, api_key=host != "127.0.0.1",
                           weights_fraction=0.1 if gpu else None)


def typed(kind: str, value: str) -> bool:
    conv = {"int": int, "float": float, "json": json.loads, "str": str}[kind]
    try:
        conv(value)
    except ValueError:
        return False
    return True


def test_tables_are_the_pinned_versions_read_from_the_engines_parsers():
    for engine, version in engines.PINNED.items():
        tab = engines.table(engine)
        assert tab["engine"] == engine and tab["version"] == version and tab["source"]
        assert len(tab["flags"]) > 20
        for flag, spec in tab["flags"].items():
            assert flag in spec["aliases"] and spec["kind"] in ("int", "float", "str", "json", "bool", "flag",
                                                                 "switch") or spec["kind"].startswith("other:")


def test_transformers_table_is_what_the_installed_transformers_parser_says():
    out = subprocess.run([sys.executable, str(ROOT / "recipes" / "engine_dump.py"), "transformers"],
                         capture_output=True, text=True, timeout=120, check=True)
    now = json.loads(out.stdout)
    assert now["version"] == engines.PINNED["transformers"]
    assert now["flags"] == engines.table("transformers")["flags"]


@pytest.mark.parametrize("engine,fmt,adapter,host", list(launches()))
def test_every_launch_uses_only_table_flags_with_values_of_their_kind(engine, fmt, adapter, host):
    launch = build(engine, fmt, adapter, host)
    tab = engines.table(engine)["flags"]
    args, i, seen = launch.args, 0, []
    if engine != "sglang":  # the model directory is the positional argument
        assert args[0] == "/m/merged"
        i = 1
    while i < len(args):
        flag = args[i]
        assert flag in tab, (engine, flag)
        spec = tab[flag]
        seen.append(flag)
        if spec["kind"] in ("flag", "switch"):
            i += 1
            continue
        value = args[i + 1]
        assert not value.startswith("--") and typed(spec["kind"], value), (flag, value, spec["kind"])
        if spec["choices"] is not None:
            assert value in [str(c) for c in spec["choices"]], (flag, value)
        i += 2
    assert len(seen) == len(set(seen))  # no option given twice
    if engine in GPU:
        joined = " ".join(args)
        assert "0.9" in joined or "--cache-max-entry-count" in joined  # the utilization reached the engine
        assert "4096" in args and "2" in args  # context length and tensor parallelism
        assert "--server-name" in args if engine == "lmdeploy" else "--host" in args  # LMDeploy would bind 0.0.0.0
        if adapter:
            assert any(a.startswith("tiny-lora=/a/adapter") for a in args)
        assert launch.key_flag == (engines.KEY_FLAG[engine] if host == "0.0.0.0" else None)
        assert launch.key_flag is None or launch.key_flag in tab


def test_check_argv_refuses_unknown_flags_wrong_kinds_and_values_outside_the_choices():
    for args, key in ((["/m", "--no-such-flag", "1"], "deploy.flag_unknown"),
                      (["/m", "--port", "eighty"], "deploy.flag_value"),
                      (["/m", "--gpu-memory-utilization", "most"], "deploy.flag_value"),
                      (["/m", "--max-lora-rank", "12"], "deploy.flag_value"),        # vLLM takes 1, 8, 16, 32, …
                      (["/m", "--quantization", "bitsandbytes"], "deploy.flag_value"),  # gone from vLLM 0.33
                      (["/m", "--port"], "deploy.flag_arity")):
        with pytest.raises(engines.EngineError) as e:
            engines.check_argv("vllm", args)
        assert e.value.msg.key == key, args
    engines.check_argv("vllm", ["/m", "--port", "8000", "--enable-lora", "--disable-prefix-caching"])
    with pytest.raises(engines.EngineError):  # vLLM 0.33 spells the negation --disable-…, not --no-…
        engines.check_argv("vllm", ["/m", "--no-enable-prefix-caching"])


def test_formats_come_from_the_tables():
    assert "bnb-4bit" not in engines.formats("vllm") and "gptq-w4a16" in engines.formats("vllm")
    assert set(engines.formats("sglang")) >= {"merged", "gptq-w4a16", "awq-w4a16", "fp8-dynamic"}
    assert "fp8-dynamic" not in engines.formats("lmdeploy") and "awq-w4a16" in engines.formats("lmdeploy")
    with pytest.raises(engines.EngineError) as e:
        build("vllm", "bnb-4bit")
    assert e.value.msg.key == "deploy.format_unsupported"


def test_lora_rank_is_raised_to_a_rank_the_engine_takes():
    assert engines.lora_rank_flag("vllm", 12) == 16 and engines.lora_rank_flag("vllm", 64) == 64
    assert engines.lora_rank_flag("sglang", 12) == 12  # no choices in SGLang's table
    with pytest.raises(engines.EngineError):
        engines.lora_rank_flag("vllm", 1024)


def test_transformers_serve_stays_on_loopback_and_serves_no_unmerged_adapter():
    for kw, key in (({"host": "0.0.0.0"}, "deploy.loopback_only"), ({"adapter": {"path": "/a", "rank": 8}}, "deploy.no_lora")):
        with pytest.raises(engines.EngineError) as e:
            build("transformers", "merged", **kw)
        assert e.value.msg.key == key


def test_help_check_against_the_real_transformers_serve(tmp_path):
    inst = engines.find("transformers", tmp_path)
    text = engines.help_text(inst)
    engines.check_help(inst, build("transformers", "merged"), text)
    bad = engines.Launch("transformers", ["/m", "--host", "127.0.0.1", "--max-model-len", "9"], "x")
    with pytest.raises(engines.EngineError) as e:
        engines.check_help(inst, bad, text)
    assert e.value.msg.key == "deploy.flag_not_in_help" and e.value.msg.args["flag"] == "--max-model-len"


@pytest.mark.skipif(not os.environ.get("YICHUI_ENGINE_ENVS"), reason="YICHUI_ENGINE_ENVS: folders of installed engines")
@pytest.mark.parametrize("engine", GPU)
def test_help_check_against_installed_gpu_engines(engine):
    inst = engines.find(engine, Path(os.environ["YICHUI_ENGINE_ENVS"]))
    if inst is None:
        pytest.skip(f"{engine} not under YICHUI_ENGINE_ENVS")
    text = engines.help_text(inst)
    for _, fmt, adapter, host in [x for x in launches() if x[0] == engine]:
        engines.check_help(inst, build(engine, fmt, adapter, host), text)


def test_key_launcher_hands_the_key_to_the_engine_but_not_to_the_command_line(tmp_path):
    (tmp_path / "probe_engine.py").write_text(
        "import json, sys\n"
        "def main():\n"
        "    cmdline = open('/proc/self/cmdline', 'rb').read().split(b'\\0')\n"
        "    json.dump({'argv': sys.argv, 'cmdline': [c.decode() for c in cmdline if c]}, open(sys.argv[-3], 'w'))\n")
    key_file = deploy.api_key_file(tmp_path / "serve")
    key = key_file.read_text().strip()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600 and len(key) >= 32
    assert deploy.api_key_file(tmp_path / "serve") == key_file and key_file.read_text().strip() == key  # kept
    launch = engines.Launch("vllm", ["/m", str(tmp_path / "seen.json")], "x", key_flag="--api-key")
    inst = engines.Installed("vllm", sys.executable, "0", "main")
    argv = engines.argv_for(inst, launch, key_file)
    argv[argv.index("--entry") + 1] = "probe_engine:main"
    subprocess.run(argv, check=True, timeout=60, env=dict(os.environ, PYTHONPATH=str(tmp_path)))
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["argv"][-2:] == ["--api-key", key] and seen["argv"][1:3] == ["serve", "/m"]
    assert key not in " ".join(seen["cmdline"]) and key not in " ".join(argv)
