"""Version and value semantics of the generated message classes.

Invariants (CONTRACTS.md "Generated code"; Kafka MessageDataGenerator behaviour, PROTOCOL-FACTS §6.2):
1. A version outside the spec's validVersions raises UnsupportedVersionError on encode and on decode.
2. A non-ignorable field that the target version lacks may only hold its default; otherwise MessageEncodeError.
3. An ignorable field the target version lacks is silently dropped (and decodes as its default).
4. None in a field that is not nullable at the target version, or an out-of-range integer, is a
   MessageEncodeError.
5. Unknown tagged fields are kept on decode and re-emitted on encode, interleaved with known tags in tag order.
6. Header versions follow Kafka's rule, with ApiVersions responses always on response header v0 (KIP-511).
"""

from __future__ import annotations

from typing import Any

import pytest

from kwire.errors import MessageEncodeError, UnsupportedVersionError
from tests.messages.support import META, U1, cls, hx, messages, struct

# ---------------------------------------------------------------------------------------------- versions


def _all_classes() -> list[Any]:
    try:
        import generated.messages as reg
    except ImportError:
        return []
    return list(reg.ALL_CLASSES)


@pytest.mark.parametrize("c", _all_classes(), ids=lambda c: c.NAME)
def test_unsupported_versions_rejected(c: Any) -> None:
    for v in (c.LOWEST_VERSION - 1, c.HIGHEST_VERSION + 1, -1, 32767):
        if c.LOWEST_VERSION <= v <= c.HIGHEST_VERSION:
            continue
        with pytest.raises(UnsupportedVersionError):
            c().encode(v)
        with pytest.raises(UnsupportedVersionError):
            c.decode(b"", v)
        with pytest.raises(UnsupportedVersionError):
            c.read(b"", 0, v)


def test_removed_versions_are_unsupported() -> None:
    # Kafka 4.0 removed RequestHeader v0, Fetch v0-3 and Metadata v0-3.
    with pytest.raises(UnsupportedVersionError):
        cls("RequestHeader")().encode(0)
    with pytest.raises(UnsupportedVersionError):
        cls("FetchRequest")().encode(3)
    with pytest.raises(UnsupportedVersionError):
        cls("MetadataRequest").decode(b"", 3)


# ------------------------------------------------------------------------------- non-ignorable fields


def _vote_request_with_prevote() -> Any:
    part = struct("VoteRequest", "PartitionData")(pre_vote=True)
    return cls("VoteRequest")(topics=[struct("VoteRequest", "TopicData")(topic_name=META, partitions=[part])])


def _fetch_request_last_fetched_epoch(epoch: int) -> Any:
    part = struct("FetchRequest", "FetchPartition")(partition=0, fetch_offset=10, last_fetched_epoch=epoch)
    return cls("FetchRequest")(topics=[struct("FetchRequest", "FetchTopic")(topic="t", partitions=[part])])


def _describe_quorum_with_directory_id() -> Any:
    s = "DescribeQuorumResponse"
    voter = struct(s, "ReplicaState")(replica_id=1, replica_directory_id=U1)
    part = struct(s, "PartitionData")(current_voters=[voter])
    return cls(s)(topics=[struct(s, "TopicData")(topic_name=META, partitions=[part])])


def _leader_change_with_directory_id() -> Any:
    voter = struct("LeaderChangeMessage", "Voter")(voter_id=1, voter_directory_id=U1)
    return cls("LeaderChangeMessage")(leader_id=1, voters=[voter])


NON_IGNORABLE: list[tuple[str, Any, int]] = [
    ("Vote-PreVote-v0", _vote_request_with_prevote, 0),
    ("Vote-PreVote-v1", _vote_request_with_prevote, 1),
    ("Fetch-LastFetchedEpoch-v11", lambda: _fetch_request_last_fetched_epoch(3), 11),
    ("AddRaftVoter-AckWhenCommitted-v0", lambda: cls("AddRaftVoterRequest")(ack_when_committed=False), 0),
    ("DescribeQuorum-ReplicaDirectoryId-v1", _describe_quorum_with_directory_id, 1),
    ("FetchResponse-SessionId-v6", lambda: cls("FetchResponse")(session_id=5), 6),
    ("LeaderChange-VoterDirectoryId-v0", _leader_change_with_directory_id, 0),
    ("QuorumState-ClusterId-v1", lambda: cls("QuorumStateData")(cluster_id="c1"), 1),
]


