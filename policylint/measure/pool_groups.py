"""Which workloads may share a pool, and the capacity a pool's bands justify: one definition for plan and check.

``policylint plan`` (:mod:`policylint.plan.grouping`, :mod:`policylint.plan.sizing`)
groups workloads and sizes pools by these functions, and ``check`` judges the pools a
repository declares by the same ones (PL988, :mod:`policylint.engine.pool_merges`): a
pool that ``check`` calls mergeable is one ``plan`` would put in the same group, sized
by the same rule. They live here, below both, so that neither keeps a copy.

- **Group key** (:func:`group_key`): class, GPU model and memory and tolerance tier
  (:func:`tier_of`). The GPU model is compared by its words (:func:`model_key`: case and
  punctuation aside), so ``H100-SXM-80GB`` and ``h100 sxm 80gb`` are one GPU type; the
  model as written is kept for display.
- **Gang need** (:func:`is_gang`): training or batch jobs of more than one GPU, as
  declared (``gpusPerReplica``) or as the workload's measured job lists record them.
  ``check`` (PL403's ``multi_gpu_job``) and ``plan`` (``scheduling.gang``, the ``-gang``
  name) both ask this one function, so a plan never leaves out the gang admission the
  check then demands. Gang need is not part of the key. A gang job holds its GPUs all at
  once, but they are whole GPUs all the same: the pooled series counts each job at its
  ``gpusPerReplica``, and a GPU a one-GPU job frees is one a gang can take. FRAMEWORK.md
  separates pools by class and tolerance, and answers gang jobs with scheduling (gang
  admission, PL403), a buffer for the long tail or preemption (PL601), not with pools of
  their own. Keeping gang work apart made ``plan`` size a mixed pool as the sum of two
  (red team, 2026-12-06: 26 reserved GPUs for a batch pool whose pooled baseline, the
  figure ``check`` accepts, is 20). A pool holding a gang job declares gang scheduling,
  which admits a one-GPU job as a gang of one.
- **Tolerance spread** (:func:`split_spread`): a tier is cut wherever its loosest
  tolerance would exceed PL303's factor times its tightest.
- **Capacity** (:func:`framework_capacity`): reserved = the baseline band, reserved +
  elastic = the daily band (FRAMEWORK.md, "concurrency bands"), floored after the
  headroom, with a float-noise guard.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from policylint.calc.settings import MIN_WINDOW_DAYS
from policylint.measure.conversion import declared_gpus_per_replica

__all__ = [
    "CLASSES",
    "EPS",
    "Thresholds",
    "framework_capacity",
    "group_key",
    "is_gang",
    "model_key",
    "number",
    "split_spread",
    "tier_of",
    "tightest",
    "tolerance_of",
]

#: Float noise guard for the floors of sized numbers.
EPS = 1e-9
#: The workload classes the plan places; training, batch and inference never share a pool.
CLASSES = ("training", "batch", "inference")


def number(value: Any) -> float | None:
    """``value`` as a float when it is a number (not a boolean), else None."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Thresholds:
    """The rules' parameters the plan must satisfy (defaults: the rules' defaults)."""

    realtime_seconds: float = 10.0  # PL306
    queue_tolerant_seconds: float = 300.0  # PL306
    max_spread: float = 100.0  # PL303
    min_window_days: float = MIN_WINDOW_DAYS  # PL112
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


def tolerance_of(spec: Mapping[str, Any]) -> float | None:
    """The declared maximum tolerable queue seconds, None when not a number."""
    return number((spec.get("tolerance") or {}).get("maxQueueSeconds"))


def tightest(tolerances: Iterable[float | None]) -> float | None:
    """The tightest of the tolerances, None when any workload declares none."""
    tols = list(tolerances)
    return None if any(t is None for t in tols) else min(t for t in tols if t is not None)




def _jobs_hold_several(integrity: Mapping[str, Any] | None) -> bool:
    """True when a measured job list (the durations' or a GPU-weighted trace's) records a job of more than one GPU."""
    found = integrity or {}
    return any((n := number(found.get(k))) is not None and n > 1 for k in ("job_gpus_max", "trace_job_gpus_p90"))


def is_gang(cls: str, spec: Mapping[str, Any], integrity: Mapping[str, Any] | None) -> bool:
    """Training or batch jobs holding more than one GPU: their pool needs gang scheduling (not a pool of their own).

    More than one GPU as declared (``gpusPerReplica``) or as the workload's measured job lists
    record it (``integrity``: :attr:`policylint.measure.facts.WorkloadFacts.integrity`, the
    durations' ``job_gpus_max`` or a GPU-weighted trace's ``trace_job_gpus_p90``). A job list
    weighed by GPUs makes ``gpusPerReplica`` cost nothing, so declaring 1 must not hide 8-GPU
    jobs: not from PL403 (``check``'s ``multi_gpu_job``) and not from ``plan``'s
    ``scheduling.gang``, which both read this function.
    """
    return cls in ("training", "batch") and (declared_gpus_per_replica(spec) > 1 or _jobs_hold_several(integrity))


def tier_of(tolerance: float | None, th: Thresholds) -> str:
    """The tolerance tier: real-time, interactive, queue-tolerant (PL306's limits) or no-tolerance."""
    if tolerance is None:
        return "no-tolerance"
    if tolerance <= th.realtime_seconds:
        return "realtime"
    if tolerance < th.queue_tolerant_seconds:
        return "interactive"
    return "queue-tolerant"


def model_key(model: str) -> str:
    """A GPU model's words, upper case, one space apart: how two spellings of one model compare."""
    return " ".join(t for t in re.split(r"[^A-Z0-9]+", model.upper()) if t)


def group_key(cls: str, spec: Mapping[str, Any], gpu: Mapping[str, Any] | None, th: Thresholds) -> tuple[str, str, float, str] | str:
    """(class, GPU model key, GPU memory, tier) of a workload on the GPU type ``gpu``; else why it has none.

    The cluster is the caller's: the workload's pool's, or where an unplaced workload is planned.
    """
    if cls not in CLASSES:
        return f"its class {cls!r} is not one of {', '.join(CLASSES)}"
    model, memory = (gpu or {}).get("model"), number((gpu or {}).get("memoryGiB"))
    if not isinstance(model, str) or not model_key(model) or memory is None:
        return "no GPU model and memory"
    return (cls, model_key(model), memory, tier_of(tolerance_of(spec), th))


def split_spread(names: list[str], tolerances: Mapping[str, float | None], max_spread: float) -> list[list[str]]:
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


def framework_capacity(baseline: float, daily: float, headroom: float = 0.0) -> tuple[int, int]:
    """(reserved, reserved + elastic) GPUs from a pool's baseline and daily bands, with ``headroom``.

    Reserved = the baseline band, the total = the daily band (never below the reserved),
    each scaled by ``1 + headroom`` and floored (bands of whole GPU counts are whole).
    """
    reserved = math.floor(baseline * (1 + headroom) + EPS)
    return reserved, max(reserved, math.floor(daily * (1 + headroom) + EPS))
