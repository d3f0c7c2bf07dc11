"""Step 5a: the facts of every subject, as the rules see them.

For every workload, pool, cluster and proposal :func:`build_views` builds a
:class:`~policylint.engine.view.View`: the subject's fact sheet (declared once, typed,
in :mod:`policylint.engine.sheets`) and the document path each fact is written at,
so that a finding can point at the line that matters. Workloads come first
(:mod:`policylint.engine.workload_view`), then what they take from their pool
and neighbours, then pools (:mod:`policylint.engine.pool_view`), clusters and
proposals, which read their members' sheets.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import TYPE_CHECKING, Any, TypeVar

from policylint.engine.pool_merges import pool_merges
from policylint.engine.pool_view import history_facts, measured_on_facts, pool_view
from policylint.engine.pooled_facts import durations_shared, identity_facts, pool_workload_facts, pooled_pool_facts
from policylint.engine.sheets import (
    ClusterFactSheet,
    PoolFactSheet,
    ProposalAsk,
    ProposalFactSheet,
    ProposalRequest,
    WorkloadFactSheet,
)
from policylint.engine.checks import listed
from policylint.engine.shortfall import owned_parts, owned_text
from policylint.engine.lite_sheet import is_stand_in, set_facts
from policylint.engine.view import History, View
from policylint.facts import Facts
from policylint.engine.workload_view import capacity_shares, depth_facts, to_gpus, workload_view
from policylint.measure.pool_groups import Thresholds
from policylint.measure.pools import measure_pools
from policylint.measure.integrity.copies import copy_facts
from policylint.measure.integrity.plausibility import pool_integrity_facts

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

    from policylint.measure.facts import PoolFacts, WorkloadFacts
    from policylint.model.needed import Needed
    from policylint.model import Model, Workload
    from policylint.model.load import DocPath

_T = TypeVar("_T", bound=Facts)


#: per sheet class: whether building it again is only assigning its fields (see :func:`replaced`)
_PLAIN_INIT: dict[type, tuple[list[str], frozenset[str]] | None] = {}


def _plain_init(cls: type) -> tuple[list[str], frozenset[str]] | None:
    """The field names of ``cls`` when building it again only assigns them (see :func:`replaced`); else None."""
    if cls in _PLAIN_INIT:
        return _PLAIN_INIT[cls]
    import inspect

    init = getattr(cls, "__init__", None)
    fields = dataclasses.fields(cls) if dataclasses.is_dataclass(cls) else ()
    plain = (
        issubclass(cls, Facts)
        and bool(fields)
        and getattr(cls, "__post_init__", None) is Facts.__post_init__
        # the __init__ dataclasses wrote for the class (not one of its own): it assigns the fields
        and getattr(getattr(init, "__code__", None), "co_filename", None) == "<string>"
        and getattr(init, "__qualname__", None) == f"{cls.__qualname__}.__init__"
        and all(f.init for f in fields)
        # a field's value is what the instance holds: no descriptor on the class stands in between
        and not any(hasattr(type(inspect.getattr_static(cls, f.name, None)), "__set__") for f in fields)
    )
    names = [f.name for f in fields]
    _PLAIN_INIT[cls] = (names, frozenset(names)) if plain else None
    return _PLAIN_INIT[cls]


def replaced(sheet: _T, changes: Mapping[str, object]) -> _T:
    """``dataclasses.replace(sheet, **changes)``, without running ``__init__`` when that only assigns fields.

    A fact sheet's generated ``__init__`` assigns each field and its ``__post_init__``
    (:class:`policylint.facts.Facts`) only prepares the class: the new sheet is then its
    fields' values, taken as ``replace`` takes them, with ``changes`` over them.
    Any other class, or a change naming no field, is left to ``replace``.
    """
    cls = type(sheet)
    plan = _plain_init(cls)
    held = getattr(sheet, "__dict__", None)
    if plan is None or held is None or not plan[1].issuperset(changes):
        return dataclasses.replace(sheet, **changes)
    names = plan[0]
    # the fields' values in field order, as replace() passes them to __init__
    state = held.copy() if list(held) == names else {name: getattr(sheet, name) for name in names}
    state.update(changes)
    new = object.__new__(cls)
    new.__dict__.update(state)
    new.__post_init__()
    return new


def _group(asks: list[tuple[str, int]]) -> list[ProposalAsk]:
    """The proposals asking for one pool, each once with its GPUs summed, by name."""
    total: dict[str, int] = {}
    for name, gpus in asks:
        total[name] = total.get(name, 0) + gpus
    return [ProposalAsk(name=name, gpus=total[name]) for name in sorted(total)]


def build_views(
    model: Model,
    facts: dict[str, WorkloadFacts],
    now: dt.datetime,
    history: History | None = None,
    pools: dict[str, PoolFacts] | None = None,
    only: Needed | None = None,
    prebuilt: Mapping[str, View] | None = None,
    viewed: Callable[[list[tuple[Workload, WorkloadFacts, View]]], None] | None = None,
    cache_dir: Path | None = None,
    thresholds: Thresholds | None = None,
) -> list[View]:
    """Views for every subject of the model, in a deterministic order.

    ``pools`` is the pooled demand from :func:`policylint.measure.pools.measure_pools`;
    computed here when the caller did not. ``only`` (None: everything) limits the
    views to those subjects; ``facts`` and ``pools`` then need to hold just what
    :func:`policylint.engine.scope.needed` says they read. ``prebuilt`` holds workload views
    already built (from the repository index, :mod:`policylint.engine.repo_index`); ``viewed``
    is given every workload view built here (with its workload and facts) once they are all
    built, before the pool steps add to them. With ``cache_dir`` the near-copy facts are kept
    there between runs (:func:`policylint.measure.integrity.copies.copy_facts`). ``thresholds``
    (the rule set's, :meth:`~policylint.measure.pool_groups.Thresholds.from_params`; default: the
    rules' defaults) group the pools a cluster's ``pool_merges`` pairs, as ``plan`` groups workloads.
    """
    if pools is None:
        pools = measure_pools(model, facts)
    wanted_pools = model.pools if only is None else [p for p in model.pools if p.qualified in only.pools]
    wviews: dict[str, View] = {}
    wsheets: dict[str, WorkloadFactSheet] = {}
    built: list[tuple[Workload, WorkloadFacts, View]] = []
    for n, workload in sorted(model.workloads.items()):
        if only is None or n in only.workloads:
            if prebuilt is not None and n in prebuilt:
                wviews[n] = prebuilt[n]
                sheet = wviews[n].facts
                if not isinstance(sheet, WorkloadFactSheet):
                    raise TypeError(f"the prebuilt view of workload {n} holds no workload fact sheet")
                wsheets[n] = sheet
                continue
            wviews[n], wsheets[n] = workload_view(workload, facts[n], now)
            if viewed is not None:
                built.append((workload, facts[n], wviews[n]))
    if viewed is not None:
        viewed(built)
    for pool in wanted_pools:
        shares = capacity_shares(pool, {w.name: wsheets[w.name] for w in pool.workloads})
        for member in pool.workloads:
            share, wf, f = shares.get(member.name), facts[member.name], wsheets[member.name]
            per_gpu, per_replica = to_gpus(f)
            if share is not None and wf.report is not None and per_gpu:
                depth_facts(f, wf, share / per_replica * per_gpu)
    #: every proposal's requests per pool: proposals are judged together, so splitting one ask in two gains nothing
    proposed, proposed_by = model.proposed_gpus()
    pviews: dict[str, View] = {}
    psheets: dict[str, PoolFactSheet] = {}
    for pool in wanted_pools:
        key = pool.qualified
        pviews[key], psheets[key] = pool_view(pool, wsheets, proposed.get(key, 0), pools.get(key))
        unread = sorted({f"{u.file} ({u.code})" for u in model.unplaced if u.may_hold(pool)})
        if unread:
            # a workload of this pool may be in a document the model lacks: its demand is not known whole,
            # so nothing is judged against the pooled bands (PL981 says why)
            sheet = psheets[key]
            sheet.unread_documents = unread
            sheet.unread_summary = listed(unread)
            sheet.unread_count = len(unread)
            unknown = pooled_pool_facts(None, dict.fromkeys(("baseline", "daily", "peak", "sustained_max")))
            unknown.measured_workload_count = sheet.pooled.measured_workload_count  # those read are still measured
            sheet.pooled = unknown
    #: the place tables views shared, each copied once with a place added (see View.add_place)
    copies: dict[tuple[int, str], tuple[Any, Any]] = {}
    for pool in wanted_pools:
        for name, pooled in pool_workload_facts(pool, psheets[pool.qualified], wsheets).items():
            wsheets[name].pooled = pooled
            wviews[name].add_place("measurement_double_counted", ("spec", "concurrency", "trace", "path"), copies)
        history_facts(psheets[pool.qualified], pool, history, wsheets)
        measured_on_facts(wsheets, pool, history)
    if only is not None and only.copied:
        # near-copy partners' pools: which members repeat one another, not their pooled demand
        for pool in model.pools:
            if pool.qualified in only.copied and pool.qualified not in only.pools:
                for name, pooled in identity_facts(pool, wsheets).items():
                    wsheets[name].pooled = pooled
    # job durations two workloads read as their own, across pools too (PL984)
    for name, shared in durations_shared(wsheets).items():
        wsheets[name].pooled = replaced(wsheets[name].pooled, shared)
    # near copies, across pools too
    kept = (cache_dir, model.root) if cache_dir is not None else None
    for name, near in copy_facts(list(model.workloads.values()), facts, wsheets, kept).items():
        if is_stand_in(wsheets[name]):
            set_facts(wsheets[name].integrity, near)  # its own part, held by nothing else: as replacing it
        else:
            wsheets[name].integrity = replaced(wsheets[name].integrity, near)
        if "near_copy_of" in near:
            wviews[name].add_place("near_copy_similarity", ("spec", "concurrency", "trace", "path"), copies)
    volcano = getattr(model.schedulers.get("volcano"), "queues", None)
    for pool in wanted_pools:
        psheets[pool.qualified].integrity = pool_integrity_facts(pool, psheets[pool.qualified], volcano)
    views: list[View] = list(wviews.values())
    views += [pviews[k] for k in sorted(pviews)]
    for name in sorted(model.clusters):
        if only is not None and name not in only.clusters:
            continue
        cluster = model.clusters[name]
        members = [wsheets[w.name] for pool in cluster.pools.values() for w in pool.workloads]
        tolerances = sorted(f.tolerance_seconds for f in members if f.tolerance_seconds is not None)
        rounding, baseline, rounding_pools = cluster_rounding([psheets[p.qualified] for p in cluster.pools.values()])
        sheet = ClusterFactSheet(
            name=name,
            workload_count=len(members),
            tolerance_declared_count=len(tolerances),
            tolerances=tolerances,
            rounding_gpus=rounding,
            rounding_baseline_gpus=baseline,
            rounding_share=rounding / baseline if rounding is not None and baseline else None,
            rounding_pools=rounding_pools,
            pool_merges=pool_merges(cluster, psheets, pools, wsheets, thresholds),
        )  # loosened_*: the run's configuration, set by the linter
        sheet.gpu_spellings, sheet.gpu_spelling_count = [], 0
        if len(cluster.pools) > 1:
            from policylint.measure.integrity.plausibility import spelled_apart

            sheet.gpu_spellings = spelled_apart([(p.name, (p.spec.get("gpu") or {}).get("model"),
                                                  (p.spec.get("gpu") or {}).get("memoryGiB"))
                                                 for p in sorted(cluster.pools.values(), key=lambda p: p.name)])
            sheet.gpu_spelling_count = len(sheet.gpu_spellings)
        sheet.gpu_spelling_summary = " | ".join(sheet.gpu_spellings)
        views.append(View("cluster", f"cluster {name}", cluster.doc, ("metadata", "name"), sheet, target=cluster.subject))
    for name in sorted(model.proposals):
        if only is not None and name not in only.proposals:
            continue
        views.append(_proposal_view(model, name, psheets, wsheets, proposed, proposed_by))
    return views


def cluster_rounding(sheets: list[PoolFactSheet]) -> tuple[float | None, int | None, int | None]:
    """(rounding GPUs, pooled baseline GPUs, pools that round) over a cluster's pools, in pool name order.

    A pool counts when both its ``rounding_gpus`` and its pooled baseline are known, so that
    the share compares like with like. (None, None, None) when no pool counts.
    """
    rounding = 0.0
    baseline = 0
    counted = rounds = 0
    for sheet in sorted(sheets, key=lambda s: s.name):
        pooled = sheet.pooled
        if pooled.rounding_gpus is None or pooled.baseline_gpus is None:
            continue
        rounding += pooled.rounding_gpus
        baseline += pooled.baseline_gpus
        counted += 1
        rounds += pooled.rounding_gpus > 0
    return (rounding, baseline, rounds) if counted else (None, None, None)


def _text(value: object) -> str | None:
    """A model name as written (stripped), None when none is given."""
    return (value.strip() or None) if isinstance(value, str) else None


def _proposal_view(
    model: Model,
    name: str,
    psheets: dict[str, PoolFactSheet],
    wsheets: dict[str, WorkloadFactSheet],
    proposed: dict[str, int],
    proposed_by: dict[str, list[tuple[str, int]]],
) -> View:
    """The view of one proposal: its requests beside the pools they are for, its cited workloads."""
    p = model.proposals[name]
    requests: list[ProposalRequest] = []
    for i, req in enumerate(p.spec.get("requests", [])):
        target = p.pools.get(req["pool"])
        pv = psheets.get(target.qualified) if target else None
        requests.append(
            ProposalRequest(
                index=i,
                pool=req["pool"],
                gpus=int(req["gpus"]),
                reserved=pv.reserved_gpus if pv else None,
                owned=target.reserved_gpus + target.owned_beyond_reserved_gpus if pv and target else None,
                owned_text=(owned_text(target.reserved_gpus, target.lent_gpus, target.parent_only_gpus)
                            if pv and target else None),
                owned_parts=(owned_parts(target.reserved_gpus, target.lent_gpus, target.parent_only_gpus)
                             if pv and target else None),
                baseline_gpus=pv.pooled.baseline_gpus if pv else None,
                baseline_gpus_sum=pv.pooled.baseline_gpus_sum if pv else None,
                baseline_pooling=pv.pooled.baseline_pooling if pv else None,
                measured_workloads=pv.pooled.measured_workload_count if pv else None,
                pool_workloads=pv.workload_count if pv else None,
                pool_proposed_gpus=proposed.get(target.qualified, 0) if target else None,
                pool_proposals=_group(proposed_by.get(target.qualified, [])) if target else [],
                gpu_model=_text(req.get("gpuModel")),
                pool_gpu_model=_text((target.spec.get("gpu") or {}).get("model")) if target else None,
                measured_gpu_model=pv.gpu_model_before if pv and pv.gpu_model_changed else None,
            )
        )
    cluster_measured = None
    if p.cluster is not None:
        cluster_measured = sum(psheets[pool.qualified].pooled.measured_workload_count for pool in p.cluster.pools.values())
    cited = [wsheets[w.name] for w in p.workloads if w.name in wsheets]
    sheet = ProposalFactSheet(
        name=name,
        cluster=p.spec.get("cluster"),
        requested_gpus=sum(r["gpus"] for r in requests),
        cited_workloads=len(p.spec.get("workloads", [])),
        cited_measured=sum(1 for f in cited if f.concurrency_measured),
        requests=requests,
        justification=(p.spec.get("justification") or "").strip() or None,
        cluster_measured=cluster_measured,
    )
    paths: dict[str, DocPath] = {
        "cited_workloads": ("spec", "workloads") if "workloads" in p.spec else ("spec",),
        "cited_measured": ("spec", "workloads") if "workloads" in p.spec else ("spec",),
        "requested_gpus": ("spec", "requests"),
        "justification": ("spec", "justification") if "justification" in p.spec else ("spec",),
    }
    return View("proposal", f"proposal {name}", p.doc, ("metadata", "name"), sheet, paths)
