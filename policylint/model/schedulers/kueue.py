"""Kueue (``kueue.x-k8s.io/v1beta1`` and ``v1beta2``) manifests as pools of the model.

Mapping (documented in docs/schedulers.md):

* every ClusterQueue flavor that holds GPUs is one pool, named after the
  ClusterQueue (``<clusterqueue>.<flavor>`` when several of its flavors hold GPUs);
* reserved GPUs = ``nominalQuota - lendingLimit`` (an absent lendingLimit lends
  nothing away for good: the quota is the ClusterQueue's own);
* elastic GPUs (kind ``borrow``) = the ``lendingLimit`` (the owner's own quota that it
  may lend away: usable by the owner whenever no one has borrowed it) plus what it may
  borrow: ``borrowingLimit``, or everything the rest of the cohort can lend on that
  flavor when no limit is set, capped by that; 0 without a cohort (no lending either);
  with hierarchical cohorts (``spec.parentName``) the rest of the cohort tree lends too,
  through each Cohort's ``borrowingLimit`` and ``lendingLimit`` (:class:`_Lenders`);
* the synthetic cluster is the cohort (a ClusterQueue without one is its own cluster);
* a Workload's ``spec.queue.name`` is a LocalQueue ``namespace/name``; it is
  admitted through the first GPU flavor of that LocalQueue's ClusterQueue.
"""

from __future__ import annotations

import math

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from policylint.finding import Finding
from policylint.model.load import Definitions, Document, DocPath
from policylint.model import Cluster, Model, Pool, Workload
from policylint.model.schedulers.common import (
    ANNOTATION_ALL_OR_NOTHING,
    adopt,
    annotations_of,
    declared_overflow,
    gpus,
    mapping,
    new_cluster,
    queue_limits,
    scheduler_pool,
    sequence,
    uncounted_gpus,
    unique_cluster_name,
)
from policylint.model.schedulers.kueue_charges import Beside, beside_gpus, configuration_findings
from policylint.model.schedulers.quantity import looks_like_gpu
from policylint.model.specs import GpuSpec, PoolSpec

API_GROUP = "kueue.x-k8s.io/"
PREEMPTING = ("Any", "LowerPriority")


#: the ClusterQueue stop policies under which Kueue admits no new workload
STOPPED = ("Hold", "HoldAndDrain")


def cohort_field(doc: Document) -> str:
    """The cohort field of this API version: ``cohort`` in v1beta1, ``cohortName`` from v1beta2."""
    return "cohort" if (doc.api_version or "").endswith("/v1beta1") else "cohortName"


def cohort_of(doc: Document) -> str | None:
    value = mapping(doc.data.get("spec")).get(cohort_field(doc))
    return value if isinstance(value, str) and value else None


@dataclass
class _Entry:
    """One GPU flavor of one ClusterQueue, before cohort-wide numbers are known."""

    doc: Document
    queue: str
    flavor: str
    flavor_path: DocPath
    nominal: int
    nominal_path: DocPath
    borrowing: int | None
    borrowing_path: DocPath | None
    lending: int | None
    names: list[str] = field(default_factory=list)  # the GPU resource names of the flavor, in order


@dataclass
class KueueIndex:
    flavors: dict[str, Document] = field(default_factory=dict)
    cluster_queues: dict[str, Document] = field(default_factory=dict)
    local_queues: dict[str, Document] = field(default_factory=dict)  # "namespace/name"
    cohorts: dict[str, Document] = field(default_factory=dict)
    pools: dict[str, list[Pool]] = field(default_factory=dict)  # ClusterQueue -> GPU pools in flavor order
    #: uncounted resources covered beside GPUs (PL905 unless its allow option lists them: the engine decides)
    beside: list[Beside] = field(default_factory=list)

    def documents(self) -> list[Document]:
        """The documents read: ResourceFlavors, ClusterQueues, LocalQueues, Cohorts (first definitions)."""
        return [*self.flavors.values(), *self.cluster_queues.values(), *self.local_queues.values(), *self.cohorts.values()]


@dataclass(frozen=True)
class Admission:
    """Where a workload naming a LocalQueue is admitted, as far as the manifests tell (see :func:`admission`)."""

    key: str | None = None  # the LocalQueue's "namespace/name", when the name leads to one
    ambiguous: tuple[str, ...] = ()  # the "namespace/name" of every LocalQueue a bare name matches, when several do
    local_queue: Document | None = None
    cluster_queue: str = ""  # the LocalQueue's spec.clusterQueue
    pools: tuple[Pool, ...] = ()  # that ClusterQueue's GPU pools, in flavor order

    @property
    def pool(self) -> Pool | None:
        """The first GPU flavor's pool: Kueue tries flavors in order, so the demand lands there."""
        return self.pools[0] if self.pools else None


