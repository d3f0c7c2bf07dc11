"""policylint as a pre-commit hook.

The round trip runs the real ``pre-commit try-repo`` against this checkout (its
HEAD plus uncommitted changes to tracked files), in a throw-away git repository
holding a copy of ``examples/good``. pre-commit builds a virtualenv and
pip-installs the checkout there, so these two tests need PyPI (or a warm pip
cache) and take seconds, not milliseconds. ``try-repo`` keeps its hook store in
a temporary folder of its own, so every run installs again; ``PRE_COMMIT_HOME``
points at a session folder only so that nothing lands in the user's cache.

``--changed-files``, the option the hook runs with, is also tested directly.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES, git, run_cli

CHECKOUT = Path(__file__).resolve().parents[1]
CONFIG = 'now: "2026-12-01"\nselect: [PL0, PL101]\nrules: {PL977: {accept: "select=PL0,PL101"}}\n'
def over_reserve(repo: Path) -> None:
    path = repo / "clusters" / "prod-east.yaml"
    text = path.read_text(encoding="utf-8")
    assert text.count("reservedGpus: 48") == 1
    path.write_text(text.replace("reservedGpus: 48", "reservedGpus: 80"), encoding="utf-8")


def make_git_repo(where: Path) -> Path:
    repo = where / "capacity"
    shutil.copytree(EXAMPLES / "good", repo)
    (repo / ".policylint.yaml").write_text(CONFIG, encoding="utf-8")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "capacity plans")
    return repo


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


def try_repo(repo: Path, home: Path) -> subprocess.CompletedProcess[str]:
    # Nested git commands must not follow a hook's GIT_DIR to the outer repository.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["PRE_COMMIT_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(CHECKOUT), "policylint", "--all-files", "--color", "never"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.realtool
def test_hook_passes_on_a_clean_repository(tmp_path: Path, pre_commit_home: Path) -> None:
    repo = make_git_repo(tmp_path)
    done = try_repo(repo, pre_commit_home)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "policylint" in done.stdout and "Passed" in done.stdout


@pytest.mark.realtool
def test_hook_fails_on_a_staged_over_reservation(tmp_path: Path, pre_commit_home: Path) -> None:
    repo = make_git_repo(tmp_path)
    over_reserve(repo)
    git(repo, "add", "clusters/prod-east.yaml")
    done = try_repo(repo, pre_commit_home)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Failed" in done.stdout
    # [~]: the fix lowers the reservation but raises elastic to keep capacity (unsafe without PL102)
    assert "clusters/prod-east.yaml:19:7: error PL101 [~] [reserved-above-baseline]" in done.stdout
    assert "Found 1 finding (1 error)" in done.stdout


# --- --changed-files, without pre-commit --------------------------------------------------


@pytest.fixture(scope="module")
def over_reserved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/good whose serving pool reserves 80 GPUs against a baseline of 53."""
    repo = tmp_path_factory.mktemp("changed") / "repo"
    shutil.copytree(EXAMPLES / "good", repo)
    (repo / ".policylint.yaml").write_text(CONFIG, encoding="utf-8")
    over_reserve(repo)
    return repo


def changed(repo: Path, *files: str) -> tuple[int, list[tuple[str, str]], str]:
    code, out, err = run_cli(["check", "--changed-files", "--format", "json", *files], cwd=repo)
    report = json.loads(out) if out else {"findings": []}
    return code, [(f["code"], f["subject"]) for f in report["findings"]], err


@pytest.mark.parametrize(
    "staged",
    [
        pytest.param(["measurements/traces/reranker.csv"], id="trace-of-a-serving-workload"),
        pytest.param(["workloads/search.yaml"], id="serving-workload"),
        pytest.param(["clusters/prod-east.yaml"], id="the-cluster-itself"),
        pytest.param(["README.md", "clusters/prod-east.yaml"], id="among-other-files"),
    ],
)
def test_changed_file_rechecks_what_depends_on_it(over_reserved: Path, staged: list[str]) -> None:
    assert changed(over_reserved, *staged) == (1, [("PL101", "pool prod-east/serving")], "")


