"""Measurement readers: turn trace files into regular, cleaned numpy series.

Four kinds of input are understood:

* CSV time series (a timestamp column and one or more value columns),
* Prometheus ``/api/v1/query_range`` JSON answers (``resultType: matrix``),
* request logs (one row per request with start and end, or start and duration),
  turned into concurrency by a sorted sweep, and
* job lists (one row per job with a duration and a GPU count).

Every problem with a file is raised as :class:`~policylint.errors.MeasurementError`
naming the file and the row, so no raw ``ValueError`` ever reaches the user.
This module knows nothing about bands, rules or terminals; it is imported lazily
by the commands that need it, which is why numpy is imported at the top.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from policylint.errors import MeasurementError

__all__ = [
    "CHUNK_ROWS",
    "Exclusion",
    "Gap",
    "Jobs",
    "Series",
    "apply_exclusions",
    "format_time",
    "parse_exclusion",
    "parse_time",
    "read_jobs",
    "read_series",
]

CHUNK_ROWS = 65_536
"""Rows converted to arrays at a time; bounds the memory the text of a CSV takes."""

TIMESTAMP_CANDIDATES = ("timestamp", "time", "ts")
START_CANDIDATES = ("start", "start_time", "started_at", "begin", "submit_time")
END_CANDIDATES = ("end", "end_time", "ended_at", "finish", "finish_time")
DURATION_CANDIDATES = ("duration", "duration_seconds", "duration_s", "runtime", "elapsed")
GPU_CANDIDATES = ("gpus", "gpu", "gpu_num", "num_gpus", "gpu_count", "gpus_per_job")


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

    @property
    def count(self) -> int:
        """Number of jobs read."""
        return int(self.durations.size)


# --------------------------------------------------------------------------- time


def format_time(seconds: float) -> str:
    """Format unix seconds as an ISO-8601 UTC string ending in ``Z``."""
    stamp = datetime.fromtimestamp(float(seconds), tz=UTC)
    text = stamp.isoformat(timespec="milliseconds" if stamp.microsecond else "seconds")
    return text.replace("+00:00", "Z")


def _parse_iso(texts: np.ndarray) -> np.ndarray:
    """Vectorised ISO-8601 parse to float unix seconds.

    Accepts ``T`` or a space between date and time, an optional trailing ``Z``
    and an optional ``+HH:MM``/``-HH:MM`` offset (numpy itself refuses zones).
    Raises ``ValueError`` on anything else; callers locate the bad row.
    Only ``np.char`` functions are used so numpy 1.26 works too.
    """
    s = np.char.strip(texts.astype(np.str_))
    s = np.char.replace(s, " ", "T")
    s = np.char.rstrip(s, "Zz")
    offset = np.zeros(s.shape, dtype=np.float64)
    for sign, mark in ((1.0, "+"), (-1.0, "-")):
        parts = np.char.rpartition(s, mark)
        head, tail = parts[..., 0], parts[..., 2]
        # Only "HH:MM" after the last sign, following a time part, is an offset;
        # a "-" inside the date always leaves a longer tail.
        is_offset = (
            (parts[..., 1] == mark)
            & (np.char.str_len(tail) == 5)
            & (np.char.find(tail, ":") == 2)
            & (np.char.find(head, "T") > 0)
        )
        if is_offset.any():
            hh = np.where(is_offset, np.char.ljust(tail, 5), "00:00")
            hours = np.char.partition(hh, ":")
            minutes = hours[..., 0].astype(np.float64) * 3600.0 + hours[..., 2].astype(np.float64) * 60.0
            offset = np.where(is_offset, sign * minutes, offset)
            s = np.where(is_offset, head, s)
    stamps = s.astype("datetime64[ms]")
    if np.isnat(stamps).any():
        raise ValueError("not a time")
    # Local time with an offset is UTC minus the offset.
    return stamps.astype(np.int64).astype(np.float64) / 1000.0 - offset


def parse_time(text: str) -> float:
    """Parse one ISO-8601 date/datetime or unix-seconds string to unix seconds.

    Raises ``ValueError`` when the text is neither.
    """
    text = text.strip()
    try:
        value = float(text)
    except ValueError:
        return float(_parse_iso(np.array([text]))[0])
    if not math.isfinite(value):
        raise ValueError(f"not a time: {text!r}")
    return value


def _is_date_only(text: str) -> bool:
    text = text.strip()
    return len(text) == 10 and text[4] == "-" and text[7] == "-"


def parse_exclusion(text: str) -> Exclusion:
    """Parse ``START/END`` into an :class:`Exclusion`.

    A date-only END means the whole of that day is excluded (end of day), which
    is how people write "2020-05-01/2020-05-03" for a holiday.
    """
    start_text, sep, end_text = text.partition("/")
    if not sep or not start_text.strip() or not end_text.strip():
        raise ValueError(f"exclusion {text!r} must be START/END (ISO dates or datetimes)")
    start = parse_time(start_text)
    end = parse_time(end_text)
    if _is_date_only(end_text):
        end += 86_400.0
    if end <= start:
        raise ValueError(f"exclusion {text!r} ends before it starts")
    return Exclusion(start, end, text.strip())


def _to_seconds(texts: np.ndarray) -> np.ndarray:
    """Timestamps as text -> unix seconds: numbers are unix seconds, the rest ISO."""
    try:
        return texts.astype(np.float64)
    except ValueError:
        return _parse_iso(texts)


# --------------------------------------------------------------------------- CSV


def _read_header(path: Path, name: str) -> list[str]:
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            header = next(csv.reader(handle), None)
    except FileNotFoundError:
        raise MeasurementError("file not found", source=name) from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise MeasurementError(f"cannot read: {exc}", source=name, row=1) from None
    if not header or not any(cell.strip() for cell in header):
        raise MeasurementError("empty file: no header row", source=name, row=1)
    return [cell.strip() for cell in header]


def _iter_chunks(
    path: Path, name: str, columns: Sequence[int], chunk_rows: int
) -> Iterator[tuple[list[np.ndarray], np.ndarray]]:
    """Yield ``(column arrays as text, line numbers)`` for ``chunk_rows`` rows at a time.

    The csv module tokenises rows (it handles quoting); each chunk is turned into
    numpy string arrays at once so the numeric work downstream is vectorised and
    the text never has to be held whole.
    """
    if chunk_rows < 1:
        raise ValueError("chunk_rows must be positive")
    need = max(columns) + 1
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            next(reader, None)  # header, already read
            while True:
                rows: list[list[str]] = []
                lines: list[int] = []
                for row in reader:
                    if not row or (len(row) == 1 and not row[0].strip()):
                        continue  # blank line
                    if len(row) < need:
                        raise MeasurementError(
                            f"row has {len(row)} fields, expected at least {need}",
                            source=name,
                            row=reader.line_num,
                        )
                    rows.append(row)
                    lines.append(reader.line_num)
                    if len(rows) >= chunk_rows:
                        break
                if not rows:
                    return
                cols = [np.array([r[j] for r in rows], dtype=np.str_) for j in columns]
                yield cols, np.array(lines, dtype=np.int64)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise MeasurementError(f"cannot read: {exc}", source=name) from None


def _first_bad(texts: np.ndarray, convert: Any) -> int:
    """Index of the first element ``convert`` rejects (error path only)."""
    for i, text in enumerate(texts):
        try:
            convert(np.array([text]))
        except ValueError:
            return i
    return 0


def _numbers(texts: np.ndarray, lines: np.ndarray, column: str, name: str) -> np.ndarray:
    """Text column -> float64, rejecting non-numbers with file and line."""
    stripped = np.char.strip(texts)
    # Empty cells are missing samples, like Prometheus "NaN".
    stripped = np.where(stripped == "", "nan", stripped)
    try:
        return stripped.astype(np.float64)
    except ValueError:
        i = _first_bad(stripped, lambda a: a.astype(np.float64))
        raise MeasurementError(
            f"column '{column}': {str(texts[i])!r} is not a number", source=name, row=int(lines[i])
        ) from None


def _times(texts: np.ndarray, lines: np.ndarray, column: str, name: str) -> np.ndarray:
    try:
        return _to_seconds(np.char.strip(texts))
    except ValueError:
        i = _first_bad(np.char.strip(texts), _to_seconds)
        raise MeasurementError(
            f"column '{column}': {str(texts[i])!r} is not a timestamp "
            "(expected ISO-8601 or unix seconds)",
            source=name,
            row=int(lines[i]),
        ) from None


def _column_index(header: list[str], column: str, name: str) -> int:
    try:
        return header.index(column)
    except ValueError:
        raise MeasurementError(
            f"missing column '{column}' (columns: {', '.join(header)})", source=name, row=1
        ) from None


def _find_column(header: list[str], candidates: Sequence[str]) -> str | None:
    lowered = {h.lower(): h for h in header}
    for candidate in candidates:
        if candidate in lowered:
            return lowered[candidate]
    return None


def _check_values(values: np.ndarray, lines: np.ndarray, what: str, name: str) -> None:
    bad = np.isinf(values) | (values < 0)
    if bad.any():
        i = int(np.argmax(bad))
        kind = "is infinite" if np.isinf(values[i]) else "is negative"
        raise MeasurementError(f"{what} {kind} ({values[i]:g})", source=name, row=int(lines[i]))


def _check_order(times: np.ndarray, lines: np.ndarray, previous: float, name: str) -> None:
    """Timestamps must strictly increase; a repeat or step back is an error at its row."""
    if not np.isfinite(times).all():
        i = int(np.argmax(~np.isfinite(times)))
        raise MeasurementError("timestamp is not finite", source=name, row=int(lines[i]))
    steps = np.diff(times, prepend=previous)
    bad = steps <= 0
    if bad.any():
        i = int(np.argmax(bad))
        kind = "duplicate timestamp" if steps[i] == 0 else "timestamps are not sorted"
        raise MeasurementError(
            f"{kind}: {format_time(times[i])} does not come after the previous row",
            source=name,
            row=int(lines[i]),
        )


def _read_csv_raw(
    path: Path,
    name: str,
    timestamp_column: str | None,
    value_columns: Sequence[str] | None,
    chunk_rows: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Read a CSV time series into raw (times, summed values), validated chunk by chunk."""
    header = _read_header(path, name)
    ts_name = timestamp_column or _find_column(header, TIMESTAMP_CANDIDATES) or header[0]
    ts_index = _column_index(header, ts_name, name)
    if value_columns:
        names = list(value_columns)
        indexes = [_column_index(header, c, name) for c in names]
    else:
        others = [i for i, h in enumerate(header) if i != ts_index and h]
        if len(others) != 1:
            raise MeasurementError(
                f"cannot tell which column holds the values ({len(others)} candidates: "
                f"{', '.join(header[i] for i in others) or 'none'}); name it with --column",
                source=name,
                row=1,
            )
        indexes = others
        names = [header[others[0]]]

    time_parts: list[np.ndarray] = []
    value_parts: list[np.ndarray] = []
    previous = -math.inf
    for cols, lines in _iter_chunks(path, name, [ts_index, *indexes], chunk_rows):
        times = _times(cols[0], lines, ts_name, name)
        _check_order(times, lines, previous, name)
        previous = float(times[-1])
        total = np.zeros(times.shape, dtype=np.float64)
        for text, column in zip(cols[1:], names, strict=True):
            values = _numbers(text, lines, column, name)
            _check_values(values, lines, f"value in column '{column}'", name)
            total += values  # NaN in any column makes the sum missing, as it should
        time_parts.append(times)
        value_parts.append(total)
    if not time_parts:
        raise MeasurementError("empty file: no data rows", source=name, row=2)
    return np.concatenate(time_parts), np.concatenate(value_parts)


