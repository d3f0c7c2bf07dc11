"""The Kueue Cohorts' own GPU quota by GPU model: what ``--diff`` compares to see quota moved into a Cohort.

:func:`cohort_quota_by_model` is read at the base (:func:`policylint.engine.history.pools_at_base`) and today
(:func:`policylint.engine.change_history.moved_into_cohorts`), by the same definition.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from policylint.model import Pool


def gpu_kind(pool: Pool) -> str | None:
    """The GPU model a pool declares, by its words (:func:`policylint.measure.pool_groups.model_key`); None: none."""
    from policylint.measure.pool_groups import model_key

    model = (pool.spec.get("gpu") or {}).get("model")
    return (model_key(model) or None) if isinstance(model, str) else None


def cohort_quota_by_model(pools: Iterable[Pool]) -> dict[str | None, int]:
    """The Kueue Cohorts' own GPU quota that ``pools`` may borrow, by GPU model (:func:`gpu_kind`; None: undeclared).

    Each Cohort tree's quota of a flavor counts once, however many of the pools borrow it.
    """
    seen: dict[tuple[Any, Any], tuple[str | None, int]] = {}
    for pool in pools:
        info = pool.scheduler or {}
        quota = info.get("cohort_quota")
        if info.get("scheduler") == "kueue" and info.get("cohort") and type(quota) is int:
            seen.setdefault((info.get("cohort_tree"), info.get("flavor")), (gpu_kind(pool), quota))
    out: dict[str | None, int] = {}
    for kind, quota in seen.values():
        out[kind] = out.get(kind, 0) + quota
    return out


class CohortState(NamedTuple):
    """What a revision's Kueue pools say of the Cohorts: their own quota by GPU model, each pool's borrowingLimit."""

    quota: dict[str | None, int]
    #: pool key (:attr:`policylint.model.Pool.key`) -> what it can borrow (:func:`borrowable`)
    borrowing: dict[tuple[str, str, str], int]


def cohort_state(pools: Iterable[Pool]) -> CohortState:
    """:class:`CohortState` of every scheduler pool of a revision (``schedulers.all_pools``)."""
    pools = list(pools)
    borrowing = {p.key: borrowable(p) for p in pools
                 if (p.scheduler or {}).get("scheduler") == "kueue" and (p.scheduler or {}).get("cohort")}
    return CohortState(cohort_quota_by_model(pools), borrowing)


def borrowable(pool: Pool) -> int:
    """What a Kueue pool can borrow from its Cohort tree: its borrowingLimit, capped by what the tree can lend it
    (``cohort_lendable``, the Cohorts' own borrowingLimits on the way up included). A limit raised where a Cohort
    above caps it claims nothing (red team round 14: a child Cohort limited to 8 under a queue raised 8 -> 27)."""
    info = pool.scheduler or {}
    limit, lendable = info.get("borrowing_limit"), info.get("cohort_lendable")
    if type(lendable) is not int:
        return limit if type(limit) is int else 0
    return lendable if type(limit) is not int else min(limit, lendable)
