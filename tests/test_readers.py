"""The readers package: Parquet and Arrow input, every guard, timestamps, real traces.

tests/test_traces.py keeps the behaviour the readers always had; this file covers
what the Arrow-based readers added: Parquet and Arrow IPC files, the limits
(each crash class found by fuzzing has a small regression input here), epoch
unit detection, microsecond timestamps, column detection and properties of every
reader over generated inputs.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from policylint.errors import MeasurementError
from policylint.readers import TraceLimits
from policylint.readers.columns import (
    DURATION_CANDIDATES,
    END_CANDIDATES,
    GPU_CANDIDATES,
    KEY_CANDIDATES,
    START_CANDIDATES,
    TIMESTAMP_CANDIDATES,
)
from policylint.traces import format_time, read_jobs, read_series

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[1]
HELIOS = DATA / "helios_vc3sl_2020-05.csv"
AZURE = DATA / "azure_llm_code_2023_head.csv"
T0 = 1_588_291_200  # 2020-05-01T00:00:00Z

PROPERTY = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def bands_process(*argv: str) -> subprocess.CompletedProcess[str]:
    """``policylint bands`` in a child process, as a user runs it (with a time limit).

    For the inputs that could block a reader (a named pipe, a device): if a guard
    broke, the time limit fails the test instead of hanging the suite.
    """
    return subprocess.run(
        [sys.executable, "-m", "policylint", "bands", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


def bands_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """``policylint bands`` through the real entry point, in this process (no interpreter start-up)."""
    from conftest import run_cli

    args = ["bands", *argv]
    code, out, err = run_cli(args, cwd=ROOT)
    return subprocess.CompletedProcess(args, code, out, err)


def one_line_error(result: subprocess.CompletedProcess[str], message: str) -> None:
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "internal error" not in lines[0] and "Traceback" not in result.stderr
    assert re.search(message, lines[0]), lines[0]


# --------------------------------------------------------------------------- Parquet and Arrow


def minute_table(n: int = 6) -> pa.Table:
    stamps = pa.array([(T0 + 60 * i) * 1_000_000 for i in range(n)], type=pa.timestamp("us", tz="UTC"))
    return pa.table({"timestamp": stamps, "busy": pa.array([float(i % 4) for i in range(n)])})


def test_parquet_series_matches_csv(tmp_path: Path) -> None:
    table = minute_table()
    pq.write_table(table, tmp_path / "t.parquet")
    rows = "".join(f"{T0 + 60 * i},{i % 4}\n" for i in range(6))
    from_csv = read_series(write(tmp_path, "t.csv", "timestamp,busy\n" + rows))
    from_parquet = read_series(tmp_path / "t.parquet")
    assert from_parquet.times.tolist() == from_csv.times.tolist()
    assert from_parquet.values.tolist() == from_csv.values.tolist() == [0, 1, 2, 3, 0, 1]
    assert from_parquet.step_seconds == 60


@pytest.mark.parametrize("stream", [False, True])
def test_arrow_ipc_file_and_stream(tmp_path: Path, stream: bool) -> None:
    table = minute_table()
    path = tmp_path / "t.arrow"
    with pa.OSFile(str(path), "wb") as sink:
        writer = pa.ipc.new_stream if stream else pa.ipc.new_file
        with writer(sink, table.schema) as out:
            out.write_table(table)
    series = read_series(path)
    assert series.values.tolist() == [0, 1, 2, 3, 0, 1]
    assert series.first == T0
    # The container is recognised from its first bytes, whatever the name says.
    renamed = tmp_path / "t.csv"
    renamed.write_bytes(path.read_bytes())
    assert read_series(renamed).values.tolist() == [0, 1, 2, 3, 0, 1]


def test_parquet_epoch_and_text_columns(tmp_path: Path) -> None:
    epoch_ms = pa.table({"ts": pa.array([(T0 + 60 * i) * 1000 for i in range(4)]), "v": [1, 2, 3, 4]})
    pq.write_table(epoch_ms, tmp_path / "ms.parquet")
    assert read_series(tmp_path / "ms.parquet").times.tolist() == [T0 + 60 * i for i in range(4)]
    text = pa.table({"time": [format_time(T0 + 60 * i) for i in range(4)], "v": ["1", "2", "x", "4"]})
    pq.write_table(text, tmp_path / "text.parquet")
    with pytest.raises(MeasurementError, match="'x' is not a number") as err:
        read_series(tmp_path / "text.parquet")
    assert err.value.row == 3  # Parquet rows are record numbers from 1


@pytest.mark.parametrize("kind", [pa.date32(), pa.date64()])
def test_date_columns(tmp_path: Path, kind: pa.DataType) -> None:
    import datetime as dt

    days = [dt.date(2020, 5, 1) + dt.timedelta(days=i) for i in range(3)]
    pq.write_table(pa.table({"date": pa.array(days, type=kind), "v": [1.0, 2.0, 3.0]}), tmp_path / "d.parquet")
    assert read_series(tmp_path / "d.parquet").times.tolist() == [T0, T0 + 86_400, T0 + 2 * 86_400]


def test_parquet_request_log_and_jobs(tmp_path: Path) -> None:
    log = pa.table({"start": [0.0, 1.0, 1.0, 4.0], "end": [3.0, 2.0, 5.0, 6.0], "gpus": [8, 1, 2, 1]})
    pq.write_table(log, tmp_path / "r.parquet")
    series = read_series(tmp_path / "r.parquet", format="requests")
    assert series.values.tolist() == [1, 3, 2, 1, 2, 1, 0]
    jobs = read_jobs(tmp_path / "r.parquet")
    assert jobs.durations.tolist() == [3, 1, 4, 2] and jobs.gpus.tolist() == [8, 1, 2, 1]


def test_parquet_with_a_repeated_column_name(tmp_path: Path) -> None:
    table = pa.Table.from_arrays([pa.array([T0, T0 + 60]), pa.array([1, 2]), pa.array([3, 4])], names=["ts", "v", "v"])
    pq.write_table(table, tmp_path / "dup.parquet")
    with pytest.raises(MeasurementError, match=r"column names appear more than once \(v\)"):
        read_series(tmp_path / "dup.parquet", value_columns=["v"])


def test_wrong_or_broken_container(tmp_path: Path) -> None:
    path = write(tmp_path, "x.parquet", "not parquet at all\n")
    with pytest.raises(MeasurementError, match="not a Parquet file"):
        read_series(path)
    broken = tmp_path / "b.parquet"
    broken.write_bytes(b"PAR1" + b"\x00" * 20)
    with pytest.raises(MeasurementError, match="cannot read"):
        read_series(broken)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ts,v\n\n0,1\n\n60,2\n\n120,-3\n", "7: value in column 'v' is negative (-3)"),
        ("ts,v\n0,1\n   \n60,2\n120,x\n", "5: column 'v': 'x' is not a number"),
        ('ts,v,note\n0,1,"a\nb"\n60,2,c\n120,x,d\n', "5: column 'v': 'x' is not a number"),
        ("ts,v\r\n0,1\r\n\r\n60,2\r\n120,bad\r\n", "5: column 'v': 'bad' is not a number"),
        ("\ufeffts,v\n0,1\n60,oops\n", "3: column 'v': 'oops' is not a number"),
        ("ts,v,w\n0,1,2\n60\n", "3: row has 1 fields, expected at least 2"),
        ("ts,v\n0,1,9\n60,2\n120,x\n", "2: row has 3 fields, the header has 2"),  # never silently dropped
    ],
    ids=["blank-lines", "line-of-spaces", "quoted-line-break", "crlf", "bom", "short-row", "extra-field"],
)
def test_line_numbers_match_the_csv_module(tmp_path: Path, text: str, message: str) -> None:
    """Whether Arrow or the csv module reads the file, the line is the one the csv module counts."""
    path = write(tmp_path, "t.csv", text)
    with pytest.raises(MeasurementError) as err:
        read_series(path, value_columns=["v"])
    assert str(err.value) == f"{path}:{message}"


# --------------------------------------------------------------------------- guarded opening


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "trace.csv"
    os.mkfifo(fifo)
    with pytest.raises(MeasurementError, match="not a regular file but a named pipe"):
        read_series(fifo)
    one_line_error(bands_process(str(fifo)), r"trace\.csv: not a regular file but a named pipe; refused")


def test_devices_and_folders_are_refused(tmp_path: Path) -> None:
    with pytest.raises(MeasurementError, match="not a regular file but a character device"):
        read_series("/dev/zero")
    one_line_error(bands_process("/dev/zero"), "/dev/zero: not a regular file but a character device")
    with pytest.raises(MeasurementError, match="not a regular file but a folder"):
        read_series(tmp_path)
    with pytest.raises(MeasurementError, match="not a regular file but a character device"):
        read_jobs("/dev/zero")


def test_path_ending_in_slash_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "t.csv", "ts,v\n0,1\n60,2\n")
    with pytest.raises(MeasurementError, match="ends in '/'"):
        read_series(f"{path}/")
    # A declaration's path arrives as a Path (which drops the slash) plus the text as written.
    with pytest.raises(MeasurementError, match="ends in '/'") as err:
        read_series(path, display_name="measurements/t.csv/")
    assert str(err.value).startswith("measurements/t.csv/: ")


def test_measurement_path_ending_in_slash_is_a_finding(tmp_path: Path) -> None:
    from conftest import copy_minirepo, run_cli

    repo = copy_minirepo(tmp_path / "repo")
    workload = repo / "workloads" / "product-ai.yaml"
    text = workload.read_text(encoding="utf-8")
    workload.write_text(text.replace("traces/chat-assistant.csv\n", "traces/chat-assistant.csv/\n", 1), encoding="utf-8")
    code, stdout, stderr = run_cli(["check", str(repo), "--format", "json"], cwd=ROOT)
    assert code == 1, stderr
    messages = [f["message"] for f in json.loads(stdout)["findings"] if f["code"] == "PL024"]
    assert any("chat-assistant.csv/: the path ends in '/'" in m for m in messages), messages


def test_size_limit_is_checked_before_reading(tmp_path: Path) -> None:
    sparse = tmp_path / "sparse.csv"
    with sparse.open("wb") as handle:
        handle.truncate(2 * 1024**3)  # 2 GiB of nothing: sparse, costs no disk
    with pytest.raises(MeasurementError, match=r"file is 2,147,483,648 bytes, more than the 268,435,456-byte limit"):
        read_series(sparse)
    one_line_error(bands_cli(str(sparse)), "more than the 268,435,456-byte limit for a trace; refused")
    small = write(tmp_path, "s.csv", "ts,v\n0,1\n60,2\n")
    with pytest.raises(MeasurementError, match="more than the 10-byte limit"):
        read_series(small, limits=TraceLimits(max_file_bytes=10))


def test_nul_bytes_are_not_a_csv(tmp_path: Path) -> None:
    path = tmp_path / "z.csv"
    path.write_bytes(b"\x00" * 4096)
    with pytest.raises(MeasurementError, match="binary data") as err:
        read_series(path)
    assert err.value.row == 1


def test_header_longer_than_the_sample_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "long.csv", "x" * (2 * 1024 * 1024))
    with pytest.raises(MeasurementError, match="first line is longer than"):
        read_series(path)


def test_row_limit(tmp_path: Path) -> None:
    path = write(tmp_path, "r.csv", "ts,v\n" + "".join(f"{60 * i},1\n" for i in range(10)))
    with pytest.raises(MeasurementError, match="more than 5 rows"):
        read_series(path, limits=TraceLimits(max_rows=5))
    pq.write_table(pa.table({"ts": [60 * i for i in range(10)], "v": [1] * 10}), tmp_path / "r.parquet")
    with pytest.raises(MeasurementError, match="more than 5 rows"):
        read_series(tmp_path / "r.parquet", limits=TraceLimits(max_rows=5))
    # The tolerant path (a line of spaces) counts rows too.
    path = write(tmp_path, "x.csv", "ts,v\n0,1\n   \n" + "".join(f"{60 * i},1\n" for i in range(1, 10)))
    assert read_series(path).samples == 10
    with pytest.raises(MeasurementError, match="more than 5 rows"):
        read_series(path, limits=TraceLimits(max_rows=5), chunk_rows=2)


def test_limits_are_validated() -> None:
    with pytest.raises(ValueError, match="max_rows"):
        TraceLimits(max_rows=0)
    with pytest.raises(ValueError, match="years"):
        TraceLimits(min_year=2100, max_year=2000)
    assert TraceLimits().min_time == 0.0
    assert TraceLimits().max_time == 7_289_654_400.0  # 2201-01-01T00:00:00Z


# --------------------------------------------------------------------------- grid guards


GRID_MESSAGE = r"trace spans [\d,.]+ days at step [\d.e+-]+ s: [\d,]+ samples, limit 10,000,000"


def test_timestamps_with_a_far_outlier_do_not_allocate_a_grid(tmp_path: Path) -> None:
    path = write(tmp_path, "j.csv", "ts,v\n0,1\n1,1\n2,1\n3,1\n1000000000,1\n")
    with pytest.raises(MeasurementError, match="trace spans 11,574.1 days at step 1 s: 1,000,000,001 samples"):
        read_series(path)
    one_line_error(bands_cli(str(path)), GRID_MESSAGE)


def test_tiny_step_does_not_allocate_a_grid(tmp_path: Path) -> None:
    path = write(tmp_path, "d.csv", f"ts,v\n{T0},1\n{T0 + 92 * 86_400},2\n")
    with pytest.raises(MeasurementError, match=r"trace spans 92.0 days at step 0.0001 s: 79,488,000,001 samples"):
        read_series(path, step_seconds=0.0001)
    one_line_error(bands_cli(str(path), "--step", "0.0001"), GRID_MESSAGE)
    values = [[T0, "1"], [T0 + 92 * 86_400, "2"]]
    doc = {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"a": "1"}, "values": values}, {"metric": {"a": "2"}, "values": values}]}}
    prom = write(tmp_path, "p.json", json.dumps(doc))
    with pytest.raises(MeasurementError, match="samples, limit"):
        read_series(prom, step_seconds=0.0001)


def test_request_running_to_1e11(tmp_path: Path) -> None:
    path = write(tmp_path, "r.csv", "start,end\n0,100000000000\n")
    with pytest.raises(MeasurementError, match=GRID_MESSAGE):
        read_series(path, format="requests")
    one_line_error(bands_cli(str(path), "--input-format", "requests"), GRID_MESSAGE)
    path = write(tmp_path, "d.csv", f"start,duration\n{T0},100000000000\n")
    with pytest.raises(MeasurementError, match="start \\+ duration .* is outside the years 1970-2200") as err:
        read_series(path, format="requests")
    assert err.value.row == 2


def test_grid_limit_is_configurable(tmp_path: Path) -> None:
    path = write(tmp_path, "t.csv", "ts,v\n" + "".join(f"{60 * i},1\n" for i in range(20)))
    with pytest.raises(MeasurementError, match="20 samples, limit 10"):
        read_series(path, limits=TraceLimits(max_grid_samples=10))


# --------------------------------------------------------------------------- timestamps


@pytest.mark.parametrize(("scale", "unit"), [(1, "s"), (1000, "ms"), (10**6, "us"), (10**9, "ns")])
def test_epoch_units_are_detected(tmp_path: Path, scale: int, unit: str) -> None:
    path = write(tmp_path, "e.csv", "ts,v\n" + "".join(f"{(T0 + 60 * i) * scale},{i}\n" for i in range(4)))
    series = read_series(path)
    assert series.times.tolist() == [T0 + 60 * i for i in range(4)]
    assert read_series(path, timestamp_unit=unit).times.tolist() == series.times.tolist()


def test_thirteen_digit_milliseconds_through_bands(tmp_path: Path) -> None:
    rows = "".join(f"{(T0 + 60 * i) * 1000},{i % 3}\n" for i in range(30))
    path = write(tmp_path, "ms.csv", "timestamp,v\n" + rows)
    out = bands_cli(str(path), "--format", "json", "--cold-start", "60", "--min-window-days", "0")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["first"] == "2020-05-01T00:00:00Z"


def test_declared_unit_that_does_not_fit_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "ms.csv", f"ts,v\n{T0 * 1000},1\n{(T0 + 60) * 1000},2\n")
    with pytest.raises(MeasurementError, match=r"read as epoch seconds is outside the years 1970-2200; declare") as err:
        read_series(path, timestamp_unit="s")
    assert err.value.row == 2
    with pytest.raises(MeasurementError, match="unknown timestamp unit 'h'"):
        read_series(path, timestamp_unit="h")


@pytest.mark.parametrize(
    ("cells", "message"),
    [
        (["-5", "10"], "'-5' read as epoch seconds is outside the years"),
        (["9999999999999", "9999999999999.5"], "read as epoch milliseconds is outside the years"),
        (["1e30", "2e30"], "too large for an epoch time in any unit"),
        (["1500-01-01", "1500-01-02"], "'1500-01-01' is outside the years 1970-2200"),
        (["2020-05-01", "nan"], "is not a timestamp"),
        (["0", "nan"], "'nan' is not a finite timestamp"),
        (["2020-05-01", ""], "'' is not a timestamp"),
    ],
)
def test_timestamps_outside_the_accepted_range(tmp_path: Path, cells: list[str], message: str) -> None:
    path = write(tmp_path, "t.csv", "ts,v\n" + "".join(f"{c},1\n" for c in cells))
    with pytest.raises(MeasurementError, match=message):
        read_series(path)


@pytest.mark.parametrize(
    ("cells", "row"),
    [
        (["2020-05-01", "1500-01-01", "2020-05-03"], 3),  # out of order and out of range: the range is reported
        (["2020-05-01", "2020-05-02", "2300-01-01"], 4),  # in order: the last time is out of range
        (["1500-01-01", "2020-05-02", "2020-05-03"], 2),  # in order: the first time is out of range
        (["2020-05-03", "2020-05-02", "2300-01-01"], 4),  # out of order, out of range last
    ],
)
def test_a_range_error_is_found_wherever_the_time_lies(tmp_path: Path, cells: list[str], row: int) -> None:
    path = write(tmp_path, "t.csv", "ts,v\n" + "".join(f"{c},1\n" for c in cells))
    with pytest.raises(MeasurementError, match="is outside the years 1970-2200") as err:
        read_series(path)
    assert err.value.row == row


def test_a_time_too_far_out_to_print_is_reported_as_out_of_range(tmp_path: Path) -> None:
    """An epoch number in an ISO column reads as a year no calendar prints: a finding, never a crash.

    Found by fuzzing: the order check ran first and formatted that time for its message.
    """
    text = (
        "start,end\n2026-11-01T00:00:00Z,2026-11-01T00:00:05Z\n"
        "2026-11-01T00:00:01.5Z,2026-11-01T00:01:00Z\n1764547200,1764547260\n"
    )
    path = write(tmp_path, "t.csv", text)
    with pytest.raises(MeasurementError, match="'1764547200' is outside the years 1970-2200") as err:
        read_series(path, format="csv")
    assert err.value.row == 4


def test_a_prometheus_time_no_calendar_shows_is_a_finding(tmp_path: Path) -> None:
    """Found by fuzzing: a repeated time in year 57798 was formatted for the order error and crashed."""
    answer = {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [{"metric": {"model_name": "chat"},
                        "values": [[1764547200, "3"], [1761764547200, "3"], [1761764547200, "3"]]}],
        },
    }
    path = write(tmp_path, "p.json", json.dumps(answer))
    with pytest.raises(MeasurementError, match=r"duplicate timestamp: 1\.76176e\+12 s since 1970-01-01T00:00:00Z"):
        read_series(path, format="prometheus")
    assert format_time(float("inf")) == "inf s since 1970-01-01T00:00:00Z"
    assert format_time(-1e15).endswith("s since 1970-01-01T00:00:00Z")


def test_relative_times_with_a_declared_origin(tmp_path: Path) -> None:
    path = write(tmp_path, "rel.csv", "ts,v\n0,1\n60,2\n120,3\n")
    series = read_series(path, time_origin="2020-05-01T00:00:00Z")
    assert series.times.tolist() == [T0, T0 + 60, T0 + 120]
    assert read_series(path, time_origin=T0, timestamp_unit="ms").times.tolist() == [T0, T0 + 0.06, T0 + 0.12]
    jobs = write(tmp_path, "jobs.csv", "scheduled_time,deletion_time,num_gpu\n100,700,8\n")
    assert read_jobs(jobs, time_origin="2020-05-01").durations.tolist() == [600]
    with pytest.raises(MeasurementError, match="time origin 'soon' is not"):
        read_series(path, time_origin="soon")
    with pytest.raises(MeasurementError, match="read as seconds after the time origin is outside the years"):
        read_series(path, time_origin="2200-12-31T23:59:00Z")
    out = bands_cli(str(path), "--time-origin", "2020-05-01", "--format", "json", "--cold-start", "60",
                    "--min-window-days", "0")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["first"] == "2020-05-01T00:00:00Z"


def test_a_time_origin_on_epoch_times_is_refused(tmp_path: Path) -> None:
    """Red team, 2026-12-06, round 13: `timeOrigin: 1969-12-31T03:00:00Z` on epoch-second times moved a
    trace by -21 h onto another workload's night (+6 GPUs proposed), with no measurement file changed."""
    epoch = write(tmp_path, "epoch.csv", "ts,v\n1788134400,1\n1788134460,2\n1788134520,3\n")
    with pytest.raises(MeasurementError, match=r"'1788134400' read as seconds after the time origin lies 57 years"
                                               r" after it: these are epoch times"):
        read_series(epoch, time_origin="1969-12-31T03:00:00Z")
    with pytest.raises(MeasurementError, match="read as milliseconds after the time origin lies 57 years"):
        read_series(write(tmp_path, "ms.csv", "ts,v\n1788134400000,1\n1788134460000,2\n"),
                    time_origin="1970-01-01T00:00:00Z", timestamp_unit="ms")
    # relative times, however long the capture, and epoch times without an origin read as before
    late = write(tmp_path, "late.csv", "ts,v\n999999000,1\n999999060,2\n")
    assert read_series(late, time_origin="1990-01-01T00:00:00Z").samples == 2
    assert read_series(epoch).times[0] == 1788134400


