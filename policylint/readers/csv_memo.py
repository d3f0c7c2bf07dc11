"""One CSV export read by many workloads: its columns parsed once per process, not once per reader.

A fleet may export every workload's series as a column of one file, each workload
citing its own column (``columns: [w_7]``). Each read parsed the whole N-column
file to keep one column, so N workloads made N parses of a file that grows with N:
the cold run's time grew with the square of the fleet (70 of 104 s at 2,000
workloads, ``benchmarks/fleet_shapes.py``'s ``wide`` shape).

The second read of one file's bytes that asks for other columns parses, in one
pass, every column the read asks for and every other column whose sample cells
are all numbers (as ``float64``, the type a value column is read as), and keeps
the result; a later read of the same bytes takes its columns from it. What makes
this exact:

* a kept parse answers only a read of the very same bytes (compared whole, not
  trusted by name, size or time) and only for columns it parsed with the very
  type the read asks for (Arrow converts each column on its own: a column taken
  from the wide parse is the column a read of it alone gives, row for row);
* only typed reads of a file held in memory take part (the first attempt of
  :func:`policylint.readers.csv_columns.read_csv`); a file streamed batch by batch,
  or read again as text, is read as before;
* when the wide parse fails (a cell of another column is no number), the read is
  done as before, column by column, and no wide parse is tried again for that
  file in this process.

At most one parse is kept, of at most :data:`MAX_KEPT_BYTES` of columns, and it is
forgotten when the run's measuring ends (:func:`policylint.readers.forget_reads`).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["MAX_KEPT_BYTES", "forget", "keep", "refuse", "take", "wide_columns"]

#: the largest wide parse kept (its columns' bytes); a file that would take more is read column by column
MAX_KEPT_BYTES = 128 * 1024 * 1024

#: how many files' first reads are remembered (by path and size: a second read there tries the wide parse)
_SEEN_FILES = 64


@dataclass
class _Kept:
    path: str
    data: bytes
    rows: int
    #: column index -> (the Arrow type it was parsed as, the column)
    columns: dict[int, tuple[pa.DataType, pa.ChunkedArray]]


_KEPT: _Kept | None = None
#: (real path, size) of files read typed from memory once: a second read of one tries the wide parse
_SEEN: OrderedDict[tuple[str, int], None] = OrderedDict()
#: (real path, size) of files whose wide parse failed or would be too large: read column by column
_REFUSED: set[tuple[str, int]] = set()


def forget() -> None:
    """Let the kept parse and what was seen go (:func:`policylint.readers.forget_reads`)."""
    global _KEPT
    _KEPT = None
    _SEEN.clear()
    _REFUSED.clear()


def take(path: str, data: bytes, indexes: Sequence[int], types: dict[int, pa.DataType]) -> tuple[list[pa.ChunkedArray], int] | None:
    """The columns at ``indexes`` of the kept parse and its row count, when it is of ``data`` and holds each
    column with the type in ``types``; None otherwise."""
    kept = _KEPT
    if kept is None or kept.path != os.path.realpath(path) or len(kept.data) != len(data):
        return None
    found = [kept.columns.get(i) for i in indexes]
    if any(f is None or not f[0].equals(types[i]) for f, i in zip(found, indexes, strict=True)):
        return None
    if kept.data is not data and kept.data != data:
        return None
    return [f[1] for f in found if f is not None], kept.rows


def wide_columns(
    path: str,
    data: bytes,
    header: Sequence[str],
    sample: Sequence[Sequence[str]],
    types: dict[int, pa.DataType],
    row_bytes: float,
) -> dict[int, pa.DataType] | None:
    """The columns and types a wide parse of this read should parse, or None (read as asked).

    None at a file's first read here, for a file refused before, and when the sample
    shows no other number column or the columns would take more than :data:`MAX_KEPT_BYTES`.
    Otherwise ``types`` with every other column whose sample cells are all numbers (or
    empty) as ``float64``; the caller parses with them and hands the table to :func:`keep`.
    """
    import pyarrow as pa

    real = os.path.realpath(path)
    key = (real, len(data))
    if key in _REFUSED:
        return None
    if key not in _SEEN:
        _SEEN[key] = None
        while len(_SEEN) > _SEEN_FILES:
            _SEEN.popitem(last=False)
        return None
    wide = dict(types)
    for index in range(len(header)):
        if index not in wide and sample and all(_number(row[index]) for row in sample if len(row) > index):
            wide[index] = pa.float64()
    rows = len(data) / row_bytes if row_bytes > 0 else len(data)
    if len(wide) == len(types) or len(wide) * rows * 9 > MAX_KEPT_BYTES:
        _REFUSED.add(key)
        return None
    return wide


def keep(path: str, data: bytes, table: pa.Table, types: dict[int, pa.DataType]) -> None:
    """Keep a wide parse of ``data`` (its columns named ``c<index>``), replacing the one kept before."""
    global _KEPT
    if table.nbytes > MAX_KEPT_BYTES:
        _REFUSED.add((os.path.realpath(path), len(data)))
        return
    _KEPT = _Kept(os.path.realpath(path), data, table.num_rows,
                  {i: (t, table.column(f"c{i}")) for i, t in types.items()})


def refuse(path: str, data: bytes) -> None:
    """The wide parse of this file failed: read it column by column from now on."""
    _REFUSED.add((os.path.realpath(path), len(data)))


def _number(cell: str) -> bool:
    text = cell.strip()
    if not text:
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True
