"""Write PL111's summed-column fixture trace (red team, 2026-12-06, round 11).

Run from anywhere:  python tests/rules/_traces/make_summed_columns.py

PL111/fail/traces/assistant-summed.csv has diurnal-100.csv's times and two value columns: `own`, a
small series of its own (a fixed arithmetic sequence, no randomness), and `retries`, which is
diurnal-100.csv's in_flight column copied - another workload's whole series, summed into this
one's demand. PL111/pass/traces/assistant-own-columns.csv has the same `own` column beside a
`retries` column of its own (another fixed sequence): two columns of one workload, summed as they
should be. Rerunning rewrites the same bytes.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    header, *rows = (HERE / "diurnal-100.csv").read_text().splitlines()
    assert header == "timestamp,in_flight"
    lines = ["timestamp,own,retries"]
    for i, row in enumerate(rows):
        stamp, value = row.split(",")
        lines.append(f"{stamp},{10 + (i * 7) % 13},{value}")
    out = HERE.parent / "PL111" / "fail" / "traces" / "assistant-summed.csv"
    out.write_text("\n".join(lines) + "\n")
    own = ["timestamp,own,retries"]
    for i, row in enumerate(rows):
        own.append(f"{row.split(',')[0]},{10 + (i * 7) % 13},{3 + (i * 5) % 17}")
    out = HERE.parent / "PL111" / "pass" / "traces" / "assistant-own-columns.csv"
    out.parent.mkdir(exist_ok=True)
    out.write_text("\n".join(own) + "\n")


if __name__ == "__main__":
    main()