def test_iso_with_any_precision_and_offsets(tmp_path: Path) -> None:
    text = (
        "time,v\n"
        "2020-05-01T00:00:00.1234567Z,1\n"  # seven decimals: cut to the microsecond
        "2020-05-01T02:00:01.000002+02:00,2\n"
        "2020-05-01T00:00:02z,3\n"
    )
    series = read_series(write(tmp_path, "iso.csv", text), step_seconds=1)
    assert series.first == T0 + 0.123456
    assert format_time(series.first) == "2020-05-01T00:00:00.123456Z"
    assert series.last == T0 + 2
    raw = series.times[0]
    assert raw == T0 + 0.123456
    assert format_time(T0 + 1.5) == "2020-05-01T00:00:01.500Z"  # milliseconds stay as before


def test_every_offset_form_in_one_column(tmp_path: Path) -> None:
    """Mixed zones go through the slow parser, which knows the same offsets Arrow does."""
    text = (
        "time,v\n2020-05-01T02:00:00+0200,1\n2020-05-01 00:01:00,2\n2020-04-30T19:02:00-05,3\n"
        "2020-05-01T05:33:00+05:30,4\n2020-05-01T00:04:00z,5\n"
    )
    series = read_series(write(tmp_path, "o.csv", text))
    assert series.times.tolist() == [T0 + 60 * i for i in range(5)]


