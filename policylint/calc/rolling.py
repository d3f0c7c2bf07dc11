"""The rolling minimum and the sustained series s(t) built from it.

Three algorithms, chosen by window width and data: doubling (log2(W) + 1
contiguous passes, small windows without negative zeros), and the van Herk /
Gil-Werman block scheme whose in-block scans are either W strided numpy
operations or one ufunc accumulate per direction.
"""

from __future__ import annotations

import numpy as np

from policylint.calc.scratch import Scratch, row_batches, shared_scratch
from policylint.calc.settings import window_samples


# Up to this window (or n / 1000 samples) the block scans are done as W strided
# numpy operations; above it one ufunc accumulate per direction is cheaper.
_SCAN_LOOP_MAX = 64


def _block_scans(
    x: np.ndarray, width: int, blocks: int, scratch: Scratch | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Running minima inside each block of ``width``: forward and backward.

    ``x`` is 2-D; only its first ``blocks * width`` columns are used.
    """
    rows = x.shape[0]
    full = blocks * width
    xs = x[:, :full].reshape(rows, blocks, width)
    if width <= max(_SCAN_LOOP_MAX, x.shape[1] // 1000):
        # W operations over n / W elements each: total work stays n per direction.
        work = scratch or Scratch()
        fwd = work.get("fwd", (rows, blocks, width))
        bwd = work.get("bwd", (rows, blocks, width))
        fwd[..., 0] = xs[..., 0]
        for k in range(1, width):
            np.minimum(fwd[..., k - 1], xs[..., k], out=fwd[..., k])
        bwd[..., width - 1] = xs[..., width - 1]
        for k in range(width - 2, -1, -1):
            np.minimum(bwd[..., k + 1], xs[..., k], out=bwd[..., k])
    else:
        fwd = np.minimum.accumulate(xs, axis=2)
        bwd = np.minimum.accumulate(xs[..., ::-1], axis=2)[..., ::-1]
    return fwd.reshape(rows, full), bwd.reshape(rows, full)


def rolling_min(values: np.ndarray, width: int) -> np.ndarray:
    """Trailing minimum over ``width`` samples along the last axis.

    Output element ``i`` is ``min(values[..., i : i + width])``, so the first
    ``width - 1`` samples have no full window and are dropped. NaN anywhere in a
    window makes that window NaN (a window touching an excluded sample is not a
    valid sample).

    Uses the van Herk / Gil-Werman block scheme: split into blocks of ``width``,
    take running minima forward and backward inside each block; any window is
    the minimum of one backward value (rest of its first block) and one forward
    value (start of the next block). Work per sample does not depend on the
    window width.
    """
    a = np.asarray(values, dtype=np.float64)
    if width < 1:
        raise ValueError("width must be at least 1")
    n = a.shape[-1]
    lead = a.shape[:-1]
    if width > n:
        return np.empty(lead + (0,), dtype=np.float64)
    if width == 1:
        return a.copy()
    flat = np.ascontiguousarray(a.reshape(-1, n))
    out = np.empty((flat.shape[0], n - width + 1))
    scratch = shared_scratch()
    for rows in row_batches(flat.shape[0], n):
        rolling_min_rows(flat[rows], width, out[rows], scratch)
    return out.reshape(lead + (n - width + 1,))


def rolling_min_rows(x: np.ndarray, width: int, out: np.ndarray, scratch: Scratch) -> None:
    """Rolling minimum of the 2-D rows ``x`` into ``out`` (``width`` <= columns)."""
    n = x.shape[1]
    out_len = n - width + 1
    if width == 1:
        out[...] = x
        return
    if width <= _DOUBLING_MAX and not np.signbit(x, out=scratch.get("sign", x.shape, np.bool_)).any():
        _rolling_min_doubling(x, width, out, scratch)
        return
    blocks = n // width
    full = blocks * width
    inside = full - width + 1  # windows ending inside the full blocks
    fwd, bwd = _block_scans(x, width, blocks, scratch)
    np.minimum(bwd[:, :inside], fwd[:, width - 1 : full], out=out[:, :inside])
    if out_len > inside:
        # The last few windows end in the partial tail block.
        tail = np.minimum.accumulate(x[:, full:], axis=1)
        starts = np.arange(inside, out_len)
        np.minimum(bwd[:, starts], tail[:, starts + width - 1 - full], out=out[:, inside:])


# Up to this window the rolling minimum is built by doubling (log2(W) + 1 contiguous
# passes); the block scheme's strided scans cost more below it.
_DOUBLING_MAX = 64


def _rolling_min_doubling(x: np.ndarray, width: int, out: np.ndarray, scratch: Scratch) -> None:
    """Rolling minimum by doubling: minima over 1, 2, 4 ... p <= W samples, then two of them.

    The minimum over W samples is the minimum of the two (overlapping) minima over
    p samples starting at i and at i + W - p. Each step is one contiguous pass.
    A minimum is one of its inputs whatever the grouping, except that -0.0 and
    +0.0 compare equal and either may come out; the caller takes this path only
    when no sample has its sign bit set, so the bits equal the block scheme's.
    """
    rows, n = x.shape
    p = 1 << (width.bit_length() - 1)  # largest power of two <= width
    cur = x
    span = 1
    turn = 0
    while span < p:
        length = n - 2 * span + 1  # windows of 2 * span samples
        last = 2 * span == p and p == width
        dest = out if last else scratch.get(f"double{turn}", (rows, n))[:, :length]
        np.minimum(cur[:, :length], cur[:, span : span + length], out=dest)
        cur = dest
        span *= 2
        turn ^= 1
    if p < width:
        length = n - width + 1
        np.minimum(cur[:, :length], cur[:, width - p : width - p + length], out=out)


def sustained(values: np.ndarray, cold_start_seconds: float, step_seconds: float) -> np.ndarray:
    """The sustained series s: trailing minimum over the cold-start window."""
    return rolling_min(values, window_samples(cold_start_seconds, step_seconds))
