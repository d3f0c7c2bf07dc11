"""Measurement readers: CSV, Prometheus, request logs, job lists, gridding, errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policylint.errors import MeasurementError
from policylint.traces import (
    Exclusion,
    apply_exclusions,
    concurrency,
    format_time,
    parse_exclusion,
    parse_time,
    read_jobs,
    read_series,
)

T0 = 1_588_291_200.0  # 2020-05-01T00:00:00Z


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def minute_csv(values: list[str], header: str = "time,busy") -> str:
    rows = [header] + [f"2020-05-01 00:{i:02d}:00,{v}" for i, v in enumerate(values)]
    return "\n".join(rows) + "\n"


# --------------------------------------------------------------------------- CSV


def test_csv_iso_timestamps_and_default_column(tmp_path: Path) -> None:
    path = write(tmp_path, "t.csv", minute_csv(["1", "2", "3", "4"]))
    series = read_series(path)
    assert series.step_seconds == 60.0
    assert series.times.tolist() == [T0 + 60 * i for i in range(4)]
    assert series.values.tolist() == [1, 2, 3, 4]
    assert series.valid.all()
    assert series.first == T0 and series.last == T0 + 180
    assert series.gaps == ()


def test_csv_unix_seconds_and_summed_columns(tmp_path: Path) -> None:
    text = "ts,running,pending,other\n" + "".join(
        f"{T0 + 10 * i:.0f},{i},{2 * i},x\n" for i in range(5)
    )
    series = read_series(write(tmp_path, "u.csv", text), value_columns=["running", "pending"])
    assert series.step_seconds == 10.0
    assert series.values.tolist() == [3 * i for i in range(5)]


def test_csv_timestamp_with_offset_and_zulu(tmp_path: Path) -> None:
    text = "when,v\n2020-05-01T02:00:00+02:00,1\n2020-05-01T00:01:00Z,2\n"
    series = read_series(write(tmp_path, "z.csv", text), timestamp_column="when")
    assert series.times.tolist() == [T0, T0 + 60]


def test_csv_needs_column_when_ambiguous(tmp_path: Path) -> None:
    path = write(tmp_path, "a.csv", "time,a,b\n2020-05-01,1,2\n2020-05-02,1,2\n")
    with pytest.raises(MeasurementError, match="--column") as err:
        read_series(path)
    assert str(err.value).startswith(f"{path}:1: ")


def test_display_name_is_used_in_messages(tmp_path: Path) -> None:
    path = write(tmp_path, "a.csv", minute_csv(["1", "-1"]))
    with pytest.raises(MeasurementError) as err:
        read_series(path, display_name="measurements/a.csv")
    assert str(err.value) == "measurements/a.csv:3: value in column 'busy' is negative (-1)"


@pytest.mark.parametrize(
    ("text", "row", "message"),
    [
        ("", 1, "empty file"),
        ("time,busy\n", 2, "empty file: no data rows"),
        (minute_csv(["5"]), 2, "only one sample"),
        (minute_csv(["nan", "", "NaN"]), 2, "every sample is missing"),
        ("time,busy\n2020-05-01 00:01:00,1\n2020-05-01 00:00:00,2\n", 3, "not sorted"),
        ("time,busy\n2020-05-01 00:00:00,1\n2020-05-01 00:00:00,2\n", 3, "duplicate timestamp"),
        (minute_csv(["1", "2", "lots"]), 4, "'lots' is not a number"),
        (minute_csv(["1", "-2"]), 3, "is negative"),
        (minute_csv(["1", "inf"]), 3, "is infinite"),
        ("time,busy\nyesterday,1\n2020-05-01,2\n", 2, "is not a timestamp"),
        ("time,busy\n2020-05-01 00:00:00,1\n2020-05-01 00:01:00\n", 3, "expected at least 2"),
    ],
)
def test_bad_csv_names_file_and_row(tmp_path: Path, text: str, row: int, message: str) -> None:
    path = write(tmp_path, "bad.csv", text)
    with pytest.raises(MeasurementError, match=message) as err:
        read_series(path)
    assert err.value.row == row
    assert str(err.value).startswith(f"{path}:{row}: ")


def test_missing_named_column(tmp_path: Path) -> None:
    path = write(tmp_path, "m.csv", minute_csv(["1", "2"]))
    with pytest.raises(MeasurementError, match="missing column 'pending'") as err:
        read_series(path, value_columns=["busy", "pending"])
    assert str(err.value).startswith(f"{path}:1: ")


@pytest.mark.parametrize(("separator", "called"), [(";", "semicolons"), ("\t", "tabs")])
def test_a_header_split_by_another_separator_says_so(tmp_path: Path, separator: str, called: str) -> None:
    """A newcomer's trial, 2026-12-07: a semicolon-separated export said only that its column was missing."""
    path = write(tmp_path, "semi.csv", f"timestamp{separator}in_flight\n1780000000{separator}3\n1780000300{separator}4\n")
    with pytest.raises(MeasurementError, match=f"the header looks separated by {called}: a CSV trace is read separated"
                                               " by commas"):
        read_series(path, value_columns=["in_flight"])
    # a header of several columns that lacks the name is only that
    with pytest.raises(MeasurementError, match=r"missing column 'pending' \(columns: timestamp, busy\)$"):
        read_series(write(tmp_path, "m.csv", "timestamp,busy\n1780000000,3\n1780000300,4\n"), value_columns=["pending"])


