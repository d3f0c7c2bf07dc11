"""A progress bar for reads that take more than about a second, on a terminal only.

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

__all__ = ["DELAY_SECONDS", "TerminalProgress", "terminal_progress"]

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
