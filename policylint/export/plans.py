"""Scheduler manifests the demand model justifies (``policylint export kueue|volcano``).

Per pool with workloads: guaranteed quota = the pool's pooled baseline-band GPUs
(its workloads' GPU demand added up over time, see docs/pooled.md); borrowing up to
the pooled daily band inside the cohort (Kueue) or parent queue (Volcano); nothing
for the peak band, which waits in the queue.
Every number carries a YAML comment naming the workloads and the band it comes from.

Nothing is guessed: node selection comes only from the pool's ``nodes`` (or the
existing ResourceFlavor it names, or the flavor a Kueue pool was read from) and
LocalQueue namespaces only from its ``namespaces`` (or the LocalQueues a Kueue
pool already has); without them the output says, in a comment, what to fill in.
A declared ``overflow: reject`` is stated as something neither scheduler can
enforce, with where to enforce it. Changing existing manifests in place is
:mod:`policylint.export.update`.

This module makes the plans (:func:`plan`) and the comments both schedulers'
manifests carry; the manifests themselves are written by
:mod:`policylint.export.kueue` and :mod:`policylint.export.volcano`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from policylint.model import Model, Pool
from policylint.engine.view import View

GPU = "nvidia.com/gpu"


@dataclass
class Member:
    name: str
    team: str
    cls: str
    baseline_gpus: int | None
    daily_gpus: int | None


@dataclass
class PoolPlan:
    """What one pool should be given, and why."""

    cluster: str
    pool: str
    queue: str  # ClusterQueue / Queue name
    cohort: str
    guaranteed: int
    borrow: int
    measured: bool
    members: list[Member] = field(default_factory=list)
    gpu_model: str | None = None
    memory_gib: float | None = None
    preemption: bool = False
    gang: bool = False
    max_depth: int | None = None
    max_wait_seconds: float | None = None
    overflow: str = "queue"
    origin: str = "policylint"
    #: node selection as declared (pool ``nodes``); empty: nothing declared, nothing guessed
    node_labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, Any]] = field(default_factory=list)
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    #: a ResourceFlavor that exists already (declared, or the Kueue flavor the pool was read from)
    existing_flavor: str | None = None
    #: namespaces that submit to the pool (declared, or those of the LocalQueues its workloads name)
    namespaces: list[str] = field(default_factory=list)
    #: the ClusterQueue's resources on this flavor in coveredResources order: (name, quota fields kept
    #: as read), with None for the GPU resource that policylint sizes; empty: the GPU alone
    kept_resources: list[tuple[str, dict[str, Any] | None]] = field(default_factory=list)
    flavor: str = ""
    #: what the guaranteed and borrowed GPUs were sized by, when not the bands alone
    #: (``policylint plan``: headroom, capacity for a tolerance); None: the bands
    guaranteed_note: str | None = None
    borrow_note: str | None = None

    @property
    def teams(self) -> list[str]:
        return sorted({m.team or "default" for m in self.members})

    @property
    def selects_nodes(self) -> bool:
        return bool(self.node_labels or self.taints or self.tolerations)


def dns_name(text: str) -> str:
    """A DNS-1123 label (what Kubernetes object names and namespaces must be)."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return (name or "x")[:63].rstrip("-")


def plan(model: Model, views: list[View]) -> list[PoolPlan]:
    """One plan per pool that has workloads, in a stable order."""
    pool_views = {v.facts["qualified"]: v.facts for v in views if v.subject == "pool"}
    workload_views = {v.facts["name"]: v.facts for v in views if v.subject == "workload"}
    pools = sorted((p for p in model.pools if p.workloads), key=lambda p: p.qualified)
    counts: dict[str, int] = {}
    for p in pools:
        counts[_queue_name(p)] = counts.get(_queue_name(p), 0) + 1
    plans = []
    for p in pools:
        f = pool_views[p.qualified]
        queue = _queue_name(p) if counts[_queue_name(p)] == 1 else dns_name(f"{p.cluster.name}-{p.name}")
        plans.append(_plan_one(p, f, queue, workload_views, model.schedulers.get("kueue")))
    _name_flavors(plans)
    return plans


def _queue_name(p: Pool) -> str:
    """The queue a pool is exported as: the scheduler queue it was read from, else its own name."""
    if p.origin in ("kueue", "volcano") and p.scheduler.get("queue"):
        return str(p.scheduler["queue"])
    return dns_name(p.name)


