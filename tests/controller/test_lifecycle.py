"""Broker lifecycle and topic writes of the state machine, driven as pure functions (no IO).

Each test builds an image only by applying records (the one apply function), asks the controller logic for the
records of a request, applies them, and checks the resulting image and answer against Kafka's semantics
(kraftd.controller.brokers and kraftd.controller.topics contracts)."""

from __future__ import annotations

import random
import uuid

from generated.broker_heartbeat_request import BrokerHeartbeatRequest
from generated.create_topics_request import CreatableReplicaAssignment, CreatableTopic, CreateTopicsRequest
from kraftd.controller import brokers, topics
from kwire.errors import ErrorCode
from tests.helpers.controller import CLUSTER
from tests.helpers.controller import apply_records as _apply
from tests.helpers.controller import base_image as _image
from tests.helpers.controller import cluster as _cluster
from tests.helpers.controller import heartbeat as _hb
from tests.helpers.controller import registration as _reg


def test_registration_checks() -> None:
    image, hb = _image(), brokers.Heartbeats()
    bad = _reg(1)
    bad.cluster_id = "other"
    assert brokers.register(image, bad, CLUSTER, hb, 0).error == ErrorCode.INCONSISTENT_CLUSTER_ID
    assert brokers.register(image, _reg(1, mv=(7, 29)), CLUSTER, hb, 0).error == ErrorCode.UNSUPPORTED_VERSION
    out = brokers.register(image, _reg(1), CLUSTER, hb, 0)
    _apply(image, out.records)
    assert image.brokers[1].fenced and image.brokers[1].epoch == out.broker_epoch
    # Another incarnation while the first is alive is a duplicate; after the session it may take over.
    assert (
        brokers.register(image, _reg(1, inc=2), CLUSTER, hb, 1000).error
        == ErrorCode.DUPLICATE_BROKER_REGISTRATION
    )
    again = brokers.register(image, _reg(1, inc=2), CLUSTER, hb, 20_000)
    assert again.error == ErrorCode.NONE and again.broker_epoch > out.broker_epoch


def test_registration_directories_are_checked_as_kafka_does() -> None:
    """Contract 1a: Kafka 4.3.1 refuses no, reserved, repeated and another broker's directory ids."""
    image, hb = _image(), brokers.Heartbeats()
    _apply(image, brokers.register(image, _reg(1), CLUSTER, hb, 0).records)
    bad_dirs = (
        [],
        [uuid.UUID(int=99)],  # reserved: below 100
        [uuid.UUID(int=2**64 - 1)],  # reserved: a negative least significant half
        [uuid.UUID(int=700), uuid.UUID(int=700)],
        [uuid.UUID(int=501)],  # broker 1's
    )
    for dirs in bad_dirs:
        req = _reg(2)
        req.log_dirs = dirs
        assert brokers.register(image, req, CLUSTER, hb, 0).error == ErrorCode.INVALID_REGISTRATION, dirs
    req = _reg(1, inc=2)  # the same broker may register its own directory again (after its session)
    assert brokers.register(image, req, CLUSTER, hb, 20_000).error == ErrorCode.NONE
    assert brokers.register(image, _reg(2), CLUSTER, hb, 0).error == ErrorCode.NONE
    assert not brokers.reserved_directory(uuid.UUID(int=100)) and not brokers.reserved_directory(
        uuid.UUID(int=2**64)
    )


def test_unfenced_only_after_catching_up_and_stale_epochs_refused() -> None:
    image, hb = _image(), brokers.Heartbeats()
    _apply(image, brokers.register(image, _reg(1), CLUSTER, hb, 0).records)
    behind = brokers.heartbeat(image, _hb(image, 1, current_metadata_offset=0), hb, 0)
    assert behind.records == [] and behind.is_fenced and not behind.is_caught_up
    stale = BrokerHeartbeatRequest(broker_id=1, broker_epoch=image.brokers[1].epoch - 1)
    assert brokers.heartbeat(image, stale, hb, 0).error == ErrorCode.STALE_BROKER_EPOCH
    unknown = BrokerHeartbeatRequest(broker_id=9, broker_epoch=0)
    assert brokers.heartbeat(image, unknown, hb, 0).error == ErrorCode.BROKER_ID_NOT_REGISTERED
    out = brokers.heartbeat(image, _hb(image, 1), hb, 0)
    _apply(image, out.records)
    assert not image.brokers[1].fenced and not out.is_fenced


