"""The check command's output options, colour, and the rules / rule commands.

Output tests lint a copy of the small shared repository (tests/data/minirepo;
``now`` pinned, PL0 and PL101
selected) with one PL101 finding: the ``serving`` pool reserves 80 GPUs.
"""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import copy_minirepo, minirepo_path, run_cli
from fixture_helpers import document_counts, mini_bands
from policylint.commands.check import use_color
from policylint.resources import rules_dir
from policylint.engine.ruleset import load_rules

CONFIG = 'now: "2026-12-01"\nselect: [PL0, PL101]\nrules: {PL977: {accept: "select=PL0,PL101"}}\n'
DOCUMENTS, FILES = document_counts(minirepo_path())
SUMMARY = f"Found 1 finding (1 error) in {DOCUMENTS} documents in {FILES} files.\n"
#: The PL101 fix lowers the reservation and raises the elastic part that keeps the capacity:
#: raising a number is unsafe, so only --fix --unsafe-fixes fixes it (marked [~]).
FIXABLE = "[~] 1 fixable with --fix --unsafe-fixes (none with --fix alone).\n"
BASELINE = mini_bands("serving")[0]
CLUSTER_LINES = (minirepo_path() / "clusters" / "prod-east.yaml").read_text(encoding="utf-8").splitlines()
#: The batch pool's reservedGpus line (1-based), where the tests add an unused suppression.
BATCH_LINE = CLUSTER_LINES.index("      reservedGpus: 20") + 1
GITHUB_LINE = re.compile(r"^::(error|warning|notice) file=[^,]+,line=\d+,col=\d+,title=[^:]+::.+$")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = copy_minirepo(tmp_path / "repo")
    (repo / ".policylint.yaml").write_text(CONFIG, encoding="utf-8")
    path = repo / "clusters" / "prod-east.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("reservedGpus: 48", "reservedGpus: 80"), encoding="utf-8")
    return repo


# --- formats -----------------------------------------------------------------------------


def test_two_reports_in_one_run(repo: Path) -> None:
    code, out, err = run_cli(
        ["check", "--format", "sarif", "--output", "out/a.sarif", "--format", "junit", "--output", "out/b.xml"], cwd=repo
    )
    # nothing on stdout: the log still says what was found, and where the reports went
    assert (code, out) == (1, "")
    assert err == f"policylint: {SUMMARY.strip()} Reports: out/a.sarif, out/b.xml\n"
    assert run_cli(["check", "--format", "sarif=out/a.sarif", "--quiet"], cwd=repo) == (1, "", "")
    sarif = json.loads((repo / "out" / "a.sarif").read_text(encoding="utf-8"))
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["PL101"]
    junit = ET.fromstring((repo / "out" / "b.xml").read_text(encoding="utf-8"))
    assert junit.get("failures") == "1"


def test_report_to_a_file_and_text_to_stdout(repo: Path) -> None:
    code, out, _ = run_cli(["check", "--format", "json=r.json", "--format", "text", "-q"], cwd=repo)
    assert (code, out) == (1, SUMMARY + FIXABLE)
    assert json.loads((repo / "r.json").read_text())["summary"]["findings"] == 1


def test_explicit_pairs_in_both_spellings(repo: Path) -> None:
    """The README's GitHub recipe: annotations on stdout, SARIF and markdown each in its own file."""
    code, out, err = run_cli(
        ["check", "--format", "github", "--output-format", "sarif:out/p.sarif", "--format", "markdown=out/summary.md"],
        cwd=repo,
    )
    assert (code, err) == (1, "")
    assert out.startswith("::error file=clusters/prod-east.yaml,line=19,col=7,")
    assert json.loads((repo / "out" / "p.sarif").read_text())["version"] == "2.1.0"
    assert (repo / "out" / "summary.md").read_text().startswith("## policylint\n")


def test_dash_means_stdout(repo: Path) -> None:
    code, out, _ = run_cli(["check", "--format", "json=-"], cwd=repo)
    assert code == 1 and json.loads(out)["summary"]["findings"] == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--output", "a.json", "--output", "b.json"],
            "1 --format without a path but 2 --output: name each report's file with --format FORMAT=PATH"
            " (e.g. --format sarif=policylint.sarif)",
            id="more-outputs-than-formats",
        ),
        pytest.param(
            # The old GitLab recipe: the text report went into policylint.xml.
            ["--format", "text", "--format", "junit", "--output", "policylint.xml"],
            "2 --format without a path but 1 --output: name each report's file with --format FORMAT=PATH"
            " (e.g. --format sarif=policylint.sarif)",
            id="fewer-outputs-than-formats",
        ),
        pytest.param(
            ["--format", "github", "--format", "markdown"],
            "2 reports would go to stdout (github, markdown): give all but one a file with --format FORMAT=PATH",
            id="two-on-stdout",
        ),
        pytest.param(
            ["--format", "json=r.json", "--format", "sarif=./r.json"],
            "two reports would be written to ./r.json",
            id="same-file-twice",
        ),
    ],
)
def test_ambiguous_outputs_are_usage_errors(repo: Path, args: list[str], message: str) -> None:
    code, out, err = run_cli(["check", *args], cwd=repo)
    assert (code, out, err) == (2, "", f"policylint: error: {message}\n")
    assert not list(repo.glob("*.json")) and not (repo / "policylint.xml").exists()


