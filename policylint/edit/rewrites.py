"""The fixes policylint implements: which number each rewrites, and to what.

A rule's ``fix: rewrites:`` names one of :data:`REWRITES`; the planner
(:func:`policylint.edit.fixes.plan`) makes the fixes of one pool together:

- ``reserved`` (PL101 reserved above the pooled baseline, PL104 reserved +
  proposed below it): ``reservedGpus`` := pooled baseline - the GPUs the pool's
  proposals ask (``proposed_gpus``, the fact PL104 judges), counting each
  request to be lowered at one GPU - so that reserved + proposed is what the
  rules require after the fix;
- ``capacity`` (PL102 reserved + elastic above the pooled daily band):
  ``elastic.maxGpus`` := daily - reserved (the reserved figure after this run's
  fixes), at least 0; a reservation that moves without PL102 keeps reserved +
  elastic where it was;
- ``requests`` (PL801 a proposal asks beyond the shortfall): the reported
  requests of a pool share pooled baseline - reserved (after this run's fixes) -
  the other requests;
- ``buffer`` (PL603 a buffer larger than the largest long-tail job): ``bufferGpus`` :=
  the GPUs of that job (``buffer_needed_gpus``, the figure PL601 requires of the buffer).

A Kueue ClusterQueue is fixed through its GPU ``nominalQuota`` (reserved =
nominal - lendingLimit inside a cohort, so the lending limit is kept) and its
``borrowingLimit``; a Volcano Queue through ``guarantee`` and ``capability``. A
``borrowingLimit`` limits borrowing the cohort's GPUs, not GPUs the pool owns: it is
never lowered below :func:`~policylint.model.schedulers.kueue.borrowing_floor` (what
keeps the cohort's own quota reachable, PL976), and where capacity must fall further
the ``lendingLimit`` and the ``nominalQuota`` fall together, the reservation kept
(:func:`_kueue_capacity`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from policylint.edit.fix import Fix, make_fix, number
from policylint.engine.shortfall import request_room
from policylint.model import pool_capacity
from policylint.model.schedulers.kueue import borrowing_floor

if TYPE_CHECKING:
    from policylint.finding import Finding
    from policylint.model import Pool
    from policylint.engine.view import View


def reservation_fix(
    code: str, pool: Pool, view: View, asks: list[tuple[Finding, View, int, int]], *, raise_only: bool
) -> tuple[Fix | None, str]:
    """PL101 / PL104: reserved := pooled baseline - what the pool's proposals will ask after this run.

    ``proposed_gpus`` is the fact PL104 adds to the reservation; the requests PL801
    reports (``asks``) are what may still change, so the reservation counts only the
    requests that stay as written - owned GPUs are kept before GPUs still to be bought.
    A reported request then gets what shortfall remains (:func:`request_fixes`); when
    none remains it is not lowered to one GPU but left for the user to withdraw: a fix
    must not turn a reserved GPU into a purchase.
    ``raise_only`` (the rule's ``fix: direction: raise``) never lowers the reservation:
    its rule reports too little reserved, so its fix only closes that gap.
    """
    f = view.facts
    fixable = sum(gpus for *_, gpus in asks)
    kept = int(f["proposed_gpus"]) - fixable
    target = max(0, int(f["baseline_gpus"]) - kept)
    lent, taken_back = pool.lent_gpus, pool.held_gpus - pool.reserved_gpus
    if raise_only and ((lent and not taken_back) or pool.parent_only_gpus):
        # PL104 on a queue that owns GPUs that do not hold its baseline (quota lent and never taken back, quota above
        # it no other queue may use): raising its own quota would buy GPUs it owns (red team, 2026-12-07: 33 GPUs
        # where 14 and no lending did); its hint says how to put them to work
        return None, str(f["floor_advice"])
    if raise_only and taken_back:
        # PL104 counts what such a flavor holds (held_gpus: its whole nominal quota), so the nominal quota becomes
        # the target; written below as the reservation plus what it lends
        target = max(target, pool.held_gpus) - taken_back
    if raise_only:
        target = max(target, int(f["reserved_gpus"]))
    origin = pool.origin
    if origin == "policylint":
        return make_fix(code, view, (*pool.doc_path, "reservedGpus"), target)
    path = pool.place("reserved")
    if origin == "kueue" and path[-1:] == ("nominalQuota",):
        # reserved = nominalQuota - lendingLimit inside a cohort: keep what it lends, move the nominal quota
        lending = _kueue_lending(pool)
        if number(view, path) != pool.scheduler.get("nominal"):
            return None, "the flavor's GPU quota is split over several resources; edit it by hand"
        fix, note = make_fix(code, view, path, target + lending)
        return (None, note) if fix is None else (replace(fix, reserved=target), "")
    if origin == "volcano" and path[:3] == ("spec", "guarantee", "resource") and len(path) == 4:
        return make_fix(code, view, path, target)
    return None, "the reserved GPUs are not written as one number; add them by hand"


def _kueue_lending(pool: Pool) -> int:
    """The GPUs a Kueue pool's ClusterQueue may lend inside its cohort (0 without a cohort or a lendingLimit).

    The mapping (:mod:`policylint.model.schedulers.kueue`) counts them as elastic: reserved is
    ``nominalQuota - lendingLimit``, elastic ``lendingLimit`` + what it may borrow.
    """
    info = pool.scheduler or {}
    return int(info.get("lending_limit") or 0) if info.get("cohort") else 0


def capacity_fix(
    code: str, pool: Pool, view: View, reserved: int, *, keep: bool,
    ceiling: float | None = None, pools: Iterable[Pool] = (),
) -> tuple[list[Fix], str, bool]:
    """The elastic numbers that give the pool its capacity once ``reserved`` GPUs are reserved.

    ``keep``: the capacity stays what it is (a reservation moved, capacity was not
    reported); else it becomes the pooled daily band (PL102). Returns (fixes, note,
    refused): ``refused`` when the reservation must not move - the capacity would fall
    below both what it was and the daily band with nothing elastic to carry the
    difference, or (Kueue) rise above ``ceiling`` (the lowest bound the rules set on ``capacity_gpus``) because the
    borrowingLimit must keep the cohort's own GPUs reachable. ``pools`` are the run's
    pools: a Kueue flavor's lendingLimit is lowered only where no other queue of its
    cohort borrows less for it.
    """
    f = view.facts
    daily, capacity = int(f["daily_gpus"]), int(f["capacity_gpus"])
    elastic = max(0, (capacity if keep else daily) - reserved)
    origin = pool.origin
    path = pool.place("capacity")
    new: int
    if origin == "policylint" and "maxGpus" in (pool.spec.get("elastic") or {}):
        path, new = (*pool.doc_path, "elastic", "maxGpus"), elastic
    elif origin == "kueue" and path[-1:] == ("borrowingLimit",):
        # elastic = lendingLimit + borrowed inside a cohort (the quota it may lend is still its own)
        new = elastic - _kueue_lending(pool)
        old = number(view, path)
        floor = min(old, borrowing_floor(pool.scheduler)) if old is not None else 0
        if new < floor:
            return _kueue_capacity(code, pool, view, reserved, elastic, floor, keep=keep, ceiling=ceiling, pools=pools)
    elif origin == "volcano" and path[:2] in (("spec", "capability"), ("spec", "deserved")):
        if keep:
            return [], "", False  # capability (or deserved) holds the capacity whatever the guarantee
        new = pool_capacity(reserved, elastic)
    else:
        # nothing elastic to write: the capacity is the reservation (plus what a cohort lends)
        after = reserved + (int(f["elastic_gpus"] or 0) if origin == "kueue" else 0)
        if after < min(capacity, daily):
            return [], (
                f"a reservation of {reserved} would leave {after} GPUs for a pooled daily band of {daily} and there is"
                f" no elastic limit to carry the rest; add elastic capacity of {min(capacity, daily) - after} GPUs,"
                " then lower the reservation"
            ), True
        if keep or after <= daily:
            return [], "", False  # the reservation alone brings capacity within the band
        if origin == "policylint":
            return [], "no elastic.maxGpus to lower; lower the reservation", False
        if origin == "kueue":
            limit = max(0, elastic - _kueue_lending(pool))
            return [], f"borrowing from the cohort is unlimited; add borrowingLimit: {limit} to the GPU resource", False
        return [], f"no capability to lower; add capability {reserved + elastic} for the GPU resource", False
    old = number(view, path)
    if not keep and old is not None and new >= old and reserved == int(f["reserved_gpus"]):
        if reserved > daily:
            return [], "reserved GPUs alone exceed the daily band; lower the reservation", False
        return [], "", False  # the reservation's fix brings capacity within the band
    if old == new:
        return [], "", False
    fix, note = make_fix(code, view, path, new)
    return ([] if fix is None else [fix]), note, False


def _kueue_capacity(
    code: str, pool: Pool, view: View, reserved: int, elastic: int, floor: int, *,
    keep: bool, ceiling: float | None, pools: Iterable[Pool],
) -> tuple[list[Fix], str, bool]:
    """A Kueue flavor whose borrowingLimit would have to fall below ``floor`` to leave ``elastic`` GPUs.

    Below ``floor`` the cohort's own quota is more than its ClusterQueues may borrow together
    (PL976), and lowering it saves no GPU the pool owns: the borrowingLimit stops there. What
    the flavor then borrows (``floor``, or less when the cohort lends less) stays; the rest of
    ``elastic`` is its lendingLimit. Keeping capacity (a moved reservation), the lendingLimit
    stays as written. For the daily band (PL102), lendingLimit and nominalQuota fall together,
    the reservation kept - written when no other queue of the cohort borrows less for it,
    otherwise given as the numbers to write. Refused (with a note) when the capacity left is
    above ``ceiling``.
    """
    info, f = pool.scheduler, view.facts
    path = pool.place("capacity")
    lending = _kueue_lending(pool)
    borrowed = min(floor, int(f["elastic_gpus"] or 0) - lending)
    lend = lending
    if not keep:
        lend = min(lending, max(0, elastic - borrowed))
        if pool.held_gpus > pool.reserved_gpus:
            # the lent quota holds the baseline too (PL104 counts it): keep what the baseline needs of it. Proposals
            # are not counted: owned GPUs come before GPUs still to be bought, and a proposal the pool's own quota
            # makes needless is PL801's to drop (red team round 13: a proposal PL801 refused made the fix give up
            # 26 owned GPUs so that 10 could be bought)
            short = int(f["baseline_gpus"]) - reserved
            lend = max(lend, min(lending, short))
    after = reserved + lend + borrowed
    cohort, tree, quota = info.get("cohort"), info.get("cohort_tree"), info.get("cohort_quota")
    holder = f"cohort {cohort}" if tree in (None, cohort) else f"the cohort tree of {tree}"  # as PL976 names it
    why = (f"a borrowingLimit below {floor} would leave more of the {quota} GPUs of flavor {info.get('flavor')} that"
           f" {holder} holds itself than its ClusterQueues may borrow together (PL976)")
    if ceiling is not None and after > ceiling + 1e-9:
        excess = after - math.floor(ceiling + 1e-9)
        over = f"{reserved} reserved + {lend} lent + {borrowed} borrowed = {after} GPUs is above the {ceiling:g} the capacity rules allow"
        if floor > 0:
            return [], (f"{why}, and {over}; lower the {info.get('flavor')} quota {holder} holds itself by {excess}"
                        f" GPU{'s' if excess != 1 else ''}, then run check --fix again"), keep
        return [], f"{over}; lower the lendingLimit and the nominalQuota by {excess} GPU{'s' if excess != 1 else ''} each", keep
    fixes: list[Fix] = []
    if number(view, path) != floor:
        fix, note = make_fix(code, view, path, floor)
        if fix is None:
            return [], note, keep
        fixes.append(fix)
    if lend == lending:
        return fixes, "", False
    write = f"write nominalQuota: {reserved + lend}, lendingLimit: {lend}, borrowingLimit: {floor}"
    nominal_path = pool.place("reserved")
    lending_path = (*path[:-1], "lendingLimit")
    if number(view, nominal_path) != info.get("nominal") or number(view, lending_path) != lending:
        return [], f"the flavor's GPU quota is not written as one number each; {write}", False
    takers = sorted(o.qualified for o in _cohort_members(pool, pools) if not _borrows_as_much(o, lending - lend))
    if takers:
        kept = f", and {why}" if floor > 0 else ""
        return [], (
            f"lending {lending - lend} GPUs less would leave {', '.join(takers)} less to borrow{kept}; to accept"
            f" that, {write} ({reserved} reserved + {lend} lent + {borrowed} borrowed = {after} GPUs)"
        ), False
    for at, value in ((nominal_path, reserved + lend), (lending_path, lend)):
        fix, note = make_fix(code, view, at, value)
        if fix is None:
            return [], f"{note}; {write}", False
        fixes.append(replace(fix, reserved=reserved) if at == nominal_path else fix)
    return fixes, "", False


def _cohort_members(pool: Pool, pools: Iterable[Pool]) -> list[Pool]:
    """The other Kueue pools of ``pool``'s cohort tree on its flavor: the queues that may borrow what it lends."""
    info = pool.scheduler or {}
    return [o for o in pools if o is not pool and o.origin == "kueue" and (o.scheduler or {}).get("cohort")
            and o.scheduler.get("cohort_tree") == info.get("cohort_tree") and o.scheduler.get("flavor") == info.get("flavor")]


def _borrows_as_much(other: Pool, cut: int) -> bool:
    """Whether ``other`` still borrows up to its borrowingLimit when the cohort lends ``cut`` GPUs less."""
    limit, lendable = other.scheduler.get("borrowing_limit"), other.scheduler.get("cohort_lendable")
    return isinstance(limit, int) and isinstance(lendable, int) and lendable - cut >= limit


def request_fixes(asks: list[tuple[Finding, View, int, int]], owned: int | None) -> tuple[list[Fix], list[str]]:
    """PL801: the reported requests of one pool share the shortfall left after this run's reservation.

    The shortfall is the pool's baseline minus the GPUs it owns (after its reservation's
    fix: ``owned``; :func:`policylint.engine.shortfall.request_room`) minus
    the requests that stay as written; the reported requests get it in order, each
    at most what it asks now. When it cannot give each of them a GPU, none is
    lowered: the pool's proposals are judged together, so only dropping requests
    helps, and that is the user's edit.
    """
    if not asks:
        return [], []
    _, view0, index0, _ = asks[0]
    req0 = view0.facts["requests"][index0]
    baseline = req0["baseline_gpus"]
    if owned is None:
        owned = req0["owned"]
    fixable = sum(gpus for *_, gpus in asks)
    others = int(req0.get("pool_proposed_gpus") or fixable) - fixable
    left = request_room(int(baseline), int(owned), 0.0)[0] - others
    notes: list[str] = []
    if left < len(asks):
        for finding, *_ in asks:
            notes.append(
                f"{finding.file}:{finding.line}:{finding.column}: {finding.code}: no fix (the pool needs no more GPUs"
                + (": drop this request)" if len(asks) == 1 else f" than {max(0, left)} across {len(asks)} requests: drop requests)")
            )
        return [], notes
    fixes: list[Fix] = []
    for i, (finding, view, index, gpus) in enumerate(asks):
        share = min(gpus, left - (len(asks) - 1 - i))
        left -= share
        if share != gpus:
            fix, note = make_fix(finding.code, view, ("spec", "requests", index, "gpus"), share)
            if fix is not None:
                fixes.append(replace(fix, origin=finding.key()))
            if note:
                notes.append(f"{finding.file}:{finding.line}:{finding.column}: {finding.code}: no fix ({note})")
    return fixes, notes



def buffer_fix(code: str, pool: Pool, view: View) -> tuple[Fix | None, str]:
    """PL603: bufferGpus := the GPUs of the largest long-tail job among the pool's workloads with durations.

    The figure PL601 requires of a buffer, so the fixed pool passes both. Only a policylint
    Cluster writes a buffer; a scheduler's manifest has none to rewrite.
    """
    if pool.origin != "policylint":
        return None, "the buffer is not written in this manifest; edit it by hand"
    return make_fix(code, view, (*pool.doc_path, "bufferGpus"), int(view.facts["buffer_needed_gpus"]))


#: The fixes policylint implements, by the name a rule file's ``fix: rewrites:`` gives
#: (the enum of ``schemas/rule.schema.json``); a test holds the three to one set.
REWRITES: dict[str, Callable[..., Any]] = {
    "reserved": reservation_fix,
    "capacity": capacity_fix,
    "requests": request_fixes,
    "buffer": buffer_fix,
}
