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


#: Report formats (kept here, not imported from policylint.report, so that building
#: the parser imports nothing; a test keeps the two lists equal).
FORMATS = ("text", "concise", "json", "sarif", "junit", "github", "gitlab", "markdown")


def report_target(value: str) -> tuple[str, str | None]:
    """Parse ``FORMAT``, ``FORMAT=PATH`` or ``FORMAT:PATH`` into (format, path or None for stdout)."""
    for i, char in enumerate(value):
        if char in "=:":
            fmt, path = value[:i], value[i + 1 :]
            break
    else:
        fmt, path = value, None
    if fmt not in FORMATS:
        raise argparse.ArgumentTypeError(f"unknown format '{fmt}' (choose from {', '.join(FORMATS)})")
    if path is not None and not path:
        raise argparse.ArgumentTypeError(f"'{value}': no path after the format (use {fmt}=PATH, or {fmt} for stdout)")
    return fmt, (None if path == "-" else path)


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """Report selection: each report names its own destination."""
    group = parser.add_argument_group(
        "reports",
        "Each --format names its format and, optionally, its file: --format sarif=policylint.sarif "
        "(or --output-format sarif:policylint.sarif). Repeat for several reports in one run; "
        "at most one may go to stdout (no path, or '-').",
    )
    group.add_argument(
        "--format",
        "--output-format",
        dest="reports",
        action="append",
        type=report_target,
        metavar="FORMAT[=PATH]",
        help=f"report format ({', '.join(FORMATS)}; default text) and optional file; repeatable",
    )
    group.add_argument(
        "--output",
        action="append",
        metavar="FILE",
        help="older form: write the report of a --format given without a path to FILE; "
        "needs exactly one --output per such --format",
    )
    group.add_argument(
        "--show-source",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="show the offending lines under each finding (text format; default: on)",
    )
    group.add_argument("--statistics", action="store_true", help="print only the number of findings per rule (text, concise)")
    group.add_argument("--quiet", "-q", action="store_true", help="print only the summary line (text, concise)")


def configure(parser: argparse.ArgumentParser) -> None:
    add_common_options(parser)
    add_output_options(parser)
    parser.add_argument("--fail-on", choices=("error", "warning", "info"), help="lowest severity that fails the run (default warning)")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    parser.add_argument("--baseline", type=Path, metavar="FILE", help="hide findings recorded in this baseline file")
    parser.add_argument("--diff", metavar="BASE", help="report only on what changed since git revision BASE (since its merge base with HEAD,"
                        " as in git diff BASE...HEAD), and what depends on it")
    parser.add_argument(
        "--changed-files",
        action="store_true",
        help="treat PATHs as changed files (pre-commit): lint the whole repository, report on them and their dependents; "
        "a changed configuration, rule file or baseline reports on everything",
    )
    parser.add_argument("--no-cache", action="store_true", help="measure every trace afresh instead of reusing the measurement cache")
    parser.add_argument("--jobs", "-j", type=_positive, metavar="N", help="measure workloads in N processes, and above 1 write the cache beside the run (default: number of cores)")
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour in text output (auto: on a terminal; NO_COLOR turns it off, FORCE_COLOR on, NO_COLOR winning)",
    )
    add_fix_options(parser)


def add_fix_options(parser: argparse.ArgumentParser) -> None:
    """--fix and friends: rewrite the numbers the framework justifies."""
    group = parser.add_argument_group(
        "fixes",
        "Rewrite pool and proposal sizes to the justified numbers (PL101, PL102, PL104, PL801), "
        "changing only those numbers in the files. Lowering capacity is safe; raising it is not.",
    )
    group.add_argument("--fix", action="store_true", help="apply safe fixes, then report what remains")
    group.add_argument("--unsafe-fixes", action="store_true", help="also apply fixes that raise capacity (spend money)")
    group.add_argument(
        "--fix-dry-run",
        action="store_true",
        help="print the fixes as a unified diff and write nothing (exit 1 when there is something to fix)",
    )
    group.add_argument(
        "--add-noqa",
        action="store_true",
        help="write '# policylint: disable=CODE -- TODO: reason' at the line of every reported finding; "
        "PL030 reports each placeholder until its reason is written",
    )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def report_plan(reports: list[tuple[str, str | None]] | None, outputs: list[str] | None) -> list[tuple[str, str | None]]:
    """(format, file or None for stdout) for every report of the run, in the order given.

    Raises a usage error when the older positional form (``--format F --output
    FILE``) does not pair up exactly, when two reports go to stdout, or when two
    go to the same file: each of those used to write a report where nobody
    expected it, silently.
    """
    from policylint.errors import PolicylintError

    plan = list(reports or [])
    outputs = list(outputs or [])
    if outputs:
        bare = [i for i, (_, path) in enumerate(plan) if path is None]
        if not plan:
            plan, bare = [("text", None)], [0]
        if len(bare) != len(outputs):
            raise PolicylintError(
                f"{len(bare)} --format without a path but {len(outputs)} --output: "
                "name each report's file with --format FORMAT=PATH (e.g. --format sarif=policylint.sarif)"
            )
        for i, output in zip(bare, outputs, strict=True):
            plan[i] = (plan[i][0], None if output == "-" else output)
    if not plan:
        plan = [("text", None)]
    to_stdout = [fmt for fmt, path in plan if path is None]
    if len(to_stdout) > 1:
        raise PolicylintError(
            f"{len(to_stdout)} reports would go to stdout ({', '.join(to_stdout)}): "
            "give all but one a file with --format FORMAT=PATH"
        )
    seen: set[str] = set()
    for _, path in plan:
        if path is not None:
            key = os.path.normpath(os.path.abspath(path))
            if key in seen:
                raise PolicylintError(f"two reports would be written to {path}")
            seen.add(key)
    return plan


