"""Freed memory kept for the next trace: the C allocator told not to hand each array back to the system.

Measuring a trace makes and frees a few dozen arrays of its length (212 KB each for 92
days at 5-minute steps, up to a few megabytes). glibc's allocator serves blocks above
its mmap threshold (128 KB at start, raised as such blocks are freed) with fresh pages
from the kernel, and hands the top of its heap back once more than twice that threshold
lies free there; each block the next trace asks for is then faulted in and zeroed again,
page by page. A cold run of 1,000 traced workloads took about 440,000 page faults and
1.7 s of system time that way (``/usr/bin/time``, ``--jobs 1``); with the thresholds
below, 44,000 and 0.5 s.

:func:`hold_freed_memory` sets the thresholds glibc's own rule reaches at most (mmap
above 32 MB, trim above 64 MB). It changes where memory comes from, never a value
computed in it. Nothing is done outside glibc, or when the user tunes the allocator
(``MALLOC_*`` or ``GLIBC_TUNABLES`` in the environment). Forked ``--jobs`` workers
inherit the setting.
"""

from __future__ import annotations

import os
import sys

#: glibc's ``mallopt`` parameters (``malloc.h``)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: blocks up to this size come from the heap (glibc's largest dynamic mmap threshold, 64-bit)
MMAP_THRESHOLD = 32 << 20
#: free memory at the top of the heap kept up to this size (glibc's rule: twice the mmap threshold)
TRIM_THRESHOLD = 64 << 20

_SET: list[bool] = []


def hold_freed_memory() -> bool:
    """Keep freed blocks of up to :data:`MMAP_THRESHOLD` for reuse in this process (once); whether it is set."""
    if _SET:
        return _SET[0]
    _SET.append(_set())
    return _SET[0]


def _set() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    if "GLIBC_TUNABLES" in os.environ or any(name.startswith("MALLOC_") for name in os.environ):
        return False  # the user's own allocator settings win
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - glibc only: another libc's mallopt takes other parameters
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
