"""The sarif, junit, github and markdown reporters, on a hand-built LintResult.

No CLI and no files on disk: each test builds the result a run would produce
(reported findings of every severity, one inline suppression, one baselined
finding, one stale baseline entry) and checks the rendered string.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from policylint import __version__
from policylint.finding import Finding, Severity, sort_findings
from policylint.engine.result import LintResult
from policylint.model.load import SourceFile
from policylint.report import ReportContext, get_renderer
from policylint.report import github_report, markdown_report, sarif_report
from policylint.engine.rule import Rule

SCHEMA_PATH = Path(__file__).parent / "data" / "sarif" / "sarif-schema-2.1.0.json"
FORMATS = ("sarif", "junit", "github", "gitlab", "markdown", "concise", "json")

# A message with every character the GitHub escaping rules care about.
TRICKY = "50% over budget: pools a,b\nsee the trace"

RULE = Rule(
    code="PL101",
    name="reserved-above-baseline",
    severity=Severity.ERROR,
    section="reservations",
    subject="pool",
    summary="Reserved GPUs exceed the measured baseline band.",
    message="pool {pool} reserves {reserved} GPUs",
    hint="lower reservedGpus",
    docs={"what": "Flags pools that reserve more GPUs than their baseline.", "why": "Idle reservations cost money."},
    source=Path("rules/PL101.yaml"),
)


def _finding(
    file: str, line: int, column: int, code: str, name: str, severity: Severity, message: str, **kw: Any
) -> Finding:
    return Finding(file=file, line=line, column=column, code=code, name=name, severity=severity, message=message, **kw)


ERROR = _finding(
    "plans/a.yaml", 12, 5, "PL101", "reserved-above-baseline", Severity.ERROR, "pool serving reserves 16 GPUs",
    hint="lower reservedGpus to 12", doc_index=0, doc_path="spec/pools/0/reservedGpus", subject="pool prod/serving",
)
WARNING = _finding(
    "plans/b.yaml", 3, 1, "PL202", "stale-measurement", Severity.WARNING, TRICKY,
    hint="re-measure", doc_index=1, doc_path="spec/measurements",
)
INFO = _finding("plans/b.yaml", 0, 0, "PL301", "missing-owner", Severity.INFO, "no owner label")
SUPPRESSED = _finding(
    "plans/c.yaml", 4, 3, "PL101", "reserved-above-baseline", Severity.ERROR, "pool batch reserves 8 GPUs",
    doc_path="spec/pools/0/reservedGpus",
)
BASELINED = _finding(
    "plans/c.yaml", 8, 1, "PL202", "stale-measurement", Severity.WARNING, "trace is 40 days old",
    doc_path="spec/measurements",
)
# The filter step records a stale entry by its baseline key: code, file, subject, path.
STALE = {"code": "PL101", "file": "plans/old.yaml", "subject": "pool prod/batch", "path": "spec/pools/1/reservedGpus"}


def make_result(findings: list[Finding] | None = None, **kw: Any) -> LintResult:
    reported = [ERROR, WARNING, INFO] if findings is None else findings
    defaults: dict[str, Any] = {
        "sources": {
            name: SourceFile(path=Path(name), display=name)
            for name in ("plans/a.yaml", "plans/b.yaml", "plans/c.yaml", "plans/clean.yaml")
        },
        "model": None,
        "documents": 5,
        "files": 4,
        "suppressed": [(SUPPRESSED, "approved in CAP-12")],
        "baselined": [BASELINED],
        "stale_baseline": [dict(STALE)],
    }
    defaults.update(kw)
    return LintResult(findings=sort_findings(reported), **defaults)


def make_context(**kw: Any) -> ReportContext:
    defaults: dict[str, Any] = {"rules": {"PL101": RULE}, "baseline_used": True, "fail_on": "warning"}
    defaults.update(kw)
    return ReportContext(**defaults)


def render(fmt: str, result: LintResult | None = None, context: ReportContext | None = None) -> str:
    return get_renderer(fmt)(result or make_result(), context or make_context())


def sarif(result: LintResult | None = None, context: ReportContext | None = None) -> dict[str, Any]:
    log: dict[str, Any] = json.loads(render("sarif", result, context))
    return log


# --- SARIF ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sarif_validator() -> jsonschema.Draft4Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema)


@pytest.mark.parametrize(
    "result, context",
    [
        pytest.param(None, None, id="full"),
        pytest.param(None, make_context(rules={}), id="no-rule-metadata"),
        pytest.param(
            make_result(findings=[], suppressed=[], baselined=[], stale_baseline=[]),
            make_context(baseline_used=False),
            id="clean-run",
        ),
    ],
)
def test_sarif_validates_against_the_official_schema(
    sarif_validator: jsonschema.Draft4Validator, result: LintResult | None, context: ReportContext | None
) -> None:
    log = sarif(result, context)
    errors = sorted(sarif_validator.iter_errors(log), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)
    assert log["version"] == "2.1.0"
    assert len(log["runs"]) == 1
    assert log["runs"][0]["tool"]["driver"]["name"] == "policylint"
    assert log["runs"][0]["tool"]["driver"]["version"] == __version__
    assert isinstance(log["runs"][0]["results"], list)  # present even when empty; uploaders require it


def test_sarif_rules_carry_metadata_and_results_point_at_them() -> None:
    run = sarif()["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == ["PL101", "PL202", "PL301"]
    known = rules[0]
    assert known["name"] == "reserved-above-baseline"
    assert known["helpUri"] == RULE.help_uri
    assert known["shortDescription"]["text"] == RULE.summary
    assert known["fullDescription"]["text"] == RULE.docs["what"]
    assert known["help"]["markdown"] == RULE.markdown()
    assert known["defaultConfiguration"]["level"] == "error"
    assert known["properties"]["tags"] == ["reservations"]
    # Rules the context does not describe are still listed, so every ruleIndex resolves.
    assert rules[1] == {"id": "PL202", "name": "stale-measurement"}
    for res in run["results"]:
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]


def test_sarif_results_levels_locations_and_messages() -> None:
    results = sarif()["runs"][0]["results"]
    reported = [r for r in results if "suppressions" not in r]
    levels = [(r["ruleId"], r["level"]) for r in reported]
    assert levels == [("PL101", "error"), ("PL301", "note"), ("PL202", "warning")]
    first = reported[0]
    physical = first["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"] == {"uri": "plans/a.yaml", "uriBaseId": "%SRCROOT%"}
    assert physical["region"] == {"startLine": 12, "startColumn": 5}
    assert first["message"]["text"] == "pool serving reserves 16 GPUs (hint: lower reservedGpus to 12)"
    # A whole-file finding (line 0) still gets a valid 1-based region.
    assert reported[1]["locations"][0]["physicalLocation"]["region"] == {"startLine": 1, "startColumn": 1}
    assert all(re.fullmatch(r"[0-9a-f]{64}", r["partialFingerprints"]["policylint/v1"]) for r in results)
    assert len({r["partialFingerprints"]["policylint/v1"] for r in results}) == len(results)


def test_sarif_suppressions_and_baseline_state() -> None:
    results = sarif()["runs"][0]["results"]
    by_state: dict[str, list[dict[str, Any]]] = {}
    for res in results:
        by_state.setdefault(res["baselineState"], []).append(res)
    assert sorted(by_state) == ["absent", "new", "unchanged"]

    in_source = [r for r in results if r.get("suppressions", [{}])[0].get("kind") == "inSource"]
    assert len(in_source) == 1
    assert in_source[0]["suppressions"] == [{"kind": "inSource", "justification": "approved in CAP-12"}]
    assert in_source[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "plans/c.yaml"

    (unchanged,) = by_state["unchanged"]
    assert unchanged["ruleId"] == "PL202"
    assert unchanged["suppressions"] == [{"kind": "external", "justification": "recorded in the baseline"}]

    (absent,) = by_state["absent"]
    assert absent["ruleId"] == "PL101"
    assert absent["level"] == "note"
    assert absent["message"]["text"] == (
        "Baseline entry no longer matches any finding: PL101 pool prod/batch at spec/pools/1/reservedGpus"
    )
    assert absent["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "plans/old.yaml"

    assert len(by_state["new"]) == 4  # three reported plus the inline suppression


def test_sarif_repeated_stale_entries_get_distinct_fingerprints() -> None:
    results = sarif(make_result(stale_baseline=[dict(STALE), dict(STALE)]))["runs"][0]["results"]
    absent = [r["partialFingerprints"]["policylint/v1"] for r in results if r["baselineState"] == "absent"]
    assert len(absent) == 2 and absent[0] != absent[1]


def test_sarif_has_no_baseline_state_without_a_baseline() -> None:
    result = make_result(baselined=[], stale_baseline=[])
    results = sarif(result, make_context(baseline_used=False))["runs"][0]["results"]
    assert results
    assert all("baselineState" not in r for r in results)


def test_sarif_without_rule_metadata_lists_referenced_rules_by_id_and_name() -> None:
    rules = sarif(context=make_context(rules={}))["runs"][0]["tool"]["driver"]["rules"]
    assert rules == [
        {"id": "PL101", "name": "reserved-above-baseline"},
        {"id": "PL202", "name": "stale-measurement"},
        {"id": "PL301", "name": "missing-owner"},
    ]


def _fingerprints(result: LintResult) -> list[tuple[str, str, str]]:
    out = []
    for res in sarif(result)["runs"][0]["results"]:
        uri = res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        out.append((res["ruleId"], uri, res["partialFingerprints"]["policylint/v1"]))
    return sorted(out)


def test_sarif_fingerprints_survive_line_moves_and_message_changes() -> None:
    def moved(f: Finding) -> Finding:
        return dataclasses.replace(f, line=f.line + 7, message=f.message.replace("16", "18"))

    before = make_result()
    after = make_result(
        findings=[moved(f) for f in (ERROR, WARNING, INFO)],
        suppressed=[(moved(SUPPRESSED), "approved in CAP-12")],
        baselined=[moved(BASELINED)],
    )
    assert _fingerprints(before) == _fingerprints(after)


def test_sarif_fingerprints_tell_apart_findings_that_differ_only_by_line() -> None:
    twin = dataclasses.replace(INFO, line=5, column=1)
    result = make_result(findings=[INFO, twin])
    prints = [fp for _, _, fp in _fingerprints(result)]
    assert len(set(prints)) == len(prints)


def test_sarif_fingerprint_depends_on_the_document_path() -> None:
    other = dataclasses.replace(ERROR, doc_path="spec/pools/1/reservedGpus")
    (a,), (b,) = sarif_report.fingerprints([ERROR]), sarif_report.fingerprints([other])
    assert a != b


# --- JUnit ----------------------------------------------------------------------------


def test_junit_parses_and_counts_failures() -> None:
    text = render("junit")
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    root = ET.fromstring(text.encode("utf-8"))
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "policylint"
    cases = suite.findall("testcase")
    # One test case per finding (classname = file, name = rule and subject, or the line
    # without a subject), plus one passing case per clean file.
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        ("plans/a.yaml", "PL101 reserved-above-baseline: pool prod/serving"),
        ("plans/b.yaml", "PL301 missing-owner: whole file"),
        ("plans/b.yaml", "PL202 stale-measurement: line 3"),
        ("plans/c.yaml", "no findings"),
        ("plans/clean.yaml", "no findings"),
    ]
    assert [len(c.findall("failure")) for c in cases] == [1, 1, 1, 0, 0]
    # The suppressed and baselined findings (in plans/c.yaml) are not failures.
    for element in (root, suite):
        assert (element.get("tests"), element.get("failures"), element.get("errors"), element.get("skipped")) == (
            "5",
            "3",
            "0",
            "0",
        )
    props = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
    assert props == {
        "fail-on": "warning",
        "findings": "3",
        "suppressed": "1",
        "baselined": "1",
        "stale-baseline-entries": "1",
    }


def test_junit_failure_content() -> None:
    suite = ET.fromstring(render("junit").encode("utf-8")).findall("testsuite")[0]
    by_type = {f.get("type", ""): f for f in suite.iter("failure")}
    assert sorted(by_type) == ["error", "info", "warning"]
    error = by_type["error"]
    assert error.get("message") == "PL101 reserved-above-baseline: pool serving reserves 16 GPUs"
    assert error.text == (
        "plans/a.yaml:12:5: error PL101 [reserved-above-baseline] pool serving reserves 16 GPUs\n"
        "hint: lower reservedGpus to 12"
    )
    # The newline inside the message survives the attribute round trip.
    assert by_type["warning"].get("message") == f"PL202 stale-measurement: {TRICKY}"
    # Findings below --fail-on are reported, but say they do not fail the run.
    assert "below --fail-on warning" in (by_type["info"].text or "")
    assert "below --fail-on" not in (error.text or "")


def test_junit_survives_characters_xml_cannot_carry() -> None:
    odd = dataclasses.replace(INFO, message="bell\x07 and nul\x00")
    root = ET.fromstring(render("junit", make_result(findings=[odd])).encode("utf-8"))
    (failure,) = root.iter("failure")
    assert failure.get("message") == "PL301 missing-owner: bell\\x07 and nul\\x00"


# --- GitHub Actions -------------------------------------------------------------------

COMMAND = re.compile(
    r"::(?P<kind>error|warning|notice) "
    r"file=(?P<file>[^,:\r\n]+)(?:,line=(?P<line>[1-9]\d*)(?:,col=(?P<col>[1-9]\d*))?)?"
    r",title=(?P<title>[^,:\r\n]+)"
    r"::(?P<message>[^\r\n]*)"
)


def test_github_lines_are_workflow_commands_with_a_plain_summary() -> None:
    lines = render("github").splitlines()
    assert len(lines) == 4  # three findings, one summary; the newline in a message did not split a line
    matches = [COMMAND.fullmatch(line) for line in lines[:3]]
    assert all(matches), lines
    kinds = [(m["kind"], m["title"]) for m in matches if m]
    assert kinds == [
        ("error", "PL101 reserved-above-baseline"),
        ("notice", "PL301 missing-owner"),
        ("warning", "PL202 stale-measurement"),
    ]
    assert lines[0] == (
        "::error file=plans/a.yaml,line=12,col=5,title=PL101 reserved-above-baseline"
        "::pool serving reserves 16 GPUs (hint: lower reservedGpus to 12)"
    )
    # A whole-file finding carries no line or column.
    assert lines[1] == "::notice file=plans/b.yaml,title=PL301 missing-owner::no owner label"
    assert not lines[-1].startswith("::")
    assert lines[-1] == (
        "policylint: 3 findings (1 error, 1 warning, 1 info) in 4 files; "
        "1 suppressed, 1 baselined, 1 stale baseline entry"
    )


def test_github_escaping() -> None:
    line = render("github").splitlines()[2]
    assert line == (
        "::warning file=plans/b.yaml,line=3,col=1,title=PL202 stale-measurement"
        "::50%25 over budget: pools a,b%0Asee the trace (hint: re-measure)"
    )
    assert github_report.escape_data("a%b\r\nc") == "a%25b%0D%0Ac"
    assert github_report.escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


def test_github_escapes_properties_in_file_and_title() -> None:
    odd = dataclasses.replace(INFO, file="plans/x,y:z.yaml", name="odd,name")
    first = render("github", make_result(findings=[odd])).splitlines()[0]
    assert first == "::notice file=plans/x%2Cy%3Az.yaml,title=PL301 odd%2Cname::no owner label"


def test_github_clean_run_summary() -> None:
    result = make_result(findings=[], suppressed=[], baselined=[], stale_baseline=[], files=1)
    assert render("github", result) == "policylint: no findings in 1 file\n"


# --- Markdown -------------------------------------------------------------------------


def test_markdown_heading_verdict_table_and_links() -> None:
    text = render("markdown")
    lines = text.splitlines()
    assert lines[0] == "## policylint"
    assert ":x: **3 findings** (1 error, 1 warning, 1 info) in 4 files." in lines
    header = lines.index("| Code | Rule | Severity | Count |")
    rows = lines[header + 2 : header + 5]
    assert rows == [
        f"| PL101 | [reserved-above-baseline]({RULE.help_uri}) | error | 1 |",
        "| PL202 | stale-measurement | warning | 1 |",
        "| PL301 | missing-owner | info | 1 |",
    ]
    item = "- `plans/a.yaml:12:5` **PL101** error: pool serving reserves 16 GPUs (hint: lower reservedGpus to 12)"
    assert item in lines
    assert "- `plans/b.yaml` **PL301** info: no owner label" in lines  # whole-file finding: no line
    assert "Suppressed inline: 1. Hidden by the baseline: 1. Stale baseline entries: 1." in lines
    assert "<details>" in lines  # the stale entries, folded
    assert "- `plans/old.yaml` **PL101** pool prod/batch, spec/pools/1/reservedGpus" in lines


def test_markdown_escapes_table_cells_and_messages() -> None:
    piped = dataclasses.replace(INFO, name="a|b", message="x | y <b>bold</b>\nnext")
    text = render("markdown", make_result(findings=[piped]), make_context(rules={}))
    assert "| PL301 | a\\|b | info | 1 |" in text.splitlines()
    assert "x \\| y &lt;b&gt;bold&lt;/b&gt;<br>next" in text
    assert markdown_report.escape("a|b") == "a\\|b"


def test_markdown_verdicts() -> None:
    clean = make_result(findings=[], suppressed=[], baselined=[], stale_baseline=[])
    text = render("markdown", clean)
    assert text == "## policylint\n\n:white_check_mark: **No findings** in 4 files.\n"
    only_info = render("markdown", make_result(findings=[INFO]))
    assert ":warning: **1 finding** (1 info) in 4 files, none at or above `--fail-on warning`." in only_info


def test_markdown_folds_long_lists() -> None:
    many = [dataclasses.replace(INFO, line=n, column=1) for n in range(1, 22)]
    text = render("markdown", make_result(findings=many, stale_baseline=[]))
    assert "<summary>Show all 21 findings</summary>" in text
    assert text.count("\n- `plans/b.yaml:") == 21
    few = render("markdown", make_result(findings=many[:20], stale_baseline=[]))
    assert "<details>" not in few


# --- All formats ----------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_output_is_deterministic(fmt: str) -> None:
    assert render(fmt) == render(fmt)
    # The hidden lists come with no order guarantee; the output must not depend on it.
    suppressed = [(SUPPRESSED, "approved in CAP-12"), (dataclasses.replace(SUPPRESSED, line=9), "temporary")]
    baselined = [BASELINED, dataclasses.replace(BASELINED, file="plans/a.yaml")]
    stale = [dict(STALE), {**STALE, "file": "plans/older.yaml"}]
    forward = make_result(suppressed=suppressed, baselined=baselined, stale_baseline=stale)
    backward = make_result(
        suppressed=suppressed[::-1],
        baselined=baselined[::-1],
        stale_baseline=[dict(reversed(list(e.items()))) for e in reversed(stale)],
    )
    assert render(fmt, forward) == render(fmt, backward)


@pytest.mark.parametrize("fmt", FORMATS)
def test_output_has_no_absolute_paths(fmt: str) -> None:
    text = render(fmt)
    assert os.getcwd() not in text
    assert str(Path.home()) not in text
    assert text.endswith("\n")


# --- Text: linear in findings ---------------------------------------------------------


class CountingSource(SourceFile):
    """A SourceFile that counts how often its text is split into lines."""

    splits = 0

    @property
    def lines(self) -> list[str]:
        CountingSource.splits += 1
        return self.text.splitlines()


@pytest.mark.parametrize("fmt", ["text", "concise"])
def test_text_splits_each_file_once_however_many_findings(fmt: str) -> None:
    """Rendering is linear: 2,000 findings in one file split its text once, not 2,000 times."""
    text = "".join(f"key{i}: {i}\n" for i in range(2000))
    source = CountingSource(path=Path("big.yaml"), display="big.yaml", text=text)
    findings = [
        _finding("big.yaml", i + 1, 6, "PL101", "reserved-above-baseline", Severity.ERROR, f"value {i}")
        for i in range(2000)
    ]
    result = make_result(findings, sources={"big.yaml": source}, suppressed=[], baselined=[], stale_baseline=[])
    CountingSource.splits = 0
    out = render(fmt, result, make_context())
    assert CountingSource.splits == (1 if fmt == "text" else 0)
    if fmt == "text":
        lines = out.splitlines()
        # Every finding still gets its own frame, with the right line under it.
        at = lines.index("  big.yaml:1500:6: error PL101 [reserved-above-baseline] value 1499")
        assert lines[at + 1 : at + 4] == ["    1499 | key1498: 1498", "    1500 | key1499: 1499", "         |      ^"]
        assert sum(1 for line in lines if line.startswith("  big.yaml:")) == 2000
    assert out.endswith("Found 2000 findings (2000 errors) in 5 documents in 4 files.\n")
