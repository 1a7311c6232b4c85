"""Entry point that dumps a serving engine's own command-line parser to the argument table yichui builds launches
from.

Run with the Python of an environment where the engine is installed (its wheel is enough; the parser is built, no
server starts and no GPU is needed)::

    ENV/bin/python recipes/serving/dump.py vllm --out recipes/serving/tables/vllm-0.26.0.json

Without ``--out`` the table goes to stdout (engines log to stdout while they import: use ``--out``). The deploy step
runs this module the same way, in the installed engine's interpreter, when no committed table matches the installed
version (:func:`recipes.serving.engines.table_for`).

Standard library only (besides the engine): it must run in the engine's environment, not yichui's. For each engine
the parser is the one its launch command builds (vLLM: ``vllm serve``; SGLang: ``python -m sglang.launch_server``;
LMDeploy: ``lmdeploy serve api_server``; transformers: ``transformers serve``). Each option is written with its
aliases, its value kind (probed by calling the parser's own ``type`` function), choices, ``nargs`` and default.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys

PROBES = ("7", "0.5", "abc", '{"a": 1}')


def _try(fn, value):
    try:
        return True, fn(value)
    except Exception:  # any refusal by the engine's type function means "not this kind"
        return False, None


def value_kind(type_fn) -> str:
    """int | float | str | json | bool | other:<name>: what values the option's ``type`` callable accepts."""
    if type_fn is None or type_fn is str:
        return "str"
    if type_fn in (int, float):
        return type_fn.__name__
    (ok7, v7), (ok05, v05), (okabc, _), (okjs, vjs) = (_try(type_fn, p) for p in PROBES)
    if okjs and isinstance(vjs, dict) and not okabc:
        return "json"
    if ok7 and isinstance(v7, bool):
        return "bool"
    if ok7 and isinstance(v7, int) and not ok05:
        return "int"
    if ok05 and isinstance(v05, float):
        return "float"
    if okabc:
        return "str"
    return "other:" + getattr(type_fn, "__name__", type(type_fn).__name__)


def _default(value):
    try:
        json.dumps(value)
        return value
    except TypeError:
        return repr(value)


def table(parser: argparse.ArgumentParser) -> dict:
    flags, positional = {}, []
    for a in parser._actions:
        if isinstance(a, (argparse._HelpAction, argparse._VersionAction)):
            continue
        if not a.option_strings:
            positional.append({"dest": a.dest, "nargs": a.nargs})
            continue
        if isinstance(a, argparse.BooleanOptionalAction):
            kind = "switch"  # --x / --no-x
        elif a.nargs == 0:
            kind = "flag"    # store_true, store_false, store_const, count
        else:
            kind = value_kind(a.type)
        entry = {"dest": a.dest, "kind": kind, "nargs": a.nargs,
                 "choices": [_default(c) for c in a.choices] if a.choices is not None else None,
                 "default": _default(a.default), "aliases": list(a.option_strings)}
        for opt in a.option_strings:
            flags[opt] = entry
    return {"flags": dict(sorted(flags.items())), "positional": positional}


def click_table(command) -> dict:
    """The same table from a typer command (``transformers serve``): kinds from each parameter's annotation."""
    import enum
    import typing

    flags, positional = {}, []
    for p in command.params:
        if p.param_type_name == "argument":
            positional.append({"dest": p.name, "nargs": p.nargs})
            continue
        ann = p.type_descriptor.annotation
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        if typing.get_origin(ann) is typing.Union and len(args) == 1:
            ann = args[0]  # Optional[X]
        choices = None
        if isinstance(ann, type) and issubclass(ann, enum.Enum):
            kind, choices = "str", [m.value for m in ann]
        elif typing.get_origin(ann) is typing.Literal:
            kind, choices = "str", list(typing.get_args(ann))
        elif getattr(p, "is_flag", False):
            kind = "switch" if p.secondary_opts else "flag"
        else:
            kind = {int: "int", float: "float", str: "str"}.get(ann, "other:" + str(ann))
        names = list(p.opts) + list(p.secondary_opts)
        entry = {"dest": p.name, "kind": kind, "nargs": None if p.nargs == 1 else p.nargs, "choices": choices,
                 "default": _default(p.default.value if isinstance(p.default, enum.Enum) else p.default),
                 "aliases": names}
        for opt in names:
            flags[opt] = entry
    return {"flags": dict(sorted(flags.items())), "positional": positional}


def build(engine: str) -> tuple[dict, str]:
    if engine == "vllm":
        import vllm.platforms as platforms

        if platforms.resolve_current_platform_cls_qualname().endswith("UnspecifiedPlatform"):
            # no GPU here (and a CUDA build): vLLM's config defaults need a platform; the options do not depend on it
            from vllm.platforms.cpu import CpuPlatform

            platforms.current_platform = CpuPlatform()
        from vllm.entrypoints.cli.serve import ServeSubcommand
        from vllm.utils.argparse_utils import FlexibleArgumentParser

        top = FlexibleArgumentParser(prog="vllm")
        sub = top.add_subparsers()
        tab = table(ServeSubcommand().subparser_init(sub))
        # --quantization is checked after parsing, against this list (vllm/config/model.py)
        from vllm.model_executor.layers.quantization import QUANTIZATION_METHODS

        tab["flags"]["--quantization"]["choices"] = sorted(QUANTIZATION_METHODS)
        return tab, ("vllm.entrypoints.cli.serve.ServeSubcommand.subparser_init; --quantization choices from "
                     "vllm.model_executor.layers.quantization.QUANTIZATION_METHODS")
    if engine == "sglang":
        from sglang.srt.server_args import ServerArgs

        p = argparse.ArgumentParser(prog="sglang.launch_server")
        ServerArgs.add_cli_args(p)
        return table(p), "sglang.srt.server_args.ServerArgs.add_cli_args"
    if engine == "lmdeploy":
        from lmdeploy.cli.serve import SubCliServe

        SubCliServe.add_parser_api_server()
        return (table(SubCliServe.subparsers.choices["api_server"]),
                "lmdeploy.cli.serve.SubCliServe.add_parser_api_server")
    if engine == "transformers":
        import typer
        from transformers.cli.serve import Serve

        app = typer.Typer()  # the command exactly as transformers.cli.transformers registers it
        app.command(name="serve")(Serve)
        return click_table(typer.main.get_command(app)), "transformers.cli.serve.Serve (typer command)"
    raise SystemExit(f"unknown engine {engine!r}: vllm, sglang, lmdeploy or transformers")


def main(argv: list[str]) -> None:
    engine = argv[0]
    out = argv[argv.index("--out") + 1] if "--out" in argv else None
    tab, source = build(engine)
    text = json.dumps({"engine": engine, "version": importlib.metadata.version(engine), "source": source,
                       "python": sys.version.split()[0], **tab}, indent=1, sort_keys=False) + "\n"
    if out is None:
        sys.stdout.write(text)
        return
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    import os

    os.replace(tmp, out)  # a reader never sees half a table


if __name__ == "__main__":
    main(sys.argv[1:])
