"""KIP-630 snapshots of the metadata image, written without stalling the event loop (issue 22).

Contracts:
1. When the core says a snapshot is due (record bytes or interval), the state machine is past the latest
   snapshot and no metadata transaction is open, :meth:`SnapshotWriter.poll` takes the committed image as it is
   (``MetadataImage.copy``: O(1), and the persistent image never changes under it, kraftd.controller.image 3)
   with the end offset it holds and the core's plan for a snapshot there (``RaftClient.plan_snapshot``), and
   off the loop encodes it as records, builds the snapshot's batches and writes its file durably (every
   O(image) part: at 1M partitions the batches took ~0.8 s and the write and fsync ~0.6 s on the loop). A node
   with storage does that in a forked child process (kraftd.shell.raft.snapshot_child: the encoding never holds
   the loop's interpreter lock); without storage, or where a fork is not available, in a worker thread.
2. The core is touched only by its driver (kraftd.shell.node contract 4): the built snapshot is handed to
   ``RaftClient.add_snapshot`` by the next :meth:`SnapshotWriter.poll` on the driver, which then steps the
   core with a Tick so the WriteSnapshot effect runs; the DiskMirror knows the file is already written and
   durable (kraftd.shell.raft.persistence contract 3), so the log start moves only after it is. A snapshot that
   is no longer newer than the latest one (e.g. one was installed from the leader meanwhile) is dropped.
3. At most one snapshot is being encoded at a time; a failed encode is logged and retried when next due.
"""

from __future__ import annotations

import asyncio
import logging

from kraftd.controller.image import MetadataImage
from kraftd.controller.image_writer import snapshot_values
from kraftd.core.snapshots import Snapshot
from kraftd.core.snapshotting import SnapshotOffsetError, SnapshotPlan
from kraftd.shell.controller.glue import ControllerPort
from kraftd.shell.raft.persistence import DiskMirror
from kraftd.shell.raft.snapshot_child import can_fork, encode_in_child
from kraftd.storage import snapshots

log = logging.getLogger("kraftd.node")


class SnapshotWriter:
    def __init__(self, node: ControllerPort, mirror: DiskMirror) -> None:
        self.node = node
        self.mirror = mirror
        self._encoding: asyncio.Task[None] | None = None
        self._ready: Snapshot | None = None

    def _latest_end(self) -> int:
        latest = self.node.client.latest_snapshot
        return latest.snapshot_id.offset if latest else 0

    def poll(self) -> None:
        """Called by the driver after every step (contracts 1-2)."""
        node = self.node
        if self._ready is not None:
            snap, self._ready = self._ready, None
            if snap.snapshot_id.offset > self._latest_end():
                self.mirror.written.add(snap.snapshot_id)
                try:
                    node.client.add_snapshot(snap)
                except SnapshotOffsetError as exc:
                    self.mirror.written.discard(snap.snapshot_id)
                    log.warning(
                        "node %d: snapshot %s dropped: %s", node.config.node_id, snap.snapshot_id, exc
                    )
                    return
                log.info("node %d: wrote snapshot %s", node.config.node_id, snap.snapshot_id)
                node.step_tick()
            return
        st = node.controller
        if self._encoding is not None or st.end_offset <= self._latest_end():
            return
        if not node.client.snapshot_due() or not st.snapshot_safe:
            return
        end, image = st.end_offset, st.machine.committed.copy()
        plan = node.client.plan_snapshot(end)
        self._encoding = node.spawn_task(self._encode(end, image, plan))

    def _build(self, image: MetadataImage, plan: SnapshotPlan) -> Snapshot:
        """Contract 1, on the worker thread: nothing here touches the core or the loop."""
        snap = plan.build(snapshot_values(image))
        storage = self.node.storage
        if storage is not None:
            snapshots.write_snapshot(storage.partition_dir, snap, fsync=storage.log.fsync_enabled)
        return snap

    async def _encode(self, end: int, image: MetadataImage, plan: SnapshotPlan) -> None:
        storage = self.node.storage
        try:
            if storage is not None and can_fork():
                child = encode_in_child(image, plan, storage.partition_dir, fsync=storage.log.fsync_enabled)
                del image  # snapshot_child contract 1a: only the child keeps it once forked
                self._ready, usage = await child
                log.info(
                    "node %d: snapshot at offset %d encoded by a child process: fork %.1f ms, %.2f s of CPU, "
                    "peak RSS %.1f MiB",
                    self.node.config.node_id,
                    end,
                    usage.fork_ms,
                    usage.cpu_s,
                    usage.max_rss_mib,
                )
            else:
                self._ready = await asyncio.to_thread(self._build, image, plan)
            self.node.queue_tick()
        except Exception as exc:  # noqa: BLE001 - contract 3
            log.warning("node %d: snapshot at offset %d not written: %s", self.node.config.node_id, end, exc)
        finally:
            self._encoding = None
