"""Command-line entry point: argument parsing and exit codes only.

Exit codes: 0 clean, 1 findings at or above the fail level, 2 usage,
configuration or tool error. Each subcommand lives in ``policylint/commands``
and is imported only when it runs: ``--version`` and ``--help`` import none of
them, ``policylint check --help`` only ``check``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from policylint import __version__
from policylint.errors import PolicylintError

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2

#: subcommand -> (module under policylint.commands, one-line help); order is the --help order.
#: The help is written here rather than read from the module so that ``policylint --help``
#: can list every command without importing any of them (a test keeps both in sync).
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("check", "lint demand declarations, cluster specs and proposals"),
    "bands": ("bands", "compute baseline/daily/peak concurrency bands, spikes and queue figures from a trace"),
    "erlang": ("erlang", "Erlang C waits for an arrival rate and service time (servers = replicas)"),
    "rules": ("rules", "list all rules (code, name, severity, section, fix, summary)"),
    "rule": ("rule", "show the documentation of a rule"),
    "baseline": (
        "baseline",
        "write a baseline file of the current findings (keyed on rule, file and document path, not lines)",
    ),
    "config": ("config", "print the effective configuration (after discovery and validation)"),
    "schema": ("schema", "print the JSON Schema of a document kind, or write them all with --write DIR"),
    "export": (
        "export",
        "write Kueue or Volcano quotas sized from the measured bands (baseline guaranteed, daily borrowed)",
    ),
    "report": ("report", "write a self-contained HTML review page: pooled demand curves, bands, capacity, proposals and findings"),
    "pull": ("pull", "refresh the traces whose measurement declares a Prometheus source (the only command that uses the network)"),
    "init": ("init", "start a capacity repository: configuration, pre-commit hook, schemas and a passing example"),
    "plan": ("plan", "derive pools from the measurements and size them from their pooled bands, with the savings against today"),
    "completion": ("completion", "print a shell completion script (bash, zsh or fish)"),
    "server": ("server", "start, stop or show the resident server that runs commands without their start-up cost"),
}


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors with exit code 2 and one message."""

    def error(self, message: str) -> None:  # type: ignore[override]
        from policylint.report.safe_text import escape_controls

        self.print_usage(sys.stderr)
        # argparse quotes the words it refuses as given: a control character in one
        # ("unrecognized arguments: \x1b[2J") is written as an escape, on one line
        sys.stderr.write(f"{self.prog}: error: {escape_controls(message)}\n")
        raise SystemExit(EXIT_ERROR)

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> object:
        # Before Python 3.13, argparse drops a "--" given as an option's value
        # (``--config=--``) and hands the option an empty list, which no command
        # expects. An option that takes one value (or one or more) must get one.
        takes_values = action.nargs is None or action.nargs == argparse.ONE_OR_MORE or isinstance(action.nargs, int)
        if action.option_strings and takes_values and arg_strings and all(s == "--" for s in arg_strings):
            wanted = "one argument" if action.nargs in (None, 1) else "at least one argument"
            if isinstance(action.nargs, int) and action.nargs > 1:
                wanted = f"{action.nargs} arguments"
            self.error(f"argument {'/'.join(action.option_strings)}: expected {wanted}")
        return super()._get_values(action, arg_strings)

    def _get_value(self, action: argparse.Action, arg_string: str) -> object:
        # No operating system passes a NUL inside an argument, but main() can be
        # called with one, and every path function refuses it with a ValueError.
        # (The subcommand's words pass through here on their way to its parser, which checks them.)
        if "\x00" in arg_string and not isinstance(action, argparse._SubParsersAction):
            raise argparse.ArgumentError(action, "a value cannot contain a NUL character")
        return super()._get_value(action, arg_string)


