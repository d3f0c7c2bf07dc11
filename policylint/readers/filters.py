"""Row filters for tables: ``where`` conditions and ``skipIncomplete``, applied with Arrow compute.

Exports carry rows a measurement must not count: failed requests, pending pods
that never started, CPU-only jobs in a GPU job list. A declaration says which
rows to keep, in a small declarative form (no expressions are evaluated)::

    where:
      status: [SUCCEED]            # the cell is one of these values
      gpus: {gt: 0}                # comparisons: eq, ne, gt, ge, lt, le, in, notIn

Several conditions must all hold. A row whose filter cell is empty matches no
condition. Then, with ``skipIncomplete``, rows with an empty required cell (a
pending pod's ``scheduled_time``) are skipped instead of refused. Nothing
disappears silently: every dropped row is counted, and the counts travel with
the series as notes that ``check`` reports (PL025) and ``bands`` prints.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from policylint.errors import MeasurementError
from policylint.readers.arrays import to_numpy
from policylint.readers.rows import Rows

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["OPERATORS", "Condition", "RowFilter", "Subset", "apply_filter", "empty_cells", "parse_where", "parse_where_text"]

OPERATORS = ("eq", "ne", "gt", "ge", "lt", "le", "in", "notIn")
"""The comparison names a ``where`` condition may use."""

_SYMBOLS = {"eq": "=", "ne": "!=", "gt": ">", "ge": ">=", "lt": "<", "le": "<=", "in": "in", "notIn": "not in"}
_ORDERED = ("gt", "ge", "lt", "le")

Scalar = str | float


@dataclass(frozen=True)
class Condition:
    """One test on one column: ``column op value`` (``value`` is a tuple for in/notIn)."""

    column: str
    op: str
    value: Scalar | tuple[Scalar, ...]

    def describe(self) -> str:
        """The condition as messages show it, e.g. ``gpus > 0`` or ``status in [SUCCEED]``."""
        if isinstance(self.value, tuple):
            return f"{self.column} {_SYMBOLS[self.op]} [{', '.join(_show(v) for v in self.value)}]"
        return f"{self.column} {_SYMBOLS[self.op]} {_show(self.value)}"


@dataclass(frozen=True)
class RowFilter:
    """Which rows of a table count: the ``where`` conditions, and whether incomplete rows are skipped."""

    where: tuple[Condition, ...] = ()
    skip_incomplete: bool = False

    @property
    def active(self) -> bool:
        """Whether the filter can drop anything."""
        return bool(self.where) or self.skip_incomplete


def _show(value: Scalar) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _scalar(value: Any, where: str) -> Scalar:
    if isinstance(value, bool) or value is None or isinstance(value, (list, dict)):
        raise MeasurementError(f"where: {where}: expected a number or a text, got {value!r}")
    if isinstance(value, (int, float)):
        number = float(value)
        if not math.isfinite(number):
            raise MeasurementError(f"where: {where}: {value!r} is not a finite number")
        return number
    return str(value)


def parse_where(spec: Mapping[str, Any] | None) -> tuple[Condition, ...]:
    """Conditions from a declaration's ``where`` mapping (column -> list, scalar or ``{op: value}``)."""
    if not spec:
        return ()
    if not isinstance(spec, Mapping):
        raise MeasurementError(f"where: expected a mapping of column -> condition, got {spec!r}")
    out: list[Condition] = []
    for column, test in spec.items():
        column = str(column)
        if isinstance(test, list):
            out.append(_membership(column, "in", test))
        elif isinstance(test, Mapping):
            if not test:
                raise MeasurementError(f"where: {column}: an empty condition")
            for op, value in test.items():
                if op not in OPERATORS:
                    raise MeasurementError(
                        f"where: {column}: unknown comparison {op!r} (expected one of {', '.join(OPERATORS)})"
                    )
                if op in ("in", "notIn"):
                    out.append(_membership(column, op, value if isinstance(value, list) else [value]))
                else:
                    scalar = _scalar(value, f"{column}.{op}")
                    if op in _ORDERED and not isinstance(scalar, float):
                        raise MeasurementError(f"where: {column}.{op}: {value!r} is not a number")
                    out.append(Condition(column, op, scalar))
        else:
            out.append(Condition(column, "eq", _scalar(test, column)))
    return tuple(out)


def _membership(column: str, op: str, values: list[Any]) -> Condition:
    if not values:
        raise MeasurementError(f"where: {column}: an empty list of values")
    return Condition(column, op, tuple(_scalar(v, column) for v in values))


