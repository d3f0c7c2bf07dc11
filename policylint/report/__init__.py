"""Step 7: reporters. One module per output format, all consuming Findings.

Every reporter is a function ``render(result, context) -> str`` so that output
can go to stdout or to a file and tests can compare strings. :func:`render`
is the one entry point the CLI uses: it also rewrites file paths to the
repository root for the formats other tools read (see :mod:`.paths`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from policylint.finding import Finding, FindingKey
    from policylint.engine.result import LintResult

FORMATS = ("text", "concise", "json", "sarif", "junit", "github", "gitlab", "markdown")

#: Formats read by other tools (code scanning, CI annotations, merge-request widgets,
#: test dashboards, scripts): their file paths are relative to the repository root,
#: whatever folder policylint was started from. Text, concise and markdown are read
#: by people in a terminal or a job log, where paths relative to the working
#: directory are the ones a click or a copy-paste can open.
REPOSITORY_PATHS = frozenset({"json", "sarif", "junit", "github", "gitlab"})

#: Formats that print the findings' texts exactly: ``json.dumps`` writes every
#: control and non-ASCII character as a ``\u`` escape, so nothing raw reaches the output.
EXACT_FORMATS = frozenset({"json"})

#: Formats that keep file paths exact because they encode them (a percent-encoded
#: SARIF URI, a JSON string) and other tools open the file by that path.
EXACT_PATHS = frozenset({"sarif", "gitlab"})


@dataclass
class ReportContext:
    """What reporters may need besides the findings."""

    color: bool = False
    statistics: bool = False
    quiet: bool = False
    fail_on: str = "warning"
    rules: dict[str, object] = field(default_factory=dict)  # code -> Rule metadata, for SARIF/markdown
    baseline_used: bool = False
    show_source: bool = True  # code frames under each finding (text format)
    #: the repository root for REPOSITORY_PATHS formats (None: paths as displayed)
    root: Path | None = None
    #: the folder baseline entries are relative to (the configuration's folder)
    config_root: Path | None = None
    #: how each finding's fix may be applied (``safe``, ``unsafe``, ``display-only``), by
    #: :func:`fix_key`; findings without a fix are absent (see :func:`policylint.edit.fixes.availability`)
    fixes: dict[FindingKey, str] = field(default_factory=dict)
    #: ``--unsafe-fixes`` was given: unsafe fixes count as fixable, as ``--fix`` would apply them
    unsafe_fixes: bool = False


def fix_key(f: Finding) -> FindingKey:
    """A finding's identity without its file: it survives the path rewriting of :func:`render`."""
    return f.key()._replace(file="")


def fix_of(f: Finding, context: ReportContext) -> str | None:
    """``safe``, ``unsafe`` or ``display-only`` when the finding has a fix, else None."""
    return context.fixes.get(fix_key(f)) if context.fixes else None


#: The marker of a finding ``--fix`` fixes, and of one ``--fix --unsafe-fixes`` fixes (as ruff's ``[*]``).
FIX_MARKER = "[*]"
UNSAFE_MARKER = "[~]"


def fix_marker(f: Finding, context: ReportContext) -> str:
    """``[*]`` when ``--fix`` fixes the finding, ``[~]`` when only ``--unsafe-fixes`` does, else ``""``."""
    how = fix_of(f, context)
    if how == "safe" or (how == "unsafe" and context.unsafe_fixes):
        return FIX_MARKER
    if how == "unsafe":
        return UNSAFE_MARKER
    return ""


def fix_counts(findings: list[Finding], context: ReportContext) -> tuple[int, int]:
    """(findings ``--fix`` fixes, findings only ``--unsafe-fixes`` adds)."""
    marks = [fix_marker(f, context) for f in findings]
    return marks.count(FIX_MARKER), marks.count(UNSAFE_MARKER)


def fix_summary(findings: list[Finding], context: ReportContext) -> str:
    """``[*] 3 fixable with --fix (1 more with --unsafe-fixes).``; ``""`` when nothing is fixable.

    With only unsafe fixes: ``[~] 1 fixable with --fix --unsafe-fixes (none with --fix alone).``
    """
    safe, unsafe = fix_counts(findings, context)
    if not safe and not unsafe:
        return ""
    if not safe:
        return f"{UNSAFE_MARKER} {unsafe} fixable with --fix --unsafe-fixes (none with --fix alone)."
    more = f" ({unsafe} more with --unsafe-fixes)" if unsafe else ""
    return f"{FIX_MARKER} {safe} fixable with --fix{more}."


def get_renderer(fmt: str) -> Callable[[LintResult, ReportContext], str]:
    """The ``render`` function of the reporter module for ``fmt``."""
    module = importlib.import_module(f"policylint.report.{fmt}_report")
    render: Callable[[LintResult, ReportContext], str] = module.render
    return render


def render(fmt: str, result: LintResult, context: ReportContext) -> str:
    """The report of ``result`` in ``fmt``, with repository-relative paths where ``fmt`` wants them.

    Control characters in the findings' texts (paths, names, messages quoting a
    trace) are escaped here, once for every format (see :mod:`.safe_text`); the
    JSON report keeps the exact values, which its encoder already escapes.
    """
    if fmt in REPOSITORY_PATHS and context.root is not None:
        from policylint.report.paths import rebase

        result = rebase(result, context.root, context.config_root or context.root)
    if fmt not in EXACT_FORMATS:
        from policylint.report.safe_text import safe_result

        result = safe_result(result, files=fmt not in EXACT_PATHS)
    return get_renderer(fmt)(result, context)
