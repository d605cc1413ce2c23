from __future__ import annotations

import struct

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from kwire.compression import Compression
from kwire.errors import CorruptRecordError, KraftError, LocalProtocolError
from kwire.records import (
    HEADER_SIZE,
    Record,
    TimestampType,
    build_batch,
    build_data_batch,
    decode_batch,
    peek_batch,
)

pytestmark = pytest.mark.usefixtures("codec_path")  # the compiled records loops and the pure ones

records_st = st.lists(
    st.builds(
        Record,
        offset_delta=st.integers(0, 2**31 - 1),
        timestamp_delta=st.integers(-(2**40), 2**40),
        key=st.none() | st.binary(max_size=200),
        value=st.none() | st.binary(max_size=300),
        headers=st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=10)), max_size=3).map(
            tuple
        ),
    ),
    min_size=1,
    max_size=12,
)


def test_golden_single_record_batch():
    raw = build_batch(
        [Record(0, 0, None, b"hi")], base_offset=5, partition_leader_epoch=3, base_timestamp=0x0102030405
    )
    body = bytes.fromhex("00000000000000000001020304050000000102030405")
    body += bytes.fromhex("ffffffffffffffffffffffffffff00000001")
    rec = bytes([0x10, 0, 0, 0, 0x01, 0x04]) + b"hi" + b"\x00"  # length 8 zigzag = 0x10
    expected_crc = crc32c(body + rec)
    expected = (
        struct.pack(">qiib", 5, len(body) + len(rec) + 9, 3, 2) + struct.pack(">I", expected_crc) + body + rec
    )
    assert raw == expected
    assert len(raw) == HEADER_SIZE + len(rec)


@pytest.mark.parametrize("codec", list(Compression), ids=lambda c: c.name)
@settings(max_examples=30, deadline=None)
@given(records=records_st, base_offset=st.integers(0, 2**62), epoch=st.integers(-1, 2**31 - 1))
def test_round_trip_every_field(codec, records, base_offset, epoch):
    raw = build_batch(
        records,
        base_offset=base_offset,
        partition_leader_epoch=epoch,
        base_timestamp=1_600_000_000_000,
        compression=codec,
        is_transactional=True,
        producer_id=77,
        producer_epoch=3,
        base_sequence=9,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
    )
    b = decode_batch(raw)
    assert b.records == tuple(records)
    assert (b.base_offset, b.partition_leader_epoch, b.compression) == (base_offset, epoch, codec)
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (77, 3, 9)
    assert b.is_transactional and not b.is_control
    assert b.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert b.last_offset_delta == max(r.offset_delta for r in records)
    assert b.max_timestamp == 1_600_000_000_000 + max(r.timestamp_delta for r in records)
    assert b.size_in_bytes == len(raw)
    h = peek_batch(raw, verify_crc=True)
    assert h.crc_ok and h.size == len(raw) and h.last_offset == b.last_offset
    assert h.records_count == len(records) and h.compression is codec


def test_data_batch_shape():
    raw = build_data_batch([b"a", b"b", b"c"], base_offset=10, partition_leader_epoch=4, timestamp=99)
    b = decode_batch(raw)
    assert [r.value for r in b.records] == [b"a", b"b", b"c"]
    assert [b.offset_of(r) for r in b.records] == [10, 11, 12]
    assert all(r.key is None and r.headers == () and r.timestamp_delta == 0 for r in b.records)
    assert (b.base_timestamp, b.max_timestamp, b.last_offset, b.next_offset) == (99, 99, 12, 13)
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (-1, -1, -1)
    # the fast path writes exactly what the general builder writes
    general = build_batch(
        [Record(i, 0, None, v) for i, v in enumerate([b"a", b"b", b"c"])],
        base_offset=10,
        partition_leader_epoch=4,
        base_timestamp=99,
    )
    assert raw == general


def test_large_values_and_offsets_use_multibyte_varints():
    recs = [Record(2**31 - 1, -(2**62), b"k" * 70000, b"v" * 100000, (("h" * 300, b"x" * 200),))]
    assert decode_batch(build_batch(recs)).records == tuple(recs)


