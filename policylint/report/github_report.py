"""``--format github``: GitHub Actions workflow commands, one annotation per finding.

Each reported finding becomes one line the Actions runner turns into an
annotation on the pull request diff::

    ::error file=plans/a.yaml,line=12,col=5,title=PL101 reserved-above-baseline::message (hint: ...)

``warning`` findings use ``::warning`` and ``info`` findings ``::notice``.
A whole-file finding (line 0) omits ``line`` and ``col`` so the annotation
attaches to the file. Values are escaped as the runner expects, which also
means a message cannot smuggle in a second command through a newline.

The last line is a plain summary, deliberately not a workflow command, so it
stays readable in the job log.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from policylint.finding import Finding, Severity
from policylint.report import ReportContext

if TYPE_CHECKING:
    from policylint.engine.result import LintResult

_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    """Escape a command's message (the part after ``::``)."""
    # "%" first, or the escapes added below would be escaped again.
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a property value: ``:`` and ``,`` delimit properties, so they are escaped too."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(f: Finding) -> str:
    """The workflow command line for one finding."""
    props = [f"file={escape_property(f.file)}"]
    if f.line > 0:
        props.append(f"line={f.line}")
        if f.column > 0:
            props.append(f"col={f.column}")
    props.append(f"title={escape_property(f'{f.code} {f.name}')}")
    message = f"{f.message} (hint: {f.hint})" if f.hint else f.message
    return f"::{_COMMAND[f.severity]} {','.join(props)}::{escape_data(message)}"


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def summary_line(result: LintResult) -> str:
    """``policylint: 3 findings (2 errors, 1 warning) in 4 files``, plus what was hidden."""
    counts = Counter(f.severity for f in result.findings)
    files = _plural(result.files, "file")
    if result.findings:
        parts = [
            _plural(counts[sev], sev.label) for sev in (Severity.ERROR, Severity.WARNING, Severity.INFO) if counts[sev]
        ]
        line = f"policylint: {_plural(len(result.findings), 'finding')} ({', '.join(parts)}) in {files}"
    else:
        line = f"policylint: no findings in {files}"
    hidden = []
    if result.suppressed:
        hidden.append(f"{len(result.suppressed)} suppressed")
    if result.baselined:
        hidden.append(f"{len(result.baselined)} baselined")
    if result.stale_baseline:
        hidden.append(_plural(len(result.stale_baseline), "stale baseline entry", "stale baseline entries"))
    if hidden:
        line += f"; {', '.join(hidden)}"
    return line


def render(result: LintResult, context: ReportContext) -> str:
    lines = [command(f) for f in result.findings]
    lines.append(summary_line(result))
    return "\n".join(lines) + "\n"
