"""The planned repository: a copy of the repository with the plan applied, for ``check`` to judge.

Measurements, evidence and configuration are copied as they are; clusters, proposals
and scheduler manifests give way to the planned clusters; each Workload names its
planned pool, edited in place where it can be (:mod:`policylint.edit.scalars`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from policylint.edit.scalars import ScalarEdit, apply_edits
from policylint.errors import PolicylintError
from policylint.model.load import is_scheduler_doc
from policylint.plan.models import PLANNED_CLUSTERS_FILE, Plan, plain
from policylint.writer import write_file

if TYPE_CHECKING:
    from policylint.model.load import SourceFile
    from policylint.model import Model

__all__ = ["replaced_document", "write_repository"]


def replaced_document(doc: Any) -> bool:
    """Documents the plan replaces: policylint Clusters and Proposals, and scheduler queues and jobs."""
    return (doc.is_policylint and doc.kind in ("Cluster", "Proposal")) or is_scheduler_doc(doc)


def write_repository(
    plan: Plan,
    model: Model,
    sources: Iterable[SourceFile],
    root: Path,
    dest: Path,
    clusters_text: str,
) -> Path:
    """Write a copy of the repository at ``root`` into ``dest`` with the plan applied; return the clusters file.

    Measurements, evidence and configuration are copied as they are. Clusters,
    proposals (the plan replaces what they ask for) and scheduler manifests are left
    out; each Workload names its planned cluster and pool, edited in place where the
    values are written as plain scalars (comments and suppressions stay), else the
    file is written again from its parsed data. The planned clusters go into
    ``planned-clusters.yaml`` at the top.
    """
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise PolicylintError(f"--repository {dest}: exists and is not an empty folder")
    shutil.copytree(
        root, dest, symlinks=True, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".git", "__pycache__", ".policylint-cache")
    )
    for source in sorted(sources, key=lambda s: str(s.path)):
        try:
            rel = Path(source.path).resolve().relative_to(root.resolve())
        except ValueError:
            continue
        docs = [d for d in source.documents if d.data is not None]
        if not any(replaced_document(d) or (d.is_policylint and d.kind == "Workload") for d in docs):
            continue
        text = _edited(source, plan, model)
        if text is None:  # documents to leave out, or a placement not written as plain scalars
            kept = [
                _placed(d.data, plan, str(d.name)) if _is_workload(d, model) else d.data
                for d in docs
                if not replaced_document(d)
            ]
            text = yaml.safe_dump_all(kept, sort_keys=False, width=10_000) if kept else None
        target = dest / rel
        if text is not None:
            # A copied link (to a file or, above it, to a folder) is never written through:
            # a link at the file is replaced by a file, a folder outside DEST is refused.
            write_file(target, text, root=dest, links="replace", parents=True, what="the planned file")
            continue
        _inside(target.parent, dest)
        if target.is_symlink() or target.exists():
            target.unlink()
        folder = target.parent  # a folder left empty (clusters/, proposals/) goes too
        while folder != dest and not folder.is_symlink() and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent
    out = dest / PLANNED_CLUSTERS_FILE
    write_file(out, clusters_text, root=dest, links="replace", what="the planned clusters file")
    return out


def _inside(folder: Path, dest: Path) -> None:
    """Refuse to remove anything from a folder that a copied link leads out of DEST."""
    real, top = os.path.realpath(folder), os.path.realpath(dest)
    if real != top and not real.startswith(top.rstrip(os.sep) + os.sep):
        raise PolicylintError(f"{folder}: a symbolic link leads this folder out of {dest}; the planned repository was not written there")


def _is_workload(doc: Any, model: Model) -> bool:
    return bool(doc.is_policylint and doc.kind == "Workload" and isinstance(doc.data, dict) and doc.name in model.workloads)


def _edited(source: SourceFile, plan: Plan, model: Model) -> str | None:
    """The file's text with each Workload's placement (and what-if inputs) edited in place, or None.

    Only the scalars change, so comments and suppressions stay (see
    :mod:`policylint.edit.scalars`). None when the file holds a document the plan
    leaves out, or a value to change is not written as a plain scalar of its own.
    """
    edits: list[ScalarEdit] = []
    for d in source.documents:
        if d.data is None:
            continue
        if replaced_document(d):
            return None
        if not _is_workload(d, model):
            continue
        spec = d.data.get("spec")
        if not isinstance(spec, dict):
            return None
        target = _placed(d.data, plan, str(d.name))["spec"]
        if "queue" in spec and "queue" not in target:
            return None  # a key to remove: not an edit of a scalar
        for path in (("cluster",), ("pool",), ("coldStartSeconds",), ("tolerance", "maxQueueSeconds")):
            old, new = _get(spec, path), _get(target, path)
            if old == new:
                continue
            if old is None or new is None or isinstance(old, (dict, list)):
                return None  # a key to add
            edits.append(ScalarEdit(d.index, ("spec", *path), new))
    result = apply_edits(source.text, edits)
    if result.error is not None or result.refused:
        return None
    return result.text


def _get(data: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = data
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _placed(data: dict[str, Any], plan: Plan, name: str) -> dict[str, Any]:
    """A Workload document naming its planned pool, with the what-if inputs applied."""
    out = dict(data)
    spec = dict(out.get("spec") or {})
    if plan.whatif.cold_start_seconds is not None:
        spec["coldStartSeconds"] = plain(plan.whatif.cold_start_seconds)
    for n, seconds in plan.whatif.tolerances:
        if n == name:
            tol = dict(spec.get("tolerance") or {})
            tol["maxQueueSeconds"] = plain(seconds)
            spec["tolerance"] = tol
    pool = plan.pool_of(name)
    if pool is not None:
        spec.pop("queue", None)
        spec["cluster"] = pool.cluster
        spec["pool"] = pool.name
    out["spec"] = spec
    return out
