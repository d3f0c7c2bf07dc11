"""Demand carved out of a member that stayed, into a newcomer elsewhere at a conversion to more GPUs (``--diff``).

Round 8, 2026-12-07 (open item 6 of docs/red-team.md until closed): in ``examples/good``
``chat-assistant`` keeps a random half of every sample of its trace; the other half becomes
``chat-assistant-west`` in a new cluster's pool, declared at 5 in flight per GPU where chat runs 14.
Serving gives back what the half needed (48 + 5 proposed -> 42 reserved), prod-west reserves 30:
the same demand on 72 GPUs where it had 53, past ``check``, the pre-commit hook and ``--diff``.
The split screen looked only at members that left; the newcomer was credited with its own baseline
(PL951) and bounded by its own new pool (PL973). A newcomer whose samples, added to what the member
keeps, equal the member's trace at the base is now that member's demand, measured on the pool it ran in.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from conftest import committed_example, git, replace_once, run_cli

TRACES = Path("measurements") / "traces"
WEST_CLUSTER = "clusters/prod-west.yaml"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return committed_example(tmp_path, message="the honest plan")


def _rows(path: Path) -> tuple[str, list[tuple[str, int]]]:
    rows = path.read_text(encoding="utf-8").splitlines()
    return rows[0], [(t, int(v)) for t, v in (r.rsplit(",", 1) for r in rows[1:] if r.strip())]


def _write(path: Path, header: str, body: list[tuple[str, int]]) -> None:
    path.write_text(header + "\n" + "".join(f"{t},{v}\n" for t, v in body), encoding="utf-8")


def _west_workload(repo: Path, per_gpu: int, cluster: str, pool: str) -> None:
    """chat-assistant's document again as chat-assistant-west (its own file), citing chat-west.csv."""
    text = (repo / "workloads/product-ai.yaml").read_text(encoding="utf-8")
    start = text.index("apiVersion: policylint/v1")
    doc = text[start: text.index("  # What the team believes", start)]
    doc = (doc.replace("name: chat-assistant", "name: chat-assistant-west").replace("value: 14", f"value: {per_gpu}")
           .replace("chat-assistant.csv", "chat-west.csv").replace("cluster: prod-east", f"cluster: {cluster}")
           .replace("pool: serving", f"pool: {pool}"))
    (repo / "workloads/chat-west.yaml").write_text(doc, encoding="utf-8")


def _west_pool(repo: Path, cluster: str, pool: str, reserved: int, elastic: int) -> None:
    """A pool like prod-east/serving, in a new cluster prod-west or beside serving in prod-east."""
    east = (repo / "clusters/prod-east.yaml").read_text(encoding="utf-8")
    block = east[east.index("    - name: serving"): east.index("    - name: batch")]
    block = (block.replace("name: serving", f"name: {pool}").replace("reservedGpus: 48", f"reservedGpus: {reserved}")
             .replace("maxGpus: 10", f"maxGpus: {elastic}"))
    if cluster == "prod-east":
        (repo / "clusters/prod-east.yaml").write_text(east.replace("    - name: batch", block + "    - name: batch"),
                                                      encoding="utf-8")
    else:
        head = east[: east.index("    - name: serving")].replace("name: prod-east", f"name: {cluster}")
        (repo / WEST_CLUSTER).write_text(head.replace("region: us-east", "region: us-west") + block, encoding="utf-8")


def _carve(repo: Path, *, per_gpu: int = 5, cluster: str = "prod-west", pool: str = "serving",
           reserved: int = 30, elastic: int = 4, noised: float = 0.0, shift: int = 0, seed: int = 7,
           new_pool: bool = True) -> None:
    """Round 8's game: chat-assistant keeps a random half of every sample, chat-assistant-west holds the rest.

    ``noised``: the share of chat-assistant's kept samples moved by one afterwards; ``shift``: seconds
    chat-west.csv's clock is off. Serving gives back what the half needed and its proposal goes.
    """
    rng = random.Random(seed)
    header, body = _rows(repo / TRACES / "chat-assistant.csv")
    kept, west = [], []
    for t, v in body:
        a = sum(rng.random() < 0.5 for _ in range(v))
        west.append((str(int(t) + shift), v - a))
        if noised and rng.random() < noised:
            a = max(0, a + rng.choice((-1, 1)))
        kept.append((t, a))
    _write(repo / TRACES / "chat-assistant.csv", header, kept)
    _write(repo / TRACES / "chat-west.csv", header, west)
    _west_workload(repo, per_gpu, cluster, pool)
    if new_pool:
        _west_pool(repo, cluster, pool, reserved, elastic)
    # what the team believes of chat-assistant, kept up with its half
    for old, new in (("baseline: 300", "baseline: 148"), ("daily: 330", "daily: 161"), ("peak: 700", "peak: 321")):
        replace_once(repo / "workloads/product-ai.yaml", old, new)


