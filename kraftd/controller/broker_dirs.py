"""Removing a broker's registration, and where a broker's replicas live (JBOD log directories).

Pure functions of the latest (uncommitted) image, returning the records to append as one atomic batch and the
answer to give once they commit. Semantics of Kafka 4.3.1's ReplicationControlManager (unregisterBroker,
handleAssignReplicasToDirs) and ClusterControlManager:

1. UnregisterBroker: an id with no registration -> BROKER_ID_NOT_REGISTERED ("Broker ID N is not currently
   registered"). Otherwise the broker first leaves every ISR holding it, and with ELR on every partition whose
   ELR holds it is re-decided without it as a candidate (kraftd.controller.brokers contract 6 and
   ``leave_partitions``: one change each, in topic-name order), then an UnregisterBrokerRecord names its id
   and current broker epoch. A live broker so removed learns it at its next heartbeat
   (BROKER_ID_NOT_REGISTERED) and registers again.
2. AssignReplicasToDirs needs metadata.version 3.7-IV2 or later (UNSUPPORTED_VERSION before); the broker must
   be registered (BROKER_ID_NOT_REGISTERED) at the epoch it names (STALE_BROKER_EPOCH). Per partition: a topic
   id naming no topic -> UNKNOWN_TOPIC_ID, a partition the topic lacks -> UNKNOWN_TOPIC_OR_PARTITION, a
   partition the broker does not replicate -> NOT_LEADER_OR_FOLLOWER; otherwise the partition's Directories
   entry of that broker becomes the directory (kraftd.controller.change contract 6).
3. A directory the broker's registration does not list as online is an offline one: after the assignments, the
   broker leaves the ISR of every partition so assigned (as in 1, ELR rules included), so it cannot lead a
   replica it cannot serve.
4. Results repeat the request's shape (directory, topic, partition) in request order.
"""

from __future__ import annotations

import uuid
from typing import Any

from generated.assign_replicas_to_dirs_request import AssignReplicasToDirsRequest
from generated.unregister_broker_record import UnregisterBrokerRecord
from kraftd.controller import brokers, change
from kraftd.controller.features import MV_DIRECTORIES
from kraftd.controller.image import MetadataImage
from kwire.errors import ErrorCode

# (directory id, [(topic id, [(partition, error)])]) in request order (contract 4).
DirResults = list[tuple[uuid.UUID, list[tuple[uuid.UUID, list[tuple[int, ErrorCode]]]]]]


def not_registered(broker_id: int) -> str:
    return f"Broker ID {broker_id} is not currently registered"


def unregister(image: MetadataImage, broker_id: int) -> tuple[list[Any], ErrorCode, str | None]:
    """Contract 1: (records, error, message)."""
    b = image.brokers.get(broker_id)
    if b is None:
        return [], ErrorCode.BROKER_ID_NOT_REGISTERED, not_registered(broker_id)
    records = brokers.leave_partitions(image, broker_id)
    records.append(UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=b.epoch))
    return records, ErrorCode.NONE, None


def assign_replicas_to_dirs(
    image: MetadataImage, req: AssignReplicasToDirsRequest
) -> tuple[list[Any], ErrorCode, DirResults]:
    """Contracts 2-4: (records, top-level error, per-partition results)."""
    if image.metadata_version < MV_DIRECTORIES:
        return [], ErrorCode.UNSUPPORTED_VERSION, []
    bid = req.broker_id
    b = image.brokers.get(bid)
    if b is None:
        return [], ErrorCode.BROKER_ID_NOT_REGISTERED, []
    if b.epoch != req.broker_epoch:
        return [], ErrorCode.STALE_BROKER_EPOCH, []
    records: list[Any] = []
    offline: dict[tuple[Any, int], None] = {}  # in request order, each partition once
    results: DirResults = []
    for d in req.directories:
        online = d.id in b.log_dirs
        topics_out = []
        for t in d.topics:
            topic = image.topics.get(t.topic_id)
            parts_out = []
            for rp in t.partitions:
                pid = rp.partition_index
                p = topic.partitions.get(pid) if topic is not None else None
                if topic is None:
                    code = ErrorCode.UNKNOWN_TOPIC_ID
                elif p is None:
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif bid not in p.replicas:
                    code = ErrorCode.NOT_LEADER_OR_FOLLOWER
                else:
                    code = ErrorCode.NONE
                    record = change.build(image, t.topic_id, pid, p, directory=(bid, d.id))
                    if record is not None:
                        records.append(record)
                    if not online:
                        offline[(t.topic_id, pid)] = None
                parts_out.append((pid, code))
            topics_out.append((t.topic_id, parts_out))
        results.append((d.id, topics_out))
    if offline:
        records += brokers.partition_changes(image, list(offline), remove=bid)
    return records, ErrorCode.NONE, results
