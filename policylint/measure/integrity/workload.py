"""One workload's integrity facts: every part's figures on its concurrency trace, and at ``now``.

:func:`trace_facts` runs when the measuring step reads the trace (its result is stored
and cached with the workload's facts); :func:`workload_facts` turns what was stored into
the typed facts of a workload view, adding the time facts at ``now``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from policylint.calc.prints import values_fingerprint
from policylint.calc.runs import judged_samples, run_figures, run_sketch
from policylint.measure.integrity.copies import fingerprint, shape_fingerprint
from policylint.measure.integrity.days import near_and_exact_repeats
from policylint.measure.integrity.resolution import (
    MIN_CHANGES_PER_DAY,
    block_length,
    change_positions,
    jump_block,
    roughness,
)
from policylint.measure.integrity.shaping import shaping
from policylint.measure.integrity.timing import time_facts
from policylint.measure.integrity.values import Fact
from policylint.measure.integrity_facts import IntegrityWorkloadFacts

if TYPE_CHECKING:
    import numpy as np

    from policylint.readers.series import Series


def trace_facts(
    times: np.ndarray,
    values: np.ndarray,
    valid: np.ndarray,
    step_seconds: float,
    spans: Sequence[tuple[float, float]] = (),
) -> dict[str, Fact]:
    """Every integrity fact of one concurrency series as read, with its declared exclusion spans.

    ``times``/``values``/``valid`` are the reader's grid (before any share or
    exclusion is applied); ``spans`` are the declared exclusions as
    (start, end) unix seconds. Facts that depend on ``now`` are not computed
    here (they are not cached with the series): see
    :func:`~policylint.measure.integrity.timing.time_facts`.
    """
    import numpy as np

    times = np.asarray(times, dtype=np.float64)
    values, valid = _as_judged(values, valid)
    good = values[valid]
    changes = change_positions(values, valid)
    pairs = int(np.count_nonzero(valid[1:] & valid[:-1]))
    days = pairs * float(step_seconds) / 86_400.0
    often = days > 0 and changes.size / days >= MIN_CHANGES_PER_DAY
    block = block_length(changes, pairs) if often else 1
    jump, jump_share = jump_block(values, valid) if often and block == 1 else (1, None)
    block = max(block, jump)
    near, near_judged, repeated = near_and_exact_repeats(times, values, valid, step_seconds)
    judged = near_judged
    sketch, run_share, runs_judged = run_figures(values, valid)  # the runs hashed once for both
    out: dict[str, Fact] = {
        "series_fingerprint": fingerprint(times, values, valid, step_seconds),
        "values_fingerprint": values_fingerprint(values, valid),
        "shape_fingerprint": shape_fingerprint(values, valid, step_seconds),
        "repeated_days": repeated,
        "repeated_day_share": (repeated / judged) if repeated is not None and judged else (0.0 if repeated is not None else None),
        "first_time": float(times[valid][0]) if good.size else None,
        "last_time": float(times[valid][-1]) if good.size else None,
        "step_seconds": float(step_seconds),
        "resolution_step_seconds": float(step_seconds) * block,
        "resolution_block_samples": block,
        "resolution_jump_share": jump_share,
        "near_repeated_days": near,
        "near_repeated_day_share": (near / near_judged) if near is not None and near_judged else (0.0 if near is not None else None),
        "edited_repeated_days": (near - repeated) if near is not None and repeated is not None and near > repeated else (0 if near is not None else None),
        "edited_repeated_day_share": (
            ((near - repeated) / near_judged if near > repeated else 0.0) if near is not None and repeated is not None and near_judged else (0.0 if near is not None else None)
        ),
        "run_sketch": sketch,
        "repeated_run_share": run_share,
        "repeated_runs_judged": runs_judged,
        "value_changes": int(changes.size),
        "roughness": roughness(values, valid),
        "negative_samples": int(np.count_nonzero(good < 0)),
        "fractional_share": float(np.count_nonzero(good != np.floor(good))) / good.size if good.size else None,
    }
    out.update(shaping(times, values, valid, spans))
    return out


def open_job_facts(series: Series) -> dict[str, Any]:
    """Plausibility of a trace rebuilt from a request log or job list: its rows with no end against the finished ones.

    A row with a start and no end runs until the end of the trace (the reader's rule for
    work still running at the export). Every fact is None for a sampled trace.
    """
    if series.interval_rows is None:
        return dict.fromkeys(("open_jobs", "finished_jobs", "open_job_longest_days", "finished_job_longest_days",
                              "open_job_ratio", "trace_job_gpus_p90"))
    opened, closed, longest, finished = series.interval_rows
    return {
        "trace_job_gpus_p90": series.job_weight_p90,
        "open_jobs": opened,
        "finished_jobs": closed,
        "open_job_longest_days": longest / 86_400.0 if longest is not None else None,
        "finished_job_longest_days": finished / 86_400.0 if finished is not None else None,
        "open_job_ratio": longest / finished if longest is not None and finished else None,
    }


def _as_judged(values: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(values, valid) as every integrity figure reads them: :func:`policylint.calc.runs.judged_samples`."""
    return judged_samples(values, valid)