def _name_flavors(plans: list[PoolPlan]) -> None:
    """Give every plan a flavor name: one per GPU model and node selection, never two selections under one name."""
    selections: dict[str, set[str]] = {}
    for p in plans:
        if p.existing_flavor is None:
            selections.setdefault(dns_name(p.gpu_model or "gpu"), set()).add(_selection_key(p))
    for p in plans:
        if p.existing_flavor is not None:
            p.flavor = p.existing_flavor
            continue
        base = dns_name(p.gpu_model or "gpu")
        p.flavor = base if len(selections[base]) == 1 else dns_name(f"{base}-{p.queue}")


def _selection_key(p: PoolPlan) -> str:
    return json.dumps([p.node_labels, p.taints, p.tolerations], sort_keys=True)


def _plan_one(p: Pool, f: Mapping[str, Any], queue: str, wf: Mapping[str, Mapping[str, Any]], kueue_index: Any) -> PoolPlan:
    members = [
        Member(w.name, w.team, w.cls, wf[w.name]["baseline_gpus"], wf[w.name]["daily_gpus"])
        for w in sorted(p.workloads, key=lambda w: w.name)
    ]
    baseline, daily = f["baseline_gpus"], f["daily_gpus"]
    measured = baseline is not None and daily is not None
    if measured:
        guaranteed, borrow = int(baseline), max(0, int(daily) - int(baseline))
    else:  # no demand model: keep what is declared, and say so in the output
        guaranteed, borrow = int(f["reserved_gpus"]), int(f["elastic_gpus"])
    gpu = p.spec.get("gpu") or {}
    queue_spec = p.spec.get("queue") or {}
    nodes = p.spec.get("nodes") or {}
    out = PoolPlan(
        cluster=p.cluster.name,
        pool=p.name,
        queue=queue,
        cohort=dns_name(p.cluster.name),
        guaranteed=guaranteed,
        borrow=borrow,
        measured=measured,
        members=members,
        gpu_model=gpu.get("model"),
        memory_gib=gpu.get("memoryGiB"),
        preemption=bool(f["preemption"]),
        gang=bool(f["gang"]),
        max_depth=queue_spec.get("maxDepth"),
        max_wait_seconds=queue_spec.get("maxWaitSeconds"),
        overflow=str(p.spec.get("overflow") or "queue"),
        origin=p.origin,
        node_labels={str(k): str(v) for k, v in (nodes.get("labels") or {}).items()},
        taints=[dict(x) for x in nodes.get("taints") or []],
        tolerations=[dict(x) for x in nodes.get("tolerations") or []],
        existing_flavor=nodes.get("resourceFlavor"),
        namespaces=sorted(str(n) for n in p.spec.get("namespaces") or []),
    )
    if p.origin == "kueue":
        _from_kueue(p, out, kueue_index)
    return out


def _from_kueue(p: Pool, out: PoolPlan, index: Any) -> None:
    """A pool read from a ClusterQueue keeps its flavor, its other resources and its LocalQueues' namespaces."""
    out.existing_flavor = str(p.scheduler.get("flavor"))
    spec = p.doc.data.get("spec") or {}
    try:
        _, _, gi, _, fi = p.doc_path
        group = spec["resourceGroups"][gi]
        flavor = group["flavors"][fi]
    except (KeyError, IndexError, TypeError, ValueError):
        group, flavor = {}, {}
    from policylint.model.schedulers.quantity import GPU_RESOURCES

    by_name = {str(r.get("name")): r for r in flavor.get("resources") or [] if isinstance(r, dict)}
    for name in [str(c) for c in group.get("coveredResources") or []]:
        if name not in by_name:
            continue
        if name in GPU_RESOURCES:
            if all(q is not None for _, q in out.kept_resources):  # the first GPU resource carries the sized quota
                out.kept_resources.append((name, None))
            continue
        quotas = {k: v for k, v in by_name[name].items() if k in ("nominalQuota", "borrowingLimit", "lendingLimit")}
        out.kept_resources.append((name, quotas))
    if all(q is not None for _, q in out.kept_resources):
        out.kept_resources.append((GPU, None))
    cq = str(p.scheduler.get("queue"))
    local = getattr(index, "local_queues", {}) or {}
    names = {key.split("/", 1)[0] for key, doc in local.items() if (doc.data.get("spec") or {}).get("clusterQueue") == cq}
    if names and not out.namespaces:
        out.namespaces = sorted(names)


def scalar(value: Any) -> str:
    """A YAML scalar (JSON strings are valid YAML)."""
    return json.dumps(value)


def _band_comment(plan: PoolPlan, band: str) -> str:
    key = "baseline_gpus" if band == "baseline" else "daily_gpus"
    parts = [f"{m.name} {getattr(m, key)}" for m in plan.members]
    total = sum(getattr(m, key) or 0 for m in plan.members)
    return " + ".join(parts) + (f" = {total}" if len(parts) > 1 else "")


