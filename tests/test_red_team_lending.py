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

from conftest import EXAMPLES, propose_training, run_cli

QUEUES = "kueue/cluster-queues.yaml"


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
        propose_training(repo, proposal, name="2027-training")
    return repo


def _quota(repo: Path, nominal: int) -> None:
    """Training's nominal quota set to ``nominal``, its lendingLimit of 19 kept."""
    path = repo / QUEUES
    text = path.read_text(encoding="utf-8")
    old = "nominalQuota: 104\n        lendingLimit: 19"
    assert text.count(old) == 1
    path.write_text(text.replace(old, f"nominalQuota: {nominal}\n        lendingLimit: 19"), encoding="utf-8")


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
    # 90 GPUs of quota, 19 of them lendable: 14 short of the baseline of 104, 17 allowed with the headroom. The
    # Cohort's own 32 h100 GPUs are not counted: examples/kueue rents them from an autoscaler (round 11's
    # false positive, when a cohort reading counted 24 of them as training's and refused the purchase)
    _quota(repo, 90)
    _, found = _findings(repo)
    shortfall = [f for f in found if f["code"] == "PL801"]
    assert len(shortfall) == 1 and "owned 90 (reserved 71 + 19" in str(shortfall[0]["message"]), found
    assert "= shortfall 14; allowed 17" in str(shortfall[0]["message"])
    propose_training(repo, 14, name="2027-training")
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
    propose_training(repo, 19, name="2027-training")
    code, found = _findings(repo)
    assert [f["code"] for f in found if f["code"] in ("PL801", "PL104")] == ["PL801"], found


def test_a_lending_queue_short_of_its_baseline_is_fixed_on_its_nominal_quota(tmp_path: Path) -> None:
    repo = _lending(tmp_path, proposal=None)
    path = repo / QUEUES
    _quota(repo, 96)
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


def test_the_floor_and_the_proposal_give_one_advice(tmp_path: Path) -> None:
    # red team, 2026-12-07 (round 10): with 10 GPUs proposed, PL104 said to lower the lendingLimit to 10 - enough
    # only once the 10 were bought - while PL801 said to withdraw them; following both still failed PL104
    repo = _lending(tmp_path, reclaim="Never", proposal=10)
    _, found = _findings(repo)
    by_code = {f["code"]: f for f in found if f["code"] in ("PL104", "PL801")}
    assert set(by_code) == {"PL104", "PL801"}, found
    assert "lower its lendingLimit to 0 or take lent quota back" in str(by_code["PL104"]["hint"])
    assert "withdraw the request" in str(by_code["PL801"]["hint"])
    # doing both: no proposal, nothing lent - clean
    (repo / "proposals" / "training.yaml").unlink()
    path = repo / QUEUES
    path.write_text(path.read_text(encoding="utf-8").replace("lendingLimit: 19", "lendingLimit: 0"), encoding="utf-8")
    _, found = _findings(repo)
    assert not [f for f in found if f["code"] in ("PL104", "PL801")], found


def test_a_queue_short_of_its_baseline_that_lends_is_not_fixed_by_buying_what_it_lends(tmp_path: Path) -> None:
    # red team, 2026-12-07 (round 10): the unsafe fix raised nominalQuota 90 -> 123, buying the 19 it lends on top
    repo = _lending(tmp_path, reclaim="Never", proposal=None)
    path = repo / QUEUES
    path.write_text(path.read_text(encoding="utf-8").replace("nominalQuota: 104\n", "nominalQuota: 90\n"),
                    encoding="utf-8")
    _, found = _findings(repo)
    floor = [f for f in found if f["code"] == "PL104"]
    assert len(floor) == 1, found
    assert "lower its lendingLimit to 0 or take lent quota back by preemption (reclaimWithinCohort: Any), and propose"\
        " the 14 GPUs of the baseline it does not own" in str(floor[0]["hint"])
    before = path.read_text(encoding="utf-8")
    _, out, err = run_cli(["check", "--fix", "--unsafe-fixes", "--format", "text", "."], cwd=repo)
    assert path.read_text(encoding="utf-8") == before and "PL104: no fix (lower its lendingLimit to 0" in out + err
    # the advice followed: nothing lent, the 14 proposed - and PL801 allows exactly those
    path.write_text(before.replace("lendingLimit: 19", "lendingLimit: 0"), encoding="utf-8")
    propose_training(repo, 14, name="2027-training")
    _, found = _findings(repo)
    assert not [f for f in found if f["code"] in ("PL104", "PL801")], found


