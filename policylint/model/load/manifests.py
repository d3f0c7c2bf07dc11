"""The files ``kubectl`` applies that a walk for YAML files does not find.

A walk reads ``.yaml`` and ``.yml`` files. ``kubectl apply -f FOLDER`` also applies
``.json`` files, and ``kubectl apply -k`` reads whatever file a kustomization names,
whatever its name (a strategic-merge patch called ``training-quota.patch``). A
ClusterQueue written in either place was applied to the cluster and judged by no rule
(red team, 2026-12-06, rounds 13 and 14: +64 GPUs each way). Two answers here:

* :func:`json_is_foreign` screens a walked ``.json`` file: it is read like a YAML file
  (JSON is YAML) unless it decodes as JSON holding no policylint document and no
  Kueue or Volcano object. Trace provenance records, Prometheus exports and other
  tools' JSON stay unread. A file that does not decode as JSON is read as YAML,
  as ``kubectl`` reads a ``.json`` file that does not start as JSON.
* :func:`kustomization_files` lists the files a kustomization names (its resources,
  components and patches) that lie inside the repository: the loader reads those it
  did not walk, whatever their names or folders.

:func:`walk_sources` is the loader's walk: it reads every file (:func:`read_walked`, from the
document pack when it can) and keeps what is policylint's business, reporting rather than
skipping a file that did not load whole where ``kubectl`` would apply it.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policylint.model.load import files
from policylint.model.load.document_pack_cache import file_ident
from policylint.model.load.documents import (
    KUSTOMIZATION_NAMES, SCHEDULER_APIS, SourceFile, is_scheduler_doc, kustomization_entry_path, kustomizations,
)
from policylint.model.load.files import (
    LOAD_ERRORS, RealPaths, Unfollowed, cache_source, discover_real, display_path, display_real, excluded,
    is_json_name, looks_relevant,
)

if TYPE_CHECKING:
    from policylint.model.load.document_pack_cache import Pack
    from policylint.model.load.limits import LoadLimits

#: what a plain mention of something policylint reads looks like in the text of a file
_MENTIONS = ("policylint/", *SCHEDULER_APIS)


def _ours(value: Any) -> bool:
    """A mapping whose ``apiVersion`` is policylint's or a scheduler's."""
    if not isinstance(value, dict):
        return False
    api = value.get("apiVersion")
    return isinstance(api, str) and api.startswith(_MENTIONS)


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook``: a repeated key makes the file one to read as YAML (which reports it)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("a repeated key")
    return out


def json_is_foreign(path: Path | str, max_bytes: int) -> bool:
    """True when the walked ``.json`` file at ``path`` holds nothing policylint reads.

    That is: it decodes as one JSON value (no key repeated) and neither that value, nor
    an item of its ``items`` (a Kubernetes List), nor an element of it (a list) is a
    mapping with policylint's or a scheduler's ``apiVersion``, however the text spells it
    (a ``\\u`` escape decodes as kubectl decodes it). A file that does not decode so is
    read as YAML, whose findings then say what is wrong with it. A file larger than
    ``max_bytes`` is read (and refused, PL005) when its bytes name policylint or a scheduler API group
    or hold a ``\\u`` escape; a file that is not a regular file is foreign.
    """
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return True
    if not stat.S_ISREG(st.st_mode):
        return True
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except (OSError, ValueError):
        return True  # unreadable now: read as YAML it would be unreadable too, and it is not walked as one
    if len(data) > max_bytes:
        # too large to decode here: foreign unless it names policylint or a scheduler's API group, or
        # holds a \u escape that could spell one (red team, 2026-12-06, round 15); read otherwise, and
        # refused (PL005), which reports it
        return not (b"\\u" in data or any(m.rstrip("/").encode() in data for m in _MENTIONS))
    try:
        value = json.loads(data, object_pairs_hook=_no_repeats)
    except (ValueError, RecursionError, UnicodeDecodeError):
        return False  # not one JSON value: read as YAML, as kubectl reads it
    if isinstance(value, dict):
        items = value.get("items")
        return not (_ours(value) or (isinstance(items, list) and any(map(_ours, items))))
    if isinstance(value, list):
        return not any(map(_ours, value))
    return True


#: what a kustomization lists files under; a string entry is a file (or folder) path, a mapping's ``path`` too
_NAMED = ("resources", "components", "patches", "patchesStrategicMerge", "patchesJson6902", "crds")


def kustomization_files(source: SourceFile, root: str) -> Iterator[Path]:
    """The regular files inside the real folder ``root`` that the kustomizations of ``source`` name.

    A folder named (a base, a component) gives its kustomization file. Remote resources (URLs),
    inline patches and paths leaving ``root`` are left out. Paths come as written, joined to the
    kustomization's folder.
    """
    for _, data in kustomizations(source):
        for key in _NAMED:
            entries = data.get(key)
            for entry in entries if isinstance(entries, list) else ():
                named = kustomization_entry_path(entry)
                if named is None:
                    continue
                path = source.path.parent / named
                real = os.path.realpath(path)
                if not (real == root or real.startswith(root.rstrip(os.sep) + os.sep)):
                    continue  # outside the repository: not ours to read
                try:
                    mode = os.stat(real).st_mode
                except (OSError, ValueError):
                    continue  # missing: kustomize reports it
                if stat.S_ISREG(mode):
                    yield path
                elif stat.S_ISDIR(mode):
                    # a base or a component: kustomize reads its kustomization, in whatever folder (one the
                    # walk skips too: red team, 2026-12-06, round 15, a component under node_modules/)
                    for name in sorted(KUSTOMIZATION_NAMES):
                        if os.path.isfile(os.path.join(real, name)):
                            yield path / name
                            break


def read_walked(
    path: Path,
    found: str | None,
    explicit: bool,
    limits: LoadLimits,
    cache_dir: Path | None,
    pack: Pack | None,
    real: RealPaths,
) -> SourceFile | None:
    """The source of one file to load: from the document ``pack`` when its identity is the packed one, else read.

    ``found`` is the file's real path when a walk found it (None: asked of ``real``). A walked
    ``.json`` file (not ``explicit``) screened as foreign (:func:`json_is_foreign`) gives None;
    the pack remembers the screen by the file's identity, so a warm run does not read it again.
    """
    load_file = files.load_file  # looked up per call (tests count the reads)
    display = display_path(path, real=real) if found is None else display_real(path, found, real)
    real_path = real(path) if found is None else found
    if pack is not None:
        source = pack.take(real_path, path, display)
        if source is not None:
            return source
    ident = None
    if not explicit and is_json_name(path.name):
        if pack is not None and pack.foreign(real_path):
            return None
        ident = file_ident(real_path)
        if json_is_foreign(real_path, limits.max_file_bytes):
            if pack is not None:
                pack.note_screened(real_path, ident)
            return None
    if pack is not None and ident is None:
        ident = file_ident(real_path)
    source = _tabs_as_json(load_file(path, display, limits, cache_dir), limits)
    if source.findings and source.findings[0].code == "PL003" and files.dangling(path):
        # a link whose target is gone is shown as itself, not by the name of the missing file
        source = load_file(path, display_real(path, os.path.join(real(path.parent), path.name), real), limits)
    if pack is not None:
        pack.note_read(real_path, ident, source)
    return source


def _tabs_as_json(source: SourceFile, limits: LoadLimits) -> SourceFile:
    """A ``.json`` file that PyYAML refused for its tabs but that is JSON: parsed again with each tab a space.

    ``jq --tab`` and ``json.dumps(indent="\\t")`` indent with tabs, which YAML does not allow and JSON
    does (red team, 2026-12-06, round 15: an honest ClusterQueue so written failed with PL001). JSON
    holds a tab only as whitespace, so a space in its place changes no value and no line or column.
    """
    if not (is_json_name(source.path.name) and "\t" in source.text and any(f.code == "PL001" for f in source.findings)):
        return source
    try:
        json.loads(source.text)
    except (ValueError, RecursionError):
        return source
    again = SourceFile(path=source.path, display=source.display, text=source.text.replace("\t", " "))
    files.parse_text(again, limits)
    return again


def unfollowed_links(
    links: Sequence[Unfollowed], patterns: list[str], real_root: Path, real: RealPaths
) -> list[SourceFile]:
    """A source holding one PL008 finding for each symbolic link the walk did not follow (none excluded).

    A link is shown as itself (its folder's real path and its name), not as what it leads to: a
    link to a folder above the repository would show as ``.``, and a broken one as a path that is
    not there. It has no line: the finding is placed at 1:1, as PL005's on a file refused unread.
    """
    out: list[SourceFile] = []
    seen: set[str] = set()
    for link in links:
        path = Path(link.path)
        resolved = os.path.join(link.folder, path.name)
        if resolved in seen or (patterns and excluded(path, resolved, patterns, real_root)):
            continue  # a link both named and walked is reported once
        seen.add(resolved)
        source = SourceFile(path=path, display=display_real(path, resolved, real))
        if link.reason == "broken":
            message = (f"symbolic link to {link.target}, which does not exist: if it stood for a folder of plans "
                       "or manifests, none of them was read")
            hint = "restore what it links to (check out the shared folder), or remove the link"
        else:
            message = (f"symbolic link to {link.target}, a folder holding the repository itself: not walked (a loop), "
                       "so nothing else under that folder was read")
            hint = "link to the folder that holds the files instead, or remove the link"
        source.findings.append(source.file_finding("PL008", message, hint=hint))
        out.append(source)
    return out


def _may_be_kustomization(source: SourceFile) -> bool:
    """False when no document of ``source`` can be a kustomization (:func:`kustomization_files` would name nothing):
    told by its name and its documents' kinds alone, for each of the 10,000 files of a large repository."""
    if source.path.name in KUSTOMIZATION_NAMES:
        return True
    return any(isinstance(d.data, dict) and d.data.get("kind") in ("Kustomization", "Component") for d in source.documents)


def walk_sources(
    paths: Sequence[Path],
    exclude: Sequence[str],
    root: Path,
    home: Path,
    limits: LoadLimits,
    cache_dir: Path | None,
    pack: Pack | None,
    real: RealPaths,
) -> list[SourceFile]:
    """Discover and load the files under ``paths`` (the repository ``home`` among them); keep those of policylint's business.

    Kept: every file named on the command line; a walked file holding (or trying to hold) a
    policylint document or a scheduler object (:func:`policylint.model.load.files.looks_relevant`);
    a walked file with no document at all, beside policylint documents (PL004: one of them
    emptied); a walked file that did not load whole (a syntax error, bytes that are not UTF-8, a
    refused document) beside scheduler objects (``kubectl apply -f FOLDER`` applies what it can
    read of it), or a JSON one beside policylint documents; and every file a kustomization names, inside the
    repository, whatever its name or folder, that holds such a document; and a symbolic link the walk
    could not follow (:func:`unfollowed_links`, PL008). Files of other tools
    that loaded cleanly are kept in the document cache, so that a warm run parses no YAML at all.
    """
    sources: list[SourceFile] = []
    #: walked files that are kept only beside policylint documents (empty) or ours and scheduler
    #: objects (did not load whole), by their position among ``sources``
    empty: list[tuple[int, SourceFile]] = []
    broken: list[tuple[int, SourceFile]] = []
    walked: set[str] = set()
    named: list[Path] = []  # files the kustomizations name (kubectl apply -k reads them, whatever their names)
    inside = os.path.realpath(home)
    unfollowed: list[Unfollowed] = []
    for path, found, explicit in discover_real(paths, exclude, root, real, json=True, unfollowed=unfollowed,
                                             max_entries=limits.max_walked_entries):
        source = read_walked(path, found, explicit, limits, cache_dir, pack, real)
        walked.add(real(path) if found is None else found)
        if source is None:
            continue  # a walked JSON file holding nothing policylint reads
        if _may_be_kustomization(source):
            named.extend(kustomization_files(source, inside))
        if explicit or looks_relevant(source):
            sources.append(source)
        elif not source.documents and any(f.code == "PL004" for f in source.findings):
            empty.append((len(sources), source))
        elif any(f.code in LOAD_ERRORS for f in source.findings):
            broken.append((len(sources), source))
        elif cache_dir is not None and source.cache_key is not None and not source.findings:
            # another tool's YAML (the configuration file among them), parsed cleanly: kept too, so
            # that a warm run parses no YAML at all (a hit is told apart from ours in the same way)
            cache_source(cache_dir, source)
    patterns = list(exclude)
    real_root = Path(os.path.realpath(root))
    sources += unfollowed_links(unfollowed, patterns, real_root, real)
    while named:  # a named kustomization (a component, a base) names more files
        path = named.pop()
        found = real(path)
        if found in walked or (patterns and excluded(path, found, patterns, real_root)):
            continue
        walked.add(found)
        source = read_walked(path, found, True, limits, cache_dir, pack, real)
        if source is None:
            continue
        if _may_be_kustomization(source):
            named.extend(kustomization_files(source, inside))
        if looks_relevant(source):
            sources.append(source)
    # An empty file beside policylint documents is most likely one of them, emptied (a bad merge, a
    # truncated write): its workload would vanish from its pool unreported. A file that did not load
    # whole beside policylint documents or scheduler objects may hold one after what did load (red
    # team, 2026-12-06, round 15: a ConfigMap, then a ClusterQueue; a JSON stream; UTF-16; JSON that
    # PyYAML refuses). Elsewhere such files are nobody's business of ours.
    if not empty and not broken:
        return sources
    ours = {s.path.parent for s in sources if any(d.is_policylint for d in s.documents)}
    scheduler = {s.path.parent for s in sources if any(is_scheduler_doc(d) for d in s.documents)}
    pending = [(at, s) for at, s in empty if s.path.parent in ours]
    # beside scheduler manifests (``kubectl apply -f`` applies the folder), or JSON beside policylint
    # documents; a Helm template beside a cluster file stays another tool's business
    pending += [(at, s) for at, s in broken
                if s.path.parent in scheduler
                or (s.path.parent in ours and (is_json_name(s.path.name) or files.dangling(s.path)))]
    for at, source in sorted(pending, key=lambda item: item[0], reverse=True):
        sources.insert(at, source)
    return sources
