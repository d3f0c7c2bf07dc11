"""A block pasted over the window is found at any lag and around any holes (PL990).

Red team, 2026-12-07, round 20, against ``examples/good``'s serving pool: the busiest week of
chat-assistant, code-completion and reranker pasted over each 92-day trace, serving raised from
48 reserved + 10 elastic to 53 + 25 (with its 5 proposed), passed ``check``, the hook and
``--diff`` in two forms that PL966 and PL971, which compare whole UTC days at one time of day,
do not see:

- item 12: five rows (a 30-minute hole the grid does not bridge) deleted from every day at one
  time of day shared by the three traces, so no day has every sample valid;
- item 13: the week pasted with its last row written once more, so the copies repeat every
  2,017 rows and no two days line up.

Both repeat every 16-step run of varied steps the week holds; a measured trace repeats none.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import committed_example, run_cli
from test_red_team_pasted_days import PER_DAY, SERVING, _codes, _facts, _rows, _trace, _write


def _busiest_week(values: np.ndarray) -> np.ndarray:
    days = values[: values.size // PER_DAY * PER_DAY].reshape(-1, PER_DAY)
    return days[np.sort(np.argsort(np.percentile(days, 95, axis=1))[-7:])].ravel()


def _paste_week_with_holes(path: Path) -> None:
    """Game 12: the busiest week pasted over the trace, then five rows of every day deleted (one time of day per day, the same in every trace)."""
    times, values = _rows(path)
    pasted = np.tile(_busiest_week(values), values.size // (7 * PER_DAY) + 1)[: values.size]
    rng = np.random.default_rng(3)
    keep = np.ones(values.size, dtype=bool)
    for day in range(values.size // PER_DAY):
        start = day * PER_DAY + int(rng.integers(0, PER_DAY - 8))
        keep[start : start + 5] = False
    _write(path, times[keep], pasted[keep])


def _paste_week_and_one(path: Path) -> None:
    """Game 13: the busiest week with its last row written once more, pasted over the trace (copies 2,017 rows apart)."""
    times, values = _rows(path)
    week = _busiest_week(values)
    block = np.concatenate([week, week[-1:]])
    _write(path, times, np.tile(block, values.size // block.size + 1)[: values.size])


def _raise_serving(repo: Path) -> None:
    """The capacity the game bought with the pasted traces: serving 48 reserved + 10 elastic -> 53 + 25."""
    for name, edits in (
        ("workloads/product-ai.yaml", (("    baseline: 300", "    baseline: 385"), ("    daily: 330", "    daily: 638"))),
        ("clusters/prod-east.yaml", (("reservedGpus: 48", "reservedGpus: 53"), ("        maxGpus: 10", "        maxGpus: 25"))),
    ):
        path = repo / name
        text = path.read_text(encoding="utf-8")
        for old, new in edits:
            assert text.count(old) == 1, (name, old)
            text = text.replace(old, new)
        path.write_text(text, encoding="utf-8")


GAMES = {"a hole in every day": _paste_week_with_holes, "a week and one sample": _paste_week_and_one}


@pytest.mark.parametrize("game", sorted(GAMES))
def test_a_pasted_week_that_no_day_test_sees_repeats_every_varied_run(tmp_path: Path, game: str) -> None:
    repo = committed_example(tmp_path)
    path = _trace(repo, "chat-assistant")
    GAMES[game](path)
    facts = _facts(path)
    # the day tests judge nothing or find nothing: that was the game
    assert (facts["repeated_days"], facts["near_repeated_days"]) in ((None, None), (0, 0))
    assert facts["repeated_run_share"] == 1.0
    assert isinstance(facts["repeated_runs_judged"], int) and facts["repeated_runs_judged"] >= 800


@pytest.mark.parametrize("game", sorted(GAMES))
def test_the_pasted_week_game_fails_check(tmp_path: Path, game: str) -> None:
    repo = committed_example(tmp_path)
    for name in SERVING:
        GAMES[game](_trace(repo, name))
    _raise_serving(repo)
    # before PL990 the run was clean (+20 GPUs in serving); now each pasted trace is reported, and nothing else
    assert _codes(repo) == sorted(("PL990", f"100% of workload {name}") for name in SERVING)


def test_the_message_names_the_share_and_what_it_means(tmp_path: Path) -> None:
    repo = committed_example(tmp_path)
    _paste_week_and_one(_trace(repo, "reranker"))
    code, out, err = run_cli(["check", ".", "--format", "json", "--no-cache"], cwd=repo)
    assert (code, err) == (1, "")
    [finding] = [f for f in json.loads(out)["findings"] if f["code"] == "PL990"]
    assert finding["message"].startswith(
        "100% of workload reranker's concurrency trace's varied 16-sample runs occur again elsewhere in it: "
        "a block pasted over the window repeats every run inside it"
    )
    # at the trace the workload cites, as PL966 and PL971 are
    assert (finding["file"], finding["line"]) == ("workloads/search.yaml", _trace_line(repo / "workloads/search.yaml", "reranker.csv"))


def _trace_line(path: Path, name: str) -> int:
    [line] = [i for i, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if name in text]
    return line


def test_measured_traces_repeat_no_varied_run(tmp_path: Path) -> None:
    repo = committed_example(tmp_path)
    for name in SERVING:
        facts = _facts(_trace(repo, name))
        assert facts["repeated_run_share"] == 0.0
        assert isinstance(facts["repeated_runs_judged"], int) and facts["repeated_runs_judged"] >= 1000
    assert _codes(repo) == []


def _figures(values: np.ndarray) -> tuple[float | None, int | None]:
    """(repeated_run_share, repeated_runs_judged) of a series sampled without gaps."""
    from policylint.calc.runs import judged_samples, run_figures  # here: the game tests run on the code before it too

    _, share, judged = run_figures(*judged_samples(values.astype(np.float64), np.ones(values.size, dtype=bool)))
    return share, judged


def test_pollers_and_counters_of_few_step_sizes_are_not_judged() -> None:
    rng = np.random.default_rng(11)
    n = 92 * PER_DAY
    toggling = np.cumsum(rng.random(n) < 0.98) % 2  # a 0/1 poller toggling at 98% of its samples
    quantised = rng.integers(0, 3, n)  # a 0/1/2 counter: steps -2, -1, 1, 2, never five distinct
    batches = 8 * rng.integers(0, 3, n)  # a batch count moving in steps of 8 or 16
    for values in (toggling, quantised, batches):
        assert _figures(values) == (None, 0)
    # the poller, pasted a week over the window, is still not judged: its runs repeat by nature
    week = toggling[: 7 * PER_DAY]
    assert _figures(np.tile(week, 14)[:n]) == (None, 0)


def test_the_share_is_blind_to_a_constant_added_to_the_whole_trace(tmp_path: Path) -> None:
    repo = committed_example(tmp_path)
    path = _trace(repo, "code-completion")
    _paste_week_and_one(path)
    times, values = _rows(path)
    pasted = _figures(values)
    assert pasted[0] == 1.0
    assert _figures(values + 1000) == pasted
    honest_path = _trace(committed_example(tmp_path, folder="honest"), "code-completion")
    _, honest = _rows(honest_path)
    assert _figures(honest + 7) == _figures(honest) == (0.0, _figures(honest)[1])


def test_one_week_pasted_once_into_a_measured_trace_is_reported() -> None:
    # the bound has margin both ways: one pasted week among 92 measured days repeats 10-20% of its runs
    _, values = _rows(Path(__file__).parent.parent / "examples" / "good" / "measurements" / "traces" / "chat-assistant.csv")
    once = values.copy()
    once[: 7 * PER_DAY] = values[7 * PER_DAY : 14 * PER_DAY]
    share, judged = _figures(once)
    assert share is not None and judged is not None and judged >= 1000
    assert 0.1 <= share <= 0.2
