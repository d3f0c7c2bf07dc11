"""Finding YAML files, reading them safely, and telling which ones hold something policylint reads."""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from policylint.model.load import document_cache
from policylint.model.load.limits import MAX_WALKED_ENTRIES
from policylint.errors import PolicylintError
from policylint.model.load.documents import SCHEDULER_APIS, SourceFile, is_scheduler_doc
from policylint.model.load.limits import LoadLimits

YAML_SUFFIXES = (".yaml", ".yml")


def is_yaml_name(name: str) -> bool:
    """True for a file name ending in ``.yaml`` or ``.yml`` in any case (``PLAN.YAML`` too)."""
    return name.endswith(YAML_SUFFIXES) or name.lower().endswith(YAML_SUFFIXES)


def is_json_name(name: str) -> bool:
    """True for a file name ending in ``.json`` in any case (``kubectl apply -f`` applies such files too)."""
    return name.endswith(".json") or name.lower().endswith(".json")


#: folders a walk never enters: version control metadata, and the caches and environments of tools,
#: which hold no plan (a folder holding ``pyvenv.cfg`` is a virtual environment, whatever its name).
#: Any other folder is read, hidden ones too (red team, 2026-12-06: a proposal under
#: ``proposals/.q2/`` was never read, and the gate passed without saying so).
SKIPPED_FOLDERS = frozenset({
    ".git", ".hg", ".svn", ".bzr", ".jj", "CVS",
    "node_modules", "__pycache__", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
    ".hypothesis", ".direnv", ".eggs",
})


def _walked(dirpath: str, dirnames: list[str]) -> list[str]:
    """The folders of ``dirpath`` a walk enters, sorted (:data:`SKIPPED_FOLDERS` and virtual environments left out)."""
    return sorted(d for d in dirnames if d not in SKIPPED_FOLDERS and not is_virtual_environment(os.path.join(dirpath, d)))


