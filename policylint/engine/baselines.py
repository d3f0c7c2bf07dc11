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

In the same runs, a baselined finding about something nothing judges (a document the run cannot
read or resolve, a pool without measured demand or with members unread) lapses when the change
edits that thing: its figures count documents or workloads, not GPUs, so it stayed "no worse"
while the pool's GPUs grew (round 16). A run that does not judge a change (``check .``) cannot
tell and uses the baseline as written, except for what no baseline accepts: the rules that judge
a change (PL950-PL952: they read the base revision's facts, and a baseline is written by a run
without a base) and PL977 (a loosened configuration is accepted by its own ``accept`` option;
round 18 traded one accepted loosening for another).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from policylint.engine.filter import Accepted, BaselineKey
    from policylint.engine.outlived import Changed
    from policylint.engine.result import LintResult
    from policylint.engine.rule import RuleSet
    from policylint.finding import Finding
    from policylint.model.load import LoadLimits, SourceFile

#: facts known only with ``--diff`` (the base revision's figures): a rule that needs one judges a change
CHANGE_FACTS = frozenset({
    "reserved_gpus_before", "capacity_gpus_before", "owned_gpus_before", "baseline_gpus_before",
    "owned_and_proposed_gpus_before", "gpu_model_before",
})

NOTE_ADDED = (" [accepted only by a baseline entry this change adds; a change cannot accept its own findings:"
              " commit the baseline in a change of its own]")
NOTE_CHANGE_RULE = " [a baseline cannot accept it: the rule judges a change, and a baseline is written without one]"
NOTE_CONFIGURATION = (" [a baseline cannot accept it: a loosened configuration is accepted by PL977's option accept, in the"
                      " configuration, where each loosening is named]")
#: rules a baseline never accepts besides those that judge a change: PL977 counts the loosenings of the
#: configuration, so an accepted count could be traded for others (red team, 2026-12-07, round 18: PL109's
#: loosening swapped for `ignore: [PL950]` under a baselined PL977, serving 48 -> 200)
NEVER_ACCEPTED = frozenset({"PL977"})

#: rules whose finding means its subject is not judged at all (a pool unmeasured or with members unread, a
#: proposal for such a pool), besides the document checks: figures that count documents or workloads, not
#: GPUs, so a baselined one would stay "no worse" whatever the change did to the subject's GPUs
UNJUDGED_RULES = frozenset({"PL110", "PL803", "PL981"})

NOTE_EDITED = (" [accepted by the baseline while it could not be judged; the change edited {what}, so the baseline"
               " no longer accepts it]")


def write_baseline(findings: list[Finding], root: Path) -> str:
    """Baseline file text for ``findings`` (sorted, stable, no line numbers).

    Findings of rules that compare numbers record them (``measured`` and
    ``allowed``), so a later run can tell a finding that got worse.
    """
    import json

    from policylint.engine.filter import _FIGURE_FIELDS, baseline_key

    entries: list[dict[str, object]] = []
    for f in findings:
        if f.code in NEVER_ACCEPTED:
            continue  # reported whatever the baseline says (see :data:`NEVER_ACCEPTED`)
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


@dataclass
class Reference:
    """What a run that judges a change knows of it, for the baseline (:func:`lapse_baselined`)."""

    #: a file as the reference revision (HEAD for the hook, the base for ``--diff``) held it
    base_text: Callable[[SourceFile], str | None]
    changed: Changed
    #: the change touched the baseline file or the configuration
    baseline_touched: bool
    #: the baseline file the reference revision configured (None: none)
    then_path: Path | None
    #: the change touched none of the run's inputs, only the baseline and the configuration
    baseline_only: bool
    limits: LoadLimits