def copy_prints(series: Series) -> dict[str, Fact]:
    """The facts of a trace that recognise its copies, as :func:`trace_facts` gives them, and nothing else.

    ``run_sketch``, ``values_fingerprint`` and ``value_changes``: what a narrowed run
    compares across the repository to find a near copy's partner
    (:mod:`policylint.engine.copy_reach`) without measuring the rest of each trace.
    """
    values, valid = _as_judged(series.values, series.valid)
    return {
        "run_sketch": identity_sketch(series, values, valid),
        "values_fingerprint": values_fingerprint(values, valid),
        "value_changes": int(change_positions(values, valid).size),
        "part_sketches": part_sketches(series),
    }


def identity_sketch(series: Series, values: np.ndarray, valid: np.ndarray) -> list[int] | None:
    """The run sketch that identifies a trace (PL972): of its samples as read, whatever grid they were put on.

    ``values`` and ``valid`` are the series as judged (:func:`_as_judged`). When the grid is
    the samples themselves the two sketches are one; when it is not (another step, gaps), the
    samples' own (:attr:`Series.samples_sketch`): a copy of a trace with a few samples edited,
    read at 290 s on its 300 s samples, repeats one sample in 29 on its grid and so shared no
    gridded run with the original (second red team, 2026-12-07).
    """
    if series.regridded:
        return series.samples_sketch
    return run_sketch(values, valid)


def part_sketches(series: Series) -> list[list[int] | None] | None:
    """The run sketch of each column a trace sums (:attr:`Series.part_sketches`); None for one column."""
    return [list(s) if s is not None else None for s in series.part_sketches] or None


def series_facts(series: Series, spans: Sequence[tuple[float, float]] = ()) -> dict[str, Fact]:
    """Every integrity fact of a concurrency series as read: :func:`trace_facts` and :func:`open_job_facts`.

    The one place ``check`` (the measuring step) and ``bands`` take them from.
    """
    facts = trace_facts(series.times, series.values, series.valid, float(series.step_seconds), spans)
    # the run sketch that identifies the trace: the samples' own when the grid is not them (none sketched again)
    identity = {"run_sketch": identity_sketch(series, series.values, series.valid)} if series.regridded else {}
    return {
        **facts,
        **identity,
        **open_job_facts(series),
        "part_fingerprints": list(series.part_prints) or None,
        "part_sketches": part_sketches(series),
        "part_shapes": list(series.part_shapes) or None,
        "part_labels": list(series.part_labels) or None,
        "samples_fingerprint": series.samples_print,
    }


def workload_facts(stored: dict[str, Any] | None, now_seconds: float, outlier_days: int | None) -> IntegrityWorkloadFacts:
    """The integrity facts of a workload view: the stored trace facts plus the time facts at ``now``."""
    stored = stored or {}
    out: dict[str, Any] = {name: stored.get(name) for name in IntegrityWorkloadFacts.routes()}
    out.update(time_facts(stored, now_seconds) if stored else {})
    out["near_copy_of"] = out["near_copy_similarity"] = out["near_copy_trace"] = out["near_copy_pool"] = None
    out["near_copy_part"] = None
    out["outlier_days_removed"] = outlier_days
    first, last, step = stored.get("first_time"), stored.get("last_time"), stored.get("step_seconds")
    if outlier_days is not None and isinstance(first, (int, float)) and isinstance(last, (int, float)):
        span = (float(last) - float(first) + float(step or 0.0)) / 86_400.0
        out["outlier_day_share"] = min(1.0, outlier_days / span) if span > 0 else None
    return IntegrityWorkloadFacts(**out)
