"""Shared test helpers.

Tests that drive real programs (pre-commit, shells, mypy, a wheel build, CI steps in
bash) carry the ``realtool`` marker: they run by default and in CI, and
``python -m pytest -m "not realtool"`` leaves them out for a fast local run. Tests that
need *a* capacity repository rather than the bundled examples use the small shared one
(``minirepo_path``, ``copy_minirepo``, the ``minirepo`` fixture).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from policylint.ruleset import RuleSet

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


def pytest_configure(config: pytest.Config) -> None:
    """Collect garbage as the console entry point does (``policylint.cli.console_main``).

    Each worker runs hundreds of pipelines in one process, and with the default
    thresholds the collector re-scans every object the session keeps alive (imported
    modules, collected tests, session fixtures) every few hundred allocations.
    """
    gc.set_threshold(100_000, 50, 1000)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What exists once the tests are collected lives until the end: stop re-scanning it."""
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True, scope="session")
def _cache_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The measurement cache of every run goes to a session folder, never the user's home."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("POLICYLINT_CACHE_DIR", str(tmp_path_factory.mktemp("policylint-cache")))
        yield


@pytest.fixture(autouse=True, scope="session")
def _rule_files_parsed_once() -> Iterator[None]:
    """Parse and schema-check each rule file once per session, not once per CLI call.

    Every ``run_cli`` loads the bundled rules again, and parsing plus validating
    them is most of a small check's time. The cache is keyed by the file's path
    and exact bytes, so a test that writes or edits a rule file still gets its
    own parse; errors are never cached (a broken file raises every time), and
    each caller gets a fresh copy, so no test can change another's rules. The
    copy is unpickled from a snapshot taken at the first parse: the same
    independence as a deep copy at about a quarter of its cost.
    """
    import pickle

    from policylint import ruleset

    real = getattr(ruleset, "_load_file", None)
    if real is None:  # the loader was reorganised: run uncached rather than fail
        yield
        return
    parsed: dict[tuple[str, bytes], bytes] = {}

    def cached(path: Path) -> Any:
        key = (str(Path(path).resolve()), Path(path).read_bytes())
        if key not in parsed:
            parsed[key] = pickle.dumps(real(path), pickle.HIGHEST_PROTOCOL)
        return pickle.loads(parsed[key])

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ruleset, "_load_file", cached)
        yield


@pytest.fixture(autouse=True, scope="session")
def _rule_entries_decoded_once() -> Iterator[None]:
    """Decode each stored rule-set entry once per session, not once per CLI call.

    A warm ``run_cli`` reads the rule set back from the measurement cache folder
    (JSON, then one object per rule). The result depends only on the entry's key
    and its exact bytes, so the decoded rule set is kept under both: an entry a
    test damages or rewrites has other bytes and is read by the real code, and a
    missing or rejected entry is never remembered. Each caller gets its own copy.
    """
    import pickle

    from policylint import cache

    real = getattr(cache, "_read_rules", None)
    path_of = getattr(cache, "_rules_path", None)
    if real is None or path_of is None:  # the cache was reorganised: run without this
        yield
        return
    decoded: dict[tuple[str, bytes], bytes] = {}

    def cached(folder: Path, key: str) -> Any:
        try:
            raw = path_of(folder, key).read_bytes()
        except OSError:
            return real(folder, key)
        if (key, raw) not in decoded:
            ruleset = real(folder, key)
            if ruleset is None:
                return None
            decoded[(key, raw)] = pickle.dumps(ruleset, pickle.HIGHEST_PROTOCOL)
        return pickle.loads(decoded[(key, raw)])

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cache, "_read_rules", cached)
        yield


@pytest.fixture(autouse=True, scope="session")
def _parsers_built_once() -> Iterator[None]:
    """Build the argument parser of each subcommand once per session, not once per CLI call.

    argparse looks every help text up in the message catalogues as the parser is
    built, a cost paid on every ``run_cli``. Parsing never changes a parser, and
    the options' defaults are fixed values, so one parser per (command, every)
    serves every call; tests that build a parser themselves still get a new one.
    """
    from policylint import cli

    real = cli.build_parser
    built: dict[tuple[str | None, bool], Any] = {}

    def cached(only: str | None = None, *, every: bool = False) -> Any:
        if (only, every) not in built:
            built[(only, every)] = real(only, every=every)
        return built[(only, every)]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cli, "build_parser", cached)
        yield


@pytest.fixture(scope="session")
def ruleset() -> RuleSet:
    """The bundled rules, loaded once for the session; tests must not configure it in place."""
    from policylint.resources import rules_dir
    from policylint.ruleset import load_rules

    return load_rules([rules_dir()])


_MINIREPO: list[Path] = []


def minirepo_path() -> Path:
    """The small shared repository, built on first use, once per process. Read it; never edit it.

    Tests that are not about the bundled examples lint this instead of a copy of
    ``examples/good``: one cluster with two pools, three workloads with short
    generated traces and a proposal, clean under every rule (tests/data/minirepo).
    """
    if not _MINIREPO:
        import atexit
        import shutil
        import tempfile

        from fixture_helpers import build_minirepo

        folder = Path(tempfile.mkdtemp(prefix="policylint-minirepo-"))
        atexit.register(shutil.rmtree, folder, True)
        _MINIREPO.append(build_minirepo(folder / "repo"))
    return _MINIREPO[0]


@pytest.fixture(scope="session")
def minirepo_master() -> Path:
    """The small shared repository (see ``minirepo_path``); read-only."""
    return minirepo_path()


def copy_minirepo(dest: Path, master: Path | None = None) -> Path:
    """A private, editable copy of the small repository at ``dest`` (a few small files)."""
    import shutil

    return Path(shutil.copytree(master or minirepo_path(), dest))


@pytest.fixture
def minirepo(minirepo_master: Path, tmp_path: Path) -> Path:
    """A private copy of the small shared repository in ``tmp_path / "repo"``, free to edit."""
    return copy_minirepo(tmp_path / "repo", minirepo_master)


@pytest.fixture(autouse=True)
def _no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deterministic plain output in every test."""
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("POLICYLINT_DEBUG", raising=False)


def run_cli(args: list[str], cwd: Path | None = None) -> tuple[int, str, str]:
    """Run the real entry point in-process; return (exit code, stdout, stderr)."""
    import contextlib
    import io

    from policylint.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as exc:  # argparse usage errors
                code = int(exc.code or 0)
    finally:
        os.chdir(old)
    return code, out.getvalue(), err.getvalue()


GIT_IDENTITY = ["-c", "user.email=dev@example.com", "-c", "user.name=Dev", "-c", "commit.gpgsign=false"]


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` with a fixed identity; return its standard output.

    GIT_* variables are dropped: when the suite runs from a git hook they would
    point the nested commands at the outer repository.
    """
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = subprocess.run(
        ["git", *GIT_IDENTITY, *args], cwd=repo, check=True, capture_output=True, text=True, env=env
    )
    return done.stdout


def replace_once(path: Path, old: str, new: str) -> None:
    """Edit a test file in place, insisting that ``old`` occurs exactly once."""
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {path}"
    path.write_text(text.replace(old, new), encoding="utf-8")
