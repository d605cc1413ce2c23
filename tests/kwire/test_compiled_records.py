"""kwire/_fastrecords.pyx against the pure loops of kwire/record_codec.py (its contracts 1 and 2).

The pure loops are the reference: the compiled twins must return the same bytes and equal records, must
decline (return None) rather than differ, and must never accept a section the pure decoder rejects.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kwire import record_codec
from kwire.compression import Compression
from kwire.errors import CorruptRecordError, KraftError
from kwire.record_codec import Record, _decode_records, _encode_values, encode_records
from kwire.records import build_batch, build_data_batch, decode_batch, framed_values
from tests.conftest import require_compiled

fast = record_codec.COMPILED
pytestmark = pytest.mark.usefixtures("compiled_records")


@pytest.fixture
def compiled_records() -> None:
    require_compiled(fast is not None)


plain = st.builds(
    Record,
    offset_delta=st.integers(0, 2**31 - 1),
    timestamp_delta=st.integers(-(2**40), 2**40),
    key=st.none() | st.binary(max_size=40),
    value=st.none() | st.binary(max_size=300),
)
with_headers = st.builds(
    Record,
    offset_delta=st.integers(0, 1000),
    timestamp_delta=st.integers(0, 10),
    key=st.none(),
    value=st.binary(max_size=10),
    headers=st.lists(
        st.tuples(st.text(max_size=4), st.none() | st.binary(max_size=4)), min_size=1, max_size=2
    ).map(tuple),
)


def section(records: list[Record]) -> bytes:
    parts: list[bytes] = []
    encode_records(parts, records)
    return b"".join(parts)


def pure_or_error(data: bytes, count: int) -> tuple[Record, ...] | None:
    try:
        return _decode_records(data, count)
    except CorruptRecordError:
        return None


@settings(max_examples=300, deadline=None)
@given(records=st.lists(plain, max_size=30))
def test_records_without_headers_take_the_compiled_loop_and_equal_the_pure_ones(records):
    data = section(records)
    out = fast.decode_records(data, len(records))
    assert out is not None  # the common shape is never declined
    assert out == _decode_records(data, len(records)) == tuple(records)
    assert all(type(r) is Record for r in out)


@settings(max_examples=100, deadline=None)
@given(records=st.lists(plain | with_headers, min_size=1, max_size=10))
def test_records_with_headers_are_declined_and_the_public_decoder_still_reads_them(records):
    data = section(records)
    out = fast.decode_records(data, len(records))
    if any(r.headers for r in records):
        assert out is None
    assert record_codec.decode_records(data, len(records)) == tuple(records)


@settings(max_examples=600, deadline=None)
@given(
    records=st.lists(plain, max_size=6),
    flips=st.lists(st.tuples(st.integers(0, 10**4), st.integers(0, 255)), max_size=3),
    cut=st.integers(0, 4),
    extra=st.integers(-2, 2),
)
def test_mangled_sections_are_never_accepted_where_the_pure_loop_refuses(records, flips, cut, extra):
    data = bytearray(section(records))
    for where, byte in flips:
        if data:
            data[where % len(data)] = byte
    mangled = bytes(data[: len(data) - min(cut, len(data))])
    count = max(0, len(records) + extra)
    out = fast.decode_records(mangled, count)
    expected = pure_or_error(mangled, count)
    if out is not None:
        assert out == expected
    values = fast.record_values(mangled, count, 1)
    if values is not None:
        assert expected is not None
        assert values == [(r.offset_delta, r.value) for r in expected if r.value and r.value[0] == 1]


def test_garbage_and_bad_counts_are_declined_not_raised():
    for data, count in [(b"", 1), (b"\x00", -1), (b"\x7f" * 5, 2), (b"\xff" * 12, 1), (b"", 0)]:
        out = fast.decode_records(data, count)
        assert out is None or (out == () and data == b"" and count == 0)
    assert fast.decode_records(bytearray(b""), 0) is None  # only exact bytes take the compiled loop


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.binary(max_size=400), min_size=1, max_size=40))
def test_encode_values_writes_the_pure_bytes(values):
    parts: list[bytes] = []
    _encode_values(parts, values)
    assert fast.encode_values(values) == b"".join(parts)


def test_encode_values_declines_what_is_not_a_list_of_bytes():
    assert fast.encode_values((b"a",)) is None
    assert fast.encode_values([b"a", bytearray(b"b")]) is None
    assert fast.encode_values(["text"]) is None


def test_large_offsets_and_values_use_multibyte_varints_in_both_loops():
    values = [bytes([i % 256]) * (i * 37) for i in range(300)]
    parts: list[bytes] = []
    _encode_values(parts, values)
    assert fast.encode_values(values) == b"".join(parts)
    data = b"".join(parts)
    assert fast.decode_records(data, 300) == _decode_records(data, 300)


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.LZ4, Compression.GZIP], ids=lambda c: c.name)
@settings(max_examples=60, deadline=None)
@given(records=st.lists(plain | with_headers, min_size=1, max_size=12), base=st.integers(0, 2**40))
def test_framed_values_are_the_records_that_start_with_the_byte(codec, records, base):
    raw = build_batch(
        records, base_offset=base, partition_leader_epoch=1, base_timestamp=0, compression=codec
    )
    hdr, values = framed_values(raw, 1)
    assert hdr.base_offset == base
    expected = [
        (base + r.offset_delta, r.value) for r in decode_batch(raw).records if r.value and r.value[0] == 1
    ]
    assert values == expected


def test_framed_values_refuse_a_corrupt_section_with_the_pure_error():
    raw = bytearray(
        build_data_batch([b"\x01abc", b"xyz"], base_offset=7, partition_leader_epoch=1, timestamp=0)
    )
    raw[-5] = 0x7F  # the last record's value length becomes -64
    with pytest.raises(KraftError) as a:
        framed_values(bytes(raw), 1)
    with pytest.raises(KraftError) as b:
        decode_batch(bytes(raw), verify_crc=False)
    assert type(a.value) is type(b.value) and str(a.value) == str(b.value)
    assert "batch at offset 7" in str(a.value)


def test_set_compiled_switches_the_public_loops():
    data = section([Record(0, 0, None, b"v")])
    try:
        record_codec.set_compiled(False)
        assert record_codec._fast is None
        assert record_codec.decode_records(data, 1) == (Record(0, 0, None, b"v"),)
    finally:
        record_codec.set_compiled(True)
    assert record_codec._fast is fast
