"""Kept reads (policylint.measure.kept_reads): an edited workload's trace is not parsed again, and nothing changes.

A run that measures a few workloads keeps each concurrency trace's series as the
reader gave it; the next run that measures the workload again (its declaration
edited, its trace not) takes it instead of reading the file. Every kept series
must be the read bit for bit, every run must print what ``--no-cache`` prints, and
a changed, damaged or foreign entry must be a miss.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import EXAMPLES, copy_minirepo, replace_once, run_cli, run_fresh

from policylint import traces
from policylint.engine.linter import LintOptions, lint
from policylint.measure import kept_reads
from policylint.measure.kept_reads import read_trace
from policylint.measure.reading import reader_arguments

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
WHEN = ["--now", "2026-12-01"]


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files written by the test count as settled (the two-second window is tested on its own)."""
    monkeypatch.setattr(kept_reads, "_RACY_SECONDS", 0.0)


def kept(folder: Path) -> list[Path]:
    return sorted(folder.rglob("reads-v*/*/*.read"))


def count_series_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = traces.read_series

    def counting(path: Path, **kwargs: Any) -> Any:
        calls.append(Path(path).name)
        return real(path, **kwargs)

    monkeypatch.setattr(traces, "read_series", counting)
    return calls


def assert_same_series(a: Any, b: Any) -> None:
    assert type(a) is type(b)
    for field in dataclasses.fields(a):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, np.ndarray):
            assert isinstance(y, np.ndarray) and x.dtype == y.dtype and x.shape == y.shape, field.name
            assert x.tobytes() == y.tobytes(), field.name  # bit for bit: NaN payloads and -0.0 included
        else:
            assert x == y and type(x) is type(y), field.name


def traced_refs(repo: Path) -> list[Any]:
    result = lint([repo], LintOptions(root=repo, now=NOW))
    assert result.model is not None
    refs = [w.measurements.get("concurrency") for w in result.model.workloads.values()]
    return [r for r in refs if r is not None and r.path is not None and r.path.exists()]


