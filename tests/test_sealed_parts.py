"""Entries sealed as frames: what is read back is what was written, and anything else is a miss.

The repository index and the document pack are the largest entries a one-file run reads
(about 40 and 30 MB at 10,000 workloads). They are written as frames of ``marshal``
(:func:`policylint.cache.store.write_sealed_frames`, :func:`policylint.engine.index_store._index_frames`),
part by part so that they are never held whole, with an HMAC after them, and read back by
:func:`policylint.cache.decoded.read_sealed_values`. These tests hold a round trip to the value
written, type for type as JSON would give it back, and every damaged, cut or oversized entry to a miss.
"""

from __future__ import annotations

import json
import marshal
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policylint.cache import decoded, store
from policylint.engine import index_store

_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=8)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=10,
)


def exact(a: Any, b: Any) -> bool:
    """Equal, type for type (a tuple is not a list), NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(exact(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(exact(x, y) for x, y in zip(a, b))
    return a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))


def _read_index(path: Path, folder: Path) -> tuple[dict[str, Any], dict[str, Any]] | None:
    values = decoded.read_sealed_values(path, folder, "repoindex", 1 << 30)
    if values is None:
        return None
    rows: dict[str, Any] = {}
    for part in values[1:]:
        rows.update((name, row) for name, row in part)
    return values[0], rows


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(["header", "shapes", "places"]), _VALUES),
       st.dictionaries(st.text(max_size=6), _VALUES, max_size=600))
def test_the_index_in_frames_reads_back_as_written(tmp_path: Path, head: dict[str, Any], rows: dict[str, Any]) -> None:
    folder = tmp_path / "cache"
    frames = list(index_store._index_frames(head, rows))
    # one frame for the head, one per 256 rows: a large index is never one part
    assert len(frames) == 1 + -(-len(rows) // index_store._ROWS_PER_PART)
    path = folder / "index.bin"
    assert store.write_sealed_frames(path, folder, "repoindex", iter(frames), 1 << 30)
    read = _read_index(path, folder)
    assert read is not None
    # what JSON would give back, type for type: the index's readers check lists and string keys
    assert exact(list(read), json.loads(json.dumps([head, rows])))


def test_a_value_marshal_cannot_hold_writes_nothing_and_keeps_the_old_entry(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    path = folder / "index.bin"
    assert store.write_sealed_frames(path, folder, "repoindex", index_store._index_frames({"old": 1}, {}), 1 << 20)
    before = path.read_bytes()
    assert not store.write_sealed_frames(path, folder, "repoindex",
                                         index_store._index_frames({"header": {}}, {"w": [object()]}), 1 << 20)
    assert path.read_bytes() == before
    assert _leftovers(folder) == ["index.bin"]


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.is_file() and p.name != store.SECRET_FILE)


def test_an_entry_over_the_limit_is_not_written_and_leaves_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    frames = list(index_store._index_frames({"header": {}}, {f"w{i}": [i, math.pi] for i in range(500)}))
    limit = sum(map(len, frames)) + 65
    assert store.write_sealed_frames(folder / "e.bin", folder, "repoindex", iter(frames), limit)  # exactly at the limit
    assert not store.write_sealed_frames(folder / "f.bin", folder, "repoindex", iter(frames), limit - 1)
    assert _leftovers(folder) == ["e.bin"]  # no entry, no temporary file
    assert store.read_sealed_frames(folder / "e.bin", folder, "repoindex", limit) is not None
    assert store.read_sealed_frames(folder / "e.bin", folder, "repoindex", limit - 1) is None


def test_a_damaged_cut_or_foreign_entry_is_a_miss(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    path = folder / "e.bin"
    frames = list(index_store._index_frames({"header": {"n": 1}}, {f"w{i}": [i, "x" * i] for i in range(600)}))
    assert store.write_sealed_frames(path, folder, "repoindex", iter(frames), 1 << 20)
    good = path.read_bytes()
    assert decoded.read_sealed_values(path, folder, "repoindex", 1 << 20) is not None
    assert decoded.read_sealed_values(path, folder, "docpack", 1 << 20) is None  # another kind's key
    mac = bytes(good[-64:])
    for bad in (good[: len(good) // 2], good[:-1], good[:-65], b"", good[:-66] + b"\n" + mac,
                good.replace(b"x" * 50, b"y" * 50, 1), b"".join(frames) + b"\n" + b"0" * 64,
                # a frame length pointing past the end, sealed properly: still a miss
                None):
        if bad is None:
            broken = [frames[0], (10**9).to_bytes(8, "little") + frames[1][8:]]
            assert store.write_sealed_frames(path, folder, "repoindex", iter(broken), 1 << 20)
        else:
            path.write_bytes(bad)
        assert decoded.read_sealed_values(path, folder, "repoindex", 1 << 20) is None
        assert store.read_sealed_frames(path, folder, "repoindex", 1 << 20) is None or bad is None
    # bytes that are no marshal value, sealed properly: a miss too
    assert store.write_sealed_frames(path, folder, "repoindex", iter([store.frame(b"\xff\x00junk")]), 1 << 20)
    assert decoded.read_sealed_values(path, folder, "repoindex", 1 << 20) is None


def _written(path: Path, folder: Path, value: Any) -> bytes:
    assert store.write_sealed_frames(path, folder, "repoindex", iter([store.frame(marshal.dumps(value))]), 1 << 20)
    return path.read_bytes()


def test_a_value_kept_decoded_is_taken_only_for_the_same_bytes_and_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A resident server's child takes a kept value (decoded.KEPT_DECODED) instead of decoding, never for other bytes."""
    monkeypatch.setattr(decoded, "KEPT_DECODED", {})
    monkeypatch.setattr(decoded, "DECODED", [])
    monkeypatch.setattr(decoded, "KEEP_DECODED_BYTES", 16)
    folder = tmp_path / "cache"
    path = folder / "index.bin"
    body = _written(path, folder, {"header": {"n": 1}, "w": [1, 2.5]})
    name = str(path)

    kept = [{"the": "value the server decoded"}]
    decoded.KEPT_DECODED[name] = (body, kept)
    assert decoded.read_sealed_values(path, folder, "repoindex", 1 << 20) is kept
    assert name not in decoded.KEPT_DECODED  # once: a second read in the same run decodes
    assert decoded.read_sealed_values(path, folder, "repoindex", 1 << 20) == [{"header": {"n": 1}, "w": [1, 2.5]}]

    # decoded from other bytes (the entry was written again since): not taken
    decoded.KEPT_DECODED[name] = (body[:-1] + bytes([body[-1] ^ 1]), kept)  # one bit (b"0" was the byte 1 time in 256)
    assert decoded.read_sealed_values(path, folder, "repoindex", 1 << 20) == [{"header": {"n": 1}, "w": [1, 2.5]}]
    # a damaged entry is none, whatever is kept for its path
    decoded.KEPT_DECODED[name] = (body, kept)
    path.write_bytes(body[:20] + bytes([body[20] ^ 1]) + body[21:])
    assert decoded.read_sealed_values(path, folder, "repoindex", 1 << 20) is None
    # what the runs decoded, for a server to keep: each entry at least KEEP_DECODED_BYTES long
    assert decoded.DECODED == [(name, str(folder), "repoindex", 1 << 20)] * 2


