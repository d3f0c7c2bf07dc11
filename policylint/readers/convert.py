"""Column conversions and row checks shared by every reader.

A column arrives as an Arrow array, typed or text. Conversions are whole-array
Arrow or numpy operations; only when one fails is the first offending row
searched for (by halving, each half converted natively), so a message can name
the file, the row and the text that was in it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from policylint.errors import MeasurementError
from policylint.readers.arrays import to_numpy
from policylint.readers.limits import TraceLimits
from policylint.readers.rows import Rows
from policylint.readers.timestamps import EPOCH_UNITS, detect_unit, format_time, iso_to_seconds, timestamps_to_seconds

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "MAX_VALUE",
    "TimeColumn",
    "check_order",
    "order_steps",
    "check_range",
    "check_times_range",
    "check_values",
    "epoch_seconds",
    "first_failing",
    "numbers",
    "refused_value",
    "time_origin",
    "times",
]

_UNIT_WORDS = {"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}


def first_failing(size: int, works: Callable[[int, int], bool]) -> int:
    """Index of the first element whose conversion fails, by halving.

    ``works(a, b)`` converts elements ``[a, b)`` and says whether that worked;
    the whole range is known to fail. Each step converts one half natively.
    """
    lo, hi = 0, size
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if works(lo, mid):
            lo = mid
        else:
            hi = mid
    return lo


def _text(column: pa.ChunkedArray, index: int) -> str:
    """The cell at ``index`` as the message shows it."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        value = column[index].as_py()
    except (OverflowError, ValueError, pa.ArrowException):
        # A typed time outside Python's datetime range: show the stored number and its unit.
        number = pc.cast(column.slice(index, 1), pa.int64(), safe=False)[0].as_py()
        unit = getattr(column.type, "unit", "")
        return f"{number} {unit}".strip()
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.17g}" if math.isfinite(value) else str(value)
    return str(value)


def _is_text(column: pa.ChunkedArray) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_string(column.type) or pa.types.is_large_string(column.type))


def _is_number(column: pa.ChunkedArray) -> bool:
    import pyarrow as pa

    t = column.type
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) or pa.types.is_null(t))


def _text_to_float(column: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """Text -> float64 (empty and null cells are null); raises ArrowInvalid."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        return pc.cast(column, pa.float64())
    except pa.ArrowInvalid:
        trimmed = pc.utf8_trim_whitespace(column)
        blank = pc.equal(trimmed, "")
        return pc.cast(pc.if_else(blank, pa.scalar(None, pa.string()), trimmed), pa.float64())


def _as_numpy(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A float64 Arrow column as one numpy array, nulls as NaN (chunk by chunk: no detour)."""
    import pyarrow as pa

    if isinstance(column, pa.ChunkedArray):
        parts = [_as_numpy(chunk) for chunk in column.chunks]
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float64)
    return np.asarray(to_numpy(column), dtype=np.float64)


#: The largest magnitude up to which every integer has an exact float64.
EXACT_INTEGER = 2**53

MAX_VALUE = float(EXACT_INTEGER)
"""The largest measured value a reader accepts (a sample, a duration in seconds, GPUs of a job): 2^53.

No concurrency, GPU count, VRAM byte count or duration comes near it (2^53
bytes are 8 PiB, 2^53 seconds 285 million years); a larger number is a wrong
column or a corrupt file. It is the limit integer columns already have (beyond
it a float64 no longer holds every integer), and it keeps everything computed
from a trace - sums, squares, backlogs, GPU counts - far from float64 overflow.
"""


