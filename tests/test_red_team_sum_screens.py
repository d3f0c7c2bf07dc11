"""Red team, 2026-12-07, round 21: a total stamped one second off its parts, and a flat series inside a sum.

Both games passed ``check``, the pre-commit hook and ``--diff`` on examples/good with no declaration
changed: embeddings-search's Prometheus answer (picked by ``match``) was rewritten and serving's
``reservedGpus`` raised.

- Game 3: the answer became three ``instance`` series (a random split of every sample) and a
  ``job: federate`` series holding the original total stamped 1 s before them (48 -> 59). The total
  test fitted the times every series shares - none - and the grid carried the total onto its parts.
- Game 4: one more ``instance`` series holding 520 at every sample (48 -> 58; 2600 gave +50). The sum
  still moved, and the sum screens leave alone a series that changes fewer than ten times.

Now :func:`policylint.readers.sum_screens.refuse_offset_total` pairs samples by nearest time and
:func:`policylint.readers.sum_screens.flat_parts` names a part flat at one non-zero value for a day;
both reach the user as PL024 on the trace, as the other sum screens do.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import EXAMPLES, run_cli

from policylint import traces
from policylint.errors import MeasurementError
from policylint.readers.sum_screens import refuse_flat_parts

TRACE = "measurements/traces/embeddings-search.json"
METRIC = {"__name__": "vllm:num_requests_running", "model_name": "bge-m3-embed"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))


def _answer(repo: Path) -> dict:
    return json.loads((repo / TRACE).read_text(encoding="utf-8"))


def _write(repo: Path, answer: dict, reserved: int) -> None:
    (repo / TRACE).write_text(json.dumps(answer, separators=(",", ":")), encoding="utf-8")
    cluster = repo / "clusters" / "prod-east.yaml"
    text = cluster.read_text(encoding="utf-8")
    assert "reservedGpus: 48" in text
    cluster.write_text(text.replace("reservedGpus: 48", f"reservedGpus: {reserved}"), encoding="utf-8")


def _split(samples: list, pods: int = 3, seed: int = 11) -> list[list]:
    """Each sample dealt at random among ``pods`` series at its own time (the red team's split)."""
    rnd = random.Random(seed)
    out: list[list] = [[] for _ in range(pods)]
    for t, v in samples:
        n = int(float(v))
        cuts = sorted(rnd.randint(0, n) for _ in range(pods - 1))
        parts = [b - a for a, b in zip([0, *cuts], [*cuts, n], strict=True)]
        for i, x in enumerate(parts):
            out[i].append([t, str(x)])
    return out


def _pods(split: list[list]) -> list[dict]:
    return [{"metric": {**METRIC, "instance": f"10.0.3.{11 + i}:8000"}, "values": vals} for i, vals in enumerate(split)]


def _pl024(repo: Path, *extra: str) -> tuple[int, list[str]]:
    code, out, err = run_cli(["check", "--format", "json", *extra], cwd=repo)
    assert code in (0, 1), err
    return code, [f["message"] for f in json.loads(out)["findings"] if f["code"] == "PL024"]


# --- game 3: a total stamped off its parts ----------------------------------------------------


def test_a_total_stamped_a_second_before_its_parts_is_refused(repo: Path) -> None:
    answer = _answer(repo)
    samples = answer["data"]["result"][0]["values"]
    federate = {"metric": {**METRIC, "job": "federate"}, "values": [[t - 1, v] for t, v in samples]}
    answer["data"]["result"] = [*_pods(_split(samples)), federate]
    _write(repo, answer, 59)
    code, found = _pl024(repo)
    assert code == 1
    assert any('job="federate"' in m and "is the total of 3 other series" in m for m in found), found
    # the pre-commit hook reads the changed files the same way
    code, found = _pl024(repo, "--changed-files", TRACE, "clusters/prod-east.yaml")
    assert code == 1 and any("is the total of 3 other series" in m for m in found), found


def _answer_file(tmp_path: Path, series: list[tuple[dict, np.ndarray, np.ndarray]]) -> Path:
    result = [{"metric": {"__name__": "inflight", **labels}, "values": [[float(t), str(int(v))] for t, v in zip(ts, vs, strict=True)]}
              for labels, ts, vs in series]
    path = tmp_path / "answer.json"
    path.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}), encoding="utf-8")
    return path


