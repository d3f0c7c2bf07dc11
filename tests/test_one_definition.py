"""One definition per quantity: flat days, job-list conversion, GPU conversion and the window.

Each is computed by one function (``bands.flat_day_test``, the interval reader,
``bands.gpu_counts`` with ``measure.conversion.gpu_conversion``, ``bands.window_days`` and
``bands.MIN_WINDOW_DAYS``); these tests drive ``bands`` and ``check`` on the same
job list and ask for the same figures.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import copy_minirepo, run_cli
from policylint import bands
from policylint.traces import read_jobs, read_series

DAY = 86_400.0
T0 = dt.datetime(2026, 5, 1, tzinfo=dt.timezone.utc).timestamp()


def _job_list(days: int = 100) -> str:
    """Pods shaped like the Alibaba openb list: long pods hold GPUs for weeks, short ones come and go.

    From day 30 to day 60 only the long pods run: the GPU count is constant and
    non-zero all day, which is demand, not a dead exporter. One long pod has no
    end: it was still running when the list was exported.
    """
    rows = ["name,num_gpu,scheduled_time,deletion_time"]
    rows.append(f"long-0,8,{T0:.0f},{T0 + days * DAY:.0f}")
    rows.append(f"long-1,4,{T0 + 5 * DAY:.0f},")  # still running at the export
    rng = np.random.default_rng(7)
    for day in [d for d in range(days) if not 30 <= d < 60]:
        for k in range(6):
            start = T0 + day * DAY + float(rng.integers(0, 80_000))
            rows.append(f"short-{day}-{k},{int(rng.integers(1, 3))},{start:.0f},{start + float(rng.integers(600, 7200)):.0f}")
    return "\n".join(rows) + "\n"


def _bands_json(path: Path, *argv: str) -> dict[str, Any]:
    code, out, err = run_cli(["bands", str(path), *argv, "--format", "json"])
    assert code == 0, err
    document: dict[str, Any] = json.loads(out)
    return document


def _views(repo: Path) -> dict[str, dict[str, Any]]:
    """The facts ``check`` judges, by view label (the Python API the engine uses)."""
    from policylint.cli import build_parser
    from policylint.session import Session

    args = build_parser("check").parse_args(["check", "--no-cache", str(repo)])
    result = Session.from_args(args).lint()
    return {v.label: v.facts for v in result.views}


@pytest.fixture(scope="module")
def jobs_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small repository with offline-scoring traced by a GPU job list."""
    from conftest import minirepo_path

    repo = copy_minirepo(tmp_path_factory.mktemp("jobs") / "repo", minirepo_path())
    (repo / "measurements").mkdir(exist_ok=True)
    (repo / "measurements" / "pods.csv").write_text(_job_list(), encoding="utf-8")
    search = repo / "workloads" / "search.yaml"
    text = search.read_text(encoding="utf-8")
    old = (
        "      path: ../measurements/traces/offline-scoring.csv\n"
        "      format: csv\n"
        "      timestampColumn: timestamp\n"
        "      columns: [running_jobs]\n"
    )
    assert text.count(old) == 1
    search.write_text(text.replace(old, (
        "      path: ../measurements/pods.csv\n"
        "      format: jobs\n"
        "      unit: gpus\n"
        "      startColumn: scheduled_time\n"
        "      endColumn: deletion_time\n"
        "      stepSeconds: 60\n"
    )), encoding="utf-8")
    return repo


def test_bands_and_check_leave_out_the_same_flat_days_of_a_job_list(jobs_repo: Path) -> None:
    pods = jobs_repo / "measurements" / "pods.csv"
    cli = _bands_json(pods, "--input-format", "jobs", "--unit", "gpus", "--start-column", "scheduled_time",
                      "--end-column", "deletion_time", "--step", "60", "--cold-start", "900")
    # Thirty days of only the long pods are demand: no flat day at all.
    assert cli["flat_days"] == []
    facts = _views(jobs_repo)["workload offline-scoring"]
    assert facts["flat_days"] == 0
    # the pod without an end is counted, and both commands say so
    note = "1 job still running at the end of the export was counted until"
    assert cli["reading"]["notes"][0].startswith(note)
    code, out, _err = run_cli(["check", "--no-cache", "--format", "json", "--exit-zero", str(jobs_repo)])
    assert [f["severity"] for f in json.loads(out)["findings"] if f["code"] == "PL025" and note in f["message"]] == ["info"]
    assert facts["window_days"] == cli["window_days"]
    assert facts["cold_start_window_seconds"] == cli["cold_start_seconds"] == 900
    for band in ("baseline", "daily", "peak"):
        assert facts[band] == cli["bands"][band], band
        assert facts[f"{band}_gpus"] == cli["bands"][band], band  # GPUs already: no second conversion


