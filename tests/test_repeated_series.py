"""One series summed twice: refused, whatever its second label or column name.

Red team, 2026-12-05: a Prometheus answer holding the chat trace's series twice, the copy
under another label, doubled the workload's demand and passed every rule. The same happens
to an HA pair of Prometheus servers (one series per ``replica`` label) and to a table whose
column was copied under another name. A sum that holds the same times and values twice is
now refused at reading (PL024, the workload unmeasured); series that change value fewer
than ten times (idle replicas at zero) and aggregates that a repeat cannot inflate
(``mean``, ``max``) are read as before.

A second red team then summed the copy with one sample changed, multiplied by 1.0001, with
1 added, one step later, or with 1 added and one sample in a hundred moved: each is refused
too (an equal order of samples with every sample k times the other's plus c; or most 16-step
runs in common). Pods behind a round-robin balancer, whose counts rise and fall together,
are still summed.
"""

from __future__ import annotations

import json
import re
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
    other = [float(5 + (i * 5) % 11) for i in range(60)]  # another pod: its own rises and falls
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


# --- near repeats: a copy edited to look like another series (red team, 2026-12-05) ---------------

CHAT = Path(__file__).parent / "rules" / "_traces" / "minutely-5min.csv"


def chat_values() -> list[float]:
    rows = CHAT.read_text(encoding="utf-8").splitlines()[1:]
    return [float(r.split(",")[1]) for r in rows]


def one_changed(v: list[float]) -> list[float]:
    return [x + 1 if i == 500 else x for i, x in enumerate(v)]


def sparse_noise(v: list[float]) -> list[float]:
    return [x + 1 + (1 if i % 100 == 37 else 0) for i, x in enumerate(v)]


@pytest.mark.parametrize(
    ("edit", "shift", "said"),
    [
        (one_changed, 0, "share 99% of their 16-step runs"),
        (lambda v: [x + 1 for x in v], 0, "is series inflight{pod=\"chat-0\"} scaled, offset or moved in time"),
        (lambda v: [x * 1.0001 for x in v], 0, "samples is 1.0001 times the other's plus one constant"),
        (lambda v: list(v), 1, "is series inflight{pod=\"chat-0\"} scaled, offset or moved in time"),
        (sparse_noise, 0, "of their 16-step runs (more than 50%)"),
    ],
    ids=["one-sample", "plus-one", "scaled", "moved-one-step", "offset-and-sparse-noise"],
)
def test_a_near_repeat_in_a_prometheus_answer_is_refused(tmp_path: Path, edit, shift: int, said: str) -> None:
    chat = chat_values()
    copy = edit(chat)
    doc = answer(({"__name__": "inflight", "pod": "chat-0"}, chat), ({"__name__": "inflight", "pod": "chat-1"}, copy))
    if shift:  # the copy's samples one step later: the same values, other times
        result = doc["data"]["result"]  # type: ignore[index]
        result[1]["values"] = [[t + 300 * shift, v] for t, v in result[1]["values"]]
    with pytest.raises(MeasurementError, match=re.escape(said)):
        read_series(write_json(tmp_path, doc))


def test_a_column_with_one_sample_raised_is_refused(tmp_path: Path) -> None:
    chat = chat_values()
    edited = one_changed(chat)
    rows = "".join(f"{T0 + 300 * i},{a:g},{b:g}\n" for i, (a, b) in enumerate(zip(chat, edited)))
    path = tmp_path / "t.csv"
    path.write_text("timestamp,in_flight,in_flight_eu\n" + rows, encoding="utf-8")
    with pytest.raises(MeasurementError, match=r"series in_flight and in_flight_eu share 99% of their 16-step runs"):
        read_series(path, value_columns=["in_flight", "in_flight_eu"])


def test_pods_behind_a_round_robin_balancer_are_summed(tmp_path: Path) -> None:
    # every minute's arrivals dealt to three pods in turn: their counts rise and fall together and
    # share one order of samples, but each holds requests the others do not - no pod is a copy
    rng = np.random.default_rng(3)
    minutes = 14 * 1440
    arrivals = rng.poisson(20_000 + 15_000 * np.sin(np.arange(minutes) / 1440 * 2 * np.pi))
    after = np.cumsum(arrivals)
    before = after - arrivals
    pods = [((after - j + 2) // 3 - (before - j + 2) // 3).astype(float) for j in range(3)]
    doc = answer(*(({"pod": f"chat-{j}"}, list(p)) for j, p in enumerate(pods)), step=60)
    series = read_series(write_json(tmp_path, doc))
    assert np.array_equal(series.values, arrivals.astype(float))


def test_two_measured_traces_are_summed(tmp_path: Path) -> None:
    other = Path(__file__).parent / "rules" / "_traces" / "bursty-sustained.csv"
    second = [float(r.split(",")[1]) for r in other.read_text(encoding="utf-8").splitlines()[1:]]
    chat = chat_values()
    n = min(len(chat), len(second))
    doc = answer(({"pod": "chat-0"}, chat[:n]), ({"pod": "chat-1"}, second[:n]))
    assert np.array_equal(read_series(write_json(tmp_path, doc)).values, np.array(chat[:n]) + np.array(second[:n]))


def test_two_warm_replicas_toggling_apart_are_summed(tmp_path: Path) -> None:
    # second red team: two replicas each alternating 0/1 at 98% of samples, drawn apart, were
    # refused as sharing 62% of their runs - runs each repeats itself are no sign of a copy
    rng = np.random.default_rng(11)
    a = (np.cumsum(rng.random(20_000) < 0.98) % 2).astype(float)
    b = (np.cumsum(rng.random(20_000) < 0.98) % 2).astype(float)
    doc = answer(({"pod": "warm-0"}, list(a)), ({"pod": "warm-1"}, list(b)), step=60)
    assert np.array_equal(read_series(write_json(tmp_path, doc)).values, a + b)


def test_mostly_missing_idle_replicas_are_summed(tmp_path: Path) -> None:
    # found by hypothesis: two replicas at 0 with the same gaps; NaN beside NaN is no change of value
    idle = ["NaN", "NaN", "0"] * 5
    result = [{"metric": {"pod": f"p{k}"}, "values": [[T0 + 60 * i, v] for i, v in enumerate(idle)]} for k in range(2)]
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}), encoding="utf-8")
    assert np.nanmax(read_series(path, step_seconds=60, max_gap_steps=100).values) == 0
