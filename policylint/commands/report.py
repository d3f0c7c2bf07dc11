"""``policylint report --html PATH [REPO ...]``: a procurement review page.

Runs the linter once, the way ``check`` does (:class:`policylint.session.Session`),
and writes one self-contained HTML file: the pooled demand of every pool with its
bands and capacity, every proposal with its arithmetic, and the findings
(:mod:`policylint.report.html_report`). Exit codes are those of ``check``: 0 when
nothing is at or above the fail level, 1 when something is, 2 for a usage or
configuration error. Heavy imports stay inside :func:`run`.

With ``--diff BASE`` the page leads with what the change since BASE does. The
repository as it was at BASE is checked out by git into a temporary folder
(:func:`checkout`, removed afterwards) and linted by the same pipeline with the
same settings; :mod:`policylint.report.change` compares the two runs.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from policylint.engine.history import Change
    from policylint.engine.result import LintResult
    from policylint.report.plan_section import PlanOutcome
    from policylint.session import Session

NAME = "report"
HELP = "write a self-contained HTML review page: pooled demand curves, bands, capacity, proposals and findings"
DESCRIPTION = (
    "Lint the capacity repository at PATH (default .) like `check` and write one self-contained HTML page for a "
    "procurement review: per pool the pooled demand curve with its bands and the current, proposed and justified "
    "capacity; per proposal the requested against the justified GPUs with the arithmetic; summary tables of pools "
    "and findings. With --diff BASE the page leads with what the change since git revision BASE does: capacity and "
    "justified GPUs per pool before and after, measurement files added, removed or changed, findings new, fixed and "
    "unchanged, and the charts of both states. "
    "Exit codes: 0 clean, 1 findings at or above --fail-on, 2 usage or configuration error."
)


def configure(parser: argparse.ArgumentParser) -> None:
    from policylint.commands.check import add_common_options

    parser.add_argument(
        "--html",
        required=True,
        metavar="FILE",
        help="write the page to FILE ('-' for stdout)",
    )
    parser.add_argument("--title", default="GPU capacity review", help="heading and title of the page")
    parser.add_argument(
        "--diff",
        metavar="BASE",
        help="lead with what changed since git revision BASE (the repository at BASE is linted the same way)",
    )
    parser.add_argument(
        "--plan",
        action="store_true",
        help="add a section 'Planned vs today': the plan `policylint plan PATH` makes, beside today's pools and "
        "proposals, with each planned number's derivation (plans and checks a scratch copy: slower)",
    )
    add_common_options(parser)
    parser.add_argument("--fail-on", choices=("error", "warning", "info"), help="lowest severity that fails the run (default warning)")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    parser.add_argument("--baseline", type=Path, metavar="FILE", help="hide findings recorded in this baseline file")
    parser.add_argument("--no-cache", action="store_true", help="measure every trace afresh instead of reusing the measurement cache")
    parser.add_argument("--jobs", "-j", type=_positive, metavar="N", help="measure workloads in N processes (default: number of cores)")


def _positive(text: str) -> int:
    from policylint.commands.check import _positive as positive

    return positive(text)


def run(args: argparse.Namespace) -> int:
    from policylint.errors import PolicylintError
    from policylint.finding import Severity
    from policylint.report.html_parts import SourceLinks
    from policylint.report.html_report import HtmlSettings, render
    from policylint.report.paths import rebase, repository_root
    from policylint.session import Session
    from policylint.writer import write_file

    if not args.html.strip():
        raise PolicylintError("--html needs a file name (or '-' for stdout)")
    session = Session.from_args(args)
    session.diff_base = None  # the page shows the whole repository; --diff adds the state at BASE beside it
    session.options.all_views = True  # the page draws every pool, whatever PATH narrows the findings to
    change = None
    if args.diff is not None:
        from policylint.engine.history import changed_since

        # the revision is resolved as `check --diff` resolves it: one message for a bad BASE
        change = changed_since(session.config.root, args.diff)
        if session.options.now is None:
            import datetime as dt

            # one "now" for both states, so that staleness is judged at the same instant
            session.options.now = dt.datetime.now(dt.timezone.utc)
        session.options.change = change  # the rules on the change itself (PL950) judge it, as with `check --diff`
    result = session.lint()
    top = repository_root(session.config.root)
    # File paths as in the JSON report: relative to the repository root, wherever the run started.
    result = rebase(result, top, session.config.root)
    state = None
    head = None
    if change is not None:
        from policylint.report.change import compare

        head = _head_commit(change)
        with checkout(change, session.config.root) as (tree, base_root):
            before = _lint_before(session, tree, base_root, change, top)
            state = compare(
                before, result, before_top=tree / _relative(top, change), after_top=top,
                base=change.base, base_commit=change.commit.hexsha, head_commit=head,
            )
    elif session.config.report_source_url and "{rev}" in session.config.report_source_url:
        head = _head_of(session.config.root)
    fail_on = Severity.parse(args.fail_on or session.config.fail_on)
    ruleset = session.options.ruleset
    page_dir = Path.cwd() if args.html == "-" else Path(args.html).absolute().parent
    settings = HtmlSettings(
        title=args.title,
        fail_on=fail_on.label,
        params=dict(ruleset.params) if ruleset is not None else {},
        rules=session.rule_metadata(),
        links=SourceLinks(
            template=session.config.report_source_url,
            rev=head,
            base_rev=change.commit.hexsha if change is not None else None,
            top=top,
            page_dir=page_dir,
        ),
    )
    planned = _plan(args, session) if args.plan else None
    page = render(result, settings, state, planned)
    if args.html == "-":
        sys.stdout.write(page)
    else:
        target = Path(args.html)
        # the exact bytes on every platform; named by the user, so it may lie outside the repository
        write_file(target, page, root=session.config.root, explicit=True, parents=True, what="the HTML report")
        failing = sum(1 for f in result.findings if f.severity >= fail_on)
        from policylint.report.safe_text import escape_controls

        sys.stderr.write(
            f"policylint: report written to {escape_controls(str(target))} ({len(result.findings)} findings, {failing} at {fail_on.label} or above)\n"
        )
    failing_findings = [f for f in result.findings if f.severity >= fail_on]
    if failing_findings and not args.exit_zero:
        return 1
    return 0


def _plan(args: argparse.Namespace, session: Session) -> PlanOutcome:
    """The plan of the repository the page shows, made as ``policylint plan PATH`` makes it.

    PATH is the folder the page was asked for; with a file or several PATHs, the
    repository root. The page's ``--config``, ``--isolated``, ``--root``, ``--now`` (and
    the instant a ``--diff`` page judges both states at) apply; its rule selection and
    baseline do not: the plan is checked by every rule, as the plan command checks it.
    """
    from policylint.report.plan_section import make_plan

    paths = list(args.paths) or [Path(".")]
    path = paths[0]
    if len(paths) != 1 or not path.is_dir():
        try:  # as the user would type it: relative to the working folder
            path = Path(os.path.relpath(session.config.root))
        except ValueError:  # another drive (Windows)
            path = Path(session.config.root)
    return make_plan(
        path, config=args.config, isolated=args.isolated, root=args.root, now=args.now, when=session.options.now
    )


def _git_env() -> dict[str, str]:
    """The environment for git commands on a temporary work tree: none of a calling hook's index or tree."""
    return {k: v for k, v in os.environ.items() if k not in ("GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_PREFIX", "GIT_DIR")}