VOLCANO = """apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: research
spec:
  weight: 1
  reclaimable: false
  guarantee:
    resource:
      nvidia.com/gpu: 104
  capability:
    nvidia.com/gpu: 128
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: training
  annotations:
    policylint.dev/queue-max-depth: "60"
    policylint.dev/queue-max-wait-seconds: "21600"
spec:
  parent: research
  weight: 1
  reclaimable: false
  guarantee:
    resource:
      nvidia.com/gpu: {guarantee}
  capability:
    nvidia.com/gpu: 128
"""


def _volcano(tmp_path: Path, guarantee: int, proposal: int | None) -> Path:
    """``examples/kueue`` with training moved to a Volcano Queue under a parent ``research`` guaranteeing 104."""
    repo = _lending(tmp_path, proposal=None)
    path = repo / QUEUES
    docs = path.read_text(encoding="utf-8").split("\n---\n")
    kept = [d for d in docs if "  name: training\n" not in d]
    assert len(kept) == len(docs) - 1
    path.write_text("\n---\n".join(kept), encoding="utf-8")
    local = repo / "kueue" / "local-queues.yaml"
    docs = local.read_text(encoding="utf-8").split("\n---\n")
    kept = [d for d in docs if "clusterQueue: training" not in d]
    assert len(kept) == len(docs) - 1
    local.write_text("\n---\n".join(kept), encoding="utf-8")
    # the Cohort's 24 h100 GPUs for training's daily band go with training
    cohorts = repo / "kueue" / "cohort.yaml"
    cohorts.write_text(cohorts.read_text(encoding="utf-8").replace("nominalQuota: 32", "nominalQuota: 8"), encoding="utf-8")
    research = repo / "workloads" / "research.yaml"
    text = research.read_text(encoding="utf-8")
    assert text.count("queue: {scheduler: kueue, name: research/training}") == 1
    research.write_text(text.replace("queue: {scheduler: kueue, name: research/training}",
                                     "queue: {scheduler: volcano, name: training}"), encoding="utf-8")
    (repo / "volcano.yaml").write_text(VOLCANO.replace("{guarantee}", str(guarantee)), encoding="utf-8")
    if proposal is not None:
        propose_training(repo, proposal, name="2027-training", cluster="research")
    return repo


def test_a_guarantee_moved_up_into_the_parent_queue_and_bought_back_fails(tmp_path: Path) -> None:
    # red team, 2026-12-07 (round 10): Volcano leaf guarantee 104 -> 85 under a parent that still guarantees 104
    assert _findings(_volcano(tmp_path / "base", 104, None)) == (0, [])
    code, found = _findings(_volcano(tmp_path / "game", 85, 19))
    shortfall = [str(f["message"]) for f in found if f["code"] == "PL801"]
    assert code == 1 and len(shortfall) == 1, found
    assert "owned 104 (reserved 85 + 19 of its parent queues' guarantee that no other queue may use) = shortfall 0"\
        in shortfall[0], shortfall


def test_a_preemption_value_kueue_refuses_is_reported(tmp_path: Path) -> None:
    # red team, 2026-12-07 (round 10): `any` was read as Never without a word (Kubernetes refuses the manifest)
    repo = _lending(tmp_path, proposal=None)
    path = repo / QUEUES
    text = path.read_text(encoding="utf-8")
    head, training, rest = text.partition("  name: training\n")
    rest = rest.replace("reclaimWithinCohort: Any", "reclaimWithinCohort: any", 1).replace(
        "withinClusterQueue: LowerPriority", "withinClusterQueue: lowerpriority", 1)
    path.write_text(head + training + rest, encoding="utf-8")
    code, found = _findings(repo)
    bad = [(f["code"], f["line"], str(f["message"])) for f in found if f["code"] == "PL010"]
    assert code == 1 and len(bad) == 2, found
    assert "preemption.reclaimWithinCohort is 'any', which Kueue does not accept" in bad[0][2]
    assert "preemption.withinClusterQueue is 'lowerpriority'" in bad[1][2]
    # read as Never: the 19 lent do not hold the baseline (PL104), beside the PL010 that names the spelling
    floor = [f for f in found if f["code"] == "PL104"]
    assert len(floor) == 1 and "commits 85 GPUs" in str(floor[0]["message"]), found


