"""``--format markdown``: a report for a pull-request comment or ``$GITHUB_STEP_SUMMARY``.

Layout::

    ## policylint

    :x: **3 findings** (1 error, 1 warning, 1 info) in 4 files.

    | Code | Rule | Severity | Count |
    | --- | --- | --- | ---: |
    | PL101 | [reserved-above-baseline](https://...) | error | 1 |

    ### Findings

    - `plans/a.yaml:12:5` **PL101** error: message (hint: ...)

    Suppressed inline: 1. Hidden by the baseline: 1. Stale baseline entries: 1.

The verdict matches the exit code: :x: when a finding is at or above
``--fail-on``, :warning: when there are only findings below it,
:white_check_mark: when there are none. The table is sorted by severity (most
serious first), then code. A long finding list is folded into ``<details>`` so
the comment stays scannable.

Text from findings is escaped: it is user input (names, paths, messages)
and must not be able to break the table or inject HTML into the comment.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

from policylint.finding import Finding, Severity
from policylint.report import ReportContext
from policylint.engine.rule import Rule

if TYPE_CHECKING:
    from policylint.engine.result import LintResult

#: More findings than this are folded into a <details> block.
FOLD_AFTER = 20

_ORDER = (Severity.ERROR, Severity.WARNING, Severity.INFO)
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def escape(text: str) -> str:
    """Make ``text`` render literally inside a Markdown line or table cell."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    # A raw newline would end the table row or the list item.
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "<br>")


def code_span(text: str) -> str:
    """``text`` as inline code, with a fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text.replace(chr(10), ' ')}{pad}{fence}"


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def _fail_on(context: ReportContext) -> Severity:
    try:
        return Severity.parse(context.fail_on)
    except ValueError:
        return Severity.WARNING


def verdict(result: LintResult, context: ReportContext) -> str:
    """The one-line outcome, with an emoji GitHub renders."""
    files = _plural(result.files, "file")
    if not result.findings:
        return f":white_check_mark: **No findings** in {files}."
    counts = Counter(f.severity for f in result.findings)
    parts = ", ".join(_plural(counts[s], s.label) for s in _ORDER if counts[s])
    head = f"**{_plural(len(result.findings), 'finding')}** ({parts}) in {files}"
    threshold = _fail_on(context)
    if any(f.severity >= threshold for f in result.findings):
        return f":x: {head}."
    return f":warning: {head}, none at or above `--fail-on {threshold.label}`."


def _rule_cell(code: str, name: str, context: ReportContext) -> str:
    rule = context.rules.get(code)
    if isinstance(rule, Rule):
        return f"[{escape(rule.name)}]({rule.help_uri})"
    return escape(name)


def table(result: LintResult, context: ReportContext) -> list[str]:
    """Findings per rule: Code | Rule | Severity | Count."""
    groups = Counter((f.code, f.name, f.severity) for f in result.findings)
    rows = sorted(groups.items(), key=lambda item: (-item[0][2], item[0][0], item[0][1]))
    lines = ["| Code | Rule | Severity | Count |", "| --- | --- | --- | ---: |"]
    for (code, name, severity), count in rows:
        lines.append(f"| {escape(code)} | {_rule_cell(code, name, context)} | {severity.label} | {count} |")
    return lines


def position(f: Finding) -> str:
    """``file:line:col``, or just ``file`` for a whole-file finding (line 0)."""
    return f"{f.file}:{f.line}:{f.column}" if f.line > 0 else f.file


def _item(f: Finding) -> str:
    text = f"- {code_span(position(f))} **{escape(f.code)}** {f.severity.label}: {escape(f.message)}"
    if f.hint:
        text += f" (hint: {escape(f.hint)})"
    return text


def _folded(summary: str, body: list[str]) -> list[str]:
    # Blank lines around the body: GitHub renders Markdown inside <details> only then.
    return ["<details>", f"<summary>{summary}</summary>", "", *body, "", "</details>"]


def _stale_key(entry: dict[str, str]) -> tuple[str, ...]:
    return tuple(entry.get(key, "") for key in ("file", "code", "subject", "path", "message"))


def _stale_item(entry: dict[str, str]) -> str:
    text = f"- {code_span(entry.get('file', ''))} **{escape(entry.get('code', ''))}**"
    details = [entry[key] for key in ("subject", "path") if entry.get(key)]
    if details:
        text += " " + escape(", ".join(details))
    if entry.get("message"):
        text += f": {escape(entry['message'])}"
    return text


def render(result: LintResult, context: ReportContext) -> str:
    lines = ["## policylint", "", verdict(result, context), ""]
    if result.findings:
        lines += table(result, context)
        lines += ["", "### Findings", ""]
        items = [_item(f) for f in result.findings]
        if len(items) > FOLD_AFTER:
            lines += _folded(f"Show all {len(items)} findings", items)
        else:
            lines += items
        lines.append("")
    hidden = []
    if result.suppressed:
        hidden.append(f"Suppressed inline: {len(result.suppressed)}.")
    if result.baselined:
        hidden.append(f"Hidden by the baseline: {len(result.baselined)}.")
    if result.stale_baseline:
        hidden.append(f"Stale baseline entries: {len(result.stale_baseline)}.")
    if hidden:
        lines += [" ".join(hidden), ""]
    if result.stale_baseline:
        stale = sorted(result.stale_baseline, key=_stale_key)
        summary = _plural(len(stale), "stale baseline entry", "stale baseline entries")
        body = ["These no longer match any finding; regenerate the baseline to drop them.", ""]
        lines += _folded(summary, body + [_stale_item(e) for e in stale])
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"
