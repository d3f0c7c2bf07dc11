"""Trace readers wired to declarations and configuration.

The configuration's ``limits.max-trace-*`` keys reach the readers in ``check``
and ``bands``; a measurement block's ``format`` (Parquet, Arrow), ``timestampUnit``,
``durationUnit`` and ``timeOrigin`` reach them too. Every test works on a copy of
``examples/good`` when it needs its job lists or its Prometheus export, else on a
copy of the small shared repository (tests/data/minirepo); both pin ``now``.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import EXAMPLES, copy_minirepo, run_cli
from fixture_helpers import MINI_POOLS

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
CHAT_TRACE = "../measurements/traces/chat-assistant.csv"
PRODUCT = Path("workloads/product-ai.yaml")
RESEARCH = Path("workloads/research.yaml")


def make_repo(tmp_path: Path, name: str = "repo") -> Path:
    repo = tmp_path / name
    shutil.copytree(EXAMPLES / "good", repo)
    return repo


def make_mini(tmp_path: Path, name: str = "repo") -> Path:
    """A copy of the small shared repository (its chat-assistant trace is a CSV like the examples')."""
    return copy_minirepo(tmp_path / name)


def configure(repo: Path, extra: str) -> None:
    (repo / ".policylint.yaml").write_text('now: "2026-12-01"\nselect: [PL0]\nrules: {PL977: {accept: "select=PL0"}}\n' + extra, encoding="utf-8")


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")


def check(repo: Path) -> tuple[int, list[dict[str, Any]], str]:
    code, out, err = run_cli(["check", "--format", "json"], cwd=repo)
    return code, (json.loads(out)["findings"] if out else []), err


def measured(repo: Path) -> dict[str, Any]:
    """Facts of every workload of ``repo``, measured as ``check`` measures them."""
    from policylint.engine.linter import LintOptions, lint
    from policylint.measure.run import measure

    result = lint([repo], LintOptions(root=repo, now=NOW))
    assert result.model is not None
    facts, findings = measure(result.model, NOW)
    assert findings == []
    return facts


# --- configuration -------------------------------------------------------------------------


def test_lower_row_limit_makes_the_trace_a_pl024_finding_with_the_limit(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    configure(repo, "")
    code, findings, err = check(repo)
    assert (code, err) == (0, "")
    # The chat trace has 26,496 rows; the pre-training job list 49.
    configure(repo, "limits: {max-trace-rows: 1000}\n")
    code, findings, err = check(repo)
    assert (code, err) == (1, "")
    chat = [f for f in findings if f["file"] == str(PRODUCT) and f["line"] == 19]
    assert [f["code"] for f in chat] == ["PL024"]
    assert "chat-assistant.csv: more than 1,000 rows" in chat[0]["message"]
    assert "limits.max-trace-rows" in chat[0]["message"]
    # A job list under the limit is still read.
    assert not [f for f in findings if "pre-training.csv" in f["message"]]


def test_grid_and_byte_limits_reach_the_readers(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    configure(repo, "limits: {max-grid-samples: 1000}\n")
    _, findings, _ = check(repo)
    messages = [f["message"] for f in findings if f["code"] == "PL024"]
    assert any("chat-assistant.csv: trace spans" in m and "limit 1,000" in m for m in messages)
    configure(repo, "limits: {max-trace-bytes: 4096}\n")
    _, findings, _ = check(repo)
    messages = [f["message"] for f in findings if f["code"] == "PL024"]
    assert any("more than the 4,096-byte limit for a trace" in m for m in messages)
    # The Prometheus answer is held to the lower figure too.
    assert any("embeddings-search.json" in m and "4,096-byte limit" in m for m in messages)


def test_bands_command_reads_within_the_configured_limits(tmp_path: Path) -> None:
    repo = make_mini(tmp_path)
    configure(repo, "limits: {max-trace-rows: 1000}\n")
    trace = repo / "measurements" / "traces" / "chat-assistant.csv"
    code, out, err = run_cli(["bands", str(trace), "--format", "json"], cwd=repo)
    assert (code, out) == (2, "")
    assert err.startswith("policylint: error: ") and "more than 1,000 rows" in err
    assert err.count("\n") == 1
    configure(repo, "")
    code, out, _ = run_cli(["bands", str(trace), "--format", "json"], cwd=repo)
    assert code == 0 and json.loads(out)["bands"]["baseline"] == float(MINI_POOLS["serving"]["chat-assistant"][0])


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("max-trace-rows: 0", "must be >= 1, got 0"),
        ("max-grid-samples: 1000000000", "must be <= 100000000, got 1000000000"),
        ("max-trace-bytes: lots", "must be a whole number, got 'lots'"),
    ],
)
def test_bad_trace_limit_stops_the_run_naming_the_key(tmp_path: Path, setting: str, message: str) -> None:
    repo = make_mini(tmp_path)
    configure(repo, f"limits: {{{setting}}}\n")
    key = setting.split(":")[0]
    path = (repo / ".policylint.yaml").resolve()
    for command in (["check"], ["config"], ["bands", "measurements/traces/chat-assistant.csv"]):
        code, out, err = run_cli(command, cwd=repo)
        assert (code, out, err) == (2, "", f"policylint: error: {path.name}:4:10 at key 'limits.{key}': {message}\n")


# --- declarations ----------------------------------------------------------------------------


def _write_table(csv_path: Path, target: Path, *, typed_time: bool) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.feather as feather
    import pyarrow.parquet as pq

    table = pacsv.read_csv(csv_path)
    if typed_time:
        stamps = table.column("timestamp").cast(pa.int64()).cast(pa.timestamp("s", tz="UTC"))
        table = table.set_column(0, "timestamp", stamps)
    if target.suffix == ".parquet":
        pq.write_table(table, target)
    else:
        feather.write_feather(table, target)


@pytest.mark.parametrize(
    ("suffix", "fmt", "typed_time"),
    [(".parquet", "parquet", False), (".parquet", "parquet", True), (".arrow", "arrow", True), (".parquet", "auto", False)],
    ids=["parquet-epoch", "parquet-typed", "arrow-typed", "parquet-auto"],
)
def test_parquet_and_arrow_traces_measure_the_same_bands_as_csv(
    tmp_path: Path, suffix: str, fmt: str, typed_time: bool
) -> None:
    csv_repo = make_mini(tmp_path, "csv")
    repo = make_mini(tmp_path, "table")
    traces = repo / "measurements" / "traces"
    _write_table(traces / "chat-assistant.csv", traces / f"chat-assistant{suffix}", typed_time=typed_time)
    (traces / "chat-assistant.csv").unlink()
    edit(
        repo / PRODUCT,
        f"      path: {CHAT_TRACE}\n      format: csv\n",
        f"      path: ../measurements/traces/chat-assistant{suffix}\n      format: {fmt}\n",
    )
    expected = measured(csv_repo)["chat-assistant"]
    got = measured(repo)["chat-assistant"]
    assert got.report is not None and expected.report is not None
    assert got.report.to_dict() | {"source": None} == expected.report.to_dict() | {"source": None}
    assert got.last_sample == expected.last_sample
    code, findings, err = check(repo)
    assert (code, findings, err) == (0, [], "")


def test_relative_job_list_with_time_origin_reads_as_the_absolute_one(tmp_path: Path) -> None:
    absolute = make_repo(tmp_path, "absolute")
    repo = make_repo(tmp_path, "relative")
    jobs = repo / "measurements" / "jobs" / "pre-training.csv"
    origin = 1787961600  # 2026-08-29T00:00:00Z, before the first job starts
    lines = jobs.read_text(encoding="utf-8").splitlines()
    rows = [lines[0]]
    for line in lines[1:]:
        job, start, end, gpus = line.split(",")
        rows.append(f"{job},{int(start) - origin},{int(end) - origin},{gpus}")
    jobs.write_text("\n".join(rows) + "\n", encoding="utf-8")
    origin_text = dt.datetime.fromtimestamp(origin, tz=dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert origin_text == "2026-08-29T00:00:00Z"
    text = (repo / RESEARCH).read_text(encoding="utf-8")
    block = "      path: ../measurements/jobs/pre-training.csv\n      format: jobs\n"
    assert text.count(block) == 2  # the concurrency trace and the durations job list
    (repo / RESEARCH).write_text(
        text.replace(block, block + f'      timeOrigin: "{origin_text}"\n      timestampUnit: s\n'), encoding="utf-8"
    )
    expected = measured(absolute)["pre-training"]
    got = measured(repo)["pre-training"]
    assert got.report is not None and expected.report is not None
    assert got.report.to_dict() | {"source": None} == expected.report.to_dict() | {"source": None}
    assert (got.p50, got.p90, got.p99, got.tail_job_gpus) == (expected.p50, expected.p90, expected.p99, expected.tail_job_gpus)
    assert got.p50 is not None
    code, findings, err = check(repo)
    assert (code, findings, err) == (0, [], "")


def _durations_in_ms(repo: Path, column: str) -> None:
    """pre-training's job list with a duration column in milliseconds, named ``column``, in place of its end."""
    jobs = repo / "measurements" / "jobs" / "pre-training.csv"
    lines = jobs.read_text(encoding="utf-8").splitlines()
    rows = [f"job_id,start,{column},gpus"]
    for line in lines[1:]:
        job, start, end, gpus = line.split(",")
        rows.append(f"{job},{start},{(int(end) - int(start)) * 1000},{gpus}")
    jobs.write_text("\n".join(rows) + "\n", encoding="utf-8")


def test_duration_unit_is_passed_to_the_job_reader(tmp_path: Path) -> None:
    absolute = make_repo(tmp_path, "seconds")
    repo = make_repo(tmp_path, "millis")
    _durations_in_ms(repo, "duration")
    block = "      path: ../measurements/jobs/pre-training.csv\n      format: jobs\n      startColumn: start\n"
    for after in ("      endColumn: end\n      stepSeconds: 300\n", "      endColumn: end\n      gpusColumn: gpus\n"):
        # the concurrency trace (a request log) and the durations job list
        edit(repo / RESEARCH, block + after, block + after.replace(
            "endColumn: end\n", "durationColumn: duration\n      durationUnit: ms\n"))
    expected = measured(absolute)["pre-training"]
    got = measured(repo)["pre-training"]
    assert got.report is not None and expected.report is not None
    assert got.report.to_dict() | {"source": None} == expected.report.to_dict() | {"source": None}
    assert (got.p50, got.p99) == (expected.p50, expected.p99)


def test_a_duration_unit_that_contradicts_the_columns_name_is_refused(tmp_path: Path) -> None:
    # red team, 2026-12-07, round 17: `durationUnit: s` on a `duration_ms` column read every job 1000 times longer
    repo = make_repo(tmp_path, "millis")
    _durations_in_ms(repo, "duration_ms")
    block = "      path: ../measurements/jobs/pre-training.csv\n      format: jobs\n      startColumn: start\n"
    after = "      endColumn: end\n      gpusColumn: gpus\n"
    edit(repo / RESEARCH, block + after, block + after.replace(
        "endColumn: end\n", "durationColumn: duration_ms\n      durationUnit: s\n"))
    code, findings, err = check(repo)
    assert code == 1 and err == ""
    refused = [f for f in findings if f["code"] == "PL024" and "durationUnit says 's'" in f["message"]]
    assert refused and "duration_ms" in refused[0]["message"], findings


def test_unknown_timestamp_unit_is_pl010_at_its_line(tmp_path: Path) -> None:
    repo = make_mini(tmp_path)
    configure(repo, "")
    block = f"      path: {CHAT_TRACE}\n      format: csv\n"
    edit(repo / PRODUCT, block, block + "      timestampUnit: hours\n")
    code, findings, err = check(repo)
    assert (code, err) == (1, "")
    lines = (repo / PRODUCT).read_text(encoding="utf-8").splitlines()
    line = lines.index("      timestampUnit: hours") + 1
    bad = [f for f in findings if f["code"] == "PL010"]
    assert [(f["file"], f["line"]) for f in bad] == [(str(PRODUCT), line)]
    assert "hours" in bad[0]["message"]


def test_new_measurement_fields_are_described_in_the_schema() -> None:
    from policylint.resources import load_schema
    from policylint.traces import FORMATS

    defs = load_schema("Workload")["$defs"]
    for name, fields in (("measurement", ("timestampUnit", "durationUnit", "timeOrigin")), ("vramTrace", ("timestampUnit", "timeOrigin"))):
        props = defs[name]["properties"]
        for field in fields:
            assert props[field]["description"], (name, field)
        assert {"parquet", "arrow"} <= set(props["format"]["enum"])
    # Every declared format is one the reader knows.
    assert set(defs["measurement"]["properties"]["format"]["enum"]) <= set(FORMATS)
