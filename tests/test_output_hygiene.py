"""Control characters a user or a server supplied never reach the output raw.

A trace path, a name or a message quoting a file can hold a line break, an
escape sequence or a bidirectional override. Printed raw, a line break splits a
report line and the second half can be a GitHub Actions workflow command
(``::error file=README.md,...``), and an escape sequence drives the terminal.
Every format writes them as visible escapes (``\\n``, ``\\x1b``); JSON keeps the
exact value, which its encoder escapes.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import copy_minirepo, replace_once, run_cli

from policylint.report.safe_text import escape_controls, json_ascii_controls

NOW = "2026-12-01"
TRACE = "../measurements/traces/reranker.csv"
#: a newline, then a forged workflow command, then a colour escape (ESC [ 31 m)
FORGED = "\n::error file=README.md,line=1::forged\x1b[31m"
#: the same text as every format but JSON shows it
SHOWN = "\\n::error file=README.md,line=1::forged\\x1b[31m"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The small repository with one trace path carrying a forged workflow command."""
    folder = copy_minirepo(tmp_path / "repo")
    # YAML double-quoted escapes: the loaded path holds a real LF and a real ESC
    replace_once(folder / "workloads" / "search.yaml", f"path: {TRACE}\n", f'path: "{TRACE}\\n::error file=README.md,line=1::forged\\e[31m"\n')
    return folder


def _check(repo: Path, fmt: str) -> tuple[int, str, str]:
    # the document rules only: the broken path's pool is also reported as not judged (PL983), which is not
    # what these tests are about
    return run_cli(["check", "--now", NOW, "--select", "PL0", "--format", fmt, "."], cwd=repo)


def _no_raw_controls(text: str) -> None:
    assert "\x1b" not in text
    assert "\r" not in text
    for line in text.splitlines():
        assert not line.startswith("::error file=README.md")


@pytest.mark.parametrize("fmt", ["text", "concise", "github", "junit", "markdown"])
def test_a_forged_command_in_a_trace_path_stays_on_its_line(repo: Path, fmt: str) -> None:
    code, out, err = _check(repo, fmt)
    assert code == 1, err
    _no_raw_controls(out)
    assert FORGED not in out
    shown = SHOWN.replace("\\", "\\\\").replace("[", "\\[") if fmt == "markdown" else SHOWN
    assert f"measurement file '{TRACE}{shown}' does not exist" in out


def test_github_annotation_is_one_workflow_command(repo: Path) -> None:
    code, out, _ = _check(repo, "github")
    assert code == 1
    lines = out.splitlines()
    commands = [line for line in lines if line.startswith("::")]
    assert commands == [
        "::error file=workloads/search.yaml,line=16,col=7,title=PL022 missing-file"
        f"::measurement file '{TRACE}{SHOWN}' does not exist"
        " (hint: check the path; it is relative to the folder of this file)"
    ]
    assert lines[-1] == "policylint: 1 finding (1 error) in 4 files"


def test_text_report_prints_the_finding_and_its_source_line_escaped(repo: Path) -> None:
    code, out, _ = _check(repo, "text")
    assert code == 1
    headline = f"  workloads/search.yaml:16:7: error PL022 [missing-file] measurement file '{TRACE}{SHOWN}' does not exist"
    assert headline in out.splitlines()


@pytest.mark.parametrize("fmt", ["sarif", "gitlab"])
def test_json_formats_read_by_other_tools_carry_the_escaped_text(repo: Path, fmt: str) -> None:
    code, out, _ = _check(repo, fmt)
    assert code == 1
    _no_raw_controls(out)
    data = json.loads(out)
    if fmt == "sarif":
        text = data["runs"][0]["results"][0]["message"]["text"]
    else:
        text = data[0]["description"]
    assert f"'{TRACE}{SHOWN}'" in text
    assert "\x1b" not in text and "\n" not in text


def test_json_keeps_the_exact_value_encoded(repo: Path) -> None:
    code, out, _ = _check(repo, "json")
    assert code == 1
    assert out.isascii()  # every control and non-ASCII character is a \\u escape
    assert "\x1b" not in out
    (finding,) = json.loads(out)["findings"]
    assert finding["message"] == f"measurement file '{TRACE}{FORGED}' does not exist"


def test_junit_stays_parseable_xml(repo: Path) -> None:
    _, out, _ = _check(repo, "junit")
    root = ET.fromstring(out.encode())
    failure = root.find(".//failure")
    assert failure is not None
    assert SHOWN in failure.get("message", "")


def test_html_report_escapes_the_message(repo: Path) -> None:
    page = repo / "review.html"
    code, _, err = run_cli(["report", "--now", NOW, "--html", str(page), "."], cwd=repo)
    assert code in (0, 1), err
    html = page.read_text(encoding="utf-8")
    assert "\x1b" not in html
    assert f"{TRACE}\\n::error file=README.md,line=1::forged\\x1b[31m" in html


def test_a_raw_control_character_in_a_file_is_escaped_in_its_code_frame(tmp_path: Path) -> None:
    repo = copy_minirepo(tmp_path / "repo")
    doc = repo / "workloads" / "search.yaml"
    # a raw ESC is not allowed in YAML: the syntax error's code frame shows that very line
    doc.write_text(doc.read_text(encoding="utf-8").replace("team: search\n", "team: search\x1b]0;owned\x07\n", 1), encoding="utf-8")
    code, out, _ = run_cli(["check", "--now", NOW, "--format", "text", "."], cwd=repo)
    assert code == 1
    assert "\x1b" not in out and "\x07" not in out
    assert "team: search\\x1b]0;owned\\x07" in out


