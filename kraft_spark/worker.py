"""Keeping a reused Python worker's collections cheap.

pyspark's daemon runs a full ``gc.collect()`` after every task of a reused worker (pyspark/daemon.py,
``spark.python.worker.reuse``): a walk over every container object the worker holds, most of them imported
modules, classes and caches (pyspark, pyarrow, the generated codecs, the simulator: 65-70k objects, 35-60 ms of
CPU per task on the bench machine, more than a small task's own work).

Contract: :func:`freeze_imports` at the start of a task moves every object alive then into the permanent
generation (``gc.freeze``), which collections skip, during a process's first two tasks only: at the first, the
imports; at the second, what the first task's lazy imports and caches left (the daemon collected that task's
garbage just before, so only live objects are frozen). Later tasks freeze nothing, so nothing a task
allocates is kept beyond those two.
"""

from __future__ import annotations

import gc
import os

_FREEZES = 2
_done: dict[int, int] = {}  # pid -> freezes done (a forked worker starts its own count)


def freeze_imports() -> None:
    pid = os.getpid()
    done = _done.get(pid, 0)
    if done < _FREEZES:
        gc.freeze()
        _done[pid] = done + 1
