"""A setup error points at the line and column of its key, as a finding points at its document.

The key is found in the file the error names (:mod:`policylint.model.config_locate`);
a key the file does not hold, a TOML file, or a file that is not YAML leave the message
as it was - the position is a courtesy, never a second error.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policylint.errors import PolicylintError
from policylint.model.config_locate import locate, place

CONFIG = """\
now: "2026-12-01"
rules:
  PL101:
    head-room: 1
per-file-ignores:
  "clusters/*.yaml": [PLX]
exclude:
  - a
  - 3
"""

RULES = """\
rules:
  - code: ACME001
    require:
      reserved_gpus: {max_over: {field: baseline_gpu}}
  - code: ACME002
    require: {}
"""


@pytest.mark.parametrize(
    ("key", "where"),
    [
        ("now", (1, 1)),
        ("rules.PL101", (3, 3)),
        ("rules.PL101.head-room", (4, 5)),
        ("per-file-ignores.clusters/*.yaml", (6, 3)),  # a key holding dots is one key
        ("exclude.1", (9, 5)),  # a list item by its position
        ("exclude[1]", (9, 5)),
        ("rules.PL101.nope", (3, 3)),  # as far as the file holds the key
        ("nowhere", None),
    ],
)
def test_keys_of_a_configuration_are_found(tmp_path: Path, key: str, where: tuple[int, int] | None) -> None:
    path = tmp_path / ".policylint.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    assert locate(str(path), key) == where


def test_a_rule_is_found_by_its_code_in_a_rule_file(tmp_path: Path) -> None:
    path = tmp_path / "acme.yaml"
    path.write_text(RULES, encoding="utf-8")
    assert locate(str(path), "rules[ACME001].require.reserved_gpus.max_over.field") == (4, 34)
    assert locate(str(path), "rules[ACME002].require") == (6, 5)


def test_the_message_gains_the_position_and_nothing_else(tmp_path: Path) -> None:
    path = tmp_path / ".policylint.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    exc = PolicylintError("must be >= 0, got -1", source=str(path), key="rules.PL101.head-room")
    place(exc)
    assert str(exc) == f"{path}:4:5 at key 'rules.PL101.head-room': must be >= 0, got -1"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("pyproject.toml", "[tool.policylint]\nfail-on = 'never'\n"),
        ("broken.yaml", "rules: [unclosed\n"),
        ("empty.yaml", ""),
    ],
)
def test_a_file_that_cannot_be_searched_leaves_the_message_as_it_was(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    exc = PolicylintError("bad", source=str(path), key="fail-on")
    place(exc)
    assert str(exc) == f"{path} at key 'fail-on': bad"
    gone = PolicylintError("bad", source=str(tmp_path / "missing.yaml"), key="fail-on")
    place(gone)
    assert str(gone) == f"{tmp_path / 'missing.yaml'} at key 'fail-on': bad"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200), st.text(max_size=60))
def test_any_file_and_any_key_give_a_position_or_none(text: str, key: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "c.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        exc = PolicylintError("bad", source=str(path), key=key or "k")
        place(exc)  # never raises
        assert (exc.line is None) == (exc.column is None)
        if exc.line is not None:
            assert exc.line >= 1 and exc.column >= 1


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("fial-on: error\n", "unknown key (allowed: "),
        ("ignore: [PL1O7]\n", "'PL1O7' matches no rule; did you mean 'PL107'?"),
        ("ignore: [measurment-stale]\n", "'measurment-stale' matches no rule; did you mean 'measurement-stale'?"),
        ("select: [PLX]\n", "'PLX' matches no rule"),
    ],
    ids=["key", "letter-o", "name", "nothing-close"],
)
def test_a_typo_in_the_configuration_gets_a_suggestion(tmp_path: Path, text: str, said: str) -> None:
    """Newcomer trial: a misspelt key or rule named the file and key, but not what was meant."""
    from conftest import copy_minirepo, run_cli

    repo = copy_minirepo(tmp_path / "repo")
    (repo / ".policylint.yaml").write_text(text, encoding="utf-8")
    code, out, err = run_cli(["check"], cwd=repo)
    assert (code, out) == (2, "") and said in err and err.count("\n") == 1
    if "fial-on" in text:
        assert err.endswith("; did you mean 'fail-on'?\n")
    if "PLX" in text:
        assert "did you mean" not in err


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("fail-on: true\n", ".policylint.yaml:1:1 at key 'fail-on': must be one of error, warning, info, got true\n"),
        ("exclude: null\n", ".policylint.yaml:1:1 at key 'exclude': must be a list, got null (an empty value)\n"),
        (
            'rules: {PL101: {headroom: "0.2"}}\n',
            ".policylint.yaml:1:17 at key 'rules.PL101.headroom': must be of type number,"
            " got the text '0.2' (quoted: write 0.2 without quotes for a number)\n",
        ),
        (
            'limits: {max-file-bytes: " 1000"}\n',
            ".policylint.yaml:1:10 at key 'limits.max-file-bytes': must be a whole number,"
            " got the text ' 1000' (quoted: write 1000 without quotes for a number)\n",
        ),
        ("rules: {PL101: {headroom: high}}\n", "must be of type number, got 'high'\n"),
    ],
    ids=["yaml-true", "yaml-null", "quoted-number", "quoted-integer", "plain-text"],
)
def test_a_wrong_value_is_shown_as_it_is_written(tmp_path: Path, text: str, said: str) -> None:
    """Newcomer trial: 'got True' is Python's spelling, and a quoted number was called a string
    without saying the quotes made it one; the file is named as findings name files."""
    from conftest import copy_minirepo, run_cli

    repo = copy_minirepo(tmp_path / "repo")
    (repo / ".policylint.yaml").write_text(text, encoding="utf-8")
    code, out, err = run_cli(["check"], cwd=repo)
    assert (code, out) == (2, "") and err.endswith(said) and err.count("\n") == 1
    assert err.startswith("policylint: error: .policylint.yaml:")
    # from elsewhere the path is relative to the working folder, or absolute outside it
    code, _, err = run_cli(["check", "repo"], cwd=tmp_path)
    assert code == 2 and err.startswith("policylint: error: repo/.policylint.yaml:")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    code, _, err = run_cli(["check", str(repo)], cwd=outside)
    assert code == 2 and err.startswith(f"policylint: error: {repo}/.policylint.yaml:")
