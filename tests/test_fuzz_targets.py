"""The fuzz targets in ``fuzz/`` stay runnable: each runs a few inputs inside the normal suite.

``fuzz/run.py`` runs them for a time budget (CI: about a minute in total); this
test only proves the harness works and the seeds pass, so that a broken target
is noticed before CI's fuzzing step.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

FUZZ = Path(__file__).resolve().parents[1] / "fuzz"
sys.path.insert(0, str(FUZZ))

import run as fuzz_run  # noqa: E402
from targets import all_targets  # noqa: E402

TARGETS = all_targets()


def test_runner_knows_every_target() -> None:
    assert list(fuzz_run.NAMES) == list(TARGETS)


# The trace readers' own property tests live beside them; their target runs in fuzz/run.py.
@pytest.mark.parametrize("name", ["load", "config"])
def test_every_seed_passes_its_target(name: str) -> None:
    target = TARGETS[name]
    seeds = target.seeds()
    assert seeds, f"{name} has no seeds"
    for seed in seeds:
        target.run(seed)


@pytest.mark.parametrize("name", ["load", "config"])
def test_target_runs_mutated_inputs(name: str) -> None:
    target = TARGETS[name]

    @settings(max_examples=15, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(target.strategy(target.seeds()))
    def prop(value: object) -> None:
        target.run(value)

    prop()


def test_gate_target_seeds_hold_the_gates_contract() -> None:
    """Each seed's edits make the whole run fail, and the hook's run reports exactly that (warm and cold)."""
    target = TARGETS["gate"]
    assert [target.run(seed) for seed in target.seeds()] == [1] * len(target.seeds())


def test_check_target_passes_an_unmutated_repository() -> None:
    target = TARGETS["check"]
    name, data = next(seed for seed in target.seeds() if seed[0].endswith("prod-east.yaml"))
    target.run((name, data))


@pytest.mark.realtool
def test_runner_reports_a_short_budget_cleanly() -> None:
    done = subprocess.run(
        [sys.executable, str(FUZZ / "run.py"), "--seconds", "2", "--target", "config"],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("ok   config: ")