# --------------------------------------------------------------------------- grid


def _median_step(times: np.ndarray) -> float:
    return float(np.median(np.diff(times)))


def _grid(
    times: np.ndarray,
    values: np.ndarray,
    step: float,
    max_gap_steps: int,
    start: float,
    stop: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[Gap]]:
    """Put irregular samples on the grid ``start + k*step`` (carry last value forward).

    NaN samples are missing samples. Holes longer than ``max_gap_steps`` steps are
    excluded (NaN) and returned as gaps rather than bridged. Grid points before
    the first or after the last sample are reported as outside (``inside`` False).
    """
    keep = ~np.isnan(values)
    t = times[keep]
    v = values[keep]
    n = int(math.floor((stop - start) / step + 1e-9)) + 1
    grid = start + step * np.arange(n, dtype=np.float64)
    out = np.full(n, np.nan)
    inside = (grid >= times[0] - 1e-9) & (grid <= times[-1] + 1e-9)
    gaps: list[Gap] = []
    if t.size == 0:
        return grid, out, inside, gaps
    idx = np.searchsorted(t, grid + 1e-9, side="right") - 1
    has = idx >= 0
    out[has] = v[idx[has]]
    # Missing before the first real sample (e.g. leading NaNs) is a hole too.
    limit = max_gap_steps * step
    bounds = np.concatenate(([times[0]], t, [times[-1]]))
    holes = np.diff(bounds)
    big = np.flatnonzero(holes > limit + 1e-9)
    if big.size:
        hole_start = bounds[big]
        hole_end = bounds[big + 1]
        # Grid points strictly inside a big hole are unmeasured; a point within one
        # step after the last sample is still covered by that sample.
        lo = np.searchsorted(grid, hole_start + step - 1e-9, side="left")
        hi = np.searchsorted(grid, hole_end - 1e-9, side="left")
        # Leading hole: nothing was measured before it, so start at its first point.
        lo = np.where(big == 0, np.searchsorted(grid, hole_start - 1e-9, side="left"), lo)
        delta = np.zeros(n + 1, dtype=np.int64)
        np.add.at(delta, lo, 1)
        np.add.at(delta, hi, -1)
        out[np.cumsum(delta[:-1]) > 0] = np.nan
        gaps = [Gap(float(a), float(b)) for a, b in zip(hole_start, hole_end, strict=True)]
    out[~inside] = np.nan
    return grid, out, inside, gaps


