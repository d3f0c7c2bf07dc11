"""A configured run: configuration + rule set + linter options, from CLI args.

Commands that lint (``check``, ``baseline``) build a :class:`Session` so that
flags and configuration are merged in exactly one place.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policylint.model.config import Config, load_config, parse_when
from policylint.engine.linter import LintOptions, lint
from policylint.engine.result import LintResult
from policylint.model.load import LoadLimits

if TYPE_CHECKING:
    from policylint.engine.scope import Reach
    from policylint.finding import Finding
    from policylint.model import Model


def _linking_configuration(tracked: list[Path], changed: list[Path]) -> Path | None:
    """Of the ``tracked`` configurations (git's names), the one whose folder links to a changed file outside it.

    None when none links to any; a change linked from two capacity repositories stops
    the run, as the changes of two repositories do.
    """
    top = _top(Path.cwd()) if changed else None
    if top is None:
        return None
    from policylint.engine.links import linking_configuration

    found = linking_configuration(top, tracked, changed)
    if len(found) > 1:
        from policylint.errors import PolicylintError

        names = ", ".join(str(f.relative_to(top)) for f in found)
        raise PolicylintError(
            f"--changed-files: the changed files are linked from {len(found)} capacity repositories ({names}); "
            "run one hook per repository, each given its configuration (`args: [--config FOLDER/.policylint.yaml]`)"
        )
    return found[0] if found else None


def _top(where: Path) -> Path | None:
    """The working tree of the git repository holding ``where`` (None outside one)."""
    import os
    import subprocess

    try:
        done = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=where, capture_output=True, timeout=60,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(os.fsdecode(done.stdout.strip())) if done.returncode == 0 and done.stdout.strip() else None


def _split(values: list[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


@dataclass
class Session:
    paths: list[Path]
    config: Config
    options: LintOptions
    baseline_path: Path | None = None
    diff_base: str | None = None
    changed_files: bool = False
    explicit_paths: bool = True
    #: with ``changed_files``: files the change deletes (staged deletions, from git)
    deleted: list[Path] = field(default_factory=list)
    #: with ``changed_files``: the other staged files, from git (those outside the root count where it links to them)
    staged: list[Path] = field(default_factory=list)
    #: the baseline was given with ``--baseline`` (the caller's choice), not by the configuration
    baseline_explicit: bool = False
    #: the configuration was chosen on the command line (``--config`` or ``--isolated``), not found
    config_explicit: bool = False
    #: the model the linter resolved and what the change reaches in it (asked once, used to judge and to narrow)
    _reached: tuple[Model, Reach] | None = field(default=None, init=False, repr=False, compare=False)
    #: the names the changed files defined at the base revision (widen.lost_name)
    _defined_before: set[tuple[str, str]] = field(default_factory=set, init=False, repr=False, compare=False)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Session:
        changed_files = bool(getattr(args, "changed_files", False))
        paths = list(args.paths) or [Path(".")]
        staged: list[Path] = []
        if changed_files:
            from policylint.engine.history import staged_changes

            # The hook's view of the change: staged files (PATHs) and staged deletions, which
            # pre-commit never passes; both lead to the configuration, in any order. The other
            # staged files count only where the repository links to them (see Session.lint).
            staged, deleted = staged_changes(Path.cwd())
            found = load_config([*args.paths, *deleted] or [Path(".")], config_file=args.config, root=args.root,
                                isolated=args.isolated, changed_files=True, cache=_cache_dir(args))
            config = found
            if config.path is None and args.config is None and not args.isolated:
                from policylint.engine.history import tracked_configurations

                tracked = tracked_configurations(Path.cwd())
                linked = _linking_configuration(tracked, [*args.paths, *staged, *deleted]) if tracked else None
                if linked is not None:
                    # the change lies outside every capacity repository, but one of them links to it
                    config = load_config([], config_file=linked, root=args.root, cache=_cache_dir(args))
                elif tracked:
                    # The repository has capacity repositories, and none of these changes is in one.
                    deleted, paths, staged = [], [], []
        else:
            deleted = []
            config = load_config(paths, config_file=args.config, root=args.root, isolated=args.isolated,
                                 cache=_cache_dir(args))
        if args.now:
            config.now = parse_when(args.now, source="--now")
        cli = {
            "--select": _split(getattr(args, "select", None)),
            "--extend-select": _split(getattr(args, "extend_select", None)),
            "--ignore": _split(getattr(args, "ignore", None)),
        }
        configured_dirs = list(config.rule_dirs)
        config.rule_dirs += list(getattr(args, "rule_dir", None) or [])
        limits = LoadLimits(
            max_file_bytes=config.max_file_bytes or LoadLimits.max_file_bytes,
            max_nodes=config.max_nodes or LoadLimits.max_nodes,
            max_documents=config.max_documents or LoadLimits.max_documents,
            max_walked_entries=config.max_walked_entries or LoadLimits.max_walked_entries,
        )
        from policylint.errors import PolicylintError
        from policylint.resources import rules_dir
        from policylint.engine.ruleset import load_rules_cached, rule_hint, select_rules

        source = str(config.path) if config.path else "<defaults>"
        # a folder or file the configuration names is reported where it is named (newcomer trial, 2026-12-06)
        for i, folder in enumerate(configured_dirs):
            if not folder.is_dir():
                raise PolicylintError(f"rule folder not found: {folder}", source=source, key=f"rule-dirs.{i}")
        if (getattr(args, "command", None) != "baseline" and not getattr(args, "baseline", None)
                and config.baseline is not None and not config.baseline.exists() and not config.baseline.is_symlink()):
            raise PolicylintError(f"baseline file not found: {config.baseline} (write it with `policylint baseline"
                                  f" --output {config.baseline.name}` in its folder, or remove the key)",
                                  source=source, key="baseline")
        # load_rules + configure_rules, reused between runs
        ruleset = load_rules_cached([rules_dir(), *config.rule_dirs], _gate_overrides(config), source, _cache_dir(args))
        # Selectors are checked where they were written, so the message names that place.
        select_rules(ruleset, config.select, config.extend_select, config.ignore, source)
        for pattern, selectors in config.per_file_ignores.items():
            for i, selector in enumerate(selectors):
                if not ruleset.matches(selector):
                    raise PolicylintError(f"'{selector}' matches no rule{rule_hint(ruleset, selector)}", source=source,
                                          key=f"per-file-ignores.{pattern}.{i}")
        _keep_gate_report(ruleset, config, source)
        for flag, selectors in cli.items():
            for selector in selectors:
                if not ruleset.matches(selector):
                    raise PolicylintError(f"{flag} {selector}: matches no rule{rule_hint(ruleset, selector)} (see `policylint rules`)")
        if cli["--select"]:
            config.select = cli["--select"]
        config.extend_select += cli["--extend-select"]
        config.ignore += cli["--ignore"]
        selected = select_rules(ruleset, config.select, config.extend_select, config.ignore, source)
        if config.select and not cli["--select"] and GATE_REPORT in ruleset.rules and not _names_gate(ruleset, cli["--ignore"]):
            # the configuration's own select cannot leave out the rule that reports what it left out
            selected.add(GATE_REPORT)
        baseline = getattr(args, "baseline", None) or config.baseline
        options = LintOptions(
            root=config.root,
            exclude=config.exclude,
            limits=limits,
            now=config.now,
            ruleset=ruleset,
            selected=selected,
            per_file_ignores=config.per_file_ignores,
            baseline=baseline,
            gpu_resources=tuple(config.gpu_resources),
            trace_limits=config.trace_limits(),
            cache_dir=_cache_dir(args),
            jobs=_jobs(args),
        )
        return cls(
            paths,
            config,
            options,
            baseline,
            getattr(args, "diff", None),
            changed_files,
            explicit_paths=bool(args.paths),
            deleted=deleted,
            staged=staged,
            baseline_explicit=bool(getattr(args, "baseline", None)),
            config_explicit=bool(args.config or args.isolated),
        )

    def lint(self) -> LintResult:
        """:meth:`_lint`, refused when a configuration file below the root configures documents it read.

        A run judges one repository with one configuration. Run from a repository's root,
        a capacity folder's own ``.policylint.yaml`` (its baseline, rule folders, options)
        was silently not applied to its documents (a newcomer's trial, 2026-12-07: the
        hook, which finds it, passed what CI, which did not, failed).
        """
        result = self._lint()
        if not self.config_explicit and result.sources:
            from policylint.errors import PolicylintError
            from policylint.model.config_files import unused_configurations

            import os

            folders: set[str] = set()
            for source in result.sources.values():  # 10,000 files in a few folders: each folder asked once
                parent = os.path.dirname(source.path)
                if parent not in folders and any(d.is_policylint for d in source.documents):
                    folders.add(parent)
            unused = unused_configurations([Path(f) for f in folders], self.config.root, self.config.path)
            if unused:
                config, folder = unused[0]
                used = f"uses {_shown(self.config.path)}" if self.config.path else "found no configuration"
                where = _shown(config.parent)
                raise PolicylintError(
                    f"{_shown(config)} configures the documents in {_shown(folder)}, but this run {used}:"
                    f" a run judges one repository with its own configuration; run `policylint check {where}`"
                    f" (or from {where}), pass --config, or exclude that folder"
                )
        return result

    def _lint(self) -> LintResult:
        """Run the one pipeline (:func:`policylint.engine.linter.lint`) and narrow what it reports.

        The repository root is always loaded and resolved; PATH arguments narrow
        the report to what they hold. With ``--changed-files`` the PATHs are the
        changed files; with ``--diff`` the files changed since the base, within
        the PATHs when some were given. A change is reported on together with
        everything that depends on it (see :mod:`policylint.engine.scope`).
        """
        from policylint.errors import PolicylintError
        from policylint.engine.scope import narrow

        if self.changed_files:
            import os

            from policylint.model.load import within

            changed: list[Path] = []
            outside: list[Path] = []
            root = os.path.realpath(self.config.root)
            gone = {os.path.abspath(d) for d in self.deleted}
            for p in self.paths if self.explicit_paths and self.paths else []:
                if not p.exists() and not p.is_symlink():  # a broken link is a change the walk reports
                    if os.path.abspath(p) in gone:
                        continue  # a staged deletion named by a hand-written hook: counted with the deletions below
                    raise PolicylintError(f"path does not exist: {p}")
                files = _files_under(p) if p.is_dir() else [p]
                if not within(os.path.realpath(p), root):
                    # Another part of a monorepo: not a change of this capacity repository, in
                    # whatever order the files come (the hook passes every staged file), unless
                    # the repository links to it (below).
                    outside += files
                    continue
                changed.extend(files)
            # A deleted file's folder may be gone too: compare where it was, not its real path.
            home = os.path.abspath(self.config.root)
            changed += [p for p in self.deleted if within(os.path.abspath(p), home)]
            outside += [p for p in self.deleted if not within(os.path.abspath(p), home)]
            outside += [p for p in self.staged if not within(os.path.realpath(p), root)]
            if outside:
                from policylint.engine.links import linked_paths

                # a file kept elsewhere in a monorepo that the repository links to (a workload file
                # linked from a shared folder) is a change of the linked path (red team, round 16)
                changed += [p for p in linked_paths(self.config.root, outside) if p not in changed]
            if not changed:
                # nothing of this capacity repository changed: nothing to load, measure or judge
                return LintResult(findings=[], sources={}, model=None, documents=0, files=0)
            previous = self._previous_pools("HEAD", changed)
            self.options.reported = self._reported(changed, previous)
            result = lint([self.config.root], self.options)
            kept = self._kustomized(result, changed, "HEAD")
            result, unmatched = self._baseline_lapse(result, changed, "HEAD")
            return _unmatched(self._lapse(_with(narrow(result, changed, self.config, self.options.ruleset,
                                                       self._reached_for(result), previous, self._defined_before),
                                                kept), changed, "HEAD"), unmatched)
        if self.diff_base is not None:
            from policylint.engine.history import changed_since

            change = changed_since(self.config.root, self.diff_base)
            self.options.change = change
            try:
                previous = (self._previous_pools(change.commit.hexsha, change.files) if change.commit is not None
                            else set())
                self.options.reported = self._reported(change.files, previous)
                paths = self.paths if self.explicit_paths else [self.config.root]
                result = lint(paths, self.options)
                rev = change.commit.hexsha if change.commit is not None else None
                kept = self._kustomized(result, change.files, rev)
                result, unmatched = self._baseline_lapse(result, change.files, rev)
                return _unmatched(self._lapse(_with(narrow(result, change.files, self.config, self.options.ruleset,
                                                           self._reached_for(result), previous, self._defined_before),
                                                    kept), change.files, rev), unmatched)
            finally:
                if change.commit is not None:
                    change.commit.repo.close()  # the object database's open files and git processes
        # a whole run knows no change: only what a baseline never accepts is taken back
        return self._baseline_lapse(lint(self.paths, self.options), [], None)[0]

    def _kustomized(self, result: LintResult, changed: Sequence[Path], rev: str | None) -> _Kept | None:
        """What the narrowing keeps of the kustomizations that name a changed file (before it narrows ``result``).

        Their findings and suppressions, and the suppressed PL026 findings the change outlives
        (:mod:`policylint.engine.outlived`), read against the kustomization at ``rev``.
        """
        from policylint.engine.outlived import Changed, git_base_text, kustomization_reach, outlived

        if not changed or not result.sources or self.options.ruleset is None:
            return None
        files = Changed.of(changed)
        shown = {f.file for f in result.findings} | {f.file for f, _ in result.suppressed}
        reached = kustomization_reach(result.sources, files, shown)
        if not reached:
            return None
        suppressed = [(f, r) for f, r in result.suppressed if f.file in reached]
        revived = [] if rev is None else outlived(suppressed, result.sources, files,
                                                  git_base_text(self.config.root, rev), self.options.ruleset,
                                                  self.options.limits)
        return [f for f in result.findings if f.file in reached], suppressed, revived

    def _lapse(self, result: LintResult, changed: Sequence[Path], rev: str | None) -> LintResult:
        """``result`` with the suppressions the change outlives lifted (:mod:`policylint.engine.lapsed`)."""
        if rev is None or not changed or not result.suppressed or self.options.ruleset is None:
            return result
        from policylint.engine.lapsed import lapsed
        from policylint.engine.outlived import Changed, git_base_text
        from policylint.finding import sort_findings

        revived = lapsed(result.suppressed, result.sources, Changed.of(changed),
                         git_base_text(self.config.root, rev), self.options.ruleset, self.options.limits,
                         result.model)
        if revived:
            gone = {id(old) for old, _ in revived}
            result.suppressed = [(f, r) for f, r in result.suppressed if id(f) not in gone]
            back = [new for _, new in revived]
            baseline = self.options.baseline
            if baseline is not None and all(os.path.realpath(p) != os.path.realpath(baseline) for p in changed):
                # a baseline the change left alone still accepts what it accepted
                from policylint.engine.baselines import accepted_again

                back, kept = accepted_again(revived, result.baselined, baseline, self.config.root)
                result.baselined = sort_findings([*result.baselined, *kept])
            result.findings = sort_findings([*result.findings, *back])
        return result

    def _baseline_lapse(self, result: LintResult, changed: Sequence[Path], rev: str | None) -> tuple[LintResult, list[Finding]]:
        """``result`` with what its baseline may not hide in this change reported, and the PL034 findings
        (:mod:`policylint.engine.baselines`); before narrowing, which would hide the findings an entry names."""
        baseline = self.options.baseline
        if baseline is None or self.options.ruleset is None or result.model is None:
            return result, []
        from policylint.engine.baselines import Reference, baseline_then, lapse_baselined
        from policylint.engine.outlived import Changed, git_base_text

        if rev is None or not changed:
            return lapse_baselined(result, baseline, self.config.root, self.options.ruleset, None)
        base_text = git_base_text(self.config.root, rev)
        real = {os.path.realpath(p) for p in changed}
        own = {os.path.realpath(baseline)} | ({os.path.realpath(self.config.path)} if self.config.path is not None else set())
        then_path: Path | None = baseline
        if real & own:
            # the baseline the reference revision configured: the same file, another (renamed), or none
            then_path = baseline_then(self.config.path, baseline, changed, self.baseline_explicit, base_text)
            if then_path is not None:
                own.add(os.path.realpath(then_path))
        baseline_only = False
        if real & own:
            # a change that touches none of the run's inputs (its documents, their measurement files, rule
            # files; a deleted file is taken for one) but the baseline and the configuration: a baseline
            # adopted or regenerated beside a workflow file or a README (asked only when it matters)
            inputs = {os.path.realpath(s.path) for s in result.sources.values()}
            inputs |= {os.path.realpath(ref.path) for w in result.model.workloads.values()
                       for ref in w.measurements.values() if ref.path is not None}
            inputs |= {os.path.realpath(rule.source) for rule in self.options.ruleset.rules.values()}
            baseline_only = not any(p in inputs or not os.path.lexists(p) for p in real - own)
        reference = Reference(base_text=base_text, changed=Changed.of(changed), baseline_touched=bool(real & own),
                              then_path=then_path, baseline_only=baseline_only, limits=self.options.limits)
        return lapse_baselined(result, baseline, self.config.root, self.options.ruleset, reference)

    def _previous_pools(self, rev: str, changed: Sequence[Path]) -> set[tuple[str, str]]:
        """The pools the changed YAML files' workloads were placed in at ``rev`` (see :func:`~policylint.engine.history.previous_pools`)."""
        from policylint.engine.history import previous_pools
        from policylint.model.load.files import is_json_name, is_yaml_name
    
        yaml_files = [p for p in changed if (is_yaml_name(p.name) or is_json_name(p.name)) and p.is_file()]
        if not yaml_files:
            return set()
        return previous_pools(self.config.root, rev, yaml_files, self.options.limits, self._defined_before)

    def _reported(
        self, changed: Sequence[Path], previous: set[tuple[str, str]] | None = None
    ) -> Callable[[Model], Callable[[str, str], bool] | None] | None:
        """What :func:`policylint.engine.scope.narrow` will keep, for the linter to judge only that.

        None (judge everything) with a baseline: an entry whose finding was not
        computed would look stale, and stale entries are reported whatever the scope.
        """
        if self.options.baseline is not None:
            return None
        config = self.config

        ruleset = self.options.ruleset

        def reported(model: Model) -> Callable[[str, str], bool] | None:
            from policylint.engine.scope import reach
            from policylint.engine.widen import changes_everything, lost_name, read_but_unmapped

            if changes_everything(changed, config) is not None or read_but_unmapped(model, changed) is not None:
                return None
            if lost_name(model, self._defined_before) is not None:
                return None
            # the same test as narrow's: which views are judged, and which rules skip a neighbour
            found = reach(model, changed, ruleset, previous or ())
            self._reached = (model, found)
            return found

        return reported

    def _reached_for(self, result: LintResult) -> Reach | None:
        """The :class:`Reach` the linter was given for ``result``'s model, for the narrowing to use again."""
        if self._reached is None or self._reached[0] is not result.model:
            return None
        return self._reached[1]

    def rule_metadata(self) -> dict[str, Any]:
        return dict(self.options.ruleset.rules) if self.options.ruleset else {}


#: findings and suppressions on the kustomizations a change reaches, and the suppressions it outlives (original, reported)
_Kept = tuple[list["Finding"], list[tuple["Finding", str]], list[tuple["Finding", "Finding"]]]


def _shown(path: Path) -> str:
    """``path`` as a message shows it: relative to the working folder when it lies below it."""
    import os

    relative = os.path.relpath(path)
    return path.as_posix() if relative == os.pardir or relative.startswith(os.pardir + os.sep) else Path(relative).as_posix()


def _files_under(folder: Path) -> list[Path]:
    """The files a changed folder holds, walked as the loader walks (linked folders followed, each real
    folder once; a dangling link kept, as a named one is): ``rglob`` followed no nested link."""
    from policylint.model.load.files import walk_folders

    return sorted(Path(top, name) for top, names in walk_folders(os.fspath(folder), set()) for name in names)


def _unmatched(result: LintResult, unmatched: list[Finding]) -> LintResult:
    """``result`` with the PL034 findings of its baseline (:mod:`policylint.engine.baselines`) added."""
    if unmatched:
        from policylint.finding import sort_findings

        result.findings = sort_findings([*result.findings, *unmatched])
    return result


def _with(result: LintResult, kept: _Kept | None) -> LintResult:
    """``result`` (narrowed) with what :meth:`Session._kustomized` kept of it before the narrowing."""
    if kept is None:
        return result
    from policylint.finding import sort_findings

    findings, suppressed, revived = kept
    outlived = [old for old, _ in revived]
    result.findings = sort_findings([*result.findings, *(f for f in findings if f not in result.findings),
                                     *(new for _, new in revived)])
    held = [*result.suppressed, *(s for s in suppressed if s not in result.suppressed)]
    result.suppressed = sorted(((f, r) for f, r in held if f not in outlived), key=lambda s: s[0].sort_key())
    return result


#: the rule that reports a loosened gate (PL977): the repository's own configuration cannot turn it off
GATE_REPORT = "PL977"


def _keep_gate_report(ruleset: Any, config: Any, source: str) -> None:
    """Refuse a configuration that ignores PL977, the rule that says the configuration loosened the gate.

    Everything else a configuration loosens, PL977 reports in every run; ignoring PL977 itself
    would make the loosening silent again. A CI job can still pass ``--ignore PL977``: that is
    written where the job is reviewed. A lowered severity for PL977 is refused too: a warning
    that reports as info passes every run. (A ``select`` naming the rules to run is not refused:
    the run keeps PL977 beside the rules it names, and PL977 reports the rules it leaves out.)
    """
    from policylint.errors import PolicylintError

    if GATE_REPORT not in ruleset.rules:
        return

    why = (f"{GATE_REPORT} (gate-loosened) cannot be ignored by the repository's configuration: it is how the gate says"
           " what the configuration loosened (pass --ignore PL977 on the command line of a CI job if you must)")
    if _names_gate(ruleset, config.ignore):
        raise PolicylintError(why, source=source, key="ignore")
    from policylint.finding import Severity

    for key, values in sorted(config.rules.items()):
        rule = ruleset.find(str(key))
        if rule is not None and rule.code == GATE_REPORT and isinstance(values, dict) and "severity" in values:
            if Severity.parse(str(values["severity"])) < Severity.WARNING:
                # a warning that reports as info passes every run: the loosening silent again
                raise PolicylintError(f"{GATE_REPORT} (gate-loosened) cannot report below warning: it is how the gate"
                                      " says what the configuration loosened", source=source, key=f"rules.{key}.severity")
    for pattern, selectors in sorted(config.per_file_ignores.items()):
        if _names_gate(ruleset, selectors):
            raise PolicylintError(why, source=source, key=f"per-file-ignores.{pattern}")


def _names_gate(ruleset: Any, selectors: list[str]) -> bool:
    """Whether ``selectors`` (codes, prefixes, names) name PL977."""
    return any(r.code == GATE_REPORT for sel in selectors for r in ruleset.matches(sel))


def _gate_overrides(config: Any) -> dict[str, dict[str, Any]]:
    """The configuration's rule settings, with PL977 raised to the configuration's ``fail-on`` when that is above warning.

    ``fail-on: error`` in the repository's configuration lets every warning pass, PL977's own
    included: the loosening it names would be reported and pass. PL977 then reports at that
    level, so the run it judges still fails; ``--fail-on`` on a CI job's command line is the
    job's own choice, as ``--ignore PL977`` is.
    """
    from policylint.finding import Severity

    rules = dict(config.rules)
    try:
        level = Severity.parse(str(config.fail_on))
    except ValueError:
        return rules  # an unknown level is refused where it is read
    if level > Severity.WARNING:
        rules[GATE_REPORT] = {**rules.get(GATE_REPORT, {}), "severity": level.label}
    return rules


def _cache_dir(args: argparse.Namespace) -> Path | None:
    """The measurement cache folder; None with ``--no-cache`` or for commands without the flag."""
    if not hasattr(args, "no_cache") or args.no_cache:
        return None
    from policylint.cache.store import default_dir

    return default_dir()


def _jobs(args: argparse.Namespace) -> int:
    """Processes measuring workloads: ``--jobs``, by default the cores this process may use.

    The cores it may use, not the machine's: a CI container limited to two of a
    host's 64 cores gets two workers, not 64 (``os.sched_getaffinity`` where the
    platform has it).
    """
    jobs = getattr(args, "jobs", None)
    if jobs is None:
        import os

        usable = getattr(os, "sched_getaffinity", None)
        return len(usable(0)) if usable is not None else (os.cpu_count() or 1)
    return int(jobs)
