"""KIP-630 snapshots of the metadata image (kraftd.controller.image_writer): the image rebuilt from a snapshot at
offset N equals the image replayed from the log up to N, over random record sequences (hypothesis) and over the
log a real Kafka 4.3.1 controller wrote; the snapshot holds the image (features first, no history, no NoOps)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generated.abort_transaction_record import AbortTransactionRecord
from generated.access_control_entry_record import AccessControlEntryRecord
from generated.begin_transaction_record import BeginTransactionRecord
from generated.broker_registration_change_record import BrokerRegistrationChangeRecord
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
from kraftd.controller.apply import apply_record
from kraftd.controller.features import MV_DIRECTORIES, MV_ELR, record_version
from kraftd.controller.image import MetadataImage
from kraftd.controller.image_writer import (
    SnapshotInTransaction,
    image_from_values,
    image_records,
    same_image,
    snapshot_values,
)
from kwire.batches import iter_batches
from kwire.metadata_frame import decode_metadata_record, encode_record
from tests.helpers.controller import replay as _replay

MVS = [8, 14, MV_DIRECTORIES, MV_ELR, 30]
TOPICS = [uuid.UUID(int=i) for i in range(1, 5)]
ACLS = [uuid.UUID(int=100 + i) for i in range(3)]
ids = st.integers(0, 3)
small = st.lists(st.integers(0, 3), max_size=3)
names = st.sampled_from(["a", "b", "c"])


def _records(mv: int) -> st.SearchStrategy[Any]:
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
    body = draw(st.lists(_records(mv), max_size=60))
    return mv, [FeatureLevelRecord(name="metadata.version", feature_level=mv), *body]


@settings(max_examples=300, deadline=None)
@given(logs(), st.data())
def test_the_image_rebuilt_from_a_snapshot_equals_the_replayed_log(
    log: tuple[int, list[Any]], data: st.DataObject
) -> None:
    mv, records = log
    values = [encode_record(r, record_version(type(r).API_KEY, mv)) for r in records]
    n = data.draw(st.integers(1, len(values)))  # the snapshot ends at offset n
    image = MetadataImage()
    _replay(image, values[:n])
    if image.pending_transaction is not None:
        with pytest.raises(SnapshotInTransaction):
            snapshot_values(image)
        return
    snap = snapshot_values(image)
    loaded = image_from_values(snap, n)
    assert same_image(loaded, image)
    assert snapshot_values(loaded) == snap  # a snapshot of the loaded image is the same snapshot
    # Loading, then replaying the rest of the log, equals replaying the whole log.
    _replay(loaded, values[n:], n)
    whole = MetadataImage()
    _replay(whole, values)
    assert same_image(loaded, whole)


def test_the_snapshot_holds_the_image_in_kafkas_order_not_the_history() -> None:
    log = Path(__file__).parent / "fixtures" / "kafka-4.3.1-controller-00000000000000000000.log"
    image = MetadataImage()
    count = 0
    for view in iter_batches(log.read_bytes()):
        batch = view.decode()
        if batch.is_control:
            continue
        for rec in batch.records:
            assert rec.value is not None
            key, version, obj = decode_metadata_record(rec.value)
            apply_record(image, batch.base_offset + rec.offset_delta, key, version, obj)
            count += 1
    records = image_records(image)
    kinds = [type(r).__name__ for r in records]
    assert kinds[0] == "FeatureLevelRecord" and records[0].name == "metadata.version"
    assert kinds == ["FeatureLevelRecord"] * 6 + ["RegisterControllerRecord", "ConfigRecord"]
    assert count > len(records)  # the NoOps and transaction markers are history, not image
    snap = snapshot_values(image)
    assert same_image(image_from_values(snap, image.offset + 1), image)


def test_values_that_are_no_metadata_records_never_grow_the_image_or_its_snapshot() -> None:
    """Image invariant 2a: a load generator's raw values replay as nothing (they used to pile up in ``other`` and
    be rewritten by every snapshot, so throughput fell as the log grew); framed records around them still apply."""
    from kraftd.controller.machine import MetadataController
    from kraftd.core.batches import data_batch

    mv = MV_ELR
    feature = encode_record(FeatureLevelRecord("metadata.version", mv), 0)
    raw = [f"1p7-{i}".encode().ljust(100, b".") for i in range(50)]
    noop = encode_record(NoOpRecord(), 0)
    machine = MetadataController(1, [])
    batches = [data_batch(0, 1, [feature, *raw[:25]], 0), data_batch(26, 1, [*raw[25:], noop], 0)]
    machine.replay(batches, 52)
    image = machine.committed
    assert image.offset == 51
    assert image.other == () and image.features["metadata.version"] == mv
    assert snapshot_values(image) == [feature]