@pytest.mark.parametrize(("case", "build", "version"), NON_IGNORABLE, ids=[n[0] for n in NON_IGNORABLE])
def test_non_default_non_ignorable_field_missing_from_version_fails(
    case: str, build: Any, version: int
) -> None:
    with pytest.raises(MessageEncodeError):
        build().encode(version)


def test_non_ignorable_field_at_default_is_fine() -> None:
    # The same fields at their defaults (or in versions that have them) encode without complaint.
    _fetch_request_last_fetched_epoch(-1).encode(11)
    _fetch_request_last_fetched_epoch(3).encode(12)
    cls("AddRaftVoterRequest")(ack_when_committed=True).encode(0)
    _vote_request_with_prevote().encode(2)
    _leader_change_with_directory_id().encode(1)


# ----------------------------------------------------------------------------------- ignorable fields


def test_ignorable_fields_are_dropped_in_older_versions() -> None:
    plain = cls("VoteRequest")(
        cluster_id="c1",
        topics=[
            struct("VoteRequest", "TopicData")(
                topic_name=META, partitions=[struct("VoteRequest", "PartitionData")(replica_epoch=4)]
            )
        ],
    )
    rich = cls("VoteRequest").decode(plain.encode(0), 0)
    rich.voter_id = 2
    rich.topics[0].partitions[0].replica_directory_id = U1
    rich.topics[0].partitions[0].voter_directory_id = U1
    assert rich.encode(0) == plain.encode(0)
    back = cls("VoteRequest").decode(rich.encode(0), 0)
    assert back == plain
    assert back.voter_id == -1


def test_ignorable_tagged_field_dropped_before_its_version() -> None:
    s = "FetchSnapshotRequest"
    part = struct(s, "PartitionSnapshot")(partition=0, replica_directory_id=U1)
    req = cls(s)(topics=[struct(s, "TopicSnapshot")(name=META, partitions=[part])])
    got = cls(s).decode(req.encode(0), 0)
    assert got.topics[0].partitions[0].replica_directory_id.int == 0
    assert cls(s).decode(req.encode(1), 1) == req


def test_begin_quorum_v0_drops_endpoints() -> None:
    s = "BeginQuorumEpochRequest"
    req = cls(s)(voter_id=3, leader_endpoints=[struct(s, "LeaderEndpoint")(name="C", host="h", port=1)])
    assert req.encode(0) == cls(s)().encode(0)


# --------------------------------------------------------------------------------- unwritable values


def _vote_response_topic_name(name: Any) -> Any:
    return cls("VoteResponse")(topics=[struct("VoteResponse", "TopicData")(topic_name=name)])


def _endpoint_port(port: Any) -> Any:
    return cls("VoteResponse")(
        node_endpoints=[struct("VoteResponse", "NodeEndpoint")(node_id=1, host="h", port=port)]
    )


UNWRITABLE: list[tuple[str, Any, int]] = [
    ("null-topic-name", lambda: _vote_response_topic_name(None), 1),
    ("null-topics-array", lambda: cls("VoteRequest")(topics=None), 0),
    ("null-client-software-name", lambda: cls("ApiVersionsRequest")(client_software_name=None), 3),
    ("null-uuid", lambda: cls("RemoveRaftVoterRequest")(voter_directory_id=None), 0),
    ("null-nonnullable-records", lambda: _snapshot_records(None), 0),
    ("null-cluster-id-v0-quorum-state", lambda: cls("QuorumStateData")(cluster_id=None), 0),
    ("uint16-port-70000", lambda: _endpoint_port(70000), 1),
    ("uint16-port-negative", lambda: _endpoint_port(-1), 1),
    ("int32-overflow", lambda: cls("VoteRequest")(voter_id=2**31), 1),
    ("int16-overflow", lambda: cls("VoteResponse")(error_code=40000), 0),
    ("int8-overflow", lambda: cls("FetchRequest")(isolation_level=200), 4),
    ("int64-overflow", lambda: cls("SnapshotHeaderRecord")(last_contained_log_timestamp=2**63), 0),
    ("wrong-type", lambda: cls("VoteRequest")(voter_id="two"), 1),
]


