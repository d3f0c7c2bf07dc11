"""``policylint baseline``: record current findings so that only new ones fail.

Each entry is keyed on rule, file, subject and document path (not lines), and
records the figures a numeric rule compared (``measured``, ``allowed``): a later
finding under the same key whose numbers moved further past the limit is
reported again, with both figures. Running this command again accepts the
state of the day explicitly.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

NAME = "baseline"
HELP = "write a baseline file of the current findings (keyed on rule, file and document path, not lines)"
DEFAULT_OUTPUT = Path(".policylint-baseline.json")


def configure(parser: argparse.ArgumentParser) -> None:
    from policylint.commands.check import add_common_options

    add_common_options(parser)
    parser.add_argument(
        "--output", "-o", type=Path, default=None, metavar="FILE",
        help="baseline file to write (default: the configuration's baseline, else .policylint-baseline.json at the"
             " repository root; '-' for stdout)",
    )


def run(args: argparse.Namespace) -> int:
    from policylint.engine.baselines import write_baseline
    from policylint.session import Session
    from policylint.writer import write_file

    args.baseline = None
    session = Session.from_args(args)
    session.options.baseline = None
    result = session.lint()
    text = write_baseline(result.findings, session.config.root)
    # a name given with --output, or the configuration's (the user's choice, wherever it lies)
    explicit = args.output is not None or session.config.baseline is not None
    if args.output is None:
        # the file check reads: the configuration's, else the default name at the repository's root (not in
        # the folder the command runs from, where check would never look for it)
        args.output = session.config.baseline or Path(os.path.relpath(session.config.root / DEFAULT_OUTPUT))
    if str(args.output) == "-":
        sys.stdout.write(text)
    else:
        # The default name is the repository's own file: it must stay inside the repository. A name
        # given with --output may lie anywhere; a link at either is followed only within the repository.
        write_file(args.output, text, root=session.config.root, explicit=explicit, parents=True, what="the baseline file")
        from policylint.report.safe_text import escape_controls

        from policylint.engine.baselines import NEVER_ACCEPTED

        written = sum(1 for f in result.findings if f.code not in NEVER_ACCEPTED)
        sys.stderr.write(f"policylint: wrote {written} finding(s) to {escape_controls(str(args.output))}\n")
        configured = session.config.baseline
        if configured is None or os.path.realpath(configured) != os.path.realpath(args.output):
            # check reads a baseline only when told: say how, or the next run fails on every finding
            shown = escape_controls(os.path.relpath(os.path.realpath(args.output), os.path.realpath(session.config.root)))
            from policylint.model.load import display_path

            where = session.config.path
            named = escape_controls(display_path(where)) if where is not None else ".policylint.yaml"
            if where is not None and where.name == "pyproject.toml":
                how = f"baseline = \"{shown}\" under [tool.policylint] in {named}"
            else:
                how = f"'baseline: {shown}' to {named}"
            sys.stderr.write(
                f"policylint: check hides them only when told: add {how}, or pass --baseline"
                f" {escape_controls(str(args.output))}\n"
            )
    return 0