def test_crc_mismatch_names_the_base_offset():
    raw = bytearray(build_data_batch([b"abc"], base_offset=4242, partition_leader_epoch=1, timestamp=0))
    raw[-1] ^= 0x01
    with pytest.raises(CorruptRecordError, match="4242"):
        decode_batch(bytes(raw))


@pytest.mark.parametrize("codec", list(Compression), ids=lambda c: c.name)
@settings(max_examples=15, deadline=None)
@given(records=records_st, data=st.data())
def test_bit_flips_are_never_accepted(codec, records, data):
    raw = build_batch(records, base_offset=1, partition_leader_epoch=2, compression=codec)
    # BaseOffset (bytes 0-7) and PartitionLeaderEpoch (12-15) lie outside the CRC by design (Kafka rewrites the
    # epoch on append); every other bit — Length, Magic, CRC and everything the CRC covers — is checked.
    protected = [i for i in range(len(raw) * 8) if not (i < 64 or 96 <= i < 128)]
    for bit in data.draw(st.lists(st.sampled_from(protected), min_size=1, max_size=8, unique=True)):
        flipped = bytearray(raw)
        flipped[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises(CorruptRecordError):
            decode_batch(bytes(flipped))


@settings(max_examples=200, deadline=None)
@given(garbage=st.binary(max_size=200))
def test_garbage_raises_only_typed_errors(garbage):
    try:
        decode_batch(garbage)
    except KraftError:
        pass


@settings(max_examples=100, deadline=None)
@given(records=records_st, cut=st.integers(0, 10_000))
def test_truncation_is_corrupt(records, cut):
    raw = build_batch(records)
    cut = cut % len(raw)
    with pytest.raises(CorruptRecordError):
        decode_batch(raw[:cut])


def _with_valid_crc(raw: bytearray) -> bytes:
    raw[17:21] = struct.pack(">I", crc32c(bytes(raw[21:])))
    return bytes(raw)


def test_structural_errors_with_a_valid_crc():
    raw = bytearray(build_data_batch([b"a", b"b"], base_offset=0, partition_leader_epoch=0, timestamp=0))
    too_many = bytearray(raw)
    too_many[57:61] = struct.pack(">i", 3)
    with pytest.raises(CorruptRecordError, match="past the end|exceeds"):
        decode_batch(_with_valid_crc(too_many))
    too_few = bytearray(raw)
    too_few[57:61] = struct.pack(">i", 1)
    with pytest.raises(CorruptRecordError, match="left after"):
        decode_batch(_with_valid_crc(too_few))
    negative = bytearray(raw)
    negative[57:61] = struct.pack(">i", -5)
    with pytest.raises(CorruptRecordError, match="negative"):
        decode_batch(_with_valid_crc(negative))
    huge = bytearray(raw)
    huge[57:61] = struct.pack(">i", 2**31 - 1)
    with pytest.raises(CorruptRecordError, match="exceeds"):
        decode_batch(_with_valid_crc(huge))
    bad_magic = bytearray(raw)
    bad_magic[16] = 1
    with pytest.raises(CorruptRecordError, match="magic"):
        decode_batch(bytes(bad_magic))
    trailing = bytes(raw) + b"\x00"
    with pytest.raises(CorruptRecordError, match="buffer holds"):
        decode_batch(trailing)


def test_empty_batch_needs_last_offset_delta():
    with pytest.raises(LocalProtocolError):
        build_batch([])
    raw = build_batch([], base_offset=10, last_offset_delta=4)
    b = decode_batch(raw)
    assert b.records == () and b.last_offset == 14


def test_builder_refuses_bad_input():
    with pytest.raises(LocalProtocolError):
        build_batch([Record(0, 0, None, "text")])  # type: ignore[arg-type]
    with pytest.raises(LocalProtocolError):
        build_batch([Record(0, 0, None, b"x")], base_offset=2**63)
    with pytest.raises(LocalProtocolError):
        build_data_batch([], base_offset=0, partition_leader_epoch=0, timestamp=0)