class WalkBudget:
    """The entries (files and folders) one run's walks may list: ``limits.max-walked-entries``.

    A symbolic link to a folder is followed wherever it leads (a monorepo's shared folder of
    ClusterQueues must be read), so a link to a data folder of millions of files would be listed
    in every run, pre-commit's included. Past the limit the run stops (exit 2) and names the folder
    and the link it was reached through; ``exclude`` keeps the walk out of a folder it covers whole.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.spent = 0

    def spend(self, entries: int, folder: str, via: str | None) -> None:
        self.spent += entries
        if self.spent > self.limit:
            from policylint.errors import PolicylintError

            way = "exclude the folders the gate need not read (`exclude: [\"FOLDER/*\"]` in the configuration)"
            through = ""
            if via is not None:
                name = Path(via).as_posix()
                through = f", reached through the link {name} -> {os.path.realpath(via)}"
                way = f"keep the walk out of it with `exclude: [\"{name}/*\"]` in the configuration"
            raise PolicylintError(
                f"the walk listed more than {self.limit:,} files and folders (limits.max-walked-entries), the last in"
                f" {Path(folder).as_posix()}{through}: {way}, or raise the limit"
            )


class Unfollowed(NamedTuple):
    """A symbolic link that may stand for a folder and that a walk did not follow (reported, PL008)."""

    #: the link as walked (through the links above it), its folder's real path, and what it names
    path: str
    folder: str
    target: str
    #: "broken": it leads nowhere; "holds-root": to a folder holding the repository (a loop)
    reason: str


def walk_folders(
    top: str,
    visited: set[str],
    home: str | None = None,
    unfollowed: list[Unfollowed] | None = None,
    links: list[tuple[str, str]] | None = None,
    keeps: Callable[[str], bool] | None = None,
    budget: WalkBudget | None = None,
    prune: Callable[[str, str], bool] | None = None,
) -> Iterator[tuple[str, list[str]]]:
    """``(folder, file names)`` of ``top`` and every folder below it that the loader walks, top-down, sorted.

    As ``os.walk`` with :func:`_walked`'s skipping, except that a symbolic link to a folder is
    followed (red team, 2026-12-06, found while closing round 16: a linked folder of ClusterQueues
    was read by no run). Folders are known by their real paths: one already in ``visited`` (the
    real paths walked, shared by the walks of a run) is not walked again, so a link loop ends and
    two links to one folder read it once; folders are shown through the links, as written. A
    regular folder's real path is its parent's joined with its name: only links are resolved
    (``DirEntry`` tells them apart without a system call). A link to a folder holding the real
    folder ``home`` (``top``'s by default) is not followed (the repository is read already, and the
    rest may be the whole file system); it goes to ``unfollowed``, as does a link that leads nowhere
    whose name has no suffix (it may stand for a folder) and is not a name ``keeps`` reads as a file.
    With ``links``, every symbolic link seen (to a file or a folder) is added with its real path.
    A ``budget`` counts the entries listed (shared by the walks of a run) and stops the run when they
    pass its limit; a folder for which ``prune(folder as walked, its real path)`` is True is not entered.
    """
    start = os.path.realpath(top)
    home = start if home is None else home
    stack: list[tuple[str, str, str | None]] = [(top, start, None)]  # (folder, real path, the link it lies under)
    while stack:
        folder, real, via = stack.pop()
        if real in visited:  # reached before (in walk order: the first path to it is the one shown)
            continue
        visited.add(real)
        dirs: list[str] = []
        names: list[str] = []
        linked: set[str] = set()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    try:
                        is_dir = entry.is_dir()
                    except OSError:
                        is_dir = False
                    if is_dir:
                        dirs.append(entry.name)
                        if entry.is_symlink():
                            linked.add(entry.name)
                        continue
                    names.append(entry.name)
                    if (unfollowed is not None or links is not None) and entry.is_symlink():
                        _file_link(entry.path, folder, real, entry.name, unfollowed, links, keeps)
        except OSError:
            continue  # vanished or unreadable, as os.walk leaves it
        if budget is not None:
            budget.spend(len(dirs) + len(names), folder, via)
        yield folder, names
        for name in reversed(_walked(folder, dirs)):
            child = os.path.join(folder, name)
            under = via
            if name in linked:
                under = child
                target = os.path.realpath(child)
                if links is not None:
                    links.append((child, target))
                if within(home, target) and target != home:  # a folder above the repository
                    if unfollowed is not None:
                        unfollowed.append(Unfollowed(child, real, _readlink(child), "holds-root"))
                    continue
            else:
                target = os.path.join(real, name)
            if target not in visited and not (prune is not None and prune(child, target)):
                stack.append((child, target, under))


def _file_link(
    path: str, folder: str, real: str, name: str, unfollowed: list[Unfollowed] | None,
    links: list[tuple[str, str]] | None, keeps: Callable[[str], bool] | None,
) -> None:
    """Note a symbolic link that is not to a folder: in ``links``, and in ``unfollowed`` when it may
    have stood for one (it leads nowhere, its name has no suffix, and it is not read as a file)."""
    if links is not None:
        links.append((path, os.path.realpath(path)))
    if unfollowed is not None and _may_stand_for_folder(path, name, keeps):
        unfollowed.append(Unfollowed(path, real, _readlink(path), "broken"))


def _may_stand_for_folder(path: str, name: str, keeps: Callable[[str], bool] | None) -> bool:
    """A symbolic link that leads nowhere, whose name has no suffix and is not one read as a file:
    it may have stood for a folder (PL008), whether a walk met it or it was named."""
    if os.path.splitext(name)[1] or (keeps is not None and keeps(name)):
        return False
    return not os.path.exists(path)


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except (OSError, ValueError):
        return "?"


def is_virtual_environment(folder: str) -> bool:
    """A Python virtual environment: a ``pyvenv.cfg`` naming the ``home`` of its interpreter, and that interpreter.

    An empty ``pyvenv.cfg`` hid any folder from the walk (red team, 2026-12-06, round 15: a raised
    ClusterQueue beside one, applied by ``kubectl apply -R``); a real environment has both.
    """
    config = os.path.join(folder, "pyvenv.cfg")
    try:
        if not os.path.isfile(config) or os.path.getsize(config) > 64 << 10:
            return False
        with open(config, encoding="utf-8", errors="replace") as handle:
            keys = {line.split("=", 1)[0].strip().lower() for line in handle if "=" in line}
    except OSError:
        return False
    if "home" not in keys:
        return False
    return any(os.path.exists(os.path.join(folder, *part))
               for part in (("bin", "python"), ("bin", "python3"), ("Scripts", "python.exe")))


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


def load_file(
    path: Path, display: str, limits: LoadLimits = LoadLimits(), cache_dir: Path | None = None, purpose: str = "documents"
) -> SourceFile:
    """Read and parse one file. Never raises for bad content.

    With ``cache_dir``, a file whose bytes were loaded and validated cleanly before
    comes from the document cache (see :mod:`policylint.model.load.document_cache`); on a miss the key
    is left on the source so that the caller can store it once validated (:func:`cache_source`).
    ``purpose`` names what the file is read as (:func:`~policylint.model.load.document_cache.document_key`).
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
        key = document_cache.document_key(raw, limits, purpose)
        hit = document_cache.load_source(cache_dir, key)
        if hit is not None:
            return SourceFile.from_stored(path, display, hit)
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


