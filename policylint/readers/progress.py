"""Progress of long reads, told to whoever listens; the readers know nothing of terminals.

A reader wraps its work in :func:`reading` and reports bytes done with
:func:`advance`; without a listener (the default, and always in the library)
both cost a context-variable lookup. The command line installs a listener with
:func:`listen` that draws a bar on a terminal (:mod:`policylint.report.progress`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol

__all__ = ["Listener", "advance", "listen", "reading"]


class Listener(Protocol):
    """Receives the progress of one read at a time."""

    def begin(self, name: str, total: int) -> None:
        """A read of ``total`` bytes of the file ``name`` starts."""

    def advance(self, done: int) -> None:
        """``done`` bytes of the file have been read so far."""

    def end(self) -> None:
        """The read is over (finished or failed)."""


_LISTENER: ContextVar[Listener | None] = ContextVar("policylint_read_progress", default=None)
_DEPTH: ContextVar[int] = ContextVar("policylint_read_depth", default=0)


@contextmanager
def listen(listener: Listener | None) -> Iterator[None]:
    """Send the progress of the reads inside the block to ``listener`` (None: to nobody)."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


@contextmanager
def reading(name: str, total: int) -> Iterator[None]:
    """One read of a file of ``total`` bytes; reads nested inside it are part of it."""
    listener = _LISTENER.get()
    depth = _DEPTH.get()
    if listener is None or depth:
        yield
        return
    token = _DEPTH.set(depth + 1)
    listener.begin(name, total)
    try:
        yield
    finally:
        listener.end()
        _DEPTH.reset(token)


def advance(done: int) -> None:
    """Report ``done`` bytes of the current file read."""
    listener = _LISTENER.get()
    if listener is not None:
        listener.advance(done)
