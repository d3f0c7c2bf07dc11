"""Fuzz target for Parquet and Arrow IPC traces (issue 22).

* ``arrow`` - ``read_series`` (a time series, a request log) and ``read_jobs``
  on mutated Parquet files and Arrow IPC files and streams: plain, compressed
  (zstd, lz4), with a dictionary-encoded column, with several row groups or
  batches. Besides the generic byte edits of ``mutate.py``, a mutation writes a
  number that hurts a reader (0, -1, 2^31 - 1, 2^53 + 1, 8 GiB, 2^63 - 1) as a
  32- or 64-bit integer over any offset: a length, a row count, a buffer's
  uncompressed size. A third kind rewrites one Parquet page header (files
  written with page checksums, whose crc field leaves room) to claim another
  uncompressed size, compressed size or number of values, the header's length
  and so every offset of the footer unchanged; the seeds include such page
  bombs already claiming 2^31 - 1 bytes. The contract: a ``PolicylintError`` or a result, never
  another exception, and (checked by the runner) no hang. The reads run with a
  decoded-size limit of 32 MiB and their own Arrow memory pool: Arrow may
  allocate at most four times that (a bomb must be refused from the metadata,
  not by an allocation that fails), and a refusal never reports a failed
  allocation.
"""

from __future__ import annotations

import io
import struct
from typing import Any

from hypothesis import strategies as st

from mutate import mutated
from targets import ContractViolation, Target, _workdir

ROWS = 240
T0 = 1_764_547_200
FORMS = ("series", "requests", "jobs")
NUMBERS = (0, 1, -1, 2**31 - 1, 2**32 - 1, 2**53 + 1, 8 * 1024**3, 2**63 - 1, -(2**63))
DECODED_LIMIT = 32 * 1024 * 1024
#: what a rewritten page header claims (sizes and numbers of values; i32 fields)
PAGE_NUMBERS = (0, 1, -1, 7, 4096, 2**20, DECODED_LIMIT + 1, 2**30, 2**31 - 1, -(2**31))
POOL_LIMIT = 4 * DECODED_LIMIT
_POOLS: list[Any] = []


def _tables() -> dict[str, Any]:
    import numpy as np
    import pyarrow as pa

    times = np.arange(T0, T0 + 60 * ROWS, 60, dtype=np.int64)
    busy = (np.arange(ROWS) % 60 < 20).astype(np.int64) * 5 + 1
    model = pa.DictionaryArray.from_arrays(pa.array(np.arange(ROWS, dtype=np.int32) % 2), pa.array(["a", "b"]))
    return {
        "series": pa.table({"timestamp": pa.array(times), "in_flight": pa.array(busy), "model": model}),
        "requests": pa.table(
            {
                "start": pa.array(times.astype(np.float64)),
                "end": pa.array(times.astype(np.float64) + 30 + busy),
                "status": pa.array(["ok"] * ROWS),
            }
        ),
        "jobs": pa.table(
            {
                "start": pa.array(times[::4].astype("datetime64[s]")),
                "end": pa.array((times[::4] + 3600).astype("datetime64[s]")),
                "gpus": pa.array(busy[::4]),
            }
        ),
    }


def _varint(n: int, width: int | None = None) -> bytes:
    """``n`` as a Thrift varint, padded with continuation bytes to ``width`` bytes when given."""
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        if n or (width is not None and len(out) + 1 < width):
            out.append(low | 0x80)
        else:
            out.append(low)
            break
    if width is not None and len(out) != width:
        raise ValueError("does not fit")
    return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    n = shift = 0
    for _ in range(10):
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, pos
    raise ValueError("varint too long")


def _zigzag(n: int) -> int:
    return ((n << 1) ^ (n >> 63)) & (2**64 - 1)


def claim(data: bytes, at: int, field: int, number: int) -> bytes | None:
    """``data`` with the page header at ``at`` claiming ``number`` in its field ``field``
    (2: uncompressed size, 3: compressed size, 5: number of values), at the header's length.

    Only for headers that start with four i32 fields (a file written with page
    checksums): the crc is dropped to make room, and the page type takes the bytes
    left over as a padded varint. None when the header has another shape.
    """
    try:
        values, pos = [], at
        for _ in range(4):
            if data[pos] != 0x15:
                return None
            value, pos = _read_varint(data, pos + 1)
            values.append(value)
        nested = data[pos]
        if not 1 <= nested >> 4 <= 4 or nested & 0x0F != 12:
            return None
        inner = b""
        rest = pos + 1
        if field == 5:  # the nested header's first field, num_values (i32)
            if data[rest] != 0x15:
                return None
            _, after = _read_varint(data, rest + 1)
            inner, rest = b"\x15" + _varint(_zigzag(number)), after
        sizes = [values[1], values[2]]
        if field in (2, 3):
            sizes[field - 2] = number
        middle = b"".join(b"\x15" + _varint(_zigzag(v)) for v in sizes)
        head = bytes([((nested >> 4) + 1) << 4 | 12])
        room = (rest - at) - len(middle) - len(head) - len(inner)
        first = b"\x15" + _varint(values[0], width=room - 1)
        header = first + middle + head + inner
        if len(header) != rest - at:
            return None
        return data[:at] + header + data[rest:]
    except (IndexError, ValueError):
        return None


