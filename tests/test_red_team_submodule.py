"""``--diff`` reads a cluster file kept in a git submodule at the commit the base names (red team, 2026-12-07, round 16).

``clusters/`` was a submodule; the change bumped it with a raise. In the base tree a submodule is a
commit id, not files, so the pool had no base and PL950 was silent; a bump of the submodule alone
was not even a change of any file the narrowed run knew. The base's files in a submodule are now
read from a git folder that holds the commit the base names, and when none does (a submodule
fetched shallow) the pool is reported rather than passed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import EXAMPLES, git, replace_once, run_cli

SERVING = "clusters/prod-east.yaml"


def _with_clusters_in_a_submodule(tmp_path: Path) -> Path:
    """``examples/good`` with ``clusters/`` a submodule cloned from a local bare repository, committed."""
    source = Path(shutil.copytree(EXAMPLES / "good" / "clusters", tmp_path / "clusters-source"))
    git(source, "init", "-q")
    git(source, "add", "-A")
    git(source, "commit", "-qm", "the clusters")
    bare = tmp_path / "clusters.git"
    git(tmp_path, "clone", "-q", "--bare", str(source), str(bare))
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo", ignore=shutil.ignore_patterns("clusters")))
    git(repo, "init", "-q")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", bare.as_uri(), "clusters")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the honest plan")
    return repo


def _bump(repo: Path, message: str) -> None:
    """Commit the edits in the submodule, and the submodule's new commit (with any edit of the parent) above it."""
    git(repo / "clusters", "commit", "-qam", message)
    git(repo / "clusters", "push", "-q", "origin", "HEAD")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


def _findings(repo: Path, *args: str) -> tuple[int, list[dict[str, str]]]:
    code, out, err = run_cli(["check", "--format", "json", *args], cwd=repo)
    assert code in (0, 1) and err == "", err
    return code, json.loads(out)["findings"]


def _raise_serving(repo: Path, proposal_too: bool) -> None:
    # 48 reserved + 5 proposed -> 55 (+2), or 60 with the proposal taken away (+7, within PL101's headroom)
    replace_once(repo / SERVING, "reservedGpus: 48", "reservedGpus: 60" if proposal_too else "reservedGpus: 55")
    replace_once(repo / SERVING, "maxGpus: 10", "maxGpus: 4")
    if proposal_too:
        git(repo, "rm", "-q", "proposals/2027-q1-serving.yaml")
    _bump(repo, "raise serving")


@pytest.mark.parametrize("proposal_too", [True, False], ids=["with-the-proposal-removed", "the-submodule-alone"])
def test_a_raise_committed_in_a_submodule_is_judged_against_the_base(tmp_path: Path, proposal_too: bool) -> None:
    repo = _with_clusters_in_a_submodule(tmp_path)
    _raise_serving(repo, proposal_too)
    if proposal_too:
        assert _findings(repo)[0] == 0  # the game: check alone has nothing to compare with
    code, found = _findings(repo, "--diff", "HEAD~1")
    assert code == 1
    pl950 = [f for f in found if f["code"] == "PL950"]
    assert [f["subject"] for f in pl950] == ["pool prod-east/serving"]
    assert "up from 53 at the base revision (48 owned and 5 proposed)" in pl950[0]["message"]
    assert pl950[0]["file"] == SERVING


def test_a_sound_change_in_a_submodule_stays_clean(tmp_path: Path) -> None:
    # the proposal taken delivery of: 48 reserved + 5 proposed -> 53 reserved, no raise; and a comment edited
    repo = _with_clusters_in_a_submodule(tmp_path)
    replace_once(repo / SERVING, "reservedGpus: 48", "reservedGpus: 53")
    replace_once(repo / "clusters/train-central.yaml", "kind: Cluster\n", "kind: Cluster  # reviewed\n")
    git(repo, "rm", "-q", "proposals/2027-q1-serving.yaml")
    _bump(repo, "take delivery of the serving proposal")
    code, found = _findings(repo, "--diff", "HEAD~1")
    assert (code, found) == (0, [])


def test_a_base_commit_the_submodule_does_not_hold_is_reported_not_passed(tmp_path: Path) -> None:
    # a CI clone that fetched the submodule shallow holds only the bumped commit: fail closed
    repo = _with_clusters_in_a_submodule(tmp_path)
    _raise_serving(repo, proposal_too=True)
    ci = tmp_path / "ci"
    git(tmp_path, "clone", "-q", repo.as_uri(), str(ci))
    git(ci, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init", "--depth", "1")
    assert git(ci / "clusters", "rev-list", "--count", "HEAD").strip() == "1"
    code, found = _findings(ci, "--diff", "HEAD~1")
    assert code == 1
    serving = [f for f in found if f["code"] == "PL950" and f["subject"] == "pool prod-east/serving"]
    assert len(serving) == 1
    message = serving[0]["message"]
    assert "the base revision of clusters/prod-east.yaml cannot be read: it lies in the submodule clusters" in message
    assert "does not hold commit" in message and "nothing shows what the pool owned then" in message
    # the base is unknown, not empty: no "0 in all" for what the pool may keep (the verdict still fails closed)
    for finding in (f for f in found if f["code"] == "PL950"):
        assert " 0 in all" not in finding["hint"] and " 0 " not in finding["message"], finding
        assert finding["hint"].endswith("at what the base revision held, which could not be read here"), finding["hint"]
