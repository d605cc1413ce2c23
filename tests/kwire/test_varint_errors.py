from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kwire import errors
from kwire.errors import ErrorCode, KraftError, LocalProtocolError, MessageDecodeError
from kwire.varint import (
    decode_unsigned_varint,
    decode_varint,
    decode_varlong,
    encode_unsigned_varint,
    encode_varint,
    encode_varlong,
    varint_size,
)


@pytest.mark.parametrize(
    ("value", "wire"),
    [
        (0, "00"),
        (-1, "01"),
        (1, "02"),
        (-64, "7f"),
        (64, "8001"),
        (2**31 - 1, "feffffff0f"),
        (-(2**31), "ffffffff0f"),
    ],
)
def test_zigzag_golden(value, wire):
    assert encode_varint(value).hex() == wire
    assert decode_varint(bytes.fromhex(wire)) == (value, len(wire) // 2)


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trip(v):
    e = encode_varlong(v)
    assert decode_varlong(e) == (v, len(e)) and varint_size(v) == len(e)


@given(st.integers(0, 2**32 - 1))
def test_unsigned_round_trip(v):
    e = encode_unsigned_varint(v)
    assert decode_unsigned_varint(e + b"tail") == (v, len(e))


def test_unsigned_golden():
    assert encode_unsigned_varint(300).hex() == "ac02"


def test_range_and_malformed():
    for bad in (2**31, -(2**31) - 1):
        with pytest.raises(LocalProtocolError):
            encode_varint(bad)
    with pytest.raises(LocalProtocolError):
        encode_unsigned_varint(-1)
    for raw in (b"", b"\x80", b"\xff\xff\xff\xff\xff\x01", b"\xff\xff\xff\xff\x7f"):
        with pytest.raises(MessageDecodeError):
            decode_varint(raw)
    with pytest.raises(MessageDecodeError):
        decode_varlong(b"\xff" * 10 + b"\x01")


def test_error_table():
    assert ErrorCode.UNSUPPORTED_VERSION == 35 and ErrorCode.UNSUPPORTED_COMPRESSION_TYPE == 76
    assert ErrorCode.SHARE_SESSION_LIMIT_REACHED == 133
    assert sorted(ErrorCode) == list(range(-1, 134))  # every code Kafka defines, no gaps
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER.retriable and ErrorCode.REQUEST_TIMED_OUT.retriable
    assert ErrorCode.FENCED_LEADER_EPOCH.retriable and ErrorCode.UNKNOWN_LEADER_EPOCH.retriable
    assert not ErrorCode.INVALID_REQUEST.retriable and not ErrorCode.INCONSISTENT_CLUSTER_ID.retriable
    assert not ErrorCode.CLUSTER_AUTHORIZATION_FAILED.retriable
    assert all(isinstance(e.message, str) and e.message for e in ErrorCode)
    assert ErrorCode.from_code(9999) is ErrorCode.UNKNOWN_SERVER_ERROR
    assert ErrorCode.from_code(104) is ErrorCode.INCONSISTENT_CLUSTER_ID


def test_exception_tree_carries_codes():
    assert issubclass(errors.CorruptRecordError, errors.RemoteProtocolError)
    assert errors.CorruptRecordError("x").error_code is ErrorCode.CORRUPT_MESSAGE
    assert errors.UnsupportedVersionError("x").error_code is ErrorCode.UNSUPPORTED_VERSION
    assert issubclass(errors.ApiNotSupportedError, errors.UnsupportedVersionError)
    assert errors.UnsupportedCompressionError("x").error_code is ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert errors.FrameSizeError("x").error_code is ErrorCode.INVALID_REQUEST
    assert errors.RequestTimeoutError("x").error_code is ErrorCode.REQUEST_TIMED_OUT
    e = errors.ErrorResponse(ErrorCode.FENCED_LEADER_EPOCH)
    assert e.error_code is ErrorCode.FENCED_LEADER_EPOCH and "FENCED_LEADER_EPOCH" in str(e)
    assert isinstance(errors.LocalProtocolError("x", ErrorCode.INVALID_REQUEST), KraftError)
    assert errors.LocalProtocolError("x", ErrorCode.INVALID_REQUEST).error_code is ErrorCode.INVALID_REQUEST
