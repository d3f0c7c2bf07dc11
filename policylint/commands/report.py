"""``policylint report --html PATH [REPO ...]``: a procurement review page.

Runs the linter once, the way ``check`` does (:class:`policylint.session.Session`),
and writes one self-contained HTML file: the pooled demand of every pool with its
bands and capacity, every proposal with its arithmetic, and the findings
(:mod:`policylint.report.html_report`). Exit codes are those of ``check``: 0 when
nothing is at or above the fail level, 1 when something is, 2 for a usage or
configuration error. Heavy imports stay inside :func:`run`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAME = "report"
HELP = "write a self-contained HTML review page: pooled demand curves, bands, capacity, proposals and findings"
DESCRIPTION = (
    "Lint the capacity repository at PATH (default .) like `check` and write one self-contained HTML page for a "
    "procurement review: per pool the pooled demand curve with its bands and the current, proposed and justified "
    "capacity; per proposal the requested against the justified GPUs with the arithmetic; summary tables of pools "
    "and findings. Exit codes: 0 clean, 1 findings at or above --fail-on, 2 usage or configuration error."
)


def configure(parser: argparse.ArgumentParser) -> None:
    from policylint.commands.check import add_common_options

    parser.add_argument(
        "--html",
        required=True,
        metavar="FILE",
        help="write the page to FILE ('-' for stdout)",
    )
    parser.add_argument("--title", default="GPU capacity review", help="heading and title of the page")
    add_common_options(parser)
    parser.add_argument("--fail-on", choices=("error", "warning", "info"), help="lowest severity that fails the run (default warning)")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    parser.add_argument("--baseline", type=Path, metavar="FILE", help="hide findings recorded in this baseline file")
    parser.add_argument("--no-cache", action="store_true", help="measure every trace afresh instead of reusing the measurement cache")
    parser.add_argument("--jobs", "-j", type=_positive, metavar="N", help="measure workloads in N processes (default: number of cores)")


def _positive(text: str) -> int:
    from policylint.commands.check import _positive as positive

    return positive(text)


def run(args: argparse.Namespace) -> int:
    from policylint.errors import PolicylintError
    from policylint.finding import Severity
    from policylint.report.html_report import HtmlSettings, render
    from policylint.report.paths import rebase, repository_root
    from policylint.session import Session
    from policylint.writer import write_file

    if not args.html.strip():
        raise PolicylintError("--html needs a file name (or '-' for stdout)")
    session = Session.from_args(args)
    session.options.all_views = True  # the page draws every pool, whatever PATH narrows the findings to
    result = session.lint()
    # File paths as in the JSON report: relative to the repository root, wherever the run started.
    result = rebase(result, repository_root(session.config.root), session.config.root)
    fail_on = Severity.parse(args.fail_on or session.config.fail_on)
    ruleset = session.options.ruleset
    settings = HtmlSettings(
        title=args.title,
        fail_on=fail_on.label,
        params=dict(ruleset.params) if ruleset is not None else {},
        rules=session.rule_metadata(),
    )
    page = render(result, settings)
    if args.html == "-":
        sys.stdout.write(page)
    else:
        target = Path(args.html)
        # the exact bytes on every platform; named by the user, so it may lie outside the repository
        write_file(target, page, root=session.config.root, explicit=True, parents=True, what="the HTML report")
        failing = sum(1 for f in result.findings if f.severity >= fail_on)
        from policylint.report.safe_text import escape_controls

        sys.stderr.write(
            f"policylint: report written to {escape_controls(str(target))} ({len(result.findings)} findings, {failing} at {fail_on.label} or above)\n"
        )
    failing_findings = [f for f in result.findings if f.severity >= fail_on]
    if failing_findings and not args.exit_zero:
        return 1
    return 0
