"""kwire.answers contract 11a on real sockets (issue 24's encode-once fan-out): fast-path replies carrying one
response object in one turn of the loop encode its body once; each connection still gets its own correlation
id; an object changed after the turn is encoded again."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from generated.vote_request import VoteRequest
from generated.vote_response import VoteResponse
from kwire.framing import FrameDecoder, encode_frame
from kwire.headers import decode_response, encode_request, response_header
from kwire.server import KafkaServer

pytestmark = pytest.mark.timeout(30)
HOST, VOTE, N = "127.0.0.1", 52, 40


class CountedVoteResponse(VoteResponse):
    encodes = 0

    def encode(self, version: int) -> bytes:
        CountedVoteResponse.encodes += 1
        out: bytes = super().encode(version)
        return out


async def never(header: Any, request: Any, info: Any) -> Any:
    raise AssertionError("the fast path takes every Vote")


class Votes:
    """N connections, each with one Vote taken by the fast path; ``replies`` in arrival order (``cid`` each)."""

    def __init__(self) -> None:
        self.replies: list[tuple[int, Any]] = []
        self.taken = asyncio.Event()

    def fast(self, header: Any, body: Any, info: Any, reply: Any) -> bool:
        self.replies.append((header.correlation_id, reply))
        if len(self.replies) == N:
            self.taken.set()
        return True

    async def connect(self, srv: KafkaServer) -> list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
        conns = [await asyncio.open_connection(HOST, srv.port) for _ in range(N)]
        for i, (_, w) in enumerate(conns):
            w.write(encode_frame(encode_request(VOTE, 2, 1000 + i, "raw", VoteRequest())))
        await asyncio.wait_for(self.taken.wait(), 10)
        return conns


def test_one_body_for_many_replies_is_encoded_once_per_turn() -> None:
    votes = Votes()
    replies = votes.replies

    async def main() -> None:
        async with KafkaServer(never, fast=votes.fast) as srv:
            conns = await votes.connect(srv)
            body = CountedVoteResponse(error_code=0)
            CountedVoteResponse.encodes = 0
            first = {cid for cid, _ in replies[: N // 2]}
            for _, reply in replies[: N // 2]:
                reply(body)
            assert CountedVoteResponse.encodes == 1
            await asyncio.sleep(0.01)  # the next turn: the object may have changed since
            body.error_code = 57
            for _, reply in replies[N // 2 :]:
                reply(body)
            assert CountedVoteResponse.encodes == 2
            for i, (r, w) in enumerate(conns):
                (frame,) = await asyncio.wait_for(_frames(r), 5)
                cid, got = decode_response(frame, VOTE, 2)
                assert cid == 1000 + i
                assert got.error_code == (0 if cid in first else 57)
                w.close()

    asyncio.run(asyncio.wait_for(main(), 20))


async def _frames(reader: asyncio.StreamReader) -> list[bytes]:
    d = FrameDecoder()
    while True:
        data = await reader.read(65536)
        assert data, "connection closed early"
        out = d.feed(data)
        if out:
            return out


def test_response_headers_match_the_generated_header_codec() -> None:
    """kwire.headers.response_header (the correlation id, then the cached rest) for every API and version."""
    from generated.messages import API_SPECS
    from generated.response_header import ResponseHeader
    from kwire.headers import response_header, response_header_version

    for key, spec in API_SPECS.items():
        for version in range(spec.lowest_version, spec.highest_version + 1):
            hv = response_header_version(spec, version)
            for cid in (0, 7, 2**31 - 1, -5):
                assert response_header(key, version, cid) == ResponseHeader(correlation_id=cid).encode(hv)


class LargeBody(VoteResponse):
    """A response whose encoding is one large payload (a catch-up Fetch answer's records stand-in)."""

    payload = bytes(range(256)) * 600  # 153,600 bytes

    def encode(self, version: int) -> bytes:
        return LargeBody.payload


def test_a_large_shared_body_is_written_to_each_connection_as_it_is_not_copied_per_reply(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Contract 11d (issue 24, session 14): the one encoded body goes to every connection's socket write itself
    (0 copies per reply; a joined frame per reply copied 600 KB-8 MiB per observer at 1M partitions), after that
    frame's size and header; the bytes each client reads are the whole frame."""
    votes = Votes()
    written: list[bytes] = []
    real_write = asyncio.StreamWriter.write

    def write(self: asyncio.StreamWriter, data: Any) -> None:
        written.append(data)
        real_write(self, data)

    monkeypatch.setattr(asyncio.StreamWriter, "write", write)

    async def main() -> None:
        async with KafkaServer(never, fast=votes.fast) as srv:
            conns = await votes.connect(srv)
            written.clear()
            body = LargeBody(error_code=0)
            for _, reply in votes.replies:
                reply(body)
            assert sum(1 for d in written if d is LargeBody.payload) == N  # the shared bytes, each connection
            for i, (r, w) in enumerate(conns):
                (frame,) = await asyncio.wait_for(_frames(r), 5)
                assert frame == response_header(VOTE, 2, 1000 + i) + LargeBody.payload  # its own header
                w.close()

    asyncio.run(asyncio.wait_for(main(), 20))


def test_large_frames_keep_request_order_and_join_only_the_small_pieces() -> None:
    """Contract 11d: small frames ride with the next large body's head; each large body is a write alone."""
    from kwire.large_frames import pieces

    big, other = b"B" * 70_000, b"O" * 70_000
    out = pieces([b"a", (b"h1", big), b"b", b"c", (b"h2", other)])
    assert out == [b"ah1", big, b"bc" + b"h2", other] and out[1] is big and out[3] is other
    assert pieces([b"a", b"b"]) == [b"ab"] and pieces([(b"h", big)]) == [b"h", big]
