"""From a measurement block of a document to the keyword arguments of a reader.

A measurement block (``concurrency.trace``, ``durations.jobs``, ``vram.trace``,
``vram.activity``) names its file and how to read it in the document's words
(``timestampColumn``, ``where``, ``key`` ...). :func:`reader_arguments` is the one
translation of those words into the readers' options, for every reader the
measuring step calls (:func:`policylint.traces.read_series`, ``read_jobs``,
``read_parts``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from policylint.model import MeasurementRef
    from policylint.model.specs import NoBlock, TraceKeySpec
    from policylint.readers.filters import Condition
    from policylint.traces import TraceLimits

#: The readers :func:`reader_arguments` prepares for: a concurrency trace (a time series,
#: an interval log or a long table), a job list, one plain time series (VRAM, activity),
#: and a long table read one series per key.
READERS = ("trace", "jobs", "series", "parts")


def reader_arguments(
    ref: MeasurementRef,
    limits: TraceLimits | None,
    reader: str,
    *,
    columns: list[str] | None = None,
) -> dict[str, Any]:
    """The keyword arguments that read ``ref``'s file with ``reader`` (one of :data:`READERS`).

    ``columns`` are the value columns of a ``series`` or ``parts`` read (a VRAM
    block's ``columns``, or its ``activeColumn`` alone); a ``trace`` read takes the
    block's own ``columns``. ``limits`` bound what the reader may hold (None: its
    defaults).
    """
    if reader not in READERS:
        raise ValueError(f"unknown reader {reader!r} (known: {', '.join(READERS)})")
    spec = ref.spec
    # options every block may declare: units, origin, row filters, limits
    out: dict[str, Any] = {
        "display_name": ref.display,
        "timestamp_unit": spec.get("timestampUnit"),
        "duration_unit": spec.get("durationUnit"),
        "time_origin": spec.get("timeOrigin"),
        "where": spec.get("where"),
        "skip_incomplete": bool(spec.get("skipIncomplete", False)),
        "limits": limits,
    }
    if reader == "jobs":
        out.update(
            duration_column=spec.get("durationColumn"),
            start_column=spec.get("startColumn"),
            end_column=spec.get("endColumn"),
            gpus_column=spec.get("gpusColumn"),
        )
        return out
    out.update(
        format=spec.get("format", "auto"),
        timestamp_column=spec.get("timestampColumn"),
        match=spec.get("match"),
        step_seconds=spec.get("stepSeconds"),
        value_columns=spec.get("columns") if reader == "trace" else columns,
    )
    key: TraceKeySpec | NoBlock = spec.get("key") or {}
    select = None if key.get("select") is None else str(key["select"])
    if reader == "parts":
        out.update(key_column=str(key["column"]), key_select=select)
    elif reader == "trace":
        # a job list is an interval log: running jobs (or their GPUs) = concurrency
        out.update(
            start_column=spec.get("startColumn"),
            end_column=spec.get("endColumn"),
            duration_column=spec.get("durationColumn"),
            gpus_column=spec.get("gpusColumn"),
            unit=spec.get("unit"),
            # a long table: ``key: {column, select | aggregate}``
            key_column=key.get("column"),
            key_select=select,
            aggregate=key.get("aggregate"),
        )
    return out


def reads_may_overlap(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two measurement blocks reading one file may take some of the same data.

    Not when both name their value columns, read them (a table's time series: a Prometheus answer,
    a request log and a job list read none) and no column is in both, nor when their row
    selections cannot both keep a row (:func:`policylint.readers.filters.disjoint` over each
    block's ``where``, its long table's ``key.select`` and its Prometheus ``match``): that is one
    file holding several workloads' series. Any other pair - another step, origin, unit, a
    filter that drops a row or two - reads the same samples again (red team, 2026-12-07). A
    block whose filter cannot be read is refused when measured (PL024) and not compared here.
    """
    from policylint.errors import MeasurementError
    from policylint.readers.filters import disjoint

    from policylint.readers import reads_value_columns

    ca, cb = a.get("columns"), b.get("columns")
    # columns tell two reads apart only where both readers read them (red team, 2026-12-07: disjoint
    # columns on a Prometheus answer and on a job list, which read none, passed as two workloads' data)
    if (isinstance(ca, list) and isinstance(cb, list) and not {str(c) for c in ca} & {str(c) for c in cb}
            and all(reads_value_columns(str(s.get("path", "")), s.get("format")) for s in (a, b))):
        return False
    try:
        return not disjoint(_selection(a), _selection(b))
    except MeasurementError:
        return False


def _selection(spec: Mapping[str, Any]) -> list[Condition]:
    """The rows a block reads, as conditions: its ``where``, its key's ``select`` and its ``match`` labels."""
    from policylint.readers.filters import Condition, parse_where

    out = list(parse_where(spec.get("where")))
    key = spec.get("key")
    if isinstance(key, Mapping) and key.get("column") is not None and key.get("select") is not None:
        out.append(Condition(str(key["column"]), "eq", _text_or_number(key["select"])))
    match = spec.get("match")
    if isinstance(match, Mapping):
        out += [Condition(str(label), "eq", str(value)) for label, value in match.items()]
    return out


def _text_or_number(value: Any) -> str | float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)
