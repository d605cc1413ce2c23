"""Stand-ins shaped like the generated message classes, used only while ``generated/`` is absent.

Invariant: names, attributes and defaults follow docs/CONTRACTS.md exactly, so swapping in the generated
modules changes no caller. Delete this module once ``generated/`` is checked in.
"""

from __future__ import annotations

import types
import uuid
from dataclasses import field, make_dataclass
from typing import Any

_Z = uuid.UUID(int=0)


def _cls(name: str, *spec: tuple[str, Any]) -> type:
    fields: list[Any] = []
    for attr, default in spec:
        if isinstance(default, list):
            fields.append((attr, Any, field(default_factory=list)))
        elif isinstance(default, type):
            fields.append((attr, Any, field(default_factory=default)))
        else:
            fields.append((attr, Any, field(default=default)))
    fields.append(("unknown_tagged_fields", Any, field(default_factory=list)))
    return make_dataclass(name, fields, slots=True)


def _mod(**classes: type) -> types.SimpleNamespace:
    return types.SimpleNamespace(**classes)


_NodeEndpoint = _cls("NodeEndpoint", ("node_id", 0), ("host", ""), ("port", 0))
_LeaderEndpoint = _cls("LeaderEndpoint", ("name", ""), ("host", ""), ("port", 0))

vote_request = _mod(
    VoteRequest=_cls("VoteRequest", ("cluster_id", None), ("voter_id", -1), ("topics", [])),
    TopicData=_cls("TopicData", ("topic_name", ""), ("partitions", [])),
    PartitionData=_cls(
        "PartitionData",
        ("partition_index", 0),
        ("replica_epoch", 0),
        ("replica_id", 0),
        ("replica_directory_id", _Z),
        ("voter_directory_id", _Z),
        ("last_offset_epoch", 0),
        ("last_offset", 0),
        ("pre_vote", False),
    ),
)
_RespPartition = _cls(
    "PartitionData", ("partition_index", 0), ("error_code", 0), ("leader_id", 0), ("leader_epoch", 0)
)
vote_response = _mod(
    VoteResponse=_cls("VoteResponse", ("error_code", 0), ("topics", []), ("node_endpoints", [])),
    TopicData=_cls("TopicData", ("topic_name", ""), ("partitions", [])),
    PartitionData=_cls(
        "PartitionData",
        ("partition_index", 0),
        ("error_code", 0),
        ("leader_id", 0),
        ("leader_epoch", 0),
        ("vote_granted", False),
    ),
    NodeEndpoint=_NodeEndpoint,
)
begin_quorum_epoch_request = _mod(
    BeginQuorumEpochRequest=_cls(
        "BeginQuorumEpochRequest",
        ("cluster_id", None),
        ("voter_id", -1),
        ("topics", []),
        ("leader_endpoints", []),
    ),
    TopicData=_cls("TopicData", ("topic_name", ""), ("partitions", [])),
    PartitionData=_cls(
        "PartitionData",
        ("partition_index", 0),
        ("voter_directory_id", _Z),
        ("leader_id", 0),
        ("leader_epoch", 0),
    ),
    LeaderEndpoint=_LeaderEndpoint,
)
begin_quorum_epoch_response = _mod(
    BeginQuorumEpochResponse=_cls(
        "BeginQuorumEpochResponse", ("error_code", 0), ("topics", []), ("node_endpoints", [])
    ),
    TopicData=_cls("TopicData", ("topic_name", ""), ("partitions", [])),
    PartitionData=_RespPartition,
    NodeEndpoint=_NodeEndpoint,
)
end_quorum_epoch_request = _mod(
    EndQuorumEpochRequest=_cls(
        "EndQuorumEpochRequest", ("cluster_id", None), ("topics", []), ("leader_endpoints", [])
    ),
    TopicData=_cls("TopicData", ("topic_name", ""), ("partitions", [])),
    PartitionData=_cls(
        "PartitionData",
        ("partition_index", 0),
        ("leader_id", 0),
        ("leader_epoch", 0),
        ("preferred_successors", []),
        ("preferred_candidates", []),
    ),
    ReplicaInfo=_cls("ReplicaInfo", ("candidate_id", 0), ("candidate_directory_id", _Z)),
    LeaderEndpoint=_LeaderEndpoint,
)
end_quorum_epoch_response = _mod(
    EndQuorumEpochResponse=_cls(
        "EndQuorumEpochResponse", ("error_code", 0), ("topics", []), ("node_endpoints", [])
    ),
    TopicData=_cls("TopicData", ("topic_name", ""), ("partitions", [])),
    PartitionData=_RespPartition,
    NodeEndpoint=_NodeEndpoint,
)
_ReplicaState = _cls("ReplicaState", ("replica_id", -1), ("replica_epoch", -1))
fetch_request = _mod(
    FetchRequest=_cls(
        "FetchRequest",
        ("replica_id", -1),
        ("max_wait_ms", 0),
        ("min_bytes", 0),
        ("max_bytes", 0x7FFFFFFF),
        ("isolation_level", 0),
        ("session_id", 0),
        ("session_epoch", -1),
        ("topics", []),
        ("forgotten_topics_data", []),
        ("rack_id", ""),
        ("cluster_id", None),
        ("replica_state", _ReplicaState),
    ),
    FetchTopic=_cls("FetchTopic", ("topic", ""), ("topic_id", _Z), ("partitions", [])),
    FetchPartition=_cls(
        "FetchPartition",
        ("partition", 0),
        ("current_leader_epoch", -1),
        ("fetch_offset", 0),
        ("last_fetched_epoch", -1),
        ("log_start_offset", -1),
        ("partition_max_bytes", 0),
        ("replica_directory_id", _Z),
        ("high_watermark", 2**63 - 1),
    ),
    ReplicaState=_ReplicaState,
)
_EpochEndOffset = _cls("EpochEndOffset", ("epoch", -1), ("end_offset", -1))
_LeaderIdAndEpoch = _cls("LeaderIdAndEpoch", ("leader_id", -1), ("leader_epoch", -1))
_SnapshotId = _cls("SnapshotId", ("end_offset", -1), ("epoch", -1))
fetch_response = _mod(
    FetchResponse=_cls(
        "FetchResponse",
        ("throttle_time_ms", 0),
        ("error_code", 0),
        ("session_id", 0),
        ("responses", []),
        ("node_endpoints", []),
    ),
    FetchableTopicResponse=_cls(
        "FetchableTopicResponse", ("topic", ""), ("topic_id", _Z), ("partitions", [])
    ),
    PartitionData=_cls(
        "PartitionData",
        ("partition_index", 0),
        ("error_code", 0),
        ("high_watermark", 0),
        ("last_stable_offset", -1),
        ("log_start_offset", -1),
        ("aborted_transactions", []),
        ("preferred_read_replica", -1),
        ("records", None),
        ("diverging_epoch", _EpochEndOffset),
        ("current_leader", _LeaderIdAndEpoch),
        ("snapshot_id", _SnapshotId),
    ),
    EpochEndOffset=_EpochEndOffset,
    LeaderIdAndEpoch=_LeaderIdAndEpoch,
    SnapshotId=_SnapshotId,
)
