"""File paths relative to the repository root, for the formats other tools read.

Findings carry the path as the user sees it (relative to the working
directory). Code scanning, CI annotations and merge-request widgets resolve
paths against the checkout instead, so a run started from a subfolder would
point them at ``../clusters/x.yaml``. :func:`rebase` rewrites every path of a
result relative to the repository root; paths outside it stay as they were.

The repository root is the top of the git work tree holding the configuration
folder when there is one (that is what CI services check out), else the folder
holding the configuration (or the one ``--root`` names).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING

from policylint.model.load import RealPaths, dangling, within

if TYPE_CHECKING:
    from policylint.finding import Finding
    from policylint.engine.result import LintResult


def repository_root(config_root: Path) -> Path:
    """The git work tree above ``config_root`` (``.git`` folder or file), else ``config_root``."""
    start = Path(os.path.abspath(config_root))
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def _relative(path: str, root: str) -> str | None:
    """``path`` relative to ``root`` (both real, absolute), or None when outside it."""
    if os.sep == "/" and os.altsep is None:
        # POSIX: real paths are absolute and normalised, so "below root" is a prefix of the text,
        # and the rest is what os.path.relpath returns (a path cannot be written two ways)
        if path == root:
            return "."
        return path[len(root.rstrip("/")) + 1 :] if within(path, root) else None
    try:
        rel = os.path.relpath(path, root)
    except ValueError:  # another drive (Windows)
        return None
    if rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
        return None
    return Path(rel).as_posix()


class _Rebaser:
    """Maps displayed paths to repository paths, each one computed once."""

    def __init__(self, root: Path, cwd: Path) -> None:
        self.root = os.path.realpath(root)
        self.cwd = os.fspath(cwd)
        self.cache: dict[tuple[str | None, str], str] = {}
        self.real = RealPaths()

    def __call__(self, display: str, base: Path | None = None) -> str:
        key = (None if base is None else os.fspath(base), display)
        moved = self.cache.get(key)
        if moved is None:
            # as text: the real path of os.path.join(folder, display) is that of Path(folder) / display
            absolute = self.real(os.path.join(self.cwd if key[0] is None else key[0], display))
            moved = self.cache[key] = _relative(absolute, self.root) or display
        return moved

    def link(self, display: str) -> str:
        """The repository path of the symbolic link ``display`` itself (its folder's real path and its name),
        not of what it leads to: a PL008 finding is on a link that leads nowhere or above the repository."""
        joined = os.path.join(self.cwd, display)
        absolute = os.path.join(self.real(os.path.dirname(joined)), os.path.basename(joined))
        return _relative(absolute, self.root) or display

    def dangling(self, display: str) -> bool:
        """Whether ``display`` is a symbolic link whose target is gone: a PL003 on it names the link, as the
        loader showed it, not the missing file its real path would give."""
        return dangling(os.path.join(self.cwd, display))


def rebase(result: LintResult, root: Path, config_root: Path, cwd: Path | None = None) -> LintResult:
    """A copy of ``result`` whose paths are relative to ``root``.

    ``config_root`` is the folder baseline entries are written relative to.
    """
    move = _Rebaser(root, cwd or Path.cwd())

    def finding(f: Finding) -> Finding:
        file = move.link(f.file) if f.code == "PL008" or (f.code == "PL003" and move.dangling(f.file)) else move(f.file)
        # findings are frozen: one whose path stays is kept as it is, not copied
        return f if file == f.file else dataclasses.replace(f, file=file)

    # Re-sorted: "../a.yaml" and "b.yaml" may swap places once both are repository paths.
    return dataclasses.replace(
        result,
        findings=sorted((finding(f) for f in result.findings), key=lambda f: f.sort_key()),
        sources={move(name): source for name, source in result.sources.items()},
        suppressed=sorted(((finding(f), r) for f, r in result.suppressed), key=lambda pair: pair[0].sort_key()),
        baselined=sorted((finding(f) for f in result.baselined), key=lambda f: f.sort_key()),
        stale_baseline=[
            {**entry, "file": move(entry["file"], config_root)} if entry.get("file") else dict(entry)
            for entry in result.stale_baseline
        ],
    )