def test_placement_and_topic_errors() -> None:
    image, _ = _cluster(3)
    req = CreateTopicsRequest(
        topics=[
            CreatableTopic(name="a", num_partitions=6, replication_factor=3),
            CreatableTopic(name="b", num_partitions=1, replication_factor=4),
            CreatableTopic(name="bad/name", num_partitions=1, replication_factor=1),
            CreatableTopic(name="a", num_partitions=1, replication_factor=1),
            CreatableTopic(name="c", num_partitions=0, replication_factor=1),
            CreatableTopic(
                name="d",
                num_partitions=-1,
                replication_factor=-1,
                assignments=[CreatableReplicaAssignment(partition_index=0, broker_ids=[3, 1])],
            ),
        ]
    )
    records, results = topics.create_topics(image, req, random.Random(1))
    codes = [(r.name, r.error) for r in results]
    assert codes == [
        ("a", ErrorCode.NONE),
        ("b", ErrorCode.INVALID_REPLICATION_FACTOR),
        ("bad/name", ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("a", ErrorCode.TOPIC_ALREADY_EXISTS),
        ("c", ErrorCode.INVALID_PARTITIONS),
        ("d", ErrorCode.NONE),
    ]
    assert "only 3 broker(s) are registered" in (results[1].message or "")
    _apply(image, records)
    a = image.topics[image.topic_ids["a"]]
    assert len(a.partitions) == 6
    leaders = [p.leader for p in a.partitions.values()]
    assert sorted(set(leaders)) == [1, 2, 3]  # leadership striped over every broker
    for p in a.partitions.values():
        assert sorted(p.replicas) == [1, 2, 3] and p.isr == p.replicas and p.leader == p.replicas[0]
        assert p.directories == [uuid.UUID(int=500 + b) for b in p.replicas]
    assert image.topics[image.topic_ids["d"]].partitions[0].replicas == [3, 1]
    again, res = topics.create_topics(
        image, CreateTopicsRequest(topics=[CreatableTopic("a", 1, 1)]), random.Random(1)
    )
    assert again == [] and res[0].error == ErrorCode.TOPIC_ALREADY_EXISTS


def test_fencing_moves_leaders_and_shrinks_isr() -> None:
    image, hb = _cluster(3)
    records, _ = topics.create_topics(
        image, CreateTopicsRequest(topics=[CreatableTopic("t", 3, 3)]), random.Random(2)
    )
    _apply(image, records)
    t = image.topics[image.topic_ids["t"]]
    before = {pid: (p.leader, p.leader_epoch, p.partition_epoch) for pid, p in t.partitions.items()}
    assert brokers.expired(image, hb, 5_000) == []
    for bid in (1, 3):
        hb.touch(bid, 9_500)
    assert brokers.expired(image, hb, 10_000) == [2]
    taken = image.copy()
    _apply(image, brokers.fence(image, 2))
    assert image.brokers[2].fenced
    t = taken.topics[taken.topic_ids["t"]]  # the image is persistent: a copy taken before is the old state
    assert {pid: (p.leader, p.leader_epoch, p.partition_epoch) for pid, p in t.partitions.items()} == before
    t = image.topics[image.topic_ids["t"]]
    for pid, p in t.partitions.items():
        assert 2 not in p.isr and p.leader != 2 and p.leader in p.isr
        assert p.partition_epoch == before[pid][2] + 1
        assert p.leader_epoch == before[pid][1] + (1 if before[pid][0] == 2 else 0)


def test_controlled_shutdown_moves_leadership_then_allows_shutdown() -> None:
    image, hb = _cluster(2)
    _apply(
        image,
        topics.create_topics(
            image, CreateTopicsRequest(topics=[CreatableTopic("t", 4, 2)]), random.Random(3)
        )[0],
    )
    first = brokers.heartbeat(image, _hb(image, 1, want_shut_down=True), hb, 0)
    _apply(image, first.records)
    assert image.brokers[1].in_controlled_shutdown
    t = image.topics[image.topic_ids["t"]]
    assert all(p.leader == 2 and p.isr == [2] for p in t.partitions.values())
    assert not first.should_shut_down and not image.brokers[1].fenced
    # Broker 2 (the new leader of every partition) has not yet reported an offset past the moves: wait.
    waiting = brokers.heartbeat(image, _hb(image, 1, want_shut_down=True), hb, 0)
    assert waiting.records == [] and not waiting.should_shut_down and not waiting.is_fenced
    _apply(
        image,
        brokers.heartbeat(image, _hb(image, 2, current_metadata_offset=image.offset - 1), hb, 0).records,
    )
    assert not brokers.heartbeat(image, _hb(image, 1, want_shut_down=True), hb, 0).should_shut_down
    _apply(image, brokers.heartbeat(image, _hb(image, 2), hb, 0).records)  # caught up with the moves
    second = brokers.heartbeat(image, _hb(image, 1, want_shut_down=True), hb, 0)
    _apply(image, second.records)
    assert second.should_shut_down and image.brokers[1].fenced


def test_controlled_shutdown_waits_only_for_active_brokers() -> None:
    """Kafka's lowest-active-offset rule counts unfenced brokers that are not shutting down themselves; a new
    leader that never saw the shutdown start takes its image's offset as the target."""
    image, hb = _cluster(3)
    _apply(
        image,
        topics.create_topics(
            image, CreateTopicsRequest(topics=[CreatableTopic("t", 3, 3)]), random.Random(5)
        )[0],
    )
    _apply(image, brokers.heartbeat(image, _hb(image, 1, want_shut_down=True), hb, 0).records)
    _apply(image, brokers.fence(image, 3))  # broker 3 is fenced: it does not hold broker 1 back
    _apply(image, brokers.heartbeat(image, _hb(image, 2), hb, 0).records)
    assert brokers.heartbeat(image, _hb(image, 1, want_shut_down=True), hb, 0).should_shut_down
    fresh = brokers.Heartbeats()  # a new leader: no offsets heard yet
    assert not brokers.heartbeat(image, _hb(image, 1, want_shut_down=True), fresh, 0).should_shut_down
    brokers.heartbeat(image, _hb(image, 2), fresh, 0)
    assert brokers.heartbeat(image, _hb(image, 1, want_shut_down=True), fresh, 0).should_shut_down


def test_producer_id_blocks_are_disjoint() -> None:
    image, _ = _cluster(2)
    starts = []
    for bid in (1, 2, 1):
        records, error, start = brokers.allocate_producer_ids(image, bid, image.brokers[bid].epoch)
        assert error == ErrorCode.NONE
        _apply(image, records)
        starts.append(start)
    assert starts == [0, 1000, 2000]
    assert brokers.allocate_producer_ids(image, 1, -5)[1] == ErrorCode.STALE_BROKER_EPOCH
