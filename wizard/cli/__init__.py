"""yichui's command line (typer); the command table is wizard/README.md's. One module per command group:

- sessions.py: run (the default), demo, resume, replay, steps, show
- jobs.py: attach, status, stop (a session's background trainer and server)
- serving.py: serve start|status|logs|stop, chat
- tools.py: doctor, estimate, download (no session needed)
- common.py: the typer app and what the groups share (messages, failures, reading and running sessions)

The groups define the commands' functions; this module wires them to their names and help (COMMANDS), in one place.

Exit status: 0 done · 1 a step failed · 2 bad input (arguments, answers, session file) · 130 interrupted.
Imports stay light: torch and transformers load inside the steps that need them.
"""
from __future__ import annotations

import os
import sys

from wizard import i18n

# the language is known before any help text is built (the command modules build theirs on import)
i18n.set_lang(i18n.detect_lang(sys.argv[1:]))
# quiet libraries: yichui draws its own progress; their logs go to the session log
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("HF_HUB_VERBOSITY", "error")  # retries are summed up in one line by recipes.hub
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")

from wizard.cli import jobs, serving, sessions, tools  # noqa: E402,I001
from wizard.cli.common import T, app, new_ui  # noqa: E402

# every command, wired here and only here, in the order `yichui --help` lists them (issue 45: they registered by
# import side effect): (name, function, help key, example key or None)
COMMANDS = (
    ("run", sessions.run, "cli.run", "cli.example.run"),
    ("demo", sessions.demo, "cli.demo", "cli.example.demo"),
    ("resume", sessions.resume, "cli.resume", "cli.example.resume"),
    ("replay", sessions.replay, "cli.replay", "cli.example.replay"),
    ("steps", sessions.steps, "cli.steps", "cli.example.steps"),
    ("delete", sessions.delete, "cli.delete", "cli.example.delete"),
    ("show", sessions.show, "cli.show", "cli.example.show"),
    ("doctor", tools.doctor, "cli.doctor", "cli.example.doctor"),
    ("estimate", tools.estimate, "cli.estimate", "cli.example.estimate"),
    ("download", tools.download, "cli.download", "cli.example.download"),
    ("attach", jobs.attach, "cli.attach", "cli.example.attach"),
    ("status", jobs.status, "cli.status", "cli.example.status"),
    ("stop", jobs.stop, "cli.stop", "cli.example.stop"),
)
SERVE_COMMANDS = (  # `yichui serve …`
    ("start", serving.serve_start, "cli.serve.start", None),
    ("status", serving.serve_status, "cli.serve.status", None),
    ("logs", serving.serve_logs, "cli.serve.logs", None),
    ("stop", serving.serve_stop, "cli.serve.stop", "cli.example.serve_stop"),
)
app.callback(invoke_without_command=True)(sessions.main_callback)
for _name, _fn, _help, _example in COMMANDS:
    app.command(_name, help=T(_help), epilog=T(_example) if _example else None)(_fn)
for _sub, _sfn, _shelp, _sexample in SERVE_COMMANDS:
    serving.serve_app.command(_sub, help=T(_shelp), epilog=T(_sexample) if _sexample else None)(_sfn)
app.add_typer(serving.serve_app, name="serve")
app.command("chat", help=T("cli.chat"), epilog=T("cli.example.chat"))(serving.chat)

__all__ = ["app", "main"]


def _as_interrupt(signum, frame):
    raise KeyboardInterrupt  # SIGTERM / SIGHUP (a closed terminal): saved and resumable, like Ctrl-C


def _lang_first(argv: list[str]) -> list[str]:
    """``--lang X`` / ``--lang=X`` moved to the front, where the command line takes it: users put it after the
    command too (``yichui resume --lang zh``)."""
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] == "--lang" and i + 1 < len(argv):
            front += argv[i:i + 2]
            i += 2
            continue
        (front if argv[i].startswith("--lang=") else rest).append(argv[i])
        i += 1
    return front + rest


