"""``--format sarif``: a SARIF 2.1.0 log for code-scanning services and IDEs.

One run with one tool component. ``tool.driver.rules`` lists every rule the
run knew about (sorted by code) so that viewers can show each rule's summary,
help and documentation link; every result points back into it by ``ruleIndex``.

Besides the reported findings the log carries what the filter step hid, so
the picture is complete and a viewer can tell the cases apart:

* inline suppressions -> ``suppressions: [{"kind": "inSource", ...}]`` with the
  reason written in the source as justification;
* findings recorded in the baseline -> ``baselineState: "unchanged"`` and an
  ``external`` suppression;
* baseline entries that no longer match anything -> ``baselineState:
  "absent"``, level ``note``.

Results carry ``partialFingerprints["policylint/v1"]``, a hash of where the
problem is *logically* (rule, file, document, path inside the document,
subject), not of its line, so a service keeps tracking the same alert when
lines above it move.

Output is deterministic: keys sorted, results in a fixed order, no
timestamps, no absolute paths unless the input itself named one.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from policylint import __version__
from policylint.finding import Finding, Severity
from policylint.report import ReportContext, fix_of
from policylint.report.safe_text import json_ascii_controls
from policylint.engine.rule import Rule

if TYPE_CHECKING:
    from policylint.engine.result import LintResult

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://github.com/policylint/policylint"
FINGERPRINT_KEY = "policylint/v1"
SRCROOT = "%SRCROOT%"
SRCROOT_DESCRIPTION = (
    "The repository root: the top of the git work tree holding the policylint configuration, "
    "or the configuration's folder outside git. Relative result URIs are resolved against it, "
    "whatever folder policylint was run from."
)

_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}

BASELINE_JUSTIFICATION = "recorded in the baseline"
STALE_JUSTIFICATION = "baseline entry no longer matches any finding"


def level(severity: Severity) -> str:
    """The SARIF ``level`` for a severity (SARIF has no "info"; "note" is its equivalent)."""
    return _LEVEL[severity]


def message_text(message: str, hint: str) -> str:
    """The finding message with its hint, as one plain-text string."""
    return f"{message} (hint: {hint})" if hint else message


def artifact_location(file: str) -> dict[str, str]:
    """Where ``file`` lives, relative to the source root whenever possible.

    Files inside the repository arrive as POSIX paths relative to its root
    (see :mod:`policylint.report.paths`); they are percent-encoded (spaces and
    the like are not allowed in a URI) and anchored at ``%SRCROOT%`` so
    consumers resolve them against their checkout.
    A path the user gave as absolute stays absolute, as a ``file://`` URI.
    """
    posix = file.replace("\\", "/")
    if PurePosixPath(posix).is_absolute():
        return {"uri": "file://" + quote(posix, safe="/")}
    return {"uri": quote(posix, safe="/"), "uriBaseId": SRCROOT}


def region(line: int, column: int) -> dict[str, int]:
    """A 1-based start position; line 0 ("the whole file") becomes line 1 because SARIF lines start at 1."""
    return {"startLine": max(line, 1), "startColumn": max(column, 1)}


def fingerprint_base(code: str, file: str, doc_index: int | str, doc_path: str, subject: str) -> str:
    """The line-independent identity of a problem, before disambiguation."""
    # A unit separator keeps ("a", "bc") and ("ab", "c") from hashing alike.
    return "\x1f".join((code, file, str(doc_index), doc_path, subject))


def fingerprints(findings: list[Finding]) -> list[str]:
    """``policylint/v1`` fingerprints for ``findings`` (same order), unique within the run.

    Several findings can share every line-independent part (a file-level
    problem with no document path, say); the n-th of them in file order gets
    ordinal n mixed in. Ordinals only change when such twins are reordered,
    which a mere line shift does not do.
    """
    # Work on positions, not on Finding objects: exact twins may appear more than once.
    order = sorted(range(len(findings)), key=lambda i: (findings[i].sort_key(), i))
    seen: Counter[str] = Counter()
    result = [""] * len(findings)
    for i in order:
        f = findings[i]
        key = f.key()  # the one identity of a finding, never its display label
        base = fingerprint_base(key.code, key.file, key.document, key.path, key.subject)
        ordinal = seen[base]
        seen[base] += 1
        result[i] = hashlib.sha256(f"{base}\x1f{ordinal}".encode()).hexdigest()
    return result


def stale_key(entry: dict[str, str]) -> tuple[str, str, str, str, str]:
    """Sort key for stale baseline entries (their list comes in no guaranteed order)."""
    file, code, subject, path, message = (entry.get(k, "") for k in ("file", "code", "subject", "path", "message"))
    return (file, code, subject, path, message)


def stale_text(entry: dict[str, str]) -> str:
    """What a stale baseline entry recorded, in words: code, subject, path and message when known."""
    parts = [entry.get("code", "")]
    if entry.get("subject"):
        parts.append(entry["subject"])
    if entry.get("path"):
        parts.append(f"at {entry['path']}")
    text = " ".join(p for p in parts if p)
    if entry.get("message"):
        text += f": {entry['message']}"
    return text


def _stale_fingerprints(entries: list[dict[str, str]]) -> list[str]:
    # The baseline can record the same key several times (one per finding), so
    # identical entries get an ordinal like identical findings do.
    seen: Counter[str] = Counter()
    result = []
    for entry in entries:
        base = fingerprint_base(
            entry.get("code", ""), entry.get("file", ""), "stale", entry.get("path", ""), entry.get("subject", "")
        )
        ordinal = seen[base]
        seen[base] += 1
        result.append(hashlib.sha256(f"{base}\x1f{ordinal}".encode()).hexdigest())
    return result


def _rule_descriptor(code: str, rule: object | None, name: str) -> dict[str, Any]:
    if not isinstance(rule, Rule):
        descriptor: dict[str, Any] = {"id": code}
        if name:
            descriptor["name"] = name
        return descriptor
    full = str(rule.docs.get("what") or rule.summary).strip()
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": full},
        "help": {"text": f"{full}\n\nDocumentation: {rule.help_uri}", "markdown": rule.markdown()},
        "helpUri": rule.help_uri,
        "defaultConfiguration": {"level": level(rule.severity)},
        "properties": {
            "tags": [rule.section] if rule.section else [],
            "subject": rule.subject,
            **({"fix": rule.fix} if rule.fix else {}),
        },
    }


def _rules(result: LintResult, context: ReportContext) -> list[dict[str, Any]]:
    """Every rule in the context, plus any rule a result names that the context lacks."""
    names: dict[str, str] = {}
    everything = [*result.findings, *(f for f, _ in result.suppressed), *result.baselined]
    for f in sorted(everything, key=Finding.sort_key):
        names.setdefault(f.code, f.name)
    for entry in result.stale_baseline:
        names.setdefault(entry.get("code", ""), "")
    codes = sorted(set(context.rules) | set(names))
    return [_rule_descriptor(code, context.rules.get(code), names.get(code, "")) for code in codes]


def _finding_result(f: Finding, rule_index: dict[str, int], fp: str) -> dict[str, Any]:
    properties: dict[str, Any] = {"document": f.doc_index}
    if f.doc_path:
        properties["path"] = f.doc_path
    if f.subject:
        properties["subject"] = f.subject
    return {
        "ruleId": f.code,
        "ruleIndex": rule_index[f.code],
        "level": level(f.severity),
        "message": {"text": message_text(f.message, f.hint)},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": artifact_location(f.file),
                    "region": region(f.line, f.column),
                }
            }
        ],
        "partialFingerprints": {FINGERPRINT_KEY: fp},
        "properties": properties,
    }


def _stale_result(entry: dict[str, str], rule_index: dict[str, int], fp: str) -> dict[str, Any]:
    code = entry.get("code", "")
    properties: dict[str, Any] = {}
    for key in ("path", "subject"):
        if entry.get(key):
            properties[key] = entry[key]
    res: dict[str, Any] = {
        "ruleId": code,
        "ruleIndex": rule_index[code],
        "level": "note",
        "message": {"text": f"Baseline entry no longer matches any finding: {stale_text(entry)}"},
        # Code-scanning services reject results without a location; the file is all we know.
        "locations": [{"physicalLocation": {"artifactLocation": artifact_location(entry.get("file", ""))}}],
        "partialFingerprints": {FINGERPRINT_KEY: fp},
        "baselineState": "absent",
        # Services that ignore baselineState (GitHub code scanning) would otherwise
        # open an alert for a problem that is gone; a suppression keeps it closed.
        "suppressions": [{"kind": "external", "justification": STALE_JUSTIFICATION}],
    }
    if properties:
        res["properties"] = properties
    return res


def build_log(result: LintResult, context: ReportContext) -> dict[str, Any]:
    """The SARIF log as a JSON-ready dict (exposed for tests and embedding)."""
    rules = _rules(result, context)
    rule_index = {r["id"]: i for i, r in enumerate(rules)}
    suppressed = sorted(result.suppressed, key=lambda pair: (pair[0].sort_key(), pair[1]))
    baselined = sorted(result.baselined, key=lambda f: (f.sort_key(), f.doc_index, f.doc_path))
    reported = list(result.findings)
    hidden = [f for f, _ in suppressed]
    fps = fingerprints([*reported, *hidden, *baselined])
    fp_reported = fps[: len(reported)]
    fp_hidden = fps[len(reported) : len(reported) + len(hidden)]
    fp_baselined = fps[len(reported) + len(hidden) :]
    # SARIF wants baselineState on all results of a run or on none of them.
    with_state = context.baseline_used or bool(result.baselined) or bool(result.stale_baseline)

    results: list[dict[str, Any]] = []
    for f, fp in zip(reported, fp_reported, strict=True):
        res = _finding_result(f, rule_index, fp)
        fix = fix_of(f, context)
        if fix is not None:
            # how `check --fix` may fix it: safe, unsafe (--unsafe-fixes) or display-only
            res["properties"]["fix"] = fix
        if with_state:
            res["baselineState"] = "new"
        results.append(res)
    for (f, reason), fp in zip(suppressed, fp_hidden, strict=True):
        res = _finding_result(f, rule_index, fp)
        if with_state:
            res["baselineState"] = "new"
        res["suppressions"] = [{"kind": "inSource", "justification": reason}]
        results.append(res)
    for f, fp in zip(baselined, fp_baselined, strict=True):
        res = _finding_result(f, rule_index, fp)
        res["baselineState"] = "unchanged"
        res["suppressions"] = [{"kind": "external", "justification": BASELINE_JUSTIFICATION}]
        results.append(res)
    stale = sorted(result.stale_baseline, key=stale_key)
    for entry, fp in zip(stale, _stale_fingerprints(stale), strict=True):
        results.append(_stale_result(entry, rule_index, fp))

    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "policylint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": rules,
            }
        },
        # PyYAML marks count characters, not UTF-16 units.
        "columnKind": "unicodeCodePoints",
        "originalUriBaseIds": {SRCROOT: {"description": {"text": SRCROOT_DESCRIPTION}}},
        "results": results,
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render(result: LintResult, context: ReportContext) -> str:
    text = json.dumps(build_log(result, context), indent=2, sort_keys=True, ensure_ascii=False)
    return json_ascii_controls(text) + "\n"
