"""kwire.client contract 5: ``reconnect_wait`` says how long a send would wait out the reconnect backoff (kraft-swarm
hands no controller request to a connection in its backoff, tools.swarm.broker contract 1a)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from kwire.client import KafkaClient
from kwire.errors import NetworkError


def test_reconnect_wait_is_the_backoff_left_after_a_refused_connect() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    async def run() -> tuple[float, float]:
        client = KafkaClient(
            "127.0.0.1", port, reconnect_backoff_ms=10_000, reconnect_backoff_max_ms=10_000, connect_timeout=2
        )
        fresh = client.reconnect_wait()
        with pytest.raises(NetworkError):
            await client.connect()
        after = client.reconnect_wait()
        await client.close()
        return fresh, after

    fresh, after = asyncio.run(run())
    assert fresh == 0.0
    assert 7.0 < after <= 12.0  # 10 s +-20%, minus the moments since
