"""Kept near-copy facts (policylint/measure/integrity/copies.py): taken from the cache only while everything they are made from holds.

A pool of thousands of quiet traces pairs tens of thousands of workloads by runs they
share by chance; a pre-commit run that changed no trace takes the last answer instead of
comparing them all again. Every warm run is compared byte for byte with ``--no-cache``.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from test_pooled_incremental import _write_trace, _write_workload
from test_repo_index import _run, _same_as_no_cache, folder, repo  # noqa: F401 - fixtures

from policylint.measure.integrity import copies


def _counted(root: Path, *files: str) -> tuple[str, int, int]:
    before = dict(copies.STATS)
    out = _same_as_no_cache(root, *files)  # a warm run, then the same run without the cache
    # the --no-cache run computes once; what the warm run did is the rest
    return out, copies.STATS["kept"] - before["kept"], copies.STATS["computed"] - before["computed"] - 1


def _near_copies(report: str) -> list[tuple[str, str, str]]:
    """The findings of a repeated measurement: near copies (PL972) and double counts (PL111)."""
    return sorted((f["file"], f["code"], f["message"]) for f in json.loads(report)["findings"]
                  if f["code"] in ("PL972", "PL111"))


def _entries(folder: Path) -> list[Path]:  # noqa: F811 - the fixture's name
    return sorted(folder.glob("nearcopies-v*/*/*.json"), key=lambda p: p.stat().st_mtime_ns)


def test_an_unchanged_repository_takes_its_near_copies_from_the_entry(repo: Path, folder: Path) -> None:  # noqa: F811
    before = dict(copies.STATS)
    assert _run(repo, ".")[0] in (0, 1)
    assert copies.STATS["computed"] - before["computed"] == 1 and len(_entries(folder)) == 1
    # a narrowed run may view fewer workloads than the whole run: then its own digest, its own entry
    first, kept, computed = _counted(repo, "workloads/w-2.yaml")
    assert kept + computed == 1 and len(_entries(folder)) == 1 + computed
    again, kept, computed = _counted(repo, "workloads/w-2.yaml")
    assert (kept, computed) == (1, 0) and again == first
    # and the whole run still finds its own
    before = dict(copies.STATS)
    assert _run(repo, ".")[0] in (0, 1)
    assert copies.STATS["kept"] - before["kept"] == 1
    assert ("workloads/w-4.yaml", "PL972") in {(f, c) for f, c, _ in _near_copies(first)}, "w-4 copies w-0"
    # the workload's tolerance edited: no trace moved, the entry still holds
    _write_workload(repo, 2, tolerance=77)
    edited, kept, computed = _counted(repo, "workloads/w-2.yaml")
    assert (kept, computed) == (1, 0) and _near_copies(edited) == _near_copies(first)


def test_a_moved_trace_computes_the_near_copies_again(repo: Path, folder: Path) -> None:  # noqa: F811
    assert _run(repo, ".")[0] in (0, 1)
    _counted(repo, "workloads/w-2.yaml")
    first, kept, computed = _counted(repo, "workloads/w-2.yaml")
    assert kept == 1
    # w-2 now cites w-0's trace under another file name: a copy the entry does not know
    (repo / "traces" / "copy-of-0.csv").write_bytes((repo / "traces" / "w-0.csv").read_bytes())
    _write_workload(repo, 2, trace="copy-of-0.csv")
    moved, kept, computed = _counted(repo, "workloads/w-2.yaml")
    assert (kept, computed) == (0, 1)
    assert ("workloads/w-2.yaml", "PL111") in {(f, c) for f, c, _ in _near_copies(moved)}
    assert _near_copies(moved) != _near_copies(first)
    # the trace's own samples change under the same name (now w-5's): computed again
    _write_trace(repo, 5, name="copy-of-0.csv")
    again, kept, computed = _counted(repo, "workloads/w-2.yaml")
    assert (kept, computed) == (0, 1) and _near_copies(again) != _near_copies(moved)
    # entries past the newest few of a repository are removed as new ones are written
    for tolerance in range(60, 60 + copies._KeptCopies.KEEP + 2):
        _write_trace(repo, 5 + tolerance % 2, name="copy-of-0.csv")
        _write_workload(repo, 3, trace="w-0.csv" if tolerance % 3 else "w-1.csv")
        _counted(repo, "workloads/w-2.yaml")
    assert len(_entries(folder)) == copies._KeptCopies.KEEP


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_a_damaged_entry_is_a_miss(repo: Path, folder: Path, damage: str) -> None:  # noqa: F811
    assert _run(repo, ".")[0] in (0, 1)
    clean, _, _ = _counted(repo, "workloads/w-2.yaml")
    entry = _entries(folder)[-1]  # the narrowed run's
    data = entry.read_bytes()
    entry.write_bytes({"garbage": b"{]" + data[2:], "truncated": data[: len(data) // 2], "empty": b""}[damage])
    out, kept, computed = _counted(repo, "workloads/w-2.yaml")
    assert out == clean and (kept, computed) == (0, 1)


def _inputs() -> tuple[list[str], list[Any], list[Any], dict[str, dict[str, Any]]]:
    names = ["a", "b"]
    refs = [SimpleNamespace(path="/t/a.csv", display="a.csv"), SimpleNamespace(path="/t/b.csv", display="b.csv")]
    sketches: list[Any] = [[1, 2, 3], (5).to_bytes(8, "little")]
    facts = {n: {"pool": "c/p", "values_fingerprint": "f" + n, "value_changes": 40, "double_counted_with": None,
                 "measurement_share": None} for n in names}
    return names, refs, sketches, facts


def test_every_input_moves_the_digest() -> None:
    base = copies._inputs_digest(*_inputs())
    assert base is not None and base == copies._inputs_digest(*_inputs())

    def moved(change: Any) -> str | None:
        names, refs, sketches, facts = _inputs()
        change(names, refs, sketches, facts)
        return copies._inputs_digest(names, refs, sketches, facts)

    changes = [
        lambda n, r, s, f: n.__setitem__(1, "c"),
        lambda n, r, s, f: setattr(r[0], "path", "/t/other.csv"),
        lambda n, r, s, f: setattr(r[1], "display", "../b.csv"),
        lambda n, r, s, f: r.__setitem__(0, None),
        lambda n, r, s, f: s.__setitem__(0, [1, 2, 4]),
        lambda n, r, s, f: s.__setitem__(0, None),
        lambda n, r, s, f: s.__setitem__(1, (6).to_bytes(8, "little")),
        lambda n, r, s, f: s.__setitem__(0, [1.0, 2, 3]),  # 1.0 is not 1
        *(lambda n, r, s, f, key=key: f["a"].__setitem__(key, 1.5) for key in copies._VIEW_READS),
        lambda n, r, s, f: f.__setitem__("z", {}),
    ]
    digests = [moved(change) for change in changes]
    assert None not in digests and base not in digests
    assert len(set(digests)) == len(digests)
    # a sketch's numbers, as measured or as the repository index packs them: one digest
    assert moved(lambda n, r, s, f: s.__setitem__(1, [5])) == base
    assert moved(lambda n, r, s, f: s.__setitem__(0, b"".join(x.to_bytes(8, "little") for x in (1, 2, 3)))) == base
    # a value without an exact text: no digest, so nothing is taken from or kept in the entry
    assert moved(lambda n, r, s, f: f["a"].__setitem__("pool", object())) is None