def admission(index: KueueIndex | None, queue_name: str) -> Admission:
    """Resolve a LocalQueue name (``namespace/name``, or a name unique across namespaces) to its ClusterQueue's pools."""
    lqs = index.local_queues if index else {}
    key = queue_name if "/" in queue_name else None
    if key is None:
        matches = [k for k in lqs if k.split("/", 1)[1] == queue_name]
        if len(matches) == 1:
            key = matches[0]
        elif len(matches) > 1:
            return Admission(ambiguous=tuple(matches))
    lq = lqs.get(key or "")
    if lq is None or index is None:
        return Admission(key=key)
    cq = str(mapping(lq.data.get("spec")).get("clusterQueue", ""))
    return Admission(key=key, local_queue=lq, cluster_queue=cq, pools=tuple(index.pools.get(cq) or ()))


def read(
    documents: list[Document],
    model: Model,
    gpu_resources: tuple[str, ...],
    taken: set[str],
    definitions: Definitions | None = None,
) -> tuple[KueueIndex, list[Finding]]:
    """Index the Kueue documents, check Kueue's own invariants, build the GPU pools.

    Each object is read from its first definition; a second one of the same
    name (``namespace/name`` for a LocalQueue) is PL021 through ``definitions``.
    """
    index = KueueIndex()
    findings: list[Finding] = []
    definitions = definitions or Definitions(findings)
    kinds: dict[str, dict[str, Document]] = {
        "ResourceFlavor": index.flavors,
        "ClusterQueue": index.cluster_queues,
        "LocalQueue": index.local_queues,
        "Cohort": index.cohorts,
    }
    for doc in documents:
        if not (doc.api_version or "").startswith(API_GROUP) or not doc.name or doc.kind not in kinds:
            continue  # Topology, WorkloadPriorityClass, AdmissionCheck, ...: nothing capacity-related to judge
        name = doc.name
        if doc.kind == "LocalQueue":
            name = f"{mapping(doc.data.get('metadata')).get('namespace') or 'default'}/{name}"
        if definitions.claim(doc.kind, name, doc):
            kinds[doc.kind][name] = doc
    entries: list[_Entry] = []
    for doc in index.cluster_queues.values():
        findings.extend(_invariants(doc))
        entries.extend(_gpu_entries(doc, gpu_resources, findings))
        index.beside.extend(beside_gpus(doc, f"ClusterQueue '{doc.name}'", gpu_resources))
    for doc in index.cohorts.values():
        index.beside.extend(beside_gpus(doc, f"Cohort '{doc.name}'", gpu_resources))
    findings.extend(configuration_findings(documents, gpu_resources))
    cohorts = _read_cohorts(index, gpu_resources, findings)
    cohort_gpus, flaws = cohorts.quota, cohorts.flaws
    tree = _cohort_trees(index)
    lenders = _Lenders(index, entries, cohort_gpus, cohorts.limits)
    clusters: dict[str, Cluster] = {}
    per_queue: dict[str, list[_Entry]] = {}
    for e in entries:
        per_queue.setdefault(e.queue, []).append(e)
    for queue, group in per_queue.items():
        doc = index.cluster_queues[queue]
        stop = mapping(doc.data.get("spec")).get("stopPolicy")
        if isinstance(stop, str) and stop in STOPPED:
            # Kueue admits nothing new to a held queue (red team, 2026-12-06): its quota serves no workload
            findings.append(doc.finding(
                "PL907", f"Kueue ClusterQueue '{queue}' is counted as a pool, but its stopPolicy is {stop}: Kueue"
                " admits no new workload to it, so its GPUs serve none of the workloads placed there",
                ("spec", "stopPolicy"), hint="set stopPolicy: None, or move its workloads and quota to a queue that admits"))
        cohort = cohort_of(doc)
        key = cohort or f"\0{queue}"
        if key not in clusters:
            home = index.cohorts.get(cohort) if cohort else None
            backing = ("kueue", "Cohort", cohort) if cohort else ("kueue", "ClusterQueue", queue)
            clusters[key] = new_cluster(unique_cluster_name(cohort or queue, "kueue", model, taken), home or doc, backing)
        pools = []
        for e in group:
            name = queue if len(group) == 1 else f"{queue}.{e.flavor}"
            pool = _pool(name, e, clusters[key], cohort, entries, cohort_gpus, index, findings, tree, lenders)
            if pool is not None and pool.scheduler is not None:
                # what Kueue refuses or disables anywhere in the queue's cohort tree
                top = tree(cohort)
                pool.scheduler["cohort_flaws"] = [f for c in sorted(flaws) if tree(c) == top or c == cohort
                                                  for f in flaws[c]] if cohort else []
            if pool is not None:
                pools.append(pool)
        index.pools[queue] = pools
    findings.extend(_unreachable_quota(index, entries, cohorts.quota, tree, lenders))
    return index, findings


