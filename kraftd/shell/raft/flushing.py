"""Log flushes of the asyncio node (kraftd.shell.node contracts 5, 5a and 11).

Contracts:
5. On a leader the fsync runs in the node's flush thread (the loop keeps sending to followers meanwhile); at
   most one flush is in flight and a request arriving meanwhile is coalesced into one more flush. Only its
   completion feeds ``LogFlushed`` to the core. A flush is handed to its thread inside the step that asked for
   it, once the step's sends are written (the driver asks :meth:`LogFlusher.hands_over` at the FlushLog effect
   and calls :meth:`LogFlusher.request` after the step's other effects but before its applies; issue 25,
   sessions 13 and 20): the fsync overlaps the followers' round trip, and the thread's wake-up comes after the
   followers' (kraftd.shell.raft.syncthread contract 2a). Sending before the leader's own flush completes is allowed:
   only the high watermark waits for it (kraftd.core.replication invariant 1; Kafka's ``flushLeaderLog``
   also answers parked fetches first). Its completion reaches the loop as one callback (no task, no executor).
5b. Where the compiled fsync loop is wanted (the default) and built (kraftd.shell.raft.syncthread), a
   leader's flush of one segment with nothing else to sync (no roll, fsync on, no slow-disk file) goes to that
   GIL-free thread instead of the Python one: the same hand-over, the same completion
   (complete_flush, LogFlushed) on the loop, read from the thread's answer pipe. Anything else takes the Python
   thread.
5a. A non-leader fsyncs inline instead (nothing waits on its loop while it syncs: its next fetch goes out only
   after the flush): the same LogFlushed, fed after the fsync returned, without the thread round trip.
11. Only when the test-only key ``kraftd.test.fsync.delay.file`` is set, every flush first sleeps (in its worker
   thread) for the number of ms that file holds at that moment: the chaos harness's slow disk.
A flush that fails is fatal to the node (contract 8): nothing unsynced is ever reported as flushed.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from typing import Any

from kraftd.core.events import LogFlushed
from kraftd.core.types import Role
from kraftd.shell.raft import syncthread
from kraftd.shell.raft.port import RaftPort
from kwire import stagetrace

log = logging.getLogger("kraftd.node")


def _traced(run: Any) -> Any:
    def traced() -> None:
        stagetrace.mark("lflush.started")
        run()
        stagetrace.mark("lflush.synced")

    return traced


class LogFlusher:
    def __init__(self, node: RaftPort) -> None:
        self.node = node
        self._flushing = False
        self._again = False
        self._cond = threading.Condition()
        self._ready: tuple[int, Any] | None = None  # handed to the thread
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._sync: syncthread.SyncThread | None = None

    def hands_over(self) -> bool:
        """Contract 5: whether a flush requested now goes to a thread (a leader's), so that the driver hands it
        over once the step's sends are written; False: contract 5a's inline fsync, at its effect."""
        return self.node.core.role is Role.LEADER

    def request(self) -> None:
        node = self.node
        if self._flushing:
            self._again = True
            return
        assert node.storage is not None
        if node.core.role is not Role.LEADER:  # contract 5a
            if stagetrace.ON:
                stagetrace.mark("fsync.begin")
            flushed = node.storage.log.flush()
            if stagetrace.ON:
                stagetrace.mark("fsync.end")
            node.post(LogFlushed(node.now_ms(), flushed))
            return
        self._flushing = True
        if not self._one_fd_job():
            target, run = node.storage.log.begin_flush()
            self._hand_over((target, self._slow_disk(_traced(run) if stagetrace.ON else run)))

    def _one_fd_job(self) -> bool:
        """Contract 5b: hand the flush to the GIL-free thread when it qualifies."""
        log = self.node.storage.log  # type: ignore[union-attr]
        if not getattr(log, "fsync_enabled", False) or self.node.config.test_fsync_delay_file is not None:
            return False
        if not syncthread.available():
            return False
        target, fds, dir_dirty = log.begin_flush_fds()
        if len(fds) == 1 and not dir_dirty:
            self._submit_fd_job(target, fds[0])
        else:
            self._hand_over((target, self._slow_disk(log.flush_run(fds, dir_dirty))))
        return True

    def _hand_over(self, job: tuple[int, Any]) -> None:
        """Contract 5: the Python flush thread starts ``job`` now."""
        if self._closed:
            return
        if self._thread is None:
            self._loop = asyncio.get_running_loop()
            self._thread = threading.Thread(
                target=self._work, name=f"kraftd-flush-{self.node.config.node_id}", daemon=True
            )
            self._thread.start()
        if stagetrace.ON:
            stagetrace.mark("lflush.begin")
        with self._cond:
            self._ready = job
            self._cond.notify()

    def _submit_fd_job(self, target: int, fd: int) -> None:
        if self._closed:
            os.close(fd)
            return
        if self._sync is None:
            self._sync = syncthread.SyncThread(f"kraftd-fsync-{self.node.config.node_id}", self._done)
        if stagetrace.ON:
            stagetrace.mark("lflush.begin")
        self._sync.submit(fd, target)

    def close(self) -> None:
        if self._sync is not None:
            self._sync.close()
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _work(self) -> None:
        assert self._loop is not None
        syncthread.disfavor_wakeups()  # kraftd.shell.raft.syncthread contract 2a
        while True:
            with self._cond:
                while self._ready is None and not self._closed:
                    self._cond.wait()
                job, self._ready = self._ready, None
                if self._closed or job is None:
                    return
            target, run = job
            failed: BaseException | None = None
            try:
                run()
            except BaseException as exc:  # noqa: BLE001 - contract 8, reported on the loop
                failed = exc
            try:
                self._loop.call_soon_threadsafe(self._done, target, failed)
            except RuntimeError:  # the loop is closed
                return

    def _done(self, target: int, failed: BaseException | None) -> None:
        node = self.node
        if self._closed or node.storage is None:
            return
        if stagetrace.ON:
            stagetrace.mark("lflush.resumed")
        if failed is not None:
            log.critical("node %d: log flush failed, stopping: %s", node.config.node_id, failed)
            node.fatal = failed
            node.spawn_task(node.shutdown())
            return
        flushed = node.storage.log.complete_flush(target)
        self._flushing = False
        node.step_now(LogFlushed(node.now_ms(), flushed))  # kraftd.shell.node contract 4a
        if self._again:
            self._again = False
            self.request()

    def _slow_disk(self, run: Any) -> Any:
        """Contract 11, read on every flush."""
        path = self.node.config.test_fsync_delay_file
        if path is None:
            return run

        def delayed() -> None:
            try:
                delay_ms = int(path.read_text().strip() or 0)
            except (OSError, ValueError):
                delay_ms = 0
            if delay_ms > 0:
                # Event.wait, not time.sleep: the chaos harness runs nodes under libfaketime (wall-clock jumps),
                # whose monotonic passthrough makes time.sleep fail with EINVAL.
                threading.Event().wait(delay_ms / 1000)
            run()

        return delayed
