"""Kafka's ``kafka-dump-log --cluster-metadata-decoder`` decodes a snapshot of kraftd's metadata image (KIP-630 as
Kafka writes it: the image as records, features first): every record of a cluster with brokers, topics,
partitions, configs, quotas, SCRAM, ACLs and producer ids is printed decoded, in the image writer's order."""

from __future__ import annotations

import random
import re
import uuid
from pathlib import Path

import pytest

from generated.access_control_entry_record import AccessControlEntryRecord
from generated.broker_registration_request import BrokerRegistrationRequest, Feature
from generated.client_quota_record import ClientQuotaRecord, EntityData
from generated.create_topics_request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
from generated.user_scram_credential_record import UserScramCredentialRecord
from kraftd.controller import brokers, topics
from kraftd.controller.features import bootstrap_feature_records, resolve_features, supported_ranges
from kraftd.controller.image_writer import image_records, snapshot_values
from kraftd.controller.machine import MetadataController
from kraftd.core.log import OffsetAndEpoch
from kraftd.core.snapshots import build_snapshot
from kraftd.core.types import ReplicaKey, VoterSet
from kraftd.storage.snapshots import snapshot_name
from kwire.metadata_frame import encode_record
from tests.helpers.controller import append_encoded as _append
from tests.helpers.controller import heartbeat_request as _hb
from tests.interop.kafka import classpath, dump_log

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]


def _cluster() -> MetadataController:
    m = MetadataController(
        1, [encode_record(r, 0) for r in bootstrap_feature_records(resolve_features(None, {}))]
    )
    _append(m, [r for _, _, r in m.bootstrap])
    hb = brokers.Heartbeats()
    feats = [
        Feature(name=n, min_supported_version=lo, max_supported_version=hi)
        for n, (lo, hi) in supported_ranges().items()
    ]
    for b in (1, 2, 3):
        req = BrokerRegistrationRequest(
            broker_id=b,
            cluster_id="c",
            incarnation_id=uuid.UUID(int=b),
            features=feats,
            log_dirs=[uuid.UUID(int=1000 + b)],
        )
        out = brokers.register(m.committed, req, "c", hb, 0)
        _append(m, out.records)
        _append(
            m, brokers.heartbeat(m.committed, _hb(b, out.broker_epoch, m.committed.offset), hb, 0).records
        )
    topic = CreatableTopic(
        name="orders",
        num_partitions=3,
        replication_factor=3,
        configs=[CreatableTopicConfig("retention.ms", "1000")],
    )
    records, _ = topics.create_topics(m.committed, CreateTopicsRequest(topics=[topic]), random.Random(1))
    _append(m, records)
    _append(m, brokers.allocate_producer_ids(m.committed, 1, m.committed.brokers[1].epoch)[0])
    _append(m, brokers.fence(m.committed, 3))
    _append(
        m,
        [
            ClientQuotaRecord(entity=[EntityData("user", "alice")], key="producer_byte_rate", value=1024.0),
            UserScramCredentialRecord(
                name="alice", mechanism=1, salt=b"s", stored_key=b"k", server_key=b"v", iterations=4096
            ),
            AccessControlEntryRecord(
                id=uuid.UUID(int=5),
                resource_type=2,
                resource_name="orders",
                pattern_type=3,
                principal="User:alice",
                host="*",
                operation=3,
                permission_type=3,
            ),
        ],
    )
    return m


def test_kafka_dump_log_decodes_every_record_of_an_image_snapshot(tmp_path: Path) -> None:
    classpath()
    m = _cluster()
    image = m.committed
    kinds = [type(r).__name__ for r in image_records(image)]
    end = image.offset + 1
    sid = OffsetAndEpoch(end, 1)
    voters = VoterSet((ReplicaKey(1, uuid.UUID(int=11)),))
    snap = build_snapshot(
        sid, snapshot_values(image), kraft_version=1, voters=voters, now_ms=0, max_batch_bytes=8 << 20
    )
    path = tmp_path / snapshot_name(sid)
    path.write_bytes(snap.data)
    out = dump_log([path], workdir=tmp_path).check().stdout
    assert not re.search(r"Exception|[Ee]rror|isvalid: false", out), out[-3000:]
    printed = re.findall(r'payload: \{"type":"(\w+)"', out)
    # Kafka names record types in SCREAMING_SNAKE_CASE without the Record suffix: compare in that form.
    expected = [re.sub(r"(?<!^)(?=[A-Z])", "_", k.removesuffix("Record")).upper() + "_RECORD" for k in kinds]
    assert printed == expected, (printed, expected)
    assert expected[0] == "FEATURE_LEVEL_RECORD" and '"name":"metadata.version"' in out
    assert {
        "REGISTER_BROKER_RECORD",
        "TOPIC_RECORD",
        "PARTITION_RECORD",
        "CONFIG_RECORD",
        "PRODUCER_IDS_RECORD",
    } <= set(printed)
    assert "SnapshotHeader" in out and "SnapshotFooter" in out and "KRaftVoters" in out
