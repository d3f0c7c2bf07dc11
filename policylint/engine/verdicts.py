"""Kept verdicts: a changed workload's neighbours judged again only when what the rules read of them moved.

A one-file pre-commit run in a pool of N workloads judges every neighbour of the
changed workload with the rules that read neighbour facts (double counts, near
copies, the pooled queue: :func:`policylint.engine.scope.neighbour_skips`), and
locates and renders each of their findings in the neighbour's document. Those
verdicts rarely move: the same neighbour with the same facts gives the same
findings.

This module keeps, per repository, one sealed cache entry (kind ``verdicts``)
holding for each neighbour view the findings of each rule run on it, under a
digest of everything those findings are made from:

* the rules run on the view - every field of theirs that evaluation reads, and
  their parameters; a rule whose reads cannot be told
  (:func:`policylint.engine.reads.facts_read` answers None) makes the view
  uncacheable;
* the values (types included) of every fact those rules read
  (:func:`~policylint.engine.reads.facts_read`: needs, conditions, ``at``,
  message and hint templates, check functions' reads);
* where the view's facts are written (all of its fact places and its base
  path) and its label, subject and identity;
* the text of the view's file and the document's place in it (a finding's line
  and column), and the file's display path;
* the entry's header: the code fingerprint and the repository.

A view whose digest matches takes its findings from the entry instead of being
evaluated; every other one is evaluated, and its findings are kept for the next
run. Any value that has no exact canonical form (a type other than None, bool,
int, float, str, list, tuple and dict with string keys) makes the view
uncacheable; a damaged or foreign entry is an empty one. A cache makes a run
faster, never different.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Container, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from policylint.cache.exact import quick_bytes
from policylint.cache.decoded import read_sealed_json
from policylint.cache.store import FORMAT_VERSION, code_fingerprint, write_sealed
from policylint.engine.reads import facts_read
from policylint.facts import Facts
from policylint.finding import Finding, Severity, Subject

if TYPE_CHECKING:
    from policylint.engine.rule import Rule
    from policylint.engine.view import View

VERDICTS_FORMAT = 3  # 3: digests of quick_bytes forms; 2: of quick_canonical texts
KIND = "verdicts"
#: largest entry read back or written
MAX_BYTES = 128 << 20
#: counters for tests: views whose findings came from the entry, and views evaluated and kept
STATS: dict[str, int] = {"hits": 0, "kept": 0}


#: (rule codes in order, the rules' canonical text, the facts they read, where their findings are placed), or None
_Plan: TypeAlias = "tuple[list[str], str, list[str], list[str] | None] | None"


class _Uncanonical(Exception):
    """A value without an exact canonical text: the view is evaluated, never taken from the entry."""


def _canon(value: Any, out: list[str]) -> None:
    """Append an exact, type-tagged text of ``value`` (two values share a text only when equal and of the same types)."""
    t = type(value)
    if value is None:
        out.append("N")
    elif t is bool:
        out.append("T" if value else "F")
    elif t is int:
        out.append(f"i{value}")
    elif t is float:
        out.append(f"f{value.hex()}")  # exact, NaN and signed zero included
    elif t is str:
        out.append("s" + repr(value))  # exact: distinct strings, distinct texts
    elif t is list or t is tuple:
        out.append("L[" if t is list else "U[")
        for item in value:
            _canon(item, out)
            out.append(",")
        out.append("]")
    elif t is dict:
        out.append("D{")
        for key, item in value.items():
            if type(key) is not str:
                raise _Uncanonical
            out.append(repr(key))
            out.append(":")
            _canon(item, out)
            out.append(",")
        out.append("}")
    else:
        raise _Uncanonical


def canonical(value: Any) -> str | None:
    """The exact type-tagged text :func:`_canon` gives, or None when ``value`` has none."""
    out: list[str] = []
    try:
        _canon(value, out)
    except (_Uncanonical, RecursionError, ValueError):
        return None
    return "".join(out)


def _rule_text(rule: Rule, params: Mapping[str, Any]) -> str | None:
    """Everything of a rule that evaluating it reads (its definition and parameters), or None."""
    return canonical([
        rule.code, rule.name, int(rule.severity), rule.subject, list(rule.needs), rule.when, rule.require,
        rule.check, rule.at, rule.message, rule.hint, dict(params),
    ])


def _finding_row(f: Finding) -> list[Any]:
    target = [f.target.kind, f.target.name] if f.target is not None else None
    return [f.file, f.line, f.column, f.code, f.name, int(f.severity), f.message, f.hint, f.doc_index, f.doc_path,
            f.subject, target, list(f.figures) if f.figures is not None else None]


def _finding_of(row: Any) -> Finding:
    """A finding from its stored row; raises on anything that is not exactly a stored row."""
    if not (isinstance(row, list) and len(row) == 13):
        raise ValueError("row")
    file, line, column, code, name, severity, message, hint, doc_index, doc_path, subject, target, figures = row
    if not all(type(v) is str for v in (file, code, name, message, hint, doc_path, subject)):
        raise ValueError("text")
    if not all(type(v) is int for v in (line, column, severity, doc_index)):
        raise ValueError("number")
    subject_of: Subject | None = None
    if target is not None:
        if not (isinstance(target, list) and len(target) == 2 and all(type(v) is str for v in target)):
            raise ValueError("target")
        subject_of = Subject(target[0], target[1])
    pair: tuple[float, float] | None = None
    if figures is not None:
        if not (isinstance(figures, list) and len(figures) == 2 and all(type(v) is float for v in figures)):
            raise ValueError("figures")
        pair = (figures[0], figures[1])
    return Finding(file=file, line=line, column=column, code=code, name=name, severity=Severity(severity),
                   message=message, hint=hint, doc_index=doc_index, doc_path=doc_path, subject=subject,
                   target=subject_of, figures=pair)


class Verdicts:
    """The kept verdicts of one repository, and the digests of this run's neighbour views."""

    def __init__(self, folder: Path, root: Path) -> None:
        self.folder = folder
        real = os.path.realpath(root)
        self.header = {"format": VERDICTS_FORMAT, "cache": FORMAT_VERSION, "code": code_fingerprint(), "root": real}
        locator = hashlib.sha256(json.dumps(self.header, sort_keys=True).encode("utf-8", "surrogateescape")).hexdigest()
        self.path = folder / f"verdicts-v{FORMAT_VERSION}" / locator[:2] / f"{locator}.json"
        #: view label -> [digest, {rule code: [finding rows]}]
        self.rows: dict[str, Any] = {}
        self.dirty = False
        #: per view (by id) judged this run: (label, digest, rule codes run on it) when it may be kept
        self.digests: dict[int, tuple[str, str, list[str]]] = {}
        #: per view (by id), its findings per rule code taken from the entry
        self.given: dict[int, dict[str, list[Finding]]] = {}
        #: per view (by id) to keep, the findings of each rule code to keep (None until evaluated)
        self.found: dict[int, dict[str, list[Finding] | None]] = {}
        self._texts: dict[str, str] = {}  # doc text digests by file
        #: exact forms of fact places, by the identity of the (shared) dict, which is held here: no other dict
        #: made later in the run can take its id
        self._places: dict[int, tuple[dict[str, Any], bytes]] = {}
        #: the same for the places of some facts only: (table, names, their form) by both identities
        self._places_at: dict[tuple[int, int], tuple[dict[str, Any], Sequence[str], bytes]] = {}
        #: exact forms of fact places by (names in order, identities of the place tuples), with the dict they were made of
        self._place_forms: dict[tuple[tuple[str, ...], tuple[int, ...]], tuple[dict[str, Any], bytes]] = {}

    def read(self) -> None:
        try:
            stored = read_sealed_json(self.path, self.folder, KIND, MAX_BYTES)
            if stored is None:
                return
            if isinstance(stored, dict) and stored.get("header") == self.header and isinstance(stored.get("rows"), dict):
                self.rows = stored["rows"]
        except Exception:  # noqa: BLE001 - a damaged entry is an empty one: every view is evaluated
            self.rows = {}

    def _text_digest(self, view: View) -> str:
        file = view.doc.file
        found = self._texts.get(file)
        if found is None:
            found = hashlib.sha256(view.doc.source.text.encode("utf-8", "surrogateescape")).hexdigest()
            self._texts[file] = found
        return found

    def _places_text(self, view: View, at: Sequence[str] | None) -> bytes | None:
        """Where the facts in ``at`` are written in ``view``'s document (None for ``at``: every fact's place)."""
        paths = view.paths
        if at is not None:
            # by the identities of the table (shared by neighbours from the index) and of the plan's names
            known = self._places_at.get((id(paths), id(at)))
            if known is not None and known[0] is paths and known[1] is at:
                return known[2]
            made = quick_bytes([paths.get(name) for name in at])
            if made is not None:
                self._places_at[(id(paths), id(at))] = (paths, at, made)
            return made
        held = self._places.get(id(paths))
        found = held[1] if held is not None else None
        if found is None:
            # Neighbours taken from the index share one of a few place tables (found above by its
            # identity). A copy of one - the same names in the same order, the very same tuples -
            # has the bytes of the first one met (kept alive here, so no other object can take its
            # values' ids); 40 us of marshal per view at 10,000 workloads, a lookup instead.
            shared = set(map(type, paths.values())) <= {tuple}
            sign = (tuple(paths), tuple(map(id, paths.values()))) if shared else None
            seen = self._place_forms.get(sign) if sign is not None else None
            if seen is not None:
                found = seen[1]
            else:
                found = quick_bytes(paths)
                if found is None:
                    return None
                if sign is not None:
                    self._place_forms[sign] = (paths, found)
            self._places[id(paths)] = (paths, found)
        return found

    def digest(self, view: View, rules_text: str, reads: Sequence[str], at: Sequence[str] | None) -> str | None:
        """The digest of everything the kept rules' findings on ``view`` are made from (None: not cacheable).

        ``at`` names every fact a finding of those rules can be placed at (None: any).
        """
        from policylint.engine.evaluate import subject_of

        facts = view.facts
        if isinstance(facts, Facts) and type(facts).get is Facts.get:
            getters = facts._fact_getters  # what Facts.get looks each name up in
            values = quick_bytes([getters[name](facts) if name in getters else None for name in reads])
        else:
            values = quick_bytes([facts.get(name) for name in reads])
        places = self._places_text(view, at)
        target = subject_of(view)
        ident = quick_bytes([view.subject, view.label, target.kind, target.name, list(view.base),
                                 None if view.target is None else [view.target.kind, view.target.name],
                                 view.doc.file, view.doc.index])
        if values is None or places is None or ident is None or not isinstance(view.doc.source.text, str):
            return None
        digest = hashlib.sha256()
        for part in (rules_text.encode("utf-8", "surrogateescape"), ident,
                     self._text_digest(view).encode("ascii"), places, values):
            digest.update(len(part).to_bytes(8, "little"))  # each part's length first: bytes may hold any byte
            digest.update(part)
        return digest.hexdigest()

    def prepare(
        self,
        rules: Sequence[Rule],
        views: Sequence[View],
        params: Mapping[str, Mapping[str, Any]],
        skip: Callable[[View], Container[str]],
        *,
        give: bool = True,
    ) -> None:
        """For each neighbour view (some rule skipped on it): its digest, and its findings when the entry holds them.

        With ``give`` False (a whole run, which judges every view by every rule) nothing is
        taken from the entry: the views ``skip`` names rules for are only kept, with the
        findings of the rules a narrowed run would judge them by as neighbours.
        """
        plans: dict[frozenset[str], _Plan] = {}
        #: the plan per set of skipped codes (a frozenset: every neighbour skips the same one)
        by_skipped: dict[frozenset[str], _Plan] = {}
        #: each plan's rule codes as a set, by the identity of its (shared) list: a row holds exactly those
        order_sets: dict[int, frozenset[str]] = {}
        for view in views:
            if view.subject != "workload":
                continue
            skipped = skip(view)
            if not skipped:
                continue  # judged by every rule: not a neighbour
            if type(skipped) is frozenset and skipped in by_skipped:
                plan = by_skipped[skipped]
            else:
                run = [r for r in rules if not r.builtin and r.subject == "workload" and r.code not in skipped]
                codes = frozenset(r.code for r in run)
                if codes not in plans:
                    plans[codes] = _plan(run, params)
                plan = plans[codes]
                if type(skipped) is frozenset:
                    by_skipped[skipped] = plan
            if plan is None:
                continue
            order, rules_text, reads, at = plan
            order_set = order_sets.get(id(order))
            if order_set is None:
                order_set = order_sets[id(order)] = frozenset(order)
            digest = self.digest(view, rules_text, reads, at)
            if digest is None:
                continue
            self.digests[id(view)] = (view.label, digest, order)
            row = self.rows.get(view.label) if give else None
            if isinstance(row, list) and len(row) == 2 and row[0] == digest:
                try:
                    stored = row[1]
                    if not (isinstance(stored, dict) and len(stored) == len(order) and stored.keys() == order_set):
                        raise ValueError("codes")
                    self.given[id(view)] = {code: [_finding_of(r) for r in stored[code]] for code in order}
                except Exception:  # noqa: BLE001 - a row that does not read back is evaluated again
                    self.given.pop(id(view), None)
            if id(view) not in self.given:
                self.found[id(view)] = dict.fromkeys(order)

    def keep(self) -> None:
        """Record the findings evaluated this run for the neighbour views (when every rule run on it gave its list)."""
        for view_id, by_code in self.found.items():
            label, digest, order = self.digests[view_id]
            made = [by_code.get(code) for code in order]
            if any(found is None for found in made):
                continue  # not every rule gave its findings: nothing kept
            rows = {code: [_finding_row(f) for f in found or ()] for code, found in zip(order, made)}
            self.rows[label] = [digest, rows]
            self.dirty = True
            STATS["kept"] += 1
        STATS["hits"] += len(self.given)

    def write(self) -> None:
        if not self.dirty:
            return
        body = {"header": self.header, "rows": self.rows}
        try:
            data = json.dumps(body, separators=(",", ":"), allow_nan=False).encode("utf-8", "surrogateescape")
        except (TypeError, ValueError):
            return
        write_sealed(self.path, self.folder, KIND, data, MAX_BYTES)
        self.dirty = False


def _plan(
    run: Sequence[Rule], params: Mapping[str, Mapping[str, Any]]
) -> tuple[list[str], str, list[str], list[str] | None] | None:
    """(rule codes in order, the rules' canonical text, the sorted facts they read, the facts a finding of theirs
    can be placed at - None when a check function places them), or None when not cacheable.

    A finding is placed at the rule's ``at``, else at the first failing fact of its
    ``require`` (always one of its reads), or where a check function says.
    """
    reads: set[str] = set()
    at: set[str] | None = set()
    texts = []
    for rule in run:
        read = facts_read(rule)
        if read is None:
            return None
        reads |= read
        if rule.check or at is None:
            at = None
        else:
            at |= set(rule.require)
            if rule.at:
                at.add(rule.at)
        text = _rule_text(rule, params.get(rule.code, {}))
        if text is None:
            return None
        texts.append(text)
    return [r.code for r in run], "\n".join(texts), sorted(reads), None if at is None else sorted(at)


def open_verdicts(folder: Path, root: Path) -> Verdicts | None:
    try:
        verdicts = Verdicts(folder, root)
        verdicts.read()
    except Exception:  # noqa: BLE001 - no entry: every view is evaluated
        return None
    return verdicts