def test_the_server_decodes_an_entry_again_only_when_its_file_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run names the same entries every time: the server reads them again only when they were written again."""
    monkeypatch.setattr(decoded, "KEPT_DECODED", {})
    monkeypatch.setattr(decoded, "_IDENTS", {})
    folder = tmp_path / "cache"
    path = folder / "index.bin"
    body = _written(path, folder, {"w": [1, 2.5]})
    reads: list[str] = []
    real = decoded.read_sealed_frames

    def counting(*args: Any) -> Any:
        reads.append(str(args[0]))
        return real(*args)

    monkeypatch.setattr(decoded, "read_sealed_frames", counting)
    line = (json.dumps([str(path), str(folder), "repoindex", 1 << 20]) + "\n").encode()
    keeper = decoded.DecodedKeeper()
    keeper.keep([line])
    keeper.keep([line])
    assert len(reads) == 1 and decoded.KEPT_DECODED[str(path)] == (body, [{"w": [1, 2.5]}])
    assert keeper.kept() == (1, len(body))
    again = _written(path, folder, {"w": [1, 3.5]})  # written again: a new file
    keeper.keep([line])
    assert len(reads) == 2 and decoded.KEPT_DECODED[str(path)] == (again, [{"w": [1, 3.5]}])
    # a name outside its cache folder, or of another kind, is never read
    keeper.keep([(json.dumps([str(tmp_path / "x.bin"), str(folder), "repoindex", 1 << 20]) + "\n").encode(),
                 (json.dumps([str(path), str(folder), "documents", 1 << 20]) + "\n").encode(), b"not json\n"])
    assert len(reads) == 2
