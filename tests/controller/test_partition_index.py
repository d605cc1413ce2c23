"""Partitions by broker (kraftd.controller.partition_index): kept by apply through partition changes, topic
deletion and re-creation and ClearElrRecord, equal to a scan of the partitions; fencing and controlled shutdown
read a broker's partitions from it."""

from __future__ import annotations

import gc
import uuid
from typing import Any

from generated.clear_elr_record import ClearElrRecord
from generated.feature_level_record import FeatureLevelRecord
from generated.partition_change_record import PartitionChangeRecord
from generated.partition_record import PartitionRecord
from generated.register_broker_record import RegisterBrokerRecord
from generated.remove_topic_record import RemoveTopicRecord
from generated.topic_record import TopicRecord
from generated.unfence_broker_record import UnfenceBrokerRecord
from kraftd.controller import brokers, partition_index
from kraftd.controller.apply import apply_record
from kraftd.controller.image import MetadataImage

BROKERS = 10


def _tid(t: int) -> uuid.UUID:
    return uuid.UUID(int=(1 << 64) + t)


def _image(topics: int, per_topic: int) -> MetadataImage:
    image = MetadataImage()
    recs: list[Any] = [FeatureLevelRecord(name="metadata.version", feature_level=21)]
    for b in range(BROKERS):
        recs.append(RegisterBrokerRecord(broker_id=b, broker_epoch=b, incarnation_id=uuid.UUID(int=b + 1)))
        recs.append(UnfenceBrokerRecord(id=b, epoch=b))
    for t in reversed(range(topics)):  # ids and names in opposite orders: keys() sorts by name
        recs.append(TopicRecord(name=f"t{t:04d}", topic_id=_tid(t)))
        for p in range(per_topic):
            reps = [(t + p + k) % BROKERS for k in range(3)]
            recs.append(
                PartitionRecord(partition_id=p, topic_id=_tid(t), replicas=reps, isr=reps, leader=reps[0])
            )
    for i, r in enumerate(recs):
        apply_record(image, i, type(r).API_KEY, 0, r)
    return image


def _apply(image: MetadataImage, records: list[Any]) -> None:
    for r in records:
        apply_record(image, image.offset + 1, type(r).API_KEY, 0, r)


def _scan(image: MetadataImage, pred: Any) -> list[tuple[uuid.UUID, int]]:
    return [
        (tid, pid)
        for tid, t in sorted(image.topics.items(), key=lambda kv: kv[1].name)
        for pid, p in sorted(t.partitions.items())
        if pred(p)
    ]


def test_the_indexes_follow_every_change_of_the_partitions() -> None:
    image = _image(8, 12)
    assert partition_index.consistent(image)
    for b in range(BROKERS):
        assert brokers.holding(image, b, isr=True) == _scan(image, lambda p, b=b: b in p.isr)
    before = image.copy()
    _apply(image, brokers.fence(image, 3))
    assert partition_index.consistent(image) and partition_index.consistent(before)
    assert brokers.holding(image, 3, isr=True) == [] and not partition_index.holds_any(image.leader_index, 3)
    assert brokers.holding(before, 3, isr=True) == _scan(before, lambda p: 3 in p.isr) != []  # copy unchanged
    _apply(
        image,
        [
            PartitionChangeRecord(
                partition_id=0, topic_id=_tid(1), leader=-1, isr=[5], eligible_leader_replicas=[6]
            )
        ],
    )
    assert partition_index.keys(image, image.leader_index, -1) == [(_tid(1), 0)]
    assert partition_index.keys(image, image.elr_index, 6) == [(_tid(1), 0)]
    _apply(image, [ClearElrRecord(topic_name="")])
    _apply(image, [RemoveTopicRecord(topic_id=_tid(2)), TopicRecord(name="t0004", topic_id=_tid(4))])
    assert partition_index.consistent(image)
    assert all(
        tid not in (_tid(2), _tid(4))
        for b in range(BROKERS)
        for tid, _ in brokers.holding(image, b, isr=True)
    )