def _unreachable_quota(index: KueueIndex, entries: list[_Entry], quota: dict[tuple[str, str], int],
                       tree: Callable[[str | None], str | None], lenders: _Lenders) -> list[Finding]:
    """PL906: a Cohort's own GPU quota of a flavor that no ClusterQueue of its tree can borrow.

    Kueue lends a Cohort's quota only to the ClusterQueues of its tree that list the flavor, as
    far as the limits on the way let it (:meth:`_Lenders.reaches`); without such a queue among
    the checked files the GPUs belong to no pool, and no rule sizes them (red team, 2026-12-06:
    a Cohort with no queue; then one whose only queue sat under a child Cohort that may borrow
    nothing).
    """
    cycles = _cohort_cycles(index)  # a tree that closes on itself has no one root: PL976 names the cycle instead
    out: list[Finding] = []
    for (name, flavor), gpus_held in sorted(quota.items()):
        if gpus_held <= 0 or name in cycles or tree(name) in cycles:
            continue
        if any(e.flavor == flavor and lenders.reaches(e, name) for e in entries):
            continue
        root = tree(name)
        where = f"cohort tree of {root}" if root != name else "cohort"
        if any(e.flavor == flavor and tree(cohort_of(e.doc)) == root for e in entries):
            why = (f"the ClusterQueues of its {where} that list {flavor} cannot borrow them (a Cohort's borrowingLimit"
                   " or lendingLimit of 0 on the way)")
        else:
            why = f"no ClusterQueue in its {where} has a GPU quota of {flavor} in the checked files"
        out.append(index.cohorts[name].finding(
            "PL906",
            f"Cohort {name} holds {gpus_held} GPUs of flavor {flavor}, but {why}: no pool can use them, so no rule"
            " sizes them",
            ("spec", "resourceGroups"),
            hint=f"check in the ClusterQueues that borrow this quota (their cohort: {name} or a Cohort below it), "
                 "or remove the quota from the Cohort",
        ))
    return out


#: the values Kueue's API accepts for each preemption policy of a ClusterQueue (its CRD's enums)
PREEMPTION_VALUES: dict[tuple[str, ...], tuple[str, ...]] = {
    ("reclaimWithinCohort",): ("Never", "LowerPriority", "Any"),
    ("withinClusterQueue",): ("Never", "LowerPriority", "LowerOrNewerEqualPriority"),
    ("borrowWithinCohort", "policy"): ("Never", "LowerPriority"),
}


def _invariants(doc: Document) -> list[Finding]:
    """What Kueue's webhook rejects, caught in review: limits without a cohort, resource order, preemption values."""
    out: list[Finding] = []
    spec = mapping(doc.data.get("spec"))
    preemption = mapping(spec.get("preemption"))
    for keys, allowed in PREEMPTION_VALUES.items():
        holder = preemption
        for key in keys[:-1]:
            holder = mapping(holder.get(key))
        if holder.get(keys[-1]) is not None and holder[keys[-1]] not in allowed:  # null: the default, Never
            # read as Never, the stricter reading; said here, since Kubernetes refuses the manifest (red team,
            # 2026-12-07, round 10: `any` read as Never without a word, and PL104 then asked for `Any`)
            out.append(doc.finding(
                "PL010",
                f"preemption.{'.'.join(keys)} is {holder[keys[-1]]!r}, which Kueue does not accept (one of"
                f" {', '.join(allowed)}, spelled exactly): read as Never",
                ("spec", "preemption", *keys),
                hint=f"write one of {', '.join(allowed)}",
            ))
    own = cohort_field(doc)
    other = "cohortName" if own == "cohort" else "cohort"
    wrong = f" ({doc.api_version} calls the field '{own}'; '{other}' is dropped)" if other in spec else ""
    for gi, group in enumerate(sequence(spec.get("resourceGroups"))):
        group = mapping(group)
        covered = [str(r) for r in sequence(group.get("coveredResources"))]
        for fi, flavor in enumerate(sequence(group.get("flavors"))):
            flavor = mapping(flavor)
            fpath: DocPath = ("spec", "resourceGroups", gi, "flavors", fi)
            resources = sequence(flavor.get("resources"))
            names = [str(mapping(r).get("name")) for r in resources]
            if covered and names != covered:
                out.append(
                    doc.finding(
                        "PL902",
                        f"flavor '{flavor.get('name')}' lists resources [{', '.join(names)}] but coveredResources is "
                        f"[{', '.join(covered)}]: Kueue requires the same resources in the same order",
                        (*fpath, "resources"),
                        hint=f"list the resources of every flavor in the order of coveredResources: {', '.join(covered)}",
                    )
                )
            if spec.get(own):
                continue
            for ri, res in enumerate(resources):
                for limit in ("borrowingLimit", "lendingLimit"):
                    if limit in mapping(res):
                        out.append(
                            doc.finding(
                                "PL901",
                                f"ClusterQueue '{doc.name}' sets {limit} for '{mapping(res).get('name')}' "
                                f"but belongs to no cohort{wrong}: Kueue rejects it, and there is no one to borrow from or lend to",
                                (*fpath, "resources", ri, limit),
                                hint=f"set spec.{own} to the cohort it shares GPUs with, or remove {limit}",
                            )
                        )
    return out


