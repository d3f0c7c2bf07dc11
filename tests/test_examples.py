"""The example repositories: the good one is clean, the bad one trips every rule.

Both run through the real entry point from the repository root, with the
``now`` pinned in their own ``.policylint.yaml``. Every line of ``examples/bad``
where a rule must report carries ``# expect: CODE[, CODE] -- why``; the findings
must match those marks exactly, so the comments cannot drift from the linter.
"""

from __future__ import annotations

import json
import re

from conftest import EXAMPLES, REPO, run_cli
from fixture_helpers import all_marks

from policylint.resources import rules_dir
from policylint.engine.ruleset import load_rules

def _check_json(folder: str) -> tuple[int, set[tuple[str, int, str]]]:
    code, out, err = run_cli(["check", folder, "--format", "json"], cwd=REPO)
    assert err == ""
    found = {(f["file"], f["line"], f["code"]) for f in json.loads(out)["findings"]}
    return code, found


def test_good_example_is_clean() -> None:
    code, out, err = run_cli(["check", "examples/good"], cwd=REPO)
    assert (code, err) == (0, ""), out
    assert out.startswith("All checks passed")


def test_bad_example_trips_every_rule_at_its_marks() -> None:
    code, found = _check_json("examples/bad")
    assert code == 1
    # Capacity-plan rules (PL1xx-PL8xx); scheduler-manifest rules have their own fixtures.
    wanted = {
        c for c, rule in load_rules([rules_dir()]).rules.items() if not rule.builtin and re.match(r"PL[1-8]", c)
    }
    assert sorted(wanted - {c for _, _, c in found}) == []
    assert found == all_marks(EXAMPLES / "bad", REPO)


def test_bad_scheduler_example_trips_every_scheduler_rule_at_its_marks() -> None:
    code, found = _check_json("examples/kueue-bad")
    assert code == 1
    wanted = {c for c in load_rules([rules_dir()]).rules if re.match(r"PL90\d$", c)}
    assert sorted(wanted - {c for _, _, c in found}) == []
    assert found == all_marks(EXAMPLES / "kueue-bad", REPO)
