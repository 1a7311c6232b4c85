"""Serving engines: find the installed one, read its options, build its launch, check it before it starts.

A launch is built from three things: the engine's :class:`~recipes.serving.spec.EngineSpec` (which setting is which
option, which formats it loads), the *argument table* of the installed version, and the session's answers.

The table is every option the version's launch command accepts, read from the engine's own parser by
:mod:`recipes.serving.dump`: the committed one (``tables/<engine>-<version>.json``) when the installed version has
one, else read at launch from the installed engine itself (:func:`table_for`: the dump module runs in the engine's
interpreter; cached under ``YICHUI_HOME/cache/engine_tables``). :func:`check_argv` refuses an option the table lacks
or a value of the wrong kind before anything starts; :func:`check_help` runs the installed engine's own ``--help``.

The API key never appears in a command line (``ps`` shows those to every user) nor in the session: the GPU engines
start through :mod:`recipes.serving.launcher`, which reads it from a 0600 file, appends it to the engine's own
``sys.argv`` inside the process, and removes it from everything the engine prints.
"""
from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from recipes.base import StepError
from recipes.jobs import foreign_env
from recipes.serving import spec as specs
from recipes.serving.spec import EngineSpec

TABLES = Path(__file__).with_name("tables")
LAUNCHER = Path(__file__).with_name("launcher.py")
DUMP = Path(__file__).with_name("dump.py")
DUMP_TIMEOUT_S = 300  # building vLLM's parser imports much of vLLM (~20 s on 2 CPU cores)


class EngineError(StepError):
    """A launch that cannot work: engine missing, option unknown to its version, value of the wrong kind."""


def tables_dir() -> Path:
    """The committed tables; ``YICHUI_ENGINE_TABLES`` replaces the folder (a test hides a version's table so)."""
    return Path(os.environ.get("YICHUI_ENGINE_TABLES") or TABLES)


def _problem(tab) -> str | None:
    """What makes ``tab`` not an argument table (the keys the launch reads), or None."""
    if not isinstance(tab, dict):
        return "not a JSON object"
    for key, kind in (("engine", str), ("version", str), ("flags", dict), ("positional", list)):
        if not isinstance(tab.get(key), kind):
            return f"no {key!r} ({kind.__name__})"
    for flag, spec in tab["flags"].items():
        if not (flag.startswith("-") and isinstance(spec, dict) and isinstance(spec.get("kind"), str)
                and "nargs" in spec and isinstance(spec.get("choices"), (list, type(None)))):
            return f"option {flag!r} lacks its kind, nargs or choices"
    return None


@functools.lru_cache(maxsize=None)
def _read(path: str) -> dict:
    """The table in ``path``. Raises EngineError("serving.bad_table") naming the file and what is wrong."""
    try:
        tab = json.loads(Path(path).read_text())
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise EngineError("serving.bad_table", path=path, why=f"{type(e).__name__}: {e}"[:200]) from None
    why = _problem(tab)
    if why:
        raise EngineError("serving.bad_table", path=path, why=why)
    return tab


def committed(engine: str, version: str) -> dict | None:
    """The committed table of ``engine`` at ``version`` (``origin`` "committed"), or None.

    A table is ``{"engine", "version", "source", "flags": {"--opt": {"dest", "kind", "nargs", "choices",
    "default", "aliases"}}, "positional"}``; ``kind`` is int | float | str | json | bool | flag (no value) |
    switch (--x/--no-x) | other:NAME.

    Raises:
        EngineError("serving.bad_table"): the file is there but is no table (names the file and the fault).
    """
    path = tables_dir() / f"{engine}-{version}.json"
    return _read(str(path)) | {"origin": "committed", "path": str(path)} if path.is_file() else None


def table(engine: str, version: str | None = None) -> dict:
    """The committed table of ``engine`` at ``version`` (default: the recommended version's).

    Raises:
        EngineError("serving.no_table"): no committed table for that version.
    """
    version = version or specs.recommended(engine).version
    tab = committed(engine, version)
    if tab is None:
        raise EngineError("serving.no_table", engine=engine, version=version, tested=tested(engine), last="-")
    return tab


