"""The changes that widen a narrowed run to the whole repository (:mod:`policylint.engine.scope` narrows the rest).

A changed configuration, rule file or baseline, a deleted file (:func:`changes_everything`),
and a changed file the model reads but cannot map to the subjects it affects
(:func:`read_but_unmapped`) each may move any verdict: a run given them is judged whole.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from policylint.model import Model
    from policylint.model.config import Config


def _abs(path: Path | str) -> Path:
    return Path(os.path.realpath(path))


def _stat(path: Path | str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def _absolute(text: str, folder: str) -> str:
    """``text`` as an absolute path, relative ones taken from ``folder`` (the working directory): not normalised."""
    return text if os.path.isabs(text) else os.path.join(folder, text)


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def changes_everything(changed: Iterable[Path], config: Config) -> Path | None:
    """The first changed file that can change the verdict on any document, if any.

    That is the configuration file itself, a file under one of the rule
    folders, the baseline file, or a file of the repository that was deleted.
    """
    global_files = [_abs(p) for p in (config.path, config.baseline) if p is not None]
    rule_dirs = [_abs(d) for d in config.rule_dirs]
    root = Path(os.path.abspath(config.root))
    for p in sorted(_abs(p) for p in changed):
        if p in global_files or any(_inside(p, d) for d in rule_dirs):
            return p
    for p in sorted(Path(os.path.abspath(p)) for p in changed):
        if _inside(p, root) and _stat(p) is None:
            # A deleted file: whatever referenced it (a pool's workloads, a proposal's
            # citations, a trace's owner) may no longer be found from it - a workload whose
            # trace is gone has no measurement path left, a deleted document no subject.
            return p
    return None


def read_but_unmapped(model: Model, changed: Iterable[Path]) -> Path | None:
    """The first changed file the model reads that :func:`reach` cannot map to the subjects it affects, if any.

    A Kueue LocalQueue, ResourceFlavor or Cohort, a Volcano manifest other than a pool's
    own queue, or a measurement's provenance record: each changes verdicts (where a
    namespace's workloads are admitted, a flavor's GPU memory, where a trace came
    from), but no subject names it as its document; a kustomization, which chooses
    files the loader reads whatever their names; and a file defining a name another file
    defines too (PL021), which decides which definition the model reads. Such a change is judged as a whole
    run, never narrowed to nothing. Files are compared by device and inode, as
    :func:`reach` compares them.
    """
    from policylint.measure.sources.provenance import SUFFIX
    from policylint.model.schedulers import documents

    stats = [(p, st) for p in sorted(_abs(p) for p in changed) if (st := _stat(p)) is not None]
    if not stats:
        return None
    idents = {(st.st_dev, st.st_ino): p for p, st in stats}
    folder = os.getcwd()

    def hit(path: Path | str) -> Path | None:
        st = _stat(_absolute(os.fspath(path), folder))
        return None if st is None else idents.get((st.st_dev, st.st_ino))

    from policylint.model.load.documents import KUSTOMIZATION_NAMES

    for p, _ in stats:
        if p.name in KUSTOMIZATION_NAMES:
            return p  # it chooses which files the loader reads beside the walk (policylint.model.load.manifests)
    for first, later in model.clashes:
        # a name defined twice: which definition the model reads depends on both files (red team,
        # 2026-12-06, round 16: a new file claimed a workload's name first, and the hook and --diff
        # reported nothing on the file and pool it took the workload from)
        if (found := hit(first)) or (found := hit(later)):
            return found
    pool_docs = {id(p.doc) for c in model.clusters.values() for p in c.pools.values()}
    for doc in documents(model):
        if id(doc) not in pool_docs and (found := hit(doc.source.path)):
            return found
    if any(p.name.endswith(SUFFIX) for p, _ in stats):
        # a provenance record lies beside its trace, named after it
        for ref in model.measurements():
            if ref.path is not None and (found := hit(ref.path.with_name(ref.path.name + SUFFIX))):
                return found
    return None


def lost_name(model: Model, defined_before: Iterable[tuple[str, str]]) -> str | None:
    """A name the changed files defined before the change that nothing defines now, if any.

    A cluster, pool, workload, Kueue ClusterQueue or Volcano Queue renamed (or its document
    emptied) leaves every document that names it pointing at nothing (PL020), and those
    documents did not change: the narrowing,
    which follows what the changed files define now, cannot reach them (found by the gate fuzz
    target: a cluster renamed in its own file passed the hook while its workloads and proposal
    failed the whole run). Such a change is judged as a whole run, as a deleted file is.
    """
    queues: set[tuple[str, str]] | None = None
    for kind, name in sorted(defined_before):
        if ":" in kind:  # a scheduler queue (base_files.QUEUE_KINDS)
            if queues is None:
                from policylint.engine.base_files import defined_names
                from policylint.model.schedulers import documents

                queues = {n for d in documents(model) for n in defined_names(d.kind, d.data, d.api_version or "")}
            if (kind, name) not in queues:
                return f"{kind} {name}"
        if kind == "workload" and name not in model.workloads:
            return f"workload {name}"
        if kind == "cluster" and name not in model.clusters:
            return f"cluster {name}"
        if kind == "pool":
            cluster, _, pool = name.partition("/")
            if cluster not in model.clusters or pool not in model.clusters[cluster].pools:
                return f"pool {name}"
    return None
