"""When a response's bytes reached the process, for a client on a loop shared by many (kraft-swarm: 1,000 brokers'
clients on one asyncio loop, tools.swarm.broker contract 4).

Contracts:
1. :func:`open_connection` is ``asyncio.open_connection`` whose reader notes the monotonic time bytes last reached
   it (its protocol's ``data_received``, ``received``); kwire.client opens every connection with it.
2. :func:`arrived` is, while a client's ``decode`` hook runs (kwire.client contract 10), the time the bytes of the
   response being decoded reached the process, not when the client's read loop next ran: the read loop reads what
   is buffered and decodes it in the same step, so no later bytes were noted meanwhile. 0.0 when unknown.
3. Where the kernel stamps what it receives (Linux ``SO_TIMESTAMPNS``; a plain connection to an IP address on a
   selector event loop), the connection reads with ``recvmsg`` and :func:`arrived` is the kernel's receive time of
   the last bytes read (its wall clock, converted to ``time.monotonic`` at the read): it leaves out the time the
   bytes waited in the socket until this process's loop read them. One loop running 1,000 brokers is busy for tens
   of milliseconds at a time (a wave of Fetch answers, a garbage collection), which a broker in its own process
   would not be; against Kafka's controllers the swarm's loop was busy for 87% of the round trip of the heartbeats
   slower than 30 ms (docs/SWARM.md, session 15). ``arrived(client, kernel=False)`` is contract 1's instant. Only
   a connection opened with ``stamp`` is stamped (kwire.client contract 10: the swarm's clients), so the
   controllers' own connections read with plain ``recv``. Else (TLS, a host name, another loop) both are
   contract 1's.
"""

from __future__ import annotations

import asyncio
import ipaddress
import platform
import socket
import struct
import sys
import time
from ssl import SSLContext
from typing import Any

# Linux's asm-generic value (x86-64, arm64): Python's socket module does not name it.
SO_TIMESTAMPNS: int | None = (
    35 if sys.platform == "linux" and platform.machine() in ("x86_64", "aarch64", "arm64") else None
)
_TIMESPEC = struct.Struct("@qq")
_ANCILLARY = socket.CMSG_SPACE(_TIMESPEC.size) if SO_TIMESTAMPNS is not None else 0


class _StampedSocket(socket.socket):
    """Contract 3: ``stamp`` is the kernel's receive time (monotonic) of what the last ``recv`` returned, 0.0 when
    the kernel gave none."""

    stamp = 0.0

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        data, ancillary, _, _ = self.recvmsg(bufsize, _ANCILLARY, flags)
        self.stamp = 0.0
        for level, kind, raw in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(raw) >= _TIMESPEC.size:
                sec, ns = _TIMESPEC.unpack_from(raw)
                self.stamp = sec + ns / 1e9 + (time.monotonic() - time.time())
        return data


class _StampedReader(asyncio.StreamReader):
    received = 0.0  # contract 1
    arrived = 0.0  # contract 3 (contract 1's where the kernel gives no stamp)
    sock: _StampedSocket | None = None

    def feed_data(self, data: Any) -> None:
        self.received = time.monotonic()
        kernel = self.sock.stamp if self.sock is not None else 0.0
        self.arrived = kernel if 0.0 < kernel <= self.received else self.received
        super().feed_data(data)


def _stampable(host: str, ssl: SSLContext | None, loop: asyncio.AbstractEventLoop) -> int:
    """Contract 3: the address family to stamp a connection to ``host`` with, 0 where it is not stamped."""
    if SO_TIMESTAMPNS is None or ssl is not None or not isinstance(loop, asyncio.SelectorEventLoop):
        return 0
    try:
        return socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:
        return 0


async def open_connection(
    host: str,
    port: int,
    ssl: SSLContext | None = None,
    server_hostname: str | None = None,
    stamp: bool = False,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Contracts 1 and 3."""
    loop = asyncio.get_running_loop()
    reader = _StampedReader(limit=2**16, loop=loop)
    protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
    family = _stampable(host, ssl, loop) if stamp else 0
    if family:
        sock = _StampedSocket(family, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS or 0, 1)
            await loop.sock_connect(sock, (host, port))
            transport, _ = await loop.create_connection(lambda: protocol, sock=sock)
        except BaseException:
            sock.close()
            raise
        reader.sock = sock
    else:
        transport, _ = await loop.create_connection(
            lambda: protocol, host, port, ssl=ssl, server_hostname=server_hostname
        )
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


def arrived(client: Any, kernel: bool = True) -> float:
    """Contracts 2 and 3 (``client``: a kwire.client.KafkaClient)."""
    conn = getattr(client, "_conn", None)
    if conn is None:
        return 0.0
    return float(getattr(conn.reader, "arrived" if kernel else "received", 0.0))
