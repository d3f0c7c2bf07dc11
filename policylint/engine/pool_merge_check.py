"""PL988's check: the pairs of a cluster's ``pool_merges`` whose saving is worth a finding.

Apart from :mod:`policylint.engine.checks`, which registers it, so that the registry stays
one short module; pure, like every check function.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

__all__ = ["pools_split_apart"]


def pools_split_apart(facts: Mapping[str, Any], params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Pairs of ``pool_merges`` whose pooling saves at least ``min_saving_gpus`` and ``min_saving_share`` of the GPUs apart.

    Whole GPU counts compared exactly; the share as a fraction of whole numbers against
    the option as written (0.15 is 3/20, not the float nearest it).
    """
    least = int(params["min_saving_gpus"])
    share = Fraction(str(params["min_saving_share"]))
    problems: list[dict[str, Any]] = []
    for merge in facts.get("pool_merges") or []:
        apart, saving = int(merge["apart_gpus"]), int(merge["saving_gpus"])
        if apart <= 0 or saving < least or Fraction(saving, apart) < share:
            continue
        problems.append(
            {
                "pools": " and ".join(merge["pools"]),
                "apart_gpus": apart,
                "pooled_gpus": int(merge["pooled_gpus"]),
                "saving_gpus": saving,
                "saving_share": saving / apart,
                "apart_reserved_gpus": int(merge["apart_reserved_gpus"]),
                "pooled_reserved_gpus": int(merge["pooled_reserved_gpus"]),
                "window_days": float(merge["window_days"]),
                "_figures": (float(saving), float(least)),
            }
        )
    return problems