def test_missing_file_and_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(MeasurementError, match="file not found"):
        read_series(tmp_path / "nope.csv")
    path = write(tmp_path, "f.csv", minute_csv(["1", "2"]))
    with pytest.raises(MeasurementError, match="unknown measurement format 'xml'"):
        read_series(path, format="xml")
    # Parquet is a format now; a CSV declared as Parquet is refused by its first bytes.
    with pytest.raises(MeasurementError, match="not a Parquet file"):
        read_series(path, format="parquet")


def test_chunked_reading_matches_whole_file(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    values = rng.integers(0, 50, size=1000)
    text = "time,busy\n" + "".join(f"{T0 + 60 * i:.0f},{v}\n" for i, v in enumerate(values))
    path = write(tmp_path, "big.csv", text)
    whole = read_series(path)
    chunked = read_series(path, chunk_rows=7)
    np.testing.assert_array_equal(whole.values, chunked.values)
    np.testing.assert_array_equal(whole.times, chunked.times)
    assert chunked.values.tolist() == values.tolist()


def test_chunked_reading_reports_errors_across_chunks(tmp_path: Path) -> None:
    lines = [f"{T0 + 60 * i:.0f},1" for i in range(20)]
    lines[13] = f"{T0 + 60 * 11:.0f},1"  # steps back in the third chunk of five rows
    path = write(tmp_path, "c.csv", "time,busy\n" + "\n".join(lines) + "\n")
    with pytest.raises(MeasurementError, match="not sorted") as err:
        read_series(path, chunk_rows=5)
    assert err.value.row == 15  # header is line 1, row index 13 is line 15
    lines = [f"{T0 + 60 * i:.0f},1" for i in range(20)]
    lines[10] = lines[9]  # duplicate exactly at a chunk boundary
    path = write(tmp_path, "d.csv", "time,busy\n" + "\n".join(lines) + "\n")
    with pytest.raises(MeasurementError, match="duplicate") as err:
        read_series(path, chunk_rows=5)
    assert err.value.row == 12


# --------------------------------------------------------------------------- grid


def test_irregular_samples_carry_last_value_forward(tmp_path: Path) -> None:
    text = "ts,v\n0,1\n60,2\n150,3\n180,4\n240,5\n"
    series = read_series(write(tmp_path, "i.csv", text), step_seconds=60)
    assert series.times.tolist() == [0, 60, 120, 180, 240]
    assert series.values.tolist() == [1, 2, 2, 4, 5]  # 120 carries the 60 s sample


def test_long_gap_is_excluded_and_reported(tmp_path: Path) -> None:
    text = "ts,v\n0,1\n60,2\n120,3\n720,4\n780,5\n840,6\n"
    series = read_series(write(tmp_path, "g.csv", text), step_seconds=60, max_gap_steps=5)
    assert len(series.gaps) == 1
    assert (series.gaps[0].start, series.gaps[0].end) == (120, 720)
    assert series.gaps[0].seconds == 600
    # 180..660 lie inside the hole: not filled.
    assert np.isnan(series.values[3:12]).all()
    assert series.values[[0, 1, 2, 12, 13, 14]].tolist() == [1, 2, 3, 4, 5, 6]
    assert series.gap_samples == 9
    # The same hole within the limit is bridged.
    bridged = read_series(write(tmp_path, "g.csv", text), step_seconds=60, max_gap_steps=10)
    assert bridged.gaps == () and bridged.valid.all()


def test_exclusions_are_masked_and_counted(tmp_path: Path) -> None:
    series = read_series(write(tmp_path, "e.csv", minute_csv([str(i) for i in range(10)])))
    excl = parse_exclusion("2020-05-01T00:02:00/2020-05-01T00:05:00")
    cleaned = apply_exclusions(series, [excl])
    assert cleaned.excluded == 3
    assert np.isnan(cleaned.values[2:5]).all() and cleaned.valid.sum() == 7
    assert cleaned.gap_samples == 0


def test_parse_exclusion_date_only_end_covers_the_day() -> None:
    excl = parse_exclusion("2020-05-01/2020-05-02")
    assert excl == Exclusion(T0, T0 + 2 * 86_400, "2020-05-01/2020-05-02")
    with pytest.raises(ValueError, match="START/END"):
        parse_exclusion("2020-05-01")
    with pytest.raises(ValueError, match="ends before"):
        parse_exclusion("2020-05-03T00:00:00/2020-05-02T00:00:00")


def test_time_helpers() -> None:
    assert parse_time("2020-05-01T00:00:00Z") == T0
    assert parse_time(str(T0)) == T0
    assert format_time(T0) == "2020-05-01T00:00:00Z"
    with pytest.raises(ValueError):
        parse_time("soon")


# --------------------------------------------------------------------------- Prometheus


def prom(result: list[dict[str, object]]) -> str:
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}})