def test_a_name_ending_in_a_newline_is_refused_by_the_schema(tmp_path: Path) -> None:
    repo = copy_minirepo(tmp_path / "repo")
    replace_once(repo / "clusters" / "prod-east.yaml", "  name: prod-east\n", '  name: "prod-east\\n"\n')
    code, out, _ = run_cli(["check", "--now", NOW, "--format", "concise", "--select", "PL010", "."], cwd=repo)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("clusters/prod-east.yaml:")
    assert "error PL010 [schema-violation] Cluster: 'metadata/name': 'prod-east\\n' does not match" in lines[0]
    assert len(lines) == 2  # the finding and the summary: the name split no line


@pytest.mark.parametrize(
    ("kind", "key", "value"),
    [
        ("Workload", "team", "search\x1b[2J"),
        ("Workload", "owner", "a@example.com\n::warning::x"),
        ("Workload", "name", "reranker\n"),
    ],
)
def test_names_and_contacts_with_control_characters_are_schema_errors(kind: str, key: str, value: str) -> None:
    from policylint.resources import load_schema
    import jsonschema

    schema = load_schema(kind)
    meta = {"name": "reranker", "team": "search", "owner": "x@example.com", key: value}
    doc = {"apiVersion": "policylint/v1", "kind": kind, "metadata": meta, "spec": {}}
    errors = [e for e in jsonschema.Draft202012Validator(schema).iter_errors(doc) if list(e.path) == ["metadata", key]]
    assert errors and errors[0].validator == "pattern"


def test_every_schema_pattern_refuses_a_trailing_newline() -> None:
    import re

    from policylint.resources import schemas_dir

    patterns: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "pattern" and isinstance(v, str):
                    patterns.append(v)
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for path in sorted(schemas_dir().glob("*.schema.json")):
        walk(json.loads(path.read_text(encoding="utf-8")))
    assert len(patterns) >= 20
    for pattern in patterns:
        # Python's re.search lets "$" match before a final newline; "(?!\n)" closes that gap
        assert pattern.endswith("$(?!\\n)"), pattern
        assert re.search(pattern, "2026-01-01\n") is None


def test_the_one_line_error_escapes_what_whitespace_folding_leaves(tmp_path: Path) -> None:
    name = "missing\x1b]8;;http://x\x07.csv"
    code, out, err = run_cli(["bands", name], cwd=tmp_path)
    assert code == 2
    assert out == ""
    assert "\x1b" not in err and "\x07" not in err
    assert err.count("\n") == 1
    assert "missing\\x1b]8;;http://x\\x07.csv" in err


def test_escape_controls() -> None:
    assert escape_controls("plain text\twith a tab") == "plain text\twith a tab"
    assert escape_controls("a\nb\rc\x00d\x1be\x7ff") == "a\\nb\\rc\\x00d\\x1be\\x7ff"
    assert escape_controls("nel\x85 csi\x9b") == "nel\\x85 csi\\x9b"
    assert escape_controls("ls\u2028ps\u2029 rlo\u202e lri\u2066") == "ls\\u2028ps\\u2029 rlo\\u202e lri\\u2066"
    assert escape_controls("bad byte \udcff") == "bad byte \\udcff"
    assert escape_controls("µ – 日本") == "µ – 日本"


def test_json_ascii_controls_keeps_the_value() -> None:
    value = {"m": "a\x85b\u2028c\u202ed µ"}
    text = json.dumps(value, indent=2, ensure_ascii=False)
    safe = json_ascii_controls(text)
    assert json.loads(safe) == value
    assert "\x85" not in safe and "\u2028" not in safe and "\u202e" not in safe
    assert "µ" in safe and safe.count("\n") == text.count("\n")


def test_the_progress_bar_shows_a_file_name_escaped_and_without_markup() -> None:
    import io
    import time

    from rich.console import Console

    from policylint.report.progress import TerminalProgress

    buffer = io.StringIO()
    bar = TerminalProgress(Console(file=buffer, force_terminal=True, width=160), delay=0.0)
    bar.begin("trace\x1b]0;owned\x07[link=http://x]y[/link].csv", 100)
    time.sleep(0.3)
    bar.advance(50)
    bar.end()
    shown = buffer.getvalue()
    assert "trace\\x1b]0;owned\\x07[link=http://x]y[/link].csv" in shown
    assert "\x1b]0;owned" not in shown and "\x1b]8;" not in shown  # no title change, no hyperlink


def test_a_file_name_with_a_newline_is_escaped_in_text_and_exact_in_sarif_and_gitlab(tmp_path: Path) -> None:
    repo = copy_minirepo(tmp_path / "repo")
    odd = "odd\nname.yaml"
    (repo / "workloads" / odd).write_text(
        (repo / "workloads" / "search.yaml").read_text(encoding="utf-8").replace("gpusPerReplica: 1", "gpusPerReplica: 0", 1)
        .replace("name: reranker", "name: reranker-two", 1).replace("name: offline-scoring", "name: offline-two", 1),
        encoding="utf-8",
    )
    code, out, _ = _check(repo, "concise")
    assert code == 1
    assert "workloads/odd\\nname.yaml:" in out
    assert "odd\nname" not in out
    _, out, _ = _check(repo, "sarif")
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in json.loads(out)["runs"][0]["results"]}
    assert "workloads/odd%0Aname.yaml" in uris  # the URI still names the real file
    _, out, _ = _check(repo, "gitlab")
    assert "workloads/odd\nname.yaml" in {issue["location"]["path"] for issue in json.loads(out)}
