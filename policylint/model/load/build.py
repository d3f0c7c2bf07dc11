"""Plain data and its positions, built from a composed YAML node graph.

The YAML is *composed* (not constructed) by :mod:`policylint.model.load.compose`;
:meth:`Builder.build` then makes plain Python data of the node graph and
records every value's start mark in a
:class:`~policylint.model.load.positions.PositionIndex` keyed by its document path.

Building ourselves (instead of ``yaml.safe_load``) buys three things:

* duplicate keys are reported instead of silently keeping the last one;
* alias expansion is bounded: every visit of a node counts, so a "billion
  laughs" document is refused after ``max_nodes`` visits instead of expanding;
* YAML timestamps stay strings, so dates validate the same way in JSON Schema
  and in editors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from policylint.finding import Finding
from policylint.model.load.documents import SourceFile
from policylint.model.load.limits import LoadLimits
from policylint.model.load.positions import DocPath, PositionIndex, Span
from policylint.model.load.yaml12 import other_reading, shown

#: Longest number read (Python's own guard against quadratic int conversion is 4,300
#: digits; sexagesimal YAML 1.1 integers such as ``1:30:00`` are as costly).
MAX_NUMBER_CHARS = 4_300

_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
#: the plain scalars YAML 1.1 and YAML 1.2 may read otherwise (:mod:`policylint.model.load.yaml12`)
_TWO_READINGS = frozenset({*_NUMBER_TAGS, "tag:yaml.org,2002:bool"})

_STYLES = {None: "plain", "": "plain", "'": "single", '"': "double", "|": "literal", ">": "folded"}


class Rejected(Exception):
    """Raised while composing or building when a limit is hit or a value cannot be read."""

    def __init__(self, message: str, mark: yaml.Mark | None, code: str = "PL005") -> None:
        super().__init__(message)
        self.message = message
        self.mark = mark
        self.code = code


@dataclass
class BuildBudget:
    """Nodes built so far in one file, alias expansions included (shared by its documents)."""

    visits: int = 0


class Builder:
    """Builds plain data from a composed node graph, recording positions."""

    def __init__(self, source: SourceFile, doc_index: int, limits: LoadLimits, budget: BuildBudget) -> None:
        self.source = source
        self.doc_index = doc_index
        self.limits = limits
        self.positions = PositionIndex()
        self.budget = budget
        self.visits = 0
        self.active: set[int] = set()
        self.built: set[int] = set()  # nodes built once already (a second visit is through an alias)
        self.read_twice: set[int] = set()  # plain scalars already compared with their YAML 1.2 reading
        self.spans: dict[tuple[int, str | None], Span] = {}
        self.constructor = yaml.constructor.SafeConstructor()
        self.findings: list[Finding] = []
        #: keys kubectl reads otherwise than YAML (a '<<' below the line that set them): (the '<<' mark, key,
        #: line written or None); findings only in a Kubernetes object (:func:`kubectl_findings`)
        self.kubectl_notes: list[tuple[yaml.Mark, str, int | None]] = []
        #: the document's (apiVersion, kind) as kubectl reads them, when its top mapping merges keys
        self.kubectl_type: tuple[Any, Any] | None = None

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
            raise Rejected(
                f"{whole} expands to more than {self.limits.max_nodes} nodes (alias expansion); refused",
                node.start_mark,
            )
        if len(path) > self.limits.max_depth:
            raise Rejected(f"document nests deeper than {self.limits.max_depth} levels; refused", node.start_mark)
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
            raise Rejected("recursive alias: a node contains itself", node.start_mark)
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return [self.build(child, (*path, i), via) for i, child in enumerate(node.value)]
            if isinstance(node, yaml.MappingNode):
                return self._mapping(node, path, via)
        finally:
            self.active.discard(id(node))
        raise Rejected(f"unsupported YAML node {type(node).__name__}", node.start_mark)  # pragma: no cover

    def _scalar(self, node: yaml.ScalarNode) -> Any:
        if node.tag == _TIMESTAMP_TAG:
            return node.value
        if node.tag in _NUMBER_TAGS and len(node.value) > MAX_NUMBER_CHARS:
            raise Rejected(
                f"number of {len(node.value)} characters is longer than the {MAX_NUMBER_CHARS}-character limit; refused",
                node.start_mark,
            )
        try:
            value = self.constructor.construct_object(node, deep=True)
        except yaml.constructor.ConstructorError as exc:
            raise Rejected(f"cannot read value: {exc.problem}", node.start_mark) from None
        except (ValueError, LookupError, TypeError, ArithmeticError):
            # an explicit standard tag whose text is not of that type: !!float abc, !!bool maybe
            shown = node.value if len(node.value) <= 40 else node.value[:37] + "..."
            shown = shown if shown.isprintable() else repr(shown)[1:-1]
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")
            raise Rejected(
                f"YAML syntax error: {shown!r} is not a valid {tag} value", node.start_mark, "PL001"
            ) from None
        if node.tag in _TWO_READINGS and not node.style and id(node) not in self.read_twice:
            self._two_readings(node, value)
        return value

    def _two_readings(self, node: yaml.ScalarNode, value: Any) -> None:
        """PL009 when YAML 1.2 readers (editors, js-yaml) and a reviewer read plain ``node`` otherwise than policylint."""
        theirs = other_reading(node.value, value)
        self.read_twice.add(id(node))  # an alias of it is reported once, where it is written
        if theirs is None:
            return
        text = node.value if len(node.value) <= 40 else node.value[:37] + "..."
        mark = node.start_mark
        self.findings.append(self.source.file_finding(
            "PL009",
            f"'{text}' is {shown(value)} to policylint and kubectl (YAML 1.1) but {shown(theirs)} to YAML 1.2"
            " readers (editors, js-yaml) and to a reviewer reading it as written",
            line=mark.line + 1,
            column=mark.column + 1,
            hint=f"write {shown(value)} (the value policylint judges), or quote it if it is text",
            doc_index=self.doc_index,
        ))

    def _key(self, node: yaml.Node) -> Any:
        if isinstance(node, yaml.ScalarNode):
            value = self._scalar(node)
            return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)
        raise Rejected("mapping keys must be plain scalars", node.start_mark)

    def _mapping(self, node: yaml.MappingNode, path: DocPath, via: str | None) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        explicit: dict[Any, yaml.Mark] = {}
        #: each '<<' key in order: its mark, and the mappings it merges (one, or a list's)
        groups: list[tuple[yaml.Mark, list[yaml.Node]]] = []
        #: the mapping's entries in order, as kubectl applies them: ("key", key) or ("merge", group index)
        order: list[tuple[str, Any]] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                nodes = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                order.append(("merge", len(groups)))
                groups.append((key_node.start_mark, list(nodes)))
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
            order.append(("key", key))
            child = (*path, key if isinstance(key, (str, int)) else str(key))
            if key in result:
                # the last value is the one kept: so are its positions
                self.positions.forget(child)
            self.positions.add_key(child, km.line + 1, km.column + 1)
            result[key] = self.build(value_node, child, via)
        if not groups:
            return result
        # Merge keys (<<) supply defaults, as PyYAML reads them: explicit keys win, then the earlier '<<' key,
        # and within one '<<: [...]' list the earlier mapping.
        merged: list[dict[Any, Any]] = []
        for _at, nodes in groups:
            supplied: dict[Any, Any] = {}
            for source in nodes:
                value = self.build(source, path, via or "merge")
                if not isinstance(value, dict):
                    raise Rejected("merge key '<<' needs a mapping or a list of mappings", source.start_mark)
                for k, v in value.items():
                    supplied.setdefault(k, v)
            merged.append(supplied)
        for supplied in merged:
            for k, v in supplied.items():
                result.setdefault(k, v)
        applied = self._kubectl_reads(order, result, merged, groups, explicit)
        if not path:
            # the document's own apiVersion and kind as kubectl reads them (round 9: 'apiVersion: null' then
            # '<<: {apiVersion: kueue.x-k8s.io/v1beta2}' is no Kubernetes object to YAML, a ClusterQueue to kubectl)
            self.kubectl_type = (applied.get("apiVersion"), applied.get("kind"))
        return result

    def _kubectl_reads(self, order: list[tuple[str, Any]], result: dict[Any, Any], merged: list[dict[Any, Any]],
                       groups: list[tuple[yaml.Mark, list[yaml.Node]]], explicit: dict[Any, yaml.Mark]) -> dict[Any, Any]:
        """Note each key this mapping gives kubectl another value for than YAML gives (see :attr:`kubectl_notes`).

        Kubernetes' decoder applies a mapping's entries in order, a '<<' key writing what it merges over
        what is already set: ``nominalQuota: 104`` followed by ``<<: {nominalQuota: 168}`` is 104 for YAML
        and 168 for ``kubectl apply`` (red team, 2026-12-07); of two '<<' keys kubectl keeps the later.
        Keys the two read alike (written after the merge, merged with an equal value) are not noted.
        """
        applied: dict[Any, Any] = {}
        by: dict[Any, int | None] = {}  # the '<<' group that set each key last (None: written)
        for what, item in order:
            if what == "key":
                applied[item], by[item] = result[item], None
            else:
                for k, v in merged[item].items():
                    applied[k], by[k] = v, item
        for k, group in by.items():
            if group is None or applied[k] == result.get(k):
                continue
            at = groups[group][0]
            first = explicit.get(k)
            self.kubectl_notes.append((at, str(k), first.line + 1 if first is not None else None))
        return applied


def kubectl_findings(builder: Builder, data: Any) -> list[Finding]:
    """PL002 for each key ``builder`` noted that kubectl reads otherwise, when ``data`` is a Kubernetes object
    as YAML or as kubectl reads it.

    A policylint document, the configuration and rule files are read by policylint alone, as YAML
    reads them; only what ``kubectl`` applies (a document with an ``apiVersion`` and a ``kind``
    other than policylint's) can be read two ways.
    """
    def kubernetes(api: Any, kind: Any) -> bool:
        return isinstance(api, str) and isinstance(kind, str) and not api.startswith("policylint/")

    if not ((isinstance(data, dict) and kubernetes(data.get("apiVersion"), data.get("kind")))
            or (builder.kubectl_type is not None and kubernetes(*builder.kubectl_type))):
        return []
    out = []
    for at, key, written in builder.kubectl_notes:
        then = f"line {written} sets it" if written is not None else "an earlier merge key supplies it"
        out.append(builder.source.file_finding(
            "PL002",
            f"the merge key '<<' supplies '{key}' with another value where {then}: YAML keeps that value, but"
            " kubectl applies a mapping's entries in order and keeps this one",
            line=at.line + 1,
            column=at.column + 1,
            hint=f"set '{key}' once: drop it from the merged mapping, or put the merge key above the keys it"
                 " must not change",
            doc_index=builder.doc_index,
        ))
    return out