def _gpu_entries(doc: Document, gpu_resources: tuple[str, ...], findings: list[Finding]) -> list[_Entry]:
    out: list[_Entry] = []
    spec = mapping(doc.data.get("spec"))
    for gi, group in enumerate(sequence(spec.get("resourceGroups"))):
        for fi, flavor in enumerate(sequence(mapping(group).get("flavors"))):
            flavor = mapping(flavor)
            fpath: DocPath = ("spec", "resourceGroups", gi, "flavors", fi)
            entry: _Entry | None = None
            unlimited = False  # a GPU resource of the flavor without a borrowingLimit
            lent: list[tuple[int, int | None]] = []  # (nominal, lendingLimit) per GPU resource
            for ri, res in enumerate(sequence(flavor.get("resources"))):
                res = mapping(res)
                if res.get("name") not in gpu_resources:
                    if looks_like_gpu(res.get("name")):
                        findings.append(uncounted_gpus(doc, f"ClusterQueue '{doc.name}'", str(res.get("name")),
                                                       (*fpath, "resources", ri, "name"), gpu_resources))
                    continue
                rpath: DocPath = (*fpath, "resources", ri)
                nominal = gpus(doc, (*rpath, "nominalQuota"), res.get("nominalQuota", 0), findings)
                borrowing = gpus(doc, (*rpath, "borrowingLimit"), res["borrowingLimit"], findings) if "borrowingLimit" in res else None
                lending = gpus(doc, (*rpath, "lendingLimit"), res["lendingLimit"], findings) if "lendingLimit" in res else None
                if nominal is None:
                    continue
                if entry is None:
                    entry = _Entry(
                        doc, str(doc.name), str(flavor.get("name", f"flavor-{fi}")), fpath, 0, (*rpath, "nominalQuota"),
                        None, (*rpath, "borrowingLimit") if "borrowingLimit" in res else None, None,
                    )
                    out.append(entry)
                # Several GPU resource names in one flavor (rare) add up; one without a borrowingLimit
                # borrows without limit, and one without a lendingLimit lends its whole quota (red team,
                # 2026-12-06: the limit of one resource was taken for the flavor's, and the other's
                # unlimited borrowing of a Cohort's 500 GPUs read as GPUs no queue can reach)
                entry.nominal += nominal
                entry.names.append(str(res.get("name")))
                if borrowing is None:
                    unlimited = True
                entry.borrowing = None if unlimited else (entry.borrowing or 0) + int(borrowing or 0)
                lent.append((nominal, lending))
                if any(limit is not None for _, limit in lent):
                    entry.lending = sum(n if limit is None else limit for n, limit in lent)
    return out


def _cohort_parents(index: KueueIndex) -> dict[str, str]:
    """Cohort -> its parent Cohort (``spec.parentName``), for the Cohort objects that name one."""
    parents: dict[str, str] = {}
    for name, doc in index.cohorts.items():
        # v1alpha1 and v1beta1 Cohorts name it ``parent``, v1beta2 ``parentName`` (red team, 2026-12-06:
        # a v1beta1 parent was not read, and its 200 GPUs were lendable to no pool)
        key = "parentName" if (doc.api_version or "").endswith("/v1beta2") else "parent"
        parent = mapping(doc.data.get("spec")).get(key)
        if isinstance(parent, str) and parent and parent != name:
            parents[name] = parent
    return parents


