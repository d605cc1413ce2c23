"""tools.swarm.swarm contract 6 (tools.swarm.broker contract 6): a broker's Fetch that its controller holds past
the Fetch's timeout is counted as a ``raft-client`` disconnect for a request timeout, a heartbeat channel's close
as ``broker-to-controller``'s (issue 24: the observers' channel churned at 1,000 x 1M, uncounted)."""

from __future__ import annotations

import asyncio

import pytest

from kwire.errors import RequestTimeoutError
from tests.helpers.kwire import requests_after_api_versions
from tools.swarm import frames
from tools.swarm.lifecycle import SwarmConfig
from tools.swarm.swarm import Swarm


async def silent_controller(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answers ApiVersions, holds every other request."""
    async for _ in requests_after_api_versions(reader, writer):
        pass
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