def _give_back(repo: Path) -> None:
    """Serving after the carve-out: 42 reserved, 6 elastic, its 5-GPU proposal withdrawn."""
    replace_once(repo / "clusters/prod-east.yaml", "reservedGpus: 48", "reservedGpus: 42")
    replace_once(repo / "clusters/prod-east.yaml", "maxGpus: 10", "maxGpus: 6")
    (repo / "proposals/2027-q1-serving.yaml").unlink()


def _findings(repo: Path, *args: str) -> tuple[int, list[dict[str, str]]]:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the change")
    code, out, err = run_cli(["check", "--format", "json", *args], cwd=repo)
    assert code in (0, 1) and err == "", err
    return code, json.loads(out)["findings"]


def _pl950(repo: Path) -> dict[str, str]:
    _, found = _findings(repo, "--diff", "HEAD~1")
    return {f["subject"]: f["message"] for f in found if f["code"] == "PL950"}


def test_demand_carved_into_a_new_cluster_at_a_lower_per_gpu_figure_backs_no_raise(repo: Path) -> None:
    """The game as played: ``check`` passes it (it does not know what the change moved); ``--diff`` reports it."""
    _carve(repo)
    _give_back(repo)
    code, found = _findings(repo)
    assert code == 0 and found == [], found
    code, out, err = run_cli(["check", "--format", "json", "--diff", "HEAD~1"], cwd=repo)
    found950 = {f["subject"]: f["message"] for f in json.loads(out)["findings"] if f["code"] == "PL950"}
    assert code == 1 and err == "", err
    message = found950["pool prod-east/serving"]
    # the member, the newcomer and the numbers
    for words in ("72 with prod-west/serving", "chat-assistant-west holds demand carved out of chat-assistant",
                  "5 in flight per GPU where chat-assistant runs 14", "up from 53", "backs at most 53"):
        assert words in message, message
    assert list(found950) == ["pool prod-east/serving"], found950


@pytest.mark.parametrize("how", ["another pool of the same cluster", "the member's half noised",
                                 "the newcomer's clock a second off", "a new workload beside it in its pool",
                                 "the carved half delayed by an hour", "the carved half delayed by 37 minutes"])
def test_demand_carved_out_is_found_in_its_variants(repo: Path, how: str) -> None:
    if how.startswith("another pool"):
        _carve(repo, cluster="prod-east", pool="serving-west")
        where = "72 with prod-east/serving-west"
    elif how.startswith("a new workload"):
        # the new pool is found at no base pool by its workloads when one of them is new at the base
        _carve(repo)
        header, body = _rows(repo / TRACES / "chat-assistant.csv")
        rng = random.Random(2)
        _write(repo / TRACES / "other.csv", header, [(t, rng.randrange(0, 4)) for t, _ in body])
        doc = (repo / "workloads/chat-west.yaml").read_text(encoding="utf-8")
        (repo / "workloads/other-west.yaml").write_text(
            doc.replace("chat-assistant-west", "other-west").replace("chat-west.csv", "other.csv"), encoding="utf-8")
        where = "72 with prod-west/serving"
    elif how.startswith("the member's half"):
        _carve(repo, noised=0.03)  # +-1 on 3% of chat-assistant's samples after the split
        where = "72 with prod-west/serving"
    elif how.startswith("the carved half delayed"):
        # round 16: an hour's delay (+29 past every gate); not whole hours either
        _carve(repo, shift=3600 if "hour" in how else 37 * 60)
        where = "72 with prod-west/serving"
    else:
        _carve(repo, shift=1)
        where = "72 with prod-west/serving"
    _give_back(repo)
    found = _pl950(repo)
    assert "pool prod-east/serving" in found, found
    assert where in found["pool prod-east/serving"]
    assert "carved out of chat-assistant" in found["pool prod-east/serving"]


