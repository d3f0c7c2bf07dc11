"""The capacity plan: pools derived from the demand model and sized from their pooled series.

``policylint plan`` answers "how many GPUs, in which pools, with which queues?" from the
measurements alone, by the framework's rules (FRAMEWORK.md):

1. **Grouping.** Training, batch and inference never share a pool. Inside one cluster,
   workloads are grouped by class, GPU model and memory (taken from the pool they run
   in today), gang needs (training or batch jobs holding more than one GPU) and
   tolerance tier (real-time, interactive, queue-tolerant, with no tier wider than the
   tolerance spread the rules accept). Within a group, workloads are pooled pairwise,
   best saving first, while pooling saves GPUs: a merge is kept only when the pooled
   pool needs fewer GPUs than the two apart, and only when their traces overlap for
   the measurement window (otherwise the pooled bands would describe too short a
   stretch), and never when two of them cite one measurement (its demand would count
   twice).
2. **Sizing**, from the pool's pooled series (:func:`policylint.measure.measure_pool`,
   which is :func:`policylint.pooled.pool_series` at the pool's cold start from
   :func:`policylint.measure.pool_cold_start`): reserved = pooled baseline band;
   reserved + elastic = pooled daily band, or, for a pool that queues its overflow,
   the least capacity at which the daily-band demand waits no longer than the pool's
   tightest tolerance (:func:`policylint.bands.capacity_for_tolerance`), if that is
   less. Elastic GPUs must come up within the pool's cold-start window, or bursts the
   daily band counts would be over before they arrive. Overflow is rejected for
   real-time pools and queued otherwise; the queue waits as long as the most patient
   workload tolerates; gang scheduling where jobs hold several GPUs; preemption where
   a job-duration tail is long.
3. **Queue depth** comes last, from the views of the planned repository
   (:func:`apply_depths`): it is the depth ``check`` itself derives from the spike
   heights, so the plan and the check cannot disagree.

Nothing here re-computes a band, a cold start or a GPU conversion: every figure comes
from the functions ``check`` uses. The module is pure (no files, no printing) apart
from :func:`write_repository`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policylint.errors import PolicylintError

if TYPE_CHECKING:
    from policylint.finding import Finding
    from policylint.load import SourceFile
    from policylint.measure import PoolFacts, WorkloadFacts
    from policylint.model import Model, Pool, Workload

__all__ = [
    "SIZING_RULES",
    "Plan",
    "PlannedPool",
    "Thresholds",
    "Unplaced",
    "WhatIf",
    "apply_depths",
    "build_plan",
    "cluster_yaml",
    "compare",
    "replaced_document",
    "to_dict",
    "write_repository",
]

#: The findings a plan is responsible for: sizing, queues, placement and scheduling of pools.
#: ``check`` on a planned repository reports none of them (the plan's own verification).
SIZING_RULES = frozenset(
    {
        "PL101", "PL102", "PL103", "PL104", "PL110", "PL111", "PL112",
        "PL201", "PL203", "PL204", "PL205", "PL206", "PL207", "PL208",
        "PL303", "PL306", "PL401", "PL402", "PL403", "PL502", "PL601",
        "PL801", "PL803",
    }
)  # fmt: skip

#: Name of the file holding the planned clusters in a planned repository.
PLANNED_CLUSTERS_FILE = "planned-clusters.yaml"

_EPS = 1e-9
_CLASSES = ("training", "batch", "inference")


@dataclass(frozen=True)
class WhatIf:
    """One input changed, to see what it is worth in GPUs.

    ``cold_start_seconds`` replaces every workload's declared cold start (faster model
    loading); ``tolerances`` replaces named workloads' ``maxQueueSeconds``; ``headroom``
    is the share above the bands the plan adds (0: exactly the bands).
    """

    cold_start_seconds: float | None = None
    tolerances: tuple[tuple[str, float], ...] = ()
    headroom: float = 0.0


@dataclass(frozen=True)
class Thresholds:
    """The rules' parameters the plan must satisfy (defaults: the rules' defaults)."""

    realtime_seconds: float = 10.0  # PL306
    queue_tolerant_seconds: float = 300.0  # PL306
    max_spread: float = 100.0  # PL303
    min_window_days: float = 90.0  # PL112
    max_tail_ratio: float = 20.0  # PL601
    headroom: float = 0.15  # least of PL101, PL102, PL201

    @classmethod
    def from_params(cls, params: Mapping[str, Mapping[str, Any]]) -> Thresholds:
        """The thresholds of a configured rule set (``RuleSet.params``: code -> effective parameters)."""
        d = cls()

        def get(code: str, name: str, default: float) -> float:
            value = (params.get(code) or {}).get(name)
            return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default

        headrooms = [get(c, "headroom", d.headroom) for c in ("PL101", "PL102", "PL201")]
        return cls(
            realtime_seconds=get("PL306", "realtime_seconds", d.realtime_seconds),
            queue_tolerant_seconds=get("PL306", "queue_tolerant_seconds", d.queue_tolerant_seconds),
            max_spread=get("PL303", "max_factor", d.max_spread),
            min_window_days=get("PL112", "min_window_days", d.min_window_days),
            max_tail_ratio=get("PL601", "max_tail_ratio", d.max_tail_ratio),
            headroom=min(headrooms),
        )


@dataclass(frozen=True)
class Unplaced:
    """Where workloads placed in no pool are planned: a cluster (when they name none) and a GPU type.

    Without a GPU type they are left out of the plan: nothing says which GPUs they run on.
    """

    cluster: str = "planned"
    gpu_model: str | None = None
    gpu_memory: float | None = None


@dataclass
class PlannedPool:
    """One planned pool: who is in it, its pooled bands and the capacity they justify."""

    cluster: str
    name: str
    cls: str
    gpu: dict[str, Any]
    tier: str
    gang: bool
    preemption: bool
    members: tuple[str, ...]
    measured: bool
    reserved: int = 0
    elastic: int = 0
    cold_start_seconds: float | None = None
    overflow: str = "queue"
    max_wait_seconds: float = 0.0
    max_depth: int = 0
    nodes: dict[str, Any] | None = None
    namespaces: tuple[str, ...] = ()
    #: pooled figures (GPUs) and what surrounds them; None for an unmeasured pool
    bands: dict[str, Any] | None = None
    #: the members' bands each planned alone, summed, and the capacity they would need apart
    apart: dict[str, int] | None = None
    #: why each member sits here
    reasons: dict[str, str] = field(default_factory=dict)
    #: every number with the measurement, band and rule it comes from
    derivation: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def qualified(self) -> str:
        return f"{self.cluster}/{self.name}"

    @property
    def capacity(self) -> int:
        return self.reserved + self.elastic

    def spec(self) -> dict[str, Any]:
        """The pool as a policylint Cluster pool (``schemas/cluster.schema.json``)."""
        out: dict[str, Any] = {"name": self.name, "gpu": dict(self.gpu), "reservedGpus": self.reserved}
        if self.elastic > 0:
            elastic: dict[str, Any] = {"maxGpus": self.elastic, "kind": "autoscale"}
            if self.cold_start_seconds is not None:
                elastic["coldStartSeconds"] = _plain(self.cold_start_seconds)
            out["elastic"] = elastic
        out["serves"] = [self.cls]
        out["sharing"] = "exclusive"
        out["overflow"] = self.overflow
        out["queue"] = {"maxDepth": self.max_depth, "maxWaitSeconds": _plain(self.max_wait_seconds)}
        out["scheduling"] = {"gang": self.gang, "preemption": self.preemption}
        if self.namespaces:
            out["namespaces"] = list(self.namespaces)
        if self.nodes:
            out["nodes"] = self.nodes
        return out


@dataclass
class Plan:
    """The planned pools, the workloads the plan cannot place, and the inputs it was made with."""

    pools: list[PlannedPool]
    #: workload -> why it has no planned pool (no cluster or GPU type to plan it in)
    unplaced: dict[str, str]
    whatif: WhatIf
    thresholds: Thresholds

    def pool_of(self, workload: str) -> PlannedPool | None:
        for p in self.pools:
            if workload in p.members:
                return p
        return None


# --------------------------------------------------------------------------- inputs


def _plain(x: float) -> float | int:
    """A whole float as an int (YAML and JSON without a spurious .0)."""
    return int(x) if float(x).is_integer() else float(x)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _planned_spec(w: Workload, whatif: WhatIf) -> dict[str, Any]:
    """The workload's spec with the what-if inputs applied (a copy)."""
    spec = dict(w.spec)
    if whatif.cold_start_seconds is not None:
        spec["coldStartSeconds"] = _plain(whatif.cold_start_seconds)
    for name, seconds in whatif.tolerances:
        if name == w.name:
            tol = dict(spec.get("tolerance") or {})
            tol["maxQueueSeconds"] = _plain(seconds)
            spec["tolerance"] = tol
    return spec


