"""kwire.server contract 11e on real sockets: a large shared body written to connections whose peers do not read
is held once (the body), not once per connection in asyncio's transport buffers (issue 24: 0.9-2.1 GB per
controller at 1,000 observers catching up, docs/SWARM.md session 14)."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from generated.vote_request import VoteRequest
from generated.vote_response import VoteResponse
from kwire.framing import FrameDecoder, encode_frame
from kwire.headers import encode_request, response_header
from kwire.large_frames import PIECE
from kwire.server import KafkaServer

pytestmark = pytest.mark.timeout(60)
HOST, VOTE, N = "127.0.0.1", 52, 50


class Big(VoteResponse):
    """A response whose encoding is one 4 MiB payload (a catch-up Fetch answer's stand-in)."""

    payload = bytes(range(256)) * (16 * 1024)

    def encode(self, version: int) -> bytes:
        return Big.payload


async def never(header: Any, request: Any, info: Any) -> Any:
    raise AssertionError("the fast path takes every Vote")


async def _connect(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A client that reads little: a 16 KiB receive buffer, set before connecting."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (HOST, port))
    return await asyncio.open_connection(sock=sock, limit=64 * 1024 * 1024)


def test_slow_readers_of_one_large_body_hold_about_one_piece_each_in_transport_buffers() -> None:
    replies: list[tuple[int, Any]] = []
    taken = asyncio.Event()

    def fast(header: Any, body: Any, info: Any, reply: Any) -> bool:
        replies.append((header.correlation_id, reply))
        if len(replies) == 2 * N:
            taken.set()
        return True

    async def main() -> None:
        async with KafkaServer(never, fast=fast) as srv:
            conns = [await _connect(srv.port) for _ in range(N)]
            for i, (_, w) in enumerate(conns):  # two requests each: the large answer, then a small one
                w.write(encode_frame(encode_request(VOTE, 2, 1000 + i, "raw", VoteRequest())))
                w.write(encode_frame(encode_request(VOTE, 2, 5000 + i, "raw", VoteRequest())))
            await asyncio.wait_for(taken.wait(), 10)
            for (
                w,
                _,
            ) in srv._conns.values():  # the kernel's room is small, as with 1,000 connections (tcp_mem)
                w.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)
            big, small = Big(error_code=0), VoteResponse(error_code=7)
            for cid, reply in replies:
                reply(big if cid < 5000 else small)
            await asyncio.sleep(0.3)  # the socket takes what it can; nobody reads
            held = [w.transport.get_write_buffer_size() for w, _ in srv._conns.values()]
            assert len(held) == N
            assert max(held) <= PIECE + 1024, max(
                held
            )  # before: ~4 MiB each (the body, copied per connection)
            assert sum(held) <= N * (PIECE + 1024)
            for i, (r, w) in enumerate(conns):  # every byte arrives, in request order
                frames = await asyncio.wait_for(_frames(r, 2), 10)
                assert frames[0] == response_header(VOTE, 2, 1000 + i) + Big.payload
                assert frames[1] == response_header(VOTE, 2, 5000 + i) + small.encode(2)
                w.close()

    asyncio.run(asyncio.wait_for(main(), 50))


async def _frames(reader: asyncio.StreamReader, n: int) -> list[bytes]:
    d, out = FrameDecoder(max_frame_size=64 * 1024 * 1024), []
    while len(out) < n:
        data = await reader.read(1 << 20)
        assert data, "connection closed early"
        out += d.feed(data)
    return out


class CountedBig(Big):
    encodes = 0

    def encode(self, version: int) -> bytes:
        CountedBig.encodes += 1
        return Big.payload


def test_a_large_body_replied_over_several_turns_is_encoded_once() -> None:
    """Contract 11f: observers at one offset get one answer object (kraftd.core.replication invariant 2e), handed
    over across callbacks (128 a callback); each encoding of it would be one more copy of up to 8 MiB."""
    replies: list[Any] = []
    taken = asyncio.Event()

    def fast(header: Any, body: Any, info: Any, reply: Any) -> bool:
        replies.append(reply)
        if len(replies) == 6:
            taken.set()
        return True

    async def main() -> None:
        async with KafkaServer(never, fast=fast) as srv:
            conns = [await asyncio.open_connection(HOST, srv.port, limit=8 << 20) for _ in range(6)]
            for i, (_, w) in enumerate(conns):
                w.write(encode_frame(encode_request(VOTE, 2, 1000 + i, "raw", VoteRequest())))
            await asyncio.wait_for(taken.wait(), 10)
            body = CountedBig(error_code=0)
            CountedBig.encodes = 0
            for k, reply in enumerate(replies):
                reply(body)
                if k % 2:
                    await asyncio.sleep(0.01)  # the next callbacks, turns of the loop later
            assert CountedBig.encodes == 1  # before: once per turn (3)
            for i, (r, w) in enumerate(conns):
                (frame,) = await asyncio.wait_for(_frames(r, 1), 10)
                assert frame == response_header(VOTE, 2, 1000 + i) + Big.payload
                w.close()

    asyncio.run(asyncio.wait_for(main(), 50))


class _Transport:
    """A transport whose socket takes every write at once (loopback with room): its buffer is always empty."""

    def __init__(self) -> None:
        self.protocol = type("P", (), {"resume_writing": lambda self: None})()
        self.closing = False

    def set_write_buffer_limits(self, high: int) -> None:
        pass

    def get_protocol(self) -> Any:
        return self.protocol

    def get_write_buffer_size(self) -> int:
        return 0

    def is_closing(self) -> bool:
        return self.closing


class _Writer:
    def __init__(self, log: list[tuple[int, int]], i: int) -> None:
        self.transport, self.log, self.i, self.got = _Transport(), log, i, bytearray()

    def write(self, data: Any) -> None:
        self.log.append((self.i, len(data)))
        self.got += data


def test_pieces_handed_to_transports_are_paced_per_round_in_order() -> None:
    """Contract 11k: three connections each written a 4 MiB body (catch-up answers), sockets that take everything at
    once. Before: each write handed its whole body to the transport inside the caller's callback (12 MiB in one
    turn); now at most a round (1 MiB here) plus one piece between rounds, the bodies in the order written, and a
    small frame (a heartbeat's answer) is handed at once meanwhile."""
    from kwire.large_frames import Outbox, Waiting

    body = bytes(range(256)) * (16 * 1024)
    log: list[tuple[int, int]] = []

    async def main() -> None:
        counted = Waiting(round_bytes=1 << 20)
        writers = [_Writer(log, i) for i in range(4)]
        boxes = [Outbox(w, counted) for w in writers]  # type: ignore[arg-type]
        for box in boxes[:3]:
            box.write(body)
        per_turn = [sum(n for _, n in log)]
        assert per_turn[0] <= (1 << 20) + PIECE, per_turn[0]  # before: 12 MiB in the writes' own callback
        boxes[3].write(b"heartbeat")  # small, nothing waiting before it: at once
        assert log[-1] == (3, len(b"heartbeat"))
        for _ in range(100):
            seen = len(log)
            await asyncio.sleep(0)
            per_turn.append(sum(n for _, n in log[seen:]))
            if not counted.paced:
                break
        assert max(per_turn) <= (1 << 20) + PIECE, max(per_turn)
        assert counted.rounds >= 10  # 12 MiB at 1 MiB a round
        assert [bytes(w.got) for w in writers[:3]] == [body] * 3
        order = [i for i, n in log if n > 100]
        assert order == sorted(order)  # the bodies in the order written (FIFO), not interleaved
        assert counted.bytes == 0 and not counted.paced

    asyncio.run(asyncio.wait_for(main(), 20))


def test_an_urgent_connection_is_never_paced() -> None:
    """Contract 11k: a connection marked urgent (a Raft voter's: the commit path) is handed its whole answer at once,
    though observers' answers wait for rounds ahead of it."""
    from kwire.large_frames import Outbox, Waiting

    body = bytes(range(256)) * (16 * 1024)
    log: list[tuple[int, int]] = []

    async def main() -> None:
        counted = Waiting(round_bytes=1 << 20)
        counted.urgent.add(7)
        observers = [Outbox(_Writer(log, i), counted, cid=i) for i in range(3)]  # type: ignore[arg-type]
        for box in observers:
            box.write(body)
        assert counted.paced
        voter = _Writer(log, 7)
        Outbox(voter, counted, cid=7).write(body)  # type: ignore[arg-type]
        assert bytes(voter.got) == body  # at once, in the caller's callback
        while counted.paced:
            await asyncio.sleep(0)

    asyncio.run(asyncio.wait_for(main(), 20))


def test_the_drain_of_a_paced_outbox_returns_once_the_rounds_fed_it() -> None:
    """Contract 11k with kwire.server's writer: ``drain`` of outboxes waiting for rounds returns when everything was
    handed over, each after the round that took it out of the FIFO (it waits on that, not a turn at a time)."""
    from kwire.large_frames import Outbox, Waiting

    body = bytes(range(256)) * (16 * 1024)
    log: list[tuple[int, int]] = []

    async def main() -> None:
        counted = Waiting(round_bytes=1 << 20)
        writers = [_Writer(log, i) for i in range(3)]
        boxes = [Outbox(w, counted) for w in writers]  # type: ignore[arg-type]
        for box in boxes:
            box.write(body)
        await asyncio.gather(*(box.drain() for box in boxes))
        assert [bytes(w.got) for w in writers] == [body] * 3
        assert not counted.paced and all(box.fed is None or box.fed.done() for box in boxes)

    asyncio.run(asyncio.wait_for(main(), 20))