def test_azure_trace_keeps_microseconds() -> None:
    """Neighbouring requests of the Azure trace are microseconds apart: milliseconds would collide."""
    series = read_series(AZURE, value_columns=["ContextTokens"], timestamp_column="TIMESTAMP")
    assert series.first == 1_700_158_623.97996  # 2023-11-16 18:17:03.9799600
    assert format_time(series.first) == "2023-11-16T18:17:03.979960Z"
    assert format_time(series.last) == "2023-11-16T18:20:40.818199Z"
    stamps = [line.split(",")[0] for line in AZURE.read_text(encoding="utf-8").splitlines()[1:]]
    assert len(set(s[:23] for s in stamps)) < len(stamps)  # truncated to ms, rows would repeat
    # The request log form needs a duration: the trace has none, and the error says what it has.
    with pytest.raises(MeasurementError, match="columns: TIMESTAMP, ContextTokens, GeneratedTokens"):
        read_series(AZURE, format="requests")


def test_whole_shared_azure_trace_reads_when_present() -> None:
    shared = ROOT.parent / "shared" / "data" / "traces" / "azure_llm_code_2023.csv"
    if not shared.is_file():
        pytest.skip("the shared Azure trace is not next to this checkout")
    series = read_series(shared, value_columns=["ContextTokens"])
    assert series.first == 1_700_158_623.97996
    assert series.step_seconds < 0.1


