"""Golden bytes for the election RPCs: Vote (52), BeginQuorumEpoch (53), EndQuorumEpoch (54).

Every golden below was written by hand from /work/shared/wire-layouts.txt, one line per field, never produced by
our encoder. Invariants checked (CONTRACTS.md "Generated code"):
1. ``obj.encode(v)`` equals the golden exactly.
2. ``Cls.decode(golden, v)`` equals ``obj`` (dataclass equality, unknown tags included).
Encoding reminders: flexible versions use compact strings/arrays (unsigned varint length + 1, 0 = null) and a
tagged-field section (count, then tag/size/payload) after every struct; non-flexible versions use int16 string
lengths (-1 = null) and int32 array lengths.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.helpers.messages import VOTE_REQUEST_V0
from tests.messages.support import (
    META,
    U1,
    U2,
    check_golden,
    cls,
    hx,
    struct,
)


def _vote_request(v: int, cluster_id: str | None) -> Any:
    part = struct("VoteRequest", "PartitionData")(
        partition_index=0, replica_epoch=5, replica_id=1, last_offset_epoch=4, last_offset=100
    )
    if v >= 1:
        part.replica_directory_id = U1
        part.voter_directory_id = U2
    if v >= 2:
        part.pre_vote = True
    req = cls("VoteRequest")(
        cluster_id=cluster_id,
        topics=[struct("VoteRequest", "TopicData")(topic_name=META, partitions=[part])],
    )
    if v >= 1:
        req.voter_id = 2
    return req


VOTE_REQUEST_V1 = hx(
    "03 6331"  # ClusterId "c1"
    "00000002"  # VoterId 2 (v1+)
    "02"  # Topics: 1
    "13 {META}"  # TopicName
    "02"  # Partitions: 1
    "00000000"  # PartitionIndex 0
    "00000005"  # ReplicaEpoch 5
    "00000001"  # ReplicaId 1
    "{U1}"  # ReplicaDirectoryId (v1+, 16 bytes)
    "{U2}"  # VoterDirectoryId (v1+, 16 bytes)
    "00000004"  # LastOffsetEpoch 4
    "0000000000000064"  # LastOffset 100
    "00"  # PartitionData tags
    "00"  # TopicData tags
    "00"  # top-level tags
)

VOTE_REQUEST_V2_NULL_CLUSTER = hx(
    "00"  # ClusterId: compact nullable string, 0 = null
    "00000002"  # VoterId 2
    "02"  # Topics: 1
    "13 {META}"  # TopicName
    "02"  # Partitions: 1
    "00000000"  # PartitionIndex 0
    "00000005"  # ReplicaEpoch 5
    "00000001"  # ReplicaId 1
    "{U1}"  # ReplicaDirectoryId
    "{U2}"  # VoterDirectoryId
    "00000004"  # LastOffsetEpoch 4
    "0000000000000064"  # LastOffset 100
    "01"  # PreVote true (v2+)
    "00"  # PartitionData tags
    "00"  # TopicData tags
    "00"  # top-level tags
)


def _vote_response(v: int) -> Any:
    part = struct("VoteResponse", "PartitionData")(
        partition_index=0, error_code=0, leader_id=1, leader_epoch=5, vote_granted=True
    )
    resp = cls("VoteResponse")(
        error_code=0, topics=[struct("VoteResponse", "TopicData")(topic_name=META, partitions=[part])]
    )
    if v >= 1:
        resp.node_endpoints = [struct("VoteResponse", "NodeEndpoint")(node_id=1, host="localhost", port=9093)]
    return resp


VOTE_RESPONSE_V0 = hx(
    "0000"  # ErrorCode 0
    "02"  # Topics: 1
    "13 {META}"  # TopicName
    "02"  # Partitions: 1
    "00000000"  # PartitionIndex 0
    "0000"  # ErrorCode 0
    "00000001"  # LeaderId 1
    "00000005"  # LeaderEpoch 5
    "01"  # VoteGranted true
    "00"  # PartitionData tags
    "00"  # TopicData tags
    "00"  # top-level tags (NodeEndpoints does not exist in v0)
)

VOTE_RESPONSE_V1_TAGGED = hx(
    "0000"  # ErrorCode 0
    "02"  # Topics: 1
    "13 {META}"  # TopicName
    "02"  # Partitions: 1
    "00000000"  # PartitionIndex 0
    "0000"  # ErrorCode 0
    "00000001"  # LeaderId 1
    "00000005"  # LeaderEpoch 5
    "01"  # VoteGranted true
    "00"  # PartitionData tags
    "00"  # TopicData tags
    "{NODE_EP}"  # top-level tags: NodeEndpoints (tag 0)
)


def _vote_response_v2_rejected() -> Any:
    part = struct("VoteResponse", "PartitionData")(
        partition_index=0, error_code=74, leader_id=3, leader_epoch=7, vote_granted=False
    )
    return cls("VoteResponse")(
        error_code=0, topics=[struct("VoteResponse", "TopicData")(topic_name=META, partitions=[part])]
    )


VOTE_RESPONSE_V2_REJECTED = hx(
    "0000"  # ErrorCode 0
    "02"  # Topics: 1
    "13 {META}"  # TopicName
    "02"  # Partitions: 1
    "00000000"  # PartitionIndex 0
    "004a"  # ErrorCode 74 FENCED_LEADER_EPOCH
    "00000003"  # LeaderId 3
    "00000007"  # LeaderEpoch 7
    "00"  # VoteGranted false
    "00"  # PartitionData tags
    "00"  # TopicData tags
    "00"  # top-level tags: empty NodeEndpoints is the default, so it is not written
)


def _bqe_request(v: int, cluster_id: str | None) -> Any:
    part = struct("BeginQuorumEpochRequest", "PartitionData")(partition_index=0, leader_id=1, leader_epoch=5)
    req = cls("BeginQuorumEpochRequest")(
        cluster_id=cluster_id,
        topics=[struct("BeginQuorumEpochRequest", "TopicData")(topic_name=META, partitions=[part])],
    )
    if v >= 1:
        req.voter_id = 2
        part.voter_directory_id = U2
        req.leader_endpoints = [
            struct("BeginQuorumEpochRequest", "LeaderEndpoint")(
                name="CONTROLLER", host="localhost", port=9093
            )
        ]
    return req


BQE_REQUEST_V0 = hx(
    "0002 6331"  # ClusterId: int16-length string "c1" (v0 is not flexible)
    "00000001"  # Topics: int32 array length 1
    "0012 {META}"  # TopicName: int16 length 18
    "00000001"  # Partitions: int32 length 1
    "00000000"  # PartitionIndex 0
    "00000001"  # LeaderId 1
    "00000005"  # LeaderEpoch 5
)

BQE_REQUEST_V0_NULL_CLUSTER = hx(
    "ffff"  # ClusterId: int16 length -1 = null
    "00000001"  # Topics: 1
    "0012 {META}"  # TopicName
    "00000001"  # Partitions: 1
    "00000000"  # PartitionIndex 0
    "00000001"  # LeaderId 1
    "00000005"  # LeaderEpoch 5
)


BQE_REQUEST_V1 = hx(
    "03 6331"  # ClusterId: compact string "c1"
    "00000002"  # VoterId 2
    "02"  # Topics: 1
    "13 {META}"  # TopicName
    "02"  # Partitions: 1
    "00000000"  # PartitionIndex 0
    "{U2}"  # VoterDirectoryId
    "00000001"  # LeaderId 1
    "00000005"  # LeaderEpoch 5
    "00"  # PartitionData tags
    "00"  # TopicData tags
    "{LEADER_EP} 00"  # LeaderEndpoints, then top-level tags
)


def _quorum_response(name: str, v: int, leader: int, epoch: int, endpoints: bool) -> Any:
    part = struct(name, "PartitionData")(
        partition_index=0, error_code=0, leader_id=leader, leader_epoch=epoch
    )
    resp = cls(name)(error_code=0, topics=[struct(name, "TopicData")(topic_name=META, partitions=[part])])
    if endpoints:
        resp.node_endpoints = [struct(name, "NodeEndpoint")(node_id=1, host="localhost", port=9093)]
    return resp


QUORUM_RESPONSE_V0 = hx(
    "0000"  # ErrorCode 0
    "00000001"  # Topics: int32 length 1
    "0012 {META}"  # TopicName: int16 length
    "00000001"  # Partitions: int32 length 1
    "00000000"  # PartitionIndex 0
    "0000"  # ErrorCode 0
    "00000001"  # LeaderId 1
    "00000005"  # LeaderEpoch 5
)

QUORUM_RESPONSE_V1_TAGGED = hx(
    "0000"  # ErrorCode 0
    "02"  # Topics: compact 1
    "13 {META}"  # TopicName
    "02"  # Partitions: 1
    "00000000"  # PartitionIndex 0
    "0000"  # ErrorCode 0
    "00000001"  # LeaderId 1
    "00000005"  # LeaderEpoch 5
    "00"  # PartitionData tags
    "00"  # TopicData tags
    "{NODE_EP}"  # top-level tags: NodeEndpoints
)

QUORUM_RESPONSE_V1_NO_ENDPOINTS = hx(
    "0000"  # ErrorCode 0
    "02"  # Topics: 1
    "13 {META}"  # TopicName
    "02"  # Partitions: 1
    "00000000"  # PartitionIndex 0
    "0000"  # ErrorCode 0
    "00000002"  # LeaderId 2
    "00000006"  # LeaderEpoch 6
    "00"  # PartitionData tags
    "00"  # TopicData tags
    "00"  # top-level tags: none
)


def _eqe_request(v: int) -> Any:
    part = struct("EndQuorumEpochRequest", "PartitionData")(partition_index=0, leader_id=1, leader_epoch=5)
    req = cls("EndQuorumEpochRequest")(
        cluster_id="c1",
        topics=[struct("EndQuorumEpochRequest", "TopicData")(topic_name=META, partitions=[part])],
    )
    if v == 0:
        part.preferred_successors = [2, 3]
    else:
        part.preferred_candidates = [
            struct("EndQuorumEpochRequest", "ReplicaInfo")(candidate_id=2, candidate_directory_id=U2)
        ]
        req.leader_endpoints = [
            struct("EndQuorumEpochRequest", "LeaderEndpoint")(name="CONTROLLER", host="localhost", port=9093)
        ]
    return req


EQE_REQUEST_V0 = hx(
    "0002 6331"  # ClusterId "c1" (int16 length)
    "00000001"  # Topics: 1
    "0012 {META}"  # TopicName
    "00000001"  # Partitions: 1
    "00000000"  # PartitionIndex 0
    "00000001"  # LeaderId 1
    "00000005"  # LeaderEpoch 5
    "00000002 00000002 00000003"  # PreferredSuccessors: int32 length 2, then 2, 3 (v0 only)
)

EQE_REQUEST_V1 = hx(
    "03 6331"  # ClusterId compact "c1"
    "02"  # Topics: 1
    "13 {META}"  # TopicName
    "02"  # Partitions: 1
    "00000000"  # PartitionIndex 0
    "00000001"  # LeaderId 1
    "00000005"  # LeaderEpoch 5
    "02"  # PreferredCandidates: compact array, 1 element (v1+)
    "00000002"  # CandidateId 2
    "{U2}"  # CandidateDirectoryId
    "00"  # ReplicaInfo tags
    "00"  # PartitionData tags
    "00"  # TopicData tags
    "{LEADER_EP} 00"  # LeaderEndpoints, then top-level tags
)

CASES: list[tuple[str, int, Callable[[], Any], bytes]] = [
    ("VoteRequest", 0, lambda: _vote_request(0, "c1"), VOTE_REQUEST_V0),
    ("VoteRequest", 1, lambda: _vote_request(1, "c1"), VOTE_REQUEST_V1),
    ("VoteRequest", 2, lambda: _vote_request(2, None), VOTE_REQUEST_V2_NULL_CLUSTER),
    ("VoteResponse", 0, lambda: _vote_response(0), VOTE_RESPONSE_V0),
    ("VoteResponse", 1, lambda: _vote_response(1), VOTE_RESPONSE_V1_TAGGED),
    ("VoteResponse", 2, lambda: _vote_response(2), VOTE_RESPONSE_V1_TAGGED),  # v2 body == v1 body
    ("VoteResponse", 2, _vote_response_v2_rejected, VOTE_RESPONSE_V2_REJECTED),
    ("BeginQuorumEpochRequest", 0, lambda: _bqe_request(0, "c1"), BQE_REQUEST_V0),
    ("BeginQuorumEpochRequest", 0, lambda: _bqe_request(0, None), BQE_REQUEST_V0_NULL_CLUSTER),
    ("BeginQuorumEpochRequest", 1, lambda: _bqe_request(1, "c1"), BQE_REQUEST_V1),
    (
        "BeginQuorumEpochResponse",
        0,
        lambda: _quorum_response("BeginQuorumEpochResponse", 0, 1, 5, False),
        QUORUM_RESPONSE_V0,
    ),
    (
        "BeginQuorumEpochResponse",
        1,
        lambda: _quorum_response("BeginQuorumEpochResponse", 1, 1, 5, True),
        QUORUM_RESPONSE_V1_TAGGED,
    ),
    ("EndQuorumEpochRequest", 0, lambda: _eqe_request(0), EQE_REQUEST_V0),
    ("EndQuorumEpochRequest", 1, lambda: _eqe_request(1), EQE_REQUEST_V1),
    (
        "EndQuorumEpochResponse",
        0,
        lambda: _quorum_response("EndQuorumEpochResponse", 0, 1, 5, False),
        QUORUM_RESPONSE_V0,
    ),
    (
        "EndQuorumEpochResponse",
        1,
        lambda: _quorum_response("EndQuorumEpochResponse", 1, 2, 6, False),
        QUORUM_RESPONSE_V1_NO_ENDPOINTS,
    ),
    (
        "EndQuorumEpochResponse",
        1,
        lambda: _quorum_response("EndQuorumEpochResponse", 1, 1, 5, True),
        QUORUM_RESPONSE_V1_TAGGED,
    ),
]


@pytest.mark.parametrize(
    ("name", "version", "build", "golden"),
    CASES,
    ids=[f"{c[0]}-v{c[1]}-{i}" for i, c in enumerate(CASES)],
)
def test_golden(name: str, version: int, build: Callable[[], Any], golden: bytes) -> None:
    obj = build()
    assert type(obj).NAME == name
    check_golden(obj, version, golden)


def test_vote_v0_ignores_v1_fields_on_decode() -> None:
    # The v0 golden carries no VoterId/directory ids, so decoding leaves them at their defaults.
    got = cls("VoteRequest").decode(VOTE_REQUEST_V0, 0)
    assert got.voter_id == -1
    part = got.topics[0].partitions[0]
    assert part.replica_directory_id.int == 0
    assert part.voter_directory_id.int == 0
    assert part.pre_vote is False
