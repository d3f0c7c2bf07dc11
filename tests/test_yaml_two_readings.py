"""PL009: a plain value YAML 1.1 (policylint, PyYAML, kubectl) and YAML 1.2 (editors, js-yaml) read differently.

Red team round 21 (2026-12-07): ``reservedGpus: 0610`` was judged at 392 GPUs while the people
approving the plan, their editors and any YAML 1.2 tool read 610; ``check``, the hook and
``--diff`` (which saw an unchanged 392) all passed. Both parsers (libyaml and pure Python) run
every test here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import policylint.model.load.compose as compose
from conftest import EXAMPLES, git, run_cli
from policylint.model.load import SourceFile, load_file
from policylint.model.load.yaml12 import core_schema, other_reading


@pytest.fixture(autouse=True, params=["libyaml", "pure"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "libyaml" and not compose.LIBYAML:
        pytest.skip("libyaml is not installed")
    monkeypatch.setattr(compose, "LIBYAML", request.param == "libyaml")
    return str(request.param)


def _load(tmp_path: Path, text: str) -> SourceFile:
    path = tmp_path / "doc.yaml"
    path.write_text(text, encoding="utf-8")
    return load_file(path, "doc.yaml")


def _flagged(tmp_path: Path, text: str) -> list[tuple[int, int, str]]:
    return [(f.line, f.column, f.message) for f in _load(tmp_path, text).findings if f.code == "PL009"]


@pytest.mark.parametrize(("written", "ours", "theirs"), [
    ("0610", "392", "610"),
    ("-010", "-8", "-10"),
    ("1_000", "1000", "the text '1_000'"),
    ("0b101", "5", "the text '0b101'"),
    ("+0x1F", "31", "the text '+0x1F'"),
    ("1:30", "90", "the text '1:30'"),
    ("1:30.5", "90.5", "the text '1:30.5'"),
    ("1_0.5", "10.5", "the text '1_0.5'"),
    ("yes", "true", "the text 'yes'"),
    ("Off", "false", "the text 'Off'"),
])
def test_a_value_read_two_ways_is_reported_where_it_is_written(tmp_path: Path, written: str, ours: str,
                                                                theirs: str) -> None:
    [(line, column, message)] = _flagged(tmp_path, f"a: 1\nspec:\n  value: {written}\n")
    assert (line, column) == (3, 10)
    assert f"'{written}' is {ours} to policylint" in message and f"but {theirs} to YAML 1.2" in message
    [finding] = [f for f in _load(tmp_path, f"value: {written}\n").findings]
    assert finding.hint is not None and finding.hint.startswith(f"write {ours} ")


@pytest.mark.parametrize("written", ["392", "0", "007", "00", "0x1F", "-12", "+12", "2.5", "1.", ".5", "-1.5e+3",
                                     ".inf", "-.Inf", ".NaN", "true", "False", "'0610'", '"yes"', "~", "null",
                                     "0o17", "1e3", "text", "2026-12-07"])
def test_a_value_both_versions_read_alike_or_as_text_is_not_reported(tmp_path: Path, written: str) -> None:
    # 0o17 and 1e3 are text to YAML 1.1: a schema types them, and two number readings never meet there
    assert _flagged(tmp_path, f"value: {written}\n") == []


def test_an_anchored_value_is_reported_once_where_it_is_written(tmp_path: Path) -> None:
    assert [line for line, _, _ in _flagged(tmp_path, "a: &n 0610\nb: *n\nc: [*n, *n]\n")] == [1]


def test_keys_are_read_two_ways_too(tmp_path: Path) -> None:
    assert [(line, column) for line, column, _ in _flagged(tmp_path, "on: 1\n")] == [(1, 1)]


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=10**12))
def test_a_number_written_plainly_is_never_reported(number: int) -> None:
    assert other_reading(str(number), number) is None
    assert other_reading(f"-{number}", -number) is None


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="01234567", min_size=1, max_size=12))
def test_a_leading_zero_is_reported_exactly_when_octal_and_decimal_differ(digits: str) -> None:
    written = "0" + digits
    theirs = other_reading(written, int(written, 8))
    assert (theirs is None) == (int(written, 8) == int(written, 10))
    if theirs is not None:
        assert theirs == int(written, 10) == core_schema(written)


def test_the_red_team_game_fails_every_gate(tmp_path: Path) -> None:
    """examples/good with training's pool at 0610 reserved and 050 elastic, serving at 060: before PL009
    policylint read 392, 40 and 48 - the base's figures - and every gate passed."""
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    train = repo / "clusters" / "train-central.yaml"
    serve = repo / "clusters" / "prod-east.yaml"
    text = train.read_text(encoding="utf-8")
    assert "reservedGpus: 392" in text and "maxGpus: 40" in text
    train.write_text(text.replace("reservedGpus: 392", "reservedGpus: 0610").replace("maxGpus: 40", "maxGpus: 050"),
                     encoding="utf-8")
    text = serve.read_text(encoding="utf-8")
    assert "reservedGpus: 48" in text
    serve.write_text(text.replace("reservedGpus: 48", "reservedGpus: 060"), encoding="utf-8")
    code, out, _ = run_cli(["check", "--no-cache", "--format", "json", str(repo)])
    assert code == 1 and out.count('"PL009"') == 3, out
    git(repo, "add", ".")
    code, out, _ = run_cli(["check", "--no-cache", "--changed-files", str(train), str(serve)], cwd=repo)
    assert code == 1 and out.count("PL009") >= 2, out
    git(repo, "commit", "-qm", "game")
    code, out, _ = run_cli(["check", "--no-cache", "--diff", "HEAD~1", str(repo)], cwd=repo)
    assert code == 1 and "PL009" in out, out
