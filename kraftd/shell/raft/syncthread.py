"""The leader's fsync thread without the GIL (kraftd.shell.node contract 5b; issue 25).

Contracts:
1. :func:`available` says whether the compiled loop (kraftd/shell/raft/_syncloop.pyx) is wanted, built and
   usable; otherwise the flusher keeps its Python thread (kraftd.shell.raft.flushing contract 5), the reference
   and the fallback. It is the default since issue 25's session 13 (quiet-machine A/B in docs/PERFORMANCE.md:
   commit p50 and p99 lower than with the Python thread in every alternated round, less CPU per commit; the
   Python thread needs the GIL to start and to end each fsync, so a busy loop delays both, by up to a switch
   interval). ``KRAFTD_FLUSH_THREAD=python`` in the environment asks for the Python thread instead. The
   compiled loop is not usable under ``KRAFTD_PURE_PYTHON`` or when ``os.fsync`` was replaced (a test's
   disk-failure injection): the C loop would bypass it.
2. :meth:`SyncThread.submit` hands one fd (a duplicate the thread owns until it is answered) and the flush
   target to the thread through a pipe. The thread runs C only: it wakes on that pipe, fsyncs and answers on a
   second pipe without taking the GIL, so neither the start nor the end of an fsync waits for the event loop's
   thread to release it (the Python thread needed it twice, once after its Condition woke it and once to call
   ``call_soon_threadsafe``; under load each could wait a GIL switch interval).
2a. Both flush threads (this one and the flusher's Python thread) run under ``SCHED_BATCH``
   (:func:`disfavor_wakeups`, where the platform has it): the leader's loop wakes its flush thread inside the
   step that appends, and a woken thread of the default policy may preempt the loop inside that write, before the
   step's other sends and applies (issue 25, session 19's profile: 56 us a hand-over). Under ``SCHED_BATCH`` the
   kernel does not preempt for that wake-up: the thread runs on an idle core at once, else when the loop or a
   follower yields the core. Its fsync is seldom on the commit path (a commit needs two of the three voters'
   flushed offsets, and the followers' round trip is longer than the leader's fsync: docs/PERFORMANCE.md,
   session 20). Nothing else changes: the same fsync, the same completion.
3. The answer is read on the event loop (``add_reader``), the fd is closed there, and ``on_done(target,
   failed)`` runs in that callback: ``failed`` is a LogIOError naming the errno, or None. Answers arrive in
   submission order. :meth:`close` ends the thread (end of file on its request pipe) and stops reading.
"""

from __future__ import annotations

import asyncio
import os
import struct
import threading
from collections.abc import Callable, Mapping

from kraftd.storage.errors import LogIOError
from kwire import stagetrace

try:
    from kraftd.shell.raft import _syncloop  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - exercised where Cython or a C compiler is missing
    _syncloop = None

_REQ = struct.Struct("=qq")  # fd, target
_DONE = struct.Struct(
    "=qqqqq"
)  # fd, target, errno (0: synced), CLOCK_MONOTONIC ns at the fsync's start and end

_OS_FSYNC = os.fsync
Done = Callable[[int, BaseException | None], None]


def wanted(environ: Mapping[str, str]) -> bool:
    """Contract 1: the compiled loop unless the environment asks for the Python thread."""
    return environ.get("KRAFTD_FLUSH_THREAD", "compiled") != "python"


_WANTED = wanted(os.environ)


def disfavor_wakeups() -> bool:
    """Contract 2a: the calling thread (Linux: the policy is per thread) is put under ``SCHED_BATCH``; False
    where the platform or the sandbox does not allow it (the thread then keeps the default policy)."""
    policy = getattr(os, "SCHED_BATCH", None)
    if policy is None or not hasattr(os, "sched_setscheduler"):
        return False
    try:
        os.sched_setscheduler(0, policy, os.sched_param(0))
    except OSError:
        return False
    return True


def built() -> bool:
    """Whether the compiled loop was built (contract 1)."""
    return _syncloop is not None


def available() -> bool:
    """Contract 1."""
    pure = os.environ.get("KRAFTD_PURE_PYTHON", "") not in ("", "0")
    return _WANTED and _syncloop is not None and not pure and os.fsync is _OS_FSYNC


class SyncThread:
    def __init__(self, name: str, on_done: Done) -> None:
        assert _syncloop is not None
        self._on_done = on_done
        self._loop = asyncio.get_running_loop()
        req_r, self._req_w = os.pipe()
        self._done_r, done_w = os.pipe()
        os.set_blocking(self._done_r, False)
        self._buf = b""
        self._closed = False
        self._loop.add_reader(self._done_r, self._readable)

        def serve() -> None:
            disfavor_wakeups()
            try:
                _syncloop.serve(req_r, done_w)
            finally:
                os.close(req_r)
                os.close(done_w)

        self._thread = threading.Thread(target=serve, name=name, daemon=True)
        self._thread.start()

    def submit(self, fd: int, target: int) -> None:
        """Contract 2: the thread owns ``fd`` from here until its answer was read."""
        os.write(self._req_w, _REQ.pack(fd, target))
        if stagetrace.ON:  # the hand-over's write returned (docs/PERFORMANCE.md, issue 25 session 15)
            stagetrace.mark("lflush.submitted")

    def _readable(self) -> None:
        try:
            data = os.read(self._done_r, 64 * _DONE.size)
        except BlockingIOError:
            return
        if not data:
            self._stop_reading()
            return
        self._buf += data
        while len(self._buf) >= _DONE.size and not self._closed:
            fd, target, err, started, synced = _DONE.unpack_from(self._buf)
            self._buf = self._buf[_DONE.size :]
            os.close(fd)
            if stagetrace.ON:
                stagetrace.mark_at(started, "lflush.started")
                stagetrace.mark_at(synced, "lflush.synced")
            failed = LogIOError(f"fsync of the active segment failed: {os.strerror(err)}") if err else None
            self._on_done(target, failed)

    def _stop_reading(self) -> None:
        if self._done_r >= 0:
            self._loop.remove_reader(self._done_r)
            os.close(self._done_r)
            self._done_r = -1

    def close(self) -> None:
        """Contract 3."""
        if self._closed:
            return
        self._closed = True
        os.close(self._req_w)  # the thread sees end of file and returns
        if not self._loop.is_closed():
            self._stop_reading()
