"""A standing suppression does not vouch for a line the change edited (the hook, ``--diff``).

Second red team, 2026-12-07 (docs/red-team.md): a reviewed ``# policylint: disable=PL101 ...
-- reason`` on ``reservedGpus: 24`` kept hiding PL101 after the value under it was raised to 29
(and the elastic GPUs cut, so the pool's total grew 26 -> 29): ``check`` and the hook passed;
only ``--diff`` said anything, as PL950. In the runs that know the change a suppression that
stood at the base no longer covers a line the change edited; a reason rewritten in the change
re-confirms it. The whole run knows no change and is unchanged.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import EXAMPLES, git, run_cli

CLUSTER = "clusters/prod-east.yaml"
REASON = "launch buffer for the Q1 catalogue re-index agreed in CAP-123"
REVIEWED = f"      reservedGpus: 24  # policylint: disable=PL101 until=2099-03-31 -- {REASON}\n"
NOTE = "since: it no longer vouches for it"


def _commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def _edit(repo: Path, old: str, new: str) -> None:
    path = repo / CLUSTER
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")


@pytest.fixture
def reviewed(tmp_path: Path) -> Path:
    """examples/good whose batch pool reserves 24 GPUs under a reviewed PL101 suppression, committed."""
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    _edit(repo, "      reservedGpus: 20\n", REVIEWED)
    _edit(repo, "        maxGpus: 6\n", "        maxGpus: 2\n")
    git(repo, "init", "-q")
    _commit(repo, "reviewed: +4 launch buffer")
    return repo


def _check(repo: Path, *args: str) -> tuple[int, list[dict[str, object]], int]:
    """(exit code, the PL101 findings, how many findings were suppressed)."""
    code, out, err = run_cli(["check", "--format", "json", *args], cwd=repo)
    assert err == "", err
    report = json.loads(out)
    return code, [f for f in report["findings"] if f["code"] == "PL101"], len(report.get("suppressed", []))


def _raise(repo: Path) -> None:
    _edit(repo, "reservedGpus: 24  #", "reservedGpus: 29  #")
    _edit(repo, "        maxGpus: 2\n", "        maxGpus: 0\n")


def test_the_suppression_holds_where_it_was_reviewed(reviewed: Path) -> None:
    code, found, suppressed = _check(reviewed)
    assert (code, found, suppressed) == (0, [], 1)


def test_a_value_raised_under_a_standing_suppression_is_reported_by_the_hook_and_diff(reviewed: Path) -> None:
    _raise(reviewed)
    git(reviewed, "add", CLUSTER)
    code, found, _ = _check(reviewed, "--changed-files", CLUSTER)
    assert code == 1 and len(found) == 1, found
    assert found[0]["line"] == 34 and "reserves 29 GPUs" in str(found[0]["message"])
    assert "the change edited this line " + NOTE in str(found[0]["message"]) and "rewrite its reason" in str(found[0]["hint"])
    _commit(reviewed, "raise the reservation")
    code, found, _ = _check(reviewed, "--diff", "HEAD~1")
    assert code == 1 and len(found) == 1 and NOTE in str(found[0]["message"]), found
    # the whole run knows no change: the suppression holds there as before
    assert _check(reviewed) == (0, [], 1)


def test_a_reason_rewritten_in_the_change_re_confirms_the_suppression(reviewed: Path) -> None:
    _raise(reviewed)
    _edit(reviewed, REASON, "launch buffer raised to 29 for the catalogue re-index (CAP-123, amended CAP-131)")
    git(reviewed, "add", CLUSTER)
    assert _check(reviewed, "--changed-files", CLUSTER) == (0, [], 1)
    _commit(reviewed, "raise the reservation, reviewed again")
    # (--diff still asks for the new evidence, PL950; the suppression of PL101 holds)
    assert _check(reviewed, "--diff", "HEAD~1")[1:] == ([], 1)


def test_an_edit_elsewhere_in_the_file_leaves_the_suppression_standing(reviewed: Path) -> None:
    """Lines inserted above move the suppressed line without editing it."""
    _edit(reviewed, "      reservedGpus: 24  #", "      # the launch buffer, see CAP-123\n      reservedGpus: 24  #")
    git(reviewed, "add", CLUSTER)
    code, found, suppressed = _check(reviewed, "--changed-files", CLUSTER)
    assert (code, found, suppressed) == (0, [], 1)


def test_a_suppression_written_in_the_change_vouches_for_its_line(tmp_path: Path) -> None:
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    git(repo, "init", "-q")
    _commit(repo, "the honest plan")
    _edit(repo, "      reservedGpus: 20\n", REVIEWED)
    _edit(repo, "        maxGpus: 6\n", "        maxGpus: 2\n")
    git(repo, "add", CLUSTER)
    code, found, suppressed = _check(repo, "--changed-files", CLUSTER)
    assert (code, found, suppressed) == (0, [], 1)


def test_edited_lines_are_the_inserted_and_replaced_ones() -> None:
    from policylint.engine.lapsed import edited_lines

    before = "a\nb\nc\nd\n"
    assert edited_lines(before, before) == set()
    assert edited_lines(before, "x\na\nb\nc\nd\n") == {1}  # inserted above: the others only moved
    assert edited_lines(before, "a\nB\nc\nd\n") == {2}
    assert edited_lines(before, "a\nc\nd\n") == set()  # a deleted line edits no line that is left
    assert edited_lines(before, "a\nb\nc\nd\ne\nf\n") == {5, 6}
    assert edited_lines(before, "a\n  # a note\n\nb\nc\nd\n") == set()  # a comment or a blank line edits nothing


ELASTIC = ("      elastic:\n        # 48 + 10",
           "      elastic:  # policylint: disable=PL102,PL109,PL201 -- Q1 launch of assistant v2, approved in CAP-4411\n"
           "        # 48 + 10")


def test_a_value_edited_under_the_key_a_suppressed_finding_is_placed_at_is_reported(tmp_path: Path) -> None:
    """Fourth red team, 2026-12-07: PL102, PL109 and PL201 are placed at ``elastic:``; a reviewed suppression there
    kept hiding ``maxGpus`` raised from 30 to 120 on a line below it (serving could run 168 GPUs against a daily
    band of 56). A finding vouches for the lines of the node it is placed at."""
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    _edit(repo, *ELASTIC)
    _edit(repo, "        maxGpus: 10\n", "        maxGpus: 30\n")
    git(repo, "init", "-q")
    _commit(repo, "a reviewed launch buffer")
    code, out, err = run_cli(["check", "--format", "json"], cwd=repo)
    assert (code, err) == (0, "") and {f["code"] for f in json.loads(out)["suppressed"]} >= {"PL102", "PL109"}
    _edit(repo, "        maxGpus: 30\n", "        maxGpus: 120\n")
    git(repo, "add", CLUSTER)
    code, out, err = run_cli(["check", "--format", "json", "--changed-files", CLUSTER], cwd=repo)
    found = {f["code"]: f["message"] for f in json.loads(out)["findings"]}
    assert code == 1 and {"PL102", "PL109"} <= set(found), found
    assert "can run 168 GPUs" in found["PL102"] and "the change edited the lines it covers " + NOTE in found["PL102"]
    # an edit of another pool of the file changes nothing the suppression accepted
    _edit(repo, "        maxGpus: 120\n", "        maxGpus: 30\n")
    _edit(repo, "        maxGpus: 6\n", "        maxGpus: 5\n")
    git(repo, "add", CLUSTER)
    code, out, _ = run_cli(["check", "--format", "json", "--changed-files", CLUSTER], cwd=repo)
    assert not [f for f in json.loads(out)["findings"] if "prod-east/serving" in f["message"]], out


def _suppressed_then_changed(repo: Path, path: str, suppression: tuple[str, str], changes: list[tuple[str, str, str]],
                             staged: list[str]) -> dict[str, str]:
    """Commit ``repo`` with ``suppression`` written in ``path``; make ``changes``; the hook's findings by code."""
    (repo / path).write_text((repo / path).read_text(encoding="utf-8").replace(*suppression), encoding="utf-8")
    git(repo, "init", "-q")
    _commit(repo, "reviewed")
    code, out, _ = run_cli(["check", "--format", "json"], cwd=repo)
    assert code == 0 and json.loads(out)["suppressed"], out
    for name, old, new in changes:
        text = (repo / name).read_text(encoding="utf-8")
        assert old in text, old
        (repo / name).write_text(text.replace(old, new), encoding="utf-8")
    git(repo, "add", *staged)
    code, out, err = run_cli(["check", "--format", "json", "--changed-files", *staged], cwd=repo)
    assert err == "", err
    return {f["code"]: f["message"] for f in json.loads(out)["findings"]}


