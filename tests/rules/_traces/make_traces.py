"""Write the small shared measurement files the rule fixtures reference.

Run from anywhere:  python tests/rules/_traces/make_traces.py

Everything is deterministic (no randomness), so rerunning rewrites the same bytes.
Series use 2-hour steps to stay small; most span 92 days ending 2026-11-30T22:00Z,
the day before the fixtures' fixed "now" (2026-12-01).

- diurnal-100.csv: smooth daily cycle 60..140 in flight (baseline = daily = peak = 140
  with any cold start up to 2 hours).
- short-30d.csv: the same cycle over only 30 days (measurement window too short).
- old-92d.csv: the same cycle over 92 days ending 2026-09-30, two months before "now".
- spiky.csv: the cycle plus one 2-hour spike to 400 in flight every day at 14:00; with a
  cold start of 4 hours or more the spikes are noise and the sustained maximum stays 140.
- padded-92d.csv: the cycle over the last 10 days only, after 82 days of zeros (92 days on
  paper, a 10-day window once the flat days are left out).
- frozen-92d.csv: the cycle for 72 days, then 20 days stuck at 140 (an exporter that kept
  repeating its last reading): a 72-day window.
- vram-mib.csv: GPU memory in use (MiB) and GPU busy percent over 7 days; the model is
  unloaded (0 MiB) from 00:00 to 06:00 and holds 20 GiB otherwise, busy 50% while loaded.
- tail-jobs.csv: 100 jobs, most about an hour, two running 30 hours (p99 / p50 > 20).
- mixed-jobs.csv: 100 jobs of about an hour, one in seven of 8 GPUs and the rest of 2 (PL986).
- outlier-jobs.csv: 100 evaluation jobs of 2 GPUs, one of them (eval-050) of 8.
- cpu-jobs.csv: 100 fine-tuning jobs of 8 GPUs and 16 CPUs each.
- even-jobs.csv: 100 jobs between 50 and 70 minutes (p99 / p50 close to 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
STEP = 7200
END = int(datetime(2026, 11, 30, 22, 0, tzinfo=timezone.utc).timestamp())
OLD_END = int(datetime(2026, 9, 30, 22, 0, tzinfo=timezone.utc).timestamp())


def diurnal(t: int) -> int:
    """In-flight requests at unix time t: 100 +- 40 over the UTC day, lowest at midnight."""
    hour = (t % 86_400) / 3600
    return int(100 - 40 * math.cos(2 * math.pi * hour / 24))


def spiky(t: int) -> int:
    return 400 if (t % 86_400) == 14 * 3600 else diurnal(t)


def write_series(name: str, days: int, end: int, level: Callable[[int], int]) -> None:
    start = end - days * 86_400 + STEP
    rows = ["timestamp,in_flight"]
    rows += [f"{t},{level(t)}" for t in range(start, end + 1, STEP)]
    (HERE / name).write_text("\n".join(rows) + "\n", encoding="utf-8")


def padded(t: int) -> int:
    return diurnal(t) if t > END - 10 * 86_400 else 0


def frozen(t: int) -> int:
    return diurnal(t) if t <= END - 20 * 86_400 else 140


def write_vram(name: str, days: int) -> None:
    start = END - days * 86_400 + STEP
    rows = ["timestamp,fb_used_mib,gpu_util"]
    for t in range(start, END + 1, STEP):
        loaded = (t % 86_400) >= 6 * 3600
        rows.append(f"{t},{20480 if loaded else 0},{50 if loaded else 0}")
    (HERE / name).write_text("\n".join(rows) + "\n", encoding="utf-8")


def write_jobs(name: str, durations: list[int], gpus: list[int] | None = None, offset: int = 0, prefix: str = "job",
               cpus: int | None = None) -> None:
    start = END - 40 * 86_400 + offset
    rows = ["job_id,start,end,gpus" + (",cpus" if cpus is not None else "")]
    for i, d in enumerate(durations):
        t = start + i * 9000
        extra = f",{cpus}" if cpus is not None else ""
        rows.append(f"{prefix}-{i + 1:03d},{t},{t + d},{8 if gpus is None else gpus[i]}{extra}")
    (HERE / name).write_text("\n".join(rows) + "\n", encoding="utf-8")


def main() -> None:
    write_series("diurnal-100.csv", 92, END, diurnal)
    write_series("short-30d.csv", 30, END, diurnal)
    write_series("old-92d.csv", 92, OLD_END, diurnal)
    write_series("spiky.csv", 92, END, spiky)
    write_series("padded-92d.csv", 92, END, padded)
    write_series("frozen-92d.csv", 92, END, frozen)
    write_vram("vram-mib.csv", 7)
    write_jobs("tail-jobs.csv", [3000 + 12 * i for i in range(98)] + [108_000, 108_000])
    write_jobs("even-jobs.csv", [3000 + 12 * i for i in range(100)])
    write_jobs("outlier-jobs.csv", [4500 + 18 * i for i in range(100)], gpus=[8 if i == 49 else 2 for i in range(100)],
               offset=900, prefix="eval")
    write_jobs("cpu-jobs.csv", [40_000 + 60 * i for i in range(100)], offset=1800, prefix="ft", cpus=16)
    # one job in seven of 8 GPUs, the rest of 2: counted at 8 GPUs each, the small ones grow fourfold (PL986)
    write_jobs("mixed-jobs.csv", [4000 + 15 * i for i in range(100)], gpus=[8 if i % 7 == 0 else 2 for i in range(100)],
               offset=600, prefix="mix")


if __name__ == "__main__":
    main()
