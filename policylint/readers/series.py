"""The values every reader returns: a regular :class:`Series`, a list of :class:`Jobs`.

Also the declared exclusions and the measurement gaps a series carries, and
:func:`apply_exclusions`, which masks declared ranges out of a series.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

__all__ = ["Exclusion", "Gap", "Jobs", "Series", "apply_exclusions"]


@dataclass(frozen=True)
class Gap:
    """A stretch with no measurement longer than the allowed number of steps.

    ``start`` is the last sample before the hole and ``end`` the first one after
    it (unix seconds). The grid points strictly inside are excluded, not filled.
    """

    start: float
    end: float

    @property
    def seconds(self) -> float:
        """Length of the hole in seconds."""
        return self.end - self.start


@dataclass(frozen=True)
class Exclusion:
    """A declared half-open range ``[start, end)`` (unix seconds) to leave out."""

    start: float
    end: float
    label: str = ""


@dataclass(frozen=True, eq=False)
class Series:
    """A measurement on a regular grid.

    ``times`` are unix seconds (float64), ``values`` float64 with NaN wherever
    the sample is not usable, ``valid`` the matching boolean mask. ``first`` and
    ``last`` are the first and last *measured* timestamps (the rule engine uses
    ``last`` for staleness). ``excluded`` counts grid samples removed by declared
    exclusions (as opposed to measurement gaps).
    """

    times: np.ndarray
    values: np.ndarray
    valid: np.ndarray
    step_seconds: float
    source: str
    gaps: tuple[Gap, ...]
    first: float
    last: float
    excluded: int = 0
    exclusions: tuple[Exclusion, ...] = ()
    #: rows the reader dropped on purpose and why (row filters, skipped incomplete rows)
    notes: tuple[str, ...] = ()
    #: what one unit of ``values`` is: "concurrency" (requests, jobs) or "gpus" (GPU-weighted jobs)
    unit: str = "concurrency"
    #: a job list counted by jobs: the GPU column it has but did not use (``bands`` mentions it)
    unused_gpu_column: str | None = None
    #: the values were rebuilt from intervals (a request log or job list), not sampled:
    #: a constant non-zero day is long jobs running, not a dead exporter
    #: (:func:`policylint.bands.flat_day_test`)
    from_intervals: bool = False
    #: rebuilt from intervals: (rows with no end, rows with an end, the longest row with no end to the
    #: end of the trace and the longest row with an end, in seconds, each None without such rows);
    #: None for a sampled trace
    interval_rows: tuple[int, int, float | None, float | None] | None = None
    #: a GPU-weighted job list: the most GPUs nine jobs in ten were weighed at (the 90th percentile of
    #: the weighting column, one job's own figure); None for any other series
    job_weight_p90: float | None = None
    #: why a read that failed later may have been the wrong form (an event log read as a
    #: series); the calculator adds it to an error about too few consecutive samples
    hint: str | None = None
    #: several value columns summed into a series complete on its grid: each column's values print
    #: (:func:`policylint.calc.prints.values_fingerprint`), in the order declared; empty otherwise
    part_prints: tuple[str, ...] = ()
    #: the same columns' run sketches (:func:`policylint.calc.runs.run_sketch`, None for a column too plain
    #: for one), in the same order: a column that is another trace with a few samples edited (PL972)
    part_sketches: tuple[list[int] | None, ...] = ()
    #: the same columns' shape prints (:func:`policylint.calc.prints.shape_print`, None for a quiet one): a
    #: column that is another member's series scaled or shifted (PL111)
    part_shapes: tuple[str | None, ...] = ()
    #: the labels of the summed series (a long table's key values, a Prometheus answer's series) when the parts
    #: are series, not columns; empty for columns, which the spec names
    part_labels: tuple[str, ...] = ()
    #: the summed series (or columns) that hold one non-zero value for a day or more, one line each
    #: (:func:`policylint.readers.sum_screens.flat_parts`): a concurrency read refuses them; empty otherwise
    flat_parts: tuple[str, ...] = ()
    #: the samples as read, before the grid (:func:`policylint.calc.prints.samples_fingerprint`): one
    #: file read at another step is the same evidence (PL111); None where the reader gives none
    samples_print: str | None = None
    #: the run sketch of the samples as read (:func:`policylint.calc.runs.run_sketch` of them, before the
    #: grid), set only when the grid is not those samples (another step, gaps): a copy of a trace read at
    #: another step keeps its samples' runs, which its grid does not (PL972); None otherwise or too plain
    samples_sketch: list[int] | None = None
    #: whether the grid is other points than the samples (then :attr:`samples_sketch` is what identifies them)
    regridded: bool = False

    @property
    def samples(self) -> int:
        """Number of grid points (valid or not)."""
        return int(self.times.size)

    @property
    def gap_samples(self) -> int:
        """Grid points lost to measurement gaps (not to declared exclusions)."""
        return int(self.times.size - np.count_nonzero(self.valid) - self.excluded)


@dataclass(frozen=True, eq=False)
class Jobs:
    """One entry per job: duration in seconds and GPUs it held."""

    durations: np.ndarray
    gpus: np.ndarray
    source: str
    #: rows the reader dropped on purpose and why (row filters, skipped incomplete rows)
    notes: tuple[str, ...] = ()
    #: latest job end (unix seconds) when the list records start or end times, else None
    last_time: float | None = None

    @property
    def count(self) -> int:
        """Number of jobs read."""
        return int(self.durations.size)


def apply_exclusions(series: Series, exclusions: Sequence[Exclusion]) -> Series:
    """Mask the declared ranges (holidays, incidents) out of a series.

    Returns a new series; ``excluded`` counts grid samples newly removed, so
    measurement gaps and declared exclusions are reported separately.
    """
    if not exclusions:
        return series
    starts = np.array([e.start for e in exclusions], dtype=np.float64)
    ends = np.array([e.end for e in exclusions], dtype=np.float64)
    lo = np.searchsorted(series.times, starts, side="left")
    hi = np.searchsorted(series.times, ends, side="left")
    delta = np.zeros(series.times.size + 1, dtype=np.int64)
    np.add.at(delta, lo, 1)
    np.add.at(delta, hi, -1)
    masked = np.cumsum(delta[:-1]) > 0
    newly = masked & series.valid
    values = np.where(masked, np.nan, series.values)
    return replace(
        series,
        values=values,
        valid=series.valid & ~masked,
        excluded=series.excluded + int(np.count_nonzero(newly)),
        exclusions=series.exclusions + tuple(exclusions),
    )
