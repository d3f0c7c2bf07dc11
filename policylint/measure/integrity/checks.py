"""Check functions of the integrity rules (registered in :data:`policylint.engine.checks.CHECKS`)."""

from __future__ import annotations

from typing import Any

#: The measurements PL960 dates against now: (fact, what it is, where it is written).
_DATED = (
    ("seconds_after_now", "concurrency trace"),
    ("vram_seconds_after_now", "VRAM trace"),
    ("jobs_seconds_after_now", "job list"),
)


def samples_after_now(facts: Any, params: Any) -> list[dict[str, Any]]:
    """PL960: every measurement (concurrency trace, VRAM trace, job list) dated past now by more than the skew."""
    limit = float(params["max_future_seconds"])
    problems = []
    for fact, what in _DATED:
        ahead = facts.get(fact)
        if not isinstance(ahead, (int, float)) or not ahead > limit:
            continue
        if fact == "seconds_after_now":
            count = facts.get("samples_after_now")
            noun = "sample" if count == 1 else "samples"
            # where the trace starts (not the first future sample: newcomer trial); how far
            # ahead is the message's own figure ({seconds:duration}), not repeated here
            detail = f" ({count} {noun} dated after now; the trace starts {facts.get('first_sample')})"
        elif fact == "vram_seconds_after_now":
            detail = " (its last sample is dated in the future)"
        else:
            detail = " (a job ends in the future)"
        problems.append({"measurement": what, "seconds": float(ahead), "detail": detail, "_at": fact, "_figures": (float(ahead), limit)})
    return problems


def cold_start_floor(facts: Any, params: Any) -> list[dict[str, Any]]:
    """PL965: a cold start below the fixed minimum plus the time to load the replica's resident memory.

    Each GPU of a replica loads its part of the model (resident GiB / GPUs per replica)
    at most ``load_gib_per_second``; a node and an image take ``min_seconds`` at the least.
    """
    cold = facts.get("cold_start_window_seconds")
    if not isinstance(cold, (int, float)):
        return []
    floor = float(params["min_seconds"])
    reason = f"the {floor:g} s that a node, an image and a model load take at the least"
    resident = facts.get("vram_resident_gib")
    rate = float(params["load_gib_per_second"])
    if isinstance(resident, (int, float)) and resident > 0 and rate > 0:
        per_gpu = float(resident) / max(1, int(facts.get("gpus_per_replica") or 1))
        load = per_gpu / rate
        floor += load
        reason = (
            f"the {floor:g} s a replica needs at the least: {float(params['min_seconds']):g} s for a node and an image,"
            f" and {load:g} s to load {per_gpu:g} GiB onto each GPU at {rate:g} GiB/s"
        )
    if cold >= floor:
        return []
    return [{"floor_seconds": floor, "floor_reason": reason, "_figures": (float(cold), floor)}]


def gpu_memory_contradicts_model(facts: Any, params: Any) -> list[dict[str, Any]]:
    """PL974: the declared memory of a GPU differs from its model's by more than the tolerance."""
    ratio = facts.get("gpu_memory_contradiction")
    if not isinstance(ratio, (int, float)):
        return []
    tolerance = float(params["tolerance"])
    if abs(float(ratio) - 1.0) <= tolerance + 1e-9:
        return []
    return [{"_figures": (float(facts["gpu_memory_gib"]), float(facts["gpu_model_memory_gib"]))}]


def gpu_weights_contradict_workload(facts: Any, params: Any) -> list[dict[str, Any]]:
    """PL985: a concurrency trace read as GPUs (a GPU-weighted request log or job list) for a workload whose
    requests share GPUs - an inference workload, or one whose per-GPU figure says one GPU serves several.

    A GPU-weighted trace is not divided by ``perGpuConcurrency`` again: weighing each request at a
    whole GPU turned an inference workload's 8 baseline GPUs into 146 (red team, 2026-12-06).
    """
    if facts.get("trace_unit") != "gpus":
        return []
    per_gpu = facts.get("per_gpu")
    if facts.get("workload_class") == "inference":
        reason = "an inference workload's requests share their GPUs, and none holds a GPU of its own"
    elif isinstance(per_gpu, (int, float)) and not isinstance(per_gpu, bool) and per_gpu > 1:
        reason = f"its perGpuConcurrency says one GPU serves {per_gpu:g} at once"
    else:
        return []
    return [{"reason": reason}]


CHECKS: dict[str, Any] = {
    "gpu_weights_contradict_workload": gpu_weights_contradict_workload,
    "samples_after_now": samples_after_now,
    "cold_start_floor": cold_start_floor,
    "gpu_memory_contradicts_model": gpu_memory_contradicts_model,
}