def _finish(
    times: np.ndarray,
    values: np.ndarray,
    *,
    name: str,
    step_seconds: float | None,
    max_gap_steps: int,
) -> Series:
    """Validate raw samples and grid them into a :class:`Series`."""
    if times.size == 0:
        raise MeasurementError("no samples", source=name, row=2)
    if times.size < 2:
        raise MeasurementError("only one sample: a series needs at least two", source=name, row=2)
    if np.isnan(values).all():
        raise MeasurementError("every sample is missing (NaN)", source=name, row=2)
    step = float(step_seconds) if step_seconds else _median_step(times)
    if not (step > 0 and math.isfinite(step)):
        raise MeasurementError(f"step must be positive, got {step:g} seconds", source=name)
    if max_gap_steps < 1:
        raise MeasurementError("max_gap_steps must be at least 1", source=name)
    grid, out, _inside, gaps = _grid(times, values, step, max_gap_steps, times[0], times[-1])
    valid = ~np.isnan(out)
    if not valid.any():
        raise MeasurementError("no usable sample after gridding", source=name)
    measured = times[~np.isnan(values)]
    return Series(
        times=grid,
        values=out,
        valid=valid,
        step_seconds=step,
        source=name,
        gaps=tuple(gaps),
        first=float(measured[0]),
        last=float(measured[-1]),
    )


