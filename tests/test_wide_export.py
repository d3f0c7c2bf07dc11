"""One CSV export read by many workloads, a column each: parsed once for all, with the answers of one read per column.

A fleet that exports every workload's series as a column of one file made each workload's
read parse the whole file: the cold run grew with the square of the fleet (issue 26,
``benchmarks/fleet_shapes.py``'s ``wide`` shape). ``policylint.readers.csv_memo`` parses
the columns of such a file once and ``policylint.readers.kept.read_again`` reads its bytes
once; these tests hold that every answer is still the one a read of that column alone gives.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow.csv as pcsv
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import policylint.readers.kept as kept
from policylint.errors import MeasurementError
from policylint.readers import forget_reads
from policylint.traces import read_series

COLUMNS = [f"w_{i}" for i in range(12)]


def _export(path: Path, rows: int = 300, *, text_column: bool = False, seed: int = 7) -> None:
    rng = np.random.default_rng(seed)
    head = ["timestamp", *COLUMNS, *(["region"] if text_column else [])]
    lines = [",".join(head)]
    for r in range(rows):
        cells = [str(1_780_000_000 + 300 * r), *(str(int(v)) for v in rng.integers(0, 40, len(COLUMNS)))]
        if text_column:
            cells.append("eu-west")
        lines.append(",".join(cells))
    path.write_text("\n".join(lines) + "\n")


def _alone(path: Path, column: str) -> tuple[list[float], list[float]]:
    """The column read with nothing kept from an earlier read."""
    forget_reads()
    series = read_series(path, timestamp_column="timestamp", value_columns=[column])
    forget_reads()
    return series.times.tolist(), series.values.tolist()


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times pyarrow parsed a CSV text."""
    count: list[int] = []
    real = pcsv.read_csv

    def counted(*args: object, **kwargs: object) -> object:
        count.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pcsv, "read_csv", counted)
    forget_reads()
    yield count
    forget_reads()


@pytest.mark.parametrize("text_column", [False, True])
def test_an_export_read_by_every_workload_is_parsed_twice_not_once_per_column(
    tmp_path: Path, parses: list[int], text_column: bool
) -> None:
    path = tmp_path / "fleet.csv"
    _export(path, text_column=text_column)
    expected = {c: _alone(path, c) for c in COLUMNS}
    parses.clear()
    for column in COLUMNS:
        series = read_series(path, timestamp_column="timestamp", value_columns=[column])
        assert (series.times.tolist(), series.values.tolist()) == expected[column], column
    # the first read parses its column, the second every number column; the other ten take theirs
    assert len(parses) == 2


def test_another_column_that_is_no_number_leaves_each_read_as_it_was(tmp_path: Path, parses: list[int]) -> None:
    path = tmp_path / "fleet.csv"
    _export(path)
    text = path.read_text().splitlines()
    cells = text[250].split(",")
    cells[4] = "n/a"  # w_3, line 251: the sample (the first rows) says number, Arrow refuses it
    text[250] = ",".join(cells)
    path.write_text("\n".join(text) + "\n")
    expected = {c: _alone(path, c) for c in COLUMNS if c != "w_3"}
    parses.clear()
    for column in expected:
        series = read_series(path, timestamp_column="timestamp", value_columns=[column])
        assert (series.times.tolist(), series.values.tolist()) == expected[column], column
    # the wide parse failed once; every read after parses its own columns, as before
    assert len(parses) == len(expected) + 1
    with pytest.raises(MeasurementError, match=r"fleet.csv:251: column .w_3.: .n/a. is not a number"):
        read_series(path, timestamp_column="timestamp", value_columns=["w_3"])


def test_a_file_rewritten_between_reads_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # bytes are reused only for a file whose identity is unchanged; here even a file written this
    # very second is trusted (the two-second guard off), so only the identity can tell the change
    monkeypatch.setattr(kept, "_RACY_NS", 0)
    forget_reads()
    path = tmp_path / "fleet.csv"
    _export(path, seed=1)
    for column in COLUMNS[:3]:  # kept from the second read on
        read_series(path, timestamp_column="timestamp", value_columns=[column])
    assert kept.read_again(path) is not None
    size = path.stat().st_size
    _export(path, seed=2)  # other values of the same width: maybe the same size, surely another status change
    other = tmp_path / "other.csv"
    _export(other, seed=2)
    got = read_series(path, timestamp_column="timestamp", value_columns=["w_5"])
    assert got.values.tolist() == _alone(other, "w_5")[1]
    assert size > 0
    forget_reads()


def test_nothing_is_kept_for_a_file_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kept, "_RACY_NS", 0)  # a file just written would not be kept anyway
    forget_reads()
    for i in range(3):
        path = tmp_path / f"w-{i}.csv"
        _export(path, seed=i)
        os.utime(path, (1_700_000_000, 1_700_000_000))
        read_series(path, timestamp_column="timestamp", value_columns=["w_0"])
        assert kept.read_again(path) is None
    read_series(path, timestamp_column="timestamp", value_columns=["w_1"])  # a second read keeps it
    assert kept.read_again(path) is not None
    forget_reads()


_CELLS = ["0", "1", "7", "12.5", "", "nan", "-3", "1e3", "x", " 4 ", "inf", "2"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    width=st.integers(min_value=2, max_value=6),
    rows=st.lists(st.lists(st.sampled_from(_CELLS), min_size=6, max_size=6), min_size=1, max_size=90),
    order=st.permutations(range(6)),
)
def test_every_column_read_in_turn_answers_as_read_alone(
    tmp_path_factory: pytest.TempPathFactory, width: int, rows: list[list[str]], order: list[int]
) -> None:
    """Any export, its columns read in any order: each answer (series or error) is the one a read of it alone gives."""
    folder = tmp_path_factory.mktemp("wide")
    path = folder / "export.csv"
    lines = ["timestamp," + ",".join(f"c_{j}" for j in range(width))]
    lines += [f"{1_780_000_000 + 60 * r}," + ",".join(row[:width]) for r, row in enumerate(rows)]
    path.write_text("\n".join(lines) + "\n")

    def answer(column: str) -> object:
        try:
            series = read_series(path, timestamp_column="timestamp", value_columns=[column], display_name="export.csv")
        except MeasurementError as exc:
            return str(exc)
        return series.times.tolist(), np.nan_to_num(series.values, nan=-1.5).tolist(), series.step_seconds

    columns = [f"c_{j}" for j in order if j < width]
    forget_reads()
    alone = {}
    for column in columns:
        alone[column] = answer(column)
        forget_reads()
    in_turn = {column: answer(column) for column in columns}
    forget_reads()
    assert in_turn == alone
