"""Kafka's controller metadata metrics (ControllerMetadataMetrics) of the committed image, kept incrementally.

Contracts:
1. Definitions are Kafka 4.3.1's ControllerMetricsChanges: an *active* broker is registered and not fenced (a
   broker in controlled shutdown is active and also counted as in controlled shutdown); a partition is *offline*
   when its leader is -1; it has a *preferred-replica imbalance* when its leader is not its first replica (an
   offline partition counts too, as ``hasPreferredLeader`` is false for it).
2. Cost: :meth:`MetadataCounts.wrap` wraps the function committed replay applies records with; each record costs
   O(1) (a RemoveTopicRecord O(1) too: per-topic counts are kept, O(topics) memory, nothing per partition). A
   metadata transaction (KIP-868) is counted as one change when its EndTransactionRecord applies it. Only when
   the image object itself is replaced (a snapshot loaded, an image read from disk) is it recounted once in full.
3. ``metadata_errors`` (Kafka's MetadataErrorCount) counts records replay had to ignore because they refer to a
   partition or broker the image does not hold (kraftd.controller.apply contract 3; Kafka's replay would raise
   and its fault handler count them).
4. The image is read only through MetadataImage's fields (``topics``, ``brokers``, ``pending_transaction``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from kraftd.controller.image import MetadataImage, PartitionState

ApplyFn = Callable[[MetadataImage, int, int, int, Any], None]

REGISTER_BROKER, UNREGISTER_BROKER, TOPIC, PARTITION, PARTITION_CHANGE = 0, 1, 2, 3, 5
FENCE_BROKER, UNFENCE_BROKER, REMOVE_TOPIC, BROKER_CHANGE = 7, 8, 9, 17
BEGIN_TXN, END_TXN, ABORT_TXN = 23, 24, 25
BROKER_KEYS = frozenset((REGISTER_BROKER, UNREGISTER_BROKER, FENCE_BROKER, UNFENCE_BROKER, BROKER_CHANGE))
MUST_EXIST = frozenset((PARTITION_CHANGE, FENCE_BROKER, UNFENCE_BROKER, BROKER_CHANGE))  # contract 3
TRACKED = BROKER_KEYS | {TOPIC, PARTITION, PARTITION_CHANGE, REMOVE_TOPIC, BEGIN_TXN, END_TXN, ABORT_TXN}

PKey = tuple[uuid.UUID, int]


def _broker_id(key: int, r: Any) -> int:
    """FenceBrokerRecord and UnfenceBrokerRecord name the broker ``id``; the other broker records ``broker_id``."""
    return int(r.id if key in (FENCE_BROKER, UNFENCE_BROKER) else r.broker_id)


def _partition_flags(p: PartitionState) -> tuple[int, int]:
    """(offline, without preferred leader) as 0/1 (contract 1)."""
    preferred = p.replicas[0] if p.replicas else -1
    return int(p.leader == -1), int(p.leader != preferred)


class _Change:
    """The records of one change (a record, or a whole transaction): what they touch and what must exist."""

    __slots__ = ("topics", "recreated", "partitions", "brokers", "must_exist")

    def __init__(self) -> None:
        self.topics: set[uuid.UUID] = set()
        self.recreated: set[uuid.UUID] = set()  # TopicRecords: an existing topic's state starts over
        self.partitions: set[PKey] = set()
        self.brokers: set[int] = set()
        self.must_exist: list[tuple[int, Any]] = []

    def add(self, key: int, r: Any) -> None:
        if key in BROKER_KEYS:
            self.brokers.add(_broker_id(key, r))
        elif key in (PARTITION, PARTITION_CHANGE):
            self.partitions.add((r.topic_id, r.partition_id))
            self.topics.add(r.topic_id)
        elif key in (TOPIC, REMOVE_TOPIC):
            self.topics.add(r.topic_id)
            if key == TOPIC:
                self.recreated.add(r.topic_id)
        if key in MUST_EXIST:
            self.must_exist.append((key, r))


class MetadataCounts:
    def __init__(self) -> None:
        self.image: MetadataImage | None = None
        self.partitions = 0
        self.offline = 0
        self.imbalanced = 0
        self.fenced = 0
        self.active = 0
        self.controlled_shutdown = 0
        self.metadata_errors = 0
        self._per_topic: dict[uuid.UUID, list[int]] = {}  # topic id -> [partitions, offline, imbalanced]
        self._txn: _Change | None = None
        self._recount_at_end = False

    @property
    def topics(self) -> int:
        return len(self._per_topic)

    # ---- full count (contract 2: only when the image object changes) ------------------------------------------
    def sync(self, image: MetadataImage) -> None:
        """Recount ``image`` in full if it is not the image these counts follow."""
        if image is self.image:
            return
        self.image = image
        self._txn = None
        self._recount_at_end = image.pending_transaction is not None  # its earlier records are not known here
        self._per_topic = {}
        self.partitions = self.offline = self.imbalanced = 0
        for tid, topic in image.topics.items():
            counts = self._per_topic[tid] = [0, 0, 0]
            for p in topic.partitions.values():
                off, imb = _partition_flags(p)
                counts[0] += 1
                counts[1] += off
                counts[2] += imb
            self.partitions += counts[0]
            self.offline += counts[1]
            self.imbalanced += counts[2]
        bs = image.brokers.values()
        self.fenced = sum(1 for b in bs if b.fenced)
        self.active = len(image.brokers) - self.fenced
        self.controlled_shutdown = sum(1 for b in bs if b.in_controlled_shutdown)

    # ---- incremental (contract 2) -----------------------------------------------------------------------------
    def wrap(self, apply: ApplyFn) -> ApplyFn:
        """``apply`` (kraftd.controller.apply.apply_record) counting what each record changes."""

        def counted(image: MetadataImage, offset: int, key: int, version: int, record: Any) -> None:
            if image is not self.image:
                self.sync(image)
            if key not in TRACKED:
                apply(image, offset, key, version, record)
                return
            if self._recount_at_end and key in (END_TXN, ABORT_TXN):
                apply(image, offset, key, version, record)  # the end of a transaction begun before sync()
                self._recount_at_end = False
                self.image = None
                self.sync(image)
                return
            if key == BEGIN_TXN:
                self._txn = _Change()
            elif key == ABORT_TXN:
                self._txn = None
            elif key != END_TXN and image.pending_transaction is not None:
                if self._txn is not None:
                    self._txn.add(key, record)  # applied (and counted) at the transaction's end
            elif key == PARTITION or key == PARTITION_CHANGE:
                self._txn = None
                self._one_partition(image, offset, key, version, record, apply)
                return
            else:
                change = self._txn if key == END_TXN and self._txn is not None else _Change()
                if key != END_TXN:
                    change.add(key, record)
                self._txn = None
                before = self._read(image, change)
                apply(image, offset, key, version, record)
                self._account(image, change, before)
                return
            apply(image, offset, key, version, record)

        return counted

    def _one_partition(
        self, image: MetadataImage, offset: int, key: int, version: int, r: Any, apply: ApplyFn
    ) -> None:
        """The common case, one partition record outside a transaction, without building a :class:`_Change`."""
        k = (r.topic_id, r.partition_id)
        was = self._partition(image, k)
        apply(image, offset, key, version, r)
        now = self._partition(image, k)
        counts = self._per_topic.get(k[0])
        if counts is None:
            if now is None:
                self.metadata_errors += key == PARTITION_CHANGE  # contract 3
                return
            counts = self._per_topic[k[0]] = [0, 0, 0]  # the image holds a topic these counts missed
        self._move(counts, was, now)
        if now is None and key == PARTITION_CHANGE:
            self.metadata_errors += 1

    def _move(self, counts: list[int], was: tuple[int, int] | None, now: tuple[int, int] | None) -> None:
        """One partition went from ``was`` to ``now`` (None: absent): its topic's counts and the totals follow."""
        d_n = (now is not None) - (was is not None)
        d_off = (now[0] if now else 0) - (was[0] if was else 0)
        d_imb = (now[1] if now else 0) - (was[1] if was else 0)
        counts[0] += d_n
        counts[1] += d_off
        counts[2] += d_imb
        self.partitions += d_n
        self.offline += d_off
        self.imbalanced += d_imb

    def _read(self, image: MetadataImage, c: _Change) -> Any:
        topics = {t: t in image.topics for t in c.topics}
        parts = {k: self._partition(image, k) for k in c.partitions}
        brokers = {b: self._broker(image, b) for b in c.brokers}
        return topics, parts, brokers

    @staticmethod
    def _partition(image: MetadataImage, k: PKey) -> tuple[int, int] | None:
        topic = image.topics.get(k[0])
        p = topic.partitions.get(k[1]) if topic is not None else None
        return _partition_flags(p) if p is not None else None

    @staticmethod
    def _broker(image: MetadataImage, bid: int) -> tuple[int, int] | None:
        b = image.brokers.get(bid)
        return (int(b.fenced), int(b.in_controlled_shutdown)) if b is not None else None

    def _account(self, image: MetadataImage, c: _Change, before: Any) -> None:
        topics_before, parts_before, brokers_before = before
        for tid, existed in topics_before.items():
            exists = tid in image.topics
            if existed and (not exists or tid in c.recreated):
                n, off, imb = self._per_topic.pop(tid, [0, 0, 0])
                self.partitions -= n
                self.offline -= off
                self.imbalanced -= imb
            if exists and tid not in self._per_topic:
                self._per_topic[tid] = [0, 0, 0]
        for k, was in parts_before.items():
            counts = self._per_topic.get(k[0])
            if counts is None:
                continue  # the topic is gone (its counts went with it) or never existed
            now = self._partition(image, k)
            if k[0] in c.recreated and topics_before[k[0]]:
                was = None  # its counts were dropped with the old topic state
            self._move(counts, was, now)
        for bid, was_b in brokers_before.items():
            now_b = self._broker(image, bid)
            fenced_d = (now_b[0] if now_b else 0) - (was_b[0] if was_b else 0)
            present_d = (now_b is not None) - (was_b is not None)
            self.fenced += fenced_d
            self.active += present_d - fenced_d
            self.controlled_shutdown += (now_b[1] if now_b else 0) - (was_b[1] if was_b else 0)
        for key, r in c.must_exist:
            if key == PARTITION_CHANGE:
                if self._partition(image, (r.topic_id, r.partition_id)) is None and not (
                    topics_before.get(r.topic_id) and r.topic_id not in image.topics
                ):
                    self.metadata_errors += 1
            elif (bid := _broker_id(key, r)) not in image.brokers and brokers_before.get(bid) is None:
                self.metadata_errors += 1
