"""Baseline files: how one is written, and what it hides in the runs that judge a change.

A baseline hides, in the runs that judge a change, only what it accepted before that change.

A baseline accepts the findings a repository had when it was written. Written in the same change
as the raise it accepts, it accepted that raise: the red team (2026-12-07, round 15) raised
serving 48 -> 120, ran ``policylint baseline``, added a hand-written PL950 entry and
``baseline:`` to the configuration in one commit, and all three gates passed. So the pre-commit
hook (against ``HEAD``) and ``--diff`` (against the base revision) take as accepted only the
findings that the baseline the reference revision configured accepted as well - read with git,
as the file and the configuration were then. A finding accepted only by an entry the change adds
or raises is reported, with a note saying so: commit a baseline in a change of its own, where it
hides nothing the change did.

A run that does not judge a change (``check .``) cannot tell and uses the baseline as written.
Rules that judge a change (PL950-PL952: they read the base revision's facts) are never accepted
by a baseline, which is written by a run without a base.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from policylint.engine.filter import Accepted, BaselineKey
    from policylint.engine.result import LintResult
    from policylint.engine.rule import RuleSet
    from policylint.finding import Finding
    from policylint.model.load import SourceFile

#: facts known only with ``--diff`` (the base revision's figures): a rule that needs one judges a change
CHANGE_FACTS = frozenset({
    "reserved_gpus_before", "capacity_gpus_before", "owned_gpus_before", "baseline_gpus_before",
    "owned_and_proposed_gpus_before", "gpu_model_before",
})

NOTE_ADDED = (" [accepted only by a baseline entry this change adds; a change cannot accept its own findings:"
              " commit the baseline in a change of its own]")
NOTE_CHANGE_RULE = " [a baseline cannot accept it: the rule judges a change, and a baseline is written without one]"


def write_baseline(findings: list[Finding], root: Path) -> str:
    """Baseline file text for ``findings`` (sorted, stable, no line numbers).

    Findings of rules that compare numbers record them (``measured`` and
    ``allowed``), so a later run can tell a finding that got worse.
    """
    import json

    from policylint.engine.filter import _FIGURE_FIELDS, baseline_key

    entries: list[dict[str, object]] = []
    for f in findings:
        code, file, subject, path = baseline_key(f, root)
        entry: dict[str, object] = {"code": code, "file": file, "subject": subject, "path": path, "message": f.message}
        if f.figures is not None:
            entry["measured"], entry["allowed"] = f.figures
        entries.append(entry)
    entries.sort(key=lambda e: (
        *(str(e[k]) for k in ("file", "code", "subject", "path", "message")),
        tuple(float(str(e[k])) for k in _FIGURE_FIELDS if k in e),
    ))
    return json.dumps({"version": 1, "findings": entries}, indent=2, sort_keys=True) + "\n"


def change_rules(ruleset: RuleSet) -> frozenset[str]:
    """Codes of the rules that judge a change: they need a fact only ``--diff`` gives (:data:`CHANGE_FACTS`)."""
    return frozenset(code for code, rule in ruleset.rules.items() if CHANGE_FACTS & set(rule.needs))


def lapse_baselined(
    result: LintResult,
    baseline: Path,
    root: Path,
    ruleset: RuleSet,
    base_text: Callable[[SourceFile], str | None] | None,
    configured_then: bool,
    baseline_only: bool,
) -> tuple[LintResult, list[Finding]]:
    """``result`` (not narrowed yet) with what its baseline may not hide in this change reported, and the PL034 findings.

    ``base_text`` reads a file as the reference revision held it (None: no reference, and only
    the rules that judge a change are taken back). ``configured_then``: whether that revision's
    configuration named the same baseline (a file present but not configured accepted nothing).
    ``baseline_only``: the change touched nothing but the baseline and the configuration, so the
    entries it adds may accept today's findings - each one exactly as it stands (PL034 otherwise:
    an entry planted for a finding not made yet, or with figures above it, accepts a later raise).
    """
    from policylint.engine.filter import baseline_key, parse_baseline_text, worse
    from policylint.finding import sort_findings
    from policylint.model.load import SourceFile

    judged = change_rules(ruleset)
    then: dict[BaselineKey, list[Accepted]] | None = None
    unmatched: list[Finding] = []
    if base_text is not None:
        then = {}
        if configured_then:
            text = base_text(SourceFile(path=baseline, display=str(baseline), text=""))
            if text is not None:
                try:
                    then = parse_baseline_text(text, str(baseline))
                except Exception:  # noqa: BLE001 - a base file that does not read accepted nothing
                    then = {}
        unmatched = _unmatched_additions(result, baseline, root, then, judged)
    if not result.baselined:
        return result, unmatched
    kept: list[Finding] = []
    revived: list[Finding] = []
    for f in sorted(result.baselined, key=lambda f: (f.sort_key(), f.figures or ())):
        if f.code in judged:
            revived.append(replace(f, message=f.message + NOTE_CHANGE_RULE))
            continue
        if then is None or baseline_only:
            kept.append(f)
            continue
        key = baseline_key(f, root)
        accepted = then.get(key) or (then.get((key[0], key[1], f.subject, key[3])) if f.subject else None)
        index = next((i for i, a in enumerate(accepted or ()) if not worse(f.figures, a, f.message)), None)
        if accepted is not None and index is not None:
            accepted.pop(index)
            kept.append(f)
        else:
            revived.append(replace(f, message=f.message + NOTE_ADDED,
                                   hint=f.hint or "fix it, or accept it with 'policylint baseline' in a change of its own"))
    if revived:
        result.baselined = sort_findings(kept)
        result.findings = sort_findings([*result.findings, *revived])
    return result, unmatched


def _unmatched_additions(
    result: LintResult, baseline: Path, root: Path, then: dict[BaselineKey, list[Accepted]], judged: frozenset[str]
) -> list[Finding]:
    """PL034 for each entry the baseline holds beyond ``then`` that is no finding of this run exactly as it stands."""
    from policylint.engine.filter import _numbers, baseline_key, read_baseline_entries
    from policylint.finding import Finding, Severity

    now = read_baseline_entries(baseline)
    added: list[tuple[BaselineKey, Accepted]] = []
    for key, entries in sorted(now.items()):
        before = list(then.get(key, ()))
        for accepted in entries:
            if accepted in before:
                before.remove(accepted)
            else:
                added.append((key, accepted))
    if not added:
        return []
    standing: dict[BaselineKey, list[Finding]] = {}
    for f in [*result.findings, *result.baselined]:
        standing.setdefault(baseline_key(f, root), []).append(f)
        if f.subject:
            key = baseline_key(f, root)
            if f.subject != key[2]:
                standing.setdefault((key[0], key[1], f.subject, key[3]), []).append(f)

    def exactly(f: Finding, accepted: Accepted) -> bool:
        if accepted is None:
            return True
        if isinstance(accepted, str):
            return _numbers(f.message) == _numbers(accepted)
        return f.figures is not None and (float(f.figures[0]), float(f.figures[1])) == accepted

    from policylint.model.load import display_path

    out: list[Finding] = []
    shown = display_path(baseline)
    places = _entry_places(baseline, [key for key, _ in added])
    for n, (key, accepted) in enumerate(added):
        code, file, subject, path = key
        candidates = standing.get(key, [])
        match = next((f for f in candidates if exactly(f, accepted)), None) if code not in judged else None
        if match is not None:
            candidates.remove(match)
            continue
        why = ("it judges a change, and a baseline is written without one" if code in judged else
               "no finding of this run is that one as it stands (a finding not made yet, or figures above today's)")
        line, column = places[n]
        out.append(Finding(
            file=shown, line=line, column=column, code="PL034", name="baseline-entry-unmatched", severity=Severity.ERROR,
            message=f"baseline entry {code} for {subject} in {file} ({path}), added in this change, accepts nothing"
                    f" today: {why}",
            hint="write the baseline with 'policylint baseline', which records today's findings as they are",
            doc_index=0, doc_path="findings", subject=f"baseline {shown}",
        ))
    return out


#: the most entries of a baseline placed at their line (each is a search of the file; the rest at its first line)
_PLACED = 20


def _entry_places(baseline: Path, keys: list[BaselineKey]) -> list[tuple[int, int]]:
    """(line, column) of each entry ``keys`` name (in order, each entry once) in the baseline file; (1, 1) when unknown."""
    import json

    from policylint.model.config_locate import locate

    out = [(1, 1)] * len(keys)
    try:
        rows = json.loads(baseline.read_text(encoding="utf-8")).get("findings", [])
    except Exception:  # noqa: BLE001 - read and checked already; unplaced at worst
        return out
    used: set[int] = set()
    for n, key in enumerate(keys[:_PLACED]):
        for i, row in enumerate(rows):
            if i not in used and isinstance(row, dict) and tuple(row.get(k) for k in ("code", "file", "subject", "path")) == key:
                used.add(i)
                try:
                    out[n] = locate(str(baseline), f"findings[{i}]") or (1, 1)
                except Exception:  # noqa: BLE001 - unplaced at worst
                    pass
                break
    return out


def baseline_configured_then(
    config_path: Path | None, baseline: Path, changed: Sequence[Path], explicit: bool,
    base_text: Callable[[SourceFile], str | None],
) -> bool:
    """Whether the reference revision's configuration named ``baseline`` as the baseline file.

    True when the baseline was given on the command line (``explicit``: the caller's choice, not the
    repository's) or when the configuration file is not among the ``changed`` files; otherwise its
    text at the reference is read and its ``baseline`` key compared, by real path.
    """
    if explicit or config_path is None:
        return True
    real = os.path.realpath(config_path)
    if all(os.path.realpath(p) != real for p in changed):
        return True
    from policylint.model.load import SourceFile

    text = base_text(SourceFile(path=config_path, display=str(config_path), text=""))
    if text is None:
        return False
    named = _baseline_key_of(config_path, text)
    return named is not None and os.path.realpath(config_path.parent / named) == os.path.realpath(baseline)


def _baseline_key_of(config_path: Path, text: str) -> str | None:
    """The ``baseline`` a configuration's text names (``[tool.policylint]`` in a pyproject.toml), or None."""
    data: Any
    try:
        if config_path.name == "pyproject.toml":
            import tomllib

            data = (tomllib.loads(text).get("tool") or {}).get("policylint")
        else:
            from policylint.model.load import LoadLimits, SourceFile, parse_text

            source = SourceFile(path=config_path, display=str(config_path), text=text)
            parse_text(source, LoadLimits())  # the loader's own limits: aliases, size, depth
            data = source.documents[0].data if len(source.documents) == 1 else None
    except Exception:  # noqa: BLE001 - a configuration that does not read named nothing
        return None
    value = data.get("baseline") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None