def _first_inexact(column: pa.ChunkedArray) -> int | None:
    """The index of the first integer cell beyond +-2**53, or None."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_integer(column.type) or column.type.bit_width < 54 or len(column) == 0:
        return None
    extremes = pc.min_max(column)
    low, high = extremes["min"].as_py(), extremes["max"].as_py()
    if (high is None or high <= EXACT_INTEGER) and (low is None or low >= -EXACT_INTEGER):
        return None
    offset = 0
    for chunk in column.chunks:
        values = to_numpy(pc.fill_null(chunk, 0))
        beyond = values > EXACT_INTEGER
        if not pa.types.is_unsigned_integer(column.type):
            beyond |= values < -EXACT_INTEGER
        if beyond.any():
            return offset + int(np.argmax(beyond))
        offset += len(chunk)
    return None  # pragma: no cover - min_max said there is one


def _float_values(column: pa.ChunkedArray, label: str, rows: Rows, name: str) -> np.ndarray:
    """A numeric column -> float64, refusing integers a float64 cannot hold exactly.

    Arrow refuses such a cast with an error of its own; a GPU count or a
    concurrency beyond 2**53 is a wrong column or a corrupt file, said as such.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    i = _first_inexact(column)
    if i is not None:
        raise MeasurementError(
            f"column '{label}': {column[i].as_py()} is beyond {EXACT_INTEGER:,} (2^53), "
            "the largest integer a measurement can hold exactly",
            source=name,
            row=rows.row(i),
        )
    try:
        return _as_numpy(pc.cast(column, pa.float64()))
    except pa.ArrowInvalid as exc:  # a decimal out of range, say
        raise MeasurementError(f"column '{label}': cannot read its numbers ({exc})", source=name) from None


def numbers(column: pa.ChunkedArray, label: str, rows: Rows, name: str) -> np.ndarray:
    """A value column -> float64; empty cells (and ``nan``) are NaN, text is an error at its row."""
    import pyarrow as pa

    if _is_number(column):
        return _float_values(column, label, rows, name)
    if not _is_text(column):
        raise MeasurementError(f"column '{label}' holds {column.type}, not numbers", source=name, row=1)
    try:
        return _as_numpy(_text_to_float(column))
    except pa.ArrowInvalid:
        pass

    def works(a: int, b: int) -> bool:
        try:
            _text_to_float(column.slice(a, b - a))
        except pa.ArrowInvalid:
            return False
        return True

    i = first_failing(len(column), works)
    raise MeasurementError(
        f"column '{label}': {_text(column, i)!r} is not a number", source=name, row=rows.row(i)
    ) from None


class TimeColumn:
    """A timestamp column read to numbers: unix seconds, or epoch numbers of a unit still to settle."""

    def __init__(self, values: np.ndarray, epoch: bool, column: pa.ChunkedArray, label: str, rows: Rows) -> None:
        self.values = values
        self.epoch = epoch
        self.relative = False
        self.column = column
        self.label = label
        self.rows = rows


def _not_a_time(column: pa.ChunkedArray, label: str, rows: Rows, name: str, index: int) -> MeasurementError:
    return MeasurementError(
        f"column '{label}': {_text(column, index)!r} is not a timestamp (expected ISO-8601 or an epoch number)",
        source=name,
        row=rows.row(index),
    )


