"""The process's allocator, fixed by the long-running entry points (``kraftd start``, ``kraft-swarm``, bench/scale.py).

Contract 1: :func:`unpooled_large_buffers` fixes glibc's mmap threshold at ``KRAFTD_MMAP_THRESHOLD`` bytes (1 MiB
unless set; 0 leaves glibc's default), so a freed buffer of 1 MiB or more goes back to the system. glibc raises
its threshold to the size of the largest mmapped block freed (up to 32 MiB), after which such buffers come from the
heap and stay there: a leader answering 1,000 brokers catching up at 1,000 x 1M grew from 1.3 to 2.3 GB in 300 s,
and the swarm reading their 8 MiB answers in 64 KiB pieces grew past 21 GB (docs/SWARM.md, session 16).
"""

from __future__ import annotations

import ctypes
import os
import sys

M_MMAP_THRESHOLD = -3  # glibc's malloc.h


def unpooled_large_buffers() -> bool:
    """Contract 1: True once glibc's mmap threshold is fixed (False: not glibc, or ``KRAFTD_MMAP_THRESHOLD=0``)."""
    threshold = int(os.environ.get("KRAFTD_MMAP_THRESHOLD", str(1 << 20)))
    if threshold <= 0 or not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, threshold))  # 1 on success
