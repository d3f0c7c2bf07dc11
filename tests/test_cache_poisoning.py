"""A planted cache entry can make a run slower, never different: the output equals ``--no-cache``.

Each test fills a cache folder of its own with an honest run, plants one kind of
entry the hardening review used against the caches (parsed data changed, rule
severities changed, class names, invalid data, a pipe or ``/dev/zero`` at an
entry's path, a compact array declaring 3e8 samples, a rule file or trace that is
a pipe or a device) and expects the next run to print exactly what ``--no-cache``
prints, with the same exit code. Two kinds of planting are tried where they
differ: by someone who cannot read the folder's secret (the entry's HMAC no longer
matches) and, for the decoder's own checks, an entry sealed with the real secret.

Runs that a regression could hang or blow up run in a child process with a
timeout and an address-space limit, so they fail instead.
"""

from __future__ import annotations

import dataclasses
import hmac
import json
import os
import shutil
import subprocess
import sys
import time
import typing
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES, run_cli

from policylint.cache import digests as digest_cache
from policylint.model.load import document_cache
from policylint.measure import cache_encoding as encoding
from policylint.measure import measurement_cache as measure_cache
from policylint.engine import rule_cache
from policylint.cache import store

WHEN = ["--now", "2026-12-01"]
#: a run that takes longer than this in a child process has hung
TIMEOUT = 120
#: address-space limit of a child run (a normal run of the examples needs well under 1 GiB)
MEMORY_MB = 3072

_BOUNDED = (
    "import resource, runpy, sys\n"
    "limit = int(sys.argv[1]) << 20\n"
    "resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
    "sys.argv = ['policylint', *sys.argv[2:]]\n"
    "runpy.run_module('policylint', run_name='__main__')\n"
)


def copy_example(tmp_path: Path, name: str = "bad") -> Path:
    return Path(shutil.copytree(EXAMPLES / name, tmp_path / name))


