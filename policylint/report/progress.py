"""Progress bars for reads and ``check`` runs that take more than about a second, on a terminal only.

The bar goes to standard error, so JSON on standard output stays clean, and it
is drawn only when standard error is a terminal: in CI logs, pipes and files
nothing is printed. It appears after :data:`DELAY_SECONDS`, so ordinary traces,
read in a fraction of a second, never flash one. rich is imported only when a
bar is actually shown.
"""

from __future__ import annotations

import os
import threading
from typing import Any

__all__ = ["DELAY_SECONDS", "CheckProgress", "TerminalProgress", "check_progress", "terminal_progress"]

DELAY_SECONDS = 1.0
"""Reads shorter than this show nothing."""


class TerminalProgress:
    """A :class:`~policylint.readers.progress.Listener` drawing a transient rich bar."""

    def __init__(self, console: Any, delay: float = DELAY_SECONDS) -> None:
        self.console = console
        self.delay = delay
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._bar: Any = None
        self._task: Any = None
        self._name = ""
        self._total = 0
        self._done = 0
        self._open = False

    def begin(self, name: str, total: int) -> None:
        """Start the clock; the bar appears if the read is still going after the delay."""
        from policylint.report.safe_text import escape_controls

        with self._lock:
            # the file's name as the user wrote it: no control character reaches the terminal
            self._name, self._total, self._done, self._open = escape_controls(name), total, 0, True
        self._timer = threading.Timer(self.delay, self._show)
        self._timer.daemon = True
        self._timer.start()

    def _show(self) -> None:
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

        with self._lock:
            if not self._open:
                return
            self._bar = Progress(
                # markup=False: "[...]" in a file name is text, not a rich style or link
                TextColumn("reading {task.description}", markup=False),
                BarColumn(),
                DownloadColumn(),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self._task = self._bar.add_task(self._name, total=self._total or None, completed=self._done)
            self._bar.start()

    def advance(self, done: int) -> None:
        """Move the bar to ``done`` bytes."""
        with self._lock:
            self._done = done
            if self._bar is not None:
                self._bar.update(self._task, completed=done)

    def end(self) -> None:
        """Stop the clock and take the bar away."""
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            self._open = False
            if self._bar is not None:
                self._bar.update(self._task, completed=self._total)
                self._bar.stop()
                self._bar = None

    @property
    def shown(self) -> bool:
        """Whether a bar is on screen now."""
        return self._bar is not None


def terminal_progress(delay: float | None = None) -> TerminalProgress | None:
    """A progress listener when standard error is a terminal, else None (nothing is drawn).

    rich decides what a terminal is: a TTY, or a terminal forced through its
    environment (``TTY_COMPATIBLE=1``), never a pipe or a file.
    """
    import sys

    if not sys.stderr.isatty() and "TTY_COMPATIBLE" not in os.environ:
        return None  # the common CI case: no rich import at all
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal:
        return None
    return TerminalProgress(console, DELAY_SECONDS if delay is None else delay)


#: Formats other programs read: a run that prints one of them on standard output shows no bar.
MACHINE_FORMATS = frozenset({"json", "sarif", "junit", "github", "gitlab"})


class CheckProgress:
    """A transient bar on standard error while ``check`` runs, once it has run for :data:`DELAY_SECONDS`.

    ``check`` cannot tell in advance how long its steps take (the measurement cache
    may answer at once, or every trace may be read afresh, in other processes), so
    the bar runs without an end: a spinner, the step, the file being read when the
    readers report one (:mod:`policylint.readers.progress`), its bytes, and the time
    so far. It is a :class:`~policylint.readers.progress.Listener` for those reads.
    """

    def __init__(self, console: Any, delay: float = DELAY_SECONDS) -> None:
        self.console = console
        self.delay = delay
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._bar: Any = None
        self._task: Any = None
        self._step = "checking"
        self._reading: tuple[str, int] | None = None
        self._done = 0
        self._open = False

    def start(self, step: str = "checking") -> None:
        """Start the clock; the bar appears if the run is still going after the delay."""
        with self._lock:
            self._step, self._open = step, True
        if self._timer is None:
            self._timer = threading.Timer(self.delay, self._show)
            self._timer.daemon = True
            self._timer.start()

    def step(self, step: str) -> None:
        """Name what the run does now (``checking``, ``fixing``, ``checking again``)."""
        with self._lock:
            self._step = step
            self._update()

    def _description(self) -> str:
        if self._reading is None:
            return self._step
        return f"{self._step}: reading {self._reading[0]}"

    def _update(self) -> None:
        if self._bar is not None:
            total = self._reading[1] if self._reading else None
            self._bar.update(self._task, description=self._description(), total=total or None, completed=self._done)

    def _show(self) -> None:
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        with self._lock:
            if not self._open:
                return
            self._bar = Progress(
                SpinnerColumn(),
                # markup=False: "[...]" in a file name is text, not a rich style or link
                TextColumn("{task.description}", markup=False),
                BarColumn(),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self._task = self._bar.add_task(self._description(), total=None)
            self._bar.start()
            self._update()

    # -- policylint.readers.progress.Listener --------------------------------------------------

    def begin(self, name: str, total: int) -> None:
        from policylint.report.safe_text import escape_controls

        with self._lock:
            self._reading, self._done = (escape_controls(name), total), 0
            self._update()

    def advance(self, done: int) -> None:
        with self._lock:
            self._done = done
            self._update()

    def end(self) -> None:
        with self._lock:
            self._reading, self._done = None, 0
            self._update()

    def stop(self) -> None:
        """Take the bar away (before anything is written to the terminal)."""
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            self._open = False
            if self._bar is not None:
                self._bar.stop()
                self._bar = None

    @property
    def shown(self) -> bool:
        """Whether a bar is on screen now."""
        return self._bar is not None


def check_progress(stdout_formats: list[str]) -> CheckProgress | None:
    """The bar of a ``check`` run, or None where none may be drawn.

    None when standard error is not a terminal (pipes, files, CI logs), when the
    ``CI`` variable is set (a CI job given a terminal still keeps its log clean), and
    when a report other programs read goes to standard output. The delay is
    :data:`DELAY_SECONDS`; ``POLICYLINT_PROGRESS_DELAY`` (seconds) changes it.
    """
    import sys

    if os.environ.get("CI", "").lower() not in ("", "0", "false") or not sys.stderr.isatty():
        return None
    if any(fmt in MACHINE_FORMATS for fmt in stdout_formats):
        return None
    try:
        delay = float(os.environ.get("POLICYLINT_PROGRESS_DELAY", DELAY_SECONDS))
    except ValueError:
        delay = DELAY_SECONDS
    from rich.console import Console

    return CheckProgress(Console(stderr=True), max(0.0, delay))
