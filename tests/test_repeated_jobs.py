"""A job listed twice in a job list is refused at its row (red team, 2026-12-05).

Repeating every row of a job list (same job identifier, same start and end) doubled the
pooled baseline it measured - 392 GPUs became 712 - and every rule passed the inflated
plan. A job list with a job identifier column now refuses a row that repeats an earlier
row's identifier, start and end (PL024, at the row, naming the row it repeats), whether it
is read as a concurrency trace (``format: jobs``) or as job durations. A job requeued under
its identifier (other times) counts again, rows without an identifier are not compared, and
request logs - where equal rows are distinct requests - are not judged.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLES, run_cli

from policylint.errors import MeasurementError
from policylint.traces import read_jobs, read_series

T0 = 1_788_134_400
HEADER = "job_id,start,end,gpus\n"


def jobs(tmp_path: Path, rows: list[str], header: str = HEADER, name: str = "jobs.csv") -> Path:
    path = tmp_path / name
    path.write_text(header + "".join(f"{r}\n" for r in rows), encoding="utf-8")
    return path


def listed(n: int) -> list[str]:
    return [f"j-{i},{T0 + 3600 * i},{T0 + 3600 * i + 7200},8" for i in range(n)]


def _refused(path: Path, read: str) -> pytest.ExceptionInfo[MeasurementError]:
    """The error reading ``path`` as job durations or as a concurrency trace (``format: jobs``) raises."""
    with pytest.raises(MeasurementError) as caught:
        if read == "durations":
            read_jobs(path)
        else:
            read_series(path, format="jobs", step_seconds=300)
    return caught


@pytest.mark.parametrize("read", ["durations", "trace"])
def test_a_repeated_job_is_refused_at_its_row_naming_the_row_it_repeats(tmp_path: Path, read: str) -> None:
    rows = listed(5)
    path = jobs(tmp_path, [*rows, rows[1], rows[3]])  # rows 3 and 5 of the file listed again at 7 and 8
    caught = _refused(path, read)
    assert caught.value.row == 7
    assert "job 'j-1' (column 'job_id') is listed again with the same start and end as at row 3" in str(caught.value)


def test_requeued_jobs_and_rows_without_an_identifier_count(tmp_path: Path) -> None:
    rows = listed(4)
    requeued = f"j-2,{T0 + 50_000},{T0 + 60_000},8"  # the same job id, run again later
    blank = [f",{T0},{T0 + 100},1", f",{T0},{T0 + 100},1"]  # no identifier: not compared
    got = read_jobs(jobs(tmp_path, [*rows, requeued, *blank]))
    assert got.durations.tolist() == [7200.0] * 4 + [10_000.0, 100.0, 100.0]
    # a list without an identifier column is read as before, equal rows and all
    plain = [r.split(",", 1)[1] for r in [*rows, rows[0]]]
    assert len(read_jobs(jobs(tmp_path, plain, header="start,end,gpus\n", name="plain.csv")).durations) == 5


def test_request_logs_keep_equal_rows(tmp_path: Path) -> None:
    """Two requests may start and end in the same second; a request log has no job identity to repeat."""
    rows = [f"r-1,{T0},{T0 + 60}", f"r-1,{T0},{T0 + 60}", f"r-2,{T0 + 30},{T0 + 900}"]
    series = read_series(jobs(tmp_path, rows, header="job_id,start,end\n"), format="requests", step_seconds=60)
    assert float(series.values[0]) == 2.0  # both equal requests are in flight at the first sample


def test_typed_identifiers_are_compared_too(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "jobs.parquet"
    table = pa.table({"job_id": [7, 8, 7], "start": [T0, T0 + 10, T0], "end": [T0 + 600, T0 + 700, T0 + 600],
                      "gpus": [8, 8, 8]})
    pq.write_table(table, path)
    with pytest.raises(MeasurementError) as caught:
        read_jobs(path)
    assert "job '7'" in str(caught.value) and caught.value.row is not None


def test_a_plan_measured_on_a_doubled_job_list_fails(tmp_path: Path) -> None:
    """The game itself: every row of the example's pre-training job list repeated, and the plan resized to match."""
    repo = tmp_path / "good"
    shutil.copytree(EXAMPLES / "good", repo)
    path = repo / "measurements" / "jobs" / "pre-training.csv"
    header, *rows = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([header, *rows, *rows]) + "\n", encoding="utf-8")
    code, out, err = run_cli(["check", ".", "--format", "concise", "--no-cache"], cwd=repo)
    assert (code, err) == (1, "")
    refused = [line for line in out.splitlines() if "PL024" in line]
    assert refused and all(f"pre-training.csv:{len(rows) + 2}: job " in line for line in refused), out


@pytest.mark.parametrize("read", ["durations", "trace"])
def test_a_job_listed_again_while_it_still_runs_is_refused(tmp_path: Path, read: str) -> None:
    """Red team, 2026-12-07: each job listed a second time one second later passed the exact-repeat screen."""
    rows = listed(4)
    twin = f"j-2,{T0 + 3600 * 2 + 1},{T0 + 3600 * 2 + 7200},8"  # j-2 again, inside its own run
    path = jobs(tmp_path, [*rows, twin])
    caught = _refused(path, read)
    assert caught.value.row == 6
    assert "job 'j-2' (column 'job_id') starts again while its run at row 4 has not ended" in str(caught.value)


def test_a_job_requeued_when_its_attempt_ends_counts_and_a_duration_list_keeps_its_requeues(tmp_path: Path) -> None:
    rows = listed(3)
    at_the_end = f"j-0,{T0 + 7200},{T0 + 9000},8"  # starts the second j-0's first attempt ended
    got = read_jobs(jobs(tmp_path, [*rows, at_the_end]))
    assert got.durations.tolist() == [7200.0, 7200.0, 7200.0, 1800.0]
    # without start times two attempts cannot be placed in time: only an equal duration is a repeat
    durations = ["j-0,7200,8", "j-0,1800,8"]
    assert len(read_jobs(jobs(tmp_path, durations, header="job_id,duration,gpus\n", name="d.csv")).durations) == 2


def test_a_plan_measured_on_a_job_list_with_every_job_twice_one_second_apart_fails(tmp_path: Path) -> None:
    """The game: every pre-training job listed again one second later (its own identifier), the pools raised to match."""
    repo = tmp_path / "good"
    shutil.copytree(EXAMPLES / "good", repo)
    path = repo / "measurements" / "jobs" / "pre-training.csv"
    header, *rows = path.read_text(encoding="utf-8").splitlines()
    twins = []
    for row in rows:
        job, start, end, gpus = row.split(",")
        twins += [row, f"{job},{int(start) + 1},{end},{gpus}"]
    path.write_text("\n".join([header, *twins]) + "\n", encoding="utf-8")
    code, out, err = run_cli(["check", ".", "--format", "concise", "--no-cache"], cwd=repo)
    assert (code, err) == (1, "")
    refused = [line for line in out.splitlines() if "PL024" in line]
    assert refused and all("pre-training.csv:3: job 'pt-00001' (column 'job_id') starts again" in line
                           for line in refused), out