def test_helios_result_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    """The bands of the Helios trace are what the pure-Python reader gave, to the byte.

    The digest was taken from the pure-Python reader's output with the same calculator
    (which leaves the trace's two constant Sundays out as flat days).
    """
    import csv

    from policylint.cli import main

    series = read_series(HELIOS, value_columns=["running_gpu_num", "pending_gpu_num"])
    with HELIOS.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    expected = [float(r["running_gpu_num"]) + float(r["pending_gpu_num"]) for r in rows]
    assert series.values.tolist() == expected
    assert main(["bands", str(HELIOS), "--column", "running_gpu_num", "--column", "pending_gpu_num",
                 "--format", "json", "--tolerance", "900", "--per-gpu", "1"]) == 0
    document = json.loads(capsys.readouterr().out)
    document.pop("source")
    document.pop("integrity")  # evidence checks added beside the bands; the bands are what is pinned
    digest = hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()
    assert digest == "df761ddac5a5bee57ebc59e0bf9e52953e54fedc43bff724dece9ab26cdafacc"


# --------------------------------------------------------------------------- request logs and job lists


def test_nan_end_times_are_errors_at_their_row(tmp_path: Path) -> None:
    path = write(tmp_path, "r.csv", "start,end\n0,5\n1,NaN\n")
    with pytest.raises(MeasurementError, match="column 'end': '(?i:nan)' is not a finite timestamp") as err:
        read_series(path, format="requests")
    assert err.value.row == 3
    one_line_error(bands_cli(str(path), "--input-format", "jobs"), r"r\.csv:3: column 'end'")
    with pytest.raises(MeasurementError, match="not a finite timestamp") as err:
        read_jobs(path)
    assert err.value.row == 3
    # An empty end is not an error: the job was still running at the export (tests/test_one_definition.py).
    assert read_jobs(write(tmp_path, "e.csv", "start,end\n0,5\n1,\n")).durations.tolist() == [5, 4]


