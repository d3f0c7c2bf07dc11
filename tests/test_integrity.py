"""The integrity stage: its pure functions, its facts in every output, and the four gamed plans of issue 24.

The four plans (split proposals, a copied trace, exclusions that shape the series,
samples after now) are run through the real entry point in a repository of their
own, and each must fail with the finding that names its trick.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, run_cli
from fixture_helpers import FIXTURES

from policylint.facts import catalogue
from policylint.measure.integrity.copies import fingerprint, shape_fingerprint
from policylint.measure.integrity.days import repeated_days
from policylint.measure.integrity.resolution import roughness
from policylint.measure.integrity.shaping import recurring_exclusions, shaping
from policylint.measure.integrity.timing import time_facts
from policylint.measure.integrity.workload import trace_facts, workload_facts
from policylint.measure.integrity_facts import IntegrityWorkloadFacts

#: the integrity facts of a workload, as declared
INTEGRITY_FACTS = catalogue(IntegrityWorkloadFacts)

HELIOS = REPO.parent / "shared" / "data" / "traces" / "helios_vc3sl_2020-05.csv"


# --- pure functions --------------------------------------------------------------------------------


def _grid(n: int, step: float = 60.0) -> tuple[np.ndarray, np.ndarray]:
    times = 1_790_000_000.0 + np.arange(n) * step
    return times, np.ones(n, dtype=bool)


def _noise(n: int, size: int = 20) -> np.ndarray:
    i = np.arange(n, dtype=np.int64)
    return 60.0 + ((i * 7919 + (i * i) % 104_729) % (2 * size + 1) - size)


def test_a_copy_has_the_fingerprint_of_its_original_and_another_series_does_not() -> None:
    times, valid = _grid(1000)
    values = _noise(1000)
    first = fingerprint(times, values, valid, 60.0)
    assert fingerprint(times.copy(), values.copy(), valid.copy(), 60.0) == first
    changed = values.copy()
    changed[500] += 1
    assert fingerprint(times, changed, valid, 60.0) != first
    assert fingerprint(times + 60.0, values, valid, 60.0) != first


def test_blocks_of_repeated_values_reveal_the_real_step() -> None:
    times, valid = _grid(12 * 400, 300.0)
    hourly = np.repeat(_noise(400), 12)
    facts = trace_facts(times, hourly, valid, 300.0)
    assert facts["resolution_block_samples"] == 12
    assert facts["resolution_step_seconds"] == 3600.0
    fine = trace_facts(times, _noise(12 * 400), valid, 300.0)
    assert fine["resolution_block_samples"] == 1


def test_a_step_function_that_moves_twice_a_day_is_not_called_coarse() -> None:
    times, valid = _grid(144 * 30, 600.0)
    hour = (times % 86_400) // 3600
    values = np.where((hour >= 14) & (hour < 15), 360.0, 330.0)
    assert trace_facts(times, values, valid, 600.0)["resolution_block_samples"] == 1


def test_roughness_tells_counts_from_drawn_or_averaged_curves() -> None:
    times, valid = _grid(20_000)
    counts = _noise(20_000)
    sine = 100 + 40 * np.sin(2 * np.pi * np.arange(20_000) / 1440)
    assert roughness(counts, valid) > 1.0
    assert roughness(sine, valid) < 0.01
    assert roughness(np.full(100, 3.0), np.ones(100, dtype=bool)) is None


@pytest.mark.skipif(not HELIOS.exists(), reason="the shared Helios trace is not available")
def test_a_real_gpu_cluster_trace_is_rough_and_fine() -> None:
    rows = HELIOS.read_text(encoding="utf-8").splitlines()
    header = rows[0].split(",")
    running, pending = header.index("running_gpu_num"), header.index("pending_gpu_num")
    cells = [r.split(",") for r in rows[1:]]
    values = np.array([float(c[running]) + float(c[pending]) for c in cells])
    times, valid = _grid(values.size)
    facts = trace_facts(times, values, valid, 60.0)
    assert facts["resolution_block_samples"] == 1
    assert facts["roughness"] is not None and facts["roughness"] > 1.0
    assert facts["fractional_share"] == 0.0
    # the same trace averaged over an hour, on its own minute grid: too smooth
    smoothed = np.convolve(values, np.ones(60) / 60, mode="same")
    assert trace_facts(times, smoothed, valid, 60.0)["roughness"] < 0.25
    # and kept hourly on the minute grid: coarse (every 60 samples)
    hourly = np.repeat(values[::60], 60)[: values.size]
    assert trace_facts(times, hourly, valid, 60.0)["resolution_block_samples"] == 60


def test_nightly_exclusions_recur_and_take_the_busy_hours() -> None:
    times, valid = _grid(48 * 120, 1800.0)
    hour = (times % 86_400) // 3600
    busy = (hour >= 22) | (hour < 2)
    values = np.where(busy, 120.0, 40.0)
    day0 = times[0] - times[0] % 86_400
    spans = [(day0 + d * 86_400 + 22 * 3600, day0 + d * 86_400 + 26 * 3600) for d in range(120)]
    facts = shaping(times, values, valid, spans)
    assert facts["exclusion_count"] == 120
    assert facts["exclusion_recurring"] == 120 and facts["exclusion_recurring_at"] == "22:00"
    assert facts["excluded_share"] == pytest.approx(1 / 6, abs=0.01)
    assert facts["excluded_top_share"] == 1.0
    assert facts["excluded_demand_ratio"] == pytest.approx(3.0)


def test_holidays_are_not_a_daily_pattern() -> None:
    spans = [(d * 86_400.0, (d + 1) * 86_400.0) for d in (10, 40, 70, 100)]
    assert recurring_exclusions(spans) == (0, None)


def test_time_facts_count_the_samples_after_now() -> None:
    stored = {"first_time": 0.0, "last_time": 10_000.0, "step_seconds": 1000.0}
    facts = time_facts(stored, 7_500.0)
    assert facts["seconds_after_now"] == 2_500.0
    assert facts["samples_after_now"] == 3  # 8000, 9000, 10000
    assert time_facts(stored, 20_000.0)["seconds_after_now"] == 0.0
    assert time_facts(stored, 20_000.0)["samples_after_now"] == 0


# --- the facts in every output ----------------------------------------------------------------------


def test_every_fact_of_a_view_is_in_the_catalogue_and_back() -> None:
    from fixture_helpers import run_fixture

    from policylint.engine.sheets import FACTS

    result = run_fixture(FIXTURES / "PL961" / "fail")
    views = {v.subject: v for v in result.views}
    for subject in ("workload", "pool", "proposal", "cluster"):
        if subject in views:
            assert set(views[subject].facts) == set(FACTS[subject]), subject
    assert set(INTEGRITY_FACTS) <= set(FACTS["workload"])


def test_bands_json_carries_the_integrity_facts() -> None:
    trace = FIXTURES / "_traces" / "future-92d.csv"
    code, out, err = run_cli(["bands", str(trace), "--format", "json"])
    assert (code, err) == (0, "")
    facts = json.loads(out)["integrity"]
    assert set(facts) == set(INTEGRITY_FACTS)
    assert facts["samples_after_now"] > 0 and facts["seconds_after_now"] > 0
    assert re.fullmatch(r"[0-9a-f]{64}", facts["series_fingerprint"])


# --- the four gamed plans of issue 24, through the CLI ------------------------------------------------


def _plan(tmp_path: Path, *fixtures: str) -> Path:
    """A repository of its own from fixture files, with the traces they cite copied beside them."""
    repo = tmp_path / "plan"
    (repo / "traces").mkdir(parents=True)
    for fixture in fixtures:
        source = FIXTURES / fixture
        text = source.read_text(encoding="utf-8")
        for name in re.findall(r"\.\./\.\./_traces/([\w.-]+)", text):
            shutil.copyfile(FIXTURES / "_traces" / name, repo / "traces" / name)
        for name in re.findall(r"path: traces/([\w.-]+)", text):
            shutil.copyfile(source.parent / "traces" / name, repo / "traces" / name)
        (repo / source.name).write_text(text.replace("../../_traces/", "traces/"), encoding="utf-8")
    return repo


def _check(repo: Path, code: str) -> list[dict[str, object]]:
    status, out, _ = run_cli(
        ["check", str(repo), "--root", str(repo), "--isolated", "--no-cache", "--now", "2026-12-01",
         "--select", code, "--format", "json"]
    )
    assert status == 1, out
    return [f for f in json.loads(out)["findings"] if f["code"] == code]


def test_split_proposals_fail_together(tmp_path: Path) -> None:
    found = _check(_plan(tmp_path, "PL801/fail/split.yaml"), "PL801")
    assert sorted(f["subject"] for f in found) == ["proposal split-a", "proposal split-b"]
    for f in found:
        assert "split proposals are judged together" in str(f["message"])
        assert "ask 8 GPUs in all (split-a 4, split-b 4)" in str(f["message"])


def test_a_copied_trace_is_counted_once(tmp_path: Path) -> None:
    found = _check(_plan(tmp_path, "PL111/fail/copy.yaml"), "PL111")
    assert [f["subject"] for f in found] == ["workload assistant-eu"]
    assert "a copy: traces/chat-export.csv holds the same series as traces/diurnal-100.csv" in str(found[0]["message"])


def test_exclusions_that_shape_the_series_fail(tmp_path: Path) -> None:
    found = _check(_plan(tmp_path, "PL961/fail/repo.yaml"), "PL961")
    assert len(found) == 1
    message = str(found[0]["message"])
    assert "exclusions shape the series" in message
    assert "120 of the 120 ranges start at 22:00 UTC" in message


def test_samples_after_now_fail(tmp_path: Path) -> None:
    found = _check(_plan(tmp_path, "PL960/fail/repo.yaml"), "PL960")
    assert len(found) == 1
    assert "a measurement cannot come from the future" in str(found[0]["message"])


def test_the_sound_plans_pass_every_integrity_rule(tmp_path: Path) -> None:
    """Bursty but sustained demand and anti-correlated pooled workloads are not tricks."""
    repo = _plan(tmp_path, "PL963/pass/repo.yaml", "PL111/pass/anticorrelated.yaml")
    status, out, _ = run_cli(
        ["check", str(repo), "--root", str(repo), "--isolated", "--no-cache", "--now", "2026-12-01",
         "--select", "PL111,PL801,PL960,PL961,PL962,PL963,PL964,PL965,PL966,PL967,PL968", "--format", "json"]
    )
    assert (status, json.loads(out)["findings"]) == (0, [])


def test_the_review_page_shows_the_integrity_facts_and_the_split_total() -> None:
    from fixture_helpers import run_fixture

    from policylint.report.html_report import render

    page = render(run_fixture(FIXTURES / "PL111" / "fail"))
    assert '<h2 id="integrity">Evidence integrity</h2>' in page
    assert "a copy: traces/chat-export.csv holds the same series as ../../_traces/diurnal-100.csv" in page
    page = render(run_fixture(FIXTURES / "PL801" / "fail"))
    assert "all proposals for the pool" in page and "split-b 4" in page


def test_pasted_days_are_found_and_measured_days_are_not() -> None:
    times, valid = _grid(96 * 28, 900.0)
    times = times - times[0] % 86_400  # start at midnight
    week = _noise(96 * 7)
    pasted = np.tile(week, 4)
    assert repeated_days(times, pasted, valid, 900.0) == (21, 28)
    assert repeated_days(times, _noise(96 * 28) + (np.arange(96 * 28) // 96), valid, 900.0)[0] == 0
    # a step that does not divide a day (seven minutes) is read at one that does, and its copies are
    # found (red team round 20: such a step laid no day out); the last day is not whole
    sevens = times[0] + np.arange(times.size * 900 // 420) * 420.0
    held = pasted[np.searchsorted(times, sevens, side="right") - 1]
    assert repeated_days(sevens, held, np.ones(sevens.size, dtype=bool), 420.0) == (20, 27)


def test_a_copy_moved_in_time_is_the_same_demand(tmp_path: Path) -> None:
    found = _check(_plan(tmp_path, "PL111/fail/moved.yaml"), "PL111")
    assert [f["subject"] for f in found] == ["workload summary-v0"]
    assert "a copy moved in time: traces/old-92d.csv holds the values of traces/diurnal-100.csv" in str(found[0]["message"])


def test_pool_bands_json_carries_each_workloads_integrity_facts() -> None:
    code, out, err = run_cli(["bands", "--pool", "prod-east/serving", "examples/good", "--format", "json"], cwd=REPO)
    assert (code, err) == (0, "")
    workloads = json.loads(out)["workloads"]
    assert workloads and all(set(w["integrity"]) == set(INTEGRITY_FACTS) for w in workloads.values())


def test_a_scaled_copy_is_the_same_demand(tmp_path: Path) -> None:
    found = _check(_plan(tmp_path, "PL111/fail/scaled.yaml"), "PL111")
    assert [f["subject"] for f in found] == ["workload ranker-eu"]
    assert "a scaled copy: traces/bursty-scaled.csv rises and falls at exactly the samples" in str(found[0]["message"])


def test_shape_fingerprint_ignores_scale_and_offset_but_not_other_noise() -> None:
    times, valid = _grid(96 * 30, 900.0)
    base = _noise(96 * 30)
    shape = shape_fingerprint(base, valid, 900.0)
    assert shape is not None
    assert shape_fingerprint(np.round(base * 1.3) + 7, valid, 900.0) == shape
    other = base + np.where(np.arange(base.size) % 97 == 0, 0.5, 0.0)
    assert shape_fingerprint(other, valid, 900.0) != shape
    # too few changes a day to be told apart: no shape
    steps = np.repeat(np.arange(30) % 2, 96).astype(float)
    assert shape_fingerprint(steps, valid, 900.0) is None


def test_correctly_sized_scheduler_queues_pass_every_integrity_rule() -> None:
    for example in ("examples/kueue", "examples/good"):
        code, out, _ = run_cli(
            ["check", example, "--no-cache", "--select", "PL111,PL801,PL960,PL961,PL962,PL963,PL964,PL965,PL966,PL967,PL968"],
            cwd=REPO,
        )
        assert code == 0, out


def test_the_review_page_lists_every_integrity_fact_of_each_traced_workload() -> None:
    from fixture_helpers import run_fixture

    from policylint.report.html_report import render

    page = render(run_fixture(FIXTURES / "PL960" / "fail"))
    for name in INTEGRITY_FACTS:
        assert f'<dd data-fact="{name}">' in page, name


@pytest.mark.parametrize("fixture", ["PL101/pass/volcano.yaml", "PL110/pass/queues.yaml"])
def test_correctly_sized_volcano_and_kueue_queues_stay_sound(tmp_path: Path, fixture: str) -> None:
    repo = _plan(tmp_path, fixture)
    status, out, _ = run_cli(
        ["check", str(repo), "--root", str(repo), "--isolated", "--no-cache", "--now", "2026-12-01", "--select",
         "PL101,PL102,PL104,PL110,PL111,PL201,PL203,PL801,PL960,PL961,PL962,PL963,PL964,PL965,PL966,PL967,PL968",
         "--format", "json"]
    )
    assert (status, json.loads(out)["findings"]) == (0, [])


@pytest.mark.parametrize("seed", range(6))
def test_the_stage_takes_any_series_without_failing(seed: int) -> None:
    """NaN, infinities, gaps, constant and tiny series, odd steps: facts or None, never an exception."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 400))
    step = float(rng.choice([0.0, 1.0, 60.0, 7000.0, 86_400.0, 300.0]))
    times = 1_790_000_000.0 + np.arange(n) * max(step, 1.0)
    values = rng.choice([0.0, 1.0, 2.5, np.nan, np.inf, -3.0], size=n) if seed % 2 else np.full(n, 7.0)
    valid = rng.random(n) > 0.2
    spans = [(float(times[0]) - 10.0, float(times[0]) + 3600.0)] if n else []
    facts = trace_facts(times, values, valid, step, spans)
    assert set(INTEGRITY_FACTS) - set(facts) <= {
        "first_sample", "seconds_after_now", "samples_after_now", "outlier_days_removed", "outlier_day_share",
        "job_gpus_max", "job_gpus_median", "job_gpus_p90", "jobs_fingerprint", "pulled_range_outside_seconds",
        # judged later: against now, or against the other workloads of the model
        "vram_seconds_after_now", "jobs_seconds_after_now",
        "near_copy_of", "near_copy_similarity", "near_copy_trace", "near_copy_pool", "near_copy_part",
        "pulled_digest_matches",
        # from the rows of a request log or job list (series_facts), not from the grid
        "open_jobs", "finished_jobs", "open_job_longest_days", "finished_job_longest_days", "open_job_ratio",
        "trace_job_gpus_p90",
        # from the summed columns the reader saw (series_facts), not from the grid
        "part_fingerprints", "part_sketches", "part_shapes", "part_labels",
        # from the samples before the grid (series_facts: the reader's print)
        "samples_fingerprint",
    }
    for name, value in facts.items():
        if name == "run_sketch":  # the stored sketch of the trace's runs (not a fact rules read)
            assert value is None or all(isinstance(x, int) and 0 <= x < 2**53 for x in value)
            continue
        assert value is None or isinstance(value, (int, float, str, bool))
    merged = workload_facts(facts, 1_790_000_000.0, 0)
    assert set(merged) >= set(INTEGRITY_FACTS)


