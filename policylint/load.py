"""Step 1: find files, read them safely and parse YAML with a position index.

The YAML is *composed* (not constructed) by PyYAML's safe composer, and plain
Python data is then built from the node graph by :func:`_Builder.build`. While
building, every value's start mark is recorded in a :class:`PositionIndex` keyed
by its document path, so positions live beside the data and nothing is ever
written into it.

Building ourselves (instead of ``yaml.safe_load``) buys three things:

* duplicate keys are reported instead of silently keeping the last one;
* alias expansion is bounded: every visit of a node counts, so a "billion
  laughs" document is refused after ``max_nodes`` visits instead of expanding;
* YAML timestamps stay strings, so dates validate the same way in JSON Schema
  and in editors.

Bad input never raises: every problem becomes a :class:`Finding`.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from policylint import API_VERSION
from policylint.errors import PolicylintError
from policylint.finding import Finding, Severity, Subject

DocPath = tuple[str | int, ...]

#: Defaults for the safety limits; all can be changed through :class:`LoadLimits`.
MAX_FILE_BYTES = 5 * 1024 * 1024
MAX_NODES = 100_000
MAX_DEPTH = 100
MAX_DOCUMENTS = 1_000
#: Longest number read (Python's own guard against quadratic int conversion is 4,300
#: digits; sexagesimal YAML 1.1 integers such as ``1:30:00`` are as costly).
MAX_NUMBER_CHARS = 4_300

YAML_SUFFIXES = (".yaml", ".yml")
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


@dataclass(frozen=True)
class LoadLimits:
    """Bounds that keep a hostile or accidental file from exhausting the run."""

    max_file_bytes: int = MAX_FILE_BYTES
    max_nodes: int = MAX_NODES  # per file: composed nodes, and nodes built after alias expansion
    max_depth: int = MAX_DEPTH
    max_documents: int = MAX_DOCUMENTS  # per file


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


_STYLES = {None: "plain", "": "plain", "'": "single", '"': "double", "|": "literal", ">": "folded"}


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

    def add_value(self, path: DocPath, line: int, column: int) -> None:
        self._values.setdefault(path, (line, column))

    def add_key(self, path: DocPath, line: int, column: int) -> None:
        self._keys.setdefault(path, (line, column))

    def add_span(self, path: DocPath, span: Span) -> None:
        self._spans.setdefault(path, span)
        self._values.setdefault(path, (span.line, span.column))

    def value(self, path: DocPath) -> tuple[int, int] | None:
        """Exact position of the value at ``path``, or None."""
        return self._values.get(tuple(path))

    def span(self, path: Iterable[str | int]) -> Span | None:
        """The exact :class:`Span` of the value at ``path``, or None when it is not written."""
        return self._spans.get(tuple(path))

    def spans(self) -> dict[DocPath, Span]:
        """Every value's span, by path (a copy: the index stays as built)."""
        return dict(self._spans)

    def locate(self, path: Iterable[str | int]) -> tuple[int, int]:
        """Position of ``path`` or of its nearest ancestor that has one."""
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
        return path in self._values or path in self._keys