def test_pooled_workload_table_converts_a_gpu_trace_once(jobs_repo: Path) -> None:
    code, out, err = run_cli(["bands", "--pool", "prod-east/batch", str(jobs_repo), "--format", "json", "--no-cache"])
    if code == 2 and "--no-cache" in err:
        code, out, err = run_cli(["bands", "--pool", "prod-east/batch", str(jobs_repo), "--format", "json"])
    assert code == 0, err
    pooled = json.loads(out)
    facts = _views(jobs_repo)["workload offline-scoring"]
    text = json.dumps(pooled)
    assert "offline-scoring" in text
    own = _find(pooled, "offline-scoring")
    assert own["bands_gpus"]["baseline"] == facts["baseline_gpus"]
    assert own["bands_gpus"]["peak"] == facts["peak_gpus"]


def _find(document: Any, name: str) -> dict[str, Any]:
    """The first mapping under ``name`` anywhere in ``document``."""
    if isinstance(document, dict):
        if isinstance(document.get(name), dict):
            found: dict[str, Any] = document[name]
            return found
        for value in document.values():
            try:
                return _find(value, name)
            except KeyError:
                pass
    if isinstance(document, list):
        for value in document:
            try:
                return _find(value, name)
            except KeyError:
                pass
    raise KeyError(name)


def test_still_running_jobs_count_until_the_end_of_the_trace(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("start,end,gpus\n2026-01-01T00:00:00Z,2026-01-01T01:00:00Z,1\n"
                    "2026-01-01T00:10:00Z,,8\n2026-01-01T00:20:00Z,2026-01-01T02:00:00Z,2\n", encoding="utf-8")
    note = "1 job still running at the end of the export was counted until 2026-01-01T02:00:00Z (the end of the trace)"
    series = read_series(path, format="jobs", unit="gpus", step_seconds=60)
    assert series.notes == (note,)
    # the running job holds its 8 GPUs from 00:10 to the end
    assert series.values[series.times == T0_2026 + 3600].tolist() == [10.0]
    assert series.values[-2] == 10.0
    jobs = read_jobs(path)
    assert jobs.durations.tolist() == [3600.0, 6600.0, 6000.0]
    assert jobs.notes == (note,)
    cli = _bands_json(path, "--input-format", "jobs", "--unit", "gpus", "--step", "60", "--cold-start", "120",
                      "--min-window-days", "0")
    assert cli["reading"]["notes"] == [note]
    code, out, _err = run_cli(["bands", str(path), "--input-format", "jobs", "--step", "60", "--cold-start", "120"])
    assert code == 0
    assert f"read: {note}" in out


T0_2026 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc).timestamp()