def test_positional_pairs_that_match_still_work(repo: Path) -> None:
    code, out, _ = run_cli(["check", "--format", "json", "--output", "r.json", "--format", "text=r.txt"], cwd=repo)
    assert (code, out) == (1, "")
    assert json.loads((repo / "r.json").read_text())["summary"]["findings"] == 1
    assert (repo / "r.txt").read_text().endswith(SUMMARY + FIXABLE)


@pytest.mark.parametrize("value", ["yaml", "yaml=x.yaml", "json="])
def test_bad_format_values_are_usage_errors(repo: Path, value: str) -> None:
    code, out, err = run_cli(["check", "--format", value], cwd=repo)
    assert (code, out) == (2, "")
    assert "argument --format/--output-format: " in err


def test_github_annotations(repo: Path) -> None:
    path = repo / "clusters" / "prod-east.yaml"
    # Add a warning (unused suppression) so both commands appear.
    path.write_text(path.read_text().replace("reservedGpus: 20", "reservedGpus: 20  # policylint: disable=PL101 -- x"))
    code, out, err = run_cli(["check", "--format", "github"], cwd=repo)
    assert (code, err) == (1, "")
    lines = out.splitlines()
    assert lines[-1] == f"policylint: 2 findings (1 error, 1 warning) in {FILES} files"
    annotations = lines[:-1]
    assert len(annotations) == 2
    for line in annotations:
        assert GITHUB_LINE.match(line), line
    assert annotations[0].startswith(
        "::error file=clusters/prod-east.yaml,line=19,col=7,title=PL101 reserved-above-baseline::"
    )
    assert "; allowed headroom 15%25)" in annotations[0]  # '%' escaped for the runner
    assert annotations[1].startswith(
        f"::warning file=clusters/prod-east.yaml,line={BATCH_LINE},col=25,title=PL032 unused-suppression::"
    )


def test_statistics_prints_only_the_table(repo: Path) -> None:
    path = repo / "clusters" / "prod-east.yaml"
    path.write_text(path.read_text().replace("reservedGpus: 20", "reservedGpus: 20  # policylint: disable=PL101 -- x"))
    for fmt in ("text", "concise"):
        code, out, _ = run_cli(["check", "--statistics", "--format", fmt], cwd=repo)
        assert (code, out) == (1, "    1  PL032   [ ] unused-suppression\n    1  PL101   [~] reserved-above-baseline\n")


def test_statistics_sorts_by_count_then_code() -> None:
    from policylint.finding import Finding, Severity
    from policylint.engine.result import LintResult
    from policylint.report.text_report import statistics_table

    def finding(code: str, line: int) -> Finding:
        return Finding("a.yaml", line, 1, code, code.lower(), Severity.ERROR, "m")

    result = LintResult([finding("PL2", 1), finding("PL3", 2), finding("PL3", 3), finding("PL1", 4)], {}, None, 1, 1)
    assert statistics_table(result) == "    2  PL3     [ ] pl3\n    1  PL1     [ ] pl1\n    1  PL2     [ ] pl2\n"


def test_statistics_of_a_clean_run_is_empty(tmp_path: Path) -> None:
    repo = copy_minirepo(tmp_path / "good")
    (repo / ".policylint.yaml").write_text(CONFIG, encoding="utf-8")
    assert run_cli(["check", "--statistics"], cwd=repo) == (0, "", "")


def test_no_show_source_drops_the_frames(repo: Path) -> None:
    code, out, _ = run_cli(["check", "--no-show-source"], cwd=repo)
    assert code == 1
    assert out.splitlines()[:3] == [
        "clusters/prod-east.yaml",
        "  clusters/prod-east.yaml:19:7: error PL101 [~] [reserved-above-baseline] pool prod-east/serving reserves 80 GPUs,"
        f" but its pooled baseline is {BASELINE} GPUs (sum of workload baselines {BASELINE}: pooling saves nothing; allowed headroom 15%): sized by peak, not baseline",
        f"    = help: reserve about {BASELINE} GPUs and carry the daily band on elastic capacity",
    ]
    assert run_cli(["check", "--show-source"], cwd=repo) == run_cli(["check"], cwd=repo)


