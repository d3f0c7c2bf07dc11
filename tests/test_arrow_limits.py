"""Parquet and Arrow bombs are refused from the file's metadata, before anything is decoded.

A few megabytes of Parquet or Arrow IPC can decode to gigabytes (one long string
repeated, dictionary-encoded or compressed). The row and byte limits do not bound
that; the decoded size, the row count and the column count are read from the
footer, the schema and the batches' metadata first. Each bomb here is built with
pyarrow in well under a second and a few megabytes, and decodes to more than the
default limit of 1 GiB: the refusal must come quickly and without the memory.
"""

from __future__ import annotations

import resource
import struct
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import copy_minirepo, replace_once, run_cli

from policylint.errors import MeasurementError
from policylint.readers import TraceLimits, read_series

T0 = 1_764_547_200  # 2025-12-01, unix seconds
ROWS = 600_000
LONG = 2_000  # bytes of the one repeated value: 600,000 x 2,000 = 1.2 GB decoded
REFUSED = "decode to 1,154 MiB, more than the 1,024 MiB a trace may take once decoded"


def _times(n: int = ROWS) -> pa.Array:
    return pa.array(np.arange(T0, T0 + 60 * n, 60, dtype=np.int64))


def _repeated_text(n: int = ROWS) -> pa.DictionaryArray:
    """One 2,000-digit number repeated ``n`` times, held as a dictionary: a few megabytes to write."""
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array(["7" * LONG]))


def parquet_bomb(path: Path) -> Path:
    # store_schema=False: a file from another writer, whose text Arrow would read expanded
    pq.write_table(pa.table({"timestamp": _times(), "in_flight": _repeated_text()}), path, store_schema=False)
    return path


def arrow_dictionary_bomb(path: Path) -> Path:
    table = pa.table({"timestamp": _times(), "in_flight": _repeated_text()})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return path


