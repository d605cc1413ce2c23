"""The requests a Kafka 4.3.1 broker sends its controllers, as the swarm sends them (kraft-swarm, docs/SWARM.md).

Contracts:
1. :func:`registration` is what ``BrokerLifecycleManager`` sends: the broker's id, the cluster id, a fresh
   incarnation id, one PLAINTEXT listener, every feature the broker can run with its (min, max) range
   (metadata.version from its minimum to the latest level), no rack, one online log directory, and
   PreviousBrokerEpoch -1 (no clean shutdown before).
2. :func:`heartbeat` carries the highest metadata offset the broker has replayed (committed and fetched),
   WantFence until the broker is ready to unfence and WantShutDown during a controlled shutdown.
3. :func:`observer_fetch` is the KRaft observer's Fetch of ``__cluster_metadata``: the broker's own id as
   ReplicaId (a broker has a node id), its metadata directory id, the leader epoch it knows, the offset and
   epoch of its last fetched batch, and the high watermark it knows (KIP-1166); ``max_wait_ms`` is Raft's
   500 ms long poll.
4. :func:`alter_partition` is a partition leader's ISR change: the leader epoch and partition epoch it knows and
   the proposed ISR with each member's broker epoch (NewIsrWithEpochs: v3, what a 4.3.1 broker sends).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping

from generated.alter_partition_request import AlterPartitionRequest, BrokerState, PartitionData, TopicData
from generated.broker_heartbeat_request import BrokerHeartbeatRequest
from generated.broker_registration_request import BrokerRegistrationRequest, Feature, Listener
from generated.create_topics_request import CreatableTopic, CreateTopicsRequest
from kraftd.controller.features import supported_ranges
from kraftd.core.log import OffsetAndEpoch
from kraftd.core.messages import fetch_request, fetch_snapshot_request
from kraftd.core.types import ReplicaKey

FETCH_MAX_WAIT_MS = 500  # KafkaRaftClient's long poll
FETCH_MAX_BYTES = 8 * 1024 * 1024
SNAPSHOT_MAX_BYTES = 8 * 1024 * 1024
PLAINTEXT = 0


def features() -> list[Feature]:
    return [
        Feature(name=name, min_supported_version=lo, max_supported_version=hi)
        for name, (lo, hi) in sorted(supported_ranges().items())
    ]


def registration(
    broker_id: int, cluster_id: str, incarnation: uuid.UUID, port: int, log_dir: uuid.UUID
) -> BrokerRegistrationRequest:
    """Contract 1."""
    return BrokerRegistrationRequest(
        broker_id=broker_id,
        cluster_id=cluster_id,
        incarnation_id=incarnation,
        listeners=[Listener(name="PLAINTEXT", host="127.0.0.1", port=port, security_protocol=PLAINTEXT)],
        features=features(),
        rack=None,
        is_migrating_zk_broker=False,
        log_dirs=[log_dir],
        previous_broker_epoch=-1,
    )


def heartbeat(
    broker_id: int, epoch: int, offset: int, *, want_fence: bool, want_shut_down: bool
) -> BrokerHeartbeatRequest:
    """Contract 2."""
    return BrokerHeartbeatRequest(
        broker_id=broker_id,
        broker_epoch=epoch,
        current_metadata_offset=offset,
        want_fence=want_fence,
        want_shut_down=want_shut_down,
        offline_log_dirs=[],
    )


def observer_fetch(
    cluster_id: str, broker_id: int, directory: uuid.UUID, epoch: int, offset: int, last_epoch: int, hwm: int
) -> object:
    """Contract 3."""
    return fetch_request(
        cluster_id,
        ReplicaKey(broker_id, directory),
        epoch,
        offset,
        last_epoch,
        FETCH_MAX_WAIT_MS,
        FETCH_MAX_BYTES,
        hwm,
    )


def snapshot_fetch(
    cluster_id: str, broker_id: int, directory: uuid.UUID, epoch: int, snapshot: OffsetAndEpoch, position: int
) -> object:
    return fetch_snapshot_request(
        cluster_id, ReplicaKey(broker_id, directory), epoch, snapshot, position, SNAPSHOT_MAX_BYTES
    )


def alter_partition(
    broker_id: int,
    epoch: int,
    topic_id: uuid.UUID,
    partition: int,
    leader_epoch: int,
    partition_epoch: int,
    isr: Iterable[int],
    epochs: Mapping[int, int],
) -> AlterPartitionRequest:
    """Contract 4."""
    part = PartitionData(
        partition_index=partition,
        leader_epoch=leader_epoch,
        new_isr_with_epochs=[BrokerState(broker_id=b, broker_epoch=epochs.get(b, -1)) for b in isr],
        leader_recovery_state=0,
        partition_epoch=partition_epoch,
    )
    return AlterPartitionRequest(
        broker_id=broker_id, broker_epoch=epoch, topics=[TopicData(topic_id=topic_id, partitions=[part])]
    )


def create_topics(
    names: Iterable[str], partitions: int, rf: int, timeout_ms: int = 60000
) -> CreateTopicsRequest:
    """One admin CreateTopics request (the controller places the replicas)."""
    topics = [CreatableTopic(name=n, num_partitions=partitions, replication_factor=rf) for n in names]
    return CreateTopicsRequest(topics=topics, timeout_ms=timeout_ms, validate_only=False)
