from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kwire.batches import StopReason, iter_batches, scan_batches
from kwire.compression import Compression
from kwire.errors import CorruptRecordError
from kwire.records import build_data_batch


def _log(n: int, codec: Compression = Compression.NONE) -> tuple[bytes, list[int]]:
    parts, ends, offset = [], [], 0
    for i in range(n):
        values = [b"v%d-%d" % (i, j) for j in range(i % 3 + 1)]
        parts.append(
            build_data_batch(
                values, base_offset=offset, partition_leader_epoch=i, timestamp=i, compression=codec
            )
        )
        offset += len(values)
        ends.append(sum(map(len, parts)))
    return b"".join(parts), ends


def test_iterates_every_batch_without_copying():
    buf, ends = _log(5, Compression.LZ4)
    it = iter_batches(buf)
    views = list(it)
    assert [v.base_offset for v in views] == [0, 1, 3, 6, 7]
    assert [v.partition_leader_epoch for v in views] == [0, 1, 2, 3, 4]
    assert it.stop is StopReason.END and it.valid_end == len(buf) and it.error is None
    assert all(v.header.crc_ok for v in views)
    assert views[2].data.obj is buf  # a view into the caller's buffer
    assert [r.value for r in views[3].decode().records] == [b"v3-0"]
    assert views[1].decode().last_offset == 2


@settings(max_examples=60, deadline=None)
@given(cut=st.integers(0, 10_000))
def test_torn_tail_reports_valid_prefix(cut):
    buf, ends = _log(6)
    cut %= len(buf) + 1
    res = scan_batches(buf[:cut])
    expected_end = max([0] + [e for e in ends if e <= cut])
    assert res.valid_end == expected_end
    assert res.stop is (StopReason.END if cut == expected_end else StopReason.TRUNCATED)
    assert len(res.headers) == sum(1 for e in ends if e <= cut)
    it = iter_batches(buf[:cut])  # strict mode does not raise for an incomplete tail (a Fetch may cut one)
    assert len(list(it)) == len(res.headers)


def test_corruption_stops_and_strict_raises():
    buf, ends = _log(4)
    bad = bytearray(buf)
    bad[ends[1] + 30] ^= 0xFF  # inside the third batch, covered by its CRC
    res = scan_batches(bytes(bad))
    assert res.stop is StopReason.CORRUPT and res.valid_end == ends[1] and len(res.headers) == 2
    assert isinstance(res.error, CorruptRecordError) and "offset 3" in str(res.error)
    it = iter_batches(bytes(bad))
    with pytest.raises(CorruptRecordError):
        list(it)
    assert it.valid_end == ends[1] and it.stop is StopReason.CORRUPT
    # without CRC checks the corrupt batch is yielded (the caller opted out)
    assert len(list(iter_batches(bytes(bad), verify_crc=False))) == 4


def test_over_long_length_is_an_error_not_an_allocation():
    buf, ends = _log(2)
    bad = bytearray(buf)
    bad[ends[0] + 8 : ends[0] + 12] = struct.pack(">i", 2**31 - 1)
    res = scan_batches(bytes(bad), max_batch_size=1 << 20)
    assert res.stop is StopReason.CORRUPT and res.valid_end == ends[0]
    tiny = bytearray(buf)
    tiny[8:12] = struct.pack(">i", 10)
    assert scan_batches(bytes(tiny)).stop is StopReason.CORRUPT
    neg = bytearray(buf)
    neg[8:12] = struct.pack(">i", -1)
    assert scan_batches(bytes(neg)).stop is StopReason.CORRUPT
    magic = bytearray(buf)
    magic[16] = 0
    res = scan_batches(bytes(magic))
    assert res.stop is StopReason.CORRUPT and "magic" in str(res.error)


def test_start_position_and_empty_buffer():
    buf, ends = _log(3)
    assert [v.base_offset for v in iter_batches(buf, ends[0])] == [1, 3]
    res = scan_batches(b"")
    assert res.stop is StopReason.END and res.valid_end == 0


@settings(max_examples=200, deadline=None)
@given(garbage=st.binary(max_size=300))
def test_garbage_never_raises_in_scan(garbage):
    res = scan_batches(garbage)
    assert 0 <= res.valid_end <= len(garbage)


@settings(max_examples=40, deadline=None)
@given(
    batches=st.lists(
        st.tuples(
            st.lists(st.binary(max_size=50), min_size=1, max_size=5),
            st.sampled_from(list(Compression)),
            st.integers(0, 1000),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_iteration_round_trips_mixed_batches(batches):
    parts, offset, expected = [], 0, []
    for values, codec, epoch in batches:
        parts.append(
            build_data_batch(
                values, base_offset=offset, partition_leader_epoch=epoch, timestamp=epoch, compression=codec
            )
        )
        expected.append((offset, epoch, values))
        offset += len(values)
    buf = bytearray(b"".join(parts))  # storage hands us bytearrays and mmaps too
    it = iter_batches(buf)
    got = [(v.base_offset, v.partition_leader_epoch, [r.value for r in v.decode().records]) for v in it]
    assert got == expected and it.stop is StopReason.END and it.valid_end == len(buf)
