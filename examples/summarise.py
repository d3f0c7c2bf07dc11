"""Print the concurrency bands and GPU sizing of an example capacity repository.

Usage:  python examples/summarise.py [REPO]      (REPO defaults to examples/good)

A small, independent re-statement of the band calculator in FRAMEWORK terms, used to pick
the numbers in the example YAML files.  Defaults only: exclusions are removed, the sustained
series is the trailing minimum over W = ceil(coldStartSeconds / step) samples (the first W-1
samples have no full window and are dropped), baseline B = p95 and daily D = p99 of that
series (numpy "inverted_cdf", so each band is an observed value), peak P = max of the
cleaned series.  GPUs = ceil(band / perGpuConcurrency.value) * gpusPerReplica.
"""

from __future__ import annotations

import csv
import json
import math
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import yaml

HERE = Path(__file__).resolve().parent


@dataclass
class Row:
    """Computed facts for one workload."""

    name: str
    cls: str
    cluster: str
    pool: str
    days: float | None = None
    window: int | None = None
    bands: tuple[int, int, int] | None = None  # B, D, P
    gpus: tuple[int, int, int] | None = None
    note: list[str] = field(default_factory=list)


def epoch(text: Any) -> float:
    """Unix seconds of an ISO date / date-time (UTC when no offset is given)."""
    if isinstance(text, (int, float)):
        return float(text)
    value = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.timestamp()


def load_docs(repo: Path) -> list[tuple[Path, dict[str, Any]]]:
    docs = []
    for path in sorted(repo.rglob("*.yaml")):
        if path.name.startswith(".") or "measurements" in path.parts:
            continue
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict):
                docs.append((path, doc))
    return docs


def read_columns(path: Path) -> dict[str, np.ndarray]:
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    cols: dict[str, np.ndarray] = {}
    for i, name in enumerate(header):
        raw = [r[i] for r in body]
        try:
            cols[name] = np.asarray(raw, dtype=np.float64)
        except ValueError:
            try:  # ISO-8601 timestamps
                cols[name] = np.asarray([epoch(v) for v in raw])
            except ValueError:  # identifiers such as job_id
                cols[name] = np.asarray(raw)
    return cols


def load_series(base: Path, m: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, float]:
    """Timestamps, values and step of one measurement, on a regular grid."""
    path = base / m["path"]
    fmt = m.get("format", "auto")
    if fmt == "auto":
        fmt = "prometheus" if path.suffix == ".json" else "csv"
    if fmt == "prometheus":
        result = json.loads(path.read_text())["data"]["result"]
        want = m.get("match", {})
        picked = [r for r in result if all(r["metric"].get(k) == v for k, v in want.items())]
        arrays = [np.asarray(r["values"], dtype=object) for r in picked]
        t = arrays[0][:, 0].astype(np.float64)
        c = np.sum([a[:, 1].astype(np.float64) for a in arrays], axis=0)
    elif fmt == "jobs":
        cols = read_columns(path)
        start, end = cols[m.get("startColumn", "start")], cols[m.get("endColumn", "end")]
        step = float(m.get("stepSeconds", 300))
        t = np.arange(math.floor(start.min() / step) * step, end.max() + step, step)
        c = (np.searchsorted(np.sort(start), t, "right")
             - np.searchsorted(np.sort(end), t, "right")).astype(np.float64)
    else:
        cols = read_columns(path)
        ts = m.get("timestampColumn", "timestamp")
        names = m.get("columns") or [k for k in cols if k != ts]
        t, c = cols[ts], np.sum([cols[k] for k in names], axis=0)
    step = float(m.get("stepSeconds") or np.median(np.diff(t)))
    return t, c, step


def percentiles(base: Path, m: dict[str, Any]) -> tuple[float, float, float]:
    cols = read_columns(base / m["path"])
    if m.get("durationColumn", "duration_seconds") in cols:
        d = cols[m.get("durationColumn", "duration_seconds")]
    else:
        d = cols[m.get("endColumn", "end")] - cols[m.get("startColumn", "start")]
    p50, p90, p99 = np.percentile(d, [50, 90, 99], method="inverted_cdf")
    return float(p50), float(p90), float(p99)


def gpus_for(band: float, spec: dict[str, Any]) -> int | None:
    per = spec.get("perGpuConcurrency", {}).get("value")
    if not per:
        return None
    return math.ceil(band / per) * int(spec["gpusPerReplica"])


