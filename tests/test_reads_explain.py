"""Reads that explain themselves: the timestamp by its name, event logs recognised, docs equal to the code.

The shapes are those of real public exports: the Alibaba GenAI 2026 series
(``value,container_ip,timestamp_anon``), the Azure LLM inference trace (one row
per request, many a second; its first 300 rows are in ``tests/data/``) and a
per-pod GPU memory and activity export.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli
from policylint.errors import MeasurementError
from policylint.readers import columns
from policylint.readers.grid import event_log_hint
from policylint.traces import read_jobs, read_series

ROOT = Path(__file__).resolve().parents[1]
AZURE = ROOT / "tests" / "data" / "azure_llm_code_2023_head.csv"
T0 = 1_793_491_200.0  # 2026-11-01T00:00:00Z


def _genai(tmp_path: Path, pods: tuple[str, ...] = ("9f1c", "a07b")) -> Path:
    """A gateway queue-size export as the GenAI trace writes it: values first, then the pod, then the time."""
    rng = np.random.default_rng(3)
    rows = ["value,container_ip,timestamp_anon"]
    for k in range(3 * 288):
        for pod in pods:
            rows.append(f"{int(rng.integers(0, 9))},{pod},{T0 + 300 * k:.1f}")
    path = tmp_path / "queue_size_raw_anon.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (["value", "container_ip", "timestamp_anon"], "timestamp_anon"),
        (["value", "eventTime"], "eventTime"),
        (["exec_time_seconds", "predict_status"], "exec_time_seconds"),  # a length of time: first column
        (["v", "wait_time_ms", "log_ts"], "log_ts"),
        (["ts_epoch", "Timestamp"], "Timestamp"),  # a candidate name first
        (["in_flight", "x"], "in_flight"),
    ],
)
def test_a_column_named_like_a_timestamp_wins_over_the_first(header: list[str], expected: str) -> None:
    assert columns.timestamp_column(header) == expected


def test_genai_series_are_read_by_their_times_not_their_values(tmp_path: Path) -> None:
    path = _genai(tmp_path)
    with pytest.raises(MeasurementError) as err:
        read_series(path)
    # the times are the times: no "duplicate timestamp 1970-01-01", but the key the table needs
    assert "1970" not in err.value.message
    assert "column 'container_ip' looks like a series key" in err.value.message
    code, out, err = run_cli(["bands", str(path)])
    assert code == 2 and out == "" and "1970" not in err and "--key-column" in err
    code, out, err = run_cli(["bands", str(path), "--key-column", "container_ip", "--aggregate", "sum",
                              "--format", "json"])
    assert code == 0, err
    series = read_series(path, key_column="container_ip", aggregate="sum")
    assert series.first == T0 and series.step_seconds == 300.0
    one = read_series(_genai(tmp_path, ("9f1c",)))  # one pod: a plain series, values from `value`
    assert one.first == T0 and one.values.max() <= 8


def test_an_event_log_read_as_a_series_names_step_and_the_request_log_form() -> None:
    code, out, err = run_cli(["bands", str(AZURE), "--column", "ContextTokens"])
    assert code == 2 and out == ""
    assert "no stretch of" in err
    assert "the rows look like an event log" in err
    assert "--step SECONDS" in err and "--input-format requests" in err
    # what the hint proposes works
    code, out, err = run_cli(["bands", str(AZURE), "--column", "ContextTokens", "--step", "10", "--cold-start", "30"])
    assert code == 0, err


def test_check_says_it_too(tmp_path: Path) -> None:
    from policylint.bands import analyse

    series = read_series(AZURE, value_columns=["ContextTokens"])
    assert series.hint is not None and "stepSeconds" in series.hint
    with pytest.raises(MeasurementError, match="event log.*format: requests"):
        analyse(series)


def test_a_regular_exporter_is_no_event_log() -> None:
    rng = np.random.default_rng(1)
    sampled = T0 + np.arange(500) * 0.5 + rng.uniform(0, 0.01, 500)  # twice a second, on a clock
    assert event_log_hint(sampled) is None
    arrivals = T0 + np.cumsum(rng.exponential(0.1, 500))
    assert event_log_hint(arrivals) is not None
    assert event_log_hint(T0 + np.cumsum(rng.exponential(60.0, 500))) is None  # slow events read fine


def test_genai_request_trace_durations_are_detected(tmp_path: Path) -> None:
    path = tmp_path / "lora_request_trace.csv"
    path.write_text("predict_type,predict_status,exec_time_seconds,prompt_length\n"
                    "e867,SUCCEED,22.0,54.0\ne867,FAILED,3.5,12.0\n", encoding="utf-8")
    jobs = read_jobs(path, where={"predict_status": ["SUCCEED"]})
    assert jobs.durations.tolist() == [22.0]


def _pods(tmp_path: Path) -> tuple[Path, Path]:
    memory = ["timestamp,pod,fb"]
    util = ["timestamp,pod,util"]
    for k in range(12):
        memory.append(f"{T0 + 60 * k:.0f},a,4096")
        memory.append(f"{T0 + 60 * k + 1:.0f},b,4096")
        util.append(f"{T0 + 60 * k:.0f},a,50")
    util.append(f"{T0 + 1:.0f},b,50")  # one activity row for b
    fb, busy = tmp_path / "fb.csv", tmp_path / "util.csv"
    fb.write_text("\n".join(memory) + "\n", encoding="utf-8")
    busy.write_text("\n".join(util) + "\n", encoding="utf-8")
    return fb, busy


def test_a_pod_without_an_activity_series_is_named(tmp_path: Path) -> None:
    from typing import Any

    from policylint.measure.vram import vram_trace
    from policylint.model import MeasurementRef

    fb, busy = _pods(tmp_path)

    class _W:
        spec: dict[str, Any] = {"vram": {}}
        pool = None

    def ref(path: Path, spec: dict[str, Any]) -> MeasurementRef:
        return MeasurementRef("w", "vram", None, ("spec", "vram", "trace"), {"path": path.name, **spec}, path,
                              path.name)  # type: ignore[arg-type]

    with pytest.raises(MeasurementError) as err:
        vram_trace(_W(), ref(fb, {"unit": "MiB", "key": {"column": "pod"}}), None,  # type: ignore[arg-type]
                   ref(busy, {"unit": "percent", "key": {"column": "pod"}}))
    assert err.value.message == (
        "pod 'b' has no activity series (activity keys: a); its activity rows form none:"
        " only one sample: a series needs at least two"
    )


# --------------------------------------------------------------------------- the docs table


def _documented() -> dict[str, tuple[str, ...]]:
    text = (ROOT / "docs" / "measurements.md").read_text(encoding="utf-8")
    section = text.split("### Column names", 1)[1].split("\n#", 1)[0]
    table: dict[str, tuple[str, ...]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[1].startswith("`"):
            table[cells[0]] = tuple(re.findall(r"`([^`]+)`", cells[1]))
    return table


def test_documented_column_names_equal_the_readers() -> None:
    assert _documented() == {
        "timestamp": columns.TIMESTAMP_CANDIDATES,
        "start": columns.START_CANDIDATES,
        "end": columns.END_CANDIDATES,
        "duration": columns.DURATION_CANDIDATES,
        "GPUs": columns.GPU_CANDIDATES,
        "job identifier (job lists)": columns.JOB_ID_CANDIDATES,
        "key (only suggested)": columns.KEY_CANDIDATES,
        "timestamp words": columns.TIMESTAMP_WORDS,
        "duration words": columns.DURATION_WORDS,
    }


def test_documented_messages_are_the_readers() -> None:
    text = (ROOT / "docs" / "measurements.md").read_text(encoding="utf-8")
    assert "1 job still running at the end of the export was counted until 2026-01-01T02:00:00Z (the end of the trace)" in text
    assert "its activity rows form none: only one sample: a series needs at least two" in text
    code, _out, err = run_cli(["bands", str(AZURE), "--column", "ContextTokens"])
    hint = err.split("; ", 1)[1].strip()
    assert hint.startswith("the rows look like an event log")
    assert hint.split("apart)", 1)[1] in text


def test_check_names_the_pod_without_activity(tmp_path: Path) -> None:
    import json

    from conftest import copy_minirepo, minirepo_path

    repo = copy_minirepo(tmp_path / "repo", minirepo_path())
    fb, busy = _pods(repo / "measurements")
    search = repo / "workloads" / "search.yaml"
    text = search.read_text(encoding="utf-8")
    old = "  vram:\n    residentGiB: 6\n    residencySeconds: 86400\n    activeComputeSeconds: 30000\n"
    assert text.count(old) == 1
    search.write_text(text.replace(old, (
        "  vram:\n"
        "    trace: {path: ../measurements/fb.csv, columns: [fb], unit: MiB, key: {column: pod}}\n"
        "    activity: {path: ../measurements/util.csv, columns: [util], unit: percent, key: {column: pod}}\n"
    )), encoding="utf-8")
    code, out, err = run_cli(["check", "--no-cache", "--format", "json", "--exit-zero", str(repo)])
    assert code == 0, err
    refused = [f["message"] for f in json.loads(out)["findings"] if f["code"] == "PL024"]
    assert refused == [
        "cannot use measurement: ../measurements/fb.csv: pod 'b' has no activity series (activity keys: a); its activity rows"
        " form none: only one sample: a series needs at least two"
    ], refused