# --------------------------------------------------------------------------- Prometheus


def _labels(metric: Mapping[str, Any]) -> str:
    name = metric.get("__name__", "")
    rest = ",".join(f'{k}="{v}"' for k, v in sorted(metric.items()) if k != "__name__")
    return f"{name}{{{rest}}}"


def _read_prometheus(
    path: Path,
    name: str,
    match: Mapping[str, str] | None,
    step_seconds: float | None,
    max_gap_steps: int,
) -> Series:
    """Read a ``query_range`` answer; sum its series on one grid (or pick by labels)."""
    try:
        with path.open(encoding="utf-8") as handle:
            doc = json.load(handle)
    except FileNotFoundError:
        raise MeasurementError("file not found", source=name) from None
    except json.JSONDecodeError as exc:
        raise MeasurementError(f"not valid JSON: {exc.msg}", source=name, row=exc.lineno) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise MeasurementError(f"cannot read: {exc}", source=name) from None

    if not isinstance(doc, dict):
        raise MeasurementError("not a Prometheus query_range answer (top level is not an object)", source=name)
    if doc.get("status") != "success":
        raise MeasurementError(
            f"Prometheus answer status is {doc.get('status')!r}: {doc.get('error', 'no data')}", source=name
        )
    data = doc.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        kind = data.get("resultType") if isinstance(data, dict) else None
        raise MeasurementError(
            f"expected data.resultType 'matrix' (a range query), got {kind!r}", source=name
        )
    result = data.get("result")
    if not isinstance(result, list) or not result:
        raise MeasurementError("the answer holds no series (data.result is empty)", source=name)

    chosen: list[tuple[str, np.ndarray, np.ndarray]] = []
    for number, entry in enumerate(result, start=1):
        if not isinstance(entry, dict) or not isinstance(entry.get("values"), list):
            raise MeasurementError(f"series {number} has no 'values' list", source=name)
        metric = entry.get("metric") or {}
        if not isinstance(metric, dict):
            raise MeasurementError(f"series {number} has a bad 'metric'", source=name)
        if match and any(str(metric.get(k)) != str(v) for k, v in match.items()):
            continue
        label = _labels(metric)
        pairs = entry["values"]
        if not pairs:
            continue
        try:
            if any(not isinstance(p, list) or len(p) != 2 for p in pairs):
                raise ValueError
            times = np.array([p[0] for p in pairs], dtype=np.float64)
            raw = np.array([str(p[1]) for p in pairs], dtype=np.str_)
        except (ValueError, TypeError):
            bad = next(
                (i for i, p in enumerate(pairs) if not (isinstance(p, list) and len(p) == 2)), 0
            )
            raise MeasurementError(
                f"series {label}: sample {bad + 1} is not a [time, \"value\"] pair", source=name, row=bad + 1
            ) from None
        lines = np.arange(1, times.size + 1)
        try:
            values = raw.astype(np.float64)
        except ValueError:
            i = _first_bad(raw, lambda a: a.astype(np.float64))
            raise MeasurementError(
                f"series {label}: sample {i + 1} value {str(raw[i])!r} is not a number",
                source=name,
                row=i + 1,
            ) from None
        _check_order(times, lines, -math.inf, f"{name} series {label} sample")
        if np.isinf(values).any():
            i = int(np.argmax(np.isinf(values)))
            raise MeasurementError(
                f"series {label}: sample {i + 1} at {format_time(times[i])} is {raw[i]}",
                source=name,
                row=i + 1,
            )
        if (values < 0).any():
            i = int(np.argmax(values < 0))
            raise MeasurementError(
                f"series {label}: sample {i + 1} is negative ({values[i]:g})", source=name, row=i + 1
            )
        chosen.append((label, times, values))

    if not chosen:
        wanted = ",".join(f"{k}={v}" for k, v in (match or {}).items())
        known = "; ".join(_labels(e.get("metric") or {}) for e in result[:5] if isinstance(e, dict))
        raise MeasurementError(f"no series matches {wanted or 'anything'} (series: {known})", source=name)
    if len(chosen) == 1:
        _label, times, values = chosen[0]
        return _finish(times, values, name=name, step_seconds=step_seconds, max_gap_steps=max_gap_steps)

    # Several series: sum them on one grid. A series contributes 0 outside its own
    # span (that replica did not exist yet), but a hole inside it poisons the sum.
    for label, times, values in chosen:
        if times.size < 2 and step_seconds is None:
            raise MeasurementError(f"series {label} has one sample; give the step", source=name, row=1)
    step = float(step_seconds) if step_seconds else float(
        np.median(np.concatenate([np.diff(t) for _, t, _ in chosen]))
    )
    start = min(float(t[0]) for _, t, _ in chosen)
    stop = max(float(t[-1]) for _, t, _ in chosen)
    total: np.ndarray | None = None
    gaps: list[Gap] = []
    for _label, times, values in chosen:
        grid, out, inside, series_gaps = _grid(times, values, step, max_gap_steps, start, stop)
        out = np.where(inside, out, 0.0)
        total = out if total is None else total + out
        gaps.extend(series_gaps)
    assert total is not None
    if np.isnan(total).all():
        raise MeasurementError("every sample is missing (NaN)", source=name)
    measured = [t[~np.isnan(v)] for _, t, v in chosen]
    firsts = [m[0] for m in measured if m.size]
    lasts = [m[-1] for m in measured if m.size]
    gaps.sort(key=lambda g: (g.start, g.end))
    return Series(
        times=grid,
        values=total,
        valid=~np.isnan(total),
        step_seconds=step,
        source=name,
        gaps=tuple(gaps),
        first=float(min(firsts)),
        last=float(max(lasts)),
    )


