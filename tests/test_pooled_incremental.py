"""A pool's kept sum is updated from the changed member's old and new series, and a run stays what --no-cache prints.

One member of a pool is edited again and again - a value of its spec, a sample
of its trace, a member added, removed, moved to another pool, a trace file
swapped - and after every edit the pre-commit run (``check --changed-files``)
with a warm cache prints byte for byte what the same run prints with
``--no-cache``. The warm runs update the pool's kept sum
(:mod:`policylint.measure.pooled_cache`) instead of reading every member's series back:
that is checked too, by counting the series entries read.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import GIT_IDENTITY, run_cli
from test_neighbours import _WORKLOAD, TRACES, WHEN, _trace

from policylint.measure import measurement_cache as measure_cache
from policylint.measure import pools
from policylint.measure import pooled_cache
from policylint.cache import store
from policylint.measure.pooled import GpuMember, GridSpec, align, grid_spec, on_grid

_CLUSTER = """apiVersion: policylint/v1
kind: Cluster
metadata:
  name: fleet
spec:
  pools:
    - name: shared
      gpu: {model: H100-80GB, memoryGiB: 80}
      reservedGpus: 40
      elastic: {maxGpus: 4, kind: autoscale, coldStartSeconds: 300}
      serves: [inference]
      overflow: queue
      queue: {maxDepth: 100, maxWaitSeconds: 30}
      scheduling: {gang: true, preemption: true}
    - name: other
      gpu: {model: H100-80GB, memoryGiB: 80}
      reservedGpus: 40
      elastic: {maxGpus: 4, kind: autoscale, coldStartSeconds: 300}
      serves: [inference]
      overflow: queue
      queue: {maxDepth: 100, maxWaitSeconds: 30}
      scheduling: {gang: true, preemption: true}
"""


def _column(source: Path) -> str:
    return source.read_text().split("\n", 1)[0].split(",")[1]


def _write_workload(root: Path, i: int, *, pool: str = "shared", tolerance: int | None = None, trace: str | None = None) -> None:
    text = _WORKLOAD.format(
        i=i, team=i % 3, column=_column(TRACES[i % 2]), tolerance=tolerance or 5 + 10 * i, evidence="SLO document, section 3"
    )
    text = text.replace("pool: shared", f"pool: {pool}")
    if trace is not None:
        text = text.replace(f"../traces/w-{i}.csv", f"../traces/{trace}")
    (root / "workloads" / f"w-{i}.yaml").write_text(text)


def _write_trace(root: Path, i: int, name: str | None = None) -> None:
    (root / "traces" / (name or f"w-{i}.csv")).write_text(_trace(TRACES[i % 2], i))


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "workloads").mkdir(parents=True)
    (root / "traces").mkdir()
    (root / "cluster.yaml").write_text(_CLUSTER)
    for i in range(8):
        _write_trace(root, i)
        _write_workload(root, i, pool="other" if i == 7 else "shared")
    _git(root, "init", "-q")
    return root


@pytest.fixture
def series_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Keys of the GPU demand series entries read (every other entry kind is not counted)."""
    reads: list[str] = []
    original = measure_cache._load_value

    def counted(folder: Path, path: Path, kind: str, key: str, field: str) -> Any:
        if kind == "series":
            reads.append(key)
        return original(folder, path, kind, key, field)

    monkeypatch.setattr(measure_cache, "_load_value", counted)
    return reads


