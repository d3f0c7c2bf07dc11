"""The parsed forms of a file: :class:`SourceFile` and its :class:`Document` objects.

Also the checks made on each document as soon as it is built: a near miss of
policylint's ``apiVersion`` (PL007), a list of policylint documents (PL006), and
whether a document belongs to a scheduler (Kueue, Volcano); and
:class:`Definitions`, which gives each defined object one identity (PL021).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policylint import API_VERSION
from policylint.catalogue import builtin
from policylint.finding import Finding, Severity, Subject
from policylint.model.load.positions import DocPath, PositionIndex, ScalarScan, pointer

if TYPE_CHECKING:
    from policylint.model.load.document_cache import StoredSource


@dataclass
class Document:
    """One YAML document of a source file, parsed to plain data."""

    source: SourceFile
    index: int
    data: Any
    positions: PositionIndex

    @property
    def file(self) -> str:
        return self.source.display

    @property
    def kind(self) -> str | None:
        k = self.data.get("kind") if isinstance(self.data, dict) else None
        return k if isinstance(k, str) else None

    @property
    def api_version(self) -> str | None:
        v = self.data.get("apiVersion") if isinstance(self.data, dict) else None
        return v if isinstance(v, str) else None

    @property
    def name(self) -> str | None:
        meta = self.data.get("metadata") if isinstance(self.data, dict) else None
        n = meta.get("name") if isinstance(meta, dict) else None
        return n if isinstance(n, str) else None

    @property
    def is_policylint(self) -> bool:
        # api_version == API_VERSION, in one step: asked about 5 times per document of a run
        data = self.data
        return isinstance(data, dict) and data.get("apiVersion") == API_VERSION

    def locate(self, path: Iterable[str | int]) -> tuple[int, int]:
        return self.positions.locate(path)

    def finding(
        self,
        code: str,
        message: str,
        path: Iterable[str | int] = (),
        *,
        rule: tuple[str, Severity] | None = None,
        hint: str = "",
        subject: str = "",
        target: Subject | None = None,
        figures: tuple[float, float] | None = None,
    ) -> Finding:
        """A finding located at ``path`` inside this document.

        The steps' built-in checks give the code only: the rule's name and
        severity come from the rule catalogue (the rule files). The evaluator
        gives ``rule`` - the (name, severity) of the rule it loaded, which may
        be a team's own rule the catalogue does not hold.
        """
        p = tuple(path)
        line, col = self.positions.locate(p)
        rule_name, default = builtin(code) if rule is None else rule
        return Finding(
            file=self.file,
            line=line,
            column=col,
            code=code,
            name=rule_name,
            severity=default,
            message=message,
            hint=hint,
            doc_index=self.index,
            doc_path=pointer(p),
            subject=subject,
            target=target,
            figures=figures,
        )


@dataclass
class SourceFile:
    """A file read from disk: its text, its documents and its load findings."""

    path: Path
    display: str
    text: str = ""
    documents: list[Document] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    #: refused unread (not a regular file, or over the size limit): nobody can tell
    #: whether it holds policylint documents, so it is reported even when walked
    refused: bool = False
    #: every policylint document already passed schema validation (a document-cache hit)
    validated: bool = False
    #: the document-cache key of this file's bytes, when a cache is in use and it missed
    cache_key: str | None = None
    #: the document cache's stored form of this file (read from or written to it), which the
    #: repository's document pack keeps (:mod:`policylint.model.load.document_pack_cache`)
    stored: dict[str, Any] | None = field(default=None, repr=False)
    #: where the scalars are, for finding comments: recorded by the parse when the text holds
    #: a suppression marker, else found when first asked for (see :mod:`policylint.model.load.comments`)
    scalars: ScalarScan | None = None

    @classmethod
    def from_stored(cls, path: Path, display: str, stored: StoredSource) -> SourceFile:
        """The file as the document cache kept it (an entry, or the repository's pack): its documents passed validation."""
        source = cls(path=path, display=display, text=stored.text)
        for doc in stored.documents:
            source.documents.append(Document(source=source, index=doc.index, data=doc.data, positions=doc.positions))
        source.validated = True
        source.stored = stored.payload
        return source

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    def file_finding(
        self, code: str, message: str, line: int = 1, column: int = 1, hint: str = "", doc_index: int = 0
    ) -> Finding:
        """A built-in finding at a line of this file; its name and severity come from the rule catalogue."""
        rule_name, severity = builtin(code)
        return Finding(
            file=self.display,
            line=line,
            column=column,
            code=code,
            name=rule_name,
            severity=severity,
            message=message,
            hint=hint,
            doc_index=doc_index,
        )


class Definitions:
    """One identity per defined object, whatever file or scheduler it comes from.

    The first document that defines a (kind, name) holds it; a later one is a
    PL021 finding at its ``metadata.name`` that points at the first, and is not
    read (so a reference binds to the first, and the finding says so). Kinds are
    told apart by API group too: a policylint ``Cluster``, a Kueue
    ``ClusterQueue`` and a Volcano ``Queue`` never collide with one another.
    """

    def __init__(self, findings: list[Finding]) -> None:
        self._first: dict[tuple[str, str, str], Document] = {}
        self._findings = findings
        #: (the first definition, a later one) per clash: the files a narrowed run must judge together
        self.clashes: list[tuple[Document, Document]] = []

    def claim(self, kind: str, name: str, doc: Document) -> bool:
        """True when ``doc`` is the first definition of ``kind`` ``name``; else a PL021 finding and False."""
        key = ((doc.api_version or "").split("/", 1)[0], kind, name)
        first = self._first.get(key)
        if first is not None:
            line, _ = first.locate(("metadata", "name"))
            self._findings.append(
                doc.finding(
                    "PL021",
                    f"{kind} '{name}' is already defined at {first.file}:{line}",
                    ("metadata", "name"),
                    hint=f"give each {kind} a unique metadata.name",
                )
            )
            self.clashes.append((first, doc))
            return False
        self._first[key] = doc
        return True


def _listed_documents(doc: Document) -> Finding | None:
    """PL006 for a document that is a list of policylint documents instead of one.

    Such a file holds nothing policylint can read, so without this it would be
    skipped like unrelated YAML (or refused as holding no documents when named),
    and every rule that should judge its items would stay silent.
    """
    data = doc.data
    if isinstance(data, dict):
        # a Kubernetes List (``kind: List``, ``items:``) of policylint documents: read as another tool's YAML,
        # its items would vanish unreported
        kind, items = data.get("kind"), data.get("items")
        if isinstance(kind, str) and kind.endswith("List") and isinstance(items, list):
            for i, item in enumerate(items):
                if isinstance(item, dict) and item.get("apiVersion") == API_VERSION:
                    return doc.finding(
                        "PL006",
                        f"a policylint document must be a document of its own, got one inside a {kind}'s items",
                        ("items", i),
                        hint="write each item as a document of its own, separated by '---'",
                    )
        return None
    if not isinstance(data, list):
        return None
    for i, item in enumerate(data):
        if isinstance(item, dict) and isinstance(item.get("apiVersion"), str) and item["apiVersion"] == API_VERSION:
            return doc.finding(
                "PL006",
                "a policylint document must be a mapping, got a list of documents",
                (i,),
                hint="write each item as a document of its own, separated by '---'",
            )
    return None


#: the API groups of the scheduler manifests policylint reads (Kueue, Volcano)
SCHEDULER_APIS = ("kueue.x-k8s.io/", "scheduling.volcano.sh/", "batch.volcano.sh/")


#: the Kueue and Volcano kinds that shape GPU pools or place workloads in them
SCHEDULER_KINDS = ("ClusterQueue", "ResourceFlavor", "LocalQueue", "Cohort", "Queue")
_NAMES_SCHEDULER_KIND = re.compile(r"kind[\"']?\s*:\s*[\"']?(?:" + "|".join(SCHEDULER_KINDS) + r")\b")


#: the names kustomize reads a kustomization from (it needs no apiVersion or kind there)
KUSTOMIZATION_NAMES = frozenset({"kustomization.yaml", "kustomization.yml", "Kustomization"})


def _is_kustomization(doc: Document, api: Any, kind: Any) -> bool:
    """A kustomization: declared as one, or a document of a file kustomize reads by its name (kustomize's own
    apiVersion or none: its ``kind`` may be spelled ``Kind``, which kustomize reads alike)."""
    named = doc.source.path.name in KUSTOMIZATION_NAMES
    if isinstance(api, str) and api.startswith("kustomize.config.k8s.io/"):
        return named or kind in ("Kustomization", "Component")
    return api is None and (kind is None or kind in ("Kustomization", "Component")) and named


#: the fields of a kustomization (and of its entries) as kustomize spells them. kustomize decodes through Go's
#: JSON decoder, which matches a field's name in any case: ``Patches:`` is ``patches:`` to it (red team, round 8),
#: and by Unicode's case folding: ``patcheſ`` (a long s) is too (round 9). Keys are matched by ``str.casefold``.
_KUSTOMIZE_FIELDS = {name.casefold(): name for name in (
    "apiVersion", "kind", "metadata", "resources", "components", "bases", "crds", "patches", "patchesStrategicMerge",
    "patchesJson6902", "replacements", "transformers", "generators", "validators", "configurations", "helmCharts",
    "helmChartInflationGenerator", "helmGlobals", "namespace", "namePrefix", "nameSuffix", "commonLabels", "labels",
    "commonAnnotations", "images", "replicas", "configMapGenerator", "secretGenerator", "generatorOptions", "vars",
    "openapi", "sortOptions", "buildMetadata", "path", "patch", "target", "options", "allowKindChange",
    "allowNameChange", "group", "version", "name", "labelSelector", "annotationSelector", "source", "targets",
    "select", "reject", "fieldPaths")}


def canonical_kustomization(data: Any) -> Any:
    """``data`` with every mapping key that kustomize reads as one of its fields spelled as kustomize spells it.

    A key spelled both ways keeps the value written under kustomize's spelling. Values are
    left as they are (a kind named in a target is matched exactly by kustomize too).
    """
    if isinstance(data, list):
        return [canonical_kustomization(v) for v in data]
    if not isinstance(data, dict):
        return data
    out: dict[Any, Any] = {}
    for key, value in data.items():
        name = _KUSTOMIZE_FIELDS.get(key.casefold(), key) if isinstance(key, str) else key
        if name in out and name != key:
            continue
        out[name] = canonical_kustomization(value)
    return out


def kustomizations(source: SourceFile) -> list[tuple[int, dict[str, Any]]]:
    """(index, data) of each document of ``source`` that is a kustomization (:func:`_is_kustomization`), its
    fields spelled as kustomize spells them (:func:`canonical_kustomization`)."""
    return [(i, canonical_kustomization(d.data)) for i, d in enumerate(source.documents)
            if isinstance(d.data, dict) and _is_kustomization(d, d.data.get("apiVersion"), d.data.get("kind"))]


def kustomization_entry_path(entry: Any) -> str | None:
    """The local path an entry of a kustomization's list names (a string, or a mapping's ``path``);
    None for anything else, a remote resource (a URL) or text no file name holds."""
    named = entry.get("path") if isinstance(entry, dict) else entry
    if not isinstance(named, str) or not named or "://" in named or "\0" in named or "\n" in named:
        return None
    return named


def _scheduler_kind_matched(aimed: Any) -> str | None:
    """What a kustomize patch target's ``kind`` selects of the scheduler kinds: kustomize reads it as a
    regular expression, and a target without one selects every kind (by name, labels, annotations)."""
    if aimed is None:
        return "objects of any kind it selects by name or label"
    if not isinstance(aimed, str):
        return "objects of any kind"
    if aimed in SCHEDULER_KINDS:
        return f"the {aimed}"
    try:
        pattern = re.compile(aimed)
    except (re.error, RecursionError, OverflowError):
        return f"objects of kind '{aimed[:60]}'"
    found = [k for k in SCHEDULER_KINDS if pattern.fullmatch(k)]
    return f"objects of kind '{aimed[:60]}' (a {found[0]} among them)" if found else None


#: kustomization fields that change the objects it deploys by means policylint does not read
_TRANSFORMS = {
    "transformers": "runs transformers",
    "configurations": "changes which fields its transformers write",
    "generators": "runs generators",
    "validators": "runs validators, which may change what they are given",
    "helmCharts": "inflates Helm charts, whose manifests policylint does not read",
    "helmChartInflationGenerator": "inflates Helm charts, whose manifests policylint does not read",
    "helmGlobals": "sets how Helm charts are inflated",
}


def _remote(entry: str) -> bool:
    return "://" in entry or entry.startswith(("github.com/", "gitlab.com/", "bitbucket.org/", "git@"))


def _unseen_transform(data: dict[str, Any]) -> tuple[str, int | None, str] | None:
    """The first field of a kustomization that may change or add scheduler objects unseen: (key, index, what it does).

    Red team, 2026-12-06, round 15: a PatchTransformer under ``transformers``, ``replacements``
    read from a file, ``configurations`` that make ``replicas`` write a ClusterQueue's quota, and
    a remote component each raised a quota by 64 GPUs.
    """
    for key, what in _TRANSFORMS.items():
        if data.get(key):
            return key, None, what
    entries = data.get("replacements")
    for i, entry in enumerate(entries if isinstance(entries, list) else ()):
        if isinstance(entry, dict) and "path" in entry:
            return "replacements", i, "reads replacements from a file"
    for key in ("patches", "patchesJson6902"):
        entries = data.get(key)
        for i, entry in enumerate(entries if isinstance(entries, list) else ()):
            options = entry.get("options") if isinstance(entry, dict) else None
            changes = [o for o in ("allowKindChange", "allowNameChange") if isinstance(options, dict) and options.get(o)]
            if changes:
                # a ConfigMap patched into a ClusterQueue (red team, round 8: +64 GPUs of a new queue)
                return key, i, f"lets a patch change what an object is ({', '.join(changes)})"
    for key in ("resources", "components"):
        entries = data.get(key)
        for i, entry in enumerate(entries if isinstance(entries, list) else ()):
            if isinstance(entry, str) and _remote(entry):
                return key, i, f"deploys remote {key} ({entry[:80]}) that policylint cannot read"
    return None


def scheduler_objects_unread(doc: Document) -> Finding | None:
    """PL026 for a document that sets Kueue or Volcano objects where policylint does not read them.

    A Kubernetes ``List`` (or ``ClusterQueueList``) of scheduler objects, and a kustomization
    patch aimed at one, are applied by ``kubectl`` like the manifests beside them, but
    policylint judges scheduler objects only as documents of their own, as written: a
    quota set or raised there was owned by the cluster and judged by no rule (red team,
    2026-12-06, round 13: +64 GPUs both ways).
    """
    data = doc.data
    if not isinstance(data, dict):
        return None
    kind, api = data.get("kind"), data.get("apiVersion")
    items = data.get("items")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(items, list):
        # a typed list (ClusterQueueList, QueueList) gives its items its kind: kubectl applies items written
        # without apiVersion and kind (red team, 2026-12-06, round 15: +96 GPUs)
        typed = (isinstance(api, str) and api.startswith(SCHEDULER_APIS)) or kind[:-4] in SCHEDULER_KINDS
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            item_api = item.get("apiVersion")
            if not ((isinstance(item_api, str) and item_api.startswith(SCHEDULER_APIS)) or (typed and item_api is None)):
                continue
            meta = item.get("metadata")
            name = meta.get("name") if isinstance(meta, dict) else None
            item_kind = item.get("kind") if item.get("kind") is not None else kind[:-4]
            what = f"{item_kind} '{name}'" if isinstance(name, str) else str(item_kind)
            return doc.finding(
                "PL026",
                f"this {kind} holds the scheduler object {what}: policylint reads Kueue and Volcano objects only as"
                " documents of their own, so what this one sets is applied to the cluster but not judged",
                ("items", i),
                hint="write each scheduler object as a document of its own, separated by '---'",
            )
    if _is_kustomization(doc, api, kind):
        spelled = {_KUSTOMIZE_FIELDS.get(k.casefold(), k): k for k in data if isinstance(k, str)}
        return _kustomization_unread(doc, canonical_kustomization(data), kind, spelled)
    return None


def _kustomization_unread(doc: Document, data: dict[str, Any], kind: Any, spelled: dict[str, str]) -> Finding | None:
    """PL026 for a kustomization's fields (``data``: spelled as kustomize spells them; ``spelled``: as written, by
    kustomize's spelling) that deploy scheduler objects unread; placed at the key as written."""

    def at(key: str, *rest: str | int) -> tuple[str | int, ...]:
        return (spelled.get(key, key), *rest)

    # a replacement writes a value (a generated ConfigMap's literal) into the objects it selects
    replacements = data.get("replacements")
    for i, entry in enumerate(replacements if isinstance(replacements, list) else ()):
        targets = entry.get("targets") if isinstance(entry, dict) else None
        for target in targets if isinstance(targets, list) else ():
            select = target.get("select") if isinstance(target, dict) else None
            aimed = select.get("kind") if isinstance(select, dict) else None
            if aimed in SCHEDULER_KINDS:
                named = select.get("name") if isinstance(select, dict) else None
                return doc.finding(
                    "PL026",
                    f"this kustomization writes a replacement into the {aimed}"
                    + (f" '{named}'" if isinstance(named, str) else "")
                    + ": policylint judges the scheduler manifests as written, so the values it deploys are not judged",
                    at("replacements", i),
                    hint="write the deployed values in the manifests themselves, or render them "
                    "(kubectl kustomize) into the files policylint checks",
                )
    unseen = _unseen_transform(data)
    if unseen is not None:
        field, index, what = unseen
        return doc.finding(
            "PL026",
            f"this {kind if isinstance(kind, str) else 'kustomization'} {what}: policylint judges the scheduler"
            " manifests as written, so what it changes in a ClusterQueue or Queue (a quota) is not judged",
            at(field) if index is None else at(field, index),
            hint="write the deployed values in the manifests themselves, or render them "
            "(kubectl kustomize) into the files policylint checks",
        )
    for key in ("patches", "patchesJson6902", "patchesStrategicMerge"):
        entries = data.get(key)
        for i, entry in enumerate(entries if isinstance(entries, list) else ()):
            target = entry.get("target") if isinstance(entry, dict) else None
            aimed = target.get("kind") if isinstance(target, dict) else None
            inline = entry.get("patch") if isinstance(entry, dict) else entry
            hits = _scheduler_kind_matched(aimed) if isinstance(target, dict) else None
            if hits is not None or (isinstance(inline, str) and _NAMES_SCHEDULER_KIND.search(inline)):
                named = target.get("name") if isinstance(target, dict) else None
                shown = (hits + (f" '{named}'" if isinstance(named, str) else "")
                         if hits is not None else "a scheduler object")
                return doc.finding(
                    "PL026",
                    f"this {kind if isinstance(kind, str) else 'kustomization'} patches {shown}: policylint judges the scheduler manifests as written, so the"
                    " values the patch deploys (a quota, a borrowing limit) are not judged",
                    at(key, i),
                    hint="write the deployed values in the manifests themselves, or render them "
                    "(kubectl kustomize) into the files policylint checks",
                )
    return None


def stray_documents(source: SourceFile) -> list[Finding]:
    """PL006 for each document that is not a mapping in a file holding policylint documents.

    A scalar or a list between ``---`` separators of a policylint file (a line that
    lost its indentation, a stray value) is part of that file, not unrelated YAML:
    it is reported rather than skipped. Files with no policylint document keep
    their other documents to themselves.
    """
    if not any(d.is_policylint for d in source.documents):
        return []
    flagged = {f.doc_index for f in source.findings if f.code == "PL006"}
    return [
        doc.finding(
            "PL006",
            f"a policylint document must be a mapping, got {type(doc.data).__name__}",
            hint="indent it under the document it belongs to, or remove it",
        )
        for doc in source.documents
        if not isinstance(doc.data, dict) and doc.index not in flagged
    ]


#: The kinds policylint reads, and spec fields no other kind of document uses.
_OUR_KINDS = {"workload", "cluster", "proposal"}
_OUR_SPEC_FIELDS = {"gpusPerReplica", "perGpuConcurrency", "coldStartSeconds"}
_API_KEY_SPELLING = re.compile(r"[-_\s]")


def _looks_like_our_spec(spec: Any) -> bool:
    if not isinstance(spec, dict):
        return False
    if _OUR_SPEC_FIELDS & {k for k in spec if isinstance(k, str)}:
        return True
    pools = spec.get("pools")
    if isinstance(pools, list) and any(isinstance(p, dict) and "reservedGpus" in p for p in pools):
        return True
    return "requests" in spec and "justification" in spec


def _nearly_policylint(group: str) -> bool:
    """True when ``group`` (an apiVersion's group, separators dropped, lower case) is "policylint" but for a slip:
    at most two letters missing, added, changed or swapped ("policylnt", "polycylint", "policylitn")."""
    target = "policylint"
    if group == target or abs(len(group) - len(target)) > 2 or len(group) < 6:
        return False
    # optimal string alignment distance, on ten letters at most twelve: a few hundred steps
    rows = [list(range(len(target) + 1))]
    for i, a in enumerate(group, 1):
        row = [i] + [0] * len(target)
        for j, b in enumerate(target, 1):
            row[j] = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + (a != b))
            if i > 1 and j > 1 and a == target[j - 2] and group[i - 2] == b:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1] <= 2


