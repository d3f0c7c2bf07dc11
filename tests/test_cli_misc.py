"""The check command's output options, colour, and the rules / rule commands.

Output tests lint a copy of ``examples/good`` (``now`` pinned, PL0 and PL101
selected) with one PL101 finding: the ``serving`` pool reserves 80 GPUs.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import EXAMPLES, run_cli
from policylint.commands.check import use_color
from policylint.resources import rules_dir
from policylint.ruleset import load_rules

CONFIG = 'now: "2026-12-01"\nselect: [PL0, PL101]\n'
SUMMARY = "Found 1 finding (1 error) in 11 documents in 6 files.\n"
GITHUB_LINE = re.compile(r"^::(error|warning|notice) file=[^,]+,line=\d+,col=\d+,title=[^:]+::.+$")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "good", repo)
    (repo / ".policylint.yaml").write_text(CONFIG, encoding="utf-8")
    path = repo / "clusters" / "prod-east.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("reservedGpus: 48", "reservedGpus: 80"), encoding="utf-8")
    return repo


# --- formats -----------------------------------------------------------------------------


def test_two_reports_in_one_run(repo: Path) -> None:
    code, out, err = run_cli(
        ["check", "--format", "sarif", "--output", "out/a.sarif", "--format", "junit", "--output", "out/b.xml"], cwd=repo
    )
    assert (code, out, err) == (1, "", "")
    sarif = json.loads((repo / "out" / "a.sarif").read_text(encoding="utf-8"))
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["PL101"]
    junit = ET.fromstring((repo / "out" / "b.xml").read_text(encoding="utf-8"))
    assert junit.get("failures") == "1"


def test_report_to_a_file_and_text_to_stdout(repo: Path) -> None:
    code, out, _ = run_cli(["check", "--format", "json", "--output", "r.json", "--format", "text", "-q"], cwd=repo)
    assert (code, out) == (1, SUMMARY)
    assert json.loads((repo / "r.json").read_text())["summary"]["findings"] == 1


def test_more_outputs_than_formats_is_a_usage_error(repo: Path) -> None:
    code, out, err = run_cli(["check", "--output", "a.json", "--output", "b.json"], cwd=repo)
    assert (code, out) == (2, "")
    assert err == "policylint: error: each --output needs its own --format (give --format before every --output)\n"


def test_github_annotations(repo: Path) -> None:
    path = repo / "clusters" / "prod-east.yaml"
    # Add a warning (unused suppression) so both commands appear.
    path.write_text(path.read_text().replace("reservedGpus: 20", "reservedGpus: 20  # policylint: disable=PL101 -- x"))
    code, out, err = run_cli(["check", "--format", "github"], cwd=repo)
    assert (code, err) == (1, "")
    lines = out.splitlines()
    assert lines[-1] == "policylint: 2 findings (1 error, 1 warning) in 6 files"
    annotations = lines[:-1]
    assert len(annotations) == 2
    for line in annotations:
        assert GITHUB_LINE.match(line), line
    assert annotations[0].startswith(
        "::error file=clusters/prod-east.yaml,line=19,col=7,title=PL101 reserved-above-baseline::"
    )
    assert "; allowed headroom 15%25)" in annotations[0]  # '%' escaped for the runner
    assert annotations[1].startswith("::warning file=clusters/prod-east.yaml,line=34,col=25,title=PL032 unused-suppression::")


def test_statistics_counts_findings_per_rule(repo: Path) -> None:
    code, out, _ = run_cli(["check", "--statistics", "-q"], cwd=repo)
    assert (code, out) == (1, f"    1  PL101   reserved-above-baseline\n\n{SUMMARY}")


def test_quiet_prints_only_the_summary(repo: Path) -> None:
    code, out, err = run_cli(["check", "--quiet"], cwd=repo)
    assert (code, out, err) == (1, SUMMARY, "")


def test_text_output_shows_the_finding_with_its_frame(repo: Path) -> None:
    code, out, _ = run_cli(["check"], cwd=repo)
    assert code == 1
    assert out.splitlines()[:6] == [
        "clusters/prod-east.yaml",
        "  clusters/prod-east.yaml:19:7: error PL101 [reserved-above-baseline] pool prod-east/serving reserves 80 GPUs,"
        " but its pooled baseline is 53 GPUs (sum of workload baselines 53: pooling saves nothing;"
        " allowed headroom 15%): sized by peak, not baseline",
        "    18 |       # reserved today. The 5-GPU gap is what proposals/2027-q1-serving.yaml asks for.",
        "    19 |       reservedGpus: 80",
        "       |       ^",
        "    = help: reserve about 53 GPUs and carry the daily band on elastic capacity",
    ]


def test_exit_zero_still_reports(repo: Path) -> None:
    code, out, _ = run_cli(["check", "--exit-zero", "-q"], cwd=repo)
    assert (code, out) == (0, SUMMARY)


def test_clean_repository_exits_zero(tmp_path: Path) -> None:
    repo = tmp_path / "good"
    shutil.copytree(EXAMPLES / "good", repo)
    (repo / ".policylint.yaml").write_text(CONFIG, encoding="utf-8")
    code, out, err = run_cli(["check", "-q"], cwd=repo)
    assert (code, out, err) == (0, "All checks passed: 11 documents in 6 files.\n", "")


# --- colour ------------------------------------------------------------------------------

ANSI = "\x1b["


def test_no_colour_when_no_color_is_set(repo: Path) -> None:
    code, out, _ = run_cli(["check"], cwd=repo)  # NO_COLOR is set for every test
    assert code == 1
    assert ANSI not in out


def test_no_colour_when_stdout_is_not_a_terminal(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR")
    code, out, _ = run_cli(["check"], cwd=repo)
    assert code == 1
    assert ANSI not in out


def test_color_always_forces_ansi(repo: Path) -> None:
    code, out, _ = run_cli(["check", "--color", "always"], cwd=repo)
    assert code == 1
    assert ANSI in out
    assert re.sub(r"\x1b\[[0-9;]*m", "", out) == run_cli(["check", "--color", "never"], cwd=repo)[1]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("mode", "no_color", "stream", "expected"),
    [
        ("auto", None, _Terminal(), True),
        ("auto", "1", _Terminal(), False),
        ("auto", None, io.StringIO(), False),
        ("never", None, _Terminal(), False),
        ("always", "1", io.StringIO(), True),
    ],
)
def test_use_color(monkeypatch: pytest.MonkeyPatch, mode: str, no_color: str | None, stream: io.StringIO, expected: bool) -> None:
    if no_color is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", no_color)
    assert use_color(mode, stream) is expected


# --- rules and rule ----------------------------------------------------------------------


def test_rules_lists_every_rule_code() -> None:
    code, out, err = run_cli(["rules"])
    assert (code, err) == (0, "")
    listed = [line.split()[0] for line in out.splitlines()]
    assert listed == sorted(load_rules([rules_dir()]).rules)
    assert "PL101" in listed


def test_rules_as_json() -> None:
    code, out, _ = run_cli(["rules", "--format", "json"])
    assert code == 0
    rules = {r["code"]: r for r in json.loads(out)}
    assert set(rules) == set(load_rules([rules_dir()]).rules)
    assert rules["PL101"]["name"] == "reserved-above-baseline"
    assert rules["PL101"]["params"] == {"headroom": 0.15}


@pytest.mark.parametrize("key", ["PL101", "pl101", "reserved-above-baseline"])
def test_rule_shows_its_documentation(key: str) -> None:
    code, out, err = run_cli(["rule", key])
    assert (code, err) == (0, "")
    assert "PL101 reserved-above-baseline" in out
    for heading in ("What it does", "Why is this bad?", "Example", "Use instead"):
        assert heading in out
    assert ANSI not in out


def test_rule_as_markdown() -> None:
    code, out, _ = run_cli(["rule", "PL101", "--format", "markdown"])
    assert code == 0
    assert out.startswith("# PL101 reserved-above-baseline\n")
    assert "\n## What it does\n" in out
    assert "\n## Why is this bad?\n" in out


@pytest.mark.parametrize("key", ["PL000", "no-such-rule"])
def test_unknown_rule_is_a_usage_error(key: str) -> None:
    code, out, err = run_cli(["rule", key])
    assert (code, out, err) == (2, "", f"policylint: error: unknown rule '{key}' (see `policylint rules`)\n")


def test_no_command_prints_help_and_exits_2() -> None:
    code, out, err = run_cli([])
    assert (code, out) == (2, "")
    assert err.startswith("usage: policylint")
