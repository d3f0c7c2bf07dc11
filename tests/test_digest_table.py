"""The trace digests of one folder are read as one entry, and a row is used only for the file as it was recorded.

A warm run over a folder of traces reads one digest table (``stattable-v*``)
instead of one record per trace; the table holds exactly what the records hold
(real path, identity, digest), so it is trusted as they are, and anything
doubtful in it falls back to hashing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from policylint.cache import digests as digest_cache
from policylint.cache import store


def _traces(folder: Path, n: int = 5) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(n):
        path = folder / f"t{i}.csv"
        path.write_text(f"timestamp,c\n2026-01-01T00:00:00Z,{i}\n")
        out.append(path)
    return out


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The kind folder of every cache entry read."""
    seen: list[str] = []
    real = digest_cache.read_sealed

    def counting(path: Path | str, folder: Path, kind: str, limit: int) -> Any:
        seen.append(Path(path).parts[-3])
        return real(path, folder, kind, limit)

    monkeypatch.setattr(digest_cache, "read_sealed", counting)
    return seen


def test_a_warm_run_reads_one_table_instead_of_a_record_per_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reads: list[str]
) -> None:
    monkeypatch.setattr(digest_cache, "_RACY_SECONDS", 0.0)  # the files were just written: accept them at once
    folder = tmp_path / "c"
    traces = _traces(tmp_path / "traces")
    digests = [digest_cache.known_digest(t, folder) for t in traces]
    digest_cache.flush_digests(folder)
    reads.clear()
    assert [digest_cache.known_digest(t, folder) for t in traces] == digests == [digest_cache._file_digest(t) for t in traces]
    assert reads == [f"stattable-v{store.FORMAT_VERSION}"]


def test_a_damaged_or_foreign_table_falls_back_to_hashing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digest_cache, "_RACY_SECONDS", 0.0)
    folder = tmp_path / "c"
    traces = _traces(tmp_path / "traces")
    digests = [digest_cache.known_digest(t, folder) for t in traces]
    digest_cache.flush_digests(folder)
    (table,) = folder.glob("stattable-v*/*/*.json")
    data = table.read_bytes()
    lie = data.replace(digests[0].encode(), b"0" * 64)  # another digest for t0: the HMAC no longer matches
    assert lie != data
    for damage in (lie, b"", b"{", data[: len(data) // 2]):
        table.write_bytes(damage)
        assert [digest_cache.known_digest(t, folder) for t in traces] == digests
        digest_cache._TABLES.clear()  # as a new run: read from the folder again
    # a table of another folder filed under this one's name is no table of this folder
    other = _traces(tmp_path / "elsewhere", 1)
    digest_cache.known_digest(other[0], folder)
    digest_cache.flush_digests(folder)
    foreign = next(p for p in folder.glob("stattable-v*/*/*.json") if p != table)
    table.write_bytes(foreign.read_bytes())
    assert digest_cache._DigestTable(folder, os.path.dirname(os.path.realpath(traces[0]))).rows == {}


def test_a_row_is_used_only_while_the_files_identity_is_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digest_cache, "_RACY_SECONDS", 0.0)
    folder = tmp_path / "c"
    (trace,) = _traces(tmp_path / "traces", 1)
    before = digest_cache.known_digest(trace, folder)
    digest_cache.flush_digests(folder)
    info = trace.stat()
    trace.write_text("timestamp,c\n2026-01-01T00:00:00Z,7\n")  # same size
    os.utime(trace, ns=(info.st_atime_ns, info.st_mtime_ns))  # and the old modification time
    after = digest_cache.known_digest(trace, folder)
    assert after != before and after == digest_cache._file_digest(trace)
