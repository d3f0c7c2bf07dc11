"""Kept copy prints (policylint.measure.kept_reads): the column sketches a summed trace carries (PL972)."""

from __future__ import annotations

from pathlib import Path

from policylint.measure import kept_reads

KEY = "ab" * 32
GOOD = {"run_sketch": [1, 2, 3], "values_fingerprint": "f" * 64, "value_changes": 12,
        "part_sketches": [[4, 5, 6], None]}


def test_column_sketches_are_kept_and_read_back_exactly(tmp_path: Path) -> None:
    kept_reads._store_prints(tmp_path, KEY, dict(GOOD))
    assert kept_reads._load_prints(tmp_path, KEY) == GOOD
    single = {**GOOD, "part_sketches": None}
    kept_reads._store_prints(tmp_path, "cd" * 32, single)
    assert kept_reads._load_prints(tmp_path, "cd" * 32) == single


def test_a_damaged_or_misshapen_entry_is_a_miss(tmp_path: Path) -> None:
    """An entry whose column sketches are not sketches is not kept prints: the run reads the trace instead."""
    for bad in ([], [[1.5]], [["x"]], [[1 << 60]], "[1]", [list(range(200))]):
        kept_reads._store_prints(tmp_path, KEY, {**GOOD, "part_sketches": bad})
        assert kept_reads._load_prints(tmp_path, KEY) is None, bad
    kept_reads._store_prints(tmp_path, KEY, dict(GOOD))
    path = kept_reads._prints_path(tmp_path, KEY)
    data = bytearray(path.read_bytes())
    data[-10] ^= 1  # a flipped bit anywhere: the seal no longer holds
    path.write_bytes(bytes(data))
    assert kept_reads._load_prints(tmp_path, KEY) is None
