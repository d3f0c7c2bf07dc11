"""A baseline written in the change it would accept hides nothing in the gates that judge that change.

Red team, 2026-12-07, round 15: serving raised 48 -> 120, ``policylint baseline`` run, a hand-written
PL950 entry added and ``baseline:`` set in ``.policylint.yaml``, all in one commit: ``check``, the
pre-commit hook and ``--diff`` all passed. The hook (against HEAD) and ``--diff`` (against the base)
now take as accepted only what the baseline configured at that revision accepted; a rule that judges
a change (PL950-PL952) is never accepted by a baseline.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import committed_example, git, replace_once, run_cli
from policylint.engine.baselines import NOTE_ADDED, NOTE_CHANGE_RULE

SERVING = "clusters/prod-east.yaml"
TRAINING = "clusters/train-central.yaml"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return committed_example(tmp_path, message="the honest plan")


def _edit(repo: Path, name: str, old: str, new: str) -> None:
    replace_once(repo / name, old, new)


def _write_baseline(repo: Path, planted: list[dict[str, object]] | None = None, configure: bool = True) -> None:
    code, out, err = run_cli(["baseline", ".", "--output", ".policylint-baseline.json"], cwd=repo)
    assert code == 0, err
    if planted:
        path = repo / ".policylint-baseline.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        data["findings"] += planted
        path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    if configure:
        with (repo / ".policylint.yaml").open("a", encoding="utf-8") as f:
            f.write("baseline: .policylint-baseline.json\n")


def _findings(repo: Path, args: list[str]) -> tuple[int, list[dict[str, str]]]:
    code, out, err = run_cli(["check", "--format", "json", *args], cwd=repo)
    assert code in (0, 1), err
    return code, json.loads(out)["findings"]


def _hook(repo: Path, *files: str) -> tuple[int, list[dict[str, str]]]:
    git(repo, "add", "-A")
    return _findings(repo, ["--changed-files", *files])


def _diff(repo: Path) -> tuple[int, list[dict[str, str]]]:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the change")
    return _findings(repo, ["--diff", "HEAD~1"])


def _pl950_entry(message: str) -> dict[str, object]:
    return {"code": "PL950", "file": SERVING, "path": "spec/pools/0/reservedGpus", "subject": "pool prod-east/serving",
            "message": message}


def test_a_baseline_written_with_the_raise_hides_it_from_neither_the_hook_nor_diff(repo: Path) -> None:
    _edit(repo, SERVING, "reservedGpus: 48", "reservedGpus: 120")
    _write_baseline(repo)
    code, found = _findings(repo, ["."])
    assert code == 0  # a whole run cannot tell when an entry was written: the baseline is taken as written
    code, found = _hook(repo, SERVING, ".policylint.yaml", ".policylint-baseline.json")
    assert code == 1
    assert any(f["code"] == "PL101" and f["message"].endswith(NOTE_ADDED) for f in found)
    code, found = _diff(repo)
    assert code == 1
    assert any(f["code"] == "PL101" and f["message"].endswith(NOTE_ADDED) for f in found)


def test_a_planted_change_rule_entry_hides_nothing_even_when_committed_first(repo: Path) -> None:
    message = ("pool prod-east/serving reserves 120 GPUs and its proposals ask 5 more, 125 in all, up from 53 at the base"
               " revision (48 owned and 5 proposed), but no measurement of its workloads changed: capacity grew"
               " without new evidence")
    _write_baseline(repo, planted=[_pl950_entry(message)])
    code, found = _diff(repo)  # the baseline on its own, with the planted entry: PL034 at the entry
    assert code == 1
    assert [(f["code"], f["file"]) for f in found if f["severity"] == "error"] == [("PL034", ".policylint-baseline.json")]
    assert found[0]["line"] > 1
    _edit(repo, SERVING, "reservedGpus: 48", "reservedGpus: 120")
    _write_baseline(repo, planted=[_pl950_entry(message)], configure=False)
    code, found = _diff(repo)
    assert code == 1
    pl950 = [f for f in found if f["code"] == "PL950"]
    assert pl950 and all(f["message"].endswith(NOTE_CHANGE_RULE) for f in pl950)


def test_a_baseline_file_present_but_not_configured_at_the_base_accepted_nothing(repo: Path) -> None:
    _edit(repo, SERVING, "reservedGpus: 48", "reservedGpus: 120")
    _write_baseline(repo, configure=False)  # entries for the raise, planted beside the honest plan
    _edit(repo, SERVING, "reservedGpus: 120", "reservedGpus: 48")
    code, _ = _diff(repo)
    assert code == 0
    _edit(repo, SERVING, "reservedGpus: 48", "reservedGpus: 120")
    with (repo / ".policylint.yaml").open("a", encoding="utf-8") as f:
        f.write("baseline: .policylint-baseline.json\n")
    code, found = _diff(repo)
    assert code == 1
    assert any(f["code"] == "PL101" and f["message"].endswith(NOTE_ADDED) for f in found)


def test_a_baseline_committed_on_its_own_keeps_hiding_what_it_accepted(repo: Path) -> None:
    _edit(repo, SERVING, "reservedGpus: 48", "reservedGpus: 60")  # an accepted debt, committed long ago
    git(repo, "commit", "-qam", "a launch buffer")
    _write_baseline(repo)
    code, found = _hook(repo, ".policylint.yaml", ".policylint-baseline.json")
    assert code == 0, found
    code, found = _diff(repo)
    assert code == 0, found
    # a later change to the same file: the finding the baseline accepted stays hidden
    _edit(repo, SERVING, "maxGpus: 10", "maxGpus: 9")
    code, found = _hook(repo, SERVING)
    assert code == 0, found
    code, found = _diff(repo)
    assert code == 0, found


def test_a_baseline_entry_raised_in_the_change_accepts_no_more_than_before(repo: Path) -> None:
    _edit(repo, SERVING, "reservedGpus: 48", "reservedGpus: 60")
    git(repo, "commit", "-qam", "a launch buffer")
    _write_baseline(repo)
    _diff(repo)
    _edit(repo, SERVING, "reservedGpus: 60", "reservedGpus: 90")
    _write_baseline(repo, configure=False)  # the entry rewritten for 90
    code, found = _diff(repo)
    assert code == 1
    assert any(f["code"] == "PL101" and f["message"].endswith(NOTE_ADDED) for f in found)


@pytest.mark.parametrize("how", ["not made yet", "figures above today's"])
def test_an_entry_planted_before_its_finding_is_refused(repo: Path, how: str) -> None:
    _edit(repo, SERVING, "reservedGpus: 48", "reservedGpus: 60")  # PL101 at 60 against 61? no: a finding at 60
    git(repo, "commit", "-qam", "a launch buffer")
    _write_baseline(repo)
    _diff(repo)
    path = repo / ".policylint-baseline.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    if how == "not made yet":
        data["findings"].append({"code": "PL109", "file": SERVING, "subject": "pool prod-east/serving",
                                 "path": "spec/pools/0/elastic", "message": "planted", "measured": 200, "allowed": 64})
    else:
        for entry in data["findings"]:
            if "measured" in entry:
                entry["measured"] = float(entry["measured"]) + 60
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    code, found = _hook(repo, ".policylint-baseline.json")
    assert code == 1
    assert any(f["code"] == "PL034" for f in found)
    code, found = _diff(repo)
    assert code == 1
    assert any(f["code"] == "PL034" for f in found)


def test_a_regenerated_baseline_that_dropped_a_fixed_finding_is_clean(repo: Path) -> None:
    _edit(repo, SERVING, "reservedGpus: 48", "reservedGpus: 60")
    git(repo, "commit", "-qam", "a launch buffer")
    _write_baseline(repo)
    _diff(repo)
    _edit(repo, SERVING, "reservedGpus: 60", "reservedGpus: 48")  # fixed
    _write_baseline(repo, configure=False)
    code, found = _diff(repo)
    assert code == 0, found


def test_a_baseline_adopted_beside_a_workflow_file_and_a_readme_is_clean(repo: Path) -> None:
    _edit(repo, SERVING, "reservedGpus: 48", "reservedGpus: 60")  # debt the repository already has
    git(repo, "commit", "-qam", "a launch buffer")
    _write_baseline(repo)
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "workflows" / "capacity.yml").write_text("on: [pull_request]\njobs: {}\n", encoding="utf-8")
    (repo / "NOTES.md").write_text("We adopted policylint with a baseline.\n", encoding="utf-8")
    code, found = _hook(repo, ".policylint.yaml", ".policylint-baseline.json", ".github/workflows/capacity.yml", "NOTES.md")
    assert code == 0, found
    code, found = _diff(repo)
    assert code == 0, found


def test_a_baseline_adopted_beside_a_trace_edit_accepts_nothing_new(repo: Path) -> None:
    _edit(repo, SERVING, "reservedGpus: 48", "reservedGpus: 60")
    git(repo, "commit", "-qam", "a launch buffer")
    trace = repo / "measurements" / "traces" / "chat-assistant.csv"
    rows = trace.read_text(encoding="utf-8").splitlines()
    stamp, value = rows[100].rsplit(",", 1)
    rows[100] = f"{stamp},{int(value) + 1}"
    trace.write_text("\n".join(rows) + "\n", encoding="utf-8")
    _write_baseline(repo)
    code, found = _diff(repo)
    assert code == 1
    assert any(f["message"].endswith(NOTE_ADDED) for f in found)


# Round 16: a baselined finding whose figures count documents or workloads, not GPUs, stays "no worse"
# whatever the change does to the GPUs of the subject nothing judges.

LEGACY = """    - name: legacy
      gpu: {model: H100-SXM-80GB, memoryGiB: 80}
      reservedGpus: 8
      elastic: {maxGpus: 4, kind: spot, coldStartSeconds: 900}
      serves: [training]
      overflow: queue
      queue: {maxDepth: 10, maxWaitSeconds: 21600}
      scheduling: {gang: true, preemption: true}
