"""Byte-identity of what the tool prints, kept as golden files (tests/golden/).

Restructuring (new packages, caches, faster readers) must not change a single byte
of what users see. Each case runs the installed CLI in-process and compares exit
code and standard output with the file recorded for it:

* ``check`` on every bundled example in every report format;
* ``check --format json`` on every rule fixture folder (tests/rules/<CODE>/{fail,pass});
* ``bands`` on example traces and pools, and ``plan --format json`` on the examples;
* the same on a generated corpus: the small shared repository with its traces
  replaced by seeded, noisy diurnal series and its pools resized, so that bands,
  pooling and findings are all non-trivial.

A change of output on purpose is recorded by regenerating the files and committing
them with a message that says why::

    POLICYLINT_UPDATE_GOLDEN=1 pytest -q tests/test_golden.py

The regeneration switch only rewrites files under tests/golden/; without it the
test never writes there.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import EXAMPLES, REPO, copy_minirepo, run_cli
from fixture_helpers import FIXTURES

GOLDEN = REPO / "tests" / "golden"
UPDATE = os.environ.get("POLICYLINT_UPDATE_GOLDEN") == "1"
NOW = "2026-12-01"
FORMATS = ("text", "concise", "json", "sarif", "junit", "github", "gitlab", "markdown")


@dataclass(frozen=True)
class Case:
    name: str
    #: folder to run in, or a builder of one (given a scratch folder)
    where: Path | Callable[[Path], Path]
    args: tuple[str, ...]
    #: further reports the same run writes: golden name -> format (``--format FORMAT=FILE``)
    reports: tuple[tuple[str, str], ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *(name for name, _ in self.reports))


def _generated(seed: int) -> Callable[[Path], Path]:
    """A builder of the generated repository ``seed`` (see the module docstring)."""

    def build(scratch: Path) -> Path:
        import numpy as np

        repo = copy_minirepo(scratch / f"generated-{seed}")
        rng = np.random.default_rng([20261203, seed])
        for trace in sorted((repo / "measurements" / "traces").glob("*.csv")):
            header, *rows = trace.read_text(encoding="utf-8").splitlines()
            times = np.array([int(r.split(",", 1)[0]) for r in rows], dtype=np.int64)
            level = np.array([float(r.split(",", 1)[1]) for r in rows])
            hour = (times % 86400) / 3600.0
            shape = 1.0 + 0.25 * np.sin((hour - rng.uniform(0, 24)) / 24.0 * 2 * np.pi)
            noisy = rng.poisson(np.maximum(level * shape * rng.uniform(0.6, 1.4), 0.0))
            burst = rng.integers(0, times.size - 48)
            noisy[burst : burst + 48] += int(level.mean() * 0.5)
            body = "\n".join(f"{t},{v}" for t, v in zip(times.tolist(), noisy.tolist(), strict=True))
            trace.write_text(f"{header}\n{body}\n", encoding="utf-8")
        cluster = repo / "clusters" / "prod-east.yaml"
        text = cluster.read_text(encoding="utf-8")
        reserved = iter(int(v) for v in rng.integers(5, 90, size=2))
        text = re.sub(r"reservedGpus: \d+", lambda _: f"reservedGpus: {next(reserved)}", text)
        cluster.write_text(text, encoding="utf-8")
        return repo

    return build


def _cases() -> list[Case]:
    cases: list[Case] = []
    examples = sorted(p for p in EXAMPLES.iterdir() if (p / ".policylint.yaml").is_file())
    for example in examples:
        # one lint per example: the text report on stdout, every other format to a file
        others = tuple((f"examples-{example.name}-check.{fmt}", fmt) for fmt in FORMATS if fmt != "text")
        cases.append(Case(f"examples-{example.name}-check.text", example, ("check", ".", "--format", "text"), others))
        cases.append(Case(f"examples-{example.name}-plan.json", example, ("plan", ".", "--format", "json")))
        cases.append(Case(f"examples-{example.name}-statistics.text", example, ("check", ".", "--statistics")))
    for pool in ("prod-east/serving", "prod-east/batch"):
        slug = pool.replace("/", "-")
        cases.append(Case(f"examples-good-bands-{slug}.json", EXAMPLES / "good", ("bands", ".", "--pool", pool, "--format", "json")))
    traces = sorted((EXAMPLES / "good" / "measurements" / "traces").glob("*.csv"))[:3]
    for trace in traces:
        rel = trace.relative_to(EXAMPLES / "good").as_posix()
        cases.append(Case(f"examples-good-bands-{trace.stem}.json", EXAMPLES / "good", ("bands", rel, "--format", "json", "--cold-start", "600")))
    for folder in sorted(FIXTURES.glob("PL*/*")):
        if folder.is_dir():
            rel = folder.relative_to(FIXTURES).as_posix()
            cases.append(
                Case(
                    f"fixtures-{rel.replace('/', '-')}.json",
                    FIXTURES,
                    ("check", rel, "--root", ".", "--now", NOW, "--isolated", "--format", "json", "--exit-zero"),
                )
            )
    for seed in (1, 2):
        others = tuple((f"generated-{seed}-check.{fmt}", fmt) for fmt in ("json", "sarif"))
        cases.append(Case(f"generated-{seed}-check.text", _generated(seed), ("check", ".", "--now", NOW, "--format", "text"), others))
        cases.append(Case(f"generated-{seed}-bands-serving.json", _generated(seed), ("bands", ".", "--pool", "prod-east/serving", "--format", "json")))
        cases.append(Case(f"generated-{seed}-plan.json", _generated(seed), ("plan", ".", "--format", "json", "--now", NOW)))
    return cases


CASES = _cases()


def _render(case: Case, scratch: Path) -> dict[str, str]:
    """Golden name -> what the run printed (stdout) or wrote (each further report)."""
    where = case.where if isinstance(case.where, Path) else case.where(scratch)
    reports = scratch / "reports"
    reports.mkdir()
    args = list(case.args)
    for name, fmt in case.reports:
        args += ["--format", f"{fmt}={reports / name}"]
    code, out, _err = run_cli(args, cwd=where)
    shown = " ".join(case.args)
    got = {case.name: f"# policylint {shown}\n# exit {code}\n{out}"}
    for name, fmt in case.reports:
        written = reports / name
        got[name] = f"# policylint {shown} --format {fmt}\n# exit {code}\n" + (written.read_text(encoding="utf-8") if written.is_file() else "(not written)\n")
    return got


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache folder for every fixture-tree case this module runs (in one test worker).

    The rule fixtures share one tree whose hundred-odd workloads share a few long traces and
    a few clusters, so a narrowed run on one fixture folder measures pools reaching into many
    others, and near-copy partners in all of them (:mod:`policylint.engine.copy_reach`).
    Measured cold for each of the 140 cases, that was most of the suite's time. The cases
    therefore share a cache, as one user's runs do: each case starts from whatever the cases
    before it in the same worker kept (which cases those are depends on how the workers split
    them), and its output must still be the golden's byte for byte - a cache can make a run
    faster, never different. Each pool and trace is still measured cold by the first case
    that reaches it. Regeneration (``POLICYLINT_UPDATE_GOLDEN=1``) runs every case cold, with
    the test's own empty cache, so a cache never writes a golden.
    """
    return tmp_path_factory.mktemp("golden-fixture-cache")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_output_is_byte_identical(case: Case, tmp_path: Path, request: pytest.FixtureRequest,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    if case.where == FIXTURES and not UPDATE:
        monkeypatch.setenv("POLICYLINT_CACHE_DIR", str(request.getfixturevalue("shared_cache")))
    for name, got in _render(case, tmp_path).items():
        golden = GOLDEN / name
        if UPDATE:
            GOLDEN.mkdir(exist_ok=True)
            if not golden.is_file() or golden.read_text(encoding="utf-8") != got:
                golden.write_text(got, encoding="utf-8")
            continue
        assert golden.is_file(), f"no golden file for {name}: regenerate with POLICYLINT_UPDATE_GOLDEN=1 (see the module docstring)"
        want = golden.read_text(encoding="utf-8")
        assert got == want, f"{name} changed; if on purpose, regenerate with POLICYLINT_UPDATE_GOLDEN=1 and say why in the commit"


def test_every_golden_file_has_a_case() -> None:
    """A golden file nobody compares any more is a check that silently stopped."""
    names = {name for c in CASES for name in c.names}
    stale = sorted(p.name for p in GOLDEN.iterdir() if p.name not in names) if GOLDEN.is_dir() else []
    if UPDATE:
        for name in stale:
            (GOLDEN / name).unlink()
        return
    assert not stale, f"golden files without a case (delete them or regenerate): {stale}"
