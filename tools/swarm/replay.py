"""One decoded copy of ``__cluster_metadata`` shared by every swarm broker (the replay; each broker still fetches
the bytes itself).

Contracts:
1. :meth:`SharedReplay.feed` takes the records of one Fetch answer and applies, in offset order, every metadata
   record at or past the next offset it expects, into one :class:`MetadataImage` (kraftd's own ``apply_record``:
   the same records a broker's image is built from). Batches wholly behind are skipped; a batch past a gap is not
   applied (a later fetch or snapshot fills it). Control batches only move the offset.
2. :meth:`SharedReplay.load_snapshot` replaces the image with a snapshot's records when the snapshot ends past the
   image (a broker that fell behind the log start); the image's next offset becomes the snapshot's end offset.
3. Fencing: every FenceBrokerRecord and BrokerRegistrationChangeRecord with fenced = FENCE (1) is reported to
   ``on_fence(broker_id, offset)``; ``topic_offset`` maps each topic name to its TopicRecord's offset.
4. :func:`batch_ends` walks the batch headers of a records section only (no decoding): the end offset (last + 1)
   and the epoch of the last complete batch, or None when the section holds none.
"""

from __future__ import annotations

from collections.abc import Callable

from kraftd.controller.apply import apply_record
from kraftd.controller.image import MetadataImage, PartitionState
from kraftd.controller.machine import metadata_records
from kraftd.core.log import LogBatch
from kraftd.storage.batches import HEADER_SIZE, peek

REGISTER_BROKER, TOPIC, PARTITION, PARTITION_CHANGE, FENCE_BROKER, REGISTRATION_CHANGE = 0, 2, 3, 5, 7, 17
FENCE = 1  # BrokerRegistrationFencingChange.FENCE


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
    """Contract 4."""
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

    def feed(self, data: bytes) -> None:
        """Contract 1."""
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
        self.image = MetadataImage()
        self.topic_offset.clear()
        for b in batches(data):
            for d in metadata_records(b):
                self._apply(end_offset - 1, d.api_key, d.version, d.record)
        self.next_offset = end_offset
        self.image.offset = end_offset - 1

    def _apply(self, offset: int, key: int, version: int, record: object) -> None:
        apply_record(self.image, offset, key, version, record)
        self.records_applied += 1
        if key == TOPIC:
            self.topic_offset[record.name] = offset  # type: ignore[attr-defined]
        elif self.on_fence is not None and (
            key == FENCE_BROKER or (key == REGISTRATION_CHANGE and record.fenced == FENCE)  # type: ignore[attr-defined]
        ):
            self.on_fence(record.id if key == FENCE_BROKER else record.broker_id, offset)  # type: ignore[attr-defined]

    # ---- what the image says ---------------------------------------------------------------------------------

    def partitions(self) -> list[tuple[str, int, PartitionState]]:
        return [(t.name, i, p) for t in self.image.topics.values() for i, p in t.partitions.items()]

    def led_by(self, broker_id: int) -> int:
        return sum(
            1 for t in self.image.topics.values() for p in t.partitions.values() if p.leader == broker_id
        )

    def leader_counts(self) -> dict[int, int]:
        counts: dict[int, int] = {}
        for t in self.image.topics.values():
            for p in t.partitions.values():
                counts[p.leader] = counts.get(p.leader, 0) + 1
        return counts
