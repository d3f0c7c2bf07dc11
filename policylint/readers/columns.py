"""Which column holds what: the names each input form recognises, and their units.

Names are compared without regard to case, and the first candidate present in
the file wins, so the more specific names come first. A column named on the
command line or in a declaration always wins over detection. docs/measurements.md
lists these tuples; a test keeps the two in step.
"""

from __future__ import annotations

from collections.abc import Sequence

from policylint.errors import MeasurementError

__all__ = [
    "FLOAT",
    "TEXT",
    "TIME",
    "DURATION_CANDIDATES",
    "END_CANDIDATES",
    "GPU_CANDIDATES",
    "JOB_ID_CANDIDATES",
    "KEY_CANDIDATES",
    "DURATION_WORDS",
    "START_CANDIDATES",
    "TIMESTAMP_CANDIDATES",
    "TIMESTAMP_WORDS",
    "column_index",
    "distinct_columns",
    "duration_unit",
    "find_column",
    "timestamp_column",
]

#: How a column is to be read (:meth:`policylint.readers.table.Table.read`): a hint for
#: parsing CSV text; a typed file's columns come as they are.
FLOAT = "float"
TIME = "time"
TEXT = "text"

TIMESTAMP_CANDIDATES = ("timestamp", "time", "ts", "datetime", "date", "_time", "@timestamp")
"""Time series: the timestamp column (otherwise a column named like one, otherwise the first column)."""

TIMESTAMP_WORDS = ("timestamp", "datetime", "time", "ts", "date", "epoch")
"""Words that make a column name look like a timestamp (``timestamp_anon``, ``event_time``)."""

DURATION_WORDS = ("duration", "elapsed", "latency", "exec", "runtime", "wait", "seconds", "sec", "s", "ms", "us", "ns")
"""Words that make such a name a length of time instead (``exec_time_seconds``, ``wait_time_ms``)."""

START_CANDIDATES = (
    "start",
    "start_time",
    "started_at",
    "begin",
    "begin_time",
    "start_timestamp",
    "scheduled_time",
    "submit_time",
    "arrival_time",
    "request_time",
    "gmt_create",
    "creation_time",
    "created_at",
    "timestamp",
)
"""Request logs and job lists: when the work started (or arrived)."""

END_CANDIDATES = (
    "end",
    "end_time",
    "ended_at",
    "end_timestamp",
    "finish",
    "finish_time",
    "finished_at",
    "completion_time",
    "completed_at",
    "stop_time",
    "deletion_time",
)
"""Request logs and job lists: when the work ended."""

DURATION_CANDIDATES = (
    "duration",
    "duration_seconds",
    "duration_s",
    "duration_sec",
    "runtime",
    "run_time",
    "runtime_seconds",
    "elapsed",
    "elapsed_seconds",
    "exec_time_seconds",
    "duration_ms",
    "latency_ms",
    "elapsed_ms",
    "response_time_ms",
    "duration_us",
    "duration_ns",
)
"""Request logs and job lists: how long the work ran (unit from the name's suffix)."""

GPU_CANDIDATES = (
    "gpus",
    "gpu",
    "gpu_num",
    "num_gpu",
    "num_gpus",
    "ngpus",
    "gpu_count",
    "gpus_per_job",
    "gpu_request",
)
"""Job lists: GPUs a job held (otherwise one per job)."""

JOB_ID_CANDIDATES = ("job_id", "jobid", "job_uid", "pod_uid", "uid")
"""Job lists: the job's identifier. A row repeating another's identifier, start and end is the same job listed twice."""

KEY_CANDIDATES = (
    "pod",
    "pod_name",
    "container_ip",
    "container",
    "instance",
    "node",
    "hostname",
    "host",
    "gpu",
    "uuid",
    "model_name",
)
"""Long tables: columns that name a series. Never used silently: only to suggest
declaring the key when a table's times repeat."""

_DURATION_SUFFIXES = (("_ms", "ms"), ("_us", "us"), ("_ns", "ns"))


