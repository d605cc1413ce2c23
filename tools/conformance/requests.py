"""Request builders shared by the checks: harmless probes for every API, and crafted Raft messages.

Contracts:
1. :func:`harmless_request` builds, for each API we have a spec for, a request the target must answer without
   changing any state: reads, or Raft/voter RPCs naming a topic that is not ``__cluster_metadata`` (rejected by
   Kafka's topic-partition validation, RaftUtil.hasValidTopicPartition) or a wrong cluster id (rejected by
   KafkaRaftClient.hasValidClusterId) before any election or log state is read.
2. The Raft builders fill exactly the fields Kafka's KafkaRaftClient sets for the same message.
"""

from __future__ import annotations

import uuid
from typing import Any

from generated import add_raft_voter_request as arv
from generated import begin_quorum_epoch_request as bqe
from generated import end_quorum_epoch_request as eqe
from generated import fetch_request as fr
from generated import fetch_snapshot_request as fs
from generated import update_raft_voter_request as urv
from generated import vote_request as vr
from generated.alter_client_quotas_request import AlterClientQuotasRequest
from generated.alter_configs_request import AlterConfigsRequest
from generated.alter_partition_reassignments_request import AlterPartitionReassignmentsRequest
from generated.alter_partition_request import AlterPartitionRequest
from generated.alter_user_scram_credentials_request import AlterUserScramCredentialsRequest
from generated.api_versions_request import ApiVersionsRequest
from generated.assign_replicas_to_dirs_request import AssignReplicasToDirsRequest
from generated.broker_heartbeat_request import BrokerHeartbeatRequest
from generated.create_acls_request import CreateAclsRequest
from generated.create_partitions_request import CreatePartitionsRequest
from generated.create_topics_request import CreateTopicsRequest
from generated.delete_acls_request import DeleteAclsRequest
from generated.delete_topics_request import DeleteTopicsRequest
from generated.describe_acls_request import DescribeAclsRequest
from generated.describe_cluster_request import DescribeClusterRequest
from generated.describe_configs_request import DescribeConfigsRequest
from generated.elect_leaders_request import ElectLeadersRequest
from generated.expire_delegation_token_request import ExpireDelegationTokenRequest
from generated.incremental_alter_configs_request import IncrementalAlterConfigsRequest
from generated.kraftd_append_request import KraftdAppendRequest
from generated.list_partition_reassignments_request import ListPartitionReassignmentsRequest
from generated.metadata_request import MetadataRequest
from generated.read_offset_request import PartitionData as ROPartition
from generated.read_offset_request import ReadOffsetRequest
from generated.read_offset_request import TopicData as ROTopic
from generated.remove_raft_voter_request import RemoveRaftVoterRequest
from generated.renew_delegation_token_request import RenewDelegationTokenRequest
from generated.sasl_authenticate_request import SaslAuthenticateRequest
from generated.sasl_handshake_request import SaslHandshakeRequest
from generated.unregister_broker_request import UnregisterBrokerRequest
from generated.update_features_request import UpdateFeaturesRequest
from tools.conformance.runner import METADATA_TOPIC, describe_quorum_request

METADATA_TOPIC_ID = uuid.UUID(int=1)
OTHER_TOPIC = "conformance-not-a-raft-topic"
WRONG_CLUSTER = "conformance-wrong-cluster"
ZERO = uuid.UUID(int=0)


def vote(
    cluster_id: str | None,
    *,
    epoch: int,
    candidate: int,
    candidate_dir: uuid.UUID = ZERO,
    voter: int = -1,
    voter_dir: uuid.UUID = ZERO,
    last_epoch: int,
    last_offset: int,
    pre_vote: bool = False,
    topic: str = METADATA_TOPIC,
) -> vr.VoteRequest:
    part = vr.PartitionData(
        partition_index=0,
        replica_epoch=epoch,
        replica_id=candidate,
        replica_directory_id=candidate_dir,
        voter_directory_id=voter_dir,
        last_offset_epoch=last_epoch,
        last_offset=last_offset,
        pre_vote=pre_vote,
    )
    return vr.VoteRequest(cluster_id=cluster_id, voter_id=voter, topics=[vr.TopicData(topic, [part])])


def begin_epoch(
    cluster_id: str | None, *, leader: int, epoch: int, voter: int = -1, topic: str = METADATA_TOPIC
) -> bqe.BeginQuorumEpochRequest:
    part = bqe.PartitionData(partition_index=0, leader_id=leader, leader_epoch=epoch)
    return bqe.BeginQuorumEpochRequest(
        cluster_id=cluster_id, voter_id=voter, topics=[bqe.TopicData(topic, [part])]
    )


