"""What the integrity rules compute beyond the stored facts.

The check functions of PL960, PL965 and PL974 (registered in ``CHECKS`` of
:mod:`policylint.engine.checks`, their message variables in :data:`CHECK_VARIABLES`),
and the integrity of the gate itself: :func:`loosened_options`, how a configuration
loosens the rule pack (PL977).
"""

from __future__ import annotations

from typing import Any


#: Rule options whose looser setting is the lower one (the rest: max_*, tolerance, headroom and
#: margins loosen upward; min_* downward; text options loosen by any change).
_LOOSER_DOWN = {"tight_seconds", "latency_seconds", "realtime_seconds"}
_LOOSER_UP = {"min_workloads", "queue_tolerant_seconds"}


def _looser(name: str, default: Any, value: Any) -> bool | None:
    """True when ``value`` loosens option ``name`` against ``default``; None when no direction is known."""
    if value == default:
        return False
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not isinstance(default, (int, float)):
        return None
    if name in _LOOSER_UP:
        return value > default
    if name in _LOOSER_DOWN:
        return value < default
    if name.startswith("min_"):
        return value < default
    return value > default


def loosened_options(ruleset: Any, config: dict[str, Any] | None = None) -> list[str]:
    """Integrity of the gate: the loosening a configuration applies to the rule pack, as sentences.

    ``ruleset`` holds the options and severities in force; ``config`` is the
    repository's own configuration file as read (its ``rules``, ``ignore``, ``select``,
    ``extend-select`` and ``per-file-ignores``), so a configuration is judged even when
    the run that reads it used other options. A ``--select`` or ``--ignore`` given on
    the command line is not reported: it is written in the CI job, where a reviewer sees it.
    """
    from policylint.finding import Severity
    from policylint.engine.ruleset import catalogue

    config = config or {}
    bundled = catalogue()
    found: dict[tuple[str, str], str] = {}
    merged: dict[str, dict[str, Any]] = {code: dict(values) for code, values in ruleset.params.items()}
    severities = {code: rule.severity for code, rule in ruleset.rules.items()}
    rules_cfg = config.get("rules")
    settings: dict[str, Any] = rules_cfg if isinstance(rules_cfg, dict) else {}
    for key, values in settings.items():
        rule = ruleset.find(str(key)) if isinstance(values, dict) else None
        if rule is None:
            continue
        for name, value in values.items():
            if name == "severity":
                try:
                    severities[rule.code] = Severity.parse(str(value))
                except ValueError:  # an unreadable severity is the configuration loader's error
                    continue
            elif name in rule.params:
                merged.setdefault(rule.code, {})[name] = value

    def codes(selectors: Any) -> set[str]:
        if not isinstance(selectors, list):
            return set()
        return {r.code for sel in selectors for r in ruleset.matches(str(sel))}

    ignored = codes(config.get("ignore"))
    if isinstance(config.get("select"), list):
        chosen = codes(config.get("select")) | codes(config.get("extend-select"))
        ignored |= {code for code, rule in ruleset.rules.items() if not rule.builtin and code not in chosen}
    per_file_cfg = config.get("per-file-ignores")
    per_file: dict[str, Any] = per_file_cfg if isinstance(per_file_cfg, dict) else {}
    for code in sorted(ruleset.rules):
        rule = ruleset.rules[code]
        for name, param in rule.params.items():
            value = merged.get(code, {}).get(name, param.default)
            looser = _looser(name, param.default, value)
            if looser or looser is None:
                how = "looser than" if looser else "changed from"
                found[(code, name)] = f"{code} {name} = {value!r}, {how} its default {param.default!r}"
        default = bundled.get(code, (None, None))[1]
        now = severities.get(code)
        if default is not None and now is not None and now < default:
            found[(code, "severity")] = f"{code} reports as {now.label}, not {default.label}"
        if code in ignored:
            found[(code, "ignore")] = f"{code} ({rule.name}) is ignored"
        globs = sorted(str(g) for g, sel in per_file.items() if code in codes(sel))
        if globs:
            found[(code, "per-file")] = f"{code} ({rule.name}) is ignored in {', '.join(globs)}"
    return [found[k] for k in sorted(found)]


# --------------------------------------------------------------------------------------------
# Check functions of the integrity rules (registered in policylint.engine.checks.CHECKS)
# --------------------------------------------------------------------------------------------

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
            detail = f" ({count} {noun} dated in the future, first sample {facts.get('first_sample')})"
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


#: Variables each check function adds to the message context.
CHECK_VARIABLES: dict[str, set[str]] = {
    "samples_after_now": {"measurement", "seconds", "detail"},
    "cold_start_floor": {"floor_seconds", "floor_reason"},
    "gpu_memory_contradicts_model": set(),
}
CHECKS: dict[str, Any] = {
    "samples_after_now": samples_after_now,
    "cold_start_floor": cold_start_floor,
    "gpu_memory_contradicts_model": gpu_memory_contradicts_model,
}