# what --help shows in the type column: nothing for a flag, a word for a value (typer's own are Python types:
# <bool>, <list[str]>)
_METAVARS = {int: "N", float: "X", str: "TEXT"}


def _tidy_help(cmd) -> None:
    """Each option's and argument's placeholder in --help, the same in every command (issue 20, item 13)."""
    for param in cmd.params:
        annotation = param.type_descriptor.annotation
        if getattr(param, "is_flag", False):
            param.metavar = ""
        elif param.param_type_name == "argument":
            param.metavar = (param.name or "").upper()
        elif param.name == "set_":
            param.metavar = "STEP.KEY=VALUE"
        elif param.metavar is None and param.type_descriptor.is_list:
            param.metavar = "TEXT"
        elif param.metavar is None and annotation in _METAVARS:
            param.metavar = _METAVARS[annotation]
        elif param.metavar is None and "Path" in str(annotation):
            param.metavar = "PATH"
    for sub in getattr(cmd, "commands", {}).values():
        if sub.help and not sub.short_help:  # the command list shows the whole line, wrapped (click cut it at 45)
            sub.short_help = sub.help.split("\n\n")[0].strip()
        _tidy_help(sub)


def _help_in_language() -> None:
    """typer's own words in --help (its panel titles, "[default: …]", the help option's line) in the language
    spoken, and the help option's placeholder like the others'. typer (0.29) vendors click without gettext, so its
    module constants and the help option's text are set here."""
    import typer._click.core as click_core
    import typer.rich_utils as ru

    get_help_option = click_core.Command.get_help_option

    def help_option(self, ctx):
        opt = get_help_option(self, ctx)
        if opt is not None:
            opt.help, opt.metavar = T("ui.help.help_option"), ""
        return opt

    click_core.Command.get_help_option = help_option
    make_text = ru._make_rich_text

    def folded(*args, **kwargs):  # a line with no space (Chinese) wraps instead of ending in "…" (column default)
        text = make_text(*args, **kwargs)
        if hasattr(text, "overflow"):
            text.overflow = "fold"
        return text

    ru._make_rich_text = folded
    import typer.core

    typer.core.TyperArgument.display_type_rich = lambda self, ctx: None  # SESSION says what it is
    # the usage line as man pages write it: a required argument bare, an optional one in brackets (typer 0.29 puts a
    # required one in braces, "{SESSION}", read as a literal by a newcomer: issue 46 trial K)
    typer.core.TyperArgument._usage_display_name = lambda self: (
        self.display_name_raw if self.required else f"[{self.display_name_raw}]") + ("..." if self.nargs != 1 else "")
    ru.rich_format_error = _usage_error  # a usage mistake in one line, as yichui's own refusals (not typer's box)
    if i18n.get_lang() == "en":
        return
    ru.ARGUMENTS_PANEL_TITLE, ru.OPTIONS_PANEL_TITLE, ru.COMMANDS_PANEL_TITLE = (
        T("ui.help.arguments"), T("ui.help.options"), T("ui.help.commands"))
    ru.DEFAULT_STRING, ru.REQUIRED_LONG_STRING = T("ui.help.default"), T("ui.help.required")
    import typer._click.formatting as cf  # the usage line's "Usage: " (issue 46 trial I, N12: English in zh help)

    write_usage = cf.HelpFormatter.write_usage
    cf.HelpFormatter.write_usage = lambda self, prog, args="", prefix=None: write_usage(
        self, prog, args, T("ui.help.usage") if prefix is None else prefix)


