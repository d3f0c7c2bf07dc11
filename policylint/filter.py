"""Step 6: decide which findings are reported.

In order: rule selection (select / ignore / per-file-ignores), inline
suppressions written in the linted YAML, and the baseline file. Suppressions
must give a reason; they may expire; those that hide nothing are reported.

Suppression comments::

    reservedGpus: 64  # policylint: disable=PL101 -- capacity for the Q1 launch, see CAP-123
    # policylint: disable=reserved-above-baseline until=2027-03-31 -- launch buffer
    # policylint: disable-file=PL105 -- generated fixture, no trace exists

A comment at the end of a line covers that line; a comment alone on its line
covers the next line; ``disable-file`` covers the whole file.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from policylint.errors import PolicylintError
from policylint.finding import Finding, Severity

if TYPE_CHECKING:
    from policylint.load import SourceFile
    from policylint.ruleset import RuleSet

_MARKER = "policylint:"
_RULE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_,- ")


@dataclass(frozen=True)
class Directive:
    """One parsed ``disable``/``disable-file`` comment body."""

    kind: str  # "disable" or "disable-file"
    rules: str  # the rule list as written (codes or names, comma-separated)
    until: str | None
    reason: str | None  # None when there is no ``--``


def find_comment(text: str) -> tuple[int, str] | None:
    """(index of the ``#``, body) of the first ``# policylint:`` comment on a line, else None.

    Written without regular expressions: each character is looked at a bounded
    number of times, so a line of any length is read in linear time.
    """
    start = 0
    while True:
        at = text.find(_MARKER, start)
        if at < 0:
            return None
        j = at - 1
        while j >= 0 and text[j].isspace():
            j -= 1
        if j >= 0 and text[j] == "#":
            return j, text[at + len(_MARKER) :].strip()
        start = at + len(_MARKER)


def parse_directive(body: str) -> Directive | None:
    """Parse ``disable=CODE[,CODE] [until=YYYY-MM-DD] [-- reason]``; None when malformed.

    The reason is everything after the first ``--``; ``until=`` is the last
    word before it. Linear in the length of ``body`` (the pattern it replaces
    backtracked: 4,000 spaces took minutes).
    """
    head, sep, reason = body.partition("--")
    kind, eq, rest = head.partition("=")
    kind = kind.rstrip()
    if not eq or kind not in ("disable", "disable-file"):
        return None
    words = rest.split()
    until = None
    if words and words[-1].startswith("until="):
        until = words.pop()[len("until=") :]
        if not until:
            return None
    rules = " ".join(words)
    if not rules or not _RULE_CHARS.issuperset(rules):
        return None
    return Directive(kind, rules, until, reason.strip() if sep else None)


@dataclass
class Suppression:
    file: str
    line: int  # line of the comment
    column: int
    target: int | None  # covered line, None for the whole file
    rules: list[str]
    reason: str
    until: dt.date | None
    used: bool = False


@dataclass
class SuppressionScan:
    suppressions: list[Suppression] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def _meta(file: str, line: int, column: int, code: str, name: str, message: str, hint: str = "", severity: Severity = Severity.WARNING) -> Finding:
    return Finding(file=file, line=line, column=column, code=code, name=name, severity=severity, message=message, hint=hint)


def scan_suppressions(source: SourceFile, ruleset: RuleSet) -> SuppressionScan:
    """Find suppression comments in one file; malformed ones become findings."""
    scan = SuppressionScan()
    for n, text in enumerate(source.lines, start=1):
        if _MARKER not in text:
            continue
        comment = find_comment(text)
        if comment is None:
            continue
        hash_at, body = comment
        column = hash_at + 1
        d = parse_directive(body)
        if d is None:
            scan.findings.append(
                _meta(source.display, n, column, "PL033", "invalid-suppression",
                      f"cannot read suppression '{body}'",
                      "write '# policylint: disable=CODE[,CODE] [until=YYYY-MM-DD] -- reason'")
            )
            continue
        names = [r.strip() for r in d.rules.split(",") if r.strip()]
        codes = []
        for name in names:
            rule = ruleset.find(name)
            if rule is None:
                scan.findings.append(
                    _meta(source.display, n, column, "PL033", "invalid-suppression", f"suppression names unknown rule '{name}'")
                )
                continue
            codes.append(rule.code)
        until = None
        if d.until:
            try:
                until = dt.date.fromisoformat(d.until)
            except ValueError:
                scan.findings.append(
                    _meta(source.display, n, column, "PL033", "invalid-suppression",
                          f"suppression expiry '{d.until}' is not a date (YYYY-MM-DD)")
                )
                continue
        reason = d.reason or ""
        if not reason:
            scan.findings.append(
                _meta(source.display, n, column, "PL030", "suppression-without-reason",
                      f"suppression of {', '.join(names)} gives no reason, so it is not applied",
                      "add ' -- <why this is acceptable>' after the rule list")
            )
            continue
        if not codes:
            continue
        before = text[:hash_at].strip()
        target: int | None
        if d.kind == "disable-file":
            target = None
        else:
            target = n if before else n + 1
        scan.suppressions.append(Suppression(source.display, n, column, target, codes, reason, until))
    return scan


@dataclass
class FilterSettings:
    selected: set[str]
    per_file_ignores: dict[str, list[str]]
    root: Path
    today: dt.date
    baseline: Path | None = None


def root_relative(display: str, root: Path) -> str:
    path = Path(display)
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def baseline_key(f: Finding, root: Path) -> tuple[str, str, str, str]:
    """Identity of a finding that survives edits: rule, file, subject (or document), document path."""
    anchor = f.subject or f"document {f.doc_index}"
    return (f.code, root_relative(f.file, root), anchor, f.doc_path)


#: Largest baseline file read (about 200,000 findings).
MAX_BASELINE_BYTES = 64 * 1024 * 1024
_BASELINE_FIELDS = ("code", "file", "subject", "path")


def read_baseline(path: Path) -> Counter[tuple[str, str, str, str]]:
    """The findings a baseline file accepts, as counted keys.

    The file must be a regular file under :data:`MAX_BASELINE_BYTES`, and every
    entry's fields text; anything else stops the run with the file and key.
    """
    from policylint.safeio import UnreadableFile, read_text

    if not path.exists() and not path.is_symlink():
        raise PolicylintError(f"baseline file not found: {path}")
    try:
        text = read_text(path, limit=MAX_BASELINE_BYTES, what="baseline file")
    except UnreadableFile as exc:
        raise PolicylintError(exc.message, source=str(path)) from None
    source = str(path)
    try:
        data = json.loads(text)
    except RecursionError:
        raise PolicylintError("not a policylint baseline file (JSON nested too deeply)", source=source) from None
    except ValueError as exc:
        raise PolicylintError(f"not a policylint baseline file (invalid JSON: {exc})", source=source) from None
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
        raise PolicylintError("not a policylint baseline file (no 'findings' list)", source=source)
    keys: Counter[tuple[str, str, str, str]] = Counter()
    for i, entry in enumerate(data["findings"]):
        if not isinstance(entry, dict):
            raise PolicylintError(
                f"not a policylint baseline file (an entry must be a mapping, got {type(entry).__name__})",
                source=source,
                key=f"findings[{i}]",
            )
        values = []
        for name in _BASELINE_FIELDS:
            value = entry.get(name)
            if not isinstance(value, str):
                got = "nothing" if name not in entry else type(value).__name__
                raise PolicylintError(
                    f"not a policylint baseline file (must be text, got {got})", source=source, key=f"findings[{i}].{name}"
                )
            values.append(value)
        keys[(values[0], values[1], values[2], values[3])] += 1
    return keys


def write_baseline(findings: list[Finding], root: Path) -> str:
    """Baseline file text for ``findings`` (sorted, stable, no line numbers)."""
    entries = []
    for f in findings:
        code, file, subject, path = baseline_key(f, root)
        entries.append({"code": code, "file": file, "subject": subject, "path": path, "message": f.message})
    entries.sort(key=lambda e: (e["file"], e["code"], e["subject"], e["path"], e["message"]))
    return json.dumps({"version": 1, "findings": entries}, indent=2, sort_keys=True) + "\n"


def apply_filters(
    findings: list[Finding],
    sources: dict[str, SourceFile],
    ruleset: RuleSet,
    settings: FilterSettings,
) -> tuple[list[Finding], list[tuple[Finding, str]], list[Finding], list[dict[str, str]]]:
    """Return (reported, suppressed-with-reason, baselined, stale baseline entries)."""
    selected = settings.selected

    def ignored_by_file(f: Finding) -> bool:
        rel = root_relative(f.file, settings.root)
        for pattern, selectors in settings.per_file_ignores.items():
            if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(f.file, pattern):
                for s in selectors:
                    if any(r.code == f.code for r in ruleset.matches(s)):
                        return True
        return False

    kept = [f for f in findings if f.code in selected and not ignored_by_file(f)]

    scans = {name: scan_suppressions(src, ruleset) for name, src in sorted(sources.items())}
    meta: list[Finding] = [m for s in scans.values() for m in s.findings]
    reported: list[Finding] = []
    suppressed: list[tuple[Finding, str]] = []
    for f in kept:
        scan = scans.get(f.file)
        hit = None
        for s in scan.suppressions if scan else []:
            if f.code in s.rules and (s.target is None or s.target == f.line):
                hit = s
                break
        if hit is None:
            reported.append(f)
            continue
        hit.used = True
        if hit.until is not None and hit.until < settings.today:
            reported.append(f)
            continue
        suppressed.append((f, hit.reason))
    for scan in scans.values():
        for s in scan.suppressions:
            if s.until is not None and s.until < settings.today:
                meta.append(
                    _meta(s.file, s.line, s.column, "PL031", "suppression-expired",
                          f"suppression of {', '.join(s.rules)} expired on {s.until.isoformat()} and no longer applies",
                          "fix the finding, or renew the suppression with a new reason and date")
                )
            elif not s.used:
                meta.append(
                    _meta(s.file, s.line, s.column, "PL032", "unused-suppression",
                          f"suppression of {', '.join(s.rules)} matches no finding",
                          "remove the comment")
                )
    reported += [m for m in meta if m.code in selected and not ignored_by_file(m)]

    baselined: list[Finding] = []
    stale: list[dict[str, str]] = []
    if settings.baseline is not None:
        remaining = read_baseline(settings.baseline)
        fresh = []
        for f in reported:
            key = baseline_key(f, settings.root)
            if remaining[key] > 0:
                remaining[key] -= 1
                baselined.append(f)
            else:
                fresh.append(f)
        reported = fresh
        for (code, file, subject, path), count in sorted(remaining.items()):
            for _ in range(count):
                stale.append({"code": code, "file": file, "subject": subject, "path": path})
    return reported, suppressed, baselined, stale

