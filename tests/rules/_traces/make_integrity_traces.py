"""Write the measurement files of the evidence-integrity fixtures (PL111, PL960-PL963).

Run from anywhere:  python tests/rules/_traces/make_integrity_traces.py

Deterministic like make_traces.py (no randomness: the "noise" is a fixed
arithmetic sequence), so rerunning rewrites the same bytes. The fixtures' "now"
is 2026-12-01T00:00Z.

- future-92d.csv: the diurnal cycle of diurnal-100.csv over 92 days ending
  2026-12-20T22:00Z - three weeks after "now" (a wrong clock or a made-up series).
- night-busy-120d.csv (30-minute step, 120 days ending 2026-11-30T23:30Z): 40 in
  flight most of the day, 120 from 22:00 to 02:00 UTC, with a small wobble.
- hourly-on-5min.csv (5-minute rows, 14 days): a value that changes only on the hour -
  hourly data repeated on a 5-minute grid.
- minutely-5min.csv (5-minute rows, 14 days): the same level with a change at most steps.
- smooth-sine.csv (5-minute rows, 14 days): 100 + 40 sin over the day, to three decimals.
- pasted-week.csv (15-minute rows, 91 days): one noisy week of 60 +- 20 in flight, repeated
  thirteen times to fill the window.
- bursty-sustained.csv (15-minute rows, 92 days): 30 in flight, and every day a burst to
  90 that lasts three hours (wider than any cold start): real, sustained demand. Its noise
  (+-2) is drawn (numpy's PCG64, seed 971), not the arithmetic wobble: the docs cite this
  trace as measured days (PL966, PL971, PL990), and the wobble's 16-step runs repeat
  through the trace, which PL990 reports (65% of its varied runs) as it would a pasted block.
- bursty-scaled.csv: bursty-sustained.csv with every value times 1.3, rounded (a scaled copy).
- pulled-extended.json (+ .provenance.json): a Prometheus answer over 92 days ending
  2026-11-30T22:00Z at 2-hour steps, whose provenance records a pull of only the last 61
  days: a month was prepended to the file after the pull.
The copy fixture of PL111 (PL111/fail/traces/chat-export.csv) is a byte-for-byte copy of
diurnal-100.csv, written by this script too.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOW = int(datetime(2026, 12, 1, tzinfo=timezone.utc).timestamp())


def wobble(i: int, size: int) -> int:
    """A fixed pseudo-noise in [-size, size]: deterministic, uneven, not periodic in a day."""
    return (i * 7919 + (i * i) % 104_729) % (2 * size + 1) - size


def write(name: str, start: int, end: int, step: int, level: Callable[[int, int], str]) -> None:
    rows = ["timestamp,in_flight"]
    rows += [f"{t},{level(i, t)}" for i, t in enumerate(range(start, end + 1, step))]
    (HERE / name).write_text("\n".join(rows) + "\n", encoding="utf-8")


def diurnal(t: int) -> int:
    hour = (t % 86_400) / 3600
    return int(100 - 40 * math.cos(2 * math.pi * hour / 24))


def night_busy(i: int, t: int) -> str:
    hour = (t % 86_400) // 3600
    busy = hour >= 22 or hour < 2
    return str((120 if busy else 40) + wobble(i, 3))


def hourly(i: int, t: int) -> str:
    return str(60 + wobble(t // 3600, 20))


def minutely(i: int, t: int) -> str:
    return str(60 + wobble(i, 20))


def sine(i: int, t: int) -> str:
    return f"{100 + 40 * math.sin(2 * math.pi * (t % 86_400) / 86_400):.3f}"


def _drawn_noise(size: int, count: int, seed: int) -> list[int]:
    """``count`` integers in [-size, size] drawn with a fixed seed: noise that, like a measurement's, never repeats a run."""
    import numpy as np

    return [int(v) for v in np.random.default_rng(seed).integers(-size, size + 1, size=count)]


#: bursty-sustained.csv's noise, one draw per row (92 days of 15-minute rows)
_BURSTY_NOISE = _drawn_noise(2, 92 * 96, 971)


def bursty(i: int, t: int) -> str:
    hour = (t % 86_400) // 3600
    return str((90 if 13 <= hour < 16 else 30) + _BURSTY_NOISE[i])


def write_pulled_extended() -> None:
    from policylint.measure.sources.provenance import render_record, render_trace, sidecar

    end = int(datetime(2026, 11, 30, 22, tzinfo=timezone.utc).timestamp())
    values = [[t, str(diurnal(t))] for t in range(end - 92 * 86_400, end + 1, 7200)]
    path = HERE / "pulled-extended.json"
    path.write_text(render_trace([{"metric": {}, "values": values}]), encoding="utf-8")
    record = {
        "query": 'sum(vllm:num_requests_running{model_name="chat"})',
        "template": "vllm-running",
        "params": {"model": "chat"},
        "server": "https://prometheus.example.com",
        "start": "2026-09-30T22:00:00Z",
        "end": "2026-11-30T22:00:00Z",
        "step_seconds": 7200,
        "lookback_seconds": 61 * 86_400,
        "pulled_at": "2026-11-28T06:00:00Z",
        "series": 1,
        "samples": 61 * 12 + 1,
    }
    sidecar(path).write_text(render_record(record), encoding="utf-8")


def main() -> None:
    end = int(datetime(2026, 12, 20, 22, 0, tzinfo=timezone.utc).timestamp())
    write("future-92d.csv", end - 92 * 86_400 + 7200, end, 7200, lambda i, t: str(diurnal(t)))
    write("night-busy-120d.csv", NOW - 120 * 86_400, NOW - 1800, 1800, night_busy)
    fortnight = NOW - 14 * 86_400
    write("hourly-on-5min.csv", fortnight, NOW - 300, 300, hourly)
    write("minutely-5min.csv", fortnight, NOW - 300, 300, minutely)
    write("smooth-sine.csv", fortnight, NOW - 300, 300, sine)
    week = 7 * 96
    write("pasted-week.csv", NOW - 91 * 86_400, NOW - 900, 900, lambda i, t: str(60 + wobble(i % week, 20)))
    write("bursty-sustained.csv", NOW - 92 * 86_400, NOW - 900, 900, bursty)
    write("bursty-scaled.csv", NOW - 92 * 86_400, NOW - 900, 900, lambda i, t: str(round(1.3 * int(bursty(i, t)))))
    write_pulled_extended()
    copy = HERE.parent / "PL111" / "fail" / "traces" / "chat-export.csv"
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(HERE / "diurnal-100.csv", copy)


if __name__ == "__main__":
    main()
