"""Tabular traces: CSV, Parquet and Arrow IPC files opened as a :class:`Table` and read into Arrow columns.

Every table-shaped input (time series, request logs, job lists) is read through
here, so the file format and the meaning of the columns are separate concerns:
the container is recognised from the file's first bytes (Parquet and Arrow files
carry a magic number), anything else is CSV text. CSV text is read by
:mod:`policylint.readers.csv_columns`, Parquet and Arrow IPC files by
:mod:`policylint.readers.arrow_columns`; a table's row filter applies to both.

pyarrow is imported only inside the functions that read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from policylint.errors import MeasurementError
from policylint.readers.arrow_columns import open_binary, read_binary
from policylint.readers.columns import TEXT, column_index
from policylint.readers.csv_columns import CHUNK_ROWS, STREAM_ABOVE, parse_head, read_csv
from policylint.readers.filters import apply_filter
from policylint.readers.kept import holds
from policylint.readers.limits import TraceLimits
from policylint.readers.rows import Rows
from policylint.readers.source import Source, read_head, sniff_container

if TYPE_CHECKING:
    import pyarrow as pa

    from policylint.readers.filters import RowFilter

__all__ = ["FIRST_BYTES", "Table", "open_table", "read_start", "release_arrow_memory"]

FIRST_BYTES = 64 * 1024
"""Read first: enough for the header and the sample rows of any ordinary trace."""

#: suffixes pyarrow reads a CSV path through a decompressor for; such a file is read by path, as always
_COMPRESSED = (".gz", ".bz2", ".br", ".lz4", ".zst")


@dataclass
class Table:
    """An opened table: its header and how to read some of its columns."""

    source: Source
    header: list[str]
    container: str  # csv, parquet, arrow, arrow-stream
    limits: TraceLimits
    chunk_rows: int = CHUNK_ROWS
    sample: list[list[str]] = field(default_factory=list)
    parquet: Any = None  # the opened pyarrow.parquet.ParquetFile, footer already parsed
    row_filter: RowFilter | None = None
    #: CSV: average bytes of a line in the first block (progress estimates from rows read)
    bytes_per_row: float = 0.0
    #: what the last read dropped and why ("12 rows skipped: empty scheduled_time")
    notes: tuple[str, ...] = ()
    #: CSV: the whole file, when it was read into memory at opening (parsed from there, not read again)
    data: bytes | None = None

    @property
    def name(self) -> str:
        """How messages name the file."""
        return self.source.name

    def read(
        self, indexes: Sequence[int], kinds: Sequence[str], required: Sequence[int] = ()
    ) -> tuple[list[pa.ChunkedArray], Rows]:
        """The columns at ``indexes`` (``kinds``: FLOAT, TIME or TEXT, a typing hint) and their row numbers.

        Columns come back as Arrow arrays: typed when the file is typed or Arrow
        could parse the CSV text directly, strings otherwise; the conversion
        functions accept both. With a :attr:`row_filter`, only the rows it keeps
        come back (``required``: positions in ``indexes`` whose empty cells make
        a row incomplete) and :attr:`notes` say what was dropped.
        """
        self.notes = ()
        flt = self.row_filter
        if flt is None or not flt.active:
            return self._read_raw(indexes, kinds)
        wanted, wanted_kinds = list(indexes), list(kinds)
        slots = []
        for cond in flt.where:
            index = column_index(self.header, cond.column, self.name)
            if index not in wanted:
                wanted.append(index)
                wanted_kinds.append(TEXT)
            slots.append(wanted.index(index))
        columns, rows = self._read_raw(wanted, wanted_kinds)
        n = len(indexes)
        kept, rows, self.notes = apply_filter(
            flt,
            columns,
            [self.header[i] for i in wanted],
            [columns[i] for i in slots],
            list(required),
            rows,
            self.name,
        )
        return kept[:n], rows

    def read_unfiltered(self, indexes: Sequence[int], kinds: Sequence[str]) -> tuple[list[pa.ChunkedArray], Rows]:
        """The columns at ``indexes`` of every row, whatever :attr:`row_filter` keeps (what the filter left out is compared)."""
        return self._read_raw(indexes, kinds)

    def _read_raw(self, indexes: Sequence[int], kinds: Sequence[str]) -> tuple[list[pa.ChunkedArray], Rows]:
        if self.container == "csv":
            return read_csv(self, indexes, kinds)
        return read_binary(self.source, self.container, self.header, self.parquet, self.limits, indexes)


def release_arrow_memory(size: int = STREAM_ABOVE + 1) -> None:
    """Hand memory Arrow freed back to the system once its columns are converted.

    Arrow's allocator keeps freed blocks for reuse; after a large trace that is
    the size of the file's columns, held while the grid and the bands are built.
    """
    if size <= STREAM_ABOVE:
        return  # small files: nothing worth the call
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def read_start(source: Source) -> bytes:
    """The start of the file in one read: all of a CSV file the reader parses in memory, else its first block.

    A text file up to the size read in one piece (and not one pyarrow would
    decompress by its suffix) comes back whole, so its header, its sample rows
    and its values are read from one buffer; anything else comes back as its
    first :data:`FIRST_BYTES` (enough to tell the container and the header).
    """
    try:
        with source.path.open("rb") as handle:
            first = handle.read(FIRST_BYTES)
            whole = (
                len(first) < source.size <= STREAM_ABOVE
                and sniff_container(first[:8]) == "text"
                and not source.path.name.lower().endswith(_COMPRESSED)
            )
            if not whole:
                return first
            handle.seek(0)  # the whole file in one piece: no copy joining two reads
            return handle.read(source.size)
    except OSError as exc:
        raise MeasurementError(f"cannot read: {exc.strerror or exc}", source=source.name) from None


#: the header and sample rows parsed from the last whole file handed in, with that very bytes object
_HEAD: list[tuple[bytes, list[str], list[list[str]]]] = []


def _head_of(source: Source, head: bytes, data: bytes | None) -> tuple[list[str], list[list[str]]]:
    """:func:`parse_head` of ``head``; for a whole file handed in again as the very same bytes object
    (:func:`policylint.readers.kept.read_again`), what was parsed from it before."""
    if data is not None and _HEAD and _HEAD[0][0] is data:
        return _HEAD[0][1], _HEAD[0][2]
    header, sample = parse_head(source, head)
    if data is not None and len(data) == source.size and holds(data):
        _HEAD[:] = [(data, header, sample)]  # bytes the next reader gets again; nothing else is held here
    return header, sample


def forget_head() -> None:
    """Let the last whole file's parsed head (and its bytes) go."""
    _HEAD.clear()


def open_table(
    source: Source,
    limits: TraceLimits,
    *,
    chunk_rows: int = CHUNK_ROWS,
    container: str | None = None,
    head: bytes | None = None,
    data: bytes | None = None,
) -> Table:
    """Open ``source`` as a table: read its header (and, for CSV, a sample of rows).

    ``head`` is the start of the file when the caller has read it already;
    ``data`` all of a CSV file, when the caller read it whole (the values are then
    parsed from it, not read from the file again).
    """
    if head is None:
        head = read_head(source, FIRST_BYTES)
    kind = container or sniff_container(head)
    if kind == "text":
        header, sample = _head_of(source, head, data)
        table = Table(source, header, "csv", limits, chunk_rows, sample)
        table.bytes_per_row = len(head) / max(1, head.count(b"\n"))
        if data is not None and len(data) == source.size and source.size <= STREAM_ABOVE:
            if not source.path.name.lower().endswith(_COMPRESSED):
                table.data = data
        return table
    header, parquet = open_binary(source, kind, limits)
    if not header:
        raise MeasurementError("empty file: no columns", source=source.name, row=1)
    table = Table(source, header, kind, limits, chunk_rows)
    table.parquet = parquet
    return table