def end_epoch(
    cluster_id: str | None, *, leader: int, epoch: int, topic: str = METADATA_TOPIC
) -> eqe.EndQuorumEpochRequest:
    part = eqe.PartitionData(partition_index=0, leader_id=leader, leader_epoch=epoch)
    return eqe.EndQuorumEpochRequest(cluster_id=cluster_id, topics=[eqe.TopicData(topic, [part])])


def fetch(
    cluster_id: str | None,
    *,
    epoch: int,
    offset: int,
    last_epoch: int,
    replica: int = -1,
    topic_id: uuid.UUID = METADATA_TOPIC_ID,
    topic: str = METADATA_TOPIC,
    max_bytes: int = 1 << 20,
) -> fr.FetchRequest:
    part = fr.FetchPartition(
        partition=0,
        current_leader_epoch=epoch,
        fetch_offset=offset,
        last_fetched_epoch=last_epoch,
        log_start_offset=-1,
        partition_max_bytes=max_bytes,
    )
    return fr.FetchRequest(
        cluster_id=cluster_id,
        replica_id=replica,
        replica_state=fr.ReplicaState(replica_id=replica, replica_epoch=-1),
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=max_bytes,
        topics=[fr.FetchTopic(topic=topic, topic_id=topic_id, partitions=[part])],
    )


def fetch_snapshot(
    cluster_id: str | None,
    *,
    epoch: int,
    end_offset: int,
    snapshot_epoch: int,
    position: int,
    replica: int = -1,
    topic: str = METADATA_TOPIC,
    max_bytes: int = 1 << 20,
) -> fs.FetchSnapshotRequest:
    part = fs.PartitionSnapshot(
        partition=0,
        current_leader_epoch=epoch,
        snapshot_id=fs.SnapshotId(end_offset=end_offset, epoch=snapshot_epoch),
        position=position,
    )
    return fs.FetchSnapshotRequest(
        cluster_id=cluster_id,
        replica_id=replica,
        max_bytes=max_bytes,
        topics=[fs.TopicSnapshot(topic, [part])],
    )


def add_voter(
    cluster_id: str | None,
    *,
    voter: int,
    voter_dir: uuid.UUID,
    host: str,
    port: int,
    listener: str = "CONTROLLER",
) -> arv.AddRaftVoterRequest:
    return arv.AddRaftVoterRequest(
        cluster_id=cluster_id,
        timeout_ms=5000,
        voter_id=voter,
        voter_directory_id=voter_dir,
        listeners=[arv.Listener(listener, host, port)],
        ack_when_committed=True,
    )


def remove_voter(cluster_id: str | None, *, voter: int, voter_dir: uuid.UUID) -> RemoveRaftVoterRequest:
    return RemoveRaftVoterRequest(cluster_id=cluster_id, voter_id=voter, voter_directory_id=voter_dir)


def update_voter(
    cluster_id: str | None,
    *,
    epoch: int,
    voter: int,
    voter_dir: uuid.UUID,
    host: str,
    port: int,
    listener: str = "CONTROLLER",
) -> urv.UpdateRaftVoterRequest:
    return urv.UpdateRaftVoterRequest(
        cluster_id=cluster_id,
        current_leader_epoch=epoch,
        voter_id=voter,
        voter_directory_id=voter_dir,
        listeners=[urv.Listener(listener, host, port)],
        kraft_version_feature=urv.KRaftVersionFeature(0, 1),
    )


UNREGISTERED_BROKER = 2_000_000_000  # a broker id no test cluster registers


