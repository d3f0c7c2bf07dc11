"""Write PL111's summed-column fixture trace (red team, 2026-12-06, round 11).

Run from anywhere:  python tests/rules/_traces/make_summed_columns.py

PL111/fail/traces/assistant-summed.csv has diurnal-100.csv's times and two value columns: `own`, a
small series of its own (a fixed arithmetic sequence, no randomness), and `retries`, which is
diurnal-100.csv's in_flight column copied - another workload's whole series, summed into this
one's demand. PL111/pass/traces/assistant-own-columns.csv has the same `own` column beside a
`retries` column of its own (another fixed sequence): two columns of one workload, summed as they
should be. For PL972, :func:`near_copies` writes a noisy original and a sum whose `retries`
column is that original with one sample raised by one (red team, 2026-12-06, round 12: PL111's
exact print then misses it), and an honest sum beside another original. Rerunning rewrites the
same bytes.
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
    near_copies()
    split_copies()
    scaled_column()


def near_copies() -> None:
    """PL972's: a noisy trace of one workload (traces/original.csv), and another's sum of two columns.

    In fail/, the sum's `retries` column is the original with one sample raised by one; in pass/, it
    is noise of its own. The noise is a fixed linear congruential sequence: the same bytes every run.
    """
    header, *rows = (HERE / "minutely-5min.csv").read_text().splitlines()
    assert header == "timestamp,in_flight"
    state = 12345

    def noise() -> int:
        nonlocal state
        state = (1103515245 * state + 12345) % (1 << 31)
        return (state >> 8) % 17

    for kind in ("fail", "pass"):
        original, summed = ["timestamp,in_flight"], ["timestamp,own,retries"]
        for i, row in enumerate(rows):
            stamp = row.split(",")[0]
            theirs = 30 + noise()
            original.append(f"{stamp},{theirs}")
            retries = theirs + (1 if i == len(rows) // 2 else 0) if kind == "fail" else 3 + noise()
            summed.append(f"{stamp},{8 + noise()},{retries}")
        folder = HERE.parent / "PL972" / kind / "traces"
        folder.mkdir(exist_ok=True)
        (folder / "original.csv").write_text("\n".join(original) + "\n")
        name = "assistant-summed-edited.csv" if kind == "fail" else "assistant-own-columns.csv"
        (folder / name).write_text("\n".join(summed) + "\n")


def split_copies() -> None:
    """Another workload's series dealt out at random between two new columns of a sum (red team, 2026-12-06, round 14).

    PL111/fail/traces/assistant-split.csv: `own`, then `left` and `right`, which add up to diurnal-100.csv's
    in_flight exactly, each sample split at a random point. PL972/fail/traces/assistant-split-edited.csv:
    the same over PL972's original.csv with one sample raised by one. PL972/pass/traces/assistant-three-own.csv:
    three columns of noise of their own. Its own fixed sequence, so the files above keep their bytes.
    """
    state = 424242

    def draw(n: int) -> int:
        nonlocal state
        state = (1103515245 * state + 12345) % (1 << 31)
        return (state >> 8) % n

    header, *rows = (HERE / "diurnal-100.csv").read_text().splitlines()
    lines = ["timestamp,own,left,right"]
    for i, row in enumerate(rows):
        stamp, value = row.split(",")
        left = draw(int(value) + 1)
        lines.append(f"{stamp},{12 + (i * 5) % 11},{left},{int(value) - left}")
    (HERE.parent / "PL111" / "fail" / "traces" / "assistant-split.csv").write_text("\n".join(lines) + "\n")
    folder = HERE.parent / "PL972"
    _, *originals = (folder / "fail" / "traces" / "original.csv").read_text().splitlines()
    split, own = ["timestamp,own,left,right"], ["timestamp,own,left,right"]
    for i, row in enumerate(originals):
        stamp, value = row.split(",")
        theirs = int(value) + (1 if i == len(originals) // 3 else 0)
        left = draw(theirs + 1)
        split.append(f"{stamp},{8 + draw(17)},{left},{theirs - left}")
        own.append(f"{stamp},{8 + draw(17)},{draw(9)},{3 + draw(11)}")
    (folder / "fail" / "traces" / "assistant-split-edited.csv").write_text("\n".join(split) + "\n")
    (folder / "pass" / "traces" / "assistant-three-own.csv").write_text("\n".join(own) + "\n")


def scaled_column() -> None:
    """PL111/fail/traces/ranker-scaled-column.csv: `own`, a series of its own, and `retries`, bursty-sustained.csv's
    in_flight times two: another member's series scaled into a column (red team, 2026-12-06, round 14).
    PL111/pass/traces/ranker-own-columns.csv: the same `own` beside a `retries` column that rises and falls on
    its own."""
    header, *rows = (HERE / "bursty-sustained.csv").read_text().splitlines()
    scaled, own = ["timestamp,own,retries"], ["timestamp,own,retries"]
    for i, row in enumerate(rows):
        stamp, value = row.split(",")
        scaled.append(f"{stamp},{6 + (i * 11) % 7},{2 * int(value)}")
        own.append(f"{stamp},{6 + (i * 11) % 7},{4 + (i * 13) % 9}")
    (HERE.parent / "PL111" / "fail" / "traces" / "ranker-scaled-column.csv").write_text("\n".join(scaled) + "\n")
    (HERE.parent / "PL111" / "pass" / "traces" / "ranker-own-columns.csv").write_text("\n".join(own) + "\n")


if __name__ == "__main__":
    main()
