"""Serving engines: each launch command is built from one argument table per engine, read from the engine's own parser.

``recipes/engine_tables/<engine>-<version>.json`` holds every option the pinned version's launch command accepts
(written by ``recipes/engine_dump.py``, which builds the engine's own argparse / typer parser from its wheel; see
wizard/README.md, "Serving engines"). :func:`command` builds the argv for a launch from the session's answers and
:func:`check_argv` refuses any flag the table lacks, or a value of the wrong kind or outside the table's choices,
before anything starts. When the engine is installed, :func:`check_help` runs its own ``--help`` and refuses a flag
it does not list (an engine of another version than the table's).

=============  =========  ===========================================  ================================
engine         pinned     launch                                       API key
=============  =========  ===========================================  ================================
transformers   5.24.0     ``transformers serve DIR``                   none: loopback only
vllm           0.33.0     ``vllm serve DIR``                           ``--api-key``
sglang         0.5.23     ``python -m sglang.launch_server``           ``--api-key``
lmdeploy       0.18.0     ``lmdeploy serve api_server DIR``            ``--api-keys``
=============  =========  ===========================================  ================================

The API key never appears in a command line (``ps`` shows those to every user) nor in the session: the GPU engines
start through ``recipes/engine_launch.py``, which reads it from a 0600 file and appends it to the engine's own
``sys.argv`` inside the process.

Formats read from the tables: vLLM 0.33 has no ``bitsandbytes`` or ``gguf`` among its ``--quantization`` methods
(``vllm.model_executor.layers.quantization.QUANTIZATION_METHODS``), so neither bnb nor GGUF artifacts are offered to
it; LMDeploy 0.18's ``--model-format compressed-tensors`` takes pack-quantized INT4 (GPTQ/AWQ W4A16) only.
"""
from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from recipes.base import StepError

TABLES = Path(__file__).with_name("engine_tables")
PINNED = {"transformers": "5.24.0", "vllm": "0.33.0", "sglang": "0.5.23", "lmdeploy": "0.18.0"}
LAUNCHER = Path(__file__).with_name("engine_launch.py")

# how each GPU engine starts inside its Python, and its --help (argv after the interpreter)
ENTRY = {"vllm": "vllm.entrypoints.cli.main:main", "sglang": "runpy:sglang.launch_server",
         "lmdeploy": "lmdeploy.cli.entrypoint:run"}
PREFIX = {"vllm": ["serve"], "sglang": [], "lmdeploy": ["serve", "api_server"], "transformers": ["serve"]}
HELP = {"vllm": ["--help=all"], "sglang": ["--help"], "lmdeploy": ["--help"], "transformers": ["--help"]}
KEY_FLAG = {"vllm": "--api-key", "sglang": "--api-key", "lmdeploy": "--api-keys"}

# the same launch settings under each engine's own option names (checked against the tables in tests)
NAMES = {
    "vllm": {"model": [], "tp": "--tensor-parallel-size", "context": "--max-model-len",
             "util": "--gpu-memory-utilization", "lora": "--lora-modules"},
    "sglang": {"model": ["--model-path"], "tp": "--tp-size", "context": "--context-length",
               "util": "--mem-fraction-static", "lora": "--lora-paths"},
}

# export format → the flags that tell the engine how its weights are stored. llm-compressor writes compressed-tensors
# for GPTQ, AWQ and FP8; transformers reads quantization_config from config.json and needs no flag.
FORMAT_FLAGS = {
    "vllm": {f: {"--quantization": "compressed-tensors"} for f in ("gptq-w4a16", "awq-w4a16", "fp8-dynamic")}
    | {"bnb-4bit": {"--quantization": "bitsandbytes"}},
    "sglang": {f: {"--quantization": "compressed-tensors"} for f in ("gptq-w4a16", "awq-w4a16", "fp8-dynamic")},
    "lmdeploy": {f: {"--model-format": "compressed-tensors"} for f in ("gptq-w4a16", "awq-w4a16")},
    "transformers": {f: {} for f in ("bnb-4bit", "bnb-8bit", "gptq-w4a16", "awq-w4a16", "fp8-dynamic")},
}