def _cohort_cycles(index: KueueIndex) -> dict[str, list[str]]:
    """Cohort -> the cycle of parents it is in (names in order, the first again at the end); Kueue disables them."""
    parents = _cohort_parents(index)
    out: dict[str, list[str]] = {}
    for start in sorted(parents):
        path, here = [start], parents[start]
        while here in parents and here not in path:
            path.append(here)
            here = parents[here]
        if here in path:
            cycle = path[path.index(here):]
            for member in cycle:
                out.setdefault(member, [*cycle, cycle[0]])
    return out


def _cohort_trees(index: KueueIndex) -> Callable[[str | None], str | None]:
    """The root of each cohort's tree: Cohorts nest by ``spec.parentName`` (hierarchical cohorts).

    Kueue lets a ClusterQueue borrow unused quota anywhere in its cohort's tree - from the
    Cohorts above its own and from the ClusterQueues and Cohorts beside them - so the tree, not
    the nearest cohort, is what can lend to it (red team, 2026-12-06: a parent Cohort's 200 GPUs
    were lendable to no pool, and a borrowingLimit of 224 was judged as 24). A cohort without a
    Cohort object, or without a parent, is its own root; a cycle (which Kueue refuses) ends at
    the cohort where it closes.
    """
    parents = _cohort_parents(index)
    roots: dict[str, str] = {}

    def root(cohort: str | None) -> str | None:
        if cohort is None:
            return None
        found = roots.get(cohort)
        if found is None:
            seen = {cohort}
            found = cohort
            while found in parents and parents[found] not in seen:
                found = parents[found]
                seen.add(found)
            roots[cohort] = found
        return found

    return root


def cohort_roots(index: KueueIndex) -> Callable[[str | None], str | None]:
    """The root of each cohort's tree, as the pools' ``cohort_tree`` names it (:func:`_cohort_trees`)."""
    return _cohort_trees(index)


@dataclass
class _CohortQuota:
    """What the Cohort objects hold of each GPU flavor, read once: their own quota, limits and flaws."""

    #: GPUs each Cohort holds itself, per (cohort, flavor): lendable to its tree
    quota: dict[tuple[str, str], int] = field(default_factory=dict)
    #: (borrowingLimit, lendingLimit) per (cohort, flavor), combined over the flavor's GPU resources as a
    #: ClusterQueue's are (red team, 2026-12-06: one pair per flavor, the last resource's, was kept)
    limits: dict[tuple[str, str], tuple[int | None, int | None]] = field(default_factory=dict)
    #: what Kueue refuses or disables in a Cohort, or what no single workload can use, as sentences, by cohort
    flaws: dict[str, list[str]] = field(default_factory=dict)


def _read_cohorts(index: KueueIndex, gpu_resources: tuple[str, ...], findings: list[Finding]) -> _CohortQuota:
    """Every Cohort's GPU quota, limits and flaws, in one reading of its resource groups.

    A flavor listed twice counts once, at its first listing (Kueue's webhook refuses such a
    Cohort); a flavor holding quota under several GPU resource names (a pod requests one of
    them) and a cycle of parents (Kueue disables every ClusterQueue in it) are flaws.
    """
    out = _CohortQuota()
    for name, doc in sorted(index.cohorts.items()):
        listed: set[str] = set()
        for gi, group in enumerate(sequence(mapping(doc.data.get("spec")).get("resourceGroups"))):
            for fi, flavor in enumerate(sequence(mapping(group).get("flavors"))):
                flavor = mapping(flavor)
                fname = str(flavor.get("name"))
                parts: list[tuple[str, int, int | None, int | None]] = []
                for ri, res in enumerate(sequence(flavor.get("resources"))):
                    res = mapping(res)
                    if res.get("name") not in gpu_resources or fname in listed:
                        continue
                    path = ("spec", "resourceGroups", gi, "flavors", fi, "resources", ri)
                    nominal = gpus(doc, (*path, "nominalQuota"), res.get("nominalQuota", 0), findings) or 0
                    borrow, lend = (gpus(doc, (*path, key), res[key], findings) if key in res else None
                                    for key in ("borrowingLimit", "lendingLimit"))
                    parts.append((str(res.get("name")), nominal, borrow, lend))
                if fname in listed:
                    if any(mapping(r).get("name") in gpu_resources for r in sequence(flavor.get("resources"))):
                        out.flaws.setdefault(name, []).append(
                            f"Cohort {name} lists flavor {fname} twice (Kueue refuses such a Cohort: its quota counts"
                            " for nothing)")
                    continue
                listed.add(fname)
                if not parts:
                    continue
                key = (name, fname)
                out.quota[key] = sum(n for _, n, _, _ in parts)
                borrow_all = None if any(b is None for *_, b, _ in parts) else sum(int(b or 0) for *_, b, _ in parts)
                lent = any(lend is not None for *_, lend in parts)
                out.limits[key] = (borrow_all, sum(n if lend is None else lend for _, n, _, lend in parts) if lent else None)
                if len(parts) > 1:
                    names = ", ".join(n for n, *_ in parts)
                    out.flaws.setdefault(name, []).append(
                        f"Cohort {name} holds GPU quota of flavor {fname} under {len(parts)} resource names"
                        f" ({names}): a pod requests one of them, so one quota cannot stand for the other")
    for name, cycle in _cohort_cycles(index).items():
        out.flaws.setdefault(name, []).append(
            f"Cohort {name} is in a cycle of parents ({' -> '.join(cycle)}): Kueue disables every ClusterQueue in it")
    return out


