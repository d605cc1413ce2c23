"""Generic properties of every generated class in the repo's generated/ package."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generated.messages import ALL_CLASSES, API_SPECS
from kwire.errors import MessageDecodeError, UnsupportedVersionError

# each test runs on the compiled codec engine and on the pure-Python generated code (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("codec_path")

CASES = [(cls, v) for cls in ALL_CLASSES for v in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1)]


def _id(case: tuple[type, int]) -> str:
    return f"{case[0].__name__}-v{case[1]}"


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_default_round_trip_and_truncation(case: tuple[type, int]) -> None:
    cls, v = case
    obj = cls()
    enc = obj.encode(v)
    assert cls.decode(enc, v) == obj
    out = bytearray(b"\x01")
    obj.write(out, v)
    assert bytes(out[1:]) == enc
    assert cls.read(out, 1, v) == (obj, len(out))
    for cut in range(len(enc)):
        with pytest.raises(MessageDecodeError):
            cls.decode(enc[:cut], v)


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
def test_versions_outside_range_unsupported(cls: type) -> None:
    for v in (cls.LOWEST_VERSION - 1, cls.HIGHEST_VERSION + 1):
        with pytest.raises(UnsupportedVersionError):
            cls().encode(v)
        with pytest.raises(UnsupportedVersionError):
            cls.decode(b"", v)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=64), seed=st.integers(0, 2**32))
def test_garbage_only_raises_decode_error(data: bytes, seed: int) -> None:
    cls, v = random.Random(seed).choice(CASES)
    try:
        cls.decode(data, v)
    except MessageDecodeError:
        pass


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=4),
)
def test_mutated_encodings_only_raise_decode_error(seed: int, flips: list[tuple[int, int]]) -> None:
    cls, v = random.Random(seed).choice(CASES)
    enc = bytearray(cls().encode(v))
    if not enc:
        return
    for pos, val in flips:
        enc[pos % len(enc)] = val
    try:
        cls.decode(bytes(enc), v)
    except MessageDecodeError:
        pass


def test_header_versions_of_real_apis() -> None:
    vote = API_SPECS[52]
    assert (
        vote.name == "Vote" and vote.request_header_version(0) == 2 and vote.response_header_version(2) == 1
    )
    api_versions = API_SPECS[18]
    assert [api_versions.request_header_version(v) for v in range(5)] == [1, 1, 1, 2, 2]
    assert [api_versions.response_header_version(v) for v in range(5)] == [0, 0, 0, 0, 0]
    bqe = API_SPECS[53]
    assert [bqe.request_header_version(v) for v in (0, 1)] == [1, 2]
    assert [bqe.response_header_version(v) for v in (0, 1)] == [0, 1]


def test_request_header_client_id_always_int16_length() -> None:
    from generated.request_header import RequestHeader

    h = RequestHeader(request_api_key=18, request_api_version=3, correlation_id=7, client_id="ab")
    assert h.encode(2) == bytes.fromhex("0012 0003 00000007 0002 6162 00")
    assert h.encode(1) == bytes.fromhex("0012 0003 00000007 0002 6162")
    assert RequestHeader(client_id=None).encode(2) == bytes.fromhex("0000 0000 00000000 ffff 00")
    assert RequestHeader.read(h.encode(2) + b"body", 0, 2) == (h, 13)