def test_prometheus_sums_series_on_one_grid(tmp_path: Path) -> None:
    a = {"metric": {"__name__": "vllm:num_requests_running", "model_name": "chat"},
         "values": [[T0 + 15 * i, str(i)] for i in range(6)]}
    b = {"metric": {"__name__": "vllm:num_requests_running", "model_name": "code"},
         "values": [[T0 + 15 * i, "10"] for i in range(2, 6)]}
    path = write(tmp_path, "p.json", prom([a, b]))
    series = read_series(path)
    assert series.step_seconds == 15
    # "code" did not exist for the first two samples, so it adds 0 there.
    assert series.values.tolist() == [0, 1, 12, 13, 14, 15]
    chat = read_series(path, match={"model_name": "chat"})
    assert chat.values.tolist() == [0, 1, 2, 3, 4, 5]
    with pytest.raises(MeasurementError, match="no series matches model_name=none"):
        read_series(path, match={"model_name": "none"})


def test_prometheus_nan_is_a_missing_sample(tmp_path: Path) -> None:
    values = [[T0 + 15 * i, "3"] for i in range(20)]
    for i in range(5, 13):
        values[i][1] = "NaN"
    path = write(tmp_path, "n.json", prom([{"metric": {}, "values": values}]))
    series = read_series(path, max_gap_steps=5)
    assert len(series.gaps) == 1
    assert series.gaps[0].start == T0 + 15 * 4 and series.gaps[0].end == T0 + 15 * 13
    assert np.isnan(series.values[5:13]).all()
    assert series.valid.sum() == 12


