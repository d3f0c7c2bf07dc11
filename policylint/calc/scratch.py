"""Work buffers and row batches shared by the calculator's array passes.

Whole 2-D arrays are processed in cache-sized batches of rows, and the
temporaries live in per-thread buffers reused from call to call (see
:class:`Scratch`).
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np


# Work on about this many bytes of samples at a time: whole 2-D chunks do not fit
# in cache, and a pass over cached rows is several times cheaper than over RAM.
_BATCH_BYTES = 1 << 20


def row_batches(rows: int, samples: int) -> list[slice]:
    """Row slices of about ``_BATCH_BYTES`` each (at least one row)."""
    per = max(1, _BATCH_BYTES // max(1, samples * 8))
    return [slice(r, min(rows, r + per)) for r in range(0, rows, per)]


class Scratch:
    """Work buffers reused from one row batch to the next, and from one call to the next.

    Allocating a fresh megabyte for a temporary costs more than the arithmetic
    done in it: the allocator hands large blocks back to the operating system on
    release, and the next block is page-faulted and zero-filled again (about
    0.25 ms per megabyte here, as much as five numpy passes over it). Reusing the
    same few buffers keeps them mapped and hot in cache. Buffers larger than
    ``_KEEP_BYTES`` are not kept, so a one-off huge series does not pin memory.
    """

    def __init__(self) -> None:
        self._buffers: dict[str, np.ndarray] = {}

    def get(self, name: str, shape: tuple[int, ...], dtype: Any = np.float64) -> np.ndarray:
        size = math.prod(shape)
        buf = self._buffers.get(name)
        if buf is None or buf.size < size or buf.dtype != np.dtype(dtype):
            buf = np.empty(size, dtype=dtype)
            if buf.nbytes <= _KEEP_BYTES:
                self._buffers[name] = buf
        return buf[:size].reshape(shape)


# Largest work buffer kept between calls (a 92-day one-minute series is 1 MB).
_KEEP_BYTES = 16 << 20

_LOCAL = threading.local()


def shared_scratch() -> Scratch:
    """This thread's work buffers, kept between calls.

    Callers must not return views of them: every result that leaves a public
    function is a fresh array (the buffers are overwritten by the next call).
    """
    scratch: Scratch | None = getattr(_LOCAL, "scratch", None)
    if scratch is None:
        scratch = Scratch()
        _LOCAL.scratch = scratch
    return scratch
