"""``--format gitlab``: the GitLab Code Quality report the merge-request widget reads.

GitLab documents the fields it requires of every issue (the "Code Quality report
format" page): ``description``, ``check_name``, ``fingerprint``, ``severity`` (one of
info, minor, major, critical, blocker) and ``location.path`` with
``location.lines.begin``. The schema below writes that list down; every report
policylint writes, on the bad examples and on a clean run, must satisfy it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conftest import EXAMPLES, copy_minirepo, git, run_cli
from policylint.finding import Finding, Severity
from policylint.engine.result import LintResult
from policylint.report import ReportContext, get_renderer
from policylint.report.gitlab_report import SEVERITIES

#: GitLab's published field list for one Code Quality issue, as a JSON Schema.
CODE_QUALITY = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "minLength": 1},
            "fingerprint": {"type": "string", "minLength": 1},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {
                "type": "object",
                "required": ["path", "lines"],
                "properties": {
                    "path": {"type": "string", "minLength": 1},
                    "lines": {
                        "type": "object",
                        "required": ["begin"],
                        "properties": {"begin": {"type": "integer", "minimum": 1}},
                    },
                },
            },
        },
    },
}
CONFIG = 'now: "2026-12-01"\n'


def gitlab(cwd: Path, *args: str) -> tuple[int, list[dict[str, Any]]]:
    code, out, err = run_cli(["check", "--format", "gitlab", *args], cwd=cwd)
    assert err == ""
    report: list[dict[str, Any]] = json.loads(out)
    return code, report


@pytest.fixture
def bad(tmp_path: Path) -> Path:
    repo = tmp_path / "bad"
    shutil.copytree(EXAMPLES / "bad", repo)
    git(repo, "init", "-q")
    return repo


def test_severity_scale_is_gitlabs() -> None:
    assert SEVERITIES == ("info", "minor", "major", "critical", "blocker")


def test_report_on_the_bad_examples_has_every_required_field(bad: Path) -> None:
    code, report = gitlab(bad)
    assert code == 1 and len(report) > 20
    jsonschema.validate(report, CODE_QUALITY)
    assert len({issue["fingerprint"] for issue in report}) == len(report)
    assert {issue["severity"] for issue in report} == {"major", "minor"}
    first = report[0]
    assert first["check_name"].startswith("PL")
    assert first["description"].startswith(first["check_name"] + " ")
    assert (bad / first["location"]["path"]).is_file()


def test_clean_run_is_an_empty_list(tmp_path: Path) -> None:
    repo = copy_minirepo(tmp_path / "good")
    code, report = gitlab(repo)
    assert (code, report) == (0, [])


def test_fingerprints_survive_line_moves(bad: Path) -> None:
    _, before = gitlab(bad)
    path = bad / "clusters" / "prod-east.yaml"
    path.write_text("# a comment\n# that moves every line down\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
    _, after = gitlab(bad)
    moved = [i for i in before if i["location"]["path"] == "clusters/prod-east.yaml"]
    assert moved
    by_fp = {i["fingerprint"]: i for i in after}
    for issue in moved:
        assert by_fp[issue["fingerprint"]]["location"]["lines"]["begin"] == issue["location"]["lines"]["begin"] + 2
    assert {i["fingerprint"] for i in before} == set(by_fp)


def test_paths_are_relative_to_the_repository_root_from_a_subfolder(bad: Path) -> None:
    _, from_root = gitlab(bad)
    _, from_sub = gitlab(bad / "workloads", "..")
    assert from_sub == from_root
    assert not any(i["location"]["path"].startswith("..") for i in from_sub)


def test_severity_mapping_and_whole_file_findings() -> None:
    findings = [
        Finding("a.yaml", 0, 0, "PL001", "yaml-syntax", Severity.ERROR, "broken"),
        Finding("a.yaml", 3, 1, "PL107", "measurement-stale", Severity.WARNING, "old", hint="re-measure"),
        Finding("a.yaml", 4, 1, "PL999", "note", Severity.INFO, "fyi"),
    ]
    result = LintResult(findings, {}, None, 1, 1)
    report = json.loads(get_renderer("gitlab")(result, ReportContext()))
    jsonschema.validate(report, CODE_QUALITY)
    assert [(i["severity"], i["location"]["lines"]["begin"]) for i in report] == [("major", 1), ("minor", 3), ("info", 4)]
    assert report[1]["content"]["body"] == "PL107 measurement-stale: old\n\nhint: re-measure"
