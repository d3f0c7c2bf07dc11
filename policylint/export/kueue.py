"""Kueue manifests for the pool plans (``policylint export kueue``).

ResourceFlavors with exactly the node selection a pool declares (or a note on
what to fill in), Cohorts holding the GPUs their ClusterQueues borrow, and per
pool a ClusterQueue plus a LocalQueue in each namespace that submits to it. The
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


def _flavor_doc(name: str, group: list[PoolPlan]) -> str:
    """A ResourceFlavor with exactly the declared node selection, or none and a note on what to fill in."""
    p = group[0]
    pools = ", ".join(f"{g.cluster}/{g.pool}" for g in group)
    lines = [f"# GPU type {p.gpu_model or 'unknown'}, for pool{'s' if len(group) > 1 else ''} {pools}."]
    spec: list[str] = []
    if p.selects_nodes:
        lines.append("# Node selection as the pool declares it (nodes: in the Cluster document).")
        if p.node_labels:
            spec += ["  nodeLabels:", *(f"    {scalar(k)}: {scalar(v)}" for k, v in sorted(p.node_labels.items()))]
        if p.taints:
            spec += ["  nodeTaints:", *(f"  - {flow(x)}" for x in p.taints)]
        if p.tolerations:
            spec += ["  tolerations:", *(f"  - {flow(x)}" for x in p.tolerations)]
    else:
        lines += [
            "# TODO: no node selection is declared, and policylint does not guess one: as written this",
            "# flavor matches every node. Fill spec.nodeLabels with labels the GPU nodes of this pool",
            "# carry (see `kubectl get nodes --show-labels`; GPU feature discovery sets",
            "# nvidia.com/gpu.product), and nodeTaints/tolerations if they are tainted - or declare",
            f"# nodes: {{labels: ..., taints: ..., tolerations: ...}} (or nodes.resourceFlavor) on pool{'s' if len(group) > 1 else ''} {pools}",
            "# and export again.",
        ]
    lines += ["apiVersion: kueue.x-k8s.io/v1beta2", "kind: ResourceFlavor", "metadata:", f"  name: {scalar(name)}"]
    lines += ["spec:", *spec] if spec else ["spec: {}"]
    return "\n".join(lines)


def _namespace_selector(p: PoolPlan) -> str:
    if not p.namespaces:
        return "  namespaceSelector: {}  # every namespace; declare namespaces: on the pool to admit only its own"
    match = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": p.namespaces}]}
    return f"  namespaceSelector: {flow(match)}  # the namespaces that submit to the pool"


def _cluster_queue(p: PoolPlan) -> str:
    borrowing = f"borrowed within cohort {p.cohort}"
    resources = p.kept_resources or [(GPU, None)]
    covered = [name for name, _ in resources]
    listed: list[str] = []
    for name, quotas in resources:
        listed.append(f"      - name: {scalar(name)}")
        if quotas is None:
            listed += [
                *gpu_number_lines(p, "        ", borrowing)[:1],
                f"        nominalQuota: {p.guaranteed}",
                *gpu_number_lines(p, "        ", borrowing)[1:],
                f"        borrowingLimit: {p.borrow}",
            ]
            continue
        listed.append(f"        # kept as ClusterQueue {p.queue} has it: policylint sizes GPUs only")
        listed += [f"        {k}: {scalar(v)}" for k, v in quotas.items()] or ["        nominalQuota: 0"]
    flavor_note = (
        f"    # ResourceFlavor {p.flavor} exists already; policylint does not write it"
        if p.existing_flavor is not None
        else f"    # ResourceFlavor {p.flavor}: see resource-flavors.yaml"
    )
    lines = [
        *header_lines(p),
        "apiVersion: kueue.x-k8s.io/v1beta2",
        "kind: ClusterQueue",
        "metadata:",
        f"  name: {scalar(p.queue)}",
        *annotation_lines(p, "  ", kueue=True),
        "spec:",
        f"  cohortName: {scalar(p.cohort)}",
        _namespace_selector(p),
        *overflow_lines(p, "  ", "Kueue"),
        "  queueingStrategy: BestEffortFIFO",
        "  preemption:",
        "    # guaranteed GPUs lent to the cohort while idle come back by preemption",
        "    reclaimWithinCohort: Any",
        f"    withinClusterQueue: {'LowerPriority' if p.preemption else 'Never'}",
        "  resourceGroups:",
        f"  - coveredResources: [{', '.join(scalar(c) for c in covered)}]",
        "    flavors:",
        flavor_note,
        f"    - name: {scalar(p.flavor)}",
        "      resources:",
        *listed,
    ]
    return "\n".join(lines)


def _local_queues(p: PoolPlan) -> list[str]:
    teams = ", ".join(p.teams)
    if not p.namespaces:
        return [
            "\n".join(
                [
                    f"# TODO: no namespace is declared for pool {p.cluster}/{p.pool} (teams {teams}), and policylint",
                    "# does not derive one from a team name. Declare namespaces: [...] on the pool and export",
                    "# again, or create in each namespace that submits to it:",
                    "#   apiVersion: kueue.x-k8s.io/v1beta2",
                    "#   kind: LocalQueue",
                    f"#   metadata: {{namespace: <namespace>, name: {p.queue}}}",
                    f"#   spec: {{clusterQueue: {p.queue}}}",
                    f"# and point the Workloads at it with spec.queue: {{scheduler: kueue, name: <namespace>/{p.queue}}}.",
                ]
            )
        ]
    docs = []
    for ns in p.namespaces:
        docs.append(
            "\n".join(
                [
                    f"# Namespace {ns} (declared on pool {p.cluster}/{p.pool}; teams {teams}). Point Workloads at it with",
                    f"#   spec.queue: {{scheduler: kueue, name: {ns}/{p.queue}}}",
                    "apiVersion: kueue.x-k8s.io/v1beta2",
                    "kind: LocalQueue",
                    "metadata:",
                    f"  namespace: {scalar(ns)}",
                    f"  name: {scalar(p.queue)}",
                    "spec:",
                    f"  clusterQueue: {scalar(p.queue)}",
                ]
            )
        )
    return docs


def kueue(plans: list[PoolPlan], *, existing_flavors: frozenset[str] = frozenset(), existing_cohorts: frozenset[str] = frozenset()) -> dict[str, str]:
    """File name -> YAML text: ResourceFlavors, Cohorts, and per pool a ClusterQueue plus LocalQueues.

    Flavors the pools name as existing (or in ``existing_flavors``) and Cohorts in
    ``existing_cohorts`` are not written again.
    """
    files: dict[str, str] = {}
    flavors: dict[str, list[PoolPlan]] = {}
    for p in plans:
        if p.existing_flavor is None and p.flavor not in existing_flavors:
            flavors.setdefault(p.flavor, []).append(p)
    docs = [_flavor_doc(name, group) for name, group in sorted(flavors.items())]
    if docs:
        files["resource-flavors.yaml"] = "\n---\n".join(docs) + "\n"
    cohorts: dict[str, list[PoolPlan]] = {}
    for p in plans:
        cohorts.setdefault(p.cohort, []).append(p)
    docs = []
    for cohort, members in sorted(cohorts.items()):
        by_flavor: dict[str, list[PoolPlan]] = {}
        for p in members:
            by_flavor.setdefault(p.flavor, []).append(p)
        if not any(p.borrow for p in members) or cohort in existing_cohorts:
            continue
        lines = [
            f"# Cohort {cohort}: the elastic GPUs its ClusterQueues borrow for their daily bands.",
            "# Back them with autoscaled or spot nodes (e.g. a ProvisioningRequest admission check), not reserved ones.",
            "apiVersion: kueue.x-k8s.io/v1beta2",
            "kind: Cohort",
            "metadata:",
            f"  name: {scalar(cohort)}",
            "spec:",
            "  resourceGroups:",
            f"  - coveredResources: [{scalar(GPU)}]",
            "    flavors:",
        ]
        for flavor, group in sorted(by_flavor.items()):
            total = sum(p.borrow for p in group)
            parts = " + ".join(f"{p.queue} {p.borrow}" for p in group)
            lines += [
                f"    - name: {scalar(flavor)}",
                "      resources:",
                f"      - name: {scalar(GPU)}",
                f"        # daily band above baseline, summed: {parts} = {total} GPUs",
                f"        nominalQuota: {total}",
            ]
        docs.append("\n".join(lines))
    if docs:
        files["cohorts.yaml"] = "\n---\n".join(docs) + "\n"
    for p in plans:
        # the TODO on LocalQueues (no namespace declared) stays a comment inside the ClusterQueue's document
        queues = _local_queues(p) if p.namespaces else []
        first = _cluster_queue(p) if p.namespaces else "\n".join([_cluster_queue(p), *_local_queues(p)])
        files[f"{p.queue}.yaml"] = "\n---\n".join([first, *queues]) + "\n"
    return files
