"""Request logs, job lists and series as teams export them.

Row filters (``where``) and ``skipIncomplete`` (counted, never silent), job lists
weighted by their GPUs, long tables read by key (one series, or sum/mean on the
common grid), VRAM residency per pod from memory and activity series, the same
options on ``policylint bands``, and the progress bar. The generated exports
copy the shapes of public ones: a GPU pod list with CPU-only pods, pending pods
with empty cells and times relative to the trace start; a request log with
failed requests and a ``gmt_create`` start; DCGM exports with a ``pod`` column.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import EXAMPLES, copy_minirepo, run_cli
from policylint.errors import MeasurementError
from policylint.traces import read_jobs, read_parts, read_series

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"
AZURE = DATA / "azure_llm_code_2023_head.csv"
HELIOS = DATA / "helios_vc3sl_2020-05.csv"
NOW = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
ORIGIN = "2023-07-01T00:00:00Z"
T_ORIGIN = 1_688_169_600.0  # 2023-07-01T00:00:00Z

# A GPU pod list shaped like the public Alibaba one: times in seconds since an
# unstated start, CPU-only pods (num_gpu 0), a pending pod with empty
# scheduled_time and deletion_time, a failed pod.
PODS = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
pod-0001,12000,16384,1,1000,,LS,Running,0,7200,60
pod-0002,88000,327680,8,1000,V100M32,LS,Succeeded,100,3700,100
pod-0003,6000,8192,0,0,,BE,Succeeded,200,9000,200
pod-0004,12000,16384,2,1000,,LS,Pending,300,,
pod-0005,12000,16384,1,500,,LS,Failed,400,1400,400
pod-0006,4000,4096,0,0,,BE,Running,500,6000,520
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def bands_cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``policylint bands`` through the real entry point, in this process (no interpreter start-up)."""
    import os
    from unittest import mock

    from conftest import run_cli

    args = ["bands", *argv]
    with mock.patch.dict(os.environ, env or {}):
        code, out, err = run_cli(args, cwd=ROOT)
    return subprocess.CompletedProcess(args, code, out, err)