def tested(engine: str) -> str:
    return ", ".join(s.version for s in specs.SPECS[engine])


# ---- finding an installed engine -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Installed:
    engine: str
    python: str       # the interpreter of the engine's environment
    version: str
    where: str        # "envs" (yichui's envs folder), "main" (yichui's own environment) or "path"

    @property
    def spec(self) -> EngineSpec:
        return specs.spec(self.engine, self.version)


def _version(python: str, engine: str) -> str | None:
    try:
        out = subprocess.run([python, "-c", f"import importlib.metadata as m; print(m.version({engine!r}))"],
                             capture_output=True, text=True, timeout=60, env=foreign_env())
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def env_path(envs: Path, engine: str) -> Path:
    """Where yichui puts a GPU engine's own environment: ``<envs>/<engine>-<recommended version>``."""
    return envs / f"{engine}-{specs.recommended(engine).version}"


@functools.lru_cache(maxsize=None)
def find(engine: str, envs: Path) -> Installed | None:
    """The engine's environment: ``<envs>/<engine>-<version>/bin/python`` (newest version first), else yichui's own
    interpreter, else the interpreter of the engine's console script on PATH (its shebang). None when nowhere."""
    if engine == "transformers":
        return Installed(engine, sys.executable, _version(sys.executable, engine) or "?", "main")
    prefix = engine + "-"
    dirs = [d for d in (envs.iterdir() if envs.is_dir() else []) if d.name.startswith(prefix)]
    dirs.sort(key=lambda d: specs.version_key(d.name[len(prefix):]), reverse=True)
    candidates = [(str(d / "bin" / "python"), "envs") for d in dirs] + [(sys.executable, "main")]
    exe = shutil.which(specs.SPECS[engine][0].console)
    if exe:
        try:
            first = Path(exe).read_text(errors="replace").splitlines()[0]
            if first.startswith("#!"):
                candidates.append((first[2:].strip().split()[0], "path"))
        except (OSError, IndexError, UnicodeDecodeError):
            pass
    for python, where in candidates:
        if Path(python).exists() and (v := _version(python, engine)):
            return Installed(engine, python, v, where)
    return None


def install_hint(engine: str, envs: Path) -> str:
    rec = specs.recommended(engine)
    if not rec.gpu:
        return f"pip install '{rec.install}'"
    import shlex
    import sys

    env = shlex.quote(str(env_path(envs, engine)))  # made by this interpreter (a bare `python` may be absent or 2.x)
    return f"{shlex.quote(sys.executable)} -m venv {env} && {env}/bin/pip install '{rec.install}'"


def table_for(inst: Installed, cache: Path) -> dict:
    """The argument table of the installed version: the committed one, else the one read from the installed engine's
    own parser (cached in ``cache/<engine>-<version>.json``; ``origin`` "parser").

    Raises:
        EngineError("serving.no_table"): no committed table and the engine's parser could not be read (the message
            names the tested versions and the dump's last line).
    """
    tab = committed(inst.engine, inst.version)
    if tab is not None:
        return tab
    path = cache / f"{inst.engine}-{inst.version}.json"
    for attempt in (0, 1):
        if not path.is_file():
            _dump(inst, path)
        try:
            return _read(str(path)) | {"origin": "parser", "path": str(path)}
        except EngineError:
            _read.cache_clear()
            if attempt:
                raise
            try:
                path.unlink()  # a damaged cache entry is read again from the engine, once
            except OSError:
                raise EngineError("serving.bad_table", path=str(path), why="cannot be replaced") from None
    raise AssertionError("unreachable")