"""


def _baseline_only_change(repo: Path, config: str) -> None:
    with (repo / ".policylint.yaml").open("a", encoding="utf-8") as f:
        f.write(config)
    _write_baseline(repo)
    code, found = _diff(repo)
    assert code == 0, found


@pytest.mark.parametrize("limit", ["max-nodes: 40", "max-file-bytes: 3000"])
def test_a_file_refused_by_a_tightened_limit_and_baselined_is_judged_again_once_edited(repo: Path, limit: str) -> None:
    _baseline_only_change(repo, f"limits:\n  {limit}\n")
    _edit(repo, SERVING, "reservedGpus: 48", "reservedGpus: 480")
    _edit(repo, SERVING, "maxGpus: 10", "maxGpus: 200")
    code, found = _hook(repo, SERVING)
    assert code == 1
    assert any("the baseline no longer accepts it" in f["message"] for f in found)
    code, found = _diff(repo)
    assert code == 1


def _legacy_pool_baselined(repo: Path) -> None:
    """An unmeasured legacy pool beside training, committed, then a baseline accepting its PL110 in a change of its own."""
    with (repo / TRAINING).open("a", encoding="utf-8") as f:
        f.write(LEGACY)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a legacy pool")
    _write_baseline(repo)
    _diff(repo)


def test_an_unmeasured_pool_accepted_by_a_baseline_cannot_grow(repo: Path) -> None:
    _legacy_pool_baselined(repo)
    _edit(repo, TRAINING, "maxGpus: 4,", "maxGpus: 300,")
    code, found = _hook(repo, TRAINING)
    assert code == 1
    assert any(f["code"] == "PL110" and "the baseline no longer accepts it" in f["message"] for f in found)
    code, found = _diff(repo)
    assert code == 1


def test_an_edit_elsewhere_in_the_file_leaves_the_unmeasured_pool_accepted(repo: Path) -> None:
    _legacy_pool_baselined(repo)
    _edit(repo, TRAINING, "reservedGpus: 392", "reservedGpus: 390")  # the training pool, not the legacy one
    code, found = _hook(repo, TRAINING)
    assert not any(f["code"] == "PL110" for f in found), found


def test_a_baseline_renamed_with_its_key_keeps_accepting_what_it_accepted(repo: Path) -> None:
    _edit(repo, SERVING, "reservedGpus: 48", "reservedGpus: 70")
    git(repo, "commit", "-qam", "a launch buffer")
    _write_baseline(repo)
    _diff(repo)
    git(repo, "mv", ".policylint-baseline.json", "policy-baseline.json")
    _edit(repo, ".policylint.yaml", "baseline: .policylint-baseline.json", "baseline: policy-baseline.json")
    code, found = _hook(repo, ".policylint.yaml", "policy-baseline.json")
    assert code == 0, found
    code, found = _diff(repo)
    assert code == 0, found


LOOSENED = """rules:
  reserved-above-baseline: {headroom: 0.2}
  peak-capacity-dedicated: {headroom: 0.2}
