"""The explicit registry of check functions, for conditions a schema cannot express.

A check function is pure: it receives one subject's facts and the rule's
parameters, and returns problems - each a dict of message variables, with an
optional ``_at`` (a fact name or a document path tuple) saying where the
finding belongs. The engine adds code, severity and location. Rule files can
only *name* a function listed in :data:`CHECKS`; they never carry code.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

Problem = dict[str, Any]
CheckFunction = Callable[[Mapping[str, Any], Mapping[str, Any]], list[Problem]]


def declared_bands_drift(facts: Mapping[str, Any], params: Mapping[str, Any]) -> list[Problem]:
    """Declared bands that differ from the computed ones by more than ``tolerance`` (relative)."""
    problems = []
    limit = float(params["tolerance"])
    for band in ("baseline", "daily", "peak"):
        declared = facts.get(f"declared_{band}")
        computed = facts.get(band)
        if declared is None or computed is None:
            continue
        reference = max(abs(computed), 1e-9)
        drift = abs(declared - computed) / reference
        if drift > limit:
            problems.append(
                {
                    "band": band,
                    "declared": declared,
                    "computed": round(computed, 2),
                    "drift": drift,
                    "_at": f"declared_{band}",
                }
            )
    return problems


def priority_inflation(facts: Mapping[str, Any], params: Mapping[str, Any]) -> list[Problem]:
    """More than ``max_share`` of the cluster's workloads claim a tolerance below ``tight_seconds``."""
    tolerances = list(facts.get("tolerances") or [])
    total = int(facts.get("workload_count") or 0)
    if total < int(params["min_workloads"]):
        return []
    tight = sum(1 for t in tolerances if t < float(params["tight_seconds"]))
    share = tight / total
    if share > float(params["max_share"]):
        return [{"tight": tight, "total": total, "share": share}]
    return []


def proposal_exceeds_shortfall(facts: Mapping[str, Any], params: Mapping[str, Any]) -> list[Problem]:
    """Per request: GPUs asked for beyond (baseline GPUs - reserved) x (1 + headroom)."""
    problems = []
    headroom = float(params["headroom"])
    for req in facts.get("requests") or []:
        if req["baseline_gpus"] is None or req["reserved"] is None:
            continue
        shortfall = max(0, req["baseline_gpus"] - req["reserved"])
        allowed = math.ceil(shortfall * (1 + headroom) - 1e-9)
        if req["gpus"] > allowed:
            problems.append(
                {
                    "pool": req["pool"],
                    "gpus": req["gpus"],
                    "reserved": req["reserved"],
                    "baseline_gpus": req["baseline_gpus"],
                    "baseline_pooling": req.get("baseline_pooling") or "sum of workload baselines unknown",
                    "shortfall": shortfall,
                    "allowed": allowed,
                    "_at": ("spec", "requests", req["index"], "gpus"),
                }
            )
    return problems


def proposal_for_unmeasured_pool(facts: Mapping[str, Any], params: Mapping[str, Any]) -> list[Problem]:
    """Per request: the requested pool has no workload with measured GPU demand."""
    problems = []
    for req in facts.get("requests") or []:
        if req.get("measured_workloads") is None or req["measured_workloads"] > 0:
            continue
        problems.append(
            {
                "pool": req["pool"],
                "gpus": req["gpus"],
                "pool_workloads": req.get("pool_workloads") or 0,
                "_at": ("spec", "requests", req["index"], "pool"),
            }
        )
    return problems


def tolerance_spread(facts: Mapping[str, Any], params: Mapping[str, Any]) -> list[Problem]:
    """Tightest and loosest tolerance in one pool differ by more than ``max_factor``."""
    lo = facts.get("tolerance_min_seconds")
    hi = facts.get("tolerance_max_seconds")
    spread = facts.get("tolerance_spread")
    if lo is None or hi is None or spread is None:
        return []
    if spread > float(params["max_factor"]):
        return [{"spread": "unbounded" if math.isinf(spread) else f"{spread:g}x"}]
    return []


CHECKS: dict[str, CheckFunction] = {
    "declared_bands_drift": declared_bands_drift,
    "priority_inflation": priority_inflation,
    "proposal_exceeds_shortfall": proposal_exceeds_shortfall,
    "proposal_for_unmeasured_pool": proposal_for_unmeasured_pool,
    "tolerance_spread": tolerance_spread,
}


#: Variables each check function adds to the message context.
CHECK_VARIABLES: dict[str, set[str]] = {
    "declared_bands_drift": {"band", "declared", "computed", "drift"},
    "priority_inflation": {"tight", "total", "share"},
    "proposal_exceeds_shortfall": {
        "pool", "gpus", "reserved", "baseline_gpus", "baseline_pooling", "shortfall", "allowed"
    },
    "proposal_for_unmeasured_pool": {"pool", "gpus", "pool_workloads"},
    "tolerance_spread": {"spread"},
}