# --------------------------------------------------------------------------- requests


def _read_intervals(
    path: Path,
    name: str,
    start_column: str | None,
    end_column: str | None,
    duration_column: str | None,
    chunk_rows: int,
    extra_column: str | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """Read (start, end, extra) per row; end may come from start + duration.

    When there is no start column, only durations are returned (start = 0).
    Returns arrays of starts, ends, the extra column (or None) and durations.
    """
    header = _read_header(path, name)
    start_name = start_column or _find_column(header, START_CANDIDATES)
    end_name = end_column or (None if duration_column else _find_column(header, END_CANDIDATES))
    dur_name = duration_column or (None if end_name else _find_column(header, DURATION_CANDIDATES))
    if end_name is None and dur_name is None:
        raise MeasurementError(
            "needs an end column or a duration column (name them with the end/duration options)",
            source=name,
            row=1,
        )
    if end_name is not None and start_name is None:
        raise MeasurementError("an end column needs a start column too", source=name, row=1)
    wanted = [c for c in (start_name, end_name, dur_name, extra_column) if c is not None]
    indexes = [_column_index(header, c, name) for c in wanted]
    slot = {c: i for i, c in enumerate(wanted)}

    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    extras: list[np.ndarray] = []
    for cols, lines in _iter_chunks(path, name, indexes, chunk_rows):
        begin = (
            _times(cols[slot[start_name]], lines, start_name, name)
            if start_name
            else np.zeros(lines.shape)
        )
        if end_name is not None:
            finish = _times(cols[slot[end_name]], lines, end_name, name)
        else:
            assert dur_name is not None
            duration = _numbers(cols[slot[dur_name]], lines, dur_name, name)
            if np.isnan(duration).any():
                i = int(np.argmax(np.isnan(duration)))
                raise MeasurementError(f"column '{dur_name}' is empty", source=name, row=int(lines[i]))
            _check_values(duration, lines, f"duration in column '{dur_name}'", name)
            finish = begin + duration
        backwards = finish < begin
        if backwards.any():
            i = int(np.argmax(backwards))
            raise MeasurementError("ends before it starts", source=name, row=int(lines[i]))
        starts.append(begin)
        ends.append(finish)
        if extra_column is not None:
            extra = _numbers(cols[slot[extra_column]], lines, extra_column, name)
            _check_values(extra, lines, f"value in column '{extra_column}'", name)
            extras.append(extra)
    if not starts:
        raise MeasurementError("empty file: no data rows", source=name, row=2)
    begin_all = np.concatenate(starts)
    end_all = np.concatenate(ends)
    extra_all = np.concatenate(extras) if extra_column is not None else None
    return begin_all, end_all, extra_all, end_all - begin_all


def concurrency(starts: np.ndarray, ends: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """c(t) = #{start <= t < end} at each grid time, by two sorted searches.

    Every request with ``end <= t`` also has ``start <= t``, so the difference of
    the two counts is exactly the number in flight.
    """
    s = np.sort(starts)
    e = np.sort(ends)
    return (np.searchsorted(s, grid, side="right") - np.searchsorted(e, grid, side="right")).astype(
        np.float64
    )


def _read_requests(
    path: Path,
    name: str,
    start_column: str | None,
    end_column: str | None,
    duration_column: str | None,
    step_seconds: float | None,
    chunk_rows: int,
) -> Series:
    starts, ends, _extra, _durations = _read_intervals(
        path, name, start_column, end_column, duration_column, chunk_rows
    )
    # A request log has no holes: no request means nothing in flight. One second
    # is the natural default resolution for in-flight counts.
    step = float(step_seconds) if step_seconds else 1.0
    if step <= 0:
        raise MeasurementError("step must be positive", source=name)
    first = float(np.min(starts))
    last = float(np.max(ends))
    n = int(math.floor((last - first) / step)) + 1
    if n < 2:
        raise MeasurementError("the requests span less than two steps", source=name, row=2)
    grid = first + step * np.arange(n, dtype=np.float64)
    values = concurrency(starts, ends, grid)
    return Series(
        times=grid,
        values=values,
        valid=np.ones(n, dtype=bool),
        step_seconds=step,
        source=name,
        gaps=(),
        first=first,
        last=last,
    )


# --------------------------------------------------------------------------- public


def read_series(
    path: str | Path,
    *,
    format: str = "auto",  # noqa: A002 - the public option name is "format"
    timestamp_column: str | None = None,
    value_columns: Sequence[str] | None = None,
    start_column: str | None = None,
    end_column: str | None = None,
    duration_column: str | None = None,
    match: Mapping[str, str] | None = None,
    step_seconds: float | None = None,
    max_gap_steps: int = 5,
    display_name: str | None = None,
    chunk_rows: int = CHUNK_ROWS,
) -> Series:
    """Read a measurement into a regular :class:`Series`.

    ``format`` is ``auto`` (``.json`` -> ``prometheus``, anything else ``csv``),
    ``csv``, ``prometheus`` or ``requests``. ``display_name`` is how error
    messages name the file (defaults to the path as given). Raises
    :class:`MeasurementError` for every bad-input case.
    """
    path = Path(path)
    name = display_name or str(path)
    kind = format
    if kind == "auto":
        kind = "prometheus" if path.suffix.lower() == ".json" else "csv"
    if kind == "csv":
        times, values = _read_csv_raw(path, name, timestamp_column, value_columns, chunk_rows)
        return _finish(times, values, name=name, step_seconds=step_seconds, max_gap_steps=max_gap_steps)
    if kind == "prometheus":
        return _read_prometheus(path, name, match, step_seconds, max_gap_steps)
    if kind == "requests":
        return _read_requests(
            path, name, start_column, end_column, duration_column, step_seconds, chunk_rows
        )
    raise MeasurementError(
        f"unknown measurement format {format!r} (expected auto, csv, prometheus or requests)",
        source=name,
    )


def read_jobs(
    path: str | Path,
    *,
    duration_column: str | None = None,
    start_column: str | None = None,
    end_column: str | None = None,
    gpus_column: str | None = None,
    display_name: str | None = None,
    chunk_rows: int = CHUNK_ROWS,
) -> Jobs:
    """Read a job list (duration or start/end, and GPUs per job) into :class:`Jobs`.

    Without a GPU column every job counts as one GPU.
    """
    path = Path(path)
    name = display_name or str(path)
    header = _read_header(path, name)
    gpus_name = gpus_column or _find_column(header, GPU_CANDIDATES)
    if gpus_column is not None:
        _column_index(header, gpus_column, name)
    _starts, _ends, gpus, durations = _read_intervals(
        path, name, start_column, end_column, duration_column, chunk_rows, extra_column=gpus_name
    )
    if gpus is None:
        gpus = np.ones(durations.shape)
    elif np.isnan(gpus).any():
        raise MeasurementError(f"column '{gpus_name}' has an empty cell", source=name)
    return Jobs(durations=durations, gpus=gpus, source=name)


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