def tolerance_of(spec: Mapping[str, Any]) -> float | None:
    """The declared maximum tolerable queue seconds, None when not a number."""
    return _number((spec.get("tolerance") or {}).get("maxQueueSeconds"))


def _replicas(spec: Mapping[str, Any]) -> int:
    value = spec.get("gpusPerReplica", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def _tier(tolerance: float | None, th: Thresholds) -> str:
    if tolerance is None:
        return "no-tolerance"
    if tolerance <= th.realtime_seconds:
        return "realtime"
    if tolerance < th.queue_tolerant_seconds:
        return "interactive"
    return "queue-tolerant"


def dns(text: str) -> str:
    """A pool-name-safe, DNS-friendly rendering of ``text``."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


# --------------------------------------------------------------------------- trial pools


def _trial(members: Sequence[Workload], spec: dict[str, Any]) -> Pool:
    """A pool that exists only for measuring: copies of ``members`` placed in one pool with ``spec``.

    The copies keep their declarations and measurements; only their pool changes, so
    :func:`policylint.measure.effective_cold_start` sees the planned pool.
    """
    from policylint.model import Cluster, Pool

    doc = members[0].doc
    current = members[0].pool
    owner = Cluster(name=current.cluster.name if current is not None else "plan", doc=doc, spec={})
    pool = Pool(name=str(spec["name"]), cluster=owner, spec=spec, doc=doc, doc_path=())
    pool.workloads = [replace(w, pool=pool) for w in members]
    return pool


@dataclass
class _Sized:
    """A candidate pool's pooled facts and the capacity the rules give it."""

    facts: PoolFacts
    reserved: int
    capacity: int
    capacity_rule: str
    tolerance_capacity: int | None
    cold_start: float
    cold_start_source: str

    @property
    def ok(self) -> bool:
        return self.facts.report is not None and self.facts.report.baseline is not None


def _size(
    members: Sequence[Workload],
    facts: Mapping[str, WorkloadFacts],
    whatif: WhatIf,
    reject: bool,
    tolerance: float | None,
    gpu: dict[str, Any],
) -> _Sized:
    """Pooled bands of ``members`` and the capacity they justify (see the module docs)."""
    import numpy as np

    from policylint.bands import capacity_for_tolerance
    from policylint.measure import measure_pool, pool_cold_start, pool_cold_start_source

    base = {"name": "trial", "gpu": gpu, "reservedGpus": 0, "serves": [members[0].cls]}
    trial = _trial(members, base)
    # Without elastic capacity each member's effective cold start is its own; the pool's
    # is the longest of them. Elastic capacity that comes up within that window leaves it so.
    cold = pool_cold_start(trial)
    source = pool_cold_start_source(trial)
    pooled = measure_pool(trial, dict(facts))
    r = pooled.report
    if r is None or r.baseline is None or r.daily is None or pooled.grid is None:
        return _Sized(pooled, 0, 0, "unmeasured", None, cold, source)
    h = whatif.headroom
    reserved = math.floor(r.baseline * (1 + h) + _EPS)
    full = max(reserved, math.floor(r.daily * (1 + h) + _EPS))
    rule = "daily band" if h == 0 else f"daily band + {h:.0%} headroom"
    tol_cap: int | None = None
    capacity = full
    if not reject and tolerance is not None:
        within = np.minimum(pooled.grid.pooled, r.daily)
        tol_cap = capacity_for_tolerance(within, tolerance, r.step_seconds)
        with_h = math.floor(tol_cap * (1 + h) + _EPS)
        if with_h < full:
            capacity = max(reserved, with_h)
            rule = (
                f"least capacity at which daily-band demand waits at most {tolerance:g} s"
                + ("" if h == 0 else f", + {h:.0%} headroom")
            )
            if capacity == reserved:
                rule += " (the reserved baseline already holds it)"
    return _Sized(pooled, reserved, capacity, rule, tol_cap, cold, source)


# --------------------------------------------------------------------------- grouping


@dataclass(frozen=True)
class _Group:
    cluster: str
    cls: str
    gpu_model: str
    gpu_memory: float
    gang: bool
    tier: str


def _group_of(w: Workload, spec: Mapping[str, Any], th: Thresholds, unplaced: Unplaced) -> _Group | str:
    """The group a workload belongs to, or why it cannot be planned."""
    if w.cls not in _CLASSES:
        return f"its class {w.cls!r} is not one of {', '.join(_CLASSES)}"
    gang = w.cls in ("training", "batch") and _replicas(spec) > 1
    tier = _tier(tolerance_of(spec), th)
    if w.pool is None:
        if unplaced.gpu_model is None or unplaced.gpu_memory is None:
            return "it is placed in no pool, so its GPU type is unknown (give one with --gpu MODEL=GIB)"
        named = spec.get("cluster")
        cluster = named if isinstance(named, str) and named else unplaced.cluster
        return _Group(cluster, w.cls, unplaced.gpu_model, unplaced.gpu_memory, gang, tier)
    gpu = w.pool.spec.get("gpu") or {}
    model, memory = gpu.get("model"), _number(gpu.get("memoryGiB"))
    if not isinstance(model, str) or memory is None:
        return f"its pool {w.pool.qualified} declares no GPU model and memory"
    return _Group(w.pool.cluster.name, w.cls, model, memory, gang, tier)


def _split_spread(names: list[str], tolerances: Mapping[str, float | None], max_spread: float) -> list[list[str]]:
    """Cut a tier, ordered by tolerance, wherever the loosest would exceed ``max_spread`` x the tightest."""
    order = sorted(names, key=lambda n: (tolerances[n] if tolerances[n] is not None else -1.0, n))
    parts: list[list[str]] = []
    for n in order:
        t = tolerances[n]
        if parts and t is not None:
            first = tolerances[parts[-1][0]]
            if first is not None and first > 0 and t <= first * max_spread:
                parts[-1].append(n)
                continue
            if first is not None and first == 0 and t == 0:
                parts[-1].append(n)
                continue
        elif parts and t is None:
            parts[-1].append(n)
            continue
        parts.append([n])
    return parts


def build_plan(
    model: Model,
    facts: Mapping[str, WorkloadFacts],
    whatif: WhatIf | None = None,
    thresholds: Thresholds | None = None,
    unplaced_at: Unplaced | None = None,
) -> Plan:
    """The plan for the workloads of ``model`` measured as ``facts`` (see the module docs).

    Clusters are optional input: a workload placed in no pool is planned in the cluster
    it names (else ``unplaced_at.cluster``) on ``unplaced_at``'s GPU type. Queue depths
    are left at 0: :func:`apply_depths` sets them from the planned repository's own views.
    """
    whatif = whatif or WhatIf()
    th = thresholds or Thresholds()
    unplaced_at = unplaced_at or Unplaced()
    unknown = sorted({n for n, _ in whatif.tolerances} - set(model.workloads))
    if unknown:
        raise PolicylintError(f"--tolerance names no workload of the repository: {', '.join(unknown)}")
    if whatif.headroom < 0 or whatif.headroom > th.headroom + _EPS:
        raise PolicylintError(
            f"--headroom {whatif.headroom:g} is outside 0..{th.headroom:g}, the headroom the sizing rules accept"
        )
    specs = {n: _planned_spec(w, whatif) for n, w in model.workloads.items()}
    planned = {n: replace(w, spec=specs[n]) for n, w in model.workloads.items()}
    groups: dict[_Group, list[str]] = {}
    unplaced: dict[str, str] = {}
    for name in sorted(planned):
        g = _group_of(planned[name], specs[name], th, unplaced_at)
        if isinstance(g, str):
            unplaced[name] = g
        else:
            groups.setdefault(g, []).append(name)
    pools: list[PlannedPool] = []
    used: set[tuple[str, str]] = set()
    tol = {n: tolerance_of(specs[n]) for n in planned}
    for group in sorted(groups, key=lambda g: (g.cluster, g.cls, g.gpu_model, g.gpu_memory, g.gang, g.tier)):
        for part_index, part in enumerate(_split_spread(groups[group], tol, th.max_spread)):
            measured = [n for n in part if _measured(facts.get(n))]
            unmeasured = sorted(n for n in part if n not in measured)
            base = f"{group.cls}-{dns(group.gpu_model)}-{group.tier}" + ("-gang" if group.gang else "")
            if part_index:
                base += f"-{part_index + 1}"
            for members in _merge(measured, planned, facts, whatif, group, tol, th):
                sized = _planned_pool(group, base, members, planned, facts, whatif, tol, th)
                if sized is None:  # measured, but no stretch of its series as long as the cold start
                    unmeasured = sorted(unmeasured + members)
                    continue
                sized.name = _unique(base, group.cluster, used)
                pools.append(sized)
            if unmeasured:
                pools.append(
                    _unmeasured_pool(group, _unique(base + "-unmeasured", group.cluster, used), unmeasured, planned, facts, tol, th)
                )
    pools.sort(key=lambda p: (p.cluster, p.name))
    return Plan(pools=pools, unplaced=unplaced, whatif=whatif, thresholds=th)


def _measured(f: WorkloadFacts | None) -> bool:
    return f is not None and f.report is not None and f.demand is not None


def _unique(base: str, cluster: str, used: set[tuple[str, str]]) -> str:
    name, k = base, 1
    while (cluster, name) in used:
        k += 1
        name = f"{base}-{k}"
    used.add((cluster, name))
    return name


def _is_reject(group: _Group) -> bool:
    return group.tier == "realtime"


def _merge(
    names: list[str],
    planned: Mapping[str, Workload],
    facts: Mapping[str, WorkloadFacts],
    whatif: WhatIf,
    group: _Group,
    tol: Mapping[str, float | None],
    th: Thresholds,
) -> list[list[str]]:
    """Pool the workloads pairwise, best saving first, while pooling saves GPUs."""
    gpu = {"model": group.gpu_model, "memoryGiB": _plain(group.gpu_memory)}
    cache: dict[frozenset[str], _Sized] = {}

    def sized(members: Iterable[str]) -> _Sized:
        key = frozenset(members)
        if key not in cache:
            ordered = sorted(key)
            tols = [tol[n] for n in ordered]
            tight = None if any(t is None for t in tols) else min(t for t in tols if t is not None)
            cache[key] = _size([planned[n] for n in ordered], facts, whatif, _is_reject(group), tight, gpu)
        return cache[key]

    def repeated(members: list[str]) -> bool:
        # PL111: two workloads citing one measurement would count its demand twice in one pool
        from policylint.pooled_facts import double_counted

        return bool(double_counted(_trial([planned[n] for n in sorted(members)], {"name": "trial"})))

    parts = [[n] for n in sorted(names)]
    while len(parts) > 1:
        best: tuple[tuple[int, int], int, int] | None = None
        for i in range(len(parts)):
            for j in range(i + 1, len(parts)):
                if repeated(parts[i] + parts[j]):
                    continue
                a, b = sized(parts[i]), sized(parts[j])
                both = sized(parts[i] + parts[j])
                if not (a.ok and b.ok and both.ok):
                    continue
                r = both.facts.report
                assert r is not None
                if r.window_days < th.min_window_days:
                    continue  # PL112: the pooled bands would describe too short a stretch
                saving = (a.capacity + b.capacity - both.capacity, a.reserved + b.reserved - both.reserved)
                if saving > (0, 0) and (best is None or saving > best[0]):
                    best = (saving, i, j)
        if best is None:
            break
        _, i, j = best
        parts[i] = sorted(parts[i] + parts[j])
        del parts[j]
    return sorted(parts)


def _common_nodes(pools: Iterable[Pool | None]) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
    """The node selection all current pools agree on (else none), and every namespace they name."""
    nodes: list[Any] = []
    namespaces: set[str] = set()
    for p in pools:
        if p is None:
            continue
        nodes.append(p.spec.get("nodes"))
        namespaces.update(str(n) for n in p.spec.get("namespaces") or [])
    first = nodes[0] if nodes else None
    same = all(n == first for n in nodes)
    return (dict(first) if same and isinstance(first, dict) and first else None), tuple(sorted(namespaces))


def _reason(group: _Group, tol: float | None, alone: bool) -> str:
    tier = {
        "realtime": "real-time (tolerates at most the real-time limit)",
        "interactive": "interactive (between the real-time and queue-tolerant limits)",
        "queue-tolerant": "queue-tolerant",
        "no-tolerance": "without a declared tolerance",
    }[group.tier]
    what = f"{group.cls} on {group.gpu_model} ({_plain(group.gpu_memory)} GiB)"
    gang = ", multi-GPU jobs needing gang scheduling" if group.gang else ""
    tol_text = "no tolerance" if tol is None else f"tolerates {tol:g} s"
    pooled = (
        "alone: pooled with another workload of its group it would save no GPUs, overlap too briefly or count one"
        " measurement twice"
        if alone
        else "pooled: together they need fewer GPUs than apart"
    )
    return f"{what}{gang}; {tol_text}, {tier}; {pooled}"


def _planned_pool(
    group: _Group,
    name: str,
    members: list[str],
    planned: Mapping[str, Workload],
    facts: Mapping[str, WorkloadFacts],
    whatif: WhatIf,
    tol: Mapping[str, float | None],
    th: Thresholds,
) -> PlannedPool | None:
    """The pool of ``members`` sized from their pooled series; None when that series has no bands."""
    gpu = {"model": group.gpu_model, "memoryGiB": _plain(group.gpu_memory)}
    tols = [tol[n] for n in members]
    tight = None if any(t is None for t in tols) else min(t for t in tols if t is not None)
    reject = _is_reject(group)
    sized = _size([planned[n] for n in members], facts, whatif, reject, tight, gpu)
    if not sized.ok:
        return None
    alone = {n: _size([planned[n]], facts, whatif, reject, tol[n], gpu) for n in members}
    nodes, namespaces = _common_nodes(planned[n].pool for n in members)
    tails = {n: facts[n].tail_ratio for n in members}
    preempt = sorted(n for n, t in tails.items() if t is not None and t >= th.max_tail_ratio)
    known = [t for t in tols if t is not None]
    patient = max(known) if known else None
    pool = PlannedPool(
        cluster=group.cluster,
        name=name,
        cls=group.cls,
        gpu=gpu,
        tier=group.tier,
        gang=group.gang,
        preemption=bool(preempt),
        members=tuple(members),
        measured=True,
        reserved=sized.reserved,
        elastic=sized.capacity - sized.reserved,
        cold_start_seconds=sized.cold_start,
        overflow="reject" if reject else "queue",
        max_wait_seconds=patient if patient is not None else sized.cold_start,
        nodes=nodes,
        namespaces=namespaces,
    )
    r = sized.facts.report
    assert r is not None and r.baseline is not None and r.daily is not None and r.peak is not None
    sums = sized.facts.member_sums
    pool.bands = {
        "baseline_gpus": int(r.baseline),
        "daily_gpus": int(r.daily),
        "peak_gpus": int(r.peak),
        "sustained_max_gpus": int(r.sustained_max or 0),
        "highest_spike_gpus": int(r.highest_spike),
        "real_spikes": r.real_spike_count,
        "noise_spikes": r.noise_spike_count,
        "step_seconds": r.step_seconds,
        "window_days": round(r.window_days, 3),
        "sum_of_member_bands_gpus": None
        if sums is None or None in sums[:3]
        else {"baseline": int(sums[0] or 0), "daily": int(sums[1] or 0), "peak": int(sums[2] or 0)},
    }
    pool.apart = {
        "reserved": sum(a.reserved for a in alone.values()),
        "capacity": sum(a.capacity for a in alone.values()),
    }
    pool.reasons = {n: _reason(group, tol[n], len(members) == 1) for n in members}
    cold_rule = (
        f"pool cold start = the longest effective cold start of its workloads ({sized.cold_start_source}); "
        + (
            "elastic GPUs must serve within it, or the bursts the daily band counts end before they arrive"
            if pool.elastic
            else "the pool has no elastic capacity, so it is only the window of its bands"
        )
    )
    if whatif.cold_start_seconds is not None:
        cold_rule += f"; what-if: every workload's cold start set to {whatif.cold_start_seconds:g} s"
    measurement = f"pooled GPU demand of {', '.join(members)} over {r.window_days:.1f} days at {r.step_seconds:g} s steps"
    pool.derivation = {
        "reservedGpus": {
            "value": pool.reserved,
            "band": "baseline",
            "band_gpus": int(r.baseline),
            "measurement": measurement,
            "rule": "reserved = pooled baseline band (p95 of the demand sustained for a whole cold start)"
            + ("" if whatif.headroom == 0 else f" + {whatif.headroom:.0%} headroom, rounded down"),
        },
        "elastic.maxGpus": {
            "value": pool.elastic,
            "band": "daily",
            "band_gpus": int(r.daily),
            "measurement": measurement,
            "rule": f"elastic = capacity - reserved; capacity = {sized.capacity_rule}",
            "capacity_gpus": sized.capacity,
            "tolerance_capacity_gpus": sized.tolerance_capacity,
            "tightest_tolerance_seconds": tight,
        },
        "elastic.coldStartSeconds": {"value": _plain(sized.cold_start), "rule": cold_rule},
        "overflow": {
            "value": pool.overflow,
            "rule": (
                f"real-time pool (every workload tolerates at most {th.realtime_seconds:g} s): demand above the daily band"
                " cannot wait, callers retry"
                if reject
                else "the workloads can wait: demand above the daily band queues"
            ),
        },
        "queue.maxWaitSeconds": {
            "value": _plain(pool.max_wait_seconds),
            "rule": "the longest tolerance of the pool's workloads: the queue never turns away work that could still wait"
            if patient is not None
            else "no workload declares a tolerance: the queue holds work for one cold start",
            "measurement": "tolerance.maxQueueSeconds of each workload"
            + ("" if not whatif.tolerances else " (what-if values where --tolerance names it)"),
            "per_workload": {n: tol[n] for n in members},
        },
        "scheduling.gang": {
            "value": pool.gang,
            "rule": "training or batch jobs holding more than one GPU are admitted all-or-nothing"
            if pool.gang
            else "no job holds more than one GPU",
        },
        "scheduling.preemption": {
            "value": pool.preemption,
            "rule": (
                f"p99 job duration at least {th.max_tail_ratio:g} x p50 for {', '.join(preempt)}:"
                " preemption reclaims GPUs from long-tail jobs"
            )
            if preempt
            else "no job-duration tail needs protection",
        },
    }
    return pool


def _unmeasured_pool(
    group: _Group,
    name: str,
    members: list[str],
    planned: Mapping[str, Workload],
    facts: Mapping[str, WorkloadFacts],
    tol: Mapping[str, float | None],
    th: Thresholds,
) -> PlannedPool:
    """A pool without GPUs for the workloads whose GPU demand is not measured: measure first."""
    from policylint.measure import effective_cold_start

    nodes, namespaces = _common_nodes(planned[n].pool for n in members)
    preempt = sorted(
        n for n in members if (f := facts.get(n)) is not None and f.tail_ratio is not None and f.tail_ratio >= th.max_tail_ratio
    )
    known = [t for n in members if (t := tol[n]) is not None]
    cold = max(effective_cold_start(replace(planned[n], pool=None)) for n in members)
    pool = PlannedPool(
        cluster=group.cluster,
        name=name,
        cls=group.cls,
        gpu={"model": group.gpu_model, "memoryGiB": _plain(group.gpu_memory)},
        tier=group.tier,
        gang=group.gang,
        preemption=bool(preempt),
        members=tuple(members),
        measured=False,
        overflow="reject" if _is_reject(group) else "queue",
        max_wait_seconds=max(known) if known else cold,
        nodes=nodes,
        namespaces=namespaces,
    )
    why = (
        "no measured GPU demand (a readable concurrency trace covering at least one cold start, and a per-GPU"
        " figure): no GPUs until it is measured"
    )
    pool.reasons = {n: why for n in members}
    pool.derivation = {
        "reservedGpus": {"value": 0, "rule": why},
        "queue.maxWaitSeconds": {"value": _plain(pool.max_wait_seconds), "rule": "the longest declared tolerance"},
    }
    return pool


def apply_depths(plan: Plan, needed: Mapping[str, int | None]) -> None:
    """Set each pool's ``queue.maxDepth`` to the most its workloads' spikes need (workload -> depth).

    ``needed`` is the ``queue_depth_needed`` fact of every workload in the planned
    repository: the depth ``check`` derives from the measured spike heights above the
    workload's share of the planned capacity (PL206).
    """
    for p in plan.pools:
        depths = {n: needed.get(n) for n in p.members}
        known = {n: d for n, d in depths.items() if d is not None}
        p.max_depth = max(known.values(), default=0)
        top = sorted(known, key=lambda n: (-known[n], n))
        p.derivation["queue.maxDepth"] = {
            "value": p.max_depth,
            "rule": "the highest spike above a workload's share of the planned capacity, in its own requests or jobs"
            " (the depth check requires, PL206)"
            + (f"; set by {top[0]}" if top and p.max_depth else ""),
            "measurement": "each workload's highest usable concurrency sample (the top of its spikes), less its"
            " share of the planned capacity (split by baseline GPUs) in requests or jobs",
            "per_workload": {n: known.get(n) for n in sorted(depths)},
        }


# --------------------------------------------------------------------------- outputs


def cluster_documents(plan: Plan, model: Model) -> list[dict[str, Any]]:
    """The planned clusters as policylint Cluster documents (one per cluster, sorted)."""
    out: list[dict[str, Any]] = []
    for cluster in sorted({p.cluster for p in plan.pools}):
        current = model.clusters.get(cluster)
        meta: dict[str, Any] = {"name": cluster}
        if current is not None and current.backing is None:
            team = (current.doc.data.get("metadata") or {}).get("team") if isinstance(current.doc.data, dict) else None
            if isinstance(team, str):
                meta["team"] = team
        spec: dict[str, Any] = {}
        region = current.spec.get("region") if current is not None and current.backing is None else None
        if isinstance(region, str):
            spec["region"] = region
        spec["pools"] = [p.spec() for p in plan.pools if p.cluster == cluster]
        out.append({"apiVersion": "policylint/v1", "kind": "Cluster", "metadata": meta, "spec": spec})
    return out


def cluster_yaml(plan: Plan, model: Model) -> str:
    """The planned clusters as YAML, with a comment on every sized number."""
    import yaml

    parts = [
        "# The capacity plan written by `policylint plan`: pools derived from the measured demand.\n"
        "# Every number comes from the pooled bands; `policylint plan --format json` shows each derivation.\n"
    ]
    for doc in cluster_documents(plan, model):
        cluster = doc["metadata"]["name"]
        pools = {p.name: p for p in plan.pools if p.cluster == cluster}
        text = yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=10_000)
        lines = []
        current: PlannedPool | None = None
        for line in text.splitlines():
            stripped = line.strip()
            if stripped.startswith("- name: "):
                current = pools.get(str(yaml.safe_load(stripped[len("- name: "):])))
            lines.append(line + (_comment(stripped, current) if current is not None else ""))
        parts.append("---\n" + "\n".join(lines) + "\n")
    return "".join(parts)


