"""Scheduler manifests the demand model justifies (``policylint export kueue|volcano``).

Per pool with workloads: guaranteed quota = the pool's pooled baseline-band GPUs
(its workloads' GPU demand added up over time, see docs/pooled.md); borrowing up to
the pooled daily band inside the cohort (Kueue) or parent queue (Volcano); nothing
for the peak band, which waits in the queue.
Every number carries a YAML comment naming the workloads and the band it comes from.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from policylint.model import Model, Pool
from policylint.views import View

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

    @property
    def flavor(self) -> str:
        return dns_name(self.gpu_model or "gpu")

    @property
    def teams(self) -> list[str]:
        return sorted({m.team or "default" for m in self.members})


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
        counts[dns_name(p.name)] = counts.get(dns_name(p.name), 0) + 1
    plans = []
    for p in pools:
        f = pool_views[p.qualified]
        queue = dns_name(p.name) if counts[dns_name(p.name)] == 1 else dns_name(f"{p.cluster.name}-{p.name}")
        plans.append(_plan_one(p, f, queue, workload_views))
    return plans


def _plan_one(p: Pool, f: dict[str, Any], queue: str, wf: dict[str, dict[str, Any]]) -> PoolPlan:
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
    return PoolPlan(
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
    )


def _q(value: Any) -> str:
    """A YAML scalar (JSON strings are valid YAML)."""
    return json.dumps(value)


def _band_comment(plan: PoolPlan, band: str) -> str:
    key = "baseline_gpus" if band == "baseline" else "daily_gpus"
    parts = [f"{m.name} {getattr(m, key)}" for m in plan.members]
    total = sum(getattr(m, key) or 0 for m in plan.members)
    return " + ".join(parts) + (f" = {total}" if len(parts) > 1 else "")


def _annotations(plan: PoolPlan, indent: str, kueue: bool) -> list[str]:
    lines = []
    if plan.max_depth is not None:
        lines.append(f"{indent}  policylint.dev/queue-max-depth: {_q(str(plan.max_depth))}")
    if plan.max_wait_seconds is not None:
        lines.append(f"{indent}  policylint.dev/queue-max-wait-seconds: {_q(_number(plan.max_wait_seconds))}")
    if kueue and plan.gang:
        lines.append(f"{indent}  # the pool declares gang scheduling: enable waitForPodsReady in Kueue's Configuration")
        lines.append(f"{indent}  policylint.dev/all-or-nothing: \"true\"")
    return [f"{indent}annotations:", *lines] if lines else []


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _header(plan: PoolPlan) -> list[str]:
    names = ", ".join(f"{m.name} ({m.cls}, team {m.team or 'default'})" for m in plan.members)
    lines = [f"# Pool {plan.cluster}/{plan.pool}: {names}."]
    if not plan.measured:
        lines.append("# UNMEASURED: some workloads have no measured bands; the numbers below are the declared ones.")
    return lines


def _gpu_numbers(plan: PoolPlan, indent: str, borrowing: str) -> list[str]:
    if plan.measured:
        nominal = (
            f"{indent}# pooled baseline band, guaranteed: {plan.guaranteed} GPUs"
            f" (own baselines: {_band_comment(plan, 'baseline')})"
        )
        extra = (
            f"{indent}# pooled daily band {plan.guaranteed + plan.borrow} (own daily bands: {_band_comment(plan, 'daily')}) - baseline "
            f"{plan.guaranteed} = {plan.borrow} GPUs {borrowing}; the peak band gets nothing: it waits in the queue"
        )
    else:
        nominal = f"{indent}# declared reserved GPUs (no measured baseline band)"
        extra = f"{indent}# declared elastic GPUs (no measured daily band) {borrowing}"
    return [nominal, extra]


def kueue(plans: list[PoolPlan]) -> dict[str, str]:
    """File name -> YAML text: ResourceFlavors, Cohorts, and per pool a ClusterQueue plus LocalQueues."""
    files: dict[str, str] = {}
    flavors: dict[str, PoolPlan] = {}
    for p in plans:
        flavors.setdefault(p.flavor, p)
    docs = []
    for name, p in sorted(flavors.items()):
        lines = [
            f"# GPU type {p.gpu_model or 'unknown'}; the node labels are the ones NVIDIA GPU feature discovery sets.",
            "apiVersion: kueue.x-k8s.io/v1beta2",
            "kind: ResourceFlavor",
            "metadata:",
            f"  name: {_q(name)}",
        ]
        labels = []
        if p.gpu_model:
            labels.append(f"    nvidia.com/gpu.product: {_q(p.gpu_model)}")
        if p.memory_gib is not None:
            labels.append(f"    nvidia.com/gpu.memory: {_q(str(int(round(p.memory_gib * 1024))))}  # MiB = {_number(p.memory_gib)} GiB")
        lines += ["spec:", "  nodeLabels:", *labels] if labels else ["spec: {}"]
        docs.append("\n".join(lines))
    files["resource-flavors.yaml"] = "\n---\n".join(docs) + "\n"
    cohorts: dict[str, list[PoolPlan]] = {}
    for p in plans:
        cohorts.setdefault(p.cohort, []).append(p)
    docs = []
    for cohort, members in sorted(cohorts.items()):
        by_flavor: dict[str, list[PoolPlan]] = {}
        for p in members:
            by_flavor.setdefault(p.flavor, []).append(p)
        if not any(p.borrow for p in members):
            continue
        lines = [
            f"# Cohort {cohort}: the elastic GPUs its ClusterQueues borrow for their daily bands.",
            "# Back them with autoscaled or spot nodes (e.g. a ProvisioningRequest admission check), not reserved ones.",
            "apiVersion: kueue.x-k8s.io/v1beta2",
            "kind: Cohort",
            "metadata:",
            f"  name: {_q(cohort)}",
            "spec:",
            "  resourceGroups:",
            f"  - coveredResources: [{_q(GPU)}]",
            "    flavors:",
        ]
        for flavor, group in sorted(by_flavor.items()):
            total = sum(p.borrow for p in group)
            parts = " + ".join(f"{p.queue} {p.borrow}" for p in group)
            lines += [
                f"    - name: {_q(flavor)}",
                "      resources:",
                f"      - name: {_q(GPU)}",
                f"        # daily band above baseline, summed: {parts} = {total} GPUs",
                f"        nominalQuota: {total}",
            ]
        docs.append("\n".join(lines))
    if docs:
        files["cohorts.yaml"] = "\n---\n".join(docs) + "\n"
    for p in plans:
        lines = [
            *_header(p),
            "apiVersion: kueue.x-k8s.io/v1beta2",
            "kind: ClusterQueue",
            "metadata:",
            f"  name: {_q(p.queue)}",
            *_annotations(p, "  ", kueue=True),
            "spec:",
            f"  cohortName: {_q(p.cohort)}",
            "  namespaceSelector: {}",
            "  # pending work waits in order; nothing is rejected",
            "  queueingStrategy: BestEffortFIFO",
            "  preemption:",
            "    # guaranteed GPUs lent to the cohort while idle come back by preemption",
            "    reclaimWithinCohort: Any",
            f"    withinClusterQueue: {'LowerPriority' if p.preemption else 'Never'}",
            "  resourceGroups:",
            f"  - coveredResources: [{_q(GPU)}]",
            "    flavors:",
            f"    - name: {_q(p.flavor)}",
            "      resources:",
            f"      - name: {_q(GPU)}",
            *_gpu_numbers(p, "        ", f"borrowed within cohort {p.cohort}")[:1],
            f"        nominalQuota: {p.guaranteed}",
            *_gpu_numbers(p, "        ", f"borrowed within cohort {p.cohort}")[1:],
            f"        borrowingLimit: {p.borrow}",
        ]
        docs = ["\n".join(lines)]
        for team in p.teams:
            names = ", ".join(m.name for m in p.members if (m.team or "default") == team)
            docs.append(
                "\n".join(
                    [
                        f"# Team {team}: {names}. Point their Workloads at it with",
                        f"#   spec.queue: {{scheduler: kueue, name: {dns_name(team)}/{p.queue}}}",
                        "apiVersion: kueue.x-k8s.io/v1beta2",
                        "kind: LocalQueue",
                        "metadata:",
                        f"  namespace: {_q(dns_name(team))}",
                        f"  name: {_q(p.queue)}",
                        "spec:",
                        f"  clusterQueue: {_q(p.queue)}",
                    ]
                )
            )
        files[f"{p.queue}.yaml"] = "\n---\n".join(docs) + "\n"
    return files


def volcano(plans: list[PoolPlan]) -> dict[str, str]:
    """File name -> YAML text: one parent Queue per cluster and one leaf Queue per pool."""
    files: dict[str, str] = {}
    leaf_names = {p.queue for p in plans}
    parents: dict[str, str] = {}
    for p in plans:
        name = p.cohort if p.cohort not in leaf_names and p.cohort != "root" else f"{p.cohort}-parent"
        parents[p.cluster] = name
    docs = []
    for cluster, name in sorted(parents.items()):
        queues = ", ".join(p.queue for p in plans if p.cluster == cluster)
        docs.append(
            "\n".join(
                [
                    f"# Cluster {cluster}: parent of {queues}; its children share idle GPUs (hierarchical queues).",
                    "apiVersion: scheduling.volcano.sh/v1beta1",
                    "kind: Queue",
                    "metadata:",
                    f"  name: {_q(name)}",
                    "spec:",
                    "  reclaimable: true",
                    "  weight: 1",
                ]
            )
        )
    files["parents.yaml"] = "\n---\n".join(docs) + "\n"
    for p in plans:
        teams = ", ".join(p.teams)
        lines = [
            *_header(p),
            f"# Teams submitting to it: {teams}. Point their Workloads at it with",
            f"#   spec.queue: {{scheduler: volcano, name: {p.queue}}}",
            "apiVersion: scheduling.volcano.sh/v1beta1",
            "kind: Queue",
            "metadata:",
            f"  name: {_q(p.queue)}",
            *_annotations(p, "  ", kueue=False),
            "spec:",
            f"  parent: {_q(parents[p.cluster])}",
            "  # GPUs used above the guarantee are given back when another queue needs its share",
            "  reclaimable: true",
            "  weight: 1",
            "  guarantee:",
            "    resource:",
            *_gpu_numbers(p, "      ", "borrowed from idle GPUs of the parent queue")[:1],
            f"      {GPU}: {p.guaranteed}",
            "  deserved:",
            "    # fair share = the guarantee: anything above it is borrowed and reclaimable",
            f"    {GPU}: {p.guaranteed}",
            "  capability:",
            *_gpu_numbers(p, "    ", "borrowed from idle GPUs of the parent queue")[1:],
            f"    # hard cap = guarantee {p.guaranteed} + {p.borrow}",
            f"    {GPU}: {p.guaranteed + p.borrow}",
        ]
        files[f"{p.queue}.yaml"] = "\n".join(lines) + "\n"
    return files


def render(files: dict[str, str]) -> str:
    """All files as one multi-document stream (stdout)."""
    return "---\n".join(f"# file: {name}\n{text}" for name, text in files.items())
