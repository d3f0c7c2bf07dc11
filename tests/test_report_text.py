"""The text report without colour is built as plain text, byte for byte what rich prints.

``--format text`` (the pre-commit hook's format) printed every line through rich, one
``Console.print`` per line: 2.5 s of a run with 3,000 findings. Without colour the
report now joins the lines itself (:func:`policylint.report.text_report._plain`);
rich still prints a line holding a tab, and every line with colour. These tests hold
the plain lines to rich's own rendering, on generated text of every kind rich
treats specially (control codes, tabs, wide and combining characters, markup-like
brackets, emoji codes, line breaks).
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policylint.report import text_report
from policylint.report.text_report import _lines, _plain, _rich, render

# the characters rich might treat specially, among plain ones
SPECIAL = ["\t", "\r", "\x07", "\x08", "\x0b", "\x0c", "\x1b", "\x00", "\x7f", "\u200b", "\u0301", "中", "😀",
           "[", "]", "[bold]", ":smile:", "\\", " ", "\n", "\u2028", "\ufeff"]
texts = st.lists(st.one_of(st.sampled_from(SPECIAL), st.text(max_size=6)), max_size=8).map("".join)
styles = st.sampled_from(["", "bold", "bold red", "dim", "cyan", "blue", "bold underline", "green"])
lines = st.one_of(st.none(), st.tuples(styles, texts, st.lists(st.tuples(texts, styles), max_size=5)))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines)
def test_a_plain_line_is_what_rich_prints(line: text_report.Line) -> None:
    assert _plain(line) == _rich([line], color=False)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(lines, max_size=12))
def test_plain_lines_together_are_what_rich_prints(many: list[text_report.Line]) -> None:
    assert "".join(map(_plain, many)) == _rich(many, color=False)


def test_reports_of_the_examples_are_what_rich_prints() -> None:
    """Whole reports, with code frames, hints and the summary: plain against rich; with colour, rich's terminal codes."""
    import datetime as dt

    from conftest import EXAMPLES

    from policylint.engine.linter import LintOptions, lint
    from policylint.engine.ruleset import load_rules
    from policylint.report import ReportContext
    from policylint.resources import rules_dir

    now = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
    ruleset = load_rules([rules_dir()])
    for example in ("bad", "good"):
        result = lint([EXAMPLES / example], LintOptions(root=EXAMPLES / example, now=now, ruleset=ruleset))
        if example == "bad":
            assert result.findings and any(f.hint for f in result.findings)
        for show_source in (True, False):
            context = ReportContext(show_source=show_source)
            assert render(result, context) == _rich(_lines(result, context), color=False)
            # with colour every line still goes through rich, which styles it
            assert "\x1b[" in render(result, ReportContext(show_source=show_source, color=True))


def test_the_control_codes_stripped_are_riches() -> None:
    """The plain path strips what rich's Text strips, without importing rich."""
    from rich.control import _CONTROL_STRIP_TRANSLATE, strip_control_codes

    assert text_report.RICH_STRIPS == _CONTROL_STRIP_TRANSLATE
    every = "".join(map(chr, range(0x110000))).encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    assert every.translate(text_report.RICH_STRIPS) == strip_control_codes(every)


def test_a_plain_report_imports_no_rich(tmp_path: Path) -> None:
    from conftest import EXAMPLES, run_fresh

    out, modules = run_fresh(["check", str(EXAMPLES / "bad"), "--now", "2026-12-01", "--color", "never", "--no-cache"],
                             tmp_path)
    assert "PL" in out  # a report with findings, code frames and hints was printed
    assert sorted(m for m in modules if m == "rich" or m.startswith("rich.")) == []