def test_concise_is_one_line_per_finding(repo: Path) -> None:
    code, out, _ = run_cli(["check", "--output-format", "concise"], cwd=repo)
    assert (code, out) == (
        1,
        "clusters/prod-east.yaml:19:7: error PL101 [~] [reserved-above-baseline] pool prod-east/serving reserves 80 GPUs,"
        f" but its pooled baseline is {BASELINE} GPUs (sum of workload baselines {BASELINE}: pooling saves nothing; allowed headroom 15%): sized by peak, not baseline\n"
        + SUMMARY
        + FIXABLE,
    )
    assert run_cli(["check", "--format", "concise", "-q"], cwd=repo) == (1, SUMMARY + FIXABLE, "")


def test_quiet_prints_only_the_summary(repo: Path) -> None:
    code, out, err = run_cli(["check", "--quiet"], cwd=repo)
    assert (code, out, err) == (1, SUMMARY + FIXABLE, "")


def test_text_output_shows_the_finding_with_its_frame(repo: Path) -> None:
    code, out, _ = run_cli(["check"], cwd=repo)
    assert code == 1
    assert out.splitlines()[:6] == [
        "clusters/prod-east.yaml",
        "  clusters/prod-east.yaml:19:7: error PL101 [~] [reserved-above-baseline] pool prod-east/serving reserves 80 GPUs,"
        f" but its pooled baseline is {BASELINE} GPUs (sum of workload baselines {BASELINE}: pooling saves nothing;"
        " allowed headroom 15%): sized by peak, not baseline",
        f"    18 | {CLUSTER_LINES[17]}",
        "    19 |       reservedGpus: 80",
        "       |       ^",
        f"    = help: reserve about {BASELINE} GPUs and carry the daily band on elastic capacity",
    ]


def test_exit_zero_still_reports(repo: Path) -> None:
    code, out, _ = run_cli(["check", "--exit-zero", "-q"], cwd=repo)
    assert (code, out) == (0, SUMMARY + FIXABLE)


def test_clean_repository_exits_zero(tmp_path: Path) -> None:
    repo = copy_minirepo(tmp_path / "good")
    (repo / ".policylint.yaml").write_text(CONFIG, encoding="utf-8")
    code, out, err = run_cli(["check", "-q"], cwd=repo)
    assert (code, out, err) == (0, f"All checks passed: {DOCUMENTS} documents in {FILES} files.\n", "")


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
    header, *lines = out.splitlines()
    assert header.split() == ["CODE", "NAME", "SEVERITY", "SECTION", "FIX", "SUMMARY"]
    listed = [line.split()[0] for line in lines]
    assert listed == sorted(load_rules([rules_dir()]).rules)
    # every column starts where its heading does
    for heading in ("NAME", "SEVERITY", "SECTION", "FIX", "SUMMARY"):
        start = header.index(heading)
        assert all(line[start - 2 : start] == "  " and line[start] != " " for line in lines), heading
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


@pytest.mark.parametrize(("key", "hint"), [("PL000", "; did you mean 'PL030'?"), ("no-such-rule", "")])
def test_unknown_rule_is_a_usage_error(key: str, hint: str) -> None:
    code, out, err = run_cli(["rule", key])
    assert (code, out, err) == (2, "", f"policylint: error: unknown rule '{key}'{hint} (see `policylint rules`)\n")


@pytest.mark.parametrize(("key", "meant"), [("reserved-above-basline", "reserved-above-baseline"), ("PL1O1", "PL101")])
def test_a_mistyped_rule_gets_the_rule_it_is_closest_to(key: str, meant: str) -> None:
    """A newcomer's trial, 2026-12-07: the configuration reader suggested the rule meant, `policylint rule` did not."""
    code, out, err = run_cli(["rule", key])
    assert (code, out) == (2, "")
    assert err == f"policylint: error: unknown rule '{key}'; did you mean '{meant}'? (see `policylint rules`)\n"


def test_no_command_prints_help_and_exits_2() -> None:
    code, out, err = run_cli([])
    assert (code, out) == (2, "")
    assert err.startswith("usage: policylint")


def test_rule_piped_has_no_trailing_spaces() -> None:
    """Newcomer trial, 2026-12-06: `policylint rule PL101 | less` padded every line to the console's width."""
    code, out, err = run_cli(["rule", "PL101"])
    assert (code, err) == (0, "")
    assert "reserved-above-baseline" in out and out.endswith("\n")
    assert [line for line in out.splitlines() if line != line.rstrip()] == []
