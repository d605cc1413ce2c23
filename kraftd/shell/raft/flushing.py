"""Log flushes of the asyncio node (kraftd.shell.node contracts 5, 5a and 11).

Contracts:
5. On a leader the fsync runs in a worker thread (the loop keeps sending to followers meanwhile); at most one
   flush is in flight and a request arriving meanwhile is coalesced into one more flush. Only its completion
   feeds ``LogFlushed`` to the core.
5a. A non-leader fsyncs inline instead (nothing waits on its loop while it syncs: its next fetch goes out only
   after the flush): the same LogFlushed, fed after the fsync returned, without the thread round trip.
11. Only when the test-only key ``kraftd.test.fsync.delay.file`` is set, every flush first sleeps (in its worker
   thread) for the number of ms that file holds at that moment: the chaos harness's slow disk.
A flush that fails is fatal to the node (contract 8): nothing unsynced is ever reported as flushed.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

from kraftd.core.events import LogFlushed
from kraftd.core.types import Role
from kraftd.shell.raft.port import RaftPort

log = logging.getLogger("kraftd.node")


class LogFlusher:
    def __init__(self, node: RaftPort) -> None:
        self.node = node
        self._flushing = False
        self._again = False

    def request(self) -> None:
        node = self.node
        if self._flushing:
            self._again = True
            return
        assert node.storage is not None
        if node.core.role is not Role.LEADER:  # contract 5a
            flushed = node.storage.log.flush()
            node.post(LogFlushed(node.now_ms(), flushed))
            return
        target, run = node.storage.log.begin_flush()
        self._flushing = True
        node.spawn_task(self._flush(target, run))

    async def _flush(self, target: int, run: Any) -> None:
        node = self.node
        assert node.storage is not None
        try:
            await asyncio.to_thread(self._slow_disk(run))
        except BaseException as exc:  # noqa: BLE001 - contract 8
            log.critical("node %d: log flush failed, stopping: %s", node.config.node_id, exc)
            node.fatal = exc
            await node.shutdown()
            return
        flushed = node.storage.log.complete_flush(target)
        self._flushing = False
        node.post(LogFlushed(node.now_ms(), flushed))
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
