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
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from policylint import API_VERSION
from policylint.errors import PolicylintError
from policylint.finding import Finding, Severity

DocPath = tuple[str | int, ...]

#: Defaults for the safety limits; all can be changed through :class:`LoadLimits`.
MAX_FILE_BYTES = 5 * 1024 * 1024
MAX_NODES = 100_000
MAX_DEPTH = 100

YAML_SUFFIXES = (".yaml", ".yml")
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_MERGE_TAG = "tag:yaml.org,2002:merge"


@dataclass(frozen=True)
class LoadLimits:
    """Bounds that keep a hostile or accidental file from exhausting the run."""

    max_file_bytes: int = MAX_FILE_BYTES
    max_nodes: int = MAX_NODES
    max_depth: int = MAX_DEPTH


class PositionIndex:
    """Maps a document path to the 1-based (line, column) where it is written.

    Two marks are kept per mapping entry: where its key starts and where its
    value starts. :meth:`locate` prefers the key, because ``reservedGpus: 64``
    should point at ``reservedGpus`` and a nested block should point at its
    heading rather than at its first child.
    """

    def __init__(self) -> None:
        self._values: dict[DocPath, tuple[int, int]] = {}
        self._keys: dict[DocPath, tuple[int, int]] = {}

    def add_value(self, path: DocPath, line: int, column: int) -> None:
        self._values.setdefault(path, (line, column))

    def add_key(self, path: DocPath, line: int, column: int) -> None:
        self._keys.setdefault(path, (line, column))

    def value(self, path: DocPath) -> tuple[int, int] | None:
        """Exact position of the value at ``path``, or None."""
        return self._values.get(tuple(path))

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
        name: str,
        message: str,
        path: Iterable[str | int] = (),
        *,
        severity: Severity = Severity.ERROR,
        hint: str = "",
        subject: str = "",
    ) -> Finding:
        """A finding located at ``path`` inside this document."""
        p = tuple(path)
        line, col = self.positions.locate(p)
        return Finding(
            file=self.file,
            line=line,
            column=col,
            code=code,
            name=name,
            severity=severity,
            message=message,
            hint=hint,
            doc_index=self.index,
            doc_path="/".join(str(x) for x in p),
            subject=subject,
        )


@dataclass
class SourceFile:
    """A file read from disk: its text, its documents and its load findings."""

    path: Path
    display: str
    text: str = ""
    documents: list[Document] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    def file_finding(
        self, code: str, name: str, message: str, line: int = 1, column: int = 1, hint: str = "", doc_index: int = 0
    ) -> Finding:
        return Finding(
            file=self.display,
            line=line,
            column=column,
            code=code,
            name=name,
            severity=Severity.ERROR,
            message=message,
            hint=hint,
            doc_index=doc_index,
        )


class _Rejected(Exception):
    """Raised inside the builder when a safety limit is hit."""

    def __init__(self, message: str, mark: yaml.Mark | None) -> None:
        super().__init__(message)
        self.message = message
        self.mark = mark


class _Builder:
    """Builds plain data from a composed node graph, recording positions."""

    def __init__(self, source: SourceFile, doc_index: int, limits: LoadLimits) -> None:
        self.source = source
        self.doc_index = doc_index
        self.limits = limits
        self.positions = PositionIndex()
        self.visits = 0
        self.active: set[int] = set()
        self.constructor = yaml.constructor.SafeConstructor()
        self.findings: list[Finding] = []

    def build(self, node: yaml.Node, path: DocPath = ()) -> Any:
        self.visits += 1
        if self.visits > self.limits.max_nodes:
            raise _Rejected(
                f"document expands to more than {self.limits.max_nodes} nodes (alias expansion); refused",
                node.start_mark,
            )
        if len(path) > self.limits.max_depth:
            raise _Rejected(f"document nests deeper than {self.limits.max_depth} levels; refused", node.start_mark)
        mark = node.start_mark
        self.positions.add_value(path, mark.line + 1, mark.column + 1)
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node)
        if id(node) in self.active:
            raise _Rejected("recursive alias: a node contains itself", node.start_mark)
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return [self.build(child, (*path, i)) for i, child in enumerate(node.value)]
            if isinstance(node, yaml.MappingNode):
                return self._mapping(node, path)
        finally:
            self.active.discard(id(node))
        raise _Rejected(f"unsupported YAML node {type(node).__name__}", node.start_mark)  # pragma: no cover

    def _scalar(self, node: yaml.ScalarNode) -> Any:
        if node.tag == _TIMESTAMP_TAG:
            return node.value
        try:
            return self.constructor.construct_object(node, deep=True)
        except yaml.constructor.ConstructorError as exc:
            raise _Rejected(f"cannot read value: {exc.problem}", node.start_mark) from None

    def _key(self, node: yaml.Node) -> Any:
        if isinstance(node, yaml.ScalarNode):
            value = self._scalar(node)
            return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)
        raise _Rejected("mapping keys must be plain scalars", node.start_mark)

    def _mapping(self, node: yaml.MappingNode, path: DocPath) -> dict[Any, Any]:
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
                        "duplicate-key",
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
            result[key] = self.build(value_node, child)
        # Merge keys (<<) supply defaults; explicit keys win, earlier merges win.
        for source in merged:
            value = self.build(source, path)
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
                "undecodable-file",
                f"file is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})",
                line=line,
                column=column,
                hint="save the file as UTF-8",
            )
        )
        return None