@pytest.mark.parametrize("example", ["good", "bad"])
def test_a_kept_read_is_the_read_bit_for_bit(example: str, tmp_path: Path, settled: None,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    refs = traced_refs(EXAMPLES / example)
    assert len(refs) >= 4
    cache = tmp_path / "cache"
    fresh: dict[int, Any] = {}
    for i, ref in enumerate(refs):
        try:
            fresh[i] = traces.read_series(ref.path, **reader_arguments(ref, None, "trace"))
        except Exception:  # noqa: BLE001 - a trace the readers refuse (examples/bad) raises the same, kept nothing
            with pytest.raises(type(sys.exc_info()[1])):
                read_trace(ref, None, cache)
            continue
        assert_same_series(read_trace(ref, None, cache), fresh[i])  # read, then kept
    # one entry per trace and way of reading it (examples/bad cites some traces twice)
    assert 3 <= len(kept(tmp_path / "cache")) <= len(fresh)
    calls = count_series_reads(monkeypatch)
    for i, ref in enumerate(refs):
        if i in fresh:
            assert_same_series(read_trace(ref, None, cache), fresh[i])
    assert calls == []  # every readable trace came back from its entry


def edit_tolerance(repo: Path, value: str) -> None:
    text = (repo / "workloads" / "search.yaml").read_text()
    head, sep, rest = text.partition("maxQueueSeconds: ")
    old = rest.split("\n", 1)[0]
    replace_once(repo / "workloads" / "search.yaml", f"maxQueueSeconds: {old}\n", f"maxQueueSeconds: {value}\n")


def test_an_edited_workload_is_measured_from_its_kept_read(tmp_path: Path, cache_dir: Path, settled: None,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    repo = copy_minirepo(tmp_path / "repo")
    target = ["check", str(repo), "--format", "json", *WHEN]
    run_cli(target)  # fills the cache; a run of three traced workloads keeps their reads
    assert kept(cache_dir)
    calls = count_series_reads(monkeypatch)
    hook = ["check", "--format", "json", *WHEN, "--changed-files", "workloads/search.yaml"]
    for value in ("1.25", "1.75"):
        edit_tolerance(repo, value)
        narrowed = run_cli(hook, cwd=repo)
        assert narrowed[0] in (0, 1) and narrowed[2] == ""
        assert calls == []  # the edited workload was measured again from its kept read
        assert narrowed == run_cli([*hook, "--no-cache"], cwd=repo)
        assert "reranker.csv" in calls  # (which the run without the cache read)
        calls.clear()
        assert run_cli(target) == run_cli([*target, "--no-cache"])
        calls.clear()


def test_a_changed_trace_is_read_again(tmp_path: Path, cache_dir: Path, settled: None,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    repo = copy_minirepo(tmp_path / "repo")
    target = ["check", str(repo), "--format", "json", *WHEN]
    run_cli(target)
    trace = next(repo.rglob("reranker.csv"))
    before = os.stat(trace)
    data = bytearray(trace.read_bytes())
    # the same size and modification time, another value in the last row (its last digit moved by one)
    data[-2] = ord("0") + (data[-2] - ord("0") + 1) % 10
    trace.write_bytes(bytes(data))
    os.utime(trace, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(trace).st_size == before.st_size
    edit_tolerance(repo, "1.25")
    calls = count_series_reads(monkeypatch)
    cached = run_cli(target)
    assert "reranker.csv" in calls  # its bytes changed: the kept read is not the file's
    assert cached == run_cli([*target, "--no-cache"])


def test_a_damaged_or_foreign_entry_is_a_miss(tmp_path: Path, cache_dir: Path, settled: None,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    repo = copy_minirepo(tmp_path / "repo")
    target = ["check", str(repo), "--format", "json", *WHEN]
    run_cli(target)
    entries = kept(cache_dir)
    assert len(entries) == 3
    first = entries[0].read_bytes()
    damaged = bytearray(first)
    damaged[-1] ^= 0xFF
    entries[0].write_bytes(bytes(damaged))  # its seal no longer holds
    entries[1].write_bytes(entries[2].read_bytes())  # a real entry under another trace's key
    entries[2].write_bytes(first[: len(first) // 2])  # cut short
    calls = count_series_reads(monkeypatch)
    edits = (("workloads/search.yaml", "maxQueueSeconds: 1.5\n", "maxQueueSeconds: 1.25\n"),
             ("workloads/product-ai.yaml", "maxQueueSeconds: 0.5\n", "maxQueueSeconds: 0.25\n"))
    for name, old, new in edits:
        replace_once(repo / name, old, new)
    assert run_cli(target) == run_cli([*target, "--no-cache"])
    # both edited workloads were measured again: every entry was a miss, so each trace was read
    assert len(calls) == 2 + 3
    calls.clear()
    for name, old, new in edits:
        replace_once(repo / name, new, new.replace("25", "75"))  # new values: measured again
    assert run_cli(target) == run_cli([*target, "--no-cache"])
    assert len(calls) == 3  # the entries were written again, and taken: only the --no-cache run read


def test_a_large_run_keeps_no_reads(tmp_path: Path, cache_dir: Path, settled: None,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from policylint.measure import run

    monkeypatch.setattr(run, "KEEP_AT_MOST", 2)
    repo = copy_minirepo(tmp_path / "repo")
    target = ["check", str(repo), "--format", "json", *WHEN]
    assert run_cli(target) == run_cli([*target, "--no-cache"])
    assert kept(cache_dir) == []  # three traced workloads measured: more than this run keeps


def test_a_trace_written_just_now_is_not_kept(tmp_path: Path, cache_dir: Path) -> None:
    repo = copy_minirepo(tmp_path / "repo")  # every file's status changed just now
    target = ["check", str(repo), "--format", "json", *WHEN]
    assert run_cli(target) == run_cli([*target, "--no-cache"])
    assert kept(cache_dir) == []  # a write within the last two seconds could still be followed by another


def test_an_edited_run_imports_no_pyarrow(tmp_path: Path) -> None:
    """The point of it: after the first edit, a pre-commit run on an edited declaration parses no trace at all."""
    repo = copy_minirepo(tmp_path / "repo")
    time.sleep(kept_reads._RACY_SECONDS + 0.2)  # the copied traces settle
    hook = ["check", "--format", "json", *WHEN, "--changed-files", "workloads/search.yaml"]
    seen = []
    outputs = []
    for value in ("1.25", "1.75", "2.0"):
        edit_tolerance(repo, value)
        out, modules = run_fresh(hook, repo, tmp_path / "cache")
        seen.append("pyarrow" in modules)
        outputs.append(out)
    # the first run fills the cache (reading every trace), the second measures the edited workload
    # from its kept read, and so does the third
    assert seen == [True, False, False]
    assert outputs[2] == run_cli([*hook, "--no-cache"], cwd=repo)[1]
