"""The shell's use of kwire's asyncio transport: the request server and one client per peer.

Contracts:
1. The server is :class:`kwire.server.KafkaServer` (in-order responses per connection, framing/api/version
   errors close only that connection, ApiVersions answered from the served ranges).
2. :meth:`PeerConnection.request` sends at the version negotiated with the peer and returns the decoded
   response, or raises :class:`PeerError` carrying the code Kafka's network channel would synthesize for the
   core: UNSUPPORTED_VERSION (no common version, or the message cannot be written at it, e.g. a pre-vote to a
   Vote v0-1 peer), REQUEST_TIMED_OUT, or BROKER_NOT_AVAILABLE (cannot connect / disconnected). Reconnects back
   off as kwire's client does (50 ms doubling to 1 s).
3. :meth:`PeerConnection.start` is ``request`` without a coroutine (kwire.client contract 9): the request is
   written at once and the future's outcome is read with :meth:`PeerConnection.outcome` (the same response or
   PeerError as ``request``); None when it would first have to connect (the caller then uses ``request``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from ssl import SSLContext
from typing import Any

from kwire.client import KafkaClient
from kwire.errors import (
    ErrorCode,
    KraftError,
    LocalProtocolError,
    RequestTimeoutError,
    UnsupportedVersionError,
)
from kwire.sasl import SaslClientConfig
from kwire.server import ConnectionInfo, KafkaServer

__all__ = ["ConnectionInfo", "KafkaServer", "ListenError", "PeerConnection", "PeerError"]


class ListenError(KraftError):
    """A listener cannot bind (port in use, address not local): the node cannot start."""


class PeerError(KraftError):
    """A request to a peer got no usable response (contract 2)."""


class PeerConnection:
    """One outbound connection to a peer (contract 2)."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str,
        timeout_ms: int,
        ssl: SSLContext | None = None,
        sasl: SaslClientConfig | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.ssl = ssl
        self._client = KafkaClient(
            host,
            port,
            client_id=client_id,
            request_timeout=timeout_ms / 1000,
            connect_timeout=timeout_ms / 1000,
            ssl=ssl,
            sasl=sasl,
        )

    async def request(self, message: Any) -> Any:
        try:
            return await self._client.send(message)
        except (KraftError, OSError, TimeoutError) as exc:
            raise self._error(exc) from None

    def start(
        self, message: Any, on_answer: Callable[[asyncio.Future[Any]], None] | None = None
    ) -> asyncio.Future[Any] | None:
        """Contract 3 (``on_answer``: kwire.client contract 9a)."""
        return self._client.start(message, on_answer=on_answer)

    def outcome(self, fut: asyncio.Future[Any]) -> Any:
        """Contract 3: the response of a done :meth:`start` future, or the PeerError ``request`` raises."""
        if fut.cancelled():
            raise PeerError(f"{self.host}:{self.port}: cancelled", ErrorCode.BROKER_NOT_AVAILABLE)
        exc = fut.exception()
        if exc is None:
            return fut.result()
        if isinstance(exc, KraftError | OSError | TimeoutError):
            raise self._error(exc)
        raise exc

    def _error(self, exc: BaseException) -> PeerError:
        where = f"{self.host}:{self.port}"
        if isinstance(exc, UnsupportedVersionError | LocalProtocolError):
            return PeerError(f"{where}: {exc}", ErrorCode.UNSUPPORTED_VERSION)
        if isinstance(exc, RequestTimeoutError):
            return PeerError(f"{where}: {exc}", ErrorCode.REQUEST_TIMED_OUT)
        return PeerError(f"{where}: {exc}", ErrorCode.BROKER_NOT_AVAILABLE)

    @property
    def connected(self) -> bool:
        return self._client.connected

    async def warm(self) -> None:
        """Open and negotiate the connection now (kraftd.shell.net.membership contract 4); a failure is left to
        the next request, which then waits out the reconnect backoff."""
        with contextlib.suppress(KraftError, OSError, TimeoutError):
            await self._client.connect()

    async def close(self) -> None:
        await self._client.close()