def test_a_guarantee_moved_up_two_levels_and_bought_back_fails(tmp_path: Path) -> None:
    # red team, 2026-12-07 (round 11): research under a parent org guaranteeing 104, research and training at 85
    repo = _volcano(tmp_path, 85, 19)
    volcano = repo / "volcano.yaml"
    text = volcano.read_text(encoding="utf-8")
    text = text.replace("  name: research\nspec:\n", "  name: research\nspec:\n  parent: org\n", 1)
    text = text.replace("      nvidia.com/gpu: 104\n", "      nvidia.com/gpu: 85\n", 1)
    org = VOLCANO.split("\n---\n")[0].replace("name: research", "name: org")
    volcano.write_text(org + "\n---\n" + text, encoding="utf-8")
    code, found = _findings(repo)
    shortfall = [str(f["message"]) for f in found if f["code"] == "PL801"]
    assert code == 1 and len(shortfall) == 1, found
    assert "owned 104 (reserved 85 + 19 of its parent queues' guarantee that no other queue may use)" in shortfall[0]


def test_a_sibling_that_may_take_the_parents_spare_guarantee_leaves_the_shortfall(tmp_path: Path) -> None:
    # the parent's 19 spare guaranteed GPUs are shared when a sibling queue may grow into them: a purchase is fair
    repo = _volcano(tmp_path, 85, 19)
    volcano = repo / "volcano.yaml"
    sibling = VOLCANO.split("\n---\n")[1].replace("name: training", "name: evaluation").replace(
        "nvidia.com/gpu: {guarantee}", "nvidia.com/gpu: 0").replace("nvidia.com/gpu: 128", "nvidia.com/gpu: 19")
    volcano.write_text(volcano.read_text(encoding="utf-8") + "---\n" + sibling, encoding="utf-8")
    _, found = _findings(repo)
    assert not [f for f in found if f["code"] == "PL801"], found


def test_a_sibling_subtree_that_can_hold_no_gpus_takes_none_of_the_parents_spare_guarantee(tmp_path: Path) -> None:
    # red team, 2026-12-07 (round 17): a "tools" sibling capped at 19 whose only child ("CPU-only") is capped at 0
    # was read as able to take the 19 moved up from training, so buying them back looked like a shortfall
    repo = _volcano(tmp_path, 85, 19)
    volcano = repo / "volcano.yaml"
    queue = VOLCANO.split("\n---\n")[1]
    tools = queue.replace("name: training", "name: tools").replace("nvidia.com/gpu: {guarantee}", "nvidia.com/gpu: 0")\
        .replace("nvidia.com/gpu: 128", "nvidia.com/gpu: 19")
    prep = queue.replace("name: training", "name: data-prep").replace("parent: research", "parent: tools")\
        .replace("nvidia.com/gpu: {guarantee}", "nvidia.com/gpu: 0").replace("nvidia.com/gpu: 128", "nvidia.com/gpu: 0")
    volcano.write_text(volcano.read_text(encoding="utf-8") + "---\n" + tools + "---\n" + prep, encoding="utf-8")
    code, found = _findings(repo)
    shortfall = [str(f["message"]) for f in found if f["code"] == "PL801"]
    assert code == 1 and len(shortfall) == 1, found
    # and a child that can hold GPUs makes the sibling's room real again
    volcano.write_text(volcano.read_text(encoding="utf-8").replace(prep, prep.replace(
        "capability:\n    nvidia.com/gpu: 0", "capability:\n    nvidia.com/gpu: 19")), encoding="utf-8")
    _, found = _findings(repo)
    assert not [f for f in found if f["code"] == "PL801"], found


def test_a_null_preemption_value_is_the_default(tmp_path: Path) -> None:
    # round 11: `reclaimWithinCohort: null` is dropped by the API server (the default, Never), not refused
    repo = _lending(tmp_path, proposal=None)
    path = repo / QUEUES
    text = path.read_text(encoding="utf-8")
    head, training, rest = text.partition("  name: training\n")
    path.write_text(head + training + rest.replace("reclaimWithinCohort: Any", "reclaimWithinCohort: null", 1),
                    encoding="utf-8")
    _, found = _findings(repo)
    assert not [f for f in found if f["code"] == "PL010"] and [f for f in found if f["code"] == "PL104"], found