def test_a_staged_trace_of_any_suffix_is_judged(tmp_path: Path) -> None:
    """A trace named .pq or .dat is what its workload says it is; staged, its workload is judged."""
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "good", repo)
    (repo / ".policylint.yaml").write_text(CONFIG, encoding="utf-8")
    workload = repo / "workloads" / "search.yaml"
    text = workload.read_text(encoding="utf-8")
    assert text.count("../measurements/traces/reranker.csv") == 1
    trace = repo / "measurements" / "traces" / "reranker.dat"
    (repo / "measurements" / "traces" / "reranker.csv").rename(trace)
    workload.write_text(text.replace("../measurements/traces/reranker.csv", "../measurements/traces/reranker.dat"), encoding="utf-8")
    assert changed(repo, "measurements/traces/reranker.dat") == (0, [], "")
    trace.write_text("timestamp,concurrency\nnot a time,1\n", encoding="utf-8")
    code, found, err = changed(repo, "README.md", "measurements/traces/reranker.dat")
    assert code == 1 and err == ""
    assert found and {subject for _, subject in found} >= {"workload reranker"}, found


@pytest.mark.parametrize(
    "staged",
    [
        pytest.param(["README.md"], id="not-a-policylint-file"),
        pytest.param(["clusters/train-central.yaml"], id="another-cluster"),
        pytest.param(["measurements/traces/pre-training.csv"], id="trace-of-a-training-workload"),
        pytest.param(["workloads/research.yaml"], id="workloads-in-other-pools"),
    ],
)
def test_unrelated_changed_file_reports_nothing(over_reserved: Path, staged: list[str]) -> None:
    assert changed(over_reserved, *staged) == (0, [], "")


def test_changed_files_need_existing_paths(over_reserved: Path) -> None:
    code, out, err = run_cli(["check", "--changed-files", "deleted.yaml"], cwd=over_reserved)
    assert (code, out) == (2, "")
    assert err == "policylint: error: path does not exist: deleted.yaml\n"


def test_changed_files_without_paths_or_staged_deletions_is_no_change(over_reserved: Path) -> None:
    """The hook runs on every commit (always_run); with no capacity file staged it judges nothing."""
    code, out, err = run_cli(["check", "--changed-files", "--format", "json"], cwd=over_reserved)
    assert (code, err) == (0, "")
    assert json.loads(out)["findings"] == []


def test_changed_folder_reports_on_the_files_inside(over_reserved: Path) -> None:
    code, out, _ = run_cli(["check", "--changed-files", "clusters", "--format", "json"], cwd=over_reserved)
    assert code == 1
    assert '"code": "PL101"' in out


# --- changes that can alter any verdict -----------------------------------------------------

RULE = """\
rules:
  - code: ACME001
    name: pool-too-small
    severity: warning
    section: bands
    subject: pool
    summary: Pools below a minimum size are hard to schedule.
    message: "{subject} reserves {reserved_gpus:plural:GPU}, fewer than {minimum}"
    hint: "merge it into a larger pool"
    params:
      minimum: {type: integer, default: 4, description: Smallest pool worth running.}
    require:
      reserved_gpus: {min: $minimum}
    docs:
      what: Flags pools with very few reserved GPUs.
      why: Tiny pools fragment capacity and cannot absorb a burst.
      example: "reservedGpus: 2"
      use_instead: "reservedGpus: 8"
      references: ["ACME capacity handbook"]
"""


