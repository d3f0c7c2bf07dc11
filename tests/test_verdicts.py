"""Queue verdicts follow the figures their messages state (PL203, PL207, PL208), through the CLI.

- PL207 is an error only when the pool's queue really turns daily-band work away (its
  ``max_rejected_share``, default 0); a wait limit that is only tighter than a tolerance is
  PL208, a warning whose severity is configured on its own.
- PL203 judges the wait the pool's queue can impose - capped by ``queue.maxWaitSeconds`` -
  and reports one finding per pool, naming the workloads that cannot wait that long.
- A share of work prints with enough digits never to read 0% (or 100%) unless it is exactly that.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import REPO, run_cli

from policylint.engine.checks import format_share

FIXTURES = REPO / "tests" / "rules"
NOW = ["--now", "2026-12-01", "--root", "."]


def _case(tmp_path: Path, text: str, config: str = "") -> Path:
    """A one-file repository whose traces (``../../_traces/``) are the rule fixtures' shared ones."""
    root = tmp_path / "root"
    shutil.copytree(FIXTURES / "_traces", root / "_traces")
    folder = root / "t" / "case"
    folder.mkdir(parents=True)
    (folder / "repo.yaml").write_text(text, encoding="utf-8")
    if config:
        (root / ".policylint.yaml").write_text(config, encoding="utf-8")
    return root


def _check(root: Path, *extra: str) -> tuple[int, list[dict[str, object]]]:
    selected = ["--select", "PL203,PL207,PL208"]
    code, out, err = run_cli(["check", "t/case", "--format", "json", *NOW, *selected, *extra], cwd=root)
    assert code in (0, 1), err
    return code, [f for f in json.loads(out)["findings"] if str(f["code"]) in {"PL203", "PL207", "PL208"}]


def _fixture(path: str) -> str:
    return (FIXTURES / path).read_text(encoding="utf-8").replace("  # expect: PL203", "").replace("  # expect: PL207", "").replace("  # expect: PL208", "")


# -- the share formatter ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("share", "text"),
    [
        (0.0, "0%"),
        (1.0, "100%"),
        (0.274204, "27.4%"),
        (0.0124, "1.2%"),
        (0.000578, "0.058%"),
        (0.0000578, "0.0058%"),
        (0.99996, "99.996%"),
        (None, "unknown"),
    ],
)
def test_share_formatting(share: float | None, text: str) -> None:
    assert format_share(share) == text


def test_rule_templates_write_shares_with_the_same_function() -> None:
    from policylint.engine.messages import render

    assert render("{s:share} turned away", {"s": 0.0000578}) == "0.0058% turned away"
    assert render("{s:share}", {"s": None}) == "unknown"


@given(st.floats(min_value=0, max_value=1, exclude_min=True, exclude_max=True))
def test_a_share_strictly_between_0_and_1_never_prints_as_0_or_100(share: float) -> None:
    text = format_share(share)
    assert text.endswith("%")
    assert 0 < float(text[:-1]) < 100


# -- PL207 / PL208 ----------------------------------------------------------------------------------


def test_a_limit_that_turns_work_away_is_an_error_naming_the_pools_share(tmp_path: Path) -> None:
    root = _case(tmp_path, _fixture("PL207/fail/repo.yaml"))
    code, found = _check(root)
    assert code == 1
    (finding,) = [f for f in found if f["code"] == "PL207"]
    assert finding["severity"] == "error"
    assert finding["message"] == (
        "pool prod/serving turns away queued work after 2 s, and at the measured demand that is 32.0% of its pooled"
        " daily-band work, although chat (60 s) could wait longer: work that could wait is turned away, and capacity"
        " gets bought for it"
    )
    assert "PL208" not in {f["code"] for f in found}


def test_a_limit_only_tighter_than_a_tolerance_is_a_warning(tmp_path: Path) -> None:
    root = _case(tmp_path, _fixture("PL208/fail/repo.yaml"))
    code, found = _check(root, "--fail-on", "error")
    assert (code, [(f["code"], f["severity"]) for f in found]) == (0, [("PL208", "warning")])
    assert found[0]["message"] == (
        "pool shifts/shared turns away queued work after 60 s, although night-batch (1800 s) could wait longer;"
        " at the measured demand it turns away 0% of the pool's daily-band work"
    )