def test_prometheus_inf_names_series_and_sample(tmp_path: Path) -> None:
    values = [[T0, "1"], [T0 + 15, "+Inf"]]
    path = write(tmp_path, "i.json", prom([{"metric": {"__name__": "up", "job": "x"}, "values": values}]))
    with pytest.raises(MeasurementError, match=r'series up\{job="x"\}: sample 2 .* is \+Inf') as err:
        read_series(path)
    assert err.value.row == 2


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ("{", "not valid JSON"),
        ('{"status": "error", "error": "bad query"}', "status is 'error': bad query"),
        ('{"status": "success", "data": {"resultType": "vector", "result": []}}', "expected data.resultType 'matrix'"),
        ('{"status": "success", "data": {"resultType": "matrix", "result": []}}', "holds no series"),
        ('{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}, "values": [[1, "x"], [2, "1"]]}]}}', "'x' is not a number"),
        ('{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}, "values": [[1, "2"], [1, "1"]]}]}}', "duplicate timestamp"),
        ('{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}, "values": [[1]]}]}}', "not a \\[time"),
    ],
)
def test_bad_prometheus(tmp_path: Path, doc: str, message: str) -> None:
    path = write(tmp_path, "bad.json", doc)
    with pytest.raises(MeasurementError, match=message) as err:
        read_series(path)
    assert str(path) in str(err.value)


# --------------------------------------------------------------------------- requests and jobs


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 200), st.integers(0, 60)), min_size=1, max_size=40
    ),
    st.lists(st.floats(-10, 300, allow_nan=False), min_size=1, max_size=30),
)
def test_request_sweep_equals_naive_count(
    requests: list[tuple[int, int]], probes: list[float]
) -> None:
    starts = np.array([float(s) for s, _ in requests])
    ends = np.array([float(s + d) for s, d in requests])
    got = concurrency(starts, ends, np.array(probes))
    expected = [sum(1 for s, e in zip(starts, ends) if s <= t < e) for t in probes]
    assert got.tolist() == expected


def test_request_log_with_end_or_duration(tmp_path: Path) -> None:
    text = "start,end\n0,3\n1,2\n1,5\n4,6\n"
    series = read_series(write(tmp_path, "r.csv", text), format="requests")
    assert series.times.tolist() == [0, 1, 2, 3, 4, 5, 6]
    assert series.values.tolist() == [1, 3, 2, 1, 2, 1, 0]
    text = "start,duration\n2020-05-01T00:00:00Z,3\n2020-05-01T00:00:01Z,1\n"
    series = read_series(write(tmp_path, "d.csv", text), format="requests")
    assert series.values.tolist() == [1, 2, 1, 0]
    bad = write(tmp_path, "b.csv", "start,end\n0,3\n5,2\n")
    with pytest.raises(MeasurementError, match="ends before it starts") as err:
        read_series(bad, format="requests")
    assert err.value.row == 3


def test_read_jobs(tmp_path: Path) -> None:
    text = "job,duration,gpu_num\na,60,8\nb,600,1\nc,6000,2\n"
    jobs = read_jobs(write(tmp_path, "j.csv", text))
    assert jobs.durations.tolist() == [60, 600, 6000]
    assert jobs.gpus.tolist() == [8, 1, 2]
    assert jobs.count == 3
    text = "start,end\n2020-05-01T00:00:00,2020-05-01T01:00:00\n"
    jobs = read_jobs(write(tmp_path, "k.csv", text))
    assert jobs.durations.tolist() == [3600] and jobs.gpus.tolist() == [1]
    with pytest.raises(MeasurementError, match="needs an end column or a duration column"):
        read_jobs(write(tmp_path, "x.csv", "name,gpus\na,1\n"))
    with pytest.raises(MeasurementError, match="is negative") as err:
        read_jobs(write(tmp_path, "y.csv", "duration\n5\n-5\n"))
    assert err.value.row == 3


def test_helios_copy_reads(tmp_path: Path) -> None:
    path = Path(__file__).parent / "data" / "helios_vc3sl_2020-05.csv"
    series = read_series(path, value_columns=["running_gpu_num", "pending_gpu_num"])
    assert series.samples == 31 * 24 * 60
    assert series.step_seconds == 60 and series.valid.all()
    assert math.isclose(series.last - series.first, (31 * 24 * 60 - 1) * 60)
