"""Quota a Kueue ClusterQueue lends to its cohort is not a shortfall to buy (fourth red team, 2026-12-07).

The game, open until now: ``lendingLimit: 19`` added to the training ClusterQueue of
``examples/kueue`` (104 GPUs of nominal quota, ``reclaimWithinCohort: Any``) and a new proposal
for 19 GPUs. PL104 and PL801 read the pool's reserved GPUs as ``nominalQuota - lendingLimit``
(85), so the proposal "closed" a gap the pool does not have: ``check`` and the hook passed with
19 GPUs bought. Now a purchase is measured against the GPUs the pool owns (its whole nominal
quota), and the baseline is held by the quota a ClusterQueue takes back by preemption.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from conftest import EXAMPLES, run_cli

QUEUES = "kueue/cluster-queues.yaml"
PROPOSAL = """apiVersion: policylint/v1
kind: Proposal
metadata:
  name: 2027-training
  team: research
  owner: research@example.com
spec:
  cluster: east
  date: "2026-11-20"
  requests:
    - pool: training
      gpus: {gpus}
      gpuModel: H100-SXM-80GB
  workloads: [fine-tuning]
  justification: >-
    The training queue guarantees 85 GPUs while fine-tuning's baseline band is 104 GPUs.
"""


def _lending(tmp_path: Path, *, reclaim: str = "Any", proposal: int | None = 19) -> Path:
    """``examples/kueue`` with training lending 19 of its 104 GPUs, reclaiming as ``reclaim`` says."""
    repo = Path(shutil.copytree(EXAMPLES / "kueue", tmp_path / "repo"))
    path = repo / QUEUES
    text = path.read_text(encoding="utf-8")
    assert text.count("        nominalQuota: 104\n") == 1
    text = text.replace("        nominalQuota: 104\n", "        nominalQuota: 104\n        lendingLimit: 19\n")
    # the training ClusterQueue's own preemption block (the second of three)
    head, training, rest = text.partition("  name: training\n")
    assert training and rest.count("reclaimWithinCohort: Any") >= 1
    rest = rest.replace("reclaimWithinCohort: Any", f"reclaimWithinCohort: {reclaim}", 1)
    path.write_text(head + training + rest, encoding="utf-8")
    if proposal is not None:
        (repo / "proposals").mkdir()
        (repo / "proposals" / "training.yaml").write_text(PROPOSAL.format(gpus=proposal), encoding="utf-8")
    return repo


def _findings(repo: Path, *extra: str) -> tuple[int, list[dict[str, object]]]:
    code, out, err = run_cli(["check", "--format", "json", *extra, "."], cwd=repo)
    assert err == "", err
    return code, json.loads(out)["findings"]


def test_a_proposal_for_the_lent_quota_fails_the_check_and_the_hook(tmp_path: Path) -> None:
    repo = _lending(tmp_path)
    for extra in ((), ("--changed-files", "proposals/training.yaml"), ("--changed-files", QUEUES)):
        code, found = _findings(repo, *extra)
        shortfall = [f for f in found if f["code"] == "PL801"]
        assert code == 1 and len(shortfall) == 1, (extra, found)
        message = str(shortfall[0]["message"])
        # every figure of the verdict in its message: 104 - 104 (85 + 19) = 0, allowed 0
        assert "pooled baseline 104" in message and "owned 104 (reserved 85 + 19 of nominal quota" in message, message
        assert "= shortfall 0; allowed 0" in message, message
        assert not [f for f in found if f["code"] == "PL104"], found


def test_what_the_pool_does_not_own_may_still_be_bought(tmp_path: Path) -> None:
    repo = _lending(tmp_path, proposal=19)
    path = repo / QUEUES
    text = path.read_text(encoding="utf-8")
    # 90 GPUs of quota, 19 of them lendable: 14 short of the baseline of 104, 17 allowed with the headroom
    path.write_text(text.replace("nominalQuota: 104\n        lendingLimit: 19", "nominalQuota: 90\n        lendingLimit: 19"),
                    encoding="utf-8")
    _, found = _findings(repo)
    shortfall = [f for f in found if f["code"] == "PL801"]
    assert len(shortfall) == 1 and "owned 90 (reserved 71 + 19" in str(shortfall[0]["message"]), found
    assert "= shortfall 14; allowed 17" in str(shortfall[0]["message"])
    (repo / "proposals" / "training.yaml").write_text(PROPOSAL.format(gpus=14), encoding="utf-8")
    _, found = _findings(repo)
    assert not [f for f in found if f["code"] in ("PL801", "PL104")], found


def test_a_queue_that_takes_lent_quota_back_holds_its_baseline(tmp_path: Path) -> None:
    assert _findings(_lending(tmp_path, proposal=None)) == (0, [])


def test_a_queue_that_never_takes_it_back_is_told_to_lend_less_not_to_buy(tmp_path: Path) -> None:
    repo = _lending(tmp_path, reclaim="Never", proposal=None)
    code, found = _findings(repo)
    floor = [f for f in found if f["code"] == "PL104"]
    assert code == 1 and len(floor) == 1, found
    assert "commits 85 GPUs (reserved 85 + proposed 0)" in str(floor[0]["message"])
    assert "lower its lendingLimit to 0 or take lent quota back by preemption" in str(floor[0]["hint"])
    # its fix buys nothing: the quota stays as written, and the note says what to do instead
    before = (repo / QUEUES).read_text(encoding="utf-8")
    code, out, err = run_cli(["check", "--fix", "--unsafe-fixes", "--format", "text", "."], cwd=repo)
    assert (repo / QUEUES).read_text(encoding="utf-8") == before
    assert "PL104: no fix (it owns 104 GPUs of nominal quota: lower its lendingLimit to 0" in out + err, out + err
    # and a proposal to buy the lent GPUs is refused as before: the pool owns them
    (repo / "proposals").mkdir()
    (repo / "proposals" / "training.yaml").write_text(PROPOSAL.format(gpus=19), encoding="utf-8")
    code, found = _findings(repo)
    assert [f["code"] for f in found if f["code"] in ("PL801", "PL104")] == ["PL801"], found


def test_a_lending_queue_short_of_its_baseline_is_fixed_on_its_nominal_quota(tmp_path: Path) -> None:
    repo = _lending(tmp_path, proposal=None)
    path = repo / QUEUES
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("nominalQuota: 104\n        lendingLimit: 19", "nominalQuota: 96\n        lendingLimit: 19"),
                    encoding="utf-8")
    _, found = _findings(repo)
    floor = [f for f in found if f["code"] == "PL104"]
    assert len(floor) == 1 and "commits 96 GPUs (reserved 77 + 19 lent to the cohort and taken back by preemption"\
        " + proposed 0)" in str(floor[0]["message"]), found
    _, out, err = run_cli(["check", "--fix", "--unsafe-fixes", "--format", "text", "."], cwd=repo)
    # the nominal quota that holds the floor rises to the baseline, not to the baseline plus what it lends
    fixed = path.read_text(encoding="utf-8")
    assert "nominalQuota: 104\n        lendingLimit: 19" in fixed, out + err
    _, found = _findings(repo)  # the fix converges: PL104 is gone
    assert not [f for f in found if f["code"] == "PL104"], found


def test_the_review_page_subtracts_the_owned_gpus(tmp_path: Path) -> None:
    repo = _lending(tmp_path)
    target = tmp_path / "review.html"
    _, _, err = run_cli(["report", "--html", str(target), str(repo)])
    page = target.read_text(encoding="utf-8")
    block = re.search(r'<div class="request" data-pool="east/training"[^>]*>', page)
    assert block is not None, err
    assert 'data-shortfall-gpus="0"' in block.group(0) and 'data-allowed-gpus="0"' in block.group(0), block.group(0)
    assert "− owned today" in page and "max(0, baseline − owned)" in page
