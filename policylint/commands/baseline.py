"""``policylint baseline``: record current findings so that only new ones fail.

Each entry is keyed on rule, file, subject and document path (not lines), and
records the figures a numeric rule compared (``measured``, ``allowed``): a later
finding under the same key whose numbers moved further past the limit is
reported again, with both figures. Running this command again accepts the
state of the day explicitly.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from policylint.errors import PolicylintError

NAME = "baseline"
HELP = "write a baseline file of the current findings (keyed on rule, file and document path, not lines)"


def configure(parser: argparse.ArgumentParser) -> None:
    from policylint.commands.check import add_common_options

    add_common_options(parser)
    parser.add_argument(
        "--output", "-o", type=Path, default=Path(".policylint-baseline.json"), metavar="FILE",
        help="baseline file to write (default .policylint-baseline.json; '-' for stdout)",
    )


def run(args: argparse.Namespace) -> int:
    from policylint.filter import write_baseline
    from policylint.session import Session

    args.baseline = None
    session = Session.from_args(args)
    session.options.baseline = None
    result = session.lint()
    text = write_baseline(result.findings, session.config.root)
    if str(args.output) == "-":
        sys.stdout.write(text)
    else:
        try:
            args.output.parent.mkdir(parents=True, exist_ok=True)
            args.output.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise PolicylintError(f"cannot write the baseline file: {exc.strerror or exc}", source=str(args.output)) from None
        sys.stderr.write(f"policylint: wrote {len(result.findings)} finding(s) to {args.output}\n")
    return 0
