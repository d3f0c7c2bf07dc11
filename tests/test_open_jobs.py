"""PL979: jobs with no end that outlast every finished job.

Red team, 2026-12-05 (attempt 26): blanking the end cells of two old 64-GPU pre-training
jobs kept them "running" for 75 days, since a job with no end counts as still running at
the export; the pooled baseline of the training pool rose from 392 to 520 GPUs and only
PL025's info said anything. These tests pin the facts the rule judges, from the reader to
the verdict, with and without the cache.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO, run_cli

from policylint.measure.integrity.workload import open_job_facts
from policylint.traces import read_series

FIXTURES = REPO / "tests" / "rules"
DAY = 86_400
T0 = 1_788_134_400


def _jobs(tmp_path: Path, rows: list[tuple[int, int | None]]) -> Path:
    path = tmp_path / "jobs.csv"
    lines = ["job_id,start,end"] + [f"j{i},{s},{'' if e is None else e}" for i, (s, e) in enumerate(rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_facts_of_a_job_list_with_and_without_open_jobs(tmp_path: Path) -> None:
    finished = [(T0 + i * DAY, T0 + i * DAY + 2 * DAY + i * 3600) for i in range(12)]  # longest: 2 days 11 h
    series = read_series(_jobs(tmp_path, finished), format="jobs", start_column="start", end_column="end", step_seconds=3600)
    assert open_job_facts(series) == {
        "open_jobs": 0, "finished_jobs": 12, "open_job_longest_days": None,
        "finished_job_longest_days": (2 * DAY + 11 * 3600) / DAY, "open_job_ratio": None,
        "trace_job_gpus_p90": None,  # counted by jobs, not weighted by GPUs
    }
    # one job with no end, started on day 1: it runs to the last time the list records (day 13 + 2 d 11 h)
    series = read_series(_jobs(tmp_path, [*finished, (T0 + DAY, None)]), format="jobs", start_column="start",
                         end_column="end", step_seconds=3600)
    last = T0 + 11 * DAY + 2 * DAY + 11 * 3600
    facts = open_job_facts(series)
    assert facts["open_jobs"] == 1 and facts["finished_jobs"] == 12
    assert facts["open_job_longest_days"] == (last - (T0 + DAY)) / DAY
    assert facts["open_job_ratio"] == (last - (T0 + DAY)) / (2 * DAY + 11 * 3600)


def test_a_sampled_trace_has_no_job_facts(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("timestamp,in_flight\n" + "".join(f"{T0 + 300 * i},{i % 7}\n" for i in range(50)), encoding="utf-8")
    assert set(open_job_facts(read_series(path)).values()) == {None}


@pytest.mark.parametrize("cache", [False, True], ids=["no-cache", "cache"])
def test_the_blanked_list_is_reported_and_the_exported_one_passes(tmp_path: Path, cache: bool) -> None:
    repo = tmp_path / "rules"
    shutil.copytree(FIXTURES / "_traces", repo / "_traces")
    shutil.copytree(FIXTURES / "PL979", repo / "PL979")
    (repo / ".policylint.yaml").write_text('now: "2026-12-01"\n', encoding="utf-8")
    args = ["check", "--format", "json", "--select", "PL979", *([] if cache else ["--no-cache"]), "PL979"]
    for _ in range(2 if cache else 1):  # with the cache: the run that fills it, then the one that reads it
        code, out, err = run_cli(args, cwd=repo)
        assert (code, err) == (1, "")
        found = json.loads(out)["findings"]
        assert [(f["code"], f["file"], f["line"]) for f in found] == [("PL979", "PL979/fail/blanked.yaml", 28)]
        assert "the longest has run 77.0 days, 19.4x the longest of its 118 finished jobs (4.0 days; limit 3x)" in found[0]["message"]


def test_a_gpu_weighted_list_says_what_nine_jobs_in_ten_were_weighed_at(tmp_path: Path) -> None:
    """PL982's figure: the 90th percentile of the weighting column, always one job's own value."""
    path = tmp_path / "weighted.csv"
    rows = [f"{T0 + i * 3600},{T0 + i * 3600 + 7200},{16 if i == 19 else 8 if i >= 17 else 2}" for i in range(20)]
    path.write_text("start,end,gpus\n" + "\n".join(rows) + "\n", encoding="utf-8")
    weighted = read_series(path, format="jobs", unit="gpus", step_seconds=600)
    assert open_job_facts(weighted)["trace_job_gpus_p90"] == 8.0  # 17 of 2, 2 of 8, 1 of 16
    counted = read_series(path, format="jobs", step_seconds=600)
    assert open_job_facts(counted)["trace_job_gpus_p90"] is None