def _comment(stripped: str, pool: PlannedPool) -> str:
    """A trailing comment for a sized number of ``pool``."""
    if stripped.startswith("reservedGpus:"):
        if pool.bands is None:
            return "  # no measured GPU demand yet"
        return f"  # pooled baseline band {pool.bands['baseline_gpus']} GPUs ({', '.join(pool.members)})"
    if stripped.startswith("elastic:") and pool.bands is not None:
        return f"  # up to {pool.capacity} GPUs in all; pooled daily band {pool.bands['daily_gpus']}"
    if stripped.startswith("queue:"):
        return "  # depth: highest spike above capacity; wait: longest tolerance"
    return ""


def compare(
    plan: Plan,
    model: Model,
    findings: Sequence[Finding],
    remaining: Sequence[Finding] = (),
) -> dict[str, Any]:
    """Today's pools and open proposals next to the plan, with the findings each difference resolves.

    ``findings`` are the current repository's; ``remaining`` the planned repository's
    (a finding of SIZING_RULES there is one the plan did not resolve).
    """
    proposed: dict[str, int] = {}
    proposals: dict[str, list[str]] = {}
    for pname, prop in sorted(model.proposals.items()):
        if prop.cluster is None:
            continue
        for req in prop.spec.get("requests", []) or []:
            if isinstance(req, dict) and req.get("pool") in prop.cluster.pools and isinstance(req.get("gpus"), int):
                key = f"{prop.cluster.name}/{req['pool']}"
                proposed[key] = proposed.get(key, 0) + int(req["gpus"])
                proposals.setdefault(key, []).append(pname)
    still = {(f.code, f.subject) for f in remaining if f.code in SIZING_RULES}
    by_subject: dict[str, list[Finding]] = {}
    for f in findings:
        if f.code in SIZING_RULES:
            by_subject.setdefault(f.subject, []).append(f)
    current: list[dict[str, Any]] = []
    for pool in sorted(model.pools, key=lambda p: p.qualified):
        reserved, elastic = pool.reserved_gpus, pool.elastic_gpus
        subjects = [f"pool {pool.qualified}"] + [f"workload {w.name}" for w in sorted(pool.workloads, key=lambda w: w.name)]
        subjects += [f"proposal {n}" for n in proposals.get(pool.qualified, [])]
        resolved = sorted(
            (f for s in subjects for f in by_subject.get(s, []) if (f.code, f.subject) not in still),
            key=lambda f: (f.code, f.subject, f.file, f.line),
        )
        moved = sorted({p.qualified for w in pool.workloads if (p := plan.pool_of(w.name)) is not None})
        current.append(
            {
                "pool": pool.qualified,
                "workloads": sorted(w.name for w in pool.workloads),
                "reserved_gpus": reserved,
                "elastic_gpus": elastic,
                "proposed_gpus": proposed.get(pool.qualified, 0),
                "proposals": proposals.get(pool.qualified, []),
                "planned_in": moved,
                "resolves": [
                    {"code": f.code, "name": f.name, "subject": f.subject, "file": f.file, "line": f.line, "message": f.message}
                    for f in resolved
                ],
            }
        )
    planned = [
        {"pool": p.qualified, "workloads": list(p.members), "reserved_gpus": p.reserved, "elastic_gpus": p.elastic,
         "from": sorted({w.pool.qualified for n in p.members if (w := model.workloads[n]).pool is not None})}
        for p in plan.pools
    ]
    today = {
        "reserved_gpus": sum(c["reserved_gpus"] for c in current),
        "elastic_gpus": sum(c["elastic_gpus"] for c in current),
        "proposed_gpus": sum(c["proposed_gpus"] for c in current),
    }
    today["total_gpus"] = today["reserved_gpus"] + today["elastic_gpus"] + today["proposed_gpus"]
    new = {
        "reserved_gpus": sum(p.reserved for p in plan.pools),
        "elastic_gpus": sum(p.elastic for p in plan.pools),
        "proposed_gpus": 0,
    }
    new["total_gpus"] = new["reserved_gpus"] + new["elastic_gpus"]
    clusters: dict[str, dict[str, int]] = {}
    for c in current:
        name = c["pool"].split("/", 1)[0]
        row = clusters.setdefault(name, {"today_reserved": 0, "today_elastic": 0, "today_proposed": 0, "planned_reserved": 0, "planned_elastic": 0})
        row["today_reserved"] += c["reserved_gpus"]
        row["today_elastic"] += c["elastic_gpus"]
        row["today_proposed"] += c["proposed_gpus"]
    for p in plan.pools:
        row = clusters.setdefault(p.cluster, {"today_reserved": 0, "today_elastic": 0, "today_proposed": 0, "planned_reserved": 0, "planned_elastic": 0})
        row["planned_reserved"] += p.reserved
        row["planned_elastic"] += p.elastic
    unmeasured = sorted(n for p in plan.pools if not p.measured for n in p.members)
    return {
        "unmeasured_workloads": unmeasured,
        "unplaced_workloads": sorted(plan.unplaced),
        "current_pools": current,
        "planned_pools": planned,
        "clusters": {k: clusters[k] for k in sorted(clusters)},
        "total": {
            "today": today,
            "planned": new,
            "saves": {
                "reserved_gpus": today["reserved_gpus"] + today["proposed_gpus"] - new["reserved_gpus"],
                "total_gpus": today["total_gpus"] - new["total_gpus"],
            },
        },
    }


