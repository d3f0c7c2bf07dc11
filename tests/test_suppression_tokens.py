"""Suppressions are read from real YAML comments only, through the real CLI.

A directive counts where the YAML scanner sees a comment: after other words in
the same comment, in a block scalar's header line; never inside a quoted,
plain, literal or folded value. The repository is the small shared one, as in
tests/test_suppressions.py: its serving pool's ``reservedGpus`` (line 19) set
to 80 is a PL101 finding, and its cluster's ``metadata.description`` (line 11)
is a free-text value to hide directive-like text in.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from conftest import copy_minirepo, run_cli
from test_suppressions import LINE, PL101_MESSAGE

CONFIG = 'now: "2026-12-01"\nselect: [PL0, PL101]\nrules: {PL977: {accept: "select=PL0,PL101"}}\n'
CLUSTER = Path("clusters/prod-east.yaml")
RESERVED = "      reservedGpus: 48\n"
DESCRIPTION = "  description: Interactive model serving for the chat assistant and the reranker.\n"
DESCRIPTION_LINE = 11


@pytest.fixture
def repo(minirepo_master: Path, tmp_path: Path) -> Path:
    repo = copy_minirepo(tmp_path / "repo", minirepo_master)
    (repo / ".policylint.yaml").write_text(CONFIG, encoding="utf-8")
    return repo


def rewrite(repo: Path, reserved: str, description: str = DESCRIPTION) -> None:
    """Replace the serving pool's reservedGpus line and the cluster's description (one or more lines each)."""
    path = repo / CLUSTER
    text = path.read_text(encoding="utf-8")
    assert text.count(RESERVED) == 1 and text.count(DESCRIPTION) == 1
    path.write_text(text.replace(RESERVED, reserved).replace(DESCRIPTION, description), encoding="utf-8")


def check(repo: Path) -> tuple[int, list[tuple[str, int, str]], int]:
    """(exit code, findings as (code, line, message), suppressed count) of ``check --format json``."""
    code, out, err = run_cli(["check", "--format", "json"], cwd=repo)
    assert err == ""
    report = json.loads(out)
    return code, [(f["code"], f["line"], f["message"]) for f in report["findings"]], report["summary"]["suppressed"]


# -- a directive after other words in the comment -------------------------------------------------


@pytest.mark.parametrize(
    "reserved",
    [
        pytest.param("      # tuned in CAP-9  # policylint: disable=PL101 -- launch buffer\n      reservedGpus: 80\n", id="line-above"),
        pytest.param("      reservedGpus: 80  # tuned in CAP-9 # policylint: disable=PL101 -- launch buffer\n", id="end-of-line"),
        pytest.param("      reservedGpus: 80  # tuned in CAP-9 #policylint: disable=PL101 -- launch buffer\n", id="no-space"),
    ],
)
def test_directive_after_other_words_in_a_comment_applies(repo: Path, reserved: str) -> None:
    rewrite(repo, reserved)
    assert check(repo) == (0, [], 1)


def test_a_comment_with_words_before_the_directive_covers_the_next_line_not_its_own(repo: Path) -> None:
    # the comment is alone on its line: it covers the line below, where nothing is found
    rewrite(repo, "      reservedGpus: 80\n      # tuned in CAP-9  # policylint: disable=PL101 -- launch buffer\n")
    assert check(repo) == (
        1,
        [("PL101", LINE, PL101_MESSAGE), ("PL032", LINE + 1, "suppression of PL101 matches no finding")],
        0,
    )


def test_disable_file_after_other_words_in_a_comment_applies(repo: Path) -> None:
    rewrite(repo, "      reservedGpus: 80\n", "  # owned by CAP  # policylint: disable-file=PL101 -- migration, see CAP-9\n" + DESCRIPTION)
    assert check(repo) == (0, [], 1)


def test_words_without_their_own_hash_are_not_a_directive(repo: Path) -> None:
    # "policylint:" in prose is not a directive (no PL033 for it); the finding stays
    rewrite(repo, "      reservedGpus: 80  # see the policylint: disable=PL101 docs\n")
    assert check(repo) == (1, [("PL101", LINE, PL101_MESSAGE)], 0)


# -- never inside a value ---------------------------------------------------------------------------


VALUES = [
    pytest.param('  description: "see # policylint: {directive} -- quoted"\n', id="double-quoted"),
    pytest.param("  description: 'see # policylint: {directive} -- quoted'\n", id="single-quoted"),
    pytest.param("  description: see#policylint:{directive} -- plain\n", id="plain"),
    pytest.param("  description: |\n    notes\n    # policylint: {directive} -- literal\n", id="literal"),
    pytest.param("  description: >-\n    notes\n\n    # policylint: {directive} -- folded\n", id="folded"),
    pytest.param('  description: &note !!str "# policylint: {directive} -- tagged"\n', id="with-properties"),
]


@pytest.mark.parametrize("description", VALUES)
def test_directive_inside_a_value_is_not_a_suppression(repo: Path, description: str) -> None:
    rewrite(repo, "      reservedGpus: 80\n", description.format(directive="disable-file=PL101"))
    code, findings, suppressed = check(repo)
    assert (code, [f[0] for f in findings], suppressed) == (1, ["PL101"], 0)


@pytest.mark.parametrize("description", VALUES)
def test_directive_inside_a_value_is_not_an_unused_suppression(repo: Path, description: str) -> None:
    rewrite(repo, RESERVED, description.format(directive="disable=PL101"))
    assert check(repo) == (0, [], 0)


METADATA = (
    "metadata:\n  name: prod-east\n  team: serving-platform\n  owner: serving-oncall@example.com\n" + DESCRIPTION
)


def flow_metadata(repo: Path, description: str, after: str = "") -> None:
    """Write the cluster's metadata as one flow mapping whose description is ``description``, then ``after``."""
    path = repo / CLUSTER
    text = path.read_text(encoding="utf-8")
    assert text.count(METADATA) == 1
    flow = f"metadata: {{name: prod-east, team: serving-platform, owner: serving-oncall@example.com, description: {description}}}{after}\n"
    path.write_text(text.replace(METADATA, flow), encoding="utf-8")