class _Lenders:
    """What the rest of a cohort tree can lend a ClusterQueue on one flavor (hierarchical cohorts).

    Kueue lets a ClusterQueue borrow unused quota from its own cohort - the other members' lendable
    quota and the Cohort's own - and through it from the parent Cohort's subtree, as far as the
    cohort's ``borrowingLimit`` lets it; each child Cohort's subtree lends to its parent as far as
    its ``lendingLimit`` lets it. Without Cohort objects and parents this is the flat cohort of
    before: the other members' lendable quota plus the Cohort's own.
    """

    def __init__(self, index: KueueIndex, entries: list[_Entry], quota: dict[tuple[str, str], int],
                 limits: dict[tuple[str, str], tuple[int | None, int | None]]) -> None:
        self.quota, self.limits = quota, limits
        self.parent = _cohort_parents(index)
        self.children: dict[str, list[str]] = {}
        for child, parent in sorted(self.parent.items()):
            self.children.setdefault(parent, []).append(child)
        self.members: dict[str, list[_Entry]] = {}
        for e in entries:
            cohort = cohort_of(e.doc)
            if cohort is not None:
                self.members.setdefault(cohort, []).append(e)

    def _subtree(self, cohort: str, flavor: str, skip: _Entry, counted: set[str]) -> int:
        """Unused quota of ``cohort``'s subtree on ``flavor`` (``skip``'s queue left out): its own, its members', its children's.

        ``counted`` holds the cohorts already counted (a cycle of parents, which Kueue refuses, counts each once).
        """
        counted.add(cohort)
        total = self.quota.get((cohort, flavor), 0)
        total += sum(_lendable(o) for o in self.members.get(cohort, ()) if o.flavor == flavor and o.queue != skip.queue)
        for child in self.children.get(cohort, ()):
            if child not in counted:
                total += self._lends_up(child, flavor, skip, counted)
        return total

    def _lends_up(self, cohort: str, flavor: str, skip: _Entry, counted: set[str]) -> int:
        lend = self.limits.get((cohort, flavor), (None, None))[1]
        got = self._subtree(cohort, flavor, skip, counted)
        return got if lend is None else min(lend, got)

    def to(self, e: _Entry, cohort: str) -> int:
        """What ``e``'s ClusterQueue can borrow on its flavor from the rest of ``cohort``'s tree."""
        total, here, counted = 0, cohort, {cohort}
        cap: int | None = None  # what the borrowingLimits on the way up leave
        while True:
            got = self.quota.get((here, e.flavor), 0)
            got += sum(_lendable(o) for o in self.members.get(here, ()) if o.flavor == e.flavor and o.queue != e.queue)
            for child in self.children.get(here, ()):
                if child not in counted:
                    got += self._lends_up(child, e.flavor, e, counted)
            total += got if cap is None else min(cap, got)
            if cap is not None:
                cap -= min(cap, got)
            parent = self.parent.get(here)
            if parent is None or parent in counted:
                return total
            borrow = self.limits.get((here, e.flavor), (None, None))[0]
            if borrow is not None:
                cap = borrow if cap is None else min(cap, borrow)
            here = parent
            counted.add(here)


    def reaches(self, e: _Entry, target: str) -> bool:
        """Whether Cohort ``target``'s own quota on ``e``'s flavor can reach ``e``'s ClusterQueue at all.

        Up from ``target`` each Cohort lends to its parent unless its ``lendingLimit`` is 0; up from
        the queue's cohort each Cohort borrows from above unless its ``borrowingLimit`` is 0. The two
        walks must meet. The queue's own ``borrowingLimit`` is not asked: that is how much it is
        sized to borrow (``export kueue --update`` writes 0 where the daily band needs nothing more),
        judged with its pool by the band rules, not a wall in the tree.
        """
        cohort = cohort_of(e.doc)
        if cohort is None:
            return False
        lent: dict[str, bool] = {}  # the Cohorts above target (itself too): whether its quota gets there
        here, ok = target, True
        while here not in lent:
            lent[here] = ok
            if self.limits.get((here, e.flavor), (None, None))[1] == 0:
                ok = False
            parent = self.parent.get(here)
            if parent is None:
                break
            here = parent
        here, open_, seen = cohort, True, set()
        while here not in seen:
            seen.add(here)
            if here in lent:
                return open_ and lent[here]
            if self.limits.get((here, e.flavor), (None, None))[0] == 0:
                open_ = False
            parent = self.parent.get(here)
            if parent is None:
                return False
            here = parent
        return False