@dataclass
class Document:
    """One YAML document of a source file, parsed to plain data."""

    source: SourceFile
    index: int
    data: Any
    positions: PositionIndex

    @property
    def file(self) -> str:
        return self.source.display

    @property
    def kind(self) -> str | None:
        k = self.data.get("kind") if isinstance(self.data, dict) else None
        return k if isinstance(k, str) else None

    @property
    def api_version(self) -> str | None:
        v = self.data.get("apiVersion") if isinstance(self.data, dict) else None
        return v if isinstance(v, str) else None

    @property
    def name(self) -> str | None:
        meta = self.data.get("metadata") if isinstance(self.data, dict) else None
        n = meta.get("name") if isinstance(meta, dict) else None
        return n if isinstance(n, str) else None

    @property
    def is_policylint(self) -> bool:
        return self.api_version == API_VERSION

    def locate(self, path: Iterable[str | int]) -> tuple[int, int]:
        return self.positions.locate(path)

    def finding(
        self,
        code: str,
        message: str,
        path: Iterable[str | int] = (),
        *,
        rule: tuple[str, Severity] | None = None,
        hint: str = "",
        subject: str = "",
        target: Subject | None = None,
        figures: tuple[float, float] | None = None,
    ) -> Finding:
        """A finding located at ``path`` inside this document.

        The steps' built-in checks give the code only: the rule's name and
        severity come from the rule catalogue (the rule files). The evaluator
        gives ``rule`` - the (name, severity) of the rule it loaded, which may
        be a team's own rule the catalogue does not hold.
        """
        from policylint.ruleset import builtin

        p = tuple(path)
        line, col = self.positions.locate(p)
        rule_name, default = builtin(code) if rule is None else rule
        return Finding(
            file=self.file,
            line=line,
            column=col,
            code=code,
            name=rule_name,
            severity=default,
            message=message,
            hint=hint,
            doc_index=self.index,
            doc_path=pointer(p),
            subject=subject,
            target=target,
            figures=figures,
        )


@dataclass
class SourceFile:
    """A file read from disk: its text, its documents and its load findings."""

    path: Path
    display: str
    text: str = ""
    documents: list[Document] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    #: refused unread (not a regular file, or over the size limit): nobody can tell
    #: whether it holds policylint documents, so it is reported even when walked
    refused: bool = False
    #: every policylint document already passed schema validation (a document-cache hit)
    validated: bool = False
    #: the document-cache key of this file's bytes, when a cache is in use and it missed
    cache_key: str | None = None

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    def file_finding(
        self, code: str, message: str, line: int = 1, column: int = 1, hint: str = "", doc_index: int = 0
    ) -> Finding:
        """A built-in finding at a line of this file; its name and severity come from the rule catalogue."""
        from policylint.ruleset import builtin

        rule_name, severity = builtin(code)
        return Finding(
            file=self.display,
            line=line,
            column=column,
            code=code,
            name=rule_name,
            severity=severity,
            message=message,
            hint=hint,
            doc_index=doc_index,
        )


class _Rejected(Exception):
    """Raised while composing or building when a limit is hit or a value cannot be read."""

    def __init__(self, message: str, mark: yaml.Mark | None, code: str = "PL005") -> None:
        super().__init__(message)
        self.message = message
        self.mark = mark
        self.code = code


@dataclass
class _BuildBudget:
    """Nodes built so far in one file, alias expansions included (shared by its documents)."""

    visits: int = 0


