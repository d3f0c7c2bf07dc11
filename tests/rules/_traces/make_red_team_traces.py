"""Write the measurement files of the red-team fixtures (docs/red-team.md), PL960-PL977.

Run from anywhere:  python tests/rules/_traces/make_red_team_traces.py

Deterministic (no randomness; the "noise" is the fixed sequence of make_integrity_traces.py),
so rerunning rewrites the same bytes. The fixtures' "now" is 2026-12-01T00:00Z.

- pasted-week-edited.csv: pasted-week.csv with one sample of every day after the first week
  raised by one - a pasted week whose copies were edited so that no day repeats exactly.
- hourly-jitter-5min.csv: hourly-on-5min.csv with a jitter of -1, 0 or +1 added to every
  sample - hourly data forward-filled onto a 5-minute grid and then jittered.
- minutely-5min-edited.csv: minutely-5min.csv with five samples changed - a near copy.
- minutely-5min-offset.csv: minutely-5min.csv with 2 added to every sample and one sample in
  a hundred moved by one more, up or down - a near copy with an offset and sparse noise.
- bursty-copy.csv: a byte-for-byte copy of bursty-sustained.csv under another name.
- busy-afternoons.csv (15-minute rows, 92 days): 30 in flight with a small wobble; on ten
  days spread over the window, 150 from 13:00 to 17:00 UTC - the ten busiest afternoons.
- vram-future.csv: a VRAM trace (MiB) at 2-hour steps whose last sample is ten days after now.
- vram-past.csv: the same trace ending the hour before now.
- jobs-future.csv / jobs-past.csv: a job list (start, end, gpus) whose last job ends ten days
  after now / a day before now.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from make_integrity_traces import NOW, wobble

HERE = Path(__file__).resolve().parent


def rows_of(name: str) -> list[str]:
    return (HERE / name).read_text(encoding="utf-8").splitlines()


def write_rows(name: str, rows: list[str]) -> None:
    (HERE / name).write_text("\n".join(rows) + "\n", encoding="utf-8")


def edited_week() -> None:
    rows = rows_of("pasted-week.csv")
    head, body = rows[0], rows[1:]
    per_day = 96
    out = []
    for i, row in enumerate(body):
        t, v = row.split(",")
        day, slot = divmod(i, per_day)
        if day >= 7 and slot == (day * 37) % per_day:
            v = str(int(v) + 1)
        out.append(f"{t},{v}")
    write_rows("pasted-week-edited.csv", [head, *out])


def jittered_hours() -> None:
    rows = rows_of("hourly-on-5min.csv")
    out = [rows[0]]
    for i, row in enumerate(rows[1:]):
        t, v = row.split(",")
        out.append(f"{t},{int(v) + wobble(i, 1)}")
    write_rows("hourly-jitter-5min.csv", out)


def near_copy() -> None:
    rows = rows_of("minutely-5min.csv")
    for i in (100, 900, 1700, 2500, 3300):
        t, v = rows[i].split(",")
        rows[i] = f"{t},{int(v) + 3}"
    write_rows("minutely-5min-edited.csv", rows)
    rows = rows_of("minutely-5min.csv")
    for i in range(1, len(rows)):
        t, v = rows[i].split(",")
        noise = (1 if (i // 100) % 2 else -1) if i % 100 == 37 else 0
        rows[i] = f"{t},{int(v) + 2 + noise}"
    write_rows("minutely-5min-offset.csv", rows)
    shutil.copyfile(HERE / "bursty-sustained.csv", HERE / "bursty-copy.csv")


def afternoons() -> None:
    start, step = NOW - 92 * 86_400, 900
    busy_days = {5, 14, 23, 31, 40, 49, 58, 66, 75, 84}
    rows = ["timestamp,in_flight"]
    for i, t in enumerate(range(start, NOW, step)):
        day, hour = (t - start) // 86_400, (t % 86_400) / 3600
        busy = day in busy_days and 13 <= hour < 17
        rows.append(f"{t},{(150 if busy else 30) + wobble(i, 3)}")
    write_rows("busy-afternoons.csv", rows)


def vram(name: str, end: int) -> None:
    rows = ["timestamp,fb_used_mib,gpu_util"]
    start = end - 7 * 86_400
    for i, t in enumerate(range(start, end + 1, 7200)):
        resident = (i % 12) >= 3
        rows.append(f"{t},{20480 if resident else 0},{(50 + wobble(i, 10)) if resident else 0}")
    write_rows(name, rows)


def jobs(name: str, end: int) -> None:
    rows = ["job_id,start,end,gpus"]
    first = end - 60 * 86_400
    for j in range(60):
        begin = first + j * 86_400
        length = 3_000 + 12 * j
        if j == 59:
            begin = end - length
        rows.append(f"job-{j + 1:03d},{begin},{begin + length},8")
    write_rows(name, rows)


if __name__ == "__main__":
    edited_week()
    jittered_hours()
    near_copy()
    afternoons()
    vram("vram-future.csv", NOW + 10 * 86_400)
    vram("vram-past.csv", NOW - 3_600)
    jobs("jobs-future.csv", NOW + 10 * 86_400)
    jobs("jobs-past.csv", NOW - 86_400)


def pulled_with_digest() -> None:
    """pulled-digest.json: pulled-fresh.json with a provenance that records the file's SHA-256;
    pulled-edited.json: the same provenance, but three values inside the pulled range raised."""
    import hashlib
    import json

    text = (HERE / "pulled-fresh.json").read_text(encoding="utf-8")
    record = json.loads((HERE / "pulled-fresh.json.provenance.json").read_text(encoding="utf-8"))
    record["sha256"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    body = json.dumps(record, indent=2, sort_keys=True) + "\n"
    (HERE / "pulled-digest.json").write_text(text, encoding="utf-8")
    (HERE / "pulled-digest.json.provenance.json").write_text(body, encoding="utf-8")
    edited = text.replace('[1788141600,"120"]', '[1788141600,"180"]', 1).replace('[1788156000,"140"]', '[1788156000,"210"]', 1)
    assert edited != text
    (HERE / "pulled-edited.json").write_text(edited, encoding="utf-8")
    (HERE / "pulled-edited.json.provenance.json").write_text(body, encoding="utf-8")


if __name__ == "__main__":
    pulled_with_digest()
