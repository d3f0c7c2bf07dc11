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
from policylint.measure import kept_reads
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
    # and keep the traces' reads whenever a run reads them: whether a run's start fell two seconds
    # after the fleet was written decided it, so a loaded machine kept them in one run and not the other
    monkeypatch.setattr(kept_reads, "_RACY_SECONDS", -60.0)


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


def _children_of(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


_SLOW_CHILD = (
    "import os, signal, sys, time\n"
    "from policylint.cache import beside\n"
    "def work():\n"
    "    open(sys.argv[1], 'w').write(str(os.getpid()))\n"
    "    time.sleep(60)\n"
    "children = beside.Beside(2)\n"
    "assert children.start(work, beside.MIN_ITEMS)\n"
    "{then}\n"
)


@pytest.mark.skipif(not beside.can_fork(), reason="children are forked on Linux only")
def test_an_interrupted_wait_stops_the_child_it_was_waiting_for(tmp_path: Path) -> None:
    """Ctrl-C while the run waits for a child: the child is stopped and reaped, not left to the system."""
    then = (
        "signal.signal(signal.SIGALRM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))\n"
        "signal.alarm(1)\n"
        "try:\n"
        "    children.join()\n"
        "except KeyboardInterrupt:\n"
        "    children.join(abandon=True)\n"
        "print(children.children)\n"
    )
    marker = tmp_path / "pid"
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-c", _SLOW_CHILD.format(then=then), str(marker)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "[]\n" and time.monotonic() - started < 30
    assert not _alive(int(marker.read_text()))


@pytest.mark.skipif(not beside.can_fork(), reason="children are forked on Linux only")
def test_a_child_ends_with_a_run_killed_outright(tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    run = subprocess.Popen([sys.executable, "-c", _SLOW_CHILD.format(then="time.sleep(60)"), str(marker)])
    try:
        for _ in range(200):
            if marker.exists() and marker.read_text():
                break
            time.sleep(0.05)
        child = int(marker.read_text())
        assert _alive(child)
        run.kill()  # SIGKILL: no finally, no exit handler runs in the run
        run.wait(timeout=30)
        for _ in range(200):
            if not _alive(child):
                break
            time.sleep(0.05)
        assert not _alive(child)
    finally:
        run.kill()


@pytest.mark.skipif(not beside.can_fork(), reason="children are forked on Linux only")
def test_a_stopped_child_removes_the_file_it_was_writing(tmp_path: Path) -> None:
    """SIGTERM (a run interrupted, a time limit reached) unwinds the child: the writer removes its temporary file."""
    from policylint.writer import write_file

    target = tmp_path / "out" / "entry.json"
    target.parent.mkdir()
    started: list[float] = []

    def parts() -> object:
        yield b"x" * 10
        started.append(1.0)
        (tmp_path / "writing").write_text("")
        time.sleep(60)
        yield b"y"

    def work() -> None:
        write_file(target, parts(), root=tmp_path, durable=False)  # type: ignore[arg-type]

    children = beside.Beside(2)
    assert children.start(work, beside.MIN_ITEMS)
    for _ in range(400):
        if (tmp_path / "writing").exists():
            break
        time.sleep(0.05)
    assert any(p.name.endswith(".tmp") for p in target.parent.iterdir())  # mid-write: the temporary file exists
    children.join(abandon=True)
    assert list(target.parent.iterdir()) == []


def test_a_child_stuck_past_its_limit_is_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child its own alarm cannot stop (signals blocked, as in a wait no handler interrupts) is killed by the run."""
    monkeypatch.setattr(beside, "MIN_ITEMS", 1)
    monkeypatch.setattr(beside, "LIMIT_SECONDS", 1)
    monkeypatch.setattr(beside, "GRACE_SECONDS", 1)
    monkeypatch.setattr(beside, "SECONDS_PER_ITEM", 0.0)

    def stuck() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGTERM})
        time.sleep(60)

    children = beside.Beside(2)
    started = time.monotonic()
    assert children.start(stuck, 1)
    children.join()
    assert time.monotonic() - started < 30 and children.children == []


def test_entries_torn_where_they_were_written_are_misses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settled: None) -> None:
    """New entries are written in place: a writer killed mid-way leaves a torn entry at its own name.

    Every entry of a filled cache cut in half (a child killed while writing each one) must
    read as a miss: the run reports what a run without the cache reports, and writes the
    entries again whole.
    """
    root = make_fleet(tmp_path / "repo", workloads=6)
    monkeypatch.setattr(beside, "MIN_ITEMS", 2)
    expected = run_cli(["check", "--no-cache", "--format", "json", *WHEN], cwd=root)
    cache = tmp_path / "c"
    monkeypatch.setenv("POLICYLINT_CACHE_DIR", str(cache))
    assert run_cli(["check", "--format", "json", "--jobs", "2", *WHEN], cwd=root) == expected
    entries = [p for p in cache.rglob("*") if p.is_file() and not p.name.startswith("secret")]
    assert len(entries) > 10
    torn: dict[Path, int] = {}
    for entry in entries:
        data = entry.read_bytes()
        entry.write_bytes(data[: len(data) // 2])
        torn[entry] = len(data) // 2
    for _ in range(2):  # torn, then written again
        assert run_cli(["check", "--format", "json", "--jobs", "2", *WHEN], cwd=root) == expected
        assert run_cli(["check", "--changed-files", "workloads/w-2.yaml", "--format", "json", *WHEN], cwd=root) == \
            run_cli(["check", "--changed-files", "workloads/w-2.yaml", "--no-cache", "--format", "json", *WHEN], cwd=root)
    # the measurements were taken again and stored whole over their torn entries
    assert any(p.exists() and p.stat().st_size > size for p, size in torn.items() if "measure-" in str(p))