def parse_text(source: SourceFile, limits: LoadLimits = LoadLimits()) -> None:
    """:func:`policylint.model.load.compose.parse_text`, imported when the first file is parsed.

    A run whose files all come from the document cache never loads PyYAML (about 16 ms).
    """
    from policylint.model.load.compose import parse_text as parse

    parse(source, limits)


def cache_source(folder: Path, source: SourceFile) -> None:
    """Keep a file that loaded cleanly and whose documents passed validation in the document cache.

    Stored under the key its load computed (:attr:`SourceFile.cache_key`); the
    caller decides that it is clean, before resolving, so the entry holds the
    documents exactly as parsed.
    """
    if source.cache_key is None:
        return
    documents = [document_cache.StoredDocument(d.index, d.data, d.positions) for d in source.documents]
    source.stored = document_cache.store_source(folder, source.cache_key, document_cache.StoredSource(source.text, documents))


class RealPaths:
    """``os.path.realpath`` with each folder resolved once, and a busy folder listed once.

    ``realpath`` makes one ``lstat`` per path component, and a run asks for the
    real path of thousands of files in a few folders. The real path of a file
    that is not itself a symlink is its folder's real path joined with its name,
    so a folder is resolved once, and each file costs one ``lstat`` (to see
    whether it is a link, which is resolved in full). A folder asked about more
    than :attr:`LIST_AFTER` times is listed once instead (``os.scandir``: one
    read of the folder, the entry types included), and a name found in that
    listing costs no system call at all; a name the listing does not hold as
    written (a missing file, another spelling on a case-insensitive file system)
    and a folder that cannot be listed take the ``lstat`` as before. Results
    equal ``os.path.realpath``'s, errors included. Folders, listings and files
    are remembered for the life of the object: make one per run (a run sees one
    state of the file system), not one per process.
    """

    #: the ``lstat`` calls in one folder after which it is listed instead
    LIST_AFTER = 32

    def __init__(self) -> None:
        self._folders: dict[str, str] = {}
        self._files: dict[str, str] = {}
        #: per folder (as written): the lstat calls made in it, until it is listed
        self._asked: dict[str, int] = {}
        #: per listed folder: entry name -> (is a symlink, is a regular file); empty when unlistable
        self._listings: dict[str, dict[str, tuple[bool, bool]]] = {}
        self._cwd: str | None = None

    def __call__(self, path: str | os.PathLike[str]) -> str:
        text = os.fspath(path)
        known = self._files.get(text)
        if known is None:
            known = self._files[text] = self._resolve(text)
        return known

    def working_folder(self) -> str:
        """The real path of the working directory, asked for once (``Path.cwd().resolve()``)."""
        if self._cwd is None:
            self._cwd = str(_resolved(os.getcwd()))
        return self._cwd

    def regular_file(self, path: str) -> str | None:
        """The real path of ``path`` when its folder's listing shows a regular file, not a symlink.

        None when that is not known without a system call of its own (the folder
        is not listed yet, the name is not in it as written, or it is something
        else): the caller then asks ``os.stat`` as it would have.
        """
        head, tail = os.path.split(path)
        if not tail or tail in (os.curdir, os.pardir):
            return None
        entry = self._entry(head, tail)
        if entry is None or entry[0] or not entry[1]:
            return None
        known = self._files.get(path)
        if known is None:
            known = self._files[path] = os.path.join(self._folder(head), tail)  # as _resolve for a non-link
        return known

    def _entry(self, head: str, tail: str) -> tuple[bool, bool] | None:
        """(is a symlink, is a regular file) of ``tail`` in ``head`` from the folder's listing, if it holds it."""
        listing = self._listings.get(head)
        if listing is None:
            asked = self._asked.get(head, 0) + 1
            self._asked[head] = asked
            if asked <= self.LIST_AFTER:
                return None
            listing = self._listings[head] = _listing(head)
        return listing.get(tail)

    def _resolve(self, text: str) -> str:
        head, tail = os.path.split(text)
        if not tail or tail in (os.curdir, os.pardir):
            return os.path.realpath(text)
        entry = self._entry(head, tail)
        if entry is not None:
            if entry[0]:
                return os.path.realpath(text)
        else:
            try:
                if stat.S_ISLNK(os.lstat(text).st_mode):
                    return os.path.realpath(text)
            except OSError:
                pass  # missing, or below a non-folder: realpath keeps the name as written
            except ValueError:
                return os.path.realpath(text)  # a NUL character: raises as realpath does
        return os.path.join(self._folder(head), tail)

    def _folder(self, head: str) -> str:
        folder = self._folders.get(head)
        if folder is None:
            folder = self._folders[head] = os.path.realpath(head or os.curdir)
        return folder