def test_request_log_without_a_start_column(tmp_path: Path) -> None:
    path = write(tmp_path, "r.csv", "request_id,duration\na,3\nb,4\n")
    with pytest.raises(MeasurementError, match="no start column among request_id, duration") as err:
        read_series(path, format="requests")
    assert err.value.row == 1
    # A job list only needs durations.
    assert read_jobs(path).durations.tolist() == [3, 4]


@pytest.mark.parametrize(
    ("header", "row"),
    [
        ("gmt_create,gmt_modified,latency_ms", f"{T0},{T0 + 9},1500"),
        ("creation_time,scheduled_time,deletion_time,num_gpu", f"{T0 - 60},{T0},{T0 + 1.5},8"),
        ("TIMESTAMP,duration_ms", f"{T0},1500"),
        ("submit_time,start_time,end_time", f"{T0 - 100},{T0},{T0 + 1.5}"),
    ],
)
def test_broadened_column_detection(tmp_path: Path, header: str, row: str) -> None:
    path = write(tmp_path, "x.csv", f"{header}\n{row}\n")
    jobs = read_jobs(path)
    assert jobs.durations.tolist() == [1.5]
    if "num_gpu" in header:
        assert jobs.gpus.tolist() == [8]


def test_gpu_column_with_an_empty_cell_names_the_row(tmp_path: Path) -> None:
    with pytest.raises(MeasurementError, match="column 'gpus' is empty in this row") as err:
        read_jobs(write(tmp_path, "j.csv", "duration,gpus\n5,1\n6,\n"))
    assert err.value.row == 3


