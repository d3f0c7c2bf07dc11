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
NOTE = ", so it no longer vouches for this finding]"


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
    assert "the change edited this line" + NOTE in str(found[0]["message"]) and "rewrite its reason" in str(found[0]["hint"])
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
    assert edited_lines(before, "a\nc\nd\n") == {1}  # a line deleted: the line before it, in its node
    assert edited_lines(before, "a\n# b\nc\nd\n") == {1}  # commented out: deleted too
    assert edited_lines("x: 1  # until=2027-03-31\n", "x: 1  # until=2027-06-30 note\n") == set()  # comments only
    assert edited_lines("x: 1\n", "  x: 1\n") == {1}  # the indent is YAML's structure
    assert edited_lines(before, "a\nb\nc\nd\ne\nf\n") == {5, 6}
    assert edited_lines(before, "a\n  # a note\n\nb\nc\nd\n") == set()  # a comment or a blank line edits nothing


ELASTIC = ("      elastic:\n        # 48 + 10",
           ("      elastic:  # policylint: disable=PL102,PL109,PL201 -- Q1 launch of assistant v2, approved in CAP-4411\n"
            "        # 48 + 10"))


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
    assert "can run 168 GPUs" in found["PL102"] and "the change edited the lines it covers" + NOTE in found["PL102"]
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
        ("        borrowingLimit: 24", ("        borrowingLimit: 120  # policylint: disable=PL102 -- training soaks up"
                                  " idle cohort GPUs at night, capped by the cohort quota (CAP-5120)")),
        [("kueue/cohort.yaml", "nominalQuota: 32", "nominalQuota: 64")], ["kueue/cohort.yaml"])
    assert "PL102" in found and "can run 184 GPUs" in found["PL102"], found
    assert ("the change edited Cohort east in kueue/cohort.yaml, which pool east/training is made of" + NOTE
            in found["PL102"]), found


def test_another_field_of_the_pool_edited_lapses_a_suppression_on_it(tmp_path: Path) -> None:
    """PL102 placed at serving's ``elastic:`` compares reserved + elastic: ``reservedGpus`` raised under it (48 -> 52,
    with the PL101 headroom) changes what the suppression accepted, though the line is not in the node."""
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    _edit(repo, "        maxGpus: 10\n", "        maxGpus: 30\n")
    found = _suppressed_then_changed(repo, CLUSTER, ELASTIC, [(CLUSTER, "reservedGpus: 48", "reservedGpus: 52")],
                                     [CLUSTER])
    assert "PL102" in found and "can run 82 GPUs" in found["PL102"], found
    assert ("the change edited the pool's entry in clusters/prod-east.yaml, which pool prod-east/serving is made of"
            + NOTE in found["PL102"]), found


TRAINING_QUOTA = ("        nominalQuota: 104\n        # daily band 128 - baseline 104 = 24 GPUs borrowed in the cohort\n"
                  "        borrowingLimit: 24\n")
ORG = """---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata:
  name: org
spec:
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: h100
      resources:
      - name: "nvidia.com/gpu"
        nominalQuota: {quota}
"""


def _org_tree(tmp_path: Path, east_cap: bool) -> Path:
    """examples/kueue under an ``org`` Cohort (east's parent), training's PL102 and PL201 suppressed on its quota."""
    repo = Path(shutil.copytree(EXAMPLES / "kueue", tmp_path / "repo"))
    queues = repo / "kueue" / "cluster-queues.yaml"
    text = queues.read_text(encoding="utf-8")
    assert TRAINING_QUOTA in text
    queues.write_text(text.replace(TRAINING_QUOTA, "        nominalQuota: 104  # policylint: disable=PL102,PL201 --"
                                   " training takes the org's spare spot H100s at night (CAP-311)\n"), encoding="utf-8")
    cohort = repo / "kueue" / "cohort.yaml"
    text = cohort.read_text(encoding="utf-8").replace("  name: east\nspec:\n", "  name: east\nspec:\n  parentName: org\n")
    if east_cap:
        text = text.replace("        nominalQuota: 32\n", "        nominalQuota: 32\n        borrowingLimit: 40\n")
    cohort.write_text(text, encoding="utf-8")
    (repo / "kueue" / "org-cohort.yaml").write_text(ORG.format(quota=200 if east_cap else 40), encoding="utf-8")
    git(repo, "init", "-q")
    _commit(repo, "east borrows from the org")
    code, out, _ = run_cli(["check", "--format", "json"], cwd=repo)
    assert code == 0 and {f["code"] for f in json.loads(out)["suppressed"]} == {"PL102", "PL201"}, out
    return repo


