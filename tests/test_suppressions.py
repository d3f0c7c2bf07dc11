"""Inline suppressions written in the linted YAML, through the real CLI.

The repository is a copy of the small shared one (tests/data/minirepo) whose configuration pins
``now: 2026-12-01`` and selects the document rules (PL0, which holds the
suppression rules PL030-PL033) and PL101. Each test rewrites the
``reservedGpus`` line of the ``serving`` pool (line 19 of the cluster file),
usually to 80 GPUs, which is over its baseline band and so a PL101 finding.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import copy_minirepo, run_cli
from fixture_helpers import document_counts, mini_bands

CONFIG = 'now: "2026-12-01"\nselect: [PL0, PL101]\nrules: {PL977: {accept: "select=PL0,PL101"}}\n'
CLUSTER = Path("clusters/prod-east.yaml")
RESERVED = "      reservedGpus: 48\n"
LINE = 19  # the serving pool's reservedGpus line in the small repository


@pytest.fixture
def repo(minirepo_master: Path, tmp_path: Path) -> Path:
    repo = copy_minirepo(tmp_path / "repo", minirepo_master)
    (repo / ".policylint.yaml").write_text(CONFIG, encoding="utf-8")
    return repo


def rewrite(repo: Path, replacement: str) -> None:
    """Replace the serving pool's reservedGpus line with ``replacement`` (one or more lines)."""
    path = repo / CLUSTER
    text = path.read_text(encoding="utf-8")
    assert text.count(RESERVED) == 1
    path.write_text(text.replace(RESERVED, replacement), encoding="utf-8")


def check(repo: Path, *args: str) -> tuple[int, dict]:
    code, out, err = run_cli(["check", "--format", "json", *args], cwd=repo)
    assert err == ""
    report: dict = json.loads(out)
    return code, report


def found(report: dict) -> list[tuple[str, int, str]]:
    return [(f["code"], f["line"], f["message"]) for f in report["findings"]]


BASELINE = mini_bands("serving")[0]
PL101_MESSAGE = (
    f"pool prod-east/serving reserves 80 GPUs, but its pooled baseline is {BASELINE} GPUs (sum of workload baselines"
    f" {BASELINE}: pooling saves nothing; allowed headroom 15%): sized by peak, not baseline"
)


def test_the_unsuppressed_line_is_a_finding(repo: Path) -> None:
    rewrite(repo, "      reservedGpus: 80\n")
    code, report = check(repo)
    assert (code, found(report)) == (1, [("PL101", LINE, PL101_MESSAGE)])
    assert report["summary"]["suppressed"] == 0


@pytest.mark.parametrize(
    "replacement",
    [
        pytest.param("      reservedGpus: 80  # policylint: disable=PL101 -- launch buffer, see CAP-1\n", id="end-of-line"),
        pytest.param("      # policylint: disable=PL101 -- launch buffer, see CAP-1\n      reservedGpus: 80\n", id="line-above"),
        pytest.param("      reservedGpus: 80  # policylint: disable=reserved-above-baseline -- launch buffer\n", id="by-name"),
        pytest.param("      reservedGpus: 80  # policylint: disable=PL030,PL101 -- two codes, one used\n", id="in-a-list"),
        pytest.param("      reservedGpus: 80  # policylint: disable=PL101 until=2027-03-31 -- until launch\n", id="until-future"),
        pytest.param("      reservedGpus: 80  # policylint: disable=PL101 until=2026-12-01 -- last day\n", id="until-today"),
    ],
)
def test_suppression_hides_the_finding_and_is_counted(repo: Path, replacement: str) -> None:
    rewrite(repo, replacement)
    code, report = check(repo)
    assert (code, found(report), report["summary"]["suppressed"]) == (0, [], 1)


def test_text_summary_counts_suppressed_findings(repo: Path) -> None:
    rewrite(repo, "      reservedGpus: 80  # policylint: disable=PL101 -- launch buffer\n")
    code, out, _ = run_cli(["check", "-q"], cwd=repo)
    documents, files = document_counts(repo)
    assert (code, out) == (0, f"All checks passed: {documents} documents in {files} files, 1 suppressed.\n")


@pytest.mark.parametrize("comment", ["# policylint: disable=PL101", "# policylint: disable=PL101 --", "# policylint: disable=PL101 --   "])
def test_suppression_without_reason_is_reported_and_not_applied(repo: Path, comment: str) -> None:
    rewrite(repo, f"      reservedGpus: 80  {comment}\n")
    code, report = check(repo)
    assert code == 1
    assert found(report) == [
        ("PL101", LINE, PL101_MESSAGE),
        ("PL030", LINE, "suppression of PL101 gives no reason, so it is not applied"),
    ]
    assert report["findings"][1]["column"] == 25  # where the comment starts
    assert report["summary"]["suppressed"] == 0