def test_time_facts_of_a_step_too_small_to_count_by() -> None:
    """A stored step so small that the count of samples after now is no number: unknown, never an internal error."""
    facts = time_facts({"step_seconds": 5e-324, "first_time": None, "last_time": 1796083201.0}, 1796083200.0)
    assert facts["samples_after_now"] is None and facts["seconds_after_now"] == 1.0
    assert time_facts({"step_seconds": 0.5, "last_time": 1796083201.0}, 1796083200.0)["samples_after_now"] == 3


def test_samples_after_now_reads_in_days_while_its_figures_stay_exact_seconds() -> None:
    """PL960 writes how far a measurement runs past now as a duration (days here); the
    figures it compared keep the exact seconds, and the message says it once."""
    from fixture_helpers import run_fixture

    from policylint.engine.messages import render

    found = [f for f in run_fixture(FIXTURES / "PL960" / "fail").findings if f.code == "PL960"]
    messages = sorted(f.message for f in found)
    assert sum("runs 10.0 d past now" in m for m in messages) == 2, messages  # VRAM trace and job list
    assert any("concurrency trace runs 19.9 d past now (240 samples dated after now; the trace starts" in m
               for m in messages), messages
    assert not any(" s past now" in m or "days ahead" in m for m in messages), messages
    assert {f.figures[0] for f in found} >= {864_000.0, 1_720_800.0}  # the verdict's numbers, unrounded
    assert render("{x:duration}", {"x": 45}) == "45 s"
    assert render("{x:duration}", {"x": 5 * 3600.0}) == "5.0 h"
    assert render("{x:duration}", {"x": None}) == "unknown"
    assert render("{x:duration}", {"x": float("inf")}) == "unbounded"