class EngineError(StepError):
    """A launch that cannot work: engine missing, flag unknown to its version, value of the wrong kind."""


@functools.cache
def table(engine: str, version: str | None = None) -> dict:
    """The committed argument table of ``engine`` at ``version`` (default: the pinned one).

    Returns ``{"engine", "version", "source", "flags": {"--opt": {"dest", "kind", "nargs", "choices", "default",
    "aliases"}}, "positional"}``; ``kind`` is int | float | str | json | bool | flag (no value) | switch (--x/--no-x).

    Raises:
        EngineError("deploy.no_table"): no table for that engine and version.
    """
    path = TABLES / f"{engine}-{version or PINNED[engine]}.json"
    try:
        return json.loads(path.read_text())
    except OSError:
        raise EngineError("deploy.no_table", engine=engine, version=version or "?",
                          have=", ".join(sorted(p.stem for p in TABLES.glob("*.json")))) from None


def _value_ok(spec: dict, value: str) -> bool:
    kind = spec["kind"]
    try:
        if kind == "int":
            int(value)
        elif kind == "float":
            float(value)
        elif kind == "json":
            json.loads(value)
        elif kind == "bool":
            if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                return False
    except ValueError:
        return False
    return spec["choices"] is None or value in [str(c) for c in spec["choices"]]


def check_argv(engine: str, args: list[str], version: str | None = None) -> None:
    """Every option of ``args`` (the argv after the launch prefix) is in the table, with values of its kind.

    Raises:
        EngineError("deploy.flag_unknown" | "deploy.flag_value" | "deploy.flag_arity"): naming the flag.
    """
    tab = table(engine, version)
    flags, i, positional = tab["flags"], 0, 0
    while i < len(args):
        opt = args[i]
        if not opt.startswith("-"):
            positional += 1
            if positional > len(tab["positional"]):
                raise EngineError("deploy.flag_unknown", engine=engine, version=tab["version"], flag=opt)
            i += 1
            continue
        name, eq, inline = opt.partition("=")
        spec = flags.get(name)
        if spec is None:
            raise EngineError("deploy.flag_unknown", engine=engine, version=tab["version"], flag=name)
        if spec["kind"] in ("flag", "switch"):
            if eq:
                raise EngineError("deploy.flag_arity", engine=engine, flag=name, n=0)
            i += 1
            continue
        values = [inline] if eq else []
        j = i + 1
        if not eq:
            while j < len(args) and not args[j].startswith("--"):
                values.append(args[j])
                j += 1
                if spec["nargs"] in (None, 1):
                    break
        want = spec["nargs"]
        if (want in (None, 1) and len(values) != 1) or (want == "+" and not values) or \
                (isinstance(want, int) and want > 1 and len(values) != want):
            raise EngineError("deploy.flag_arity", engine=engine, flag=name, n=want or 1)
        for v in values:
            if not _value_ok(spec, v):
                raise EngineError("deploy.flag_value", engine=engine, version=tab["version"], flag=name, value=v,
                                  kind=spec["kind"], choices=", ".join(map(str, spec["choices"] or [])) or "-")
        i = j if not eq else i + 1


def allowed(engine: str, flag: str, value: str | None = None) -> bool:
    """Is ``flag`` (with ``value``) in the pinned table?"""
    spec = table(engine)["flags"].get(flag)
    return spec is not None and (value is None or _value_ok(spec, value))


def formats(engine: str) -> tuple[str, ...]:
    """The export formats ``engine`` serves: "merged" and each format whose flags its pinned table accepts."""
    return ("merged",) + tuple(f for f, flags in FORMAT_FLAGS[engine].items()
                               if all(allowed(engine, k, v) for k, v in flags.items()))


def lora_rank_flag(engine: str, rank: int) -> int:
    """The ``max LoRA rank`` to pass: the adapter's rank, raised to the next value the engine's table allows
    (vLLM takes 1, 8, 16, 32, …)."""
    spec = table(engine)["flags"].get({"vllm": "--max-lora-rank", "sglang": "--max-lora-rank"}.get(engine, ""), {})
    choices = sorted(int(c) for c in spec.get("choices") or [])
    if not choices:
        return rank
    bigger = [c for c in choices if c >= rank]
    if not bigger:
        raise EngineError("deploy.lora_rank_too_big", engine=engine, rank=rank, most=choices[-1])
    return bigger[0]