class _Builder:
    """Builds plain data from a composed node graph, recording positions."""

    def __init__(self, source: SourceFile, doc_index: int, limits: LoadLimits, budget: _BuildBudget) -> None:
        self.source = source
        self.doc_index = doc_index
        self.limits = limits
        self.positions = PositionIndex()
        self.budget = budget
        self.visits = 0
        self.active: set[int] = set()
        self.built: set[int] = set()  # nodes built once already (a second visit is through an alias)
        self.spans: dict[tuple[int, str | None], Span] = {}
        self.constructor = yaml.constructor.SafeConstructor()
        self.findings: list[Finding] = []

    def build(self, node: yaml.Node, path: DocPath = (), via: str | None = None) -> Any:
        """Plain data of ``node`` at ``path``; ``via`` says how a shared node was reached (alias, merge)."""
        # The composer hands an alias the anchored node itself: a node met again is an alias.
        if via is None and id(node) in self.built:
            via = "alias"
        self.built.add(id(node))
        self.visits += 1
        self.budget.visits += 1
        if self.budget.visits > self.limits.max_nodes:
            whole = "document" if self.visits > self.limits.max_nodes else "file"
            raise _Rejected(
                f"{whole} expands to more than {self.limits.max_nodes} nodes (alias expansion); refused",
                node.start_mark,
            )
        if len(path) > self.limits.max_depth:
            raise _Rejected(f"document nests deeper than {self.limits.max_depth} levels; refused", node.start_mark)
        # One Span per node and provenance: an alias bomb revisits a few nodes up to max_nodes times.
        span = self.spans.get((id(node), via))
        if span is None:
            mark, end = node.start_mark, node.end_mark
            style = _STYLES.get(node.style, "plain") if isinstance(node, yaml.ScalarNode) else None
            span = Span(mark.line + 1, mark.column + 1, end.line + 1, end.column + 1, mark.index, end.index, style, via)
            self.spans[(id(node), via)] = span
        self.positions.add_span(path, span)
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node)
        if id(node) in self.active:
            raise _Rejected("recursive alias: a node contains itself", node.start_mark)
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return [self.build(child, (*path, i), via) for i, child in enumerate(node.value)]
            if isinstance(node, yaml.MappingNode):
                return self._mapping(node, path, via)
        finally:
            self.active.discard(id(node))
        raise _Rejected(f"unsupported YAML node {type(node).__name__}", node.start_mark)  # pragma: no cover

    def _scalar(self, node: yaml.ScalarNode) -> Any:
        if node.tag == _TIMESTAMP_TAG:
            return node.value
        if node.tag in _NUMBER_TAGS and len(node.value) > MAX_NUMBER_CHARS:
            raise _Rejected(
                f"number of {len(node.value)} characters is longer than the {MAX_NUMBER_CHARS}-character limit; refused",
                node.start_mark,
            )
        try:
            return self.constructor.construct_object(node, deep=True)
        except yaml.constructor.ConstructorError as exc:
            raise _Rejected(f"cannot read value: {exc.problem}", node.start_mark) from None
        except (ValueError, LookupError, TypeError, ArithmeticError):
            # an explicit standard tag whose text is not of that type: !!float abc, !!bool maybe
            shown = node.value if len(node.value) <= 40 else node.value[:37] + "..."
            shown = shown if shown.isprintable() else repr(shown)[1:-1]
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")
            raise _Rejected(
                f"YAML syntax error: {shown!r} is not a valid {tag} value", node.start_mark, "PL001"
            ) from None

    def _key(self, node: yaml.Node) -> Any:
        if isinstance(node, yaml.ScalarNode):
            value = self._scalar(node)
            return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)
        raise _Rejected("mapping keys must be plain scalars", node.start_mark)

    def _mapping(self, node: yaml.MappingNode, path: DocPath, via: str | None) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        explicit: dict[Any, yaml.Mark] = {}
        merged: list[yaml.Node] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                if isinstance(value_node, yaml.SequenceNode):
                    merged.extend(value_node.value)
                else:
                    merged.append(value_node)
                continue
            key = self._key(key_node)
            km = key_node.start_mark
            if key in explicit:
                first = explicit[key]
                self.findings.append(
                    self.source.file_finding(
                        "PL002",
                        f"duplicate key '{key}' (first defined on line {first.line + 1}); YAML loaders silently keep"
                        " the last value",
                        line=km.line + 1,
                        column=km.column + 1,
                        hint="remove one of the two entries",
                        doc_index=self.doc_index,
                    )
                )
            else:
                explicit[key] = km
            child = (*path, key if isinstance(key, (str, int)) else str(key))
            self.positions.add_key(child, km.line + 1, km.column + 1)
            result[key] = self.build(value_node, child, via)
        # Merge keys (<<) supply defaults; explicit keys win, earlier merges win.
        for source in merged:
            value = self.build(source, path, via or "merge")
            if not isinstance(value, dict):
                raise _Rejected("merge key '<<' needs a mapping or a list of mappings", source.start_mark)
            for k, v in value.items():
                result.setdefault(k, v)
        return result


def _decode(raw: bytes, source: SourceFile) -> str | None:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        column = exc.start - (before.rfind(b"\n") + 1) + 1
        source.findings.append(
            source.file_finding(
                "PL003",
                f"file is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})",
                line=line,
                column=column,
                hint="save the file as UTF-8",
            )
        )
        return None


#: The characters YAML allows in a stream (YAML 1.1, section 5.1), as PyYAML checks them.
_NON_PRINTABLE = re.compile("[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010ffff]")