def duration_unit(column: str) -> str:
    """Unit of a duration column from its name: ``_ms``, ``_us``, ``_ns`` suffixes, else seconds."""
    lowered = column.lower()
    for suffix, unit in _DURATION_SUFFIXES:
        if lowered.endswith(suffix):
            return unit
    return "s"


def find_column(header: Sequence[str], candidates: Sequence[str]) -> str | None:
    """The first candidate present in ``header`` (any case), as the header spells it."""
    lowered: dict[str, str] = {}
    for h in header:
        lowered.setdefault(h.lower(), h)
    for candidate in candidates:
        if candidate in lowered:
            return lowered[candidate]
    return None


def _words(column: str) -> list[str]:
    """The words of a column name: split at anything not a letter or digit, and at camelCase."""
    import re

    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", column)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def timestamp_column(header: Sequence[str]) -> str | None:
    """The timestamp column of a time series table when none is named.

    The first of :data:`TIMESTAMP_CANDIDATES` present; otherwise the first column
    whose name has a word of :data:`TIMESTAMP_WORDS` and none of
    :data:`DURATION_WORDS` (``timestamp_anon``, ``event_time``; not
    ``exec_time_seconds``); otherwise the first column. A column named like a
    timestamp wins over the first column: a file that leads with its values
    (``value,container_ip,timestamp_anon``) would otherwise be read with the
    values as times. None for an empty header.
    """
    exact = find_column(header, TIMESTAMP_CANDIDATES)
    if exact is not None:
        return exact
    for column in header:
        words = _words(column)
        if any(w in TIMESTAMP_WORDS for w in words) and not any(w in DURATION_WORDS for w in words):
            return column
    return header[0] if header else None


def _separator_hint(header: Sequence[str], column: str) -> str:
    """A hint when the one column read holds the wanted name between another separator (a newcomer's trial,
    2026-12-07: a semicolon-separated export said only "missing column 'in_flight' (columns: timestamp;in_flight)")."""
    if len(header) != 1:
        return ""
    for separator, called in ((";", "semicolons"), ("\t", "tabs"), ("|", "bars")):
        if column in header[0].split(separator):
            return f"; the header looks separated by {called}: a CSV trace is read separated by commas"
    return ""


def column_index(header: Sequence[str], column: str, name: str) -> int:
    """Position of ``column`` in ``header``; an error listing the columns when absent or repeated.

    A header that names the column more than once is refused: which of the
    copies holds the data is anybody's guess, and the reader must not pick one
    silently.
    """
    header = list(header)
    try:
        index = header.index(column)
    except ValueError:
        raise MeasurementError(
            f"missing column '{column}' (columns: {', '.join(header)}){_separator_hint(header, column)}", source=name, row=1
        ) from None
    if column in header[index + 1 :]:
        # the words of the Parquet and Arrow reader, which Arrow itself makes refuse such a column
        raise MeasurementError(f"column names appear more than once ({column}); rename them", source=name, row=1)
    return index


def distinct_columns(roles: Sequence[tuple[str, str | None]], name: str) -> None:
    """Refuse a column named for two roles, or twice for one (``roles``: (role, column or None)).

    Value columns are summed, so a value column listed twice would count its
    demand twice; a column that is both the timestamp and a value (or the start
    and the end of an interval) is a slip in the declaration, never a reading.
    """
    seen: dict[str, str] = {}
    for role, column in roles:
        if column is None:
            continue
        first = seen.get(column)
        if first is None:
            seen[column] = role
        elif first == role:
            raise MeasurementError(
                f"{role} '{column}' is listed twice ({role}s: "
                f"{', '.join(c for r, c in roles if r == role and c is not None)}): "
                "value columns are summed, so it would be counted twice",
                source=name,
            )
        else:
            article = "a" if role == "value column" else "the"
            raise MeasurementError(f"column '{column}' is named as both the {first} and {article} {role}", source=name)