def test_expired_suppression_is_reported_and_the_finding_comes_back(repo: Path) -> None:
    rewrite(repo, "      reservedGpus: 80  # policylint: disable=PL101 until=2026-12-15 -- launch buffer\n")
    code, report = check(repo, "--now", "2026-12-16")
    assert code == 1
    assert found(report) == [
        ("PL101", LINE, PL101_MESSAGE),
        ("PL031", LINE, "suppression of PL101 expired on 2026-12-15 and no longer applies"),
    ]
    assert report["summary"]["suppressed"] == 0


def test_unused_suppression_is_reported(repo: Path) -> None:
    rewrite(repo, "      reservedGpus: 48  # policylint: disable=PL101 -- launch buffer\n")
    code, report = check(repo)
    assert (code, found(report)) == (1, [("PL032", LINE, "suppression of PL101 matches no finding")])


def test_suppression_two_lines_above_covers_nothing(repo: Path) -> None:
    rewrite(repo, "      # policylint: disable=PL101 -- too far away\n      # another comment\n      reservedGpus: 80\n")
    code, report = check(repo)
    assert code == 1
    assert found(report) == [
        ("PL032", LINE, "suppression of PL101 matches no finding"),
        ("PL101", LINE + 2, PL101_MESSAGE),
    ]


def test_suppression_of_another_rule_does_not_hide_the_finding(repo: Path) -> None:
    rewrite(repo, "      reservedGpus: 80  # policylint: disable=PL022 -- wrong rule\n")
    code, report = check(repo)
    assert code == 1
    assert found(report) == [
        ("PL101", LINE, PL101_MESSAGE),
        ("PL032", LINE, "suppression of PL022 matches no finding"),
    ]


@pytest.mark.parametrize(
    ("comment", "message"),
    [
        ("# policylint: disable=PL000 -- no such rule", "suppression names unknown rule 'PL000'"),
        ("# policylint: disable=no-such-rule -- no such rule", "suppression names unknown rule 'no-such-rule'"),
        ("# policylint: enable=PL101 -- not a directive", "cannot read suppression 'enable=PL101 -- not a directive'"),
        ("# policylint: disable PL101 -- no equals sign", "cannot read suppression 'disable PL101 -- no equals sign'"),
        ("# policylint: disable=PL101 until=soon -- bad date", "suppression expiry 'soon' is not a date (YYYY-MM-DD)"),
    ],
)
def test_invalid_suppression_is_reported(repo: Path, comment: str, message: str) -> None:
    rewrite(repo, f"      reservedGpus: 48  {comment}\n")
    code, report = check(repo)
    assert (code, found(report)) == (1, [("PL033", LINE, message)])


def test_unknown_rule_in_a_list_still_applies_the_known_one(repo: Path) -> None:
    rewrite(repo, "      reservedGpus: 80  # policylint: disable=PL101,PL000 -- launch buffer\n")
    code, report = check(repo)
    assert (code, found(report)) == (1, [("PL033", LINE, "suppression names unknown rule 'PL000'")])
    assert report["summary"]["suppressed"] == 1


def test_disable_file_covers_the_whole_file(repo: Path) -> None:
    rewrite(repo, "      reservedGpus: 80\n")
    path = repo / CLUSTER
    text = path.read_text(encoding="utf-8").replace("reservedGpus: 20", "reservedGpus: 60")
    path.write_text("# policylint: disable-file=PL101 -- migration in progress, see CAP-9\n" + text, encoding="utf-8")
    code, report = check(repo)
    assert (code, found(report), report["summary"]["suppressed"]) == (0, [], 2)


def test_disable_file_does_not_reach_other_files(repo: Path) -> None:
    rewrite(repo, "      reservedGpus: 80\n")
    workloads = repo / "workloads" / "search.yaml"
    workloads.write_text("# policylint: disable-file=PL101 -- wrong file\n" + workloads.read_text(), encoding="utf-8")
    code, report = check(repo)
    assert code == 1
    assert [(f["code"], f["file"]) for f in report["findings"]] == [
        ("PL101", "clusters/prod-east.yaml"),
        ("PL032", "workloads/search.yaml"),
    ]