def run_bounded(args: list[str], cwd: Path, cache_folder: Path) -> tuple[int, str, str]:
    """The CLI in a child process, limited in time and memory; a hang fails the test."""
    env = {**os.environ, "POLICYLINT_CACHE_DIR": str(cache_folder), "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _BOUNDED, str(MEMORY_MB), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    return done.returncode, done.stdout, done.stderr


def entry_files(folder: Path) -> list[Path]:
    """Every entry and record in a cache folder (not its secret)."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name != store.SECRET_FILE)


def document_entries(folder: Path) -> list[Path]:
    return sorted(folder.glob(f"documents-v{document_cache.DOCUMENT_FORMAT}/*/*.json"))


def rule_entries(folder: Path) -> list[Path]:
    return sorted(folder.glob(f"rules-v{rule_cache.RULES_FORMAT_VERSION}/*.json"))


def measure_entries(folder: Path, kind: str = "measure") -> list[Path]:
    ext = {"measure": "entry", "series": "series", "pooled": "pool"}[kind]
    return sorted(folder.glob(f"{kind}-v{store.FORMAT_VERSION}/*/*.{ext}"))


def seal_with(secret: bytes, kind: str, body: bytes) -> bytes:
    """What an attacker writes who made up a secret of their own."""
    mac = hmac.digest(store._derive(secret, kind), body, "sha256").hex().encode()
    return body[:-1] + b',"mac":"' + mac + b'"}'


def unsealed(data: bytes) -> bytes:
    """The JSON body of a sealed entry, its HMAC member removed."""
    document = json.loads(data)
    document.pop("mac", None)
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()


def assert_no_cache_output(repo: Path, expected: tuple[int, str, str], args: list[str] | None = None) -> None:
    got = run_cli(["check", str(repo), *(args or []), *WHEN])
    assert got == expected
    assert "internal error" not in got[2]


# -- document entries -------------------------------------------------------------------------


@pytest.mark.parametrize("planting", ["same mac", "no mac", "sealed with a planted secret"])
def test_a_document_entry_with_other_parsed_data_is_a_miss(tmp_path: Path, cache_dir: Path, planting: str) -> None:
    repo = copy_example(tmp_path)
    expected = run_cli(["check", str(repo), "--no-cache", *WHEN])
    assert expected[0] == 1 and "PL101" in expected[1]
    assert run_cli(["check", str(repo), *WHEN]) == expected
    planted = 0
    for entry in document_entries(cache_dir):
        data = entry.read_bytes()
        if b'"reservedGpus":123' not in data:
            continue
        # the file still says 123; the entry says a pool needs no more than its baseline
        body = unsealed(data).replace(b'"reservedGpus":123', b'"reservedGpus":57')
        if planting == "same mac":
            entry.write_bytes(data.replace(b'"reservedGpus":123', b'"reservedGpus":57'))
        elif planting == "no mac":
            entry.write_bytes(body)
        else:
            secret = cache_dir / store.SECRET_FILE
            secret.unlink()
            secret.write_bytes(b"k" * 32)
            secret.chmod(0o644)  # the attacker's own secret: not the user's, readable by others
            entry.write_bytes(seal_with(b"k" * 32, "documents", body))
        planted += 1
    assert planted
    assert_no_cache_output(repo, expected)
    secret = cache_dir / store.SECRET_FILE
    assert secret.stat().st_mode & 0o777 == 0o600 and secret.read_bytes() != b"k" * 32


def test_a_document_entry_copied_under_another_key_is_a_miss(tmp_path: Path, cache_dir: Path) -> None:
    """A sealed entry of a clean file filed under the key of a file with findings."""
    repo = copy_example(tmp_path)
    expected = run_cli(["check", str(repo), "--no-cache", *WHEN])
    run_cli(["check", str(repo), *WHEN])
    entries = document_entries(cache_dir)
    bad = [e for e in entries if b'"reservedGpus":123' in e.read_bytes()]
    clean = [e for e in entries if e not in bad]
    assert bad and clean
    for entry in bad:
        shutil.copyfile(clean[0], entry)
    assert_no_cache_output(repo, expected)


# -- rule sets --------------------------------------------------------------------------------


@pytest.mark.parametrize("planting", ["same mac", "no mac"])
def test_a_rule_set_entry_with_other_severities_is_a_miss(tmp_path: Path, cache_dir: Path, planting: str) -> None:
    repo = copy_example(tmp_path)
    expected = run_cli(["check", str(repo), "--format", "json", "--no-cache", *WHEN])
    assert run_cli(["check", str(repo), "--format", "json", *WHEN]) == expected
    (entry,) = rule_entries(cache_dir)
    data = entry.read_bytes()
    quiet = data.replace(b'"severity": "ERROR"', b'"severity": "INFO"').replace(b'"severity": "WARNING"', b'"severity": "INFO"')
    assert quiet != data
    entry.write_bytes(quiet if planting == "same mac" else unsealed(quiet))
    assert_no_cache_output(repo, expected, ["--format", "json"])


def test_the_rule_set_key_names_the_configuration_and_the_rule_folders(tmp_path: Path) -> None:
    from policylint.resources import rules_dir

    base = rule_cache.rules_key([rules_dir()], {}, "<defaults>")
    assert base is not None
    assert rule_cache.rules_key([rules_dir()], {}, str(tmp_path / ".policylint.yaml")) != base
    extra = tmp_path / "rules"
    extra.mkdir()
    link = tmp_path / "link"
    link.symlink_to(extra)
    assert rule_cache.rules_key([rules_dir(), extra], {}, "<defaults>") != rule_cache.rules_key([rules_dir(), link], {}, "<defaults>")


# -- class names and invalid data in measurement entries --------------------------------------


def rewrite_measure_entries(folder: Path, change: Any, kind: str = "measure") -> int:
    """Re-seal every ``kind`` entry with the real secret after ``change(document)`` - a decoder test."""
    field = {"measure": "facts", "series": "demand", "pooled": "pool"}[kind]
    count = 0
    for path in measure_entries(folder, kind):
        document, arrays = store.read_entry(path, kind=kind, folder=folder)
        blobs = {name: arrays[name] for name in document.pop("blobs")}
        document[field] = change(document[field])
        store.write_entry(path, document, blobs, kind=kind, folder=folder)
        count += 1
    return count


CLASS_NAMES = [
    {"$class": "policylint.__main__:main", "fields": {}},
    {"$type": "policylint.__main__:main", "fields": {}},
    {"$type": "main", "fields": {}},
    {"$class": "subprocess:Popen", "fields": {"args": "true"}},
    {"$type": "Popen", "fields": {"args": "true"}},
    {"$columns": "os:system", "n": 1, "fields": {}},
    {"$type": "WorkloadFacts", "fields": {"no_such_field": 1}},
]


@pytest.mark.parametrize("facts", CLASS_NAMES, ids=[json.dumps(c)[:40] for c in CLASS_NAMES])
def test_an_entry_naming_a_class_is_a_miss_even_when_sealed(
    tmp_path: Path, cache_dir: Path, facts: dict[str, Any]
) -> None:
    repo = copy_example(tmp_path)
    expected = run_cli(["check", str(repo), "--no-cache", *WHEN])
    run_cli(["check", str(repo), *WHEN])
    assert rewrite_measure_entries(cache_dir, lambda _: facts) >= 4
    main_loaded = "policylint.__main__" in sys.modules
    assert_no_cache_output(repo, expected)
    assert ("policylint.__main__" in sys.modules) == main_loaded  # never imported by the loader


def _with_field(name: str, value: Any) -> Any:
    def change(facts: dict[str, Any]) -> dict[str, Any]:
        facts["fields"][name] = value
        return facts

    return change


INVALID = {
    "text for a figure": _with_field("p50", "high"),
    "a list for a figure": _with_field("usable_max", {"$list": [1, 2]}),
    "wrong type in a field": _with_field("report", {"$type": "QueueStats", "fields": {"capacity": 1.0, "max_wait": 1.0, "p99_wait": 1.0}}),
    "a bad date": _with_field("last_sample", {"$datetime": "not a date"}),
    "an array outside its blob": _with_field("flat_days", {"$array": ["b0", 10**12, [5]]}),
    "a negative shape": _with_field("flat_days", {"$array": ["b0", 0, [-1, -1]]}),
    "an unknown blob": _with_field("flat_days", {"$array": ["nope", 0, [1]]}),
    "a bare list": _with_field("errors", [1, 2]),
    "a range of text": _with_field("flat_days", {"$array": ["=range", "a", "b", 3]}),
    "an infinite range": _with_field("flat_days", {"$array": ["=range", 0.0, float("inf"), 3]}),
    "a nested bomb": _with_field("errors", {"$list": [{"$list": []}] * 3 + [{"$dict": {"a": {"$tuple": "abc"}}}]}),
    "not an object": lambda facts: [facts],
}


@pytest.mark.parametrize("damage", list(INVALID))
def test_a_sealed_entry_with_invalid_data_is_a_miss(tmp_path: Path, cache_dir: Path, damage: str) -> None:
    repo = copy_example(tmp_path)
    expected = run_cli(["check", str(repo), "--no-cache", *WHEN])
    run_cli(["check", str(repo), *WHEN])
    assert rewrite_measure_entries(cache_dir, INVALID[damage]) >= 4
    assert_no_cache_output(repo, expected)
    for path in measure_entries(cache_dir):
        assert measure_cache.load(cache_dir, path.stem) is not None  # measured afresh and stored again


# -- pipes and devices in the cache folder ----------------------------------------------------


@pytest.mark.realtool
@pytest.mark.parametrize("plant", ["fifo", "/dev/zero"])
def test_a_pipe_or_device_at_every_entry_path_is_a_miss(tmp_path: Path, plant: str) -> None:
    repo = copy_example(tmp_path)
    copied = time.monotonic()
    folder = tmp_path / "cache"
    args = ["check", ".", "--format", "json", *WHEN]
    expected = run_bounded([*args, "--no-cache"], repo, folder)
    # trace digests are recorded only for files last changed 2 s before hashing
    time.sleep(max(0.0, digest_cache._RACY_SECONDS + 0.2 - (time.monotonic() - copied)))
    assert run_bounded(args, repo, folder) == expected
    planted = entry_files(folder) + [folder / store.SECRET_FILE]
    kinds = {p.relative_to(folder).parts[0] for p in planted}
    assert {"documents-v4", "measure-v4", "series-v4", "pooled-v4", "rules-v2", "stattable-v4", store.SECRET_FILE} <= kinds
    for path in planted:
        path.unlink()
        if plant == "fifo":
            os.mkfifo(path)
        else:
            path.symlink_to("/dev/zero")
    assert run_bounded(args, repo, folder) == expected
    assert run_bounded(args, repo, folder) == expected  # the entries that could be rewritten were


# -- decoded sizes ----------------------------------------------------------------------------


def _huge_ranges(value: Any) -> Any:
    """Every compact time axis of an entry, declared 3e8 samples long."""
    if isinstance(value, list) and value and value[0] == "=range":
        return ["=range", value[1], value[2], 300_000_000]
    if isinstance(value, list):
        return [_huge_ranges(v) for v in value]
    if isinstance(value, dict):
        return {k: _huge_ranges(v) for k, v in value.items()}
    return value


@pytest.mark.realtool
def test_a_pooled_entry_declaring_3e8_samples_is_not_expanded(tmp_path: Path) -> None:
    repo = copy_example(tmp_path, "good")
    folder = tmp_path / "cache"
    args = ["check", ".", "--format", "json", *WHEN]
    expected = run_bounded([*args, "--no-cache"], repo, folder)
    assert run_bounded(args, repo, folder) == expected
    rewritten = 0
    for kind in ("pooled", "series", "measure"):
        rewritten += rewrite_measure_entries(folder, _huge_ranges, kind)
    assert rewritten and b'300000000' in measure_entries(folder, "pooled")[0].read_bytes()
    assert run_bounded(args, repo, folder) == expected


def test_the_expansion_bound_is_checked_before_allocating() -> None:
    with pytest.raises(ValueError, match="expands past its bound"):
        encoding._slice({}, ["=range", 0.0, 1.0, 300_000_000], store.Budget(768 * 1024))
    budget = store.Budget(0)
    assert encoding._slice({}, ["=range", 0.0, 60.0, 1000], budget).size == 1000
    assert budget.left == store._EXPAND_FLOOR - 1000


# -- rule files and traces are checked before they are read or hashed -------------------------


@pytest.mark.realtool
@pytest.mark.parametrize("plant", ["fifo", "/dev/zero"])
def test_a_rule_file_that_is_a_pipe_or_device_is_refused_with_the_cache_on(tmp_path: Path, plant: str) -> None:
    repo = copy_example(tmp_path)
    rules = tmp_path / "rules"
    rules.mkdir()
    if plant == "fifo":
        os.mkfifo(rules / "planted.yaml")
    else:
        (rules / "planted.yaml").symlink_to("/dev/zero")
    folder = tmp_path / "cache"
    args = ["check", ".", "--rule-dir", str(rules), *WHEN]
    expected = run_bounded([*args, "--no-cache"], repo, folder)
    assert expected[0] == 2 and "not a regular file" in expected[2]
    assert run_bounded(args, repo, folder) == expected


def _count_hashing(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = digest_cache._file_digest

    def counting(path: Path) -> str:
        calls.append(os.path.realpath(path))
        return real(path)

    monkeypatch.setattr(digest_cache, "_file_digest", counting)
    return calls


def test_a_trace_over_the_size_limit_is_refused_before_it_is_hashed(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = copy_example(tmp_path, "good")
    trace = repo / "measurements" / "traces" / "chat-assistant.csv"
    with trace.open("r+b") as handle:
        handle.truncate(1 << 30)  # sparse: 1 GiB the readers refuse from its size
    expected = run_cli(["check", str(repo), "--no-cache", *WHEN])
    assert "more than the" in expected[1]
    calls = _count_hashing(monkeypatch)
    assert run_cli(["check", str(repo), *WHEN]) == expected
    assert calls and os.path.realpath(trace) not in calls  # the other traces were hashed, this one never


@pytest.mark.realtool
def test_a_trace_that_is_a_pipe_is_refused_with_the_cache_on(tmp_path: Path) -> None:
    repo = copy_example(tmp_path, "good")
    trace = repo / "measurements" / "traces" / "chat-assistant.csv"
    trace.unlink()
    os.mkfifo(trace)
    folder = tmp_path / "cache"
    args = ["check", ".", "--format", "json", *WHEN]
    expected = run_bounded([*args, "--no-cache"], repo, folder)
    assert "chat-assistant.csv' is not a file" in expected[1]
    assert run_bounded(args, repo, folder) == expected


def test_the_digest_refuses_a_pipe_swapped_in_after_the_check(tmp_path: Path) -> None:
    pipe = tmp_path / "t.csv"
    os.mkfifo(pipe)
    with pytest.raises(OSError):
        digest_cache._file_digest(pipe)  # opened without blocking, refused on the descriptor


# -- the secret ------------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["readable by others", "wrong size", "a link", "a folder"])
def test_a_secret_that_cannot_be_trusted_is_replaced_and_every_entry_misses(
    tmp_path: Path, cache_dir: Path, damage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = copy_example(tmp_path, "good")
    expected = run_cli(["check", str(repo), *WHEN])
    secret = cache_dir / store.SECRET_FILE
    old = secret.read_bytes()
    if damage == "readable by others":
        secret.chmod(0o644)
    elif damage == "wrong size":
        secret.write_bytes(old + b"x")
    elif damage == "a link":
        other = tmp_path / "elsewhere"
        other.write_bytes(old)
        other.chmod(0o600)
        secret.unlink()
        secret.symlink_to(other)
    else:
        secret.unlink()
        secret.mkdir()
    calls = _count_hashing(monkeypatch)
    got = run_cli(["check", str(repo), *WHEN])
    assert got == expected
    if damage == "a folder":
        assert secret.is_dir() and calls  # no secret: the cache is off for the run
        return
    assert calls  # the trace digests were not taken from the records: sealed with the old secret
    assert not secret.is_symlink() and secret.stat().st_mode & 0o777 == 0o600 and secret.read_bytes() != old


def test_a_sealed_entry_passes_for_no_other_kind_and_no_changed_byte(tmp_path: Path) -> None:
    body = json.dumps({"key": "k", "data": [1, 2, 3]}).encode()
    sealed = store.seal_json(tmp_path, "documents", body)
    assert sealed is not None and json.loads(sealed)["data"] == [1, 2, 3]
    assert store.unseal_json(tmp_path, "documents", sealed) == body
    assert store.unseal_json(tmp_path, "rules", sealed) is None
    for i in range(len(sealed)):
        changed = bytearray(sealed)
        changed[i] ^= 0x01
        assert store.unseal_json(tmp_path, "documents", bytes(changed)) is None


# -- the type table ---------------------------------------------------------------------------


def test_the_type_table_holds_exactly_the_dataclasses_the_facts_are_made_of() -> None:
    """A new dataclass in the facts must be added to the table, or its facts are never cached."""
    import datetime as dt

    import numpy as np

    from policylint.measure.facts import GpuDemand, PoolFacts, WorkloadFacts

    names: dict[str, Any] = {"np": np, "dt": dt}
    for module in ("policylint.readers.series", "policylint.bands", "policylint.measure.pooled", "policylint.measure.facts"):
        names.update(vars(sys.modules[module]))
    found: set[type] = set()

    def walk(kind: Any) -> None:
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            if kind in found:
                return
            found.add(kind)
            hints = typing.get_type_hints(kind, globalns={**names, **vars(sys.modules[kind.__module__])})
            for f in dataclasses.fields(kind):
                if f.init:
                    walk(hints[f.name])
            return
        for arg in typing.get_args(kind):
            walk(arg)

    for root in (WorkloadFacts, PoolFacts, GpuDemand):
        walk(root)
    assert found == {cls for cls, _ in encoding._types().values()}