class _DepthLimitedLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no type hints
    """A SafeLoader whose composer refuses to nest deeper than ``max_depth``.

    PyYAML composes nodes recursively, so a few thousand ``[`` would exhaust the
    Python stack (RecursionError) before :class:`_Builder` could check the depth.
    """

    def __init__(self, stream: str, max_depth: int) -> None:
        super().__init__(stream)
        self._max_depth = max_depth
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self._depth += 1
        try:
            # the document's root node is depth 1 and has the empty path
            if self._depth > self._max_depth + 1:
                raise _Rejected(
                    f"document nests deeper than {self._max_depth} levels; refused", self.peek_event().start_mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def parse_text(source: SourceFile, limits: LoadLimits = LoadLimits()) -> None:
    """Parse ``source.text`` into documents and findings (in place)."""
    loader = _DepthLimitedLoader(source.text, limits.max_depth)
    index = 0
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:  # pragma: no cover - check_node guards this
                break
            _add_document(source, node, index, limits)
            index += 1
    except _Rejected as exc:
        line, col = (exc.mark.line + 1, exc.mark.column + 1) if exc.mark else (1, 1)
        source.findings.append(source.file_finding("PL005", "unsafe-document", exc.message, line, col, doc_index=index))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = exc.problem or exc.context or "invalid YAML"
        source.findings.append(
            source.file_finding("PL001", "yaml-syntax-error", f"YAML syntax error: {problem}", line, col, doc_index=index)
        )
    except yaml.YAMLError as exc:
        source.findings.append(source.file_finding("PL001", "yaml-syntax-error", f"YAML error: {exc}", doc_index=index))
    finally:
        loader.dispose()
    if not source.documents and not source.findings:
        source.findings.append(
            source.file_finding("PL004", "empty-document", "file contains no YAML document", hint="delete the file")
        )


def _add_document(source: SourceFile, node: yaml.Node, index: int, limits: LoadLimits) -> None:
    builder = _Builder(source, index, limits)
    mark = node.start_mark
    try:
        data = builder.build(node)
    except _Rejected as exc:
        m = exc.mark or mark
        source.findings.append(
            source.file_finding("PL005", "unsafe-document", exc.message, m.line + 1, m.column + 1, doc_index=index)
        )
        return
    source.findings.extend(builder.findings)
    doc = Document(source=source, index=index, data=data, positions=builder.positions)
    if data is None:
        source.findings.append(
            source.file_finding(
                "PL004", "empty-document", "document is empty", mark.line + 1, mark.column + 1, doc_index=index
            )
        )
        return
    source.documents.append(doc)


def load_file(path: Path, display: str, limits: LoadLimits = LoadLimits()) -> SourceFile:
    """Read and parse one file. Never raises for bad content."""
    source = SourceFile(path=path, display=display)
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            # a FIFO would block the run and a device such as /dev/zero never ends
            source.findings.append(
                source.file_finding("PL005", "unsafe-document", "not a regular file (pipe, device or socket); refused")
            )
            return source
        size = info.st_size
        if size > limits.max_file_bytes:
            source.findings.append(
                source.file_finding(
                    "PL005",
                    "unsafe-document",
                    f"file is {size} bytes, more than the {limits.max_file_bytes}-byte limit; refused",
                )
            )
            return source
        with path.open("rb") as handle:
            # the size can change between stat and read: never read past the limit
            raw = handle.read(limits.max_file_bytes + 1)
        if len(raw) > limits.max_file_bytes:
            source.findings.append(
                source.file_finding(
                    "PL005",
                    "unsafe-document",
                    f"file is more than the {limits.max_file_bytes}-byte limit; refused",
                )
            )
            return source
    except OSError as exc:
        source.findings.append(source.file_finding("PL003", "undecodable-file", f"cannot read file: {exc.strerror}"))
        return source
    text = _decode(raw, source)
    if text is None:
        return source
    source.text = text
    if not text.strip():
        source.findings.append(
            source.file_finding("PL004", "empty-document", "file is empty", hint="delete the file or add a document")
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
    documents declares a known apiVersion, or - for files that did not parse -
    when its text mentions ``policylint/`` at all, so that a syntax error in a
    policylint file is never hidden while unrelated YAML stays silent.
    """
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
    if problems:
        first = min(problems, key=lambda f: (f.line, f.column))
        message = first.message.removeprefix("YAML syntax error: ")
        raise PolicylintError(f"invalid YAML at line {first.line}, column {first.column}: {message}", source=str(path))
    if len(source.documents) > 1:
        second = source.documents[1]
        line, _ = second.positions.locate(())
        raise PolicylintError(f"expected one YAML document, found another at line {line}", source=str(path))
    return source.documents[0].data if source.documents else None