def _listing(folder: str) -> dict[str, tuple[bool, bool]]:
    """Entry name -> (is a symlink, is a regular file) of ``folder``; empty when it cannot be listed.

    An entry whose type cannot be told (it vanished while being looked at) is
    left out, so that it is asked about one by one.
    """
    out: dict[str, tuple[bool, bool]] = {}
    try:
        with os.scandir(folder or os.curdir) as entries:
            for entry in entries:
                try:
                    out[entry.name] = (entry.is_symlink(), entry.is_file(follow_symlinks=False))
                except OSError:
                    continue
    except (OSError, ValueError):
        return {}
    return out


def dangling(path: str | os.PathLike[str]) -> bool:
    """A symbolic link that leads nowhere (its target moved or deleted): shown and reported as the link itself."""
    return os.path.islink(path) and not os.path.exists(path)


def within(path: str, folder: str) -> bool:
    """Whether the absolute, normalised ``path`` is ``folder`` or lies below it (compared as text)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def display_path(path: Path, cwd: Path | None = None, real: RealPaths | None = None) -> str:
    """Path as shown to the user: relative to the working directory when below it."""
    try:
        if real is None:
            top = _resolved(str(cwd or Path.cwd()))
            try:
                return path.resolve().relative_to(top).as_posix()
            except ValueError:
                return _through_link(path, str(top), os.fspath(cwd) if cwd is not None else os.getcwd())
        # the same answer from strings: real paths are absolute and normalised; the working
        # directory is resolved once per run (os.getcwd() is the text of Path.cwd())
        resolved = real(path)
        folder = real.working_folder() if cwd is None else str(_resolved(os.fspath(cwd)))
    except ValueError:
        return path.as_posix()
    return _shown(path, resolved, folder)


def display_real(path: Path, resolved: str, real: RealPaths) -> str:
    """:func:`display_path` of ``path`` with ``real``, given its real path ``resolved`` (``real(path)``)."""
    try:
        folder = real.working_folder()
    except ValueError:
        return path.as_posix()
    return _shown(path, resolved, folder)


def _shown(path: Path, resolved: str, folder: str) -> str:
    if resolved == folder:
        return "."
    if within(resolved, folder):
        return resolved[len(folder.rstrip(os.sep)) + 1 :].replace(os.sep, "/")
    return _through_link(path, folder, os.getcwd())


def _through_link(path: Path, folder: str, cwd: str) -> str:
    """A path whose real path lies outside the working folder (a link to somewhere else), shown through
    the link: from the working folder (``folder`` real, ``cwd`` as the system spells it) when the link
    lies inside it, however the run spelt what it walked (the hook's run walks the root by its absolute
    path, a whole run by "."), so that both show one name; else as given."""
    if path.is_absolute():
        text = os.path.normpath(os.fspath(path))
        for base in (cwd, folder):
            if within(text, base) and text != base:
                return text[len(base.rstrip(os.sep)) + 1 :].replace(os.sep, "/")
    return path.as_posix()


@functools.lru_cache(maxsize=16)
def _resolved(folder: str) -> Path:
    """A folder's real path, resolved once per run and folder (a run displays thousands of paths)."""
    return Path(folder).resolve()