def test_a_kueue_cohort_quota_raised_in_its_own_file_lapses_a_suppression_on_the_pool(tmp_path: Path) -> None:
    """Fourth red team, 2026-12-07: a reviewed suppression of PL102 on training's borrowingLimit, then only the Cohort's
    quota raised 32 -> 64 in cohort.yaml: training could run 184 GPUs, and the finding stayed on an unchanged line of
    an unchanged file. A pool's finding vouches for the Cohorts, flavors and queues the pool is made of."""
    repo = Path(shutil.copytree(EXAMPLES / "kueue", tmp_path / "repo"))
    found = _suppressed_then_changed(
        repo, "kueue/cluster-queues.yaml",
        ("        borrowingLimit: 24", "        borrowingLimit: 120  # policylint: disable=PL102 -- training soaks up"
         " idle cohort GPUs at night, capped by the cohort quota (CAP-5120)"),
        [("kueue/cohort.yaml", "nominalQuota: 32", "nominalQuota: 64")], ["kueue/cohort.yaml"])
    assert "PL102" in found and "can run 184 GPUs" in found["PL102"], found
    assert ("the change edited Cohort east in kueue/cohort.yaml, which pool east/training is made of " + NOTE
            in found["PL102"]), found


def test_another_field_of_the_pool_edited_lapses_a_suppression_on_it(tmp_path: Path) -> None:
    """PL102 placed at serving's ``elastic:`` compares reserved + elastic: ``reservedGpus`` raised under it (48 -> 52,
    with the PL101 headroom) changes what the suppression accepted, though the line is not in the node."""
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    _edit(repo, "        maxGpus: 10\n", "        maxGpus: 30\n")
    found = _suppressed_then_changed(repo, CLUSTER, ELASTIC, [(CLUSTER, "reservedGpus: 48", "reservedGpus: 52")],
                                     [CLUSTER])
    assert "PL102" in found and "can run 82 GPUs" in found["PL102"], found
    assert ("the change edited the pool's entry in clusters/prod-east.yaml, which pool prod-east/serving is made of "
            + NOTE in found["PL102"]), found