def _dump(inst: Installed, path: Path) -> None:
    """Write the installed engine's table to ``path`` with dump.py in the engine's own interpreter.

    Raises:
        EngineError("serving.no_table"): the dump failed (its last line is in the message).
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise EngineError("serving.no_table", engine=inst.engine, version=inst.version, tested=tested(inst.engine),
                          last=f"{path.parent}: {type(e).__name__}") from None
    log = path.with_suffix(".log")
    env = foreign_env() | {"PYTHONUNBUFFERED": "1"}
    try:
        with open(log, "w") as f:
            rc = subprocess.run([inst.python, str(DUMP), inst.engine, "--out", str(path)], stdout=f,
                                stderr=subprocess.STDOUT, timeout=DUMP_TIMEOUT_S, env=env).returncode
    except (OSError, subprocess.TimeoutExpired) as e:
        rc = 1
        try:
            log.write_text(str(e))
        except OSError:
            pass
    if rc or not path.is_file():
        try:
            lines = [x for x in log.read_text(errors="replace").splitlines() if x.strip()]
        except OSError:
            lines = []
        raise EngineError("serving.no_table", engine=inst.engine, version=inst.version, tested=tested(inst.engine),
                          last=(lines[-1] if lines else "?")[-200:])


# ---- options and values ------------------------------------------------------------------------------------------

def option(spec: EngineSpec, tab: dict, setting: str) -> str | None:
    """The option this version spells ``setting`` with: the first of the spec's names that its table lists."""
    return next((o for o in spec.options.get(setting, ()) if o in tab["flags"]), None)


def _value_ok(flag: dict, value: str) -> bool:
    kind = flag["kind"]
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
    return flag["choices"] is None or value in [str(c) for c in flag["choices"]]


def check_argv(tab: dict, args: list[str]) -> None:
    """Every option of ``args`` (the argv after the launch prefix) is in ``tab``, with values of its kind.

    Raises:
        EngineError("serving.flag_unknown" | "serving.flag_value" | "serving.flag_arity"): naming the option.
    """
    engine, flags, i, positional = tab["engine"], tab["flags"], 0, 0
    while i < len(args):
        opt = args[i]
        if not opt.startswith("-"):
            positional += 1
            if positional > len(tab["positional"]):
                raise EngineError("serving.flag_unknown", engine=engine, version=tab["version"], flag=opt)
            i += 1
            continue
        name, eq, inline = opt.partition("=")
        spec = flags.get(name)
        if spec is None:
            raise EngineError("serving.flag_unknown", engine=engine, version=tab["version"], flag=name)
        if spec["kind"] in ("flag", "switch"):
            if eq:
                raise EngineError("serving.flag_arity", engine=engine, flag=name, n=0)
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
            raise EngineError("serving.flag_arity", engine=engine, flag=name, n=want or 1)
        for v in values:
            if not _value_ok(spec, v):
                raise EngineError("serving.flag_value", engine=engine, version=tab["version"], flag=name, value=v,
                                  kind=spec["kind"], choices=", ".join(map(str, spec["choices"] or [])) or "-")
        i = j if not eq else i + 1


def loads(spec: EngineSpec, tab: dict) -> tuple[str, ...]:
    """The export formats ``spec``'s engine loads at ``tab``'s version: those of the spec whose settings and values
    the table takes ("merged" first)."""
    out = []
    for fmt, settings in spec.formats.items():
        opts = [(option(spec, tab, s), v) for s, v in settings.items()]
        if all(o is not None and _value_ok(tab["flags"][o], v) for o, v in opts):
            out.append(fmt)
    return tuple(out)


def formats(engine: str, inst: Installed | None = None, cache: Path | None = None) -> tuple[str, ...]:
    """The export formats ``engine`` loads: at the installed version when ``inst`` is given (its committed table,
    else the one read from its own parser into ``cache``, else that of the nearest version yichui knows), else at
    the recommended version."""
    spec = inst.spec if inst else specs.recommended(engine)
    tab = committed(engine, inst.version) if inst else None
    if tab is None and inst is not None and cache is not None:
        try:
            tab = table_for(inst, cache)
        except EngineError:  # the launch says so, with the reason; here the spec's own version answers
            tab = None
    tab = tab or committed(engine, spec.version)
    return loads(spec, tab) if tab else tuple(spec.formats)


def cache_dir(home: Path) -> Path:
    """Where tables read from installed engines, and their --help, are kept: ``YICHUI_HOME/cache/engine_tables``."""
    return Path(home) / "cache" / "engine_tables"


