"""The pipeline: load -> validate -> resolve -> measure -> evaluate -> filter.

:func:`lint` wires the steps together and returns a :class:`LintResult` that the
reporters consume. Each step lives in its own module; this one only decides the
order and what flows between them.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from pathlib import Path

from policylint.errors import PolicylintError
from policylint.safeio import one_stat_per_file
from policylint.finding import Finding, Severity, sort_findings
from policylint.engine.loosened import loosened_options
from policylint.model.load import (
    Document,
    LoadLimits,
    RealPaths,
    SourceFile,
    cache_source,
    is_scheduler_doc,
    within,
)
from policylint.model import Model, Unplaced
from policylint.model.load.document_pack_cache import Pack, open_pack

from policylint.cache.beside import Beside
from policylint.engine.result import LintResult
from policylint.engine.sheets import ClusterFactSheet

if TYPE_CHECKING:
    from policylint.engine.history import Change
    from policylint.engine.view import View
    from policylint.measure.facts import PoolFacts
    from policylint.model import Workload
    from policylint.readers.limits import TraceLimits
    from policylint.engine.rule import RuleSet


@dataclass
class LintOptions:
    """Everything a run needs besides the paths."""

    root: Path
    exclude: Sequence[str] = ()
    limits: LoadLimits = field(default_factory=LoadLimits)
    now: dt.datetime | None = None
    ruleset: RuleSet | None = None  # None: structural checks only
    selected: set[str] | None = None  # rule codes that run (None: all)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    baseline: Path | None = None
    change: Change | None = None  # --diff: files changed since a base revision
    gpu_resources: tuple[str, ...] = ()  # scheduler resources counted as GPUs (empty: default)
    trace_limits: TraceLimits | None = None  # bounds for reading measurements (None: the readers' defaults)
    cache_dir: Path | None = None  # measurement cache folder (None: measure everything afresh)
    jobs: int = 1  # processes measuring workloads (results identical to 1)
    #: the folder loaded and resolved as the repository (None: ``root``). Only test harnesses whose
    #: small repositories share files above them (the rule fixtures' traces) set it.
    repository: Path | None = None
    #: given the resolved model, which findings (by file and ``Finding.key().subject``) the caller will
    #: keep (None: all); rules then run only on views whose findings can be kept. Set by ``--changed-files``
    #: and ``--diff``, whose narrowing (:func:`policylint.engine.scope.narrow`) uses the same test afterwards.
    reported: Callable[[Model], Callable[[str, str], bool] | None] | None = None
    #: build the view of every subject even when the report is narrowed (the HTML report draws them
    #: all); otherwise a narrowed run measures and views only what its judged views read
    all_views: bool = False


#: load findings after which a file's documents may be missing from the model (PL002's duplicate
#: key keeps its document; PL010 and PL020 are placed by :func:`policylint.model.resolve.resolve`)
UNREADABLE = frozenset({"PL001", "PL003", "PL004", "PL005", "PL006", "PL007", "PL008"})


def load_sources(
    paths: Sequence[Path], options: LintOptions, pack: Pack | None = None, real: RealPaths | None = None
) -> list[SourceFile]:
    """Discover and parse files; keep those that hold policylint input.

    With a document ``pack`` (:mod:`policylint.model.load.document_pack_cache`), a file
    whose stat identity is the packed one is taken from it; every other file is read
    as before, its identity noted first so that the run can pack it afterwards.
    ``real`` is the run's :class:`RealPaths`, when the caller has one.
    """
    from policylint.model.load.manifests import walk_sources

    return walk_sources(paths, options.exclude, options.root, options.repository or options.root, options.limits,
                        options.cache_dir, pack, real if real is not None else RealPaths())


def _keep_sources(folder: Path, sources: list[SourceFile], pack: Pack | None, now_ns: int) -> None:
    """Keep clean files in the document cache, then write the pack (files settled as of ``now_ns``)."""
    for source in sources:
        cache_source(folder, source)
    if pack is not None:
        pack.write_back(now_ns)


def lint(paths: Sequence[Path], options: LintOptions) -> LintResult:
    """Run the whole pipeline: the repository root is always loaded and resolved.

    ``paths`` only choose what is *reported*: a workload is judged with the
    cluster it names, a pool with all its workloads, whatever file or folder
    was asked for. The named paths are read first (so their documents claim
    their names before the rest of the root does), then the root for context;
    findings outside ``paths`` are dropped at the end. Every command that needs
    the model (check, baseline, export, bands of a pool) comes through here.

    Raises :class:`PolicylintError` when nothing policylint can read was found
    in ``paths``: a gate that passes on nothing would hide a misconfigured path.

    Cache work that only later runs read may be done by forked children
    (:mod:`policylint.cache.beside`); they are waited for before this returns.
    """
    beside = Beside(options.jobs if options.cache_dir is not None else 1)
    try:
        with one_stat_per_file():  # nothing it reads is written while it runs
            result = _lint(paths, options, beside)
        beside.join()
    except KeyboardInterrupt:
        beside.join(abandon=True)
        raise
    except BaseException:
        beside.join()  # a failing run's cache work is finished, as inline
        raise
    return result


def _lint(paths: Sequence[Path], options: LintOptions, beside: Beside) -> LintResult:
    from policylint.model.resolve import resolve
    from policylint.model.schedulers.kueue_charges import unlisted
    from policylint.model.validate import validate_document

    # one RealPaths for the run: the folders loading resolved and listed are not asked about again
    # when references are resolved and files are matched to the scope
    real = RealPaths()
    scope = Scope.of(paths, options.repository or options.root, real)
    home = options.repository or options.root
    pack = open_pack(options.cache_dir, home, options.limits) if options.cache_dir is not None else None
    sources = load_sources([*paths, home], options, pack, real)
    findings: list[Finding] = []
    keep: list[SourceFile] = []  # clean files, for the document cache
    valid: list[Document] = []
    scheduler_docs: list[Document] = []
    broken: list[Document] = []
    rejected: list[tuple[Document, str]] = []  # broken documents with the code their finding has
    for source in sources:
        findings.extend(source.findings)
        clean = not source.findings
        for doc in source.documents:
            if not doc.is_policylint:
                if is_scheduler_doc(doc):
                    scheduler_docs.append(doc)
                continue
            # a document-cache hit passed validation against the same schemas before
            problems = [] if source.validated else validate_document(doc)
            if problems:
                findings.extend(problems)
                broken.append(doc)
                rejected.append((doc, problems[0].code))
                clean = False
            else:
                valid.append(doc)
        if clean and source.cache_key is not None and options.cache_dir is not None:
            keep.append(source)
    if options.cache_dir is not None and (keep or pack is not None):
        # kept before resolving, so the entries hold the documents exactly as parsed; the pack after
        # them (each clean file's stored form is set by its keeping), judged settled as of now
        beside.start(functools.partial(_keep_sources, options.cache_dir, keep, pack, time.time_ns()), len(keep))
    scoped = [s for s in sources if scope.holds(s.path)]
    scope.require_readable(scoped)
    model, problems = resolve(valid, options.root, broken, scheduler_docs, options.gpu_resources, real)
    findings.extend(problems)
    # resources covered beside GPUs that PL905's allow option does not let pass (red team round 22)
    allowed = options.ruleset.params.get("PL905", {}) if options.ruleset is not None else {}
    findings.extend(unlisted(getattr(model.schedulers.get("kueue"), "beside", []), allowed))
    from policylint.model.resolve import unplaced_of

    for doc, reason in rejected:  # a workload failing validation, or a document whose kind is unreadable
        if doc.kind not in ("Cluster", "Proposal"):
            model.unplaced.append(unplaced_of(doc, reason))
    # a file that could not be read whole, beside policylint documents, may hold any pool's workloads
    # (another tool's broken YAML elsewhere is reported by its own finding alone)
    ours = {s.path.parent for s in sources if any(d.is_policylint for d in s.documents)}
    for source in sources:
        unread = next((f.code for f in source.findings if f.code in UNREADABLE), None)
        if unread is not None and source.path.parent in ours:
            model.unplaced.append(Unplaced(None, None, source.display, unread))
    result = LintResult(
        findings=[],
        sources={s.display: s for s in sources},
        model=model,
        documents=sum(
            1 for s in scoped for d in s.documents if d.is_policylint or is_scheduler_doc(d)
        ),
        files=len(scoped),
        model_errors=sort_findings([f for f in findings if f.severity is Severity.ERROR]),
    )
    if options.ruleset is None:
        result.findings = sort_findings(findings)
        return scope.narrow(result)
    judged, result.views, result.pools = judge(model, options, scope, beside)
    findings.extend(judged)
    from policylint.engine.filter import FilterSettings, apply_filters

    now = options.now or dt.datetime.now(dt.timezone.utc)
    settings = FilterSettings(
        selected=options.selected if options.selected is not None else set(options.ruleset.rules),
        per_file_ignores=options.per_file_ignores,
        root=options.root,
        today=now.date(),
        baseline=options.baseline,
    )
    reported, suppressed, baselined, stale = apply_filters(findings, result.sources, options.ruleset, settings)
    result.findings = sort_findings(reported)
    result.suppressed = sorted(suppressed, key=lambda x: x[0].sort_key())
    result.baselined = sort_findings(baselined)
    result.stale_baseline = stale
    return scope.narrow(result)


@dataclass(frozen=True)
class Scope:
    """What a run reports on: files and folders (real paths); empty means the whole root."""

    given: tuple[Path, ...]
    real: tuple[str, ...]
    root: Path
    #: the answer of :meth:`holds` per file asked about: one real-path lookup per file and run
    held: dict[Path | str, bool] = field(default_factory=dict, compare=False, repr=False)
    #: ``os.path.realpath``, or the run's :class:`RealPaths` (equal answers, a folder resolved once)
    realpath: Callable[[Path | str], str] = field(default=os.path.realpath, compare=False, repr=False)

    @classmethod
    def of(cls, paths: Sequence[Path], root: Path, real_paths: RealPaths | None = None) -> Scope:
        realpath: Callable[[Path | str], str] = real_paths if real_paths is not None else os.path.realpath
        real_root = os.path.realpath(root)
        real = tuple(os.path.realpath(p) for p in paths)
        # a path at or above the root reports on everything the root holds
        if not real or any(within(real_root, r) for r in real):
            return cls(tuple(paths), (), root, realpath=realpath)
        return cls(tuple(paths), real, root, realpath=realpath)

    def holds(self, file: Path | str) -> bool:
        """True when ``file`` is reported on."""
        if not self.real:
            return True
        if file not in self.held:
            real = self.realpath(file)
            held = any(within(real, r) for r in self.real)
            if not held:
                # a symbolic link in a folder asked about is reported there, wherever it leads: a link that
                # leads nowhere or above the repository (PL008), a linked file kept elsewhere
                text = os.fspath(file)
                own = os.path.join(self.realpath(os.path.dirname(text) or os.curdir), os.path.basename(text))
                held = own != real and any(within(own, r) for r in self.real)
            self.held[file] = held
        return self.held[file]

    def select(self, views: Sequence[View]) -> list[View]:
        """The views whose document lies in the scope (all of them when it is the whole root)."""
        return [view for view in views if self.holds(view.doc.file)]

    def require_readable(self, sources: Sequence[SourceFile]) -> None:
        """Refuse a scope with nothing policylint reads: a named file, or all the named folders together."""

        def readable(source: SourceFile) -> bool:
            return bool(source.findings) or any(d.is_policylint or is_scheduler_doc(d) for d in source.documents)

        for given in self.given:
            if given.is_dir():
                continue
            real = os.path.realpath(given)
            if not any(self.realpath(s.path) == real and readable(s) for s in sources):
                raise PolicylintError(
                    f"no policylint documents found in {given} (looked for YAML files with apiVersion: policylint/v1)"
                )
        if not any(readable(s) for s in sources):
            shown = ", ".join(str(p) for p in self.given)
            raise PolicylintError(
                f"no policylint documents found in {shown} (looked for YAML files with apiVersion: policylint/v1)"
            )

    def narrow(self, result: LintResult) -> LintResult:
        """Drop what lies outside the scope from what ``result`` reports."""
        if not self.real:
            return result
        result.findings = [f for f in result.findings if self.holds(f.file)]
        result.suppressed = [(f, r) for f, r in result.suppressed if self.holds(f.file)]
        result.baselined = [f for f in result.baselined if self.holds(f.file)]
        # baseline entries name files relative to the root
        result.stale_baseline = [e for e in result.stale_baseline if self.holds(self.root / e.get("file", ""))]
        return result


def judge(
    model: Model, options: LintOptions, scope: Scope | None = None, beside: Beside | None = None
) -> tuple[list[Finding], list[View], dict[str, PoolFacts]]:
    """Measure (once per run), build views and evaluate every rule (the filter selects); the views and pooled demand come back too.

    With a narrowing ``scope``, rules run only on the views whose document lies in
    it. That changes nothing that is reported: a rule's findings on a view are all
    located in the view's own document (``view.doc.finding``), and every later step
    matches findings per file - a suppression comment only sees findings of its
    own file, a baseline entry names its file - so findings in files the scope
    drops can neither hide nor reveal one it keeps. ``options.reported`` narrows
    the same way by file and subject: every finding of a view carries the view's
    file and subject (:func:`policylint.engine.evaluate.subject_of`).

    A narrowed run also measures and views only what the judged views read
    (:func:`policylint.engine.scope.needed`: whole pools, whole clusters), so a one-file
    pre-commit run does not decode the measurements of the rest of the
    repository; a judged view's facts are still those of a whole-repository run
    (a pool's sum has all its members). The views that come back serve ``--fix``,
    which only fixes reported findings; with ``options.all_views`` every view is
    built, for the HTML report. A changed workload's neighbours are judged only
    by the rules that read what they take from it (:class:`policylint.engine.scope.Reach`),
    as its narrowing reports only those rules' findings on them.
    """
    from policylint.engine.evaluate import evaluate
    from policylint.engine.views import build_views

    assert options.ruleset is not None
    now = options.now or dt.datetime.now(dt.timezone.utc)
    # Every rule runs; selection happens in the filter step, after suppressions are matched.
    rules = [r for r in options.ruleset.sorted() if not r.builtin]
    keep = options.reported(model) if options.reported is not None else None
    only = None
    if not options.all_views and (keep is not None or (scope is not None and scope.real)):
        from policylint.engine.scope import needed

        def judged_view(file: str, subject: str) -> bool:
            in_scope = scope is None or scope.holds(file)
            return in_scope and (keep is None or keep(file, subject))

        only = needed(model, judged_view)
    from policylint.engine.index_run import measure_more, measure_part, record_beside

    part = measure_part(model, options, keep, only, now)
    if only is not None:
        # near copies and shared job lists across the repository: partners outside the measured part are measured too
        from policylint.engine.copy_reach import copy_partners, copy_skips, jobs_partners, partner_skips, with_partners
        from policylint.engine.pooled_facts import DURATIONS_FACTS
        from policylint.engine.scope import Reach

        def whole(w: Workload) -> bool:
            file, subject = w.doc.file, f"workload {w.name}"
            return judged_view(file, subject) and not (isinstance(keep, Reach) and keep.skips(file, subject))

        mine = [n for n, w in model.workloads.items() if n in only.workloads and whole(w)]
        judged_copies = None
        if isinstance(keep, Reach):
            # judged by the near-copy rules already: the changed workloads and their pools' neighbours;
            # any other workload, measured or not, is a partner to look for
            judged_copies = set(mine) | {n for n in only.workloads if f"workload {n}" in keep.neighbours}
        found = copy_partners(model, only, mine, part[3], part[1], part[0], options, now, judged_copies)
        # a job list read by another workload, in any pool (PL984): its readers are partners too
        lenders = jobs_partners(model, only, judged_copies if judged_copies is not None else mine, part[3], part[1],
                                part[0], options, now)
        if found or lenders:
            if isinstance(keep, Reach):
                # each partner is judged by the rules that read what made it one (both sets when it is both)
                copies, jobs = copy_skips(options.ruleset), partner_skips(options.ruleset, DURATIONS_FACTS)
                for n in sorted(found | lenders):
                    keep.partners[f"workload {n}"] = (
                        (copies if n in found else frozenset(options.ruleset.rules))
                        & (jobs if n in lenders else frozenset(options.ruleset.rules))
                    )
            only = with_partners(model, only, found | lenders)
            part = measure_more(model, options, only.workloads, part, now)
    index, prepared, recorder, facts, findings, pools = part
    from policylint.engine.change_history import history_for

    def load_base(home: Path) -> Model | None:  # the base revision's files, loaded as this run's
        return lint([home], LintOptions(root=home, exclude=options.exclude, limits=options.limits, now=now,
                                        gpu_resources=options.gpu_resources)).model

    history = history_for(options, model, now, load_base, facts)
    prebuilt = prepared.views if prepared else None
    viewed = functools.partial(record_beside, beside, recorder, options.cache_dir) if recorder is not None else None
    from policylint.measure.pool_groups import Thresholds

    thresholds = Thresholds.from_params(options.ruleset.params)
    views = build_views(model, facts, now, history, pools, only, prebuilt, viewed, options.cache_dir, thresholds)
    if index is not None and not (recorder is not None and recorder.handed_off):
        # (a child that recorded writes the index itself); a large index is written by a child beside
        # the rest of the run: a one-file run that edited a workload writes 40 MB at 10,000 workloads
        if beside is not None and index.dirty:
            beside.start(index.write, len(index.rows) + len(index.records))
        else:
            index.write()
    if options.cache_dir is not None:
        from policylint.cache.digests import flush_digests

        flush_digests(options.cache_dir)  # digests hashed since measuring (a re-measured member, a recorded view)
    _gate_facts(views, options)
    judged = views if scope is None else scope.select(views)
    skip: Callable[[View], frozenset[str]] | None = None
    if keep is not None:
        from policylint.engine.evaluate import subject_of
        from policylint.engine.scope import Reach

        judged = [v for v in judged if keep(v.doc.file, str(subject_of(v)))]
        if isinstance(keep, Reach):
            reach = keep
            asked: dict[int, frozenset[str]] = {}  # by view (every view lives through the run): asked once

            # a changed workload's neighbours: only the rules that read what they take from it
            def skip(view: View) -> frozenset[str]:
                found = asked.get(id(view))
                if found is None:
                    found = asked[id(view)] = reach.skips(view.doc.file, str(subject_of(view)))
                return found

    verdicts = None
    if options.cache_dir is not None and (skip is not None or keep is None):
        # a changed workload's neighbours: their kept verdicts, when what the rules read of them is
        # unchanged; a whole run keeps every workload's, for the narrowed runs after it
        from policylint.engine.scope import neighbour_skips
        from policylint.engine.verdicts import open_verdicts

        verdicts = open_verdicts(options.cache_dir, model.root)
        if verdicts is not None:
            try:
                if skip is not None:
                    verdicts.prepare(rules, judged, options.ruleset.params, skip)
                else:
                    as_neighbour = neighbour_skips(options.ruleset)
                    verdicts.prepare(rules, judged, options.ruleset.params, lambda view: as_neighbour, give=False)
            except Exception:  # noqa: BLE001 - kept verdicts that cannot be used: every view is evaluated
                verdicts = None
    findings.extend(evaluate(rules, judged, options.ruleset.params, skip=skip,
                             given=verdicts.given if verdicts is not None else None,
                             found=verdicts.found if verdicts is not None else None))
    if verdicts is not None:
        verdicts.keep()
        verdicts.write()
    return findings, views, pools


def _gate_facts(views: list[View], options: LintOptions) -> None:
    """Each cluster view learns how the run's configuration loosens the rule pack (PL977)."""
    from policylint.model.config_files import configuration_in, read_config_file

    settings: dict[str, Any] = {}
    home = options.repository or options.root
    # the repository's own file, what a reviewer sees in the diff, found as load_config finds it in a
    # folder: a YAML name first, else a pyproject.toml with a [tool.policylint] table (a newcomer's
    # trial, 2026-12-07: `ignore`, `select` and `fail-on` there escaped PL977)
    try:
        path = configuration_in(home)
        settings = (read_config_file(path, options.cache_dir) or {}) if path is not None else {}
    except Exception:  # noqa: BLE001 - an unreadable configuration is load_config's error
        settings = {}
    assert options.ruleset is not None
    loosened = loosened_options(options.ruleset, settings)
    for view in views:
        if isinstance(view.facts, ClusterFactSheet):
            view.facts.loosened_options = loosened
            view.facts.loosened_count = len(loosened)
            view.facts.loosened_summary = "; ".join(loosened)