def _hook(repo: Path, *staged: str) -> dict[str, str]:
    git(repo, "add", "-A")
    _, out, err = run_cli(["check", "--format", "json", "--changed-files", *staged], cwd=repo)
    assert err == "", err
    return {f["code"]: f["message"] for f in json.loads(out)["findings"]}


def test_a_root_cohort_of_the_pool_s_tree_raised_lapses_the_suppression(tmp_path: Path) -> None:
    """Fifth red team, 2026-12-07: the root Cohort ``org`` above east, 40 -> 200 GPUs; training could run 352."""
    repo = _org_tree(tmp_path, east_cap=False)
    org = repo / "kueue" / "org-cohort.yaml"
    org.write_text(org.read_text(encoding="utf-8").replace("nominalQuota: 40", "nominalQuota: 200"), encoding="utf-8")
    found = _hook(repo, "kueue/org-cohort.yaml")
    assert "can run 352 GPUs" in found.get("PL102", "") and "Cohort org in kueue/org-cohort.yaml" in found["PL102"]


@pytest.mark.parametrize("how", ["deleted", "commented out"])
def test_a_limit_deleted_or_commented_out_lapses_the_suppression(tmp_path: Path, how: str) -> None:
    """Fifth red team, 2026-12-07: east's borrowingLimit of 40 on the org's 200 removed - Kueue reads no limit as
    none - while a deletion or a line turned into a comment edited nothing the suppression covered."""
    repo = _org_tree(tmp_path, east_cap=True)
    cohort = repo / "kueue" / "cohort.yaml"
    line = "        borrowingLimit: 40\n"
    cohort.write_text(cohort.read_text(encoding="utf-8").replace(line, "" if how == "deleted" else "        # " + line.lstrip()),
                      encoding="utf-8")
    found = _hook(repo, "kueue/cohort.yaml")
    assert "can run 352 GPUs" in found.get("PL102", "") and "Cohort east in kueue/cohort.yaml" in found["PL102"]


def test_a_file_moved_in_the_change_keeps_its_base(tmp_path: Path) -> None:
    """Fifth red team, 2026-12-07: ``git mv`` of the cluster file with maxGpus 30 -> 120 in it: read at the base by
    its new path, the file was new there, so its standing suppression read as written in the change."""
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    _edit(repo, *ELASTIC)
    _edit(repo, "        maxGpus: 10\n", "        maxGpus: 30\n")
    git(repo, "init", "-q")
    _commit(repo, "a reviewed launch buffer")
    git(repo, "mv", CLUSTER, "clusters/prod-east-us.yaml")
    moved = repo / "clusters" / "prod-east-us.yaml"
    moved.write_text(moved.read_text(encoding="utf-8").replace("maxGpus: 30", "maxGpus: 120"), encoding="utf-8")
    found = _hook(repo, "clusters/prod-east-us.yaml")
    assert "can run 168 GPUs" in found.get("PL102", "") and "the change edited the lines it covers" in found["PL102"]


def test_a_file_linked_from_a_shared_folder_is_read_at_the_base(tmp_path: Path) -> None:
    """Fifth red team, 2026-12-07: the cluster file is a link into a shared folder of the monorepo, outside the
    capacity repository's root; its base was looked for under that root only."""
    top = tmp_path / "mono"
    repo = Path(shutil.copytree(EXAMPLES / "good", top / "capacity"))
    _edit(repo, *ELASTIC)
    _edit(repo, "        maxGpus: 10\n", "        maxGpus: 30\n")
    (top / "shared").mkdir()
    shutil.move(repo / CLUSTER, top / "shared" / "prod-east.yaml")
    (repo / CLUSTER).symlink_to("../../shared/prod-east.yaml")
    git(top, "init", "-q")
    _commit(top, "a reviewed launch buffer, kept in the shared folder")
    shared = top / "shared" / "prod-east.yaml"
    shared.write_text(shared.read_text(encoding="utf-8").replace("maxGpus: 30", "maxGpus: 120"), encoding="utf-8")
    found = _hook(repo, "../shared/prod-east.yaml")
    assert "can run 168 GPUs" in found.get("PL102", "") and "the change edited the lines it covers" in found["PL102"]


