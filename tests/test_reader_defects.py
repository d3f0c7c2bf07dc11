"""Four reader defects, each pinned by the reader and by the command line.

1. A column named twice - in a declaration's ``columns`` or in a file's header -
   is refused, never summed twice or picked silently.
2. An ISO time in a column of epoch seconds is reported at its own line, with
   its own text (it was reported at line 2, with a valid time).
3. A huge value (1e300, 1.7e308) is refused at its row; no numpy warning reaches
   stderr and no GPU count comes out wrapped (negative).
4. A CSV row whose number of fields is not the header's is an error at its line.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import EXAMPLES, replace_once, run_cli

from policylint.calc.gpus import gpu_counts, gpus_for, gpus_one
from policylint.errors import MeasurementError, PolicylintError
from policylint.traces import read_jobs, read_series

ROOT = Path(__file__).resolve().parents[1]
T0 = 1_788_134_400  # 2026-08-31T00:00:00Z, the first time of the example traces
TRACE = "measurements/traces/chat-assistant.csv"
WORKLOAD = "workloads/product-ai.yaml"
WHEN = ["--now", "2026-12-01"]
NEGATIVE = r"(?<!\w)-\d"  # a negative number (a wrapped count), not the '-' of a date


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def trace(rows: int = 10, header: str = "timestamp,in_flight", cells: str = "{v}") -> str:
    """A five-minute epoch-seconds trace: ``header`` then ``rows`` rows of ``time,cells``."""
    return header + "\n" + "".join(f"{T0 + 300 * i},{cells.format(v=i % 5)}\n" for i in range(rows))


def good(tmp_path: Path) -> Path:
    """A private copy of examples/good."""
    return Path(shutil.copytree(EXAMPLES / "good", tmp_path / "good"))


def edit_trace_row(repo: Path, data_row: int, line: str) -> None:
    """Replace data row ``data_row`` (1-based: file line ``data_row + 1``) of the chat-assistant trace."""
    path = repo / TRACE
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[data_row] = line + "\n"
    path.write_text("".join(lines), encoding="utf-8")


def check(repo: Path) -> tuple[int, list[dict[str, object]], str]:
    """``policylint check --format json`` of ``repo``: exit code, findings, stderr (numpy warnings recorded too)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, out, err = run_cli(["check", *WHEN, "--format", "json", str(repo)], cwd=ROOT)
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in caught]
    assert "Traceback" not in err and "internal error" not in err, err
    return code, json.loads(out)["findings"], err


def measurement_errors(findings: list[dict[str, object]]) -> list[str]:
    return [str(f["message"]) for f in findings if f["code"] == "PL024"]


