"""Volcano manifests for the pool plans (``policylint export volcano``).

One parent Queue per cluster, whose children share idle GPUs, and one leaf
Queue per pool with its guarantee, fair share and cap. Volcano Queues select no
nodes, so a declared node selection is written as a note for the pods. The
plans and the comments on every number come from :mod:`policylint.export.plans`.
"""

from __future__ import annotations

from policylint.export.plans import (
    GPU,
    PoolPlan,
    annotation_lines,
    flow,
    gpu_number_lines,
    header_lines,
    overflow_lines,
    scalar,
)


def _volcano_nodes(p: PoolPlan) -> list[str]:
    """Volcano Queues select no nodes: say where the declared selection goes instead."""
    if p.existing_flavor is not None and p.origin != "kueue":
        return [f"# Node selection: pool {p.pool} names the Kueue ResourceFlavor {p.existing_flavor}; Volcano has no such",
                "# object - give this queue's pods that flavor's nodeSelector and tolerations."]
    if not p.selects_nodes:
        return [
            "# TODO: Volcano Queues do not choose nodes, and no node selection is declared for this pool.",
            "# Give the pods of this queue a nodeSelector (and tolerations) for its GPU nodes, or declare",
            f"# nodes: on pool {p.pool} to have them listed here.",
        ]
    out = ["# Node selection as the pool declares it. Volcano Queues do not choose nodes: put these on the pods",
           "# of this queue (pod template of the Job):"]
    if p.node_labels:
        out.append(f"#   nodeSelector: {flow(p.node_labels)}")
    if p.tolerations:
        out.append(f"#   tolerations: {flow(p.tolerations)}")
    if p.taints:
        out.append(f"#   (the nodes carry the taints {flow(p.taints)}: the pods need tolerations for them)")
    return out


def volcano(plans: list[PoolPlan], *, existing_parents: frozenset[str] = frozenset()) -> dict[str, str]:
    """File name -> YAML text: one parent Queue per cluster and one leaf Queue per pool."""
    files: dict[str, str] = {}
    leaf_names = {p.queue for p in plans}
    parents: dict[str, str] = {}
    for p in plans:
        name = p.cohort if p.cohort not in leaf_names and p.cohort != "root" else f"{p.cohort}-parent"
        parents[p.cluster] = name
    docs = []
    for cluster, name in sorted(parents.items()):
        if name in existing_parents:
            continue
        queues = ", ".join(p.queue for p in plans if p.cluster == cluster)
        docs.append(
            "\n".join(
                [
                    f"# Cluster {cluster}: parent of {queues}; its children share idle GPUs (hierarchical queues).",
                    "apiVersion: scheduling.volcano.sh/v1beta1",
                    "kind: Queue",
                    "metadata:",
                    f"  name: {scalar(name)}",
                    "spec:",
                    "  reclaimable: true",
                    "  # equal weight for every cluster: policylint sizes guarantees, not shares between clusters",
                    "  weight: 1",
                ]
            )
        )
    if docs:
        files["parents.yaml"] = "\n---\n".join(docs) + "\n"
    for p in plans:
        teams = ", ".join(p.teams)
        lines = [
            *header_lines(p),
            f"# Teams submitting to it: {teams}. Point their Workloads at it with",
            f"#   spec.queue: {{scheduler: volcano, name: {p.queue}}}",
            *_volcano_nodes(p),
            "apiVersion: scheduling.volcano.sh/v1beta1",
            "kind: Queue",
            "metadata:",
            f"  name: {scalar(p.queue)}",
            *annotation_lines(p, "  ", kueue=False),
            "spec:",
            f"  parent: {scalar(parents[p.cluster])}",
            *overflow_lines(p, "  ", "Volcano"),
            "  # GPUs used above the guarantee are given back when another queue needs its share",
            "  reclaimable: true",
            "  # equal weight among the cluster's queues: the guarantee, not the weight, carries the sizing",
            "  weight: 1",
            "  guarantee:",
            "    resource:",
            *gpu_number_lines(p, "      ", "borrowed from idle GPUs of the parent queue")[:1],
            f"      {GPU}: {p.guaranteed}",
            "  deserved:",
            f"    # fair share = the guarantee ({p.guaranteed}): anything above it is borrowed and reclaimable",
            f"    {GPU}: {p.guaranteed}",
            "  capability:",
            *gpu_number_lines(p, "    ", "borrowed from idle GPUs of the parent queue")[1:],
            f"    # hard cap = guarantee {p.guaranteed} + {p.borrow}",
            f"    {GPU}: {p.guaranteed + p.borrow}",
        ]
        files[f"{p.queue}.yaml"] = "\n".join(lines) + "\n"
    return files
