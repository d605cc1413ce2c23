"""Issue 25's synchronous paths, on real sockets: kwire.server contract 11 (a reply written inside the caller's
turn of the loop, responses still in request order) and kwire.client contract 9 (a request written at once)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from generated.describe_quorum_request import DescribeQuorumRequest
from generated.describe_quorum_response import DescribeQuorumResponse
from generated.vote_request import VoteRequest
from generated.vote_response import VoteResponse
from kwire.client import KafkaClient
from kwire.errors import RequestTimeoutError
from kwire.framing import FrameDecoder, encode_frame
from kwire.headers import decode_response, encode_request
from kwire.server import KafkaServer
from tests.helpers.kwire import Parked, read_frames, run, slow_handler

pytestmark = pytest.mark.timeout(30)
HOST = "127.0.0.1"
VOTE, DESCRIBE_QUORUM = 52, 55


def test_a_fast_reply_is_on_the_socket_when_reply_returns() -> None:
    async def main() -> None:
        parked = Parked()
        async with KafkaServer(slow_handler, fast=parked) as srv:
            r, w = await asyncio.open_connection(HOST, srv.port)
            w.write(encode_frame(encode_request(VOTE, 2, 7, "raw", VoteRequest())))
            await asyncio.wait_for(parked.taken.wait(), 5)
            stamp = asyncio.get_running_loop().time()
            parked.replies[0](VoteResponse(error_code=0))
            # written in this turn: the transport holds nothing back, no task was needed
            transport = srv._conns[next(iter(srv._conns))][0].transport
            assert transport.get_write_buffer_size() == 0
            (frame,) = await read_frames(r, 1)
            _, body = decode_response(frame, VOTE, 2)
            assert body == VoteResponse(error_code=0)
            assert asyncio.get_running_loop().time() - stamp < 5
            w.close()

    run(main())


def test_fast_and_slow_responses_stay_in_request_order() -> None:
    async def main() -> None:
        parked = Parked()
        async with KafkaServer(slow_handler, fast=parked) as srv:
            r, w = await asyncio.open_connection(HOST, srv.port)
            # a slow request first: the Vote behind it may not take the fast path and waits its turn
            w.write(encode_frame(encode_request(DESCRIBE_QUORUM, 2, 1, "raw", DescribeQuorumRequest())))
            w.write(encode_frame(encode_request(VOTE, 2, 2, "raw", VoteRequest())))
            first, second = await read_frames(r, 2)
            assert decode_response(first, DESCRIBE_QUORUM, 2)[1].error_message == "slow 1"
            assert decode_response(second, VOTE, 2)[1].error_code == 0  # the slow handler answered it
            assert not parked.replies
            # now nothing is ahead: a Vote is taken by the fast handler, a slow request queues behind it
            w.write(encode_frame(encode_request(VOTE, 2, 3, "raw", VoteRequest())))
            await asyncio.wait_for(parked.taken.wait(), 5)
            w.write(encode_frame(encode_request(DESCRIBE_QUORUM, 2, 4, "raw", DescribeQuorumRequest())))
            await asyncio.sleep(0.2)  # the slow one is done, but may not overtake the parked Vote
            parked.replies[0](VoteResponse(error_code=57))
            third, fourth = await read_frames(r, 2)
            assert decode_response(third, VOTE, 2)[0] == 3  # correlation id
            assert decode_response(third, VOTE, 2)[1].error_code == 57
            assert decode_response(fourth, DESCRIBE_QUORUM, 2)[1].error_message == "slow 4"
            w.close()

    run(main())


def test_a_fast_reply_of_the_wrong_type_closes_the_connection(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="kwire.server")

    async def main() -> None:
        parked = Parked()
        async with KafkaServer(slow_handler, fast=parked) as srv:
            r, w = await asyncio.open_connection(HOST, srv.port)
            w.write(encode_frame(encode_request(VOTE, 2, 1, "raw", VoteRequest())))
            await asyncio.wait_for(parked.taken.wait(), 5)
            parked.replies[0](DescribeQuorumResponse())
            assert await asyncio.wait_for(r.read(), 5) == b""
            w.close()

    run(main())
    assert any("returned DescribeQuorumResponse" in r.getMessage() for r in caplog.records)


def test_client_start_writes_at_once_and_times_out_like_send() -> None:
    async def main() -> None:
        parked = Parked()
        async with KafkaServer(slow_handler, fast=parked) as srv:
            client = KafkaClient(HOST, srv.port, request_timeout=0.3)
            assert client.start(VoteRequest()) is None  # not connected yet: the caller uses send()
            await client.connect()
            fut = client.start(DescribeQuorumRequest())
            assert fut is not None
            assert (await fut).error_message.startswith("slow")
            late = client.start(VoteRequest())  # parked and never answered
            assert late is not None
            with pytest.raises(RequestTimeoutError):
                await late
            assert not client.connected  # contract 4: a timeout closes the connection
            await client.close()

    run(main())


def count_queue_puts(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every item put on any asyncio.Queue (the connections' writer queues) from now on, in order."""
    queued: list[object] = []
    real_put = asyncio.Queue.put_nowait

    def put(self: asyncio.Queue[Any], item: Any) -> None:
        queued.append(item)
        real_put(self, item)

    monkeypatch.setattr(asyncio.Queue, "put_nowait", put)
    return queued


