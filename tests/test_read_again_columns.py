"""PL111's reads of one file with other options (``double_counts._read_again``): same answers, fewer questions.

A fleet's export holding one column per workload, cited by every workload of the pool, asked
``reads_may_overlap`` of every earlier read for every read: N^2/2 questions (2,000 workloads: 2.0
million, 8 s of a pre-commit run). Reads naming disjoint value columns are now told apart by an
index of their columns. These tests hold the answers to the plain formulation's and the number of
questions to the reads that can overlap.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import pytest

import policylint.measure.reading as reading
from policylint.engine.double_counts import _read_again


@dataclass
class _Ref:
    path: str
    spec: dict[str, Any]

    @property
    def display(self) -> str:
        return self.path


@dataclass
class _Workload:
    name: str
    spec: dict[str, Any]
    measurements: dict[str, _Ref] = field(default_factory=dict)


def _workload(name: str, trace: dict[str, Any]) -> _Workload:
    return _Workload(name, {"concurrency": {"trace": trace}}, {"concurrency": _Ref(trace["path"], trace)})


def _plain(by_name: list[_Workload]) -> dict[str, tuple[str, str]]:
    """The formulation before the column index: every earlier read of the file asked in order."""
    files: dict[str, list[_Workload]] = {}
    for w in by_name:
        files.setdefault(w.measurements["concurrency"].path, []).append(w)
    out: dict[str, tuple[str, str]] = {}
    for members in files.values():
        for j, w in enumerate(members[1:], 1):
            if w.name in out:
                continue
            spec = w.measurements["concurrency"].spec
            first = next((m for m in members[:j] if reading.reads_may_overlap(m.measurements["concurrency"].spec, spec)), None)
            if first is not None:
                out[w.name] = (first.name, f"the same file {w.measurements['concurrency'].display}, read again with other options")
    return out


def _random_trace(rng: random.Random, path: str) -> dict[str, Any]:
    trace: dict[str, Any] = {"path": path}
    kind = rng.random()
    if kind < 0.6:
        trace["columns"] = rng.sample(["a", "b", "c", "d", "e", 1], rng.randint(0, 2))
    elif kind < 0.7:
        trace["columns"] = ["a"]
        trace["format"] = "jobs"  # a job list reads no value columns: they tell nothing apart
    if rng.random() < 0.3:
        trace["where"] = {"team": {"eq": rng.choice(["t1", "t2"])}}
    if rng.random() < 0.1:
        trace["key"] = {"column": "pod", "select": rng.choice(["p1", "p2"])}
    return trace


@pytest.mark.parametrize("seed", range(20))
def test_the_same_repeats_as_asking_every_earlier_read(seed: int) -> None:
    rng = random.Random(seed)
    paths = [f"/nonexistent/sweep/{p}.csv" for p in "xyz"]
    by_name = [_workload(f"w-{i:03d}", _random_trace(rng, rng.choice(paths))) for i in range(60)]
    found: dict[str, tuple[str, str]] = {}
    _read_again(by_name, found)  # type: ignore[arg-type]
    assert found == _plain(by_name)


def test_one_column_per_workload_asks_no_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = [0]
    real = reading.reads_may_overlap

    def counting(a: Any, b: Any) -> bool:
        asked[0] += 1
        return real(a, b)

    monkeypatch.setattr(reading, "reads_may_overlap", counting)
    path = "/nonexistent/sweep/fleet.csv"
    by_name = [_workload(f"w-{i:04d}", {"path": path, "columns": [f"w_{i}"]}) for i in range(500)]
    # two more: one summing two workloads' columns, one naming none (it may read any column)
    by_name.append(_workload("x-sum", {"path": path, "columns": ["w_3", "w_9"]}))
    by_name.append(_workload("y-all", {"path": path}))
    found: dict[str, tuple[str, str]] = {}
    _read_again(by_name, found)  # type: ignore[arg-type]
    assert found == {
        "x-sum": ("w-0003", f"the same file {path}, read again with other options"),
        "y-all": ("w-0000", f"the same file {path}, read again with other options"),
    }
    assert asked[0] == 2  # the plain formulation asks 125,751 questions here