class _Composer:
    """Composes node graphs from a parser's event stream, within the limits.

    PyYAML's own composer recurses once per nesting level (a few thousand ``[``
    exhaust the Python stack) and counts nothing, so a file under the size limit
    with millions of nodes or tens of thousands of documents would be composed
    in full - tens of seconds and gigabytes - before any limit applied. This
    composer works with an explicit stack and charges every node and document
    to the file's budget as its event arrives, so such a file is refused after
    at most ``max_nodes`` nodes or ``max_documents`` documents of work.

    It needs only ``check_event``/``peek_event``/``get_event`` and ``resolve``,
    which both the pure-Python parser and libyaml's provide.
    """

    #: True for libyaml, which marks an empty value inside a flow collection one column
    #: off PyYAML's mark; such a text is composed again by the pure-Python parser
    _inexact_empty_in_flow = False
    _limits: LoadLimits
    _nodes: int
    _documents: int
    _anchors: dict[str, yaml.Node]

    def _start_budget(self, limits: LoadLimits) -> None:
        self._limits = limits
        self._nodes = 0
        self._documents = 0
        self._anchors = {}

    def next_document(self) -> yaml.Node | None:
        """The root node of the next document, or None at the end of the stream."""
        if self.check_event(yaml.StreamStartEvent):  # type: ignore[attr-defined]
            self.get_event()  # type: ignore[attr-defined]
        if self.check_event(yaml.StreamEndEvent):  # type: ignore[attr-defined]
            self.get_event()  # type: ignore[attr-defined]
            return None
        start = self.get_event()  # type: ignore[attr-defined]  # DocumentStartEvent
        self._documents += 1
        if self._documents > self._limits.max_documents:
            raise _Rejected(f"file holds more than {self._limits.max_documents} documents; refused", start.start_mark)
        node = self._compose()
        self.get_event()  # type: ignore[attr-defined]  # DocumentEndEvent
        self._anchors = {}
        return node

    def _charge(self, event: yaml.Event, depth: int, is_key: bool) -> None:
        if depth > self._limits.max_depth:
            raise _Rejected(f"document nests deeper than {self._limits.max_depth} levels; refused", event.start_mark)
        if not is_key:  # keys are bounded by the values they introduce
            self._nodes += 1
            if self._nodes > self._limits.max_nodes:
                raise _Rejected(f"file holds more than {self._limits.max_nodes} YAML nodes; refused", event.start_mark)

    def _anchor(self, anchor: str | None, node: yaml.Node, event: yaml.Event) -> None:
        if anchor is None:
            return
        if anchor in self._anchors:
            raise yaml.composer.ComposerError(
                f"found duplicate anchor {anchor!r}; first occurrence",
                self._anchors[anchor].start_mark,
                "second occurrence",
                event.start_mark,
            )
        self._anchors[anchor] = node

    def _compose(self) -> yaml.Node:
        # Open collections, each with the key node waiting for its value (mappings).
        stack: list[list[Any]] = []
        while True:
            event = self.get_event()  # type: ignore[attr-defined]
            node: yaml.Node
            is_key = bool(stack) and isinstance(stack[-1][0], yaml.MappingNode) and stack[-1][1] is None
            if isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                node = stack.pop()[0]
                node.end_mark = event.end_mark
            elif isinstance(event, yaml.AliasEvent):
                self._charge(event, len(stack), is_key)
                if event.anchor not in self._anchors:
                    raise yaml.composer.ComposerError(
                        None, None, f"found undefined alias {event.anchor!r}", event.start_mark
                    )
                node = self._anchors[event.anchor]
            elif isinstance(event, yaml.ScalarEvent):
                self._charge(event, len(stack), is_key)
                if (
                    self._inexact_empty_in_flow
                    and event.value == ""
                    and event.style not in ("'", '"', "|", ">")
                    and stack
                    and stack[-1][0].flow_style
                ):
                    raise _Diverged  # libyaml places an empty value in [...] or {...} elsewhere than PyYAML
                tag = event.tag
                if tag == "!":  # the non-specific tag: PyYAML resolves it like a plain scalar, libyaml not quite
                    tag = self.resolve(yaml.ScalarNode, event.value, (True, False))  # type: ignore[attr-defined]
                elif tag is None:
                    tag = self.resolve(yaml.ScalarNode, event.value, event.implicit)  # type: ignore[attr-defined]
                node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
                self._anchor(event.anchor, node, event)
            elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                self._charge(event, len(stack), is_key)
                tag = event.tag
                sequence = isinstance(event, yaml.SequenceStartEvent)
                kind = yaml.SequenceNode if sequence else yaml.MappingNode
                if tag is None or tag == "!":
                    tag = self.resolve(kind, None, event.implicit)  # type: ignore[attr-defined]
                node = kind(tag, [], event.start_mark, None, flow_style=event.flow_style)
                self._anchor(event.anchor, node, event)
                stack.append([node, None])
                continue
            else:  # pragma: no cover - the parser emits only the events above inside a document
                raise yaml.composer.ComposerError(None, None, f"unexpected {type(event).__name__}", event.start_mark)
            if not stack:
                return node
            top = stack[-1]
            if isinstance(top[0], yaml.SequenceNode):
                top[0].value.append(node)
            elif top[1] is None:
                top[1] = node
            else:
                top[0].value.append((top[1], node))
                top[1] = None


