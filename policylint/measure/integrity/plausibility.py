"""Plausibility: what a job list and a pool declare that cannot be so.

GPUs per job as a job list records them; a pool's GPU model against the memory it
declares, its scheduler queue against itself, and the largest gang it must admit
(:func:`pool_integrity_facts`, the pool's integrity facts).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from policylint.measure.conversion import gpus_per_replica
from policylint.measure.integrity.values import Fact
from policylint.measure.integrity_facts import IntegrityPoolFacts

if TYPE_CHECKING:
    import numpy as np


def job_facts(gpus: np.ndarray, column_declared: bool) -> dict[str, Fact]:
    """Plausibility: GPUs per job as the job list records them.

    A reader gives every job one GPU when the list has no GPU column, so the figures
    are only facts when the column was declared or some job holds more than one.
    """
    import numpy as np

    values = np.asarray(gpus, dtype=np.float64)
    if values.size == 0 or not (column_declared or bool(np.any(values > 1))):
        return {"job_gpus_max": None, "job_gpus_median": None, "job_gpus_p90": None}
    from policylint.calc.select import percentile

    # the p90 (inverted CDF, as every band): one job's own figure, what nine jobs in ten hold at most
    return {"job_gpus_max": int(np.max(values)), "job_gpus_median": float(np.median(values)),
            "job_gpus_p90": int(percentile(values, [90])[0])}


#: Memory of common data-centre GPUs, GiB (the sizes the vendors sell them with; a name that
#: states its size, such as A100-SXM4-40GB, is read by its size). Keys are the tokens of a model
#: name in upper case; a tuple holds every size the model is sold with.
GPU_MEMORY_GIB: dict[str, tuple[float, ...]] = {
    "B200": (180.0, 192.0),
    "GB200": (186.0, 192.0),
    "H200": (141.0,),
    "GH200": (96.0, 144.0),
    "H100 NVL": (94.0,),
    "H100": (80.0,),
    "H800": (80.0,),
    "H20": (96.0,),
    "A100": (40.0, 80.0),
    "A800": (40.0, 80.0),
    "A40": (48.0,),
    "A30": (24.0,),
    "A10G": (24.0,),
    "A10": (24.0,),
    "A16": (16.0,),
    "A2": (16.0,),
    "L40S": (48.0,),
    "L40": (48.0,),
    "L20": (48.0,),
    "L4": (24.0,),
    "T4": (16.0,),
    "V100": (16.0, 32.0),
    "P100": (12.0, 16.0),
    "P4": (8.0,),
    "RTX 6000 ADA": (48.0,),
    "RTX A6000": (48.0,),
    "RTX 4090": (24.0,),
    "RTX 3090": (24.0,),
    "MI325X": (256.0,),
    "MI300X": (192.0,),
    "MI250X": (128.0,),
    "MI250": (128.0,),
    "MI210": (64.0,),
    "GAUDI3": (128.0,),
    "GAUDI2": (96.0,),
}


def _tokens(name: str) -> list[str]:
    import re

    return [t for t in re.split(r"[^A-Z0-9]+", name.upper()) if t]


def model_memory_gib(model: str | None) -> tuple[float, ...] | None:
    """The memory sizes (GiB) a GPU model is sold with: the size in its name, else the table."""
    import re

    if not model:
        return None
    sized = re.search(r"(?<![0-9A-Z])([0-9]{1,3})\s*(?:GB|GIB|G)(?![A-Z0-9])", model.upper())
    if sized:
        return (float(sized.group(1)),)
    family = gpu_family(model)
    return GPU_MEMORY_GIB[family] if family is not None else None


def gpu_family(model: str | None) -> str | None:
    """The key of :data:`GPU_MEMORY_GIB` a model name states (the longest that matches), None for an unknown GPU."""
    if not model:
        return None
    tokens = _tokens(model)
    joined = " ".join(tokens)
    for key in sorted(GPU_MEMORY_GIB, key=lambda k: (-len(k.split()), -len(k))):
        parts = key.split()
        if len(parts) > 1 and f" {key} " in f" {joined} ":
            return key
        if len(parts) == 1 and key in tokens:
            return key
    return None


def spelled_apart(pools: Sequence[tuple[str, Any, Any]]) -> list[str]:
    """One GPU written several ways across ``pools`` ((pool name, gpu.model, gpu.memoryGiB) each).

    Pools whose models name one family of :data:`GPU_MEMORY_GIB` with memory within 8 GiB of
    one size are one GPU type; when their (model, memory) as written differ, each such type
    gives one text listing its spellings and the pools that use each.
    """
    from policylint.measure.pool_groups import model_key

    types: dict[tuple[str, int], dict[tuple[str, float], list[str]]] = {}
    for name, model, memory in pools:
        family = gpu_family(model) if isinstance(model, str) else None
        if family is None or not isinstance(memory, (int, float)) or isinstance(memory, bool) or memory <= 0:
            continue
        types.setdefault((family, round(float(memory) / 8)), {}).setdefault((model_key(model), float(memory)), []).append(
            f"{name} ({model.strip()}, {float(memory):g} GiB)")
    out = []
    for (family, _), spellings in sorted(types.items()):
        if len(spellings) > 1:
            shown = "; ".join(", ".join(sorted(used)) for _, used in sorted(spellings.items()))
            out.append(f"{family}: {shown}")
    return out


def _quantity(value: Any) -> int | None:
    from policylint.model.schedulers.quantity import gpu_count

    try:
        return gpu_count(value)
    except (ValueError, TypeError):
        return None


def queue_contradictions(pool: Any, volcano_queues: dict[str, Any] | None = None) -> list[str]:
    """Plausibility: what the scheduler queue behind ``pool`` says against itself, as sentences."""
    info = getattr(pool, "scheduler", None) or {}
    out: list[str] = []
    if info.get("scheduler") == "kueue":
        nominal, lending, borrowing = info.get("nominal"), info.get("lending_limit"), info.get("borrowing_limit")
        queue = info.get("queue")
        if isinstance(lending, int) and isinstance(nominal, int) and lending > nominal:
            out.append(
                f"ClusterQueue {queue} may lend {lending} GPUs but holds a nominalQuota of {nominal}"
                " (Kueue refuses a lendingLimit above the quota)"
            )
        names = info.get("gpu_resource_names") or []
        if len(names) > 1:
            # red team, 2026-12-06: amd.com/gpu quota on an NVIDIA flavor added to nvidia.com/gpu's
            out.append(
                f"ClusterQueue {queue} holds GPU quota of flavor {info.get('flavor')} under {len(names)} resource"
                f" names ({', '.join(names)}): a pod requests one of them, so one quota cannot stand for the other"
            )
        out.extend(str(f) for f in info.get("cohort_flaws") or [])
        elastic = (pool.spec.get("elastic") or {}).get("maxGpus")
        # a limit without a cohort is PL901's; a limit above what the cohort lends today is common
        # (the cohort may grow) and policylint already counts only what can be lent - but a limit
        # with nothing at all to borrow is an elastic part that can never be reached
        quota, borrowable = info.get("cohort_quota"), info.get("cohort_borrowable")
        if info.get("cohort") and isinstance(quota, int) and isinstance(borrowable, int) and quota > borrowable:
            # the Cohort's own GPUs are only ever used by borrowing, and every member's borrowing is capped
            tree = info.get("cohort_tree")
            where = (f"cohort {info.get('cohort')}" if tree in (None, info.get("cohort"))
                     else f"the cohort tree of {tree} (cohort {info.get('cohort')} and the Cohorts around it)")
            out.append(
                f"{where} holds {quota} GPUs of flavor {info.get('flavor')} itself, but its"
                f" ClusterQueues may borrow only {borrowable} together: {quota - borrowable} GPUs no queue can reach"
            )
        # elastic holds the queue's own lendable quota too: what it can borrow is the rest
        borrowed = elastic - (lending if isinstance(lending, int) else 0) if isinstance(elastic, int) else elastic
        if info.get("cohort") and isinstance(borrowing, int) and borrowing > 0 and borrowed == 0:
            out.append(
                f"ClusterQueue {queue} may borrow up to {borrowing} GPUs, but nothing else in cohort"
                f" {info.get('cohort')} lends any: its elastic part can never be reached"
            )
    elif info.get("scheduler") == "volcano":
        spec = (pool.doc.data or {}).get("spec") or {}
        from policylint.model.schedulers.quantity import GPU_RESOURCES

        def gpu_of(section: Any) -> int | None:
            if not isinstance(section, dict):
                return None
            key = next((r for r in GPU_RESOURCES if r in section), None)
            return _quantity(section[key]) if key else None

        capability = gpu_of(spec.get("capability"))
        deserved = gpu_of(spec.get("deserved"))
        guarantee = gpu_of((spec.get("guarantee") or {}).get("resource") if isinstance(spec.get("guarantee"), dict) else None)
        queue = info.get("queue")
        if capability is not None and deserved is not None and capability < deserved:
            out.append(f"Queue {queue} deserves {deserved} GPUs but its capability caps it at {capability}")
        if capability is not None and guarantee is not None and capability < guarantee:
            out.append(f"Queue {queue} is guaranteed {guarantee} GPUs but its capability caps it at {capability}")
        if deserved is not None and guarantee is not None and deserved < guarantee:
            out.append(f"Queue {queue} is guaranteed {guarantee} GPUs but deserves only {deserved}")
        parent = spec.get("parent")
        if isinstance(parent, str) and parent != "root":
            queues = volcano_queues or {}
            parent_doc = queues.get(parent)
            if parent_doc is not None:
                parent_spec = (parent_doc.data or {}).get("spec") or {}
                parent_cap = gpu_of(parent_spec.get("capability"))
                siblings = [s for s in (((d.data or {}).get("spec") or {}) for d in queues.values()) if s.get("parent") == parent]
                children = [gpu_of(s["guarantee"].get("resource")) for s in siblings if isinstance(s.get("guarantee"), dict)]
                total = sum(x for x in children if x)
                if parent_cap is not None and total > parent_cap:
                    out.append(
                        f"the queues under {parent} are guaranteed {total} GPUs together, but {parent}'s capability"
                        f" is {parent_cap}"
                    )
                held = parent_spec.get("guarantee")
                parent_guarantee = gpu_of(held.get("resource") if isinstance(held, dict) else None)
                caps = [gpu_of(s.get("capability")) for s in siblings]
                # a parent queue is judged through its children: GPUs guaranteed beyond what they may use reach no one
                if parent_guarantee is not None and caps and all(c is not None for c in caps):
                    usable = sum(int(c or 0) for c in caps)
                    if parent_guarantee > usable:
                        out.append(
                            f"{parent} is guaranteed {parent_guarantee} GPUs, but the queues under it may use at most"
                            f" {usable} together: {parent_guarantee - usable} guaranteed GPUs no queue can reach"
                        )
                out.extend(_volcano_siblings(queue, parent, parent_cap, parent_guarantee, siblings, capability or deserved,
                                             guarantee, total, gpu_of))
        out.extend(_volcano_tree(queue, spec, guarantee, volcano_queues or {}, gpu_of))
    return out


def _volcano_siblings(
    queue: Any, parent: str, parent_cap: int | None, parent_guarantee: int | None, siblings: list[dict[str, Any]],
    top: int | None, guarantee: int | None, guaranteed: int, gpu_of: Any,
) -> list[str]:
    """What a Volcano queue's parent and siblings make of its capacity (red team, 2026-12-06, round 3)."""
    out: list[str] = []
    others = guaranteed - (guarantee or 0)
    if parent_cap is not None and top is not None and guarantee is not None:
        reachable = parent_cap - others
        if guarantee <= reachable < top:
            out.append(
                f"Queue {queue} may grow to {top} GPUs, but {parent} caps the queues under it at {parent_cap} and"
                f" guarantees the others {others}: at most {reachable} are reachable, so {top - reachable} of its"
                " elastic GPUs can never be used"
            )
    held = parent_cap if parent_cap is not None else parent_guarantee
    if held:
        for sibling in siblings:
            if gpu_of(sibling.get("capability")) is None and gpu_of(sibling.get("deserved")) is None:
                out.append(
                    f"a queue under {parent} sets no GPU capability, so it may take up to {held} of {parent}'s GPUs"
                    " and no pool judges them (give it capability nvidia.com/gpu: 0, or the GPUs it measures)"
                )
                break
    return out


