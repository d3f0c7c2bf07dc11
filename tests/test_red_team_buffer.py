"""A buffer is GPUs bought: raised under ``--diff``, PL950 judges it as a raise of reserved GPUs.

The game (red team round 21, 2026-12-07): in ``examples/good``, sixty 64-GPU jobs of 4 to 25 minutes
written into pre-training's job list (start-up failures, say) pull the median job duration from days
to minutes, so p99 is hundreds of times p50: a long tail. Training's pool then switches preemption
off and keeps ``bufferGpus: 64``; PL601 asks for exactly that and PL603 allows it. The short jobs
are noise to every band (shorter than the sustained window), so no band rule moves, and PL950
compared reserved GPUs only: +64 idle GPUs past ``check``, the hook and ``--diff``.
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

from conftest import committed_example, git, replace_once, run_cli

CLUSTER, JOBS = "clusters/train-central.yaml", "measurements/jobs/pre-training.csv"


def _diff(repo: Path) -> tuple[int, list[dict[str, object]]]:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "change")
    code, out, err = run_cli(["check", "--format", "json", "--diff", "HEAD~1", "."], cwd=repo)
    assert "Traceback" not in err, err
    return code, json.loads(out)["findings"]


def _pl950(found: list[dict[str, object]]) -> list[str]:
    return [str(f["message"]) for f in found if f["code"] == "PL950"]


def _buffer(repo: Path, gpus: int) -> None:
    replace_once(repo / CLUSTER, "        preemption: true", f"        preemption: false\n      bufferGpus: {gpus}")


def _short_jobs(repo: Path) -> None:
    path = repo / JOBS
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    rnd = random.Random(7)
    lo, hi = 1788134400 + 3600, 1796083200 - 86400
    for i in range(60):
        start, seconds = rnd.randrange(lo, hi), rnd.randrange(240, 1500)
        rows.append({"job_id": f"pt-{50 + i:05d}", "start": str(start), "end": str(start + seconds), "gpus": "64"})
    rows.sort(key=lambda r: int(r["start"]))
    with path.open("w", encoding="utf-8", newline="") as f:
        out = csv.DictWriter(f, fieldnames=["job_id", "start", "end", "gpus"], lineterminator="\n")
        out.writeheader()
        out.writerows(rows)
    replace_once(repo / "workloads/research.yaml", "    daily: 6\n    peak: 6", "    daily: 6\n    peak: 7")


def test_a_buffer_raised_beside_a_tail_written_into_the_job_list_is_a_raise(tmp_path: Path) -> None:
    repo = committed_example(tmp_path)
    _short_jobs(repo)
    _buffer(repo, 64)
    code, found = _diff(repo)
    [message] = _pl950(found)
    assert code == 1
    assert "train-central/training reserves 392 GPUs and keeps 64 more free as a buffer, 456 in all" in message
    assert "up from 392 at the base revision" in message


def test_a_buffer_alone_raised_with_no_new_evidence_is_a_raise(tmp_path: Path) -> None:
    repo = committed_example(tmp_path)
    _buffer(repo, 8)
    code, found = _diff(repo)
    [message] = _pl950(found)
    assert "keeps 8 more free as a buffer, 400 in all" in message and "no measurement" in message


def test_a_buffer_kept_or_paid_for_by_reserved_gpus_is_no_raise(tmp_path: Path) -> None:
    repo = committed_example(tmp_path, message="base")
    _buffer(repo, 8)
    replace_once(repo / CLUSTER, "reservedGpus: 392", "reservedGpus: 384")  # eight reserved GPUs become the buffer
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "buffer from reserved")
    code, out, _ = run_cli(["check", "--format", "json", "--diff", "HEAD~1", "."], cwd=repo)
    assert _pl950(json.loads(out)["findings"]) == []
    # the next change keeps that buffer and lowers it: nothing grew
    replace_once(repo / CLUSTER, "bufferGpus: 8", "bufferGpus: 4")
    code, found = _diff(repo)
    assert _pl950(found) == []
