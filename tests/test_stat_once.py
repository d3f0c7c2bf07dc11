"""One identity per file and run: :func:`policylint.safeio.stat_once` inside :func:`one_stat_per_file`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from policylint.safeio import one_stat_per_file, stat_once


def test_inside_a_run_a_file_keeps_the_identity_it_was_first_seen_with(tmp_path: Path) -> None:
    f = tmp_path / "w.yaml"
    f.write_text("a: 1\n")
    with one_stat_per_file():
        first = stat_once(str(f))
        f.write_text("a: 12345\n")  # another size: the system's answer moved
        assert stat_once(str(f)).st_size == first.st_size
        with one_stat_per_file():  # a nested block shares the outer one's answers
            assert stat_once(str(f)).st_size == first.st_size
    # outside any run every call asks the system
    assert stat_once(str(f)).st_size == os.stat(f).st_size != first.st_size


def test_a_missing_file_raises_each_time_as_os_stat_does(tmp_path: Path) -> None:
    gone = str(tmp_path / "gone.csv")
    with one_stat_per_file():
        for _ in range(2):
            with pytest.raises(FileNotFoundError) as raised:
                stat_once(gone)
            assert raised.value.filename == gone
        (tmp_path / "gone.csv").write_text("t,v\n")
        with pytest.raises(FileNotFoundError):
            stat_once(gone)  # still missing for this run
    assert stat_once(gone).st_size == 4
    with pytest.raises(ValueError):
        stat_once(str(tmp_path / "nul\0byte"))

