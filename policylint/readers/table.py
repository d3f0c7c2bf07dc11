"""Tabular traces: CSV, Parquet and Arrow IPC files read into Arrow columns.

Every table-shaped input (time series, request logs, job lists) is read here, so
the file format and the meaning of the columns are separate concerns: the
container is recognised from the file's first bytes (Parquet and Arrow files
carry a magic number), anything else is CSV text.

CSV goes through ``pyarrow.csv`` (typed columns, native timestamp parsing,
several threads). What Arrow refuses - rows with more or fewer fields than the
header, blank lines made of spaces, quoted line breaks, bad UTF-8 - is read
again with the standard library's ``csv`` module, which accepts what policylint
always accepted and reports a malformed row with its line. Errors about a value
name the row as the line number of the file (the header is line 1); for Parquet
and Arrow files it is the record number, counting from 1.

pyarrow is imported only inside the functions that read.
"""

from __future__ import annotations

import codecs
import csv
import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from policylint.errors import MeasurementError
from policylint.readers.limits import TraceLimits, check_rows
from policylint.readers.rows import Rows
from policylint.readers.source import Source, read_head, sniff_container

if TYPE_CHECKING:
    import pyarrow as pa

    from policylint.readers.filters import RowFilter

__all__ = ["CHUNK_ROWS", "HEAD_BYTES", "Rows", "Table", "open_table", "release_arrow_memory"]

CHUNK_ROWS = 65_536
"""Rows tokenised at a time by the tolerant (standard library) CSV path."""

HEAD_BYTES = 1024 * 1024
"""The header must end within this many bytes; also the sample used to pick column types."""

_STREAM_ABOVE = 32 * 1024 * 1024
"""CSV files larger than this are read batch by batch so the row limit stops them early."""

_SAMPLE_ROWS = 64

_FIRST_BYTES = 64 * 1024
"""Read first: enough for the header and the sample rows of any ordinary trace."""

#: suffixes pyarrow reads a CSV path through a decompressor for; such a file is read by path, as always
_COMPRESSED = (".gz", ".bz2", ".br", ".lz4", ".zst")

FLOAT = "float"
TIME = "time"
TEXT = "text"


class _Ordinal(Rows):
    """Parquet, Arrow, Prometheus: record numbers counting from 1."""


class _KnownLines(Rows):
    def __init__(self, lines: np.ndarray) -> None:
        self.lines = lines

    def row(self, index: int) -> int:
        return int(self.lines[index])


class _ScannedLines(Rows):
    """Line numbers of a CSV read by Arrow, found only when an error needs one.

    Arrow skips empty lines, so data row *i* is the *i*-th non-blank record after
    the header; the standard ``csv`` module counts lines the way the tolerant
    path does, so both paths report the same line.
    """

    def __init__(self, source: Source) -> None:
        self.source = source

    def row(self, index: int) -> int:
        with self.source.path.open(newline="", encoding="utf-8-sig", errors="replace") as handle:
            reader = csv.reader(handle)
            try:
                next(reader, None)
                seen = -1
                for record in reader:
                    if _blank(record):
                        continue
                    seen += 1
                    if seen == index:
                        return reader.line_num
            except csv.Error:
                pass  # a cell the csv module refuses (over its field size limit): count lines instead
        return self._by_lines(index)

    def _by_lines(self, index: int) -> int:
        """The line of data row ``index`` counted on physical lines (Arrow reads no newline inside a value)."""
        with self.source.path.open(encoding="utf-8-sig", errors="replace") as handle:
            next(handle, None)
            seen = -1
            for number, line in enumerate(handle, start=2):
                if not line.strip() or line.strip() == '""':
                    continue
                seen += 1
                if seen == index:
                    return number
        return index + 2  # pragma: no cover - the index always comes from this file


