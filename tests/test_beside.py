"""Cache work done beside the run (:mod:`policylint.cache.beside`): the same cache, the same report.

A run allowed more than one process keeps its documents and records the repository
index in forked children. What they leave must be byte for byte what the same run
leaves doing the work itself, and nothing a child does - failing, dying, hanging -
may change or hold up what the run reports.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_cli
from test_neighbours import make_fleet

from policylint.cache import beside, digests
from policylint.engine import index_run, linter, repo_index
from policylint.model.load import document_pack_cache

WHEN = ["--now", "2026-12-01"]


def _tree(folder: Path) -> dict[str, bytes]:
    return {os.path.relpath(p, folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture()
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fleet's files were just written: index, pack and hash them at once (as files settled long ago)."""
    monkeypatch.setattr(repo_index, "RACY_SECONDS", 0.0)
    monkeypatch.setattr(document_pack_cache, "RACY_SECONDS", 0.0)
    monkeypatch.setattr(digests, "_RACY_SECONDS", -60.0)


def _forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the children the runs fork (the real fork is made)."""
    made: list[int] = []
    real = os.fork

    def counted() -> int:
        made.append(1)
        return real()

    monkeypatch.setattr(os, "fork", counted)
    return made


def test_a_child_leaves_the_cache_the_run_leaves_doing_the_work_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settled: None
) -> None:
    root = make_fleet(tmp_path / "repo", workloads=8)
    monkeypatch.setattr(beside, "MIN_ITEMS", 2)  # a small fleet stands in for a large one
    inline, forked = tmp_path / "inline", tmp_path / "forked"
    expected = run_cli(["check", "--no-cache", "--format", "json", *WHEN], cwd=root)

    monkeypatch.setenv("POLICYLINT_CACHE_DIR", str(inline))
    with monkeypatch.context() as m:
        m.setattr(beside.Beside, "forks", lambda self, items: False)
        made = _forks(m)
        assert run_cli(["check", "--format", "json", "--jobs", "2", *WHEN], cwd=root) == expected
        assert made == []
    forked.mkdir()
    secret = next(inline.glob("secret-v*"))
    shutil.copy2(secret, forked / secret.name)  # the same seals

    monkeypatch.setenv("POLICYLINT_CACHE_DIR", str(forked))
    with monkeypatch.context() as m:
        made = _forks(m)
        assert run_cli(["check", "--format", "json", "--jobs", "2", *WHEN], cwd=root) == expected
        assert len(made) == 2  # the documents, then the index
    left = _tree(inline)
    assert any(name.startswith("repoindex-") for name in left) and any(name.startswith("docpack-") for name in left)
    assert sum(name.startswith("documents-") for name in left) == 9  # the cluster and eight workloads
    assert _tree(forked) == left

    # and the next runs, narrowed or not, take what the child wrote as they take what the run wrote
    for args in (["--changed-files", "workloads/w-3.yaml"], []):
        with monkeypatch.context() as m:
            made = _forks(m)
            warm = run_cli(["check", *args, "--format", "json", "--jobs", "2", *WHEN], cwd=root)
        monkeypatch.setenv("POLICYLINT_CACHE_DIR", str(inline))
        assert warm == run_cli(["check", *args, "--format", "json", "--jobs", "2", *WHEN], cwd=root)
        monkeypatch.setenv("POLICYLINT_CACHE_DIR", str(forked))
        assert made == []  # a warm run has nothing to keep or record
    assert _tree(forked) == _tree(inline)


def test_one_process_small_repositories_and_runs_without_a_cache_fork_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settled: None
) -> None:
    root = make_fleet(tmp_path / "repo", workloads=4)
    made = _forks(monkeypatch)
    monkeypatch.setenv("POLICYLINT_CACHE_DIR", str(tmp_path / "c1"))
    run_cli(["check", "--format", "json", "--jobs", "2", *WHEN], cwd=root)  # fewer items than MIN_ITEMS
    monkeypatch.setattr(beside, "MIN_ITEMS", 2)
    monkeypatch.setenv("POLICYLINT_CACHE_DIR", str(tmp_path / "c2"))
    run_cli(["check", "--format", "json", "--jobs", "1", *WHEN], cwd=root)  # one process asked for
    run_cli(["check", "--format", "json", "--jobs", "2", "--no-cache", *WHEN], cwd=root)  # nothing to write
    assert made == []
    assert any((tmp_path / "c1").glob("repoindex-*/*/*")) and any((tmp_path / "c2").glob("repoindex-*/*/*"))


@pytest.mark.parametrize("fails", ["documents", "index"])
def test_a_child_that_dies_changes_nothing_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settled: None, fails: str
) -> None:
    """A child killed outright loses its entries; this run and the next report what a run without a cache does."""
    root = make_fleet(tmp_path / "repo", workloads=6)
    monkeypatch.setattr(beside, "MIN_ITEMS", 2)
    expected = run_cli(["check", "--no-cache", "--format", "json", *WHEN], cwd=root)

    def die(*args: object) -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    cache = tmp_path / "c"
    monkeypatch.setenv("POLICYLINT_CACHE_DIR", str(cache))
    with monkeypatch.context() as m:
        if fails == "documents":
            m.setattr(linter, "_keep_sources", die)
        else:
            m.setattr(index_run, "_record", die)
        made = _forks(m)
        assert run_cli(["check", "--format", "json", "--jobs", "2", *WHEN], cwd=root) == expected
        assert len(made) == 2
    lost = "documents-" if fails == "documents" else "repoindex-"
    assert not any(name.startswith(lost) for name in _tree(cache))
    assert run_cli(["check", "--format", "json", "--jobs", "2", *WHEN], cwd=root) == expected
    assert run_cli(["check", "--changed-files", "workloads/w-2.yaml", "--format", "json", "--jobs", "2", *WHEN],
                   cwd=root) == run_cli(["check", "--changed-files", "workloads/w-2.yaml", "--no-cache", "--format",
                                         "json", *WHEN], cwd=root)


def test_a_child_is_stopped_at_its_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(beside, "MIN_ITEMS", 1)
    monkeypatch.setattr(beside, "LIMIT_SECONDS", 1)
    monkeypatch.setattr(beside, "SECONDS_PER_ITEM", 0.0)
    children = beside.Beside(2)
    started = time.monotonic()
    assert children.start(lambda: time.sleep(60), 1)
    children.join()
    assert time.monotonic() - started < 30  # the alarm ended it, not the sleep


def test_a_failing_run_stops_its_children(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(beside, "MIN_ITEMS", 1)
    children = beside.Beside(2)
    started = time.monotonic()
    assert children.start(lambda: time.sleep(60), 1)
    children.join(abandon=True)
    assert time.monotonic() - started < 30 and children.children == []


def test_work_too_small_or_a_single_process_is_done_here() -> None:
    done: list[int] = []
    assert not beside.Beside(2).start(lambda: done.append(os.getpid()), beside.MIN_ITEMS - 1)
    assert not beside.Beside(1).start(lambda: done.append(os.getpid()), 10 * beside.MIN_ITEMS)
    assert done == [os.getpid(), os.getpid()]


def test_nothing_buffered_is_written_twice(tmp_path: Path) -> None:
    """Output the run buffered before the fork reaches its reader once: the child flushes nothing of it."""
    program = (
        "import sys\n"
        "from policylint.cache import beside\n"
        "sys.stdout.write('before the fork')\n"  # a pipe: block-buffered, still in the buffer
        "children = beside.Beside(2)\n"
        "assert children.start(lambda: None, beside.MIN_ITEMS)\n"
        "children.join()\n"
        "sys.stdout.write(' and after')\n"
    )
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert out.stdout == "before the fork and after"