def test_an_edit_of_another_flavor_s_queue_in_the_cohort_leaves_the_suppression_standing(tmp_path: Path) -> None:
    """Sixth red team, 2026-12-07 (a false positive): the serving team's H200 queue-depth annotation, in the cohort of
    the H100 training queue, lapsed training's reviewed suppressions. A queue of the tree lends only quota of the
    pool's flavor, written in its resource groups."""
    repo = Path(shutil.copytree(EXAMPLES / "kueue", tmp_path / "repo"))
    queues = repo / "kueue" / "cluster-queues.yaml"
    reason = "contract minimum for Q1 fine-tuning, capacity board 2026-11-18"
    text = queues.read_text(encoding="utf-8")
    text = text.replace("        nominalQuota: 104", f"        nominalQuota: 130  # policylint: disable=PL101 -- {reason}")
    queues.write_text(text.replace("        borrowingLimit: 24", f"        borrowingLimit: 24  # policylint: disable=PL102 -- {reason}"),
                      encoding="utf-8")
    git(repo, "init", "-q")
    _commit(repo, "training at 130, reviewed")
    text = queues.read_text(encoding="utf-8")
    assert 'policylint.dev/queue-max-depth: "4000"' in text
    queues.write_text(text.replace('queue-max-depth: "4000"', 'queue-max-depth: "3000"'), encoding="utf-8")
    found = _hook(repo, "kueue/cluster-queues.yaml")
    assert not {"PL101", "PL102"} & set(found), found


WEST = """apiVersion: policylint/v1
kind: Cluster
metadata:
  name: prod-west
  team: search
  owner: search-oncall@example.com
spec:
  region: us-west
  pools:
    - name: serving
      gpu: {model: H200-SXM-141GB, memoryGiB: 141}
      reservedGpus: 8
      elastic: {maxGpus: 1, kind: autoscale, coldStartSeconds: 600}
      serves: [inference]
      overflow: reject
      queue: {maxDepth: 4000, maxWaitSeconds: 5}
"""


def _to_west(path: Path, name: str) -> None:
    text = path.read_text(encoding="utf-8")
    at = text.index("cluster: prod-east", text.index(f"name: {name}\n"))
    path.write_text(text[:at] + "cluster: prod-west" + text[at + len("cluster: prod-east"):], encoding="utf-8")


def test_workloads_moved_out_of_a_pool_lapse_the_suppression_of_its_oversizing(tmp_path: Path) -> None:
    """Sixth red team, 2026-12-07: serving reserved 60 under reviewed suppressions of PL101, PL102 and PL201 (a launch
    buffer); the change moved chat-assistant and embeddings-search to another cluster, raised there. Serving kept
    its 64 GPUs for a baseline of 12, and nothing it is made of changed. Moving a workload into or out of a pool
    changes what the suppression of its sizing accepted."""
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    (repo / "proposals" / "2027-q1-serving.yaml").unlink()
    (repo / "clusters" / "prod-west.yaml").write_text(WEST, encoding="utf-8")
    _to_west(repo / "workloads" / "search.yaml", "reranker")
    _edit(repo, "reservedGpus: 48", "reservedGpus: 60  # policylint: disable=PL101 -- held for the chat v2 launch (board"
          " 2026-11-18)")
    _edit(repo, "      elastic:\n        # 48 + 10", "      # policylint: disable=PL102,PL201 -- launch buffer for chat v2"
          " (board 2026-11-18)\n      elastic:\n        # 48 + 10")
    _edit(repo, "maxGpus: 10", "maxGpus: 4")
    git(repo, "init", "-q")
    _commit(repo, "a reviewed launch buffer")
    _to_west(repo / "workloads" / "search.yaml", "embeddings-search")
    _to_west(repo / "workloads" / "product-ai.yaml", "chat-assistant")
    west = repo / "clusters" / "prod-west.yaml"
    west.write_text(west.read_text(encoding="utf-8").replace("reservedGpus: 8", "reservedGpus: 41"), encoding="utf-8")
    found = _hook(repo, "workloads/search.yaml", "workloads/product-ai.yaml", "clusters/prod-west.yaml")
    assert "reserves 60 GPUs, but its pooled baseline is 12" in found.get("PL101", ""), found
    assert "the workloads placed in it (3 in the files of the change at the base, 1 now)" + NOTE in found["PL101"]


def _reviewed_training(tmp_path: Path) -> Path:
    """examples/good with reviewed suppressions standing on training (PL101, PL102) and batch (PL101), committed."""
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    training = repo / "clusters" / "train-central.yaml"
    text = training.read_text(encoding="utf-8")
    text = text.replace("      reservedGpus: 392\n", "      reservedGpus: 480  # policylint: disable=PL101 until=2027-03-31"
                        " -- contract ramp (CAP-7)\n")
    training.write_text(text.replace("      elastic:\n", "      elastic:  # policylint: disable=PL102 -- spot ceiling"
                                     " (CAP-8)\n", 1), encoding="utf-8")
    _edit(repo, "      reservedGpus: 20\n", "      reservedGpus: 26  # policylint: disable=PL101 -- batch backlog (CAP-9)\n")
    _edit(repo, "        maxGpus: 6\n", "        maxGpus: 2\n")
    git(repo, "init", "-q")
    _commit(repo, "reviewed exceptions")
    code, out, _ = run_cli(["check", "--format", "json"], cwd=repo)
    assert code == 0 and len(json.loads(out)["suppressed"]) == 3, out
    return repo


