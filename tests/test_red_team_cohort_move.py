"""Nominal quota moved into the Kueue Cohort, then bought back, is a raise under ``--diff`` (red-team open item 9).

The game (red team rounds 10 and 11, 2026-12-07): in ``examples/kueue``, training's nominal quota
104 -> 85 with its ``borrowingLimit`` 24 -> 43, the Cohort ``east``'s own h100 quota 32 -> 51 (or a
new parent Cohort's 19), and a proposal for 19 GPUs. PL801 sees a shortfall of 19 and PL950 compared
owned + proposed, 104 then and now, so the cluster held 19 GPUs more past all three gates. Counting
a Cohort's own quota as a pool's was refused for ``check`` (a Cohort's quota may be rented capacity,
``examples/kueue`` says its 32 are); ``--diff`` sees the move itself: quota a pool gave up in the
change while its Cohort tree gained as much is still the pool's when PL950 compares.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import committed_example, git, propose_training, replace_once, run_cli

QUEUES, COHORT = "kueue/cluster-queues.yaml", "kueue/cohort.yaml"


def _add_cohort(repo: Path, name: str, gpus: int, *, parent: str | None = None, borrowing: int | None = None) -> None:
    """A Kueue Cohort ``name`` holding ``gpus`` H100s of its own, appended to the Cohort manifest."""
    lines = ["---", "apiVersion: kueue.x-k8s.io/v1beta2", "kind: Cohort", "metadata:", f"  name: {name}", "spec:",
             *([f"  parentName: {parent}"] if parent else []),
             "  resourceGroups:", '  - coveredResources: ["nvidia.com/gpu"]', "    flavors:", "    - name: h100",
             "      resources:", '      - name: "nvidia.com/gpu"', f"        nominalQuota: {gpus}",
             *([f"        borrowingLimit: {borrowing}"] if borrowing is not None else [])]
    path = repo / COHORT
    path.write_text(path.read_text(encoding="utf-8") + "\n".join(lines) + "\n", encoding="utf-8")


def _training(repo: Path, nominal: int, borrowing: int) -> None:
    text = (repo / QUEUES).read_text(encoding="utf-8")
    head, mark, rest = text.partition("  name: training\n")
    rest = rest.replace("        nominalQuota: 104\n", f"        nominalQuota: {nominal}\n", 1)
    rest = rest.replace("        borrowingLimit: 24\n", f"        borrowingLimit: {borrowing}\n", 1)
    (repo / QUEUES).write_text(head + mark + rest, encoding="utf-8")


def _cohort_h100(repo: Path, gpus: int) -> None:
    replace_once(repo / COHORT, "        nominalQuota: 32\n", f"        nominalQuota: {gpus}\n")


def _propose(repo: Path, gpus: int) -> None:
    propose_training(repo, gpus)


def _diff(repo: Path) -> tuple[int, list[dict[str, object]]]:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "change")
    code, out, err = run_cli(["check", "--format", "json", "--diff", "HEAD~1", "."], cwd=repo)
    assert "Traceback" not in err, err
    return code, json.loads(out)["findings"]


def _pl950(found: list[dict[str, object]]) -> list[str]:
    return [str(f["message"]) for f in found if f["code"] == "PL950"]


def test_quota_moved_into_the_cohort_and_bought_back_is_a_raise(tmp_path: Path) -> None:
    repo = committed_example(tmp_path, "kueue")
    _training(repo, 85, 43)
    _cohort_h100(repo, 51)
    _propose(repo, 19)
    code, found = _diff(repo)
    messages = _pl950(found)
    assert code == 1 and len(messages) == 1, found
    # every figure of the verdict: 85 owned + 19 moved + 19 proposed = 123, against 104 then
    assert "19 of its nominal quota moved into Kueue Cohort quota in this change (it borrows from east" in messages[0], messages[0]
    assert "123 in all, up from 104 at the base revision" in messages[0], messages[0]


def test_quota_moved_into_a_new_parent_cohort_and_bought_back_is_a_raise(tmp_path: Path) -> None:
    repo = committed_example(tmp_path, "kueue")
    _training(repo, 85, 43)
    text = (repo / COHORT).read_text(encoding="utf-8")
    assert text.count("spec:\n") == 1
    text = text.replace("spec:\n", "spec:\n  parentName: org\n")
    (repo / COHORT).write_text(text, encoding="utf-8")
    _add_cohort(repo, "org", 19)
    _propose(repo, 19)
    code, found = _diff(repo)
    messages = _pl950(found)
    assert code == 1 and len(messages) == 1, found
    assert "19 of its nominal quota moved into Kueue Cohort quota" in messages[0], messages[0]


def test_quota_moved_into_the_cohort_without_a_purchase_passes(tmp_path: Path) -> None:
    """Sharing part of a pool's quota with the cohort, buying nothing: the cluster holds what it held."""
    repo = committed_example(tmp_path, "kueue")
    _training(repo, 85, 43)
    _cohort_h100(repo, 51)
    _, found = _diff(repo)
    assert _pl950(found) == [], found


