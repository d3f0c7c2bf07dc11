"""The repository index (:mod:`policylint.engine.repo_index`): a narrowed run takes unchanged workloads from it, and prints what --no-cache prints.

A pool's members are edited in every way a repository changes - a spec value, a
trace sample, a member added, moved to another pool, removed, a file renamed, a
neighbour's file touched without a change, a neighbour changed behind the
index's back with its size and modification time restored - and after each
edit the pre-commit run (``check --changed-files``) with a warm cache prints
byte for byte what it prints with ``--no-cache``. That the index was used is
checked by counting the measurement entries read and the workloads taken from
it; that its facts are what the run judges, by planting a different (sealed)
fact in it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import GIT_IDENTITY, run_cli
from test_neighbours import WHEN
from test_pooled_incremental import _CLUSTER, _write_trace, _write_workload

from policylint.model.load import document_cache
from policylint.measure import measurement_cache as measure_cache
from policylint.engine import lite_sheet
from policylint.engine.lite_sheet import LITE
from policylint.cache import decoded
from policylint.engine import index_store, repo_index


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "workloads").mkdir(parents=True)
    (root / "traces").mkdir()
    (root / "cluster.yaml").write_text(_CLUSTER)
    for i in range(10):
        _write_trace(root, i)
        _write_workload(root, i, pool="other" if i == 9 else "shared")
    _git(root, "init", "-q")
    return root


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("POLICYLINT_CACHE_DIR", str(path))
    # the files of these tests were written a moment ago: settled at once (the racy rule has its own test)
    monkeypatch.setattr(repo_index, "RACY_SECONDS", 0.0)
    return path


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Keys of the measurement entries read (a workload measured or viewed in full reads its own)."""
    seen: list[str] = []
    original = measure_cache.load

    def counted(folder: Path, key: str, **kw: Any) -> Any:
        seen.append(key)
        return original(folder, key, **kw)

    monkeypatch.setattr(measure_cache, "load", counted)
    return seen


def _run(root: Path, *args: str) -> tuple[int, str, str]:
    return run_cli(["check", *args, "--format", "json", *WHEN], cwd=root)


def _same_as_no_cache(root: Path, *files: str) -> str:
    before = dict(repo_index.STATS)
    warm = _run(root, "--changed-files", *files)
    used = {k: repo_index.STATS[k] - before[k] for k in before}
    cold = _run(root, "--changed-files", *files, "--no-cache")
    assert warm == cold
    assert warm[0] in (0, 1) and "internal error" not in warm[2]
    _same_as_no_cache.used = used  # type: ignore[attr-defined]
    return warm[1]


def _used() -> dict[str, int]:
    return _same_as_no_cache.used  # type: ignore[attr-defined,no-any-return]


def _index_file(folder: Path) -> Path:
    (found,) = folder.glob("repoindex-v*/*/*.bin")
    return found


def test_every_kind_of_edit_stays_byte_identical_and_takes_the_index(repo: Path, folder: Path, loads: list[str]) -> None:
    # the first run fills the measurement cache and records every workload it viewed
    assert _run(repo, ".")[0] in (0, 1)
    _index_file(folder)

    def step(*files: str, full: int = 1, indexed: int = 8) -> str:
        loads.clear()
        out = _same_as_no_cache(repo, *files)
        used = _used()
        assert used["runs"] == 1, "the index was not used"
        assert used["indexed"] >= indexed
        assert used["full"] <= full
        # a measurement entry is read only for the workloads not taken from the index
        assert len(set(loads)) <= full
        return out

    # nothing changed at all
    step("workloads/w-2.yaml", full=0, indexed=9)
    # a value of the spec, twice
    _write_workload(repo, 2, tolerance=41)
    step("workloads/w-2.yaml")
    _write_workload(repo, 2, tolerance=42)
    step("workloads/w-2.yaml")
    # a sample of its trace
    rows = (repo / "traces" / "w-3.csv").read_text().split("\n")
    stamp, value = rows[100].split(",")
    rows[100] = f"{stamp},{int(value) + 17}"
    (repo / "traces" / "w-3.csv").write_text("\n".join(rows))
    step("traces/w-3.csv")
    # a member added
    _write_trace(repo, 10)
    _write_workload(repo, 10)
    step("workloads/w-10.yaml", "traces/w-10.csv")
    # moved to another pool: the pool it joins is judged, its old one keeps its kept sum
    _write_workload(repo, 4, pool="other")
    step("workloads/w-4.yaml", indexed=0)
    # its file renamed (not staged: the old path is simply gone)
    (repo / "workloads" / "w-5.yaml").rename(repo / "workloads" / "w-5-renamed.yaml")
    step("workloads/w-5-renamed.yaml")
    # a neighbour's file touched without a change: measured again, the same verdicts
    os.utime(repo / "workloads" / "w-1.yaml")
    step("workloads/w-2.yaml", full=1)
    # ... and then recorded again: the next run takes it from the index
    step("workloads/w-2.yaml", full=0)
    # a member removed (a staged deletion: the hook reports on everything, a whole run)
    _git(repo, "add", "-A")
    _git(repo, *GIT_IDENTITY, "commit", "-q", "-m", "fleet")
    _git(repo, "rm", "-q", "workloads/w-10.yaml")
    loads.clear()
    warm = _run(repo)
    assert warm == _run(repo, "--no-cache")