def lapse_baselined(
    result: LintResult, baseline: Path, root: Path, ruleset: RuleSet, reference: Reference | None,
) -> tuple[LintResult, list[Finding]]:
    """``result`` (not narrowed yet) with what its baseline may not hide in this change reported, and the PL034 findings.

    Without a ``reference`` (no change is judged) only the rules that judge a change are taken back.
    With one: when the change touched the baseline or the configuration, a finding is accepted only
    by what the reference revision's baseline accepted, unless the change touched nothing else, and
    then each entry it adds must be one of today's findings exactly as it stands (PL034: an entry
    planted for a finding not made yet, or with figures above it, accepts a later raise). A
    baselined finding of a document check or of :data:`UNJUDGED_RULES` is taken back when the change
    edits what it is about (its file, its YAML node, its pool), as a suppression would be
    (:func:`policylint.engine.lapsed.lapsed`): its figures do not grow with the GPUs of a subject
    nothing judges (red team, 2026-12-07, round 16: a cluster file refused by a tightened node limit
    and baselined, then raised 48 -> 480; an unmeasured pool's elastic GPUs 4 -> 300).
    """
    from policylint.engine.filter import baseline_key, parse_baseline_text, worse
    from policylint.finding import sort_findings
    from policylint.model.load import SourceFile

    judged = change_rules(ruleset) | NEVER_ACCEPTED
    then: dict[BaselineKey, list[Accepted]] | None = None
    unmatched: list[Finding] = []
    if reference is not None and reference.baseline_touched:
        then = {}
        if reference.then_path is not None:
            text = reference.base_text(SourceFile(path=reference.then_path, display=str(reference.then_path), text=""))
            if text is not None:
                try:
                    then = parse_baseline_text(text, str(reference.then_path))
                except Exception:  # noqa: BLE001 - a base file that does not read accepted nothing
                    then = {}
        unmatched = _unmatched_additions(result, baseline, root, then, judged)
    if not result.baselined:
        return result, unmatched
    kept: list[Finding] = []
    revived: list[Finding] = []
    for f in sorted(result.baselined, key=lambda f: (f.sort_key(), f.figures or ())):
        if f.code in judged:
            revived.append(replace(f, message=f.message + (NOTE_CONFIGURATION if f.code in NEVER_ACCEPTED
                                                           else NOTE_CHANGE_RULE)))
            continue
        if then is None or (reference is not None and reference.baseline_only):
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
    if reference is not None and kept:
        # a document check is about its whole file: any edit of it (the file may be refused, and so unparsed)
        whole = [f for f in kept if _is_document_check(ruleset, f.code) and reference.changed.holds(Path(f.file))]
        if whole:
            gone = {id(f) for f in whole}
            kept = [f for f in kept if id(f) not in gone]
            revived += [replace(f, message=f.message + NOTE_EDITED.format(what=f"{f.file}, the file it is about"),
                                hint="fix what the finding reports, then regenerate the baseline in a change of its own")
                        for f in whole]
        unjudged = [f for f in kept if f.code in UNJUDGED_RULES]
        if unjudged:
            from policylint.engine.lapsed import lapsed

            edited = lapsed([(f, "") for f in unjudged], result.sources, reference.changed, reference.base_text,
                            ruleset, reference.limits, result.model, standing=False, note=NOTE_EDITED,
                            hint="judge it as it is now: fix what the finding reports, then regenerate the baseline"
                                 " in a change of its own")
            if edited:
                gone = {id(old) for old, _ in edited}
                kept = [f for f in kept if id(f) not in gone]
                revived += [new for _, new in edited]
    if revived:
        result.baselined = sort_findings(kept)
        result.findings = sort_findings([*result.findings, *revived])
    return result, unmatched


def _is_document_check(ruleset: RuleSet, code: str) -> bool:
    rule = ruleset.rules.get(code)
    return rule is not None and rule.builtin and rule.section == "document"


def accepted_again(
    revived: list[tuple[Finding, Finding]], baselined: list[Finding], baseline: Path, root: Path
) -> tuple[list[Finding], list[Finding]]:
    """Of ``revived`` ((the finding, as reported again) where a lapsed suppression no longer hides it), (those
    still reported, those the baseline accepts, each as the finding was): an entry of its key that no
    baselined finding took, and that the finding is no worse than.

    A suppression and a baseline entry may both accept one finding; when the change outlives the
    suppression, the entry still accepts what it accepted (a newcomer, 2026-12-07: a reservation lowered
    under a lapsed suppression, and below what the baseline accepted, failed the gate).
    """
    from policylint.engine.filter import baseline_key, read_baseline_entries, worse

    entries = read_baseline_entries(baseline)
    for f in baselined:  # what the baselined findings took already
        held = entries.get(baseline_key(f, root))
        if held:
            held.pop(0)
    still: list[Finding] = []
    accepted: list[Finding] = []
    for f, again in revived:
        held = entries.get(baseline_key(f, root)) or []
        index = next((i for i, a in enumerate(held) if not worse(f.figures, a, f.message)), None)
        if index is None:
            still.append(again)
        else:
            held.pop(index)
            accepted.append(f)
    return still, accepted


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
        why = ("a loosened configuration is accepted by PL977's option accept, not by a baseline"
               if code in NEVER_ACCEPTED else "it judges a change, and a baseline is written without one"
               if code in judged else
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
                    placed = locate(str(baseline), f"findings[{i}]")
                except Exception:  # noqa: BLE001 - unplaced at worst
                    placed = None
                out[n] = placed or (1, 1)
                break
    return out


def baseline_then(
    config_path: Path | None, baseline: Path, changed: Sequence[Path], explicit: bool,
    base_text: Callable[[SourceFile], str | None],
) -> Path | None:
    """The baseline file the reference revision's configuration named (None: none).

    ``baseline`` itself when it was given on the command line (``explicit``: the caller's choice,
    not the repository's) or when the configuration file is not among the ``changed`` files;
    otherwise the ``baseline`` key of the configuration's text at the reference, from its folder (a
    baseline renamed with its key is read at its old name).
    """
    if explicit or config_path is None:
        return baseline
    real = os.path.realpath(config_path)
    if all(os.path.realpath(p) != real for p in changed):
        return baseline
    from policylint.model.load import SourceFile

    text = base_text(SourceFile(path=config_path, display=str(config_path), text=""))
    if text is None:
        return None
    named = _baseline_key_of(config_path, text)
    return None if named is None else config_path.parent / named


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