def _volcano_tree(queue: Any, spec: dict[str, Any], guarantee: int | None, queues: dict[str, Any], gpu_of: Any) -> list[str]:
    """A Volcano queue's ancestors: a cap above its parent tighter than its guarantee, a cycle of parents,
    an ancestor guaranteed more than its children (round 22), and GPU quota under two resource names in the
    queue itself (red team, 2026-12-06, round 3)."""
    from policylint.model.schedulers.quantity import GPU_RESOURCES

    out: list[str] = []
    held = spec.get("guarantee")
    sections = (spec.get("capability"), spec.get("deserved"), held.get("resource") if isinstance(held, dict) else None)
    names = sorted({r for section in sections if isinstance(section, dict) for r in GPU_RESOURCES if r in section})
    if len(names) > 1:
        out.append(
            f"Queue {queue} holds GPU quota under {len(names)} resource names ({', '.join(names)}): a pod requests"
            " one of them, so one quota cannot stand for the other"
        )
    chain: list[str] = [str(queue)]
    here = spec.get("parent")
    while isinstance(here, str) and here and here != "root":
        if here in chain:
            out.append(f"the parents of Queue {queue} form a cycle ({' -> '.join([*chain, here])}): no hierarchy holds it")
            break
        chain.append(here)
        doc = queues.get(here)
        if doc is None:
            break
        above = (doc.data or {}).get("spec") or {}
        spare = _spare_guarantee(here, above, queues, gpu_of)
        if spare:
            out.append(spare)
        cap = gpu_of(above.get("capability"))
        if len(chain) > 2 and cap is not None and guarantee is not None and cap < guarantee:
            out.append(f"Queue {queue} is guaranteed {guarantee} GPUs, but {here}, above its parent, caps its subtree at {cap}")
        here = above.get("parent")
    return out


