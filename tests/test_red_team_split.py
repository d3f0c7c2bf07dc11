"""A member that left a pool split into newcomers, each with part of every sample, backs no raise (``--diff``).

Sixth red team, 2026-12-07: ``chat-assistant`` deleted, ``chat-assistant-eu`` and ``-us`` added
with its declarations but the per-GPU figure halved (14 -> 7), each sample's in-flight count
split at random between their two traces. No half held the departed trace's samples, so PL950
netted the newcomers (at the halved figure) against the departed baseline as the base declared
it, and serving rose 48 -> 70 past every gate. A set of newcomers whose samples add up to a
departed member's is now that member, measured on the pool it ran in.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from conftest import EXAMPLES, committed_example, git, replace_once, run_cli

WORKLOADS = "workloads/product-ai.yaml"
TRACES = Path("measurements") / "traces"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return committed_example(tmp_path, message="the honest plan")


def _edit(repo: Path, name: str, old: str, new: str) -> None:
    replace_once(repo / name, old, new)


def _split(repo: Path, regions: list[str], per_gpu: int, edited: int = 0, seed: int = 7) -> None:
    """chat-assistant replaced by one workload per region, each sample's count dealt at random among them."""
    rng = random.Random(seed)
    rows = (repo / TRACES / "chat-assistant.csv").read_text(encoding="utf-8").splitlines()
    parts: list[list[str]] = [[rows[0]] for _ in regions]
    for k, row in enumerate(r for r in rows[1:] if r.strip()):
        stamp, value = row.rsplit(",", 1)
        shares = [0] * len(regions)
        for _ in range(int(value)):
            shares[rng.randrange(len(regions))] += 1
        if edited and k % (len(rows) // edited) == 0:
            shares[0] += 3  # a few samples edited after the split
        for part, share in zip(parts, shares):
            part.append(f"{stamp},{share}")
    for region, part in zip(regions, parts):
        (repo / TRACES / f"chat-{region}.csv").write_text("\n".join(part) + "\n", encoding="utf-8")
    (repo / TRACES / "chat-assistant.csv").unlink()
    text = (repo / WORKLOADS).read_text(encoding="utf-8")
    start = text.index("apiVersion: policylint/v1")
    end = text.index("---", start)
    doc = text[start:end]
    doc = doc[: doc.index("  # What the team believes")].replace("value: 14", f"value: {per_gpu}")
    made = [doc.replace("name: chat-assistant", f"name: chat-assistant-{r}")
            .replace("chat-assistant.csv", f"chat-{r}.csv") for r in regions]
    (repo / WORKLOADS).write_text(text[:start] + "---\n".join(made) + text[end:], encoding="utf-8")
    listed = ", ".join(f"chat-assistant-{r}" for r in regions)
    _edit(repo, "proposals/2027-q1-serving.yaml", "workloads: [chat-assistant,", f"workloads: [{listed},")


def _pl950(repo: Path) -> dict[str, str]:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the change")
    code, out, err = run_cli(["check", "--format", "json", "--diff", "HEAD~1"], cwd=repo)
    assert code in (0, 1) and err == "", err
    return {f["subject"]: f["message"] for f in json.loads(out)["findings"] if f["code"] == "PL950"}


@pytest.mark.parametrize("edited", [0, 40], ids=["exact halves", "40 samples edited after"])
def test_a_member_split_in_halves_with_a_halved_per_gpu_figure_backs_no_raise(repo: Path, edited: int) -> None:
    _split(repo, ["eu", "us"], per_gpu=7, edited=edited)
    _edit(repo, "clusters/prod-east.yaml", "reservedGpus: 48", "reservedGpus: 70")
    _edit(repo, "clusters/prod-east.yaml", "maxGpus: 10", "maxGpus: 9")
    found = _pl950(repo)
    assert "pool prod-east/serving" in found, found
    assert "reserves 70 GPUs" in found["pool prod-east/serving"]


def test_a_three_way_split_is_found_too(repo: Path) -> None:
    _split(repo, ["eu", "us", "ap"], per_gpu=5)
    _edit(repo, "clusters/prod-east.yaml", "reservedGpus: 48", "reservedGpus: 70")
    assert "pool prod-east/serving" in _pl950(repo)


def test_an_honest_split_that_keeps_the_per_gpu_figure_and_the_pool_is_no_finding(repo: Path) -> None:
    _split(repo, ["eu", "us"], per_gpu=14)
    assert _pl950(repo) == {}


def test_only_the_parts_of_the_split_are_recognised(tmp_path: Path) -> None:
    """A newcomer that is no part of the departed trace stays a newcomer; parts must add up to it."""
    from types import SimpleNamespace

    from policylint.engine.split_members import split_members
    from policylint.model import MeasurementRef

    def workload(name: str, values: list[int]) -> SimpleNamespace:
        path = tmp_path / f"{name}.csv"
        rows = [f"{1_700_000_000 + 300 * k},{v}" for k, v in enumerate(values)]
        path.write_text("timestamp,in_flight\n" + "\n".join(rows) + "\n", encoding="utf-8")
        spec = {"path": path.name, "format": "csv", "timestampColumn": "timestamp", "columns": ["in_flight"]}
        ref = MeasurementRef(name, "concurrency", None, ("spec", "concurrency", "trace"), spec, path,  # type: ignore[arg-type]
                             path.name)
        return SimpleNamespace(name=name, measurements={"concurrency": ref})

    rng = random.Random(3)
    whole = [rng.randrange(0, 40) for _ in range(600)]
    left = [rng.randrange(0, v + 1) for v in whole]
    right = [w - a for w, a in zip(whole, left)]
    other = [rng.randrange(0, 10) for _ in range(600)]
    gone = workload("chat", whole)
    fresh = {n: workload(n, v) for n, v in (("eu", left), ("us", right), ("batch", other))}
    found = split_members([gone], fresh, None)  # type: ignore[arg-type]
    assert [(x.name, parts) for x, parts in found] == [("chat", ("eu", "us"))]
    # one half alone does not add up to the whole
    assert split_members([gone], {"eu": fresh["eu"], "batch": fresh["batch"]}, None) == []  # type: ignore[arg-type]


def test_a_split_with_one_half_a_second_off_is_still_found(repo: Path) -> None:
    """Round 8: the ``-us`` half's times moved by one second were compared only at equal times, and passed."""
    _split(repo, ["eu", "us"], per_gpu=7)
    path = repo / TRACES / "chat-us.csv"
    rows = path.read_text(encoding="utf-8").splitlines()
    moved = [rows[0]] + [f"{int(t) + 1},{v}" for t, v in (r.split(",") for r in rows[1:] if r)]
    path.write_text("\n".join(moved) + "\n", encoding="utf-8")
    _edit(repo, "clusters/prod-east.yaml", "reservedGpus: 48", "reservedGpus: 70")
    assert "pool prod-east/serving" in _pl950(repo)


@pytest.mark.parametrize("how", ["half a step off", "an eighth of one half's samples edited"])
def test_a_split_read_at_its_own_phase_or_edited_after_is_still_found(repo: Path, how: str) -> None:
    """Round 9: one half's times moved by exactly half a step (150 s), or 12.5% of one half's samples moved by one,
    passed the split screen (parts read within half a step, 90% of the samples equal)."""
    _split(repo, ["eu", "us"], per_gpu=7)
    name = "chat-us.csv" if how.startswith("half") else "chat-eu.csv"
    path = repo / TRACES / name
    rows = path.read_text(encoding="utf-8").splitlines()
    body = [r.split(",") for r in rows[1:] if r]
    if how.startswith("half"):
        body = [[str(int(t) + 150), v] for t, v in body]
    else:
        body = [[t, str(max(0, int(v) + (1 if k % 16 == 0 else -1 if k % 16 == 8 else 0)))] for k, (t, v) in enumerate(body)]
    path.write_text(rows[0] + "\n" + "".join(f"{t},{v}\n" for t, v in body), encoding="utf-8")
    _edit(repo, "clusters/prod-east.yaml", "reservedGpus: 48", "reservedGpus: 70")
    assert "pool prod-east/serving" in _pl950(repo)


def test_an_honest_split_with_new_demand_measured_may_raise_the_pool(tmp_path: Path) -> None:
    """False-positive hunt, 2026-12-07: a regional split (per-GPU figure kept) whose traces add a month of 35%
    growth to the base's was held to the base's baseline; its parts stay newcomers and the growth backs the raise."""
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    trace = repo / TRACES / "chat-assistant.csv"
    rows = trace.read_text(encoding="utf-8").splitlines()
    cut = 61 * 288
    trace.write_text("\n".join(rows[: cut + 1]) + "\n", encoding="utf-8")  # exported a month earlier
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the base")
    samples = [(t, int(v)) for t, v in (r.split(",") for r in rows[1:] if r)]
    samples = samples[:cut] + [(t, round(v * 1.35)) for t, v in samples[cut:]]
    trace.write_text(rows[0] + "\n" + "".join(f"{t},{v}\n" for t, v in samples), encoding="utf-8")
    _split(repo, ["eu", "us"], per_gpu=14)
    # 51 + 5 proposed: within the base's declared baseline and the newcomers' (a split taken for the departed
    # member would allow only the base's 53)
    _edit(repo, "clusters/prod-east.yaml", "reservedGpus: 48", "reservedGpus: 51")
    found = _pl950(repo)
    assert found == {}, found["pool prod-east/serving"]