def test_a_neighbour_changed_behind_the_index_is_caught(repo: Path, folder: Path, loads: list[str]) -> None:
    _run(repo, ".")
    before = _same_as_no_cache(repo, "workloads/w-2.yaml")
    assert _used()["full"] == 0
    # w-1's tolerance 15 -> 91 s, and its trace's sample: same sizes, modification times put back
    path = repo / "workloads" / "w-1.yaml"
    stat = path.stat()
    text = path.read_text()
    assert "maxQueueSeconds: 15," in text
    path.write_text(text.replace("maxQueueSeconds: 15,", "maxQueueSeconds: 91,"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    trace = repo / "traces" / "w-6.csv"
    tstat = trace.stat()
    data = trace.read_bytes()
    at = data.index(b"\n", 5000) - 1  # the last digit of a sample: 0-8 -> 1-9, same size
    digit = data[at : at + 1]
    assert digit.isdigit()
    trace.write_bytes(data[:at] + (b"1" if digit == b"0" else b"0") + data[at + 1 :])
    os.utime(trace, ns=(tstat.st_atime_ns, tstat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    after = _same_as_no_cache(repo, "workloads/w-2.yaml")
    # the status-change time moved: both were measured again, and what they say changed the report
    assert _used()["full"] == 2
    assert after != before


def test_the_index_facts_are_what_a_run_judges(repo: Path, folder: Path) -> None:
    """A fact planted in the index (sealed as the cache seals it) shows in the report: the index is read, not recomputed."""
    _run(repo, ".")
    honest = _same_as_no_cache(repo, "workloads/w-2.yaml")
    index = index_store.open_index(folder, repo, _limits(repo), ())
    rec = index.get("w-1")
    assert rec is not None
    values, sketch = json.loads(rec.text)
    at = rec.shape.index("tolerance_seconds")
    assert values[at] == 15.0
    values[at] = 0.25  # a tolerance no workload declares: the pool's spread moves
    rec.text = json.dumps([values, sketch], separators=(",", ":"))
    # the stand-in's copy of it (engine.lite_sheet), which the pool steps read, planted alike
    lite, lite_sketch = rec.lite
    lite[LITE.index("tolerance_seconds")] = 0.25
    rec.lite = [lite, lite_sketch]
    index.put("w-1", rec)
    index.write()
    planted = _run(repo, "--changed-files", "workloads/w-2.yaml")[1]
    assert planted != honest
    assert "0.25 s" in planted


def test_a_filling_run_keys_each_workload_once_and_records_that_key(
    repo: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recorder takes the key the measuring computed; each record's key is the one computed afresh."""
    asked: list[str] = []
    original = measure_cache.workload_key

    def counted(workload: Any, *args: Any, **kw: Any) -> Any:
        key = original(workload, *args, **kw)
        if key != measure_cache.UNHASHED:  # a parallel run's first look leaves unrecorded traces to its workers
            asked.append(workload.name)
        return key

    monkeypatch.setattr(measure_cache, "workload_key", counted)
    _run(repo, ".")
    assert sorted(asked) == [f"w-{i}" for i in range(10)]  # once each, by the measuring
    monkeypatch.setattr(measure_cache, "workload_key", original)
    index = index_store.open_index(folder, repo, _limits(repo), ())
    from policylint.engine.linter import LintOptions, lint

    model = lint([repo], LintOptions(root=repo)).model  # no rule set: loaded and resolved only
    assert model is not None
    for name, workload in model.workloads.items():
        rec = index.get(name)
        assert rec is not None
        assert rec.key == original(workload, _limits(repo), folder)
    _same_as_no_cache(repo, "workloads/w-2.yaml")
    assert _used()["indexed"] == 10


def test_a_trace_rewritten_after_its_measuring_is_not_recorded_under_the_old_key(
    repo: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recorder takes the key the measuring computed: a trace rewritten since (its times put back) is refused."""
    from test_pooled_incremental import _write_trace as write_trace

    original = measure_cache.store
    trace = repo / "traces" / "w-3.csv"
    done: list[bool] = []

    def store_then_rewrite(folder_: Path, key: str, facts: Any, *args: Any, **kw: Any) -> Any:
        out = original(folder_, key, facts, *args, **kw)
        if not done and getattr(facts, "report", None) is not None and "w-3.csv" in str(facts.report.source):
            before = trace.stat()
            write_trace(repo, 4, "w-3.csv")  # other samples, after the key and the measuring
            os.utime(trace, ns=(before.st_atime_ns, before.st_mtime_ns))
            done.append(True)
        return out

    monkeypatch.setattr(measure_cache, "store", store_then_rewrite)
    _run(repo, ".")
    assert done
    monkeypatch.setattr(measure_cache, "store", original)
    index = index_store.open_index(folder, repo, _limits(repo), ())
    assert index.get("w-3") is None and index.get("w-2") is not None
    _same_as_no_cache(repo, "workloads/w-3.yaml")
    _same_as_no_cache(repo, "workloads/w-2.yaml")


def test_a_fact_that_moves_with_the_clock_unrecomputed_is_never_recorded(
    repo: Path, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recorder's check at another instant: a view fact that depends on ``now`` outside the clock facts
    (here the tolerance, as a new fact might by mistake) keeps every workload out of the index."""
    from policylint.engine import views, workload_view as workload_view_module

    original = workload_view_module.workload_view

    def moving(w: Any, wf: Any, now: Any) -> Any:
        view, sheet = original(w, wf, now)
        sheet.tolerance_seconds = float(now.timestamp() % 977)
        return view, sheet

    monkeypatch.setattr(workload_view_module, "workload_view", moving)
    monkeypatch.setattr(views, "workload_view", moving)
    _run(repo, ".")
    index = index_store.open_index(folder, repo, _limits(repo), ())
    assert all(index.get(f"w-{i}") is None for i in range(10))
    _same_as_no_cache(repo, "workloads/w-2.yaml")
    assert _used()["indexed"] == 0


def test_neighbours_with_kept_verdicts_stay_stand_ins(repo: Path, folder: Path) -> None:
    """Only the workload judged by every rule has its whole sheet made; its neighbours' stand-ins are never filled."""
    _run(repo, ".")
    _same_as_no_cache(repo, "workloads/w-2.yaml")
    before = dict(lite_sheet.STATS)
    _same_as_no_cache(repo, "workloads/w-2.yaml")
    assert _used()["indexed"] == 10  # the cluster's two pools
    assert lite_sheet.STATS["made"] - before["made"] == 10
    assert lite_sheet.STATS["filled"] - before["filled"] == 1  # w-2, judged by every rule


def _limits(root: Path) -> Any:
    from policylint.model.config import load_config

    return load_config([root], changed_files=True).trace_limits()


def test_a_damaged_or_foreign_index_is_a_miss(repo: Path, folder: Path) -> None:
    _run(repo, ".")
    _same_as_no_cache(repo, "workloads/w-2.yaml")
    assert _used()["runs"] == 1
    path = _index_file(folder)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01  # the HMAC no longer matches
    path.write_bytes(bytes(data))
    _write_workload(repo, 2, tolerance=77)
    _same_as_no_cache(repo, "workloads/w-2.yaml")
    assert _used()["runs"] == 0  # today's path, which recorded the workloads again
    _same_as_no_cache(repo, "workloads/w-2.yaml")
    assert _used()["runs"] == 1
    # another kind's entry under the index's name
    other = next(p for p in folder.glob(f"documents-v{document_cache.DOCUMENT_FORMAT}/*/*") if p.is_file())
    path.write_bytes(other.read_bytes())
    _same_as_no_cache(repo, "workloads/w-2.yaml")
    assert _used()["runs"] == 0


def test_files_changed_within_the_racy_window_are_not_recorded(repo: Path, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(repo_index, "RACY_SECONDS", 3600.0)  # every file of this test is "just written"
    _run(repo, ".")
    assert not list(folder.glob("repoindex-v*/*/*.bin"))
    _same_as_no_cache(repo, "workloads/w-2.yaml")
    assert _used()["runs"] == 0
    monkeypatch.setattr(repo_index, "RACY_SECONDS", 0.0)
    _run(repo, ".")
    _same_as_no_cache(repo, "workloads/w-2.yaml")
    assert _used()["runs"] == 1


def test_rebuilt_views_equal_measured_views_on_the_examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every example workload the index records is rebuilt exactly, and narrowed runs print what --no-cache prints."""
    import shutil

    from conftest import EXAMPLES  # type: ignore[attr-defined]

    monkeypatch.setattr(repo_index, "RACY_SECONDS", 0.0)
    monkeypatch.setenv("POLICYLINT_CACHE_DIR", str(tmp_path / "cache"))
    before = repo_index.STATS["indexed"]
    for name in ("good", "bad"):
        root = tmp_path / name
        shutil.copytree(EXAMPLES / name, root)
        _git(root, "init", "-q")
        run_cli(["check", ".", "--format", "json", *WHEN], cwd=root)
        for path in sorted(root.rglob("*.yaml")):
            rel = str(path.relative_to(root))
            warm = run_cli(["check", "--changed-files", rel, "--format", "json", *WHEN], cwd=root)
            cold = run_cli(["check", "--changed-files", rel, "--format", "json", "--no-cache", *WHEN], cwd=root)
            assert warm == cold, rel
    assert repo_index.STATS["indexed"] > before  # the examples' pools were taken from the index


def test_an_index_cut_short_is_a_miss(repo: Path, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The index is written in frames; a file holding only some of them (or its frames without their seal) is a miss."""
    monkeypatch.setattr(index_store, "_ROWS_PER_PART", 2)  # ten workloads: several frames
    _run(repo, ".")
    _same_as_no_cache(repo, "workloads/w-2.yaml")
    assert _used()["runs"] == 1
    path = _index_file(folder)
    good = path.read_bytes()
    values = decoded.read_sealed_values(path, folder, index_store.KIND, 1 << 30)
    assert values is not None and len(values) > 2
    body = good[:-65]
    for cut in (good[: len(good) // 3], good[: len(good) // 3] + good[-65:], body, body + b"\n" + b"0" * 64):
        path.write_bytes(cut)
        _same_as_no_cache(repo, "workloads/w-2.yaml")
        assert _used()["runs"] == 0
        path.write_bytes(good)


@pytest.mark.parametrize("damage", ["short-sketch", "facts-cut", "not-a-list", "text-for-values"])
def test_a_sealed_index_row_whose_lite_values_are_damaged_answers_as_no_cache(
    repo: Path, folder: Path, damage: str
) -> None:
    """The lite values are held as values now: a row whose form is off (sealed as the cache seals it) is a miss."""
    _run(repo, ".")
    honest = _same_as_no_cache(repo, "workloads/w-2.yaml")
    index = index_store.open_index(folder, repo, _limits(repo), ())
    rec = index.get("w-1")
    assert rec is not None and isinstance(rec.lite, list)
    facts, sketch = rec.lite
    rec.lite = {
        "short-sketch": [facts, b"\0" * 7],  # not whole 8-byte numbers
        "facts-cut": [facts[:-1], sketch],
        "not-a-list": [tuple(facts), sketch],
        "text-for-values": [json.dumps(facts), sketch],  # the old form: a text
    }[damage]
    index.put("w-1", rec)
    index.write()
    assert _same_as_no_cache(repo, "workloads/w-2.yaml") == honest
