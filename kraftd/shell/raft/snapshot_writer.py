"""KIP-630 snapshots of the metadata image, written without stalling the event loop (issue 22).

Contracts:
1. When the core says a snapshot is due (record bytes or interval), the state machine is past the latest
   snapshot and no metadata transaction is open, :meth:`SnapshotWriter.poll` takes the committed image as it is
   (``MetadataImage.copy``: O(1), and the persistent image never changes under it, kraftd.controller.image 3)
   with the end offset it holds, and encodes it as records in a worker thread (the O(image) part).
2. The core is touched only by its driver (kraftd.shell.node contract 4): the encoded values are handed to
   ``RaftClient.create_snapshot`` by the next :meth:`SnapshotWriter.poll` on the driver, which then steps the
   core with a Tick so the WriteSnapshot effect runs. A snapshot that is no longer newer than the latest one
   (e.g. one was installed from the leader meanwhile) is dropped.
3. At most one snapshot is being encoded at a time; a failed encode is logged and retried when next due.
"""

from __future__ import annotations

import asyncio
import logging

from kraftd.controller.image import MetadataImage
from kraftd.controller.image_writer import snapshot_values
from kraftd.shell.controller.glue import ControllerPort

log = logging.getLogger("kraftd.node")


class SnapshotWriter:
    def __init__(self, node: ControllerPort) -> None:
        self.node = node
        self._encoding: asyncio.Task[None] | None = None
        self._ready: tuple[int, list[bytes]] | None = None

    def _latest_end(self) -> int:
        latest = self.node.client.latest_snapshot
        return latest.snapshot_id.offset if latest else 0

    def poll(self) -> None:
        """Called by the driver after every step (contracts 1-2)."""
        node = self.node
        if self._ready is not None:
            end, values = self._ready
            self._ready = None
            if end > self._latest_end():
                snap = node.client.create_snapshot(end, values)
                log.info("node %d: wrote snapshot %s", node.config.node_id, snap.snapshot_id)
                node.step_tick()
            return
        st = node.controller
        if self._encoding is not None or st.end_offset <= self._latest_end():
            return
        if not node.client.snapshot_due() or not st.snapshot_safe:
            return
        end, image = st.end_offset, st.machine.committed.copy()
        self._encoding = node.spawn_task(self._encode(end, image))

    async def _encode(self, end: int, image: MetadataImage) -> None:
        try:
            values = await asyncio.to_thread(snapshot_values, image)
            self._ready = (end, values)
            self.node.queue_tick()
        except Exception as exc:  # noqa: BLE001 - contract 3
            log.warning("node %d: snapshot at offset %d not written: %s", self.node.config.node_id, end, exc)
        finally:
            self._encoding = None