def lora_rank(spec: EngineSpec, tab: dict, rank: int) -> int:
    """The maximum LoRA rank to pass: the adapter's rank, raised to the next value the version's table allows
    (vLLM takes 1, 8, 16, 32, …).

    Raises:
        EngineError("serving.lora_rank_too_big"): the adapter's rank is above every allowed value.
    """
    opt = option(spec, tab, "max_lora_rank")
    choices = sorted(int(c) for c in (tab["flags"][opt]["choices"] or [])) if opt else []
    if not choices:
        return rank
    bigger = [c for c in choices if c >= rank]
    if not bigger:
        raise EngineError("serving.lora_rank_too_big", engine=spec.engine, rank=rank, most=choices[-1])
    return bigger[0]


def split_args(text: str | None) -> list[str]:
    """The user's extra engine options (the deploy step's ``engine_args``), split as a shell would.

    Raises:
        ValueError: unbalanced quotes.
    """
    import shlex

    return shlex.split(text or "")


def owned_option(spec: EngineSpec, args: list[str]) -> str | None:
    """The first option of ``args`` that yichui sets itself from the session (host, port, memory, the API key, …):
    given twice, the engine would take one of them silently; the key would reach the command line."""
    owned = {o for names in spec.options.values() for o in names}
    return next((a.partition("=")[0] for a in args if a.partition("=")[0] in owned), None)


def check_extra(spec: EngineSpec, tab: dict | None, args: list[str]) -> None:
    """The user's extra options: none that yichui sets (:func:`owned_option`), and, with ``tab``, each one the
    version has, with values of its kind.

    Raises:
        EngineError("serving.engine_args_owned" | "serving.engine_args_unknown" | "serving.flag_value" |
            "serving.flag_arity").
    """
    owned = owned_option(spec, list(args))
    if owned:
        raise EngineError("serving.engine_args_owned", flag=owned)
    if tab is None:
        return
    try:
        check_argv(tab, ["x"] * len(tab["positional"]) + list(args))  # placeholders for the positional arguments
    except EngineError as e:  # an option of the user's own, not a fault of yichui's table
        if e.msg.key == "serving.flag_unknown":
            raise EngineError("serving.engine_args_unknown", **e.msg.args) from None
        raise


@dataclass
class Launch:
    """What :func:`command` produces. ``args`` go after the engine's launch prefix; no secret is in them."""

    engine: str
    version: str
    args: list[str]
    served_model: str          # the name chat requests use
    key_flag: str | None = None
    listed_name: str = ""      # the name /v1/models lists (when it is not served_model: SGLang's adapters)

    def __post_init__(self):
        self.listed_name = self.listed_name or self.served_model


