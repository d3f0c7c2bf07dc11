"""``--jobs``: worker processes measure workloads; a broken pool is said, a bug is not hidden.

A worker pool that breaks (a worker killed by the OOM killer, a fork refused) is
reported on standard error and the run measures in one process, with the same
result. Any other exception in a worker is a bug: it ends the run instead of being
retried silently in-process, where it would hide. The default number of workers is
the number of cores this process may use.
"""

from __future__ import annotations

import datetime as dt
import os
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import pytest

from conftest import copy_minirepo

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)


def _model(tmp_path: Path, copies: int) -> Any:
    """The small repository with ``copies`` more traced workloads, enough to go parallel."""
    from policylint.engine.linter import LintOptions, lint

    repo = copy_minirepo(tmp_path / "repo")
    text = (repo / "workloads" / "search.yaml").read_text(encoding="utf-8")
    first = text.split("\n---\n")[0]
    docs = [first.replace("name: reranker", f"name: reranker-{i}") for i in range(copies)]
    (repo / "workloads" / "more.yaml").write_text("\n---\n".join(docs) + "\n", encoding="utf-8")
    result = lint([repo], LintOptions(root=repo, now=NOW, ruleset=None))
    assert result.model is not None
    return result.model


def _bug(name: str) -> Any:
    """A worker with a bug (module level: the pool sends it to the workers by name)."""
    raise ZeroDivisionError(f"bug while measuring {name}")


@pytest.fixture
def model(tmp_path: Path) -> Any:
    from policylint.measure import parallel

    return _model(tmp_path, parallel.PARALLEL_MIN_WORKLOADS + 2)


def test_a_broken_pool_is_said_and_the_run_measures_in_process(model: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from concurrent.futures import ProcessPoolExecutor

    from policylint.measure import parallel
    from policylint.measure.run import measure

    alone, alone_findings = measure(model, NOW, jobs=1)
    capsys.readouterr()

    class Broken(ProcessPoolExecutor):
        def map(self, *args: Any, **kwargs: Any) -> Any:
            raise BrokenProcessPool("a worker was killed")

    monkeypatch.setattr("concurrent.futures.ProcessPoolExecutor", Broken)
    facts, findings = measure(model, NOW, jobs=2)
    err = capsys.readouterr().err
    assert "measuring in 2 processes failed (BrokenProcessPool: a worker was killed); measuring in one process instead" in err
    assert sorted(facts) == sorted(alone)
    assert [f.sort_key() for f in findings] == [f.sort_key() for f in alone_findings]
    def bands(measured: dict[str, Any]) -> dict[str, Any]:
        return {n: (f.report.baseline, f.report.daily, f.report.peak) if f.report else None for n, f in measured.items()}

    assert bands(facts) == bands(alone)
    assert sum(r is not None for r in bands(facts).values()) > parallel.PARALLEL_MIN_WORKLOADS


def test_a_bug_in_a_worker_ends_the_run(model: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from policylint.measure import parallel
    from policylint.measure.run import measure

    if not parallel.can_fork():
        pytest.fail("this platform cannot fork: --jobs never starts workers here")

    monkeypatch.setattr(parallel, "_work", _bug)
    with pytest.raises(ZeroDivisionError, match="bug while measuring"):
        measure(model, NOW, jobs=2)


def test_default_workers_are_the_cores_this_process_may_use() -> None:
    import argparse

    from policylint.session import _jobs

    expected = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert _jobs(argparse.Namespace(jobs=None)) == expected
    assert _jobs(argparse.Namespace(jobs=3)) == 3
