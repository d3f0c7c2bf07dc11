"""Time: parsing ISO-8601 and epoch numbers to unix seconds, and formatting.

Internally every time is float64 unix seconds (UTC); at today's dates that keeps
a resolution of about a quarter of a microsecond, so timestamps are read to the
microsecond and two requests a few microseconds apart stay distinct.

Epoch numbers are seconds, milliseconds, microseconds or nanoseconds. The unit
is declared, or detected from the magnitude of the largest value: below 1e10 is
seconds (10 digits: until the year 2286), below 1e13 milliseconds, below 1e16
microseconds, below 1e19 nanoseconds. The result must then fall inside the
accepted years (:class:`~policylint.readers.limits.TraceLimits`), so a wrong
unit is an error, never a silent series in 1970 or the year 50,000.
"""

from __future__ import annotations

import math
import re
import warnings
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import numpy as np

from policylint.readers.arrays import to_numpy
from policylint.readers.series import Exclusion

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "EPOCH_UNITS",
    "detect_unit",
    "format_time",
    "iso_to_seconds",
    "parse_exclusion",
    "parse_iso",
    "parse_time",
    "timestamps_to_seconds",
]

EPOCH_UNITS = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}
"""Divisor that turns a number in each unit into seconds."""

_UNIT_BOUNDS = (("s", 1e10), ("ms", 1e13), ("us", 1e16), ("ns", 1e19))


#: Longest text read as a timestamp (an ISO time with nanoseconds and an offset is 35).
MAX_TIMESTAMP_CHARS = 64

def detect_unit(largest: float) -> str | None:
    """Epoch unit from the largest absolute value of a column (None: too large for any)."""
    for unit, bound in _UNIT_BOUNDS:
        if largest < bound:
            return unit
    return None


def format_time(seconds: float) -> str:
    """Format unix seconds as an ISO-8601 UTC string ending in ``Z``.

    Milliseconds are shown when there are any, microseconds only when the time
    has a part finer than a millisecond. A time no calendar date can show (before
    year 1 or after 9999, or not finite) is written as its number of seconds: an
    error message that shows a bad time must not fail on it.
    """
    try:
        stamp = datetime.fromtimestamp(float(seconds), tz=UTC)
    except (ValueError, OverflowError, OSError):
        return f"{float(seconds):g} s since 1970-01-01T00:00:00Z"
    if stamp.microsecond % 1000:
        spec = "microseconds"
    elif stamp.microsecond:
        spec = "milliseconds"
    else:
        spec = "seconds"
    return stamp.isoformat(timespec=spec).replace("+00:00", "Z")