def test_declared_duration_unit(tmp_path: Path) -> None:
    path = write(tmp_path, "j.csv", "start,took\n0,2000\n")
    assert read_jobs(path, duration_column="took").durations.tolist() == [2000]
    assert read_jobs(path, duration_column="took", duration_unit="ms").durations.tolist() == [2]


def test_bands_reads_jobs_and_parquet(tmp_path: Path) -> None:
    jobs = ROOT / "examples" / "good" / "measurements" / "jobs" / "pre-training.csv"
    out = bands_cli(str(jobs), "--input-format", "jobs", "--step", "60", "--format", "json")
    assert out.returncode == 0, out.stderr
    reference = bands_cli(str(jobs), "--input-format", "requests", "--step", "60", "--format", "json")
    counted = json.loads(out.stdout)
    # A job list counted by jobs says that its GPU column was left unused.
    assert counted.pop("reading") == {
        "notes": ["jobs counted, not GPUs: column 'gpus' not used (--unit gpus weighs jobs by it)"],
        "unit": "concurrency",
    }
    assert counted == json.loads(reference.stdout)
    import pyarrow.csv as pcsv

    pq.write_table(pcsv.read_csv(HELIOS), tmp_path / "helios.parquet")
    args = ["--column", "running_gpu_num", "--column", "pending_gpu_num", "--format", "json"]
    from_parquet = bands_cli(str(tmp_path / "helios.parquet"), "--input-format", "parquet", *args)
    from_csv = bands_cli(str(HELIOS), *args)
    assert from_parquet.returncode == 0, from_parquet.stderr
    strip = lambda text: {k: v for k, v in json.loads(text).items() if k != "source"}  # noqa: E731
    assert strip(from_parquet.stdout) == strip(from_csv.stdout)


# --------------------------------------------------------------------------- Prometheus


def test_prometheus_nested_very_deep(tmp_path: Path) -> None:
    path = write(tmp_path, "deep.json", "[" * 100_000 + "]" * 100_000)
    with pytest.raises(MeasurementError, match="nested too deeply"):
        read_series(path)
    one_line_error(bands_cli(str(path)), "deep.json: not a Prometheus answer: JSON nested too deeply")


def test_prometheus_time_too_large_for_a_float(tmp_path: Path) -> None:
    """A JSON integer time of 400 digits overflows float: an error at its sample (found by fuzzing)."""
    huge = "9" * 400
    text = (
        '{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":'
        f'[[{T0},"3"],[{T0 + 60},"4"],[{huge},"5"]]}}]}}}}'
    )
    path = write(tmp_path, "huge.json", text)
    with pytest.raises(MeasurementError, match="sample 3 has a time too large to be a timestamp"):
        read_series(path)