def arrow_compressed_bomb(path: Path, stream: bool = False) -> Path:
    """A zstd-compressed IPC file whose two value buffers claim 8 GiB each once decompressed.

    Every compressed buffer starts with its uncompressed length (int64); the two
    columns of 600,000 eight-byte values hold 4,800,000. Rewritten to 8 GiB, Arrow
    would allocate that much before noticing the data is shorter.
    """
    table = pa.table({"timestamp": _times(), "in_flight": pa.array(np.ones(ROWS))})
    options = pa.ipc.IpcWriteOptions(compression="zstd")
    open_writer = pa.ipc.new_stream if stream else pa.ipc.new_file
    with pa.OSFile(str(path), "wb") as sink, open_writer(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    data = path.read_bytes()
    claimed = struct.pack("<q", 8 * ROWS)
    assert data.count(claimed) == 2
    path.write_bytes(data.replace(claimed, struct.pack("<q", 8 * 1024**3)))
    return path


def _bands(tmp_path: Path, name: str) -> tuple[int, str, str, float]:
    start = time.monotonic()
    code, out, err = run_cli(["bands", name], cwd=tmp_path)
    return code, out, err, time.monotonic() - start


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- through the CLI ----------------------------------------------------------------------------------


@pytest.mark.parametrize("build", [parquet_bomb, arrow_dictionary_bomb], ids=["parquet", "arrow"])
def test_a_dictionary_bomb_is_refused_before_it_is_expanded(tmp_path: Path, build: object) -> None:
    name = "bomb.parquet" if build is parquet_bomb else "bomb.arrow"
    path = build(tmp_path / name)  # type: ignore[operator]
    assert path.stat().st_size < 8 * 1024 * 1024
    before = _peak_mb()
    code, out, err, seconds = _bands(tmp_path, name)
    assert code == 2
    assert out == ""
    assert err == (
        f"policylint: error: {name}: the columns read (timestamp, in_flight) {REFUSED} "
        "(a highly compressed or dictionary-encoded file); refused before decoding\n"
    )
    assert seconds < 10
    assert _peak_mb() - before < 500  # the 1.2 GB were never held


@pytest.mark.parametrize("stream", [False, True], ids=["file", "stream"])
def test_compressed_arrow_buffers_are_sized_from_their_prefix_before_decompressing(tmp_path: Path, stream: bool) -> None:
    arrow_compressed_bomb(tmp_path / "bomb.arrow", stream=stream)
    code, out, err, seconds = _bands(tmp_path, "bomb.arrow")
    assert code == 2
    assert out == ""
    assert err == (
        "policylint: error: bomb.arrow: its record batches decode to 16,384 MiB, more than the 1,024 MiB "
        "a trace may take once decoded (a highly compressed or dictionary-encoded file); refused before decoding\n"
    )
    assert seconds < 10


def test_an_honest_compressed_arrow_file_still_reads(tmp_path: Path) -> None:
    table = pa.table({"timestamp": _times(1000), "in_flight": pa.array(np.arange(1000) % 7, type=pa.int64())})
    options = pa.ipc.IpcWriteOptions(compression="zstd")
    with pa.OSFile(str(tmp_path / "ok.arrow"), "wb") as sink, pa.ipc.new_file(sink, table.schema, options=options) as w:
        w.write_table(table)
    series = read_series(tmp_path / "ok.arrow")
    assert series.values.max() == 6


def test_dictionary_text_within_the_limit_is_read_as_text(tmp_path: Path) -> None:
    values = pa.DictionaryArray.from_arrays(pa.array(np.arange(100, dtype=np.int32) % 3), pa.array(["1", "2", "3"]))
    pq.write_table(pa.table({"timestamp": _times(100), "v": values}), tmp_path / "d.parquet")
    series = read_series(tmp_path / "d.parquet")
    assert sorted(set(series.values.tolist())) == [1.0, 2.0, 3.0]


def test_a_bomb_in_a_checked_repository_is_a_finding(tmp_path: Path) -> None:
    repo = copy_minirepo(tmp_path / "repo")
    parquet_bomb(repo / "measurements" / "traces" / "reranker.parquet")
    doc = repo / "workloads" / "search.yaml"
    replace_once(doc, "path: ../measurements/traces/reranker.csv\n      format: csv\n",
                 "path: ../measurements/traces/reranker.parquet\n      format: parquet\n")
    code, out, err = run_cli(["check", "--now", "2026-12-01", "--format", "concise", "--select", "PL024", "."], cwd=repo)
    assert code == 1, err
    assert "internal error" not in err
    (line,) = [line for line in out.splitlines() if "PL024" in line]
    assert line.startswith("workloads/search.yaml:16:7: error PL024 ")
    assert REFUSED in line


def test_too_many_columns_are_refused_from_the_schema(tmp_path: Path) -> None:
    table = pa.table({"timestamp": _times(2), **{f"c{i}": pa.array([1.0, 2.0]) for i in range(10_001)}})
    with pa.OSFile(str(tmp_path / "wide.arrow"), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    code, out, err, _ = _bands(tmp_path, "wide.arrow")
    assert code == 2
    assert err == "policylint: error: wide.arrow: 10,002 columns, more than the 10,000 a trace file may have\n"


@pytest.mark.parametrize("stream", [False, True], ids=["file", "stream"])
def test_a_file_of_countless_batches_is_refused_before_they_are_parsed(tmp_path: Path, stream: bool) -> None:
    batch = pa.record_batch({"timestamp": pa.array([T0], pa.int64()), "v": pa.array([1.0])})
    open_writer = pa.ipc.new_stream if stream else pa.ipc.new_file
    with pa.OSFile(str(tmp_path / "many.arrow"), "wb") as sink, open_writer(sink, batch.schema) as writer:
        for _ in range(100_001):
            writer.write_batch(batch)
    code, _, err, seconds = _bands(tmp_path, "many.arrow")
    assert code == 2
    assert err == (
        "policylint: error: many.arrow: more than 100,000 record batches (or buffers in one), "
        "more than a trace file holds; refused\n"
    )
    assert seconds < 10


def test_a_parquet_footer_longer_than_the_file_is_refused_before_parsing(tmp_path: Path) -> None:
    pq.write_table(pa.table({"timestamp": _times(10), "v": pa.array(np.ones(10))}), tmp_path / "t.parquet")
    data = bytearray((tmp_path / "t.parquet").read_bytes())
    data[-8:-4] = struct.pack("<I", 0xFFFFFF00)
    (tmp_path / "t.parquet").write_bytes(bytes(data))
    code, _, err, _ = _bands(tmp_path, "t.parquet")
    assert code == 2
    assert err.startswith("policylint: error: t.parquet: cannot read: the Parquet footer claims 4,294,967,040 bytes in a ")


def test_a_nested_column_is_refused_by_name(tmp_path: Path) -> None:
    lists = pa.array([[1.0] * 3] * 10, type=pa.list_(pa.float64()))
    pq.write_table(pa.table({"timestamp": _times(10), "v": lists}), tmp_path / "n.parquet")
    code, _, err, _ = _bands(tmp_path, "n.parquet")
    assert code == 2
    assert err == "policylint: error: n.parquet:1: column 'v' holds list<element: double>: a trace column holds numbers, text or times\n"


# -- integers beyond 2^53 ---------------------------------------------------------------------------------


def _big_integer_trace(path: Path) -> Path:
    values = pa.array([1, 2, 3, 2**53 + 1, 2, 1, 1, 1, 1, 1], type=pa.int64())
    pq.write_table(pa.table({"timestamp": _times(10), "in_flight": values}), path)
    return path


def test_an_integer_beyond_2_53_is_a_clear_error_in_bands(tmp_path: Path) -> None:
    _big_integer_trace(tmp_path / "big.parquet")
    code, out, err, _ = _bands(tmp_path, "big.parquet")
    assert code == 2
    assert out == ""
    assert err == (
        "policylint: error: big.parquet:4: column 'in_flight': 9007199254740993 is beyond "
        "9,007,199,254,740,992 (2^53), the largest integer a measurement can hold exactly\n"
    )


def test_an_integer_beyond_2_53_is_a_finding_in_check(tmp_path: Path) -> None:
    repo = copy_minirepo(tmp_path / "repo")
    _big_integer_trace(repo / "measurements" / "traces" / "reranker.parquet")
    replace_once(repo / "workloads" / "search.yaml", "path: ../measurements/traces/reranker.csv\n      format: csv\n",
                 "path: ../measurements/traces/reranker.parquet\n      format: parquet\n")
    code, out, err = run_cli(["check", "--now", "2026-12-01", "--format", "concise", "."], cwd=repo)
    assert "internal error" not in err
    assert code == 1
    assert "column 'in_flight': 9007199254740993 is beyond 9,007,199,254,740,992 (2^53)" in out


def test_epoch_nanoseconds_beyond_2_53_are_times_not_errors(tmp_path: Path) -> None:
    stamps = pa.array([(T0 + 60 * i) * 10**9 for i in range(10)], type=pa.int64())
    pq.write_table(pa.table({"timestamp": stamps, "v": pa.array(np.ones(10))}), tmp_path / "ns.parquet")
    series = read_series(tmp_path / "ns.parquet")
    assert series.times[0] == T0
    assert series.step_seconds == 60


# -- the limits themselves ----------------------------------------------------------------------------------


def test_fixed_width_columns_are_sized_from_rows_times_width(tmp_path: Path) -> None:
    pq.write_table(pa.table({"timestamp": _times(1000), "v": pa.array(np.ones(1000))}), tmp_path / "f.parquet")
    # 2 columns x 1,000 rows x 8 bytes, and 125 bytes of validity bits per column
    with pytest.raises(MeasurementError, match="decode to 16,250 bytes, more than the 16,249 bytes"):
        read_series(tmp_path / "f.parquet", limits=TraceLimits(max_decoded_bytes=16_249))
    assert len(read_series(tmp_path / "f.parquet", limits=TraceLimits(max_decoded_bytes=16_250)).values) == 1000


def test_compressed_plain_text_is_sized_from_the_uncompressed_chunks(tmp_path: Path) -> None:
    text = pa.array(["5" * 1000] * 1000)
    pq.write_table(pa.table({"timestamp": _times(1000), "v": text}), tmp_path / "p.parquet",
                   use_dictionary=False, compression="zstd")
    assert (tmp_path / "p.parquet").stat().st_size < 50_000
    with pytest.raises(MeasurementError, match="refused before decoding"):
        read_series(tmp_path / "p.parquet", limits=TraceLimits(max_decoded_bytes=500_000))


def test_the_decoded_limit_follows_the_other_limits() -> None:
    assert TraceLimits().decoded_bytes == 1024**3
    assert TraceLimits(max_rows=100_000_000).decoded_bytes == 6_400_000_000
    assert TraceLimits(max_file_bytes=1024**3).decoded_bytes == 4 * 1024**3
    assert TraceLimits(max_decoded_bytes=10).decoded_bytes == 10
    with pytest.raises(ValueError):
        TraceLimits(max_columns=0)


@pytest.mark.parametrize("container", ["stream", "file"])
def test_a_column_name_that_is_not_utf8_is_refused_with_a_message(tmp_path: Path, container: str) -> None:
    """Found by the arrow fuzz target: Arrow decodes field names as UTF-8 when asked for them, and raised."""
    table = pa.table({"start": pa.array([0.0, 1.0]), "XQXQ": pa.array([1.0, 2.0])})
    sink = pa.BufferOutputStream()
    writer = pa.ipc.new_stream(sink, table.schema) if container == "stream" else pa.ipc.new_file(sink, table.schema)
    with writer:
        writer.write_table(table)
    data = sink.getvalue().to_pybytes()
    assert data.count(b"XQXQ") == (1 if container == "stream" else 2)  # the schema (a file repeats it in its footer)
    path = tmp_path / "trace.arrow"
    path.write_bytes(data.replace(b"XQXQ", b"\xff\xfe\xff\xfe"))
    with pytest.raises(MeasurementError, match="a column name is not valid UTF-8"):
        read_series(path, format="requests", start_column="start", end_column="end", display_name=path.name,
                    limits=TraceLimits())
