"""Fuzz target for the caches: a mutated cache entry never changes what ``check`` prints.

* ``cache`` - a cache folder filled by a run of a copy of ``examples/good``; one of
  its entries (a parsed document, the rule set, a workload's facts, its GPU demand
  series, a pool's sum, a trace digest record, the configuration's pass mark) is mutated in place and ``check``
  must print exactly what ``check --no-cache`` prints, with the same exit code.
* ``prints`` - the same for the copy prints a narrowed run keeps for the other
  workloads' traces (``kept_reads.read_prints``), in a folder no whole run filled.

  Mutated bytes fail the entry's HMAC, so most inputs test that a damaged entry is
  a clean miss. To reach the decoder behind the HMAC, some inputs of the binary
  entries (facts, series, pooled sums) are sealed again with the folder's real
  secret: those test the closed type table, the field type checks and the bounds
  on array sizes, and the contract for them is a clean exit (no internal error, no
  hang, no memory blow-up), not identical output - whoever holds the secret can
  store other facts (see docs/performance.md, "Caches").
"""

from __future__ import annotations

import hmac
import os
import shutil
import time
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from mutate import mutated
from targets import EXAMPLES, ContractViolation, Target, _cli, _expect_clean_exit, _workdir

ARGS = ["check", "--format", "json", "--now", "2026-12-01", "."]
#: the entry kinds whose decoder is fuzzed behind a valid HMAC
_RESEALED = ("measure", "series", "pooled")

_STATE: dict[str, Any] = {}


def _kind(relative: str) -> str:
    """``measure-v4/ab/<key>.entry`` -> ``measure``."""
    return relative.split("/", 1)[0].rsplit("-v", 1)[0]


def _setup() -> dict[str, Any]:
    """A copy of examples/good, its --no-cache output, and a warm cache folder for it (once per process)."""
    if _STATE:
        return _STATE
    from policylint.cache import digests as digest_cache
    from policylint.cache import store

    repo = _workdir() / "cache-repo"
    folder = _workdir() / "cache-folder"
    for old in (repo, folder):
        if old.exists():
            shutil.rmtree(old)
    shutil.copytree(EXAMPLES / "good", repo)
    copied = time.monotonic()
    expected = _cli([*ARGS, "--no-cache"], cwd=repo)
    # trace digests are recorded only for files last changed a while before hashing
    time.sleep(max(0.0, digest_cache._RACY_SECONDS + 0.2 - (time.monotonic() - copied)))
    with _cache_env(folder):
        cold = _cli(ARGS, cwd=repo)
    if cold != expected:
        raise ContractViolation("a cold cached run differs from --no-cache")
    entries = {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != store.SECRET_FILE
    }
    _STATE.update(repo=repo, folder=folder, expected=expected, entries=entries)
    return _STATE


class _cache_env:
    """``POLICYLINT_CACHE_DIR`` set to ``folder`` for the runs inside the block."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.saved: str | None = None

    def __enter__(self) -> None:
        self.saved = os.environ.get("POLICYLINT_CACHE_DIR")
        os.environ["POLICYLINT_CACHE_DIR"] = str(self.folder)

    def __exit__(self, *exc: object) -> None:
        if self.saved is None:
            os.environ.pop("POLICYLINT_CACHE_DIR", None)
        else:
            os.environ["POLICYLINT_CACHE_DIR"] = self.saved


def _seeds() -> list[tuple[str, bytes]]:
    return sorted(_setup()["entries"].items())


def _strategy(seeds: list[tuple[str, bytes]]) -> st.SearchStrategy[tuple[str, bytes, bool]]:
    def one(index: int) -> st.SearchStrategy[tuple[str, bytes, bool]]:
        name, data = seeds[index]
        reseal = st.booleans() if _kind(name) in _RESEALED else st.just(False)
        return st.tuples(st.just(name), mutated([data], max_edits=4), reseal)

    return st.integers(0, len(seeds) - 1).flatmap(one)


def _sealed_again(folder: Path, kind: str, data: bytes) -> bytes:
    """A mutated binary entry with its HMAC computed again with the folder's secret."""
    from policylint.cache import store

    key = store._kind_key(folder, kind)
    if key is None or len(data) < store._HEADER or data[:8] != store._MAGIC:
        return data
    return data[:24] + hmac.digest(key, data[store._HEADER :], "sha256") + data[store._HEADER :]