def api_version_near_miss(doc: Document) -> Finding | None:
    """A finding when ``doc`` looks like a policylint document but will not be read as one.

    ``policylint/v2``, ``policylint.dev/v1``, an ``apiversion`` key, or no
    apiVersion at all on a document with our kinds or fields: without this the
    document would be skipped like any unrelated YAML, and every rule that
    should judge it would stay silent.
    """
    data = doc.data
    if not isinstance(data, dict) or doc.is_policylint or is_scheduler_doc(doc):
        return None
    hint = f"start the document with apiVersion: {API_VERSION}"

    def finding(message: str, path: DocPath) -> Finding:
        return doc.finding("PL007", message, path, hint=hint)

    for key in data:
        if isinstance(key, str) and key != "apiVersion" and _API_KEY_SPELLING.sub("", key).lower() == "apiversion":
            return finding(f"key '{key}' is not 'apiVersion' (keys are case-sensitive), so the document is not read", (key,))
    api = data.get("apiVersion")
    kind = data.get("kind")
    ours = isinstance(kind, str) and kind.lower() in _OUR_KINDS
    if isinstance(api, str):
        group = _API_KEY_SPELLING.sub("", api.split("/", 1)[0]).lower()
        if "policylint" in _API_KEY_SPELLING.sub("", api).lower() or _nearly_policylint(group):
            return finding(f"apiVersion '{api}' is not {API_VERSION}, so the document is not read", ("apiVersion",))
        if ours and _looks_like_our_spec(data.get("spec")):
            # a typo past the near-miss distance ("plicylnt/v1"), on a document that is plainly ours
            return finding(f"a {kind} with policylint's fields has apiVersion '{api}', so it is not read", ("apiVersion",))
        return None
    if ours or (kind is None and _looks_like_our_spec(data.get("spec"))):
        what = f"a {kind}" if ours else "a document with policylint fields"
        if "apiVersion" in data:
            return finding(f"{what} with apiVersion {api!r} is not read; policylint reads {API_VERSION}", ("apiVersion",))
        return finding(f"{what} without apiVersion is not read; policylint reads {API_VERSION}", ())
    return None


def is_scheduler_doc(doc: Document) -> bool:
    """True for Kueue and Volcano documents, which the scheduler adapters read.

    Kueue's manager Configuration is one too (its own document, or a ConfigMap's
    ``controller_manager_config.yaml``): it can change what Kueue charges GPU pods against.
    """
    api = doc.api_version or ""
    data = doc.data.get("data") if doc.kind == "ConfigMap" else None
    return api.startswith(SCHEDULER_APIS) or api.startswith("config.kueue.x-k8s.io/") or (
        isinstance(data, dict) and isinstance(data.get("controller_manager_config.yaml"), str))