def borrowing_floor(info: Mapping[str, Any]) -> int:
    """The lowest ``borrowingLimit`` a ClusterQueue flavor (``pool.scheduler``) may have with its cohort's GPUs reachable.

    A Cohort's own quota is used only by borrowing, so the ClusterQueues of its tree must be
    allowed to borrow it together: ``cohort_borrowable`` (what they may borrow together, None when
    one has no limit) at least ``cohort_quota`` - the comparison PL976 makes. This flavor's share
    is what the others leave: ``cohort_quota`` less their limits. 0 outside a cohort, without a
    limit of its own, or when another member may borrow without limit.
    """
    quota, together, own = info.get("cohort_quota"), info.get("cohort_borrowable"), info.get("borrowing_limit")
    if not info.get("cohort") or not isinstance(quota, int) or not isinstance(together, int) or not isinstance(own, int):
        return 0
    return max(0, quota - (together - own))


def _lendable(o: _Entry) -> int:
    """What a ClusterQueue flavor lends its cohort while unused: its lendingLimit, else its whole nominal quota."""
    return o.lending if o.lending is not None else o.nominal


def _pool(
    name: str,
    e: _Entry,
    cluster: Cluster,
    cohort: str | None,
    entries: list[_Entry],
    cohort_gpus: dict[tuple[str, str], int],
    index: KueueIndex,
    findings: list[Finding],
    tree: Callable[[str | None], str | None] = lambda c: c,
    lenders: _Lenders | None = None,
) -> Pool | None:
    doc = e.doc
    spec = mapping(doc.data.get("spec"))
    preemption = mapping(spec.get("preemption"))
    reclaim = str(preemption.get("reclaimWithinCohort", "Never"))
    borrow_policy = str(mapping(preemption.get("borrowWithinCohort")).get("policy", "Never"))
    within = str(preemption.get("withinClusterQueue", "Never"))
    own_quota, borrowable, lendable = 0, None, 0
    if cohort is None:
        reserved, elastic = e.nominal, 0
    else:
        # the whole cohort tree lends (hierarchical cohorts): every Cohort's own quota in it, every member
        home = tree(cohort)
        own_quota = sum(n for (c, flavor), n in cohort_gpus.items() if flavor == e.flavor and tree(c) == home)
        members = [o for o in entries if o.flavor == e.flavor and tree(cohort_of(o.doc)) == home]
        # what the members may borrow together (None: one of them has no limit)
        borrowable = None if any(o.borrowing is None for o in members) else sum(int(o.borrowing or 0) for o in members)
        reserved = max(0, e.nominal - (e.lending or 0))
        lendable = (lenders.to(e, cohort) if lenders is not None
                    else own_quota + sum(_lendable(o) for o in members if o is not e and o.queue != e.queue))
        # Kueue lets a ClusterQueue use its whole nominal quota: the part it may lend is its own
        # whenever nobody has borrowed it, so it counts as elastic capacity, on top of what it borrows
        # (red team, 2026-12-05: mapped to no pool, a lendingLimit hid 64 GPUs from every rule)
        borrowed = lendable if e.borrowing is None else min(e.borrowing, lendable)
        elastic = (e.lending or 0) + borrowed
    flavor_doc = index.flavors.get(e.flavor)
    flavor_spec = mapping(flavor_doc.data.get("spec")) if flavor_doc else {}
    labels = mapping(flavor_spec.get("nodeLabels"))
    all_or_nothing = str(annotations_of(doc).get(ANNOTATION_ALL_OR_NOTHING, "")).lower() == "true"
    pool_spec: PoolSpec = {
        "name": name,
        "reservedGpus": reserved,
        "elastic": {"maxGpus": elastic, "kind": "borrow"},
        "serves": [],
        # Kueue keeps a workload it cannot admit pending; "reject" is only ever a declared intent.
        "overflow": declared_overflow(doc),
        "queue": queue_limits(doc),
        "scheduling": {
            # Visible all-or-nothing: topology-aware placement of the flavor, or a declared
            # waitForPodsReady (it lives in Kueue's Configuration, not in these manifests).
            "gang": bool(flavor_spec.get("topologyName")) or all_or_nothing,
            "preemption": within != "Never" or reclaim != "Never",
        },
    }
    gpu: GpuSpec = {}
    if "nvidia.com/gpu.product" in labels:
        gpu["model"] = str(labels["nvidia.com/gpu.product"])
    if "nvidia.com/gpu.memory" in labels:  # GPU feature discovery label, MiB
        try:
            mib = float(str(labels["nvidia.com/gpu.memory"]))
        except ValueError:
            mib = math.nan
        if math.isfinite(mib) and 0 < mib < 1e12:  # "inf", "nan" and absurd sizes say nothing
            gpu["memoryGiB"] = mib / 1024.0  # unrounded: PL502 compares it
    if gpu:
        pool_spec["gpu"] = gpu
    own = cohort_field(doc)
    cohort_path: DocPath = ("spec", own) if cohort else ("metadata", "name")
    top: DocPath = ("metadata", "name")
    borrow_path = e.borrowing_path or cohort_path
    places: dict[str, DocPath] = {
        "name": top,
        "reserved": e.nominal_path,
        "demand": e.nominal_path,
        "elastic": borrow_path,
        "capacity": e.borrowing_path or e.nominal_path,
        "overflow": ("spec", "queueingStrategy") if "queueingStrategy" in spec else top,
        "queue": ("metadata", "annotations") if annotations_of(doc) else top,
        "gang": (*e.flavor_path, "name"),
        "preemption": ("spec", "preemption") if preemption else top,
        "serves": top,
        "gpu": (*e.flavor_path, "name"),
        "reclaim": (
            ("spec", "preemption", "reclaimWithinCohort")
            if "reclaimWithinCohort" in preemption
            else ("spec", "preemption") if preemption else cohort_path
        ),
    }
    pool = scheduler_pool(name, cluster, pool_spec, doc, e.flavor_path, "kueue", places, findings)
    if pool is None:
        return None
    pool.scheduler = {
        "scheduler": "kueue",
        "queue": str(doc.name),
        "flavor": e.flavor,
        "cohort": cohort,
        "nominal": e.nominal,
        "lending_limit": e.lending,
        "gpu_resource_names": list(e.names),
        "borrowing_limit": e.borrowing,
        "cohort_tree": tree(cohort),
        "cohort_quota": own_quota,
        "cohort_borrowable": borrowable,
        # what the rest of the cohort tree can lend it (the ceiling of what it borrows)
        "cohort_lendable": lendable,
        "reclaim": reclaim,
        "borrow_policy": borrow_policy,
        "reclaims_in_time": reclaim in PREEMPTING,
    }
    return pool