def discover(
    paths: Iterable[Path], exclude: Iterable[str] = (), root: Path | None = None, real: RealPaths | None = None
) -> Iterator[tuple[Path, bool]]:
    """Yield ``(file, explicit)`` for YAML files under ``paths``, sorted.

    ``explicit`` is True for files named on the command line: those are always
    reported on, while files found by walking a folder are skipped silently when
    they hold nothing policylint reads. Version control metadata, tool caches and
    virtual environments are skipped (:data:`SKIPPED_FOLDERS`); hidden folders are read,
    and so are linked folders (each real folder once).
    A missing path is a usage error.
    """
    for path, _, explicit in discover_real(paths, exclude, root, real):
        yield path, explicit


def discover_real(
    paths: Iterable[Path], exclude: Iterable[str] = (), root: Path | None = None, real: RealPaths | None = None,
    *, json: bool = False, unfollowed: list[Unfollowed] | None = None, max_entries: int | None = None,
) -> Iterator[tuple[Path, str | None, bool]]:
    """:func:`discover`, each file with its real path (``real(file)``) when the walk found it (None for named files).

    With ``json``, walked ``.json`` files come too (``kubectl apply -f`` applies them): the
    caller screens them (:func:`policylint.model.load.manifests.json_is_foreign`). Symbolic links to
    folders are followed (:func:`walk_folders`), inside the repository ``root`` and outside it, as a
    linked file is read wherever it lies; the links the walk could not follow are added to ``unfollowed``.
    The walks list at most ``max_entries`` files and folders together (:class:`WalkBudget`; None: the
    default limit), and never enter a folder an ``exclude`` pattern covers whole (:func:`covered`).
    """
    from policylint.model.load.documents import KUSTOMIZATION_NAMES

    # with ``json``, what kubectl reads: JSON manifests, and a kustomization by its name (``Kustomization``)
    wanted = (lambda name: is_yaml_name(name) or is_json_name(name) or name in KUSTOMIZATION_NAMES) if json \
        else is_yaml_name
    patterns = list(exclude)
    resolve = real or RealPaths()
    # real paths as text: Path.resolve() is os.path.realpath, which RealPaths answers alike
    seen: set[str] = set()
    visited: set[str] = set()  # real folders walked (a folder reached through links is walked once)
    home = os.path.realpath(root) if root is not None else None
    real_root = root.resolve() if root is not None and patterns else None
    budget = WalkBudget(max_entries if max_entries is not None else MAX_WALKED_ENTRIES)
    whole = [p for p in (_covering_prefix(pat) for pat in patterns) if p is not None]

    def prune(folder: str, target: str) -> bool:
        return bool(whole) and covered(Path(folder), target, whole, real_root)

    for given in paths:
        if not given.exists() and not given.is_symlink():
            raise PolicylintError(f"path does not exist: {given}")
        if unfollowed is not None and given.is_symlink() and _may_stand_for_folder(os.fspath(given), given.name, wanted):
            # a named link that leads nowhere is reported as the walk reports it (PL008), not read as a file
            unfollowed.append(Unfollowed(os.fspath(given), os.path.realpath(given.parent), _readlink(os.fspath(given)),
                                         "broken"))
            continue
        if not given.is_dir():  # a file, or something that is not a folder (refused when read)
            if str(given.resolve()) not in seen:
                seen.add(str(given.resolve()))
                yield given, None, True
            continue
        # (the parts of Path(dirpath, name), its folder, the folder's text, its name): a folder's
        # Path and text are made once
        found: list[tuple[tuple[str, ...], Path, str | None, str]] = []
        top = os.fspath(given)
        for dirpath, filenames in walk_folders(top, visited, home or os.path.realpath(top), unfollowed, keeps=wanted,
                                                budget=budget, prune=prune):
            names = [name for name in filenames if wanted(name)]
            if names:
                folder = Path(dirpath)
                text = folder_text(folder)
                found.extend(((*folder.parts, name), folder, text, name) for name in names)
        found.sort(key=_first)  # Path order, without a Path comparison per step
        for _, folder, start, name in found:
            f = child_path(folder, start, name)
            real_path = resolve(f)
            if patterns and excluded(f, real_path, patterns, real_root):
                continue
            if real_path not in seen:
                seen.add(real_path)
                yield f, real_path, False


