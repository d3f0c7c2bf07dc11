"""The explicit registry of check functions, for conditions a schema cannot express.

A check function is pure: it receives one subject's facts and the rule's
parameters, and returns problems - each a dict of message variables, with an
optional ``_at`` (a fact name or a document path tuple) saying where the
finding belongs, and optional ``_figures`` (measured, allowed) when the
problem compares numbers (the baseline records them). The engine adds code,
severity and location. Rule files can
only *name* a function listed in :data:`CHECKS`; they never carry code. The
message variables a function returns are declared beside the name, in the
rule's ``provides:`` (read through :func:`policylint.catalogue.check_variables`);
the suite runs every check and holds what it returns to that declaration.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from policylint.engine.pool_merge_check import pools_split_apart
from policylint.engine.shortfall import request_room
from policylint.measure.integrity.checks import CHECKS as INTEGRITY_CHECKS
from policylint.measure.sources.provenance import pull_query_changed, pull_stale

Problem = dict[str, Any]

# Waits are compared with tolerances as the engine compares facts: 1e-9 of float noise, nothing more.
_EPS = 1e-9
CheckFunction = Callable[[Mapping[str, Any], Mapping[str, Any]], list[Problem]]


#: each band with the fact declaring it, named in full so that the facts the check reads can be
#: told from its source (:func:`policylint.engine.reads.check_reads`)
_DECLARED_BANDS = (("baseline", "declared_baseline"), ("daily", "declared_daily"), ("peak", "declared_peak"))


def declared_bands_drift(facts: Mapping[str, Any], params: Mapping[str, Any]) -> list[Problem]:
    """Declared bands that differ from the computed ones by more than ``tolerance`` (relative)."""
    problems = []
    limit = float(params["tolerance"])
    for band, declared_fact in _DECLARED_BANDS:
        declared = facts.get(declared_fact)
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
                    "_at": declared_fact,
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
        return [{"tight": tight, "total": total, "share": share, "_figures": (share, float(params["max_share"]))}]
    return []


def proposal_exceeds_shortfall(facts: Mapping[str, Any], params: Mapping[str, Any]) -> list[Problem]:
    """Per request: GPUs asked for the pool beyond (baseline GPUs - owned GPUs) x (1 + headroom).

    Requests are judged together per pool: what every proposal (and every request
    of this one) asks for the pool is added up before it is compared with the
    shortfall, so two proposals that each fit but together do not both fail,
    each naming the whole group.
    """
    problems = []
    headroom = float(params["headroom"])
    for req in facts.get("requests") or []:
        if req["baseline_gpus"] is None or req["reserved"] is None or req.get("owned") is None:
            continue
        shortfall, allowed = request_room(req["baseline_gpus"], req["owned"], headroom)
        group = list(req.get("pool_proposals") or [])
        total = max(int(req.get("pool_proposed_gpus") or 0), int(req["gpus"]))
        own = sum(int(g["gpus"]) for g in group if g["name"] == facts.get("name"))
        split = len(group) > 1 or own > req["gpus"]
        if total > allowed:
            note = ""
            if split:
                asks = ", ".join(f"{g['name']} {g['gpus']}" for g in group)
                note = f"; split proposals are judged together: the pool's proposals ask {total} GPUs in all ({asks})"
            problems.append(
                {
                    "pool": req["pool"],
                    "gpus": req["gpus"],
                    "reserved": req["reserved"],
                    "owned": req["owned"],
                    "owned_text": req.get("owned_text") or f"owned {req['owned']}",
                    "baseline_gpus": req["baseline_gpus"],
                    "baseline_pooling": req.get("baseline_pooling") or "sum of workload baselines unknown",
                    "shortfall": shortfall,
                    "allowed": allowed,
                    "pool_proposed_gpus": total,
                    "split_note": note,
                    # a request cannot ask for 0 (newcomer trial: "ask for at most 0 GPUs")
                    "advice": (f"ask for at most {allowed} GPUs for the pool across all its proposals" if allowed > 0
                               else "withdraw the request: the pool needs no GPUs bought"),
                    "_at": ("spec", "requests", req["index"], "gpus"),
                    "_figures": (total, allowed),
                }
            )
    return problems


def proposal_gpu_model_differs(facts: Mapping[str, Any], params: Mapping[str, Any]) -> list[Problem]:
    """Per request naming a ``gpuModel``: a model other than the pool's ``gpu.model`` (compared ignoring case), or,
    with ``--diff``, other than the model the pool ran at the base when the change swaps it (its figures' model)."""
    problems = []
    for req in facts.get("requests") or []:
        asked, held, then = req.get("gpu_model"), req.get("pool_gpu_model"), req.get("measured_gpu_model")
        if asked is None or held is None:
            continue
        note = ""
        if asked.casefold() == held.casefold():
            # the pool and the request moved to another model together: the figures are still the old model's
            if then is None or asked.casefold() == then.casefold():
                continue
            note, held = f" at the base revision ({held} in this change)", then
        problems.append(
            {
                "pool": req["pool"],
                "gpus": req["gpus"],
                "gpu_model": asked,
                "pool_gpu_model": held,
                "model_note": note,
                "_at": ("spec", "requests", req["index"], "gpuModel"),
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
                # the GPUs asked against the none that measured demand allows: a baseline entry
                # accepts this ask, not a larger one
                "_figures": (req["gpus"], 0),
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
        figures = (spread, float(params["max_factor"]))  # an unbounded spread records none (see evaluate)
        return [{"spread": "unbounded" if math.isinf(spread) else f"{spread:g}x", "_figures": figures}]
    return []


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _contains(text: str, phrase: str) -> bool:
    """``phrase`` occurs in ``text`` as whole words (case-insensitive; "n/a" matches "N/A")."""
    pattern = r"(?<![a-z0-9])" + re.escape(phrase.lower()) + r"(?![a-z0-9])"
    return re.search(pattern, text.lower()) is not None


def tolerance_evidence_uncheckable(facts: Mapping[str, Any], params: Mapping[str, Any]) -> list[Problem]:
    """Evidence that is a placeholder, a bare label, or free text nobody can check.

    A text is a placeholder when one of ``placeholders`` (comma-separated) occurs
    in it as whole words; it is a label when every word of it is a word of
    ``labels`` (so
    "urgent urgent urgent" and "High priority!" are labels, while a sentence that
    merely mentions a critical path is not). Every text of the evidence is
    judged: the free text, the note, the document path and the URL.
    """
    form = facts.get("tolerance_evidence_form")
    texts = facts.get("tolerance_evidence_texts") or []
    label_words = set(_words(str(params["labels"])))
    placeholders = [p.strip() for p in str(params["placeholders"]).split(",") if p.strip()]
    for key, text in texts:
        for phrase in placeholders:
            if _contains(text, str(phrase)):
                return [{"reason": f"its {key} is a placeholder ({phrase!r} in {text!r})"}]
        words = _words(text)
        if words and all(w in label_words for w in words):
            return [{"reason": f"its {key} is a priority label ({text!r}), not a measurement"}]
    if form == "text":
        return [{"reason": "it is free text; nobody can check where the number comes from"}]
    if form == "document":
        # the document itself is read (red team, 2026-12-06: an empty file, "TODO", the workload's own trace)
        document = next((text for key, text in texts if key == "document"), "the document")
        if facts.get("tolerance_evidence_document_data"):
            return [{"reason": f"its document {document} holds data (a measurement or an export), not a text that says where"
                               " the number comes from"}]
        count = facts.get("tolerance_evidence_document_words")
        least = int(params["min_document_words"])
        if isinstance(count, int) and count < least:
            return [{"reason": f"its document {document} holds {count} word{'s' if count != 1 else ''} of text"
                               f" (fewer than {least}): nothing in it says where the number comes from"}]
    return []


#: items a message lists before "and N more": a pool of thousands of workloads names a dozen of
#: them, not all (a finding's message is read in a terminal, a pull request annotation, a SARIF viewer)
LISTED_MOST = 12


def listed(items: Sequence[str], most: int = LISTED_MOST) -> str:
    """``items`` joined by commas, the first ``most`` of them and then "and N more" for the rest."""
    if len(items) <= most:
        return ", ".join(items)
    return f"{', '.join(items[:most])} and {len(items) - most} more"


def queue_depth_short(facts: Mapping[str, Any], params: Mapping[str, Any]) -> list[Problem]:
    """Workloads whose spikes put more work above their capacity share than the queue can hold."""
    depth = facts.get("queue_max_depth")
    if depth is None:
        return []
    short = sorted(
        (n["queue_depth_needed"], n["name"])
        for n in facts.get("queue_needs") or []
        if n["queue_depth_needed"] is not None and n["queue_depth_needed"] > depth
    )
    if not short:
        return []
    needed = short[-1][0]
    listed_ = listed([f"{name} {need}" for need, name in reversed(short)])
    return [{"depth_needed": needed, "short_workloads": listed_, "_at": "queue_depth_limit", "_figures": (needed, depth)}]


def format_share(share: float | None) -> str:
    """A share (0..1) as a percentage for messages, never rounded to 0% or 100% unless it is exactly that.

    One decimal from 1% up (``12.5%``), two significant digits below (``0.031%``),
    more decimals when one would print a share just under 1 as ``100.0%``.
    Every message that prints a share of work uses this function (rule templates
    through the ``{fact:share}`` format).
    """
    if share is None or isinstance(share, bool) or not isinstance(share, (int, float)) or math.isnan(share):
        return "unknown"
    pct = float(share) * 100
    if pct in (0.0, 100.0) or math.isinf(pct):
        return f"{pct:.0f}%" if math.isfinite(pct) else "unbounded"
    if abs(pct) < 1:
        return f"{pct:.2g}%"
    for decimals in range(1, 15):
        text = f"{pct:.{decimals}f}"
        if float(text) != 100.0:
            return f"{text}%"
    return f"{pct!r}%"


def _seconds(value: float) -> str:
    """A wait for messages: ``12.3 s``, ``unbounded`` for a queue that never empties."""
    return "unbounded" if math.isinf(value) else f"{value:.1f} s"


def queue_cannot_absorb(facts: Mapping[str, Any], params: Mapping[str, Any]) -> list[Problem]:
    """One problem per pool: the longest wait its queue can impose exceeds some workloads' tolerance.

    The wait is the pooled daily-band demand's longest wait at reserved + elastic
    GPUs, capped by ``queue.maxWaitSeconds`` when the pool declares one (work that
    would wait longer is turned away, not kept waiting).
    """
    wait = facts.get("daily_max_wait_seconds")
    if wait is None:
        return []
    limit = facts.get("queue_max_wait_seconds")
    imposed = float(wait) if limit is None else min(float(wait), float(limit))
    over = sorted(
        (float(t["tolerance_seconds"]), str(t["name"]))
        for t in facts.get("workload_tolerances") or []
        if t.get("tolerance_seconds") is not None and imposed > float(t["tolerance_seconds"]) + _EPS
    )
    if not over:
        return []
    note = ""
    if limit is not None and float(wait) > float(limit):
        share = facts.get("daily_rejected_share")
        turned = "" if share is None else f": past it the queue turns away {format_share(share)} of the pool's daily-band work"
        note = f"; that is its wait limit{turned} (without the limit the wait would reach {_seconds(float(wait))})"
    return [
        {
            "queue_wait": _seconds(imposed),
            "over_workloads": listed([f"{name} ({tol:g} s)" for tol, name in over]),
            "over_count": len(over),
            "queue_note": note,
            "_figures": (imposed, over[0][0]),
        }
    ]


def _cut_by_limit(facts: Mapping[str, Any]) -> tuple[float, list[tuple[float, str]]] | None:
    """(wait limit, workloads tolerating longer, loosest first), or None when no workload is cut."""
    limit = facts.get("queue_max_wait_seconds")
    if limit is None:
        return None
    cut = sorted(
        ((float(t["tolerance_seconds"]), str(t["name"])) for t in facts.get("workload_tolerances") or []
         if t.get("tolerance_seconds") is not None and float(t["tolerance_seconds"]) > float(limit)),
        key=lambda p: (-p[0], p[1]),
    )
    return (float(limit), cut) if cut else None


def _turned_away(facts: Mapping[str, Any], params: Mapping[str, Any]) -> bool:
    """Whether the pool's queue turns away more of its daily-band work than ``max_rejected_share``."""
    share = facts.get("daily_rejected_share")
    return share is not None and float(share) > float(params["max_rejected_share"])


def queue_wait_below_tolerance(facts: Mapping[str, Any], params: Mapping[str, Any]) -> list[Problem]:
    """PL207: the queue's wait limit is below a workload's tolerance, and it does turn work away."""
    found = _cut_by_limit(facts)
    if found is None or not _turned_away(facts, params):
        return []
    limit, cut = found
    share = float(facts["daily_rejected_share"])
    return [
        {
            "longest_tolerance": cut[0][0],
            "cut_workloads": listed([f"{name} ({tol:g} s)" for tol, name in cut]),
            "rejected_share": format_share(share),
            "_at": "queue_wait_limit",
            "_figures": (share, float(params["max_rejected_share"])),
        }
    ]


def queue_limit_tighter_than_tolerance(facts: Mapping[str, Any], params: Mapping[str, Any]) -> list[Problem]:
    """PL208: the queue's wait limit is below a workload's tolerance, but no work (beyond the accepted share) is turned away."""
    found = _cut_by_limit(facts)
    if found is None or _turned_away(facts, params):
        return []
    limit, cut = found
    share = facts.get("daily_rejected_share")
    if share is None:
        why = "the pool's demand is not measured, so whether it turns work away is unknown"
    else:
        why = f"at the measured demand it turns away {format_share(float(share))} of the pool's daily-band work"
    return [
        {
            "longest_tolerance": cut[0][0],
            "cut_workloads": listed([f"{name} ({tol:g} s)" for tol, name in cut]),
            "rejection_known": why,
            "_at": "queue_wait_limit",
            "_figures": (limit, cut[0][0]),
        }
    ]


def realtime_mixed(facts: Mapping[str, Any], params: Mapping[str, Any]) -> list[Problem]:
    """Real-time (tolerance <= ``realtime_seconds``) next to queue-tolerant (>= ``queue_tolerant_seconds``) work."""
    pairs = [(t["tolerance_seconds"], t["name"]) for t in facts.get("workload_tolerances") or []]
    realtime = sorted(p for p in pairs if p[0] <= float(params["realtime_seconds"]))
    patient = sorted((p for p in pairs if p[0] >= float(params["queue_tolerant_seconds"])), reverse=True)
    if not realtime or not patient:
        return []
    return [
        {
            "realtime_workloads": listed([f"{n} ({s:g} s)" for s, n in realtime]),
            "queue_tolerant_workloads": listed([f"{n} ({s:g} s)" for s, n in patient]),
        }
    ]


def _clock(seconds: float) -> str:
    """A duration for messages: seconds, minutes, hours or days."""
    if seconds < 120:
        return f"{seconds:g} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172_800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86_400:.1f} days"


def exclusions_shape_series(facts: Mapping[str, Any], params: Mapping[str, Any]) -> list[Problem]:
    """Declared exclusions that take too much of the window, recur daily, or remove the busiest samples."""
    reasons = []
    figures: tuple[float, float] | None = None
    declared = facts.get("excluded_share")
    outliers = facts.get("outlier_day_share") or 0.0
    share = None if declared is None else declared + outliers
    if share is not None and share > float(params["max_share"]):
        parts = f" ({declared:.1%} declared ranges, {outliers:.1%} outlier days)" if outliers else ""
        reasons.append(
            f"they remove {share:.1%} of the samples{parts} (at most {float(params['max_share']):.0%} may go)"
        )
        figures = (float(share), float(params["max_share"]))
    recurring = facts.get("exclusion_recurring") or 0
    if recurring > int(params["max_recurring"]):
        reasons.append(
            f"{recurring} of the {facts.get('exclusion_count')} ranges start at {facts.get('exclusion_recurring_at')} UTC:"
            " a daily pattern, not incidents"
        )
        figures = figures or (float(recurring), float(params["max_recurring"]))
    top = facts.get("excluded_top_share")
    if top is not None and top > float(params["max_top_share"]):
        reasons.append(f"they remove {top:.0%} of the busiest 5% of samples")
        figures = figures or (float(top), float(params["max_top_share"]))
    if not reasons:
        return []
    ratio = facts.get("excluded_demand_ratio")
    demand = "" if ratio is None else f"; the excluded samples average {ratio:.2f}x the demand of the kept ones"
    return [{"reasons": "; ".join(reasons), "demand_note": demand, "_figures": figures}]


def trace_coarser_than_step(facts: Mapping[str, Any], params: Mapping[str, Any]) -> list[Problem]:
    """The series only changes every k samples, and that real step is not finer than the cold start."""
    real, step = facts.get("resolution_step_seconds"), facts.get("step_seconds")
    cold = facts.get("cold_start_window_seconds")
    if real is None or step is None or cold is None or not real > step:
        return []
    limit = float(cold) * float(params["max_cold_start_share"])
    if real < limit:
        return []
    return [
        {
            "real_step": _clock(float(real)),
            "declared_step": _clock(float(step)),
            "cold_start": _clock(float(cold)),
            "_figures": (float(real), limit),
        }
    ]


def vram_exceeds_memory(facts: Mapping[str, Any], params: Mapping[str, Any]) -> list[Problem]:
    """Resident GiB of one replica beyond the memory of the GPUs it occupies (plus ``headroom``)."""
    resident, memory = facts.get("vram_resident_gib"), facts.get("pool_gpu_memory_gib")
    if resident is None or memory is None:
        return []
    gpus = max(1, int(facts.get("gpus_per_replica") or 1))
    physical = float(memory) * gpus
    if resident > physical * (1 + float(params["headroom"])) + 1e-9:
        return [{"physical_gib": physical, "gpus": gpus, "_figures": (float(resident), physical)}]
    return []


CHECKS: dict[str, CheckFunction] = {
    "declared_bands_drift": declared_bands_drift,
    "priority_inflation": priority_inflation,
    "proposal_exceeds_shortfall": proposal_exceeds_shortfall,
    "proposal_for_unmeasured_pool": proposal_for_unmeasured_pool,
    "proposal_gpu_model_differs": proposal_gpu_model_differs,
    "tolerance_spread": tolerance_spread,
    "tolerance_evidence_uncheckable": tolerance_evidence_uncheckable,
    "queue_depth_short": queue_depth_short,
    "queue_cannot_absorb": queue_cannot_absorb,
    "queue_wait_below_tolerance": queue_wait_below_tolerance,
    "queue_limit_tighter_than_tolerance": queue_limit_tighter_than_tolerance,
    "realtime_mixed": realtime_mixed,
    "pull_query_changed": pull_query_changed,
    "pull_stale": pull_stale,
    "exclusions_shape_series": exclusions_shape_series,
    "trace_coarser_than_step": trace_coarser_than_step,
    "vram_exceeds_memory": vram_exceeds_memory,
    "pools_split_apart": pools_split_apart,
}
CHECKS.update(INTEGRITY_CHECKS)  # the integrity stage's own (policylint.measure.integrity.checks)