def harmless_request(api_key: int, version: int, cluster_id: str) -> Any:
    """Contract 1; None for an API this module has no harmless form of."""
    if api_key == 1:
        last = 0 if version >= 12 else -1  # LastFetchedEpoch (12+) is not ignorable
        return fetch(
            cluster_id, epoch=-1, offset=0, last_epoch=last, topic=OTHER_TOPIC, topic_id=uuid.uuid4()
        )
    if api_key == 3:
        return MetadataRequest(topics=[])
    if api_key == 17:  # a PLAINTEXT listener answers ILLEGAL_SASL_STATE; a SASL one starts an exchange
        return SaslHandshakeRequest("PLAIN")
    if api_key == 36:  # outside an exchange: ILLEGAL_SASL_STATE
        return SaslAuthenticateRequest(b"")
    if api_key == 18:
        if version >= 3:
            return ApiVersionsRequest(client_software_name="kraft-conformance", client_software_version="1.0")
        return ApiVersionsRequest()
    if api_key == 52:
        return vote(cluster_id, epoch=0, candidate=0, last_epoch=0, last_offset=0, topic=OTHER_TOPIC)
    if api_key == 53:
        return begin_epoch(cluster_id, leader=0, epoch=0, topic=OTHER_TOPIC)
    if api_key == 54:
        return end_epoch(cluster_id, leader=0, epoch=0, topic=OTHER_TOPIC)
    if api_key == 55:
        return describe_quorum_request()
    if api_key == 57:
        return UpdateFeaturesRequest(timeout_ms=5000, feature_updates=[], validate_only=version >= 1)
    if api_key == 59:
        return fetch_snapshot(
            cluster_id, epoch=0, end_offset=0, snapshot_epoch=0, position=0, topic=OTHER_TOPIC
        )
    if api_key == 60:
        return DescribeClusterRequest(endpoint_type=2 if version >= 1 else 1)
    if api_key == 80:
        return add_voter(WRONG_CLUSTER, voter=0, voter_dir=uuid.uuid4(), host="127.0.0.1", port=1)
    if api_key == 81:
        return remove_voter(WRONG_CLUSTER, voter=0, voter_dir=uuid.uuid4())
    if api_key == 82:
        return update_voter(WRONG_CLUSTER, epoch=0, voter=0, voter_dir=uuid.uuid4(), host="127.0.0.1", port=1)
    # Admin and broker-lifecycle APIs: empty or validate-only forms, or an id no broker has, change nothing.
    if api_key == 19:
        return CreateTopicsRequest(topics=[], timeout_ms=5000, validate_only=True)
    if api_key == 20:
        return DeleteTopicsRequest(topics=[], topic_names=[], timeout_ms=5000)
    if api_key == 37:
        return CreatePartitionsRequest(topics=[], timeout_ms=5000, validate_only=True)
    if api_key == 44:
        return IncrementalAlterConfigsRequest(resources=[], validate_only=True)
    if api_key == 33:
        return AlterConfigsRequest(resources=[], validate_only=True)
    if api_key == 43:  # an empty list, not null (null elects every partition)
        return ElectLeadersRequest(election_type=0, topic_partitions=[], timeout_ms=5000)
    if api_key == 45:
        return AlterPartitionReassignmentsRequest(timeout_ms=5000, topics=[])
    if api_key == 46:  # a read: the reassignments of no partition
        return ListPartitionReassignmentsRequest(timeout_ms=5000, topics=[])
    if api_key == 56:
        return AlterPartitionRequest(broker_id=UNREGISTERED_BROKER, broker_epoch=-1, topics=[])
    if api_key == 63:
        return BrokerHeartbeatRequest(
            broker_id=UNREGISTERED_BROKER, broker_epoch=-1, current_metadata_offset=0
        )
    if api_key == 64:  # BROKER_ID_NOT_REGISTERED
        return UnregisterBrokerRequest(broker_id=UNREGISTERED_BROKER)
    if api_key == 73:  # no directory: BROKER_ID_NOT_REGISTERED (or UNSUPPORTED_VERSION before 3.7-IV2)
        return AssignReplicasToDirsRequest(broker_id=UNREGISTERED_BROKER, broker_epoch=-1, directories=[])
    # Security metadata: a read, empty lists, validate-only, an HMAC no token has; none writes a record.
    # CreateDelegationToken (38) has no such form (a Kafka 4.3.1 controller closes the connection on a refused
    # one): None, and its version check SKIPs.
    if api_key == 29:
        return DescribeAclsRequest(
            resource_type_filter=1,
            resource_name_filter=None,
            pattern_type_filter=1,
            principal_filter=None,
            host_filter=None,
            operation=1,
            permission_type=1,
        )
    if api_key == 30:
        return CreateAclsRequest(creations=[])
    if api_key == 32:  # a read of no resource
        return DescribeConfigsRequest(resources=[])
    if api_key == 31:
        return DeleteAclsRequest(filters=[])
    if api_key == 49:
        return AlterClientQuotasRequest(entries=[], validate_only=True)
    if api_key == 51:
        return AlterUserScramCredentialsRequest(deletions=[], upsertions=[])
    if api_key == 39:
        return RenewDelegationTokenRequest(hmac=b"conformance", renew_period_ms=-1)
    if api_key == 40:
        return ExpireDelegationTokenRequest(hmac=b"conformance", expiry_time_period_ms=-1)
    if api_key == 651:  # kraftd's own append RPC: another cluster's id is refused before anything is appended
        return KraftdAppendRequest(cluster_id=WRONG_CLUSTER, timeout_ms=1000, records=[])
    # Envelope (58), BrokerRegistration (62), AllocateProducerIds (67) and ControllerRegistration (70) have no
    # form that leaves the cluster unchanged: None, and their version checks SKIP saying so.
    if api_key == 650:
        return ReadOffsetRequest(cluster_id=cluster_id, topics=[ROTopic(OTHER_TOPIC, [ROPartition(0)])])
    return None
