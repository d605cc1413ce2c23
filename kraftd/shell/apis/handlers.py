"""Answers the shell gives itself (not the core): ApiVersions, DescribeQuorum, DescribeCluster, Metadata.

Contracts:
1. The server (kwire.server) answers ApiVersions from kraftd.shell.apis.table.supported_versions: exactly the
   APIs of the table at their full generated ranges.
2. DescribeQuorum is answered by the leader; elsewhere the partition carries NOT_LEADER_OR_FOLLOWER (top-level
   NONE), as Kafka's controllers answer. A topic/partition other than ``__cluster_metadata``-0 gets
   UNKNOWN_TOPIC_OR_PARTITION. Nodes (v2) carry every voter's known listeners. Below v2 the answer (ours or
   the leader's, relayed) carries no Nodes and zero directory ids, as Kafka's
   RaftUtil.singletonDescribeQuorumResponse writes it for the request's version (:func:`describe_quorum_for`).
3. DescribeCluster answers with the controller nodes (from the image's RegisterControllerRecords once every
   quorum node has registered, else the configured voters), ``controller_id`` = the current leader (-1 unknown)
   and echoes the requested endpoint type. Asked for brokers (endpoint type 1) while the image holds unfenced
   brokers, it lists those brokers instead: only nodes that will answer the client's next request.
4. Metadata lists the image's unfenced brokers when there are any, else the controller nodes (deliberately, so
   kafka-python can bootstrap at a controller), ``controller_id`` = the leader, the cluster id and no topics:
   each requested topic gets UNKNOWN_TOPIC_OR_PARTITION.
5. With an authorizer (``authorizer.class.name``), a refused request gets :func:`denied_response`: the Raft
   RPCs their error response with CLUSTER_AUTHORIZATION_FAILED, DescribeQuorum/DescribeCluster that top-level
   error code, every other API the answer of kraftd.shell.apis.denials.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from generated import describe_quorum_response as dq
from generated.describe_cluster_request import DescribeClusterRequest
from generated.describe_cluster_response import DescribeClusterBroker, DescribeClusterResponse
from generated.describe_quorum_request import DescribeQuorumRequest
from generated.messages import ApiKey
from generated.metadata_request import MetadataRequest
from generated.metadata_response import MetadataResponse, MetadataResponseBroker, MetadataResponseTopic
from kraftd.config import Endpoint
from kraftd.core import messages as core_messages
from kraftd.core.client import QuorumInfo, ReplicaInfo
from kraftd.core.types import METADATA_PARTITION, METADATA_TOPIC
from kraftd.shell.apis import denials, table
from kwire.errors import ErrorCode

# The Raft RPCs, answered by the core (kraftd.shell.apis.table, Part.CORE).
CORE_APIS = frozenset(k for k, a in table.TABLE.items() if a.part is table.Part.CORE)


@dataclass(frozen=True, slots=True)
class ClusterView:
    """What the shell knows about the quorum's nodes, for the answers above."""

    cluster_id: str
    nodes: dict[int, tuple[Endpoint, ...]]  # node id -> listeners, controller listener first
    leader_id: int
    brokers: dict[int, tuple[Endpoint, str | None]] | None = None  # unfenced brokers: first listener, rack


def _replica(r: ReplicaInfo) -> dq.ReplicaState:
    d = r.directory_id if isinstance(r.directory_id, uuid.UUID) else uuid.UUID(int=0)
    return dq.ReplicaState(
        r.replica_id, d, r.log_end_offset, r.last_fetch_timestamp, r.last_caught_up_timestamp
    )