@pytest.fixture(scope="module")
def with_globals(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The over-reserved repository with its own rule folder and a baseline file."""
    repo = tmp_path_factory.mktemp("globals") / "repo"
    shutil.copytree(EXAMPLES / "good", repo)
    over_reserve(repo)
    (repo / "policy" / "rules").mkdir(parents=True)
    (repo / "policy" / "rules" / "acme.yaml").write_text(RULE, encoding="utf-8")
    (repo / "notes.yaml").write_text("just: notes\n", encoding="utf-8")
    (repo / ".policylint.yaml").write_text(
        CONFIG + "rule-dirs: [policy/rules]\nbaseline: .policylint-baseline.json\n", encoding="utf-8"
    )
    (repo / ".policylint-baseline.json").write_text('{"version": 1, "findings": []}\n', encoding="utf-8")
    return repo


@pytest.mark.parametrize(
    "staged",
    [
        pytest.param([".policylint.yaml"], id="configuration"),
        pytest.param(["policy/rules/acme.yaml"], id="rule-file"),
        pytest.param(["policy/rules"], id="rule-folder"),
        pytest.param([".policylint-baseline.json"], id="baseline"),
        pytest.param(["README.md", ".policylint.yaml"], id="configuration-among-others"),
    ],
)
def test_global_input_change_rejudges_everything(with_globals: Path, staged: list[str]) -> None:
    full = run_cli(["check", "--format", "json"], cwd=with_globals)
    assert changed(with_globals, *staged) == (1, [("PL101", "pool prod-east/serving")], "")
    assert json.loads(full[1])["summary"]["findings"] == 1


def test_other_yaml_beside_the_rules_is_still_narrowed(with_globals: Path) -> None:
    assert changed(with_globals, "notes.yaml") == (0, [], "")


def test_pyproject_configuration_counts_as_configuration(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "good", repo)
    (repo / ".policylint.yaml").unlink()
    (repo / "pyproject.toml").write_text('[tool.policylint]\nnow = "2026-12-01"\nselect = ["PL0", "PL101"]\n')
    over_reserve(repo)
    # the table's `select` is a loosening, reported as the same key in .policylint.yaml is (PL977)
    assert changed(repo, "pyproject.toml") == (
        1, [("PL977", "cluster prod-east"), ("PL101", "pool prod-east/serving"), ("PL977", "cluster train-central")], "")
    assert changed(repo, "README.md") == (0, [], "")


def test_hook_definition_keeps_the_whole_repository_design() -> None:
    import re

    import yaml

    (hook,) = yaml.safe_load((CHECKOUT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert hook["entry"] == "policylint check --changed-files"
    assert hook["pass_filenames"] is True and hook["require_serial"] is True
    # every staged file is passed: a trace may have any suffix, and only the documents know
    # which files they read (a pattern once left .pq, .ipc and .arrows traces unjudged)
    assert "files" not in hook and "types" not in hook and "types_or" not in hook


def test_every_pinned_revision_is_this_release_tag() -> None:
    """README, docs/ci and init name the tag of this release (releases are tagged v<version>).
    Whether that tag exists is the release step's check (tools/release_check.py, tested below):
    the clone CI makes may hold no tags."""
    import re

    from policylint import __version__
    from policylint.commands.init import RELEASE_TAG

    tag = f"v{__version__}"
    assert RELEASE_TAG == tag
    assert "python tools/release_check.py" in (CHECKOUT / "README.md").read_text(encoding="utf-8")
    readme = (CHECKOUT / "README.md").read_text(encoding="utf-8")
    assert re.findall(r"^\s+rev: (\S+)$", readme, re.M) == [tag]
    assert "Releases are tagged `v<version>`" in readme
    pins = re.findall(r"policylint/policylint@(v[\w.]+)", readme)
    for path in ("docs/ci/github-actions.yml", "docs/ci/gitlab-ci.yml"):
        pins += re.findall(r"policylint/policylint@(v[\w.]+)", (CHECKOUT / path).read_text(encoding="utf-8"))
    assert pins and set(pins) == {tag}


def _release_check(repo: Path) -> tuple[int, str]:
    done = subprocess.run([sys.executable, str(CHECKOUT / "tools" / "release_check.py"), str(repo)],
                          capture_output=True, text=True, timeout=60)
    return done.returncode, done.stderr


def test_release_check_refuses_a_release_whose_tag_is_missing_or_wrong(tmp_path: Path) -> None:
    """A newcomer's trial (2026-12-07) found no v0.2.0 anywhere, so every pin in the README failed to
    resolve: tools/release_check.py is the release step that catches it."""
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "1.4.0"\n', encoding="utf-8")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "1.4.0")
    code, err = _release_check(repo)
    assert code == 1 and "no tag v1.4.0" in err
    git(repo, "tag", "-a", "v1.4.0", "-m", "1.4.0")
    assert _release_check(repo) == (0, "")
    # a tag left on the previous version's commit
    (repo / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "1.5.0"\n', encoding="utf-8")
    git(repo, "commit", "-qam", "1.5.0")
    git(repo, "tag", "v1.5.0", "HEAD~1")
    code, err = _release_check(repo)
    assert code == 1 and "does not set version 1.5.0" in err
    # a tag on a commit HEAD does not contain
    git(repo, "tag", "-d", "v1.5.0")
    git(repo, "checkout", "-qb", "side")
    (repo / "x.txt").write_text("x", encoding="utf-8")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "side")
    git(repo, "tag", "v1.5.0")
    git(repo, "checkout", "-q", "-")
    code, err = _release_check(repo)
    assert code == 1 and "not HEAD or an ancestor" in err
