"""Arrow columns as numpy arrays, without pandas.

pyarrow's ``Array.to_numpy`` imports pandas whenever pandas is installed (it
goes through the pandas conversion layer even for a float column), which costs
a run about 200 ms and 33 MB that nothing uses (issue 26). The columns the
readers turn into numpy are fixed-width numbers and masks: their values buffer
*is* the numpy array, so it is read in place here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["to_numpy"]


def _dtype(t: pa.DataType) -> np.dtype | None:
    import pyarrow as pa

    if pa.types.is_floating(t) and t.bit_width in (32, 64):
        return np.dtype(f"float{t.bit_width}")
    if pa.types.is_signed_integer(t):
        return np.dtype(f"int{t.bit_width}")
    if pa.types.is_unsigned_integer(t):
        return np.dtype(f"uint{t.bit_width}")
    if pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return np.dtype(np.int64)
    return None


def to_numpy(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """``column`` as one numpy array, as ``to_numpy(zero_copy_only=False)`` gives it, without pandas.

    Numbers are read in place from the values buffer (no copy for one chunk
    without nulls); null numbers become NaN (integers with nulls come back as
    float64, as pyarrow's own conversion does); booleans are unpacked (a null
    is False: the readers only convert masks that hold none); timestamps and
    durations come back as their int64 counts; text as an object array of str.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(column, pa.ChunkedArray):
        parts = [to_numpy(chunk) for chunk in column.chunks]
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return to_numpy(pa.array([], type=column.type))
        return np.concatenate(parts)
    t = column.type
    n = len(column)
    if pa.types.is_boolean(t):
        if column.null_count:
            column = pc.fill_null(column, False)
        if n == 0:
            return np.zeros(0, dtype=bool)
        bits = np.frombuffer(column.buffers()[1], dtype=np.uint8)
        return np.unpackbits(bits, bitorder="little")[column.offset : column.offset + n].astype(bool)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return np.array(column.to_pylist(), dtype=object)
    dtype = _dtype(t)
    if dtype is None or (column.null_count and not pa.types.is_floating(t)):
        # other numbers (decimals, half floats) and integers with nulls: as float64, nulls NaN
        return to_numpy(pc.cast(column, pa.float64(), safe=False))
    if column.null_count:
        column = pc.fill_null(column, float("nan"))
    if n == 0:
        return np.zeros(0, dtype=dtype)
    return np.frombuffer(column.buffers()[1], dtype=dtype, count=n, offset=column.offset * dtype.itemsize)
