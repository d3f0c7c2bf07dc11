"""Shared test helpers.

Tests that drive real programs (pre-commit, shells, mypy, a wheel build, CI steps in
bash) carry the ``realtool`` marker: they run by default and in CI, and
``POLICYLINT_FUZZ_SECONDS=0 bash .ci/run -m "not realtool"`` leaves them out for a fast local run. Tests that
need *a* capacity repository rather than the bundled examples use the small shared one
(``minirepo_path``, ``copy_minirepo``, the ``minirepo`` fixture).
"""

from __future__ import annotations

import gc
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from policylint.engine.rule import RuleSet

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


def pytest_configure(config: pytest.Config) -> None:
    """Keep the checkout off child processes' import path; collect garbage as the CLI does.

    The suite tests the installed copy of policylint (``.ci/run`` installs the
    built wheel; pytest runs with ``--import-mode=importlib``, which puts no test
    folder's parent on ``sys.path``). ``PYTHONSAFEPATH`` does the same for every
    ``python -c`` / ``python -m`` the tests start, whatever their working folder:
    without it a child started in the checkout would import ``./policylint``.

    The garbage collector is tuned as the console entry point does it
    (``policylint.cli.console_main``).

    Each worker runs hundreds of pipelines in one process, and with the default
    thresholds the collector re-scans every object the session keeps alive (imported
    modules, collected tests, session fixtures) every few hundred allocations.
    """
    os.environ["PYTHONSAFEPATH"] = "1"
    # A resident server the developer runs would serve every command the tests start (with the
    # same output, by design): the suite runs them alone, and tests/test_resident.py starts its own.
    os.environ["POLICYLINT_SERVER"] = "off"
    gc.set_threshold(100_000, 50, 1000)


def pytest_report_header(config: pytest.Config) -> str:
    """Say which copy of policylint the suite is testing."""
    import policylint

    return f"policylint {policylint.__version__} from {Path(policylint.__file__).parent}"


def pytest_collection_finish(session: pytest.Session) -> None:
    """What exists once the tests are collected lives until the end: stop re-scanning it."""
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def _own_cache_folder(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Each test gets a cache folder of its own, never the user's home nor another test's.

    Whether a test runs warm or cold therefore never depends on which tests ran
    before it in the same worker: a test that wants a warm run makes one first.
    The folder is removed when the test ends: left in place, a thousand of them
    came to 12 GB per run and filled a CI machine's disk.
    """
    folder = tmp_path_factory.mktemp("policylint-cache")
    monkeypatch.setenv("POLICYLINT_CACHE_DIR", str(folder))
    yield
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of the test's own that the test can look into (``tmp_path / "cache"``, not made yet)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("POLICYLINT_CACHE_DIR", str(folder))
    return folder


@pytest.fixture(scope="session")
def ruleset() -> RuleSet:
    """The bundled rules, loaded once for the session; tests must not configure it in place."""
    from policylint.resources import rules_dir
    from policylint.engine.ruleset import load_rules

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


def run_fresh(args: list[str], cwd: Path, cache: Path | None = None) -> tuple[str, set[str]]:
    """(stdout, names of the modules it imported) of the CLI with ``args`` in a new interpreter.

    For what a run imports (``sys.modules`` at its end); ``cache`` is its cache folder.
    """
    import json
    import subprocess
    import sys

    probe = (
        "import json, sys\nfrom policylint.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    env = {**os.environ, "NO_COLOR": "1"}
    if cache is not None:
        env["POLICYLINT_CACHE_DIR"] = str(cache)
    done = subprocess.run([sys.executable, "-c", probe, *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=300)
    return done.stdout, set(json.loads(done.stderr.strip().splitlines()[-1]))


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


def committed_example(tmp_path: Path, example: str = "good", folder: str = "repo", message: str = "base") -> Path:
    """A copy of ``examples/<example>`` at ``tmp_path/<folder>``, a git repository with it committed."""
    import shutil

    repo = Path(shutil.copytree(EXAMPLES / example, tmp_path / folder))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return repo


TRAINING_PROPOSAL = """apiVersion: policylint/v1
kind: Proposal
metadata:
  name: {name}
  team: research
  owner: research@example.com
spec:
  cluster: {cluster}
  date: "2026-11-20"
  requests:
    - pool: training
      gpus: {gpus}
      gpuModel: H100-SXM-80GB
  workloads: [fine-tuning]
  justification: >-
    The training queue guarantees fewer GPUs than fine-tuning's baseline band.
"""


def propose_training(repo: Path, gpus: int, *, name: str = "training-2027", cluster: str = "east") -> Path:
    """``proposals/training.yaml`` in a copy of ``examples/kueue``: ``gpus`` H100s asked for the training queue."""
    folder = repo / "proposals"
    folder.mkdir(exist_ok=True)
    path = folder / "training.yaml"
    path.write_text(TRAINING_PROPOSAL.format(name=name, cluster=cluster, gpus=gpus), encoding="utf-8")
    return path


def replace_once(path: Path, old: str, new: str) -> None:
    """Edit a test file in place, insisting that ``old`` occurs exactly once."""
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {path}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def assert_narrowed_is_full_narrowed(
    narrowed: tuple[int, str, str], full: tuple[int, str, str], root: Path, when: list[str]
) -> None:
    """A narrowed run's JSON report against the judge-everything run's, narrowed the same way.

    They are equal, except that a narrowed run also judges the near-copy partners of what it
    judges whole (:mod:`policylint.engine.copy_reach`), found by a search the judge-everything
    run does not make: it may report PL972 on a partner besides - each one a finding of the
    whole repository's run too.
    """
    import json

    if narrowed == full:
        return
    assert narrowed[0] == full[0] and narrowed[2] == full[2]
    got, kept = json.loads(narrowed[1])["findings"], json.loads(full[1])["findings"]
    extra = [f for f in got if f not in kept]
    assert [f for f in got if f not in extra] == kept
    assert extra and {f["code"] for f in extra} == {"PL972"}, extra
    whole = json.loads(run_cli(["check", "--format", "json", *when], cwd=root)[1])["findings"]
    assert all(f in whole for f in extra)
