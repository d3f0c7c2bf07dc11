"""A trace dealt out among "pods" that take turns is refused in a sum (red team, 2026-12-07).

A sum carries each series' last value over the grid points where it has no sample, as a pod
keeps its demand between scrapes. embeddings-search's Prometheus export rewritten as two pods,
one holding four of every five samples and the other the fifth - every sample still once in the
file - was summed to twice its demand: a baseline of 11 GPUs read as 22, serving 53 -> 64 past
``check``, the hook and ``--diff``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import EXAMPLES, run_cli
from policylint.errors import MeasurementError
from policylint.readers.grid import combine

TRACE = Path("measurements") / "traces" / "embeddings-search.json"
STEP = 300.0


def _sum(*parts: tuple[str, np.ndarray, np.ndarray], step: float | None = None) -> np.ndarray:
    return combine(list(parts), "sum", name="pods", step_seconds=step, max_gap_steps=5).values


def _trace(n: int = 2000, seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return np.arange(n, dtype=np.float64) * STEP, rng.integers(20, 60, size=n).astype(np.float64)


@pytest.mark.parametrize("dealt", [lambda k: k % 5 == 4, lambda k: k % 6 >= 3, lambda k: k % 10 == 0],
                         ids=["one in five", "blocks of three", "one in ten"])
def test_a_trace_dealt_out_among_pods_is_refused(dealt: object) -> None:
    times, values = _trace()
    second = np.array([dealt(k) for k in range(times.size)])  # type: ignore[operator]
    with pytest.raises(MeasurementError, match="take turns: in the .* they share"):
        _sum(("pod-0", times[~second], values[~second]), ("pod-1", times[second], values[second]))


def test_pods_measured_apart_are_summed() -> None:
    """Real pods: on one axis, at their own scrape offsets, or at steps of their own on one clock."""
    times, a = _trace(seed=1)
    _, b = _trace(seed=2)
    assert np.array_equal(_sum(("a", times, a), ("b", times, b)), a + b)  # one axis (a range query)
    offset = _sum(("a", times, a), ("b", times + 15, b))  # scraped 15 s apart
    assert np.nanmax(offset) > 0 and np.nansum(offset) == pytest.approx(np.sum(a) + np.sum(b[:-1]), rel=0.01)
    fine = np.arange(10_000, dtype=np.float64) * 60  # a pod every minute beside one every five minutes
    _sum(("a", fine, np.ones(fine.size)), ("b", times, b))
    # every five minutes each, half a step apart: the same as two pods taking turns at 150 s, and summed
    # (what no rule can tell from a trace dealt out 1:1; left open in docs/red-team.md)
    _sum(("a", times, a), ("b", times + 150, b))
    # a pod that missed a few scrapes is still a pod, beside one on the same clock or at a coarser step
    missed = np.ones(times.size, dtype=bool)
    missed[::20] = False
    _sum(("a", times[missed], a[missed]), ("b", times + 15, b))
    fine_missed = np.ones(fine.size, dtype=bool)
    fine_missed[::20] = False
    _sum(("a", fine[fine_missed], np.ones(int(fine_missed.sum()))), ("b", times + 7, b))
    # a rollout: the new pod replaces the old one (spans that do not meet), scraped at another step
    _sum(("old", times[:1000], a[:1000]), ("new", times[1000] + 600 * np.arange(500.0), b[:500]))


@pytest.mark.parametrize("how", ["jittered", "shared"])
def test_pods_taking_turns_with_jitter_or_a_few_shared_times_are_refused(how: str) -> None:
    """Round 8: each time moved a second or two, or one sample in fifteen given to both pods, passed the first screen."""
    times, values = _trace()
    rng = np.random.default_rng(11)
    second = np.arange(times.size) % 4 == 3
    if how == "jittered":
        times = times + rng.integers(-2, 3, size=times.size)
        a, b = (times[~second], values[~second]), (times[second], values[second])
    else:
        both = np.arange(times.size) % 15 == 0
        a, b = (times[~second | both], values[~second | both]), (times[second | both], values[second | both])
    with pytest.raises(MeasurementError, match="take turns"):
        _sum(("pod-0", *a), ("pod-1", *b))


def test_pods_taking_turns_with_each_sample_written_three_times_are_refused() -> None:
    """Round 9: each of pod-1's samples written three times a second apart made its own step one second."""
    times, values = _trace()
    second = np.arange(times.size) % 5 == 4
    twice = np.concatenate([times[second] + d for d in (0.0, 1.0, 2.0)])
    order = np.argsort(twice, kind="stable")
    with pytest.raises(MeasurementError, match="take turns"):
        _sum(("pod-0", times[~second], values[~second]),
             ("pod-1", twice[order], np.tile(values[second], 3)[order]))


def test_the_game_fails_the_check(tmp_path: Path) -> None:
    repo = Path(shutil.copytree(EXAMPLES / "good", tmp_path / "repo"))
    data = json.loads((repo / TRACE).read_text(encoding="utf-8"))
    [result] = data["data"]["result"]
    values = result["values"]
    data["data"]["result"] = [
        {"metric": {**result["metric"], "pod": "embed-0"}, "values": [v for i, v in enumerate(values) if i % 5 != 4]},
        {"metric": {**result["metric"], "pod": "embed-1"}, "values": [v for i, v in enumerate(values) if i % 5 == 4]},
    ]
    (repo / TRACE).write_text(json.dumps(data), encoding="utf-8")
    code, out, err = run_cli(["check", "--format", "json", "."], cwd=repo)
    assert err == "" and code == 1
    found = [f for f in json.loads(out)["findings"] if f["code"] == "PL024"]
    assert len(found) == 1 and found[0]["file"] == "workloads/search.yaml", found
    assert "take turns" in found[0]["message"]