def _rewrite(repo: Path, name: str, old: str, new: str) -> None:
    path = repo / name
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


ROUTINE = {
    # an expiry renewed under the same reason, a note beside a value: comments edit nothing
    "expiry renewed": [("clusters/train-central.yaml", "until=2027-03-31", "until=2027-06-30")],
    "note beside a value": [("clusters/train-central.yaml", "maxGpus: 40", "maxGpus: 40  # agreed with research-infra")],
    # a line deleted at the end of serving's entry: the batch pool after it is not edited
    "serving's last line deleted": [("clusters/prod-east.yaml", "        maxWaitSeconds: 5\n", "")],
    # a workload renamed in place stays where it was placed
    "workload renamed in place": [("workloads/research.yaml", "  name: fine-tuning\n", "  name: fine-tuning-v3\n")],
}


@pytest.mark.parametrize("change", sorted(ROUTINE))
def test_routine_changes_leave_standing_suppressions_standing(tmp_path: Path, change: str) -> None:
    """False-positive hunt, 2026-12-07: each of these lapsed reviewed suppressions in the hook and under --diff."""
    repo = _reviewed_training(tmp_path)
    for name, old, new in ROUTINE[change]:
        _rewrite(repo, name, old, new)
    staged = sorted({name for name, _, _ in ROUTINE[change]})
    found = _hook(repo, *staged)
    assert not {"PL101", "PL102"} & set(found), found


def test_a_workload_moved_to_another_file_stays_in_its_pool(tmp_path: Path) -> None:
    """The nightly-eval document moved from research.yaml into a file of its own: batch holds it as before."""
    repo = _reviewed_training(tmp_path)
    research = repo / "workloads" / "research.yaml"
    text = research.read_text(encoding="utf-8")
    start = text.rindex("---\n", 0, text.index("  name: nightly-eval\n"))
    end = text.find("---\n", start + 4)
    end = len(text) if end == -1 else end
    (repo / "workloads" / "nightly-eval.yaml").write_text(text[start + 4 : end], encoding="utf-8")
    research.write_text(text[:start] + text[end:], encoding="utf-8")
    found = _hook(repo, "workloads/research.yaml", "workloads/nightly-eval.yaml")
    assert not {"PL101", "PL102"} & set(found), found


A100 = {
    "kueue/flavors.yaml": "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: a100\n",
    "kueue/cohort.yaml": ("    - name: a100\n      resources:\n      - name: \"nvidia.com/gpu\"\n"
                          "        nominalQuota: 8\n"),
    "kueue/cluster-queues.yaml": """---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: experiments
spec:
  cohortName: east
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: a100
      resources:
      - name: "nvidia.com/gpu"
        nominalQuota: 0
        borrowingLimit: 8
""",
}


def test_another_flavor_onboarded_in_the_cohort_leaves_the_suppression_standing(tmp_path: Path) -> None:
    """False-positive hunt, 2026-12-07: an A100 flavor, its queue and its quota in the shared Cohort lapsed the
    reviewed suppressions of the H100 training queue. A Cohort is part of a pool by its parent and its quota of the
    pool's flavor only."""
    repo = Path(shutil.copytree(EXAMPLES / "kueue", tmp_path / "repo"))
    queues = repo / "kueue" / "cluster-queues.yaml"
    text = queues.read_text(encoding="utf-8").replace(
        "        nominalQuota: 104\n", "        nominalQuota: 140  # policylint: disable=PL101 -- contract ramp (CAP-7)\n")
    queues.write_text(text, encoding="utf-8")
    git(repo, "init", "-q")
    _commit(repo, "reviewed")
    for name, added in A100.items():
        path = repo / name
        path.write_text(path.read_text(encoding="utf-8") + added, encoding="utf-8")
    found = _hook(repo, *A100)
    assert "PL101" not in found and "PL110" in found, found


def test_a_workload_file_moved_with_git_mv_keeps_its_workloads_in_their_pools(tmp_path: Path) -> None:
    """False-positive hunt, 2026-12-07 (found again after the membership count): research.yaml moved into a folder of
    its own with ``git mv``, its paths fixed. Its workloads are read at the base by the path it was moved from, so the
    path it left is not also counted as a file the change deleted."""
    repo = _reviewed_training(tmp_path)
    (repo / "workloads" / "research").mkdir()
    git(repo, "mv", "workloads/research.yaml", "workloads/research/research.yaml")
    moved = repo / "workloads" / "research" / "research.yaml"
    moved.write_text(moved.read_text(encoding="utf-8").replace("../measurements/", "../../measurements/")
                     .replace("../evidence/", "../../evidence/"), encoding="utf-8")
    found = _hook(repo, "workloads/research/research.yaml")
    assert not {"PL101", "PL102"} & set(found), found
