"""Records the controller writes are encodable at the record versions of the cluster's metadata.version: before
3.7-IV2 (PartitionRecord v0, RegisterBrokerRecord v2) there are no directory fields, so CreateTopics,
CreatePartitions and BrokerRegistration must not fill them (found by the controller simulator: CreateTopics failed
with MessageEncodeError at metadata.version 3.6)."""

from __future__ import annotations

import random
import uuid

import pytest

from generated.broker_registration_request import BrokerRegistrationRequest, Feature
from generated.create_partitions_request import CreatePartitionsRequest, CreatePartitionsTopic
from generated.create_topics_request import CreatableTopic, CreateTopicsRequest
from kraftd.controller import brokers, partitions, topics
from kraftd.controller.features import (
    MV_DIRECTORIES,
    bootstrap_feature_records,
    resolve_features,
    supported_ranges,
)
from kraftd.controller.machine import MetadataController
from kwire.metadata_frame import encode_record
from tests.helpers.controller import append_encoded as _append
from tests.helpers.controller import heartbeat_request as _hb


@pytest.mark.parametrize("mv", [8, 14, 16, MV_DIRECTORIES, 23, 30])
def test_topics_and_registrations_encode_at_every_metadata_version(mv: int) -> None:
    levels = resolve_features(None, {"metadata.version": mv})
    m = MetadataController(0, [encode_record(r, 0) for r in bootstrap_feature_records(levels)])
    _append(m, [r for _, _, r in m.bootstrap])
    hb = brokers.Heartbeats()
    features = [
        Feature(name=n, min_supported_version=lo, max_supported_version=hi)
        for n, (lo, hi) in supported_ranges().items()
    ]
    for b in (1, 2):
        req = BrokerRegistrationRequest(
            broker_id=b,
            cluster_id="c",
            incarnation_id=uuid.uuid4(),
            features=features,
            log_dirs=[uuid.UUID(int=1000 + b)],
        )
        out = brokers.register(m.committed, req, "c", hb, 0)
        assert not out.error
        _append(m, out.records)
        _append(
            m, brokers.heartbeat(m.committed, _hb(b, out.broker_epoch, m.committed.offset), hb, 0).records
        )
    records, results = topics.create_topics(
        m.committed,
        CreateTopicsRequest(topics=[CreatableTopic(name="t", num_partitions=2, replication_factor=2)]),
        random.Random(1),
    )
    assert [r.error for r in results] == [0]
    _append(m, records)
    more, _ = partitions.create_partitions(
        m.committed,
        CreatePartitionsRequest(topics=[CreatePartitionsTopic(name="t", count=3, assignments=None)]),
        random.Random(1),
    )
    # Kafka writes new partitions at leader epoch 0 and partition epoch 0 (the record's defaults are -1): a broker
    # that sees -1 skips the leader/follower transition and never creates the replica.
    assert [(r.leader_epoch, r.partition_epoch) for r in more] == [(0, 0)]
    _append(m, more)
    parts = m.committed.topics[m.committed.topic_ids["t"]].partitions
    assert len(parts) == 3 and all(sorted(p.replicas) == [1, 2] for p in parts.values())
    with_dirs = mv >= MV_DIRECTORIES
    assert all(bool(p.directories) == with_dirs for p in parts.values())
    assert all(bool(b.log_dirs) == with_dirs for b in m.committed.brokers.values())
    assert all(not b.fenced for b in m.committed.brokers.values())
