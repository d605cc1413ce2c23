"""Builders for the sans-IO controller tests: an image at a metadata.version, registered and heartbeating
brokers, one topic with one partition, reassignments and ISR changes, encoded records applied or replayed."""

from __future__ import annotations

import uuid
from typing import Any

from generated.alter_partition_reassignments_request import (
    AlterPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
)
from generated.alter_partition_request import AlterPartitionRequest, BrokerState, PartitionData, TopicData
from generated.broker_heartbeat_request import BrokerHeartbeatRequest
from generated.broker_registration_request import BrokerRegistrationRequest, Feature, Listener
from generated.feature_level_record import FeatureLevelRecord
from generated.partition_record import PartitionRecord
from generated.topic_record import TopicRecord
from kraftd.controller import brokers, partitions, reassign
from kraftd.controller.apply import apply_record
from kraftd.controller.image import MetadataImage
from kraftd.controller.machine import MetadataController
from kwire.metadata_frame import decode_metadata_record

CLUSTER = "AAAAAAAAAAAAAAAAAAAAAQ"
TID = uuid.UUID(int=77)  # the topic id of topic()


def apply_records(image: MetadataImage, records: list[Any]) -> None:
    for r in records:
        apply_record(image, image.offset + 1, type(r).API_KEY, type(r).HIGHEST_VERSION, r)


def base_image() -> MetadataImage:
    image = MetadataImage()
    apply_records(image, [FeatureLevelRecord(name="metadata.version", feature_level=30)])
    return image


def registration(bid: int, inc: int = 1, mv: tuple[int, int] = (7, 30)) -> BrokerRegistrationRequest:
    return BrokerRegistrationRequest(
        broker_id=bid,
        cluster_id=CLUSTER,
        incarnation_id=uuid.UUID(int=inc),
        listeners=[Listener(name="PLAINTEXT", host="127.0.0.1", port=9000 + bid, security_protocol=0)],
        features=[Feature(name="metadata.version", min_supported_version=mv[0], max_supported_version=mv[1])],
        log_dirs=[uuid.UUID(int=500 + bid)],
    )


def heartbeat(image: MetadataImage, bid: int, **kw: Any) -> BrokerHeartbeatRequest:
    b = image.brokers[bid]
    kw.setdefault("current_metadata_offset", image.offset)
    return BrokerHeartbeatRequest(broker_id=bid, broker_epoch=b.epoch, **kw)


def cluster(n: int) -> tuple[MetadataImage, brokers.Heartbeats]:
    """An image with brokers 1..n registered and unfenced."""
    image, hb = base_image(), brokers.Heartbeats()
    for bid in range(1, n + 1):
        out = brokers.register(image, registration(bid), CLUSTER, hb, 0)
        apply_records(image, out.records)
        out = brokers.heartbeat(image, heartbeat(image, bid), hb, 0)
        apply_records(image, out.records)
        assert not out.is_fenced
    return image, hb


def topic(image: MetadataImage, replicas: list[int], isr: list[int], leader: int, name: str = "t") -> None:
    apply_records(image, [TopicRecord(name=name, topic_id=TID)])
    apply_records(
        image,
        [PartitionRecord(partition_id=0, topic_id=TID, replicas=replicas, isr=isr, leader=leader)],
    )


def partition(image: MetadataImage) -> Any:
    return image.topics[TID].partitions[0]


def reassignment(image: MetadataImage, target: list[int] | None, allow_rf: bool = True, pid: int = 0) -> Any:
    req = AlterPartitionReassignmentsRequest(
        allow_replication_factor_change=allow_rf,
        topics=[
            ReassignableTopic(
                name="t", partitions=[ReassignablePartition(partition_index=pid, replicas=target)]
            )
        ],
    )
    records, results = reassign.alter_reassignments(image, req)
    return records, results[0][1][0]


def alter_isr(image: MetadataImage, sender: int, isr: list[int]) -> Any:
    p, b = partition(image), image.brokers
    req = AlterPartitionRequest(
        broker_id=sender,
        broker_epoch=b[sender].epoch,
        topics=[
            TopicData(
                topic_id=TID,
                partitions=[
                    PartitionData(
                        partition_index=0,
                        leader_epoch=p.leader_epoch,
                        partition_epoch=p.partition_epoch,
                        new_isr_with_epochs=[BrokerState(broker_id=r, broker_epoch=b[r].epoch) for r in isr],
                    )
                ],
            )
        ],
    )
    return partitions.alter_partition(image, req, 3)


def append_encoded(m: MetadataController, records: list[object]) -> None:
    """Encode ``records`` as ``m`` writes them and apply the decoded values to its committed image."""
    for value in m.encode(records):  # raises MessageEncodeError if a field does not exist at that version
        key, version, rec = decode_metadata_record(value)
        apply_record(m.committed, m.committed.offset + 1, key, version, rec)


def heartbeat_request(broker_id: int, epoch: int, offset: int) -> object:
    return BrokerHeartbeatRequest(broker_id=broker_id, broker_epoch=epoch, current_metadata_offset=offset)


def replay(image: MetadataImage, values: list[bytes], start: int = 0) -> None:
    for i, value in enumerate(values):
        key, version, rec = decode_metadata_record(value)
        apply_record(image, start + i, key, version, rec)
