"""A kustomization whose named files change, in the runs that know the change (the hook, ``--diff``).

PL026 reports a kustomization entry that changes Kueue or Volcano objects where policylint
does not read them (a patch of a ClusterQueue). A team may suppress it with a reason when it
has reviewed what the patch deploys; the suppression sits in the kustomization, while what
it vouches for sits in the file the entry names. A later edit of that file changed nothing
the suppression is written beside: the hook and ``--diff`` saw only the patch file changed,
narrowed the run to it and reported nothing, and the whole run still said "1 suppressed"
(red team, 2026-12-06, round 15: a patch that lowered a borrowing limit, edited to raise
``nominalQuota`` to 168).

Two answers here, for runs given the changed files:

* a kustomization that names a changed file (or a folder holding one) is reached by the
  change: its findings are reported as a changed file's are (:func:`kustomization_reach`);
* a suppression of PL026 no longer applies to an entry when the file the entry names
  changed, or the entry itself did, while the same suppression - the same reason - stood
  there at the base revision (HEAD for the hook): the finding is reported, saying what
  changed. Rewriting the suppression's reason after reviewing the file re-confirms it; a
  suppression written or rewritten in the change applies as before.

The whole run knows no change and is not affected.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policylint.finding import Finding
from policylint.model.load.documents import kustomization_entry_path, kustomizations

if TYPE_CHECKING:
    from policylint.engine.rule import RuleSet
    from policylint.model.load import LoadLimits, SourceFile

#: the code whose suppressions a change of the named files outlives
CODE = "PL026"


@dataclass(frozen=True)
class Changed:
    """The files of a change: real paths, and (device, inode) of those that exist."""

    real: frozenset[str]
    idents: frozenset[tuple[int, int]]

    @classmethod
    def of(cls, paths: Iterable[Path]) -> Changed:
        real, idents = set(), set()
        for p in paths:
            real.add(os.path.realpath(p))
            try:
                st = os.stat(p)
            except (OSError, ValueError):
                continue
            idents.add((st.st_dev, st.st_ino))
        return cls(frozenset(real), frozenset(idents))

    def holds(self, path: Path) -> str | None:
        """The changed file ``path`` is, or the first one under the folder ``path`` (as real paths); None."""
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return None
        real = os.path.realpath(path)
        if (st.st_dev, st.st_ino) in self.idents or real in self.real:
            return real
        if os.path.isdir(real):
            inside = sorted(r for r in self.real if r.startswith(real.rstrip(os.sep) + os.sep))
            return inside[0] if inside else None
        return None


def _entries(data: dict[str, Any], doc_path: str) -> tuple[str, list[Any]] | None:
    """(key, the entries) a finding at ``doc_path`` (``patches/0``, or ``transformers``) is placed on."""
    key, _, rest = doc_path.partition("/")
    key = key.replace("~1", "/").replace("~0", "~")
    listed = data.get(key)
    if not isinstance(listed, list):
        return None
    if not rest:
        return key, list(listed)
    index = rest.split("/", 1)[0]
    if not index.isdigit() or int(index) >= len(listed):
        return None
    return key, [listed[int(index)]]


def kustomization_reach(sources: dict[str, SourceFile], changed: Changed, shown: Iterable[str]) -> dict[str, str]:
    """{file shown: the changed file} of each kustomization among the ``sources`` ``shown`` that changed or names one.

    Only the files some finding (reported or suppressed) is on need asking about: the
    reach decides which findings a narrowed run keeps.
    """
    reached: dict[str, str] = {}
    for name in sorted(set(shown)):
        source = sources.get(name)
        if source is None:
            continue
        found = kustomizations(source)
        itself = changed.holds(source.path) if found else None
        if itself is not None:
            reached[name] = itself
        for _, data in found:
            for listed in data.values():
                for entry in listed if isinstance(listed, list) else ():
                    named = kustomization_entry_path(entry)
                    hit = changed.holds(source.path.parent / named) if named is not None else None
                    if hit is not None:
                        reached.setdefault(name, hit)
    return reached


def _base_reasons(text: str, source: SourceFile, ruleset: RuleSet, limits: LoadLimits) -> tuple[set[str], SourceFile]:
    """The reasons of the PL026 suppressions in ``text`` (the file at the base), and the file so parsed."""
    from policylint.engine.filter import scan_suppressions
    from policylint.model.load import SourceFile as Source, parse_text

    old = Source(path=source.path, display=source.display, text=text)
    parse_text(old, limits)
    return {s.reason for s in scan_suppressions(old, ruleset).suppressions if CODE in s.rules}, old


def outlived(
    suppressed: list[tuple[Finding, str]],
    sources: dict[str, SourceFile],
    changed: Changed,
    base_text: Callable[[SourceFile], str | None],
    ruleset: RuleSet,
    limits: LoadLimits,
) -> list[tuple[Finding, Finding]]:
    """The suppressed PL026 findings the change outlives: each with the finding to report in its place.

    ``base_text`` gives a file as the base revision holds it (None when it holds none).
    """
    found: list[tuple[Finding, Finding]] = []
    bases: dict[str, tuple[set[str], SourceFile] | None] = {}
    for finding, reason in suppressed:
        source = sources.get(finding.file)
        if finding.code != CODE or source is None or finding.doc_index >= len(source.documents):
            continue
        data = source.documents[finding.doc_index].data
        at = _entries(data, finding.doc_path) if isinstance(data, dict) else None
        if at is None:
            continue
        if finding.file not in bases:
            text = base_text(source)
            bases[finding.file] = None if text is None else _base_reasons(text, source, ruleset, limits)
        base = bases[finding.file]
        if base is None or reason not in base[0]:
            continue  # the suppression was written (or its reason rewritten) in this change: it vouches for it
        key, entries = at
        then = [e for _, d in kustomizations(base[1]) if isinstance(d.get(key), list) for e in d[key]]
        what = None
        for entry in entries:
            named = kustomization_entry_path(entry)
            if named is not None and changed.holds(source.path.parent / named) is not None:
                what = f"'{named}', which this entry names,"
                break
            if entry not in then:
                what = "this entry"
                break
        if what is None:
            continue
        found.append((finding, replace(
            finding,
            message=f"{finding.message} [the suppression of {CODE} here was written before this change: {what} changed"
            " since, and the suppression no longer vouches for it]",
            hint="review what it deploys now; if the suppression still holds, rewrite its reason to say so (a reason"
            " written in the change re-confirms it), or render the kustomization into the files policylint checks",
        )))
    return found


def git_base_text(root: Path, rev: str) -> Callable[[SourceFile], str | None]:
    """A ``base_text`` reading each file as the git revision ``rev`` holds it (None: not there, or no git).

    A file is found by its real path within git's work tree, wherever the repository's root lies in
    it (a file linked in from a shared folder of a monorepo), and, when ``rev`` does not hold that
    path, by the path git's rename detection says it was moved from (fifth red team, 2026-12-07: a
    cluster file moved with ``git mv`` in the change read as new, so its standing suppressions read
    as written in the change).
    """
    import subprocess

    from policylint.engine.base_files import blobs, renames_since

    folder = Path(os.path.realpath(root))
    top: list[Path | None] = []  # git's work tree, asked once
    moved: list[dict[str, str]] = []  # the renames since rev, asked once, when first needed

    def work_tree() -> Path | None:
        if not top:
            try:
                done = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=folder, capture_output=True,
                                      text=True, timeout=60, check=False)
                shown = done.stdout.strip() if done.returncode == 0 else ""
            except (OSError, subprocess.SubprocessError):
                shown = ""
            top.append(Path(os.path.realpath(shown)) if shown else None)
        return top[0]

    def blob(tree: Path, real: str) -> bytes | None:
        try:
            rel = Path(real).relative_to(tree).as_posix()
        except ValueError:
            return None
        if "\n" in rel:
            return None
        try:
            return next(iter(blobs(tree, [f"{rev}:{rel}"], timeout=60)), None)
        except (OSError, ValueError, subprocess.SubprocessError):
            return None

    def read(source: SourceFile) -> str | None:
        tree = work_tree()
        if tree is None:
            return None
        real = os.path.realpath(source.path)
        body = blob(tree, real)
        if body is None:
            if not moved:
                moved.append(renames_since(tree, rev))
            was = moved[0].get(real)
            body = blob(tree, was) if was is not None else None
        if body is None:
            return None
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError:
            return None

    return read