def test_demand_carved_into_a_pool_that_ran_other_workloads_brings_none_there(repo: Path) -> None:
    """Into prod-east/batch (20 reserved at the base) with batch raised by the half's GPUs at 5 per GPU: the
    newcomer was credited with its own baseline there; it is the member's demand, which serving carried."""
    _carve(repo, cluster="prod-east", pool="batch", new_pool=False)
    replace_once(repo / "clusters/prod-east.yaml", "reservedGpus: 20", "reservedGpus: 50")
    found = _pl950(repo)
    assert "pool prod-east/batch" in found, found
    assert "carved out of chat-assistant" in found["pool prod-east/batch"]


def test_a_regional_split_that_keeps_the_conversion_stays_a_newcomer(repo: Path) -> None:
    """The same halves at chat's own 14 in flight per GPU: prod-west reserves what its half needs at that figure,
    serving keeps its GPUs and its proposal. Nothing is converted to more GPUs, so nothing is reported."""
    _carve(repo, per_gpu=14, reserved=11, elastic=2)
    assert _pl950(repo) == {}


def test_a_newcomer_with_its_own_trace_at_a_lower_per_gpu_figure_is_no_carve_out(repo: Path) -> None:
    """A new workload in another cluster at 5 per GPU with an independent trace, beside chat's trace refreshed
    (its last day measured again, a tenth higher): its samples and chat's do not add up to chat's at the base."""
    header, body = _rows(repo / TRACES / "chat-assistant.csv")
    rng = random.Random(11)
    day = 288
    _write(repo / TRACES / "chat-assistant.csv", header,
           body[:-day] + [(t, round(v * 1.1)) for t, v in body[-day:]])
    _write(repo / TRACES / "chat-west.csv", header, [(t, rng.randrange(0, 2 * max(1, v // 3))) for t, v in body])
    _west_workload(repo, 5, "prod-west", "serving")
    _west_pool(repo, "prod-west", "serving", reserved=14, elastic=2)
    assert _pl950(repo) == {}


def test_honest_growth_of_a_member_whose_trace_changed_backs_its_raise(repo: Path) -> None:
    """chat's last month re-measured 35% higher, serving raised 48 -> 51 with a newcomer at another figure
    beside it, in another cluster, with a trace of its own: no carve-out, and the growth backs the raise."""
    header, body = _rows(repo / TRACES / "chat-assistant.csv")
    month = 30 * 288
    _write(repo / TRACES / "chat-assistant.csv", header,
           body[:-month] + [(t, round(v * 1.35)) for t, v in body[-month:]])
    rng = random.Random(5)
    _write(repo / TRACES / "chat-west.csv", header, [(t, rng.randrange(0, 20)) for t, _ in body])
    _west_workload(repo, 5, "prod-west", "serving")
    _west_pool(repo, "prod-west", "serving", reserved=5, elastic=2)
    replace_once(repo / "clusters/prod-east.yaml", "reservedGpus: 48", "reservedGpus: 51")
    assert _pl950(repo) == {}


def test_the_screen_needs_the_member_among_the_parts_and_something_carved(tmp_path: Path) -> None:
    """:func:`_split_of` with a required part: the member's remaining samples must be one of the parts, and must
    not match the whole alone (then nothing was carved out of it)."""
    import numpy as np

    from policylint.engine.split_members import _Budget, _split_of

    rng = np.random.default_rng(3)
    at = 1_700_000_000 + 300.0 * np.arange(600)
    whole = rng.integers(0, 40, 600).astype(float)
    kept = rng.binomial(whole.astype(int), 0.5).astype(float)
    carved = whole - kept
    other = rng.integers(0, 10, 600).astype(float)
    parts = [("chat", (at, kept)), ("west", (at, carved)), ("batch", (at, other))]
    assert _split_of((at, whole), parts, _Budget(), "chat") == ("chat", "west")
    # without the member, the newcomer alone is no carve-out of it
    assert _split_of((at, whole), [parts[1], parts[2]], _Budget(), "chat") is None
    # a member that still holds its whole trace had nothing carved out, whatever a small newcomer holds
    sparse = np.where(rng.random(600) < 0.05, 1.0, 0.0)
    assert _split_of((at, whole), [("chat", (at, whole)), ("west", (at, sparse))], _Budget(), "chat") is None
