"""Days pasted to fill the window are found whatever the grid's phase and however far apart.

Red team, 2026-12-07, round 20, against ``examples/good``'s serving pool:

- the seven busiest days of chat-assistant, code-completion and reranker pasted over each
  trace's 92 days, every time moved 60 s off the five-minute grid through midnight (a scrape
  offset does the same): PL966 and PL971 laid days side by side only when the grid had a sample
  at a UTC midnight, so neither judged a day, and the pool's pooled bands went from 53/56 to
  58/78 GPUs; serving raised from 48 reserved + 10 elastic to 53 + 25 (with its 5 proposed)
  passed ``check``, the hook and ``--diff``;
- chat-assistant's last 36 days pasted over its window with one sample of each copied day raised
  by one: PL971 looked for a near repeat only 35 days back, so a measurement of 36 days passed
  as 92.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import committed_example, run_cli

from policylint import traces
from policylint.measure.integrity.workload import trace_facts

SERVING = ("chat-assistant", "code-completion", "reranker")
PER_DAY = 288  # five-minute samples


def _trace(repo: Path, name: str) -> Path:
    return repo / "measurements" / "traces" / f"{name}.csv"


def _rows(path: Path) -> tuple[np.ndarray, np.ndarray]:
    data = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.int64)
    return data[:, 0], data[:, 1]


def _write(path: Path, times: np.ndarray, values: np.ndarray) -> None:
    lines = ["timestamp,in_flight", *(f"{t},{v}" for t, v in zip(times.tolist(), values.tolist(), strict=True))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _paste_busiest_week(path: Path, offset: int) -> None:
    """The seven busiest days (by their p95) pasted over the whole trace, every time moved by ``offset`` s."""
    times, values = _rows(path)
    days = values[: values.size // PER_DAY * PER_DAY].reshape(-1, PER_DAY)
    week = days[np.sort(np.argsort(np.percentile(days, 95, axis=1))[-7:])].ravel()
    _write(path, times + offset, np.tile(week, values.size // week.size + 1)[: values.size])


def _paste_last_days_edited(path: Path, period: int) -> None:
    """The last ``period`` days pasted over the trace, one sample of every pasted day raised by one."""
    times, values = _rows(path)
    block = values[-period * PER_DAY :]
    pasted = np.tile(block, values.size // block.size + 2)[-values.size :].copy()
    rng = np.random.default_rng(7)
    for day in range((values.size - block.size) // PER_DAY):
        pasted[day * PER_DAY + rng.integers(PER_DAY)] += 1
    _write(path, times, pasted)


def _facts(path: Path) -> dict[str, object]:
    s = traces.read_series(path, value_columns=["in_flight"])
    return trace_facts(s.times, s.values, s.valid, float(s.step_seconds))


def _codes(repo: Path) -> list[tuple[str, str]]:
    code, out, err = run_cli(["check", ".", "--format", "json", "--no-cache"], cwd=repo)
    assert "Traceback" not in err, err
    return sorted((str(f["code"]), str(f["message"]).split("'")[0]) for f in json.loads(out)["findings"])


@pytest.mark.parametrize("offset", [0, 60, 1])
def test_a_pasted_week_is_found_whatever_the_grids_phase(tmp_path: Path, offset: int) -> None:
    repo = committed_example(tmp_path)
    path = _trace(repo, "chat-assistant")
    _paste_busiest_week(path, offset)
    facts = _facts(path)
    # 92 days from midnight; moved off it, the partial first day is no whole one: 91 judged, all but
    # the first seven copies of an earlier day
    judged = 92 if offset == 0 else 91
    assert (facts["repeated_days"], facts["repeated_day_share"]) == (judged - 7, (judged - 7) / judged)


def test_the_busiest_week_pasted_off_the_midnight_grid_fails_check(tmp_path: Path) -> None:
    repo = committed_example(tmp_path)
    for name in SERVING:
        _paste_busiest_week(_trace(repo, name), 60)
    assert [code for code, _ in _codes(repo)].count("PL966") == 3


def test_days_pasted_from_further_back_than_five_weeks_are_near_repeats(tmp_path: Path) -> None:
    repo = committed_example(tmp_path)
    path = _trace(repo, "chat-assistant")
    _paste_last_days_edited(path, 36)
    facts = _facts(path)
    assert facts["repeated_days"] == 0  # every copy edited: PL966 sees nothing
    # 92 days, the last 36 measured: each of the 56 copies repeats its day at >= 90% of its changes
    assert (facts["near_repeated_days"], facts["edited_repeated_days"]) == (56, 56)
    assert ("PL971", "workload chat-assistant") in [(c, m.split("'")[0]) for c, m in _codes(repo)]


def test_measured_traces_off_the_midnight_grid_repeat_no_day(tmp_path: Path) -> None:
    repo = committed_example(tmp_path)
    for name in SERVING:
        times, values = _rows(_trace(repo, name))
        _write(_trace(repo, name), times + 60, values)
        facts = _facts(_trace(repo, name))
        assert (facts["repeated_days"], facts["near_repeated_days"]) == (0, 0)
    assert _codes(repo) == []


def _read_at(repo: Path, step: int) -> None:
    """Every serving CSV trace read at ``step`` seconds (``stepSeconds`` under its columns)."""
    for name in ("product-ai", "search"):
        path = repo / "workloads" / f"{name}.yaml"
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("      columns: [in_flight]\n",
                                     f"      columns: [in_flight]\n      stepSeconds: {step}\n"), encoding="utf-8")


def test_a_pasted_week_read_at_a_step_that_does_not_divide_a_day_is_found(tmp_path: Path) -> None:
    # round 20: `stepSeconds: 301` laid no day out, so PL966 and PL971 judged nothing (+20 GPUs)
    repo = committed_example(tmp_path)
    for name in SERVING:
        _paste_busiest_week(_trace(repo, name), 0)
    _read_at(repo, 301)
    s = traces.read_series(_trace(repo, "chat-assistant"), value_columns=["in_flight"], step_seconds=301)
    facts = trace_facts(s.times, s.values, s.valid, float(s.step_seconds))
    # read at 300 s from the 301 s grid, a copy differs from its day where the grids drift apart:
    # three exact repeats, the other 81 copies near ones
    assert (facts["repeated_days"], facts["near_repeated_days"], facts["edited_repeated_days"]) == (3, 84, 81)
    codes = [code for code, _ in _codes(repo)]
    assert (codes.count("PL966"), codes.count("PL971")) == (2, 3)  # chat-assistant and reranker hold exact repeats too


def test_measured_traces_read_at_a_step_that_does_not_divide_a_day_repeat_no_day(tmp_path: Path) -> None:
    repo = committed_example(tmp_path)
    _read_at(repo, 301)
    assert _codes(repo) == []