def test_fencing_a_broker_moves_exactly_the_partitions_a_scan_finds() -> None:
    image = _image(100, 100)  # 10k partitions, broker 7 in 3k ISRs, leading 1k
    want = _scan(image, lambda p: 7 in p.isr)
    assert len(want) == 3000
    records = brokers.fence(image, 7)
    assert [(r.topic_id, r.partition_id) for r in records[1:]] == want
    led = [(r.topic_id, r.partition_id) for r in records[1:] if r.leader != -2]
    assert led == _scan(image, lambda p: p.leader == 7)
    chunk = brokers.remove_from_partitions(image, 7, where=want[:500] + [(_tid(999), 0)])
    assert chunk == records[1:501]  # a chunk of the fencing, a partition gone is skipped


def _partition(image: MetadataImage, key: tuple[uuid.UUID, int]) -> Any:
    return image.topics[key[0]].partitions[key[1]]


def _parts(h: Any) -> list[Any]:
    return list(getattr(h, "parts", None) or [h.masks])  # one dict of masks before contract 2c


def _private_entries(image: MetadataImage, before: MetadataImage) -> int:
    """How many index entries (a topic's mask, or a high key) ``image`` holds in mask dicts it does not share
    with ``before`` (copied or new)."""
    n = 0
    for name in partition_index.NAMES:
        old = getattr(before, name)
        for b, h in getattr(image, name).items():
            was = old.get(b)
            if was is h:
                continue
            shared = {id(d) for d in _parts(was)} if was is not None else set()
            n += sum(len(d) for d in _parts(h) if d is not None and id(d) not in shared) + len(h.high)
    return n


def test_the_first_change_after_a_copy_copies_masks_not_a_brokers_partitions() -> None:
    """Contracts 2, 2a (issue 24): a broker in 1,200 ISRs here; after ``copy()`` (a snapshot, an activation) one
    partition change copies O(the broker's topics) mask entries, never its partitions (copying a set of every
    key cost 0.5 s on the loop at 1M)."""
    image = _image(40, 100)
    held = brokers.holding(image, 3, isr=True)
    assert len(held) > 1000
    before = image.copy()
    key = held[-1]
    p = image.topics[key[0]].partitions[key[1]]
    isr = [b for b in p.isr if b != 3]
    _apply(image, [PartitionChangeRecord(partition_id=key[1], topic_id=key[0], isr=isr, leader=isr[0])])
    assert (
        _private_entries(image, before) <= 3 * 40
    )  # ISR and leader Helds of the brokers touched: a mask per topic
    assert partition_index.consistent(image) and partition_index.consistent(before)
    assert key not in brokers.holding(image, 3, isr=True) and key in brokers.holding(before, 3, isr=True)


def test_the_first_change_after_a_copy_copies_one_bucket_of_masks_not_every_topic() -> None:
    """Contract 2c (issue 24, session 14): after ``copy()`` one partition change copies one bucket of each touched
    Held's masks, about its topics / BUCKETS entries, not a mask per topic (1M partitions: a replay slice after
    the view's reshare copied every broker's 10k masks twice, 200 ms of loop CPU)."""
    image = _image(1000, 10)  # each broker in the ISRs of ~1,000 topics
    before = image.copy()
    key = brokers.holding(image, 3, isr=True)[-1]
    isr = [b for b in _partition(image, key).isr if b != 3]
    _apply(image, [PartitionChangeRecord(partition_id=key[1], topic_id=key[0], isr=isr, leader=isr[0])])
    copied = _private_entries(image, before)
    assert 0 < copied <= 3 * 2 * 1000 // 64  # a bucket (BUCKETS 64) per Held touched, not 1,000 masks
    assert partition_index.consistent(image) and partition_index.consistent(before)
    assert key not in brokers.holding(image, 3, isr=True) and key in brokers.holding(before, 3, isr=True)
    again = image.copy()  # copies of copies stay independent
    _apply(again, [PartitionChangeRecord(partition_id=key[1], topic_id=key[0], isr=[*isr, 3], leader=3)])
    assert key in brokers.holding(again, 3, isr=True) and key not in brokers.holding(image, 3, isr=True)
    assert all(partition_index.consistent(i) for i in (image, before, again))


