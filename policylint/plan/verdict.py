"""Which findings of ``check`` on the planned repository the plan answers for.

The planned repository is the repository as declared plus what the plan wrote into it:
its pools (the planned Cluster documents), every workload's placement, the inputs a
what-if sets (``--cold-start``, ``--tolerance``) and, through each planned pool's
elastic cold start, every member's effective cold start. A finding there is the plan's
when

1. its rule judges what the plan is made of - the pools' sizing, queues, placement,
   scheduling and proposals (:data:`~policylint.plan.models.SIZING_RULES`) - whatever
   the reason; or
2. the plan caused it: its rule reads a fact whose value the plan changed at that
   subject (a workload's cold start, its bands at that cold start, its tolerance, the
   pool it sits in, ...) and the repository as declared does not report that rule
   there.

Everything else on the planned repository - a stale or short trace, free-text
evidence, a coarse trace next to the cold start the team declared - is the
repository's own and is counted apart, not against the plan. The facts a rule reads
are told by :func:`policylint.engine.reads.facts_read`, the facts a plan changed by
comparing each subject's view with the same subject's before the plan, so no list of
rule codes has to be kept in step with the rules.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from policylint.engine.reads import facts_read
from policylint.plan.models import SIZING_RULES

if TYPE_CHECKING:
    from policylint.engine.result import LintResult
    from policylint.engine.rule import Rule
    from policylint.engine.view import View
    from policylint.finding import Finding
    from policylint.model import Model
    from policylint.plan.models import Plan

__all__ = ["Answered", "answered_for"]

#: the same double count under the code it takes once the plan puts the two workloads in different
#: pools (PL111 within a pool, PL972 across pools): the plan inherits it, it does not cause it
_SAME_DEFECT = {"PL972": ("PL111",)}

#: changed facts named in a finding's reason, at most
_NAMED = 3


@dataclass(frozen=True)
class Answered:
    """A finding of the planned repository the plan answers for, and why it is the plan's.

    ``because`` is None for a rule of SIZING_RULES (the plan's own pools and placements),
    else the facts the plan changed that the rule reads, with their values before and after.
    """

    finding: Finding
    because: str | None


def answered_for(today: LintResult, planned: LintResult, plan: Plan, rules: Mapping[str, Rule]) -> list[Answered]:
    """The findings of ``planned`` (``check`` on the planned repository) the plan answers for.

    ``today`` is ``check`` on the repository as declared, with the same configuration
    and date; ``rules`` the rule set both ran (by code).
    """
    before = _Before(today, planned, plan)
    out: list[Answered] = []
    for f in planned.findings:
        if f.code in SIZING_RULES:
            out.append(Answered(f, None))
            continue
        rule = rules.get(f.code)
        if rule is None or before.reported(f):
            continue
        reason = before.caused(f, facts_read(rule))
        if reason is not None:
            out.append(Answered(f, reason))
    return out


class _Before:
    """Each subject of the planned repository beside what stood for it before the plan."""

    def __init__(self, today: LintResult, planned: LintResult, plan: Plan) -> None:
        self.views = {_label(v): v for v in today.views}
        self.planned = {_label(v): v for v in planned.views}
        self.model = today.model
        self.plan = plan
        self.findings: set[tuple[str, str]] = set()
        for f in today.findings:
            self.findings.add((f.code, f.subject))

    def subjects(self, label: str) -> list[str]:
        """The subjects of the repository as declared that ``label`` of the planned repository stands for.

        A workload is itself. A planned pool stands for the pools its workloads come from
        (none for workloads placed nowhere today). A cluster is the cluster of its name,
        else the clusters its pools' workloads come from, else - a cluster the plan adds
        for workloads placed nowhere - every cluster: what the whole repository is told
        (its configuration) is told to it too.
        """
        kind, _, name = label.partition(" ")
        if kind == "workload":
            return [label] if label in self.views else []
        model: Model | None = self.model
        if model is None:
            return []
        if kind == "pool":
            pool = next((p for p in self.plan.pools if p.qualified == name), None)
            members = pool.members if pool is not None else ()
            return sorted({f"pool {w.pool.qualified}" for n in members if (w := model.workloads.get(n)) is not None
                           and w.pool is not None})
        if kind == "cluster":
            if label in self.views:
                return [label]
            from_pools = sorted({f"cluster {w.pool.cluster.name}" for p in self.plan.pools if p.cluster == name
                                 for n in p.members if (w := model.workloads.get(n)) is not None and w.pool is not None})
            return from_pools or sorted(v for v in self.views if v.startswith("cluster "))
        return []

    def reported(self, f: Finding) -> bool:
        """True when the repository as declared reports this rule at a subject ``f``'s stands for."""
        codes = (f.code, *_SAME_DEFECT.get(f.code, ()))
        return any((code, s) in self.findings for s in self.subjects(f.subject) for code in codes)

    def caused(self, f: Finding, reads: frozenset[str] | None) -> str | None:
        """Why ``f`` is the plan's: the facts it reads that the plan changed at its subject; None when none."""
        view = self.planned.get(f.subject)
        if view is None:
            return None  # a finding about a document, not a subject: no fact of it is the plan's
        olds = [self.views[s] for s in self.subjects(f.subject) if s in self.views]
        facts = view.facts
        names = sorted(facts) if reads is None else sorted(n for n in reads if n in facts)
        changed = [n for n in names if not any(_same(o.facts.get(n), facts[n]) for o in olds)]
        if not changed:
            return None
        if not olds:
            return f"{f.subject} is the plan's own: it stands for no {f.subject.split(' ')[0]} of the repository as declared"
        parts = []
        for n in changed[:_NAMED]:
            old, new = (olds[0].facts.get(n) if len(olds) == 1 else None), facts[n]
            parts.append(f"{n} from {_show(old)} to {_show(new)}" if len(olds) == 1 and _scalar(old) and _scalar(new) else n)
        more = f" and {len(changed) - _NAMED} more" if len(changed) > _NAMED else ""
        return "the plan changed " + ", ".join(parts) + more


def _label(view: View) -> str:
    """The subject a view's findings name (``Finding.subject``)."""
    return view.label


def _scalar(x: Any) -> bool:
    return x is None or isinstance(x, (bool, int, float, str))


def _show(x: Any) -> str:
    if x is None:
        return "unknown"
    if isinstance(x, float):
        return f"{x:.6g}"
    return str(x)


def _same(a: Any, b: Any) -> bool:
    """Equal values, NaN equal to NaN; containers by their text when ``==`` does not answer with a bool."""
    if a is b:
        return True
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    try:
        equal = a == b
    except Exception:  # noqa: BLE001 - a value whose comparison fails is compared by its text
        return repr(a) == repr(b)
    return equal if isinstance(equal, bool) else repr(a) == repr(b)
