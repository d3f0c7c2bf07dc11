"""Step 7: reporters. One module per output format, all consuming Findings.

Every reporter is a function ``render(result, context) -> str`` so that output
can go to stdout or to a file (``--output``) and tests can compare strings.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from policylint.linter import LintResult

FORMATS = ("text", "json", "sarif", "junit", "github", "markdown")


@dataclass
class ReportContext:
    """What reporters may need besides the findings."""

    color: bool = False
    statistics: bool = False
    quiet: bool = False
    fail_on: str = "warning"
    rules: dict[str, object] = field(default_factory=dict)  # code -> Rule metadata, for SARIF/markdown
    baseline_used: bool = False


def get_renderer(fmt: str) -> Callable[[LintResult, ReportContext], str]:
    """The ``render`` function of the reporter module for ``fmt``."""
    module = importlib.import_module(f"policylint.report.{fmt}_report")
    render: Callable[[LintResult, ReportContext], str] = module.render
    return render
