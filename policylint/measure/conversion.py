"""GPU conversion: the figures that turn a workload's traced demand into GPUs.

The one place that reads ``perGpuConcurrency`` and ``gpusPerReplica`` for the
arithmetic, and the one place that skips the conversion for a trace counted in
GPUs already. Every command converts with these and :func:`policylint.calc.gpus.gpu_counts`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from policylint.model import Workload
    from policylint.model.specs import NoBlock, PerGpuConcurrencySpec


def counts_gpus(trace_unit: str | None) -> bool:
    """Whether a trace counted in ``trace_unit`` is GPU demand already (jobs weighted by their GPUs).

    Such a trace is never converted: one unit is one GPU. The one test for it.
    """
    return trace_unit == "gpus"


def gpus_per_replica(workload: Workload) -> int:
    """The workload's ``gpusPerReplica``: a whole number, 1 when it declares none (or something else)."""
    return declared_gpus_per_replica(workload.spec)


def declared_gpus_per_replica(spec: Mapping[str, Any]) -> int:
    """``gpusPerReplica`` of a workload spec: a whole number - ``2.0`` is 2, as the schema's integer
    admits it - and 1 when it declares none (or something else, which the schema refuses).

    The one reading: the conversion to GPUs, the tail job, gang need and the views all ask it
    (``2.0`` was 1 here and 2 in PL403's view, which halved the workload's GPU demand).
    """
    from policylint.model import whole_number

    count = whole_number(spec.get("gpusPerReplica", 1))
    return count if count is not None and count >= 1 else 1


def gpu_conversion(workload: Workload, trace_unit: str) -> tuple[float | None, int]:
    """Concurrency per GPU and GPUs per replica that turn a workload's trace into GPUs.

    The one place that reads them: every command converts with these and
    :func:`policylint.calc.gpus.gpu_counts`. A GPU-weighted trace (``unit: gpus``) is
    GPU demand already: one unit is one GPU, and gpusPerReplica must not multiply
    it again. The per-GPU figure is None when the workload declares none.
    """
    per: PerGpuConcurrencySpec | NoBlock = workload.spec.get("perGpuConcurrency") or {}
    value = per.get("value")
    per_gpu = None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        per_gpu = float(value)
    return conversion_for(trace_unit, per_gpu, gpus_per_replica(workload))


def conversion_for(trace_unit: str | None, per_gpu: float | None, gpus_per_replica: int) -> tuple[float | None, int]:
    """The conversion of a trace counted in ``trace_unit`` (:func:`gpu_conversion`, from figures already read)."""
    if counts_gpus(trace_unit):
        return 1.0, 1
    return per_gpu, gpus_per_replica
