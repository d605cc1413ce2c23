"""kwire.client contract 12: ``on_disconnect`` hears once per closed connection why it closed (kraft-swarm counts
them by channel and reason, issue 24): a request timed out, the peer closed, the client closed."""

from __future__ import annotations

import asyncio

import pytest

from generated.describe_quorum_request import DescribeQuorumRequest
from kwire.client import KafkaClient
from kwire.errors import NetworkError, RequestTimeoutError
from tests.helpers.kwire import requests_after_api_versions

HOST = "127.0.0.1"


def serve(then: str) -> asyncio.base_events.Server:
    """ApiVersions answered; any other request never answered (``then="silent"``) or the connection closed."""

    async def conn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async for _ in requests_after_api_versions(reader, writer):
            if then == "close":
                writer.close()
                return
        writer.close()

    return asyncio.start_server(conn, HOST, 0)  # type: ignore[return-value]


async def reasons(then: str, request: bool = True) -> list[str]:
    server = await serve(then)  # type: ignore[misc]
    port = server.sockets[0].getsockname()[1]
    heard: list[str] = []
    client = KafkaClient(HOST, port, request_timeout=0.2, on_disconnect=heard.append)
    try:
        await client.connect()
        if request:
            with pytest.raises((RequestTimeoutError, NetworkError)):
                await client.send(DescribeQuorumRequest())
            await asyncio.sleep(0.05)
    finally:
        await client.close()
        server.close()
    return heard


def test_a_request_timed_out_is_one_disconnect_for_that_reason() -> None:
    assert asyncio.run(reasons("silent")) == ["request timeout (DescribeQuorum)"]


def test_a_peer_that_closes_is_one_disconnect_for_that_reason() -> None:
    assert asyncio.run(reasons("close")) == ["peer closed"]


def test_closing_the_client_is_one_disconnect_for_that_reason() -> None:
    assert asyncio.run(reasons("silent", request=False)) == ["client closed"]
