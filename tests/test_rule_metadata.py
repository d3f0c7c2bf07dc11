"""Rule metadata lives in the rule files only, and the code keeps to what they declare.

The rule files name every built-in code, declare each fix (``fix:``) and the
message variables of each check function (``provides:``);
:mod:`policylint.catalogue` reads them for the steps below the engine. Here:
the check registry and the declarations name the same functions, each check
returns exactly the variables declared for it (run on its rule's fixtures), a
rule file cannot claim other variables, and the steps below the engine read
the metadata without reaching up into it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import REPO, run_cli
from fixture_helpers import FIXTURES, RULESET, run_fixture
from import_graph import read_package

import policylint
from policylint.catalogue import check_variables
from policylint.engine.checks import CHECKS
from policylint.engine.evaluate import evaluate
from policylint.resources import rules_dir

#: Keys of a problem that place or measure a finding, not message variables.
PLACING = {"_at", "_figures"}
CHECK_RULES = sorted(code for code, rule in RULESET.rules.items() if rule.check)


def _raw_rules() -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    for path in sorted(rules_dir().glob("*.y*ml")):
        rules += yaml.safe_load(path.read_text(encoding="utf-8"))["rules"]
    return rules


def test_every_registered_check_is_declared_and_every_declared_one_registered() -> None:
    assert sorted(check_variables()) == sorted(CHECKS)


def test_every_bundled_rule_naming_a_check_declares_what_it_provides() -> None:
    missing = [r["code"] for r in _raw_rules() if r.get("check") and "provides" not in r]
    assert missing == []


@pytest.mark.parametrize("code", CHECK_RULES)
def test_a_check_returns_exactly_the_variables_its_rule_declares(code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rule = RULESET.rules[code]
    assert rule.check is not None
    original = CHECKS[rule.check]
    returned: list[set[str]] = []

    def spy(facts: Mapping[str, Any], params: Mapping[str, Any]) -> list[dict[str, Any]]:
        problems = original(facts, params)
        returned.extend(set(p) - PLACING for p in problems)
        return problems

    results = [run_fixture(FIXTURES / code / kind) for kind in ("fail", "pass")]
    monkeypatch.setitem(CHECKS, rule.check, spy)
    for result in results:
        evaluate([rule], result.views, RULESET.params)
    assert returned, f"{rule.check} returned no problem on {code}'s fixtures"
    declared = check_variables()[rule.check]
    assert [sorted(r - declared) for r in returned if r - declared] == []
    assert set().union(*returned) == declared


def _rule_file(tmp_path: Path, provides: str) -> Path:
    """PL108's entry as a team's own rule (another code and name) naming the bundled check."""
    raw = (REPO / "rules" / "bands.yaml").read_text(encoding="utf-8")
    entry = "  - code: PL108" + raw.split("\n  - code: PL108")[1].split("\n  - code: ")[0]
    entry = entry.replace("code: PL108", "code: XY108").replace("name: declared-bands-drift", "name: my-drift")
    entry = entry.replace("    provides: [band, declared, computed, drift]\n", provides)
    (tmp_path / "mine.yaml").write_text("rules:\n" + entry + "\n", encoding="utf-8")
    return tmp_path


def test_a_rule_naming_a_bundled_check_takes_its_declared_variables(tmp_path: Path) -> None:
    folder = _rule_file(tmp_path, "")
    code, out, err = run_cli(["rules", "--rule-dir", str(folder)])
    assert code == 0, err
    assert "XY108" in out


def test_a_rule_may_not_claim_other_variables_of_a_check(tmp_path: Path) -> None:
    folder = _rule_file(tmp_path, "    provides: [band, declared]\n")
    code, _, err = run_cli(["rules", "--rule-dir", str(folder)])
    assert code == 2
    assert "rules[XY108].provides" in err
    assert "check function 'declared_bands_drift' provides band, computed, declared, drift" in err


def test_provides_needs_a_check(tmp_path: Path) -> None:
    folder = _rule_file(tmp_path, "    provides: [band, declared, computed, drift]\n")
    text = (folder / "mine.yaml").read_text(encoding="utf-8").replace("    check: declared_bands_drift\n", "")
    (folder / "mine.yaml").write_text(text, encoding="utf-8")
    code, _, err = run_cli(["rules", "--rule-dir", str(folder)])
    assert code == 2 and "rules[XY108]" in err and "'check' is a dependency of 'provides'" in err


def test_the_steps_below_the_engine_read_rule_metadata_without_the_engine() -> None:
    """The catalogue sits low (errors, finding, resources); loader, measurements and fixes do not reach into the rules."""
    package = read_package(Path(policylint.__file__).parent, "policylint")
    own = set(package.files)
    reads = {imp.target for imp in package.imports if imp.source == "policylint.catalogue" and imp.target in own}
    assert reads <= {"policylint.errors", "policylint.finding", "policylint.resources", "policylint.safeio"}
    cut = [
        imp.describe()
        for imp in package.imports
        # measure/__init__.py still names engine.scope for a type: its split is another change
        if (imp.source.startswith(("policylint.model", "policylint.measure.")) and imp.target.startswith("policylint.engine"))
        or (imp.source == "policylint.engine.ruleset" and imp.target.startswith("policylint.edit"))
    ]
    assert cut == []


def test_fixes_are_chosen_by_their_declaration_never_by_a_code_written_in_the_code() -> None:
    """What a fix rewrites, its order and which way it may move the number come from ``fix:`` alone.

    No module of ``edit/`` that plans or makes a fix compares a finding's code with a
    literal code: a rule file that declares the same fix gets the same behaviour (codes
    may appear in docstrings). ``scalars.py`` is not a fix: it reads the loader's own
    duplicate-key finding (PL002, a built-in code) to refuse editing such a key.
    """
    import ast
    import re

    code_like = re.compile(r"PL\d{3}")
    found = []
    edit = Path(policylint.__file__).parent / "edit"
    for path in sorted(p for p in edit.glob("*.py") if p.name != "scalars.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                for side in (node.left, *node.comparators):
                    if isinstance(side, ast.Constant) and isinstance(side.value, str) and code_like.fullmatch(side.value):
                        found.append(f"{path.name}:{node.lineno}: {side.value}")
    assert found == []


def test_a_raising_fix_is_declared_so_in_its_rule_file() -> None:
    """PL104 reports too little reserved: its fix may only raise the reservation, and says so in its rule file."""
    from policylint.catalogue import fixes

    declared = fixes()
    assert declared["PL104"].direction == "raise"
    assert {code for code, d in declared.items() if d.direction == "raise"} == {"PL104"}
    assert declared["PL101"].direction == "set"
    raw = {rule["code"]: rule for rule in _raw_rules()}
    assert raw["PL104"]["fix"]["direction"] == "raise"
    assert "direction" not in raw["PL101"]["fix"]
