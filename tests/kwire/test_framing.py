from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kwire.errors import FrameSizeError, KraftError, LocalProtocolError
from kwire.framing import DEFAULT_MAX_FRAME_SIZE, FrameDecoder, encode_frame


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in zip(points, points[1:], strict=False)]


@settings(max_examples=200, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=300), max_size=12), cuts=st.lists(st.integers(0, 10**6), max_size=40)
)
def test_random_chunking_reassembles_exactly(payloads, cuts):
    stream = b"".join(encode_frame(p) for p in payloads)
    d = FrameDecoder()
    out: list[bytes] = []
    for chunk in _chunks(stream, cuts):
        out += d.feed(chunk)
    assert out == payloads
    assert d.buffered == 0


def test_one_byte_at_a_time_and_many_per_chunk():
    payloads = [b"", b"a", b"bc" * 1000, b"d"]
    stream = b"".join(encode_frame(p) for p in payloads)
    d = FrameDecoder()
    out = [f for i in range(len(stream)) for f in d.feed(stream[i : i + 1])]
    assert out == payloads
    assert FrameDecoder().feed(stream) == payloads


def test_default_limit_is_kafkas_socket_request_max_bytes():
    assert DEFAULT_MAX_FRAME_SIZE == 104857600
    assert FrameDecoder().max_frame_size == 104857600


@pytest.mark.parametrize("size", [-1, -(2**31), 101, 2**31 - 1])
def test_oversize_and_negative_refused_at_the_prefix(size):
    d = FrameDecoder(max_frame_size=100)
    with pytest.raises(FrameSizeError):
        d.feed(size.to_bytes(4, "big", signed=True))
    assert d.buffered == 4  # nothing of the announced size was allocated
    with pytest.raises(FrameSizeError):
        d.feed(b"more")


def test_limit_is_inclusive():
    d = FrameDecoder(max_frame_size=3)
    assert d.feed(encode_frame(b"abc")) == [b"abc"]


@settings(max_examples=300, deadline=None)
@given(garbage=st.binary(max_size=64), limit=st.integers(0, 1000))
def test_garbage_raises_only_typed_errors(garbage, limit):
    d = FrameDecoder(max_frame_size=limit)
    try:
        for f in d.feed(garbage):
            assert len(f) <= limit
    except FrameSizeError as exc:
        assert isinstance(exc, KraftError)


def test_encode_refuses_oversize():
    with pytest.raises(LocalProtocolError):
        encode_frame(b"x" * 11, max_frame_size=10)


@pytest.mark.parametrize(
    "head",
    [
        b"\x15\x03\x03\x00\x02\x02\x46",  # a TLS 1.2 alert (what Kafka's SSL listener answers a plaintext client)
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",  # a ClientHello (a TLS client on a plaintext listener)
    ],
)
def test_a_tls_record_instead_of_a_frame_is_named(head: bytes) -> None:
    with pytest.raises(FrameSizeError, match=r"outside 0\.\.104857600.*the peer speaks TLS"):
        FrameDecoder().feed(head)


def test_an_oversized_frame_that_is_not_tls_is_not_called_tls() -> None:
    with pytest.raises(FrameSizeError) as info:
        FrameDecoder().feed(b"\x7f\x03\x03\x00")
    assert "TLS" not in str(info.value)


@settings(max_examples=200, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=300), max_size=12),
    cuts=st.lists(st.integers(0, 10**6), max_size=40),
    pieces_at=st.sampled_from([0, 1, 7, 64]),
    kind=st.sampled_from([bytes, bytearray, memoryview]),
)
def test_large_frames_kept_as_pieces_reassemble_exactly(payloads, cuts, pieces_at, kind):
    """Contract 6: with the threshold lowered, every frame at or above it goes through the pieces path (its bytes
    kept as given, joined once): whatever the chunking and the chunks' type, the same frames and ``buffered``."""
    import kwire.framing as framing

    saved = framing.PIECES_AT
    try:
        stream = b"".join(encode_frame(p) for p in payloads)
        d, plain = FrameDecoder(), FrameDecoder()
        out: list[bytes] = []
        for chunk in _chunks(stream, cuts):
            framing.PIECES_AT = pieces_at
            got = d.feed(kind(bytearray(chunk)) if kind is not bytes else chunk)
            framing.PIECES_AT = saved
            assert got == plain.feed(chunk) and all(type(f) is bytes for f in got)
            assert d.buffered == plain.buffered
            out += got
        assert out == payloads
        assert d.buffered == 0
    finally:
        framing.PIECES_AT = saved


def test_an_8_mib_answer_read_64_kib_at_a_time_is_one_frame_and_the_next_follows():
    """Contract 6 at its real size: an 8 MiB frame fed in 64 KiB reads, the next frame's start in its last read."""
    big, small = bytes(range(256)) * (8 * 4096), b"next"
    stream = encode_frame(big) + encode_frame(small)
    d = FrameDecoder()
    out = [f for i in range(0, len(stream), 65536) for f in d.feed(stream[i : i + 65536])]
    assert out == [big, small] and d.buffered == 0
