"""One function per definition of the measuring step, and every command showing its figure.

* the cold start: :func:`policylint.measure.cold_start.effective_cold_start` for a
  workload, :func:`~policylint.measure.cold_start.pool_cold_start` for a pool; ``check``,
  ``bands --pool``, ``report --html`` and ``plan`` show the same figures, whether the
  workload's declaration or the pool's elastic one wins;
* the capacity: :func:`policylint.model.pool_capacity` (reserved + elastic), for a
  declared pool, a planned one and ``bands --pool``;
* the GPU conversion skip: :func:`policylint.measure.conversion.counts_gpus`, the one
  test for a trace that counts GPUs already;
* a measurement block's reader arguments: :func:`policylint.measure.reading.reader_arguments`,
  whose every argument the reader it is meant for accepts.
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any

import pytest

from conftest import copy_minirepo, run_cli
from policylint.calc.settings import DEFAULT_COLD_START_SECONDS
from policylint.measure.cold_start import effective_cold_start, pool_cold_start, pool_cold_start_source
from policylint.measure.conversion import conversion_for, counts_gpus
from policylint.measure.reading import READERS, reader_arguments
from policylint.model import MeasurementRef, pool_capacity

NOW = "2026-12-01"


# --------------------------------------------------------------------------- the precedence itself


class _Pool:
    def __init__(self, elastic: dict[str, Any] | None, workloads: list[Any] | None = None) -> None:
        self.spec: dict[str, Any] = {} if elastic is None else {"elastic": elastic}
        self.workloads = workloads or []


class _Workload:
    def __init__(self, name: str, cold: Any, pool: _Pool | None) -> None:
        self.name = name
        self.spec: dict[str, Any] = {} if cold is None else {"coldStartSeconds": cold}
        self.pool = pool


@pytest.mark.parametrize(
    ("declared", "elastic", "expected"),
    [
        (600, {"maxGpus": 4, "coldStartSeconds": 900}, 900.0),  # the GPUs arrive later than the replica starts
        (1200, {"maxGpus": 4, "coldStartSeconds": 900}, 1200.0),  # the replica starts later than the GPUs arrive
        (600, {"maxGpus": 0, "coldStartSeconds": 900}, 600.0),  # no elastic capacity: its cold start does not count
        (600, None, 600.0),
        (None, {"maxGpus": 4, "coldStartSeconds": 900}, 900.0),
        (None, {"maxGpus": 4}, DEFAULT_COLD_START_SECONDS),
        (None, None, DEFAULT_COLD_START_SECONDS),
        (True, None, DEFAULT_COLD_START_SECONDS),  # a boolean is no number of seconds
    ],
)
def test_effective_cold_start_is_the_longer_declaration(declared: Any, elastic: Any, expected: float) -> None:
    pool = _Pool(elastic)
    workload = _Workload("w", declared, pool)
    pool.workloads = [workload]
    assert effective_cold_start(workload) == expected  # type: ignore[arg-type]
    # a pool of one workload has exactly that workload's cold start
    assert pool_cold_start(pool) == expected  # type: ignore[arg-type]


def test_a_pools_cold_start_is_its_slowest_workloads() -> None:
    pool = _Pool({"maxGpus": 4, "coldStartSeconds": 900})
    pool.workloads = [_Workload("a", 600, pool), _Workload("b", 1200, pool)]
    assert pool_cold_start(pool) == 1200.0  # type: ignore[arg-type]
    assert pool_cold_start_source(pool) == "workload b's coldStartSeconds, the slowest of the pool"  # type: ignore[arg-type]
    empty = _Pool({"maxGpus": 4, "coldStartSeconds": 900})
    assert pool_cold_start(empty) == 900.0  # type: ignore[arg-type]
    assert pool_cold_start(_Pool(None)) == DEFAULT_COLD_START_SECONDS  # type: ignore[arg-type]


# --------------------------------------------------------------------------- every command, one figure


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small repository with the serving pool's GPUs slower than its replicas, batch's the other way round."""
    root = copy_minirepo(tmp_path_factory.mktemp("cold") / "repo")
    cluster = root / "clusters" / "prod-east.yaml"
    text = cluster.read_text(encoding="utf-8")
    assert text.count("coldStartSeconds: 900") == 2
    first = text.index("coldStartSeconds: 900")
    second = text.index("coldStartSeconds: 900", first + 1)
    # serving: elastic 1500 s beats chat-assistant's 900 and reranker's 1200; batch: elastic 600 s
    # loses against offline-scoring's 900
    text = text[:first] + "coldStartSeconds: 1500" + text[first + 21 : second] + "coldStartSeconds: 600" + text[second + 21 :]
    cluster.write_text(text, encoding="utf-8")
    (root / ".policylint.yaml").write_text(f'now: "{NOW}"\n', encoding="utf-8")
    return root


