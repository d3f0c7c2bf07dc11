"""``policylint export kueue|volcano [PATH]``: write the scheduler quotas the demand model justifies.

Importing this module must stay cheap: the linter and the exporter are imported
inside :func:`run`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from policylint.finding import Finding, Severity
    from policylint.engine.linter import LintOptions
    from policylint.export.plans import PoolPlan
    from policylint.writer_transaction import WriteTransaction

NAME = "export"
HELP = "write Kueue or Volcano quotas sized from the measured bands (baseline guaranteed, daily borrowed)"
DESCRIPTION = (
    "Read the capacity repository at PATH, compute every pool's bands and write, per pool, a Kueue "
    "ClusterQueue (with a LocalQueue per declared namespace) or a Volcano Queue: guaranteed quota = baseline band, "
    "borrowing up to the daily band, nothing for the peak band. Comments explain every number. "
    "With --update MANIFESTS, the GPU quotas of the existing ClusterQueues (Queues) are changed in place "
    "and nothing else in those files; pools without one get new objects. A model with errors exports nothing (exit 1)."
)


#: Rules whose errors say the bands themselves are wrong: an unreadable measurement, a window too
#: short, demand counted twice, a step too coarse to tell bursts from noise, a per-GPU figure that
#: is missing or not measured in production. A pool left unmeasured (PL105, PL110) is exported
#: with its declared numbers, marked UNMEASURED, as documented.
EVIDENCE_RULES = frozenset({"PL024", "PL106", "PL111", "PL112", "PL121", "PL701", "PL702"})

#: Rules that judge the GPU numbers an update writes. After ``--update`` the repository is checked
#: again: one of these on an updated manifest means the quotas written do not size the pool as the
#: rules require (a ClusterQueue without a cohort whose daily band is too far above its baseline,
#: say), and the command says so and exits 1.
QUOTA_RULES = frozenset({"PL101", "PL102", "PL104", "PL201", "PL203", "PL205", "PL206", "PL207"})


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scheduler", choices=("kueue", "volcano"), help="which scheduler's manifests to write")
    parser.add_argument("path", nargs="?", type=Path, default=Path("."), metavar="PATH", help="capacity repository (default: .)")
    parser.add_argument("--output", "-o", type=Path, metavar="DIR", help="write one file per object group into DIR (default: stdout)")
    parser.add_argument("--config", type=Path, metavar="FILE", help="configuration file (default: discovered)")
    parser.add_argument("--isolated", action="store_true", help="ignore configuration files")
    parser.add_argument("--root", type=Path, metavar="DIR", help="repository root file references must stay in")
    parser.add_argument("--now", metavar="DATE", help="reference date (YYYY-MM-DD)")
    parser.add_argument(
        "--update",
        type=Path,
        action="append",
        metavar="MANIFESTS",
        help="edit the GPU quotas of the existing ClusterQueues (Queues) in these files or folders in place, "
        "keeping everything else byte for byte; pools without an object get new ones (stdout or --output); repeatable",
    )
    parser.add_argument("--dry-run", action="store_true", help="with --update: print the changes as a unified diff and write nothing")


def run(args: argparse.Namespace) -> int:
    import datetime as dt

    from policylint.errors import PolicylintError
    from policylint.finding import Severity
    from policylint.measure.run import measure
    from policylint.export import kueue as export_kueue, plans as export, volcano as export_volcano
    from policylint.session import Session
    from policylint.engine.views import build_views

    if args.dry_run and not args.update:
        raise PolicylintError("--dry-run needs --update MANIFESTS")
    # The same run as `policylint check PATH` (configuration, rule selection, suppressions, baseline):
    # an export is only as sound as the model `check` accepts.
    session = Session.from_args(
        argparse.Namespace(paths=[args.path], config=args.config, isolated=args.isolated, root=args.root, now=args.now)
    )
    config, options = session.config, session.options
    now = options.now or dt.datetime.now(dt.timezone.utc)
    options.now = now
    result = session.lint()
    # A workload that failed validation drops out of its pool: its quota would be written too small.
    # The pipeline's model errors cover the whole repository, whatever PATH narrows the report to.
    if _refuse(result.model_errors, Severity.ERROR, "the capacity model"):
        return 1
    # Errors about the measured demand the quotas are sized from make them untrustworthy as well;
    # errors about the capacity declared today (PL101, PL102, ...) are what the export replaces.
    evidence = [f for f in result.findings if f.code in EVIDENCE_RULES]
    if _refuse(evidence, Severity.ERROR, "the measured demand"):
        return 1
    model = result.model
    assert model is not None
    facts, _ = measure(model, now, limits=config.trace_limits())
    plans = export.plan(model, build_views(model, facts, now))
    if not plans:
        raise PolicylintError(f"nothing to export: no pool in {args.path} has workloads placed in it")
    for p in plans:
        if not p.measured:
            sys.stderr.write(f"policylint: warning: pool {p.cluster}/{p.pool} has unmeasured workloads; its declared numbers were exported\n")
    if args.update:
        code, updated = _update(args, plans, options)
        if code == 0 and updated:
            # the same check as `policylint check PATH`, on the repository as the update left it
            again = Session.from_args(
                argparse.Namespace(paths=[args.path], config=args.config, isolated=args.isolated, root=args.root, now=args.now)
            )
            code = _verify_update(again.lint().findings, updated, options)
        return code
    files = export_kueue.kueue(plans) if args.scheduler == "kueue" else export_volcano.volcano(plans)
    return _write_new(args, files, config.root)


def _refuse(findings: list[Finding], severity: Severity, what: str) -> bool:
    """Print the errors that make an export untrustworthy; True when there are any (nothing is written then)."""
    from policylint.errors import escape_controls

    errors = [f for f in findings if f.severity >= severity]
    if not errors:
        return False
    for f in errors:
        sys.stderr.write(escape_controls(f"{f.file}:{f.line}:{f.column}: {f.code} {f.message}") + "\n")
    n = len(errors)
    sys.stderr.write(f"policylint: {what} has {n} error{'s' if n != 1 else ''}; nothing exported (fix them, `policylint check` shows them)\n")
    return True


def _write_new(args: argparse.Namespace, files: dict[str, str], root: Path, batch: WriteTransaction | None = None) -> int:
    """Print ``files`` (no --output) or write them into --output, all of them or none.

    With ``batch`` (an update's edited manifests, staged already) the new files join it and
    everything is written together; otherwise they are a transaction of their own.
    """
    from policylint.export import plans as export
    from policylint.writer_transaction import WriteTransaction

    with WriteTransaction() if batch is None else batch as staged:
        if args.output is not None:
            # --output names the folder, so it may lie anywhere; a link in it is followed only within the repository
            for name, text in files.items():
                staged.add(args.output / name, text, root=root, explicit=True, parents=True, what="the manifest")
    if not files:
        return 0
    if args.output is None:
        sys.stdout.write(export.render(files))
    else:
        sys.stderr.write(f"wrote {len(files)} files to {args.output}\n")
    return 0


def _verify_update(findings: list[Finding], manifests: list[Path], options: LintOptions) -> int:
    """1 (after printing them) when the checked repository reports a quota rule on an updated manifest."""
    from policylint.errors import escape_controls

    updated = {p.resolve() for p in manifests}
    wrong = [f for f in findings if f.code in QUOTA_RULES and (options.root / f.file).resolve() in updated]
    if not wrong:
        return 0
    for f in wrong:
        sys.stderr.write(escape_controls(f"{f.file}:{f.line}:{f.column}: {f.severity.label} {f.code} {f.message}") + "\n")
    n = len(wrong)
    sys.stderr.write(
        f"policylint: the updated quotas do not pass the sizing rules ({n} finding{'s' if n != 1 else ''} above); "
        "see the notes of the update\n"
    )
    return 1


def _update(args: argparse.Namespace, plans: list[PoolPlan], options: LintOptions) -> tuple[int, list[Path]]:
    """Edit the quotas of existing objects in place; new pools get new objects.

    Returns the exit code and the manifests that hold the planned queues (none on a dry run).
    """
    from policylint.errors import PolicylintError
    from policylint.finding import Severity
    from policylint.model.load import discover, display_path, is_scheduler_doc, load_file
    from policylint.export import kueue as export_kueue, volcano as export_volcano
    from policylint.model.schedulers.quantity import GPU_RESOURCES
    from policylint.export.update import update
    from policylint.writer_transaction import WriteTransaction

    for path in args.update:
        if not path.exists():
            raise PolicylintError(f"--update {path}: no such file or folder")
    # Every file, not only those that look like policylint input: a manifest with a YAML
    # error may hold a ClusterQueue the update would otherwise silently miss.
    scopes: dict[Path, Path] = {}
    for named in args.update:
        for path, _ in discover([named], options.exclude, options.root):
            scopes.setdefault(path, named if named.is_dir() else named.parent)
    sources = [load_file(path, display_path(path), options.limits) for path in scopes]
    if _refuse([f for s in sources for f in s.findings], Severity.ERROR, "--update MANIFESTS"):
        return 1, []
    sources = [s for s in sources if any(is_scheduler_doc(d) for d in s.documents)]
    outcome = update(args.scheduler, plans, sources, options.gpu_resources or GPU_RESOURCES)
    verb = "would set" if args.dry_run else "set"
    lines = [f"{verb} {len(outcome.edits)} quota number{'s' if len(outcome.edits) != 1 else ''} in {len(outcome.texts)} file{'s' if len(outcome.texts) != 1 else ''}"]
    lines += [f"  {e.describe()}" for e in outcome.edits]
    lines += [f"  note: {n}" for n in outcome.notes]
    if outcome.missing:
        names = ", ".join(f"{p.cluster}/{p.pool}" for p in outcome.missing)
        lines.append(f"  new objects for pools without one: {names}")
    sys.stderr.write("\n".join(lines) + "\n")
    if args.dry_run:
        sys.stdout.write(outcome.diff)
    batch = WriteTransaction()
    try:
        if not args.dry_run:
            linted = {s.path: s.text for s in sources}
            changed = [display for path, (display, before, _) in outcome.texts.items() if before.removeprefix("\ufeff") != linted.get(path)]
            if changed:
                raise PolicylintError("changed while policylint was reading it; nothing written (run the update again)", source=changed[0])
            for path, (display, before, text) in sorted(outcome.texts.items(), key=lambda kv: str(kv[0])):
                # A manifest is written only within the --update folder it was found in (links included);
                # the exact text keeps line endings and a BOM, and an edit saved meanwhile is never lost.
                # Edited manifests and new files are written together, all or none.
                batch.add(path, text, root=scopes[path], what="the manifest", if_unchanged=before.encode("utf-8"))
        # the manifests holding the planned queues: judged again after the update (not on a dry run)
        planned = {p.queue for p in plans} - {p.queue for p in outcome.missing}
        written = [] if args.dry_run else [s.path for s in sources if any(d.name in planned and d.kind in ("ClusterQueue", "Queue") for d in s.documents)]
        if not outcome.missing:
            batch.commit()
            return 0, written
        if args.scheduler == "kueue":
            files = export_kueue.kueue(outcome.missing, existing_flavors=outcome.flavors, existing_cohorts=outcome.cohorts)
            if any(p.borrow for p in outcome.missing if p.cohort in outcome.cohorts):
                sys.stderr.write("  note: the new ClusterQueues borrow in an existing Cohort: make sure it can lend their borrowingLimit\n")
        else:
            files = export_volcano.volcano(outcome.missing, existing_parents=outcome.queues)
        if args.dry_run:
            # stdout holds the diff alone, so that it can be applied as it is
            sys.stderr.write(f"  (dry run: {len(files)} new manifest file{'s' if len(files) != 1 else ''} not written; run without --dry-run to get them)\n")
            batch.abort()
            return 0, written
        return _write_new(args, files, options.root, batch), written
    except BaseException:
        batch.abort()
        raise