def place(w: Workload, queue_name: str, index: KueueIndex | None, model: Model) -> list[Finding]:
    """Admit ``w`` through the LocalQueue ``namespace/name``."""
    where: DocPath = ("spec", "queue", "name")
    found = admission(index, queue_name)
    key, cq = found.key, found.cluster_queue
    if found.ambiguous:
        return [w.doc.finding("PL020",
                              f"LocalQueue '{queue_name}' exists in several namespaces ({', '.join(sorted(found.ambiguous))}); write namespace/name",
                              where)]
    if found.local_queue is None or index is None:
        known = ", ".join(sorted(index.local_queues if index else {})) or "none in the checked files"
        return [w.doc.finding("PL020", f"unknown Kueue LocalQueue '{queue_name}' (known: {known})", where,
                              hint="name a LocalQueue as namespace/name and check its manifest in with the workloads")]
    if cq not in index.cluster_queues:
        return [w.doc.finding("PL020",
                              f"LocalQueue '{key}' points to ClusterQueue '{cq}', which is not in the checked files", where)]
    pool = found.pool
    if pool is None:
        return [w.doc.finding("PL020",
                              f"ClusterQueue '{cq}' (through LocalQueue '{key}') has no GPU quota", where,
                              hint="give the ClusterQueue a flavor with nominalQuota for the GPU resource")]
    adopt(pool, model)
    w.pool = pool
    pool.workloads.append(w)
    if w.cls and w.cls not in pool.spec["serves"]:
        pool.spec["serves"] = sorted([*pool.spec["serves"], w.cls])
    return []