#: ``Path._make_child_relpath`` (CPython 3.11, 3.12: ``folder / name`` for one plain name, without parsing it)
_MAKE_CHILD = getattr(Path, "_make_child_relpath", None)


def folder_text(folder: Path) -> str | None:
    """The text ``str(folder / name)`` starts with, to which ``name`` is added; None when not known so simply."""
    if _MAKE_CHILD is None or folder.drive:
        return None
    text = str(folder)
    return "" if text == "." else text if text.endswith(os.sep) else text + os.sep


def child_path(folder: Path, start: str | None, name: str) -> Path:
    """``folder / name`` for a file name found by walking ``folder`` (no separator in it), and its text made once.

    A walk of 10,000 files parsed each joined path again and formatted its text
    once more when first asked for it: the child is built from the folder's parts
    and its text is the folder's text (:func:`folder_text`) and the name.
    """
    if start is None or _MAKE_CHILD is None:
        return folder / name
    child: Path = _MAKE_CHILD(folder, name)
    try:
        child._str  # type: ignore[attr-defined]  # 3.12 sets it
    except AttributeError:
        child._str = start + name  # type: ignore[attr-defined]  # what str(child) would format
    return child


def _first(item: tuple[tuple[str, ...], Path, str | None, str]) -> tuple[str, ...]:
    return item[0]


def excluded(path: Path, real_path: str, patterns: list[str], real_root: Path | None) -> bool:
    """True when an ``exclude`` pattern matches ``path``'s name, or its path relative to the real root ``real_root``
    both as it is and as walked.

    A file is read where it is reached: ``kueue/zz-training.yaml``, a link to an excluded
    ``datasets/training.yaml``, is applied by ``kubectl apply -R -f kueue/`` and read here too
    (red team round 12, 2026-12-07: a raised ClusterQueue hidden by an accepted exclusion).
    """
    if any(fnmatch.fnmatch(path.name, pat) for pat in patterns):
        return True
    return all(any(fnmatch.fnmatch(form, pat) for pat in patterns) for form in _forms(path, real_path, real_root))


def _forms(path: Path, real_path: str, real_root: Path | None) -> set[str]:
    """The forms of ``path`` the patterns must all match: relative to the real root by its real path (else as
    written), and by the path as walked (lexically, through the links), when that lies under the root."""
    forms = {_relative_for_glob(path, Path(real_path), real_root)}
    if real_root is not None:
        walked = os.path.relpath(os.path.abspath(path), real_root)
        if walked != os.pardir and not walked.startswith(os.pardir + os.sep):
            forms.add(Path(walked).as_posix())
    return forms


def _covering_prefix(pattern: str) -> str | None:
    """The folder prefix under which ``pattern`` matches every path: ``data/*`` and ``data/**`` give ``data/``.

    ``fnmatch``'s ``*`` matches ``/`` too, so such a pattern excludes every file below the
    prefix, however deep. None for any other pattern (its matches are found file by file).
    """
    head = pattern.rstrip("*")
    if head == pattern or not head.endswith("/") or any(c in head for c in "*?["):
        return None
    return head


def covered(folder: Path, real_folder: str, prefixes: list[str], real_root: Path | None) -> bool:
    """True when every file below ``folder`` is excluded by a pattern with one of the ``prefixes``.

    The folder is read as :func:`excluded` reads a file below it, in every form (:func:`_forms`): a
    link into an excluded folder from one that is not is walked (the forms of its files extend it).
    """
    return all(any((form + "/").startswith(prefix) for prefix in prefixes)
               for form in _forms(folder, real_folder, real_root))


