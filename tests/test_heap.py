"""The allocator setting of a measuring run (:mod:`policylint.measure.heap`): set once, on glibc, unless the user tunes it."""

from __future__ import annotations

import platform
import sys

import pytest

from policylint.measure import heap


@pytest.fixture()
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "_SET", [])
    for name in [n for n in __import__("os").environ if n.startswith("MALLOC_") or n == "GLIBC_TUNABLES"]:
        monkeypatch.delenv(name)


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_set_once_on_glibc(fresh: None) -> None:
    assert heap.hold_freed_memory() is True
    assert heap.hold_freed_memory() is True
    assert heap._SET == [True]


@pytest.mark.parametrize("name", ["MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES"])
def test_the_users_allocator_settings_are_left_alone(fresh: None, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv(name, "2")
    assert heap.hold_freed_memory() is False


def test_nothing_is_done_off_linux(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap.sys, "platform", "darwin")
    assert heap.hold_freed_memory() is False
