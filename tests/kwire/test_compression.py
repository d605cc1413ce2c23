from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kwire import compression as comp
from kwire.compression import Compression, codec, compress, decompress
from kwire.errors import CorruptRecordError, ErrorCode, UnsupportedCompressionError


@pytest.mark.parametrize("kind", list(Compression), ids=lambda c: c.name)
@settings(max_examples=25, deadline=None)
@given(data=st.binary(max_size=5000) | st.binary(max_size=40).map(lambda b: b * 3000))
def test_round_trip(kind, data):
    assert decompress(kind, compress(kind, data)) == data


def test_lz4_frame_matches_kafkas_writer():
    out = compress(Compression.LZ4, b"x" * 100)
    assert out[:4] == bytes.fromhex("04224d18")  # magic 0x184D2204 little-endian
    assert out[4] == 0x60  # FLG: version 1, independent blocks, no checksums, no content size
    assert out[5] == 0x40  # BD: 64 KiB blocks
    assert out[-4:] == b"\x00\x00\x00\x00"  # end mark, no content checksum


def test_snappy_uses_xerial_framing_in_32k_blocks():
    data = bytes(range(256)) * 300  # 76800 bytes -> 3 blocks
    out = compress(Compression.SNAPPY, data)
    assert out[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    pos, blocks = 16, 0
    while pos < len(out):
        (n,) = struct.unpack_from(">i", out, pos)
        pos += 4 + n
        blocks += 1
    assert pos == len(out) and blocks == 3


def test_snappy_reads_a_bare_raw_block_too():
    import cramjam

    raw = bytes(cramjam.snappy.compress_raw(b"hello hello hello"))
    assert decompress(Compression.SNAPPY, raw) == b"hello hello hello"


def test_gzip_reads_concatenated_members():
    assert (
        decompress(Compression.GZIP, compress(Compression.GZIP, b"ab") + compress(Compression.GZIP, b"cd"))
        == b"abcd"
    )


@pytest.mark.parametrize("kind", [k for k in Compression if k is not Compression.NONE], ids=lambda c: c.name)
@settings(max_examples=30, deadline=None)
@given(garbage=st.binary(min_size=1, max_size=200))
def test_garbage_raises_only_corrupt_record(kind, garbage):
    try:
        decompress(kind, garbage)
    except CorruptRecordError:
        pass


@pytest.mark.parametrize("kind", [k for k in Compression if k is not Compression.NONE], ids=lambda c: c.name)
def test_truncated_payload_is_corrupt(kind):
    full = compress(kind, bytes(range(256)) * 50)
    with pytest.raises(CorruptRecordError):
        decompress(kind, full[: len(full) // 2])


@pytest.mark.parametrize("kind", [k for k in Compression if k is not Compression.NONE], ids=lambda c: c.name)
def test_decompression_bomb_is_bounded(kind):
    with pytest.raises(CorruptRecordError):
        decompress(kind, compress(kind, b"\x00" * 100_000), max_size=10_000)


@pytest.mark.parametrize(
    ("kind", "attr"),
    [(Compression.LZ4, "_lz4frame"), (Compression.SNAPPY, "_cramjam"), (Compression.ZSTD, "_zstd")],
)
def test_missing_codec_is_a_clear_typed_error(monkeypatch, kind, attr):
    data = compress(kind, b"abc")
    monkeypatch.setattr(comp, attr, None)
    assert not comp.available(kind)
    for call in (lambda: compress(kind, b"abc"), lambda: decompress(kind, data)):
        with pytest.raises(UnsupportedCompressionError) as info:
            call()
        assert info.value.error_code is ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        assert comp._PACKAGE[kind] in str(info.value)


@pytest.mark.parametrize("bad", [5, 6, 7])
def test_unknown_codec_ids(bad):
    with pytest.raises(UnsupportedCompressionError):
        codec(bad)


@pytest.mark.parametrize("size", [64 * 1024 - 1, 64 * 1024, 3 * 1024 * 1024 + 7])
def test_lz4_output_larger_than_one_step_is_complete(size):
    # Zeros compress ~250:1, so the output spans many decompression steps sized from the input.
    raw = bytes(size)
    assert decompress(Compression.LZ4, compress(Compression.LZ4, raw)) == raw


@pytest.mark.parametrize("limit", [1_000_000, 1_048_575, 1_048_576])
def test_lz4_limit_is_exact(limit):
    raw = bytes(1_048_576)
    frame = compress(Compression.LZ4, raw)
    if limit >= len(raw):
        assert decompress(Compression.LZ4, frame, max_size=limit) == raw
    else:
        with pytest.raises(CorruptRecordError):
            decompress(Compression.LZ4, frame, max_size=limit)
