"""``check --diff BASE``: report only on what changed since a git revision.

Each test builds a git repository from ``examples/good`` (``now`` pinned, PL0
and PL101 selected) with two commits: the first over-reserves the
``train-central/training`` pool, a finding that exists before the change; the
second over-reserves ``prod-east/serving``, the change under review.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import EXAMPLES, copy_minirepo, git, replace_once, run_cli

CONFIG = 'now: "2026-12-01"\nselect: [PL0, PL101]\nrules: {PL977: {accept: "select=PL0,PL101"}}\n'
@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two-commit repository, built once; tests that edit it take a copy."""
    repo = tmp_path_factory.mktemp("history") / "repo"
    shutil.copytree(EXAMPLES / "good", repo)
    (repo / ".policylint.yaml").write_text(CONFIG, encoding="utf-8")
    replace_once(repo / "clusters" / "train-central.yaml", "reservedGpus: 392", "reservedGpus: 900")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "capacity as of November")
    replace_once(repo / "clusters" / "prod-east.yaml", "reservedGpus: 48", "reservedGpus: 80")
    git(repo, "commit", "-q", "-am", "more serving capacity")
    return repo


@pytest.fixture
def repo(history: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(history, tmp_path / "repo"))


def subjects(out: str) -> list[tuple[str, str]]:
    return [(f["code"], f["subject"]) for f in json.loads(out)["findings"]]


def test_without_diff_both_findings_are_reported(history: Path) -> None:
    code, out, _ = run_cli(["check", "--format", "json"], cwd=history)
    assert code == 1
    assert subjects(out) == [("PL101", "pool prod-east/serving"), ("PL101", "pool train-central/training")]


def test_diff_reports_only_the_changed_cluster(history: Path) -> None:
    code, out, err = run_cli(["check", "--format", "json", "--diff", "HEAD~1"], cwd=history)
    assert (code, err) == (1, "")
    assert subjects(out) == [("PL101", "pool prod-east/serving")]


def test_diff_against_head_reports_nothing_committed(history: Path) -> None:
    code, out, _ = run_cli(["check", "--format", "json", "--diff", "HEAD"], cwd=history)
    assert (code, subjects(out)) == (0, [])


def test_diff_from_outside_the_repository(history: Path) -> None:
    code, out, _ = run_cli(["check", "--format", "json", "--diff", "HEAD~1", "repo"], cwd=history.parent)
    assert (code, subjects(out)) == (1, [("PL101", "pool prod-east/serving")])


def test_a_base_branch_that_moved_on_is_compared_at_the_fork(repo: Path) -> None:
    """Newcomer trial: `--diff origin/main` on a branch that only edited the README failed with
    PL950 once main had lowered a pool after the branch left it. The change is judged since the
    merge base, as `git diff main...HEAD` shows it."""
    git(repo, "checkout", "-q", "-b", "docs")
    git(repo, "checkout", "-q", "main")
    replace_once(repo / "clusters" / "prod-east.yaml", "reservedGpus: 80", "reservedGpus: 60")
    git(repo, "commit", "-q", "-am", "less serving capacity")
    git(repo, "checkout", "-q", "docs")
    (repo / "README.md").write_text("notes\n", encoding="utf-8")
    git(repo, "commit", "-q", "-am", "docs only")
    code, out, err = run_cli(["check", "--format", "json", "--select", "PL950", "--diff", "main"], cwd=repo)
    assert (code, subjects(out), err) == (0, [], "")
    # the same raise made on the branch itself is the change, and is judged
    replace_once(repo / "clusters" / "prod-east.yaml", "reservedGpus: 80", "reservedGpus: 96")
    code, out, _ = run_cli(["check", "--format", "json", "--select", "PL950", "--diff", "main"], cwd=repo)
    assert (code, subjects(out)) == (1, [("PL950", "pool prod-east/serving")])
    assert "up from 85 at the base revision (80 owned and 5 proposed)" in json.loads(out)["findings"][0]["message"]


def test_changed_trace_reports_the_pool_of_its_workload(repo: Path) -> None:
    # Against HEAD only the (uncommitted) trace of the reranker, a serving workload, changed.
    trace = repo / "measurements" / "traces" / "reranker.csv"
    trace.write_text(trace.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    code, out, _ = run_cli(["check", "--format", "json", "--diff", "HEAD"], cwd=repo)
    assert (code, subjects(out)) == (1, [("PL101", "pool prod-east/serving")])


def test_untracked_file_counts_as_changed(repo: Path) -> None:
    (repo / "clusters" / "draft.yaml").write_text(
        "apiVersion: policylint/v1\nkind: Cluster\nmetadata: {name: draft\n", encoding="utf-8"
    )
    code, out, _ = run_cli(["check", "--format", "json", "--diff", "HEAD"], cwd=repo)
    assert code == 1
    assert [(f["code"], f["file"]) for f in json.loads(out)["findings"]] == [("PL001", "clusters/draft.yaml")]


def test_unchanged_file_with_an_old_finding_is_not_reported(history: Path) -> None:
    code, out, _ = run_cli(["check", "--format", "json", "--diff", "HEAD~1"], cwd=history)
    assert ("PL101", "pool train-central/training") not in subjects(out)


def test_missing_base_is_a_usage_error(history: Path) -> None:
    code, out, err = run_cli(["check", "--diff", "no-such-branch"], cwd=history)
    assert (code, out) == (2, "")
    assert err == "policylint: error: git revision 'no-such-branch' not found.\n"


def test_diff_outside_a_git_repository(tmp_path: Path) -> None:
    plain = copy_minirepo(tmp_path / "plain")
    (plain / ".policylint.yaml").write_text(CONFIG, encoding="utf-8")
    code, out, err = run_cli(["check", "--diff", "HEAD~1"], cwd=plain)
    assert (code, out) == (2, "")
    assert err == f"policylint: error: --diff needs a git repository, and {plain.resolve()} is not inside one\n"


SHALLOW_HINT = (
    " This is a shallow clone: fetch the base first (git fetch --deepen=50 origin,"
    " or actions/checkout with fetch-depth: 0).\n"
)


@pytest.mark.parametrize("base", ["HEAD~1", "no-such-branch"])
def test_base_missing_from_a_shallow_clone_says_how_to_fetch_it(history: Path, tmp_path: Path, base: str) -> None:
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", history.as_uri(), str(clone)], check=True, capture_output=True
    )
    assert (clone / ".git" / "shallow").exists()
    code, out, err = run_cli(["check", "--diff", base], cwd=clone)
    assert (code, out) == (2, "")
    assert err == f"policylint: error: git revision '{base}' not found.{SHALLOW_HINT}"
