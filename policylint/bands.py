"""The band calculator: concurrency bands, spikes, fluid queue and friends.

Everything here is numpy over whole arrays. Functions that pay off on many
workloads at once (rolling minimum, percentiles, spikes, queue) accept 2-D input
shaped ``(series, samples)``; none loops over samples in Python. Results are plain
frozen dataclasses; this module knows nothing about rules, files or terminals.
The definitions are written out in ``docs/bands.md``.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from policylint.errors import MeasurementError, PolicylintError
from policylint.traces import Exclusion, Gap, Series, apply_exclusions, format_time

__all__ = [
    "BandReport",
    "BandSettings",
    "BandTable",
    "BoundedQueue",
    "DurationStats",
    "ErlangResult",
    "QueueStats",
    "Spike",
    "SpikeTable",
    "Spikes",
    "analyse",
    "capacity_for_tolerance",
    "duration_stats",
    "erlang_b",
    "erlang_c",
    "erlang_c_wait",
    "bounded_queue",
    "find_spikes",
    "FLAT_DAY_TESTS",
    "MIN_WINDOW_DAYS",
    "flat_day_test",
    "flat_days",
    "gpu_counts",
    "gpus_for",
    "outlier_days",
    "percentile",
    "queue_backlog",
    "queue_stats",
    "residency_ratio",
    "rolling_min",
    "summarise",
    "sustained",
    "window_days",
    "window_samples",
]

# Float noise guard for ceilings: 3.0000000000000004 GPUs is 3 GPUs.
_CEIL_EPS = 1e-9


#: The least days of valid samples trustworthy bands need (FRAMEWORK: window). The
#: rules' ``min_window_days`` options default to it; commands take it from here.
MIN_WINDOW_DAYS = 90.0

#: Values of :attr:`BandSettings.flat_days`.
FLAT_DAY_TESTS = ("auto", "constant", "empty", "off")


def flat_day_test(series: Series, requested: str = "auto") -> str:
    """Which days of ``series`` count as flat: the one definition every command uses.

    A sampled series (a metric export) that holds one value all day is padding or
    an exporter repeating its last reading: ``constant``. Concurrency rebuilt from
    a request log or job list (:attr:`Series.from_intervals`) is constant all day
    whenever the same long jobs run, which is demand: only a day with nothing
    running at all is not a measurement, ``empty``. ``requested`` other than
    ``auto`` overrides the choice.
    """
    if requested != "auto":
        return requested
    return "empty" if series.from_intervals else "constant"


def window_days(valid_samples: int, step_seconds: float) -> float:
    """Days of valid samples: the measurement window of a series (or a pool's grid), unrounded."""
    return valid_samples * step_seconds / 86_400.0


@dataclass(frozen=True)
class BandSettings:
    """Every number the calculator uses, with the framework's defaults."""

    cold_start_seconds: float = 300.0
    min_window_days: float = MIN_WINDOW_DAYS
    baseline_percentile: float = 95.0
    daily_percentile: float = 99.0
    max_gap_steps: int = 5
    queue_statistic: str = "max"  # "max" or "percentile"
    queue_percentile: float = 99.0
    outlier_mad_k: float | None = None  # flag and drop outlier days when set
    #: which days are flat (not measurements): "auto" (the series decides, see
    #: :func:`flat_day_test`: every command leaves this alone), "constant" (any value
    #: all day), "empty" (zero all day), or "off"
    flat_days: str = "auto"

    def __post_init__(self) -> None:
        if not (self.cold_start_seconds > 0 and math.isfinite(self.cold_start_seconds)):
            raise PolicylintError(f"cold start must be positive seconds, got {self.cold_start_seconds}")
        if self.min_window_days < 0:
            raise PolicylintError(f"minimum window must be >= 0 days, got {self.min_window_days}")
        for label, p in (
            ("baseline percentile", self.baseline_percentile),
            ("daily percentile", self.daily_percentile),
            ("queue percentile", self.queue_percentile),
        ):
            if not 0 < p <= 100:
                raise PolicylintError(f"{label} must be in (0, 100], got {p}")
        if self.baseline_percentile > self.daily_percentile:
            raise PolicylintError("baseline percentile must not exceed the daily percentile")
        if self.max_gap_steps < 1:
            raise PolicylintError(f"gap limit must be at least 1 step, got {self.max_gap_steps}")
        if self.queue_statistic not in ("max", "percentile"):
            raise PolicylintError(
                f"queue statistic must be 'max' or 'percentile', got {self.queue_statistic!r}"
            )
        if self.flat_days not in FLAT_DAY_TESTS:
            raise PolicylintError(
                f"flat-day test must be 'auto', 'constant', 'empty' or 'off', got {self.flat_days!r}"
            )
        if self.outlier_mad_k is not None and self.outlier_mad_k <= 0:
            raise PolicylintError(f"outlier MAD factor must be positive, got {self.outlier_mad_k}")


# --------------------------------------------------------------------------- rolling minimum


def window_samples(cold_start_seconds: float, step_seconds: float) -> int:
    """W = ceil(cold start / step), at least one sample."""
    return max(1, math.ceil(cold_start_seconds / step_seconds - _CEIL_EPS))


# Work on about this many bytes of samples at a time: whole 2-D chunks do not fit
# in cache, and a pass over cached rows is several times cheaper than over RAM.
_BATCH_BYTES = 1 << 20

# Up to this window (or n / 1000 samples) the block scans are done as W strided
# numpy operations; above it one ufunc accumulate per direction is cheaper.
_SCAN_LOOP_MAX = 64


def _row_batches(rows: int, samples: int) -> list[slice]:
    """Row slices of about ``_BATCH_BYTES`` each (at least one row)."""
    per = max(1, _BATCH_BYTES // max(1, samples * 8))
    return [slice(r, min(rows, r + per)) for r in range(0, rows, per)]


class _Scratch:
    """Work buffers reused from one row batch to the next, and from one call to the next.

    Allocating a fresh megabyte for a temporary costs more than the arithmetic
    done in it: the allocator hands large blocks back to the operating system on
    release, and the next block is page-faulted and zero-filled again (about
    0.25 ms per megabyte here, as much as five numpy passes over it). Reusing the
    same few buffers keeps them mapped and hot in cache. Buffers larger than
    ``_KEEP_BYTES`` are not kept, so a one-off huge series does not pin memory.
    """

    def __init__(self) -> None:
        self._buffers: dict[str, np.ndarray] = {}

    def get(self, name: str, shape: tuple[int, ...], dtype: Any = np.float64) -> np.ndarray:
        size = math.prod(shape)
        buf = self._buffers.get(name)
        if buf is None or buf.size < size or buf.dtype != np.dtype(dtype):
            buf = np.empty(size, dtype=dtype)
            if buf.nbytes <= _KEEP_BYTES:
                self._buffers[name] = buf
        return buf[:size].reshape(shape)


# Largest work buffer kept between calls (a 92-day one-minute series is 1 MB).
_KEEP_BYTES = 16 << 20

_LOCAL = threading.local()


def _shared_scratch() -> _Scratch:
    """This thread's work buffers, kept between calls.

    Callers must not return views of them: every result that leaves a public
    function is a fresh array (the buffers are overwritten by the next call).
    """
    scratch: _Scratch | None = getattr(_LOCAL, "scratch", None)
    if scratch is None:
        scratch = _Scratch()
        _LOCAL.scratch = scratch
    return scratch


def _block_scans(
    x: np.ndarray, width: int, blocks: int, scratch: _Scratch | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Running minima inside each block of ``width``: forward and backward.

    ``x`` is 2-D; only its first ``blocks * width`` columns are used.
    """
    rows = x.shape[0]
    full = blocks * width
    xs = x[:, :full].reshape(rows, blocks, width)
    if width <= max(_SCAN_LOOP_MAX, x.shape[1] // 1000):
        # W operations over n / W elements each: total work stays n per direction.
        work = scratch or _Scratch()
        fwd = work.get("fwd", (rows, blocks, width))
        bwd = work.get("bwd", (rows, blocks, width))
        fwd[..., 0] = xs[..., 0]
        for k in range(1, width):
            np.minimum(fwd[..., k - 1], xs[..., k], out=fwd[..., k])
        bwd[..., width - 1] = xs[..., width - 1]
        for k in range(width - 2, -1, -1):
            np.minimum(bwd[..., k + 1], xs[..., k], out=bwd[..., k])
    else:
        fwd = np.minimum.accumulate(xs, axis=2)
        bwd = np.minimum.accumulate(xs[..., ::-1], axis=2)[..., ::-1]
    return fwd.reshape(rows, full), bwd.reshape(rows, full)


def rolling_min(values: np.ndarray, width: int) -> np.ndarray:
    """Trailing minimum over ``width`` samples along the last axis.

    Output element ``i`` is ``min(values[..., i : i + width])``, so the first
    ``width - 1`` samples have no full window and are dropped. NaN anywhere in a
    window makes that window NaN (a window touching an excluded sample is not a
    valid sample).

    Uses the van Herk / Gil-Werman block scheme: split into blocks of ``width``,
    take running minima forward and backward inside each block; any window is
    the minimum of one backward value (rest of its first block) and one forward
    value (start of the next block). Work per sample does not depend on the
    window width.
    """
    a = np.asarray(values, dtype=np.float64)
    if width < 1:
        raise ValueError("width must be at least 1")
    n = a.shape[-1]
    lead = a.shape[:-1]
    if width > n:
        return np.empty(lead + (0,), dtype=np.float64)
    if width == 1:
        return a.copy()
    flat = np.ascontiguousarray(a.reshape(-1, n))
    out = np.empty((flat.shape[0], n - width + 1))
    scratch = _shared_scratch()
    for rows in _row_batches(flat.shape[0], n):
        _rolling_min_rows(flat[rows], width, out[rows], scratch)
    return out.reshape(lead + (n - width + 1,))


def _rolling_min_rows(x: np.ndarray, width: int, out: np.ndarray, scratch: _Scratch) -> None:
    """Rolling minimum of the 2-D rows ``x`` into ``out`` (``width`` <= columns)."""
    n = x.shape[1]
    out_len = n - width + 1
    if width == 1:
        out[...] = x
        return
    if width <= _DOUBLING_MAX and not np.signbit(x, out=scratch.get("sign", x.shape, np.bool_)).any():
        _rolling_min_doubling(x, width, out, scratch)
        return
    blocks = n // width
    full = blocks * width
    inside = full - width + 1  # windows ending inside the full blocks
    fwd, bwd = _block_scans(x, width, blocks, scratch)
    np.minimum(bwd[:, :inside], fwd[:, width - 1 : full], out=out[:, :inside])
    if out_len > inside:
        # The last few windows end in the partial tail block.
        tail = np.minimum.accumulate(x[:, full:], axis=1)
        starts = np.arange(inside, out_len)
        np.minimum(bwd[:, starts], tail[:, starts + width - 1 - full], out=out[:, inside:])


# Up to this window the rolling minimum is built by doubling (log2(W) + 1 contiguous
# passes); the block scheme's strided scans cost more below it.
_DOUBLING_MAX = 64


def _rolling_min_doubling(x: np.ndarray, width: int, out: np.ndarray, scratch: _Scratch) -> None:
    """Rolling minimum by doubling: minima over 1, 2, 4 ... p <= W samples, then two of them.

    The minimum over W samples is the minimum of the two (overlapping) minima over
    p samples starting at i and at i + W - p. Each step is one contiguous pass.
    A minimum is one of its inputs whatever the grouping, except that -0.0 and
    +0.0 compare equal and either may come out; the caller takes this path only
    when no sample has its sign bit set, so the bits equal the block scheme's.
    """
    rows, n = x.shape
    p = 1 << (width.bit_length() - 1)  # largest power of two <= width
    cur = x
    span = 1
    turn = 0
    while span < p:
        length = n - 2 * span + 1  # windows of 2 * span samples
        last = 2 * span == p and p == width
        dest = out if last else scratch.get(f"double{turn}", (rows, n))[:, :length]
        np.minimum(cur[:, :length], cur[:, span : span + length], out=dest)
        cur = dest
        span *= 2
        turn ^= 1
    if p < width:
        length = n - width + 1
        np.minimum(cur[:, :length], cur[:, width - p : width - p + length], out=out)


def sustained(values: np.ndarray, cold_start_seconds: float, step_seconds: float) -> np.ndarray:
    """The sustained series s: trailing minimum over the cold-start window."""
    return rolling_min(values, window_samples(cold_start_seconds, step_seconds))


# --------------------------------------------------------------------------- percentiles


def _rank1(p: float, n: int) -> int:
    """:func:`_rank` for one count: the same float arithmetic in Python, without numpy's per-call cost."""
    return min(max(math.ceil(n * p / 100.0 - _CEIL_EPS) - 1, 0), max(n - 1, 0))


def _rank(p: float, n: np.ndarray | int) -> np.ndarray:
    """0-based index of the inverted-CDF p-th percentile among n sorted values.

    Smallest k with (k + 1) / n >= p / 100. Done in integers where possible so
    that 95% of 100 is exactly rank 95, not 96 from float noise.
    """
    n_arr = np.asarray(n, dtype=np.int64)
    # n * p is exact for whole-number percents, so the division rounds correctly.
    k = np.ceil(n_arr * p / 100.0 - _CEIL_EPS).astype(np.int64) - 1
    ranks: np.ndarray = np.clip(k, 0, np.maximum(n_arr - 1, 0))
    return ranks


# Rows at least this long take the sampled-threshold selection of ``_select_rows``.
_SELECT_MIN = 8192
# The threshold sits this far (as a share of the valid samples) below the lowest
# rank asked for: some 6 standard errors of a 4,096-value sample's quantile.
_SELECT_MARGIN = 0.02


def _select_rows(
    flat: np.ndarray, ps: Sequence[float], out: np.ndarray, counts: np.ndarray | None, has_nan: bool | None
) -> bool:
    """Inverted-CDF percentiles of each long row by selecting above a sampled threshold.

    A full selection (``np.partition``) over a whole row costs as much as a
    dozen passes over it. The percentiles asked for are mostly high ones (p95,
    p99), so a threshold a little below the lowest rank is estimated from an evenly spaced
    sample of about 4,096 values; one comparison then keeps the values at or
    above it (a few percent of the row), and the ranks are selected among those.
    Every valid value below the threshold sorts before every kept one, so rank
    ``r`` of the row is rank ``r - below`` of the kept values: the very same
    value, not an estimate. The threshold is positive, so no zero of either
    sign is ever among the kept values and the bits of the answer are those of
    the full selection. Returns False (and the caller selects the usual way)
    when the threshold turns out too high or is not positive.
    """
    rows, n = flat.shape
    for row in range(rows):
        x = flat[row]
        count = int(counts[row]) if counts is not None else (n if has_nan is False else
                                                             n - int(np.count_nonzero(np.isnan(x))))
        if not count:
            continue
        ranks = [_rank1(p, count) for p in ps]
        got = _select_high(x, count, ranks, has_nan)
        if got is None:
            return False
        out[:, row] = got
    return True


def _select_high(
    x: np.ndarray, count: int, ranks: list[int], has_nan: bool | None, *, positives: int | None = None
) -> np.ndarray | None:
    """The values at 0-based ``ranks`` among the ``count`` valid values of the 1-D ``x``.

    See ``_select_rows``: exact, or None when the sampled threshold is too high
    or not positive. With ``positives`` (how many values are > 0) the threshold
    is sampled among the positive values only: waits are mostly zero, and a
    selection among many equal values is slow.
    """
    stride = max(1, x.size // 4096)
    sample = x[::stride]
    if positives is not None:
        sample = sample[sample > 0]
        share = (min(ranks) - (count - positives)) / positives
    elif has_nan is not False:
        sample = sample[~np.isnan(sample)]
        share = min(ranks) / count
    else:
        sample = sample.copy()  # partitioned in place below; x itself stays untouched
        share = min(ranks) / count
    if sample.size < 64:
        return None
    k = min(sample.size - 1, max(0, int((share - _SELECT_MARGIN) * sample.size)))
    sample.partition(k)
    threshold = float(sample[k])
    if not threshold > 0:
        return None
    keep = np.greater_equal(x, threshold, out=_shared_scratch().get("select", x.shape, np.bool_))
    below = count - int(np.count_nonzero(keep))  # NaN is never kept, nor counted in ``count``
    if below > min(ranks):
        return None
    kept = x[keep]
    at = [r - below for r in ranks]
    kept.partition(sorted(set(at)))
    picked: np.ndarray = kept[at]
    return picked


def percentile(
    values: np.ndarray,
    ps: Sequence[float],
    *,
    overwrite_input: bool = False,
    _has_nan: bool | None = None,
    _counts: np.ndarray | None = None,
) -> np.ndarray:
    """Inverted-CDF percentiles along the last axis, ignoring NaN.

    Returns shape ``(len(ps),) + values.shape[:-1]``; rows with no valid value
    give NaN. Uses ``np.partition`` (linear time) rather than a full sort, on
    long rows only over the values above a sampled threshold (see
    ``_select_rows``); with ``overwrite_input`` a full selection partitions
    ``values`` in place instead of a copy.
    """
    a = np.asarray(values, dtype=np.float64)
    lead = a.shape[:-1]
    flat = a.reshape(-1, a.shape[-1]) if a.ndim > 1 else a.reshape(1, -1)
    out = np.full((len(ps), flat.shape[0]), np.nan)
    if flat.shape[1] == 0:
        return out.reshape((len(ps),) + lead)
    if flat.shape[1] >= _SELECT_MIN and _select_rows(flat, ps, out, _counts, _has_nan):
        return out.reshape((len(ps),) + lead)
    if _has_nan is False:
        # the caller knows there is no NaN: skip the mask and the count (two passes)
        nan = np.zeros((1, 1), dtype=np.bool_)
        counts = np.full(flat.shape[0], flat.shape[1], dtype=np.int64)
    else:
        nan = np.isnan(flat)
        counts = flat.shape[1] - nan.sum(axis=1)
    if (counts == counts[0]).all():
        # Same number of valid samples in every row: one partition for all rows.
        n = int(counts[0])
        if n:
            ranks = [_rank1(p, n) for p in ps]
            if nan.any():
                part = np.partition(np.where(nan, np.inf, flat), sorted(set(ranks)), axis=1)
            elif overwrite_input and flat.flags.writeable:
                flat.partition(sorted(set(ranks)), axis=1)
                part = flat
            else:
                part = np.partition(flat, sorted(set(ranks)), axis=1)
            for i, r in enumerate(ranks):
                out[i] = part[:, r]
    else:
        # Rows differ in valid count: per-row partition (a loop over series, not samples).
        for row in range(flat.shape[0]):
            n = int(counts[row])
            if not n:
                continue
            valid = flat[row][~nan[row]]
            ranks = [_rank1(p, n) for p in ps]
            part = np.partition(valid, sorted(set(ranks)))
            out[:, row] = part[ranks]
    return out.reshape((len(ps),) + lead)


# --------------------------------------------------------------------------- spikes


@dataclass(frozen=True)
class Spike:
    """One maximal run above the baseline band.

    ``start`` is unix seconds; ``height`` is max(c) - B; ``volume`` the excess
    work sum(c - B) x dt; ``noise`` means narrower than the cold-start window.
    """

    start: float
    width_seconds: float
    height: float
    volume: float
    noise: bool


@dataclass(frozen=True, eq=False)
class SpikeTable:
    """The spikes of one analysed series as parallel arrays, one element per spike.

    A spike-heavy series has thousands of spikes and a reporter shows a handful,
    so the spikes stay columns (start in unix seconds, width in seconds, height,
    volume, noise flag) and a :class:`Spike` object is only built for the ones
    read by index or iteration. Two tables are equal when every column is.
    """

    start: np.ndarray
    width_seconds: np.ndarray
    height: np.ndarray
    volume: np.ndarray
    noise: np.ndarray

    def __len__(self) -> int:
        return int(self.start.size)

    def __getitem__(self, i: int) -> Spike:
        return Spike(
            float(self.start[i]),
            float(self.width_seconds[i]),
            float(self.height[i]),
            float(self.volume[i]),
            bool(self.noise[i]),
        )

    def __iter__(self) -> Iterator[Spike]:
        # tolist() converts a whole column at once: cheaper than per-element float()
        columns = (self.start, self.width_seconds, self.height, self.volume, self.noise)
        return map(Spike, *(c.tolist() for c in columns))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SpikeTable):
            return NotImplemented
        return all(
            np.array_equal(getattr(self, name), getattr(other, name))
            for name in ("start", "width_seconds", "height", "volume", "noise")
        )

    __hash__ = None  # type: ignore[assignment]  # mutable arrays: equal tables need not hash alike

    def widest(self, count: int) -> list[Spike]:
        """The ``count`` widest spikes: widest first, then most volume, then earliest."""
        if count <= 0 or not len(self):
            return []
        # lexsort's last key is the primary one; ties fall through to start time.
        order = np.lexsort((self.start, -self.volume, -self.width_seconds))
        return [self[int(i)] for i in order[:count]]

    def to_list(self) -> list[dict[str, Any]]:
        """The JSON form of every spike, in time order (see :meth:`BandReport.to_dict`)."""
        return [
            {"start": _iso(t), "width_seconds": w, "height": h, "volume": v, "noise": z}
            for t, w, h, v, z in zip(
                self.start.tolist(),
                self.width_seconds.tolist(),
                self.height.tolist(),
                self.volume.tolist(),
                self.noise.tolist(),
                strict=True,
            )
        ]


@dataclass(frozen=True, eq=False)
class Spikes:
    """Spikes of one or many series as parallel arrays (row = series index)."""

    row: np.ndarray
    start_index: np.ndarray
    length: np.ndarray
    height: np.ndarray
    volume: np.ndarray
    noise: np.ndarray


def find_spikes(
    values: np.ndarray,
    threshold: np.ndarray | float,
    step_seconds: float,
    cold_start_seconds: float,
    *,
    _scratch: _Scratch | None = None,
) -> Spikes:
    """Maximal runs where value > threshold, for 1-D or 2-D ``values``.

    ``threshold`` is a scalar or one per row. NaN samples are never above it, so
    an exclusion splits a run. Run edges are where the mask, with a False column
    on each side, changes, so runs never cross rows; heights and volumes are
    per-run ``reduceat`` over the samples above the threshold, runs back to back.
    """
    a = np.atleast_2d(np.asarray(values, dtype=np.float64))
    rows, n = a.shape
    th = np.broadcast_to(np.asarray(threshold, dtype=np.float64).reshape(-1), (rows,))
    starts_parts: list[np.ndarray] = []
    ends_parts: list[np.ndarray] = []
    top_parts: list[np.ndarray] = []
    sum_parts: list[np.ndarray] = []
    work = _scratch or _shared_scratch()
    for batch in _row_batches(rows, n):
        size = batch.stop - batch.start
        # The mask with a False column on each side: a run starts where a column differs
        # from the one before it (False -> True) and ends one past where it differs again.
        padded = work.get("above", (size, n + 2), np.bool_)
        padded[:, 0] = False
        padded[:, n + 1] = False
        above = padded[:, 1 : n + 1]
        np.greater(a[batch], th[batch, None], out=above)  # NaN compares False
        edges = np.not_equal(padded[:, 1:], padded[:, :-1], out=work.get("edges", (size, n + 1), np.bool_))
        # Within a row starts and ends alternate, and every run closes before the
        # padding column, so the edges pair up in order.
        nz = np.flatnonzero(edges)
        if size == 1:
            flat_index = nz + batch.start * n
        else:
            r, c = np.divmod(nz, n + 1)
            flat_index = (r + batch.start) * n + c
        run_starts = flat_index[0::2]
        starts_parts.append(run_starts)
        ends_parts.append(flat_index[1::2])
        if run_starts.size:
            # The samples above the threshold, runs back to back: each run is the same
            # contiguous stretch of values as in the row, so reduceat over the run starts
            # gives the very sums and maxima of the runs without passing over the gaps.
            inside = a[batch][above]
            at = np.zeros(run_starts.size, dtype=np.int64)
            np.cumsum((flat_index[1::2] - run_starts)[:-1], out=at[1:])
            top_parts.append(np.maximum.reduceat(inside, at))
            sum_parts.append(np.add.reduceat(inside, at))
    starts = np.concatenate(starts_parts)
    ends = np.concatenate(ends_parts)
    # one row (analyse): every run is in row 0, no division or gather needed
    row = np.zeros(starts.size, dtype=starts.dtype) if rows == 1 else (starts // n if n else starts)
    length = ends - starts
    if starts.size:
        th_run = th[0] if rows == 1 else th[row]
        height = np.concatenate(top_parts) - th_run
        volume = (np.concatenate(sum_parts) - length * th_run) * step_seconds
    else:
        height = np.empty(0)
        volume = np.empty(0)
    return Spikes(
        row=row,
        start_index=starts if rows == 1 else starts - row * n,
        length=length,
        height=height,
        volume=volume,
        noise=length * step_seconds < cold_start_seconds - _CEIL_EPS,
    )


# --------------------------------------------------------------------------- queue


def queue_backlog(
    values: np.ndarray,
    capacity: np.ndarray | float,
    step_seconds: float,
    *,
    _scratch: _Scratch | None = None,
    _has_nan: bool | None = None,
) -> np.ndarray:
    """Fluid backlog Q(t) at capacity C in closed form (Lindley recursion unrolled).

    x = (c - C) dt, S = cumsum(x), Q = S - min(0, running min of S). NaN
    (excluded) samples add nothing: the backlog is held across them. For 2-D
    input ``capacity`` may be one value per row.
    """
    a = np.asarray(values, dtype=np.float64)
    lead = a.shape[:-1]
    n = a.shape[-1]
    flat = a.reshape(-1, n)
    cap = np.broadcast_to(np.asarray(capacity, dtype=np.float64).reshape(-1), (flat.shape[0],))
    work = _scratch or _shared_scratch()
    # With every capacity positive no step adds -0.0 (c - C is -0.0 only for c = -0.0 and
    # C = +0.0; the bounds below also rule out a tiny difference times the step rounding
    # to -0.0), so min(0, running min of S) is the running minimum of S behind a leading
    # 0: the backlog is computed in the columns after a zero column and one scan gives the
    # clamped minimum, saving the clamping pass. Otherwise (zero, negative or NaN
    # capacities) the clamp stays a separate pass, keeping the sign of a zero exactly.
    lead_zero = step_seconds >= 1e-50 and bool(np.all(cap >= 1e-200))
    shape = (flat.shape[0], n + 1)
    full = work.get("backlog", shape) if _scratch is not None else np.empty(shape)
    full[:, 0] = 0.0
    out = full[:, 1:]
    for rows in _row_batches(flat.shape[0], n):
        buf = out[rows]  # a view: the batch is computed in place, cache-resident
        np.subtract(flat[rows], cap[rows, None], out=buf)
        # the caller may already know there is no NaN: one pass fewer
        if _has_nan is not False:
            nan = np.isnan(buf, out=work.get("nan", buf.shape, np.bool_))
            if nan.any():
                buf[nan] = 0.0
        buf *= step_seconds
        np.cumsum(buf, axis=1, out=buf)
        if lead_zero:
            low = np.minimum.accumulate(full[rows], axis=1, out=work.get("low", (buf.shape[0], n + 1)))
            buf -= low[:, 1:]
        else:
            low = np.minimum.accumulate(buf, axis=1, out=work.get("low", buf.shape))
            np.minimum(low, 0.0, out=low)
            buf -= low
    return out.reshape(lead + (n,))


@dataclass(frozen=True)
class QueueStats:
    """Waiting-time figures at one capacity (seconds)."""

    capacity: float
    max_wait: float
    p99_wait: float


def _waits(values: np.ndarray, capacity: float, step_seconds: float) -> np.ndarray:
    return _waits_from_backlog(values, queue_backlog(values, capacity, step_seconds), capacity)


def _waits_from_backlog(values: np.ndarray, backlog: np.ndarray, capacity: float) -> np.ndarray:
    if capacity > 0:
        wait = backlog / capacity
    else:
        wait = np.where(backlog > 0, np.inf, 0.0)
    return np.where(np.isnan(values), np.nan, wait)


def wait_percentile_of(valid: np.ndarray, p: float) -> float:
    """Inverted-CDF p-th percentile of non-negative waits (no NaN), exactly as :func:`percentile`.

    Waits are mostly zero (the queue is empty most of the time), and selecting on
    an array of many equal values is slow; the zeros come first in sorted order,
    so only the positive waits are selected from.
    """
    return _wait_percentile(valid, valid.size, p, has_nan=False)


def _wait_percentile(wait: np.ndarray, count: int, p: float, *, has_nan: bool) -> float:
    """:func:`wait_percentile_of` over the ``count`` non-NaN waits of ``wait`` (NaN: excluded samples)."""
    r = _rank1(p, count)
    positive = np.greater(wait, 0, out=_shared_scratch().get("positive", wait.shape, np.bool_))  # NaN: no
    npos = int(np.count_nonzero(positive))
    zeros = count - npos
    if r < zeros:
        return 0.0
    if npos >= _SELECT_MIN:
        # the same value, selected above a threshold sampled among the positive waits
        got = _select_high(wait, count, [r], has_nan, positives=npos)
        if got is not None:
            return float(got[0])
    return float(np.partition(wait[positive], r - zeros)[r - zeros])


def queue_stats(
    values: np.ndarray, capacity: float, step_seconds: float, wait_percentile: float = 99.0
) -> QueueStats:
    """Max and p-th percentile (inverted CDF) wait ~ Q / C over valid samples."""
    return _stats_from_backlog(values, queue_backlog(values, capacity, step_seconds), capacity, wait_percentile)


def _stats_from_backlog(
    values: np.ndarray, backlog: np.ndarray, capacity: float, wait_percentile: float, *, has_nan: bool = True
) -> QueueStats:
    values = np.asarray(values, dtype=np.float64)
    if capacity > 0:
        # every wait divided in a work buffer; an excluded sample's wait becomes NaN, which
        # the percentile and the maximum skip: the figures of the valid waits alone,
        # without compressing them into a new array
        scratch = _shared_scratch()
        wait = np.divide(backlog, capacity, out=scratch.get("wait", backlog.shape))
        if has_nan:
            np.copyto(wait, np.nan, where=np.isnan(values, out=scratch.get("valid", values.shape, np.bool_)))
            count = wait.size - int(np.count_nonzero(np.isnan(wait, out=scratch.get("valid", wait.shape, np.bool_))))
            top = np.fmax.reduce(wait) if count else math.nan
        else:
            # no excluded sample: every wait counts (as before, a NaN one too)
            count = wait.size
            top = wait.max() if count else math.nan
        if count == 0:
            return QueueStats(float(capacity), math.nan, math.nan)
        high = _wait_percentile(wait, count, wait_percentile, has_nan=has_nan)
        return QueueStats(float(capacity), float(top), high)
    wait = _waits_from_backlog(values, backlog, capacity)
    valid = wait[~np.isnan(wait)]
    if valid.size == 0:
        return QueueStats(float(capacity), math.nan, math.nan)
    high = wait_percentile_of(valid, wait_percentile)
    return QueueStats(float(capacity), float(valid.max()), high)


@dataclass(frozen=True)
class BoundedQueue:
    """The fluid queue with a wait limit: what it holds and what it turns away.

    ``rejected`` and ``offered`` are work in concurrency-seconds (request-seconds);
    ``rejected_share`` is their ratio (0 when nothing was offered).
    """

    capacity: float
    limit_seconds: float
    max_wait: float
    rejected: float
    offered: float
    rejected_episodes: int

    @property
    def rejected_share(self) -> float:
        return self.rejected / self.offered if self.offered > 0 else 0.0


def bounded_queue(values: np.ndarray, capacity: float, step_seconds: float, limit_seconds: float) -> BoundedQueue:
    """Fluid queue at capacity C that turns away work once it would wait longer than the limit.

    The backlog is held between 0 and L = limit x C (the work C drains within the
    limit); what would push it above L is rejected. Between two rejections the
    queue is the closed-form Lindley walk started from its current backlog,
    Q(t) = S(t) - min(-Q0, min_{u<=t} S(u)), one vectorised pass over a block of
    samples. The Python loop runs once per block and once per rejection episode
    (a burst that hits the limit; while the queue stays full every sample that
    adds work is rejected whole, in one step), never once per sample. Blocks start
    small after a rejection and double while nothing is rejected, so a long quiet
    stretch costs a few passes. NaN samples add no work and hold the backlog. With
    C = 0 every piece of work is rejected.
    """
    a = np.asarray(values, dtype=np.float64).reshape(-1)
    ok = ~np.isnan(a)
    offered = float(np.sum(a[ok])) * step_seconds
    if capacity <= 0:
        return BoundedQueue(float(capacity), float(limit_seconds), math.inf if offered > 0 else 0.0,
                            offered, offered, int(offered > 0))
    x = np.where(ok, a - capacity, 0.0) * step_seconds
    limit = limit_seconds * capacity
    slack = _CEIL_EPS * max(1.0, limit)
    n = x.size
    pos, q, rejected, episodes, top = 0, 0.0, 0.0, 0, 0.0
    block = 256
    while pos < n:
        end = min(n, pos + block)
        s = np.cumsum(x[pos:end])
        path = s - np.minimum(np.minimum.accumulate(s), -q)
        over = np.flatnonzero(path > limit + slack)
        if over.size == 0:
            top = max(top, float(path.max()))
            q = float(path[-1])
            pos = end
            block = min(block * 2, 1 << 16)
            continue
        i = int(over[0])
        if i:
            top = max(top, float(path[:i].max()))
        # Everything above the limit in this sample is turned away; the queue stays full.
        rejected += float(path[i]) - limit
        episodes += 1
        top = max(top, limit)
        q = limit
        pos += i + 1
        # While full, each sample that adds work is rejected whole: skip to the first that drains.
        while pos < n:
            ahead = x[pos : pos + block]
            drains = np.flatnonzero(ahead < 0)
            cut = int(drains[0]) if drains.size else ahead.size
            rejected += float(np.sum(ahead[:cut]))
            pos += cut
            if drains.size:
                break
        block = 256
    return BoundedQueue(float(capacity), float(limit_seconds), top / capacity, rejected, offered, episodes)


def _wait_stat(values: np.ndarray, capacity: int, step_seconds: float, statistic: str, p: float) -> float:
    wait = _waits(values, float(capacity), step_seconds)
    if statistic == "max":
        return float(np.nanmax(wait))
    valid = wait[~np.isnan(wait)]
    return wait_percentile_of(valid, p) if valid.size else math.nan


def capacity_for_tolerance(
    values: np.ndarray,
    tolerance_seconds: float,
    step_seconds: float,
    *,
    statistic: str = "max",
    wait_percentile: float = 99.0,
) -> int:
    """Least integer capacity whose max (or p-th percentile) wait <= tolerance.

    Wait only shrinks as capacity grows, so bisection over integers is exact; at
    ceil(peak) nothing ever queues, which bounds the search. Each probe is one
    vectorised pass.
    """
    a = np.asarray(values, dtype=np.float64)
    if tolerance_seconds < 0:
        raise PolicylintError(f"tolerance must be >= 0 seconds, got {tolerance_seconds}")
    if np.isnan(a).all():
        raise MeasurementError("no valid sample to size a queue from")
    hi = max(0, math.ceil(float(np.nanmax(a)) - _CEIL_EPS))
    lo = 0
    if _wait_stat(a, lo, step_seconds, statistic, wait_percentile) <= tolerance_seconds:
        return 0
    # Invariant: lo misses the tolerance, hi meets it.
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _wait_stat(a, mid, step_seconds, statistic, wait_percentile) <= tolerance_seconds:
            hi = mid
        else:
            lo = mid
    return hi


# --------------------------------------------------------------------------- many series


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
class _CoreRows:
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


def _core_rows(
    x: np.ndarray,
    width: int,
    step_seconds: float,
    settings: BandSettings,
    capacity: np.ndarray | None,
    scratch: _Scratch,
    *,
    detail: bool = False,
) -> _CoreRows:
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
    _rolling_min_rows(x, width, s, scratch)
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
    cap = np.ceil(base - _CEIL_EPS) if capacity is None else capacity
    # a NaN capacity (a row without bands) behaves like NaN samples: the backlog zeroes them
    nan_in = has_nan or bool(np.isnan(cap).any())
    backlog = queue_backlog(x, cap, step_seconds, _scratch=scratch, _has_nan=nan_in)
    queue = None
    if detail and cap[0] > 0:
        queue = _stats_from_backlog(x[0], backlog[0], float(cap[0]), settings.queue_percentile, has_nan=has_nan)
    return _CoreRows(
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
    scratch = _shared_scratch()
    for batch in _row_batches(rows, n):
        x = a[batch]
        core = _core_rows(x, w, step_seconds, settings, None if caps is None else caps[batch], scratch)
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


# --------------------------------------------------------------------------- GPUs, jobs, residency


def gpu_counts(values: np.ndarray, per_gpu: np.ndarray | float, gpus_per_replica: np.ndarray | int = 1) -> np.ndarray:
    """GPUs = ceil(concurrency / concurrency per GPU) x GPUs per replica: the one GPU conversion.

    ``values`` is concurrency, any shape; a 2-D ``(rows, samples)`` array may carry
    one ``per_gpu`` and ``gpus_per_replica`` per row. NaN stays NaN (an unusable
    sample stays unusable); the result is float64 whole numbers. A GPU-weighted
    trace is converted with ``per_gpu = 1`` and one GPU per replica
    (:func:`policylint.measure.gpu_conversion`).
    """
    x = np.asarray(values, dtype=np.float64)
    per = np.asarray(per_gpu, dtype=np.float64)
    replicas = np.asarray(gpus_per_replica, dtype=np.float64)
    if x.ndim == 2:
        per = per.reshape(-1, 1)
        replicas = replicas.reshape(-1, 1)
    if (per <= 0).any() or np.isnan(per).any():
        raise PolicylintError(f"concurrency per GPU must be positive, got {_shown(per)}")
    if (replicas < 1).any():
        raise PolicylintError(f"GPUs per replica must be at least 1, got {_shown(replicas)}")
    # ceil(c / per - eps), max(., 0) x replicas, done in one buffer: a pool of a hundred
    # members is tens of megabytes per temporary.
    out: np.ndarray = np.divide(x, per)
    out = np.asarray(out, dtype=np.float64)
    out -= _CEIL_EPS
    np.ceil(out, out=out)
    # np.maximum keeps NaN (unusable samples stay unusable).
    np.maximum(out, 0.0, out=out)
    out *= replicas
    return out


def _shown(a: np.ndarray) -> str:
    flat = np.ravel(a)
    return f"{flat[0]:g}" if flat.size == 1 else ", ".join(f"{v:g}" for v in flat[:5])


def gpus_for(concurrency: np.ndarray | float, per_gpu: float, gpus_per_replica: int = 1) -> np.ndarray:
    """Whole GPUs for ``concurrency`` (:func:`gpu_counts`), as integers."""
    return gpu_counts(np.asarray(concurrency, dtype=np.float64), per_gpu, gpus_per_replica).astype(np.int64)


@dataclass(frozen=True)
class DurationStats:
    """Job duration percentiles (seconds) and the p99/p50 tail ratio."""

    count: int
    p50: float
    p90: float
    p99: float
    tail_ratio: float


def duration_stats(durations: np.ndarray) -> DurationStats:
    """p50/p90/p99 (inverted CDF) of job durations and tail ratio p99 / p50."""
    d = np.asarray(durations, dtype=np.float64)
    d = d[~np.isnan(d)]
    if d.size == 0:
        raise MeasurementError("no job durations")
    p50, p90, p99 = (float(x) for x in percentile(d, [50, 90, 99]))
    ratio = p99 / p50 if p50 > 0 else math.inf
    return DurationStats(int(d.size), p50, p90, p99, ratio)


def residency_ratio(residency_seconds: np.ndarray | float, active_seconds: np.ndarray | float) -> np.ndarray:
    """VRAM residency ratio = resident seconds / active compute seconds."""
    active = np.asarray(active_seconds, dtype=np.float64)
    resident = np.asarray(residency_seconds, dtype=np.float64)
    if (active <= 0).any() or np.isnan(active).any():
        raise PolicylintError("active compute seconds must be positive to form a residency ratio")
    if (resident < 0).any():
        raise PolicylintError("residency seconds must not be negative")
    return resident / active


# --------------------------------------------------------------------------- Erlang


def erlang_b(servers: int, load: np.ndarray | float) -> np.ndarray:
    """Erlang B blocking probability by the stable recursion (vectorised over load).

    B(0) = 1, B(k) = a B(k-1) / (k + a B(k-1)). The loop runs over servers.
    """
    if servers < 0:
        raise PolicylintError("servers must be >= 0")
    a = np.asarray(load, dtype=np.float64)
    b = np.ones_like(a)
    for k in range(1, servers + 1):
        b = a * b / (k + a * b)
    return b


def erlang_c(servers: int, load: np.ndarray | float) -> np.ndarray:
    """Probability an arrival waits in an M/M/c queue (1 when load >= servers)."""
    if servers < 1:
        raise PolicylintError("servers must be >= 1")
    a = np.asarray(load, dtype=np.float64)
    b = erlang_b(servers, a)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = servers * b / (servers - a * (1.0 - b))
    return np.where(a >= servers, 1.0, c)


@dataclass(frozen=True)
class ErlangResult:
    """Erlang C answer: probability of waiting and mean wait (seconds)."""

    servers: int
    load: float
    probability_wait: float
    mean_wait: float


def erlang_c_wait(servers: int, arrival_rate: float, service_time: float) -> ErlangResult:
    """Erlang C for arrivals per second and mean service seconds.

    a = lambda x service time; W = C / (c mu - lambda). An unstable system
    (a >= c) waits with probability 1 and forever.
    """
    if arrival_rate < 0 or service_time <= 0:
        raise PolicylintError("arrival rate must be >= 0 and service time > 0")
    load = arrival_rate * service_time
    if load >= servers:
        return ErlangResult(servers, load, 1.0, math.inf)
    prob = float(erlang_c(servers, load))
    mu = 1.0 / service_time
    return ErlangResult(servers, load, prob, prob / (servers * mu - arrival_rate))


# --------------------------------------------------------------------------- cleaning


def outlier_days(times: np.ndarray, values: np.ndarray, k: float) -> np.ndarray:
    """UTC day starts (unix seconds) whose daily mean is more than k MADs from the median day."""
    ok = ~np.isnan(values)
    if not ok.any():
        return np.empty(0)
    day = np.floor(times[ok] / 86_400.0).astype(np.int64)
    first = int(day.min())
    idx = day - first
    sums = np.bincount(idx, weights=values[ok])
    counts = np.bincount(idx)
    has = counts > 0
    means = sums[has] / counts[has]
    centre = float(np.median(means))
    mad = float(np.median(np.abs(means - centre)))
    if mad == 0:
        return np.empty(0)
    days = (np.flatnonzero(has) + first).astype(np.float64) * 86_400.0
    return days[np.abs(means - centre) > k * mad]


def flat_days(times: np.ndarray, values: np.ndarray, *, zero_only: bool = False) -> np.ndarray:
    """UTC day starts (unix seconds) of the days on which the trace never changes.

    The flatness test: a whole UTC calendar day inside the trace (the partial
    first and last day are not judged) is *flat* when it holds at least two
    valid samples and every one of them has exactly the same value - zero all day
    (padding, a filled gap) or any constant (an exporter that repeats its last
    reading). Real demand moves within a day, even a quiet one. The test is one
    comparison of each valid sample with the previous one and a count per day.
    """
    t = np.asarray(times, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    if t.size == 0:
        return np.empty(0)
    scratch = _shared_scratch()
    if t.size > 1:
        step = float(np.subtract(t[1:], t[:-1], out=scratch.get("tdiff", (t.size - 1,))).min())
    else:
        step = 86_400.0
    first = int(np.floor(t[0] / 86_400.0))
    rows = int(np.floor(t[-1] / 86_400.0)) - first + 1
    bounds = _day_bounds(t, first, rows)
    # Times are sorted, so each day's valid samples are one contiguous stretch of the
    # valid samples: a day is constant exactly when no valid sample differs from the
    # one before it inside the same day (max == min without a days x slots grid).
    nan = np.isnan(v, out=scratch.get("flat_nan", v.shape, np.bool_))
    if nan.any():
        ok = np.logical_not(nan, out=nan)
        x = np.compress(ok, v, out=scratch.get("flat_x", (int(np.count_nonzero(ok)),)))
        # valid samples before each day boundary: the boundaries among the valid samples
        per_day = np.zeros(rows, dtype=np.int64)
        some = bounds[1:] > bounds[:-1]
        per_day[some] = np.add.reduceat(ok, bounds[:-1][some], dtype=np.int64)
        vb = np.concatenate(([0], np.cumsum(per_day)))
    else:
        x = v
        vb = bounds
    count = np.diff(vb)
    changed = np.zeros(rows, dtype=np.bool_)
    judged = np.flatnonzero(count >= 2)
    if judged.size:
        # differs[i]: valid sample i + 1 differs from valid sample i; each judged day's
        # pairs are differs[first valid : last valid], taken by one reduceat whose even
        # slots are exactly those stretches (the odd slots span the pairs across days)
        differs = np.not_equal(x[1:], x[:-1], out=scratch.get("flat_ne", (x.size - 1,), np.bool_))
        idx = np.empty(2 * judged.size, dtype=np.int64)
        idx[0::2] = vb[judged]
        idx[1::2] = vb[judged + 1] - 1
        if idx[-1] >= differs.size:
            idx = idx[:-1]
        changed[judged] = np.logical_or.reduceat(differs, idx)[0::2]
    flat = (count >= 2) & ~changed
    # Only whole days are judged: the partial first and last day of a trace hold a few
    # samples that may well be equal without anything being wrong.
    flat[0] &= bool(t[0] - first * 86_400.0 < step)
    flat[-1] &= bool((first + rows) * 86_400.0 - t[-1] <= step * (1 + _CEIL_EPS))
    if zero_only:
        # a flat day's value is its first valid sample
        days = np.flatnonzero(flat)
        flat[days] = x[vb[days]] == 0
    return (np.flatnonzero(flat) + first).astype(np.float64) * 86_400.0


def _day_bounds(t: np.ndarray, first: int, rows: int) -> np.ndarray:
    """Index of the first sample of each UTC day ``first .. first + rows - 1``, then ``t.size``.

    Sample i belongs to day floor(t[i] / 86,400); that day number never decreases
    along sorted times, so each day is one stretch of samples, found by a binary
    search per day instead of a day number per sample. A time just short of
    midnight can divide to the next whole day; the search starts from the exact
    midnight and steps back over such samples, so the stretches are exactly the
    samples with that day number.
    """
    days = np.arange(first + 1, first + rows, dtype=np.int64)
    b = np.searchsorted(t, days * 86_400.0, side="left")
    while b.size:
        back = (b > 0) & (np.floor(t[np.maximum(b - 1, 0)] / 86_400.0) >= days)
        if not back.any():
            break
        b = b - back
    return np.concatenate(([0], b, [t.size])).astype(np.int64)


# --------------------------------------------------------------------------- report


def _iso(t: float | None) -> str | None:
    return None if t is None else format_time(t)


def _num(x: float | None) -> float | None:
    """JSON has no infinity: infinite waits become null (documented)."""
    if x is None or not math.isfinite(x):
        return None
    return float(x)


@dataclass(frozen=True)
class BandReport:
    """Everything ``analyse`` found for one series."""

    source: str
    baseline: float
    daily: float
    peak: float
    window_days: float
    min_window_days: float
    meets_window: bool
    step_seconds: float
    cold_start_seconds: float
    window_samples: int
    samples: int
    valid_samples: int
    excluded_samples: int
    gap_samples: int
    gaps: tuple[Gap, ...]
    exclusions: tuple[Exclusion, ...]
    outlier_days: tuple[float, ...]
    first: float
    last: float
    spikes: SpikeTable = field(hash=False)
    noise_spike_count: int
    real_spike_count: int
    widest_noise_width: float
    baseline_queue: QueueStats | None
    tolerance_seconds: float | None = None
    queue_statistic: str = "max"
    capacity_for_tolerance: int | None = None
    queue: QueueStats | None = None
    per_gpu: float | None = None
    gpus_per_replica: int = 1
    baseline_percentile: float = 95.0
    daily_percentile: float = 99.0
    bands_gpus: dict[str, int] | None = field(default=None, hash=False)
    #: highest level held for a whole cold-start window (max of the sustained series)
    sustained_max: float = math.nan
    #: UTC day starts on which the trace never changed (left out of the bands and the window)
    flat_days: tuple[float, ...] = ()
    #: the cleaned series the figures were computed from (not part of to_dict)
    cleaned: Series | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; keys are stable (see docs/bands.md)."""
        out: dict[str, Any] = {
            "source": self.source,
            "bands": {"baseline": self.baseline, "daily": self.daily, "peak": self.peak},
            "percentiles": {"baseline": self.baseline_percentile, "daily": self.daily_percentile},
            "window_days": self.window_days,
            "min_window_days": self.min_window_days,
            "meets_window": self.meets_window,
            "step_seconds": self.step_seconds,
            "cold_start_seconds": self.cold_start_seconds,
            "window_samples": self.window_samples,
            "samples": self.samples,
            "valid_samples": self.valid_samples,
            "excluded_samples": self.excluded_samples,
            "gap_samples": self.gap_samples,
            "first": _iso(self.first),
            "last": _iso(self.last),
            "gaps": [
                {"start": _iso(g.start), "end": _iso(g.end), "seconds": g.seconds} for g in self.gaps
            ],
            "exclusions": [
                {"start": _iso(e.start), "end": _iso(e.end), "label": e.label} for e in self.exclusions
            ],
            "outlier_days": [_iso(d) for d in self.outlier_days],
            "flat_days": [_iso(d) for d in self.flat_days],
            "spikes": self.spikes.to_list(),
            "spike_counts": {"noise": self.noise_spike_count, "real": self.real_spike_count},
            "widest_noise_width_seconds": self.widest_noise_width,
            "baseline_queue": None
            if self.baseline_queue is None
            else {
                "capacity": self.baseline_queue.capacity,
                "max_wait_seconds": _num(self.baseline_queue.max_wait),
                "p99_wait_seconds": _num(self.baseline_queue.p99_wait),
            },
        }
        if self.tolerance_seconds is not None:
            out["tolerance_seconds"] = self.tolerance_seconds
            out["queue_statistic"] = self.queue_statistic
            out["capacity_for_tolerance"] = self.capacity_for_tolerance
        if self.queue is not None:
            out["queue"] = {
                "capacity": self.queue.capacity,
                "max_wait_seconds": _num(self.queue.max_wait),
                "p99_wait_seconds": _num(self.queue.p99_wait),
            }
        if self.bands_gpus is not None:
            out["bands_gpus"] = dict(self.bands_gpus)
            out["per_gpu"] = self.per_gpu
            out["gpus_per_replica"] = self.gpus_per_replica
        return out


def _exclude_days(series: Series, days: np.ndarray, label: str) -> Series:
    """``apply_exclusions`` for whole UTC days (distinct day starts): the same series, fewer passes.

    Each day is one stretch of samples, masked by slicing; the general form
    builds a per-sample coverage count for ranges that may overlap, several
    full-size temporaries that cost more than the masking itself here.
    """
    starts = np.asarray(days, dtype=np.float64)
    lo = np.searchsorted(series.times, starts, side="left")
    hi = np.searchsorted(series.times, starts + 86_400.0, side="left")
    values = series.values.copy()
    valid = series.valid.copy()
    newly = 0
    for a, b in zip(lo.tolist(), hi.tolist(), strict=True):  # one step per day, not per sample
        newly += int(np.count_nonzero(valid[a:b]))
        values[a:b] = np.nan
        valid[a:b] = False
    return dataclasses.replace(
        series,
        values=values,
        valid=valid,
        excluded=series.excluded + newly,
        exclusions=series.exclusions + tuple(Exclusion(float(d), float(d) + 86_400.0, label) for d in starts),
    )


def analyse(
    series: Series,
    settings: BandSettings | None = None,
    *,
    exclusions: Sequence[Exclusion] = (),
    tolerance_seconds: float | None = None,
    capacity: float | None = None,
    per_gpu: float | None = None,
    gpus_per_replica: int = 1,
) -> BandReport:
    """Compute the three bands and everything around them for one series.

    Declared ``exclusions`` are masked first, then flat days (see
    :func:`flat_days`; they count neither towards the window nor the bands), and,
    when ``outlier_mad_k`` is set, outlier days. ``tolerance_seconds`` asks for the least capacity meeting it;
    ``capacity`` asks for waits at that capacity; ``per_gpu`` converts the bands
    to GPUs. Raises :class:`MeasurementError` when nothing usable remains.
    """
    settings = settings or BandSettings()
    cleaned = apply_exclusions(series, exclusions)
    flat: tuple[float, ...] = ()
    test = flat_day_test(series, settings.flat_days)
    if test != "off":
        # Before the outlier test: a run of padded zero days would drag the median day down.
        found_flat = flat_days(cleaned.times, cleaned.values, zero_only=test == "empty")
        if found_flat.size:
            flat = tuple(float(d) for d in found_flat)
            cleaned = _exclude_days(cleaned, found_flat, "flat day")
            if not cleaned.valid.any():
                raise MeasurementError(
                    f"the trace is constant on every one of its {len(flat)} days (flat days: padding or a"
                    " dead exporter): nothing was measured",
                    source=series.source,
                )
    flagged: tuple[float, ...] = ()
    if settings.outlier_mad_k is not None:
        days = outlier_days(cleaned.times, cleaned.values, settings.outlier_mad_k)
        if days.size:
            flagged = tuple(float(d) for d in days)
            cleaned = _exclude_days(cleaned, days, "outlier day")
    c = cleaned.values
    step = cleaned.step_seconds
    valid_count = int(np.count_nonzero(cleaned.valid))
    if valid_count == 0:
        raise MeasurementError("no valid sample left after exclusions", source=series.source)
    w = window_samples(settings.cold_start_seconds, step)
    core = None
    if w <= c.size:
        core = _core_rows(c.reshape(1, -1), w, step, settings, None, _shared_scratch(), detail=True)
    if core is None or not core.sustained_count[0]:
        raise MeasurementError(
            f"no stretch of {w} consecutive valid samples (cold start {settings.cold_start_seconds:g} s"
            f" at {step:g} s steps): cannot form a sustained series" + (f"; {series.hint}" if series.hint else ""),
            source=series.source,
        )
    # Order statistics of s already give B <= D and s <= c gives D <= P; the core's clamps
    # only make the guarantee survive any future change of method.
    peak = float(core.peak[0])
    daily = float(core.daily[0])
    baseline = float(core.baseline[0])

    found = core.spikes
    spikes = SpikeTable(
        start=cleaned.times[found.start_index],
        width_seconds=found.length * step,
        height=found.height,
        volume=found.volume,
        noise=found.noise,
    )
    noise_count = int(np.count_nonzero(found.noise))
    widest_noise = float(found.length[found.noise].max() * step) if noise_count else 0.0

    measured_days = window_days(valid_count, step)
    base_cap = math.ceil(baseline - _CEIL_EPS)
    # the core's queue is the one at ceil(baseline), with its waits (None at zero capacity)
    baseline_queue = core.queue
    assert (baseline_queue is None) == (base_cap <= 0)

    cap_needed = None
    if tolerance_seconds is not None:
        cap_needed = capacity_for_tolerance(
            c,
            tolerance_seconds,
            step,
            statistic=settings.queue_statistic,
            wait_percentile=settings.queue_percentile,
        )
    queue = None
    if capacity is not None:
        if capacity < 0:
            raise PolicylintError(f"capacity must be >= 0, got {capacity}")
        queue = queue_stats(c, capacity, step, settings.queue_percentile)
    bands_gpus = None
    if per_gpu is not None:
        g = gpus_for(np.array([baseline, daily, peak]), per_gpu, gpus_per_replica)
        bands_gpus = {"baseline": int(g[0]), "daily": int(g[1]), "peak": int(g[2])}

    return BandReport(
        source=series.source,
        baseline=baseline,
        daily=daily,
        peak=peak,
        window_days=measured_days,
        min_window_days=settings.min_window_days,
        meets_window=measured_days >= settings.min_window_days,
        step_seconds=step,
        cold_start_seconds=settings.cold_start_seconds,
        window_samples=w,
        samples=cleaned.samples,
        valid_samples=valid_count,
        excluded_samples=cleaned.excluded,
        gap_samples=cleaned.gap_samples,
        gaps=cleaned.gaps,
        exclusions=cleaned.exclusions,
        outlier_days=flagged,
        flat_days=flat,
        first=series.first,
        last=series.last,
        spikes=spikes,
        noise_spike_count=noise_count,
        real_spike_count=len(spikes) - noise_count,
        widest_noise_width=widest_noise,
        baseline_queue=baseline_queue,
        tolerance_seconds=tolerance_seconds,
        queue_statistic=settings.queue_statistic,
        capacity_for_tolerance=cap_needed,
        queue=queue,
        per_gpu=per_gpu,
        gpus_per_replica=gpus_per_replica,
        baseline_percentile=settings.baseline_percentile,
        daily_percentile=settings.daily_percentile,
        bands_gpus=bands_gpus,
        sustained_max=float(core.sustained_max[0]) if core.sustained_max is not None else math.nan,
        cleaned=cleaned,
    )
