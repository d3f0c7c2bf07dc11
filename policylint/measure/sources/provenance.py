"""Provenance of a pulled trace: the ``<trace>.provenance.json`` file written beside it.

``policylint pull`` writes the trace (the ``query_range`` answer, unchanged in
shape, so every reader takes it as before) and, beside it, a small JSON record
of where it came from::

    {
      "format": "policylint-provenance/1",
      "query": "sum(vllm:num_requests_running{model_name=\\"chat\\"})",
      "template": "vllm-running", "params": {"model": "chat"},
      "server": "https://prometheus.example.com",
      "start": "2026-09-02T00:00:00Z", "end": "2026-12-01T00:00:00Z",
      "step_seconds": 60, "lookback_seconds": 7776000,
      "pulled_at": "2026-12-01T00:00:07Z",
      "series": 1, "samples": 129601
    }

A sidecar rather than comment lines in the trace: JSON has no comments, and a
separate record works for any trace format. It holds no credentials: the server
is named by scheme, host, port and path only.

The lint reads these records (never the network) into the ``pulls`` fact of a
workload; PL130 and PL131 judge them with the check functions below.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from policylint.model import Workload

FORMAT = "policylint-provenance/1"
SUFFIX = ".provenance.json"
#: a provenance record is a few hundred bytes; anything far larger is not one
MAX_BYTES = 1024 * 1024

Problem = dict[str, Any]


def sidecar(trace: Path) -> Path:
    """Where the provenance of ``trace`` lives."""
    return trace.with_name(trace.name + SUFFIX)


def iso(moment: dt.datetime) -> str:
    """UTC time as ``YYYY-MM-DDTHH:MM:SSZ`` (whole seconds: provenance is read by people)."""
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def write(path: Path, text: str, *, root: Path, what: str) -> None:
    """Replace ``path`` with ``text`` at once, through the one safe writer
    (:func:`policylint.writer.write_file`): a unique temporary file beside it, fsync,
    atomic rename, inside ``root`` only, never through a link that leaves it. A
    reader never sees half a file, and an interrupted or refused pull leaves the
    previous file in place."""
    from policylint.writer import write_file

    write_file(path, text, root=root, parents=True, what=what)


def render_record(record: Mapping[str, Any]) -> str:
    """The record as written: sorted keys, two-space indent, final newline (stable diffs)."""
    return json.dumps({"format": FORMAT, **record}, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def render_trace(series: list[dict[str, Any]]) -> str:
    """A ``query_range`` answer holding ``series``: one line per series, so a diff shows which moved."""
    lines = [json.dumps(s, separators=(",", ":"), sort_keys=True, ensure_ascii=False) for s in series]
    body = ",\n".join(lines)
    return '{"status":"success","data":{"resultType":"matrix","result":[\n' + body + "\n]}}\n"


def read_record(trace: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(record, None), or (None, why it cannot be used); (None, None) when there is none."""
    path = sidecar(trace)
    try:
        if not path.is_file():
            return None, None
        if path.stat().st_size > MAX_BYTES:
            return None, f"{path.name} is larger than {MAX_BYTES:,} bytes"
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        return None, f"{path.name} cannot be read: {' '.join(str(exc).split())[:200]}"
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        return None, f"{path.name} is not a policylint provenance record ({FORMAT})"
    if not isinstance(record.get("query"), str):
        return None, f"{path.name} has no query"
    return record, None


def record_time(text: Any) -> dt.datetime | None:
    """A provenance record's timestamp (ISO 8601, ``Z`` allowed, naive = UTC); None when it is not one."""
    if not isinstance(text, str):
        return None
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


def pull_facts(w: Workload, now: dt.datetime) -> list[dict[str, Any]]:
    """One entry per measurement of ``w`` that declares a Prometheus source: the declared
    query and step beside what its provenance records, and the days since the pull."""
    from policylint.errors import PolicylintError
    from policylint.measure.sources.declared import PULLABLE_ROLES, declared_query, parse_duration

    out: list[dict[str, Any]] = []
    for role in PULLABLE_ROLES:
        ref = w.measurements.get(role)
        if ref is None or not isinstance(ref.spec.get("prometheus"), dict):
            continue
        block = ref.spec["prometheus"]
        entry: dict[str, Any] = {
            "role": role,
            "path": str(ref.spec.get("path")),
            "declared_query": None,
            "declared_step": None,
            "pulled_query": None,
            "pulled_step": None,
            "pulled_at": None,
            "age_days": None,
            "problem": None,
            "_at": (*ref.doc_path, "prometheus", "query" if "query" in block else "template"),
            "_path_at": (*ref.doc_path, "path"),
        }
        try:
            entry["declared_query"] = declared_query(block)
            entry["declared_step"] = parse_duration(block.get("step", "60s"))
        except PolicylintError as exc:
            entry["problem"] = f"the declared source cannot be used: {exc.message}"
        if ref.path is None:
            # the trace itself is missing or refused: PL022/PL023 say so at its path
            out.append(entry)
            continue
        record, why = read_record(ref.path)
        if record is None:
            entry["problem"] = entry["problem"] or (
                f"its provenance is unusable ({why})" if why else f"it has no provenance ({ref.path.name}{SUFFIX}): it was not written by policylint pull"
            )
            out.append(entry)
            continue
        entry["pulled_query"] = record["query"]
        entry["pulled_step"] = record.get("step_seconds")
        pulled = record_time(record.get("pulled_at"))
        if pulled is not None:
            entry["pulled_at"] = iso(pulled)
            # Unrounded: 7.0001 days is older than 7; messages round, verdicts do not.
            entry["age_days"] = (now - pulled).total_seconds() / 86_400.0
        out.append(entry)
    return out


def pull_query_changed(facts: Mapping[str, Any], params: Mapping[str, Any]) -> list[Problem]:
    """Pulled traces whose declared query or step differs from the one recorded at the pull
    (or whose pull is not recorded at all)."""
    problems: list[Problem] = []
    for p in facts.get("pulls") or []:
        reason = p["problem"]
        if reason is None and p["declared_query"] != p["pulled_query"]:
            reason = f"the declaration asks for `{p['declared_query']}` but the trace was pulled with `{p['pulled_query']}`"
        elif reason is None and p["pulled_step"] != p["declared_step"]:
            reason = f"the declared step is {p['declared_step']} s but the trace was pulled at {p['pulled_step']} s"
        if reason is not None:
            problems.append({"trace": p["path"], "reason": reason, "_at": p["_at"]})
    return problems


def pull_stale(facts: Mapping[str, Any], params: Mapping[str, Any]) -> list[Problem]:
    """Pulled traces whose last pull is more than ``max_age_days`` before the run's date."""
    limit = float(params["max_age_days"])
    return [
        {"trace": p["path"], "pulled_at": p["pulled_at"], "pull_age_days": p["age_days"], "_at": p["_path_at"]}
        for p in facts.get("pulls") or []
        if p["age_days"] is not None and p["age_days"] > limit
    ]
