"""The Prometheus sources declared in measurement blocks, resolved to pull targets.

A measurement block (``concurrency.trace``, ``vram.trace``) may say where its
file comes from:

.. code-block:: yaml

    trace:
      path: ../measurements/chat.json
      prometheus:
        template: vllm-in-flight      # or query: <PromQL>
        params: {model: chat}
        step: 1m
        lookback: 90d

The target path must stay inside the repository root: ``pull`` writes only there.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from policylint.errors import PolicylintError
from policylint.model.resolve import inside

if TYPE_CHECKING:
    from policylint.model import MeasurementRef, Model
    from policylint.model.specs import PrometheusSourceSpec

#: measurement roles whose file ``pull`` can write (a query_range answer is a time series)
PULLABLE_ROLES = ("concurrency", "vram")

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
_DURATION = re.compile(r"^([0-9]+)(s|m|h|d|w)$")


def parse_duration(text: object, *, source: str | None = None, key: str | None = None) -> int:
    """Whole seconds of a duration such as ``60s``, ``5m``, ``90d`` (or a positive whole number of seconds)."""
    if isinstance(text, int) and not isinstance(text, bool) and text > 0:
        return text
    m = _DURATION.match(str(text).strip())
    if not m or int(m.group(1)) == 0:
        raise PolicylintError(
            f"must be a positive duration such as 60s, 5m, 1h, 90d or 2w, got {text!r}", source=source, key=key
        )
    return int(m.group(1)) * _UNITS[m.group(2)]


@dataclass(frozen=True)
class PullTarget:
    """One trace file to refresh from Prometheus."""

    workload: str
    role: str
    #: the declaring document, as shown in messages
    document: str
    #: dotted key of the ``prometheus`` block, for messages
    key: str
    #: where the answer is written (absolute, inside the root)
    path: Path
    #: the path as written in the declaration
    display: str
    query: str
    step_seconds: int
    lookback_seconds: int
    template: str | None = None
    params: dict[str, str] = field(default_factory=dict)


def declared_query(block: PrometheusSourceSpec, *, source: str | None = None, key: str | None = None) -> str:
    """The PromQL a ``prometheus`` block asks for: its own ``query`` or its rendered template."""
    from policylint.measure.sources.templates import render

    if isinstance(block.get("query"), str):
        return str(block["query"]).strip()
    return render(str(block.get("template")), dict(block.get("params") or {}), source=source, key=key)


def target_path(ref: MeasurementRef, root: Path) -> Path:
    """Absolute path of the file ``ref`` declares, refused unless it stays inside ``root``.

    Checked lexically and again after following symbolic links (of the file when it
    exists, of its folder otherwise), because ``pull`` writes there.
    """
    relative = str(ref.spec["path"])
    where = ".".join(str(p) for p in (*ref.doc_path, "path"))
    doc_file = str(ref.doc.source.path)
    root_abs = Path(os.path.realpath(root))
    if os.path.isabs(relative) or relative.startswith("~"):
        raise PolicylintError(f"trace path '{relative}' is absolute; pull writes only inside the repository", source=doc_file, key=where)
    base = Path(os.path.abspath(doc_file)).parent
    lexical = Path(os.path.normpath(base / relative))
    real = Path(os.path.realpath(lexical))
    if not inside(lexical, Path(os.path.abspath(root))) or not inside(real, root_abs):
        raise PolicylintError(
            f"trace path '{relative}' leaves the repository root; pull does not write there", source=doc_file, key=where
        )
    if lexical.suffix.lower() != ".json":
        raise PolicylintError(
            f"trace path '{relative}' must end in .json: pull writes the query_range answer as JSON",
            source=doc_file,
            key=where,
        )
    return real


def pull_targets(model: Model, root: Path) -> list[PullTarget]:
    """Every measurement of ``model`` that declares a Prometheus source, in workload order."""
    targets = []
    for name in sorted(model.workloads):
        w = model.workloads[name]
        for role in PULLABLE_ROLES:
            ref = w.measurements.get(role)
            if ref is None or not isinstance(ref.spec.get("prometheus"), dict):
                continue
            block = ref.spec["prometheus"]
            doc_file = str(ref.doc.source.path)
            key = ".".join(str(p) for p in (*ref.doc_path, "prometheus"))
            targets.append(
                PullTarget(
                    workload=name,
                    role=role,
                    document=doc_file,
                    key=key,
                    path=target_path(ref, root),
                    display=str(ref.spec["path"]),
                    query=declared_query(block, source=doc_file, key=key),
                    step_seconds=parse_duration(block.get("step", "60s"), source=doc_file, key=f"{key}.step"),
                    lookback_seconds=parse_duration(block.get("lookback", "90d"), source=doc_file, key=f"{key}.lookback"),
                    template=block.get("template") if "query" not in block else None,
                    params={k: str(v) for k, v in (block.get("params") or {}).items()} if "query" not in block else {},
                )
            )
    return targets