def annotation_lines(plan: PoolPlan, indent: str, kueue: bool) -> list[str]:
    """The queue's ``annotations:`` carrying what the pool declares and the scheduler does not enforce."""
    lines = []
    if plan.max_depth is not None:
        lines.append(f"{indent}  # declared queue.maxDepth of pool {plan.pool}; read by policylint, enforced by neither scheduler")
        lines.append(f"{indent}  policylint.dev/queue-max-depth: {scalar(str(plan.max_depth))}")
    if plan.max_wait_seconds is not None:
        lines.append(f"{indent}  # declared queue.maxWaitSeconds of pool {plan.pool}; read by policylint, enforced by neither scheduler")
        lines.append(f"{indent}  policylint.dev/queue-max-wait-seconds: {scalar(_number(plan.max_wait_seconds))}")
    if plan.overflow == "reject":
        lines.append(f"{indent}  # declared overflow of pool {plan.pool}: what the scheduler cannot do, kept for policylint (see below)")
        lines.append(f"{indent}  policylint.dev/overflow: \"reject\"")
    if kueue and plan.gang:
        lines.append(f"{indent}  # the pool declares gang scheduling: enable waitForPodsReady in Kueue's Configuration")
        lines.append(f"{indent}  policylint.dev/all-or-nothing: \"true\"")
    return [f"{indent}annotations:", *lines] if lines else []


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def header_lines(plan: PoolPlan) -> list[str]:
    """The comment that opens a pool's queue: its workloads, and whether its numbers are measured."""
    names = ", ".join(f"{m.name} ({m.cls}, team {m.team or 'default'})" for m in plan.members)
    lines = [f"# Pool {plan.cluster}/{plan.pool}: {names}."]
    if not plan.measured:
        lines.append("# UNMEASURED: some workloads have no measured bands; the numbers below are the declared ones.")
    return lines


def _peak(plan: PoolPlan) -> str:
    return "it is rejected (overflow: reject)" if plan.overflow == "reject" else "it waits in the queue"


def overflow_lines(plan: PoolPlan, indent: str, scheduler: str) -> list[str]:
    """How the pool's declared overflow maps onto the scheduler, truthfully."""
    if plan.overflow != "reject":
        what = "this queue keeps it pending" if scheduler == "Kueue" else "its PodGroups stay pending in this queue"
        return [f"{indent}# overflow: queue - work beyond the quota waits: {what} and admits it in order; nothing is rejected."]
    limits = []
    if plan.max_depth is not None:
        limits.append(f"more than {plan.max_depth} waiting")
    if plan.max_wait_seconds is not None:
        limits.append(f"a wait above {_number(plan.max_wait_seconds)} s")
    where = f" ({' or '.join(limits)})" if limits else ""
    return [
        f"{indent}# overflow: reject - pool {plan.pool} declares that demand above its daily band is refused, not queued.",
        f"{indent}# {scheduler} cannot enforce that: work it cannot admit stays pending, it is never refused.",
        f"{indent}# Enforce it where the work arrives: the gateway or server sheds requests{where}",
        f"{indent}# (e.g. HTTP 429), so that nothing beyond the daily band reaches this queue.",
    ]


def gpu_number_lines(plan: PoolPlan, indent: str, borrowing: str) -> list[str]:
    """The two comments (guaranteed, borrowed) saying which band each GPU number comes from."""
    if plan.measured:
        nominal = (
            f"{indent}# pooled baseline band, guaranteed: {plan.guaranteed} GPUs"
            f" (own baselines: {_band_comment(plan, 'baseline')})"
        )
        extra = (
            f"{indent}# pooled daily band {plan.guaranteed + plan.borrow} (own daily bands: {_band_comment(plan, 'daily')}) - baseline "
            f"{plan.guaranteed} = {plan.borrow} GPUs {borrowing}; the peak band gets nothing: {_peak(plan)}"
        )
    else:
        nominal = f"{indent}# declared reserved GPUs (no measured baseline band)"
        extra = f"{indent}# declared elastic GPUs (no measured daily band) {borrowing}"
    if plan.guaranteed_note is not None:
        nominal = f"{indent}# {plan.guaranteed_note}, guaranteed: {plan.guaranteed} GPUs"
    if plan.borrow_note is not None:
        extra = f"{indent}# {plan.borrow_note}: {plan.borrow} GPUs {borrowing}; the peak band gets nothing: {_peak(plan)}"
    return [nominal, extra]


def flow(value: Any) -> str:
    """A value as one line of YAML flow style (JSON is valid YAML)."""
    return json.dumps(value, sort_keys=True)


def render(files: dict[str, str]) -> str:
    """All files as one multi-document stream (stdout)."""
    return "---\n".join(f"# file: {name}\n{text}" for name, text in files.items())
