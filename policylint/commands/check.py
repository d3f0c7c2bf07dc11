"""``policylint check [PATH ...]``: lint a capacity repository."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

NAME = "check"
HELP = "lint demand declarations, cluster specs and proposals"
DESCRIPTION = (
    "Lint policylint documents (and Kueue/Volcano manifests) under PATH against measured demand. "
    "Exit codes: 0 clean, 1 findings at or above --fail-on, 2 usage or configuration error."
)


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by every command that runs the linter (check, baseline)."""
    parser.add_argument("paths", nargs="*", type=Path, metavar="PATH", help="files or folders (default: .)")
    parser.add_argument("--config", type=Path, metavar="FILE", help="configuration file (default: discovered)")
    parser.add_argument("--isolated", action="store_true", help="ignore configuration files")
    parser.add_argument("--root", type=Path, metavar="DIR", help="repository root file references must stay in")
    parser.add_argument("--now", metavar="DATE", help="judge staleness as of DATE (YYYY-MM-DD) for reproducible runs")
    parser.add_argument("--select", action="append", metavar="RULE", help="run only these rules (code, prefix or name); repeatable or comma-separated")
    parser.add_argument("--extend-select", action="append", metavar="RULE", help="add rules to the selection")
    parser.add_argument("--ignore", action="append", metavar="RULE", help="skip these rules")
    parser.add_argument("--rule-dir", action="append", type=Path, metavar="DIR", help="extra folder of rule files")


def configure(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser)
    parser.add_argument(
        "--format",
        action="append",
        choices=("text", "json", "sarif", "junit", "github", "markdown"),
        help="output format (default text); repeat with --output to write several reports in one run",
    )
    parser.add_argument(
        "--output",
        action="append",
        metavar="FILE",
        help="write the report to FILE instead of stdout; the n-th --output goes with the n-th --format",
    )
    parser.add_argument("--fail-on", choices=("error", "warning", "info"), help="lowest severity that fails the run (default warning)")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    parser.add_argument("--quiet", "-q", action="store_true", help="print only the summary line (text format)")
    parser.add_argument("--statistics", action="store_true", help="print the number of findings per rule")
    parser.add_argument("--baseline", type=Path, metavar="FILE", help="hide findings recorded in this baseline file")
    parser.add_argument("--diff", metavar="BASE", help="report only on what changed since git revision BASE, and what depends on it")
    parser.add_argument(
        "--changed-files",
        action="store_true",
        help="treat PATHs as changed files (pre-commit): lint the whole repository, report on them and their dependents",
    )
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto", help="colour in text output")


def use_color(mode: str, stream: object) -> bool:
    if mode == "always":
        return True
    if mode == "never" or os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def run(args: argparse.Namespace) -> int:
    from policylint.finding import Severity
    from policylint.report import ReportContext, get_renderer
    from policylint.session import Session

    formats = args.format or ["text"]
    outputs = args.output or []
    if len(outputs) > len(formats):
        from policylint.errors import PolicylintError

        raise PolicylintError("each --output needs its own --format (give --format before every --output)")
    if args.diff is not None and not args.diff.strip():
        from policylint.errors import PolicylintError

        raise PolicylintError("--diff needs a git revision, got an empty string")
    if args.diff is not None and args.changed_files:
        from policylint.errors import PolicylintError

        raise PolicylintError("--diff and --changed-files both choose what to report on; give one")
    session = Session.from_args(args)
    result = session.lint()
    fail_on = Severity.parse(args.fail_on or session.config.fail_on)
    context = ReportContext(
        statistics=args.statistics,
        quiet=args.quiet,
        fail_on=fail_on.label,
        rules=session.rule_metadata(),
        baseline_used=session.baseline_path is not None,
    )
    # Render every report before writing any: an error then never leaves half an output behind.
    rendered: list[tuple[str | None, str]] = []
    for i, fmt in enumerate(formats):
        target = outputs[i] if i < len(outputs) else None
        context.color = target is None and fmt == "text" and use_color(args.color, sys.stdout)
        rendered.append((target, get_renderer(fmt)(result, context)))
    for target, text in rendered:
        if target is None:
            sys.stdout.write(text)
            continue
        try:
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            Path(target).write_text(text, encoding="utf-8")
        except OSError as exc:
            from policylint.errors import PolicylintError

            raise PolicylintError(f"cannot write the report: {exc.strerror or exc}", source=target) from None
    failing = [f for f in result.findings if f.severity >= fail_on]
    if failing and not args.exit_zero:
        return 1
    return 0