def test_a_running_request_in_a_duration_log_runs_to_the_end(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("start,duration_ms\n1700000000,1500\n1700000001,\n1700000004,2000\n", encoding="utf-8")
    jobs = read_jobs(path)
    # written durations are kept bit for bit; the running one lasts until 1700000006
    assert jobs.durations.tolist() == [1.5, 5.0, 2.0]
    assert "counted until" in jobs.notes[0]


def test_an_empty_start_is_still_incomplete(tmp_path: Path) -> None:
    from policylint.errors import MeasurementError

    path = tmp_path / "j.csv"
    path.write_text("start,end\n0,5\n,9\n", encoding="utf-8")
    with pytest.raises(MeasurementError, match="column 'start' is empty in this row") as err:
        read_jobs(path)
    assert err.value.row == 3
    assert read_jobs(path, skip_incomplete=True).notes == ("1 row skipped: empty start",)


def test_flat_day_test_follows_the_series() -> None:
    times = T0 + np.arange(0, 5 * DAY, 300.0)
    sampled = bands.Series(times, np.full(times.size, 3.0), np.ones(times.size, bool), 300.0, "x", (),
                           float(times[0]), float(times[-1]))
    rebuilt = bands.Series(times, np.full(times.size, 3.0), np.ones(times.size, bool), 300.0, "x", (),
                           float(times[0]), float(times[-1]), from_intervals=True)
    assert bands.flat_day_test(sampled) == "constant"
    assert bands.flat_day_test(rebuilt) == "empty"
    assert bands.flat_day_test(rebuilt, "constant") == "constant"
    assert bands.flat_days(times, sampled.values).size == 5
    with pytest.raises(bands.MeasurementError, match="constant on every one"):
        bands.analyse(sampled)
    # rebuilt from intervals, three GPUs all day is three jobs running all day
    assert bands.analyse(rebuilt).flat_days == ()


def test_one_gpu_conversion() -> None:
    from policylint.measure.pooled import gpu_demand

    c = np.array([[0.0, 1.0, 10.0, 10.1, np.nan], [3.0, 4.0, 5.0, 6.0, 7.0]])
    expected = bands.gpu_counts(c, np.array([10.0, 2.0]), np.array([2, 1]))
    assert np.array_equal(gpu_demand(c, np.array([10.0, 2.0]), np.array([2, 1])), expected, equal_nan=True)
    assert expected[0].tolist()[:4] == [0.0, 2.0, 2.0, 4.0]
    assert bands.gpus_for(c[1], 2.0).tolist() == [2, 2, 3, 3, 4]
    with pytest.raises(bands.PolicylintError, match="concurrency per GPU must be positive"):
        bands.gpu_counts(c, 0.0)


def test_one_window() -> None:
    assert bands.BandSettings().min_window_days == bands.MIN_WINDOW_DAYS == 90.0
    assert bands.window_days(25_920, 300.0) == 90.0
    from policylint.cli import build_parser

    args = build_parser("bands").parse_args(["bands", "x.csv"])
    assert args.min_window_days is None  # the command falls back to bands.MIN_WINDOW_DAYS


def test_the_rules_window_is_the_calculators() -> None:
    from policylint.resources import rules_dir
    from policylint.engine.ruleset import load_rules

    params = load_rules([rules_dir()]).params
    assert params["PL106"]["min_window_days"] == bands.MIN_WINDOW_DAYS
    assert params["PL112"]["min_window_days"] == bands.MIN_WINDOW_DAYS


def test_bands_holds_a_trace_to_the_window_check_holds_it_to(jobs_repo: Path, tmp_path: Path) -> None:
    import shutil

    repo = Path(shutil.copytree(jobs_repo, tmp_path / "repo"))
    pods = repo / "measurements" / "pods.csv"
    args = ["--input-format", "jobs", "--unit", "gpus", "--start-column", "scheduled_time",
            "--end-column", "deletion_time", "--step", "60"]
    # 100 days of pods: the framework's 90 days are met, a configured 120 are not
    assert _bands_json(pods, *args)["meets_window"] is True
    config = repo / ".policylint.yaml"
    config.write_text(config.read_text(encoding="utf-8") + "rules:\n  PL106: {min_window_days: 120}\n", encoding="utf-8")
    cli = _bands_json(pods, *args)
    assert (cli["min_window_days"], cli["meets_window"]) == (120, False)
    assert _bands_json(pods, *args, "--min-window-days", "30")["meets_window"] is True
    code, out, _err = run_cli(["check", "--no-cache", "--format", "json", "--exit-zero", str(repo)])
    short = [f for f in json.loads(out)["findings"] if f["code"] == "PL106"]
    ours = [f["message"] for f in short if "offline-scoring" in f["message"]]
    assert len(ours) == 1 and "fewer than the 120 required" in ours[0]


def test_review_page_shows_the_conversion_a_gpu_trace_got(jobs_repo: Path, tmp_path: Path) -> None:
    """The proposal's workload table writes the GPU arithmetic the engine did, not a generic one.

    A GPU-weighted job list is GPU demand already: the page must not claim it was
    divided by the per-GPU concurrency, while a concurrency trace's row still shows
    the division.
    """
    repo = copy_minirepo(tmp_path / "repo", jobs_repo)
    (repo / "proposals" / "batch.yaml").write_text(
        "apiVersion: policylint/v1\nkind: Proposal\nmetadata:\n  name: batch-more\n  team: search\n"
        "spec:\n  cluster: prod-east\n  date: \"2026-11-20\"\n  requests:\n"
        "    - pool: batch\n      gpus: 2\n      gpuModel: H100-SXM-80GB\n"
        "  workloads: [offline-scoring]\n  justification: more nightly scoring\n",
        encoding="utf-8",
    )
    page_file = tmp_path / "page.html"
    code, _out, err = run_cli(["report", "--html", str(page_file), str(repo)])
    assert code in (0, 1), err
    page = page_file.read_text(encoding="utf-8")
    rows = dict(re.findall(r'<tr data-workload="([^"]+)" data-baseline-gpus="[^"]*">(.*?)</tr>', page))
    assert "no conversion" in rows["offline-scoring"]
    assert "/ " not in re.sub(r"<[^>]+>", "", rows["offline-scoring"]).split("(the trace")[0]
    assert "/ 10⌉" in rows["chat-assistant"] and "no conversion" not in rows["chat-assistant"]


def test_gpus_per_replica_written_as_a_whole_float_is_read_as_its_number(tmp_path: Path) -> None:
    """``gpusPerReplica: 2.0`` passes the schema's integer; the conversion read it as 1 (half the GPU demand)
    while PL403's view read it as 2. One reading now: the run is the one ``2`` gives, figure for figure."""
    import shutil

    from conftest import EXAMPLES

    from policylint.measure.conversion import declared_gpus_per_replica

    assert [declared_gpus_per_replica({"gpusPerReplica": v}) for v in (2, 2.0, 8.0, True, 2.5, 0, "2")] == [2, 2, 8, 1, 1, 1, 1]
    assert declared_gpus_per_replica({}) == 1
    outputs = []
    for written in ("gpusPerReplica: 2\n", "gpusPerReplica: 2.0\n"):
        repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / written.strip().replace(": ", "-")))
        research = repo / "workloads" / "research.yaml"
        text = research.read_text(encoding="utf-8")
        assert text.count("  gpusPerReplica: 2\n") == 1
        research.write_text(text.replace("  gpusPerReplica: 2\n", "  " + written), encoding="utf-8")
        code, out, err = run_cli(["check", "--format", "json", "--no-cache", "--now", "2026-12-01", "."], cwd=repo)
        pooled = run_cli(["bands", "--pool", "prod-east/batch", "--format", "json", "."], cwd=repo)
        outputs.append((code, out, err, pooled))
    assert outputs[0] == outputs[1]
    assert json.loads(outputs[1][3][1])["pooled"]["bands_gpus"]["baseline"] == 20


