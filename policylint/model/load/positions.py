"""Where each value of a document is written: document paths and the position index.

A document path is the tuple of keys and list indexes that leads to a value
(``("spec", "pools", 0, "reservedGpus")``); :func:`pointer` writes it as text.
The :class:`PositionIndex` maps each path to the line and column of its key and
value and to the :class:`Span` of the value, so positions live beside the data.
A :class:`ScalarScan` says where the scalars of a whole text are, for finding
the comments between them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple


#: The text for which a parse records where the scalars are (every suppression comment holds it).
NEEDLE = "policylint:"

DocPath = tuple[str | int, ...]


def pointer(path: Iterable[str | int]) -> str:
    """A document path as text: keys escaped as in a JSON Pointer (RFC 6901), joined by ``/``.

    ``~`` is written ``~0`` and ``/`` is written ``~1``, so a Volcano key such as
    ``nvidia.com/gpu`` stays one step of the path. The leading ``/`` of a JSON
    Pointer is left out (``spec/pools/0/reservedGpus``): a path without ``/`` or
    ``~`` in its keys reads as it always did, so recorded baselines still match.
    """
    return "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in path)


def parse_pointer(text: str) -> tuple[str, ...]:
    """The keys of a path written by :func:`pointer` (list indexes stay text)."""
    if not text:
        return ()
    return tuple(p.replace("~1", "/").replace("~0", "~") for p in text.split("/"))


class Span(NamedTuple):
    """Where one node of a document is written in its file.

    ``line``/``column`` and ``end_line``/``end_column`` are 1-based (the end is
    just past the node); ``start``/``end`` are character offsets into the
    source's text, so ``text[start:end]`` is exactly the node as written.
    ``style`` is a scalar's style - ``plain``, ``single``, ``double``,
    ``literal`` or ``folded`` - and None for a mapping or sequence.
    ``via`` is ``alias`` when the value reached this path through an alias
    (``*name``), ``merge`` when through a merge key (``<<``), None when it is
    written right there: a shared text must not be edited in place.
    """

    line: int
    column: int
    end_line: int
    end_column: int
    start: int
    end: int
    style: str | None
    via: str | None = None  # a tuple, not a dataclass: an alias bomb builds up to max_nodes of them


class PositionIndex:
    """Maps a document path to where it is written: key and value positions, value spans.

    Two marks are kept per mapping entry: where its key starts and where its
    value starts. :meth:`locate` prefers the key, because ``reservedGpus: 64``
    should point at ``reservedGpus`` and a nested block should point at its
    heading rather than at its first child. Every value also has a
    :class:`Span` (start and end, scalar style, alias provenance), which the
    byte-preserving editor of ``--fix`` and ``export --update`` builds on.
    """

    def __init__(self) -> None:
        self._values: dict[DocPath, tuple[int, int]] = {}
        self._keys: dict[DocPath, tuple[int, int]] = {}
        self._spans: dict[DocPath, Span] = {}
        self._fill: Callable[[PositionIndex], None] | None = None

    @classmethod
    def deferred(cls, fill: Callable[[PositionIndex], None]) -> PositionIndex:
        """An index that ``fill`` fills the first time it is read (or added to).

        The document cache hands back a thousand files' indexes on a warm run,
        and a narrowed run reads the positions of a few: each is decoded on
        first use instead of all of them up front.
        """
        index = cls()
        index._fill = fill
        return index

    def _ready(self) -> None:
        fill = self._fill
        if fill is not None:
            self._fill = None
            fill(self)

    def add_value(self, path: DocPath, line: int, column: int) -> None:
        self._ready()
        self._values.setdefault(path, (line, column))

    def add_key(self, path: DocPath, line: int, column: int) -> None:
        self._ready()
        self._keys.setdefault(path, (line, column))

    def forget(self, path: DocPath) -> None:
        """Drop what is known of ``path`` and everything under it.

        A key written twice in one mapping keeps its last value (as YAML loaders do), so
        its positions must be those of the last occurrence, not of the one it replaced.
        """
        self._ready()
        size = len(path)
        for table in (self._keys, self._values, self._spans):
            for known in [known for known in table if known[:size] == path]:
                del table[known]

    def add_span(self, path: DocPath, span: Span) -> None:
        self._ready()
        self._spans.setdefault(path, span)
        self._values.setdefault(path, (span.line, span.column))

    def entries(
        self,
    ) -> tuple[dict[DocPath, tuple[int, int]], dict[DocPath, tuple[int, int]], dict[DocPath, Span]]:
        """Copies of the key marks, value marks and spans, by path (what the document cache stores)."""
        self._ready()
        return dict(self._keys), dict(self._values), dict(self._spans)

    def value(self, path: DocPath) -> tuple[int, int] | None:
        """Exact position of the value at ``path``, or None."""
        self._ready()
        return self._values.get(tuple(path))

    def span(self, path: Iterable[str | int]) -> Span | None:
        """The exact :class:`Span` of the value at ``path``, or None when it is not written."""
        self._ready()
        return self._spans.get(tuple(path))

    def spans(self) -> dict[DocPath, Span]:
        """Every value's span, by path (a copy: the index stays as built)."""
        self._ready()
        return dict(self._spans)

    def locate(self, path: Iterable[str | int]) -> tuple[int, int]:
        """Position of ``path`` or of its nearest ancestor that has one."""
        self._ready()
        p = tuple(path)
        while True:
            if p in self._keys:
                return self._keys[p]
            if p in self._values:
                return self._values[p]
            if not p:
                return (1, 1)
            p = p[:-1]

    def __contains__(self, path: object) -> bool:
        self._ready()
        return path in self._values or path in self._keys


@dataclass
class ScalarScan:
    """Where the scalars of a text are, as far as the parser read it (for finding its comments).

    ``starts`` and ``ends`` are the character offsets of every scalar event in
    text order, keys included (two lists: the comment search bisects ``starts``). ``read_to`` is the offset up to which the text is
    known: all of it when the parser reached the end of the stream, else the end
    of the last scalar read before a YAML error or a limit stopped it (past that
    point an unterminated quote may hide a ``#``).
    """

    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    read_to: int = 0

    def finish(self, text_length: int, complete: bool) -> None:
        """Close the scan: the whole text is known when the parser reached the end of the stream."""
        self.read_to = text_length if complete else (self.ends[-1] if self.ends else 0)
