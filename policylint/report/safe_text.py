"""Control characters in text a user or a server supplied, written as visible escapes.

Findings carry text policylint did not write: file and trace paths, names from
documents, values quoted from traces, comments, answers of a Prometheus server.
Printed raw, a line break in such a text splits a report line (and the second
half can be a GitHub Actions workflow command such as ``::error ...``), an
escape sequence (``ESC [``, ``ESC ]``) drives the terminal that shows the log,
a bidirectional override reorders what a reviewer reads, and a lone surrogate
(an undecodable file name) cannot be encoded at all.

:func:`escape_controls` writes each such character as a backslash escape
(``\\n``, ``\\x1b``, ``\\u202e``); :func:`safe_result` applies it to every text
field of a run's result, once, before any reporter sees it (see
:func:`policylint.report.render`). The JSON report is left exact: its encoder
already writes every non-ASCII and control character as a ``\\u`` escape, so
the values stay what the user wrote. The JSON formats that keep non-ASCII text
(SARIF, GitLab) also pass through :func:`json_ascii_controls` so that rule
texts, which are not findings, cannot carry raw C1 controls or line separators.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from policylint.finding import Finding
    from policylint.engine.result import LintResult

__all__ = ["UNSAFE", "escape_controls", "json_ascii_controls", "safe_finding", "safe_result"]

#: What is escaped: C0 controls but the tab (line breaks, ESC, NUL, ...), DEL, the C1
#: controls (NEL, CSI, OSC, ...), the Unicode line and paragraph separators, the
#: bidirectional marks, embeddings, overrides and isolates, and lone surrogates.
#: The tab stays: it neither breaks a line nor drives a terminal.
UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")

#: What ``json.dumps(..., ensure_ascii=False)`` leaves raw: it escapes every C0
#: control inside strings, so a C0 character in its output is the layout's own
#: newline and must stay.
_JSON_RAW = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")

_NAMED = {"\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """``text`` with every character of :data:`UNSAFE` written as a backslash escape."""
    if not UNSAFE.search(text):
        return text  # the common case: no copy
    return UNSAFE.sub(_escape, text)


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def json_ascii_controls(text: str) -> str:
    """JSON text (from ``json.dumps(..., ensure_ascii=False)``) with the raw :data:`UNSAFE` characters ``\\u``-escaped.

    Valid because ``json.dumps`` writes only ASCII outside strings, and the same
    value: a JSON reader decodes ``\\u0085`` to the character it replaced.
    """
    if not _JSON_RAW.search(text):
        return text
    return _JSON_RAW.sub(_json_escape, text)


def safe_finding(f: Finding, *, files: bool = True) -> Finding:
    """``f`` with every text field escaped (the same object when nothing needs it).

    ``files=False`` keeps the file path exact, for formats that encode it
    themselves (a SARIF URI is percent-encoded, a GitLab path JSON-escaped) and
    where it must still name the real file.
    """
    safe = dataclasses.replace(
        f,
        file=escape_controls(f.file) if files else f.file,
        code=escape_controls(f.code),
        name=escape_controls(f.name),
        message=escape_controls(f.message),
        hint=escape_controls(f.hint),
        doc_path=escape_controls(f.doc_path),
        subject=escape_controls(f.subject),
    )
    return f if safe == f else safe


def _safe_entry(entry: dict[str, str], files: bool) -> dict[str, str]:
    return {
        key: escape_controls(value) if isinstance(value, str) and (files or key != "file") else value
        for key, value in entry.items()
    }


def safe_result(result: LintResult, *, files: bool = True) -> LintResult:
    """A copy of ``result`` whose findings, suppression reasons, baseline entries and file names are escaped.

    The sources keep their objects under escaped names (the text reporter looks a
    finding's file up there); their lines are escaped where a code frame prints them.
    ``files=False`` leaves file paths exact (see :func:`safe_finding`).
    """
    name = escape_controls if files else str
    return dataclasses.replace(
        result,
        findings=[safe_finding(f, files=files) for f in result.findings],
        sources={name(key): source for key, source in result.sources.items()},
        suppressed=[(safe_finding(f, files=files), escape_controls(reason)) for f, reason in result.suppressed],
        baselined=[safe_finding(f, files=files) for f in result.baselined],
        stale_baseline=[_safe_entry(entry, files) for entry in result.stale_baseline],
    )
