"""Time: evidence not from the period it claims.

The samples of a trace against ``now`` (computed when a view is built, never cached
with the series), and a pulled trace against the record its pull wrote: the range it
asked for and the SHA-256 of the file it wrote.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

from policylint.measure.integrity.values import Fact
from policylint.measure.sources.provenance import record_time


def pulled_range_outside(stored: dict[str, Any] | None, record: dict[str, Any] | None) -> float | None:
    """Time: how far the trace's first and last samples lie outside the range its pull recorded.

    A trace written by ``policylint pull`` covers [start, end] of its record; samples
    before or after it were added to the file afterwards (a month prepended to reach
    the window, days appended to look fresh).
    """
    if not stored or not record:
        return None
    first, last = stored.get("first_time"), stored.get("last_time")
    if not isinstance(first, (int, float)) or not isinstance(last, (int, float)):
        return None
    bounds = []
    for key in ("start", "end"):
        moment = record_time(record.get(key))
        if moment is None:
            return None
        bounds.append(moment.timestamp())
    lookback = record.get("lookback_seconds")
    if isinstance(lookback, (int, float)) and not isinstance(lookback, bool) and lookback > 0:
        # the pull asked for the lookback before its end: the wider of the two starts is the range
        bounds[0] = min(bounds[0], bounds[1] - float(lookback))
    return max(0.0, bounds[0] - float(first), float(last) - bounds[1])


def time_facts(stored: dict[str, Any] | None, now_seconds: float) -> dict[str, Fact]:
    """Time facts against ``now``: how far (and by how many grid samples) the trace runs past it."""
    import datetime as dt

    stored = stored or {}
    first, last, step = stored.get("first_time"), stored.get("last_time"), stored.get("step_seconds")
    out: dict[str, Fact] = {"first_sample": None, "seconds_after_now": None, "samples_after_now": None}
    if isinstance(first, (int, float)):
        out["first_sample"] = dt.datetime.fromtimestamp(float(first), tz=dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(last, (int, float)):
        ahead = float(last) - now_seconds
        out["seconds_after_now"] = max(0.0, ahead)
        if ahead > 0 and isinstance(step, (int, float)) and step > 0:
            count = ahead / float(step) + 1e-9
            # a step too small for the count to be a number (no grid has one): the count is unknown
            out["samples_after_now"] = int(math.floor(count)) + 1 if math.isfinite(count) else None
        else:
            out["samples_after_now"] = 0
    for kind in ("vram", "jobs"):
        when = stored.get(f"{kind}_last_time")
        out[f"{kind}_seconds_after_now"] = max(0.0, float(when) - now_seconds) if isinstance(when, (int, float)) else None
    return out


def pulled_digest_matches(record: dict[str, Any] | None, path: str | None) -> bool | None:
    """Time: whether a pulled trace is still the file its pull wrote, by the SHA-256 the record holds.

    None when there is no record, the record holds no ``sha256`` (pulls that do not
    write one), or the file cannot be read. The file is hashed in 1 MiB blocks.
    """
    digest = (record or {}).get("sha256")
    if not isinstance(digest, str) or not path:
        return None
    h = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    return h.hexdigest() == digest.strip().lower()
