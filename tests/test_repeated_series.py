"""One series summed twice: refused, whatever its second label or column name.

Red team, 2026-12-05: a Prometheus answer holding the chat trace's series twice, the copy
under another label, doubled the workload's demand and passed every rule. The same happens
to an HA pair of Prometheus servers (one series per ``replica`` label) and to a table whose
column was copied under another name. A sum that holds the same times and values twice is
now refused at reading (PL024, the workload unmeasured); series that change value fewer
than ten times (idle replicas at zero) and aggregates that a repeat cannot inflate
(``mean``, ``max``) are read as before.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import EXAMPLES, run_cli

from policylint.errors import MeasurementError
from policylint.traces import read_series

T0 = 1_788_134_400
WHEN = ["--now", "2026-12-01"]


def answer(*series: tuple[dict[str, str], list[float]], step: int = 300) -> dict[str, object]:
    return {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {"metric": metric, "values": [[T0 + step * i, f"{v:g}"] for i, v in enumerate(values)]}
                for metric, values in series
            ],
        },
    }


def write_json(tmp_path: Path, doc: dict[str, object]) -> Path:
    path = tmp_path / "answer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


WAVE = [float(10 + (i * 7) % 13) for i in range(60)]  # changes value at nearly every sample


def test_a_prometheus_series_repeated_under_another_label_is_refused(tmp_path: Path) -> None:
    a = {"__name__": "inflight", "pod": "chat-0", "replica": "prom-a"}
    b = {"__name__": "inflight", "pod": "chat-0", "replica": "prom-b"}
    path = write_json(tmp_path, answer((a, WAVE), (b, WAVE)))
    with pytest.raises(MeasurementError) as err:
        read_series(path)
    assert str(err.value) == (
        f'{path}: series inflight{{pod="chat-0",replica="prom-a"}} and inflight{{pod="chat-0",replica="prom-b"}} '
        "hold the same 60 samples: summed, the same demand would count twice (a series scraped twice, or a "
        "column copied under another name); pick one (match, columns) or export it once"
    )
    # picking one of them reads it; two different pods are still summed
    assert read_series(path, match={"replica": "prom-a"}).values.max() == max(WAVE)
    other = [v + (i % 2) for i, v in enumerate(WAVE)]
    summed = read_series(write_json(tmp_path, answer((a, WAVE), ({**b, "pod": "chat-1"}, other))))
    assert np.array_equal(summed.values, np.array(WAVE) + np.array(other))


def test_idle_replicas_and_averages_may_agree(tmp_path: Path) -> None:
    idle = [0.0] * 50 + [1.0] * 10  # one change: equal by chance, not a copy
    a, b = {"pod": "a"}, {"pod": "b"}
    assert read_series(write_json(tmp_path, answer((a, idle), (b, idle)))).values.max() == 2
    # a mean or a max is not inflated by a repeat
    path = write_json(tmp_path, answer((a, WAVE), (b, WAVE)))
    assert np.array_equal(read_series(path, aggregate="mean").values, np.array(WAVE))
    assert np.array_equal(read_series(path, aggregate="max").values, np.array(WAVE))


def test_a_column_copied_under_another_name_is_refused(tmp_path: Path) -> None:
    rows = "".join(f"{T0 + 300 * i},{v:g},{v:g},{i % 3}\n" for i, v in enumerate(WAVE))
    path = tmp_path / "t.csv"
    path.write_text("timestamp,in_flight,in_flight_eu,queued\n" + rows, encoding="utf-8")
    with pytest.raises(MeasurementError, match=r"series in_flight and in_flight_eu hold the same 60 samples"):
        read_series(path, value_columns=["in_flight", "in_flight_eu"])
    assert read_series(path, value_columns=["in_flight", "queued"]).values.max() == max(
        v + i % 3 for i, v in enumerate(WAVE)
    )


def test_a_repeated_series_is_a_finding_and_demand_is_not_doubled(tmp_path: Path) -> None:
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "good"))
    trace = repo / "measurements" / "traces" / "chat-assistant.csv"
    lines = trace.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "timestamp,in_flight"
    trace.write_text("\n".join(["timestamp,in_flight,in_flight_copy"] + [f"{ln},{ln.split(',')[1]}" for ln in lines[1:]]) + "\n",
                     encoding="utf-8")
    workload = repo / "workloads" / "product-ai.yaml"
    text = workload.read_text(encoding="utf-8")
    workload.write_text(text.replace("columns: [in_flight]", "columns: [in_flight, in_flight_copy]", 1), encoding="utf-8")
    code, out, err = run_cli(["check", *WHEN, "--format", "json", str(repo)])
    assert code == 1 and "Traceback" not in err, err
    found = [f for f in json.loads(out)["findings"] if f["code"] == "PL024"]
    assert [f["file"].rsplit("/", 1)[-1] for f in found] == ["product-ai.yaml"]
    assert "series in_flight and in_flight_copy hold the same" in str(found[0]["message"])