@pytest.fixture
def pods() -> tuple[np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(21)
    times = 1_788_134_400 + np.arange(600, dtype=np.float64) * 300
    return times, [rng.integers(0, 40, size=600).astype(np.float64) for _ in range(3)]


@pytest.mark.parametrize("offset", [-1, 1, -149, 150, -200, 299])
def test_a_total_stamped_within_a_step_of_its_parts_is_refused(tmp_path: Path, pods, offset: int) -> None:
    times, values = pods
    series = [({"pod": f"p{i}"}, times, v) for i, v in enumerate(values)]
    path = _answer_file(tmp_path, [*series, ({"job": "federate"}, times + offset, values[0] + values[1] + values[2])])
    with pytest.raises(MeasurementError, match=r'job="federate"\} is the total of 3 other series'):
        traces.read_series(path)


def test_a_subtotal_stamped_off_its_parts_is_refused(tmp_path: Path, pods) -> None:
    times, values = pods
    series = [({"pod": f"p{i}"}, times, v) for i, v in enumerate(values)]
    path = _answer_file(tmp_path, [*series, ({"zone": "a"}, times - 7, values[0] + values[1])])
    with pytest.raises(MeasurementError, match=r"is the total of 2 of the other series"):
        traces.read_series(path)


def test_honest_pods_are_summed(tmp_path: Path, pods) -> None:
    """Pods split without a total, pods scraped half a step and a third of a step apart, a total alone."""
    times, values = pods
    total = values[0] + values[1] + values[2]
    aligned = _answer_file(tmp_path, [({"pod": f"p{i}"}, times, v) for i, v in enumerate(values)])
    assert np.array_equal(traces.read_series(aligned).values, total)
    apart = _answer_file(tmp_path, [({"pod": f"p{i}"}, times + 100 * i, v) for i, v in enumerate(values)])
    assert traces.read_series(apart).valid.any()
    half = _answer_file(tmp_path, [({"pod": f"p{i}"}, times + 150 * (i % 2), v) for i, v in enumerate(values)])
    assert traces.read_series(half).valid.any()
    alone = _answer_file(tmp_path, [({"job": "federate"}, times - 1, total)])
    assert np.array_equal(traces.read_series(alone).values, total)
    # a fourth pod whose traffic follows the others' sum loosely, a second off: a pod, not their total
    loose = np.clip(total + np.random.default_rng(3).integers(-3, 4, size=total.size), 0, None)
    four = _answer_file(tmp_path, [*[({"pod": f"p{i}"}, times, v) for i, v in enumerate(values)],
                                   ({"pod": "p3"}, times - 1, loose)])
    assert traces.read_series(four).valid.any()


# --- game 4: a flat series inside a sum ---------------------------------------------------------


@pytest.mark.parametrize("level", [520, 2600])
def test_a_flat_series_summed_into_an_answer_is_refused(repo: Path, level: int) -> None:
    answer = _answer(repo)
    samples = answer["data"]["result"][0]["values"]
    answer["data"]["result"].append({"metric": {**METRIC, "instance": "10.0.3.19:8000"},
                                     "values": [[t, str(level)] for t, _ in samples]})
    _write(repo, answer, 58 if level == 520 else 98)
    code, found = _pl024(repo)
    assert code == 1
    assert any('instance="10.0.3.19:8000"' in m and f"holds {level} from" in m for m in found), found


def test_a_part_flat_for_days_with_a_few_steps_is_refused(tmp_path: Path, pods) -> None:
    """Nine changes in a quarter (a step a week) are no more a measurement than none."""
    times, values = pods
    long_times = 1_788_134_400 + np.arange(26_496, dtype=np.float64) * 300
    busy = np.random.default_rng(5).integers(0, 40, size=long_times.size).astype(np.float64)
    steps = 500 + 10 * (np.arange(long_times.size) // 2_650)  # nine changes, ten days each
    path = _answer_file(tmp_path, [({"pod": "p0"}, long_times, busy), ({"pod": "stuck"}, long_times, steps)])
    series = traces.read_series(path)  # the reader reads it: a VRAM trace may sum flat parts
    assert len(series.flat_parts) == 1 and 'pod="stuck"' in series.flat_parts[0]
    with pytest.raises(MeasurementError, match=r'pod="stuck"\} holds 5\d0 .* for 100% of its 92.0 days \(9 changes in all\)'):
        refuse_flat_parts(series)


def test_idle_replicas_at_zero_and_short_lived_flat_pods_are_summed(tmp_path: Path) -> None:
    long_times = 1_788_134_400 + np.arange(2_000, dtype=np.float64) * 300
    busy = np.random.default_rng(6).integers(0, 40, size=long_times.size).astype(np.float64)
    idle = np.zeros(long_times.size)
    # a pod that held 3 for ten hours (a saturated replica, then gone): under a day
    short = np.full(120, 3.0)
    path = _answer_file(tmp_path, [({"pod": "p0"}, long_times, busy), ({"pod": "idle"}, long_times, idle),
                                   ({"pod": "short"}, long_times[:120], short)])
    series = traces.read_series(path)
    assert series.flat_parts == ()
    refuse_flat_parts(series)


def test_real_plateaus_are_no_flat_part(tmp_path: Path) -> None:
    """The Helios cluster's columns hold a value for up to 2.7 days at a time (27% of May at most), and a
    busy pod with a two-day plateau in a month is measured: neither is a flat part."""
    helios = Path(__file__).parent / "data" / "helios_vc3sl_2020-05.csv"
    for columns in (["running_gpu_num", "pending_gpu_num"], ["running_gpu_num_less_8", "running_gpu_num_noless_8"]):
        assert traces.read_series(helios, value_columns=columns).flat_parts == ()
    times = 1_788_134_400 + np.arange(30 * 288, dtype=np.float64) * 300
    busy = np.random.default_rng(9).integers(0, 40, size=times.size).astype(np.float64)
    plateau = np.random.default_rng(10).integers(0, 40, size=times.size).astype(np.float64)
    plateau[1000:1000 + 2 * 288] = 17
    path = _answer_file(tmp_path, [({"pod": "p0"}, times, busy), ({"pod": "p1"}, times, plateau)])
    assert traces.read_series(path).flat_parts == ()


def test_a_training_workloads_flat_part_is_a_job_holding_its_gpus(repo: Path) -> None:
    """A training or batch job holds its GPUs for days: its trace's flat parts are demand, not refused."""
    answer = _answer(repo)
    samples = answer["data"]["result"][0]["values"]
    answer["data"]["result"].append({"metric": {**METRIC, "instance": "10.0.3.19:8000"},
                                     "values": [[t, "520"] for t, _ in samples]})
    (repo / TRACE).write_text(json.dumps(answer), encoding="utf-8")
    search = repo / "workloads" / "search.yaml"
    text = search.read_text(encoding="utf-8")
    assert text.count("class: inference") >= 1
    search.write_text(text.replace("class: inference", "class: batch", 1), encoding="utf-8")
    _code, found = _pl024(repo)
    assert not any("holds 520" in m for m in found), found


def test_a_flat_column_of_a_wide_table_and_a_flat_pod_of_a_long_table_are_named(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    n = 400
    times = 1_788_134_400 + np.arange(n) * 300
    busy = rng.integers(0, 40, size=n)
    wide = tmp_path / "wide.csv"
    wide.write_text("timestamp,in_flight,extra\n" + "".join(f"{t},{v},77\n" for t, v in zip(times, busy, strict=True)))
    read = traces.read_series(wide, value_columns=["in_flight", "extra"])
    assert len(read.flat_parts) == 1 and "column extra holds 77" in read.flat_parts[0]
    long = tmp_path / "long.csv"
    long.write_text("timestamp,pod,in_flight\n" + "".join(f"{t},a,{v}\n{t},b,12\n" for t, v in zip(times, busy, strict=True)))
    keyed = traces.read_series(long, key_column="pod", aggregate="sum")
    assert len(keyed.flat_parts) == 1 and "series b holds 12" in keyed.flat_parts[0]


def test_the_examples_stay_clean() -> None:
    code, out, err = run_cli(["check", "--format", "json", str(EXAMPLES / "good")])
    assert code == 0, out
