"""Step 6: decide which findings are reported.

In order: inline suppressions written in the linted YAML are matched against
every finding, then rule selection (select / ignore / per-file-ignores) drops
findings, then the baseline file hides accepted ones - unless their figures got
worse. Matching before selecting keeps a suppression whose rule is switched
off from being called unused. Suppressions must give a reason (the
placeholder ``TODO: reason`` that ``check --add-noqa`` writes is none); they may
expire; those that hide nothing are reported.

Suppression comments::

    reservedGpus: 64  # policylint: disable=PL101 -- capacity for the Q1 launch, see CAP-123
    # policylint: disable=reserved-above-baseline until=2027-03-31 -- launch buffer
    # policylint: disable-file=PL105 -- generated fixture, no trace exists

A comment at the end of a line covers that line; a comment alone on its line
covers the next line; ``disable-file`` covers the whole file. The directive may
follow other words in the same comment (``# tuned in CAP-9  # policylint:
disable=...``). Only real YAML comments count: the comments come from where
the parser's scalars end (:mod:`policylint.model.load.comments`), so a ``#`` inside
a quoted, plain or block value is never read as a suppression.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import json
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from policylint.catalogue import builtin
from policylint.errors import PolicylintError
from policylint.finding import Finding
from policylint.model.load.comments import source_comments

if TYPE_CHECKING:
    from policylint.model.load import SourceFile
    from policylint.engine.rule import RuleSet

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
    """(index of the ``#``, body) of the first ``# policylint:`` directive in ``text``, else None.

    ``text`` is one comment (from its ``#`` to the end of the line); the
    directive may start the comment or follow other words in it.

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


#: The reason ``check --add-noqa`` writes (:data:`policylint.edit.noqa.PLACEHOLDER`): no reason yet.
PLACEHOLDER_REASON = "TODO: reason"


def is_placeholder(reason: str) -> bool:
    """Whether ``reason`` is the placeholder ``--add-noqa`` writes (any case, any spacing), not a reason."""
    return " ".join(reason.lower().split()) == PLACEHOLDER_REASON.lower()


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


def _meta(file: str, line: int, column: int, code: str, message: str, hint: str = "") -> Finding:
    """A finding about a suppression comment; name and severity come from the rule catalogue."""
    rule_name, severity = builtin(code)
    return Finding(file=file, line=line, column=column, code=code, name=rule_name, severity=severity, message=message, hint=hint)


def scan_suppressions(source: SourceFile, ruleset: RuleSet) -> SuppressionScan:
    """Find suppression comments in one file; malformed ones become findings."""
    scan = SuppressionScan()
    for comment in source_comments(source, _MARKER):
        found = find_comment(comment.text)
        if found is None:
            continue
        n = comment.line
        hash_at, body = found
        column = comment.column + hash_at
        d = parse_directive(body)
        if d is None:
            scan.findings.append(
                _meta(source.display, n, column, "PL033",
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
                    _meta(source.display, n, column, "PL033", f"suppression names unknown rule '{name}'")
                )
                continue
            codes.append(rule.code)
        until = None
        if d.until:
            try:
                until = dt.date.fromisoformat(d.until)
            except ValueError:
                scan.findings.append(
                    _meta(source.display, n, column, "PL033",
                          f"suppression expiry '{d.until}' is not a date (YYYY-MM-DD)")
                )
                continue
        reason = d.reason or ""
        if not reason:
            scan.findings.append(
                _meta(source.display, n, column, "PL030",
                      f"suppression of {', '.join(names)} gives no reason, so it is not applied",
                      "add ' -- <why this is acceptable>' after the rule list")
            )
            continue
        if is_placeholder(reason):
            # written by `check --add-noqa`: a place to decide, not a decision
            scan.findings.append(
                _meta(source.display, n, column, "PL030",
                      f"suppression of {', '.join(names)} gives the placeholder reason '{reason}', so it is not applied",
                      f"replace '{reason}' with why this is acceptable (or fix the finding and remove the comment)")
            )
            continue
        if not codes:
            continue
        target: int | None
        if d.kind == "disable-file":
            target = None
        else:
            target = n + 1 if comment.alone else n
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
    """:meth:`Finding.key` as the baseline writes it: rule, root-relative file, subject (or document), path."""
    key = f.key()
    return (key.code, root_relative(key.file, root), key.subject or f"document {key.document}", key.path)


#: Largest baseline file read (about 200,000 findings).
MAX_BASELINE_BYTES = 64 * 1024 * 1024
_BASELINE_FIELDS = ("code", "file", "subject", "path")
_FIGURE_FIELDS = ("measured", "allowed")

BaselineKey = tuple[str, str, str, str]
#: The figures one baseline entry accepted, (measured, allowed); None for entries written without them.
#: what a baseline entry accepted: the finding's (measured, allowed) figures, or None and its message
Accepted = tuple[float, float] | str | None


def read_baseline_entries(path: Path) -> dict[BaselineKey, list[Accepted]]:
    """The findings a baseline file accepts: per key, the figures of each entry.

    The file must be a regular file under :data:`MAX_BASELINE_BYTES`, and every
    entry's fields text (figures numbers, when present); anything else stops the
    run with the file and key. Files written before figures were recorded are
    read as entries without figures.
    """
    from policylint.safeio import UnreadableFile, read_text

    if not path.exists() and not path.is_symlink():
        raise PolicylintError(f"baseline file not found: {path}")
    try:
        text = read_text(path, limit=MAX_BASELINE_BYTES, what="baseline file")
    except UnreadableFile as exc:
        raise PolicylintError(exc.message, source=str(path)) from None
    return parse_baseline_text(text, str(path))


def parse_baseline_text(text: str, source: str) -> dict[BaselineKey, list[Accepted]]:
    """:func:`read_baseline_entries` of a baseline file's ``text`` (``source`` names it in errors)."""
    if len(text) > MAX_BASELINE_BYTES:
        raise PolicylintError("baseline file too large", source=source)
    try:
        data = json.loads(text)
    except RecursionError:
        raise PolicylintError("not a policylint baseline file (JSON nested too deeply)", source=source) from None
    except ValueError as exc:
        raise PolicylintError(f"not a policylint baseline file (invalid JSON: {exc})", source=source) from None
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
        raise PolicylintError("not a policylint baseline file (no 'findings' list)", source=source)
    entries: dict[BaselineKey, list[Accepted]] = {}
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
        figures: list[float] = []
        for name in _FIGURE_FIELDS:
            if name not in entry:
                continue
            value = entry[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
                got = type(value).__name__
                raise PolicylintError(
                    f"not a policylint baseline file (must be a number, got {got})", source=source, key=f"findings[{i}].{name}"
                )
            figures.append(float(value))
        if len(figures) == 1:
            missing = _FIGURE_FIELDS[1] if "measured" in entry else _FIGURE_FIELDS[0]
            raise PolicylintError(
                "not a policylint baseline file (measured and allowed go together)", source=source, key=f"findings[{i}].{missing}"
            )
        key = (values[0], values[1], values[2], values[3])
        message = entry.get("message")
        if not isinstance(message, str):
            # every file policylint writes has one; an entry stripped of it (and of its figures) would
            # accept any later state of its finding (red team, 2026-12-06)
            got = "nothing" if "message" not in entry else type(message).__name__
            raise PolicylintError(
                f"not a policylint baseline file (must be text, got {got})", source=source, key=f"findings[{i}].message"
            )
        # without figures, the numbers of the message are what was accepted
        accepted: Accepted = (figures[0], figures[1]) if figures else message
        entries.setdefault(key, []).append(accepted)
    return entries


def read_baseline(path: Path) -> Counter[BaselineKey]:
    """The findings a baseline file accepts, as counted keys (figures left out)."""
    return Counter({key: len(accepted) for key, accepted in read_baseline_entries(path).items()})


def worse(figures: tuple[float, float] | None, accepted: Accepted, message: str | None = None) -> bool:
    """Whether a finding's figures break their limit by more than the baseline accepted.

    A finding breaks its limit by ``measured - allowed`` in one direction (too
    much reserved) or the other (too little); it is worse when that distance
    grew in the same direction. Exact numbers, no rounding: 123 -> 124 reserved
    GPUs against the same allowance is worse. A finding without figures was
    accepted with the numbers its message gave (red team, 2026-12-06: a baselined
    4-GPU ask for an unmeasured pool grew to 400 and the entry still accepted it),
    and so was any finding an entry recorded without figures (a file written before
    figures were recorded): other numbers make it a finding the baseline did not
    accept. An entry that recorded neither keeps accepting the finding.
    """
    if isinstance(accepted, str):
        # the numbers it gave, in order: a reworded message (a new release) is the same finding
        return message is not None and _numbers(message) != _numbers(accepted)
    if figures is None or accepted is None:
        return False
    gap = figures[0] - figures[1]
    before = accepted[0] - accepted[1]
    if before >= 0:
        return gap > before
    return gap < before


_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _numbers(message: str) -> list[str]:
    """The numbers a message states, in order (what a baseline entry without figures accepted)."""
    return _NUMBER.findall(message)


def _figure(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.6g}"


def apply_filters(
    findings: list[Finding],
    sources: dict[str, SourceFile],
    ruleset: RuleSet,
    settings: FilterSettings,
) -> tuple[list[Finding], list[tuple[Finding, str]], list[Finding], list[dict[str, str]]]:
    """Return (reported, suppressed-with-reason, baselined, stale baseline entries).

    Every finding first takes its rule's name and severity from ``ruleset`` (the
    configured rule set, overrides applied), so built-in and evaluated rules obey
    ``rules: {CODE: {severity: ...}}`` alike. Suppressions are matched against
    every finding before selection drops any: a comment that hides a finding of
    a rule switched off by ``--ignore`` is used, not unused.
    """
    selected = settings.selected
    relative: dict[str, str] = {}  # one path resolution per file, not per finding

    def ignored_by_file(code: str, file: str) -> bool:
        if not settings.per_file_ignores:
            return False
        rel = relative.get(file)
        if rel is None:
            rel = relative[file] = root_relative(file, settings.root)
        for pattern, selectors in settings.per_file_ignores.items():
            if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(file, pattern):
                for s in selectors:
                    if any(r.code == code for r in ruleset.matches(s)):
                        return True
        return False

    def reports(code: str, file: str) -> bool:
        """Whether this run reports rule ``code`` on ``file`` (selection and per-file ignores)."""
        return code in selected and not ignored_by_file(code, file)

    def chosen(f: Finding) -> bool:
        return reports(f.code, f.file)

    scans = {name: scan_suppressions(src, ruleset) for name, src in sorted(sources.items())}
    meta: list[Finding] = [m for s in scans.values() for m in s.findings]
    reported: list[Finding] = []
    suppressed: list[tuple[Finding, str]] = []
    for f in findings:
        scan = scans.get(f.file)
        hit = None
        for s in scan.suppressions if scan else []:
            if f.code in s.rules and (s.target is None or s.target == f.line):
                hit = s
                break
        if hit is not None:
            hit.used = True
        if not chosen(f):
            continue
        if hit is None or (hit.until is not None and hit.until < settings.today):
            reported.append(f)
        else:
            suppressed.append((f, hit.reason))
    for scan in scans.values():
        for s in scan.suppressions:
            if s.until is not None and s.until < settings.today:
                meta.append(
                    _meta(s.file, s.line, s.column, "PL031",
                          f"suppression of {', '.join(s.rules)} expired on {s.until.isoformat()} and no longer applies",
                          "fix the finding, or renew the suppression with a new reason and date")
                )
            elif not s.used:
                meta.append(
                    _meta(s.file, s.line, s.column, "PL032",
                          f"suppression of {', '.join(s.rules)} matches no finding",
                          "remove the comment")
                )
    reported += [m for m in meta if chosen(m)]
    reported = [configured(f, ruleset) for f in reported]
    suppressed = [(configured(f, ruleset), reason) for f, reason in suppressed]

    baselined: list[Finding] = []
    stale: list[dict[str, str]] = []
    if settings.baseline is not None:
        remaining = read_baseline_entries(settings.baseline)
        fresh = []
        # Exact twins first, then in output order, so which entry a finding consumes is deterministic.
        for f in sorted(reported, key=lambda f: (f.sort_key(), f.figures or ())):
            key = baseline_key(f, settings.root)
            accepted = remaining.get(key)
            if not accepted and f.subject and f.subject != key[2]:
                # Files written before findings had a typed subject recorded the display
                # label (a scheduler queue as "pool kueue-shared/chat"); they still match.
                accepted = remaining.get((key[0], key[1], f.subject, key[3]))
            if not accepted:
                fresh.append(f)
                continue
            # Prefer an entry the finding is no worse than; else it is reported with both figures.
            index = next((i for i, a in enumerate(accepted) if not worse(f.figures, a, f.message)), None)
            if index is not None:
                accepted.pop(index)
                baselined.append(f)
                continue
            was = accepted.pop(0)
            if isinstance(was, str):
                fresh.append(replace(f, message=f"{f.message} [changed since the baseline accepted: {was}]",
                                     hint=f.hint or "fix it, or accept the new state with 'policylint baseline'"))
                continue
            assert was is not None and f.figures is not None  # worse() is False without figures
            fresh.append(
                replace(
                    f,
                    message=f"{f.message} [worse than the baseline accepted: measured {_figure(f.figures[0])} against "
                    f"allowed {_figure(f.figures[1])}, accepted {_figure(was[0])} against {_figure(was[1])}]",
                    hint=f.hint or "fix it, or accept the new state with 'policylint baseline'",
                )
            )
        reported = fresh
        # a finding a suppression hides still has its entry: the entry is not stale, and takes the finding back
        # when the suppression lapses in a change (:mod:`policylint.engine.baselines`, accepted_again)
        for f, _ in suppressed:
            held = remaining.get(baseline_key(f, settings.root))
            if held:
                held.pop(0)
        for (code, file, subject, path), accepted in sorted(remaining.items()):
            # An entry of a rule this run does not report (--ignore, a narrower select, a
            # per-file ignore) was not looked for: it is not gone, and calling it stale would
            # invite dropping an accepted finding from the baseline.
            if not accepted or not reports(code, file):
                continue
            for _ in accepted:
                stale.append({"code": code, "file": file, "subject": subject, "path": path})
    return reported, suppressed, baselined, stale


def configured(f: Finding, ruleset: RuleSet) -> Finding:
    """``f`` with the name and (possibly overridden) severity its rule has in ``ruleset``."""
    rule = ruleset.rules.get(f.code)
    if rule is None or (rule.name == f.name and rule.severity == f.severity):
        return f
    return replace(f, name=rule.name, severity=rule.severity)