def _judged(repo: Path) -> Any:
    from policylint.cli import build_parser
    from policylint.session import Session

    args = build_parser("check").parse_args(["check", "--no-cache", "--now", NOW, str(repo)])
    return Session.from_args(args).lint()


def test_every_command_shows_the_cold_start_the_one_function_decides(repo: Path, tmp_path: Path) -> None:
    result = _judged(repo)
    model = result.model
    workloads = {v.facts["name"]: v.facts for v in result.views if v.subject == "workload"}
    pools = {v.facts["qualified"]: v.facts for v in result.views if v.subject == "pool"}
    expected_workloads = {"chat-assistant": 1500.0, "reranker": 1500.0, "offline-scoring": 900.0}
    expected_pools = {"prod-east/serving": 1500.0, "prod-east/batch": 900.0}
    for name, cold in expected_workloads.items():
        assert effective_cold_start(model.workloads[name]) == cold, name
        assert workloads[name]["cold_start_window_seconds"] == cold, f"check, workload {name}"
    page = tmp_path / "page.html"
    code, _out, err = run_cli(["report", "--html", str(page), "--no-cache", "--now", NOW, str(repo)])
    assert code in (0, 1), err
    html = page.read_text(encoding="utf-8")
    for qualified, cold in expected_pools.items():
        pool = next(p for p in model.pools if p.qualified == qualified)
        assert pool_cold_start(pool) == cold, qualified
        assert pools[qualified]["pooled_cold_start_seconds"] == cold, f"check, pool {qualified}"
        code, out, err = run_cli(["bands", "--pool", qualified, "--format", "json", str(repo)])
        assert code == 0, err
        doc = json.loads(out)
        assert doc["pooled"]["cold_start_seconds"] == cold, f"bands --pool {qualified}"
        for name, entry in doc["workloads"].items():
            assert entry["cold_start_seconds"] == expected_workloads[name], f"bands --pool {qualified}: {name}"
        code, out, err = run_cli(["bands", "--pool", qualified, str(repo)])
        assert code == 0, err
        assert f"cold start {cold:,.0f} s ({pool_cold_start_source(pool)})" in out, out
    # the review page: every cold start it shows is a pool's, and every pool's is shown
    shown = set(re.findall(r"cold start ([\d,]+) s[.,]", html))
    assert shown == {f"{cold:,.0f}" for cold in expected_pools.values()}, f"report --html: {shown}"
    code, out, err = run_cli(["plan", str(repo), "--format", "json"])
    assert code in (0, 1), err
    planned = json.loads(out)["plan"]["pools"]
    assert planned
    for p in planned:
        # a planned pool has no elastic capacity while it is sized: its members' own declarations decide
        members = [model.workloads[n] for n in p["workloads"]]
        declared = max(float(w.spec["coldStartSeconds"]) for w in members)
        assert p["cold_start_seconds"] == declared, f"plan, pool {p['pool']}"


# --------------------------------------------------------------------------- capacity


def test_capacity_is_reserved_plus_elastic_everywhere(repo: Path) -> None:
    from policylint.plan.models import PlannedPool

    assert pool_capacity(48, 10) == 58
    result = _judged(repo)
    for pool in result.model.pools:
        assert pool.capacity_gpus == pool_capacity(pool.reserved_gpus, pool.elastic_gpus)
        code, out, err = run_cli(["bands", "--pool", pool.qualified, "--format", "json", str(repo)])
        assert code == 0, err
        shown = json.loads(out)["capacity"]
        assert shown["total_gpus"] == pool.capacity_gpus == shown["reserved_gpus"] + shown["elastic_gpus"]
    planned = PlannedPool(cluster="c", name="p", cls="inference", gpu={}, tier="t", gang=False, preemption=False,
                          members=("w",), measured=True, reserved=7, elastic=3)
    assert planned.capacity == pool_capacity(7, 3) == 10


# --------------------------------------------------------------------------- GPU conversion


