"""kwire.client contract 13: once a response is delivered, the client's read loop holds nothing of it while it
waits for the connection's next bytes (kraft-swarm: 1,000 connections each kept their last 8 MiB catch-up answer,
frame and decoded records, across that wait; docs/SWARM.md session 17), and no reference cycle of the client holds
it: dropped by the caller, it is freed without a garbage collection (the swarm's collector freezes survivors,
kraftd.shell.observe.looplag contract 5, so an answer in a cycle frozen in flight was never freed)."""

from __future__ import annotations

import asyncio
import gc
import weakref
from typing import Any

from generated.describe_quorum_request import DescribeQuorumRequest
from kwire.client import KafkaClient
from kwire.framing import encode_frame
from kwire.headers import decode_response, peek_correlation_id
from tests.helpers.kwire import requests_after_api_versions

HOST = "127.0.0.1"
ANSWER_BYTES = 2 << 20  # a large frame (kwire.framing contract 6: read as pieces)


class Answer:
    """A decoded body the test can watch (weakref)."""


def decode(frame: bytes, api_key: int, version: int) -> tuple[int, Any]:
    if api_key == 18:
        return decode_response(frame, api_key, version)
    return peek_correlation_id(frame), Answer()


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """ApiVersions answered as Kafka does; any other request answered with ``ANSWER_BYTES`` after its id."""
    async for _, _, cid in requests_after_api_versions(reader, writer):
        writer.write(encode_frame(cid.to_bytes(4, "big") + bytes(ANSWER_BYTES)))
    writer.close()


async def answer_alive_after_delivery(start: bool, collect: bool = True) -> bool:
    server = await asyncio.start_server(serve, HOST, 0)
    client = KafkaClient(HOST, server.sockets[0].getsockname()[1], decode=decode, patient=True)
    try:
        await client.connect()
        if start:  # the swarm's path (kwire.client contract 9)
            fut = client.start(DescribeQuorumRequest())
            assert fut is not None
            answer = weakref.ref(await fut)
            del fut
        else:
            answer = weakref.ref(await client.send(DescribeQuorumRequest()))
        await asyncio.sleep(0.05)  # the read loop is back waiting for bytes
        if collect:
            gc.collect()
        assert client.connected  # the connection (and its read loop) is still there
        return answer() is not None
    finally:
        await client.close()
        server.close()


def test_a_started_request_s_answer_is_not_held_by_the_read_loop() -> None:
    assert not asyncio.run(answer_alive_after_delivery(start=True))


def test_a_sent_request_s_answer_is_not_held_by_the_read_loop() -> None:
    assert not asyncio.run(answer_alive_after_delivery(start=False))


def test_a_patient_client_s_answer_is_freed_without_a_collection() -> None:
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):  # the timer of contract 4a is armed for each
            assert not asyncio.run(answer_alive_after_delivery(start=True, collect=False))
    finally:
        gc.enable()
