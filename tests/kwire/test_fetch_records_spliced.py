"""kwire.large_frames contracts 11g-11h (issue 24, 1,000 x 1M): a Fetch answer's records are written as the
records object itself, around an encoding of the rest, byte for byte the whole encoding; the bytes waiting in a
server's outboxes count each buffer once, however many connections wait on it, and nothing once written or closed."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import generated.fetch_response as FRESP
from generated.fetch_request import FetchRequest
from generated.fetch_response import FetchResponse
from kraftd.core import messages as m
from kraftd.core.log import LogBatch, OffsetAndEpoch
from kwire.errors import ErrorCode
from kwire.framing import FrameDecoder, encode_frame
from kwire.headers import encode_request, response_header
from kwire.large_frames import LARGE, pieces, spliced
from kwire.server import KafkaServer

FETCH, V = 1, 17
HOST, N = "127.0.0.1", 20


def _answer(records: list[bytes], hwm: int = 7, leader: int = 1, epoch: int = 3) -> Any:
    batches = [LogBatch(i, i, epoch, r) for i, r in enumerate(records)]
    return m.fetch_response(ErrorCode.NONE, ErrorCode.NONE, leader, epoch, hwm, batches)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.binary(min_size=1, max_size=64), min_size=1, max_size=4),
    st.integers(0, 3 * LARGE),
    st.integers(-1, 2**40),
    st.integers(0, 2**20),
    st.integers(0, 2**20),
    st.integers(12, FetchResponse.HIGHEST_VERSION),
    st.booleans(),
)
def test_spliced_encoding_is_the_whole_encoding_with_the_records_object_itself(
    seeds: list[bytes], pad: int, hwm: int, leader: int, epoch: int, version: int, diverging: bool
) -> None:
    records = [s * (LARGE // len(s) + 1) for s in seeds[:-1]] + [seeds[-1] * (pad // len(seeds[-1]) + 1)]
    body = _answer(records, hwm, leader, epoch)
    part = body.responses[0].partitions[0]
    if diverging:
        part.diverging_epoch = FRESP.EpochEndOffset(epoch=1, end_offset=5)
    whole = body.encode(version)
    got = spliced(body, version)
    if len(part.records) < LARGE:
        assert got is None
        return
    assert got is not None
    assert got[1] is part.records  # the records are not copied into a body
    assert b"".join(got) == whole
    assert len(got[0]) + len(got[2]) < 200
    decoded = FetchResponse.decode(b"".join(got), version).responses[0].partitions[0]
    assert decoded.records == part.records and decoded.high_watermark == hwm


@settings(max_examples=20, deadline=None)
@given(
    st.binary(min_size=1, max_size=64),
    st.integers(0, 2 * LARGE),
    st.integers(0, 2**40),
    st.integers(0, 2**30),
)
def test_a_snapshot_chunk_is_spliced_byte_for_byte(seed: bytes, pad: int, offset: int, position: int) -> None:
    chunk = seed * ((LARGE + pad) // len(seed) + 1)
    body = m.fetch_snapshot_response(
        ErrorCode.NONE,
        ErrorCode.NONE,
        1,
        3,
        OffsetAndEpoch(offset, 2),
        position + len(chunk),
        position,
        chunk,
    )
    got = spliced(body, 0)
    assert got is not None and got[1] is chunk
    assert b"".join(got) == body.encode(0)


def test_unsplittable_answers_are_encoded_whole() -> None:
    part = FRESP.PartitionData(partition_index=0, records=bytes(2 * LARGE))
    big = FetchResponse(responses=[FRESP.FetchableTopicResponse(topic="t", partitions=[part])])
    assert spliced(big, 11) is None  # not flexible: the records' length is an int32
    assert spliced(_answer([b"x"]), V) is None  # small
    assert spliced(FetchResponse(error_code=1), V) is None  # no partition


def test_a_frame_with_spliced_records_leaves_in_pieces_byte_for_byte() -> None:
    body = _answer([bytes(range(256)) * 1024])
    small = b"\x00\x00\x00\x05hello"
    frames = [small, (b"\x00\x00\x00\x09head", body.responses[0].partitions[0].records, b"tail"), small]
    out = pieces(frames)
    assert out[1] is body.responses[0].partitions[0].records
    assert b"".join(out) == small + b"\x00\x00\x00\x09head" + out[1] + b"tail" + small
    assert out[2] == b"tail" + small


async def _connect(port: int) -> socket.socket:
    """A client that reads nothing until told: a 16 KiB receive buffer, set before connecting, and no reader."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (HOST, port))
    return sock


async def _frames(sock: socket.socket, n: int) -> list[bytes]:
    d, out = FrameDecoder(max_frame_size=64 * 1024 * 1024), []
    while len(out) < n:
        data = await asyncio.get_running_loop().sock_recv(sock, 1 << 20)
        assert data, "connection closed early"
        out += d.feed(data)
    return out


@pytest.mark.timeout(60)
def test_bytes_waiting_count_each_buffer_once_and_none_once_written() -> None:
    """N slow readers: half get one shared 4 MiB answer, half one answer each. Waiting: the shared records once
    plus each distinct one (before 11g nothing counted them; a count per connection would be N x 4 MiB)."""
    replies: list[tuple[int, Any]] = []
    taken = asyncio.Event()
    records = bytes(range(256)) * (16 * 1024)  # 4 MiB

    def fast(header: Any, body: Any, info: Any, reply: Any) -> bool:
        replies.append((header.correlation_id, reply))
        if len(replies) == N:
            taken.set()
        return True

    async def never(header: Any, request: Any, info: Any) -> Any:
        raise AssertionError("the fast path takes every Fetch")

    async def main() -> None:
        async with KafkaServer(never, fast=fast) as srv:
            conns = [await _connect(srv.port) for _ in range(N)]
            for i, sock in enumerate(conns):
                await asyncio.get_running_loop().sock_sendall(
                    sock, encode_frame(encode_request(FETCH, V, i, "raw", FetchRequest()))
                )
            await asyncio.wait_for(taken.wait(), 10)
            for w, _ in srv._conns.values():
                w.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)
            shared = _answer([records])
            own = [_answer([bytes(bytearray(records))]) for _ in range(N // 2)]
            sent: dict[int, Any] = {}
            for cid, reply in replies:
                sent[cid] = shared if cid % 2 == 0 else own[cid // 2]
                reply(sent[cid])
            await asyncio.sleep(0.3)  # nobody reads
            distinct = (1 + N // 2) * len(records)
            assert distinct <= srv.waiting.bytes <= distinct + N * 1024, srv.waiting.bytes
            assert srv.waiting.bytes < N * len(records) * 3 // 4
            for i, sock in enumerate(conns):  # every byte arrives, byte for byte the whole encoding
                (frame,) = await asyncio.wait_for(_frames(sock, 1), 10)
                assert frame == response_header(FETCH, V, i) + sent[i].encode(V)
            for _ in range(50):
                if not srv.waiting.bytes:
                    break
                await asyncio.sleep(0.01)
            assert srv.waiting.bytes == 0 and not srv.waiting.held
            for sock in conns:
                sock.close()

    asyncio.run(asyncio.wait_for(main(), 50))