# PyYAML ships no type hints, so mypy sees its classes as Any.
_PYYAML_PARTS: tuple[Any, ...] = (yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, yaml.resolver.Resolver)


class _Diverged(Exception):
    """libyaml met a construct it reports differently from PyYAML; parse in pure Python."""


class _PureLoader(*_PYYAML_PARTS, _Composer):  # type: ignore[misc]
    """PyYAML's pure-Python reader, scanner and parser with the bounded composer."""

    def __init__(self, stream: str, limits: LoadLimits) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        yaml.resolver.Resolver.__init__(self)
        self._start_budget(limits)


try:  # libyaml's parser is about 15x faster; the pure-Python parser is the fallback
    from yaml._yaml import CParser as _CParser

    #: Parse with libyaml when it is installed (tests switch this off to prove the fallback).
    LIBYAML = True
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    _CParser = None
    LIBYAML = False


if _CParser is not None:

    class _CLoader(_CParser, yaml.resolver.Resolver, _Composer):  # type: ignore[misc]
        """libyaml's parser (events only) with the same bounded composer and resolver."""

        _inexact_empty_in_flow = True

        def __init__(self, stream: str, limits: LoadLimits) -> None:
            _CParser.__init__(self, stream)
            yaml.resolver.Resolver.__init__(self)
            self._start_budget(limits)


def _loader(text: str, limits: LoadLimits) -> Any:
    if LIBYAML and _CParser is not None:
        return _CLoader(text, limits)
    return _PureLoader(text, limits)


def _non_printable(source: SourceFile) -> bool:
    """Report the first character YAML forbids (NUL, other control characters); True if found."""
    bad = _NON_PRINTABLE.search(source.text)
    if bad is None:
        return False
    before = source.text[: bad.start()]
    line = before.count("\n") + 1
    column = bad.start() - (before.rfind("\n") + 1) + 1
    char = bad.group()
    source.findings.append(
        source.file_finding(
            "PL001",
            f"YAML syntax error: non-printable character U+{ord(char):04X} is not allowed in YAML",
            line,
            column,
            hint="remove the character, or write it as an escape (\"\\x00\") inside a double-quoted string",
        )
    )
    return True


def _diverges(text: str) -> bool:
    """True for text on which libyaml and PyYAML are known to disagree; it is parsed in pure Python.

    libyaml accepts some inputs PyYAML refuses (a tab after ``key:``) and
    counts columns differently after a byte-order mark inside the text; both
    were found by the differential fuzz target. The rare line breaks of YAML
    1.1 (NEL, LS, PS) go the same way. An error from libyaml already falls back
    to the pure parser; these are the cases where libyaml would succeed instead.
    """
    return any(c in text for c in _DIVERGING) or _DIVERGING_TAG.search(text) is not None


