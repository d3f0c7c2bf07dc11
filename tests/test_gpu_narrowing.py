"""The GPU demand kept per workload is narrowed to float16/float32 exactly when the old definition narrowed it.

``policylint.measure.workload._narrow`` passes an array whose every bit survives the round
trip without looking at NaN; the definition below (the one it replaced) judges NaN and the
other samples apart. Both must pick the same dtype and the same values for every array.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from policylint.measure.workload import _narrow


def reference_narrow(gpus: np.ndarray) -> np.ndarray:
    missing = np.isnan(gpus)
    for dtype in (np.float16, np.float32):
        with np.errstate(over="ignore", invalid="ignore"):
            small = gpus.astype(dtype)
        back = small.astype(np.float64)
        if np.array_equal(np.isnan(back), missing) and np.array_equal(
            back[~missing].view(np.int64), gpus[~missing].view(np.int64)
        ):
            return small
    return gpus


ODD = [np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, 0.5, 1e-8, 65504.0, 65520.0, 1e39, 2049.0, 16_777_217.0, 1.1]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.integers(0, 3000), max_size=200),
    st.lists(st.sampled_from(ODD), max_size=4),
    st.integers(0, 2**32 - 1),
    st.booleans(),
)
def test_narrowing_picks_what_the_old_definition_picked(counts: list[int], odd: list[float], seed: int, payload: bool) -> None:
    gpus = np.array(counts + odd, dtype=np.float64)
    np.random.default_rng(seed).shuffle(gpus)
    if payload and gpus.size:
        # a NaN with a payload of its own, which a narrower float cannot carry bit for bit
        bits = gpus.view(np.int64)
        bits[0] = np.int64(0x7FF0_0000_0000_1234)
    got, expected = _narrow(gpus), reference_narrow(gpus)
    assert got.dtype == expected.dtype
    assert got.tobytes() == expected.tobytes()
