"""Prometheus ``/api/v1/query_range`` answers saved as JSON (``resultType: matrix``).

Sample times are unix seconds; values arrive as strings, ``"NaN"`` is a missing
sample and ``"+Inf"``/``"-Inf"`` an error naming the series and the sample, as are a negative
value and one above :data:`~policylint.readers.convert.MAX_VALUE` (2^53).
Several series are summed on one grid (a series adds 0 outside its own span,
because that replica did not exist; a hole inside its span makes the sum
missing), or ``match`` picks series by label values. The file is refused above
``TraceLimits.max_json_bytes`` before it is parsed, and a document nested too
deeply is an error, not a crash.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from policylint.errors import MeasurementError
from policylint.readers.convert import MAX_VALUE, check_order, first_failing, refused_value
from policylint.readers.grid import combine
from policylint.readers.limits import TraceLimits, check_rows
from policylint.readers.series import Series
from policylint.readers.source import Source
from policylint.readers.rows import Rows
from policylint.readers.timestamps import format_time

__all__ = ["answer_series", "prometheus_series", "read_prometheus"]


def _labels(metric: Mapping[str, Any]) -> str:
    name = metric.get("__name__", "")
    rest = ",".join(f'{k}="{v}"' for k, v in sorted(metric.items()) if k != "__name__")
    return f"{name}{{{rest}}}"


def read_prometheus(
    source: Source,
    match: Mapping[str, str] | None,
    step_seconds: float | None,
    max_gap_steps: int,
    limits: TraceLimits,
    aggregate: str = "sum",
) -> Series:
    """Read a ``query_range`` answer; combine its series on one grid (or pick by labels).

    ``aggregate`` (``sum``, ``mean``, ``max``) says how several series become one.
    """
    chosen = [(label, times, values) for label, _metric, times, values in prometheus_series(source, match, limits)]
    # Several series: one grid. Summed by default: a series counts 0 outside its
    # own span (that replica did not exist yet), but a hole inside it poisons the sum.
    return combine(chosen, aggregate, name=source.name, step_seconds=step_seconds, max_gap_steps=max_gap_steps,
                   limits=limits)


def prometheus_series(
    source: Source, match: Mapping[str, str] | None, limits: TraceLimits
) -> list[tuple[str, dict[str, Any], np.ndarray, np.ndarray]]:
    """The series of a ``query_range`` answer that ``match`` keeps: (labels text, labels, times, values)."""
    name = source.name
    if source.size > limits.max_json_bytes:
        raise MeasurementError(
            f"file is {source.size:,} bytes, more than the {limits.max_json_bytes:,}-byte limit "
            "for a Prometheus answer; refused",
            source=name,
        )
    try:
        with source.path.open(encoding="utf-8") as handle:
            doc = json.load(handle)
    except json.JSONDecodeError as exc:
        raise MeasurementError(f"not valid JSON: {exc.msg}", source=name, row=exc.lineno) from None
    except RecursionError:
        raise MeasurementError("not a Prometheus answer: JSON nested too deeply", source=name) from None
    except ValueError:  # an integer of more than 4,300 digits (Python's conversion limit)
        raise MeasurementError("not a Prometheus answer: a number too long to read", source=name) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise MeasurementError(f"cannot read: {exc}", source=name) from None
    return answer_series(doc, match, limits, name)


def answer_series(
    doc: Any, match: Mapping[str, str] | None, limits: TraceLimits, name: str
) -> list[tuple[str, dict[str, Any], np.ndarray, np.ndarray]]:
    """The series of a parsed ``query_range`` answer that ``match`` keeps, with every check the
    file reader makes (shape, numbers, order, range, rows). ``policylint pull`` runs the same
    checks on an answer before it may replace a committed trace."""
    if not isinstance(doc, dict):
        raise MeasurementError("not a Prometheus query_range answer (top level is not an object)", source=name)
    if doc.get("status") != "success":
        raise MeasurementError(
            f"Prometheus answer status is {doc.get('status')!r}: {doc.get('error', 'no data')}", source=name
        )
    data = doc.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        kind = data.get("resultType") if isinstance(data, dict) else None
        raise MeasurementError(
            f"expected data.resultType 'matrix' (a range query), got {kind!r}", source=name
        )
    result = data.get("result")
    if not isinstance(result, list) or not result:
        raise MeasurementError("the answer holds no series (data.result is empty)", source=name)

    chosen: list[tuple[str, dict[str, Any], np.ndarray, np.ndarray]] = []
    total_samples = 0
    for number, entry in enumerate(result, start=1):
        if not isinstance(entry, dict) or not isinstance(entry.get("values"), list):
            raise MeasurementError(f"series {number} has no 'values' list", source=name)
        metric = entry.get("metric") or {}
        if not isinstance(metric, dict):
            raise MeasurementError(f"series {number} has a bad 'metric'", source=name)
        if match and any(str(metric.get(k)) != str(v) for k, v in match.items()):
            continue
        label = _labels(metric)
        pairs = entry["values"]
        if not pairs:
            continue
        total_samples += len(pairs) if isinstance(pairs, list) else 0
        check_rows(total_samples, limits, name)
        times, raw = _pairs(pairs, label, name)
        try:
            values = raw.astype(np.float64)
        except ValueError:
            i = _first_bad(raw)
            raise MeasurementError(
                f"series {label}: sample {i + 1} value {str(raw[i])!r} is not a number",
                source=name,
                row=i + 1,
            ) from None
        check_order(times, _SAMPLES, f"{name} series {label} sample")
        _check_range(times, label, limits, name)
        if np.isinf(values).any():
            i = int(np.argmax(np.isinf(values)))
            raise MeasurementError(
                f"series {label}: sample {i + 1} at {format_time(times[i])} is {raw[i]}",
                source=name,
                row=i + 1,
            )
        if not (values.min() >= 0 and values.max() <= MAX_VALUE):  # a NaN (missing) makes both false
            bad = (values < 0) | (values > MAX_VALUE)
            if bad.any():
                i = int(np.argmax(bad))
                raise MeasurementError(
                    f"series {label}: sample {i + 1} {refused_value(float(values[i]))}", source=name, row=i + 1
                )
        chosen.append((label, metric, times, values))

    if not chosen:
        wanted = ",".join(f"{k}={v}" for k, v in (match or {}).items())
        known = "; ".join(_labels(e.get("metric") or {}) for e in result[:5] if isinstance(e, dict))
        raise MeasurementError(f"no series matches {wanted or 'anything'} (series: {known})", source=name)
    return chosen


_SAMPLES = Rows()  # Prometheus samples are numbered from 1 within their series


def _first_bad(texts: np.ndarray) -> int:
    """Index of the first text that is not a number (error path only)."""

    def works(a: int, b: int) -> bool:
        try:
            texts[a:b].astype(np.float64)
        except ValueError:
            return False
        return True

    return first_failing(texts.size, works)


def _pairs(pairs: Any, label: str, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``[[time, "value"], ...]`` -> (float times, value texts), as whole arrays."""
    table: np.ndarray | None = None
    try:
        table = np.array(pairs, dtype=object)
        if table.ndim != 2 or table.shape[1] != 2:
            raise ValueError
        times = table[:, 0].astype(np.float64)
        raw = table[:, 1].astype(np.str_)
    except OverflowError:
        # a JSON integer time beyond any float: the number itself is not a time
        bad = next((i for i, p in enumerate(pairs) if _is_pair(p) and not _fits_float(p[0])), 0)
        raise MeasurementError(
            f"series {label}: sample {bad + 1} has a time too large to be a timestamp", source=name, row=bad + 1
        ) from None
    except (ValueError, TypeError):
        bad = next((i for i, p in enumerate(pairs) if not _is_pair(p)), 0)
        raise MeasurementError(
            f'series {label}: sample {bad + 1} is not a [time, "value"] pair', source=name, row=bad + 1
        ) from None
    return times, raw


def _fits_float(value: Any) -> bool:
    try:
        float(value)
    except OverflowError:
        return False
    return True


def _is_pair(item: Any) -> bool:
    return (
        isinstance(item, list)
        and len(item) == 2
        and isinstance(item[0], (int, float))
        and not isinstance(item[0], bool)
        and isinstance(item[1], (str, int, float))
    )


def _check_range(times: np.ndarray, label: str, limits: TraceLimits, name: str) -> None:
    bad = (times < limits.min_time) | (times >= limits.max_time)
    if bad.any():
        i = int(np.argmax(bad))
        raise MeasurementError(
            f"series {label}: sample {i + 1} time {times[i]:g} is outside the years "
            f"{limits.min_year}-{limits.max_year} (Prometheus times are unix seconds)",
            source=name,
            row=i + 1,
        )
