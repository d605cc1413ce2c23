"""kwire.client contract 12: ``on_disconnect`` hears once per closed connection why it closed (kraft-swarm counts
them by channel and reason, issue 24): a request timed out, the peer closed, the client closed."""

from __future__ import annotations

import asyncio

import pytest

from generated.describe_quorum_request import DescribeQuorumRequest
from kwire.apiversions import build_api_versions_response
from kwire.client import KafkaClient, all_apis
from kwire.errors import NetworkError, RequestTimeoutError
from kwire.framing import FrameDecoder, encode_frame
from kwire.headers import encode_response, parse_request

HOST = "127.0.0.1"


def serve(then: str) -> asyncio.base_events.Server:
    """ApiVersions answered; any other request never answered (``then="silent"``) or the connection closed."""

    async def conn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        decoder = FrameDecoder()
        while data := await reader.read(65536):
            for frame in decoder.feed(data):
                req = parse_request(frame, all_apis())
                key, version, cid = (
                    req.spec.api_key,
                    req.header.request_api_version,
                    req.header.correlation_id,
                )
                if req.body is None or key == 18:
                    body = build_api_versions_response(min(version, 3), all_apis())
                    writer.write(encode_frame(encode_response(18, min(version, 3), cid, body)))
                elif then == "close":
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