def _blank(record: list[str]) -> bool:
    return not record or (len(record) == 1 and not record[0].strip())


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
        from policylint.readers.columns import column_index
        from policylint.readers.filters import apply_filter

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

    def _read_raw(self, indexes: Sequence[int], kinds: Sequence[str]) -> tuple[list[pa.ChunkedArray], Rows]:
        if self.container == "csv":
            return self._read_csv(indexes, kinds)
        return self._read_binary(indexes)

    # ------------------------------------------------------------------ binary

    def _read_binary(self, indexes: Sequence[int]) -> tuple[list[pa.ChunkedArray], Rows]:
        import pyarrow as pa

        from policylint.readers.binary import check_decoded, check_parquet, decode_dictionaries, variable_width

        unique = list(dict.fromkeys(indexes))
        labels = [self.header[i] for i in unique]
        try:
            if self.container == "parquet":
                import pyarrow.parquet as pq

                handle = self.parquet or pq.ParquetFile(str(self.source.path), memory_map=True)
                schema = handle.schema_arrow
                # rows, columns and decoded size from the footer, before a value is decoded
                check_parquet(handle.metadata, schema, labels, self.limits, self.name, path=self.source.path)
                text = variable_width(schema, labels)
                if text:
                    # Text is read as a dictionary (indices and distinct values) and
                    # expanded only once its full size is known to be within the limit.
                    handle = pq.ParquetFile(str(self.source.path), memory_map=True, read_dictionary=text)
                table = handle.read(columns=labels)
                read = {i: table.column(self.header[i]) for i in unique}
            else:
                table = _read_ipc(self.source, self.container, self.limits)
                read = {i: table.column(i) for i in unique}
            check_decoded(list(read.values()), labels, self.limits, self.name)
            expanded = {i: decode_dictionaries(column) for i, column in read.items()}
            columns = [expanded[i] for i in indexes]
        except KeyError:
            # Arrow refuses to pick a column by a name the file holds twice.
            dup = sorted({h for h in self.header if self.header.count(h) > 1})
            raise MeasurementError(
                f"column names appear more than once ({', '.join(dup)}); rename them", source=self.name, row=1
            ) from None
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise MeasurementError(f"cannot read: {_arrow_message(exc)}", source=self.name) from None
        return columns, _Ordinal()

    # ------------------------------------------------------------------ CSV

    def _read_csv(self, indexes: Sequence[int], kinds: Sequence[str]) -> tuple[list[pa.ChunkedArray], Rows]:
        import pyarrow as pa

        if len(self.header) > 1:
            # Typed first (fast), then as text (conversion errors are located
            # later with their row); Arrow only refuses the file's structure.
            for typed in (True, False):
                try:
                    columns = self._arrow_csv(indexes, kinds, typed=typed)
                except pa.ArrowException:
                    continue
                return columns, _ScannedLines(self.source)
        return self._python_csv(indexes)

    def _arrow_types(self, indexes: Sequence[int], kinds: Sequence[str], typed: bool) -> dict[str, pa.DataType]:
        import pyarrow as pa

        types: dict[str, pa.DataType] = {}
        for index, kind in zip(indexes, kinds, strict=True):
            key = f"c{index}"
            if not typed or kind == TEXT:
                types[key] = pa.string()
            elif kind == FLOAT:
                types[key] = pa.float64()
            else:
                types[key] = _sniff_time_type([r[index] for r in self.sample if len(r) > index])
        return types

    def _arrow_csv(self, indexes: Sequence[int], kinds: Sequence[str], *, typed: bool) -> list[pa.ChunkedArray]:
        import pyarrow as pa
        import pyarrow.csv as pcsv

        names = [f"c{i}" for i in range(len(self.header))]
        wanted = list(dict.fromkeys(f"c{i}" for i in indexes))
        types = self._arrow_types(indexes, kinds, typed)
        convert = pcsv.ConvertOptions(
            column_types=types,
            include_columns=wanted,
            null_values=[""],
            true_values=[],
            false_values=[],
            strings_can_be_null=True,
            quoted_strings_can_be_null=True,
        )
        parse = pcsv.ParseOptions(newlines_in_values=False)
        if self.source.size <= _STREAM_ABOVE:
            read = pcsv.ReadOptions(column_names=names, skip_rows=1, use_threads=not _in_worker())
            where = pa.BufferReader(self.data) if self.data is not None else str(self.source.path)
            table = pcsv.read_csv(where, read_options=read, parse_options=parse, convert_options=convert)
            check_rows(table.num_rows, self.limits, self.name)
        else:
            # Batch by batch: the row limit stops a huge file before it is held.
            # One-megabyte blocks, one thread: Arrow's read-ahead then holds a few
            # blocks, not hundreds of megabytes, beyond the converted columns.
            read = pcsv.ReadOptions(column_names=names, skip_rows=1, use_threads=False, block_size=1 << 20)
            from policylint.readers.progress import advance

            batches = []
            count = 0
            with self.source.path.open("rb") as handle, pcsv.open_csv(
                handle, read_options=read, parse_options=parse, convert_options=convert
            ) as reader:
                for batch in reader:
                    count += batch.num_rows
                    check_rows(count, self.limits, self.name)
                    batches.append(batch)
                    # Arrow reads ahead of what it has parsed: rows parsed x the average
                    # line length says how far the work is, the file position caps it.
                    advance(int(min(handle.tell(), count * self.bytes_per_row)) if self.bytes_per_row else handle.tell())
            table = pa.Table.from_batches(batches, schema=reader.schema)
        return [table.column(f"c{i}") for i in indexes]

    def _python_csv(self, indexes: Sequence[int]) -> tuple[list[pa.ChunkedArray], Rows]:
        import pyarrow as pa

        parts: list[list[pa.Array]] = [[] for _ in indexes]
        lines: list[np.ndarray] = []
        count = 0
        for cells, numbers in _iter_chunks(self.source, indexes, self.chunk_rows):
            count += len(numbers)
            check_rows(count, self.limits, self.name)
            for part, column in zip(parts, cells, strict=True):
                part.append(pa.array(column, type=pa.string()))
            lines.append(numbers)
        columns = [pa.chunked_array(part, type=pa.string()) for part in parts]
        return columns, _KnownLines(np.concatenate(lines) if lines else np.zeros(0, dtype=np.int64))