def test_a_trace_counted_in_gpus_is_never_converted() -> None:
    assert counts_gpus("gpus") and not counts_gpus("concurrency") and not counts_gpus(None)
    assert conversion_for("gpus", 10.0, 4) == (1.0, 1)
    assert conversion_for("concurrency", 10.0, 4) == (10.0, 4)
    assert conversion_for("concurrency", None, 2) == (None, 2)


# --------------------------------------------------------------------------- reader arguments


def _ref(spec: dict[str, Any]) -> MeasurementRef:
    return MeasurementRef("w", "concurrency", None, ("spec", "concurrency", "trace"), spec,  # type: ignore[arg-type]
                          Path("t.csv"), "t.csv")


FULL = {
    "path": "t.csv", "format": "csv", "timestampColumn": "ts", "columns": ["a", "b"], "startColumn": "s",
    "endColumn": "e", "durationColumn": "d", "gpusColumn": "g", "unit": "gpus", "match": {"job": "x"},
    "stepSeconds": 60, "timestampUnit": "ms", "durationUnit": "s", "timeOrigin": "2026-01-01",
    "where": {"pod": ["a"]}, "skipIncomplete": True, "key": {"column": "pod", "select": 7, "aggregate": "sum"},
}


def test_one_mapping_from_a_measurement_block_to_each_readers_arguments() -> None:
    from policylint import traces

    readers = {"trace": traces.read_series, "jobs": traces.read_jobs, "series": traces.read_series, "parts": traces.read_parts}
    assert set(readers) == set(READERS)
    for kind, reader in readers.items():
        args = reader_arguments(_ref(FULL), None, kind, columns=["m"])
        accepted = set(inspect.signature(reader).parameters)
        assert set(args) <= accepted, f"{kind}: {sorted(set(args) - accepted)}"
        assert (args["display_name"], args["timestamp_unit"], args["duration_unit"]) == ("t.csv", "ms", "s")
        assert (args["time_origin"], args["where"], args["skip_incomplete"], args["limits"]) == (
            "2026-01-01", {"pod": ["a"]}, True, None
        )
    trace = reader_arguments(_ref(FULL), None, "trace")
    assert trace["value_columns"] == ["a", "b"]
    assert (trace["key_column"], trace["key_select"], trace["aggregate"]) == ("pod", "7", "sum")
    assert (trace["start_column"], trace["end_column"], trace["duration_column"]) == ("s", "e", "d")
    assert (trace["gpus_column"], trace["unit"], trace["match"], trace["step_seconds"]) == ("g", "gpus", {"job": "x"}, 60)
    jobs = reader_arguments(_ref(FULL), None, "jobs")
    assert "format" not in jobs and "value_columns" not in jobs
    assert (jobs["duration_column"], jobs["start_column"], jobs["end_column"], jobs["gpus_column"]) == ("d", "s", "e", "g")
    series = reader_arguments(_ref(FULL), None, "series", columns=["m"])
    assert series["value_columns"] == ["m"] and "key_column" not in series and "unit" not in series
    parts = reader_arguments(_ref(FULL), None, "parts", columns=["m"])
    assert (parts["key_column"], parts["key_select"]) == ("pod", "7") and "aggregate" not in parts
    bare = reader_arguments(_ref({"path": "t.csv"}), None, "trace")
    assert (bare["format"], bare["skip_incomplete"], bare["key_column"], bare["key_select"]) == ("auto", False, None, None)
    with pytest.raises(ValueError, match="unknown reader"):
        reader_arguments(_ref(FULL), None, "csv")


# --------------------------------------------------------------------------- the package's shape


def test_measure_modules_stay_small_and_package_faces_hold_no_code() -> None:
    """Each part of the measuring step fits in one reading, the ``integrity`` package's parts included.

    ``measure/__init__.py`` and ``measure/integrity/__init__.py`` are docstrings only:
    every importer names the module that defines what it uses.
    """
    import ast

    import policylint.measure

    root = Path(policylint.measure.__file__).parent
    long = {
        str(p.relative_to(root)): n
        for p in root.rglob("*.py")
        if "sources" not in p.relative_to(root).parts and (n := len(p.read_text(encoding="utf-8").splitlines())) > 500
    }
    assert not long, f"measure modules over 500 lines: {long}"
    for face_path in (root / "__init__.py", root / "integrity" / "__init__.py"):
        face = ast.parse(face_path.read_text(encoding="utf-8"))
        name = face_path.relative_to(root.parent)
        assert len(face.body) == 1 and ast.get_docstring(face), f"{name} holds code besides its docstring"
