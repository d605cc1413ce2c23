"""ElectLeaders, partition reassignments, legacy AlterConfigs and rack-aware placement on the sans-IO controller.

Images are built only by applying records; each request's records are applied back and the resulting image and
answers are checked against Kafka 4.3.1's semantics (kraftd.controller.elect / reassign / configs / placement)."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from generated.alter_configs_request import AlterableConfig, AlterConfigsRequest, AlterConfigsResource
from generated.config_record import ConfigRecord
from generated.create_topics_request import CreatableTopic, CreateTopicsRequest
from generated.elect_leaders_request import ElectLeadersRequest, TopicPartitions
from generated.list_partition_reassignments_request import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsTopics,
)
from kraftd.controller import brokers, configs, elect, placement, reassign, topics
from kraftd.controller.image import MetadataImage
from kwire.errors import ErrorCode
from tests.helpers.controller import CLUSTER
from tests.helpers.controller import alter_isr as _alter_isr
from tests.helpers.controller import apply_records as _apply
from tests.helpers.controller import base_image as _image
from tests.helpers.controller import cluster as _cluster
from tests.helpers.controller import heartbeat as _hb
from tests.helpers.controller import partition as _p
from tests.helpers.controller import reassignment as _reassign
from tests.helpers.controller import registration as _reg
from tests.helpers.controller import topic as _topic

E = ErrorCode


def _fence(image: MetadataImage, bid: int) -> None:
    _apply(image, brokers.fence(image, bid))


def _elect(image: MetadataImage, kind: int, parts: dict[str, list[int]] | None) -> tuple[list[Any], Any]:
    req = ElectLeadersRequest(
        election_type=kind,
        topic_partitions=None
        if parts is None
        else [TopicPartitions(topic=t, partitions=ps) for t, ps in parts.items()],
    )
    return elect.elect_leaders(image, req)


# ---- ElectLeaders ---------------------------------------------------------------------------------------------
def test_preferred_election_moves_leadership_back_then_is_not_needed() -> None:
    image, _ = _cluster(3)
    _topic(image, [1, 2, 3], [1, 2, 3], leader=2)
    epoch = _p(image).leader_epoch
    records, results = _elect(image, elect.change.PREFERRED, {"t": [0], "nope": [0]})
    assert results == [
        ("t", [(0, E.NONE, None)]),
        ("nope", [(0, E.UNKNOWN_TOPIC_OR_PARTITION, "No such topic as nope")]),
    ]
    _apply(image, records)
    assert _p(image).leader == 1 and _p(image).leader_epoch == epoch + 1
    records, results = _elect(image, elect.change.PREFERRED, {"t": [0, 5]})
    assert records == []
    assert [(pid, code) for pid, code, _ in results[0][1]] == [
        (0, E.ELECTION_NOT_NEEDED),
        (5, E.UNKNOWN_TOPIC_OR_PARTITION),
    ]


def test_preferred_not_available_when_fenced_or_out_of_isr() -> None:
    image, _ = _cluster(3)
    _topic(image, [1, 2, 3], [2, 3], leader=2)  # preferred replica 1 is not in the ISR
    assert _elect(image, 0, {"t": [0]})[1][0][1][0][1] == E.PREFERRED_LEADER_NOT_AVAILABLE
    image2, _ = _cluster(3)
    _topic(image2, [1, 2, 3], [1, 2, 3], leader=2)
    _fence(image2, 1)  # fenced preferred replica: leaves the ISR; the current leader 2 stays
    records, results = _elect(image2, 0, {"t": [0]})
    assert records == [] and results[0][1][0][1] == E.PREFERRED_LEADER_NOT_AVAILABLE


def test_preferred_election_of_an_offline_partition_takes_another_isr_member() -> None:
    image, _ = _cluster(3)
    _topic(image, [1, 2, 3], [1, 2], leader=-1)
    _fence(image, 1)
    records, results = _elect(image, 0, {"t": [0]})
    assert results[0][1][0][1] == E.NONE
    _apply(image, records)
    assert _p(image).leader == 2


def test_unclean_election() -> None:
    image, _ = _cluster(3)
    _topic(image, [1, 2, 3], [1, 2, 3], leader=1)
    assert _elect(image, 1, {"t": [0]})[1][0][1][0][1] == E.ELECTION_NOT_NEEDED
    image, _ = _cluster(3)
    _topic(image, [1, 2, 3], [1], leader=1)
    _fence(image, 1)  # last ISR member: stays in the ISR, the partition goes offline
    assert _p(image).leader == -1 and _p(image).isr == [1]
    records, results = _elect(image, 1, {"t": [0]})
    assert results[0][1][0][1] == E.NONE
    _apply(image, records)
    p = _p(image)
    assert (p.leader, p.isr, p.leader_recovery_state) == (2, [2], 1)
    image, _ = _cluster(1)
    _topic(image, [1], [1], leader=1)
    _fence(image, 1)
    assert _elect(image, 1, {"t": [0]})[1][0][1][0][1] == E.ELIGIBLE_LEADERS_NOT_AVAILABLE


def test_all_partitions_leaves_out_elections_not_needed() -> None:
    image, _ = _cluster(3)
    _topic(image, [1, 2, 3], [1, 2, 3], leader=1, name="a")
    records, results = _elect(image, 0, None)
    assert records == [] and results == [("a", [])]


def test_rebalance_moves_only_to_a_live_preferred_replica() -> None:
    image, _ = _cluster(3)
    _topic(image, [1, 2, 3], [1, 2, 3], leader=3)
    records = elect.rebalance(image)
    assert [r.leader for r in records] == [1]
    _apply(image, records)
    assert elect.rebalance(image) == []
    image, _ = _cluster(3)
    _topic(image, [1, 2, 3], [2, 3], leader=3)
    assert elect.rebalance(image) == []


# ---- reassignments --------------------------------------------------------------------------------------------


def test_reassignment_runs_lists_and_completes_on_isr_catch_up() -> None:
    image, _ = _cluster(3)
    _topic(image, [1, 2], [1, 2], leader=1)
    records, (_, code, _) = _reassign(image, [2, 3])
    assert code == E.NONE
    _apply(image, records)
    p = _p(image)
    assert (p.replicas, p.adding_replicas, p.removing_replicas, p.leader) == ([2, 3, 1], [3], [1], 1)
    listed = reassign.list_reassignments(image, ListPartitionReassignmentsRequest(topics=None))
    assert [(n, [pid for pid, _ in ps]) for n, ps in listed] == [("t", [0])]
    asked = ListPartitionReassignmentsRequest(
        topics=[
            ListPartitionReassignmentsTopics(name="t", partition_indexes=[0, 9]),
            ListPartitionReassignmentsTopics(name="zz", partition_indexes=[0]),
        ]
    )
    assert [(n, [pid for pid, _ in ps]) for n, ps in reassign.list_reassignments(image, asked)] == [
        ("t", [0])
    ]
    # The leader adds 3 to the ISR: the reassignment completes, 1 (the leader) is removed, 2 leads.
    epoch = p.leader_epoch
    records, top, results = _alter_isr(image, 1, [1, 2, 3])
    assert top == E.NONE and [r[2] for r in results] == [E.NOT_LEADER_OR_FOLLOWER]
    _apply(image, records)
    p = _p(image)
    assert (p.replicas, p.isr, p.adding_replicas, p.removing_replicas) == ([2, 3], [2, 3], [], [])
    assert p.leader == 2 and p.leader_epoch == epoch + 1
    assert reassign.list_reassignments(image, ListPartitionReassignmentsRequest(topics=None)) == []


def test_reassignment_already_in_sync_completes_at_once_and_bumps_the_epoch() -> None:
    image, _ = _cluster(3)
    _topic(image, [1, 2, 3], [1, 2, 3], leader=1)
    epoch = _p(image).leader_epoch
    records, (_, code, _) = _reassign(image, [1, 2])
    _apply(image, records)
    p = _p(image)
    assert code == E.NONE and (p.replicas, p.isr, p.leader, p.leader_epoch) == ([1, 2], [1, 2], 1, epoch + 1)
    records, (_, code, _) = _reassign(image, [1, 2])  # nothing to change: still one (empty) change record
    assert code == E.NONE and len(records) == 1 and records[0].replicas is None and records[0].leader == -2


def test_cancel_reverts_and_errors() -> None:
    image, _ = _cluster(4)
    _topic(image, [1, 2], [1, 2], leader=1)
    assert _reassign(image, None)[1] == (
        0,
        E.NO_REASSIGNMENT_IN_PROGRESS,
        "No partition reassignment is in progress.",
    )
    _apply(image, _reassign(image, [3, 4])[0])
    records, (_, code, _) = _reassign(image, None)
    assert code == E.NONE
    _apply(image, records)
    p = _p(image)
    assert (p.replicas, p.isr, p.adding_replicas, p.removing_replicas, p.leader) == (
        [1, 2],
        [1, 2],
        [],
        [],
        1,
    )
    assert _reassign(image, [])[1][1] == E.INVALID_REPLICA_ASSIGNMENT
    assert _reassign(image, [1, 1])[1][1] == E.INVALID_REPLICA_ASSIGNMENT
    assert _reassign(image, [1, 9])[1][1] == E.INVALID_REPLICA_ASSIGNMENT
    assert _reassign(image, [1, 2, 3], allow_rf=False)[1][1] == E.INVALID_REPLICATION_FACTOR
    assert _reassign(image, [3, 4], allow_rf=False)[1][1] == E.NONE
    assert _reassign(image, [1, 2], pid=4)[1][1] == E.UNKNOWN_TOPIC_OR_PARTITION


# ---- AlterConfigs ---------------------------------------------------------------------------------------------
def _alter(
    image: MetadataImage, rtype: int, name: str, cfg: dict[str, str | None], validate: bool = False
) -> Any:
    req = AlterConfigsRequest(
        validate_only=validate,
        resources=[
            AlterConfigsResource(
                resource_type=rtype,
                resource_name=name,
                configs=[AlterableConfig(name=k, value=v) for k, v in cfg.items()],
            )
        ],
    )
    records, results = configs.alter_configs(image, req)
    return records, results[0][2:]


def test_alter_configs_replaces_the_whole_set() -> None:
    image, _ = _cluster(1)
    _topic(image, [1], [1], leader=1)
    _apply(
        image,
        [
            ConfigRecord(resource_type=2, resource_name="t", name="cleanup.policy", value="compact"),
            ConfigRecord(resource_type=2, resource_name="t", name="retention.ms", value="1000"),
        ],
    )
    records, result = _alter(image, 2, "t", {"retention.ms": "1000", "segment.ms": "60000"}, validate=True)
    assert result == (E.NONE, None) and records == []
    records, result = _alter(image, 2, "t", {"retention.ms": "1000", "segment.ms": "60000"})
    assert result == (E.NONE, None)
    assert {(r.name, r.value) for r in records} == {("segment.ms", "60000"), ("cleanup.policy", None)}
    _apply(image, records)
    assert dict(image.configs[(2, "t")]) == {"retention.ms": "1000", "segment.ms": "60000"}
    # Broker resources write every given key, even unchanged ones.
    _apply(image, _alter(image, 4, "", {"min.insync.replicas": "2"})[0])
    assert len(_alter(image, 4, "", {"min.insync.replicas": "2"})[0]) == 1


@pytest.mark.parametrize(
    ("rtype", "name", "cfg", "code", "message"),
    [
        (
            2,
            "t",
            {"retention.ms": "abc"},
            E.INVALID_CONFIG,
            "Invalid value abc for configuration retention.ms: Not a number of type LONG",
        ),
        (
            2,
            "t",
            {"min.insync.replicas": "0"},
            E.INVALID_CONFIG,
            "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1",
        ),
        (2, "t", {"cleanup.policy": "compact,gone"}, E.INVALID_CONFIG, None),
        (2, "t", {"no.such": "1"}, E.INVALID_CONFIG, "Unknown topic config name: no.such"),
        (
            2,
            "t",
            {"retention.ms": None},
            E.INVALID_CONFIG,
            "Null value not supported for topic configs: retention.ms",
        ),
        (2, "t", {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, E.INVALID_CONFIG, None),
        (
            2,
            "missing",
            {"retention.ms": "1"},
            E.UNKNOWN_TOPIC_OR_PARTITION,
            "The topic 'missing' does not exist.",
        ),
        (2, "", {}, E.INVALID_REQUEST, "Default topic resources are not allowed."),
        (4, "abc", {}, E.INVALID_REQUEST, "Unable to parse broker name as a base 10 number."),
        (4, "99", {}, E.BROKER_ID_NOT_REGISTERED, "No broker with id 99 found."),
        (7, "x", {}, E.INVALID_REQUEST, None),
    ],
)
def test_alter_configs_validation(
    rtype: int, name: str, cfg: dict[str, str | None], code: E, message: str | None
) -> None:
    image, _ = _cluster(1)
    _topic(image, [1], [1], leader=1)
    records, (got, msg) = _alter(image, rtype, name, cfg)
    assert records == [] and got == code
    if message is not None:
        assert msg == message


# ---- placement ------------------------------------------------------------------------------------------------
def _racked(racks: list[str]) -> MetadataImage:
    image = _image()
    hb = brokers.Heartbeats()
    for i, rack in enumerate(racks):
        reg = _reg(i + 1)
        reg.rack = rack
        _apply(image, brokers.register(image, reg, CLUSTER, hb, 0).records)
        _apply(image, brokers.heartbeat(image, _hb(image, i + 1), hb, 0).records)
    return image


def test_rack_aware_placement_spreads_replicas_and_leaders() -> None:
    image = _racked(["a", "a", "b", "b", "c", "c"])
    req = CreateTopicsRequest(topics=[CreatableTopic(name="r", num_partitions=12, replication_factor=3)])
    records, results = topics.create_topics(image, req, random.Random(5))
    assert results[0].error == E.NONE
    parts = [r.replicas for r in records if type(r).__name__ == "PartitionRecord"]
    rack = {b: image.brokers[b].rack for b in image.brokers}
    assert all(len({rack[b] for b in p}) == 3 and len(set(p)) == 3 for p in parts)
    assert sorted(Counter(p[0] for p in parts).values()) == [2] * 6  # every broker leads twice
    again, _ = topics.create_topics(image, req, random.Random(5))
    assert [r.replicas for r in again if hasattr(r, "replicas")] == parts  # deterministic given the Random


def test_rack_aware_placement_two_racks_and_errors() -> None:
    brokers_ = [(1, "x", False), (2, "x", False), (3, "y", False), (4, "y", False)]
    for seed in range(20):
        for p in placement.place(random.Random(seed), brokers_, 8, 2):
            assert {1, 2} & set(p) and {3, 4} & set(p)
    with pytest.raises(placement.PlacementError, match="only 4 broker"):
        placement.place(random.Random(0), brokers_, 1, 5)
    with pytest.raises(placement.PlacementError, match="must be positive"):
        placement.place(random.Random(0), brokers_, 1, 0)
    with pytest.raises(placement.PlacementError, match="All brokers are currently fenced"):
        placement.place(random.Random(0), [(1, "x", True)], 1, 1)
    # Continuing a topic starts one past the racks/brokers its last partition used.
    more = placement.place(random.Random(0), brokers_, 1, 2, existing=[[3, 1]])
    assert more[0][0] in (1, 2)