def analyse(path: Path, doc: dict[str, Any]) -> Row:
    spec = doc["spec"]
    row = Row(doc["metadata"]["name"], spec["class"], spec.get("cluster", "?"), spec.get("pool", "?"))
    conc = spec.get("concurrency", {})
    tol = spec.get("tolerance", {})
    if "maxQueueSeconds" in tol:
        row.note.append(f"tol {tol['maxQueueSeconds']:g}s" + ("" if tol.get("evidence") else " (no evidence)"))
    elif tol.get("label"):
        row.note.append(f"tol label '{tol['label']}' only")
    vram = spec.get("vram", {})
    if vram.get("activeComputeSeconds"):
        row.note.append(f"vram x{vram.get('residencySeconds', 0) / vram['activeComputeSeconds']:.2f}")
    jobs = spec.get("durations", {}).get("jobs")
    if jobs:
        p50, _, p99 = percentiles(path.parent, jobs)
        row.note.append(f"p50 {p50 / 3600:.1f}h p99 {p99 / 3600:.1f}h tail x{p99 / p50:.1f}")
    if "trace" not in conc:
        if "declared" in conc:
            row.note.append(f"declared only ({conc['declared']:g})")
        return row
    t, c, step = load_series(path.parent, conc["trace"])
    keep = np.ones(t.size, dtype=bool)
    for ex in conc.get("exclude", []):
        keep &= ~((t >= epoch(ex["start"])) & (t < epoch(ex["end"])))
    t, c = t[keep], c[keep]
    row.days = (t[-1] - t[0] + step) / 86400
    w = max(1, math.ceil(spec.get("coldStartSeconds", 0) / step))
    row.window = w
    s = np.lib.stride_tricks.sliding_window_view(c, w).min(axis=1)
    b, d = np.percentile(s, [95, 99], method="inverted_cdf")
    row.bands = (int(b), int(d), int(c.max()))
    g = [gpus_for(x, spec) for x in row.bands]
    if None not in g:
        row.gpus = tuple(g)  # type: ignore[assignment]
    declared = spec.get("bands", {})
    for key, value in zip(("baseline", "daily", "peak"), row.bands):
        if key in declared and abs(declared[key] - value) > 0.10 * value:
            row.note.append(f"declared {key} {declared[key]:g} vs {value}")
    return row


def fmt(x: Any, width: int) -> str:
    return ("-" if x is None else str(x)).rjust(width)


def main(argv: list[str]) -> int:
    repo = Path(argv[1]) if len(argv) > 1 else HERE / "good"
    docs = load_docs(repo)
    rows = [analyse(p, d) for p, d in docs if d.get("kind") == "Workload"]
    print(f"== workloads in {repo.name} (bands in concurrency units; GPUs = ceil(band/perGpu) x gpusPerReplica)")
    print(f"{'workload':<18}{'class':<10}{'pool':<24}{'days':>6}{'W':>3}"
          f"{'B':>6}{'D':>6}{'P':>6}{'B gpu':>7}{'D gpu':>7}{'P gpu':>7}  notes")
    for r in rows:
        b, d, p = r.bands or (None, None, None)
        gb, gd, gp = r.gpus or (None, None, None)
        days = None if r.days is None else f"{r.days:.1f}"
        print(f"{r.name:<18}{r.cls:<10}{r.cluster + '/' + r.pool:<24}{fmt(days, 6)}{fmt(r.window, 3)}"
              f"{fmt(b, 6)}{fmt(d, 6)}{fmt(p, 6)}{fmt(gb, 7)}{fmt(gd, 7)}{fmt(gp, 7)}  {'; '.join(r.note)}")

    print("\n== pools (reserved should be 1.00-1.15 x baseline GPUs; reserved+elastic about the daily GPUs)")
    print(f"{'pool':<26}{'serves':<20}{'reserved':>9}{'B gpu':>7}{'ratio':>7}"
          f"{'res+el':>8}{'D gpu':>7}{'P gpu':>7}  workloads")
    pools: dict[tuple[str, str], dict[str, Any]] = {}
    for _, doc in docs:
        if doc.get("kind") == "Cluster":
            for pool in doc["spec"]["pools"]:
                pools[(doc["metadata"]["name"], pool["name"])] = pool
    for (cluster, name), pool in pools.items():
        members = [r for r in rows if (r.cluster, r.pool) == (cluster, name)]
        sized = [r for r in members if r.gpus]
        sb = sum(r.gpus[0] for r in sized) if sized else None  # type: ignore[index]
        sd = sum(r.gpus[1] for r in sized) if sized else None  # type: ignore[index]
        sp = sum(r.gpus[2] for r in sized) if sized else None  # type: ignore[index]
        reserved = pool["reservedGpus"]
        total = reserved + pool.get("elastic", {}).get("maxGpus", 0)
        ratio = f"{reserved / sb:.2f}" if sb else None
        unsized = [r.name for r in members if not r.gpus]
        who = ", ".join(r.name for r in sized) + (f" (unsized: {', '.join(unsized)})" if unsized else "")
        print(f"{cluster + '/' + name:<26}{','.join(pool['serves']):<20}{reserved:>9}{fmt(sb, 7)}"
              f"{fmt(ratio, 7)}{total:>8}{fmt(sd, 7)}{fmt(sp, 7)}  {who}")

    proposals = [d for _, d in docs if d.get("kind") == "Proposal"]
    if proposals:
        print("\n== proposals (asked vs shortfall = baseline GPUs - reserved)")
    for doc in proposals:
        spec = doc["spec"]
        for req in spec["requests"]:
            key = (spec["cluster"], req["pool"])
            pool = pools.get(key)
            sized = [r for r in rows if (r.cluster, r.pool) == key and r.gpus]
            if pool is None or not sized:
                print(f"{doc['metadata']['name']}: {req['gpus']} GPUs for {key[0]}/{key[1]} (no sized workloads)")
                continue
            sb = sum(r.gpus[0] for r in sized)  # type: ignore[index]
            short = sb - pool["reservedGpus"]
            cited = ", ".join(spec.get("workloads", [])) or "none"
            print(f"{doc['metadata']['name']}: asks {req['gpus']} GPUs for {key[0]}/{key[1]}; "
                  f"baseline {sb} - reserved {pool['reservedGpus']} = shortfall {short}; "
                  f"after approval reserved/baseline = {(pool['reservedGpus'] + req['gpus']) / sb:.2f}; "
                  f"cites: {cited}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
