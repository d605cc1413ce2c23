"""kwire.arrival: while a client decodes a response, ``arrived`` is when its bytes reached the process, not when the
client's read loop next ran (kraft-swarm: the read loops of 1,000 clients on one loop run behind each other)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from generated.describe_quorum_request import DescribeQuorumRequest
from generated.describe_quorum_response import DescribeQuorumResponse
from kwire import arrival
from kwire.client import KafkaClient
from kwire.headers import decode_response
from kwire.server import KafkaServer
from tests.helpers.kwire import run

pytestmark = pytest.mark.timeout(60)
BUSY_S = 0.2  # other clients' work the loop runs between the bytes' arrival and this client's read loop


def test_arrived_is_when_the_bytes_came_in_not_when_they_were_decoded() -> None:
    async def answer(header: object, request: object, info: object) -> DescribeQuorumResponse:
        return DescribeQuorumResponse()

    seen: list[tuple[float, float]] = []
    client: KafkaClient

    def decode(frame: bytes, api_key: int, version: int) -> tuple[int, Any]:
        seen.append((arrival.arrived(client), time.monotonic()))
        return decode_response(frame, api_key, version)

    async def main() -> None:
        nonlocal client
        async with KafkaServer(answer) as srv:
            client = KafkaClient("127.0.0.1", srv.port, decode=decode)
            try:
                await client.connect()
                conn = client._conn
                assert conn is not None
                reader: Any = conn.reader
                feed = reader.feed_data
                loop = asyncio.get_running_loop()

                def busy_then_feed(data: Any) -> None:  # the loop's other work queues before the read loop
                    loop.call_soon(time.sleep, BUSY_S)
                    feed(data)

                reader.feed_data = busy_then_feed
                sent = time.monotonic()
                await client.send(DescribeQuorumRequest())
            finally:
                await client.close()
        arrived, decoded = seen[-1]
        assert sent < arrived < sent + BUSY_S / 2
        assert decoded - arrived >= BUSY_S

    run(main())


def test_arrived_leaves_out_the_wait_for_a_busy_loop_to_read_the_socket() -> None:
    """Contract 3: the answer reached the socket while this loop was busy elsewhere for ``BUSY_S``; ``arrived`` is
    the kernel's receive time, ``arrived(kernel=False)`` when the loop read it."""
    if arrival.SO_TIMESTAMPNS is None:
        pytest.skip("the kernel's receive stamps are read on Linux (x86-64, arm64) only")
    ready = threading.Event()
    port: list[int] = []

    def serve() -> None:  # the controller: another process in the swarm's runs, a thread here
        async def answer(header: object, request: object, info: object) -> DescribeQuorumResponse:
            return DescribeQuorumResponse()

        async def main() -> None:
            async with KafkaServer(answer) as srv:
                port.append(srv.port)
                ready.set()
                await asyncio.sleep(5 * BUSY_S)

        asyncio.run(main())

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    assert ready.wait(10)
    seen: list[tuple[float, float, float]] = []
    client: KafkaClient

    def decode(frame: bytes, api_key: int, version: int) -> tuple[int, Any]:
        seen.append((arrival.arrived(client), arrival.arrived(client, kernel=False), time.monotonic()))
        return decode_response(frame, api_key, version)

    async def main() -> None:
        nonlocal client
        client = KafkaClient("127.0.0.1", port[0], decode=decode)
        try:
            await client.connect()
            sent = time.monotonic()
            fut = client.start(DescribeQuorumRequest())
            assert fut is not None
            time.sleep(BUSY_S)  # the loop busy (1,000 brokers' answers), the server answers meanwhile
            await fut
        finally:
            await client.close()
        kernel, loop_read, decoded = seen[-1]
        assert sent - 0.01 < kernel < sent + BUSY_S / 2
        assert loop_read - sent >= BUSY_S and decoded >= loop_read

    run(main())
    server.join(10)


def test_only_a_client_with_its_own_decode_hook_reads_with_kernel_stamps() -> None:
    """Contract 3 (kwire.client contract 10): the swarm's clients are stamped; a controller's or a tool's client
    reads with plain ``recv`` (no ancillary data, no stamp arithmetic per read on the commit path)."""

    async def answer(header: object, request: object, info: object) -> DescribeQuorumResponse:
        return DescribeQuorumResponse()

    async def main() -> list[bool]:
        stamped = []
        async with KafkaServer(answer) as srv:
            own: Any = lambda frame, api_key, version: decode_response(frame, api_key, version)  # noqa: E731
            for hook in (None, own):
                client = KafkaClient("127.0.0.1", srv.port, decode=hook)
                try:
                    await client.connect()
                    assert client._conn is not None
                    stamped.append(getattr(client._conn.reader, "sock", None) is not None)
                finally:
                    await client.close()
        return stamped

    assert run(main()) == [False, arrival.SO_TIMESTAMPNS is not None]