def describe_quorum_response(
    req: DescribeQuorumRequest, info: QuorumInfo | None, view: ClusterView
) -> dq.DescribeQuorumResponse:
    """Contract 2; ``info`` is None on a non-leader."""
    topics = req.topics
    ours = (
        len(topics) == 1
        and topics[0].topic_name == METADATA_TOPIC
        and len(topics[0].partitions) == 1
        and topics[0].partitions[0].partition_index == METADATA_PARTITION
    )
    if not ours:
        parts = [
            dq.TopicData(
                t.topic_name,
                [
                    dq.PartitionData(p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                    for p in t.partitions
                ],
            )
            for t in topics
        ]
        return dq.DescribeQuorumResponse(topics=parts)
    if info is None:
        part = dq.PartitionData(
            METADATA_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER, error_message=None, leader_id=view.leader_id
        )
        return dq.DescribeQuorumResponse(topics=[dq.TopicData(METADATA_TOPIC, [part])])
    part = dq.PartitionData(
        partition_index=METADATA_PARTITION,
        error_code=ErrorCode.NONE,
        error_message=None,
        leader_id=info.leader_id,
        leader_epoch=info.leader_epoch,
        high_watermark=info.high_watermark,
        current_voters=[_replica(r) for r in info.voters],
        observers=[_replica(r) for r in info.observers],
    )
    nodes = [
        dq.Node(v.replica_id, [dq.Listener(e.name, e.host, e.port) for e in view.nodes.get(v.replica_id, ())])
        for v in info.voters
        if view.nodes.get(v.replica_id)
    ]
    return dq.DescribeQuorumResponse(
        error_message=None, topics=[dq.TopicData(METADATA_TOPIC, [part])], nodes=nodes
    )


def describe_quorum_for(resp: dq.DescribeQuorumResponse, version: int) -> dq.DescribeQuorumResponse:
    """Contract 2: the fields ``version`` lacks (Nodes, ReplicaDirectoryId: v2+) left at their defaults."""
    if version >= 2:
        return resp
    zero = uuid.UUID(int=0)
    for topic in resp.topics:
        for part in topic.partitions:
            for replica in (*part.current_voters, *part.observers):
                replica.replica_directory_id = zero
    resp.nodes = []
    return resp


BROKER_ENDPOINT = 1


def describe_cluster_response(req: DescribeClusterRequest, view: ClusterView) -> DescribeClusterResponse:
    """Contract 3."""
    if req.endpoint_type == BROKER_ENDPOINT and view.brokers:
        brokers = [
            DescribeClusterBroker(node_id, ep.host, ep.port, rack, False)
            for node_id, (ep, rack) in sorted(view.brokers.items())
        ]
    else:
        brokers = [
            DescribeClusterBroker(node_id, eps[0].host, eps[0].port, None, False)
            for node_id, eps in sorted(view.nodes.items())
            if eps
        ]
    return DescribeClusterResponse(
        error_code=ErrorCode.NONE,
        error_message=None,
        endpoint_type=req.endpoint_type,
        cluster_id=view.cluster_id,
        controller_id=view.leader_id,
        brokers=brokers,
    )


def metadata_response(req: MetadataRequest, view: ClusterView) -> MetadataResponse:
    """Contract 4."""
    if view.brokers:
        brokers = [
            MetadataResponseBroker(node_id, ep.host, ep.port, rack)
            for node_id, (ep, rack) in sorted(view.brokers.items())
        ]
    else:
        brokers = [
            MetadataResponseBroker(node_id, eps[0].host, eps[0].port, None)
            for node_id, eps in sorted(view.nodes.items())
            if eps
        ]
    topics = [
        MetadataResponseTopic(
            error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=t.name, topic_id=t.topic_id
        )
        for t in (req.topics or [])
    ]
    return MetadataResponse(
        brokers=brokers, cluster_id=view.cluster_id, controller_id=view.leader_id, topics=topics
    )


def describe_cluster_failed(req: DescribeClusterRequest, code: int) -> DescribeClusterResponse:
    """A read barrier failed (kraftd.shell.raft.reads contract 1): the error, no nodes."""
    return DescribeClusterResponse(
        error_code=code,
        error_message="no leader confirmed this read in time",
        endpoint_type=req.endpoint_type,
        cluster_id="",
        controller_id=-1,
        brokers=[],
    )


def metadata_failed(req: MetadataRequest, view: ClusterView, code: int) -> MetadataResponse:
    """A read barrier failed (kraftd.shell.raft.reads contract 1): every requested topic carries the error; the
    node list names only the controllers (where a client may retry), never brokers from the image."""
    brokers = [
        MetadataResponseBroker(node_id, eps[0].host, eps[0].port, None)
        for node_id, eps in sorted(view.nodes.items())
        if eps
    ]
    topics = [
        MetadataResponseTopic(error_code=code, name=t.name, topic_id=t.topic_id) for t in (req.topics or [])
    ]
    return MetadataResponse(brokers=brokers, cluster_id=view.cluster_id, controller_id=-1, topics=topics)


def denied_response(api_key: int, request: object, version: int = -1) -> object:
    """Contract 5: the answer to a request the authorizer refused (CLUSTER_AUTHORIZATION_FAILED)."""
    code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    if api_key in CORE_APIS and api_key != ApiKey.UPDATE_RAFT_VOTER:
        return core_messages.error_response(request, code)
    if api_key == ApiKey.DESCRIBE_QUORUM:
        # Kafka's DescribeQuorumRequest.getErrorResponse carries no message (its tool prints the default).
        return dq.DescribeQuorumResponse(error_code=code, error_message=None)
    if api_key == ApiKey.DESCRIBE_CLUSTER:
        return DescribeClusterResponse(error_code=code, error_message=code.message)
    return denials.denied(api_key, request, version)
