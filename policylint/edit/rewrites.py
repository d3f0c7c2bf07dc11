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
``borrowingLimit``; a Volcano Queue through ``guarantee`` and ``capability``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from policylint.edit.fix import Fix, make_fix, number
from policylint.engine.shortfall import request_room
from policylint.model import pool_capacity

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


def capacity_fix(code: str, pool: Pool, view: View, reserved: int, *, keep: bool) -> tuple[Fix | None, str, bool]:
    """The elastic number that gives the pool its capacity once ``reserved`` GPUs are reserved.

    ``keep``: the capacity stays what it is (a reservation moved, capacity was not
    reported); else it becomes the pooled daily band (PL102). Returns (fix or None,
    note, refused): ``refused`` when the reservation must not move - the capacity
    would fall below both what it was and the daily band, with nothing elastic to
    write that could carry the difference.
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
        if new < 0:
            return None, (
                f"its lendingLimit of {_kueue_lending(pool)} alone lets it run more than {reserved + elastic} GPUs;"
                f" lower the lendingLimit to {elastic} and the nominalQuota with it"
            ), False
    elif origin == "volcano" and path[:2] in (("spec", "capability"), ("spec", "deserved")):
        if keep:
            return None, "", False  # capability (or deserved) holds the capacity whatever the guarantee
        new = pool_capacity(reserved, elastic)
    else:
        # nothing elastic to write: the capacity is the reservation (plus what a cohort lends)
        after = reserved + (int(f["elastic_gpus"] or 0) if origin == "kueue" else 0)
        if after < min(capacity, daily):
            return None, (
                f"a reservation of {reserved} would leave {after} GPUs for a pooled daily band of {daily} and there is"
                f" no elastic limit to carry the rest; add elastic capacity of {min(capacity, daily) - after} GPUs,"
                " then lower the reservation"
            ), True
        if keep or after <= daily:
            return None, "", False  # the reservation alone brings capacity within the band
        if origin == "policylint":
            return None, "no elastic.maxGpus to lower; lower the reservation", False
        if origin == "kueue":
            limit = max(0, elastic - _kueue_lending(pool))
            return None, f"borrowing from the cohort is unlimited; add borrowingLimit: {limit} to the GPU resource", False
        return None, f"no capability to lower; add capability {reserved + elastic} for the GPU resource", False
    old = number(view, path)
    if not keep and old is not None and new >= old and reserved == int(f["reserved_gpus"]):
        if reserved > daily:
            return None, "reserved GPUs alone exceed the daily band; lower the reservation", False
        return None, "", False  # the reservation's fix brings capacity within the band
    if old == new:
        return None, "", False
    fix, note = make_fix(code, view, path, new)
    return fix, note, False


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
