"""kwire.server contracts 11b and 11c (issue 25), on real sockets: pipelined fast requests of one connection are all
offered to the fast handler and answered in request order whatever the order of the replies; replies made inside
``coalesced()`` leave in one write per connection. Counted (socket writes, fast offers), not timed."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

from generated.describe_quorum_request import DescribeQuorumRequest
from generated.vote_request import VoteRequest
from generated.vote_response import VoteResponse
from kwire.framing import encode_frame
from kwire.headers import decode_response, encode_request
from kwire.server import KafkaServer
from tests.helpers.kwire import Parked, read_frames, run, slow_handler

pytestmark = pytest.mark.timeout(30)
N = 5
HOST = "127.0.0.1"
VOTE, DESCRIBE_QUORUM = 52, 55


async def parked_n(parked: Parked, n: int) -> None:
    while len(parked.replies) < n:
        parked.taken.clear()
        await asyncio.wait_for(parked.taken.wait(), 5)


def votes(first: int, n: int) -> bytes:
    return b"".join(
        encode_frame(encode_request(VOTE, 2, c, "raw", VoteRequest())) for c in range(first, first + n)
    )


def test_pipelined_fast_requests_all_take_the_fast_path_and_answer_in_request_order() -> None:
    async def main() -> tuple[list[int], list[int], int]:
        parked = Parked()
        async with KafkaServer(slow_handler, fast=parked) as srv:
            r, w = await asyncio.open_connection(HOST, srv.port)
            w.write(votes(0, N))  # one segment: all parsed in one turn, none answered yet
            await parked_n(parked, N)  # before: only the first was offered, the rest went to the handler
            writes = srv.stats.writes
            for cid in range(N - 1, 0, -1):  # replies in reverse: held behind request 0's
                parked.replies[cid](VoteResponse(error_code=cid))
            await asyncio.sleep(0.05)
            early = srv.stats.writes - writes
            parked.replies[0](VoteResponse(error_code=0))
            frames = await read_frames(r, N)
            # a slow request behind answered fast ones is still answered (the chain is empty again)
            w.write(encode_frame(encode_request(DESCRIBE_QUORUM, 2, 99, "raw", DescribeQuorumRequest())))
            (last,) = await read_frames(r, 1)
            w.close()
            got = [decode_response(f, VOTE, 2) for f in frames]
            assert decode_response(last, DESCRIBE_QUORUM, 2)[0] == 99
            return (
                [c for c, _ in got],
                [b.error_code for _, b in got],
                early + 100 * (srv.stats.writes - writes),
            )

    corr, codes, writes = run(main())
    assert corr == list(range(N)) and codes == list(range(N))
    assert (
        writes == 200
    )  # nothing written before request 0's reply, then the five in one write (+ the slow one)


def test_replies_made_inside_coalesced_leave_in_one_write_per_connection() -> None:
    async def main() -> tuple[int, list[list[int]]]:
        parked = Parked()
        async with KafkaServer(slow_handler, fast=parked) as srv:
            conns = [await asyncio.open_connection(HOST, srv.port) for _ in range(2)]
            for k, (_, w) in enumerate(conns):  # one at a time: each request its own read, so no chain
                for cid in range(N):
                    w.write(votes(10 * k + cid, 1))
                    await parked_n(parked, k * N + cid + 1)
            writes = srv.stats.writes
            with srv.coalesced():
                for reply in parked.replies:
                    reply(VoteResponse(error_code=0))
                assert srv.stats.writes == writes  # held until the block ends
            out = []
            for r, w in conns:
                out.append([decode_response(f, VOTE, 2)[0] for f in await read_frames(r, N)])
                w.close()
            return srv.stats.writes - writes, out

    writes, corr = run(main())
    assert writes == 2  # before: one write per reply (10)
    assert corr == [list(range(N)), list(range(10, 10 + N))]


def test_a_fast_request_behind_a_slow_one_is_not_offered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Contract 11b's bound: a request is offered only while every unwritten response ahead of it is a fast one."""

    async def main() -> list[Any]:
        parked = Parked()
        async with KafkaServer(slow_handler, fast=parked) as srv:
            r, w = await asyncio.open_connection(HOST, srv.port)
            w.write(encode_frame(encode_request(DESCRIBE_QUORUM, 2, 1, "raw", DescribeQuorumRequest())))
            w.write(votes(2, 2))
            frames = await read_frames(r, 3)
            w.close()
            assert not parked.replies  # the slow handler answered both Votes
            return [decode_response(frames[0], DESCRIBE_QUORUM, 2)[0]] + [
                decode_response(f, VOTE, 2)[0] for f in frames[1:]
            ]

    assert run(main()) == [1, 2, 3]


