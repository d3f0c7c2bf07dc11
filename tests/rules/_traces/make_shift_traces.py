"""Write the measurement files of PL988's fixtures: services that peak apart, and services that peak together.

Run from anywhere:  python tests/rules/_traces/make_shift_traces.py

Deterministic, like make_pooled_traces.py beside it: 92 days at a 1-hour step ending
2026-11-30 22:00 UTC, the day before the fixtures' fixed "now" (PL112 asks for 90 days
of pooled window before ``plan`` or PL988 pools anything), so each file stays small.

- shift-00-08.csv, shift-08-16.csv, shift-16-24.csv: one service each, about 1,000 in
  flight during its own eight hours of the day (UTC) and about 100 otherwise. At 10 in
  flight per GPU each needs about 100 GPUs at its daily band; any two pooled need about
  110, all three about 120: each is busy while the others are quiet.
- together-a.csv, together-b.csv, together-c.csv: three services busy in the same hours
  (about 08:00-16:00 UTC, each starting and ending an hour apart and with levels of its
  own, so that no file is a copy or a scaled copy of another): pooled they need as many
  GPUs as apart.
- gang-scoring-days.csv, gang-eval-nights.csv: batch jobs running, for the gang split
  (PL988/fail/gang-split.yaml): about 20 one-GPU scoring jobs from 08:00 to 20:00 UTC and 2
  otherwise; about 20 two-GPU evaluation jobs from 20:00 to 08:00 UTC and 2 otherwise. Apart
  they need 22 and 44 GPUs at their daily bands, pooled 46.
- gang-together-scoring.csv, gang-together-eval.csv: the same two kinds of jobs, both busy
  from about 08:00 to 16:00 UTC (PL988/pass/gang-together.yaml): pooling saves next to nothing.

Each fixture cites files of its own: the fixtures' golden runs read all of ``tests/rules`` as
one repository, where a file two fixtures cite is one workload's demand counted again (PL972).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
END = int(datetime(2026, 11, 30, 22, 0, tzinfo=timezone.utc).timestamp())
DAYS = 92
STEP = 3600


def shift(first: int, salt: int) -> Callable[[int], int]:
    """Busy from ``first`` for eight hours (UTC), quiet otherwise; ``salt`` varies the levels by day and hour."""

    def level(t: int) -> int:
        hour = (t % 86_400) // 3600
        day = t // 86_400
        wobble = (day * 7 + hour * 3 + salt * 5) % 11 - 5
        busy = (hour - first) % 24 < 8
        return (1_000 if busy else 100) + (4 if busy else 1) * wobble

    return level


def jobs(first: int, hours: int, salt: int) -> Callable[[int], int]:
    """About 20 jobs running for ``hours`` from ``first`` (UTC), about 2 otherwise; ``salt`` varies the counts."""

    def level(t: int) -> int:
        hour = (t % 86_400) // 3600
        day = t // 86_400
        wobble = (day * 7 + hour * 3 + salt * 2) % 5 - 2
        busy = (hour - first) % 24 < hours
        return 20 + wobble if busy else 2 + (wobble > 0)

    return level


def write(name: str, level: Callable[[int], int]) -> None:
    start = END - DAYS * 86_400 + STEP
    rows = ["timestamp,in_flight"]
    rows += [f"{t},{level(t)}" for t in range(start, END + 1, STEP)]
    (HERE / name).write_text("\n".join(rows) + "\n", encoding="utf-8")


def main() -> None:
    write("shift-00-08.csv", shift(0, 1))
    write("shift-08-16.csv", shift(8, 2))
    write("shift-16-24.csv", shift(16, 3))
    write("together-a.csv", shift(7, 4))
    write("together-b.csv", shift(8, 5))
    write("together-c.csv", shift(9, 6))
    write("gang-scoring-days.csv", jobs(8, 12, 1))
    write("gang-eval-nights.csv", jobs(20, 12, 2))
    write("gang-together-scoring.csv", jobs(8, 8, 3))
    write("gang-together-eval.csv", jobs(9, 8, 4))


if __name__ == "__main__":
    main()