def to_dict(plan: Plan) -> dict[str, Any]:
    """The plan as a JSON-ready dict (``schemas/plan.schema.json``, ``pools`` and ``unplaced``)."""
    pools = []
    for p in plan.pools:
        pools.append(
            {
                "cluster": p.cluster,
                "pool": p.name,
                "class": p.cls,
                "gpu": dict(p.gpu),
                "tier": p.tier,
                "measured": p.measured,
                "workloads": list(p.members),
                "reserved_gpus": p.reserved,
                "elastic_gpus": p.elastic,
                "capacity_gpus": p.capacity,
                "cold_start_seconds": p.cold_start_seconds,
                "overflow": p.overflow,
                "queue": {"max_depth": p.max_depth, "max_wait_seconds": p.max_wait_seconds},
                "scheduling": {"gang": p.gang, "preemption": p.preemption},
                "pooled": p.bands,
                "apart": p.apart,
                "pooling_saves_gpus": None if p.apart is None else p.apart["capacity"] - p.capacity,
                "reasons": dict(sorted(p.reasons.items())),
                "derivation": {k: p.derivation[k] for k in sorted(p.derivation)},
            }
        )
    return {
        "pools": pools,
        "unplaced": dict(sorted(plan.unplaced.items())),
        "what_if": {
            "cold_start_seconds": plan.whatif.cold_start_seconds,
            "tolerances": {n: s for n, s in sorted(plan.whatif.tolerances)},
            "headroom": plan.whatif.headroom,
        },
        "thresholds": {
            "realtime_seconds": plan.thresholds.realtime_seconds,
            "queue_tolerant_seconds": plan.thresholds.queue_tolerant_seconds,
            "max_tolerance_spread": plan.thresholds.max_spread,
            "min_window_days": plan.thresholds.min_window_days,
            "max_tail_ratio": plan.thresholds.max_tail_ratio,
            "allowed_headroom": plan.thresholds.headroom,
        },
    }