def bands_process(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``policylint bands`` in a child process, as a user runs it: for what only a process shows."""
    import os

    return subprocess.run(
        [sys.executable, "-m", "policylint", "bands", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        check=False,
    )


def one_line_error(out: subprocess.CompletedProcess[str], pattern: str) -> None:
    import re

    assert out.returncode == 2, out.stderr
    assert out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "Traceback" not in out.stderr
    assert re.search(pattern, out.stderr), out.stderr


POD_ARGS = ("--input-format", "jobs", "--start-column", "scheduled_time", "--end-column", "deletion_time",
            "--time-origin", ORIGIN, "--step", "60", "--min-window-days", "0")


# --- row filters and incomplete rows ---------------------------------------------------------


def test_pending_pods_are_refused_with_their_row_unless_skipped(tmp_path: Path) -> None:
    path = write(tmp_path, "pods.csv", PODS)
    with pytest.raises(MeasurementError, match="column 'scheduled_time' is empty in this row") as err:
        read_series(path, format="jobs", start_column="scheduled_time", end_column="deletion_time",
                    time_origin=ORIGIN, step_seconds=60)
    assert err.value.row == 5
    series = read_series(path, format="jobs", start_column="scheduled_time", end_column="deletion_time",
                         time_origin=ORIGIN, step_seconds=60, skip_incomplete=True)
    assert series.notes == ("1 row skipped: empty scheduled_time",)
    assert series.first == T_ORIGIN + 60  # relative times placed after the declared origin
    one_line_error(bands_cli(str(path), *POD_ARGS), r"pods\.csv:5: column 'scheduled_time' is empty .*--skip-incomplete")


def test_where_drops_cpu_only_and_failed_pods_and_counts_them(tmp_path: Path) -> None:
    path = write(tmp_path, "pods.csv", PODS)
    jobs = read_jobs(path, start_column="scheduled_time", end_column="deletion_time", time_origin=ORIGIN,
                     where={"num_gpu": {"gt": 0}, "pod_phase": {"notIn": ["Failed"]}}, skip_incomplete=True)
    # pod-0003 and pod-0006 are CPU-only, pod-0005 failed; pod-0004 is pending.
    assert jobs.durations.tolist() == [7140.0, 3600.0]
    assert jobs.gpus.tolist() == [1.0, 8.0]
    assert jobs.notes == (
        "3 rows of 6 dropped by the filter (num_gpu > 0: 2 failed; pod_phase not in [Failed]: 1 failed)",
        "1 row skipped: empty scheduled_time",
    )


def test_where_membership_compares_text_and_numbers(tmp_path: Path) -> None:
    path = write(tmp_path, "r.csv", "gmt_create,latency_ms,status,code\n"
                 "2026-09-01T00:00:00Z,1500,SUCCEED,200\n2026-09-01T00:00:01Z,900,FAILED,500\n"
                 "2026-09-01T00:00:02Z,1200, SUCCEED ,200\n2026-09-01T00:00:03Z,800,,\n")
    kept = read_jobs(path, where={"status": ["SUCCEED"]})
    assert kept.durations.tolist() == [1.5, 1.2]  # cells compared without surrounding spaces
    assert read_jobs(path, where={"code": [200]}).durations.tolist() == [1.5, 1.2]
    assert read_jobs(path, where={"code": ["200"]}).durations.tolist() == [1.5, 1.2]
    assert read_jobs(path, where={"code": {"ne": 200}}).durations.tolist() == [0.9]  # empty cell: no match
    assert read_jobs(path, where={"latency_ms": {"ge": 1000, "lt": 1500}}).durations.tolist() == [1.2]


def test_request_log_without_failed_requests(tmp_path: Path) -> None:
    """A request log shaped like the Alibaba GenAI one: gmt_create, a latency in ms, a status."""
    path = write(tmp_path, "genai.csv", "request_id,gmt_create,latency_ms,status,code\n"
                 "r1,2026-09-01 00:00:00.250000,2000,SUCCEED,200.0\n"
                 "r2,2026-09-01 00:00:00.500000,1000,FAILED,500.0\n"
                 "r3,2026-09-01 00:00:01.000000,1500,SUCCEED,200.0\n")
    every = read_series(path, format="requests", step_seconds=0.25)
    assert float(np.max(every.values)) == 3
    ok = read_series(path, format="requests", step_seconds=0.25, where={"status": ["SUCCEED"]})
    assert float(np.max(ok.values)) == 2
    assert ok.notes == ("1 row of 3 dropped by the filter (status in [SUCCEED]: 1 failed)",)
    assert ok.first == 1_788_220_800.25  # gmt_create detected as the start, to the microsecond
    by_code = read_series(path, format="requests", step_seconds=0.25, where={"code": [200]})  # 200 matches 200.0
    assert by_code.notes == ("1 row of 3 dropped by the filter (code in [200]: 1 failed)",)


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ({"status": {"like": "S%"}}, "unknown comparison 'like'"),
        ({"status": {"gt": "B"}}, r"status.gt: 'B' is not a number"),
        ({"status": []}, "an empty list of values"),
        ({"nope": ["x"]}, "missing column 'nope' \\(columns: start, duration, status\\)"),
        ({"status": {"gt": 1}}, "column 'status': 'ok' is not a number"),
        ({"status": ["missing"]}, "no rows left: all 2 rows were dropped"),
    ],
)
def test_bad_filters_are_errors_naming_the_file(tmp_path: Path, where: dict[str, Any], message: str) -> None:
    path = write(tmp_path, "r.csv", "start,duration,status\n0,5,ok\n1,4,ok\n")
    with pytest.raises(MeasurementError, match=message) as err:
        read_jobs(path, where=where)
    assert str(err.value).startswith(str(path))


@pytest.mark.parametrize(
    ("text", "message"),
    [("gpus", "--where expects COLUMN=V1,V2"), ("gpus>many", "'many' is not a number"), ("=x", "--where expects")],
)
def test_bad_where_options_are_one_line_errors(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, "r.csv", "start,duration,gpus\n0,5,1\n1,4,1\n")
    one_line_error(bands_cli(str(path), "--input-format", "jobs", "--where", text), message)


# --- GPU-weighted job lists ------------------------------------------------------------------


def test_a_job_of_eight_gpus_is_eight_of_demand(tmp_path: Path) -> None:
    path = write(tmp_path, "j.csv", "start,end,num_gpu\n0,100,8\n50,150,1\n")
    kwargs: dict[str, Any] = {"format": "jobs", "step_seconds": 50, "time_origin": ORIGIN}
    counted = read_series(path, **kwargs)
    assert (counted.unit, counted.unused_gpu_column) == ("concurrency", "num_gpu")
    assert counted.values.tolist() == [1, 2, 1, 0]
    weighted = read_series(path, unit="gpus", **kwargs)  # num_gpu detected
    assert weighted.unit == "gpus"
    assert weighted.values.tolist() == [8, 9, 1, 0]
    assert read_series(path, gpus_column="num_gpu", **kwargs).values.tolist() == [8, 9, 1, 0]


def test_gpu_weighting_errors(tmp_path: Path) -> None:
    path = write(tmp_path, "j.csv", "start,end,slots\n0,100,8\n")
    with pytest.raises(MeasurementError, match="unit gpus needs a GPU column .* among start, end, slots"):
        read_series(path, format="jobs", unit="gpus")
    with pytest.raises(MeasurementError, match="the unit is concurrency; drop one"):
        read_series(path, format="jobs", unit="concurrency", gpus_column="slots")
    with pytest.raises(MeasurementError, match="GPU weighting is for request logs and job lists"):
        read_series(write(tmp_path, "t.csv", "ts,v\n0,1\n60,2\n"), unit="gpus")


def test_bands_weighs_pods_by_gpus_and_refuses_a_second_conversion(tmp_path: Path) -> None:
    path = write(tmp_path, "pods.csv", PODS)
    args = (*POD_ARGS, "--skip-incomplete", "--where", "num_gpu>0", "--where", "pod_phase!=Failed")
    out = bands_cli(str(path), *args, "--unit", "gpus", "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["reading"]["unit"] == "gpus"
    assert data["bands"]["peak"] == 9.0  # one 8-GPU pod and one 1-GPU pod at once
    assert len(data["reading"]["notes"]) == 2
    text = bands_cli(str(path), *args, "--unit", "gpus")
    assert "(GPUs: jobs weighted by their GPU count)" in text.stdout
    assert "read: 1 row skipped: empty scheduled_time" in text.stdout
    one_line_error(bands_cli(str(path), *args, "--unit", "gpus", "--gpus-per-replica", "8"),
                   "do not apply to a GPU-weighted series")


# --- long tables -----------------------------------------------------------------------------


def _long(tmp_path: Path) -> Path:
    """Two pods in one table, sampled every 15 s and every 30 s at float epoch times, rows shuffled."""
    rows = []
    t0 = 1_700_000_000.0
    for i in range(0, 41):
        rows.append((t0 + 15 * i + 0.125, "10.0.0.1", 2.0, 20.0))
    for i in range(0, 21):
        rows.append((t0 + 30 * i + 3.5, "10.0.0.2", 4.0, 60.0))
    order = np.random.default_rng(7).permutation(len(rows))
    body = "".join(f"{rows[k][0]:.3f},{rows[k][1]},{rows[k][2]:g},{rows[k][3]:g}\n" for k in order)
    return write(tmp_path, "long.csv", "timestamp,container_ip,running,gpu_util\n" + body)


def test_long_table_select_one_series(tmp_path: Path) -> None:
    path = _long(tmp_path)
    one = read_series(path, value_columns=["running"], key_column="container_ip", key_select="10.0.0.2")
    assert one.step_seconds == 30.0
    assert set(one.values[one.valid].tolist()) == {4.0}


def test_long_table_sum_and_mean_on_the_common_grid(tmp_path: Path) -> None:
    path = _long(tmp_path)
    total = read_series(path, value_columns=["running"], key_column="container_ip", aggregate="sum", step_seconds=15)
    # Once both pods are sampled, every grid point carries 2 + 4 (the 30 s pod carried forward).
    assert total.values[1:-1].tolist() == [6.0] * (total.samples - 2)
    assert total.values[0] == 2.0  # 10.0.0.2 not yet started: it adds nothing
    mean = read_series(path, value_columns=["gpu_util"], key_column="container_ip", aggregate="mean", step_seconds=15)
    assert mean.values[1:-1].tolist() == [40.0] * (mean.samples - 2)


def test_long_table_errors(tmp_path: Path) -> None:
    path = _long(tmp_path)
    with pytest.raises(MeasurementError, match="column 'container_ip' looks like a series key"):
        read_series(path, value_columns=["running"])
    with pytest.raises(MeasurementError, match=r"no rows with container_ip = '10.9.9.9' \(2 keys: 10.0.0.1, 10.0.0.2\)"):
        read_series(path, value_columns=["running"], key_column="container_ip", key_select="10.9.9.9")
    with pytest.raises(MeasurementError, match="needs select .* or aggregate"):
        read_series(path, value_columns=["running"], key_column="container_ip")
    dup = write(tmp_path, "dup.csv", "ts,pod,v\n0,a,1\n60,a,2\n60,b,1\n60,a,3\n")
    with pytest.raises(MeasurementError, match="duplicate timestamp for pod = 'a'") as err:
        read_series(dup, key_column="pod", aggregate="sum", time_origin=ORIGIN)
    assert err.value.row == 5
    empty = write(tmp_path, "empty.csv", "ts,pod,v\n0,a,1\n60,,2\n120,a,3\n")
    with pytest.raises(MeasurementError, match="column 'pod' \\(the key\\) is empty") as err:
        read_series(empty, key_column="pod", aggregate="sum", time_origin=ORIGIN)
    assert err.value.row == 3
    skipped = read_series(empty, key_column="pod", aggregate="sum", time_origin=ORIGIN, skip_incomplete=True)
    assert skipped.notes == ("1 row skipped: empty pod",)


def test_unknown_aggregate_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(MeasurementError, match="unknown aggregate 'median' \\(expected sum, mean, max\\)"):
        read_series(_long(tmp_path), value_columns=["running"], key_column="container_ip", aggregate="median")
    usage = bands_cli(str(_long(tmp_path)), "--key-column", "container_ip", "--aggregate", "median")
    assert usage.returncode == 2 and "invalid choice: 'median'" in usage.stderr


def test_check_reads_a_long_table_by_key(tmp_path: Path) -> None:
    """A declaration's key block reaches the reader: the pods' sum is the concurrency."""
    from policylint.engine.linter import LintOptions, lint
    from policylint.measure.run import measure

    repo = _repo(tmp_path, mini=True)
    trace = repo / "measurements/traces/chat-assistant.csv"
    lines = trace.read_text(encoding="utf-8").splitlines()
    header, rows = lines[0].split(","), [line.split(",") for line in lines[1:]]
    # The same series split over two pods, 60/40, one row per pod and time (two pods holding
    # exactly the same series would be one series scraped twice: refused).
    parts = [(round(float(r[1]) * 0.6), float(r[1]) - round(float(r[1]) * 0.6)) for r in rows]
    split = ["timestamp,pod,in_flight"] + [f"{r[0]},{pod},{p[k]:g}" for r, p in zip(rows, parts) for k, pod in enumerate(("a", "b"))]
    (repo / "measurements/traces/chat-by-pod.csv").write_text("\n".join(split) + "\n", encoding="utf-8")
    product = repo / "workloads/product-ai.yaml"
    before = lint([repo], LintOptions(root=repo, now=NOW))
    assert before.model is not None
    plain = measure(before.model, NOW)[0]["chat-assistant"].report
    _edit(product, "      path: ../measurements/traces/chat-assistant.csv\n",
          "      path: ../measurements/traces/chat-by-pod.csv\n      key: {column: pod, aggregate: sum}\n")
    after = lint([repo], LintOptions(root=repo, now=NOW))
    assert after.model is not None
    facts, findings = measure(after.model, NOW)
    assert findings == []
    keyed = facts["chat-assistant"].report
    assert header[:2] == ["timestamp", "in_flight"]
    assert plain is not None and keyed is not None
    assert (keyed.baseline, keyed.daily, keyed.peak) == (plain.baseline, plain.daily, plain.peak)


def test_bands_reads_long_tables_with_the_same_options(tmp_path: Path) -> None:
    path = _long(tmp_path)
    base = (str(path), "--column", "running", "--key-column", "container_ip", "--min-window-days", "0",
            "--format", "json", "--step", "15")
    summed = json.loads(bands_cli(*base, "--aggregate", "sum").stdout)
    assert summed["bands"]["peak"] == 6.0
    picked = json.loads(bands_cli(*base, "--select", "10.0.0.1").stdout)
    assert picked["bands"]["peak"] == 2.0


def _prometheus(tmp_path: Path, name: str, metric: str, pods: dict[str, list[float]], t0: float = 1_793_491_200.0,
                step: float = 60.0) -> Path:
    result = [
        {"metric": {"__name__": metric, "pod": pod, "gpu": "0"},
         "values": [[t0 + step * i, str(v)] for i, v in enumerate(values)]}
        for pod, values in pods.items()
    ]
    doc = {"status": "success", "data": {"resultType": "matrix", "result": result}}
    return write(tmp_path, name, json.dumps(doc))


def test_prometheus_series_aggregate_and_select_by_label(tmp_path: Path) -> None:
    path = _prometheus(tmp_path, "util.json", "DCGM_FI_DEV_GPU_UTIL", {"a": [10, 20, 30], "b": [30, 40, 50]})
    assert read_series(path).values.tolist() == [40, 60, 80]
    assert read_series(path, aggregate="mean").values.tolist() == [20, 30, 40]
    assert read_series(path, key_column="pod", key_select="b").values.tolist() == [30, 40, 50]
    with pytest.raises(MeasurementError, match="where filters rows of a table"):
        read_series(path, where={"pod": ["a"]})


# --- VRAM residency per pod ------------------------------------------------------------------


def test_residency_per_pod_from_two_prometheus_exports(tmp_path: Path) -> None:
    """DCGM framebuffer (MiB) and utilisation (%) per pod, each from its own query_range answer."""
    from policylint.measure.vram import vram_trace
    from policylint.model import MeasurementRef

    fb = _prometheus(tmp_path, "fb.json", "DCGM_FI_DEV_FB_USED", {"a": [40960] * 4 + [0] * 2, "b": [20480] * 6})
    util = _prometheus(tmp_path, "util.json", "DCGM_FI_DEV_GPU_UTIL", {"a": [50] * 6, "b": [10, 10, 10, 10, 90, 90]})

    class _W:
        spec: dict[str, Any] = {"vram": {}}
        pool = None

    def ref(path: Path, spec: dict[str, Any]) -> MeasurementRef:
        return MeasurementRef("w", "vram", None, ("spec", "vram", "trace"), {"path": path.name, **spec}, path,
                              path.name)  # type: ignore[arg-type]

    got = vram_trace(
        _W(),  # type: ignore[arg-type]
        ref(fb, {"unit": "MiB", "key": {"column": "pod"}}),
        None,
        ref(util, {"unit": "percent", "key": {"column": "pod"}}),
    )
    # a: resident 4 samples x 60 s at 50 %; b: 6 samples at 10,10,10,10,90,90 %.
    assert got.pods == (("a", 240.0, 120.0), ("b", 360.0, 132.0))
    assert (got.residency_seconds, got.active_seconds) == (600.0, 252.0)
    assert got.ratio == 600.0 / 252.0
    assert got.resident_gib == 40.0  # the largest pod's peak, per replica
    missing = _prometheus(tmp_path, "u2.json", "DCGM_FI_DEV_GPU_UTIL", {"a": [50] * 6})
    with pytest.raises(MeasurementError, match=r"pod 'b' has no activity series \(activity keys: a\)"):
        vram_trace(_W(), ref(fb, {"unit": "MiB", "key": {"column": "pod"}}), None,  # type: ignore[arg-type]
                   ref(missing, {"unit": "percent", "key": {"column": "pod"}}))


def test_read_parts_groups_a_long_table_by_pod(tmp_path: Path) -> None:
    parts = read_parts(ROOT / "tests/rules/_traces/dcgm-busy-pods.csv", key_column="pod",
                       value_columns=["DCGM_FI_DEV_FB_USED"])
    assert sorted(parts) == ["chat-0", "chat-1"]
    assert parts["chat-1"].samples == 288
    assert int(np.count_nonzero(parts["chat-1"].values > 0)) == 144


# --- declarations: check wires every option, PL025 reports what was dropped ---------------------


def _repo(tmp_path: Path, *, mini: bool = False) -> Path:
    """A copy of examples/good, or of the small shared repository when the test needs only a traced workload."""
    repo = tmp_path / "repo"
    if mini:
        copy_minirepo(repo)
    else:
        shutil.copytree(EXAMPLES / "good", repo)
    (repo / ".policylint.yaml").write_text('now: "2026-12-01"\nselect: [PL0, PL5]\nrules: {PL977: {accept: "select=PL0,PL5"}}\n', encoding="utf-8")
    return repo


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_check_reports_dropped_rows_as_info_at_the_measurement(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    jobs = repo / "measurements/jobs/fine-tuning.csv"
    lines = jobs.read_text(encoding="utf-8").splitlines()
    lines.append("ft-pending,,,8")
    lines.append("ft-cpu,1790000000,1790000100,0")
    jobs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    research = repo / "workloads/research.yaml"
    code, out, _err = run_cli(["check", "--format", "json"], cwd=repo)
    refused = [f for f in json.loads(out)["findings"] if f["code"] == "PL024"]
    assert len(refused) == 1 and "is empty in this row" in refused[0]["message"]
    _edit(research, "      gpusColumn: gpus\n---\napiVersion: policylint/v1\nkind: Workload\nmetadata:\n  name: nightly-eval",
          "      gpusColumn: gpus\n      where: {gpus: {gt: 0}}\n      skipIncomplete: true\n"
          "---\napiVersion: policylint/v1\nkind: Workload\nmetadata:\n  name: nightly-eval")
    code, out, _err = run_cli(["check", "--format", "json"], cwd=repo)
    findings = json.loads(out)["findings"]
    assert [(f["code"], f["severity"], f["file"], f["line"]) for f in findings] == [
        ("PL025", "info", "workloads/research.yaml", 86)
    ]
    assert findings[0]["message"] == (
        "../measurements/jobs/fine-tuning.csv: 1 row of 2,541 dropped by the filter (gpus > 0: 1 failed);"
        " 1 row skipped: empty start"
    )
    assert code == 0  # info findings do not fail the run


def test_a_gpu_weighted_trace_is_not_multiplied_by_gpus_per_replica(tmp_path: Path) -> None:
    from policylint.engine.linter import LintOptions, lint
    from policylint.measure.run import measure
    from policylint.engine.workload_view import workload_view

    repo = _repo(tmp_path)
    research = repo / "workloads/research.yaml"
    before = lint([repo], LintOptions(root=repo, now=NOW))
    assert before.model is not None
    facts = measure(before.model, NOW)[0]["pre-training"]
    counted = workload_view(before.model.workloads["pre-training"], facts, NOW)[1]
    _edit(research, "      startColumn: start\n      endColumn: end\n      stepSeconds: 300\n",
          "      startColumn: start\n      endColumn: end\n      stepSeconds: 300\n      unit: gpus\n")
    after = lint([repo], LintOptions(root=repo, now=NOW))
    assert after.model is not None
    wfacts = measure(after.model, NOW)[0]["pre-training"]
    assert wfacts.trace_unit == "gpus"
    weighted = workload_view(after.model.workloads["pre-training"], wfacts, NOW)[1]
    # Every job holds 64 GPUs: the GPU trace is 64 x the job count, and its GPUs are
    # the same as the job count converted with gpusPerReplica 64 - not 64 x 64.
    assert weighted["baseline"] == 64 * counted["baseline"]
    assert weighted["baseline_gpus"] == counted["baseline_gpus"]
    assert weighted["peak_gpus"] == counted["peak_gpus"]


def test_schema_refuses_a_bad_where_and_a_key_without_a_choice(tmp_path: Path) -> None:
    repo = _repo(tmp_path, mini=True)
    product = repo / "workloads/product-ai.yaml"
    _edit(product, "      path: ../measurements/traces/chat-assistant.csv\n",
          "      path: ../measurements/traces/chat-assistant.csv\n      where: {status: {like: x}}\n"
          "      key: {column: pod}\n")
    code, out, _err = run_cli(["check", "--format", "json"], cwd=repo)
    codes = [f["code"] for f in json.loads(out)["findings"]]
    assert code == 1
    assert codes.count("PL010") >= 2


# --- real data ---------------------------------------------------------------------------------


def test_azure_arrivals_filtered_by_tokens_keep_microseconds() -> None:
    """The Azure code-completion trace (300 real arrivals): long prompts only, times to the microsecond."""
    every = read_series(AZURE, value_columns=["GeneratedTokens"])
    assert round(every.first * 1e6) % 1_000_000 != 0  # sub-second arrival times are read to the microsecond
    # Arrivals read as a time series have one row per time: a filter on them leaves times out, which a
    # series refuses (179 of the 300 requests have prompts under 2,000 tokens, counted with the csv module).
    with pytest.raises(MeasurementError, match="where leaves out 179 of the 300 times of this time series"):
        read_series(AZURE, value_columns=["GeneratedTokens"], where={"ContextTokens": {"ge": 2000}})


def test_helios_filter_on_a_time_series_counts_the_rows() -> None:
    """The Helios cluster trace (44,640 real minutes): a filter that keeps busy minutes only is refused."""
    # by the GPUs they record: the filter tests the very column the series is read from
    with pytest.raises(MeasurementError, match="value column 'running_gpu_num'"):
        read_series(HELIOS, value_columns=["running_gpu_num"], where={"running_gpu_num": {"gt": 0}})
    # by another column: still 3,059 of its minutes left out, chosen by what they measured
    with pytest.raises(MeasurementError, match="where leaves out 3,059 of the 44,640 times"):
        read_series(HELIOS, value_columns=["running_gpu_num"], where={"running_job_num": {"gt": 0}})
    # a condition every minute passes chooses nothing, and reads as the file
    assert read_series(HELIOS, value_columns=["running_gpu_num"], where={"total_gpu_num": {"gt": 0}}).notes == ()


# --- progress bar ------------------------------------------------------------------------------


def test_progress_bar_only_on_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console

    from policylint.report.progress import TerminalProgress, terminal_progress

    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    assert terminal_progress() is None  # a pipe or a CI log: nothing at all

    screen = io.StringIO()
    bar = TerminalProgress(Console(file=screen, force_terminal=True, width=100), delay=0.0)
    bar.begin("big.csv", 1000)
    deadline = time.monotonic() + 10
    while not bar.shown and time.monotonic() < deadline:
        time.sleep(0.01)
    bar.advance(500)
    bar.end()
    assert "reading big.csv" in screen.getvalue()

    quiet = io.StringIO()
    fast = TerminalProgress(Console(file=quiet, force_terminal=True, width=100), delay=1.0)
    fast.begin("small.csv", 10)
    fast.end()  # finished before the delay: no bar
    assert quiet.getvalue() == ""


def test_bands_shows_the_bar_on_a_forced_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the real entry point: a terminal forced with rich's TTY_COMPATIBLE, no delay."""
    import policylint.readers.table
    from policylint.report import progress

    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setattr(progress, "DELAY_SECONDS", 0.0)
    real = policylint.readers.table.Table.read

    def slow(self: Any, *args: Any, **kwargs: Any) -> Any:
        time.sleep(0.5)  # a read long enough for the bar to appear, whatever the machine's load
        return real(self, *args, **kwargs)

    monkeypatch.setattr(policylint.readers.table.Table, "read", slow)
    code, out, err = run_cli(["bands", str(HELIOS), "--column", "running_gpu_num", "--format", "json"])
    assert code == 0
    assert "reading " in err and "helios_vc3sl_2020-05.csv" in err
    assert json.loads(out)["source"].endswith("helios_vc3sl_2020-05.csv")  # standard output stays JSON


def test_bands_prints_no_progress_when_not_on_a_terminal(tmp_path: Path) -> None:
    out = bands_process(str(HELIOS), "--column", "running_gpu_num", "--format", "json")
    assert out.returncode == 0
    assert out.stderr == ""