def _page_offsets(data: bytes) -> list[int]:
    """Where the first data and dictionary page of each column chunk starts."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    found = []
    for g in range(meta.num_row_groups):
        for j in range(meta.num_columns):
            c = meta.row_group(g).column(j)
            found.append(int(c.data_page_offset))
            if c.has_dictionary_page and c.dictionary_page_offset:
                found.append(int(c.dictionary_page_offset))
    return found


def _seeds() -> list[tuple[str, bytes]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    seeds: list[tuple[str, bytes]] = []
    for form, table in _tables().items():
        for options in (
            {},
            {"compression": "zstd", "row_group_size": 60},
            {"use_dictionary": False, "compression": "gzip"},
            {"compression": "snappy", "write_page_checksum": True, "row_group_size": 120},
        ):
            sink = io.BytesIO()
            pq.write_table(table, sink, **options)  # type: ignore[arg-type]
            seeds.append((form, sink.getvalue()))
            if options.get("write_page_checksum"):
                # a page bomb: one page header claims 2 GB once uncompressed
                data = sink.getvalue()
                bombs = [b for at in _page_offsets(data)[-2:] if (b := claim(data, at, 2, 2**31 - 1)) is not None]
                seeds += [(form, b) for b in bombs]
        for compression in (None, "zstd", "lz4"):
            for writer in (pa.ipc.new_file, pa.ipc.new_stream):
                sink = io.BytesIO()
                opts = pa.ipc.IpcWriteOptions(compression=compression)
                with writer(sink, table.schema, options=opts) as w:
                    for batch in table.to_batches(max_chunksize=ROWS // 3):
                        w.write_batch(batch)
                seeds.append((form, sink.getvalue()))
    return seeds


@st.composite
def _overwritten(draw: Any, data: bytes) -> bytes:
    """``data`` with a hurtful number written as a 4- or 8-byte integer at a few offsets."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        width = draw(st.sampled_from((4, 8)))
        if len(out) < width:
            break
        at = draw(st.integers(0, len(out) - width))
        number = draw(st.sampled_from(NUMBERS))
        out[at : at + width] = struct.pack("<q" if width == 8 else "<I", number % (2 ** (8 * width)) if width == 4 else number)
    return bytes(out)


@st.composite
def _claimed(draw: Any, data: bytes, offsets: list[int]) -> bytes:
    """``data`` with one page header claiming a hurtful size or number of values (``data`` if it cannot)."""
    at = draw(st.sampled_from(offsets))
    field = draw(st.sampled_from((2, 3, 5)))
    number = draw(st.sampled_from(PAGE_NUMBERS))
    return claim(data, at, field, number) or data


def _strategy(seeds: list[tuple[str, bytes]]) -> st.SearchStrategy[tuple[str, bytes]]:
    def one(index: int) -> st.SearchStrategy[tuple[str, bytes]]:
        form, data = seeds[index]
        choices = [mutated([data], max_edits=3), _overwritten(data)]
        if data[:4] == b"PAR1":
            offsets = _page_offsets(data)
            if any(claim(data, at, 2, 0) is not None for at in offsets):
                choices.append(_claimed(data, offsets))
        return st.one_of(*choices).map(lambda d: (form, d))

    return st.integers(0, len(seeds) - 1).flatmap(one)


def run_arrow(item: tuple[str, bytes]) -> None:
    import pyarrow as pa

    from policylint.errors import PolicylintError
    from policylint.readers import TraceLimits, read_jobs, read_series

    form, data = item
    # the container is recognised from the magic bytes, whatever the suffix says
    path = _workdir() / ("trace.parquet" if data[:4] == b"PAR1" else "trace.arrow")
    path.write_bytes(data)
    limits = TraceLimits(max_decoded_bytes=DECODED_LIMIT)
    saved = pa.default_memory_pool()
    pool = pa.proxy_memory_pool(saved)  # its own peak, for this input alone
    _POOLS.append(pool)  # never freed: a buffer Arrow keeps may still belong to it
    pa.set_memory_pool(pool)
    refusal = ""
    try:
        if form == "jobs":
            read_jobs(path, display_name=path.name, limits=limits)
        elif form == "requests":
            read_series(path, format="requests", start_column="start", end_column="end", display_name=path.name, limits=limits)
        else:
            read_series(path, timestamp_column="timestamp", value_columns=["in_flight"], match={"model": "a"},
                        display_name=path.name, limits=limits)
    except PolicylintError as exc:
        refusal = str(exc)  # a refused file is reported, which is the point
    finally:
        pa.set_memory_pool(saved)
    if pool.max_memory() > POOL_LIMIT:
        raise ContractViolation(f"Arrow allocated {pool.max_memory():,} bytes for a {len(data):,}-byte file")
    lowered = refusal.lower()
    if "malloc" in lowered or "out of memory" in lowered or "allocat" in lowered:
        raise ContractViolation(f"refused only because an allocation failed: {refusal[:300]}")


TARGETS: dict[str, Target] = {
    "arrow": Target("arrow", _seeds, _strategy, run_arrow),
}
