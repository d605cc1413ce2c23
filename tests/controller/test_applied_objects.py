"""The leader applies the record objects it framed, not the bytes it encoded (kraftd.controller.machine contract
3b, issue 23).

Invariants:
1. For every record type (tests.helpers.controller.records, at every metadata.version of MVS) applying the
   object the leader framed and applying what a replica decodes from the framed bytes give the same outcome
   and images with the same checksum; the frame is at the version Kafka writes for that metadata.version.
2. End to end through the machine: records produced by the controller operations (kraftd.controller.ops)
   written by an active leader (frame, append_records_later, latest) give the uncommitted image a replica
   builds by replaying the same bytes as committed batches.
"""

from __future__ import annotations

import random
import uuid
from typing import Any

from hypothesis import given, settings

from generated.create_topics_request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
from generated.delete_topics_request import DeleteTopicsRequest
from generated.elect_leaders_request import ElectLeadersRequest
from generated.feature_level_record import FeatureLevelRecord
from kraftd.controller import brokers
from kraftd.controller.apply import apply_record
from kraftd.controller.features import record_version
from kraftd.controller.image import MetadataImage
from kraftd.controller.machine import MetadataController
from kraftd.controller.ops import brokers as broker_ops
from kraftd.controller.ops import partitions as partition_ops
from kraftd.controller.ops import topics as topic_ops
from kraftd.core.log import LogBatch
from kwire.metadata_frame import decode_metadata_record, encode_record
from kwire.records import build_data_batch
from tests.helpers.controller import CLUSTER, heartbeat, logs, registration


def _apply(image: MetadataImage, offset: int, key: int, version: int, obj: Any) -> str | None:
    try:
        apply_record(image, offset, key, version, obj)
    except Exception as exc:  # noqa: BLE001 - both sides must fail alike
        return type(exc).__name__
    return None


@settings(max_examples=200, deadline=None)
@given(logs())
def test_the_framed_object_applies_as_its_decoded_bytes(log: tuple[int, list[Any]]) -> None:
    """Invariant 1."""
    mv, records = log
    m = MetadataController(1, [encode_record(FeatureLevelRecord(name="metadata.version", feature_level=mv))])
    values, framed = m.frame(records)
    assert [obj for _, _, obj in framed] == records
    leader, replica = MetadataImage(), MetadataImage()
    for offset, ((key, version, obj), value) in enumerate(zip(framed, values, strict=True)):
        assert version == record_version(key, mv)
        decoded = decode_metadata_record(value)
        assert decoded[:2] == (key, version)
        assert _apply(leader, offset, key, version, obj) == _apply(replica, offset, *decoded)
        assert leader.checksum() == replica.checksum(), type(obj).__name__


def _batch(offset: int, values: list[bytes]) -> LogBatch:
    data = build_data_batch(values, base_offset=offset, partition_leader_epoch=1, timestamp=0)
    return LogBatch(offset, offset + len(values) - 1, 1, data)


def test_ops_records_written_by_the_leader_match_a_replica() -> None:
    """Invariant 2."""
    bootstrap = [encode_record(FeatureLevelRecord(name="metadata.version", feature_level=30))]
    leader, replica = MetadataController(1, bootstrap), MetadataController(2, bootstrap)
    leader.become_leader(1, 0)
    hb, rng, offset = brokers.Heartbeats(), random.Random(7), 0

    def write(records: Any) -> None:
        nonlocal offset
        values, framed = leader.frame(list(records))
        if values:
            leader.append_records_later(offset, framed)
            replica.replay([_batch(offset, values)], offset + len(values))
            offset += len(values)
        assert leader.latest().checksum() == replica.committed.checksum()

    activation = leader.activation_records()
    assert activation
    write(activation)
    for bid in (1, 2, 3):
        write(broker_ops.register_broker(leader.latest(), registration(bid), CLUSTER, hb, 0).records)
        write(broker_ops.heartbeat(leader.latest(), heartbeat(leader.latest(), bid), hb, 0).records)
    configs = [CreatableTopicConfig(name="cleanup.policy", value="compact")]
    topics = [
        CreatableTopic(name=f"t{i}", num_partitions=4, replication_factor=3, configs=configs) for i in (1, 2)
    ]
    result = topic_ops.create_topics(leader.latest(), CreateTopicsRequest(topics=topics), rng)
    assert len(result.done) == 2 and result.response.topics[0].num_partitions == 4
    write(result.records)
    write(brokers.fence(leader.latest(), 1))  # leaders move, ISRs shrink
    election = ElectLeadersRequest(election_type=0, topic_partitions=None)
    write(partition_ops.elect_leaders(leader.latest(), election, 2).records)
    assert isinstance(leader.latest().topic_ids.get("t2"), uuid.UUID)
    write(topic_ops.delete_topics(leader.latest(), DeleteTopicsRequest(topic_names=["t1"])).records)
    assert set(leader.latest().topic_ids) == {"t2"}