# --------------------------------------------------------------------------- planned repository


def replaced_document(doc: Any) -> bool:
    """Documents the plan replaces: policylint Clusters and Proposals, and scheduler queues and jobs."""
    from policylint.load import is_scheduler_doc

    return (doc.is_policylint and doc.kind in ("Cluster", "Proposal")) or is_scheduler_doc(doc)


def write_repository(
    plan: Plan,
    model: Model,
    sources: Iterable[SourceFile],
    root: Path,
    dest: Path,
    clusters_text: str,
) -> Path:
    """Write a copy of the repository at ``root`` into ``dest`` with the plan applied; return the clusters file.

    Measurements, evidence and configuration are copied as they are. Clusters,
    proposals (the plan replaces what they ask for) and scheduler manifests are left
    out; each Workload names its planned cluster and pool, edited in place where the
    values are written as plain scalars (comments and suppressions stay), else the
    file is written again from its parsed data. The planned clusters go into
    ``planned-clusters.yaml`` at the top.
    """
    import shutil

    import yaml

    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise PolicylintError(f"--repository {dest}: exists and is not an empty folder")
    shutil.copytree(
        root, dest, symlinks=True, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".git", "__pycache__", ".policylint-cache")
    )
    for source in sorted(sources, key=lambda s: str(s.path)):
        try:
            rel = Path(source.path).resolve().relative_to(root.resolve())
        except ValueError:
            continue
        docs = [d for d in source.documents if d.data is not None]
        if not any(replaced_document(d) or (d.is_policylint and d.kind == "Workload") for d in docs):
            continue
        text = _edited(source, plan, model)
        if text is None:  # documents to leave out, or a placement not written as plain scalars
            kept = [
                _placed(d.data, plan, str(d.name)) if _is_workload(d, model) else d.data
                for d in docs
                if not replaced_document(d)
            ]
            text = yaml.safe_dump_all(kept, sort_keys=False, width=10_000) if kept else None
        target = dest / rel
        if target.is_symlink() or target.exists():
            target.unlink()
        if text is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8", newline="")
            continue
        folder = target.parent  # a folder left empty (clusters/, proposals/) goes too
        while folder != dest and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent
    out = dest / PLANNED_CLUSTERS_FILE
    out.write_text(clusters_text, encoding="utf-8")
    return out