_TEXT_FORM = re.compile(r"^\s*([^<>=!]+?)\s*(>=|<=|!=|=|>|<)\s*(.*?)\s*$")
_TEXT_OPS = {">=": "ge", "<=": "le", "!=": "notIn", "=": "in", ">": "gt", "<": "lt"}


def parse_where_text(items: Sequence[str]) -> tuple[Condition, ...]:
    """Conditions from ``--where`` texts: ``status=SUCCEED,FINISHED``, ``status!=FAILED``, ``gpus>0``."""
    out: list[Condition] = []
    for item in items:
        found = _TEXT_FORM.match(item)
        if not found or not found.group(3):
            raise MeasurementError(
                f"--where expects COLUMN=V1,V2, COLUMN!=V, COLUMN>N, >=, < or <= N; got {item!r}"
            )
        column, symbol, text = found.groups()
        op = _TEXT_OPS[symbol]
        if op in ("in", "notIn"):
            out.append(Condition(column, op, tuple(v.strip() for v in text.split(",") if v.strip())))
            continue
        try:
            number = float(text)
        except ValueError:
            raise MeasurementError(f"--where {item!r}: {text!r} is not a number") from None
        if not math.isfinite(number):
            raise MeasurementError(f"--where {item!r}: {text!r} is not a finite number")
        out.append(Condition(column, op, number))
    return tuple(out)


class Subset(Rows):
    """Row numbers of the rows a filter kept: data row *i* is row ``kept[i]`` of the file."""

    def __init__(self, base: Rows, kept: np.ndarray) -> None:
        self.base = base
        self.kept = kept

    def row(self, index: int) -> int:
        return self.base.row(int(self.kept[index]))


def _is_text(column: pa.ChunkedArray) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_string(column.type) or pa.types.is_large_string(column.type))


def empty_cells(column: pa.ChunkedArray) -> np.ndarray:
    """True where a cell is empty: null, or text of only spaces."""
    import pyarrow.compute as pc

    mask = pc.is_null(column)
    if _is_text(column):
        blank = pc.equal(pc.utf8_trim_whitespace(column), "")
        mask = pc.or_(mask, pc.fill_null(blank, False))
    return np.asarray(to_numpy(mask), dtype=bool)