def _spare_guarantee(name: str, spec: dict[str, Any], queues: dict[str, Any], gpu_of: Any) -> str | None:
    """A Volcano parent queue guaranteed more GPUs than its children are together, as a sentence (None: it is not).

    Jobs run in leaf queues, and every pool is sized from its own guarantee against its workloads' baseline:
    a parent's guarantee beyond its children's is reserved capacity no workload's baseline backs, which no
    sizing rule nor PL950's owned figure sees. Red team, 2026-12-07, round 22: research's guarantee raised
    120 -> 152 over children guaranteed 104 + 16, with their capabilities raised to take the 32, passed
    check, the hook and --diff.
    """
    held = spec.get("guarantee")
    guarantee = gpu_of(held.get("resource") if isinstance(held, dict) else None)
    if not guarantee:
        return None
    children = [((d.data or {}).get("spec") or {}) for d in queues.values()]
    guaranteed = 0
    for child in children:
        if isinstance(child, dict) and child.get("parent") == name:
            theirs = child.get("guarantee")
            guaranteed += gpu_of(theirs.get("resource") if isinstance(theirs, dict) else None) or 0
    if guarantee <= guaranteed:
        return None
    return (f"{name} is guaranteed {guarantee} GPUs, but the queues under it only {guaranteed} together:"
            f" {guarantee - guaranteed} reserved GPUs no workload's baseline backs (a parent's guarantee is the sum"
            " of its children's)")


