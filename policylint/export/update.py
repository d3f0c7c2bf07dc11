"""``policylint export kueue|volcano --update MANIFESTS``: put the justified quotas into existing objects.

A team's ClusterQueues (Kueue) or Queues (Volcano) hold much more than GPU
quotas: flavors with node selection, CPU and memory, device-sharing resources
such as HAMi's ``nvidia.com/total-gpucores``, namespace selectors, comments.
Rewriting them from the model would lose all of that, so an update changes only
the GPU quota numbers, with the byte-preserving editor of :mod:`policylint.edit`
(the one ``check --fix`` uses):

* Kueue: ``nominalQuota`` = baseline band + the ``lendingLimit`` already set (so
  that the guaranteed part, ``nominalQuota - lendingLimit``, is the baseline);
  ``borrowingLimit`` = daily band - baseline - ``lendingLimit`` (the quota it may
  lend is still the queue's own to use), inserted after ``nominalQuota``
  when the resource has none (no limit would let it borrow everything). A
  ClusterQueue without a cohort cannot borrow, so its ``nominalQuota`` carries
  the whole daily band (a note says so; no cohort is invented).
* Volcano: ``guarantee.resource`` = baseline band, ``capability`` = daily band;
  ``deserved`` stays unless it would fall outside the two, then it moves to the nearer one.

Pools that no existing object carries come back as :attr:`UpdateOutcome.missing`,
for the caller to write as new objects. After the edits the new texts are read
back with the scheduler readers; any pool that does not read back as planned
(for example a cohort that cannot lend what the borrowing limit allows) is
reported in :attr:`UpdateOutcome.notes`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from policylint.edit.scalars import DocPath, ScalarEdit, apply_edits, unified_diff, whole_number
from policylint.model.load import Document, SourceFile
from policylint.model.schedulers.common import mapping, sequence
from policylint.export.plans import PoolPlan
from policylint.model.schedulers.quantity import gpu_count

KUEUE = "kueue.x-k8s.io/"
VOLCANO = "scheduling.volcano.sh/"


@dataclass(frozen=True)
class QuotaEdit:
    """One GPU number to set (``old`` None: the key is added)."""

    file: str
    path: Path
    doc_index: int
    where: DocPath
    queue: str
    old: int | None
    new: int
    why: str

    def describe(self) -> str:
        # Kueue: the field name says it all; Volcano: the resource name needs its map (spec/capability/...)
        key = "/".join(str(p) for p in self.where[1:]) if "/" in str(self.where[-1]) else str(self.where[-1])
        change = f"{self.old} -> {self.new}" if self.old is not None else f"added: {self.new}"
        return f"{self.file}: {self.queue} {key} {change} ({self.why})"


@dataclass
class UpdateOutcome:
    """What an update changes, what it could not, and which pools need new objects."""

    edits: list[QuotaEdit] = field(default_factory=list)
    #: file -> (display name, text before, text after), only files that change
    texts: dict[Path, tuple[str, str, str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    missing: list[PoolPlan] = field(default_factory=list)
    flavors: frozenset[str] = frozenset()
    cohorts: frozenset[str] = frozenset()
    queues: frozenset[str] = frozenset()
    #: queue -> (guaranteed, borrowable) GPUs it should read back as, when not the plan's own
    #: (a ClusterQueue without a cohort reserves its whole daily band)
    expected: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def diff(self) -> str:
        return "".join(unified_diff(old, new, display) for display, old, new in self.texts.values())


def _objects(sources: list[SourceFile], api: str, kind: str) -> dict[str, list[Document]]:
    out: dict[str, list[Document]] = {}
    for source in sources:
        for doc in source.documents:
            if (doc.api_version or "").startswith(api) and doc.kind == kind and doc.name:
                out.setdefault(doc.name, []).append(doc)
    return out


def _band_why(plan: PoolPlan, band: str) -> str:
    if not plan.measured:
        return "declared, no measured bands"
    if band == "baseline":
        return f"pooled baseline band of {plan.cluster}/{plan.pool}"
    return f"pooled daily band {plan.guaranteed + plan.borrow} - baseline {plan.guaranteed}"


def update(
    scheduler: str, plans: list[PoolPlan], sources: list[SourceFile], gpu_resources: tuple[str, ...]
) -> UpdateOutcome:
    """Plan and apply (in memory) the quota edits of ``plans`` to the scheduler objects in ``sources``."""
    outcome = UpdateOutcome()
    edits: list[QuotaEdit] = []
    if scheduler == "kueue":
        queues = _objects(sources, KUEUE, "ClusterQueue")
        outcome.flavors = frozenset(_objects(sources, KUEUE, "ResourceFlavor"))
        outcome.cohorts = frozenset(_objects(sources, KUEUE, "Cohort"))
    else:
        queues = _objects(sources, VOLCANO, "Queue")
    outcome.queues = frozenset(queues)
    for plan in plans:
        docs = queues.get(plan.queue, [])
        if not docs:
            outcome.missing.append(plan)
            continue
        if len(docs) > 1:
            where = ", ".join(f"{d.file} (document {d.index + 1})" for d in docs)
            outcome.notes.append(f"{plan.queue}: defined more than once ({where}); not updated")
            continue
        if scheduler == "kueue":
            edits += _kueue_edits(plan, docs[0], gpu_resources, outcome.notes, outcome.expected)
        else:
            edits += _volcano_edits(plan, docs[0], gpu_resources, outcome.notes)
    _apply(edits, outcome)
    _verify(scheduler, plans, outcome, sources, gpu_resources)
    return outcome


def _kueue_edits(
    plan: PoolPlan, doc: Document, gpu_resources: tuple[str, ...], notes: list[str], expected: dict[str, tuple[int, int]]
) -> list[QuotaEdit]:
    from policylint.model.schedulers.kueue import cohort_of

    spec = mapping(doc.data.get("spec"))
    found: list[tuple[str, DocPath, list[tuple[int, dict[str, Any]]]]] = []
    for gi, group in enumerate(sequence(spec.get("resourceGroups"))):
        for fi, flavor in enumerate(sequence(mapping(group).get("flavors"))):
            flavor = mapping(flavor)
            res = [(ri, mapping(r)) for ri, r in enumerate(sequence(flavor.get("resources"))) if mapping(r).get("name") in gpu_resources]
            if res:
                found.append((str(flavor.get("name")), ("spec", "resourceGroups", gi, "flavors", fi), res))
    head = f"{doc.file}: ClusterQueue {plan.queue}"
    if plan.existing_flavor is not None:
        found = [f for f in found if f[0] == plan.existing_flavor]
        if not found:
            notes.append(f"{head}: no GPU quota on flavor {plan.existing_flavor}; not updated")
            return []
    if len(found) != 1:
        names = ", ".join(f[0] for f in found) or "none"
        notes.append(f"{head}: GPU quota on flavors {names}; name the one for pool {plan.pool} with nodes.resourceFlavor")
        return []
    flavor_name, fpath, res = found[0]
    if len(res) != 1:
        notes.append(f"{head}: flavor {flavor_name} splits its GPU quota over several resources; edit it by hand")
        return []
    ri, entry = res[0]
    rpath: DocPath = (*fpath, "resources", ri)
    cohort = cohort_of(doc)
    lending = 0
    if cohort and "lendingLimit" in entry:
        try:
            lending = gpu_count(entry["lendingLimit"])
        except ValueError:
            notes.append(f"{head}: lendingLimit is not a quantity; not updated")
            return []
    out: list[QuotaEdit] = []
    old = whole_number(entry.get("nominalQuota"))
    # Without a cohort there is nothing to borrow: the nominal quota is all the queue can use,
    # so it carries the daily band (guaranteed + borrowed), or the daily band's bursts would queue.
    nominal = plan.guaranteed + lending if cohort else plan.guaranteed + plan.borrow
    if not cohort:
        expected[plan.queue] = (nominal, 0)
    if old is None:
        notes.append(f"{head}: nominalQuota is not written as a whole number; set it to {nominal} by hand")
        return []
    if cohort or not plan.borrow:
        why = _band_why(plan, "baseline") + (f" + lendingLimit {lending} kept" if lending else "")
    else:
        why = f"{_band_why(plan, 'baseline')} {plan.guaranteed} + {plan.borrow} of the daily band: no cohort to borrow them from"
    out.append(QuotaEdit(doc.file, doc.source.path, doc.index, (*rpath, "nominalQuota"), plan.queue, old, nominal, why))
    if not cohort:
        if plan.borrow:
            notes.append(
                f"{head}: belongs to no cohort, so its nominalQuota of {nominal} holds the whole daily band; "
                f"to guarantee only the baseline of {plan.guaranteed} and borrow the other {plan.borrow}, give it a cohort and a borrowingLimit"
            )
        return out
    # The quota it may lend stays its own to use whenever no other queue borrows it: elastic
    # capacity on top of the guarantee, so the borrowing limit carries only the rest of the daily band.
    borrow = max(0, plan.borrow - lending)
    why = _band_why(plan, "daily") + f", borrowed within cohort {cohort}" + (
        f", less the lendingLimit {lending} it may use itself" if lending else "")
    if lending > plan.borrow:
        notes.append(
            f"{head}: its lendingLimit of {lending} is more than the {plan.borrow} GPUs of the daily band above the"
            f" baseline, and the queue may use all of its nominal quota; lower the lendingLimit to {plan.borrow} by hand"
        )
        expected[plan.queue] = (plan.guaranteed, lending)
    if "borrowingLimit" in entry:
        old = whole_number(entry["borrowingLimit"])
        if old is None:
            notes.append(f"{head}: borrowingLimit is not written as a whole number; set it to {borrow} by hand")
            return out
        out.append(QuotaEdit(doc.file, doc.source.path, doc.index, (*rpath, "borrowingLimit"), plan.queue, old, borrow, why))
    else:
        out.append(QuotaEdit(doc.file, doc.source.path, doc.index, (*rpath, "borrowingLimit"), plan.queue, None, borrow, why))
    return out


def _volcano_edits(plan: PoolPlan, doc: Document, gpu_resources: tuple[str, ...], notes: list[str]) -> list[QuotaEdit]:
    spec = mapping(doc.data.get("spec"))
    head = f"{doc.file}: Queue {plan.queue}"
    out: list[QuotaEdit] = []
    for where, value, why in (
        (("spec", "guarantee", "resource"), plan.guaranteed, _band_why(plan, "baseline")),
        (("spec", "capability"), plan.guaranteed + plan.borrow, _band_why(plan, "daily") + f" + baseline {plan.guaranteed}"),
    ):
        node: Any = spec
        for key in where[1:]:
            node = mapping(node).get(key)
        keys = [k for k in mapping(node) if k in gpu_resources]
        shown = ".".join(where[1:])
        if len(keys) != 1:
            notes.append(f"{head}: no single GPU resource in {shown}; add {gpu_resources[0]}: {value} there by hand")
            continue
        old = whole_number(mapping(node)[keys[0]])
        if old is None:
            notes.append(f"{head}: {shown}.{keys[0]} is not written as a whole number; set it to {value} by hand")
            continue
        out.append(QuotaEdit(doc.file, doc.source.path, doc.index, (*where, keys[0]), plan.queue, old, value, why))
    # Volcano refuses a queue whose deserved share lies outside guarantee..capability:
    # a deserved GPU share is kept unless the new numbers put it outside, then moved to the nearest end.
    deserved = mapping(spec.get("deserved"))
    keys = [k for k in deserved if k in gpu_resources]
    if len(keys) == 1 and (old := whole_number(deserved[keys[0]])) is not None:
        low, high = plan.guaranteed, plan.guaranteed + plan.borrow
        new = min(max(old, low), high)
        if new != old:
            why = f"kept within guarantee {low} .. capability {high}, as Volcano requires"
            out.append(QuotaEdit(doc.file, doc.source.path, doc.index, ("spec", "deserved", keys[0]), plan.queue, old, new, why))
    return out


def _apply(edits: list[QuotaEdit], outcome: UpdateOutcome) -> None:
    by_file: dict[Path, list[QuotaEdit]] = {}
    for e in edits:
        by_file.setdefault(e.path, []).append(e)
    for path in sorted(by_file, key=str):
        chosen = by_file[path]
        display = chosen[0].file
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            outcome.notes.append(f"{display}: not updated ({exc})")
            continue
        scalar = {ScalarEdit(e.doc_index, e.where, e.new): e for e in chosen if e.old is not None}
        result = apply_edits(text, list(scalar))
        if result.error is not None:
            outcome.notes.append(f"{display}: not updated ({result.error.splitlines()[0]})")
            continue
        for edit, reason in result.refused:
            outcome.notes.append(f"{display}: not updated ({reason})")
        done = [scalar[e] for e in result.applied]
        new = result.text
        for e in sorted((e for e in chosen if e.old is None), key=lambda e: e.doc_index):
            new, reason = insert_after(new, e.doc_index, (*e.where[:-1], "nominalQuota"), str(e.where[-1]), e.new)
            if reason:
                outcome.notes.append(f"{display}: {e.queue}: add {e.where[-1]}: {e.new} by hand ({reason})")
            else:
                done.append(e)
        if new != text:
            outcome.texts[path] = (display, text, new)
        outcome.edits += [e for e in chosen if e in done and e.old != e.new]


def insert_after(text: str, doc_index: int, sibling: DocPath, key: str, value: int) -> tuple[str, str]:
    """Add ``key: value`` on its own line after the line of the block-mapping key ``sibling``.

    Returns (new text, '') or (the text unchanged, the reason it could not be done).
    """
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    body = text[len(bom) :]
    try:
        docs = list(yaml.compose_all(body, Loader=yaml.SafeLoader))
    except yaml.YAMLError:
        return text, "the file is not valid YAML"
    node: yaml.Node | None = docs[doc_index] if 0 <= doc_index < len(docs) else None
    parent: yaml.Node | None = None
    key_node: yaml.Node | None = None
    for part in sibling:
        parent, key_node = node, None
        if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            node = node.value[part]
        elif isinstance(node, yaml.MappingNode):
            pair = next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == str(part)), None)
            key_node, node = pair if pair else (None, None)
        else:
            node = None
    if node is None or key_node is None or not isinstance(parent, yaml.MappingNode):
        return text, f"no {sibling[-1]} to place it after"
    if parent.flow_style or not isinstance(node, yaml.ScalarNode) or node.style in ("|", ">"):
        return text, "the resource is not written as a block mapping"
    if node.end_mark.line != key_node.start_mark.line:
        return text, f"{sibling[-1]} spans several lines"
    newline = "\r\n" if "\r\n" in body else "\n"
    end = body.find("\n", node.end_mark.index)
    line = " " * key_node.start_mark.column + f"{key}: {value}"
    if end < 0:
        body = body + newline + line + newline
    else:
        body = body[: end + 1] + line + newline + body[end + 1 :]
    return bom + body, ""


def _verify(
    scheduler: str, plans: list[PoolPlan], outcome: UpdateOutcome, sources: list[SourceFile], gpu_resources: tuple[str, ...]
) -> None:
    """Read the updated manifests back; note every pool that does not come back as planned."""
    from policylint.model.load import parse_text
    from policylint.model import Model
    from policylint.model.schedulers import kueue, volcano

    documents: list[Document] = []
    for source in sources:
        if source.path in outcome.texts:
            again = SourceFile(source.path, source.display, text=outcome.texts[source.path][2])
            parse_text(again)
            documents += again.documents
        else:
            documents += source.documents
    model = Model(root=Path("."))
    missing = {id(p) for p in outcome.missing}
    if scheduler == "kueue":
        k_index, _ = kueue.read(documents, model, gpu_resources, set())
        got = {
            (str(p.scheduler["queue"]), str(p.scheduler["flavor"])): p.spec for ps in k_index.pools.values() for p in ps
        }
    else:
        v_index, _ = volcano.read(documents, model, gpu_resources, set())
        got = {(q, ""): p.spec for q, p in v_index.pools.items()}
    for plan in plans:
        if id(plan) in missing:
            continue
        key = (plan.queue, plan.flavor if scheduler == "kueue" else "")
        if scheduler == "kueue" and key not in got:
            key = next((k for k in got if k[0] == plan.queue), key)
        spec = got.get(key)
        if spec is None:
            continue
        reserved, elastic = spec["reservedGpus"], spec["elastic"]["maxGpus"]
        want = outcome.expected.get(plan.queue, (plan.guaranteed, plan.borrow))
        if (reserved, elastic) != want:
            in_cohort = scheduler == "kueue" and plan.queue not in outcome.expected
            outcome.notes.append(
                f"{plan.queue}: reads back as {reserved} guaranteed + {elastic} borrowable GPUs, not "
                f"{want[0]} + {want[1]}: "
                + (
                    "the rest of its cohort cannot lend that much (raise the Cohort's or other queues' lendable quota)"
                    if scheduler == "kueue" and in_cohort and reserved == want[0]
                    else "see the notes above"
                )
            )
