"""Paths in the machine formats are relative to the repository root, whatever the working directory.

Code scanning, CI annotations, GitLab's widget and test dashboards resolve paths
against the checkout; a run started from a subfolder must not hand them
``../clusters/x.yaml``. Text, concise and markdown keep paths as the user typed
them (relative to the working directory), which is what a terminal can open.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import EXAMPLES, git, run_cli
from policylint.report.paths import rebase, repository_root
from policylint.finding import Finding, Severity
from policylint.engine.result import LintResult

MACHINE = ("json", "sarif", "github", "gitlab", "junit")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("paths") / "capacity"
    shutil.copytree(EXAMPLES / "bad", repo)
    git(repo, "init", "-q")
    return repo


def report(cwd: Path, fmt: str, *paths: str) -> str:
    code, out, err = run_cli(["check", "--format", fmt, *paths], cwd=cwd)
    assert (code, err) == (1, "")
    return out


@pytest.mark.parametrize("fmt", MACHINE)
def test_same_report_from_the_root_and_from_a_subfolder(repo: Path, fmt: str) -> None:
    from_root = report(repo, fmt)
    assert report(repo / "workloads", fmt, "..") == from_root
    assert report(repo / "workloads", fmt, str(repo)) == from_root  # an absolute PATH too
    assert "../clusters" not in from_root and str(repo) not in from_root


def test_each_machine_format_names_repository_paths(repo: Path) -> None:
    sub = repo / "workloads"
    files = [f["file"] for f in json.loads(report(sub, "json", ".."))["findings"]]
    assert "clusters/prod-east.yaml" in files and not any(f.startswith("..") for f in files)
    sarif = json.loads(report(sub, "sarif", ".."))
    location = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": files[0], "uriBaseId": "%SRCROOT%"}
    description = sarif["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["description"]["text"]
    assert description.startswith("The repository root: the top of the git work tree")
    assert "\n::warning file=clusters/prod-east.yaml,line=8," in "\n" + report(sub, "github", "..")
    cases = ET.fromstring(report(sub, "junit", "..")).iter("testcase")
    assert "clusters/prod-east.yaml" in {case.get("classname") for case in cases}


@pytest.mark.parametrize("fmt", ["text", "concise"])
def test_terminal_formats_keep_paths_relative_to_the_working_directory(repo: Path, fmt: str) -> None:
    assert "../clusters/prod-east.yaml:8:3: warning PL302" in report(repo / "workloads", fmt, "..")


def test_config_folder_inside_git_uses_the_git_root(tmp_path: Path) -> None:
    """A capacity folder inside a larger repository: CI resolves paths against the repository."""
    top = tmp_path / "mono"
    shutil.copytree(EXAMPLES / "bad", top / "capacity")
    git(top, "init", "-q")
    out = json.loads(report(top / "capacity" / "clusters", "json", ".."))
    assert "capacity/clusters/prod-east.yaml" in {f["file"] for f in out["findings"]}


def test_without_git_the_configuration_folder_is_the_root(tmp_path: Path) -> None:
    repo = tmp_path / "plain"
    shutil.copytree(EXAMPLES / "bad", repo)
    assert repository_root(repo) == repo
    out = json.loads(report(repo / "workloads", "json", ".."))
    assert "clusters/prod-east.yaml" in {f["file"] for f in out["findings"]}


def test_files_outside_the_root_keep_their_path(tmp_path: Path) -> None:
    inside = Finding("a/x.yaml", 1, 1, "PL1", "n", Severity.ERROR, "m")
    outside = Finding("../elsewhere/y.yaml", 1, 1, "PL1", "n", Severity.ERROR, "m")
    (tmp_path / "repo" / "a").mkdir(parents=True)
    result = LintResult([inside, outside], {}, None, 1, 2)
    moved = rebase(result, tmp_path / "repo", tmp_path / "repo", cwd=tmp_path / "repo")
    assert [f.file for f in moved.findings] == ["../elsewhere/y.yaml", "a/x.yaml"]
    stale = dataclass_result_with_stale(tmp_path)
    assert stale.stale_baseline == [{"code": "PL1", "file": "sub/z.yaml", "subject": "", "path": ""}]


def dataclass_result_with_stale(tmp_path: Path) -> LintResult:
    """Baseline entries are relative to the configuration folder, which may sit below the root."""
    result = LintResult([], {}, None, 0, 0, stale_baseline=[{"code": "PL1", "file": "z.yaml", "subject": "", "path": ""}])
    return rebase(result, tmp_path, tmp_path / "sub", cwd=tmp_path / "elsewhere")
