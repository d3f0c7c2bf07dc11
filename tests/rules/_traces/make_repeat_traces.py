"""Write the measurement files of PL990's fixtures (a trace that repeats itself at a lag).

Run from anywhere:  python tests/rules/_traces/make_repeat_traces.py

Seeded noise (numpy's PCG64, seed 990), so rerunning rewrites the same bytes. 28 days of
15-minute rows ending at the fixtures' "now", 2026-12-01T00:00Z.

- measured-28d.csv: a daily cycle of 20 to 60 in flight with Poisson noise at every row - a
  measured series, whose 16-step runs of varied steps never repeat.
- pasted-week-skewed.csv: the busiest week of measured-28d.csv with its last row written once
  more, pasted over the 28 days: the copies repeat every 673 rows, so no two days line up.
- poller-28d.csv: a 0/1 poller that toggles at nearly every row - it repeats its few patterns by
  nature and takes too few distinct steps to be judged.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from make_integrity_traces import NOW

HERE = Path(__file__).resolve().parent
STEP = 900
PER_DAY = 86_400 // STEP
DAYS = 28


def write(name: str, values: np.ndarray) -> None:
    start = NOW - values.size * STEP
    rows = ["timestamp,in_flight", *(f"{start + i * STEP},{int(v)}" for i, v in enumerate(values.tolist()))]
    (HERE / name).write_text("\n".join(rows) + "\n", encoding="utf-8")


def main() -> None:
    rng = np.random.default_rng(990)
    n = DAYS * PER_DAY
    hour = (np.arange(n) % PER_DAY) * 24 / PER_DAY
    measured = rng.poisson(40 + 20 * np.sin(2 * np.pi * (hour - 8) / 24))
    write("measured-28d.csv", measured)
    days = measured.reshape(DAYS, PER_DAY)
    start = int(np.argmax([days[d : d + 7].sum() for d in range(DAYS - 6)]))
    week = days[start : start + 7].ravel()
    block = np.concatenate([week, week[-1:]])
    write("pasted-week-skewed.csv", np.tile(block, n // block.size + 1)[:n])
    write("poller-28d.csv", np.cumsum(rng.random(n) < 0.98) % 2)


if __name__ == "__main__":
    main()