def test_the_masks_a_copy_makes_are_nothing_the_garbage_collector_scans() -> None:
    """Contract 2b (issue 24, session 13): every Held's masks are untracked by the collector, also the copies the
    first change after ``copy()`` makes (the leader's view is reshared every 10k records): keyed by UUIDs, these
    10k-entry dicts at 1M partitions were young objects every young collection walked (35-54 ms each at 300k)."""
    image = _image(40, 100)
    before = image.copy()
    for b in range(BROKERS):  # a change per broker: each one's Helds are copied once
        key = next(k for k in brokers.holding(image, b, isr=True) if len(_partition(image, k).isr) == 3)
        isr = [x for x in _partition(image, key).isr if x != b]
        _apply(image, [PartitionChangeRecord(partition_id=key[1], topic_id=key[0], isr=isr, leader=isr[0])])
    assert _private_entries(image, before) > 0
    for img in (image, before):
        helds = [h for n in partition_index.NAMES for h in getattr(img, n).values()]
        assert len(helds) >= 2 * BROKERS
        assert not any(gc.is_tracked(d) for h in helds for d in _parts(h) if d is not None)
    assert partition_index.consistent(image) and partition_index.consistent(before)


def test_key_chunks_split_keys_in_order_including_ids_past_the_masks() -> None:
    """Contract 3: the chunks, joined, are ``keys()`` (name order, masks' bits then the ids >= MASKED), each
    at most ``size`` long, and they keep listing the image as it was at the first chunk."""
    image = _image(12, 7)
    tid = _tid(3)
    reps = [2, 3, 4]
    high = partition_index.MASKED + 5
    _apply(image, [PartitionRecord(partition_id=high, topic_id=tid, replicas=reps, isr=reps, leader=2)])
    want = partition_index.keys(image, image.isr_index, 2)
    assert (tid, high) in want
    for size in (1, 4, 1000):
        chunks = partition_index.key_chunks(image, image.isr_index, 2, size)
        first = next(chunks)
        _apply(image, [PartitionChangeRecord(partition_id=high, topic_id=tid, isr=[3, 4], leader=3)])
        got = [first, *chunks]
        _apply(image, [PartitionChangeRecord(partition_id=high, topic_id=tid, isr=reps, leader=2)])
        assert [k for c in got for k in c] == want
        assert all(0 < len(c) <= size for c in got)
    assert list(partition_index.key_chunks(image, image.isr_index, 99, 5)) == []


class _CountingTopics:
    """``image.topics`` that counts the names looked up (partition_index contract 3a)."""

    def __init__(self, topics: Any) -> None:
        self.topics = topics
        self.looked_up = 0

    def __getitem__(self, tid: uuid.UUID) -> Any:
        self.looked_up += 1
        return self.topics[tid]


def test_ordering_a_brokers_topics_yields_every_order_step_topics_instead_of_naming_all_in_one_step() -> None:
    """Contract 3a (issue 24, session 14: a controlled shutdown's first step named and ordered its broker's ~10k
    topics at 1M partitions, 96 ms of loop CPU): between two chunks given (empty ones included) at most
    ORDER_STEP topics are named; the non-empty chunks, joined, are still ``keys()``."""
    image = _image(2_500, 10)  # broker 2 in some ISR of every topic
    want = partition_index.keys(image, image.isr_index, 2)
    counting = _CountingTopics(image.topics)
    view = type("View", (), {"topics": counting})()
    steps: list[int] = []
    chunks: list[list[tuple[uuid.UUID, int]]] = []
    for chunk in partition_index.key_chunks(view, image.isr_index, 2, 100):
        steps.append(counting.looked_up)
        counting.looked_up = 0
        chunks.append(chunk)
    assert len({t for t, _ in want}) > 2 * partition_index.ORDER_STEP
    assert max(steps) <= partition_index.ORDER_STEP, steps[:3]  # 2,500 names in the first step before
    assert [k for c in chunks for k in c] == want
    assert all(len(c) <= 100 for c in chunks) and sum(1 for c in chunks if not c) >= 2
