from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generated.api_versions_request import ApiVersionsRequest
from generated.api_versions_response import ApiVersion, ApiVersionsResponse
from generated.describe_quorum_request import DescribeQuorumRequest
from generated.describe_quorum_response import DescribeQuorumResponse
from generated.vote_request import VoteRequest
from kwire.apiversions import (
    build_api_versions_response,
    controller_apis,
    negotiate,
    unsupported_version_response,
    valid_client_software,
)
from kwire.errors import (
    ApiNotSupportedError,
    KraftError,
    MessageDecodeError,
    RemoteProtocolError,
    UnknownApiKeyError,
    UnsupportedVersionError,
)
from kwire.headers import decode_response, encode_request, encode_response, parse_request

# each test runs on the compiled codec engine and on the pure-Python generated code (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("codec_path")

SERVED = controller_apis()


def test_request_header_v1_golden():
    raw = encode_request(18, 0, 7, "ab", ApiVersionsRequest())
    assert raw.hex() == "001200000000000700026162"


def test_request_header_v2_keeps_int16_client_id():
    raw = encode_request(55, 0, 1, "ab", DescribeQuorumRequest())
    # int16-length client id even in header v2, then the header's empty tag buffer, then the body
    assert raw[:13].hex() == "00370000000000010002616200"
    null_id = encode_request(55, 0, 1, None, DescribeQuorumRequest())
    assert null_id[:11].hex() == "0037000000000001ffff00"
    parsed = parse_request(null_id, SERVED)
    assert parsed.header.client_id is None and parsed.header_version == 2


def test_response_headers():
    body = DescribeQuorumResponse(error_code=0)
    raw = encode_response(55, 0, 9, body)
    assert raw[:5].hex() == "0000000900"  # v1: correlation id + tag buffer
    assert decode_response(raw, 55, 0) == (9, body)
    # ApiVersions always uses response header v0, even for flexible body versions
    av = build_api_versions_response(4, {18: (0, 4)}, supported_features={})
    raw = encode_response(18, 4, 3, av)
    assert raw[:4].hex() == "00000003" and raw[4:] == av.encode(4)
    assert decode_response(raw, 18, 4) == (3, av)


def test_parse_round_trip_and_order_of_checks():
    req = VoteRequest(cluster_id="c")
    for v in (0, 1, 2):
        p = parse_request(encode_request(52, v, 11, "x", req), SERVED)
        assert (p.api_key, p.api_version, p.correlation_id, p.body) == (52, v, 11, req)
    # unknown api key: refused from the first four bytes, before the rest is even looked at
    with pytest.raises(UnknownApiKeyError):
        parse_request(bytes.fromhex("7fff0000") + b"garbage", SERVED)
    with pytest.raises(UnknownApiKeyError):  # a real API this listener does not serve (Metadata: broker only)
        parse_request(bytes.fromhex("00030004") + bytes(8), SERVED)
    # unsupported version of a non-ApiVersions API → typed error (the server closes the connection)
    bad = bytearray(encode_request(52, 2, 11, "x", req))
    bad[2:4] = (3).to_bytes(2, "big")
    with pytest.raises(UnsupportedVersionError):
        parse_request(bytes(bad), SERVED)
    with pytest.raises(MessageDecodeError):
        parse_request(b"\x00\x12", SERVED)
    assert parse_request(encode_request(52, 2, 11, "x", req) + b"\x00", SERVED).trailing == 1  # contract 4
    with pytest.raises(RemoteProtocolError):
        parse_request(encode_request(52, 2, 11, "x", req)[:-3], SERVED)


def test_unsupported_api_versions_is_answered_not_refused():
    raw = encode_request(
        18, 4, 5, "c", ApiVersionsRequest(client_software_name="a", client_software_version="1")
    )
    p = parse_request(raw, {**SERVED, 18: (0, 3)})
    assert p.unsupported_api_versions and p.body is None and p.header_version == 2
    # a future version this code has no schema for still gets the v0 answer
    future = bytes.fromhex("0012000900000005ffff00")
    assert parse_request(future, SERVED).unsupported_api_versions
    resp = unsupported_version_response({**SERVED, 18: (0, 3)})
    assert encode_response(18, 0, 5, resp).hex() == "00000005002300000001001200000003"
    # the client reads it at v0 although it asked at v4
    cid, decoded = decode_response(encode_response(18, 0, 5, resp), 18, 4)
    assert cid == 5 and decoded.error_code == 35 and decoded.api_keys == [ApiVersion(18, 0, 3)]