def _snapshot_records(records: Any) -> Any:
    s = "FetchSnapshotResponse"
    part = struct(s, "PartitionSnapshot")(unaligned_records=records)
    return cls(s)(topics=[struct(s, "TopicSnapshot")(name=META, partitions=[part])])


@pytest.mark.parametrize(("case", "build", "version"), UNWRITABLE, ids=[u[0] for u in UNWRITABLE])
def test_unwritable_values_raise_encode_error(case: str, build: Any, version: int) -> None:
    with pytest.raises(MessageEncodeError):
        build().encode(version)


def test_nullable_fields_accept_none() -> None:
    assert cls("MetadataRequest")(topics=None).encode(4)[:4] == hx("ffffffff")  # null = all topics
    assert cls("VoteRequest")(cluster_id=None).encode(0)[:1] == b"\x00"
    assert cls("FetchResponse").decode(cls("FetchResponse")().encode(12), 12) == cls("FetchResponse")()


def test_port_boundaries_are_writable() -> None:
    for port in (0, 65535):
        got = cls("VoteResponse").decode(_endpoint_port(port).encode(1), 1)
        assert got.node_endpoints[0].port == port


# ------------------------------------------------------------------------------------ tagged fields


def test_unknown_tags_kept_and_reemitted_in_tag_order() -> None:
    wire = hx(
        "0000"  # ErrorCode 0
        "01"  # Topics: empty
        "03"  # top-level tags: 3
        "00 0a 02 00000001 02 68 0001 00"  # tag 0 NodeEndpoints: 1 x (id 1, host "h", port 1)
        "01 01 aa"  # tag 1: unknown, 1 byte
        "03 02 bbcc"  # tag 3: unknown, 2 bytes
    )
    got = cls("VoteResponse").decode(wire, 1)
    assert [(e.node_id, e.host, e.port) for e in got.node_endpoints] == [(1, "h", 1)]
    assert got.unknown_tagged_fields == [(1, b"\xaa"), (3, b"\xbb\xcc")]
    assert got.encode(1) == wire


def test_unknown_tags_sorted_among_known_tags_on_encode() -> None:
    req = cls("FetchSnapshotRequest")(cluster_id="c1", unknown_tagged_fields=[(2, b"\x02"), (1, b"\x01")])
    assert req.encode(0) == hx(
        "ffffffff"  # ReplicaId -1
        "7fffffff"  # MaxBytes default
        "01"  # Topics: empty
        "03"  # top-level tags: 3
        "00 03 03 6331"  # tag 0 ClusterId "c1"
        "01 01 01"  # tag 1 (unknown)
        "02 01 02"  # tag 2 (unknown)
    )


def test_unknown_tags_in_nested_struct_survive() -> None:
    s = "VoteResponse"
    part = struct(s, "PartitionData")(leader_id=1, unknown_tagged_fields=[(7, b"xyz")])
    resp = cls(s)(topics=[struct(s, "TopicData")(topic_name="t", partitions=[part])])
    got = cls(s).decode(resp.encode(0), 0)
    assert got.topics[0].partitions[0].unknown_tagged_fields == [(7, b"xyz")]
    assert got == resp


def test_unknown_tags_cannot_be_written_in_non_flexible_version() -> None:
    resp = cls("BeginQuorumEpochResponse")(unknown_tagged_fields=[(5, b"x")])
    with pytest.raises((MessageEncodeError, UnsupportedVersionError)):
        resp.encode(0)
    assert cls("BeginQuorumEpochResponse").decode(resp.encode(1), 1) == resp


