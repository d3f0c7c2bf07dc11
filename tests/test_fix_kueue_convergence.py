"""``check --fix --unsafe-fixes`` converges on Kueue ClusterQueues of a cohort that holds GPUs of its own.

A Kueue ``borrowingLimit`` limits borrowing the cohort's GPUs, not GPUs the pool owns: lowering
it saves no hardware, and below what the other queues leave of the cohort's own quota it strands
those GPUs (PL976). The fixes and their notes keep it there, and say which numbers to write when
the capacity must come from the ``lendingLimit`` instead (red team, round 10: a PL104 fix that
introduced PL976; a PL102 note whose numbers left PL102 in place).

Each case is examples/kueue (the cohort ``east`` holds 32 h100 GPUs; ``batch`` may borrow 8 of
them, so ``training``'s borrowingLimit of 24 is what keeps all 32 reachable) with the training
flavor edited.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from conftest import EXAMPLES, propose_training, replace_once, run_cli

QUEUES = Path("kueue") / "cluster-queues.yaml"
TRAINING = "pool east/training"
NOTE = re.compile(r"PL102: no fix \(.*?write nominalQuota: (\d+), lendingLimit: (\d+), borrowingLimit: (\d+)")


def _repo(tmp_path: Path, *edits: tuple[str, str, str]) -> Path:
    root = Path(shutil.copytree(EXAMPLES / "kueue", tmp_path / "kueue"))
    for file, old, new in edits:
        replace_once(root / file, old, new)
    return root


def _findings(root: Path) -> set[tuple[str, str]]:
    code, out, err = run_cli(["check", "--format", "json"], cwd=root)
    assert code in (0, 1), err
    return {(str(f["code"]), str(f["subject"])) for f in json.loads(out)["findings"]}


def _fix(root: Path) -> str:
    code, _, err = run_cli(["check", "--fix", "--unsafe-fixes"], cwd=root)
    assert code in (0, 1), err
    return err


def _training(root: Path) -> str:
    """The training ClusterQueue's h100 resource block as written."""
    text = (root / QUEUES).read_text(encoding="utf-8")
    start = text.index("name: training")
    return text[start : text.index("---", start)]


def _codes(found: set[tuple[str, str]]) -> set[str]:
    return {code for code, _ in found}


def test_pl104_fix_keeps_the_cohort_quota_reachable(tmp_path: Path) -> None:
    """nominalQuota 90 below the 104-GPU baseline: the fix raises it and leaves borrowingLimit 24 (it lowered it to 10:
    batch's 8 and training's 10 left 14 of the cohort's 32 GPUs unreachable, PL976 on both queues)."""
    root = _repo(tmp_path, (str(QUEUES), "nominalQuota: 104", "nominalQuota: 90"))
    before = _findings(root)
    assert ("PL104", TRAINING) in before and "PL976" not in _codes(before)
    err = _fix(root)
    after = _findings(root)
    assert ("PL104", TRAINING) not in after, err
    assert "PL976" not in _codes(after), err
    assert _codes(after) <= _codes(before), err
    block = _training(root)
    assert "nominalQuota: 104" in block and "borrowingLimit: 24" in block, block


def test_pl104_fix_refused_when_the_cohort_quota_would_push_capacity_above_the_band(tmp_path: Path) -> None:
    """A cohort holding 60 h100 GPUs, 52 of them reachable only through training's borrowingLimit of 52: raising the
    reservation to the 104-GPU baseline and keeping capacity (142) would need a borrowingLimit of 38, stranding 14 of
    them (PL976); keeping 52 would make capacity 156, above the daily band plus headroom (PL102). No fix, and a note."""
    root = _repo(
        tmp_path,
        (str(QUEUES), "nominalQuota: 104", "nominalQuota: 90"),
        (str(QUEUES), "borrowingLimit: 24", "borrowingLimit: 52"),
        ("kueue/cohort.yaml", "nominalQuota: 32", "nominalQuota: 60"),
    )
    before = _findings(root)
    assert ("PL104", TRAINING) in before and "PL976" not in _codes(before)
    written = (root / QUEUES).read_text(encoding="utf-8")
    err = _fix(root)
    after = _findings(root)
    assert "PL976" not in _codes(after), err
    assert _codes(after) <= _codes(before), err
    assert "PL104: no fix" in err and "borrowingLimit" in err, err
    assert (root / QUEUES).read_text(encoding="utf-8") == written