def test_kraft_version_feature_only_for_v4_requesters():
    v4 = build_api_versions_response(
        4, SERVED, finalized_features={"kraft.version": (0, 1)}, finalized_features_epoch=7
    )
    assert [(f.name, f.min_version, f.max_version) for f in v4.supported_features] == [
        ("kraft.version", 0, 1)
    ]
    assert [(f.name, f.min_version_level, f.max_version_level) for f in v4.finalized_features] == [
        ("kraft.version", 0, 1)
    ]
    assert v4.finalized_features_epoch == 7
    v3 = build_api_versions_response(3, SERVED)
    assert v3.supported_features == []
    other = build_api_versions_response(
        3, SERVED, supported_features={"x.version": (1, 2), "kraft.version": (0, 1)}
    )
    assert [f.name for f in other.supported_features] == ["x.version"]
    assert [(a.api_key, a.min_version, a.max_version) for a in v4.api_keys] == sorted(
        (k, lo, hi) for k, (lo, hi) in SERVED.items()
    )


def test_controller_listener_apis():
    assert SERVED[18] == (0, 4) and SERVED[52] == (0, 2) and SERVED[1][1] >= 17
    assert 3 not in SERVED  # Metadata is served by brokers only


def test_client_software_validation():
    assert (
        valid_client_software("kafka-python")
        and valid_client_software("3.0.12")
        and valid_client_software("a")
    )
    assert (
        not valid_client_software("") and not valid_client_software("-x") and not valid_client_software("a b")
    )


def test_negotiation_picks_highest_common_and_refuses_missing():
    peer = ApiVersionsResponse(api_keys=[ApiVersion(52, 0, 1), ApiVersion(1, 4, 17), ApiVersion(60, 3, 5)])
    n = negotiate({52: (0, 2), 1: (4, 18), 60: (0, 2), 80: (0, 1)}, peer)
    assert n.version_for(52) == 1 and n.version_for(1) == 17
    with pytest.raises(ApiNotSupportedError, match="does not support"):
        n.version_for(80)
    with pytest.raises(ApiNotSupportedError, match="both sides"):
        n.version_for(60)
    assert not n.supports(60) and n.supports(52)


@settings(max_examples=300, deadline=None)
@given(
    api_key=st.sampled_from(sorted(SERVED)) | st.integers(-(2**15), 2**15 - 1),
    version=st.integers(-(2**15), 2**15 - 1),
    tail=st.binary(max_size=80),
)
def test_garbage_requests_raise_only_typed_errors(api_key, version, tail):
    frame = api_key.to_bytes(2, "big", signed=True) + version.to_bytes(2, "big", signed=True) + tail
    try:
        parse_request(frame, SERVED)
    except KraftError:
        pass


@settings(max_examples=200, deadline=None)
@given(api_key=st.sampled_from(sorted(SERVED)), data=st.data())
def test_garbage_responses_raise_only_typed_errors(api_key, data):
    lo, hi = SERVED[api_key]
    version = data.draw(st.integers(lo, hi))
    frame = data.draw(st.binary(max_size=80))
    try:
        decode_response(frame, api_key, version)
    except KraftError:
        pass


def test_bytes_after_a_request_body_are_ignored_as_kafka_does():
    # librdkafka 2.16 sends exactly this Metadata v13 request (captured on loopback): the body
    # (null topics, false, false, no tags) is followed by three more bytes. Kafka's broker parses the body
    # and never checks what remains, so the request is served.
    frame = bytes.fromhex("0003000d00000003000772646b61666b610000000000010000")
    parsed = parse_request(frame, {3: (4, 13)})
    assert parsed.body.topics is None and parsed.body.allow_auto_topic_creation is False
    assert parsed.trailing == 3 and parsed.correlation_id == 3
    with pytest.raises(MessageDecodeError):
        parse_request(frame[:20], {3: (4, 13)})  # a body cut short is still an error