"""


def test_a_loosened_configuration_is_never_accepted_by_a_baseline(repo: Path) -> None:
    # red team, 2026-12-07, round 18: PL977 baselined with its count of loosenings, then one loosening traded for
    # another (ignore: [PL950]) and serving raised 48 -> 200 past all three gates
    with (repo / ".policylint.yaml").open("a", encoding="utf-8") as f:
        f.write(LOOSENED)
    _write_baseline(repo)
    written = json.loads((repo / ".policylint-baseline.json").read_text(encoding="utf-8"))["findings"]
    assert not [e for e in written if e["code"] == "PL977"]  # the command never writes one
    code, found = _findings(repo, ["."])
    assert code == 1 and any(f["code"] == "PL977" for f in found)
    # a hand-written entry hides nothing, in any run, and is PL034 in the change that adds it
    path = repo / ".policylint-baseline.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["findings"].append({"code": "PL977", "file": ".policylint.yaml", "subject": "", "path": "rules",
                             "message": "planted", "measured": 2, "allowed": 0})
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    code, found = _findings(repo, ["."])
    assert code == 1 and any(f["code"] == "PL977" for f in found)
    code, found = _diff(repo)
    assert code == 1 and {"PL977", "PL034"} <= {f["code"] for f in found}


def test_a_lowered_value_under_a_lapsed_suppression_is_still_accepted_by_the_baseline(repo: Path) -> None:
    # a newcomer, 2026-12-07: batch reserved 30 (accepted by the baseline), then 34 under a suppression; the
    # change lowering it to 28 lapsed the suppression, and the finding skipped the baseline: the gate failed
    batch = "reservedGpus: 20"
    _edit(repo, SERVING, batch, "reservedGpus: 30")
    git(repo, "commit", "-qam", "a launch buffer")
    _write_baseline(repo)
    _diff(repo)
    _edit(repo, SERVING, "reservedGpus: 30", "reservedGpus: 34  # policylint: disable=PL101,PL102 -- agreed in CAP-9")
    code, found = _diff(repo)
    assert code == 1  # 34 is worse than what the baseline accepted; the suppression was written in this change
    _edit(repo, SERVING, "reservedGpus: 34", "reservedGpus: 28")
    code, found = _hook(repo, SERVING)
    assert code == 0, found
    code, found = _diff(repo)
    assert code == 0, found
    code, out, err = run_cli(["check", "-q", "."], cwd=repo)
    assert "none matches" not in out and "no longer found" not in out, out