def test_a_reply_written_inside_the_offer_needs_no_timer_and_no_queue_entry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """kwire.server contract 11 and kwire.limits contract 4 (issue 24): a request answered inside ``fast`` (a
    heartbeat on a controller) is not ordered through the connection's writer queue, and reads arm no timer each;
    the answers still arrive, in order, and the connection counts as having completed a request."""
    queued = count_queue_puts(monkeypatch)

    def at_once(header: Any, body: Any, info: Any, reply: Any) -> bool:
        if header.request_api_key != VOTE:
            return False
        reply(VoteResponse(error_code=header.correlation_id % 3))
        return True

    async def main() -> tuple[int, int]:
        loop = asyncio.get_running_loop()
        timers: list[float] = []
        real_call_at = loop.call_at

        def call_at(when: float, *args: Any, **kw: Any) -> Any:
            timers.append(when)
            return real_call_at(when, *args, **kw)

        async with KafkaServer(slow_handler, fast=at_once) as srv:
            r, w = await asyncio.open_connection(HOST, srv.port)
            await asyncio.sleep(0.05)
            monkeypatch.setattr(loop, "call_at", call_at)
            decoder = FrameDecoder()
            for cid in range(100):  # one at a time: each request is its own read
                w.write(encode_frame(encode_request(VOTE, 2, cid, "raw", VoteRequest())))
                frames: list[bytes] = []
                while not frames:  # no wait_for here: it would arm a timer on this loop too
                    data = await r.read(65536)
                    assert data, "connection closed early"
                    frames += decoder.feed(data)
                corr, body = decode_response(frames[0], VOTE, 2)
                assert corr == cid and body.error_code == cid % 3
            monkeypatch.setattr(loop, "call_at", real_call_at)
            assert next(iter(srv._last_done.values()))[0]  # kwire.limits contract 2: it completed requests
            w.close()
        return len(timers), len(queued)

    timers, queued_n = run(main())
    assert queued_n == 0  # before: one writer-queue entry per request
    assert timers <= 5  # before: at least one timer per read (asyncio.timeout around each)


def test_a_parked_fast_request_enters_the_writer_queue_only_behind_a_later_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """kwire.server contract 11 (issue 24: an observer's long-poll Fetch, parked then answered from a step): no
    writer-queue entry for a parked request answered before the next one arrives; a later request that arrives
    first still gets its answer after the parked one (contract 2)."""
    queued = count_queue_puts(monkeypatch)

    async def main() -> tuple[int, list[int]]:
        parked = Parked()
        async with KafkaServer(slow_handler, fast=parked) as srv:
            r, w = await asyncio.open_connection(HOST, srv.port)
            for cid in range(50):  # parked, then answered: one long poll at a time
                parked.taken.clear()
                w.write(encode_frame(encode_request(VOTE, 2, cid, "raw", VoteRequest())))
                await asyncio.wait_for(parked.taken.wait(), 5)
                parked.replies.pop()(VoteResponse(error_code=0))
                (frame,) = await read_frames(r, 1)
                assert decode_response(frame, VOTE, 2)[0] == cid
            alone = len(queued)
            parked.taken.clear()
            w.write(encode_frame(encode_request(VOTE, 2, 100, "raw", VoteRequest())))
            await asyncio.wait_for(parked.taken.wait(), 5)
            w.write(encode_frame(encode_request(DESCRIBE_QUORUM, 1, 101, "raw", DescribeQuorumRequest())))
            await asyncio.sleep(0.2)  # the slow handler (50 ms) is done; its answer waits for the parked one
            parked.replies.pop()(VoteResponse(error_code=0))
            frames = await read_frames(r, 2)
            w.close()
            return alone, [
                decode_response(f, k, v)[0]
                for f, (k, v) in zip(frames, [(VOTE, 2), (DESCRIBE_QUORUM, 1)], strict=True)
            ]

    alone, order = run(main())
    assert alone == 0  # before: one writer-queue entry per parked request
    assert order == [100, 101]


def test_client_start_hands_a_response_to_on_answer_in_the_turn_that_read_it() -> None:
    """kwire.client contract 9a (issue 25): the answer's callback runs inside the read loop that decoded the
    response, not a turn of the loop later as a done callback; exactly once, also for a timeout; what it raises
    does not end the read loop."""

    async def main() -> None:
        parked = Parked()
        async with KafkaServer(slow_handler, fast=parked) as srv:
            client = KafkaClient(HOST, srv.port, request_timeout=0.3)
            await client.connect()
            reader_task = client._conn.reader_task  # type: ignore[union-attr]
            calls: list[tuple[object, bool]] = []

            def on_answer(fut: asyncio.Future[Any]) -> None:
                calls.append((asyncio.current_task(), fut.done()))
                if len(calls) == 1:
                    raise RuntimeError("a failing callback")

            loop = asyncio.get_running_loop()
            failures: list[dict[str, Any]] = []
            loop.set_exception_handler(lambda _, ctx: failures.append(ctx))
            first = client.start(DescribeQuorumRequest(), on_answer=on_answer)
            assert first is not None
            await first
            await asyncio.sleep(0.05)  # any done callback has run by now
            assert calls == [(reader_task, True)]
            assert "a failing callback" in str(failures[0]["exception"])
            second = client.start(DescribeQuorumRequest(), on_answer=on_answer)
            assert second is not None
            assert (await second).error_message.startswith("slow")  # the read loop went on
            await asyncio.sleep(0.05)
            assert calls[1] == (reader_task, True) and len(calls) == 2
            late = client.start(VoteRequest(), on_answer=on_answer)  # parked and never answered
            assert late is not None
            with pytest.raises(RequestTimeoutError):
                await late
            await asyncio.sleep(0.05)
            assert len(calls) == 3 and calls[2][0] is not reader_task  # the timeout: a done callback
            await client.close()

    run(main())