def _test(cond: Condition, column: pa.ChunkedArray, rows: Rows, name: str) -> np.ndarray:
    """Where ``column`` satisfies ``cond`` (an empty cell never does)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from policylint.readers.convert import numbers

    values = cond.value if isinstance(cond.value, tuple) else (cond.value,)
    numeric_values = all(isinstance(v, float) for v in values)
    numeric_text = False
    if numeric_values and _is_text(column):
        # A CSV column of numbers arrives as text: compare numbers (200 matches 200.0)
        # when every cell is one; a column with words in it is compared as text.
        try:
            pc.cast(pc.if_else(pc.equal(pc.utf8_trim_whitespace(column), ""), pa.scalar(None, pa.string()),
                               pc.utf8_trim_whitespace(column)), pa.float64())
            numeric_text = True
        except pa.ArrowInvalid:
            numeric_text = False
    if cond.op in _ORDERED or numeric_text or (not _is_text(column) and not pa.types.is_dictionary(column.type)):
        # Numbers: a text column is converted (a cell that is no number is an error at its row).
        if not numeric_values:
            raise MeasurementError(
                f"where: {cond.describe()}: column '{cond.column}' holds numbers, compare it with numbers",
                source=name,
            )
        x = numbers(column, cond.column, rows, name)
        wanted = np.array(values, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            if cond.op == "gt":
                return np.asarray(x > wanted[0])
            if cond.op == "ge":
                return np.asarray(x >= wanted[0])
            if cond.op == "lt":
                return np.asarray(x < wanted[0])
            if cond.op == "le":
                return np.asarray(x <= wanted[0])
            hit = np.isin(x, wanted)
        present = ~np.isnan(x)
        return hit if cond.op in ("eq", "in") else (~hit & present)
    text = pc.cast(column, pa.string()) if not _is_text(column) else column
    text = pc.utf8_trim_whitespace(text)
    hit = pc.fill_null(pc.is_in(text, value_set=pa.array([_show(v) for v in values], type=pa.string())), False)
    out = np.asarray(to_numpy(hit), dtype=bool)
    if cond.op in ("eq", "in"):
        return out
    return np.asarray(~out & ~empty_cells(text), dtype=bool)


def _rows(count: int) -> str:
    return f"{count:,} row" if count == 1 else f"{count:,} rows"


def apply_filter(
    flt: RowFilter,
    columns: list[pa.ChunkedArray],
    labels: Sequence[str],
    tests: Sequence[pa.ChunkedArray],
    required: Sequence[int],
    rows: Rows,
    name: str,
) -> tuple[list[pa.ChunkedArray], Rows, tuple[str, ...]]:
    """Keep the rows that pass ``flt``: returns the kept columns, their row numbers and the notes.

    ``tests`` are the columns of ``flt.where`` in order; ``required`` the
    positions in ``columns`` whose empty cells make a row incomplete. The
    ``where`` conditions run first, so a row the filter drops is never also
    counted as incomplete.
    """
    import pyarrow as pa

    total = len(columns[0]) if columns else 0
    keep = np.ones(total, dtype=bool)
    notes: list[str] = []
    if flt.where:
        failed: list[str] = []
        for cond, column in zip(flt.where, tests, strict=True):
            ok = _test(cond, column, rows, name)
            misses = int(total - np.count_nonzero(ok))
            failed.append(f"{cond.describe()}: {misses:,} failed")
            keep &= ok
        dropped = int(total - np.count_nonzero(keep))
        if dropped:
            notes.append(f"{_rows(dropped)} of {total:,} dropped by the filter ({'; '.join(failed)})")
    if flt.skip_incomplete and required:
        incomplete = np.zeros(total, dtype=bool)
        why: list[tuple[str, int]] = []
        for position in dict.fromkeys(required):
            empty = empty_cells(columns[position]) & keep
            # A row is counted under the first of its empty columns.
            count = int(np.count_nonzero(empty & ~incomplete))
            if count:
                why.append((labels[position], count))
            incomplete |= empty
        skipped = int(np.count_nonzero(incomplete))
        if skipped:
            reasons = (
                f"empty {why[0][0]}" if len(why) == 1 else ", ".join(f"empty {c} ({n:,})" for c, n in why)
            )
            notes.append(f"{_rows(skipped)} skipped: {reasons}")
        keep &= ~incomplete
    if keep.all():
        return columns, rows, tuple(notes)
    if not keep.any():
        raise MeasurementError(
            f"no rows left: all {total:,} rows were dropped ({'; '.join(notes)})", source=name, row=2
        )
    mask = pa.array(keep)
    kept = [column.filter(mask) for column in columns]
    return kept, Subset(rows, np.flatnonzero(keep)), tuple(notes)


def disjoint(a: Sequence[Condition], b: Sequence[Condition]) -> bool:
    """Whether no row can pass both ``a`` and ``b`` (each read as all of its conditions), as their conditions show.

    True only when the conditions on some one column cannot all hold together: values
    asked for on one side that the other side never keeps (``model: a`` against ``model: b``,
    ``in`` against ``notIn``) or ranges that do not meet (``gpus <= 1`` against ``gpus > 1``).
    Anything else - conditions on different columns, a side without any - may share rows.
    A value matches another when their texts (as messages show them) are equal or both are the
    same number, as a text or a number column compares them.
    """
    columns = {c.column for c in a} & {c.column for c in b}
    return any(_unsatisfiable([c for c in (*a, *b) if c.column == column]) for column in sorted(columns))


def _as_number(value: Scalar) -> float | None:
    if isinstance(value, float):
        return value
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _may_equal(x: Scalar, y: Scalar) -> bool:
    nx, ny = _as_number(x), _as_number(y)
    return _show(x) == _show(y) or (nx is not None and nx == ny)


def _unsatisfiable(conditions: Sequence[Condition]) -> bool:
    """Whether no one value passes every condition (all on one column)."""
    low, high = -math.inf, math.inf
    low_open = high_open = False
    allowed: list[Scalar] | None = None
    excluded: list[Scalar] = []
    for c in conditions:
        values = c.value if isinstance(c.value, tuple) else (c.value,)
        if c.op in ("eq", "in"):
            allowed = list(values) if allowed is None else [v for v in allowed if any(_may_equal(v, w) for w in values)]
        elif c.op in ("ne", "notIn"):
            excluded.extend(values)
        else:
            bound = float(values[0])  # ordered comparisons take numbers (parse_where)
            if c.op in ("gt", "ge") and (bound > low or (bound == low and c.op == "gt")):
                low, low_open = bound, c.op == "gt"
            elif c.op in ("lt", "le") and (bound < high or (bound == high and c.op == "lt")):
                high, high_open = bound, c.op == "lt"
    if low > high or (low == high and (low_open or high_open)):
        return True
    if allowed is None:
        return False

    def kept(v: Scalar) -> bool:
        if any(_show(v) == _show(e) for e in excluded):
            return False
        n = _as_number(v)
        if n is None:
            return True  # a text against a range: the reader decides (it refuses a text column)
        return (n > low or (n == low and not low_open)) and (n < high or (n == high and not high_open))

    return not any(kept(v) for v in allowed)
