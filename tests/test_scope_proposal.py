"""A proposal changed alone: the pools it asks GPUs for are judged by the narrowed runs too.

A proposal's GPUs are part of each requested pool's committed capacity (PL109: reserved +
proposed + elastic against the pooled daily band). A proposal added or raised on its own
reached only itself, so the hook (``check --changed-files proposals/X.yaml``) and ``check
--diff`` passed a purchase that the whole run failed with PL109 (found 2026-12-06 while
closing red-team round 15's open items: +5 GPUs on a pool whose elastic quota covers its
daily band).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import EXAMPLES, git, replace_once, run_cli

NOW = ["--now", "2026-12-01"]
PROPOSAL = "proposals/2027-q1-serving.yaml"


def _codes(repo: Path, *args: str) -> tuple[int, list[tuple[str, str]]]:
    code, out, err = run_cli(["check", *args, "--format", "json", *NOW], cwd=repo)
    assert "Traceback" not in err, err
    return code, sorted((f["code"], f["file"]) for f in json.loads(out)["findings"])


def test_a_proposal_added_alone_is_judged_with_the_pool_it_asks_for(tmp_path: Path) -> None:
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    proposal = (repo / PROPOSAL).read_text()
    # the base: no proposal, and an elastic quota that covers the serving pool's daily band
    (repo / PROPOSAL).unlink()
    replace_once(repo / "clusters/prod-east.yaml", "        maxGpus: 10\n", "        maxGpus: 15\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    assert _codes(repo, "--diff", "HEAD")[0] == 0
    (repo / PROPOSAL).write_text(proposal)  # 5 GPUs: within PL801's shortfall, beyond PL109's daily band
    git(repo, "add", PROPOSAL)
    whole = _codes(repo)
    assert whole == (1, [("PL109", "clusters/prod-east.yaml")])
    assert _codes(repo, "--changed-files", PROPOSAL) == whole  # the hook
    # the pull-request gate, which also asks the GPUs proposed to be backed by new measurements, as reserved ones
    # are (PL950; red team, 2026-12-06, round 13): none of the pool's measurements changed
    assert _codes(repo, "--diff", "HEAD") == (1, [*whole[1], ("PL950", "clusters/prod-east.yaml")])


def test_a_second_proposal_for_a_pool_is_reported_with_the_first(tmp_path: Path) -> None:
    """Split proposals are judged together (PL801 sums them): a new proposal for a pool changes the verdict on
    the pool's other proposals, and the hook reports them as the whole run does (found by the gate fuzz target)."""
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    second = "proposals/2027-q1-serving-more.yaml"
    (repo / second).write_text((repo / PROPOSAL).read_text().replace("name: 2027-q1-serving", "name: 2027-q1-more", 1))
    git(repo, "add", second)
    whole = _codes(repo)
    assert ("PL801", PROPOSAL) in whole[1] and ("PL801", second) in whole[1], whole
    assert _codes(repo, "--changed-files", second) == whole


def test_a_proposal_moved_to_another_pool_reaches_the_pool_it_left(tmp_path: Path) -> None:
    """The pool a proposal no longer asks for falls below its baseline (PL104): the hook judges it as the whole run
    does, as it judges the pool a moved workload left (found by the gate fuzz target)."""
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    replace_once(repo / PROPOSAL, "    - pool: serving\n", "    - pool: batch\n")
    git(repo, "add", PROPOSAL)
    whole = _codes(repo)
    assert ("PL104", "clusters/prod-east.yaml") in whole[1], whole
    assert _codes(repo, "--changed-files", PROPOSAL) == whole