def _command_module(name: str) -> ModuleType | None:
    """The module of subcommand ``name``, or None when this build does not ship it."""
    module_name = COMMANDS[name][0]
    try:
        return importlib.import_module(f"policylint.commands.{module_name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"policylint.commands.{module_name}":
            return None
        raise


def _chosen_command(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv``: the first word that is not an option.

    The top-level parser has no option that takes a value, so the first
    non-option word is the command (or a typo argparse will report).
    """
    for word in argv:
        if word == "--":
            return None
        if not word.startswith("-"):
            return word
    return None


def build_parser(only: str | None = None, *, every: bool = False) -> argparse.ArgumentParser:
    """The argument parser.

    Only the subcommand that runs (``only``) is imported and given its options;
    the others appear in ``--help`` with their one-line help alone. ``every``
    configures all of them (shell completion needs every option).
    """
    parser = _Parser(
        prog="policylint",
        description="Lint GPU demand declarations, cluster specs and procurement proposals against measured demand.",
    )
    parser.add_argument("--version", action="version", version=f"policylint {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (_, help_text) in COMMANDS.items():
        if not (every or name == only):
            sub.add_parser(name, help=help_text)
            continue
        module = _command_module(name)
        if module is None:
            continue  # a command not built into this version
        p = sub.add_parser(name, help=module.HELP, description=getattr(module, "DESCRIPTION", module.HELP))
        module.configure(p)
        # the whole parser, for a command that describes the others (completion)
        p.set_defaults(_run=module.run, _full_parser=lambda: build_parser(every=True))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run policylint; return the exit code."""
    words = list(argv) if argv is not None else sys.argv[1:]
    parser = build_parser(_chosen_command(words))
    args = parser.parse_args(words)
    if not getattr(args, "_run", None):
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    try:
        code: int = args._run(args)
        return code
    except PolicylintError as exc:
        if exc.key and type(exc) is PolicylintError:
            from policylint.model.config_locate import place

            place(exc)  # file:line:col of the key, as a finding is placed
        if exc.source and type(exc) is PolicylintError and os.path.isabs(exc.source):
            from pathlib import Path

            from policylint.model.load import display_path

            exc.source = display_path(Path(exc.source))  # as findings name files
        sys.stderr.write(f"policylint: error: {_one_line(str(exc))}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        sys.stderr.write("policylint: interrupted\n")
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except OSError as exc:
        # a path the user gave that the system cannot use (name too long, permissions, a
        # vanished file): a problem of the setup, not of policylint
        where = f"{exc.filename}: " if exc.filename else ""
        sys.stderr.write(f"policylint: error: {_one_line(where + (exc.strerror or str(exc)))}\n")
        return EXIT_ERROR
    except Exception as exc:
        if os.environ.get("POLICYLINT_DEBUG"):
            raise
        sys.stderr.write(
            f"policylint: internal error: {type(exc).__name__}: {_one_line(str(exc))}"
            " (a bug in policylint: rerun with POLICYLINT_DEBUG=1 for the traceback and report it)\n"
        )
        return EXIT_ERROR


def _one_line(text: str, limit: int = 1000) -> str:
    """An error message on one line (exception texts may span several), cut to a sane length.

    What is left of control characters once the whitespace is folded (an escape
    sequence in a server's answer or a file name, say) is written as escapes.
    """
    from policylint.report.safe_text import escape_controls

    flat = escape_controls(" ".join(text.split()))
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def console_main() -> None:
    """Console-script entry point."""
    prepare_process()
    from policylint.resident import run_resident

    # a running resident server of this installation takes the command (policylint.resident)
    try:
        served = run_resident(sys.argv[1:])
    except KeyboardInterrupt:  # before the server's run took the signal over
        sys.stderr.write("policylint: interrupted\n")
        leave(130)
    leave(main() if served is None else served)


def prepare_process() -> None:
    """The process settings every run has: no automatic collector (thresholds kept for a server that
    turns it on), one BLAS thread (:func:`quiet_blas`)."""
    import gc

    # A run builds many small objects that live until it ends (documents, position
    # indexes, views, findings) and frees few. With the default thresholds the
    # collector re-scans all of them every few hundred allocations, which made a
    # 10,000-declaration repository a third slower than without it. Collecting less
    # often keeps the same peak memory; reference cycles are still collected.
    gc.set_threshold(100_000, 50, 1000)
    # Even so, every object a run makes is scanned once while young, and almost none of
    # them is garbage before the run ends: at 10,000 workloads a one-file run spent about
    # 0.2 s (8%) in the collector, a cold run at 1,000 about 0.9 s, for no memory back (peak
    # RSS equal within 1% at 10,000, cold and warm; +4% cold at 1,000). A run is one short
    # process, so it does without the collector; the resident server, which lives on,
    # collects (policylint.resident_server.serve) and turns it off in each run it forks.
    gc.disable()
    quiet_blas()


def leave(code: int) -> NoReturn:
    """End the process with ``code`` as ``sys.exit`` would, without freeing the run's objects one by one.

    At exit the interpreter tears its modules down, and with them every object the
    run built: 0.4 s after a one-file run in a repository of 10,000 workloads, 0.1 s
    at 1,000, for memory the system takes back at once anyway. What an exit does
    that matters - the exit handlers (``atexit``), then the standard streams flushed -
    is done here first, and the process ends with ``os._exit`` (a caller's ``finally``
    blocks around this entry do not run; its exit handlers do). When another thread
    is still running (the interpreter would wait for it), the handlers are not
    reachable, or a flush fails (a closed pipe), ``sys.exit`` ends it as before.
    """
    import atexit

    from policylint.resident import finish

    threading = sys.modules.get("threading")
    if not hasattr(atexit, "_run_exitfuncs") or (threading is not None and threading.active_count() > 1):
        sys.exit(code)
    if not finish():
        sys.exit(code)  # the interpreter reports the failed flush, with its code
    os._exit(code)


def quiet_blas() -> None:
    """Start numpy's OpenBLAS with one thread, unless the user chose a count.

    policylint does element-wise array work only (no matrix products, no linear
    algebra), which BLAS threads never run. Yet OpenBLAS starts one thread per core
    when numpy is imported, and they spin before they sleep: about 0.1 s of CPU on
    every run, a tenth of a warm pre-commit run. Must run before numpy is imported;
    a count set in the environment is left as it is. ``OMP_NUM_THREADS`` is not
    touched: pyarrow sizes its reading threads by it.
    """
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
