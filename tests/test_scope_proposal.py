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