def test_default_tagged_values_are_not_written() -> None:
    # FetchRequest v18 partition HighWatermark defaults to int64 max; at the default nothing is tagged.
    s = "FetchRequest"
    part = struct(s, "FetchPartition")()
    req = cls(s)(topics=[struct(s, "FetchTopic")(partitions=[part])])
    plain = req.encode(18)
    part.high_watermark = 42
    tagged = req.encode(18)
    # The partition's tag count goes 00 -> 01 (same length) and tag 1 / size 8 / int64 42 are added.
    assert len(tagged) == len(plain) + 1 + 1 + 8
    assert hx("01 01 08 000000000000002a") in tagged
    assert cls(s).decode(tagged, 18).topics[0].partitions[0].high_watermark == 42


# ------------------------------------------------------------------------------------------ headers


def test_request_header_client_id_is_int16_length_even_in_v2() -> None:
    client = "k" * 200  # a compact string would start with the varint c9 01
    got = cls("RequestHeader")(
        request_api_key=18, request_api_version=3, correlation_id=1, client_id=client
    ).encode(2)
    assert got == hx("0012 0003 00000001 00c8") + client.encode() + b"\x00"


@pytest.mark.parametrize("v", range(0, 5))
def test_api_versions_response_header_is_always_v0(v: int) -> None:
    spec = messages().API_SPECS[18]
    assert spec.response_header_version(v) == 0
    assert spec.request_header_version(v) == (2 if v >= 3 else 1)


HEADER_VERSIONS: list[tuple[int, int, int, int]] = [
    # (api key, api version, request header version, response header version)
    (52, 0, 2, 1),
    (52, 2, 2, 1),
    (53, 0, 1, 0),
    (53, 1, 2, 1),
    (54, 0, 1, 0),
    (54, 1, 2, 1),
    (55, 0, 2, 1),
    (59, 1, 2, 1),
    (1, 11, 1, 0),
    (1, 12, 2, 1),
    (1, 18, 2, 1),
    (3, 8, 1, 0),
    (3, 9, 2, 1),
    (60, 0, 2, 1),
    (80, 1, 2, 1),
    (81, 0, 2, 1),
    (82, 0, 2, 1),
    (57, 0, 2, 1),
]


@pytest.mark.parametrize(("key", "v", "req", "resp"), HEADER_VERSIONS)
def test_header_versions(key: int, v: int, req: int, resp: int) -> None:
    spec = messages().API_SPECS[key]
    assert (spec.request_header_version(v), spec.response_header_version(v)) == (req, resp)


# ------------------------------------------------------------------------------------------ defaults


def test_spec_defaults() -> None:
    assert cls("VoteRequest")().cluster_id is None
    assert cls("VoteRequest")().voter_id == -1
    fetch = cls("FetchRequest")()
    assert (fetch.max_bytes, fetch.session_epoch, fetch.replica_id, fetch.cluster_id) == (
        0x7FFFFFFF,
        -1,
        -1,
        None,
    )
    assert fetch.replica_state.replica_id == -1
    assert struct("FetchRequest", "FetchPartition")().high_watermark == 2**63 - 1
    assert struct("FetchRequest", "FetchPartition")().last_fetched_epoch == -1
    assert cls("AddRaftVoterRequest")().ack_when_committed is True
    assert cls("FetchSnapshotRequest")().max_bytes == 0x7FFFFFFF
    assert struct("DescribeQuorumResponse", "ReplicaState")().last_fetch_timestamp == -1
    assert cls("DescribeClusterResponse")().cluster_authorized_operations == -(2**31)
    assert cls("DescribeClusterRequest")().endpoint_type == 1
    assert cls("ApiVersionsResponse")().finalized_features_epoch == -1
    assert cls("UpdateRaftVoterResponse")().current_leader.leader_id == -1
    assert cls("QuorumStateData")().voted_id == -1
    assert cls("RemoveRaftVoterRequest")().voter_directory_id.int == 0
    assert cls("UpdateFeaturesRequest")().timeout_ms == 60000
    assert struct("FetchResponse", "PartitionData")().records is None
