"""Robustness of every generated decoder against truncated, garbled and hostile input.

Invariants (CONTRACTS.md "Generated code", Errors):
1. Every strict prefix of a valid encoding raises MessageDecodeError, never anything else.
2. Arbitrary bytes either decode or raise MessageDecodeError (no IndexError/struct.error/UnicodeDecodeError/...).
3. A length prefix larger than the remaining input fails before anything of that size is allocated.
4. Trailing bytes after a complete message are a MessageDecodeError for ``decode``.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kwire.errors import MessageDecodeError
from tests.messages.strategies import is_flexible, populated
from tests.messages.support import META_HEX, all_class_versions, cls, hx, pair_id

PAIRS = all_class_versions()


def _valid(c: Any, v: int) -> bytes:
    return bytes(populated(c, v, is_flexible(c, v)).encode(v))


def _decodes_or_rejects(c: Any, data: bytes, v: int) -> None:
    try:
        c.decode(data, v)
    except MessageDecodeError:
        pass


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_every_strict_prefix_is_rejected(pair: tuple[Any, int]) -> None:
    c, v = pair
    enc = _valid(c, v)
    for cut in range(len(enc)):
        with pytest.raises(MessageDecodeError):
            c.decode(enc[:cut], v)


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_trailing_bytes_are_rejected(pair: tuple[Any, int]) -> None:
    c, v = pair
    enc = _valid(c, v)
    with pytest.raises(MessageDecodeError):
        c.decode(enc + b"\x00", v)
    # read() stops at the message end and reports where that is.
    obj, end = c.read(enc + b"\x00", 0, v)
    assert end == len(enc)
    assert obj == c.decode(enc, v)


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_garbage_decodes_or_raises_decode_error(pair: tuple[Any, int], data: st.DataObject) -> None:
    c, v = pair
    _decodes_or_rejects(c, data.draw(st.binary(max_size=64)), v)


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_mutated_encoding_decodes_or_raises_decode_error(pair: tuple[Any, int], data: st.DataObject) -> None:
    c, v = pair
    enc = bytearray(_valid(c, v))
    if not enc:
        return
    for _ in range(data.draw(st.integers(1, 3))):
        enc[data.draw(st.integers(0, len(enc) - 1))] = data.draw(st.integers(0, 255))
    _decodes_or_rejects(c, bytes(enc), v)


HUGE_UVARINT = "8080808008"  # unsigned varint 2**31 (5 bytes)

HOSTILE: list[tuple[str, str, int, str]] = [
    # (case id, spec, version, hex input)
    ("compact-string-2^31", "VoteRequest", 0, HUGE_UVARINT + "616263"),  # ClusterId length ~2**31
    ("compact-array-2^31", "VoteResponse", 0, "0000" + HUGE_UVARINT + "00"),  # Topics count ~2**31
    (
        "int16-array-len-max",
        "BeginQuorumEpochRequest",
        0,
        "ffff 7fffffff 0001",
    ),  # null ClusterId, Topics 2**31-1
    (
        "int32-records-len-max",
        "FetchResponse",
        4,
        "00000000"  # ThrottleTimeMs
        "00000001"  # Responses: 1
        "0001 74"  # Topic "t"
        "00000001"  # Partitions: 1
        "00000000 0000"  # PartitionIndex, ErrorCode
        "0000000000000000 0000000000000000"  # HighWatermark, LastStableOffset
        "ffffffff"  # AbortedTransactions null
        "7fffffff 78",  # Records: int32 length 2**31-1, then 1 byte
    ),
    (
        "compact-records-2^31",
        "FetchSnapshotResponse",
        0,
        "00000000 0000"  # ThrottleTimeMs, ErrorCode
        "02 13" + META_HEX + "02"  # Topics: 1, Name, Partitions: 1
        "00000000 0000"  # Index, ErrorCode
        "0000000000000064 00000004 00"  # SnapshotId
        "0000000000000400 0000000000000000"  # Size, Position
         + HUGE_UVARINT,  # UnalignedRecords length ~2**31
    ),
    ("tag-size-2^31", "VoteResponse", 1, "0000 01 01 00" + HUGE_UVARINT + "00"),  # tag 0 claims ~2 GiB
    ("tag-count-2^31", "VoteResponse", 1, "0000 01" + HUGE_UVARINT),  # ~2**31 tagged fields
    ("uvarint-too-long", "VoteResponse", 0, "0000 ffffffffff01"),  # 6-byte varint
    ("uuid-cut-short", "RemoveRaftVoterRequest", 0, "00 00000001 0011"),  # VoterDirectoryId has 2 of 16 bytes
]


@pytest.mark.parametrize(("name", "spec", "version", "data"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_lengths_fail_without_allocating(name: str, spec: str, version: int, data: str) -> None:
    c = cls(spec)
    raw = hx(data)
    tracemalloc.start()
    try:
        with pytest.raises(MessageDecodeError):
            c.decode(raw, version)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024, f"{name}: peak {peak} bytes while rejecting {len(raw)} input bytes"


BAD_CONTENT: list[tuple[str, Callable[[], Any], int, str, str]] = [
    # (case id, class, version, malformed hex, the same message with the defect repaired)
    ("invalid-utf8", lambda: cls("VoteRequest"), 0, "03 fffe 01 00", "03 6331 01 00"),  # ClusterId not UTF-8
    (
        "null-non-nullable-compact",
        lambda: cls("VoteResponse"),
        0,
        "0000 02 00 01 00 00",
        "0000 02 01 01 00 00",
    ),
    (
        "null-non-nullable-int16",
        lambda: cls("BeginQuorumEpochResponse"),
        0,
        "0000 00000001 ffff 00000000",
        "0000 00000001 0000 00000000",
    ),
    ("null-non-nullable-array", lambda: cls("BeginQuorumEpochResponse"), 0, "0000 ffffffff", "0000 00000000"),
    (
        "negative-int16-string",
        lambda: cls("BeginQuorumEpochResponse"),
        0,
        "0000 00000001 fffe 00000000",
        "0000 00000001 0000 00000000",
    ),
    ("negative-int32-array", lambda: cls("BeginQuorumEpochResponse"), 0, "0000 fffffffe", "0000 00000000"),
]


@pytest.mark.parametrize(
    ("name", "get", "version", "bad", "good"), BAD_CONTENT, ids=[b[0] for b in BAD_CONTENT]
)
def test_malformed_content_is_a_decode_error(
    name: str, get: Callable[[], Any], version: int, bad: str, good: str
) -> None:
    get().decode(hx(good), version)  # control: only the defect makes the input invalid
    with pytest.raises(MessageDecodeError):
        get().decode(hx(bad), version)