def pool_integrity_facts(
    pool: Any, facts: Mapping[str, Any], volcano_queues: dict[str, Any] | None = None
) -> IntegrityPoolFacts:
    """Plausibility facts of one pool, from the pool's other facts."""
    spec = pool.spec
    model = (spec.get("gpu") or {}).get("model")
    sizes = model_memory_gib(str(model)) if model else None
    declared = facts.get("gpu_memory_gib")
    contradiction = None
    if sizes and isinstance(declared, (int, float)) and declared > 0:
        nearest = min(sizes, key=lambda s: abs(math.log(float(declared) / s)))
        contradiction = float(declared) / nearest
    # measured workloads only: an unmeasured one is PL105's, and a pool planned for unmeasured
    # workloads alone may hold no GPUs yet
    unmeasured = set(facts.get("unmeasured_workloads") or [])
    gangs = [(gpus_per_replica(w), w.name) for w in pool.workloads if w.name not in unmeasured]
    top = max(gangs, key=lambda g: (g[0], [-ord(c) for c in g[1]])) if gangs else None
    found = queue_contradictions(pool, volcano_queues)
    capacity, proposed = facts.get("capacity_gpus"), facts.get("proposed_gpus") or 0
    return IntegrityPoolFacts(
        gpu_model=str(model) if model else None,
        gpu_model_memory_gib=(
            (min(sizes, key=lambda s: abs(math.log(float(cast(float, declared)) / s))) if contradiction is not None else sizes[0])
            if sizes
            else None
        ),
        gpu_memory_contradiction=contradiction,
        largest_gang_gpus=top[0] if top else None,
        largest_gang_workload=top[1] if top else None,
        admissible_gpus=(int(capacity) + int(proposed)) if isinstance(capacity, (int, float)) else None,
        queue_contradictions=found,
        queue_contradiction_count=len(found),
        queue_contradiction_summary="; ".join(found),
    )
