"""A Parquet page header is held to what the footer allows, before pyarrow decodes the page.

The decoder trusts each page's own ``uncompressed_page_size``: a 6 KB file whose
one page header claims 2 GB made pyarrow allocate 2 GB (under a 1.5 GB address
limit: ``ArrowMemoryError: realloc of size 2147483648 failed``), although the
footer says the column chunk holds a few hundred bytes. The bombs here are real
pyarrow files with one page header rebuilt to claim more, at the same length, so
every offset of the footer stays right.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from conftest import copy_minirepo, replace_once, run_cli

from policylint.errors import MeasurementError
from policylint.readers import TraceLimits, read_series
from policylint.readers import parquet_pages as pages

T0 = 1_764_547_200  # 2025-12-01, unix seconds
ROWS = 1000
BIG = 2**31 - 1
#: address space of a bounded child. pyarrow's default memory pool (mimalloc) reserves 1 GiB of
#: address space at its first allocation - reserved, not used - and a run of the small repository
#: maps about 0.5 GB more (libraries, thread stacks and arenas), so 1.5 GiB left a few tens of MB
#: and failed on any change of layout (a BLAS thread more or less). A decoded 2 GiB page still
#: cannot fit in 2.5 GiB; the peak-RSS assertions bound what is really used.
MEMORY_LIMIT = 2560 << 20


# -- building bombs: a tiny Thrift compact writer, independent of the reader under test ----------------


def _varint(n: int, width: int | None = None) -> bytes:
    """``n`` as a varint, padded with continuation bytes to ``width`` bytes (a valid, longer spelling)."""
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        if n or (width is not None and len(out) + 1 < width):
            out.append(low | 0x80)
        else:
            out.append(low)
            break
    assert width is None or len(out) == width, f"{len(out)} bytes do not fit in {width}"
    return bytes(out)


def _zigzag(n: int) -> int:
    return (n << 1) ^ (n >> 63)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, pos


def patch_page(data: bytes, at: int, uncompressed: int) -> bytes:
    """``data`` with the page header at ``at`` claiming ``uncompressed`` bytes, the header's length unchanged.

    The file must be written with page checksums: the header then starts with four
    i32 fields (type, uncompressed size, compressed size, crc). The crc is dropped
    (pyarrow checks it only when asked), which leaves room for the longer size;
    the page type is spelled with padding bytes to fill the rest exactly.
    """
    values = []
    pos = at
    for _ in range(4):
        assert data[pos] == 0x15, f"expected an i32 field at {pos}, found {data[pos]:#x}"
        value, pos = _read_varint(data, pos + 1)
        values.append(value)
    nested = data[pos]  # the nested page header's field header: its id is counted from the crc's (4)
    assert 1 <= nested >> 4 <= 4
    size = b"\x15" + _varint(_zigzag(uncompressed))
    compressed = b"\x15" + _varint(values[2])
    room = (pos - at) - len(size) - len(compressed)
    kind = b"\x15" + _varint(values[0], width=room - 1)
    header = kind + size + compressed + bytes([((nested >> 4) + 1) << 4 | (nested & 0x0F)])
    assert len(header) == pos - at + 1
    return data[:at] + header + data[pos + 1 :]


def _table(rows: int = ROWS) -> pa.Table:
    times = np.arange(T0, T0 + 60 * rows, 60, dtype=np.int64)
    return pa.table({"timestamp": times, "in_flight": np.arange(rows, dtype=np.int64) % 7})


def _parquet(table: pa.Table, **options: object) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, **options)  # type: ignore[arg-type]
    return sink.getvalue()


def bomb(uncompressed: int = BIG, *, page: str = "data", compression: str = "snappy") -> bytes:
    """A real Parquet file whose ``in_flight`` data (or dictionary) page header claims ``uncompressed`` bytes."""
    data = _parquet(_table(), write_page_checksum=True, compression=compression)
    column = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0).column(1)
    at = column.dictionary_page_offset if page == "dictionary" else column.data_page_offset
    return patch_page(data, at, uncompressed)


def test_the_bomb_builder_changes_only_the_claimed_size() -> None:
    honest = _parquet(_table(), write_page_checksum=True, compression="snappy")
    patched = bomb(BIG)
    assert len(patched) == len(honest)
    column = pq.ParquetFile(io.BytesIO(patched)).metadata.row_group(0).column(1)
    page = pages.read_page_header(patched, column.data_page_offset, len(patched))
    assert page.uncompressed == BIG
    original = pages.read_page_header(honest, column.data_page_offset, len(honest))
    assert (page.compressed, page.num_values, page.header_length) == (
        original.compressed, original.num_values, original.header_length
    )


# -- through the CLI, in a child process with bounded memory ------------------------------------------

_BOUNDED = (
    "import atexit, resource, runpy, sys\n"
    "limit, report = int(sys.argv[1]), sys.argv[2]\n"
    "resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
    "sys.argv = ['policylint', *sys.argv[3:]]\n"
    # VmHWM is this program's own peak: getrusage's ru_maxrss survives exec, so it would
    # report the test worker's size at the fork instead. Written by an exit handler: the
    # command ends its process itself once they have run (policylint.cli.leave)
    "def peak():\n"
    "    hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
    "    open(report, 'w').write(hwm[0] if hwm else str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))\n"
    "atexit.register(peak)\n"
    "runpy.run_module('policylint', run_name='__main__')\n"
)


def run_bounded(args: list[str], cwd: Path) -> tuple[int, str, str, float, float]:
    """(exit code, stdout, stderr, seconds, peak RSS in MiB) of the CLI in a child limited to 2.5 GiB of address space."""
    report = cwd / ".rss"
    env = {**os.environ, "NO_COLOR": "1", "POLICYLINT_CACHE_DIR": str(cwd / ".cache")}
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _BOUNDED, str(MEMORY_LIMIT), str(report), *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )
    seconds = time.monotonic() - start
    rss = int(report.read_text()) / 1024 if report.exists() else float("nan")
    return done.returncode, done.stdout, done.stderr, seconds, rss


@pytest.mark.parametrize(
    ("page", "compression"), [("data", "snappy"), ("data", "zstd"), ("dictionary", "zstd")]
)
def test_bands_refuses_a_page_claiming_2_gb_fast_and_without_the_memory(tmp_path: Path, page: str, compression: str) -> None:
    (tmp_path / "bomb.parquet").write_bytes(bomb(BIG, page=page, compression=compression))
    assert (tmp_path / "bomb.parquet").stat().st_size < 16 * 1024
    code, out, err, seconds, rss = run_bounded(["bands", "bomb.parquet"], tmp_path)
    assert (code, out) == (2, "")
    assert err == (
        "policylint: error: bomb.parquet: a page of column 'in_flight' (row group 1) declares 2,048 MiB once "
        "uncompressed, more than the 1,024 MiB a trace may take once decoded; refused before decoding\n"
    )
    assert "Traceback" not in err
    assert seconds < 20
    assert rss < 400, f"peak RSS {rss:.0f} MiB"


def test_check_reports_the_bomb_as_a_finding_on_the_declaration(tmp_path: Path) -> None:
    repo = copy_minirepo(tmp_path / "repo")
    (repo / "measurements" / "traces" / "reranker.parquet").write_bytes(bomb(BIG))
    replace_once(repo / "workloads" / "search.yaml", "path: ../measurements/traces/reranker.csv\n      format: csv\n",
                 "path: ../measurements/traces/reranker.parquet\n      format: parquet\n")
    code, out, err, seconds, _ = run_bounded(
        ["check", "--now", "2026-12-01", "--format", "concise", "--select", "PL024", "."], repo
    )
    assert code == 1, err
    assert "Traceback" not in err and "internal error" not in err
    (line,) = [line for line in out.splitlines() if "PL024" in line]
    assert line.startswith("workloads/search.yaml:16:7: error PL024 ")
    assert "a page of column 'in_flight' (row group 1) declares 2,048 MiB once uncompressed" in line
    assert seconds < 30


# -- what is refused, in-process ------------------------------------------------------------------------


def _read(tmp_path: Path, data: bytes, limits: TraceLimits | None = None) -> object:
    path = tmp_path / "t.parquet"
    path.write_bytes(data)
    return read_series(path, display_name="t.parquet", limits=limits)


def test_a_page_larger_than_its_whole_chunk_is_refused_under_the_decoded_limit(tmp_path: Path) -> None:
    with pytest.raises(MeasurementError) as caught:
        _read(tmp_path, bomb(5_000_000))  # 5 MB: far under 1 GiB, far over the chunk
    total = pq.ParquetFile(io.BytesIO(bomb(5_000_000))).metadata.row_group(0).column(1).total_uncompressed_size
    assert str(caught.value) == (
        f"t.parquet: a page of column 'in_flight' (row group 1) declares 5 MiB once uncompressed, more than the "
        f"{total:,} bytes the footer gives the whole column chunk; refused before decoding"
    )


def test_the_limit_is_the_configured_decoded_limit(tmp_path: Path) -> None:
    # the footer's figure (rows x width: 16,250 bytes) passes a limit of 40,000; the page's claim does not
    limits = TraceLimits(max_decoded_bytes=40_000)
    with pytest.raises(MeasurementError, match=r"declares 50,000 bytes once uncompressed, more than the 40,000 bytes a trace may take"):
        _read(tmp_path, bomb(50_000), limits)


def test_a_page_header_that_cannot_be_read_is_a_clear_error(tmp_path: Path) -> None:
    data = bytearray(_parquet(_table(), compression="snappy"))
    at = pq.ParquetFile(io.BytesIO(bytes(data))).metadata.row_group(0).column(1).data_page_offset
    data[at] = 0x1E  # field 1 of type 14: no such Thrift type
    with pytest.raises(MeasurementError) as caught:
        _read(tmp_path, bytes(data))
    assert str(caught.value) == "t.parquet: cannot read: malformed Parquet page header (unknown Thrift type 14)"


def test_a_page_running_past_its_chunk_is_refused(tmp_path: Path) -> None:
    data = _parquet(_table(), compression="none", use_dictionary=False)
    column = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0).column(1)
    at = column.data_page_offset
    honest = pages.read_page_header(data, at, len(data))
    # the compressed size one byte larger, spelled in as many bytes: the page now ends past its chunk
    old = b"\x15" + _varint(_zigzag(honest.compressed))
    new = b"\x15" + _varint(_zigzag(honest.compressed + 1))
    assert len(old) == len(new) and data[at:].find(old) >= 0
    where = at + data[at:].find(old, 3)
    patched = data[:where] + new + data[where + len(new) :]
    with pytest.raises(MeasurementError, match="malformed Parquet page header .the last page of column 'in_flight' .row group 1. runs past"):
        _read(tmp_path, patched)


# -- honest files read exactly as before ------------------------------------------------------------------


def _honest_table() -> pa.Table:
    rows = 5000
    times = np.arange(T0, T0 + 60 * rows, 60, dtype=np.int64)
    busy = (np.arange(rows) % 60 < 20).astype(np.int64) * 5 + np.arange(rows) % 3
    model = pa.array(["a" if i % 2 else "b" for i in range(rows)])
    return pa.table({"timestamp": times, "in_flight": busy, "model": model})


@pytest.mark.parametrize("compression", ["snappy", "zstd", "none"])
@pytest.mark.parametrize("dictionary", [True, False], ids=["dictionary", "plain"])
@pytest.mark.parametrize("version", ["1.0", "2.0"], ids=["pages-v1", "pages-v2"])
def test_honest_files_read_as_their_csv_twin(tmp_path: Path, compression: str, dictionary: bool, version: str) -> None:
    table = _honest_table()
    pq.write_table(table, tmp_path / "t.parquet", compression=compression, use_dictionary=dictionary,
                   row_group_size=700, data_page_size=4096, data_page_version=version)
    pacsv.write_csv(table, tmp_path / "t.csv")
    assert pq.ParquetFile(tmp_path / "t.parquet").metadata.num_row_groups == 8
    options = {"timestamp_column": "timestamp", "value_columns": ["in_flight"], "match": {"model": "a"}}
    got = read_series(tmp_path / "t.parquet", **options)  # type: ignore[arg-type]
    want = read_series(tmp_path / "t.csv", **options)  # type: ignore[arg-type]
    np.testing.assert_array_equal(got.times, want.times)
    np.testing.assert_array_equal(got.values, want.values)
    assert got.values[np.isfinite(got.values)].max() == 7


# -- the Thrift reader on its own ------------------------------------------------------------------------


def _field(ident_delta: int, kind: int) -> bytes:
    return bytes([ident_delta << 4 | kind])


def _i32(delta: int, value: int) -> bytes:
    return _field(delta, 5) + _varint(_zigzag(value))


def test_unknown_fields_of_every_kind_are_skipped() -> None:
    header = (
        _i32(1, 0) + _i32(1, 100) + _i32(1, 90)
        + b"\x08" + _varint(_zigzag(40)) + _varint(3) + b"abc"  # field 40, binary (long form)
        + _field(1, 12) + _field(1, 7) + b"\x00" * 8 + _field(1, 1) + b"\x00"  # 41: struct {double, true}
        + _field(1, 9) + bytes([3 << 4 | 8]) + b"\x01x\x01y\x01z"  # 42: list of three strings
        + _field(1, 11) + _varint(2) + bytes([5 << 4 | 6]) + b"\x02\x04\x06\x08"  # 43: map i32 -> i64
        + _field(1, 9) + bytes([2 << 4 | 1]) + b"\x01\x02"  # 44: list of two booleans
        + _field(1, 13) + b"u" * 16  # 45: uuid
        + b"\x00"
    )
    page = pages.read_page_header(header + b"rest", 0, len(header) + 4)
    assert (page.type, page.uncompressed, page.compressed, page.num_values) == (0, 100, 90, None)
    assert page.header_length == len(header)


def test_the_nested_page_header_gives_the_number_of_values() -> None:
    nested = _i32(1, 250) + _i32(1, 0) + b"\x00"
    header = _i32(1, 0) + _i32(1, 10) + _i32(1, 10) + _field(2, 12) + nested + b"\x00"
    assert pages.read_page_header(header, 0, len(header)).num_values == 250


@pytest.mark.parametrize(
    ("header", "why"),
    [
        (b"\xac" * 100_000, "nested deeper than a page header is"),  # field 10 a struct, its field 10 a struct ...
        (_i32(1, 0) + _field(9, 9) + b"\xf8" + _varint(2**40), "a list longer than the page header's bytes"),
        (_i32(1, 0) + b"\x15" + b"\xff" * 12, "a variable-length integer longer than 10 bytes"),
        (_i32(1, 0) + _field(9, 8) + _varint(1 << 30) + b"ab", "a length beyond the page header's bytes"),
        (_i32(1, 0) + _i32(1, -5) + _i32(1, 1) + b"\x00", "a negative page size"),
        (_i32(1, 0) + _i32(1, 5) + b"\x00", "a page header without its compressed_page_size"),
        (_i32(1, 0) + _field(1, 6) + _varint(_zigzag(2**40)) + b"\x00", "the uncompressed page size is not an i32"),
        (_i32(1, 0) + _i32(1, 5), "ends inside a page header"),
    ],
    ids=["deep", "long-list", "long-varint", "long-binary", "negative", "missing", "wrong-type", "truncated"],
)
def test_malformed_headers_are_refused_quickly(header: bytes, why: str) -> None:
    start = time.monotonic()
    with pytest.raises(pages.Malformed) as caught:
        pages.read_page_header(header, 0, len(header))
    assert str(caught.value) == why
    assert time.monotonic() - start < 1


def test_a_header_holding_a_long_list_stops_at_the_value_budget() -> None:
    items = 300_000
    header = _i32(1, 0) + _field(9, 9) + bytes([15 << 4 | 5]) + _varint(items) + b"\x00" * items + _i32(1, 1) + b"\x00"
    start = time.monotonic()
    with pytest.raises(pages.TooManyPages):
        pages.read_page_header(header, 0, len(header), [100_000])
    assert time.monotonic() - start < 1  # refused before the list is walked
    # within the budget the same list is skipped, and the fields after it are read
    long_ok = _i32(1, 0) + _field(9, 9) + bytes([15 << 4 | 5]) + _varint(1000) + b"\x00" * 1000
    long_ok += b"\x05" + _varint(_zigzag(2)) + _varint(_zigzag(64)) + _i32(1, 64) + b"\x00"  # field 2 in long form
    page = pages.read_page_header(long_ok, 0, len(long_ok), [100_000])
    assert (page.uncompressed, page.compressed) == (64, 64)


def test_a_chunk_of_many_tiny_pages_stops_at_the_page_budget() -> None:
    page = _i32(1, 0) + _i32(1, 0) + _i32(1, 0) + b"\x00"
    data = b"PAR1" + page * 50 + b"\x00" * 8
    chunk = pages.Chunk("v", 0, 4, len(page) * 50, 10**9, 10**9)
    with pytest.raises(pages.TooManyPages):
        pages.walk_chunk(data, chunk, 10**9, [49])
    assert pages.walk_chunk(data, chunk, 10**9, [50]) == 0


# -- Arrow IPC: a batch declaring more values than its buffers hold (found by the arrow fuzz target) ---------


def test_an_arrow_buffer_shorter_than_its_values_is_a_clear_error(tmp_path: Path) -> None:
    import struct

    rows = 60
    table = pa.table({"timestamp": pa.array(np.arange(T0, T0 + 60 * rows, 60, dtype=np.int64)), "in_flight": pa.array(np.ones(rows))})
    sink = io.BytesIO()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    data = sink.getvalue()
    length = struct.pack("<q", 8 * rows)  # the values buffer of each column: 480 bytes
    at = data.index(length)
    (tmp_path / "short.arrow").write_bytes(data[:at] + struct.pack("<q", 256) + data[at + 8 :])
    code, out, err = run_cli(["bands", "short.arrow"], cwd=tmp_path)
    assert (code, out) == (2, "")
    assert err == (
        "policylint: error: short.arrow: cannot read column 'timestamp': malformed Arrow data (Buffer #1 too small "
        "in array of type int64 and length 60: expected at least 480 byte(s), got 256)\n"
    )