_DIVERGING = ("\t", "\ufeff", "\x85", "\u2028", "\u2029")
#: A tag handle (``!name!``) whose name is not made of word characters: PyYAML stops
#: with a scanner error, libyaml accepts it. Only tried at a ``!``, and each try ends
#: at the next space or ``!``, so the search stays linear.
_DIVERGING_TAG = re.compile(r"![^\s!]*[^0-9A-Za-z_\s!-][^\s!]*!")


def parse_text(source: SourceFile, limits: LoadLimits = LoadLimits()) -> None:
    """Parse ``source.text`` into documents and findings (in place).

    The node, document and depth limits apply while the text is composed; the
    alias-expansion limit while the data is built. With libyaml the events come
    from C; when the text has a YAML error it is parsed again in pure Python, so
    that the message and its position are the same with and without libyaml.
    Never raises for bad content.
    """
    if _non_printable(source):
        return
    # libyaml ends an unterminated last line with a virtual line break, PyYAML does
    # not: give both the same text, so that end-of-stream marks agree
    text = source.text if source.text.endswith("\n") else source.text + "\n"
    if LIBYAML and _CParser is not None and not _diverges(text):
        documents, findings = len(source.documents), len(source.findings)
        try:
            if _parse(source, _CLoader(text, limits), limits):
                return
        except _Diverged:
            pass
        del source.documents[documents:]
        del source.findings[findings:]
    _parse(source, _PureLoader(text, limits), limits)


def _parse(source: SourceFile, loader: Any, limits: LoadLimits) -> bool:
    """Compose and build every document; False when the text is not valid YAML."""
    budget = _BuildBudget()
    index = 0
    valid = True
    try:
        while True:
            node = loader.next_document()
            if node is None:
                break
            _add_document(source, node, index, limits, budget)
            index += 1
    except _Rejected as exc:
        line, col = (exc.mark.line + 1, exc.mark.column + 1) if exc.mark else (1, 1)
        source.findings.append(source.file_finding(exc.code, exc.message, line, col, doc_index=index))
    except yaml.MarkedYAMLError as exc:
        valid = False
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = exc.problem or exc.context or "invalid YAML"
        source.findings.append(
            source.file_finding("PL001", f"YAML syntax error: {problem}", line, col, doc_index=index)
        )
    except yaml.YAMLError as exc:
        valid = False
        message = " ".join(str(exc).split())
        source.findings.append(source.file_finding("PL001", f"YAML error: {message}", doc_index=index))
    finally:
        loader.dispose()
    if not source.documents and not source.findings:
        source.findings.append(
            source.file_finding("PL004", "file contains no YAML document", hint="delete the file")
        )
    return valid


def _add_document(source: SourceFile, node: yaml.Node, index: int, limits: LoadLimits, budget: _BuildBudget) -> None:
    builder = _Builder(source, index, limits, budget)
    mark = node.start_mark
    try:
        data = builder.build(node)
    except _Rejected as exc:
        m = exc.mark or mark
        source.findings.append(
            source.file_finding(exc.code, exc.message, m.line + 1, m.column + 1, doc_index=index)
        )
        return
    source.findings.extend(builder.findings)
    doc = Document(source=source, index=index, data=data, positions=builder.positions)
    if data is None:
        source.findings.append(
            source.file_finding(
                "PL004", "document is empty", mark.line + 1, mark.column + 1, doc_index=index
            )
        )
        return
    source.documents.append(doc)
    miss = api_version_near_miss(doc)
    if miss is not None:
        source.findings.append(miss)
    listed = _listed_documents(doc)
    if listed is not None:
        source.findings.append(listed)


def _listed_documents(doc: Document) -> Finding | None:
    """PL006 for a document that is a list of policylint documents instead of one.

    Such a file holds nothing policylint can read, so without this it would be
    skipped like unrelated YAML (or refused as holding no documents when named),
    and every rule that should judge its items would stay silent.
    """
    if not isinstance(doc.data, list):
        return None
    for i, item in enumerate(doc.data):
        if isinstance(item, dict) and isinstance(item.get("apiVersion"), str) and item["apiVersion"] == API_VERSION:
            return doc.finding(
                "PL006",
                "a policylint document must be a mapping, got a list of documents",
                (i,),
                hint="write each item as a document of its own, separated by '---'",
            )
    return None


