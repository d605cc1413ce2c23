"""One decoded copy of ``__cluster_metadata`` shared by every swarm broker (the replay; each broker still fetches
the bytes itself).

Contracts:
1. :meth:`SharedReplay.feed` takes the records of one Fetch answer and applies, in offset order, every metadata
   record at or past the next offset it expects, into one :class:`MetadataImage` (kraftd's own ``apply_record``:
   the same records a broker's image is built from). Batches wholly behind are skipped; a batch past a gap is not
   applied (a later fetch or snapshot fills it). Control batches only move the offset.
2. :meth:`SharedReplay.load_snapshot` replaces the image with a snapshot's records when the snapshot ends past the
   image (a broker that fell behind the log start); the image's next offset becomes the snapshot's end offset.
2a. One broker at a time gathers a snapshot's bytes for it: :meth:`SharedReplay.take_snapshot` is True for a
   snapshot ending past the image when no other broker holds the turn (which it then holds until
   :meth:`SharedReplay.release_snapshot`), False otherwise (tools.swarm.broker contract 3a).
3. Fencing: every FenceBrokerRecord and BrokerRegistrationChangeRecord with fenced = FENCE (1) is reported to
   ``on_fence(broker_id, offset)``; ``topic_offset`` maps each topic name to its TopicRecord's offset.
4. Leaderships: ``led_by`` and ``leader_counts`` read a count per leader kept as records apply (the partitions a
   PartitionRecord, PartitionChangeRecord, RemoveTopicRecord or a transaction's end touches, their leader before
   and after), not a walk over every partition: a benchmark asks it for each of N brokers and every 20 ms while it
   waits (at 1,000 brokers and 1M partitions a walk each was 10^9 steps, holding the swarm's GIL).
5. :func:`batch_ends` walks the batch headers of a records section only (no decoding): the end offset (last + 1)
   and the epoch of the last complete batch, or None when the section holds none.
6. A turn of the swarm's loop in which the replay worked ``SLOW_S`` or more is noted in ``slow`` (it held every
   broker's heartbeat back meanwhile).
7. The work of 1 and 2 is done in slices of about ``SLICE_S`` on the swarm's one loop, in the order it was handed in
   (each slice a callback behind what the loop has ready), never all at once: applying a snapshot of 1M
   partitions, or an 8 MiB catch-up answer, in one turn held every broker's heartbeat back for seconds, and a
   real broker's heartbeats (BrokerLifecycleManager's own event queue) never wait for its metadata replay
   (docs/SWARM.md, session 19). ``next_offset`` is the next offset past what was handed in (what a broker need not
   feed again), ``applied_offset`` past what the image holds; :attr:`idle` says they are the same. A snapshot
   replaces the image when its first slice runs (the old one freed, not kept beside the new one) and the image is
   whole again once idle. Called with no running loop, the work is done at once.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from kraftd.controller.apply import apply_record
from kraftd.controller.image import MetadataImage, PartitionState
from kraftd.controller.machine import metadata_records
from kraftd.core.log import LogBatch
from kraftd.storage.batches import HEADER_SIZE, peek

REGISTER_BROKER, TOPIC, PARTITION, PARTITION_CHANGE, FENCE_BROKER, REMOVE_TOPIC = 0, 2, 3, 5, 7, 9
REGISTRATION_CHANGE, END_TXN = 17, 24
FENCE = 1  # BrokerRegistrationFencingChange.FENCE
SLOW_S = 0.1  # contract 6
SLICE_S = 0.005  # contract 7: the longest turn of the swarm's loop the replay takes (about)
CHECK_EVERY = 32  # contract 7: records applied between two looks at the clock
_DONE = object()


def batches(data: bytes) -> list[LogBatch]:
    out: list[LogBatch] = []
    pos, end = 0, len(data)
    while end - pos >= HEADER_SIZE:
        h = peek(data, pos)
        if h is None or pos + h.size > end:
            break
        out.append(LogBatch(h.base_offset, h.last_offset, h.epoch, data[pos : pos + h.size], h.is_control))
        pos += h.size
    return out


def batch_ends(data: bytes) -> tuple[int, int] | None:
    """Contract 5."""
    pos, end = 0, len(data)
    last: tuple[int, int] | None = None
    while end - pos >= HEADER_SIZE:
        h = peek(data, pos)
        if h is None or pos + h.size > end:
            break
        last = (h.last_offset + 1, h.epoch)
        pos += h.size
    return last


class SharedReplay:
    def __init__(self, on_fence: Callable[[int, int], None] | None = None) -> None:
        self.image = MetadataImage()
        self.next_offset = 0  # contract 7: the next offset past what was handed in (applied or queued)
        self.applied_offset = 0  # contract 7: the next offset past what the image holds
        self.on_fence = on_fence
        self.topic_offset: dict[str, int] = {}
        self.records_applied = 0
        self.leaders: dict[int, int] = {}  # contract 4: leader id -> partitions it leads
        self.snapshot_taker: int | None = None  # contract 2a: the broker gathering a snapshot's bytes
        self.slow: list[tuple[float, float, str]] = []  # contract 6: (started, seconds, what)
        self._queued: deque[LogBatch | tuple[bytes, int]] = deque()  # contract 7: batches and snapshots
        self._work: Iterator[None] | None = None
        self._slices: asyncio.AbstractEventLoop | None = None  # the loop a slice is scheduled on

    @property
    def idle(self) -> bool:
        """Contract 7: everything handed in is applied."""
        return self._work is None and not self._queued

    def take_snapshot(self, broker_id: int, end_offset: int) -> bool:
        """Contract 2a."""
        if end_offset <= self.next_offset or self.snapshot_taker not in (None, broker_id):
            return False
        self.snapshot_taker = broker_id
        return True

    def release_snapshot(self, broker_id: int) -> None:
        """Contract 2a (a no-op for a broker that does not hold the turn)."""
        if self.snapshot_taker == broker_id:
            self.snapshot_taker = None

    def feed(self, data: bytes) -> None:
        """Contract 1 (applied as contract 7 says)."""
        for b in batches(data):
            if b.last_offset < self.next_offset:
                continue
            if b.base_offset > self.next_offset:
                break  # a gap: wait for the missing batches
            self._queued.append(b)
            self.next_offset = b.last_offset + 1
        self._run()

    def load_snapshot(self, data: bytes, end_offset: int) -> None:
        """Contract 2 (applied as contract 7 says)."""
        if end_offset <= self.next_offset:
            return
        self._queued.append((data, end_offset))
        self.next_offset = end_offset
        self._run()

    # ---- contract 7: the work, in slices of the swarm's loop ----------------------------------------------------

    def _run(self) -> None:
        if self._slices is not None:
            return  # a slice is scheduled: it goes on from where the work is
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a caller of its own): all of it now
            loop = None
        self._slice(loop)

    def _slice(self, loop: asyncio.AbstractEventLoop | None) -> None:
        self._slices = None
        started = time.perf_counter()
        deadline = started + SLICE_S if loop is not None else float("inf")
        steps = 0
        while self._work is not None or self._queued:
            if self._work is None:
                self._work = self._steps(self._queued.popleft())
            if next(self._work, _DONE) is _DONE:
                self._work = None
            steps += 1
            if steps % CHECK_EVERY == 0 and time.perf_counter() >= deadline:
                assert loop is not None
                self._slices = loop
                loop.call_soon(self._slice, loop)
                break
        took = time.perf_counter() - started
        if took >= SLOW_S:
            self.slow.append((time.monotonic() - took, took, f"one slice: {steps} steps"))

    def _steps(self, item: LogBatch | tuple[bytes, int]) -> Iterator[None]:
        """One batch's records (those past the image), or one snapshot in place of the image."""
        if isinstance(item, LogBatch):
            if item.last_offset < self.applied_offset:
                return
            for d in metadata_records(
                item
            ):  # one record decoded at a time (a batch of 20,000 was a 0.1 s turn)
                if d.offset >= self.applied_offset:
                    self._apply(d.offset, d.api_key, d.version, d.record)
                yield
            self.applied_offset = item.last_offset + 1
            self.image.offset = item.last_offset
            return
        data, end_offset = item
        if end_offset <= self.applied_offset:
            return
        self.image, self.leaders = MetadataImage(), {}  # the old image goes now, as a broker's would
        self.topic_offset.clear()
        for b in batches(data):
            for d in metadata_records(b):
                self._apply(end_offset - 1, d.api_key, d.version, d.record)
                yield
        self.applied_offset = end_offset
        self.image.offset = end_offset - 1

    def _touched(self, key: int, record: Any) -> list[tuple[Any, int]]:
        """Contract 4: the partitions whose leader applying this record may change."""
        pending = self.image.pending_transaction
        if key == END_TXN:
            return [tp for k, _, r in pending or [] for tp in self._partitions(k, r)]
        # inside a transaction, held until it ends
        return self._partitions(key, record) if pending is None else []

    def _partitions(self, key: int, record: Any) -> list[tuple[Any, int]]:
        if key in (PARTITION, PARTITION_CHANGE):
            return [(record.topic_id, record.partition_id)]
        if key == REMOVE_TOPIC:
            t = self.image.topics.get(record.topic_id)
            return [(record.topic_id, i) for i in t.partitions] if t is not None else []
        return []

    def _leader(self, topic_id: Any, partition: int) -> int | None:
        t = self.image.topics.get(topic_id)
        p = t.partitions.get(partition) if t is not None else None
        return p.leader if p is not None else None

    def _apply(self, offset: int, key: int, version: int, record: Any) -> None:
        touched = self._touched(key, record)
        before = [self._leader(*tp) for tp in touched]
        apply_record(self.image, offset, key, version, record)
        for tp, old in zip(touched, before, strict=True):
            new = self._leader(*tp)
            if new != old:
                if old is not None:
                    self.leaders[old] -= 1
                    if not self.leaders[old]:
                        del self.leaders[old]
                if new is not None:
                    self.leaders[new] = self.leaders.get(new, 0) + 1
        self.records_applied += 1
        if key == TOPIC:
            self.topic_offset[record.name] = offset
        elif self.on_fence is not None and (
            key == FENCE_BROKER or (key == REGISTRATION_CHANGE and record.fenced == FENCE)
        ):
            self.on_fence(record.id if key == FENCE_BROKER else record.broker_id, offset)

    # ---- what the image says ---------------------------------------------------------------------------------

    def partitions(self) -> list[tuple[str, int, PartitionState]]:
        return [(t.name, i, p) for t in self.image.topics.values() for i, p in t.partitions.items()]

    def led_by(self, broker_id: int) -> int:
        """Contract 4."""
        return self.leaders.get(broker_id, 0)

    def leader_counts(self) -> dict[int, int]:
        """Contract 4."""
        return dict(self.leaders)