def use_color(mode: str, stream: object) -> bool:
    """Whether to colour what goes to ``stream``.

    In order: ``--color always``/``never``; then ``NO_COLOR`` (https://no-color.org:
    set and not empty, whatever its value: no colour); then ``FORCE_COLOR``
    (https://force-color.org: set and not empty, whatever its value: colour even
    when ``stream`` is not a terminal, as in CI logs that show ANSI colours); else
    colour only on a terminal. When both variables are set, ``NO_COLOR`` wins: it is
    the reader's own opt-out, and colour is what both conventions let a flag override.
    """
    if mode == "always":
        return True
    if mode == "never" or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def run(args: argparse.Namespace) -> int:
    from policylint.errors import PolicylintError
    from policylint.finding import Severity
    from policylint.report import ReportContext, fix_key, render
    from policylint.report.paths import repository_root
    from policylint.session import Session
    from policylint.writer import write_file

    plan = report_plan(args.reports, args.output)
    if args.diff is not None and not args.diff.strip():
        raise PolicylintError("--diff needs a git revision, got an empty string")
    if args.diff is not None and args.changed_files:
        raise PolicylintError("--diff and --changed-files both choose what to report on; give one")
    if args.add_noqa and (args.fix or args.fix_dry_run):
        raise PolicylintError("--add-noqa and --fix both edit the files; run one, then the other")
    session = Session.from_args(args)
    from policylint.readers.progress import listen
    from policylint.report.progress import check_progress

    # a bar on standard error once the run takes more than about a second, on a terminal only
    progress = check_progress([fmt for fmt, target in plan if target is None] if not args.fix_dry_run else ["diff"])
    notes: list[str] = []  # for standard error, once the bar is gone
    try:
        if progress is not None:
            progress.start()
        with listen(progress):
            result = session.lint()
            if args.add_noqa:
                from policylint.edit.noqa import add_suppressions
                from policylint.edit.noqa import summary as noqa_summary

                added = add_suppressions(result, session.options)
                notes.append(noqa_summary(added))
                if added.added:
                    if progress is not None:
                        progress.step("checking again")
                    result = session.lint()  # report the placeholders, and what was left alone
            elif args.fix or args.fix_dry_run:
                from policylint.edit.fixes import run_fixes, summary

                write = not args.fix_dry_run
                if progress is not None:
                    progress.step("fixing")
                outcome = run_fixes(result, session.options, unsafe=args.unsafe_fixes, write=write)
                if not write:
                    if progress is not None:
                        progress.stop()
                    sys.stdout.write(outcome.diff)
                    sys.stderr.write(summary(outcome, write=False))
                    return 1 if outcome.applied else 0
                notes.append(summary(outcome, write=True))
                if outcome.applied:
                    if progress is not None:
                        progress.step("checking again")
                    result = session.lint()  # report what remains after the fixes
            from policylint.edit.fixes import availability

            try:
                fixes = availability(result, session.options)
            except PolicylintError:
                fixes = {}  # the markers are a courtesy: a plan that cannot be made marks nothing
    finally:
        if progress is not None:
            progress.stop()
        for note in notes:  # what was written is said even when checking again fails
            sys.stderr.write(note)
    fail_on = Severity.parse(args.fail_on or session.config.fail_on)
    context = ReportContext(
        statistics=args.statistics,
        quiet=args.quiet,
        fail_on=fail_on.label,
        rules=session.rule_metadata(),
        baseline_used=session.baseline_path is not None,
        show_source=args.show_source,
        root=repository_root(session.config.root),
        config_root=session.config.root,
        fixes={fix_key(f): how for f in result.findings if (how := fixes.get(f.key())) is not None},
        unsafe_fixes=args.unsafe_fixes,
    )
    # Render every report before writing any: an error then never leaves half an output behind.
    rendered: list[tuple[str, str | None, str]] = []
    for fmt, target in plan:
        context.color = target is None and fmt == "text" and use_color(args.color, sys.stdout)
        rendered.append((fmt, target, render(fmt, result, context)))
    # Files first: a refused file (a link out of the repository, say) then stops the run before stdout is written.
    for fmt, target, text in rendered:
        if target is not None:
            # named on the command line, so it may lie outside the repository; a link there is not followed out of it
            write_file(target, text, root=session.config.root, explicit=True, parents=True, what=f"the {fmt} report")
    for fmt, target, text in rendered:
        if target is None:
            sys.stdout.write(text)
    if rendered and not args.quiet and all(target is not None for _, target, _ in rendered):
        # every report went to a file: the run's log still says what it found, and where it went
        from policylint.report.safe_text import escape_controls
        from policylint.report.text_report import summary_line

        written = ", ".join(escape_controls(str(target)) for _, target, _ in rendered)
        sys.stderr.write(f"policylint: {summary_line(result)} Reports: {written}\n")
    failing = [f for f in result.findings if f.severity >= fail_on]
    if failing and not args.exit_zero:
        return 1
    return 0