def test_prometheus_limits(tmp_path: Path) -> None:
    values = [[(T0 + 15 * i) * 1000, "1"] for i in range(3)]  # milliseconds: not Prometheus
    doc = {"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}, "values": values}]}}
    path = write(tmp_path, "ms.json", json.dumps(doc))
    with pytest.raises(MeasurementError, match="sample 1 time .* is outside the years 1970-2200"):
        read_series(path)
    with pytest.raises(MeasurementError, match="limit for a Prometheus answer"):
        read_series(path, limits=TraceLimits(max_json_bytes=10))
    values = [[T0 + 15 * i, "1"] for i in range(10)]
    doc["data"]["result"] = [{"metric": {}, "values": values}]  # type: ignore[index]
    with pytest.raises(MeasurementError, match="more than 5 rows"):
        read_series(write(tmp_path, "p.json", json.dumps(doc)), limits=TraceLimits(max_rows=5))


# --------------------------------------------------------------------------- documentation and imports


def test_every_column_candidate_is_documented() -> None:
    text = (ROOT / "docs" / "measurements.md").read_text(encoding="utf-8")
    for candidates in (
        TIMESTAMP_CANDIDATES, START_CANDIDATES, END_CANDIDATES, DURATION_CANDIDATES, GPU_CANDIDATES, KEY_CANDIDATES
    ):
        for name in candidates:
            assert f"`{name}`" in text, name
    for field in ("max_file_bytes", "max_json_bytes", "max_rows", "max_grid_samples", "min_year", "max_year"):
        assert f"`{field}`" in text, field


def test_pyarrow_is_imported_only_when_a_trace_is_read() -> None:
    code = (
        "import sys, policylint.traces, policylint.readers; "
        "print('pyarrow' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


# --------------------------------------------------------------------------- properties

counts = st.integers(min_value=0, max_value=10_000)
steps = st.sampled_from([1, 15, 60, 300])
starts = st.integers(min_value=0, max_value=4_000_000_000)


def _iso(seconds: int) -> str:
    return format_time(seconds)


@PROPERTY
@given(st.lists(counts, min_size=2, max_size=40), steps, starts,
       st.sampled_from(["s", "ms", "us", "ns", "iso", "iso-space", "offset"]), st.booleans())
def test_csv_series_round_trip(
    tmp_path: Path, values: list[int], step: int, start: int, form: str, declare: bool
) -> None:
    """Any epoch unit or ISO form reads back the same series. Detection needs times
    after 2001 (a millisecond count near 1970 looks like seconds); declared, any time works."""
    declared = form if declare and form in ("s", "ms", "us", "ns") else None
    if declared is None:
        start = max(start, 1_000_000_000)
    def stamp(t: int) -> str:
        if form == "iso":
            return _iso(t)
        if form == "iso-space":
            return _iso(t).replace("T", " ").rstrip("Z")
        if form == "offset":
            return _iso(t + 3600).replace("Z", "+01:00")
        return str(t * {"s": 1, "ms": 1000, "us": 10**6, "ns": 10**9}[form])

    rows = "".join(f"{stamp(start + step * i)},{v}\n" for i, v in enumerate(values))
    series = read_series(write(tmp_path, "p.csv", "time,v\n" + rows), timestamp_unit=declared)
    assert series.values.tolist() == [float(v) for v in values]
    assert series.times.tolist() == [float(start + step * i) for i in range(len(values))]


@PROPERTY
@given(st.lists(st.one_of(st.none(), counts.map(float)), min_size=2, max_size=40), steps, starts,
       st.booleans(), st.sampled_from(["parquet", "arrow"]))
def test_table_files_round_trip(
    tmp_path: Path, values: list[float | None], step: int, start: int, typed: bool, container: str
) -> None:
    if all(v is None for v in values):
        values[0] = 1.0
    times = [start + step * i for i in range(len(values))]
    column = pa.array([t * 10**6 for t in times], type=pa.timestamp("us", tz="UTC")) if typed else pa.array(times)
    table = pa.table({"timestamp": column, "v": pa.array(values, type=pa.float64())})
    path = tmp_path / f"p.{container}"
    if container == "parquet":
        pq.write_table(table, path)
    else:
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as out:
            out.write_table(table)
    kept = [(t, v) for t, v in zip(times, values) if v is not None]
    try:
        series = read_series(path, step_seconds=step, max_gap_steps=len(values) + 1)
    except MeasurementError as exc:
        assert len(kept) < 2 or "consecutive" in str(exc) or "every sample" in str(exc)
        return
    assert series.first == kept[0][0] and series.last == kept[-1][0]
    assert series.times[0] == times[0] and series.samples == len(times)
    for t, v in kept:
        assert series.values[(t - times[0]) // step] == v


#: fifteen samples that change value fourteen times
_WALK = [3, 5, 4, 8, 2, 9, 1, 7, 6, 10, 0, 12, 11, 13, 2]


def _assert_repeated(message: str, series_values: list[list[str]]) -> None:
    """A sum refused as holding one series twice holds what the refusal names (``readers.grid.refuse_repeated``).

    Hypothesis generates equal lists readily, so the round trip meets the refusal; each kind
    is checked here from the values themselves, independently of the reader's hashing.
    """
    from policylint.readers.grid import REPEAT_MIN_CHANGES

    named = [int(n) for n in re.findall(r'\{pod="p(\d+)"\}', message)]
    assert len(named) == 2 and named[0] != named[1], message
    a, b = (np.array([float(v) for v in series_values[k]]) for k in named)
    for values in (a, b):
        measured = values[~np.isnan(values)]
        assert np.count_nonzero(measured[1:] != measured[:-1]) >= REPEAT_MIN_CHANGES, message
    if "hold the same" in message:
        assert a.size == b.size and np.array_equal(a, b, equal_nan=True), message
    elif "scaled, offset or moved" in message:
        # the first named is k times the second plus c, on the measured samples
        x, y = b[~np.isnan(b)], a[~np.isnan(a)]
        assert x.size == y.size and x.max() > x.min(), message
        k = (y[np.argmax(x)] - y[np.argmin(x)]) / (x.max() - x.min())
        c = y[np.argmin(x)] - k * x.min()
        assert k > 0 and np.allclose(y, k * x + c, rtol=1e-9, atol=1e-9 * max(1.0, float(np.abs(y).max()))), message
    else:
        assert "16-step runs" in message and a.size > 16 and b.size > 16, message


@PROPERTY
@given(st.lists(st.lists(st.one_of(counts.map(str), st.just("NaN")), min_size=2, max_size=20), min_size=1, max_size=3),
       steps, starts)
# found by hypothesis: one series twice, and one series plus a constant (refused, with the pair named)
@example([[str(v) for v in _WALK], [str(v) for v in _WALK]], 60, 0)
@example([[str(v) for v in _WALK], [str(v + 1) for v in _WALK]], 60, 0)
def test_prometheus_round_trip(tmp_path: Path, series_values: list[list[str]], step: int, start: int) -> None:
    result = [
        {"metric": {"pod": f"p{k}"}, "values": [[start + step * i, v] for i, v in enumerate(vals)]}
        for k, vals in enumerate(series_values)
    ]
    path = write(tmp_path, "p.json", json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}))
    try:
        series = read_series(path, step_seconds=step, max_gap_steps=100)
    except MeasurementError as exc:
        if "would count twice" in str(exc):
            _assert_repeated(str(exc), series_values)
        else:
            assert "missing" in str(exc) or "usable" in str(exc)
        return
    longest = max(len(v) for v in series_values)
    assert series.samples == longest
    for i in range(longest):
        cells = [vals[i] for vals in series_values if i < len(vals)]
        if "NaN" not in cells and all(vals[:i + 1].count("NaN") == 0 for vals in series_values):
            assert series.values[i] == sum(float(c) for c in cells)


@PROPERTY
@given(st.lists(st.tuples(st.integers(0, 500), st.integers(0, 100)), min_size=1, max_size=30),
       st.sampled_from(["end", "duration", "duration_ms"]), st.integers(0, 3_000_000_000))
def test_request_log_round_trip(tmp_path: Path, requests: list[tuple[int, int]], form: str, base: int) -> None:
    lines = [f"start,{form}"]
    for s, d in requests:
        other = base + s + d if form == "end" else (d * 1000 if form == "duration_ms" else d)
        lines.append(f"{base + s},{other}")
    path = write(tmp_path, "r.csv", "\n".join(lines) + "\n")
    first = base + min(s for s, _ in requests)
    last = base + max(s + d for s, d in requests)
    if last - first < 1:
        with pytest.raises(MeasurementError, match="less than two steps"):
            read_series(path, format="requests")
        return
    series = read_series(path, format="requests")
    for t, c in zip(series.times.tolist(), series.values.tolist()):
        assert c == sum(1 for s, d in requests if base + s <= t < base + s + d)


@PROPERTY
@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 64)), min_size=1, max_size=30), st.booleans())
def test_job_list_round_trip(tmp_path: Path, jobs: list[tuple[int, int]], intervals: bool) -> None:
    if intervals:
        text = "job,start,end,num_gpus\n" + "".join(f"j{i},{T0},{T0 + d},{g}\n" for i, (d, g) in enumerate(jobs))
    else:
        text = "job,runtime,gpus\n" + "".join(f"j{i},{d},{g}\n" for i, (d, g) in enumerate(jobs))
    read = read_jobs(write(tmp_path, "j.csv", text))
    assert read.durations.tolist() == [float(d) for d, _ in jobs]
    assert read.gpus.tolist() == [float(g) for _, g in jobs]


