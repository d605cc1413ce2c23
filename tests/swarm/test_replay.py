"""kraft-swarm's pure parts: the requests encode at every version Kafka 4.3.1 and kraftd speak, and the shared
replay applies metadata batches in offset order, skips what it has, waits at a gap, and reports fences."""

from __future__ import annotations

import random
import uuid

import pytest

from generated.begin_transaction_record import BeginTransactionRecord
from generated.broker_registration_change_record import BrokerRegistrationChangeRecord
from generated.end_transaction_record import EndTransactionRecord
from generated.fence_broker_record import FenceBrokerRecord
from generated.partition_change_record import PartitionChangeRecord
from generated.partition_record import PartitionRecord
from generated.remove_topic_record import RemoveTopicRecord
from generated.topic_record import TopicRecord
from kraftd.core.batches import data_batch
from kwire.metadata_frame import encode_record
from tools.swarm import frames
from tools.swarm.replay import SharedReplay, batch_ends

TOPIC = uuid.UUID(int=7)


def batch(base: int, records: list[object], epoch: int = 1) -> bytes:
    return data_batch(base, epoch, [encode_record(r, 0) for r in records], 0).data


@pytest.mark.parametrize(
    ("request_", "versions"),
    [
        (frames.registration(100, "c", uuid.uuid4(), 9092, uuid.uuid4()), range(2, 5)),
        (frames.heartbeat(100, 5, 42, want_fence=True, want_shut_down=False), range(0, 3)),
        (frames.observer_fetch("c", 100, uuid.uuid4(), 3, 10, 2, 9), range(17, 19)),
        (frames.alter_partition(100, 5, TOPIC, 0, 1, 2, [100, 101], {100: 5, 101: 6}), range(3, 4)),
        (frames.create_topics(["a", "b"], 100, 3), range(2, 8)),
    ],
)
def test_requests_encode_at_the_versions_brokers_use(request_: object, versions: range) -> None:
    for v in versions:
        assert request_.encode(v)  # type: ignore[attr-defined]


def test_replay_applies_in_order_skips_duplicates_waits_at_gaps_and_reports_fences() -> None:
    fences: list[tuple[int, int]] = []
    replay = SharedReplay(on_fence=lambda b, off: fences.append((b, off)))
    first = batch(0, [TopicRecord(name="t", topic_id=TOPIC)])
    second = batch(
        1,
        [
            PartitionRecord(partition_id=0, topic_id=TOPIC, replicas=[100, 101], isr=[100, 101], leader=100),
            PartitionRecord(partition_id=1, topic_id=TOPIC, replicas=[101, 100], isr=[101, 100], leader=101),
        ],
    )
    third = batch(
        3,
        [
            FenceBrokerRecord(id=101, epoch=4),
            PartitionChangeRecord(partition_id=1, topic_id=TOPIC, leader=100),
        ],
    )
    replay.feed(third)  # a gap: nothing applied
    assert replay.next_offset == 0 and not replay.image.topics
    replay.feed(first + second)
    replay.feed(first + second)  # again: skipped
    assert replay.next_offset == 3 and replay.topic_offset == {"t": 0}
    assert replay.leader_counts() == {100: 1, 101: 1}
    replay.feed(third)
    replay.feed(batch(5, [BrokerRegistrationChangeRecord(broker_id=100, broker_epoch=3, fenced=1)]))
    assert replay.led_by(100) == 2 and replay.led_by(101) == 0
    assert fences == [(101, 3), (100, 5)]
    assert batch_ends(first + second + third) == (5, 1)
    assert batch_ends(third[:-1]) is None  # a torn batch is not counted


def test_leaderships_are_counted_as_records_apply_not_by_walking_every_partition() -> None:
    """Contract 4: after partitions created, leaders moved (directly and inside a transaction) and a topic removed,
    the kept counts are a full recount's; asking them walks no partition (before: N brokers x P partitions to pick
    a benchmark's victim, 10^9 steps at 1,000 brokers and 1M partitions)."""
    rng = random.Random(5)
    topics = [uuid.UUID(int=i + 1) for i in range(4)]
    records: list[object] = [TopicRecord(name=f"t{i}", topic_id=t) for i, t in enumerate(topics)]
    for t in topics:
        for p in range(50):
            r = rng.sample(range(100, 110), 3)
            records.append(PartitionRecord(partition_id=p, topic_id=t, replicas=r, isr=r, leader=r[0]))
    moves = [PartitionChangeRecord(partition_id=p, topic_id=topics[0], leader=100 + p % 3) for p in range(20)]
    records += moves[:10] + [BeginTransactionRecord(name="x"), *moves[10:], EndTransactionRecord()]
    records += [
        PartitionChangeRecord(partition_id=3, topic_id=topics[1], leader=-1),
        RemoveTopicRecord(topics[2]),
    ]
    replay = SharedReplay()
    replay.feed(batch(0, records))
    recount: dict[int, int] = {}
    for t in replay.image.topics.values():
        for p in t.partitions.values():
            recount[p.leader] = recount.get(p.leader, 0) + 1
    assert replay.leader_counts() == recount and sum(recount.values()) == 150 and recount[-1] == 1

    class NoWalk(dict):  # type: ignore[type-arg]
        def values(self):  # type: ignore[no-untyped-def]
            raise AssertionError("walked every topic")

    replay.image.topics = NoWalk(replay.image.topics)
    assert [replay.led_by(b) for b in range(100, 110)] == [recount.get(b, 0) for b in range(100, 110)]