def _relative_for_glob(path: Path, real: Path, real_root: Path | None) -> str:
    if real_root is not None:
        try:
            return real.relative_to(real_root).as_posix()
        except ValueError:
            pass
    return path.as_posix()


def looks_relevant(source: SourceFile) -> bool:
    """True when a walked file holds (or tries to hold) a policylint document.

    A file found by walking a folder is only reported on when one of its
    documents declares a known apiVersion or nearly ours (PL007) or is a list of
    policylint documents (PL006), sets scheduler objects where they are not read
    (PL026), when it was
    refused unread (too large, not a regular file: it may well be ours), or - for
    files that did not parse - when its text mentions ``policylint/`` at all, so
    that a syntax error in a policylint file is never hidden while unrelated
    YAML stays silent.
    """
    if source.refused or any(f.code in ("PL006", "PL007", "PL026") for f in source.findings):
        return True
    if any(d.is_policylint or is_scheduler_doc(d) for d in source.documents):
        return True
    if source.findings and (not source.documents or any(f.code in LOAD_ERRORS for f in source.findings)):
        # ours, or a scheduler manifest (a Helm template of a ClusterQueue) whose quota would go unjudged;
        # a file whose first documents loaded may hold one after them (red team, 2026-12-06, round 15: a
        # ConfigMap, then a ClusterQueue with a tag PyYAML cannot construct). UTF-16 text read as UTF-8
        # holds a NUL after each ASCII letter.
        text = source.text if "\0" not in source.text else source.text.replace("\0", "")
        if "policylint/" in text or any(api in text for api in SCHEDULER_APIS):
            return True
        # an API group spelt with escapes, which kubectl decodes (red team, 2026-12-06, round 15:
        # "\x6bueue.x-k8s.io/v1beta2" in YAML, "\u006bueue.x-k8s.io" in JSON that PyYAML refuses)
        if "\\" in text:
            text = escapes_decoded(text)
            return "policylint/" in text or any(api in text for api in SCHEDULER_APIS)
    return False


#: the escapes of YAML double-quoted and JSON strings that can spell an API group's characters: \xNN, \uNNNN,
#: \UNNNNNNNN, JSON's \/, and YAML's escaped line break (joins the next line, its leading blanks dropped)
_ESCAPE = re.compile(r"\\(?:x([0-9A-Fa-f]{2})|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(/)|\r?\n[ \t]*)")


def escapes_decoded(text: str) -> str:
    """``text`` with the escapes of :data:`_ESCAPE` replaced by what they stand for (others left as written)."""

    def one(m: re.Match[str]) -> str:
        digits = m.group(1) or m.group(2) or m.group(3)
        if digits:
            code = int(digits, 16)
            return chr(code) if code <= 0x10FFFF else m.group(0)
        return "/" if m.group(4) else ""

    return _ESCAPE.sub(one, text)


#: findings of a file that did not load whole: a syntax error, bytes that are not UTF-8, a refused file
#: or document (a tag nothing constructs, a size over the limits)
LOAD_ERRORS = frozenset({"PL001", "PL003", "PL005"})


def read_settings_yaml(path: Path, limits: LoadLimits = LoadLimits(), cache: Path | None = None) -> Any:
    """Parse a configuration or rule file with the same safety limits as documents.

    Returns the data of its single document (None for an empty file). Any problem
    - syntax, duplicate key, alias bomb, several documents - is a
    :class:`PolicylintError` naming the file and the position. With the cache folder
    ``cache``, a file whose bytes were parsed cleanly before is taken from the document
    cache (:mod:`policylint.model.load.document_cache`, keyed by those bytes) and a clean
    one parsed now is kept there: a warm run of a configured repository parses no YAML.
    """
    # kept apart from repository documents of the same bytes: a configuration is not schema-checked as one
    source = load_file(path, str(path), limits, cache_dir=cache, purpose="settings")
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
    if cache is not None and not source.findings:
        cache_source(cache, source)  # parsed now and clean (a hit has no key left to store under)
    return source.documents[0].data if source.documents else None
