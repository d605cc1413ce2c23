"""A KIP-630 snapshot encoded and written by a forked child process, so that the loop's process never waits for
its interpreter lock while the image is encoded (issues 22 and 24).

Encoded in a worker thread of the node's own process, the encoding held the lock the loop needs for every
bytecode: at 1M partitions the loop's stalls in the seconds before each snapshot were 2-4x its own CPU time
(session 15: 185-266 ms stalls with 68-149 ms of the loop's CPU), the worker holding the lock through each 8 MiB
batch (one C call) and each collection its allocations started. A forked child has its own interpreter lock.

Contracts:
1. :func:`encode_in_child` forks; the child encodes ``plan.build(snapshot_values(image))`` from the image as it
   was at the fork (the persistent image never changes under it, kraftd.controller.image 3, and the child's
   memory is the parent's, copy-on-write), writes it with :func:`kraftd.storage.snapshots.write_snapshot`
   (durable, that module's contract 1) and exits 0. The parent waits for the exit on a pidfd (no thread, no
   blocking call on the loop), reads the file back in a worker thread (one read system call, the lock released)
   and returns :meth:`SnapshotPlan.adopt` of its bytes: the snapshot an in-process ``plan.build`` gives, byte
   for byte.
1a. Once forked, the parent holds no reference to ``image`` (nor does kraftd.shell.raft.snapshot_writer's task):
   the child has its own. Held until the child exits, that version of the image kept alive every part the
   writes replaced during the encoding (a few seconds of creation at 1M partitions: 100-250k partitions), and
   dropping it freed them all in one callback (issue 24: 12-13 ms of CPU in process after 20-200k partitions at
   400-600k, on the loop at the snapshot's end); dropped at the fork, each part is freed when the write that
   replaces it is applied, in the replay's slices (kraftd.shell.controller.glue contract 1).
2. The child does nothing else: it runs at the lowest CPU priority (``CHILD_NICE``: on a machine whose cores
   are busy, the loops of this node and of its peers come first; at 1M partitions on 2 cores the three
   controllers' children at the default priority made the loops wait 2-5x their own CPU time), and in the
   ``SCHED_IDLE`` class where the system has it (Linux; no privilege needed): a CPU running only such a task
   counts as idle when a woken thread is placed, and a woken loop preempts it at once. At nice 19 alone
   (issue 24, session 20, 100 x 1M creation: every loop's run-queue wait sampled every 20 ms) the three children
   still ran 9.6 ms (summed) of the average 21 ms sample in which a loop waited over 5 ms for a CPU: a woken
   loop queued behind another loop or the swarm on one core while the other ran a child. Its collector
   is off (a collection would touch every object's header and copy the parent's pages), its signals are the
   defaults and the loop's wake-up fd is dropped (a signal to the child never reaches the parent's loop), it dies
   with its parent (``PR_SET_PDEATHSIG``), it never logs, and it never returns into the parent's code: every path
   ends in ``os._exit`` (no finalizers, no flushed buffers).
3. A child that fails (an exception: its traceback on stderr, exit 1; or killed) raises
   :class:`SnapshotChildError` in the parent; its ``.part`` file is deleted at the next open
   (kraftd.storage.snapshots contract 1). Cancelled (the node stops), the parent kills and reaps the child.
4. :func:`can_fork`: only where ``os.fork`` and ``os.pidfd_open`` exist (Linux); elsewhere the snapshot writer
   encodes in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import os
import signal
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from kraftd.controller.image import MetadataImage
from kraftd.controller.image_writer import snapshot_values
from kraftd.core.snapshots import Snapshot
from kraftd.core.snapshotting import SnapshotPlan
from kraftd.storage import snapshots

_PR_SET_PDEATHSIG = 1
CHILD_NICE = 19  # contract 2
try:
    _LIBC: ctypes.CDLL | None = ctypes.CDLL(None, use_errno=True)  # loaded before any fork (contract 2)
except OSError:  # pragma: no cover - no C library to load
    _LIBC = None


class SnapshotChildError(Exception):
    """The child encoding a snapshot did not exit 0 (contract 3)."""


@dataclass(frozen=True, slots=True)
class ChildUsage:
    """What the child cost: the parent's time in ``fork`` (on the loop), and from ``wait4`` the child's CPU seconds
    and its peak resident set (which counts the parent's pages it touched, copied or not)."""

    fork_ms: float
    cpu_s: float
    max_rss_mib: float


def can_fork() -> bool:
    """Contract 4."""
    return hasattr(os, "fork") and hasattr(os, "pidfd_open")


async def encode_in_child(
    image: MetadataImage, plan: SnapshotPlan, partition_dir: Path, *, fsync: bool
) -> tuple[Snapshot, ChildUsage]:
    """Contract 1."""
    parent = os.getpid()
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child, which never returns (contract 2)
        _child(parent, image, plan, partition_dir, fsync)
    del image  # contract 1a
    fork_ms = (time.perf_counter() - started) * 1000
    try:
        cpu_s, max_rss_mib = await _exited(pid)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        raise
    path = partition_dir / snapshots.snapshot_name(plan.sid)
    data = await asyncio.to_thread(path.read_bytes)
    return plan.adopt(data), ChildUsage(fork_ms, cpu_s, max_rss_mib)


async def _exited(pid: int) -> tuple[float, float]:
    loop = asyncio.get_running_loop()
    fd = os.pidfd_open(pid)
    done: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        loop.remove_reader(fd)
        if not done.done():
            done.set_result(None)

    try:
        loop.add_reader(fd, readable)
        try:
            await done
        finally:
            loop.remove_reader(fd)
    finally:
        os.close(fd)
    _, status, usage = os.wait4(pid, 0)  # the child has exited: returns at once
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        raise SnapshotChildError(f"the snapshot's child process {pid} failed: {how}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def _child(parent: int, image: MetadataImage, plan: SnapshotPlan, partition_dir: Path, fsync: bool) -> None:
    code = 1
    try:
        gc.disable()
        with contextlib.suppress(ValueError):
            signal.set_wakeup_fd(-1)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        if _LIBC is not None:
            _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        os.nice(CHILD_NICE)
        if hasattr(os, "SCHED_IDLE"):
            with contextlib.suppress(OSError):
                os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        if os.getppid() == parent:  # else the parent died before the prctl
            snap = plan.build(snapshot_values(image))
            snapshots.write_snapshot(partition_dir, snap, fsync=fsync)
            code = 0
    except BaseException:  # noqa: BLE001 - contract 3: reported by the exit code, the text on stderr
        with contextlib.suppress(Exception):
            os.write(2, traceback.format_exc().encode())
    finally:
        os._exit(code)
