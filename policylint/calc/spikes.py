"""Spikes: maximal runs above the baseline band, with height, width, volume and noise flag."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from policylint.calc.scratch import Scratch, row_batches, shared_scratch
from policylint.calc.settings import CEIL_EPS


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
    _scratch: Scratch | None = None,
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
    work = _scratch or shared_scratch()
    for batch in row_batches(rows, n):
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
        noise=length * step_seconds < cold_start_seconds - CEIL_EPS,
    )
