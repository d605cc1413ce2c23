"""Listener limits on real loopback sockets: rate-limited warnings, max.connections shedding, idle close."""

from __future__ import annotations

import asyncio
import logging

import pytest

from generated.describe_quorum_request import DescribeQuorumRequest
from generated.describe_quorum_response import DescribeQuorumResponse
from kwire.framing import FrameDecoder, encode_frame
from kwire.headers import encode_request
from kwire.limits import ListenerLimits, RateLimitedWarning
from kwire.server import KafkaServer

pytestmark = pytest.mark.timeout(30)
HOST = "127.0.0.1"


async def handler(header, request, info):
    return DescribeQuorumResponse(error_code=0)


def dq(cid: int) -> bytes:
    return encode_frame(encode_request(55, 2, cid, "t", DescribeQuorumRequest()))


async def roundtrip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, cid: int) -> None:
    writer.write(dq(cid))
    dec, frames = FrameDecoder(), []
    while not frames:
        data = await asyncio.wait_for(reader.read(65536), 5)
        assert data, "closed"
        frames = dec.feed(data)


async def closed(reader: asyncio.StreamReader, timeout: float = 5) -> bool:
    try:
        return await asyncio.wait_for(reader.read(), timeout) == b""
    except ConnectionError:
        return True


def test_rate_limited_warning_counts_what_it_swallows(caplog):
    caplog.set_level(logging.WARNING, logger="t")
    now = [0.0]
    warn = RateLimitedWarning(logging.getLogger("t"), burst=3, interval=10, clock=lambda: now[0])
    logged = [warn("bad %d", i) for i in range(100)]
    assert logged.count(True) == 3 and warn.suppressed == 97
    now[0] = 10.0
    assert warn("bad again")
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "bad 0",
        "bad 1",
        "bad 2",
        "97 similar warnings suppressed (at most 3 per 10 s)",
        "bad again",
    ]
    assert warn.total_suppressed == 97 and warn.suppressed == 0


def test_a_flood_of_bad_connections_logs_a_bounded_number_of_lines(caplog):
    caplog.set_level(logging.WARNING, logger="kwire.server")

    async def main() -> None:
        async with KafkaServer(handler) as srv:
            for _ in range(200):
                r, w = await asyncio.open_connection(HOST, srv.port)
                w.write(b"\xff\xff\xff\xff")
                assert await closed(r)
                w.close()
            assert srv.warn.total_suppressed == 190

    asyncio.run(main())
    assert len([r for r in caplog.records if r.name == "kwire.server"]) == 10


def test_max_connections_sheds_the_connection_that_never_completed_a_request():
    async def main() -> None:
        async with KafkaServer(handler, limits=ListenerLimits(max_connections=3)) as srv:
            peer = await asyncio.open_connection(HOST, srv.port)
            await roundtrip(*peer, 1)
            silent = [await asyncio.open_connection(HOST, srv.port) for _ in range(2)]
            await asyncio.sleep(0.05)
            newcomer = await asyncio.open_connection(HOST, srv.port)  # the 4th: the oldest silent one goes
            assert await closed(silent[0][0])
            await roundtrip(*peer, 2)  # the talking peer keeps its connection
            await roundtrip(*newcomer, 3)
            for _, w in [peer, *silent, newcomer]:
                w.close()

    asyncio.run(main())


def test_idle_connections_close_after_connections_max_idle_ms_but_busy_ones_stay():
    async def main() -> None:
        async with KafkaServer(handler, limits=ListenerLimits(idle_ms=300)) as srv:
            idle = await asyncio.open_connection(HOST, srv.port)
            busy = await asyncio.open_connection(HOST, srv.port)
            loop = asyncio.get_running_loop()
            start = loop.time()
            for cid in range(8):  # 8 x 100 ms of activity, well past the idle limit in total
                await roundtrip(*busy, cid)
                await asyncio.sleep(0.1)
            assert await closed(idle[0], 0.1) or await closed(idle[0], 2)
            assert loop.time() - start >= 0.3
            await roundtrip(*busy, 99)
            assert await closed(busy[0], 3)  # and once it goes quiet, it is closed too
            for _, w in (idle, busy):
                w.close()

    asyncio.run(main())
