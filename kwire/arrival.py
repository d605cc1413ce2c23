"""When a response's bytes reached the process, for a client on a loop shared by many (kraft-swarm: 1,000 brokers'
clients on one asyncio loop, tools.swarm.broker contract 4).

Contracts:
1. :func:`open_connection` is ``asyncio.open_connection`` whose reader notes the monotonic time bytes last reached
   it (its protocol's ``data_received``); kwire.client opens every connection with it.
2. :func:`arrived` is, while a client's ``decode`` hook runs (kwire.client contract 10), the time the bytes of the
   response being decoded reached the process, not when the client's read loop next ran: the read loop reads what
   is buffered and decodes it in the same step, so no later bytes were noted meanwhile. 0.0 when unknown.
"""

from __future__ import annotations

import asyncio
import time
from ssl import SSLContext
from typing import Any


class _StampedReader(asyncio.StreamReader):
    arrived = 0.0

    def feed_data(self, data: Any) -> None:
        self.arrived = time.monotonic()
        super().feed_data(data)


async def open_connection(
    host: str, port: int, *, ssl: SSLContext | None = None, server_hostname: str | None = None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Contract 1."""
    loop = asyncio.get_running_loop()
    reader = _StampedReader(limit=2**16, loop=loop)
    protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
    transport, _ = await loop.create_connection(
        lambda: protocol, host, port, ssl=ssl, server_hostname=server_hostname
    )
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


def arrived(client: Any) -> float:
    """Contract 2 (``client``: a kwire.client.KafkaClient)."""
    conn = getattr(client, "_conn", None)
    return float(getattr(conn.reader, "arrived", 0.0)) if conn is not None else 0.0
