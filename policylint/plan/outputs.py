"""The plan's outputs: the planned clusters as Cluster documents and YAML, the plan as JSON, today beside it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import yaml

from policylint.plan.models import SIZING_RULES, Plan, PlannedPool

if TYPE_CHECKING:
    from policylint.finding import Finding
    from policylint.model import Model
    from policylint.model.specs import ClusterSpec, MetadataSpec

__all__ = ["cluster_documents", "cluster_yaml", "compare", "to_dict"]


def cluster_documents(plan: Plan, model: Model) -> list[dict[str, Any]]:
    """The planned clusters as policylint Cluster documents (one per cluster, sorted)."""
    out: list[dict[str, Any]] = []
    for cluster in sorted({p.cluster for p in plan.pools}):
        current = model.clusters.get(cluster)
        meta: MetadataSpec = {"name": cluster}
        if current is not None and current.backing is None:
            team = (current.doc.data.get("metadata") or {}).get("team") if isinstance(current.doc.data, dict) else None
            if isinstance(team, str):
                meta["team"] = team
        spec: ClusterSpec = {}
        region = current.spec.get("region") if current is not None and current.backing is None else None
        if isinstance(region, str):
            spec["region"] = region
        spec["pools"] = [p.spec() for p in plan.pools if p.cluster == cluster]
        out.append({"apiVersion": "policylint/v1", "kind": "Cluster", "metadata": meta, "spec": spec})
    return out


def cluster_yaml(plan: Plan, model: Model) -> str:
    """The planned clusters as YAML, with a comment on every sized number."""
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
    # the one sum of a pool's proposed GPUs (check's PL109 and PL950 read it too): ``gpus: 5.0`` is 5 here as there
    proposed, by_proposal = model.proposed_gpus()
    proposals: dict[str, list[str]] = {key: [name for name, _ in asked] for key, asked in by_proposal.items()}
    still = {(f.code, f.subject) for f in remaining if f.code in SIZING_RULES}
    # a measurement PL111 finds cited twice in one pool is PL972's once the plan puts the two
    # workloads in different pools: the demand is still bought twice, so the plan did not resolve it
    still |= {("PL111", f.subject) for f in remaining if f.code == "PL972"}
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
            "size_queues_by_tolerance": plan.whatif.size_queues_by_tolerance,
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