def _in_worker() -> bool:
    """Whether this process is a worker of a parallel run (``--jobs``), started by multiprocessing.

    A worker parses with one thread: its siblings hold the other cores, and
    Arrow's thread pool on top of them only adds switching (measured with two
    processes on two cores: about a third slower with Arrow's threads).
    """
    import sys

    mp = sys.modules.get("multiprocessing")  # a worker inherited it from the parent that started it
    return mp is not None and mp.parent_process() is not None


def release_arrow_memory(size: int = _STREAM_ABOVE + 1) -> None:
    """Hand memory Arrow freed back to the system once its columns are converted.

    Arrow's allocator keeps freed blocks for reuse; after a large trace that is
    the size of the file's columns, held while the grid and the bands are built.
    """
    if size <= _STREAM_ABOVE:
        return  # small files: nothing worth the call
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def _arrow_message(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def _read_ipc(source: Source, container: str, limits: TraceLimits) -> pa.Table:
    import pyarrow as pa

    from policylint.readers.binary import check_ipc

    # Memory-mapped: the batches' metadata says how many rows they hold and how
    # large their buffers are once decompressed, checked before any is decoded.
    with pa.memory_map(str(source.path)) as mapped:
        data = memoryview(mapped.read_buffer())
        mapped.seek(0)
        if container == "arrow":
            reader = pa.ipc.open_file(mapped)
            check_ipc(data, container, reader.schema, limits, source.name)
            return reader.read_all()
        stream = pa.ipc.open_stream(mapped)
        check_ipc(data, container, stream.schema, limits, source.name)
        batches = []
        count = 0
        for batch in stream:
            count += batch.num_rows
            check_rows(count, limits, source.name)
            batches.append(batch)
        return pa.Table.from_batches(batches, schema=stream.schema)


def _read_tail(source: Source, size: int) -> bytes:
    """The last ``size`` bytes of the file (all of it when it is shorter)."""
    try:
        with source.path.open("rb") as handle:
            handle.seek(max(0, source.size - size))
            return handle.read(size)
    except OSError as exc:
        raise MeasurementError(f"cannot read: {exc.strerror or exc}", source=source.name) from None


def _sniff_time_type(cells: list[str]) -> pa.DataType:
    """The Arrow type to parse a timestamp column as, from its first cells."""
    import pyarrow as pa

    texts = [c.strip() for c in cells if c.strip()]
    if not texts:
        return pa.string()
    try:
        for text in texts:
            float(text)
    except ValueError:
        pass
    else:
        return pa.float64()
    zoned = [t.endswith("Z") or (len(t) > 10 and t[-6] in "+-" and t[-3] == ":") for t in texts]
    if all(zoned):
        return pa.timestamp("ns", tz="UTC")
    if not any(zoned):
        return pa.timestamp("ns")
    return pa.string()


def _iter_chunks(source: Source, columns: Sequence[int], chunk_rows: int) -> Iterator[tuple[list[list[str]], np.ndarray]]:
    """Yield ``(cells per column, line numbers)`` for ``chunk_rows`` rows at a time.

    The tolerant path: the csv module tokenises rows (blank lines skipped, extra
    fields ignored), and a row too short for a wanted column is an error at its line.
    """
    if chunk_rows < 1:
        raise ValueError("chunk_rows must be positive")
    name = source.name
    need = max(columns) + 1
    try:
        with source.path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            next(reader, None)  # header, already read
            while True:
                cells: list[list[str]] = [[] for _ in columns]
                lines: list[int] = []
                for record in reader:
                    if _blank(record):
                        continue
                    if len(record) < need:
                        raise MeasurementError(
                            f"row has {len(record)} fields, expected at least {need}",
                            source=name,
                            row=reader.line_num,
                        )
                    for out, j in zip(cells, columns, strict=True):
                        out.append(record[j])
                    lines.append(reader.line_num)
                    if len(lines) >= chunk_rows:
                        break
                if not lines:
                    return
                yield cells, np.array(lines, dtype=np.int64)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise MeasurementError(f"cannot read: {exc}", source=name) from None


def _parse_head(source: Source, first: bytes | None = None) -> tuple[list[str], list[list[str]]]:
    """Header and the first data rows, from at most :data:`HEAD_BYTES` of the file."""
    name = source.name
    raw = first if first is not None else read_head(source, _FIRST_BYTES)
    if len(raw) < source.size and b"\n" not in raw and b"\r" not in raw:
        raw = read_head(source, HEAD_BYTES)  # a long header: look further, up to the limit
    if b"\x00" in raw:
        line = raw.count(b"\n", 0, raw.index(b"\x00")) + 1
        raise MeasurementError("binary data (a NUL byte): not a CSV text file", source=name, row=line)
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    try:
        text = decoder.decode(raw, final=len(raw) == source.size)
    except UnicodeDecodeError as exc:
        raise MeasurementError(f"cannot read: {exc}", source=name, row=1) from None
    complete = len(raw) == source.size
    if not complete:
        # Keep whole lines only; a header that does not end within the sample is refused.
        cut = max(text.rfind("\n"), text.rfind("\r"))
        if cut < 0:
            raise MeasurementError(
                f"the first line is longer than {HEAD_BYTES:,} bytes: not a CSV header", source=name, row=1
            )
        text = text[: cut + 1]
    header: list[str] | None = None
    sample: list[list[str]] = []
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, None)
        for record in reader:
            if not _blank(record):
                sample.append(record)
            if len(sample) >= _SAMPLE_ROWS:
                break
    except csv.Error as exc:
        if complete or header is None:
            raise MeasurementError(f"cannot read: {exc}", source=name, row=1) from None
        sample = []  # a quoted field running past the sample; Arrow or the csv module will tell
    if not header or not any(cell.strip() for cell in header):
        raise MeasurementError("empty file: no header row", source=name, row=1)
    return [cell.strip() for cell in header], sample


