"""The one analysis path: bands, spikes and queue for 2-D rows, and :func:`summarise` over many series.

:func:`core_rows` is what both :func:`summarise` and ``analyse`` (one series,
:mod:`policylint.analysis`) run, so every figure they share is computed by the
same calls in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from policylint.calc.queue import QueueStats, queue_backlog, stats_from_backlog
from policylint.calc.rolling import rolling_min_rows
from policylint.calc.scratch import Scratch, row_batches, shared_scratch
from policylint.calc.select import percentile
from policylint.calc.settings import CEIL_EPS, BandSettings, window_samples
from policylint.calc.spikes import Spikes, find_spikes
from policylint.errors import MeasurementError


@dataclass(frozen=True, eq=False)
class BandTable:
    """Bands and headline figures for many series at once, one entry per row."""

    baseline: np.ndarray
    daily: np.ndarray
    peak: np.ndarray
    spike_count: np.ndarray
    noise_count: np.ndarray
    capacity: np.ndarray
    max_wait: np.ndarray


@dataclass(frozen=True, eq=False)
class CoreRows:
    """What the shared core computes for a batch of rows (one entry per row)."""

    baseline: np.ndarray
    daily: np.ndarray
    peak: np.ndarray
    spikes: Spikes
    capacity: np.ndarray
    #: max backlog at ``capacity`` over all samples (excluded ones hold the backlog)
    backlog_max: np.ndarray
    #: number of valid samples of the sustained series (NaN bands where 0)
    sustained_count: np.ndarray
    #: max and percentile wait at ``capacity`` of the one row, when asked for (``analyse``)
    #: and the capacity is positive
    queue: QueueStats | None = None
    #: max of the sustained series, only when asked for
    sustained_max: np.ndarray | None = None
    #: whether any sample of the batch is NaN (excluded or missing)
    has_nan: bool = True


def core_rows(
    x: np.ndarray,
    width: int,
    step_seconds: float,
    settings: BandSettings,
    capacity: np.ndarray | None,
    scratch: Scratch,
    *,
    detail: bool = False,
) -> CoreRows:
    """Bands, spikes and the queue at capacity for the 2-D rows ``x``: the one analysis path.

    Both :func:`summarise` (per cache-sized batch) and :func:`analyse` (one row)
    run exactly this, so every figure they share is computed by the same calls in
    the same order. ``capacity`` is one value per row, default ceil(baseline).
    ``detail`` also takes the waits of the one row from its backlog and the
    sustained maximum (``analyse``). No array it returns is a view of ``scratch``.
    """
    rows, n = x.shape
    has_nan = bool(np.isnan(x, out=scratch.get("isnan", x.shape, np.bool_)).any())
    s = scratch.get("sustained", (rows, n - width + 1))
    rolling_min_rows(x, width, s, scratch)
    if has_nan:
        s_count = s.shape[1] - np.count_nonzero(np.isnan(s), axis=1)
    else:  # a window of valid samples is valid: no NaN in, none out
        s_count = np.full(rows, s.shape[1], dtype=np.int64)
    # fmax skips NaN and gives NaN (without a warning) for a row with no valid window
    s_max = np.fmax.reduce(s, axis=1) if detail else None
    base, daily = percentile(
        s, [settings.baseline_percentile, settings.daily_percentile], overwrite_input=True, _has_nan=has_nan,
        _counts=s_count,
    )
    # fmax skips NaN like nanmax, and gives NaN without a warning for a row with no valid sample
    peak = np.fmax.reduce(x, axis=1) if has_nan else x.max(axis=1)
    daily = np.minimum(daily, peak)
    base = np.minimum(base, daily)
    found = find_spikes(x, base, step_seconds, settings.cold_start_seconds, _scratch=scratch)
    cap = np.ceil(base - CEIL_EPS) if capacity is None else capacity
    # a NaN capacity (a row without bands) behaves like NaN samples: the backlog zeroes them
    nan_in = has_nan or bool(np.isnan(cap).any())
    backlog = queue_backlog(x, cap, step_seconds, _scratch=scratch, _has_nan=nan_in)
    queue = None
    if detail and cap[0] > 0:
        queue = stats_from_backlog(x[0], backlog[0], float(cap[0]), settings.queue_percentile, has_nan=has_nan)
    return CoreRows(
        baseline=base,
        daily=daily,
        peak=peak,
        spikes=found,
        capacity=cap,
        backlog_max=backlog.max(axis=1),
        sustained_count=s_count,
        queue=queue,
        sustained_max=s_max,
        has_nan=has_nan,
    )


def summarise(
    values: np.ndarray,
    step_seconds: float,
    settings: BandSettings | None = None,
    *,
    capacity: np.ndarray | float | None = None,
) -> BandTable:
    """Bands, spike counts and max queue wait for every row of a 2-D array.

    Rows are processed in cache-sized batches so no full-size temporary is ever
    made; per row this runs the same core as :func:`analyse` (without its
    cleaning steps). The queue is evaluated at ``capacity`` (one value or one per
    row; default ceil(baseline)).
    """
    settings = settings or BandSettings()
    a = np.atleast_2d(np.asarray(values, dtype=np.float64))
    rows, n = a.shape
    w = window_samples(settings.cold_start_seconds, step_seconds)
    if w > n and rows:
        raise MeasurementError(f"series shorter than the {w}-sample cold-start window")
    out = {k: np.full(rows, np.nan) for k in ("baseline", "daily", "peak", "capacity", "max_wait")}
    spikes = np.zeros(rows, dtype=np.int64)
    noise = np.zeros(rows, dtype=np.int64)
    caps = None if capacity is None else np.broadcast_to(np.asarray(capacity, dtype=np.float64), (rows,))
    scratch = shared_scratch()
    for batch in row_batches(rows, n):
        x = a[batch]
        core = core_rows(x, w, step_seconds, settings, None if caps is None else caps[batch], scratch)
        found = core.spikes
        spikes[batch] = np.bincount(found.row, minlength=x.shape[0])
        noise[batch] = np.bincount(found.row[found.noise], minlength=x.shape[0])
        cap = core.capacity
        with np.errstate(divide="ignore", invalid="ignore"):
            worst = core.backlog_max / cap
        worst = np.where((cap == 0) & (core.backlog_max == 0), 0.0, worst)
        for key, value in (("baseline", core.baseline), ("daily", core.daily), ("peak", core.peak),
                           ("capacity", cap), ("max_wait", worst)):
            out[key][batch] = value
    return BandTable(spike_count=spikes, noise_count=noise, **out)
