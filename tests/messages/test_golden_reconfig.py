"""Golden bytes for the voter-set RPCs (AddRaftVoter 80, RemoveRaftVoter 81, UpdateRaftVoter 82) and for
kraftd's own ReadOffset RPC (KIP-650, messages/ReadOffsetRequest.json).

Hand-written from /work/shared/wire-layouts.txt (ReadOffset: from our spec), one line per field. All are
flexible from v0. Invariants: 1. ``obj.encode(v)`` equals the golden; 2. ``Cls.decode(golden, v) == obj``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.messages.support import META, U1, check_golden, cls, hx, struct


def _listener(spec: str) -> Any:
    return struct(spec, "Listener")(name="CONTROLLER", host="localhost", port=9093)


def _add_request(v: int) -> Any:
    req = cls("AddRaftVoterRequest")(
        cluster_id="c1",
        timeout_ms=30000,
        voter_id=3,
        voter_directory_id=U1,
        listeners=[_listener("AddRaftVoterRequest")],
    )
    if v >= 1:
        req.ack_when_committed = False
    return req


ADD_REQUEST_V0 = hx(
    "03 6331"  # ClusterId: compact string "c1"
    "00007530"  # TimeoutMs 30000
    "00000003"  # VoterId 3
    "{U1}"  # VoterDirectoryId
    "{LEADER_EP}"  # Listeners: 1 x (Name "CONTROLLER", Host "localhost", Port 9093 uint16, tags)
    "00"  # top-level tags
)

ADD_REQUEST_V1 = hx(
    "03 6331"  # ClusterId "c1"
    "00007530"  # TimeoutMs 30000
    "00000003"  # VoterId 3
    "{U1}"  # VoterDirectoryId
    "{LEADER_EP}"  # Listeners: 1
    "00"  # AckWhenCommitted false (v1+, default true)
    "00"  # top-level tags
)

ADD_RESPONSE_V0_NULL_MESSAGE = hx(
    "00000000"  # ThrottleTimeMs 0
    "0000"  # ErrorCode 0
    "00"  # ErrorMessage: compact nullable string, null
    "00"  # top-level tags
)

ADD_RESPONSE_V1 = hx(
    "00000000"  # ThrottleTimeMs 0
    "0007"  # ErrorCode 7 REQUEST_TIMED_OUT
    "0a 74696d6564206f7574"  # ErrorMessage: len 9 (+1), "timed out"
    "00"  # top-level tags
)

REMOVE_REQUEST_V0 = hx(
    "03 6331"  # ClusterId "c1"
    "00000003"  # VoterId 3
    "{U1}"  # VoterDirectoryId
    "00"  # top-level tags
)

REMOVE_RESPONSE_V0 = hx(
    "00000064"  # ThrottleTimeMs 100
    "007f"  # ErrorCode 127 VOTER_NOT_FOUND
    "00"  # ErrorMessage null
    "00"  # top-level tags
)


def _update_request() -> Any:
    s = "UpdateRaftVoterRequest"
    return cls(s)(
        cluster_id="c1",
        current_leader_epoch=5,
        voter_id=3,
        voter_directory_id=U1,
        listeners=[_listener(s)],
        kraft_version_feature=struct(s, "KRaftVersionFeature")(
            min_supported_version=0, max_supported_version=1
        ),
    )


UPDATE_REQUEST_V0 = hx(
    "03 6331"  # ClusterId "c1"
    "00000005"  # CurrentLeaderEpoch 5
    "00000003"  # VoterId 3
    "{U1}"  # VoterDirectoryId
    "{LEADER_EP}"  # Listeners: 1
    "0000"  # KRaftVersionFeature.MinSupportedVersion 0
    "0001"  # KRaftVersionFeature.MaxSupportedVersion 1
    "00"  # KRaftVersionFeature tags
    "00"  # top-level tags
)


def _update_response() -> Any:
    s = "UpdateRaftVoterResponse"
    leader = struct(s, "CurrentLeader")(leader_id=1, leader_epoch=5, host="localhost", port=9093)
    return cls(s)(throttle_time_ms=0, error_code=0, current_leader=leader)


UPDATE_RESPONSE_V0_TAGGED = hx(
    "00000000"  # ThrottleTimeMs 0
    "0000"  # ErrorCode 0
    "01"  # top-level tags: 1 present
    "00"  # tag 0 = CurrentLeader
    "17"  # payload size 23
    "00000001"  # LeaderId 1
    "00000005"  # LeaderEpoch 5
    "0a {LOCALHOST}"  # Host "localhost"
    "00002385"  # Port 9093 as int32 (not uint16 here)
    "00"  # CurrentLeader tags
)


def _read_offset_request() -> Any:
    s = "ReadOffsetRequest"
    part = struct(s, "PartitionData")(partition_index=0)
    topics = [struct(s, "TopicData")(topic_name=META, partitions=[part])]
    return cls(s)(cluster_id=None, replica_id=2, replica_epoch=5, topics=topics)


READ_OFFSET_REQUEST_V0 = hx(
    "00"  # ClusterId null
    "00000002"  # ReplicaId 2
    "00000005"  # ReplicaEpoch 5
    "02"  # Topics: 1
    "13 {META}"  # TopicName
    "02"  # Partitions: 1
    "00000000"  # PartitionIndex 0
    "00"  # PartitionData tags
    "00"  # TopicData tags
    "00"  # top-level tags
)


def _read_offset_response() -> Any:
    s = "ReadOffsetResponse"
    part = struct(s, "PartitionData")(
        partition_index=0,
        error_code=0,
        high_watermark=100,
        applied_offset=96,
        current_leader=struct(s, "LeaderIdAndEpoch")(leader_id=1, leader_epoch=5),
    )
    return cls(s)(
        error_code=0,
        topics=[struct(s, "TopicData")(topic_name=META, partitions=[part])],
        node_endpoints=[struct(s, "NodeEndpoint")(node_id=1, host="localhost", port=9093)],
    )


READ_OFFSET_RESPONSE_V0 = hx(
    "0000"  # ErrorCode 0
    "02"  # Topics: 1
    "13 {META}"  # TopicName
    "02"  # Partitions: 1
    "00000000"  # PartitionIndex 0
    "0000"  # ErrorCode 0
    "0000000000000064"  # HighWatermark 100
    "0000000000000060"  # AppliedOffset 96
    "00000001"  # CurrentLeader.LeaderId 1 (regular struct field)
    "00000005"  # CurrentLeader.LeaderEpoch 5
    "00"  # CurrentLeader tags
    "00"  # PartitionData tags
    "00"  # TopicData tags
    "{NODE_EP}"  # top-level tags: NodeEndpoints (tag 0)
)

CASES: list[tuple[str, int, Callable[[], Any], bytes]] = [
    ("AddRaftVoterRequest", 0, lambda: _add_request(0), ADD_REQUEST_V0),
    ("AddRaftVoterRequest", 1, lambda: _add_request(1), ADD_REQUEST_V1),
    (
        "AddRaftVoterResponse",
        0,
        lambda: cls("AddRaftVoterResponse")(throttle_time_ms=0, error_code=0, error_message=None),
        ADD_RESPONSE_V0_NULL_MESSAGE,
    ),
    (
        "AddRaftVoterResponse",
        1,
        lambda: cls("AddRaftVoterResponse")(throttle_time_ms=0, error_code=7, error_message="timed out"),
        ADD_RESPONSE_V1,
    ),
    (
        "RemoveRaftVoterRequest",
        0,
        lambda: cls("RemoveRaftVoterRequest")(cluster_id="c1", voter_id=3, voter_directory_id=U1),
        REMOVE_REQUEST_V0,
    ),
    (
        "RemoveRaftVoterResponse",
        0,
        lambda: cls("RemoveRaftVoterResponse")(throttle_time_ms=100, error_code=127, error_message=None),
        REMOVE_RESPONSE_V0,
    ),
    ("UpdateRaftVoterRequest", 0, _update_request, UPDATE_REQUEST_V0),
    ("UpdateRaftVoterResponse", 0, _update_response, UPDATE_RESPONSE_V0_TAGGED),
    ("ReadOffsetRequest", 0, _read_offset_request, READ_OFFSET_REQUEST_V0),
    ("ReadOffsetResponse", 0, _read_offset_response, READ_OFFSET_RESPONSE_V0),
]


@pytest.mark.parametrize(
    ("name", "version", "build", "golden"),
    CASES,
    ids=[f"{c[0]}-v{c[1]}" for c in CASES],
)
def test_golden(name: str, version: int, build: Callable[[], Any], golden: bytes) -> None:
    obj = build()
    assert type(obj).NAME == name
    check_golden(obj, version, golden)


def test_add_voter_v0_decodes_ack_when_committed_default() -> None:
    # AckWhenCommitted does not exist in v0; a v0 request means "answer after commit" (default true).
    assert cls("AddRaftVoterRequest").decode(ADD_REQUEST_V0, 0).ack_when_committed is True


def test_update_voter_response_default_leader_is_not_written() -> None:
    # CurrentLeader left at its default (-1/-1, empty host, port 0) is omitted from the tag section.
    got = cls("UpdateRaftVoterResponse")(throttle_time_ms=0, error_code=0).encode(0)
    assert got == hx("00000000 0000 00")


def test_read_offset_registry_entry() -> None:
    reg = pytest.importorskip("generated.messages")
    req, resp = reg.by_api_key(650)
    assert (req.NAME, resp.NAME) == ("ReadOffsetRequest", "ReadOffsetResponse")
    spec = reg.API_SPECS[650]
    assert spec.listeners == frozenset({"controller"})
    assert (spec.lowest_version, spec.highest_version, spec.lowest_flexible_version) == (0, 0, 0)
    assert spec.request_header_version(0) == 2
    assert spec.response_header_version(0) == 1
