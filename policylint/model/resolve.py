"""Step 3: resolve references across files into one :class:`Model`.

Workload -> pool -> cluster, proposal -> cluster / pools / workloads, and
measurement files relative to the declaring document. Every broken reference is
a finding at the referencing line: unknown names, duplicate names, missing
files and - before anything is opened - paths that leave the repository root.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from collections.abc import Callable
from typing import Any, TypeGuard

from policylint.safeio import stat_once
from policylint.finding import Finding
from policylint.model.load import Definitions, Document, DocPath, RealPaths, within
from policylint.model.load.files import child_path, folder_text
from policylint.model import Cluster, MeasurementRef, Model, Pool, Proposal, Unplaced, Workload, schedulers
from policylint.model.specs import ReferenceSpec

#: Document paths of the measurement references a Workload can make.
MEASUREMENT_PATHS: dict[str, DocPath] = {
    "concurrency": ("spec", "concurrency", "trace"),
    "vram": ("spec", "vram", "trace"),
    "vram_activity": ("spec", "vram", "activity"),
    "durations": ("spec", "durations", "jobs"),
}

#: Where a Workload names the document its tolerance is derived from (``document`` key).
EVIDENCE_PATH: DocPath = ("spec", "tolerance", "evidence")


def _get(data: Any, path: DocPath) -> Any:
    for key in path:
        if isinstance(data, dict) and key in data:
            data = data[key]
        elif isinstance(data, list) and isinstance(key, int) and 0 <= key < len(data):
            data = data[key]
        else:
            return None
    return data


def _is_reference(block: object) -> TypeGuard[ReferenceSpec]:
    """Whether ``block``, read at a reference path of a validated Workload, is a reference block.

    The schema allows only such a block there (a measurement, or the evidence block),
    so any mapping found is one; a plain-text evidence is no reference.
    """
    return isinstance(block, dict)


def check_reference(
    doc: Document,
    ref_path: DocPath,
    relative: str,
    root: Path,
    key: str = "path",
    what: str = "measurement",
    real: RealPaths | None = None,
) -> tuple[Path | None, Finding | None]:
    """Resolve a file reference made by ``doc``; refuse anything outside ``root``.

    ``key`` is the field holding the path under ``ref_path``; ``what`` names the
    kind of file in messages (a measurement, an evidence document).

    The check is lexical first (``..`` and absolute paths are refused without
    touching the file system beyond the document's folder), then physical
    (symlinks are followed and the target must still be inside ``root``). The
    file is never opened here. ``real`` resolves symlinks (one per run keeps
    each folder's real path).
    """
    return References(root, real or RealPaths()).check(doc, ref_path, relative, key, what)


class References:
    """:func:`check_reference` for every reference of one run, with what its references share made once.

    The root's absolute path, each declaring file's folder and each referenced
    folder's ``Path`` are made once per run, not once per reference: a repository
    with 10,000 traces resolves 10,000 of these. The answers are
    :func:`check_reference`'s.
    """

    def __init__(self, root: Path, real: RealPaths) -> None:
        self.root_abs = os.path.abspath(root)
        self.real = real
        #: per folder of declaring files (as their paths' text has it): its absolute path
        self._bases: dict[str, str] = {}
        #: per referenced folder (absolute, normalised text): its Path and the text its files' paths start with
        self._folders: dict[str, tuple[Path, str | None]] = {}

    def check(
        self, doc: Document, ref_path: DocPath, relative: str, key: str = "path", what: str = "measurement"
    ) -> tuple[Path | None, Finding | None]:
        """:func:`check_reference` of ``relative``, made by ``doc``, in this run's root."""
        where = (*ref_path, key)
        if os.path.isabs(relative) or relative.startswith(("~", "\\")) or (len(relative) > 1 and relative[1] == ":"):
            return None, doc.finding(
                "PL023",
                f"{what} path '{relative}' is absolute; paths must be relative to the declaring file",
                where,
                hint=f"commit the {what} inside the repository and reference it relatively",
            )
        # plain strings: a repository with a thousand traces resolves a thousand of these
        root_abs = self.root_abs
        base = self.base_of(os.fspath(doc.source.path))
        lexical = os.path.normpath(os.path.join(base, relative))
        if not within(lexical, root_abs):
            return None, doc.finding(
                "PL023",
                f"{what} path '{relative}' leaves the repository root",
                where,
                hint=f"commit the {what} inside the repository and reference it relatively",
            )
        try:
            return _check_on_disk(doc, where, relative, lexical, root_abs, what, self.real, self.path)
        except (OSError, ValueError) as exc:
            # a path component longer than the file system allows (ENAMETOOLONG), a NUL character
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return None, doc.finding(
                "PL022",
                f"{what} path '{_shorten(relative)}' cannot be opened: {reason}",
                where,
                hint="check the path; it is relative to the folder of this file",
            )

    def base_of(self, source: str) -> str:
        """``os.path.dirname(os.path.abspath(source))``, made once per folder of ``source`` as written.

        The folder of a file named by a plain name is that of its folder's other
        files: ``abspath`` (which asks for the working directory) once per folder.
        """
        head, tail = os.path.split(source)
        shared = tail not in ("", os.curdir, os.pardir)
        base = self._bases.get(head) if shared else None
        if base is None:
            base = os.path.dirname(os.path.abspath(source))
            if shared:
                self._bases[head] = base
        return base

    def path(self, text: str) -> Path:
        """``Path(text)`` for an absolute, normalised ``text``, its folder's Path made once."""
        head, tail = os.path.split(text)
        if not tail:
            return Path(text)
        known = self._folders.get(head)
        if known is None:
            folder = Path(head)
            known = self._folders[head] = (folder, folder_text(folder))
        return child_path(known[0], known[1], tail)


def _shorten(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_on_disk(
    doc: Document,
    where: DocPath,
    relative: str,
    lexical_text: str,
    root_text: str,
    what: str,
    real_path: RealPaths,
    make_path: Callable[[str], Path] = Path,
) -> tuple[Path | None, Finding | None]:
    """The physical half of :func:`check_reference` (may raise OSError); ``make_path`` is ``Path`` or its equal."""
    # the usual case, a regular file that is no link, told by its folder's listing without a stat
    known = real_path.regular_file(lexical_text)
    if known is not None and within(known, real_path(root_text)):
        return make_path(lexical_text), None
    try:
        st = stat_once(lexical_text)
    except (OSError, ValueError):
        pass  # missing, a broken link, or worse: the checks below tell which
    else:
        # the usual case, a regular file: one stat, and the real path checked against the root's
        if stat.S_ISREG(st.st_mode) and within(real_path(lexical_text), real_path(root_text)):
            return make_path(lexical_text), None
    lexical, root_abs = Path(lexical_text), Path(root_text)
    if not lexical.exists():
        if lexical.is_symlink():
            return None, doc.finding(
                "PL023",
                f"{what} path '{relative}' is a broken symlink",
                where,
            )
        return None, doc.finding(
            "PL022",
            f"{what} file '{relative}' does not exist",
            where,
            hint="check the path; it is relative to the folder of this file",
        )
    real = Path(real_path(lexical))
    if not inside(real, Path(real_path(root_abs))):
        return None, doc.finding(
            "PL023",
            f"{what} path '{relative}' is a symlink pointing outside the repository",
            where,
            hint="copy the file into the repository instead of linking to it",
        )
    if not real.is_file():
        return None, doc.finding("PL022", f"{what} path '{relative}' is not a file", where)
    return lexical, None


def inside(path: Path, root: Path) -> bool:
    """Whether ``path`` is ``root`` or lies below it, compared part by part."""
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def broken_names(documents: list[Document]) -> dict[str, set[str]]:
    """Per kind, the names documents that failed validation still declare.

    A reference to one of them is not reported again as unknown: the schema
    finding already says what is wrong there. The pools of a broken Cluster are
    read from its raw data as far as it goes (key ``Pool``, as ``cluster/pool``
    and as the bare pool name; ``*`` when its pool list is unreadable), so that a reference to a pool it does not
    declare - a typo - is still an unknown pool.
    """
    out: dict[str, set[str]] = {}
    for doc in documents:
        if not doc.kind or not doc.name:
            continue
        out.setdefault(doc.kind, set()).add(doc.name)
        if doc.kind != "Cluster":
            continue
        spec = doc.data.get("spec")
        pools = spec.get("pools") if isinstance(spec, dict) else None
        if not isinstance(pools, list):
            # nothing readable: any pool name may have been meant, so none is called unknown
            out.setdefault("Pool", set()).update({"*", f"{doc.name}/*"})
            continue
        for pool in pools:
            name = pool.get("name") if isinstance(pool, dict) else None
            if isinstance(name, str):
                out.setdefault("Pool", set()).update({name, f"{doc.name}/{name}"})
    return out


def resolve(
    documents: list[Document],
    root: Path,
    broken_documents: list[Document] | None = None,
    scheduler_documents: list[Document] | None = None,
    gpu_resources: tuple[str, ...] = (),
    real: RealPaths | None = None,
) -> tuple[Model, list[Finding]]:
    """Build the model from valid documents; return it with reference findings.

    ``broken_documents`` failed validation: references to the names they
    declare are not reported again as unknown (see :func:`broken_names`).
    ``real`` is the run's :class:`RealPaths` when the caller has one (the folders
    it resolved and listed while loading are not asked about again).
    """
    broken = broken_names(broken_documents or [])
    real = real if real is not None else RealPaths()
    refs = References(root, real)
    model = Model(root=root)
    findings: list[Finding] = []
    definitions = Definitions(findings)
    claim = definitions.claim
    # each document's kind asked once, not once per kind; in their order within each kind
    by_kind: dict[str | None, list[Document]] = {}
    for doc in documents:
        by_kind.setdefault(doc.kind, []).append(doc)

    for doc in by_kind.get("Cluster", []):
        if not doc.name or not claim("Cluster", doc.name, doc):
            continue
        cluster = Cluster(name=doc.name, doc=doc, spec=doc.data["spec"])
        for i, pool_spec in enumerate(cluster.spec.get("pools", [])):
            pname = pool_spec["name"]
            if pname in cluster.pools:
                findings.append(
                    doc.finding(
                        "PL021",
                        f"pool '{pname}' is defined twice in cluster '{cluster.name}'",
                        ("spec", "pools", i, "name"),
                    )
                )
                continue
            cluster.pools[pname] = Pool(pname, cluster, pool_spec, doc, ("spec", "pools", i))
        model.clusters[cluster.name] = cluster

    findings.extend(
        schedulers.attach(scheduler_documents or [], model, gpu_resources or schedulers.GPU_RESOURCES, definitions)
    )

    for doc in by_kind.get("Workload", []):
        if not doc.name or not claim("Workload", doc.name, doc):
            dropped = unplaced_of(doc, "PL021")
            if dropped.pool is not None:  # a second workload of that name, left out of the pool it names
                model.unplaced.append(dropped)
            continue
        w = Workload(name=doc.name, doc=doc, spec=doc.data["spec"], metadata=doc.data["metadata"])
        model.workloads[w.name] = w
        placing = _place_workload(w, model, broken)
        if placing:
            # it names a cluster or pool that does not exist: in a known cluster it may be meant for any
            # of its pools; in an unknown one (a typo) for a pool of the name it gives, in any cluster
            named, pool = w.spec.get("cluster"), w.spec.get("pool")
            known = named if isinstance(named, str) and named in model.clusters else None
            model.unplaced.append(
                Unplaced(known, None if known is not None or not isinstance(pool, str) else pool,
                         doc.source.display, "PL020")
            )
        findings.extend(placing)
        for role, path in MEASUREMENT_PATHS.items():
            spec = _get(doc.data, path)
            if not _is_reference(spec):
                continue
            resolved, problem = refs.check(doc, path, str(spec["path"]))
            if problem:
                findings.append(problem)
            display = spec["path"]
            w.measurements[role] = MeasurementRef(w.name, role, doc, path, spec, resolved, str(display))
        # A tolerance's evidence document is resolved like a measurement: inside the root, existing.
        evidence = _get(doc.data, EVIDENCE_PATH)
        if _is_reference(evidence) and isinstance(evidence.get("document"), str):
            resolved, problem = refs.check(doc, EVIDENCE_PATH, evidence["document"], key="document", what="evidence document")
            if problem:
                findings.append(problem)
            w.measurements["evidence"] = MeasurementRef(
                w.name, "evidence", doc, EVIDENCE_PATH, evidence, resolved, evidence["document"]
            )

    # A scheduler queue is a pool like any other: in the model with or without workloads.
    schedulers.adopt_unused(model)

    for doc in by_kind.get("Proposal", []):
        if not doc.name or not claim("Proposal", doc.name, doc):
            continue
        p = Proposal(name=doc.name, doc=doc, spec=doc.data["spec"])
        model.proposals[p.name] = p
        findings.extend(_link_proposal(p, model, broken))
    model.clashes = [(first.source.path, later.source.path) for first, later in definitions.clashes]
    return model, findings


def unplaced_of(doc: Document, code: str) -> Unplaced:
    """The pools a document left out of the model may belong to, from what it declares."""
    spec = doc.data.get("spec") if isinstance(doc.data, dict) else None
    cluster = spec.get("cluster") if isinstance(spec, dict) else None
    pool = spec.get("pool") if isinstance(spec, dict) else None
    return Unplaced(cluster if isinstance(cluster, str) else None, pool if isinstance(pool, str) else None,
                    doc.source.display, code)


def _pool_candidates(model: Model, pool: str) -> list[Pool]:
    return [c.pools[pool] for c in model.clusters.values() if pool in c.pools]


def _place_workload(w: Workload, model: Model, broken: dict[str, set[str]]) -> list[Finding]:
    spec = w.spec
    doc = w.doc
    cluster_name = spec.get("cluster")
    pool_name = spec.get("pool")
    if pool_name is None:
        if "queue" in spec:
            return schedulers.place(w, model) or []
        return [
            doc.finding(
                "PL020",
                f"workload '{w.name}' names no pool (spec.pool) and no scheduler queue (spec.queue)",
                ("spec",),
                hint="add spec.pool (and spec.cluster when several clusters define that pool)",
            )
        ]
    if cluster_name is not None:
        cluster = model.clusters.get(cluster_name)
        if cluster is None:
            if cluster_name in broken.get("Cluster", set()):
                declared = broken.get("Pool", set())
                if {f"{cluster_name}/{pool_name}", f"{cluster_name}/*"} & declared:
                    return []
                known = sorted(n.split("/", 1)[1] for n in declared if n.startswith(f"{cluster_name}/"))
                return [
                    doc.finding(
                        "PL020",
                        f"cluster '{cluster_name}' has no pool '{pool_name}'"
                        + (f" (known: {', '.join(known)})" if known else ""),
                        ("spec", "pool"),
                    )
                ]
            return [
                doc.finding(
                    "PL020",
                    f"unknown cluster '{cluster_name}'" + _known(model.clusters),
                    ("spec", "cluster"),
                )
            ]
        pool = cluster.pools.get(pool_name)
        if pool is None:
            return [
                doc.finding(
                    "PL020",
                    f"cluster '{cluster_name}' has no pool '{pool_name}'" + _known(cluster.pools),
                    ("spec", "pool"),
                )
            ]
    else:
        candidates = _pool_candidates(model, pool_name)
        if not candidates:
            if {pool_name, "*"} & broken.get("Pool", set()):
                return []
            known = sorted({p.name for p in model.pools})
            return [
                doc.finding(
                    "PL020",
                    f"unknown pool '{pool_name}'" + (f" (known: {', '.join(known)})" if known else ""),
                    ("spec", "pool"),
                )
            ]
        if len(candidates) > 1:
            names = ", ".join(sorted(p.cluster.name for p in candidates))
            return [
                doc.finding(
                    "PL020",
                    f"pool '{pool_name}' exists in several clusters ({names}); say which with spec.cluster",
                    ("spec", "pool"),
                )
            ]
        pool = candidates[0]
    w.pool = pool
    pool.workloads.append(w)
    return []


def _known(names: dict[str, Any]) -> str:
    return f" (known: {', '.join(sorted(names))})" if names else ""


def _link_proposal(p: Proposal, model: Model, broken: dict[str, set[str]]) -> list[Finding]:
    findings: list[Finding] = []
    doc = p.doc
    # Cited workloads are linked first: they do not depend on the cluster resolving.
    for i, name in enumerate(p.spec.get("workloads", [])):
        w = model.workloads.get(name)
        if w is None:
            if name not in broken.get("Workload", set()):
                findings.append(
                    doc.finding(
                        "PL020",
                        f"unknown workload '{name}'",
                        ("spec", "workloads", i),
                    )
                )
        else:
            p.workloads.append(w)
    cluster = model.clusters.get(p.spec["cluster"])
    if cluster is None:
        if p.spec["cluster"] not in broken.get("Cluster", set()):
            findings.append(
                doc.finding(
                    "PL020",
                    f"unknown cluster '{p.spec['cluster']}'" + _known(model.clusters),
                    ("spec", "cluster"),
                )
            )
        return findings
    p.cluster = cluster
    for i, req in enumerate(p.spec.get("requests", [])):
        pool = cluster.pools.get(req["pool"])
        if pool is None:
            findings.append(
                doc.finding(
                    "PL020",
                    f"cluster '{cluster.name}' has no pool '{req['pool']}'" + _known(cluster.pools),
                    ("spec", "requests", i, "pool"),
                )
            )
        else:
            p.pools[pool.name] = pool
    return findings