def test_directive_inside_a_flow_value_is_not_a_suppression(repo: Path) -> None:
    rewrite(repo, "      reservedGpus: 80\n")
    flow_metadata(repo, '"# policylint: disable-file=PL101 -- flow"')
    code, findings, suppressed = check(repo)
    assert (code, [f[0] for f in findings], suppressed) == (1, ["PL101"], 0)


def test_comment_after_a_flow_mapping_applies(repo: Path) -> None:
    rewrite(repo, "      reservedGpus: 80\n")
    flow_metadata(repo, '"# not this one"', "  # policylint: disable-file=PL101 -- after the flow mapping")
    assert check(repo) == (0, [], 1)


# -- comments the scanner does see ---------------------------------------------------------------


@pytest.mark.parametrize(
    "description",
    [
        pytest.param("  description: >  # policylint: disable-file=PL101 -- header comment\n    notes\n", id="block-header"),
        pytest.param('  description: &note !!str  # policylint: disable-file=PL101 -- between\n    "notes"\n', id="after-properties"),
        pytest.param('  description: "notes # quoted"  # policylint: disable-file=PL101 -- after a quote\n', id="after-quoted"),
        pytest.param("  description: |\n    notes\n  # policylint: disable-file=PL101 -- below a block\n", id="below-a-block"),
    ],
)
def test_comment_next_to_a_value_applies(repo: Path, description: str) -> None:
    rewrite(repo, "      reservedGpus: 80\n", description)
    assert check(repo) == (0, [], 1)


def test_a_warm_run_reads_the_same_comments(repo: Path) -> None:
    # the second run takes the cluster file from the document cache, which does not parse it again
    rewrite(
        repo,
        "      # tuned in CAP-9  # policylint: disable=PL101 -- launch buffer\n      reservedGpus: 80\n",
        '  description: "see # policylint: disable=PL022 -- quoted"\n',
    )
    assert check(repo) == (0, [], 1)
    assert check(repo) == (0, [], 1)


# -- the comment search against YAML the emitter wrote -------------------------------------------

#: Values full of what a text scan mistakes for a comment.
VALUE_TEXT = st.lists(
    st.sampled_from(["# policylint: disable=PL101 -- x", "#", " ", "  ", "policylint:", "a", "é", "\n", "\n\n", "'", '"', ":", "- "]),
    max_size=8,
).map("".join)
STYLES = st.sampled_from([None, "'", '"', "|", ">"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(VALUE_TEXT, STYLES, st.booleans()), min_size=1, max_size=6), st.booleans())
def test_comments_are_exactly_the_ones_written_between_values(entries: list[tuple[str, str | None, bool]], libyaml: bool) -> None:
    """Every value the emitter writes, in every style, holds no comment; each comment line written between them is one."""
    import yaml

    import policylint.model.load.compose as compose
    from policylint.model.load import SourceFile, parse_text, source_comments

    text, expected = "", []
    for i, (value, style, commented) in enumerate(entries):
        if commented:
            text += f"# policylint: disable=PL101 -- before k{i}\n"
            expected.append((text.count("\n"), f"# policylint: disable=PL101 -- before k{i}"))
        flow = style is None and i % 2 == 1  # every other plain entry as a flow sequence: [value, value]
        entry = yaml.safe_dump({f"k{i}": [value, value] if flow else value}, default_style=style,
                               default_flow_style=flow, allow_unicode=True, width=20)
        if entry.count("\n") == 1:  # one line: a comment can follow the value on it
            entry = entry[:-1] + f"  # policylint: disable=PL101 -- after k{i}\n"
            expected.append((text.count("\n") + 1, f"# policylint: disable=PL101 -- after k{i}"))
        text += entry
    saved = compose.LIBYAML
    try:
        compose.LIBYAML = libyaml and saved
        source = SourceFile(Path("v.yaml"), "v.yaml", text)
        parse_text(source)
    finally:
        compose.LIBYAML = saved
    assume(source.findings == [])  # PyYAML's emitter writes a few texts its parser refuses
    found = [(c.line, c.text) for c in source_comments(source)]
    assert found == expected
    # a document-cache hit (no parse in this run) finds the same
    assert [(c.line, c.text) for c in source_comments(SourceFile(Path("v.yaml"), "v.yaml", text))] == expected


def test_a_character_the_reader_refuses_never_breaks_the_comment_scan(tmp_path: Path) -> None:
    """Found by the `load` fuzz target: a NUL before any event made the pure-Python reader raise."""
    from policylint.model.load.compose import scan_scalars

    text = "\x00apiVersion: policylint/v1\nkind: Cluster  # policylint: disable=PL101 -- launch buffer\n"
    scan = scan_scalars(text)  # no exception: a scan that read nothing uses no comment
    assert list(scan.starts) == []
    repo = tmp_path / "repo"
    (repo / "clusters").mkdir(parents=True)
    (repo / "clusters" / "edge.yaml").write_text(text, encoding="utf-8")
    first = run_cli(["check", "--format", "json", str(repo)])
    second = run_cli(["check", "--format", "json", str(repo)])  # a document-cache hit scans again
    assert first == second
    assert first[0] in (1, 2) and "internal error" not in first[2]
