"""``--format junit``: a JUnit XML report for CI systems that chart test results.

Shape: one ``<testsuites>`` holding one ``<testsuite name="policylint">``, and
one ``<testcase>`` per reported finding, with one ``<failure>`` inside::

    <testcase classname="plans/a.yaml" name="PL101 reserved-above-baseline: pool prod/serving">
      <failure message="PL101 reserved-above-baseline: ..." type="error">
    plans/a.yaml:12:5: error PL101 [reserved-above-baseline] ...
    hint: ...
      </failure>
    </testcase>

``classname`` is the file (dashboards group test cases by it) and ``name``
the rule and the subject it judged (the line when a finding has no subject),
so a dashboard lists every problem on its own row and tracks it across runs
without depending on line numbers. A checked file with no finding is one
passing test case named ``no findings``, so the report still shows what was
checked. ``tests`` counts the test cases, ``failures`` the findings.

Every reported finding is a ``<failure>`` so that no CI viewer hides it, but
``type`` is the finding's severity and findings below ``--fail-on`` say in
their text that they do not fail the run. The thresholds and the counts of
what the filter hid are in the suite's ``<properties>``.

No timestamps or durations: the report must be identical for identical input.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

from policylint.finding import Finding, Severity
from policylint.report import ReportContext

if TYPE_CHECKING:
    from policylint.engine.result import LintResult

# Characters XML 1.0 cannot carry at all, even escaped; ElementTree would write
# them through and produce a file no parser accepts.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _clean(text: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _fail_on(context: ReportContext) -> Severity:
    try:
        return Severity.parse(context.fail_on)
    except ValueError:
        return Severity.WARNING


def _failure_text(f: Finding, threshold: Severity) -> str:
    where = f"{f.file}:{f.line}:{f.column}" if f.line > 0 else f.file  # line 0: the whole file
    lines = [f"{where}: {f.severity.label} {f.code} [{f.name}] {f.message}"]
    if f.hint:
        lines.append(f"hint: {f.hint}")
    if f.severity < threshold:
        lines.append(f"advisory: below --fail-on {threshold.label}; does not fail the run")
    return "\n".join(lines)


def checked_files(result: LintResult) -> list[str]:
    """Every file the run looked at, including any only findings mention."""
    files = set(result.sources)
    files.update(f.file for f in result.findings)
    files.update(f.file for f, _ in result.suppressed)
    files.update(f.file for f in result.baselined)
    return sorted(files)


#: The name of the passing test case of a file without findings.
CLEAN_CASE = "no findings"


def case_name(f: Finding) -> str:
    """``PL101 reserved-above-baseline: pool prod/serving`` (the line when there is no subject)."""
    if f.subject:
        what = f.subject
    elif f.line > 0:
        what = f"line {f.line}"
    else:
        what = "whole file"
    return f"{f.code} {f.name}: {what}"


def build_tree(result: LintResult, context: ReportContext) -> ET.Element:
    """The ``<testsuites>`` element (exposed for tests)."""
    threshold = _fail_on(context)
    by_file: dict[str, list[Finding]] = {}
    for f in result.findings:
        by_file.setdefault(f.file, []).append(f)
    files = checked_files(result)
    clean = [name for name in files if not by_file.get(name)]
    counts = {
        "tests": str(len(result.findings) + len(clean)),
        "failures": str(len(result.findings)),
        "errors": "0",
        "skipped": "0",
    }

    root = ET.Element("testsuites", {"name": "policylint", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": "policylint", **counts})
    properties = ET.SubElement(suite, "properties")
    for key, value in (
        ("fail-on", threshold.label),
        ("findings", str(len(result.findings))),
        ("suppressed", str(len(result.suppressed))),
        ("baselined", str(len(result.baselined))),
        ("stale-baseline-entries", str(len(result.stale_baseline))),
    ):
        ET.SubElement(properties, "property", {"name": key, "value": value})

    for name in files:
        findings = sorted(by_file.get(name, []), key=Finding.sort_key)
        if not findings:
            ET.SubElement(suite, "testcase", {"classname": _clean(name), "name": CLEAN_CASE})
        for f in findings:
            case = ET.SubElement(suite, "testcase", {"classname": _clean(name), "name": _clean(case_name(f))})
            failure = ET.SubElement(
                case,
                "failure",
                {"message": _clean(f"{f.code} {f.name}: {f.message}"), "type": f.severity.label},
            )
            failure.text = _clean(_failure_text(f, threshold))
    return root


def render(result: LintResult, context: ReportContext) -> str:
    root = build_tree(result, context)
    ET.indent(root, space="  ")
    body = ET.tostring(root, encoding="unicode")
    # Written by hand: tostring(encoding="unicode") omits the encoding, and the CLI writes UTF-8.
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"
