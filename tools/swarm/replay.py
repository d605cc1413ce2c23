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
6. A feed or snapshot load that took ``SLOW_S`` or more is noted in ``slow`` (it ran on the swarm's one loop, holding
   every broker's heartbeat back meanwhile; docs/SWARM.md, session 19).
"""

from __future__ import annotations

import time
from collections.abc import Callable
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
        self.next_offset = 0
        self.on_fence = on_fence
        self.topic_offset: dict[str, int] = {}
        self.records_applied = 0
        self.leaders: dict[int, int] = {}  # contract 4: leader id -> partitions it leads
        self.snapshot_taker: int | None = None  # contract 2a: the broker gathering a snapshot's bytes
        self.slow: list[tuple[float, float, str]] = []  # contract 6: (started, seconds, what)

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

    def _timed(self, started: float, what: str) -> None:
        took = time.monotonic() - started
        if took >= SLOW_S:
            self.slow.append((started, took, what))

    def feed(self, data: bytes) -> None:
        """Contract 1."""
        started, applied = time.monotonic(), self.records_applied
        try:
            self._feed(data)
        finally:
            self._timed(started, f"feed {len(data)} bytes, {self.records_applied - applied} records")

    def _feed(self, data: bytes) -> None:
        for b in batches(data):
            if b.last_offset < self.next_offset:
                continue
            if b.base_offset > self.next_offset:
                return  # a gap: wait for the missing batches
            for d in metadata_records(b):
                if d.offset >= self.next_offset:
                    self._apply(d.offset, d.api_key, d.version, d.record)
            self.next_offset = b.last_offset + 1
            self.image.offset = b.last_offset

    def load_snapshot(self, data: bytes, end_offset: int) -> None:
        """Contract 2."""
        if end_offset <= self.next_offset:
            return
        started, applied = time.monotonic(), self.records_applied
        self.image = MetadataImage()
        self.topic_offset.clear()
        for b in batches(data):
            for d in metadata_records(b):
                self._apply(end_offset - 1, d.api_key, d.version, d.record)
        self.next_offset = end_offset
        self.image.offset = end_offset - 1
        self.leaders = {}
        for t in self.image.topics.values():
            for p in t.partitions.values():
                self.leaders[p.leader] = self.leaders.get(p.leader, 0) + 1
        self._timed(started, f"snapshot {len(data)} bytes, {self.records_applied - applied} records")

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