def test_cohort_quota_grown_alone_is_no_move(tmp_path: Path) -> None:
    """More rented capacity in the Cohort with every queue's quota kept: nothing left a pool."""
    repo = committed_example(tmp_path, "kueue")
    _cohort_h100(repo, 40)
    _training(repo, 104, 32)
    _, found = _diff(repo)
    assert _pl950(found) == [], found


def test_a_purchase_beside_an_unrelated_cohort_change_is_judged_as_before(tmp_path: Path) -> None:
    """Training's quota kept, a 10-GPU proposal, the Cohort grown: PL950 counts 104 + 10, not the Cohort's GPUs."""
    repo = committed_example(tmp_path, "kueue")
    _cohort_h100(repo, 40)
    _propose(repo, 10)
    _, found = _diff(repo)
    messages = _pl950(found)
    assert len(messages) == 1 and "moved into" not in messages[0], found
    assert "114 in all, up from 104" in messages[0], messages[0]


def _rename(repo: Path, old: str, new: str, files: tuple[str, ...]) -> None:
    for name in files:
        path = repo / name
        path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")


def test_the_move_with_the_cohort_or_the_flavor_renamed_is_still_a_move(tmp_path: Path) -> None:
    """Red team round 12: the Cohort renamed east -> east2, or the flavor h100 -> h100-sxm, in the same change."""
    for old, new in (("east", "east2"), ("h100", "h100-sxm")):
        repo = committed_example(tmp_path / new, "kueue")
        _training(repo, 85, 43)
        _cohort_h100(repo, 51)
        _propose(repo, 19)
        _rename(repo, f" {old}\n", f" {new}\n", ("kueue/cohort.yaml", "kueue/cluster-queues.yaml",
                                                  "kueue/flavors.yaml", "proposals/training.yaml"))
        code, found = _diff(repo)
        messages = _pl950(found)
        assert code == 1 and len(messages) == 1, (new, found)
        assert "19 of its nominal quota moved into Kueue Cohort quota" in messages[0], messages[0]


def test_the_pool_moved_to_a_new_cohort_holding_the_quota_is_still_a_move(tmp_path: Path) -> None:
    """Red team round 12: training moved to a new Cohort west of 43 H100s, east's own 32 cut to 8, 19 proposed."""
    repo = committed_example(tmp_path, "kueue")
    _training(repo, 85, 43)
    _cohort_h100(repo, 8)
    text = (repo / QUEUES).read_text(encoding="utf-8")
    head, mark, rest = text.partition("  name: training\n")
    (repo / QUEUES).write_text(head + mark + rest.replace("cohortName: east\n", "cohortName: west\n", 1), encoding="utf-8")
    _add_cohort(repo, "west", 43)
    _propose(repo, 19)
    _rename(repo, "cluster: east\n", "cluster: west\n", ("proposals/training.yaml",))
    code, found = _diff(repo)
    messages = _pl950(found)
    assert code == 1 and len(messages) == 1, found
    assert "pool west/training" in messages[0] and "(it borrows from west;" in messages[0], messages[0]


def test_cohort_growth_another_queue_borrows_is_not_a_move(tmp_path: Path) -> None:
    """Red team round 13 (a false positive): batch's borrowingLimit 8 -> 18 with the Cohort's own H100s 32 -> 42 for
    its grown daily band, while training gives back 8 leased GPUs (104 -> 96) and proposes 8: training owns and
    proposes 104, as at the base. The Cohort's growth is what batch borrows, not training's quota moved."""
    repo = committed_example(tmp_path, "kueue")
    _cohort_h100(repo, 42)
    replace_once(repo / QUEUES, "        borrowingLimit: 8\n", "        borrowingLimit: 18\n")
    _training(repo, 96, 24)
    _propose(repo, 8)
    _, found = _diff(repo)
    assert [m for m in _pl950(found) if "training" in m] == [], found


def test_a_borrowing_claim_a_cohort_above_caps_claims_nothing(tmp_path: Path) -> None:
    """Red team round 14: the closed game, with batch moved under a child Cohort evalc that may borrow only 8 and batch's
    own borrowingLimit raised 8 -> 27 to claim the Cohort's growth: batch can still borrow only 8, so its claim is 0."""
    repo = committed_example(tmp_path, "kueue")
    _training(repo, 85, 43)
    _cohort_h100(repo, 51)
    _propose(repo, 19)
    text = (repo / QUEUES).read_text(encoding="utf-8")
    head, mark, rest = text.partition("  name: batch\n")
    rest = rest.replace("cohortName: east\n", "cohortName: evalc\n", 1).replace("borrowingLimit: 8\n", "borrowingLimit: 27\n", 1)
    (repo / QUEUES).write_text(head + mark + rest, encoding="utf-8")
    _add_cohort(repo, "evalc", 0, parent="east", borrowing=8)
    code, found = _diff(repo)
    messages = [m for m in _pl950(found) if "east/training" in m]
    assert code == 1 and len(messages) == 1, found
    assert "19 of its nominal quota moved into Kueue Cohort quota" in messages[0], messages[0]
