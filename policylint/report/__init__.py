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
    from policylint.linter import LintResult

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
