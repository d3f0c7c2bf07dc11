"""Cold start: how long new capacity takes to serve, decided here and nowhere else.

A workload's effective cold start is the window its bands are computed with; a
pool's is the longest of its workloads'. Every command (``check``, ``bands
--pool``, ``plan``, ``report``) takes both figures from these functions, and the
explanation of where a pool's figure came from as well.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from policylint.calc.settings import DEFAULT_COLD_START_SECONDS

if TYPE_CHECKING:
    from policylint.model import Pool, Workload


def positive_seconds(value: Any) -> float | None:
    """A positive number of seconds, else None (absent, zero, a boolean, text)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def elastic_cold_start(pool: Pool | None) -> float | None:
    """The pool's elastic ``coldStartSeconds``, when the pool has elastic capacity at all."""
    if pool is None:
        return None
    elastic = pool.spec.get("elastic")
    if not isinstance(elastic, dict) or positive_seconds(elastic.get("maxGpus")) is None:
        return None
    return positive_seconds(elastic.get("coldStartSeconds"))


def effective_cold_start(workload: Workload) -> float:
    """The workload's effective cold start, the window its bands are computed with.

    New capacity for a workload is ready only when its GPUs are there and its
    replica has started: the longer of its declared ``coldStartSeconds`` and its
    pool's elastic ``coldStartSeconds``; the declared one alone when the pool has no
    elastic capacity; the pool's when the workload declares none; else 300 s.
    The one definition (FRAMEWORK, "effective cold start"): every command uses it.
    """
    declared = positive_seconds(workload.spec.get("coldStartSeconds"))
    elastic = elastic_cold_start(workload.pool)
    known = [x for x in (declared, elastic) if x is not None]
    return max(known) if known else DEFAULT_COLD_START_SECONDS


def pool_cold_start(pool: Pool) -> float:
    """The pool's cold start: the longest effective cold start of its workloads.

    A pool holding one workload therefore has exactly that workload's window (and
    bands). A pool without workloads takes its elastic cold start, else 300 s.
    """
    members = [effective_cold_start(w) for w in pool.workloads]
    if members:
        return max(members)
    elastic = elastic_cold_start(pool)
    return elastic if elastic is not None else DEFAULT_COLD_START_SECONDS


def pool_cold_start_source(pool: Pool) -> str:
    """Which declaration :func:`pool_cold_start` took its figure from, for explanations."""
    chosen = pool_cold_start(pool)
    slowest = [w for w in sorted(pool.workloads, key=lambda w: w.name) if effective_cold_start(w) == chosen]
    elastic = elastic_cold_start(pool)
    if elastic is not None and elastic == chosen:
        return "the pool's elastic coldStartSeconds"
    if slowest and positive_seconds(slowest[0].spec.get("coldStartSeconds")) == chosen:
        return f"workload {slowest[0].name}'s coldStartSeconds, the slowest of the pool"
    return f"the default of {DEFAULT_COLD_START_SECONDS:g} s: no workload or elastic capacity declares one"