def _is_workload(doc: Any, model: Model) -> bool:
    return bool(doc.is_policylint and doc.kind == "Workload" and isinstance(doc.data, dict) and doc.name in model.workloads)


def _edited(source: SourceFile, plan: Plan, model: Model) -> str | None:
    """The file's text with each Workload's placement (and what-if inputs) edited in place, or None.

    Only the scalars change, so comments and suppressions stay (see
    :mod:`policylint.edit.scalars`). None when the file holds a document the plan
    leaves out, or a value to change is not written as a plain scalar of its own.
    """
    from policylint.edit.scalars import ScalarEdit, apply_edits

    edits: list[ScalarEdit] = []
    for d in source.documents:
        if d.data is None:
            continue
        if replaced_document(d):
            return None
        if not _is_workload(d, model):
            continue
        spec = d.data.get("spec")
        if not isinstance(spec, dict):
            return None
        target = _placed(d.data, plan, str(d.name))["spec"]
        if "queue" in spec and "queue" not in target:
            return None  # a key to remove: not an edit of a scalar
        for path in (("cluster",), ("pool",), ("coldStartSeconds",), ("tolerance", "maxQueueSeconds")):
            old, new = _get(spec, path), _get(target, path)
            if old == new:
                continue
            if old is None or new is None or isinstance(old, (dict, list)):
                return None  # a key to add
            edits.append(ScalarEdit(d.index, ("spec", *path), new))
    result = apply_edits(source.text, edits)
    if result.error is not None or result.refused:
        return None
    return result.text


def _get(data: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = data
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _placed(data: dict[str, Any], plan: Plan, name: str) -> dict[str, Any]:
    """A Workload document naming its planned pool, with the what-if inputs applied."""
    out = dict(data)
    spec = dict(out.get("spec") or {})
    if plan.whatif.cold_start_seconds is not None:
        spec["coldStartSeconds"] = _plain(plan.whatif.cold_start_seconds)
    for n, seconds in plan.whatif.tolerances:
        if n == name:
            tol = dict(spec.get("tolerance") or {})
            tol["maxQueueSeconds"] = _plain(seconds)
            spec["tolerance"] = tol
    pool = plan.pool_of(name)
    if pool is not None:
        spec.pop("queue", None)
        spec["cluster"] = pool.cluster
        spec["pool"] = pool.name
    out["spec"] = spec
    return out