def bands(*argv: str) -> tuple[int, str, str]:
    """``policylint bands`` in this process, numpy warnings recorded and refused."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, out, err = run_cli(["bands", *argv], cwd=ROOT)
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in caught]
    assert "Traceback" not in err and "internal error" not in err, err
    return code, out, err


# --------------------------------------------------------------------------- 1. a column named twice


def test_a_value_column_listed_twice_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "t.csv", trace())
    assert read_series(path, value_columns=["in_flight"]).values.max() == 4
    with pytest.raises(MeasurementError) as err:
        read_series(path, value_columns=["in_flight", "in_flight"])
    assert str(err.value) == (
        f"{path}: value column 'in_flight' is listed twice (value columns: in_flight, in_flight): "
        "value columns are summed, so it would be counted twice"
    )
    # two different columns are still summed
    both = write(tmp_path, "b.csv", trace(header="timestamp,running,pending", cells="{v},1"))
    assert read_series(both, value_columns=["running", "pending"]).values.max() == 5


def test_a_column_named_for_two_roles_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "t.csv", trace())
    with pytest.raises(MeasurementError, match="column 'timestamp' is named as both the timestamp column and a value column"):
        read_series(path, value_columns=["timestamp"])
    log = write(tmp_path, "r.csv", f"start,end\n{T0},{T0 + 100}\n{T0 + 60},{T0 + 200}\n")
    with pytest.raises(MeasurementError, match="column 'start' is named as both the start column and the end column"):
        read_series(log, format="requests", start_column="start", end_column="start")


@pytest.mark.parametrize("columns", [["in_flight"], None])
def test_a_header_repeating_a_column_read_is_refused(tmp_path: Path, columns: list[str] | None) -> None:
    path = write(tmp_path, "t.csv", trace(header="timestamp,in_flight,in_flight", cells="{v},7"))
    with pytest.raises(MeasurementError) as err:
        read_series(path, value_columns=columns)
    assert err.value.row == 1
    if columns:
        assert str(err.value) == f"{path}:1: column names appear more than once (in_flight); rename them"
    # the timestamp column too, and a job list's columns
    twice = write(tmp_path, "ts.csv", trace(header="timestamp,timestamp,v", cells="{v},1"))
    with pytest.raises(MeasurementError, match=r"column names appear more than once \(timestamp\)"):
        read_series(twice, timestamp_column="timestamp", value_columns=["v"])
    jobs = write(tmp_path, "j.csv", "duration,gpus,gpus\n10,1,2\n20,1,2\n")
    with pytest.raises(MeasurementError, match=r"column names appear more than once \(gpus\)"):
        read_jobs(jobs)


def test_a_column_declared_twice_is_a_finding_not_double_demand(tmp_path: Path) -> None:
    repo = good(tmp_path)
    text = (repo / WORKLOAD).read_text(encoding="utf-8")
    (repo / WORKLOAD).write_text(text.replace("columns: [in_flight]", "columns: [in_flight, in_flight]", 1), encoding="utf-8")
    code, findings, _ = check(repo)
    assert code == 1
    messages = measurement_errors(findings)
    assert any(
        m.startswith("cannot use measurement: ../measurements/traces/chat-assistant.csv: value column 'in_flight' "
                     "is listed twice")
        for m in messages
    ), messages


def test_a_header_repeating_the_declared_column_is_a_finding(tmp_path: Path) -> None:
    repo = good(tmp_path)
    path = repo / TRACE
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(["timestamp,in_flight,in_flight"] + [f"{line},0" for line in lines[1:]]) + "\n",
                    encoding="utf-8")
    code, findings, _ = check(repo)
    assert code == 1
    assert any(m.endswith("chat-assistant.csv:1: column names appear more than once (in_flight); rename them")
               for m in measurement_errors(findings)), measurement_errors(findings)


# --------------------------------------------------------------------------- 2. the line of a timestamp error

ISO = "2026-09-01T00:00:00Z"
WRONG_KIND = (
    f"chat-assistant.csv:101: column 'timestamp': '{ISO}' is not an epoch number like the rows before it "
    "(a timestamp column holds epoch numbers or ISO-8601 times, not both)"
)


def test_an_iso_time_among_epoch_seconds_is_reported_at_its_row(tmp_path: Path) -> None:
    lines = trace(rows=200).splitlines()
    lines[100] = f"{ISO},3"  # data row 100, file line 101
    path = write(tmp_path, "chat-assistant.csv", "\n".join(lines) + "\n")
    with pytest.raises(MeasurementError) as err:
        read_series(path)
    assert err.value.row == 101
    assert str(err.value) == f"{tmp_path}/{WRONG_KIND}"
    # in a request log's start column too
    log = write(tmp_path, "r.csv", "start,end\n" + "".join(f"{T0 + 60 * i},{T0 + 60 * i + 30}\n" for i in range(80))
                + f"{ISO},{T0 + 9000}\n")
    with pytest.raises(MeasurementError, match=f"column 'start': '{ISO}' is not an epoch number") as err:
        read_series(log, format="requests")
    assert err.value.row == 82


def test_a_word_among_epoch_seconds_is_still_no_timestamp(tmp_path: Path) -> None:
    lines = trace(rows=100).splitlines()
    lines[70] = "soon,3"
    path = write(tmp_path, "t.csv", "\n".join(lines) + "\n")
    with pytest.raises(MeasurementError) as err:
        read_series(path)
    assert str(err.value) == (
        f"{path}:71: column 'timestamp': 'soon' is not a timestamp (expected ISO-8601 or an epoch number)"
    )


def test_the_timestamp_error_names_the_bad_line_in_check_and_bands(tmp_path: Path) -> None:
    repo = good(tmp_path)
    value = (repo / TRACE).read_text(encoding="utf-8").splitlines()[100].split(",")[1]
    edit_trace_row(repo, 100, f"{ISO},{value}")
    code, findings, _ = check(repo)
    assert code == 1
    messages = measurement_errors(findings)
    assert f"cannot use measurement: ../measurements/traces/{WRONG_KIND}" in messages, messages
    code, out, err = bands(str(repo / TRACE))
    assert code == 2 and out == ""
    assert err.strip() == f"policylint: error: {repo}/measurements/traces/{WRONG_KIND}"


# --------------------------------------------------------------------------- 3. huge values

HUGE = ["1e300", "1e308", "1.7e308"]


@pytest.mark.parametrize("huge", HUGE)
def test_a_huge_value_is_refused_at_its_row(tmp_path: Path, huge: str) -> None:
    lines = trace(rows=200).splitlines()
    lines[100] = f"{T0 + 300 * 99},{huge}"
    path = write(tmp_path, "t.csv", "\n".join(lines) + "\n")
    with pytest.raises(MeasurementError) as err:
        read_series(path)
    assert err.value.row == 101
    assert str(err.value) == (
        f"{path}:101: value in column 'in_flight' is implausibly large ({float(huge):g}; the limit for a measured "
        "value is 2^53 = 9,007,199,254,740,992)"
    )


def test_the_limit_is_two_to_the_53(tmp_path: Path) -> None:
    at = write(tmp_path, "at.csv", trace(rows=3, cells=str(2**53)))
    assert read_series(at).values.max() == 2.0**53
    past = write(tmp_path, "past.csv", trace(rows=3, cells="9.1e15"))
    with pytest.raises(MeasurementError, match="is implausibly large"):
        read_series(past)
    # a job list's GPUs and durations, a Prometheus answer's samples
    jobs = write(tmp_path, "j.csv", "duration,gpus\n10,1\n20,1e300\n")
    with pytest.raises(MeasurementError, match=r"j\.csv:3: value in column 'gpus' is implausibly large \(1e\+300"):
        read_jobs(jobs)
    log = write(tmp_path, "d.csv", f"start,duration\n{T0},10\n{T0 + 5},1e300\n")
    with pytest.raises(MeasurementError, match=r"d\.csv:3: duration in column 'duration' is implausibly large"):
        read_series(log, format="requests")
    answer = {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"pod": "a"}, "values": [[T0, "1"], [T0 + 60, "1e300"], [T0 + 120, "2"]]}]}}
    prom = write(tmp_path, "p.json", json.dumps(answer))
    with pytest.raises(MeasurementError, match=r"sample 2 is implausibly large \(1e\+300; the limit"):
        read_series(prom)


@pytest.mark.parametrize("huge", HUGE)
def test_a_huge_value_is_a_finding_without_numpy_warnings(tmp_path: Path, huge: str) -> None:
    repo = good(tmp_path)
    edit_trace_row(repo, 100, f"{T0 + 300 * 99},{huge}")
    expected = (f"cannot use measurement: ../measurements/traces/chat-assistant.csv:101: value in column 'in_flight' "
                f"is implausibly large ({float(huge):g}; the limit for a measured value is 2^53 = 9,007,199,254,740,992)")
    code, findings, err = check(repo)
    assert code == 1 and "Warning" not in err
    assert expected in measurement_errors(findings), measurement_errors(findings)
    code, out, err = bands(str(repo / TRACE))
    assert code == 2 and out == "" and "Warning" not in err
    assert err.strip().endswith(expected.removeprefix("cannot use measurement: ../"))
    code, out, err = bands("--pool", "prod-east/serving", str(repo))
    assert "Warning" not in err
    assert not re.search(NEGATIVE, out), out  # no count wrapped to -9223372036854775808


def test_no_numpy_warning_reaches_the_stderr_of_a_process(tmp_path: Path) -> None:
    """As a user runs it: stderr holds the one error line, no RuntimeWarning with site-packages paths."""
    repo = good(tmp_path)
    edit_trace_row(repo, 100, f"{T0 + 300 * 99},1e300")
    for args in (["bands", str(repo / TRACE)], ["bands", "--pool", "prod-east/serving", str(repo)]):
        done = subprocess.run([sys.executable, "-m", "policylint", *args], capture_output=True, text=True,
                              timeout=120, cwd=ROOT, check=False)
        assert done.returncode == 2, done.stderr
        assert "Warning" not in done.stderr and "site-packages" not in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert not re.search(NEGATIVE, done.stdout)


def test_gpu_counts_never_wrap() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a numpy cast warning would fail the test
        for c in (1e300, 1.7e308, 2.0**62):
            with pytest.raises(PolicylintError, match=re.escape(f"cannot convert concurrency {c:g} to GPUs: ") + ".* more than a count "
                                                       r"can hold \(2\^63\)"):
                gpus_for(c, 1e-3, 8)
            with pytest.raises(PolicylintError, match="more than a count can hold"):
                gpus_one(c, 1e-3, 8)
        for c in (float("nan"), float("inf")):
            with pytest.raises(PolicylintError, match="is not a finite number"):
                gpus_for(np.array([1.0, c]), 14.0)
            with pytest.raises(PolicylintError, match="is not a finite number"):
                gpus_one(c, 14.0)
        # everything that fits is what it always was
        assert gpus_for(np.array([0.0, 13.0, 14.0, 15.0, 2.0**53]), 14.0).tolist() == [0, 1, 1, 2, 643371375338643]
        assert gpus_one(2.0**62, 1.0, 1) == 2**62
        assert np.isnan(gpu_counts(np.array([np.nan]), 14.0)).all()  # the float conversion keeps NaN unusable


def test_gpus_past_a_count_are_a_finding_not_a_wrapped_number(tmp_path: Path) -> None:
    """Below the reader's limit, a tiny concurrency per GPU can still make a count past 64 bits."""
    repo = good(tmp_path)
    edit_trace_row(repo, 100, f"{T0 + 300 * 99},9e15")
    replace_once(repo / WORKLOAD, "  perGpuConcurrency:\n    value: 14\n", "  perGpuConcurrency:\n    value: 0.000001\n")
    code, findings, _ = check(repo)
    assert code == 1
    assert ("cannot use measurement: cannot convert concurrency 9e+15 to GPUs: 9e+21 GPUs (at 1e-06 per GPU) "
            "is more than a count can hold (2^63)") in measurement_errors(findings), measurement_errors(findings)
    _, out, _ = bands("--pool", "prod-east/serving", str(repo))
    assert not re.search(NEGATIVE, out), out


