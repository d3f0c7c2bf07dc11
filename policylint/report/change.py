"""What a change did, for the review page: two linting runs compared.

``report --html FILE --diff BASE`` lints the repository twice with the same
pipeline and settings: as it is (the *after* state) and as it was at BASE (the
*before* state, checked out by git into a temporary folder). :func:`compare`
puts the two :class:`policylint.engine.result.LintResult` side by side:

- per pool, the capacity (reserved, elastic) and the justified GPUs (pooled
  baseline and daily bands) before and after, from the facts the rules judged;
- the demand evidence - the measurement files the workloads cite - added,
  removed or changed (by content);
- the findings new, fixed and unchanged, matched by their identity
  (:meth:`policylint.finding.Finding.key`, the identity the baseline file uses:
  rule, file, document, path in it and subject; never the line or the message).

Both results must carry paths relative to the repository root
(:func:`policylint.report.paths.rebase`), so that one file has one name in both
states. Nothing here reads git or lints: it only compares.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from policylint.finding import Finding, FindingKey
    from policylint.engine.result import LintResult

__all__ = ["PoolChange", "EvidenceChange", "FindingChanges", "StateChange", "compare", "measurement_files"]

#: Pool facts compared, in the order the page shows them.
POOL_FIGURES = ("reserved_gpus", "elastic_gpus", "capacity_gpus", "proposed_gpus", "baseline_gpus", "daily_gpus", "peak_gpus")


@dataclass(frozen=True)
class PoolChange:
    """One pool in both states (``None``: the pool does not exist in that state)."""

    name: str  # cluster/pool
    before: Mapping[str, Any] | None
    after: Mapping[str, Any] | None
    #: findings about the pool or its workloads that the change brought / removed
    new: int = 0
    fixed: int = 0

    @property
    def status(self) -> str:
        """``added``, ``removed``, ``changed`` (a figure moved) or ``unchanged``."""
        if self.before is None:
            return "added"
        if self.after is None:
            return "removed"
        if any(self.before.get(k) != self.after.get(k) for k in POOL_FIGURES):
            return "changed"
        return "unchanged"

    def figure(self, name: str) -> tuple[Any, Any]:
        """(before, after) of one figure; None where the pool or the figure is absent."""
        return (
            None if self.before is None else self.before.get(name),
            None if self.after is None else self.after.get(name),
        )


@dataclass(frozen=True)
class Evidence:
    """One measurement file cited in one state: its content digest (None: the file is missing) and citers."""

    path: str  # relative to the repository root
    digest: str | None
    size: int | None
    cited_by: tuple[str, ...]  # "workload (role)", sorted


@dataclass(frozen=True)
class EvidenceChange:
    """A measurement file whose place in the evidence changed."""

    path: str
    status: str  # "added", "removed", "changed"
    before: Evidence | None
    after: Evidence | None

    @property
    def cited_by(self) -> tuple[str, ...]:
        names = set(self.before.cited_by if self.before else ()) | set(self.after.cited_by if self.after else ())
        return tuple(sorted(names))

    @property
    def note(self) -> str:
        """Why it is added or removed: the file itself, or only its citation."""
        if self.status == "added":
            return "new file" if self.before is None or self.before.digest is None else "now cited"
        if self.status == "removed":
            return "deleted" if self.after is None or self.after.digest is None else "no longer cited"
        return "content changed"


@dataclass(frozen=True)
class FindingChanges:
    """Findings matched by identity: new (after only), fixed (before only), unchanged (after, before)."""

    new: list[Finding] = field(default_factory=list)
    fixed: list[Finding] = field(default_factory=list)
    unchanged: list[tuple[Finding, Finding]] = field(default_factory=list)


@dataclass(frozen=True)
class StateChange:
    """Everything the page shows about a change from BASE to the working tree."""

    base: str  # the revision as the user wrote it
    base_commit: str  # its full commit id
    before: LintResult
    pools: list[PoolChange]
    evidence: list[EvidenceChange]
    findings: FindingChanges
    #: the commit the working tree is on (None: no commit yet); the page says the tree may differ from it
    head_commit: str | None = None


def _digest(path: Path) -> tuple[str | None, int | None]:
    """SHA-256 and size of a regular file; (None, None) when it is missing or not one."""
    try:
        if not path.is_file():
            return None, None
        h = hashlib.sha256()
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest(), path.stat().st_size
    except OSError:
        return None, None


def measurement_files(result: LintResult, top: Path) -> dict[str, Evidence]:
    """Every measurement file the workloads of ``result`` cite, by path relative to ``top``.

    The path is where the reference points (the declaring file's folder joined
    with the written path), whether or not a file is there: a deleted trace is
    still cited by its workload, with no content.
    """
    model = result.model
    if model is None:
        return {}
    real_top = os.path.realpath(top)
    citers: dict[str, set[str]] = {}
    for workload in model.workloads.values():
        for role, ref in workload.measurements.items():
            written = ref.spec.get("path") if isinstance(ref.spec, Mapping) else None
            if not isinstance(written, str) or not written or os.path.isabs(written):
                continue
            folder = os.path.dirname(os.path.realpath(workload.doc.source.path))
            where = os.path.normpath(os.path.join(folder, written))
            rel = os.path.relpath(where, real_top)
            if rel == os.pardir or rel.startswith(os.pardir + os.sep):
                continue  # outside the repository: refused by the linter anyway
            citers.setdefault(Path(rel).as_posix(), set()).add(f"{workload.name} ({role})")
    out: dict[str, Evidence] = {}
    for rel in sorted(citers):
        digest, size = _digest(Path(real_top) / rel)
        out[rel] = Evidence(rel, digest, size, tuple(sorted(citers[rel])))
    return out


def _evidence_changes(before: Mapping[str, Evidence], after: Mapping[str, Evidence]) -> list[EvidenceChange]:
    out = []
    for path in sorted(set(before) | set(after)):
        b, a = before.get(path), after.get(path)
        had = b is not None and b.digest is not None
        has = a is not None and a.digest is not None
        if has and not had:
            out.append(EvidenceChange(path, "added", b, a))
        elif had and not has:
            out.append(EvidenceChange(path, "removed", b, a))
        elif had and has and b is not None and a is not None and b.digest != a.digest:
            out.append(EvidenceChange(path, "changed", b, a))
    return out


def match_findings(before: Sequence[Finding], after: Sequence[Finding]) -> FindingChanges:
    """Pair the findings of two runs by :meth:`Finding.key`.

    A key may occur more than once (two findings at one place); within a key,
    findings with the same message pair first, the rest in display order, so
    the pairing never depends on the order the runs produced them in.
    """
    from policylint.finding import sort_findings

    def grouped(findings: Iterable[Finding]) -> dict[FindingKey, list[Finding]]:
        out: dict[FindingKey, list[Finding]] = {}
        for f in sort_findings(list(findings)):
            out.setdefault(f.key(), []).append(f)
        return out

    old, now = grouped(before), grouped(after)
    new: list[Finding] = []
    fixed: list[Finding] = []
    unchanged: list[tuple[Finding, Finding]] = []
    for key in sorted(set(old) | set(now)):
        left, right = list(old.get(key, [])), list(now.get(key, []))
        for f in list(right):
            twin = next((g for g in left if g.message == f.message), None)
            if twin is not None:
                left.remove(twin)
                right.remove(f)
                unchanged.append((f, twin))
        while left and right:
            unchanged.append((right.pop(0), left.pop(0)))
        new.extend(right)
        fixed.extend(left)
    return FindingChanges(
        new=sort_findings(new),
        fixed=sort_findings(fixed),
        unchanged=sorted(unchanged, key=lambda pair: pair[0].sort_key()),
    )


def _pool_facts(result: LintResult) -> dict[str, Mapping[str, Any]]:
    return {str(v.facts["qualified"]): v.facts for v in result.views if v.subject == "pool"}


def _about(findings: Iterable[Finding], pool: str, workloads: set[str]) -> int:
    labels = {f"pool {pool}", *(f"workload {w}" for w in workloads)}
    return sum(1 for f in findings if f.subject in labels)


def compare(
    before: LintResult,
    after: LintResult,
    *,
    before_top: Path,
    after_top: Path,
    base: str,
    base_commit: str,
    head_commit: str | None = None,
) -> StateChange:
    """The change from ``before`` (the repository at BASE, checked out under ``before_top``) to ``after``."""
    findings = match_findings(before.findings, after.findings)
    old, now = _pool_facts(before), _pool_facts(after)
    pools = []
    for name in sorted(set(old) | set(now)):
        b, a = old.get(name), now.get(name)
        workloads = {str(w) for facts in (b, a) if facts is not None for w in facts.get("workload_names") or ()}
        pools.append(
            PoolChange(
                name, b, a, new=_about(findings.new, name, workloads), fixed=_about(findings.fixed, name, workloads)
            )
        )
    evidence = _evidence_changes(measurement_files(before, before_top), measurement_files(after, after_top))
    return StateChange(base, base_commit, before, pools, evidence, findings, head_commit)
