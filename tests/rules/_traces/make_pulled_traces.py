"""Write the pulled traces and provenance records the PL130/PL131 fixtures reference.

Run from anywhere:  python tests/rules/_traces/make_pulled_traces.py

As ``policylint pull`` would have written them (a query_range answer and its
``.provenance.json``), without a server: the same daily cycle as diurnal-100.csv
over 92 days at 2-hour steps ending 2026-11-30T22:00Z, pulled with
``sum(vllm:num_requests_running{model_name="chat"})`` at a step of 2 hours.

- pulled-fresh.json: pulled 2026-11-28 (3 days before the fixtures' "now").
- pulled-old.json: pulled 2026-11-20 (11 days before).
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from pathlib import Path

from policylint.measure.sources.provenance import render_record, render_trace, sidecar

HERE = Path(__file__).parent
STEP = 7200
END = int(datetime(2026, 11, 30, 22, tzinfo=timezone.utc).timestamp())
START = END - 92 * 86_400


def main() -> None:
    values = [
        [t, str(round(100 + 40 * math.sin(2 * math.pi * (t % 86_400) / 86_400)))] for t in range(START, END + 1, STEP)
    ]
    for name, pulled_at in (("pulled-fresh.json", "2026-11-28T06:00:00Z"), ("pulled-old.json", "2026-11-20T06:00:00Z")):
        path = HERE / name
        path.write_text(render_trace([{"metric": {}, "values": values}]), encoding="utf-8")
        record = {
            "query": 'sum(vllm:num_requests_running{model_name="chat"})',
            "template": "vllm-running",
            "params": {"model": "chat"},
            "server": "https://prometheus.example.com",
            "start": "2026-08-30T22:00:00Z",
            "end": "2026-11-30T22:00:00Z",
            "step_seconds": STEP,
            "lookback_seconds": 92 * 86_400,
            "pulled_at": pulled_at,
            "series": 1,
            "samples": len(values),
        }
        sidecar(path).write_text(render_record(record), encoding="utf-8")


if __name__ == "__main__":
    main()