def test_the_warning_keeps_a_configured_severity(tmp_path: Path) -> None:
    root = _case(tmp_path, _fixture("PL208/fail/repo.yaml"), "rules: {PL208: {severity: error}}\n")
    code, found = _check(root, "--fail-on", "error")
    assert (code, [(f["code"], f["severity"]) for f in found]) == (1, [("PL208", "error")])


def test_an_accepted_share_makes_the_error_a_warning(tmp_path: Path) -> None:
    """``max_rejected_share`` (set on both halves) moves a 32% rejection from PL207 to PL208."""
    config = "rules: {PL207: {max_rejected_share: 0.5}, PL208: {max_rejected_share: 0.5}}\n"
    root = _case(tmp_path, _fixture("PL207/fail/repo.yaml"), config)
    code, found = _check(root)
    assert [(f["code"], f["severity"]) for f in found if f["code"] != "PL203"] == [("PL208", "warning")]
    (warning,) = [f for f in found if f["code"] == "PL208"]
    assert str(warning["message"]).endswith("at the measured demand it turns away 32.0% of the pool's daily-band work")


def _small_share_pool() -> str:
    """One batch workload with many GPUs per job, 10 GPUs short of its daily band of 2100, limit 130 s."""
    cluster, _, night = _fixture("PL203/fail/pooled.yaml").split("---\n")
    cluster = cluster.replace("reservedGpus: 20", "reservedGpus: 2090").replace("maxWaitSeconds: 60}", "maxWaitSeconds: 130}")
    return cluster + "---\n" + night.replace("perGpuConcurrency: {value: 1,", "perGpuConcurrency: {value: 0.01,")


def test_a_small_share_is_printed_with_its_digits(tmp_path: Path) -> None:
    """A real rejection of 0.0058% used to print as 0.0%; any share above 0 makes PL207 an error."""
    root = _case(tmp_path, _small_share_pool())
    code, found = _check(root)
    (finding,) = [f for f in found if f["code"] == "PL207"]
    assert code == 1 and finding["severity"] == "error"
    assert "that is 0.0058% of its pooled daily-band work" in str(finding["message"])


# -- PL203 ------------------------------------------------------------------------------------------


def test_one_pool_problem_is_one_finding_naming_the_workloads(tmp_path: Path) -> None:
    """Without a wait limit the backlog of a pool 3 GPUs short never drains: both workloads wait too long."""
    text = _fixture("PL203/fail/pooled.yaml").replace("queue: {maxDepth: 100, maxWaitSeconds: 60}", "queue: {maxDepth: 100}")
    root = _case(tmp_path, text)
    code, found = _check(root)
    assert code == 1
    (finding,) = found
    assert (finding["code"], finding["subject"], finding["path"]) == ("PL203", "pool shifts/shared", "spec/pools/0/elastic")
    assert str(finding["message"]).startswith("pool shifts/shared keeps its pooled daily-band demand waiting up to ")
    assert str(finding["message"]).endswith("longer than day-service (30 s), night-batch (1800 s) can wait")


def test_the_wait_judged_is_capped_by_the_queues_limit(tmp_path: Path) -> None:
    """With a 60 s limit nobody waits longer than 60 s: only the 30 s workload is named, and what is turned away is said."""
    root = _case(tmp_path, _fixture("PL203/fail/pooled.yaml"))
    _, found = _check(root)
    (pl203,) = [f for f in found if f["code"] == "PL203"]
    assert pl203["message"] == (
        "pool shifts/shared keeps its pooled daily-band demand waiting up to 60.0 s at 20 GPUs (reserved + elastic),"
        " longer than day-service (30 s) can wait; that is its wait limit: past it the queue turns away 9.1% of the"
        " pool's daily-band work (without the limit the wait would reach 794700.0 s)"
    )
    # the work the limit turns away is PL207's, for the workload that could have waited
    (pl207,) = [f for f in found if f["code"] == "PL207"]
    assert "night-batch (1800 s) could wait longer" in str(pl207["message"])


def test_a_limit_at_the_tolerance_is_not_a_wait_beyond_it(tmp_path: Path) -> None:
    """An unbounded queue would wait for days, but the queue gives up at the 2 s the work tolerates: no PL203."""
    root = _case(tmp_path, _fixture("PL203/pass/capped.yaml"))
    _, found = _check(root)
    assert found == []
    code, out, _ = run_cli(["check", "t/case", *NOW, "--select", "PL205"], cwd=root)
    assert code == 1 and "PL205" in out  # the work turned away is a rejecting pool short of its daily band
