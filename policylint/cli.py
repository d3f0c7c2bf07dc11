"""Command-line entry point: argument parsing and exit codes only.

Exit codes: 0 clean, 1 findings at or above the fail level, 2 usage,
configuration or tool error. Each subcommand lives in ``policylint/commands``
and is imported only when it runs, so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from policylint import __version__
from policylint.errors import PolicylintError

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2

#: subcommand name -> module under policylint.commands; order is the --help order.
COMMANDS = {
    "check": "check",
    "bands": "bands",
    "erlang": "erlang",
    "rules": "rules",
    "rule": "rule",
    "baseline": "baseline",
    "config": "config",
    "schema": "schema",
    "export": "export",
}


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors with exit code 2 and one message."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_ERROR)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="policylint",
        description="Lint GPU demand declarations, cluster specs and procurement proposals against measured demand.",
    )
    parser.add_argument("--version", action="version", version=f"policylint {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, module_name in COMMANDS.items():
        try:
            module = importlib.import_module(f"policylint.commands.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"policylint.commands.{module_name}":
                continue  # a command not built into this version
            raise
        p = sub.add_parser(name, help=module.HELP, description=getattr(module, "DESCRIPTION", module.HELP))
        module.configure(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run policylint; return the exit code."""
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    if not getattr(args, "_run", None):
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    try:
        code: int = args._run(args)
        return code
    except PolicylintError as exc:
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
    except Exception as exc:  # noqa: BLE001 - last line of defence: never a traceback
        if os.environ.get("POLICYLINT_DEBUG"):
            raise
        sys.stderr.write(
            f"policylint: internal error: {type(exc).__name__}: {_one_line(str(exc))}"
            " (a bug in policylint: rerun with POLICYLINT_DEBUG=1 for the traceback and report it)\n"
        )
        return EXIT_ERROR


def _one_line(text: str, limit: int = 1000) -> str:
    """An error message on one line (exception texts may span several), cut to a sane length."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def console_main() -> None:
    """Console-script entry point."""
    sys.exit(main())