@PROPERTY
@given(st.text(alphabet=st.sampled_from(list("0123456789,.:-TZ \n\"nae+x\r")), max_size=200),
       st.sampled_from(["auto", "csv", "requests", "jobs", "prometheus"]))
def test_arbitrary_text_never_escapes_as_another_exception(tmp_path: Path, text: str, form: str) -> None:
    path = write(tmp_path, "f.csv", text)
    try:
        if form == "jobs":
            read_jobs(path)
        else:
            read_series(path, format=form)
    except MeasurementError:
        pass


@PROPERTY
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_escape(tmp_path: Path, data: bytes) -> None:
    for name in ("f.csv", "f.parquet", "f.arrow", "f.json"):
        path = tmp_path / name
        path.write_bytes(data)
        try:
            read_series(path)
        except MeasurementError:
            pass
    path = tmp_path / "g.parquet"
    path.write_bytes(b"PAR1" + data)
    try:
        read_series(path)
    except MeasurementError:
        pass


def test_microseconds_become_seconds_by_one_correctly_rounded_division() -> None:
    """The one-pass conversion gives the bits of float64(micros) / 1e6, whatever the integer."""
    from policylint.readers.timestamps import _micros_to_seconds

    rng = np.random.default_rng(7)
    for ints in (
        rng.integers(-(2**62), 2**62, 10_000),
        rng.integers(0, 10**16, 10_000),
        np.array([2**53 + 1, 2**63 - 1, -(2**63), 1, 0, -1, 1_788_134_400_000_000], dtype=np.int64),
    ):
        expected = ints.astype(np.float64)
        expected /= 1e6
        assert _micros_to_seconds(ints.astype(np.int64)).tobytes() == expected.tobytes()


@pytest.mark.parametrize("unit", ["s", "ms"])
def test_a_time_too_far_out_for_microseconds_is_out_of_range_not_wrapped(tmp_path: Path, unit: str) -> None:
    """A Parquet time in seconds that overflows int64 as microseconds used to wrap into 2023 silently."""
    scale = 1 if unit == "s" else 1_000
    far = (2**64 // 10**6 + 1_700_000_000) * scale  # x 10^6 / scale wraps to about 1.7e9 s
    ints = np.array([far, far + 60 * scale, far + 120 * scale], dtype=np.int64)
    path = tmp_path / "far.parquet"
    pq.write_table(pa.table({"timestamp": pa.array(ints, type=pa.timestamp(unit)), "v": [1.0, 2.0, 3.0]}), path)
    with pytest.raises(MeasurementError, match="outside the years 1970-2200") as err:
        read_series(path)
    assert err.value.row == 1


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_arrow_times_in_every_unit_read_to_the_same_seconds(tmp_path: Path, unit: str) -> None:
    from policylint.readers.timestamps import _micros_to_seconds, timestamps_to_seconds

    rng = np.random.default_rng(3)
    seconds = np.sort(rng.integers(0, 7_000_000_000, 1000))
    scale = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[unit]
    fraction = rng.integers(0, scale, 1000) if scale > 1 else np.zeros(1000, dtype=np.int64)
    ints = seconds * scale + fraction
    micros = ints * (1_000_000 // scale) if scale <= 1_000_000 else ints // 1_000
    got = timestamps_to_seconds(pa.chunked_array([pa.array(ints, type=pa.timestamp(unit))]))
    assert got.tobytes() == _micros_to_seconds(micros).tobytes()