@dataclass
class Launch:
    """What :func:`command` produces. ``args`` go after the engine's launch prefix; no secret is in them."""

    engine: str
    args: list[str]
    served_model: str          # the name /v1/models lists and chat requests use
    key_flag: str | None = None
    notes: list[str] = field(default_factory=list)


def command(engine: str, *, model_dir: str, fmt: str, served_name: str, host: str, port: int,
            chat_template: str | None = None, max_model_len: int | None = None, gpu_util: float | None = None,
            tensor_parallel: int = 1, adapter: dict | None = None, api_key: bool = False,
            device: str = "cpu", weights_fraction: float | None = None, trust_remote_code: bool = False) -> Launch:
    """The launch of ``engine`` for a session, checked against the engine's table (:func:`check_argv`).

    Args:
        model_dir: the directory to serve (merged model, an export, or the base model when ``adapter`` is set).
        fmt: "merged" or an export format (:data:`FORMAT_FLAGS`).
        served_name: the model name clients ask for (the adapter's name when ``adapter`` is set).
        max_model_len: longest context in tokens (from :func:`recipes.memory.serving`'s KV-cache budget).
        gpu_util: fraction of each GPU's memory the engine may take (weights + KV cache + activations).
        weights_fraction: weights / GPU memory; LMDeploy's ``--cache-max-entry-count`` is a fraction of the memory
            left after the weights, so ``gpu_util`` is converted with it.
        adapter: ``{"path", "rank", "name"}`` to serve a LoRA adapter unmerged on top of ``model_dir``.
        api_key: the engine is started through the key launcher, which appends ``key_flag`` and the key.
        trust_remote_code: the user's recorded yes to the model's own code (``--trust-remote-code``, every engine).

    Raises:
        EngineError: a format or option the pinned engine does not take.
    """
    if fmt not in formats(engine):
        raise EngineError("deploy.format_unsupported", engine=engine, format=fmt, formats=", ".join(formats(engine)))
    a: list[str] = []
    base_name = served_name if adapter is None else served_name + "-base"
    if engine == "transformers":
        a = [model_dir, "--host", host, "--port", str(port), "--device", device]
        if adapter:
            raise EngineError("deploy.no_lora", engine=engine)
        if api_key:
            raise EngineError("deploy.loopback_only", host=host)
        served = model_dir  # transformers serve names the model by the path it loaded
    else:
        if engine in NAMES:  # vLLM and SGLang take the same settings under their own names
            n = NAMES[engine]
            a = n["model"] + [model_dir, "--served-model-name", base_name, "--host", host, "--port", str(port),
                              n["tp"], str(tensor_parallel)]
            if max_model_len:
                a += [n["context"], str(max_model_len)]
            if gpu_util:
                a += [n["util"], f"{gpu_util:g}"]
            if chat_template:
                a += ["--chat-template", chat_template]
            if adapter:
                a += ["--enable-lora", "--max-lora-rank", str(lora_rank_flag(engine, adapter["rank"])),
                      n["lora"], f"{served_name}={adapter['path']}"]
        elif engine == "lmdeploy":
            # LMDeploy binds 0.0.0.0 unless told: always name the address
            a = [model_dir, "--model-name", base_name, "--server-name", host, "--server-port", str(port),
                 "--tp", str(tensor_parallel)]
            if max_model_len:
                a += ["--session-len", str(max_model_len)]
            if gpu_util and weights_fraction is not None:
                kv = (gpu_util - weights_fraction) / max(1e-6, 1 - weights_fraction)
                a += ["--cache-max-entry-count", f"{min(0.95, max(0.05, kv)):.3f}"]
            if adapter:  # adapters run on the PyTorch backend only
                a += ["--backend", "pytorch", "--adapters", f"{served_name}={adapter['path']}"]
        for k, v in FORMAT_FLAGS[engine].get(fmt, {}).items():
            a += [k, v]
        served = served_name
    if trust_remote_code:
        a.append("--trust-remote-code")
    check_argv(engine, a)
    return Launch(engine, a, served, KEY_FLAG.get(engine) if api_key else None)


