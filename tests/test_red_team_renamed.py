"""A workload renamed in the same change as its trace was moved is not a newcomer beside itself (``--diff``).

Third red team, 2026-12-07: PL950 found a workload at the base by its name, else by the trace
path it cites. ``fine-tuning`` renamed ``fine-tuning-v3`` with its trace moved (``git mv``) in
one commit was neither, so it counted as a newcomer: its baseline today (104 GPUs) was added to
what the pool already carried at the base, which had carried fine-tuning itself, and training
rose 392 -> 450 past ``check``, the hook and ``--diff``. With ``chat-assistant`` renamed the same
way and its per-GPU figure halved, serving rose 53 -> 74. A trace is now also found by the file
git's rename detection says it was moved from, and a newcomer's baseline backs growth only beyond
the baselines of the members that left the pool in the change.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import committed_example, git, run_cli

TRAINING = "clusters/train-central.yaml"
SERVING = "clusters/prod-east.yaml"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return committed_example(tmp_path, message="the honest plan")


def _edit(repo: Path, name: str, old: str, new: str) -> None:
    path = repo / name
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new), encoding="utf-8")


def _pl950(repo: Path) -> dict[str, str]:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the change")
    code, out, err = run_cli(["check", "--format", "json", "--diff", "HEAD~1"], cwd=repo)
    assert code in (0, 1) and err == "", err
    return {f["subject"]: f["message"] for f in json.loads(out)["findings"] if f["code"] == "PL950"}


def _rename(repo: Path, how: str, old: str = "fine-tuning", new: str = "fine-tuning-v3",
            doc: str = "workloads/research.yaml") -> None:
    traces = repo / "measurements" / "traces"
    if how == "git mv":
        git(repo, "mv", f"measurements/traces/{old}.csv", f"measurements/traces/{new}.csv")
    else:  # copied, a few samples edited, the old file deleted: git pairs them all the same
        rows = (traces / f"{old}.csv").read_text(encoding="utf-8").splitlines()
        for k in range(100, len(rows), 5000):
            stamp, value = rows[k].rsplit(",", 1)
            rows[k] = f"{stamp},{int(value) + 1}"
        (traces / f"{new}.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
        (traces / f"{old}.csv").unlink()
    _edit(repo, doc, f"  name: {old}\n", f"  name: {new}\n")
    _edit(repo, doc, f"traces/{old}.csv", f"traces/{new}.csv")


@pytest.mark.parametrize("how", ["git mv", "copied with samples edited"])
def test_a_workload_renamed_with_its_trace_moved_backs_no_raise(repo: Path, how: str) -> None:
    _rename(repo, how)
    _edit(repo, TRAINING, "reservedGpus: 392", "reservedGpus: 450")
    _edit(repo, TRAINING, "maxGpus: 40", "maxGpus: 46")
    found = _pl950(repo)
    assert "pool train-central/training" in found, found
    assert "reserves 450 GPUs, up from 392" in found["pool train-central/training"]


def test_a_rename_that_also_halves_the_per_gpu_figure_backs_no_raise(repo: Path) -> None:
    _rename(repo, "git mv", "chat-assistant", "chat-assistant-v2", "workloads/product-ai.yaml")
    _edit(repo, "workloads/product-ai.yaml", "    value: 14\n", "    value: 7\n")
    (repo / "proposals" / "2027-q1-serving.yaml").unlink()
    _edit(repo, SERVING, "reservedGpus: 48", "reservedGpus: 74")
    _edit(repo, SERVING, "maxGpus: 10", "maxGpus: 5")
    found = _pl950(repo)
    assert "pool prod-east/serving" in found and "reserves 74 GPUs" in found["pool prod-east/serving"], found


def test_a_workload_that_left_takes_its_baseline_with_it(repo: Path) -> None:
    """No rename to see: fine-tuning deleted, and a workload with a trace of its own (two to four jobs, nothing
    like fine-tuning's) in its place. The newcomer's baseline backs only what it adds beyond the 104 GPUs that
    left with fine-tuning: here nothing."""
    import numpy as np

    traces = repo / "measurements" / "traces"
    header, *rows = (traces / "fine-tuning.csv").read_text(encoding="utf-8").splitlines()
    jobs = np.random.default_rng(7).integers(2, 5, size=len(rows))
    (traces / "post-training.csv").write_text(
        "\n".join([header, *(f"{r.split(',', 1)[0]},{j}" for r, j in zip(rows, jobs.tolist()))]) + "\n",
        encoding="utf-8")
    (traces / "fine-tuning.csv").unlink()
    _edit(repo, "workloads/research.yaml", "  name: fine-tuning\n", "  name: post-training\n")
    _edit(repo, "workloads/research.yaml", "traces/fine-tuning.csv", "traces/post-training.csv")
    _edit(repo, TRAINING, "reservedGpus: 392", "reservedGpus: 410")
    found = _pl950(repo)
    assert "pool train-central/training" in found, found
    assert "at most 392" in found["pool train-central/training"], found


def test_a_rename_alone_is_still_no_finding(repo: Path) -> None:
    """Renaming a workload and moving its trace without touching capacity is nothing PL950 reports."""
    _rename(repo, "git mv")
    assert _pl950(repo) == {}


def test_a_renamed_workload_is_not_a_member_that_left_when_a_new_one_arrives(repo: Path) -> None:
    """fine-tuning renamed with its trace moved, and a new workload with a trace of its own beside it: the new
    one's baseline backs a raise of as much; fine-tuning-v3 is fine-tuning, so no baseline left the pool."""
    import numpy as np

    _rename(repo, "git mv")
    research = repo / "workloads" / "research.yaml"
    text = research.read_text(encoding="utf-8")
    start = text.index("apiVersion:", text.index("---\n", text.index("name: fine-tuning-v3") - 200))
    end = text.index("---\n", start)
    doc = text[start:end].replace("name: fine-tuning-v3", "name: reward-models").replace(
        "traces/fine-tuning-v3.csv", "traces/reward-models.csv")
    research.write_text(text + "---\n" + doc, encoding="utf-8")
    traces = repo / "measurements" / "traces"
    header, *rows = (traces / "fine-tuning-v3.csv").read_text(encoding="utf-8").splitlines()
    jobs = np.random.default_rng(20261207).integers(2, 5, size=len(rows))  # two to four 8-GPU jobs
    (traces / "reward-models.csv").write_text(
        "\n".join([header, *(f"{r.split(',', 1)[0]},{j}" for r, j in zip(rows, jobs.tolist()))]) + "\n",
        encoding="utf-8")
    _edit(repo, TRAINING, "reservedGpus: 392", "reservedGpus: 400")
    assert "pool train-central/training" not in _pl950(repo)


@pytest.mark.parametrize("edited", [False, True])
def test_a_rename_beside_a_trace_written_anew_backs_no_raise(repo: Path, edited: bool) -> None:
    """Fourth red team, 2026-12-07: chat-assistant renamed and its trace written anew with ISO times for its epoch
    seconds, so every line differs and git pairs no rename; its per-GPU figure halved and serving 48 -> 69 reserved.
    The workload that left holds the newcomer's samples (the same print, or run sketches as alike as a copy's), so
    the newcomer is that workload renamed, measured on the pool it ran in."""
    import datetime as dt

    traces = repo / "measurements" / "traces"
    _, *rows = (traces / "chat-assistant.csv").read_text(encoding="utf-8").splitlines()
    out = ["time,in_flight"]
    for k, row in enumerate(rows):
        stamp, value = row.split(",")
        when = dt.datetime.fromtimestamp(int(stamp), dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        out.append(f"{when},{int(value) + (1 if edited and k % 3000 == 7 else 0)}")
    (traces / "chat-assistant-v2.csv").write_text("\n".join(out) + "\n", encoding="utf-8")
    (traces / "chat-assistant.csv").unlink()
    doc = "workloads/product-ai.yaml"
    _edit(repo, doc, "  name: chat-assistant\n", "  name: chat-assistant-v2\n")
    _edit(repo, doc, "traces/chat-assistant.csv\n      format: csv\n      timestampColumn: timestamp",
          "traces/chat-assistant-v2.csv\n      format: csv\n      timestampColumn: time")
    _edit(repo, doc, "    value: 14\n", "    value: 7\n")
    _edit(repo, "proposals/2027-q1-serving.yaml", "[chat-assistant,", "[chat-assistant-v2,")
    _edit(repo, SERVING, "reservedGpus: 48", "reservedGpus: 69")
    found = _pl950(repo)
    assert "pool prod-east/serving" in found and "74 in all, up from 53" in found["pool prod-east/serving"], found