def test_pl102_fix_lowers_the_lending_limit_not_the_borrowing_limit(tmp_path: Path) -> None:
    """nominalQuota 130 with lendingLimit 19 and borrowingLimit 24: 154 GPUs against a 128-GPU daily band. The note
    said to lower the lendingLimit to 17 and the nominalQuota with it (152 GPUs: still PL102); lowering the
    borrowingLimit strands cohort GPUs (PL976). The fix keeps the 111 reserved GPUs and the borrowingLimit and
    lends nothing: nominalQuota 111, lendingLimit 0, 135 GPUs."""
    root = _repo(tmp_path, (str(QUEUES), "nominalQuota: 104\n", "nominalQuota: 130\n        lendingLimit: 19\n"))
    before = _findings(root)
    assert ("PL102", TRAINING) in before and "PL976" not in _codes(before)
    err = _fix(root)
    after = _findings(root)
    assert ("PL102", TRAINING) not in after, err
    assert "PL976" not in _codes(after), err
    assert _codes(after) <= _codes(before), err
    block = _training(root)
    assert "nominalQuota: 111" in block and "lendingLimit: 0" in block and "borrowingLimit: 24" in block, block


def test_pl102_note_numbers_clear_pl102(tmp_path: Path) -> None:
    """When the lending cut is left to the user (batch borrows without a limit, so cutting what training lends would
    shrink batch too), the note names every number to write; written, they clear PL102 without PL976."""
    root = _repo(
        tmp_path,
        (str(QUEUES), "nominalQuota: 104\n", "nominalQuota: 130\n        lendingLimit: 19\n"),
        (str(QUEUES), "        # daily band 24 - baseline 16 = 8 GPUs borrowed in the cohort\n        borrowingLimit: 8\n", ""),
    )
    before = _findings(root)
    assert ("PL102", TRAINING) in before and "PL976" not in _codes(before)
    err = _fix(root)
    match = NOTE.search(err)
    assert match is not None, err
    nominal, lending, borrowing = match.groups()
    text = (root / QUEUES).read_text(encoding="utf-8")
    block = _training(root)
    edited = re.sub(r"nominalQuota: \d+", f"nominalQuota: {nominal}", block)
    edited = re.sub(r"lendingLimit: \d+", f"lendingLimit: {lending}", edited)
    edited = re.sub(r"borrowingLimit: \d+", f"borrowingLimit: {borrowing}", edited)
    (root / QUEUES).write_text(text.replace(block, edited), encoding="utf-8")
    after = _findings(root)
    assert ("PL102", TRAINING) not in after, (err, edited)
    assert "PL976" not in _codes(after), (err, edited)


def test_no_fix_gives_up_owned_quota_for_a_proposal(tmp_path: Path) -> None:
    """Red team round 13: training owns 120 (lendingLimit 30, borrowingLimit 40, the cohort's own 48) against a
    104-GPU baseline, and a proposal asks for 10 that PL801 refuses (shortfall 0). The PL102 fix counted the proposal
    as held and cut the quota to 94 (lending 4), so the 10 became a shortfall: 26 owned GPUs given up, 10 bought.
    The fix keeps what the baseline needs of the lent quota (nominalQuota 104 or more), and PL801 stays."""
    root = _repo(
        tmp_path,
        (str(QUEUES), "nominalQuota: 104\n", "nominalQuota: 120\n        lendingLimit: 30\n"),
        (str(QUEUES), "borrowingLimit: 24", "borrowingLimit: 40"),
        ("kueue/cohort.yaml", "nominalQuota: 32", "nominalQuota: 48"),
    )
    propose_training(root, 10)
    before = _findings(root)
    assert {("PL102", TRAINING), ("PL801", "proposal training-2027")} <= before, before
    for options in (["check", "--fix"], ["check", "--fix", "--unsafe-fixes"]):
        code, _, err = run_cli(options, cwd=root)
        assert code in (0, 1), err
        block = _training(root)
        nominal = int(re.search(r"nominalQuota: (\d+)", block).group(1))  # type: ignore[union-attr]
        assert nominal >= 104, (options, err, block)  # the baseline is held by what the pool owns
    after = _findings(root)
    assert ("PL801", "proposal training-2027") in after, after  # the needless proposal is still reported
    assert _codes(after) <= _codes(before), after
