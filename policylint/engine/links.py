"""Files outside a capacity repository that the repository reaches through a symbolic link.

In a monorepo a capacity repository may keep a link to a file kept elsewhere:
``capacity/workloads/research.yaml`` -> ``../../shared/research.yaml``. The whole run walks
the link and judges the workloads the shared file declares; the pre-commit hook is given
the shared file's own path, whose real path lies outside the configuration's folder, and
used to drop it as another project's change (red team, 2026-12-06, round 16: a staged edit
of the shared file passed the hook with "0 documents in 0 files"). A changed path outside
the repository is therefore looked for among the links inside it, and a hit is the change
of the linked path (:func:`linked_paths`). The links are found by a walk of the repository
that skips what the loader's walk skips; it is made only when some changed path lies
outside the repository, and paths that no link reaches stay other projects' changes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from policylint.model.load.files import walk_folders, within


def symlinks_inside(root: Path) -> list[tuple[str, str]]:
    """(link, its real target) for each symbolic link under ``root``, to a file or a folder, sorted.

    The folders walked are the loader's (:func:`~policylint.model.load.files.walk_folders`:
    version control metadata, tool caches and virtual environments are skipped, a linked folder
    is entered once), so a link inside a linked folder is found by its path through that folder.
    """
    found: list[tuple[str, str]] = []
    for _ in walk_folders(os.fspath(root), set(), links=found):
        pass
    return sorted(found)


def linked_paths(root: Path, outside: Iterable[Path]) -> list[Path]:
    """The paths inside ``root`` through which it reaches the files ``outside`` it, sorted.

    A link to one of the files gives the link itself; a link to a folder holding one gives
    the file's path under the link. A file that is gone (a staged deletion) is matched by
    the path a link to it still names. A link to the repository itself or a folder above
    it is a loop no walk follows, and is left out.
    """
    targets = sorted({os.path.realpath(p) for p in outside})
    if not targets:
        return []
    home = os.path.realpath(root)
    found: set[str] = set()
    for link, real in symlinks_inside(root):
        if within(home, real):
            continue
        for target in targets:
            if target == real:
                found.add(link)
            elif within(target, real):
                found.add(os.path.join(link, os.path.relpath(target, real)))
    return sorted(Path(p) for p in found)


def linking_configuration(top: Path, configurations: Iterable[Path], changed: Iterable[Path]) -> list[Path]:
    """Of the configuration files ``configurations`` (relative to the git working tree ``top``), those
    whose folder links to one of the ``changed`` files lying outside it, sorted."""
    changed = list(changed)
    hits: list[Path] = []
    for config in configurations:
        path = top / config
        folder = path.parent
        home = os.path.realpath(folder)
        outside = [p for p in changed if not within(os.path.realpath(p), home)]
        if outside and linked_paths(folder, outside):
            hits.append(path)
    return sorted(hits)
