"""kraftd.controller.metrics_counts: the incremental controller metadata counts equal a full recount of the image
after every record (transactions, topic removal, broker changes included), and records replay ignores are counted
as metadata errors."""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from generated.abort_transaction_record import AbortTransactionRecord
from generated.begin_transaction_record import BeginTransactionRecord
from generated.broker_registration_change_record import BrokerRegistrationChangeRecord
from generated.end_transaction_record import EndTransactionRecord
from generated.fence_broker_record import FenceBrokerRecord
from generated.partition_change_record import PartitionChangeRecord
from generated.partition_record import PartitionRecord
from generated.register_broker_record import RegisterBrokerRecord
from generated.remove_topic_record import RemoveTopicRecord
from generated.topic_record import TopicRecord
from generated.unfence_broker_record import UnfenceBrokerRecord
from generated.unregister_broker_record import UnregisterBrokerRecord
from kraftd.controller.apply import apply_record
from kraftd.controller.image import MetadataImage
from kraftd.controller.metrics_counts import MetadataCounts

TOPICS = [uuid.UUID(int=i + 1) for i in range(3)]
FIELDS = (
    "partitions",
    "offline",
    "imbalanced",
    "fenced",
    "active",
    "controlled_shutdown",
    "topics",
)


def _record(draw: Any) -> Any:
    kind = draw(st.sampled_from(range(12)))
    t = draw(st.sampled_from(TOPICS))
    p = draw(st.integers(0, 3))
    b = draw(st.integers(1, 3))
    leader = draw(st.sampled_from([-1, 1, 2, 3]))
    replicas = draw(st.permutations([1, 2, 3]))
    if kind == 0:
        return TopicRecord(name=f"t{t.int}", topic_id=t)
    if kind in (1, 2):
        return PartitionRecord(partition_id=p, topic_id=t, replicas=replicas, isr=replicas, leader=leader)
    if kind in (3, 4):
        return PartitionChangeRecord(partition_id=p, topic_id=t, leader=leader)
    if kind == 5:
        return RemoveTopicRecord(topic_id=t)
    if kind == 6:
        return RegisterBrokerRecord(broker_id=b, broker_epoch=b, fenced=draw(st.booleans()))
    if kind == 7:
        return BrokerRegistrationChangeRecord(
            broker_id=b, broker_epoch=b, fenced=draw(st.sampled_from([-1, 0, 1])), in_controlled_shutdown=1
        )
    if kind == 8:
        return draw(st.sampled_from([FenceBrokerRecord, UnfenceBrokerRecord]))(id=b, epoch=b)
    if kind == 9:
        return UnregisterBrokerRecord(broker_id=b, broker_epoch=b)
    return draw(
        st.sampled_from([BeginTransactionRecord(name="t"), EndTransactionRecord(), AbortTransactionRecord()])
    )


@st.composite
def records(draw: Any) -> list[Any]:
    return [_record(draw) for _ in range(draw(st.integers(1, 60)))]


def _counts(c: MetadataCounts) -> dict[str, int]:
    return {f: getattr(c, f) for f in FIELDS}


@settings(max_examples=200, deadline=None)
@given(records())
def test_incremental_counts_equal_a_full_recount(recs: list[Any]) -> None:
    image = MetadataImage()
    counts = MetadataCounts()
    apply = counts.wrap(apply_record)
    for offset, r in enumerate(recs):
        apply(image, offset, type(r).API_KEY, 0, r)
        full = MetadataCounts()
        full.sync(image)
        assert _counts(counts) == _counts(full), (offset, r)


def test_definitions_follow_kafka() -> None:
    """Offline: leader -1 (also imbalanced); imbalanced: leader is not the first replica; a broker in controlled
    shutdown is still active; errors: a change to a partition or broker the image does not hold."""
    image = MetadataImage()
    counts = MetadataCounts()
    apply = counts.wrap(apply_record)
    t = TOPICS[0]
    recs = [
        RegisterBrokerRecord(broker_id=1, broker_epoch=5, fenced=False),
        RegisterBrokerRecord(broker_id=2, broker_epoch=6, fenced=True),
        BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=5, in_controlled_shutdown=1),
        TopicRecord(name="a", topic_id=t),
        PartitionRecord(partition_id=0, topic_id=t, replicas=[1, 2], isr=[1, 2], leader=1),
        PartitionRecord(partition_id=1, topic_id=t, replicas=[1, 2], isr=[1, 2], leader=2),
        PartitionRecord(partition_id=2, topic_id=t, replicas=[1, 2], isr=[], leader=-1),
        PartitionChangeRecord(partition_id=9, topic_id=t, leader=1),  # no such partition
        UnfenceBrokerRecord(id=7, epoch=1),  # no such broker
    ]
    for offset, r in enumerate(recs):
        apply(image, offset, type(r).API_KEY, 0, r)
    assert _counts(counts) == {
        "partitions": 3,
        "offline": 1,
        "imbalanced": 2,
        "fenced": 1,
        "active": 1,
        "controlled_shutdown": 1,
        "topics": 1,
    }
    assert counts.metadata_errors == 2
    apply(image, 20, 9, 0, RemoveTopicRecord(topic_id=t))
    assert (counts.partitions, counts.offline, counts.imbalanced, counts.topics) == (0, 0, 0, 0)


def test_a_replaced_image_is_recounted() -> None:
    image = MetadataImage()
    counts = MetadataCounts()
    apply = counts.wrap(apply_record)
    apply(image, 0, 2, 0, TopicRecord(name="a", topic_id=TOPICS[0]))
    other = image.copy()
    apply_record(other, 1, 3, 0, PartitionRecord(partition_id=0, topic_id=TOPICS[0], replicas=[1], leader=-1))
    counts.sync(other)  # e.g. a snapshot was loaded
    assert (counts.partitions, counts.offline) == (1, 1)


def test_an_image_taken_inside_a_transaction_is_recounted_at_its_end() -> None:
    image = MetadataImage()
    apply_record(image, 0, 2, 0, TopicRecord(name="a", topic_id=TOPICS[0]))
    apply_record(image, 1, 23, 0, BeginTransactionRecord(name="t"))
    apply_record(image, 2, 3, 0, PartitionRecord(partition_id=0, topic_id=TOPICS[0], replicas=[1], leader=-1))
    counts = MetadataCounts()
    counts.sync(image)  # e.g. a snapshot loaded while a transaction was open
    apply = counts.wrap(apply_record)
    apply(image, 3, 5, 0, PartitionChangeRecord(partition_id=0, topic_id=TOPICS[0], leader=1))
    apply(image, 4, 24, 0, EndTransactionRecord())
    assert (counts.partitions, counts.offline, counts.imbalanced, counts.metadata_errors) == (1, 0, 0, 0)
