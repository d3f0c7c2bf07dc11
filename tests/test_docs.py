"""Generated documentation stays in sync with the rules."""

from __future__ import annotations

from conftest import REPO, run_cli


def test_rule_reference_is_up_to_date() -> None:
    code, out, err = run_cli(["rules", "--format", "markdown"])
    assert (code, err) == (0, "")
    committed = (REPO / "docs" / "rules.md").read_text(encoding="utf-8")
    assert out == committed, "docs/rules.md is stale: run `policylint rules --format markdown > docs/rules.md`"


def test_rule_reference_has_every_rule_and_section() -> None:
    _, out, _ = run_cli(["rules", "--format", "markdown"])
    _, listing, _ = run_cli(["rules", "--format", "json"])
    import json

    for rule in json.loads(listing):
        assert f"\n## {rule['code']} {rule['name']}\n" in out
    assert out.count("### What it does") == out.count("\n## PL")
