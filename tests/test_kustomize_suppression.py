"""A suppressed PL026 does not outlive a change of the patch it was written for.

Red team, 2026-12-06, round 15: a kustomization's patch entry was reported by PL026 and the
team suppressed it with a reason - the patch only lowered the ``training`` queue's borrowing
limit. An edit of the patch file that also raised ``nominalQuota`` to 168 changed nothing
beside the suppression: the hook and ``--diff`` saw only the patch file, reported nothing, and
the whole run said "1 suppressed". In the runs that know the change, a suppression that stood
at the base no longer covers an entry whose named file (or whose own text) changed; a reason
rewritten in the change re-confirms it. The whole run is unchanged.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import EXAMPLES, git, run_cli

KUSTOMIZATION = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- cluster-queues.yaml
- cohort.yaml
- flavors.yaml
- local-queues.yaml
patches:
- path: training-borrowing.yaml  # policylint: disable=PL026 -- the prod overlay only lowers training's borrowing to 16 (CAP-212)
  target: {kind: ClusterQueue, name: training}
"""

LOWER = """\
- op: replace
  path: /spec/resourceGroups/0/flavors/0/resources/0/borrowingLimit
  value: 16
"""

RAISE = LOWER + """\
- op: replace
  path: /spec/resourceGroups/0/flavors/0/resources/0/nominalQuota
  value: 168
"""

PATCH = "kueue/training-borrowing.yaml"
NOTE = "no longer vouches for it"


def _commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


@pytest.fixture
def overlay(tmp_path: Path) -> Path:
    """examples/kueue with a reviewed, suppressed patch of the training queue, committed."""
    repo = Path(shutil.copytree(EXAMPLES / "kueue", tmp_path / "repo"))
    (repo / "kueue" / "kustomization.yaml").write_text(KUSTOMIZATION, encoding="utf-8")
    (repo / PATCH).write_text(LOWER, encoding="utf-8")
    git(repo, "init", "-q")
    _commit(repo, "a reviewed overlay")
    return repo


def check(repo: Path, *args: str) -> tuple[int, dict[str, object]]:
    code, out, err = run_cli(["check", "--format", "json", *args], cwd=repo)
    assert err == "", err
    return code, json.loads(out)


def _pl026(report: dict[str, object]) -> list[dict[str, object]]:
    findings = report["findings"]
    assert isinstance(findings, list)
    return [f for f in findings if f["code"] == "PL026"]


def _suppressed(repo: Path, *args: str) -> int:
    code, out, err = run_cli(["check", *args], cwd=repo)
    assert (code, err) == (0, ""), out
    return int(out.split(", ")[-1].split(" suppressed")[0]) if "suppressed" in out else 0


def test_a_patch_edited_under_a_standing_suppression_is_reported_by_the_hook_and_diff(overlay: Path) -> None:
    (overlay / PATCH).write_text(RAISE, encoding="utf-8")
    git(overlay, "add", PATCH)
    for staged in ([PATCH], [PATCH, "README.md"], ["README.md", PATCH]):
        code, report = check(overlay, "--changed-files", *staged)
        found = _pl026(report)
        assert code == 1 and len(found) == 1, (staged, report)
        assert found[0]["file"] == "kueue/kustomization.yaml" and found[0]["line"] == 9
        assert "'training-borrowing.yaml', which this entry names, changed" in str(found[0]["message"])
        assert NOTE in str(found[0]["message"]) and "rewrite its reason" in str(found[0]["hint"])
    _commit(overlay, "raise the quota through the patch")
    code, report = check(overlay, "--diff", "HEAD~1")
    assert code == 1 and len(_pl026(report)) == 1 and NOTE in str(_pl026(report)[0]["message"])
    # the whole run knows no change: the suppression holds there as before
    assert _suppressed(overlay) == 1