def test_fast_requests_look_the_loop_up_once_per_connection_not_per_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Contract 11i: CPython 3.11's get_running_loop makes a getpid system call, so a lookup per fast request
    was a system call per read (issue 25). Before: one lookup per request (32 here) besides the rest."""
    lookups: list[int] = []
    real = asyncio.get_running_loop

    def counted() -> asyncio.AbstractEventLoop:
        lookups.append(1)
        return real()

    async def main() -> tuple[int, list[int]]:
        parked = Parked()
        async with KafkaServer(slow_handler, fast=parked) as srv:
            r, w = await asyncio.open_connection(HOST, srv.port)
            w.write(votes(0, 1))  # the connection's task is running (its one lookup made)
            await parked_n(parked, 1)
            parked.replies[0](VoteResponse(error_code=0))
            await read_frames(r, 1)
            with monkeypatch.context() as m:
                m.setattr(asyncio, "get_running_loop", counted)
                m.setattr(asyncio.events, "get_running_loop", counted)
                for k in range(2):  # two bursts of 16 (a connection's in-flight limit)
                    w.write(votes(1 + 16 * k, 16))
                    await parked_n(parked, 1 + 16 * (k + 1))
                    for reply in parked.replies[1 + 16 * k :]:
                        reply(VoteResponse(error_code=0))
                    frames = await read_frames(r, 16)
            w.close()
            return len(lookups), [decode_response(f, VOTE, 2)[0] for f in frames]

    n, corr = run(main())
    assert corr == list(range(17, 33))
    assert n < 16, n  # the test's own awaits and the turn's shared bodies look it up (8); before: 40


def test_a_parked_fast_request_holds_few_objects_the_collector_tracks() -> None:
    """Contract 11j (issue 25): a fast request waiting for its reply holds its reply object and its slot, not
    closures (a function, a cell tuple and a cell per captured name each) and a copied context per done callback:
    a turn's batch of waiting reads is scanned by the young collections inside the turn. Counted with
    ``gc.get_objects`` (tracked objects alive), 16 requests parked at once (a connection's in-flight limit)."""

    def tracked() -> int:
        gc.collect()
        return len(gc.get_objects())

    async def main() -> tuple[float, list[int]]:
        parked = Parked()
        async with KafkaServer(slow_handler, fast=parked) as srv:
            r, w = await asyncio.open_connection(HOST, srv.port)
            w.write(votes(0, 1))  # the connection's own objects exist before counting
            await parked_n(parked, 1)
            parked.replies[0](VoteResponse(error_code=0))
            await read_frames(r, 1)
            await asyncio.sleep(0.01)
            before = tracked()
            w.write(votes(1, 16))
            await parked_n(parked, 17)
            held = (tracked() - before) / 16
            for reply in parked.replies[1:]:
                reply(VoteResponse(error_code=0))
            frames = await read_frames(r, 16)
            w.close()
            return held, [decode_response(f, VOTE, 2)[0] for f in frames]

    held, corr = run(main())
    assert corr == list(range(1, 17))
    # the parsed request (header, body, ParsedRequest), its slot, its reply, its chain entry; before: 27
    assert held <= 14, held
