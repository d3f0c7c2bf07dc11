"""Write the job lists of PL979 (open jobs that outlast every finished one).

Run from anywhere:  python tests/rules/_traces/make_open_jobs.py

Deterministic, so rerunning rewrites the same bytes.

- training-jobs.csv: 123 training jobs of 8 GPUs over 92 days, one starting every 18 hours,
  each running two to four days; the jobs still running at the export (the last few) have no
  end, as a scheduler's export writes them.
- training-jobs-blanked.csv: the same list with the end cells of two jobs from 75 days before
  the export blanked (red team, attempt 26): they count as running for the rest of the trace.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
END = int(datetime(2026, 11, 30, 22, 0, tzinfo=timezone.utc).timestamp())
START = END - 92 * 86_400
BLANKED = (20, 21)  # jobs starting about 77 and 76 days before the export


def rows(blank: tuple[int, ...] = ()) -> list[str]:
    out = ["job_id,start,end,gpus"]
    for i in range(123):
        start = START + i * 18 * 3600
        end = start + 48 * 3600 + (i * 7 % 48) * 3600
        shown = "" if end > END or i in blank else str(end)
        out.append(f"train-{i + 1:03d},{start},{shown},8")
    return out


def main() -> None:
    (HERE / "training-jobs.csv").write_text("\n".join(rows()) + "\n", encoding="utf-8")
    (HERE / "training-jobs-blanked.csv").write_text("\n".join(rows(BLANKED)) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