def command(spec: EngineSpec, tab: dict, *, model_dir: str, fmt: str, served_name: str, host: str, port: int,
            chat_template: str | None = None, max_model_len: int | None = None, gpu_util: float | None = None,
            tensor_parallel: int = 1, adapter: dict | None = None, api_key: bool = False, device: str = "cpu",
            weights_fraction: float | None = None, trust_remote_code: bool = False,
            eager: bool = False, extra: list[str] | tuple[str, ...] = ()) -> Launch:
    """The launch of ``spec``'s engine for a session, in the options of ``tab``'s version, checked against it.

    Args:
        model_dir: the directory to serve (merged model, an export, or the base model when ``adapter`` is set).
        fmt: "merged" or an export format the engine loads (:func:`formats`).
        served_name: the model name clients ask for (the adapter's name when ``adapter`` is set).
        max_model_len: longest context in tokens (from :func:`recipes.memory.model.serving`'s KV-cache budget).
        gpu_util: fraction of each GPU's memory the engine may take (weights + KV cache + activations).
        weights_fraction: weights / GPU memory, for an engine whose fraction counts what the weights leave
            (LMDeploy: :func:`recipes.memory.model.after_weights_fraction`).
        adapter: ``{"path", "rank"}`` to serve a LoRA adapter unmerged on top of ``model_dir``.
        api_key: the engine is started through the key launcher, which appends the key option and the key.
        eager: no CUDA graph capture or compilation (a start minutes shorter; slower decoding).
        trust_remote_code: the user's recorded yes to the model's own code.
        extra: the user's own options for the engine (:func:`split_args`), appended; none that yichui sets.

    Raises:
        EngineError: a format, setting or value the version does not take ("serving.format_unsupported",
            "serving.loopback_only", "serving.no_lora", "serving.setting_unsupported", "serving.engine_args_owned", or
            check_argv's).
    """
    engine = spec.engine
    loaded = loads(spec, tab)
    if fmt not in loaded:
        raise EngineError("serving.format_unsupported", engine=engine, format=fmt, formats=list(loaded))
    if api_key and spec.loopback_only:
        raise EngineError("serving.loopback_only", host=host)
    if adapter and not spec.lora:
        raise EngineError("serving.no_lora", engine=engine)
    settings: dict[str, str | bool | list[str]] = {
        "host": host, "port": str(port), "device": device, "tensor_parallel": str(tensor_parallel),
        "served_name": served_name if adapter is None else served_name + "-base"}
    if max_model_len:
        settings["max_model_len"] = str(max_model_len)
    if gpu_util and spec.utilization == "total":
        settings["gpu_memory_utilization"] = f"{gpu_util:g}"
    elif gpu_util and weights_fraction is not None:
        from recipes.memory import model as memory

        settings["gpu_memory_utilization"] = f"{memory.after_weights_fraction(gpu_util, weights_fraction):.3f}"
    if chat_template:
        settings["chat_template"] = chat_template
    if eager:
        settings["eager"] = True
    if adapter:
        settings |= {"lora_modules": [f"{served_name}={adapter['path']}"], "enable_lora": True,
                     "max_lora_rank": str(lora_rank(spec, tab, adapter["rank"]))}
    if trust_remote_code:
        settings["trust_remote_code"] = True
    settings |= dict(spec.formats[fmt]) | dict(spec.fixed)
    args = [model_dir] if spec.model_option is None else [spec.model_option, model_dir]
    for setting, value in settings.items():
        if setting not in spec.options:
            continue  # a setting this engine has no notion of (transformers: context length, tensor parallelism)
        opt = option(spec, tab, setting)
        if opt is None:
            raise EngineError("serving.setting_unsupported", engine=engine, version=tab["version"], setting=setting,
                              path=tab.get("path", "?"))
        if value is True:
            args.append(opt)
        elif isinstance(value, list):
            args += [opt, *value]
        else:
            args += [opt, value]
    check_extra(spec, tab, extra)
    args += list(extra)
    key_flag = None
    if api_key:
        key_flag = option(spec, tab, "api_key")
        if key_flag is None:
            raise EngineError("serving.setting_unsupported", engine=engine, version=tab["version"], setting="api_key",
                              path=tab.get("path", "?"))
    check_argv(tab, args)
    if spec.served_by_path:
        return Launch(engine, tab["version"], args, model_dir, key_flag)
    request = spec.adapter_request.format(base=served_name + "-base", adapter=served_name) if adapter else served_name
    return Launch(engine, tab["version"], args, request, key_flag, listed_name=served_name)


# ---- starting it -------------------------------------------------------------------------------------------------

def argv_for(inst: Installed, launch: Launch, key_file: Path | None = None) -> list[str]:
    """The process argv: the engine's entry point in its own interpreter through the launcher (which takes the key
    from ``key_file`` and keeps it out of the engine's output), then the launch prefix and args. An engine without
    an entry point (transformers) runs its console script beside yichui's interpreter."""
    spec = inst.spec
    tail = list(spec.prefix) + launch.args
    if spec.entry is None:
        return [str(Path(inst.python).parent / spec.console), *tail]
    head = [inst.python, str(LAUNCHER), "--entry", spec.entry]
    if launch.key_flag:
        head += ["--key-file", str(key_file), "--key-flag", launch.key_flag]
    return head + ["--", *tail]