def parse_iso(texts: np.ndarray) -> np.ndarray:
    """Vectorised ISO-8601 parse to float unix seconds, to the microsecond.

    Accepts ``T`` or a space between date and time, an optional trailing ``Z``
    and an optional ``±HH:MM``, ``±HHMM`` or ``±HH`` offset (numpy itself refuses zones).
    Raises ``ValueError`` on anything else; callers locate the bad row.
    This is the slow path; :func:`iso_to_seconds` tries Arrow's parser first.
    """
    s = np.char.strip(texts.astype(np.str_))
    s = np.char.replace(s, " ", "T")
    s = np.char.rstrip(s, "Zz")
    offset = np.zeros(s.shape, dtype=np.float64)
    for sign, mark in ((1.0, "+"), (-1.0, "-")):
        parts = np.char.rpartition(s, mark)
        head, tail = parts[..., 0], parts[..., 2]
        # Only HH:MM, HHMM or HH after the last sign, following a time part, is an
        # offset; a "-" inside the date never follows a "T".
        length = np.char.str_len(tail)
        digits = np.char.isdigit(np.char.replace(tail, ":", ""))
        shape_ok = ((length == 5) & (np.char.find(tail, ":") == 2)) | (((length == 4) | (length == 2)) & digits)
        is_offset = (parts[..., 1] == mark) & shape_ok & digits & (np.char.find(head, "T") > 0)
        if is_offset.any():
            # "02:30", "0230" and "02" all become the number 230 or 200: hours and minutes.
            hhmm = np.char.ljust(np.char.replace(np.where(is_offset, tail, "0000"), ":", ""), 4, "0").astype(np.int64)
            seconds = (hhmm // 100) * 3600.0 + (hhmm % 100) * 60.0
            offset = np.where(is_offset, sign * seconds, offset)
            s = np.where(is_offset, head, s)
    # More than six decimals (Azure exports write seven) are cut to microseconds.
    s = _cut_fraction(s)
    with warnings.catch_warnings():
        # numpy still reads a zone it does not know how to name, with a warning;
        # the forms it can meet here were handled above.
        warnings.simplefilter("ignore", UserWarning)
        stamps = s.astype("datetime64[us]")
    if np.isnat(stamps).any():
        raise ValueError("not a time")
    # Local time with an offset is UTC minus the offset, subtracted in whole microseconds
    # before the one division: the value Arrow's parser and the one-string fast path give.
    return _micros_to_seconds(stamps.astype(np.int64) - (offset * 1e6).astype(np.int64))


def _cut_fraction(s: np.ndarray) -> np.ndarray:
    """Drop decimals of the seconds beyond the sixth (numpy refuses them for ``us``)."""
    parts = np.char.partition(s, ".")
    long = (parts[..., 1] == ".") & (np.char.str_len(parts[..., 2]) > 6)
    if not long.any():
        return s
    cut = np.char.add(np.char.add(parts[..., 0], "."), np.char.ljust(parts[..., 2], 6).astype("<U6"))
    return np.where(long, cut, s)


def _micros_to_seconds(micros: np.ndarray) -> np.ndarray:
    # One correctly rounded division of an exact integer: a millisecond time
    # gives exactly what ms / 1000 gives, so results do not depend on the path.
    # (The division converts each integer to float64 first, as astype does: one pass.)
    seconds: np.ndarray = np.divide(micros, 1e6, dtype=np.float64)
    return seconds


#: The common ISO-8601 forms (date; date and time to the minute, second or microsecond; ``Z`` or
#: ``±HH:MM``) in which ``datetime.fromisoformat`` and :func:`parse_iso` read the same instant.
_COMMON_ISO = re.compile(
    r"\d{4}-\d\d-\d\d(?:[T ](?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d{1,6})?)?)?(?:Z|[+-]\d\d:\d\d)?",
    re.ASCII,
)
_EPOCH = datetime(1970, 1, 1)
_MICROSECOND = timedelta(microseconds=1)


def _common_iso(text: str) -> float | None:
    """Unix seconds of a stripped text in a common ISO form, exactly as :func:`parse_iso` gives them; else None.

    One string through numpy costs about 0.4 ms, ``datetime.fromisoformat``
    about half a microsecond. Anything outside :data:`_COMMON_ISO`, or that
    ``fromisoformat`` refuses (a 30 February, an offset of 24 hours), goes the
    slow way, which decides what it is and what the error says.
    """
    if not _COMMON_ISO.fullmatch(text):
        return None
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        return None
    offset = stamp.utcoffset()
    micros = (stamp.replace(tzinfo=None) - _EPOCH) // _MICROSECOND
    if offset is not None:
        micros -= offset // _MICROSECOND
    return micros / 1e6  # the one correctly rounded division of _micros_to_seconds


def parse_time(text: str) -> float:
    """Parse one ISO-8601 date/datetime or unix-seconds string to unix seconds.

    Raises ``ValueError`` when the text is neither.
    """
    text = text.strip()
    try:
        value = float(text)
    except ValueError:
        fast = _common_iso(text)
        return fast if fast is not None else float(parse_iso(np.array([text]))[0])
    if not math.isfinite(value):
        raise ValueError(f"not a time: {text!r}")
    return value


def _is_date_only(text: str) -> bool:
    text = text.strip()
    return len(text) == 10 and text[4] == "-" and text[7] == "-"


#: the largest UTC offset of any time zone (Line Islands, +14:00; the lowest is -12:00)
MAX_UTC_OFFSET_SECONDS = 14 * 3600
_OFFSET = re.compile(r"T[^+-]*(?P<sign>[+-])(?P<h>\d{2}):?(?P<m>\d{2})(?::?\d{2}(?:\.\d+)?)?$")


def _real_offset(text: str, whole: str) -> None:
    """Refuse an exclusion time whose UTC offset no time zone has (``+23:59``): it moves the range by up to a day.

    Red team, 2026-12-06: ``start: 2026-10-14T09:00:00+23:59`` read as a six-hour window removed
    thirty hours. No time zone is more than 14 hours from UTC.
    """
    m = _OFFSET.search(text)
    if m is None:
        return
    seconds = int(m["h"]) * 3600 + int(m["m"]) * 60
    if seconds > MAX_UTC_OFFSET_SECONDS:
        raise ValueError(f"exclusion {whole!r}: {text} has the UTC offset {m['sign']}{m['h']}:{m['m']}, which no time zone"
                         " has (none is more than 14 hours from UTC); write the time in UTC (Z) or in the zone's own offset")


def parse_exclusion(text: str) -> Exclusion:
    """Parse ``START/END`` into an :class:`Exclusion`.

    A date-only END means the whole of that day is excluded (end of day), which
    is how people write "2020-05-01/2020-05-03" for a holiday.
    """
    start_text, sep, end_text = text.partition("/")
    if not sep or not start_text.strip() or not end_text.strip():
        raise ValueError(f"exclusion {text!r} must be START/END (ISO dates or datetimes)")
    for part in (start_text, end_text):
        _real_offset(part.strip(), text)
    start = parse_time(start_text)
    end = parse_time(end_text)
    if _is_date_only(end_text):
        end += 86_400.0
    if end <= start:
        raise ValueError(f"exclusion {text!r} ends before it starts")
    return Exclusion(start, end, text.strip())


def timestamps_to_seconds(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An Arrow timestamp or date column -> float unix seconds (to the microsecond).

    Arrow stores every timestamp as an integer count since the epoch in UTC,
    so the zone needs no handling (nor reading: a damaged file may hold a zone
    name that is not even text).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_date(column.type):
        column = pc.cast(column, pa.timestamp("ms"), safe=False)
    cast = pc.cast(column, pa.int64())
    # chunk by chunk: a chunk without nulls (the caller refused nulls) is read in place, not copied
    parts = [np.asarray(to_numpy(c), dtype=np.int64) for c in getattr(cast, "chunks", [cast])]
    ints = parts[0] if len(parts) == 1 else (np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64))
    unit = column.type.unit
    if unit in ("s", "ms"):
        # Divided as floats, never multiplied up to microseconds: a time a few hundred thousand
        # years out would overflow int64 there and wrap silently into the accepted years. For
        # every time in range both ways give the same bits (exact integers, one correctly
        # rounded division of the same number); a time out of range stays out of range.
        seconds: np.ndarray = ints.astype(np.float64) if unit == "s" else np.divide(ints, 1e3, dtype=np.float64)
        return seconds
    return _micros_to_seconds(ints // 1_000 if unit == "ns" else ints)


def iso_to_seconds(column: pa.Array) -> np.ndarray:
    """An Arrow string column of ISO-8601 times -> float unix seconds.

    Arrow's parser is tried first on the whole column (naive, then zoned). When
    it refuses the column, it still reads every row in a common form (naive
    rows as naive, rows ending in ``Z`` or ``±HH:MM`` as zoned: a column that
    mixes them, or holds a few odd rows); only the rows it refuses (a lower-case
    ``z``, more than nine decimals, spaces around the value, a bad row) go
    through :func:`parse_iso`, which gives the same seconds for every row both
    read. Raises ``ValueError`` when a row is no time; nulls are not times.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if column.null_count:
        raise ValueError("empty timestamp")
    # One whole-column cast, naive or zoned as a sample of cells is: a cast Arrow refuses
    # costs about 2 us a row (a hundred times one it accepts), so the other kind is never
    # tried whole, and a sample holding both goes row by row at once.
    zoned = {_LOOKS_ZONED.search(cell) is not None for cell in _sample(column)}
    if len(zoned) == 1:
        target = pa.timestamp("ns", tz="UTC") if zoned.pop() else pa.timestamp("ns")
        try:
            return timestamps_to_seconds(pc.cast(column, target))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    # numpy pads every text to the longest cell: one 4,000-character cell would make the
    # fallback parse hold gigabytes for a small file (found by fuzzing); no timestamp is that long
    text = pa.types.is_string(column.type) or pa.types.is_large_string(column.type)
    longest = pc.max(pc.utf8_length(column)).as_py() if text else None
    if longest is not None and longest > MAX_TIMESTAMP_CHARS:
        raise ValueError(f"a timestamp of {longest} characters")
    if not text:
        return parse_iso(np.asarray(to_numpy(column), dtype=np.str_))
    return _by_rows(column)


def _sample(column: pa.Array, size: int = 64) -> list[str]:
    """Up to ``size`` text cells of ``column``: its first ones and others spread over it."""
    n = len(column)
    at = sorted(set(range(min(n, size // 2))) | {int(i) for i in np.linspace(0, n - 1, size // 2)} if n else set())
    return [cell for cell in column.take(at).to_pylist() if isinstance(cell, str)] if at else []


#: a time zone at the end of a time: what makes Arrow read a column as zoned
_LOOKS_ZONED = re.compile(r"\d(?:[Zz]|[+-]\d\d(?::?\d\d)?)\s*$")

#: rows Arrow reads as naive or as zoned times when the whole column is not one or the other
_NAIVE_ROW = r"^\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d(?:\.\d{1,9})?)?)?$"
_ZONED_ROW = r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d{1,9})?)?(?:Z|[+-]\d\d:\d\d)$"

#: a run of rows Arrow refuses that is this short goes to the slow path whole, not halved further
_SLOW_RUN = 64


def _by_rows(column: pa.Array) -> np.ndarray:
    """Seconds of a text column Arrow refused as a whole: Arrow for the rows it reads, :func:`parse_iso` for the rest."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = np.empty(len(column), dtype=np.float64)
    slow = np.ones(len(column), dtype=bool)
    for pattern, target in ((_NAIVE_ROW, pa.timestamp("ns")), (_ZONED_ROW, pa.timestamp("ns", tz="UTC"))):
        rows = np.flatnonzero(to_numpy(pc.match_substring_regex(column, pattern)))
        if rows.size:
            _arrow_rows(column.take(pa.array(rows)), target, rows, out, slow)
    if slow.any():
        rows = np.flatnonzero(slow)
        out[rows] = parse_iso(np.asarray(to_numpy(column.take(pa.array(rows))), dtype=np.str_))
    return out


def _arrow_rows(part: pa.Array, target: pa.DataType, rows: np.ndarray, out: np.ndarray, slow: np.ndarray) -> None:
    """Convert ``part`` (the column's ``rows``) with Arrow into ``out``, halving around what it refuses.

    The rows Arrow reads are marked done in ``slow``; a refused run of at most
    :data:`_SLOW_RUN` rows stays marked for the slow path.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    pending = [(0, len(part))]
    while pending:
        lo, hi = pending.pop()
        try:
            seconds = timestamps_to_seconds(pc.cast(part.slice(lo, hi - lo), target))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            if hi - lo > _SLOW_RUN:
                mid = (lo + hi) // 2
                pending += [(mid, hi), (lo, mid)]
            continue
        out[rows[lo:hi]] = seconds
        slow[rows[lo:hi]] = False