#: The kinds policylint reads, and spec fields no other kind of document uses.
_OUR_KINDS = {"workload", "cluster", "proposal"}
_OUR_SPEC_FIELDS = {"gpusPerReplica", "perGpuConcurrency", "coldStartSeconds"}
_API_KEY_SPELLING = re.compile(r"[-_\s]")


def _looks_like_our_spec(spec: Any) -> bool:
    if not isinstance(spec, dict):
        return False
    if _OUR_SPEC_FIELDS & {k for k in spec if isinstance(k, str)}:
        return True
    pools = spec.get("pools")
    if isinstance(pools, list) and any(isinstance(p, dict) and "reservedGpus" in p for p in pools):
        return True
    return "requests" in spec and "justification" in spec


def api_version_near_miss(doc: Document) -> Finding | None:
    """A finding when ``doc`` looks like a policylint document but will not be read as one.

    ``policylint/v2``, ``policylint.dev/v1``, an ``apiversion`` key, or no
    apiVersion at all on a document with our kinds or fields: without this the
    document would be skipped like any unrelated YAML, and every rule that
    should judge it would stay silent.
    """
    data = doc.data
    if not isinstance(data, dict) or doc.is_policylint or is_scheduler_doc(doc):
        return None
    hint = f"start the document with apiVersion: {API_VERSION}"

    def finding(message: str, path: DocPath) -> Finding:
        return doc.finding("PL007", message, path, hint=hint)

    for key in data:
        if isinstance(key, str) and key != "apiVersion" and _API_KEY_SPELLING.sub("", key).lower() == "apiversion":
            return finding(f"key '{key}' is not 'apiVersion' (keys are case-sensitive), so the document is not read", (key,))
    api = data.get("apiVersion")
    if isinstance(api, str):
        if "policylint" in _API_KEY_SPELLING.sub("", api).lower():
            return finding(f"apiVersion '{api}' is not {API_VERSION}, so the document is not read", ("apiVersion",))
        return None
    kind = data.get("kind")
    ours = isinstance(kind, str) and kind.lower() in _OUR_KINDS
    if ours or (kind is None and _looks_like_our_spec(data.get("spec"))):
        what = f"a {kind}" if ours else "a document with policylint fields"
        if "apiVersion" in data:
            return finding(f"{what} with apiVersion {api!r} is not read; policylint reads {API_VERSION}", ("apiVersion",))
        return finding(f"{what} without apiVersion is not read; policylint reads {API_VERSION}", ())
    return None


def load_file(path: Path, display: str, limits: LoadLimits = LoadLimits(), cache_dir: Path | None = None) -> SourceFile:
    """Read and parse one file. Never raises for bad content.

    With ``cache_dir``, a file whose bytes were loaded and validated cleanly before
    comes from the document cache (see :mod:`policylint.cache`); on a miss the key
    is left on the source so that the caller can store it once validated.
    """
    from policylint.safeio import RefusedFile, UnreadableFile, read_bytes

    source = SourceFile(path=path, display=display)
    try:
        raw = read_bytes(path, limit=limits.max_file_bytes)
    except RefusedFile as exc:
        source.refused = True
        source.findings.append(source.file_finding("PL005", exc.message))
        return source
    except UnreadableFile as exc:
        source.findings.append(source.file_finding("PL003", exc.message))
        return source
    if cache_dir is not None:
        from policylint import cache

        key = cache.document_key(raw, limits)
        hit: SourceFile | None = cache.load_source(cache_dir, key, path, display)
        if hit is not None:
            return hit
        source.cache_key = key
    text = _decode(raw, source)
    if text is None:
        # Kept for display and for telling a walked file of ours from unrelated YAML
        # (looks_relevant): the undecodable bytes show as U+FFFD; nothing is parsed.
        source.text = raw.decode("utf-8", errors="replace")
        return source
    source.text = text
    if not text.strip():
        source.findings.append(
            source.file_finding("PL004", "file is empty", hint="delete the file or add a document")
        )
        return source
    parse_text(source, limits)
    return source


