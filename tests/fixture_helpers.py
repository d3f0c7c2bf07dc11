"""Helpers shared by the rule-fixture, Kueue, Volcano and export tests."""

from __future__ import annotations

import os

import datetime as dt
import functools
import math
import re
import shutil
from pathlib import Path
from typing import Any

import yaml

from policylint.engine.linter import LintOptions, lint
from policylint.engine.result import LintResult
from policylint.resources import rules_dir
from policylint.engine.ruleset import load_rules

TESTS = Path(__file__).parent
DATA = TESTS / "data"
FIXTURES = TESTS / "rules"
NOW = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
RULESET = load_rules([rules_dir()])
#: The small shared repository (YAML only; ``build_minirepo`` adds its traces).
MINIREPO = DATA / "minirepo"
#: Its traces, per pool of prod-east: workload -> (level most of the day, level from
#: 14:00 to 15:00 UTC, requests or jobs per GPU). One GPU per replica throughout.
MINI_POOLS = {
    "serving": {"chat-assistant": (330, 360, 10), "reranker": (200, 220, 10)},
    "batch": {"offline-scoring": (20, 26, 1)},
}
#: 91 days (just over the 90-day minimum window) at a 10-minute step, ending at ``NOW``.
MINI_DAYS, MINI_STEP = 91, 600
MINI_BUSY_HOURS = (14, 15)


def mini_bands(pool: str) -> tuple[int, int]:
    """(baseline, daily) band in GPUs of a pool of the small repository, from ``MINI_POOLS``.

    The busy hour covers under 5% of each sustained series, so the baseline (p95) is
    the quiet level; it covers over 1%, so the daily band (p99) and the peak are the
    busy level. The workloads peak together, so pooling saves nothing.
    """
    members = MINI_POOLS[pool].values()
    return (
        sum(math.ceil(quiet / per_gpu) for quiet, _, per_gpu in members),
        sum(math.ceil(busy / per_gpu) for _, busy, per_gpu in members),
    )


_EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)")


def run(paths: list[Path], root: Path, rules: bool = True) -> LintResult:
    return lint(paths, LintOptions(root=root, now=NOW, ruleset=RULESET if rules else None))


def build_minirepo(dest: Path) -> Path:
    """Write the small shared repository to ``dest``: the YAML of ``MINIREPO`` plus its traces.

    The traces repeat one day: a quiet level, and a busy hour from 14:00 UTC, so every
    band follows from ``MINI_POOLS`` by arithmetic (see the repository's README).
    """
    import numpy as np

    shutil.copytree(MINIREPO, dest)
    start = int((NOW - dt.timedelta(days=MINI_DAYS)).timestamp())
    times = np.arange(start, int(NOW.timestamp()), MINI_STEP, dtype=np.int64)
    hour = (times % 86400) // 3600
    busy = (hour >= MINI_BUSY_HOURS[0]) & (hour < MINI_BUSY_HOURS[1])
    folder = dest / "measurements" / "traces"
    folder.mkdir(parents=True)
    for pool in MINI_POOLS.values():
        for name, (quiet, high, _) in pool.items():
            values = np.where(busy, high, quiet)
            rows = np.char.add(np.char.add(times.astype(str), ","), values.astype(str))
            column = "running_jobs" if high < 100 else "in_flight"
            text = f"timestamp,{column}\n" + "\n".join(rows.tolist()) + "\n"
            (folder / f"{name}.csv").write_text(text, encoding="utf-8")
    return dest


def document_counts(repo: Path) -> tuple[int, int]:
    """(documents, files) of the capacity YAML in ``repo``, as a check's summary counts them."""
    files = [p for p in sorted(repo.rglob("*.y*ml")) if not p.name.startswith(".")]
    documents = sum(sum(1 for doc in yaml.safe_load_all(p.read_text(encoding="utf-8")) if doc is not None) for p in files)
    return documents, len(files)


def line_of(path: Path, text: str) -> int:
    """The 1-based number of the first line of ``path`` that contains ``text``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, start=1) if text in line)


def all_marks(folder: Path, relative_to: Path | None = None) -> set[tuple[str, int, str]]:
    """Every ``# expect: CODE[, CODE]`` mark under ``folder`` as (file, line, code)."""
    base = relative_to or folder
    marks = set()
    for path in sorted(folder.rglob("*.y*ml")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            m = _EXPECT.search(line)
            if m:
                for code in m.group("codes").split(","):
                    marks.add((path.relative_to(base).as_posix(), n, code.strip()))
    return marks


def expected_marks(folder: Path, code: str) -> set[tuple[str, int]]:
    """Lines under ``folder`` marked as expecting ``code``."""
    return {(file, line) for file, line, c in all_marks(folder) if c == code}


def session_cache() -> Path | None:
    """The test session's measurement cache folder (set by conftest), for runs that are not about measuring.

    Entries are keyed by a trace's bytes and the settings that shape its facts, so every
    fixture citing the shared traces measures them once per session, not once per lint.
    """
    folder = os.environ.get("POLICYLINT_CACHE_DIR")
    return Path(folder) if folder else None


def run_fixture(folder: Path) -> LintResult:
    """Lint one rule fixture folder: its own repository, with the traces shared under the fixtures root."""
    return lint([folder], LintOptions(root=FIXTURES, now=NOW, ruleset=RULESET, repository=folder, cache_dir=session_cache()))


def reported_marks(folder: Path, code: str, result: LintResult | None = None) -> set[tuple[str, int]]:
    """(file, line) of every ``code`` finding in a fixture folder; ``result``: its lint, if already run."""
    if result is None:
        result = run_fixture(folder)
    return {
        ((Path.cwd() / f.file).resolve().relative_to(folder.resolve()).as_posix(), f.line)
        for f in result.findings
        if f.code == code
    }


@functools.cache
def _crd_document(path: str, data: bytes) -> Any:
    """A CRD file parsed once per content (each is a few hundred kilobytes of YAML).

    Keyed by path and exact bytes, so an edited file is parsed again; callers only
    read the result (``crd_schema`` builds new containers from it).
    """
    return yaml.load(data, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def crd_schema(crd_file: Path, version: str) -> dict[str, Any]:
    """The CRD's openAPIV3Schema as a JSON Schema that refuses unknown fields.

    Kubernetes prunes unknown fields instead of refusing them; refusing them here
    catches a field written under the wrong name (``cohort`` in v1beta2). ``x-kubernetes-*``
    keys are unknown to jsonschema and ignored; ``nullable`` becomes a null type.
    """
    crd = _crd_document(str(crd_file.resolve()), crd_file.read_bytes())
    schema = next(v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"] if v["name"] == version)

    def convert(node: Any) -> Any:
        if isinstance(node, list):
            return [convert(x) for x in node]
        if not isinstance(node, dict):
            return node
        out = {k: convert(v) for k, v in node.items()}
        if out.pop("nullable", False) and "type" in out:
            out["type"] = [out["type"], "null"]
        if "properties" in out and "additionalProperties" not in out and not out.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
        return out

    converted: dict[str, Any] = convert(schema)
    return converted
