"""Cache writing beside the run: work that only serves later runs, done in a forked child.

A run that fills the cache does work its own report never reads: it keeps every
clean file's documents (:func:`policylint.model.load.files.cache_source`) and the
document pack, and records every workload it viewed in the repository index
(:class:`policylint.engine.repo_index.Recorder`). At 10,000 workloads that is about
ten seconds of one process, done while the run's other core waits for the
single-process steps (pooling, views, rules). When the run may use more than one
process (``--jobs``) and there is enough of it, :meth:`Beside.start` forks a child
that does the work from the state the run has at that moment, while the run goes
on; :meth:`Beside.join` waits for every child before the run returns, so that a
command's cache is complete when it ends, as when the work is done inline.

What a child writes goes through the same code and the same safe writer as inline;
it changes nothing the run reports (a cache can make a run faster, never different).
A child that fails, is killed or cannot be forked loses only cache entries: the
work is then done inline (no fork) or the next run does it. A child never outlives
its time limit (:data:`LIMIT_SECONDS` plus :data:`SECONDS_PER_ITEM` per item): its own
alarm stops it, and the run kills a child stuck where the alarm cannot reach it. A
child that is stopped removes the file it was writing, and none outlives its run: an
interrupted run stops its children, and a run killed outright takes them with it
(:func:`die_with_parent`).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable

#: less work than this (files to keep, workloads to record) is done inline: a fork of a large
#: process costs milliseconds, and a small repository's cache work takes less
MIN_ITEMS = 200
#: a child's time limit: this, plus :data:`SECONDS_PER_ITEM` for each item of its work
LIMIT_SECONDS = 120
SECONDS_PER_ITEM = 0.01
#: after its time limit (or after being asked to stop), how long a child has before it is killed
GRACE_SECONDS = 5


def can_fork() -> bool:
    """Only where ``fork`` is the platform's own (Linux): elsewhere the work is done inline."""
    return sys.platform.startswith("linux") and hasattr(os, "fork")


def die_with_parent(parent: int) -> None:
    """In a forked child: be sent SIGTERM when the process that forked it ends, however it ends.

    A parent killed outright (SIGKILL, or SIGTERM with its default action) runs no
    ``finally``; the kernel's parent-death signal stops its children instead
    (``prctl(PR_SET_PDEATHSIG)``, Linux). If the parent died before the request
    was made, the child ends at once. Elsewhere, nothing is asked.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (ImportError, OSError, AttributeError):  # a Python without ctypes: the child is only not tied
        return
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds: a file being written is removed by its writer


class Beside:
    """The children of one run; :meth:`join` before the run returns."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        #: (pid, the instant by which it must have ended, by :func:`time.monotonic`)
        self.children: list[tuple[int, float]] = []

    def forks(self, items: int) -> bool:
        """Whether :meth:`start` would hand work of this size to a child."""
        return self.jobs > 1 and items >= MIN_ITEMS and can_fork()

    def start(self, work: Callable[[], None], items: int) -> bool:
        """Do ``work`` in a forked child when allowed and worth it, else here; True when a child took it.

        ``items`` is the size of the work (files, workloads), for the threshold and the time limit.
        ``work`` must not write to the run's output, and must leave the state the run reads as it was
        (a child's changes are its own; done inline, they are the run's).
        """
        if not self.forks(items):
            work()
            return False
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()  # nothing buffered is written twice (a child never flushes, see below)
            except (OSError, ValueError):
                pass
        limit = int(LIMIT_SECONDS + SECONDS_PER_ITEM * items)
        parent = os.getpid()
        try:
            pid = os.fork()
        except OSError:
            work()
            return False
        if pid == 0:  # pragma: no cover - the child; its effect (the entries) is what the tests compare
            code = 1
            try:
                import gc

                gc.disable()  # short-lived: the collector would only copy the parent's pages
                signal.signal(signal.SIGTERM, _stop)
                signal.signal(signal.SIGALRM, _stop)
                signal.signal(signal.SIGINT, _stop)
                signal.alarm(limit)
                die_with_parent(parent)
                try:
                    os.nice(19)  # the run's own processes come first; this uses what they leave
                except OSError:
                    pass
                work()
                code = 0
            except BaseException:  # noqa: BLE001 - a failed child loses cache entries, nothing else
                code = 1
            finally:
                os._exit(code)  # no exit handlers, no flushing of the parent's buffers
        self.children.append((pid, time.monotonic() + limit + GRACE_SECONDS))
        return True

    def join(self, abandon: bool = False) -> None:
        """Wait for every child (``abandon``: stop them first, when the run is being interrupted).

        A child still running past its time limit (one stuck where its own alarm cannot
        reach it) is killed, so that waiting for it always ends.
        """
        while self.children:
            pid, deadline = self.children[0]
            if abandon:
                _signal(pid, signal.SIGTERM)
                deadline = min(deadline, time.monotonic() + GRACE_SECONDS)
            if not _wait(pid, deadline):
                _signal(pid, signal.SIGKILL)
                _wait(pid, None)
            self.children.pop(0)  # only once reaped: an interrupted wait leaves it for the next join


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except OSError:
        pass


def _wait(pid: int, deadline: float | None) -> bool:
    """Reap ``pid``; False when it is still running at ``deadline`` (None: wait as long as it takes)."""
    while True:
        try:
            done, _ = os.waitpid(pid, 0 if deadline is None else os.WNOHANG)
        except ChildProcessError:
            return True
        if done:
            return True
        left = deadline - time.monotonic() if deadline is not None else 0.0
        if left <= 0:
            return False
        time.sleep(min(0.02, left))
