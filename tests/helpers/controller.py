"""Builders for the sans-IO controller tests: an image at a metadata.version, registered and heartbeating
brokers, one topic with one partition, reassignments and ISR changes, encoded records applied or replayed."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from hypothesis import strategies as st

from generated.abort_transaction_record import AbortTransactionRecord
from generated.access_control_entry_record import AccessControlEntryRecord
from generated.alter_partition_reassignments_request import (
    AlterPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
)
from generated.alter_partition_request import AlterPartitionRequest, BrokerState, PartitionData, TopicData
from generated.begin_transaction_record import BeginTransactionRecord
from generated.broker_heartbeat_request import BrokerHeartbeatRequest
from generated.broker_registration_change_record import BrokerRegistrationChangeRecord
from generated.broker_registration_request import BrokerRegistrationRequest, Feature, Listener
from generated.clear_elr_record import ClearElrRecord
from generated.client_quota_record import ClientQuotaRecord, EntityData
from generated.config_record import ConfigRecord
from generated.delegation_token_record import DelegationTokenRecord
from generated.end_transaction_record import EndTransactionRecord
from generated.feature_level_record import FeatureLevelRecord
from generated.no_op_record import NoOpRecord
from generated.partition_change_record import PartitionChangeRecord
from generated.partition_record import PartitionRecord
from generated.producer_ids_record import ProducerIdsRecord
from generated.register_broker_record import BrokerEndpoint, BrokerFeature, RegisterBrokerRecord
from generated.register_controller_record import ControllerEndpoint, RegisterControllerRecord
from generated.remove_access_control_entry_record import RemoveAccessControlEntryRecord
from generated.remove_delegation_token_record import RemoveDelegationTokenRecord
from generated.remove_topic_record import RemoveTopicRecord
from generated.remove_user_scram_credential_record import RemoveUserScramCredentialRecord
from generated.topic_record import TopicRecord
from generated.unregister_broker_record import UnregisterBrokerRecord
from generated.user_scram_credential_record import UserScramCredentialRecord
from kraftd.controller import brokers, partitions, reassign
from kraftd.controller.apply import apply_record
from kraftd.controller.features import MV_DIRECTORIES, MV_ELR
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


# ---- first written for tests/controller/test_image_snapshot.py ---------------------------------------------
MVS = [8, 14, MV_DIRECTORIES, MV_ELR, 30]
TOPICS = [uuid.UUID(int=i) for i in range(1, 5)]
ACLS = [uuid.UUID(int=100 + i) for i in range(3)]
ids = st.integers(0, 3)
small = st.lists(st.integers(0, 3), max_size=3)
names = st.sampled_from(["a", "b", "c"])


def records(mv: int) -> st.SearchStrategy[Any]:
    dirs = (
        st.lists(st.sampled_from([uuid.UUID(int=7), uuid.UUID(int=8)]), max_size=2)
        if mv >= MV_DIRECTORIES
        else st.just([])
    )
    elr = st.one_of(st.none(), small) if mv >= MV_ELR else st.none()
    part = st.builds(
        PartitionRecord,
        partition_id=st.integers(0, 2),
        topic_id=st.sampled_from(TOPICS),
        replicas=small,
        isr=small,
        leader=st.integers(-1, 3),
        leader_epoch=st.integers(0, 5),
        partition_epoch=st.integers(0, 5),
        directories=dirs,
        eligible_leader_replicas=elr,
        last_known_elr=elr,
    )
    change = st.builds(
        PartitionChangeRecord,
        partition_id=st.integers(0, 2),
        topic_id=st.sampled_from(TOPICS),
        isr=st.one_of(st.none(), small),
        leader=st.integers(-2, 3),
        replicas=st.one_of(st.none(), small),
        directories=st.one_of(st.none(), dirs) if mv >= MV_DIRECTORIES else st.none(),
        eligible_leader_replicas=elr,
    )
    broker = st.builds(
        RegisterBrokerRecord,
        broker_id=ids,
        incarnation_id=st.sampled_from([uuid.UUID(int=50), uuid.UUID(int=51)]),
        broker_epoch=st.integers(0, 20),
        end_points=st.just([BrokerEndpoint(name="PLAINTEXT", host="h", port=9092, security_protocol=0)]),
        features=st.just(
            [BrokerFeature(name="metadata.version", min_supported_version=7, max_supported_version=30)]
        ),
        rack=st.one_of(st.none(), st.just("r1")),
        fenced=st.booleans(),
        in_controlled_shutdown=st.booleans(),
        log_dirs=dirs,
    )
    reg_change = st.builds(
        BrokerRegistrationChangeRecord,
        broker_id=ids,
        broker_epoch=st.integers(0, 20),
        fenced=st.integers(-1, 1),
        in_controlled_shutdown=st.integers(0, 1),
    )
    options = [
        part,
        change,
        broker,
        reg_change,
        st.builds(UnregisterBrokerRecord, broker_id=ids, broker_epoch=st.integers(0, 20)),
        st.sampled_from(TOPICS).map(
            lambda t: TopicRecord(name=f"t{t.int}", topic_id=t)
        ),  # Kafka: one name per id
        st.builds(RemoveTopicRecord, topic_id=st.sampled_from(TOPICS)),
        st.builds(
            ConfigRecord,
            resource_type=st.sampled_from([2, 4]),
            resource_name=st.sampled_from(["", "1", "t1", "t2"]),
            name=st.sampled_from(["retention.ms", "min.insync.replicas"]),
            value=st.one_of(st.none(), st.sampled_from(["1", "2"])),
        ),
        st.builds(
            FeatureLevelRecord,
            name=st.sampled_from(["group.version", "transaction.version"]),
            feature_level=st.integers(0, 2),
        ),
        st.builds(
            ClientQuotaRecord,
            entity=st.lists(
                st.builds(
                    EntityData,
                    entity_type=st.sampled_from(["user", "client-id"]),
                    entity_name=st.one_of(st.none(), names),
                ),
                min_size=1,
                max_size=2,
                unique_by=lambda e: e.entity_type,
            ),
            key=st.sampled_from(["producer_byte_rate", "request_percentage"]),
            value=st.floats(0, 1e6),
            remove=st.booleans(),
        ),
        st.builds(
            ProducerIdsRecord,
            broker_id=ids,
            broker_epoch=st.integers(0, 9),
            next_producer_id=st.integers(1, 10**6),
        ),
        st.builds(
            AccessControlEntryRecord,
            id=st.sampled_from(ACLS),
            resource_type=st.integers(2, 4),
            resource_name=names,
            pattern_type=st.just(3),
            principal=st.just("User:x"),
            host=st.just("*"),
            operation=st.integers(2, 4),
            permission_type=st.just(3),
        ),
        st.builds(RemoveAccessControlEntryRecord, id=st.sampled_from(ACLS)),
        st.builds(
            UserScramCredentialRecord,
            name=names,
            mechanism=st.integers(1, 2),
            salt=st.just(b"s"),
            iterations=st.just(4096),
        ),
        st.builds(RemoveUserScramCredentialRecord, name=names, mechanism=st.integers(1, 2)),
        st.builds(
            DelegationTokenRecord, owner=st.just("User:x"), token_id=names, max_timestamp=st.integers(0, 9)
        ),
        st.builds(RemoveDelegationTokenRecord, token_id=names),
        st.just(NoOpRecord()),
        st.just(BeginTransactionRecord(name="t")),
        st.just(EndTransactionRecord()),
        st.just(AbortTransactionRecord(reason="r")),
        st.builds(ClearElrRecord, topic_name=st.sampled_from(["", "t1"])),
    ]
    if mv >= 15:
        options.append(
            st.builds(
                RegisterControllerRecord,
                controller_id=ids,
                incarnation_id=st.just(uuid.UUID(int=9)),
                end_points=st.just(
                    [ControllerEndpoint(name="CONTROLLER", host="h", port=9093, security_protocol=0)]
                ),
            )
        )
    return st.one_of(options)


@st.composite
def logs(draw: st.DrawFn) -> tuple[int, list[Any]]:
    mv = draw(st.sampled_from(MVS))
    body = draw(st.lists(records(mv), max_size=60))
    return mv, [FeatureLevelRecord(name="metadata.version", feature_level=mv), *body]


# ---- first written for tests/controller/test_settled_writes.py and test_sliced_create.py ------------------
class LoopTurns:
    """Counts the event loop's turns while open: a task that yields at every turn. ``count`` is every turn since
    the task started, ``since_open`` those after the turn ``async with`` itself took."""

    def __init__(self) -> None:
        self.count = 0
        self.opened_at = 0
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> LoopTurns:
        self._task = asyncio.create_task(self._spin())
        await asyncio.sleep(0)
        self.opened_at = self.count
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()

    @property
    def since_open(self) -> int:
        return self.count - self.opened_at

    async def _spin(self) -> None:
        while True:
            self.count += 1
            await asyncio.sleep(0)