_COUNTS = ("reservedGpus", "maxGpus", "bufferGpus", "gpusPerReplica", "coldStartSeconds", "maxDepth", "gpus",
           "maxQueueSeconds", "maxWaitSeconds", "residentGiB", "memoryGiB", "p50Seconds", "p90Seconds", "p99Seconds")


def _as_floats(repo: Path) -> int:
    """Write every whole count of the repository's YAML as a float (``392`` -> ``392.0``); how many were rewritten."""
    done = 0
    for path in sorted(repo.rglob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        for key in _COUNTS:
            text, n = re.subn(rf"(\b{key}: )(\d+)(\s*[,}}\n#])", r"\g<1>\g<2>.0\g<3>", text)
            done += n
        path.write_text(text, encoding="utf-8")
    return done


@pytest.mark.parametrize("example", ["good", "bad"])
def test_counts_written_as_whole_floats_give_the_same_run_plan_and_fixes(tmp_path: Path, example: str) -> None:
    """Found 2026-12-07: ``gpus: 5.0`` was 0 proposed GPUs in plan (5 in check), ``bufferGpus: 64.0`` no buffer
    in the views, ``reservedGpus: 392.0`` unknown at a --diff base, and no fix was offered on such a value."""
    import shutil

    from conftest import EXAMPLES

    runs = []
    for kind in ("int", "float"):
        repo = Path(shutil.copytree(EXAMPLES / example, tmp_path / kind))
        cluster = repo / "clusters" / "train-central.yaml"
        if example == "good":  # a buffer the preempting training pool does not need (PL603, with a fix)
            text = cluster.read_text(encoding="utf-8")
            assert text.count("      reservedGpus: 392\n") == 1
            cluster.write_text(text.replace("      reservedGpus: 392\n", "      reservedGpus: 392\n      bufferGpus: 64\n"),
                               encoding="utf-8")
        if kind == "float":
            assert _as_floats(repo) > 40
        check = run_cli(["check", "--format", "json", "--no-cache", "--now", "2026-12-01", "."], cwd=repo)
        plan = run_cli(["plan", "--now", "2026-12-01", "."], cwd=repo)
        run_cli(["check", "--fix", "--no-cache", "--now", "2026-12-01", "."], cwd=repo)
        fixed = run_cli(["check", "--format", "json", "--no-cache", "--now", "2026-12-01", "."], cwd=repo)
        runs.append((check, plan, fixed))
    (check, plan, fixed), (check_f, plan_f, fixed_f) = runs
    assert check[0] == 1 and json.loads(check[1])["summary"]["fixable"] > 0
    assert check_f == check
    assert plan_f == plan
    assert fixed_f == fixed