# ---- finding an installed engine -------------------------------------------------------------------------------

@dataclass
class Installed:
    engine: str
    python: str       # the interpreter of the engine's environment
    version: str
    where: str        # "envs" (YICHUI envs), "main" (yichui's own environment) or "path"


def _version(python: str, engine: str) -> str | None:
    try:
        out = subprocess.run([python, "-c", f"import importlib.metadata as m; print(m.version({engine!r}))"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def env_path(envs: Path, engine: str) -> Path:
    """Where yichui looks for a GPU engine's own environment: ``<envs>/<engine>-<pinned version>``."""
    return envs / f"{engine}-{PINNED[engine]}"


@functools.lru_cache(maxsize=None)
def find(engine: str, envs: Path) -> Installed | None:
    """The engine's environment: ``<envs>/<engine>-<version>/bin/python``, else yichui's own interpreter, else the
    interpreter of the engine's console script on PATH (its shebang). None when the engine is nowhere."""
    if engine == "transformers":
        return Installed(engine, sys.executable, _version(sys.executable, engine) or "?", "main")
    candidates = [(str(env_path(envs, engine) / "bin" / "python"), "envs"), (sys.executable, "main")]
    exe = shutil.which({"sglang": "sglang"}.get(engine, engine))
    if exe:
        try:
            first = Path(exe).read_text(errors="replace").splitlines()[0]
            if first.startswith("#!"):
                candidates.append((first[2:].strip().split()[0], "path"))
        except (OSError, IndexError):
            pass
    for python, where in candidates:
        if Path(python).exists() and (v := _version(python, engine)):
            return Installed(engine, python, v, where)
    return None


def install_hint(engine: str, envs: Path) -> str:
    env = env_path(envs, engine)
    return f"python -m venv {env} && {env}/bin/pip install {engine}=={PINNED[engine]}"


def argv_for(inst: Installed, launch: Launch, key_file: Path | None = None) -> list[str]:
    """The process argv: the engine's entry point in its own interpreter (through the key launcher when a key is
    used), then the launch prefix and args. ``transformers`` runs its console script beside yichui's interpreter."""
    tail = PREFIX[inst.engine] + launch.args
    if inst.engine == "transformers":
        return [str(Path(inst.python).parent / "transformers"), *tail]
    head = [inst.python, str(LAUNCHER), "--entry", ENTRY[inst.engine]]
    if launch.key_flag:
        head += ["--key-file", str(key_file), "--key-flag", launch.key_flag]
    return head + ["--", *tail]


def help_text(inst: Installed, timeout: float = 300) -> str:
    """The engine's own ``--help`` for its launch command (``vllm serve --help=all``, …)."""
    if inst.engine == "transformers":
        argv = [str(Path(inst.python).parent / "transformers"), *PREFIX["transformers"], *HELP["transformers"]]
    else:
        argv = [inst.python, str(LAUNCHER), "--entry", ENTRY[inst.engine], "--", *PREFIX[inst.engine],
                *HELP[inst.engine]]
    env = dict(os.environ, COLUMNS="400", TERM="dumb", NO_COLOR="1")
    out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    return out.stdout + out.stderr


FLAG_RE = re.compile(r"(?<![\w-])(--[A-Za-z0-9][\w.-]*)")


def check_help(inst: Installed, launch: Launch, text: str | None = None) -> None:
    """Every flag of the launch (and the key flag) appears in the installed engine's ``--help``.

    Raises:
        EngineError("deploy.flag_not_in_help"): naming the flag, the installed version and the table's version.
    """
    listed = set(FLAG_RE.findall(text if text is not None else help_text(inst)))
    used = [x.partition("=")[0] for x in launch.args if x.startswith("--")] + ([launch.key_flag] if launch.key_flag else [])
    for flag in used:
        if flag not in listed:
            raise EngineError("deploy.flag_not_in_help", engine=inst.engine, flag=flag, installed=inst.version,
                              pinned=PINNED[inst.engine])
