"""tools.swarm.swarm contract 6 (tools.swarm.broker contract 6): a broker's Fetch that its controller holds past
the Fetch's timeout is counted as a ``raft-client`` disconnect for a request timeout, a heartbeat channel's close
as ``broker-to-controller``'s (issue 24: the observers' channel churned at 1,000 x 1M, uncounted)."""

from __future__ import annotations

import asyncio

import pytest

from kwire.apiversions import build_api_versions_response
from kwire.client import all_apis
from kwire.errors import RequestTimeoutError
from kwire.framing import FrameDecoder, encode_frame
from kwire.headers import encode_response, parse_request
from tools.swarm import frames
from tools.swarm.broker import SwarmConfig
from tools.swarm.swarm import Swarm


async def silent_controller(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answers ApiVersions, holds every other request."""
    decoder = FrameDecoder()
    while data := await reader.read(65536):
        for frame in decoder.feed(data):
            req = parse_request(frame, all_apis())
            version, cid = req.header.request_api_version, req.header.correlation_id
            if req.body is None or req.spec.api_key == 18:
                body = build_api_versions_response(min(version, 3), all_apis())
                writer.write(encode_frame(encode_response(18, min(version, 3), cid, body)))
    writer.close()


async def run() -> Swarm:
    server = await asyncio.start_server(silent_controller, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    swarm = Swarm(SwarmConfig("c", {1: ("127.0.0.1", port)}), 1)
    broker = next(iter(swarm.brokers.values()))
    try:
        req = frames.observer_fetch("c", broker.id, broker.metadata_dir, 0, 0, 0, -1)
        with pytest.raises(RequestTimeoutError):
            await broker._client("raft", 1).send(req, timeout=0.2)
        controller = broker._client("controller", 1)
        await controller.connect()
    finally:
        await broker.close()
        server.close()
    return swarm


def test_a_fetch_held_past_its_timeout_is_a_raft_client_request_timeout() -> None:
    swarm = asyncio.run(run())
    assert swarm.disconnects == {
        "raft-client: request timeout (Fetch)": 1,
        "broker-to-controller: client closed": 1,
    }
