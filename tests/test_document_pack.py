"""The document pack: a warm run takes unchanged YAML files from one entry by stat identity, and reports exactly what a cold run does."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from conftest import copy_minirepo, run_cli

from policylint.model.load import document_pack_cache as packs
from policylint.model import load

WHEN = ["--now", "2026-12-01"]


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file counts as settled: the test's files were written a moment ago."""
    monkeypatch.setattr(packs, "RACY_SECONDS", -3600.0)


def pack_entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("docpack-v*/*/*.bin"))


def packed_files(entry: Path, folder: Path) -> dict[str, Any]:
    """The files a pack entry holds, by real path."""
    from policylint.cache.decoded import read_sealed_values

    values = read_sealed_values(entry, folder, packs.KIND, packs.MAX_BYTES)
    assert values is not None
    return {name: record for part in values[1:] for name, record in part}


def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every repository file read from disk (parsed, or taken from its own document-cache entry)."""
    seen: list[str] = []
    original = load.files.load_file

    def counting(path: Path, display: str, *args: object, **kwargs: object) -> load.SourceFile:
        if path.name != ".policylint.yaml":
            seen.append(display)
        return original(path, display, *args, **kwargs)  # type: ignore[arg-type]

    # the loader's one reader of walked files (policylint.model.load.manifests.read_walked) looks it up per call
    monkeypatch.setattr(load.files, "load_file", counting)
    return seen


def yaml_files(repo: Path) -> list[Path]:
    return sorted(p for p in repo.rglob("*.yaml") if not p.name.startswith("."))


def test_a_warm_run_reads_no_unchanged_file(tmp_path: Path, cache_dir: Path, settled: None,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    repo = copy_minirepo(tmp_path / "repo")
    fresh = run_cli(["check", str(repo), "--format", "json", "--no-cache", *WHEN])
    assert run_cli(["check", str(repo), "--format", "json", *WHEN]) == fresh  # fills the caches and the pack
    assert len(pack_entries(cache_dir)) == 1
    seen = reads(monkeypatch)
    assert run_cli(["check", str(repo), "--format", "json", *WHEN]) == fresh
    assert seen == []
    # a narrowed run as well
    one = repo / "workloads" / "search.yaml"
    plain = run_cli(["check", "--changed-files", str(one), "--format", "json", "--no-cache", *WHEN], cwd=repo)
    seen.clear()
    assert run_cli(["check", "--changed-files", str(one), "--format", "json", *WHEN], cwd=repo) == plain
    assert seen == []


def test_a_changed_file_is_read_again_and_the_pack_is_left_alone(tmp_path: Path, cache_dir: Path, settled: None,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    repo = copy_minirepo(tmp_path / "repo")
    run_cli(["check", str(repo), "--format", "json", *WHEN])
    [entry] = pack_entries(cache_dir)
    before = entry.read_bytes()
    target = repo / "workloads" / "search.yaml"
    text = target.read_text()
    # the same size and modification time: only the status-change time tells the write
    changed = text.replace("maxQueueSeconds: 7200", "maxQueueSeconds: 7201", 1)
    assert changed != text and len(changed) == len(text)
    stamp = target.stat()
    target.write_text(changed)
    os.utime(target, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert target.stat().st_size == stamp.st_size and target.stat().st_mtime_ns == stamp.st_mtime_ns
    plain = run_cli(["check", str(repo), "--format", "json", "--no-cache", *WHEN])
    seen = reads(monkeypatch)
    assert run_cli(["check", str(repo), "--format", "json", *WHEN]) == plain
    assert seen == [load.display_path(target)]
    assert entry.read_bytes() == before  # one file read outside the pack: not worth writing it again


def test_many_changed_files_write_the_pack_again(tmp_path: Path, cache_dir: Path, settled: None,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    repo = copy_minirepo(tmp_path / "repo")
    run_cli(["check", str(repo), "--format", "json", *WHEN])
    [entry] = pack_entries(cache_dir)
    before = packed_files(entry, cache_dir)
    targets = sorted((repo / "workloads").glob("*.yaml"))
    assert len(targets) == 2
    for target in targets:
        target.write_text(target.read_text() + "\n# touched\n")
    # two of five files read outside the pack: more than a quarter, and more than MAX_UNPACKED
    monkeypatch.setattr(packs, "MAX_UNPACKED", 0)
    run_cli(["check", str(repo), "--format", "json", *WHEN])
    after = packed_files(entry, cache_dir)
    assert set(after) == set(before)
    for target in targets:
        real = os.path.realpath(target)
        assert after[real] != before[real] and after[real][1]["text"].endswith("# touched\n")
    plain = run_cli(["check", str(repo), "--format", "json", "--no-cache", *WHEN])
    seen = reads(monkeypatch)
    assert run_cli(["check", str(repo), "--format", "json", *WHEN]) == plain
    assert seen == []


def test_unsettled_files_are_not_packed(tmp_path: Path, cache_dir: Path) -> None:
    repo = copy_minirepo(tmp_path / "repo")
    run_cli(["check", str(repo), "--format", "json", *WHEN])  # every file was written a moment ago
    assert pack_entries(cache_dir) == []


@pytest.mark.parametrize("damage", ["garbage", "byte flipped", "truncated", "foreign code"])
def test_a_damaged_or_foreign_pack_is_not_used(damage: str, tmp_path: Path, cache_dir: Path, settled: None,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    repo = copy_minirepo(tmp_path / "repo")
    first = run_cli(["check", str(repo), "--format", "json", *WHEN])
    [entry] = pack_entries(cache_dir)
    data = entry.read_bytes()
    if damage == "garbage":
        entry.write_bytes(b"\x00\xff not json")
    elif damage == "byte flipped":
        at = data.index(b"text") + 10  # inside the first file's text
        entry.write_bytes(data[:at] + bytes([data[at] ^ 1]) + data[at + 1:])
    elif damage == "truncated":
        entry.write_bytes(data[: len(data) // 2])
    else:
        from policylint.cache import store

        monkeypatch.setattr(store, "code_fingerprint", lambda: "another version")
    seen = reads(monkeypatch)
    assert run_cli(["check", str(repo), "--format", "json", *WHEN]) == first
    assert len(seen) == len(yaml_files(repo))  # every file read: none taken from the pack


def test_a_packed_file_that_is_no_longer_a_regular_file_is_read_and_refused(tmp_path: Path, cache_dir: Path,
                                                                            settled: None) -> None:
    repo = copy_minirepo(tmp_path / "repo")
    run_cli(["check", str(repo), "--format", "json", *WHEN])
    assert pack_entries(cache_dir)
    target = repo / "workloads" / "search.yaml"
    target.unlink()
    os.mkfifo(target)
    code, out, _ = run_cli(["check", str(repo), "--format", "json", *WHEN])
    assert code == 1 and "PL005" in out
    assert (code, out) == run_cli(["check", str(repo), "--format", "json", "--no-cache", *WHEN])[:2]


def test_a_file_with_a_finding_is_never_packed(tmp_path: Path, cache_dir: Path, settled: None) -> None:
    repo = copy_minirepo(tmp_path / "repo")
    target = repo / "workloads" / "search.yaml"
    target.write_text(target.read_text() + "  bogusKey: 1\n")
    run_cli(["check", str(repo), "--format", "json", *WHEN])
    [entry] = pack_entries(cache_dir)
    assert os.path.realpath(target) not in packed_files(entry, cache_dir)
