"""Which base file a workload's measurement is read from when the base is read with today's declarations.

PL950's second base reading (:func:`policylint.engine.change_history.baselines_at_base`) writes today's
documents beside the base revision's measurement files. Resolving today's cited paths in the base tree pairs
a workload with whatever the base held at that path, which need not be its own series: two workloads that
swapped trace files (contents and the paths they cite) in the change were each read at the base with the
other's samples under its own new per-GPU figure (red team round 22, 2026-12-07: chat-assistant's figure
halved on the reranker's smaller series read the base low, and serving 48 -> 67 passed ``--diff``). A
workload the base held by the same name is read from the file its base placement cited.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from policylint.model import Workload

#: today's path (relative to the repository's top) -> the base path its base file is read from;
#: None: cited by workloads that each read another base file, so none is read there
Remap = dict[str, "str | None"]


def cited_by_role(w: Workload, top: Path) -> dict[str, str]:
    """The path (relative to ``top``) each measurement role of ``w`` cites, as its document writes it."""
    from policylint.model.resolve import MEASUREMENT_PATHS, _get

    out: dict[str, str] = {}
    folder = Path(os.path.realpath(w.doc.source.path)).parent
    real_top = Path(os.path.realpath(top))
    for role, where in MEASUREMENT_PATHS.items():
        ref = _get(w.doc.data, where)
        path = ref.get("path") if isinstance(ref, dict) else None
        if not isinstance(path, str) or not path or os.path.isabs(path) or "\0" in path:
            continue
        try:
            out[role] = Path(os.path.normpath(folder / path)).relative_to(real_top).as_posix()
        except ValueError:
            continue  # outside the repository: refused when read, as today
    return out


def remap_to_base(today: Iterable[Workload], folder: Path, at_base: dict[str, dict[str, str]]) -> Remap:
    """For each path today's workloads cite (relative to ``folder``), the base path to read there: the one
    the workload of the same name cited at the base for the same role (``at_base``: name -> role -> path),
    else the path itself. A path that would read two base files is read from none (None)."""
    wanted: dict[str, set[str]] = {}
    for w in today:
        then = at_base.get(w.name, {})
        for role, path in cited_by_role(w, folder).items():
            wanted.setdefault(path, set()).add(then.get(role, path))
    return {path: (next(iter(bases)) if len(bases) == 1 else None)
            for path, bases in wanted.items() if bases != {path}}


def write_remapped(folder: Path, sha: str, remap: Remap, scratch: Path, cap: int | None) -> None:
    """Each path of ``remap`` written under ``scratch`` with the body ``sha`` holds at the base path it maps to."""
    from policylint.engine.base_files import blobs
    from policylint.writer import write_file

    pairs = sorted((p, b) for p, b in remap.items() if b is not None
                   and all("\n" not in n and not Path(n).is_absolute() and ".." not in Path(n).parts for n in (p, b)))
    if not pairs:
        return
    for (path, _), body in zip(pairs, blobs(folder, [f"{sha}:{b}" for _, b in pairs])):
        if body is None or (cap is not None and len(body) > cap):
            continue  # missing at the base, or refused today too
        write_file(scratch / path, body, root=None, explicit=True, parents=True, durable=False, mode=0o600,
                   what="the base revision of a file")