# --------------------------------------------------------------------------- 4. fields per row


@pytest.mark.parametrize(
    ("header", "last", "message"),
    [
        ("timestamp,in_flight", f"{T0 + 3000},5,7", "12: row has 3 fields, the header has 2"),
        ("timestamp,in_flight", f"{T0 + 3000},5,", "12: row has 3 fields, the header has 2"),
        ("timestamp,in_flight,note", f"{T0 + 3000},5", "12: row has 2 fields, the header has 3"),
        ("timestamp,in_flight", f"{T0 + 3000}", "12: row has 1 fields, expected at least 2"),
    ],
    ids=["extra-field", "trailing-comma", "missing-unread-field", "missing-read-field"],
)
def test_a_row_with_the_wrong_number_of_fields_is_an_error(tmp_path: Path, header: str, last: str, message: str) -> None:
    cells = "{v}" if header.count(",") == 1 else "{v},ok"
    path = write(tmp_path, "t.csv", trace(header=header, cells=cells) + last + "\n")
    with pytest.raises(MeasurementError) as err:
        read_series(path, value_columns=["in_flight"])
    assert str(err.value) == f"{path}:{message}"
    # a job list and a header of one column go the same way
    jobs = write(tmp_path, "j.csv", "duration\n10\n20,5\n")
    with pytest.raises(MeasurementError, match=r"j\.csv:3: row has 2 fields, the header has 1"):
        read_jobs(jobs)


def test_rows_as_wide_as_the_header_still_read(tmp_path: Path) -> None:
    # blank lines are no rows; quoted commas and line breaks are one field
    text = 'timestamp,in_flight,note\n\n' + "".join(f'{T0 + 300 * i},{i},"a, b"\n' for i in range(5))
    text += f'{T0 + 1500},5,"line\nbreak"\n'
    path = write(tmp_path, "t.csv", text)
    assert read_series(path, value_columns=["in_flight"]).values.tolist() == [0, 1, 2, 3, 4, 5]


def test_a_row_with_an_extra_field_is_a_finding(tmp_path: Path) -> None:
    repo = good(tmp_path)
    line = (repo / TRACE).read_text(encoding="utf-8").splitlines()[100]
    edit_trace_row(repo, 100, f"{line},7")
    code, findings, _ = check(repo)
    assert code == 1
    assert ("cannot use measurement: ../measurements/traces/chat-assistant.csv:101: row has 3 fields, the header "
            "has 2") in measurement_errors(findings), measurement_errors(findings)
    code, out, err = bands(str(repo / TRACE))
    assert code == 2 and out == ""
    assert err.strip().endswith("chat-assistant.csv:101: row has 3 fields, the header has 2")