# the compile and kernel caches of a serving engine (issue 48: vLLM's first start spent 121 of 163 s building
# kernels on an H200, bench/results/2026-12-01-serve-h200-round4.md): vLLM's torch.compile cache, Triton's and
# Inductor's kernels, FlashInfer's JIT builds — each variable the library's own
KERNEL_CACHES = {"VLLM_CACHE_ROOT": "vllm", "TRITON_CACHE_DIR": "triton", "TORCHINDUCTOR_CACHE_DIR": "inductor",
                 "FLASHINFER_WORKSPACE_BASE": "flashinfer"}


def kernel_cache_env(inst: Installed, home: Path) -> dict[str, str]:
    """The engine's compile and kernel caches under ``YICHUI_HOME/cache/kernels/<engine>-<version>/``: kept with yichui's
    home (often the one volume a rented box keeps) and shared by every session, so a second deploy of a model of the
    same shape on the same engine finds its kernels built; one folder per engine version (a cache of another version
    is not theirs to read)."""
    root = Path(home) / "cache" / "kernels" / f"{inst.engine}-{inst.version}"
    return {var: str(root / sub) for var, sub in KERNEL_CACHES.items()}


def process_env(inst: Installed, home: Path | None = None) -> dict:
    """The environment an engine starts in: an engine in its own interpreter does not see yichui's PYTHONPATH; no
    engine sees a hub token (it serves a folder on disk and never needs one; a server's environment is readable by
    whatever it runs — /proc/PID/environ). With ``home``: its kernel caches there (:func:`kernel_cache_env`), unless
    the user's environment names its own."""
    from recipes.hub.client import TOKEN_ENV

    env = dict(os.environ) if inst.where == "main" else foreign_env()
    if home is not None:
        env = kernel_cache_env(inst, home) | env
    return {k: v for k, v in env.items() if k not in (*TOKEN_ENV.values(), "HUGGING_FACE_HUB_TOKEN")}


def help_text(inst: Installed, timeout: float = 300, cache: Path | None = None, fresh: bool = False) -> str:
    """The engine's own ``--help`` for its launch command (``vllm serve --help=all``, …). With ``cache``, kept in
    ``cache/<engine>-<version>.help.txt`` once read (``fresh``: read again): printing it imports the engine (vLLM:
    ~15 s of every start on an H200), and an installed version's options do not change. A cache that cannot be
    read or written is left aside."""
    path = cache / f"{inst.engine}-{inst.version}.help.txt" if cache else None
    if path is not None and not fresh:
        try:
            return path.read_text(errors="replace")
        except OSError:  # absent, or not a file
            pass
    argv = argv_for(inst, Launch(inst.engine, inst.version, list(inst.spec.help), ""))
    env = process_env(inst) | {"COLUMNS": "400", "TERM": "dumb", "NO_COLOR": "1"}
    out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    text = out.stdout + out.stderr
    if path is not None and out.returncode == 0 and FLAG_RE.search(text):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(text)
            os.replace(tmp, path)
        except OSError:
            pass
    return text


FLAG_RE = re.compile(r"(?<![\w-])(--?[A-Za-z0-9][\w.-]*)")


def check_help(inst: Installed, launch: Launch, text: str | None = None, cache: Path | None = None) -> None:
    """Every option of the launch (and the key option) appears in the installed engine's ``--help``
    (:func:`help_text`, cached in ``cache`` when given; a cached text that lacks one is read again first).

    Raises:
        EngineError("serving.flag_not_in_help"): naming the option, the installed version and the table's version.
    """
    used = [x.partition("=")[0] for x in launch.args if x.startswith("--")] + ([launch.key_flag] if launch.key_flag else [])

    def missing(t: str) -> str | None:
        listed = set(FLAG_RE.findall(t))
        return next((f for f in used if f not in listed), None)

    flag = missing(text if text is not None else help_text(inst, cache=cache))
    if flag and text is None and cache is not None:
        flag = missing(help_text(inst, cache=cache, fresh=True))  # the cached help may be damaged
    if flag:
        raise EngineError("serving.flag_not_in_help", engine=inst.engine, flag=flag, installed=inst.version,
                          pinned=launch.version)