def test_an_inline_patch_edited_under_a_standing_suppression_is_reported(overlay: Path) -> None:
    inline = KUSTOMIZATION.replace(
        "- path: training-borrowing.yaml ",
        "- patch: '[{\"op\": \"replace\", \"path\": \"/spec/resourceGroups/0/flavors/0/resources/0/borrowingLimit\","
        " \"value\": 16}]' ",
    ).replace("(CAP-212)", "(CAP-214: written inline)")
    (overlay / "kueue" / "kustomization.yaml").write_text(inline, encoding="utf-8")
    _commit(overlay, "the patch written inline")
    assert _suppressed(overlay, "--diff", "HEAD~1") == 1  # rewritten in that change: it vouches for the entry
    raised = inline.replace('"value": 16}]', '"value": 16}, {"op": "replace", "path":'
                            ' "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota", "value": 168}]')
    (overlay / "kueue" / "kustomization.yaml").write_text(raised, encoding="utf-8")
    _commit(overlay, "raise the quota inline")
    code, report = check(overlay, "--diff", "HEAD~1")
    assert code == 1 and "this entry changed" in str(_pl026(report)[0]["message"]), report


def test_an_unsuppressed_finding_on_a_kustomization_is_kept_when_a_file_it_names_changes(overlay: Path) -> None:
    """The kustomization is reached by a change of a file it names, as a changed file's findings are kept."""
    text = KUSTOMIZATION.replace("  # policylint: disable=PL026 -- the prod overlay only lowers training's borrowing"
                                 " to 16 (CAP-212)", "")
    (overlay / "kueue" / "kustomization.yaml").write_text(text, encoding="utf-8")
    _commit(overlay, "no suppression")
    (overlay / PATCH).write_text(RAISE, encoding="utf-8")
    git(overlay, "add", PATCH)
    code, report = check(overlay, "--changed-files", PATCH)
    assert code == 1 and len(_pl026(report)) == 1 and NOTE not in str(_pl026(report)[0]["message"])


# --- what stays as it was ------------------------------------------------------------------------


def test_a_suppression_whose_reason_is_rewritten_in_the_change_still_applies(overlay: Path) -> None:
    (overlay / PATCH).write_text(RAISE, encoding="utf-8")
    text = KUSTOMIZATION.replace("only lowers training's borrowing to 16 (CAP-212)",
                                 "lowers training's borrowing to 16 and raises its quota to 168 (reviewed, CAP-230)")
    (overlay / "kueue" / "kustomization.yaml").write_text(text, encoding="utf-8")
    git(overlay, "add", "-A")
    assert _suppressed(overlay, "--changed-files", PATCH, "kueue/kustomization.yaml") == 1
    _commit(overlay, "raise the quota, reviewed again")
    assert _suppressed(overlay, "--diff", "HEAD~1") == 1


def test_a_suppression_written_with_its_patch_in_the_change_applies(tmp_path: Path) -> None:
    repo = Path(shutil.copytree(EXAMPLES / "kueue", tmp_path / "repo"))
    git(repo, "init", "-q")
    _commit(repo, "the queues")
    (repo / "kueue" / "kustomization.yaml").write_text(KUSTOMIZATION, encoding="utf-8")
    (repo / PATCH).write_text(LOWER, encoding="utf-8")
    git(repo, "add", "-A")
    assert _suppressed(repo, "--changed-files", PATCH, "kueue/kustomization.yaml") == 1
    assert _suppressed(repo, "--changed-files", PATCH) == 1
    _commit(repo, "a reviewed overlay")
    assert _suppressed(repo, "--diff", "HEAD~1") == 1


def test_a_change_elsewhere_leaves_the_suppression_alone(overlay: Path) -> None:
    readme = overlay / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8") + "\nOverlays live in kueue/.\n", encoding="utf-8")
    git(overlay, "add", "README.md")
    code, out, err = run_cli(["check", "--changed-files", "README.md"], cwd=overlay)
    assert (code, err) == (0, "") and "PL026" not in out, out
    _commit(overlay, "a note")
    assert _suppressed(overlay, "--diff", "HEAD~1") == 0
    assert _suppressed(overlay) == 1