def _usage_error(e) -> None:
    """A command-line mistake click caught (a missing argument, an unknown option, a bad value) in one line on
    stderr, in the language spoken, with the command whose ``-h`` shows its usage; the exit status stays click's 2."""
    import typer._click.exceptions as ce

    if type(e).__name__ == "NoArgsIsHelpError":  # typer's own: the help was printed
        return
    ctx = getattr(e, "ctx", None)
    where = ctx.command_path if ctx is not None else "yichui"
    if isinstance(e, ce.MissingParameter) and e.param is not None:
        what = T("cli.usage.missing", name=(e.param.name or "").upper() if e.param.param_type_name == "argument"
                 else "/".join(e.param.opts))
    elif isinstance(e, ce.NoSuchOption):
        what = T("cli.usage.no_such_option", name=e.option_name) + (
            T("cli.usage.did_you_mean", names=list(e.possibilities)) if e.possibilities else "")
        if where == "yichui" and e.option_name in ("--set", "--yes", "--task", "--from", "-y"):
            # bare `yichui` starts the wizard, but its options belong to `run` (issue 46 trial K, K3)
            what += T("cli.usage.run_option", name=e.option_name)
    else:
        what = e.format_message().rstrip(".")
    new_ui().error(T("cli.usage.error", what=what, command=where))


def typed_command(argv0: str | None = None, path: str | None = None) -> str:
    """How to type this yichui in the user's shell: ``yichui`` when that name on PATH is this program, else the
    path it was started by (``.venv/bin/yichui``, as typed; the README's first command), else ``yichui``."""
    import os
    import shutil

    argv0 = sys.argv[0] if argv0 is None else argv0
    found = shutil.which("yichui", path=path)
    if "/" not in argv0 or os.path.basename(argv0) != "yichui":  # python -m wizard.cli, a test's own launcher
        return "yichui"
    if found and os.path.realpath(found) == os.path.realpath(argv0):
        return "yichui"
    return argv0


def _stdout_id() -> tuple[int, int] | None:
    """What file descriptor 1 is (device, inode): rich's on_broken_pipe points it at /dev/null."""
    try:
        st = os.fstat(1)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _reader_left(stdout_was: tuple[int, int] | None) -> bool:
    """Whether stdout's reader stopped reading (`yichui status | head -1`): rich then points file descriptor 1 at
    /dev/null; where typer met it (print, typer.echo) fd 1 is still the pipe, its reading end closed (poll: POLLERR)."""
    import select

    if _stdout_id() != stdout_was:
        return True
    try:
        poll = select.poll()
        poll.register(1, select.POLLOUT)
        return any(event & select.POLLERR for _, event in poll.poll(0))
    except OSError:
        return False


def main() -> None:
    import signal

    import typer.main

    sys.argv[1:] = _lang_first(sys.argv[1:])
    # the libraries' own tqdm bars (compressed-tensors' "Applying quantization config", transformers' weight loading)
    # broke into yichui's lines (issue 46 item 14); yichui shows its own progress. Read by tqdm when it is imported
    import os

    os.environ.setdefault("TQDM_DISABLE", "1")
    # matplotlib (loss.png, the evaluation's chart) keeps its font cache under YICHUI_HOME, not the user's home
    # (issue 46 trial J: ~/.cache/matplotlib and ~/.config/matplotlib after training); the jobs inherit it
    os.environ.setdefault("MPLCONFIGDIR", os.path.join(os.path.expanduser(os.environ.get("YICHUI_HOME") or "~/.yichui"),
                                                       "cache", "matplotlib"))

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _as_interrupt)
    # Ctrl-C is KeyboardInterrupt even when started by something that ignores SIGINT (a script's `cmd &`: Python
    # leaves an inherited SIG_IGN in place, and Ctrl-C would then do nothing at all)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from wizard.console import sane_columns

    sane_columns()
    command = typer.main.get_command(app)
    i18n.set_command(typed_command(), list(getattr(command, "commands", {})))
    _tidy_help(command)
    _help_in_language()
    stdout_was = _stdout_id()
    try:
        command(prog_name="yichui")
    except SystemExit as e:
        # a reader that stopped early: rich and typer both exit 1 on the broken pipe, as if the command had failed;
        # it did what it was asked (trial U)
        if e.code == 1 and _reader_left(stdout_was):
            sys.exit(0)
        raise
    except OSError as e:  # a read-only or full YICHUI_HOME, a folder given as a file, ...: one line, nothing lost
        from wizard.engine import short_path

        new_ui().error(T("cli.os_error", path=short_path(e.filename or ""), error=e.strerror or str(e)))
        sys.exit(2)
