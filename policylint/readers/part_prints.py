"""Each series of a sum, printed as it would read alone: another workload's series summed in is found.

The readers sum several series into one in two places: the pods (or any key) of a long table,
and the series of a Prometheus answer. A wide table's columns are printed by
:func:`policylint.readers.timeseries.read_table`; these are printed here, on their own grids.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from policylint.errors import MeasurementError

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy as np

    from policylint.readers.series import Series


#: a sum of this many series or fewer (pods of a long table, series of a Prometheus answer) has each one
#: printed, sketched and shaped as it would read alone; a larger one (a fleet of replicas) is not
MAX_PRINTED_PARTS = 64


def with_part_prints(
    combined: Series, parts: list[tuple[str, np.ndarray, np.ndarray]],
    alone: Callable[[np.ndarray, np.ndarray], Series],
) -> Series:
    """``combined`` with each summed series' values print, run sketch and shape as that series alone reads.

    Another workload's whole series added as one more pod or one more series of an answer is
    its demand counted twice, as a column is (red team, 2026-12-07, round 16: +6 through a
    Prometheus ``match``, +19 through a long table's key). A series that does not read alone
    has none. ``alone(times, values)`` reads one series on its own grid, as the sum's reader would.
    """
    import dataclasses

    from policylint.calc.prints import shape_print, values_fingerprint
    from policylint.calc.runs import judged_samples, run_sketch

    if len(parts) > MAX_PRINTED_PARTS:
        return combined
    prints: list[str] = []
    sketches: list[list[int] | None] = []
    shapes: list[str | None] = []
    labels: list[str] = []
    for label, times, values in parts:
        try:
            own = alone(times, values)
        except MeasurementError:
            continue
        judged = judged_samples(own.values, own.valid)
        prints.append(values_fingerprint(*judged))
        sketches.append(run_sketch(*judged))
        shapes.append(shape_print(*judged, float(own.step_seconds)))
        labels.append(label)
    if not prints:
        return combined
    return dataclasses.replace(combined, part_prints=tuple(prints), part_sketches=tuple(sketches),
                               part_shapes=tuple(shapes), part_labels=tuple(labels))