def read_start(source: Source) -> bytes:
    """The start of the file in one read: all of a CSV file the reader parses in memory, else its first block.

    A text file up to the size read in one piece (and not one pyarrow would
    decompress by its suffix) comes back whole, so its header, its sample rows
    and its values are read from one buffer; anything else comes back as its
    first :data:`_FIRST_BYTES` (enough to tell the container and the header).
    """
    try:
        with source.path.open("rb") as handle:
            first = handle.read(_FIRST_BYTES)
            whole = (
                len(first) < source.size <= _STREAM_ABOVE
                and sniff_container(first[:8]) == "text"
                and not source.path.name.lower().endswith(_COMPRESSED)
            )
            if not whole:
                return first
            handle.seek(0)  # the whole file in one piece: no copy joining two reads
            return handle.read(source.size)
    except OSError as exc:
        raise MeasurementError(f"cannot read: {exc.strerror or exc}", source=source.name) from None


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
        head = read_head(source, _FIRST_BYTES)
    kind = container or sniff_container(head)
    if kind == "text":
        header, sample = _parse_head(source, head)
        table = Table(source, header, "csv", limits, chunk_rows, sample)
        table.bytes_per_row = len(head) / max(1, head.count(b"\n"))
        if data is not None and len(data) == source.size and source.size <= _STREAM_ABOVE:
            if not source.path.name.lower().endswith(_COMPRESSED):
                table.data = data
        return table
    import pyarrow as pa

    from policylint.readers.binary import check_columns, check_parquet_footer

    parquet = None
    try:
        if kind == "parquet":
            import pyarrow.parquet as pq

            check_parquet_footer(_read_tail(source, 8), source.size, source.name)
            parquet = pq.ParquetFile(str(source.path), memory_map=True)
            schema = parquet.schema_arrow
            check_rows(parquet.metadata.num_rows, limits, source.name)
        else:
            with pa.memory_map(str(source.path)) as mapped:
                schema = (pa.ipc.open_file(mapped) if kind == "arrow" else pa.ipc.open_stream(mapped)).schema
        check_columns(len(schema), limits, source.name)
        header = [str(n).strip() for n in schema.names]
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise MeasurementError(f"cannot read: {_arrow_message(exc)}", source=source.name) from None
    if not header:
        raise MeasurementError("empty file: no columns", source=source.name, row=1)
    table = Table(source, header, kind, limits, chunk_rows)
    table.parquet = parquet
    return table
