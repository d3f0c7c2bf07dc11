"""The answers of Prometheus' ``/api/v1/query_range``, checked strictly before any is kept.

The answer must be a range (matrix) answer with string labels, ``[time,
"value"]`` pairs, times on the requested step inside the requested window and
increasing, values decimal numbers (``"NaN"``, a missing sample, allowed), no
bare ``NaN``/``Infinity`` anywhere; a label carrying a secret that was sent to
the server is refused. An error answer's own explanation is read for the
message. Used by the client, :mod:`policylint.measure.sources.prometheus`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from policylint.errors import PolicylintError

#: Most characters shown of a server's error explanation.
MAX_DETAIL_CHARS = 500

#: One series of an answer: ``{"metric": labels, "values": [[time, "value"], ...]}``.
Series = dict[str, Any]


def error_text(raw: bytes) -> str:
    """``: <Prometheus' error>`` from an error answer's JSON, or '' (not yet scrubbed)."""
    try:
        doc = json.loads(raw, parse_constant=_no_constant)
    except Exception:  # noqa: BLE001 - an unreadable error body only loses the detail
        return ""
    if isinstance(doc, dict) and isinstance(doc.get("error"), str):
        return f": {doc['error'][:MAX_DETAIL_CHARS]}"
    return ""


class _BareConstant(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise _BareConstant(name)


def decode_answer(raw: bytes, name: str) -> Any:
    """The JSON of an answer from the server ``name``; a bare ``NaN`` or text that is not JSON is refused."""
    try:
        return json.loads(raw, parse_constant=_no_constant)
    except _BareConstant as exc:
        raise PolicylintError(f"{name}: the answer holds a bare {exc}, which JSON does not allow; refused") from None
    except (ValueError, RecursionError):
        raise PolicylintError(f"{name}: the answer is not JSON; is the URL a Prometheus server?") from None


def label_text(metric: Mapping[str, Any]) -> str:
    """A series' labels as Prometheus writes them (``{job="chat"}``), cut to 200 characters."""
    text = "{" + ",".join(f'{k}="{v}"' for k, v in sorted(metric.items())) + "}"
    return text if len(text) <= 200 else text[:197] + "...}"


def _cut(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


#: a sample value as Prometheus writes it: a decimal number, or NaN for a missing sample
_VALUE = re.compile(r"^-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$")


def matrix_series(doc: Any, window: tuple[int, int, int], secrets: list[str]) -> list[Series]:
    """The series of one ``query_range`` answer for ``window`` (start, end, step), checked strictly:
    the shape, string labels free of any secret, ``[time, "value"]`` pairs whose times are on
    the step inside the window and increase, and values that are finite numbers or ``"NaN"``."""
    if not isinstance(doc, dict):
        raise PolicylintError("not a Prometheus answer (the top level is not an object)")
    if doc.get("status") != "success":
        error = doc.get("error")
        if doc.get("status") == "error" and isinstance(error, str):
            raise PolicylintError(f"query failed: {error[:MAX_DETAIL_CHARS]}")
        raise PolicylintError("not a Prometheus answer (no status 'success')")
    data = doc.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
        raise PolicylintError("expected a range (matrix) answer")
    start, end, step = window
    out = []
    for number, series in enumerate(data["result"], start=1):
        if not isinstance(series, dict) or not isinstance(series.get("values"), list):
            raise PolicylintError(f"series {number} of the answer has no values list")
        metric = series.get("metric", {})
        if not isinstance(metric, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in metric.items()):
            raise PolicylintError(f"series {number} of the answer has labels that are not text")
        try:
            "".join(k + v for k, v in metric.items()).encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (JSON "\ud800"): no file can hold it as UTF-8
            raise PolicylintError(f"series {number} of the answer has a label that is not valid Unicode") from None
        if any(secret in text for secret in secrets for item in metric.items() for text in item):
            raise PolicylintError(f"series {number} of the answer has a label holding the credential sent to the server; refused")
        label = label_text(metric)
        previous = -math.inf
        for i, pair in enumerate(series["values"], start=1):
            where = f"series {label} sample {i}"
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], str)):
                raise PolicylintError(f'{where} is not a [time, "value"] pair')
            moment = pair[0]
            # (an integer too large for a float is not a time either; isfinite would overflow on it)
            if isinstance(moment, bool) or not isinstance(moment, (int, float)) or (
                isinstance(moment, float) and not math.isfinite(moment)
            ):
                raise PolicylintError(f"{where} has a time that is not a finite number")
            if not start <= moment <= end or (moment - start) % step != 0:
                raise PolicylintError(
                    f"{where} has the time {_cut(repr(moment))}, not one of the requested {start}..{end} at step {step}"
                )
            if moment <= previous:
                raise PolicylintError(f"{where} has the time {_cut(repr(moment))}, not after the sample before it")
            previous = moment
            value = pair[1]
            if value != "NaN" and not (_VALUE.match(value) and math.isfinite(float(value))):
                raise PolicylintError(f"{where} has the value {_cut(repr(value))}, not a finite number (or NaN)")
        out.append({"metric": metric, "values": series["values"]})
    return out