def display_path(path: Path, cwd: Path | None = None) -> str:
    """Path as shown to the user: relative to the working directory when below it."""
    cwd = cwd or Path.cwd()
    try:
        return path.resolve().relative_to(cwd.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def discover(paths: Iterable[Path], exclude: Iterable[str] = (), root: Path | None = None) -> Iterator[tuple[Path, bool]]:
    """Yield ``(file, explicit)`` for YAML files under ``paths``, sorted.

    ``explicit`` is True for files named on the command line: those are always
    reported on, while files found by walking a folder are skipped silently when
    they hold nothing policylint reads. Hidden folders (``.git``) are skipped.
    A missing path is a usage error.
    """
    patterns = list(exclude)
    seen: set[Path] = set()
    for given in paths:
        if not given.exists() and not given.is_symlink():
            raise PolicylintError(f"path does not exist: {given}")
        if not given.is_dir():  # a file, or something that is not a folder (refused when read)
            if given.resolve() not in seen:
                seen.add(given.resolve())
                yield given, True
            continue
        found: list[Path] = []
        for dirpath, dirnames, filenames in os.walk(given):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in ("node_modules", "__pycache__"))
            for name in filenames:
                if name.endswith(YAML_SUFFIXES):
                    found.append(Path(dirpath) / name)
        for f in sorted(found):
            rel = _relative_for_glob(f, root)
            if any(fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(f.name, pat) for pat in patterns):
                continue
            if f.resolve() not in seen:
                seen.add(f.resolve())
                yield f, False


def _relative_for_glob(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            pass
    return path.as_posix()


def looks_relevant(source: SourceFile) -> bool:
    """True when a walked file holds (or tries to hold) a policylint document.

    A file found by walking a folder is only reported on when one of its
    documents declares a known apiVersion or nearly ours (PL007) or is a list of
    policylint documents (PL006), when it was
    refused unread (too large, not a regular file: it may well be ours), or - for
    files that did not parse - when its text mentions ``policylint/`` at all, so
    that a syntax error in a policylint file is never hidden while unrelated
    YAML stays silent.
    """
    if source.refused or any(f.code in ("PL006", "PL007") for f in source.findings):
        return True
    if any(d.is_policylint or is_scheduler_doc(d) for d in source.documents):
        return True
    if not source.documents and source.findings:
        return "policylint/" in source.text
    return False


def is_scheduler_doc(doc: Document) -> bool:
    """True for Kueue and Volcano documents, which the scheduler adapters read."""
    api = doc.api_version or ""
    return api.startswith(("kueue.x-k8s.io/", "scheduling.volcano.sh/", "batch.volcano.sh/"))


def read_settings_yaml(path: Path, limits: LoadLimits = LoadLimits()) -> Any:
    """Parse a configuration or rule file with the same safety limits as documents.

    Returns the data of its single document (None for an empty file). Any problem
    - syntax, duplicate key, alias bomb, several documents - is a
    :class:`PolicylintError` naming the file and the position.
    """
    source = load_file(path, str(path), limits)
    problems = [f for f in source.findings if f.code != "PL004"]
    if problems and not source.text:  # refused or unreadable before any YAML was seen
        raise PolicylintError(problems[0].message, source=str(path))
    if problems:
        first = min(problems, key=lambda f: (f.line, f.column))
        message = first.message.removeprefix("YAML syntax error: ")
        raise PolicylintError(f"invalid YAML at line {first.line}, column {first.column}: {message}", source=str(path))
    if len(source.documents) > 1:
        second = source.documents[1]
        line, _ = second.positions.locate(())
        raise PolicylintError(f"expected one YAML document, found another at line {line}", source=str(path))
    return source.documents[0].data if source.documents else None