def times(column: pa.ChunkedArray, label: str, rows: Rows, name: str) -> TimeColumn:
    """A timestamp column -> :class:`TimeColumn` (ISO text and Arrow timestamps are seconds already).

    A column is all epoch numbers or all ISO-8601 text, decided by its first
    cell; an empty cell or a value of the other kind is an error at its row.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if column.null_count:
        first_null = int(np.argmax(to_numpy(column.is_null())))
        raise _not_a_time(column, label, rows, name, first_null)
    if pa.types.is_timestamp(column.type) or pa.types.is_date(column.type):
        try:
            seconds = timestamps_to_seconds(column)
        except pa.ArrowException as exc:
            raise MeasurementError(f"column '{label}': cannot read its times ({exc})", source=name) from None
        return TimeColumn(seconds, False, column, label, rows)
    if _is_number(column):
        # Epoch numbers: nanoseconds since 1970 are beyond 2**53, and the float64 a
        # CSV cell would become (a few hundred nanoseconds off) is what is wanted.
        values = _as_numpy(pc.cast(column, pa.float64(), safe=False))
        epoch = True
    elif _is_text(column):
        values, epoch = _text_times(column, label, rows, name)
    else:
        raise MeasurementError(f"column '{label}' holds {column.type}, not timestamps", source=name, row=1)
    finite = np.isfinite(values)
    if not finite.all():
        i = int(np.argmax(~finite))
        raise MeasurementError(
            f"column '{label}': {_text(column, i)!r} is not a finite timestamp", source=name, row=rows.row(i)
        )
    return TimeColumn(values, epoch, column, label, rows)


def _text_times(column: pa.ChunkedArray, label: str, rows: Rows, name: str) -> tuple[np.ndarray, bool]:
    import pyarrow as pa

    if len(column) == 0:
        return np.zeros(0, dtype=np.float64), True
    # The first cell decides what the column is meant to be. A column whose first cell is
    # no number is not all numbers: the whole-column cast Arrow would refuse (about 2 us a
    # row, a hundred times one it accepts) is not tried. A column whose first cell is a
    # number is epoch numbers: an ISO time further down is an error at its row, never a
    # reason to read the numbers as ISO text (numpy reads '1788134400' as a year).
    first_is_number = True
    try:
        _text_to_float(column.slice(0, 1))
    except pa.ArrowInvalid:
        first_is_number = False
    if first_is_number:
        try:
            return _as_numpy(_text_to_float(column)), True
        except pa.ArrowInvalid:
            pass
    else:
        try:
            return iso_to_seconds(column.combine_chunks()), False
        except ValueError:
            pass

    def works(a: int, b: int) -> bool:
        part = column.slice(a, b - a)
        try:
            if first_is_number:
                _text_to_float(part)
            else:
                iso_to_seconds(part.combine_chunks())
        except (pa.ArrowInvalid, ValueError):
            return False
        return True

    i = first_failing(len(column), works)
    if _other_kind(column, i, first_is_number):
        kind = "an epoch number" if first_is_number else "an ISO-8601 time"
        raise MeasurementError(
            f"column '{label}': {_text(column, i)!r} is not {kind} like the rows before it "
            "(a timestamp column holds epoch numbers or ISO-8601 times, not both)",
            source=name,
            row=rows.row(i),
        )
    raise _not_a_time(column, label, rows, name, i)


def _other_kind(column: pa.ChunkedArray, index: int, first_is_number: bool) -> bool:
    """Whether the cell at ``index`` is a time of the kind the column's first cell is not
    (an ISO-8601 time in a column of epoch numbers, a finite number in one of ISO times)."""
    import pyarrow as pa

    cell = column.slice(index, 1)
    try:
        if first_is_number:
            iso_to_seconds(cell.combine_chunks())
            return True
        return bool(np.isfinite(_as_numpy(_text_to_float(cell))).all())
    except (pa.ArrowInvalid, ValueError):
        return False


#: the earliest time, in seconds after a declared time origin, that only an absolute epoch time reaches:
#: about 31.7 years (a relative trace begins near its origin)
ABSOLUTE_SECONDS = 1e9


def epoch_seconds(
    columns: Sequence[TimeColumn], unit: str | None, name: str, origin: float | None = None
) -> str | None:
    """Turn the epoch columns among ``columns`` into seconds, in place; returns the unit used.

    Start and end columns share one clock, so the unit is detected once from the
    largest value of all of them (unless declared). With an ``origin`` (unix
    seconds) the numbers are times relative to it, in seconds unless declared.
    """
    epochs = [c for c in columns if c.epoch and c.values.size]
    if not epochs:
        return unit
    if origin is not None and unit is None:
        unit = "s"  # relative times are small: their magnitude says nothing about the unit
    if unit is None:
        sizes = [max(float(np.max(c.values)), -float(np.min(c.values))) for c in epochs]
        unit = detect_unit(max(sizes))
        if unit is None:
            column = epochs[sizes.index(max(sizes))]
            i = int(np.argmax(np.abs(column.values)))
            raise MeasurementError(
                f"column '{column.label}': {_text(column.column, i)!r} is too large for an epoch time in any unit",
                source=name,
                row=column.rows.row(i),
            )
    elif unit not in EPOCH_UNITS:
        raise MeasurementError(
            f"unknown timestamp unit {unit!r} (expected one of {', '.join(EPOCH_UNITS)})", source=name
        )
    divisor = EPOCH_UNITS[unit]
    for column in epochs:
        if divisor != 1.0:
            column.values = column.values / divisor
        if origin is not None and float(np.min(column.values)) >= ABSOLUTE_SECONDS:
            # times relative to an origin begin near it; these are epoch times, and the origin would
            # move every sample by itself (red team, 2026-12-06, round 13: -21 h onto another trace's night)
            i = int(np.argmin(column.values))
            raise MeasurementError(
                f"column '{column.label}': {_text(column.column, i)!r} read as {_UNIT_WORDS[unit]} after the time"
                f" origin lies {float(column.values[i]) / (365.25 * 86_400):.0f} years after it: these are epoch"
                " times, and a time origin would move every sample",
                source=name,
                row=column.rows.row(i),
            )
        if origin is not None:
            column.values = column.values + origin
        column.epoch = False
        column.relative = origin is not None
    return unit


def check_range(column: TimeColumn, unit: str | None, limits: TraceLimits, name: str) -> None:
    """Every time of ``column`` must fall inside the accepted years."""
    values = column.values
    if values.size == 0 or (values.min() >= limits.min_time and values.max() < limits.max_time):
        return  # two reductions, no temporary arrays: the common case
    bad = (values < limits.min_time) | (values >= limits.max_time)
    i = int(np.argmax(bad))
    how = ""
    if column.relative and unit:
        how = f" read as {_UNIT_WORDS[unit]} after the time origin"
    elif unit:
        how = f" read as epoch {_UNIT_WORDS[unit]}"
    hint = "; declare the timestamp unit if that is wrong" if unit else ""
    raise MeasurementError(
        f"column '{column.label}': {_text(column.column, i)!r}{how} is outside the years "
        f"{limits.min_year}-{limits.max_year}{hint}",
        source=name,
        row=column.rows.row(i),
    )


def check_times_range(values: np.ndarray, what: str, rows: Rows, limits: TraceLimits, name: str) -> None:
    """Computed times (start + duration) must fall inside the accepted years too."""
    bad = (values < limits.min_time) | (values >= limits.max_time) | ~np.isfinite(values)
    if bad.any():
        i = int(np.argmax(bad))
        raise MeasurementError(
            f"{what} ({values[i]:g} s) is outside the years {limits.min_year}-{limits.max_year}",
            source=name,
            row=rows.row(i),
        )


def check_values(values: np.ndarray, rows: Rows, what: str, name: str) -> None:
    """Values must be finite (NaN means missing), not negative and at most :data:`MAX_VALUE`."""
    if values.size and values.min() >= 0 and values.max() <= MAX_VALUE:
        return  # two reductions, no temporaries: the usual column (a NaN makes both comparisons false)
    bad = (values < 0) | (values > MAX_VALUE)  # infinity is beyond the limit too
    if bad.any():
        i = int(np.argmax(bad))
        raise MeasurementError(f"{what} {refused_value(float(values[i]))}", source=name, row=rows.row(i))


def refused_value(value: float) -> str:
    """What is wrong with a value :func:`check_values` refuses, as its messages say it."""
    if np.isinf(value):
        return f"is infinite ({value:g})"
    if value < 0:
        return f"is negative ({value:g})"
    return f"is implausibly large ({value:g}; the limit for a measured value is 2^53 = {EXACT_INTEGER:,})"


def order_steps(times_: np.ndarray) -> tuple[bool, float | None]:
    """(whether the finite ``times_`` strictly increase, the step between them when it never changes)."""
    if times_.size < 2:
        return True, None
    steps = np.diff(times_)
    low = steps.min()
    if not low > 0:
        return False, None
    return True, (float(low) if low == steps.max() else None)


def check_order(times_: np.ndarray, rows: Rows, name: str, *, finite: bool = False) -> float | None:
    """Timestamps must strictly increase; a repeat or step back is an error at its row.

    Returns the step between samples when it is always the same (the grid's
    median step then needs no second pass), else None. ``finite``: the caller
    knows that every time is finite.
    """
    if not finite and not np.isfinite(times_).all():
        i = int(np.argmax(~np.isfinite(times_)))
        raise MeasurementError("timestamp is not finite", source=name, row=rows.row(i))
    increasing, uniform = order_steps(times_)
    if increasing:
        return uniform
    steps = np.diff(times_)
    bad = steps <= 0
    if bad.any():
        i = int(np.argmax(bad)) + 1
        kind = "duplicate timestamp" if steps[i - 1] == 0 else "timestamps are not sorted"
        raise MeasurementError(
            f"{kind}: {format_time(times_[i])} does not come after the previous row",
            source=name,
            row=rows.row(i),
        )
    return None  # pragma: no cover - a step <= 0 was found above


def time_origin(text: str | float | None, name: str) -> float | None:
    """A declared time origin (ISO-8601 or unix seconds) as unix seconds."""
    from policylint.readers.timestamps import parse_time

    if text is None:
        return None
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        try:
            value = parse_time(str(text))
        except ValueError:
            raise MeasurementError(f"time origin {text!r} is not an ISO-8601 time or unix seconds", source=name) from None
    if not math.isfinite(value):
        raise MeasurementError(f"time origin {text!r} is not finite", source=name)
    return value
