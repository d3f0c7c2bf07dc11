"""PL984: a workload that reads another workload's jobs as its own job durations (red team, 2026-12-06).

fine-tuning (8-GPU jobs) cited pre-training's job list (64-GPU jobs) as its durations and declared
``gpusPerReplica: 64``; PL967, which compares the declared GPUs with the workload's own job list,
agreed, and the training pool went from 392 to 1,024 reserved GPUs with exit 0.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import EXAMPLES, replace_once, run_cli
from policylint.measure.workload import jobs_fingerprint


def test_examples_good_with_borrowed_durations_fails(tmp_path: Path) -> None:
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "good"))
    research = repo / "workloads" / "research.yaml"
    original = research.read_text(encoding="utf-8")
    replace_once(research, "path: ../measurements/jobs/fine-tuning.csv", "path: ../measurements/jobs/pre-training.csv")
    code, out, err = run_cli(["check", ".", "--format", "json", "--no-cache"], cwd=repo)
    found = sorted((f["code"], f["subject"]) for f in json.loads(out)["findings"])
    assert (code, err) == (1, "")
    assert found == [("PL984", "workload fine-tuning"), ("PL984", "workload pre-training")]
    # a copy of the list under another name, its rows in another order, is the same jobs
    jobs = repo / "measurements" / "jobs"
    header, *rows = (jobs / "pre-training.csv").read_text(encoding="utf-8").splitlines()
    (jobs / "fine-tuning-export.csv").write_text("\n".join([header, *reversed(rows)]) + "\n", encoding="utf-8")
    research.write_text(original, encoding="utf-8")
    replace_once(research, "path: ../measurements/jobs/fine-tuning.csv", "path: ../measurements/jobs/fine-tuning-export.csv")
    code, out, _ = run_cli(["check", ".", "--format", "json", "--no-cache"], cwd=repo)
    assert code == 1 and sorted(f["code"] for f in json.loads(out)["findings"]) == ["PL984", "PL984"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 10**6), st.integers(1, 64)), min_size=10, max_size=60), st.randoms())
def test_the_fingerprint_is_the_jobs_in_any_order(jobs: list[tuple[int, int]], rnd: object) -> None:
    durations = np.array([d for d, _ in jobs], dtype=np.float64)
    gpus = np.array([g for _, g in jobs], dtype=np.float64)
    printed = jobs_fingerprint(durations, gpus)
    if np.unique(durations).size < 3:
        assert printed is None  # too few distinct durations to tell two lists apart
        return
    order = np.arange(len(jobs))
    rnd.shuffle(order)  # type: ignore[attr-defined]
    assert jobs_fingerprint(durations[order], gpus[order]) == printed
    changed = gpus.copy()
    changed[0] += 1  # one job's GPUs
    assert jobs_fingerprint(durations, changed) != printed
    assert jobs_fingerprint(durations[:9], gpus[:9]) is None  # fewer than ten jobs


def test_a_cached_and_a_narrowed_run_see_the_borrowed_list_as_the_uncached_run(tmp_path: Path) -> None:
    """jobs_fingerprint travels through the measurement cache and the repository index (a stand-in fact): a warm
    run, a warm one-file run and a run over a damaged cache give the --no-cache findings."""
    import os

    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "good"))
    replace_once(repo / "workloads" / "research.yaml", "path: ../measurements/jobs/fine-tuning.csv",
                 "path: ../measurements/jobs/pre-training.csv")
    cache = tmp_path / "cache"
    os.environ["POLICYLINT_CACHE_DIR"] = str(cache)
    try:
        def codes(*args: str) -> list[tuple[str, str, int]]:
            code, out, err = run_cli(["check", *args, "--format", "json"], cwd=repo)
            assert code == 1, err
            return sorted((f["code"], f["subject"], f["line"]) for f in json.loads(out)["findings"])

        cold = codes(".", "--no-cache")
        assert [c for c, _, _ in cold] == ["PL984", "PL984"]
        assert codes(".") == cold  # fills the cache
        assert codes(".") == cold  # warm
        one = codes("workloads/research.yaml")
        assert one == cold
        # every cache file damaged in place: the run measures again and says the same
        for path in cache.rglob("*"):
            if path.is_file() and path.stat().st_size > 8:
                data = bytearray(path.read_bytes())
                data[len(data) // 2] ^= 0xFF
                path.write_bytes(bytes(data))
        assert codes(".") == cold
    finally:
        os.environ.pop("POLICYLINT_CACHE_DIR", None)


def _borrow_across_clusters(repo: Path) -> None:
    """offline-scoring (prod-east/batch, workloads/search.yaml) reads pre-training's job list
    (train-central/training, workloads/research.yaml): another pool, another cluster, another file."""
    replace_once(
        repo / "workloads" / "search.yaml",
        "path: ../measurements/jobs/offline-scoring.csv\n      format: jobs\n      durationColumn: duration_seconds",
        "path: ../measurements/jobs/pre-training.csv\n      format: jobs\n      startColumn: start\n      endColumn: end",
    )


def test_a_list_borrowed_from_another_pool_fails(tmp_path: Path) -> None:
    """Red team, round 6: PL984 compared job lists within a pool, so a list borrowed from a workload of another
    pool passed. Both readers are reported, each message naming where the other runs."""
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "good"))
    _borrow_across_clusters(repo)
    code, out, err = run_cli(["check", ".", "--format", "json", "--no-cache"], cwd=repo)
    assert code == 1, err
    shared = sorted((f["subject"], f["message"]) for f in json.loads(out)["findings"] if f["code"] == "PL984")
    assert shared == [
        ("workload offline-scoring", "workload offline-scoring's job durations are the same jobs as pre-training's"
         " (pool train-central/training): one of them is judged by jobs that are not its own"),
        ("workload pre-training", "workload pre-training's job durations are the same jobs as offline-scoring's"
         " (pool prod-east/batch): one of them is judged by jobs that are not its own"),
    ]


def test_every_narrowed_run_finds_a_list_borrowed_from_another_cluster(tmp_path: Path) -> None:
    """A run narrowed to either reader's file measures only that file's pools; it still reads the other readers'
    job lists (cold: the files; warm: the repository index). A pre-commit run (--changed-files) reports both
    findings, as the whole run does; a run on a path reports the whole run's findings in that file."""
    import os

    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "good"))
    _borrow_across_clusters(repo)
    cache = tmp_path / "cache"
    os.environ["POLICYLINT_CACHE_DIR"] = str(cache)
    try:
        def shared(*args: str) -> list[tuple[str, str, int, str]]:
            code, out, err = run_cli(["check", *args, "--format", "json"], cwd=repo)
            assert code == 1, err
            return sorted((f["file"], f["subject"], f["line"], f["message"]) for f in json.loads(out)["findings"]
                          if f["code"] == "PL984")

        whole = shared(".", "--no-cache")
        assert [s for _, s, _, _ in whole] == ["workload pre-training", "workload offline-scoring"]
        for cache in (["--no-cache"], [], []):  # cold (the other list is read), then filled, then warm (the index)
            for one in ("workloads/search.yaml", "workloads/research.yaml"):
                assert shared("--changed-files", one, *cache) == whole, (one, cache)
                assert shared(one, *cache) == [f for f in whole if f[0] == one], (one, cache)
    finally:
        os.environ.pop("POLICYLINT_CACHE_DIR", None)