def _git(cwd: Path, *args: str, hooks: Path) -> None:
    """Run git in ``cwd`` without hooks; a failure is a usage error with git's own words."""
    import subprocess

    from policylint.errors import PolicylintError

    try:
        done = subprocess.run(
            ["git", "-c", f"core.hooksPath={hooks}", *args],
            cwd=cwd, env=_git_env(), capture_output=True, text=True, errors="replace", timeout=600, check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise PolicylintError(f"--diff: cannot run git: {exc}") from None
    if done.returncode != 0:
        message = " ".join((done.stderr or done.stdout).split())
        raise PolicylintError(f"--diff: git {args[0]} failed: {message}")


def _relative(folder: Path, change: Change) -> str:
    """``folder`` relative to the git work tree of ``change`` (POSIX), or a usage error when it lies outside."""
    from policylint.errors import PolicylintError

    assert change.top is not None
    rel = os.path.relpath(os.path.realpath(folder), os.path.realpath(change.top))
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        raise PolicylintError(f"--diff: {folder} is outside the git repository {change.top}")
    return Path(rel).as_posix()


@contextlib.contextmanager
def checkout(change: Change, root: Path) -> Iterator[tuple[Path, Path]]:
    """The repository at the base revision, checked out by git into a temporary folder.

    Yields (the temporary work tree, the capacity root inside it). Only the
    capacity root's folder is checked out (a monorepo's other projects stay
    out). git writes the files - its filters run as in any checkout (line
    endings, Git LFS) - in a linked work tree (``git worktree add --detach``)
    that is removed afterwards, whatever happens; no hook runs and the user's
    work tree and index are not touched.
    """
    import shutil
    import tempfile

    assert change.top is not None and change.commit is not None
    rel = _relative(root, change)
    top = Path(change.top)
    folder = Path(tempfile.mkdtemp(prefix="policylint-base-"))
    hooks = folder / "no-hooks"
    hooks.mkdir()
    tree = folder / "tree"
    sha = change.commit.hexsha
    try:
        change.commit.tree.join(rel) if rel != "." else None
        existed = True
    except KeyError:
        existed = False  # the capacity root did not exist at the base revision: an empty tree
    added = False
    try:
        _git(top, "worktree", "add", "--detach", "--no-checkout", "--quiet", str(tree), sha, hooks=hooks)
        added = True
        if existed:
            _git(tree, "checkout", sha, "--", rel, hooks=hooks)
        yield tree, tree / rel
    finally:
        if added:
            with contextlib.suppress(Exception):
                _git(top, "worktree", "remove", "--force", str(tree), hooks=hooks)
        shutil.rmtree(folder, ignore_errors=True)
        if added:
            with contextlib.suppress(Exception):
                _git(top, "worktree", "prune", hooks=hooks)


def _lint_before(session: Session, tree: Path, base_root: Path, change: Change, top: Path) -> LintResult:
    """The repository at the base revision, linted like today's: same options, with the base's files."""
    import dataclasses

    from policylint.errors import PolicylintError
    from policylint.engine.linter import lint
    from policylint.engine.result import LintResult
    from policylint.report.paths import rebase

    empty = LintResult(findings=[], sources={}, model=None, documents=0, files=0)
    if not base_root.is_dir():
        return empty
    options = dataclasses.replace(session.options, root=base_root, change=None, reported=None, all_views=True)
    paths = [base_root]
    if session.explicit_paths:
        assert change.top is not None
        mapped = [tree / _relative(p, change) for p in session.paths]
        paths = [p for p in mapped if p.exists()] or [base_root]
    try:
        before = lint(paths, options)
    except PolicylintError:
        return empty  # nothing policylint reads at the base revision: every finding of today is new
    # paths relative to the same folder as today's, so that one file has one name in both states
    return rebase(before, tree / _relative(top, change), base_root)


def _head_commit(change: Change) -> str | None:
    """The commit the working tree is on (None before the first commit)."""
    try:
        return str(change.commit.repo.head.commit.hexsha)
    except (ValueError, AttributeError):
        return None


def _head_of(root: Path) -> str | None:
    """The commit HEAD of the git repository holding ``root`` (None without git or commits)."""
    import subprocess

    try:
        done = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", "HEAD^{commit}"],
            cwd=root, capture_output=True, text=True, timeout=60, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    sha = done.stdout.strip()
    return sha if done.returncode == 0 and sha else None
