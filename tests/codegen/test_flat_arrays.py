"""Arrays of flat (all fixed-width) structs: long ones are read with one iter_unpack, falling back to the
per-element reader from the first element that carries tagged fields. Both paths must agree exactly."""

from __future__ import annotations

import uuid

import pytest

from generated.api_versions_response import ApiVersion, ApiVersionsResponse
from generated.describe_quorum_response import DescribeQuorumResponse, PartitionData, ReplicaState, TopicData
from kwire.errors import MessageDecodeError


def _api(n: int, tagged: set[int]) -> ApiVersionsResponse:
    keys = [
        ApiVersion(
            api_key=i,
            min_version=-i,
            max_version=i * 7,
            unknown_tagged_fields=[(5, b"x" * i), (9, b"")] if i in tagged else [],
        )
        for i in range(n)
    ]
    return ApiVersionsResponse(api_keys=keys, throttle_time_ms=3)


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 40, 200])
@pytest.mark.parametrize("tagged", [set(), {0}, {3}, {7}, {8}, {2, 30, 199}])
def test_api_keys_round_trip(n: int, tagged: set[int]) -> None:
    m = _api(n, {t for t in tagged if t < n})
    for v in (3, 4):
        data = m.encode(v)
        assert ApiVersionsResponse.decode(data, v) == m
        assert ApiVersionsResponse.read(b"??" + data + b"!", 2, v) == (m, len(data) + 2)
    plain = _api(n, set())
    for v in (0, 1, 2):
        data = plain.encode(v)
        back = ApiVersionsResponse.decode(data, v)
        assert back.api_keys == plain.api_keys
        assert back.encode(v) == data


@pytest.mark.parametrize("v", [1, 3])
def test_api_keys_truncated_or_overclaimed(v: int) -> None:
    data = _api(20, {11} if v == 3 else set()).encode(v)
    for cut in range(len(data)):
        with pytest.raises(MessageDecodeError):
            ApiVersionsResponse.decode(data[:cut], v)
        with pytest.raises(MessageDecodeError):
            ApiVersionsResponse.read(data[:cut], 0, v)


@pytest.mark.parametrize("v", [0, 1, 2])
def test_replica_states_with_uuids(v: int) -> None:
    def rs(i: int) -> ReplicaState:
        return ReplicaState(
            replica_id=i,
            replica_directory_id=uuid.UUID(int=i * 0x10001 + 1) if v >= 2 else uuid.UUID(int=0),
            log_end_offset=10 * i,
            last_fetch_timestamp=i if v >= 1 else -1,
            last_caught_up_timestamp=-i if v >= 1 else -1,
            unknown_tagged_fields=[(1, b"ab")] if i == 10 else [],
        )

    part = PartitionData(current_voters=[rs(i) for i in range(12)], observers=[rs(i) for i in range(8)])
    m = DescribeQuorumResponse(
        error_message="" if v < 2 else None, topics=[TopicData(topic_name="t", partitions=[part])]
    )
    if v < 2:
        part.error_message = ""
    else:
        part.error_message = None
    assert DescribeQuorumResponse.decode(m.encode(v), v) == m