@pytest.fixture
def updates(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Per pool summed from a kept sum: whether the update could be used."""
    seen: list[bool] = []
    original = pools._update_pool

    def spied(*args: Any) -> Any:
        out = original(*args)
        seen.append(out is not None)
        return out

    monkeypatch.setattr(pools, "_update_pool", spied)
    return seen


def _same_as_no_cache(root: Path, *files: str) -> tuple[int, str, str]:
    warm = run_cli(["check", "--changed-files", *files, "--format", "json", *WHEN], cwd=root)
    cold = run_cli(["check", "--changed-files", *files, "--format", "json", "--no-cache", *WHEN], cwd=root)
    assert warm == cold
    assert warm[0] in (0, 1) and "internal error" not in warm[2]
    return warm


def test_one_member_edited_again_and_again_stays_byte_identical_to_no_cache(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, series_reads: list[str], updates: list[bool]
) -> None:
    folder = tmp_path / "cache"
    monkeypatch.setenv("POLICYLINT_CACHE_DIR", str(folder))
    # fill: every pool summed afresh, its sum kept
    _same_as_no_cache(repo, "workloads/w-2.yaml")
    assert sorted(folder.glob(f"poolsum-v{store.FORMAT_VERSION}/*/*.sum"))

    def step(*files: str, joined: int = 1) -> None:
        series_reads.clear()
        updates.clear()
        _same_as_no_cache(repo, *files)
        # the kept sum was updated, reading the series of the members that left it only
        assert updates and all(updates)
        assert len(series_reads) <= joined

    # a value of the spec, twice (a new key each time; its series is the same)
    _write_workload(repo, 2, tolerance=41)
    step("workloads/w-2.yaml")
    _write_workload(repo, 2, tolerance=42)
    step("workloads/w-2.yaml")
    # a sample of its trace
    rows = (repo / "traces" / "w-3.csv").read_text().split("\n")
    stamp, value = rows[100].split(",")
    rows[100] = f"{stamp},{int(value) + 17}"
    (repo / "traces" / "w-3.csv").write_text("\n".join(rows))
    step("traces/w-3.csv")
    # a member added
    _write_trace(repo, 8)
    _write_workload(repo, 8)
    step("workloads/w-8.yaml", "traces/w-8.csv", joined=0)
    # moved to another pool: one pool loses it, the other gains it
    _write_workload(repo, 4, pool="other")
    step("workloads/w-4.yaml", joined=2)
    # a trace file swapped: w-1 now cites a file of its own with another series
    _write_trace(repo, 5, name="w-1-new.csv")
    _write_workload(repo, 1, trace="w-1-new.csv")
    step("workloads/w-1.yaml", "traces/w-1-new.csv")
    # the same file swapped for another one's bytes, in place
    shutil.copyfile(repo / "traces" / "w-6.csv", repo / "traces" / "w-0.csv")
    step("traces/w-0.csv")
    # a member removed (a staged deletion: the hook then reports on everything)
    _git(repo, "add", "-A")
    _git(repo, *GIT_IDENTITY, "commit", "-q", "-m", "fleet")
    _git(repo, "rm", "-q", "workloads/w-8.yaml")
    series_reads.clear()
    updates.clear()
    _same_as_no_cache(repo)
    assert updates and all(updates)


def test_a_damaged_or_foreign_kept_sum_is_a_miss(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "cache"
    monkeypatch.setenv("POLICYLINT_CACHE_DIR", str(folder))
    _same_as_no_cache(repo, "workloads/w-2.yaml")
    entries = sorted(folder.glob(f"poolsum-v{store.FORMAT_VERSION}/*/*.sum"))
    assert entries
    for path in entries:  # a changed byte in the arrays: the HMAC no longer matches
        data = bytearray(path.read_bytes())
        data[-9] ^= 0x01
        path.write_bytes(bytes(data))
    _write_workload(repo, 2, tolerance=99)
    _same_as_no_cache(repo, "workloads/w-2.yaml")
    for path in entries:  # an entry of another kind under this one's name is no kept sum
        other = next(folder.glob(f"series-v{store.FORMAT_VERSION}/*/*.series"))
        shutil.copyfile(other, path)
        assert pooled_cache.load(folder, path.stem) is None
    _write_workload(repo, 2, tolerance=98)
    _same_as_no_cache(repo, "workloads/w-2.yaml")


def test_too_many_changed_members_are_summed_afresh(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, updates: list[bool]) -> None:
    folder = tmp_path / "cache"
    monkeypatch.setenv("POLICYLINT_CACHE_DIR", str(folder))
    monkeypatch.setattr(pooled_cache, "_MIN_CHANGED", 1)
    _same_as_no_cache(repo, "workloads/w-2.yaml")
    for i in range(5):
        _write_workload(repo, i, tolerance=70 + i)
    updates.clear()
    _same_as_no_cache(repo, *(f"workloads/w-{i}.yaml" for i in range(5)))
    assert not any(updates)  # no update tried: the pool was summed from every member


def _member(name: str, start: float, n: int, step: float, values: np.ndarray) -> GpuMember:
    return GpuMember(name, None, values, step, 1.0, 1, gpus=values, axis_start=start, axis_step=step)  # type: ignore[arg-type]


def test_a_regular_axis_is_never_built_for_a_member_on_the_grid(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    t0 = 1_700_000_000.0
    members = [_member(f"m{i}", t0, 1000 + 10 * i, 300.0, rng.integers(0, 9, 1000 + 10 * i).astype(np.float64)) for i in range(5)]
    members.append(_member("z-late", t0 + 600.0, 990, 300.0, np.ones(990)))
    built: list[str] = []
    original = GpuMember.axis

    def axis(self: GpuMember) -> np.ndarray:
        built.append(self.name)
        return original(self)

    with_axes = [GpuMember(m.name, m.axis(), m.values, m.step_seconds, 1.0, 1, gpus=m.gpus) for m in members]
    expected = align(with_axes)
    monkeypatch.setattr(GpuMember, "axis", axis)
    got = align(members)
    assert built == ["z-late"]  # starts off the grid's origin: its axis is built, and freed after its row
    assert np.array_equal(got.times.view(np.int64), expected.times.view(np.int64))
    assert np.array_equal(got.pooled, expected.pooled, equal_nan=True)


def test_an_update_equals_summing_afresh_bit_for_bit() -> None:
    rng = np.random.default_rng(3)
    t0 = 1_700_000_000.0

    def series(n: int) -> np.ndarray:
        values = rng.integers(0, 50, n).astype(np.float64)
        values[rng.integers(0, n, 20)] = np.nan
        return values

    members = [_member(f"m{i}", t0, 2000, 60.0, series(2000)) for i in range(6)]
    spec: GridSpec = grid_spec([(m.name, m.step_seconds, *m.extent()[:2]) for m in members])  # type: ignore[index]
    parts = pooled_cache.Accumulator(spec.k1 - spec.k0)
    align(members, parts)
    meta = {m.name: pooled_cache.SumMember("k" + m.name, 60.0, t0, t0 + 1999 * 60.0, (None, None, None, None)) for m in members}
    base = pooled_cache.build("loc", spec, 300.0, meta, parts.total, parts.missing)
    assert base is not None
    new = _member("m2", t0, 2000, 60.0, series(2000))
    updated = pooled_cache.update(base, spec, [members[2]], [(new, meta["m2"])])
    assert updated is not None
    afresh = align([*members[:2], new, *members[3:]])
    assert np.array_equal(updated.pooled(), afresh.pooled, equal_nan=True)
    # a count that is not a whole number cannot be taken out exactly: no update
    odd = _member("m3", t0, 2000, 60.0, np.full(2000, 0.5))
    assert pooled_cache.update(base, spec, [odd], []) is None
    assert on_grid(new, spec.times(), spec).base is not None  # a view of the member's own series, not a copy
