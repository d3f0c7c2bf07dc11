"""Write the shared measurement files of the pooled-demand fixtures and tests.

Run from anywhere:  python tests/rules/_traces/make_pooled_traces.py

Deterministic, like make_traces.py beside it; both series span 92 days ending
2026-11-30, the day before the fixtures' fixed "now", but on different steps, so
pooling them exercises the common grid.

- day-shift.csv (1-hour step): an interactive service, 200 in flight from 08:00 to
  20:00 UTC on a gentle ramp (190..210), 20 otherwise.
- night-shift.csv (2-hour step, samples on even hours): a batch, 20 running jobs from
  20:00 to 08:00 UTC (19..21), 2 otherwise.

At 10 in flight per GPU and one GPU per job, each needs 20-21 GPUs at its own p95; together
they never need more than 23, because one is busy while the other is quiet.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
END = int(datetime(2026, 11, 30, 22, 0, tzinfo=timezone.utc).timestamp())
DAYS = 92


def day_shift(t: int) -> int:
    hour = (t % 86_400) // 3600
    day = (t // 86_400) % 3
    return 190 + 10 * day if 8 <= hour < 20 else 20


def night_shift(t: int) -> int:
    hour = (t % 86_400) // 3600
    day = (t // 86_400) % 3
    return 2 if 8 <= hour < 20 else 19 + day


def write(name: str, step: int, level: Callable[[int], int]) -> None:
    start = END - DAYS * 86_400 + step
    rows = ["timestamp,value"]
    rows += [f"{t},{level(t)}" for t in range(start, END + 1, step)]
    (HERE / name).write_text("\n".join(rows) + "\n", encoding="utf-8")


def main() -> None:
    write("day-shift.csv", 3600, day_shift)
    write("night-shift.csv", 7200, night_shift)


if __name__ == "__main__":
    main()
