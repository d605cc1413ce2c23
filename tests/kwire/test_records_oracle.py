"""Record batch v2 against kafka-python 3.0.12's record code (kafka.record), both directions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kwire.compression import Compression
from kwire.records import Record, build_batch, decode_batch

pytestmark = pytest.mark.usefixtures("codec_path")  # the compiled records loops and the pure ones

CODECS = [Compression.NONE, Compression.GZIP, Compression.LZ4]

blob = st.binary(max_size=300)
headers = st.lists(st.tuples(st.text(max_size=10), st.none() | st.binary(max_size=20)), max_size=3)
record_specs = st.lists(
    st.tuples(st.integers(0, 10**6), st.none() | blob, st.none() | blob, headers), min_size=1, max_size=20
)


def kp_build(specs, codec, base_offset, epoch_ts):
    b = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=int(codec),
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 24,
    )
    for i, (ts, key, value, hdrs) in enumerate(specs):
        b.append(i, timestamp=epoch_ts + ts, key=key, value=value, headers=hdrs)
    return bytes(b.build())


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
@settings(max_examples=40, deadline=None)
@given(specs=record_specs, base_offset=st.integers(0, 2**40), base_ts=st.integers(0, 2**41))
def test_kafka_python_batches_decode(codec, specs, base_offset, base_ts):
    raw = kp_build(specs, codec, base_offset, base_ts)
    # kafka-python builds at base offset 0 and partition leader epoch 0; rewrite the base offset (outside the CRC)
    raw = base_offset.to_bytes(8, "big") + raw[8:]
    batch = decode_batch(raw)
    assert batch.base_offset == base_offset
    # kafka-python falls back to no compression when compressing would not shrink the records
    assert batch.compression == DefaultRecordBatch(bytearray(raw)).compression_type
    assert batch.compression in (codec, Compression.NONE)
    assert batch.partition_leader_epoch == 0
    assert batch.last_offset_delta == len(specs) - 1
    assert batch.base_timestamp == base_ts + specs[0][0]
    assert batch.max_timestamp == base_ts + max(s[0] for s in specs)
    assert len(batch.records) == len(specs)
    for i, (rec, (ts, key, value, hdrs)) in enumerate(zip(batch.records, specs, strict=True)):
        assert batch.offset_of(rec) == base_offset + i
        assert batch.timestamp_of(rec) == base_ts + ts
        assert rec.key == key and rec.value == value
        assert list(rec.headers) == [(k, v) for k, v in hdrs]


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
@settings(max_examples=40, deadline=None)
@given(specs=record_specs, base_offset=st.integers(0, 2**40), epoch=st.integers(0, 2**31 - 1))
def test_our_batches_decode_in_kafka_python(codec, specs, base_offset, epoch):
    records = [Record(i, ts, key, value, tuple(hdrs)) for i, (ts, key, value, hdrs) in enumerate(specs)]
    raw = build_batch(
        records, base_offset=base_offset, partition_leader_epoch=epoch, base_timestamp=1000, compression=codec
    )
    kb = DefaultRecordBatch(bytearray(raw))
    assert kb.validate_crc()
    assert kb.base_offset == base_offset
    assert kb.leader_epoch == epoch
    assert kb.compression_type == int(codec)
    assert kb.last_offset_delta == len(specs) - 1
    assert kb.max_timestamp == 1000 + max(s[0] for s in specs)
    got = list(kb)
    assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in got] == [
        (base_offset + i, 1000 + ts, key, value, list(hdrs)) for i, (ts, key, value, hdrs) in enumerate(specs)
    ]


def test_uncompressed_bytes_identical_to_kafka_python():
    specs = [(0, None, b"v%d" % i, []) for i in range(5)] + [(7, b"k", None, [("h", b"x"), ("n", None)])]
    theirs = kp_build(specs, Compression.NONE, 0, 1_700_000_000_000)
    records = [Record(i, ts, k, v, tuple(h)) for i, (ts, k, v, h) in enumerate(specs)]
    ours = build_batch(records, partition_leader_epoch=0, base_timestamp=1_700_000_000_000)
    assert ours == theirs


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.LZ4, Compression.ZSTD], ids=lambda c: c.name)
def test_compressible_batches_both_ways_with_kafka_python(codec):
    specs = [(i, None, bytes([i]) * 50, []) for i in range(30)]
    raw = kp_build(specs, codec, 0, 5)
    assert DefaultRecordBatch(bytearray(raw)).compression_type == int(codec)
    assert decode_batch(raw).compression is codec
    assert [r.value for r in decode_batch(raw).records] == [s[2] for s in specs]
    ours = build_batch([Record(i, 0, None, bytes([i]) * 50) for i in range(30)], compression=codec)
    assert len(ours) < 30 * 50
    assert [r.value for r in DefaultRecordBatch(bytearray(ours))] == [s[2] for s in specs]
