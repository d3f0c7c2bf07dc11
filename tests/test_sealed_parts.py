"""A sealed entry written in parts is the entry written whole, and a part that goes wrong writes nothing.

The repository index is the largest entry a one-file run writes (about 33 MB at
10,000 workloads); it is encoded and sealed part by part
(:func:`policylint.cache.store.write_sealed_parts`, :func:`policylint.engine.index_store._index_text`)
so that it is never held whole. These tests hold the file written that way to the
one :func:`~policylint.cache.store.write_sealed` writes, byte for byte.
"""

from __future__ import annotations

import json
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


def _whole(head: dict[str, Any], rows: dict[str, Any]) -> bytes:
    return json.dumps({**head, "rows": rows}, separators=(",", ":"), allow_nan=True).encode("utf-8", "surrogateescape")


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(["header", "shapes", "places"]), _VALUES),
       st.dictionaries(st.text(max_size=6), _VALUES, max_size=600))
def test_the_index_text_in_parts_is_the_text_made_whole(head: dict[str, Any], rows: dict[str, Any]) -> None:
    parts = list(index_store._index_text(head, rows))
    assert b"".join(parts) == _whole(head, rows)
    # one part for the head and up to 255 rows, one more per 256 rows: a large index is never one part
    assert len(parts) == (len(rows) + 1) // index_store._ROWS_PER_PART + 1


def test_a_value_json_cannot_hold_stops_the_text() -> None:
    with pytest.raises(ValueError, match="index not written"):
        list(index_store._index_text({"header": {}}, {"w": [object()]}))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.text(max_size=6), _VALUES, max_size=40), st.lists(st.integers(0, 10_000), max_size=6))
def test_an_entry_sealed_in_parts_is_the_entry_sealed_whole(tmp_path: Path, rows: dict[str, Any], cuts: list[int]) -> None:
    folder = tmp_path / "cache"
    body = _whole({"header": {"n": 1}}, rows)
    at = sorted({min(c, len(body)) for c in cuts})
    parts = [body[a:b] for a, b in zip([0, *at], [*at, len(body)])]
    assert store.write_sealed(folder / "whole.json", folder, "repoindex", body, 1 << 20)
    assert store.write_sealed_parts(folder / "parts.json", folder, "repoindex", iter(parts), 1 << 20)
    written = (folder / "parts.json").read_bytes()
    assert written == (folder / "whole.json").read_bytes()
    assert store.read_sealed(folder / "parts.json", folder, "repoindex", 1 << 20) == body


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.is_file() and p.name != store.SECRET_FILE)


def test_an_entry_over_the_limit_is_not_written_and_leaves_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    body = _whole({"header": {}}, {f"w{i}": [i, math.pi] for i in range(500)})
    limit = len(store.seal_json(folder, "repoindex", body) or b"")
    assert limit > 0
    parts = [body[i:i + 1000] for i in range(0, len(body), 1000)]
    assert store.write_sealed_parts(folder / "e.json", folder, "repoindex", iter(parts), limit)  # exactly at the limit
    assert not store.write_sealed_parts(folder / "f.json", folder, "repoindex", iter(parts), limit - 1)
    assert _leftovers(folder) == ["e.json"]  # no entry, no temporary file


def test_parts_that_are_no_object_write_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    for parts in ([], [b""], [b"{}", b" "], [b"[1]"], [b"{"]):
        assert not store.write_sealed_parts(folder / "e.json", folder, "repoindex", iter(parts), 1 << 20)
    assert _leftovers(folder) == []


def test_a_part_that_raises_writes_nothing_and_keeps_the_old_entry(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    assert store.write_sealed(folder / "e.json", folder, "repoindex", b'{"old":1}', 1 << 20)
    before = (folder / "e.json").read_bytes()

    def parts() -> Any:
        yield b'{"new":'
        raise ValueError("a value JSON cannot hold")

    assert not store.write_sealed_parts(folder / "e.json", folder, "repoindex", parts(), 1 << 20)
    assert (folder / "e.json").read_bytes() == before
    assert _leftovers(folder) == ["e.json"]


def test_a_value_kept_decoded_is_taken_only_for_the_same_bytes_and_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A resident server's child takes a kept value (decoded.KEPT_DECODED) instead of decoding, never for other bytes."""
    monkeypatch.setattr(decoded, "KEPT_DECODED", {})
    monkeypatch.setattr(decoded, "DECODED", [])
    monkeypatch.setattr(decoded, "KEEP_DECODED_BYTES", 16)
    folder = tmp_path / "cache"
    path = folder / "index.json"
    body = _whole({"header": {"n": 1}}, {"w": [1, 2.5]})
    assert store.write_sealed(path, folder, "repoindex", body, 1 << 20)
    name = str(path)

    kept = {"the": "value the server decoded"}
    decoded.KEPT_DECODED[name] = (body, kept)
    assert decoded.read_sealed_json(path, folder, "repoindex", 1 << 20) is kept
    assert name not in decoded.KEPT_DECODED  # once: a second read in the same run decodes
    assert decoded.read_sealed_json(path, folder, "repoindex", 1 << 20) == json.loads(body)

    # decoded from other bytes (the entry was written again since): not taken
    decoded.KEPT_DECODED[name] = (body.replace(b"2.5", b"3.5"), kept)
    assert decoded.read_sealed_json(path, folder, "repoindex", 1 << 20) == json.loads(body)
    # a damaged entry is none, whatever is kept for its path
    decoded.KEPT_DECODED[name] = (body, kept)
    path.write_bytes(path.read_bytes().replace(b"2.5", b"2.6"))
    assert decoded.read_sealed_json(path, folder, "repoindex", 1 << 20) is None
    # what the runs decoded, for a server to keep: each entry at least KEEP_DECODED_BYTES long
    assert decoded.DECODED == [(name, str(folder), "repoindex", 1 << 20)] * 2


def test_the_server_decodes_an_entry_again_only_when_its_file_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run names the same entries every time: the server reads them again only when they were written again."""
    monkeypatch.setattr(decoded, "KEPT_DECODED", {})
    monkeypatch.setattr(decoded, "_IDENTS", {})
    folder = tmp_path / "cache"
    path = folder / "index.json"
    body = _whole({"header": {"n": 1}}, {"w": [1, 2.5]})
    assert store.write_sealed(path, folder, "repoindex", body, 1 << 20)
    reads: list[str] = []
    real = decoded.read_sealed

    def counting(*args: Any) -> Any:
        reads.append(str(args[0]))
        return real(*args)

    monkeypatch.setattr(decoded, "read_sealed", counting)
    line = (json.dumps([str(path), str(folder), "repoindex", 1 << 20]) + "\n").encode()
    keeper = decoded.DecodedKeeper()
    keeper.keep([line])
    keeper.keep([line])
    assert len(reads) == 1 and decoded.KEPT_DECODED[str(path)] == (body, json.loads(body))
    assert keeper.kept() == (1, len(body))
    again = body.replace(b"2.5", b"3.5")
    assert store.write_sealed(path, folder, "repoindex", again, 1 << 20)  # written again: a new file
    keeper.keep([line])
    assert len(reads) == 2 and decoded.KEPT_DECODED[str(path)] == (again, json.loads(again))
    # a name outside its cache folder, or of another kind, is never read
    keeper.keep([(json.dumps([str(tmp_path / "x.json"), str(folder), "repoindex", 1 << 20]) + "\n").encode(),
                 (json.dumps([str(path), str(folder), "documents", 1 << 20]) + "\n").encode(), b"not json\n"])
    assert len(reads) == 2