def run_cache(item: tuple[str, bytes, bool]) -> None:
    name, data, reseal = item
    state = _setup()
    folder: Path = state["folder"]
    path = folder / name
    if reseal:
        data = _sealed_again(folder, _kind(name), data)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    try:
        with _cache_env(folder):
            got = _cli(ARGS, cwd=state["repo"])
    finally:
        path.write_bytes(state["entries"][name])
    if reseal:
        _expect_clean_exit(*got, allowed=(0, 1, 2), json_out=True)
    elif got != state["expected"]:
        raise ContractViolation(f"a mutated entry {name} changed the run:\n{got[0]} {got[2][:500]!r}\n{got[1][:1500]}")


# --------------------------------------------------------------------------- kept copy prints

#: a narrowed run: it reads the other workloads' copy prints (PL972's partners) from the cache
NARROW = ["check", "--format", "json", "--now", "2026-12-01", "workloads/research.yaml"]
_PRINTS: dict[str, Any] = {}


def _prints_setup() -> dict[str, Any]:
    """A cache folder filled by narrowed runs only, so its other workloads' prints are read from it (once per process).

    A whole run would record every workload in the repository index, and a narrowed run
    then takes the prints from there; here only the kept prints can give them.
    """
    if _PRINTS:
        return _PRINTS
    from policylint.cache import store

    repo = _setup()["repo"]  # its files are old enough to be kept
    folder = _workdir() / "prints-folder"
    if folder.exists():
        shutil.rmtree(folder)
    expected = _cli([*NARROW, "--no-cache"], cwd=repo)
    with _cache_env(folder):
        first = _cli(NARROW, cwd=repo)
    if first != expected:
        raise ContractViolation("a cold cached narrowed run differs from --no-cache")
    entries = {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.glob("prints-v*/*/*.prints"))
        if path.name != store.SECRET_FILE
    }
    if not entries:
        raise ContractViolation("the narrowed run kept no copy prints")
    _PRINTS.update(folder=folder, expected=expected, entries=entries)
    return _PRINTS


def _prints_seeds() -> list[tuple[str, bytes]]:
    return sorted(_prints_setup()["entries"].items())


def _prints_strategy(seeds: list[tuple[str, bytes]]) -> st.SearchStrategy[tuple[str, bytes, bool]]:
    def one(index: int) -> st.SearchStrategy[tuple[str, bytes, bool]]:
        name, data = seeds[index]
        return st.tuples(st.just(name), mutated([data], max_edits=4), st.booleans())

    return st.integers(0, len(seeds) - 1).flatmap(one)


def run_prints(item: tuple[str, bytes, bool]) -> None:
    """A mutated kept print: a damaged one is a miss (the same output); one sealed again must still exit cleanly.

    Sealed again with the folder's secret, its fields reach the checks of
    ``kept_reads._load_prints``: whoever holds the secret can plant another sketch, so
    the contract there is a clean exit, not the same output.
    """
    name, data, reseal = item
    state = _prints_setup()
    folder: Path = state["folder"]
    path = folder / name
    if reseal:
        data = _sealed_again(folder, "prints", data)
    path.write_bytes(data)
    try:
        with _cache_env(folder):
            got = _cli(NARROW, cwd=_setup()["repo"])
    finally:
        path.write_bytes(state["entries"][name])
    if reseal:
        _expect_clean_exit(*got, allowed=(0, 1, 2), json_out=True)
    elif got != state["expected"]:
        raise ContractViolation(f"a mutated print {name} changed the run:\n{got[0]} {got[2][:500]!r}\n{got[1][:1500]}")


TARGETS: dict[str, Target] = {
    "cache": Target("cache", _seeds, _strategy, run_cache),
    "prints": Target("prints", _prints_seeds, _prints_strategy, run_prints),
}
