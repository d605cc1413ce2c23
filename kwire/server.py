"""An asyncio server speaking the Kafka protocol: frames in, handler calls, responses out.

Public API:
- ``KafkaServer(handler, served=None, *, host="127.0.0.1", port=0, listener="controller", ...)``;
  ``await server.start()``, ``server.port``, ``await server.close()`` (also an async context manager).
- ``handler: async (header: RequestHeader, request: generated request object, info: ConnectionInfo)
  -> generated response object`` — called for every API except ApiVersions, which the server answers itself
  from ``served``, ``supported_features`` and the caller's ``finalized_features()``.

Contracts:
1. Requests are parsed header first (kwire.headers). Framing errors (negative/oversize size), unknown api keys,
   unsupported versions of APIs other than ApiVersions and unparsable requests close that connection with one
   WARNING log line on logger ``kwire.server``; other connections are unaffected.
2. Responses go out in request order on each connection (Kafka's guarantee), even when handlers finish out of
   order. At most ``max_in_flight`` requests per connection are being handled at once; beyond that the server
   stops reading from that connection until one completes (back-pressure, not an error).
3. A handler that raises, or returns something that is not the API's response class, or a response that cannot
   be encoded at the request's version, closes the connection with a log line (no partial frame is written).
4. ``close()`` stops accepting, closes every connection and cancels in-flight handler calls.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from generated.api_versions_request import ApiVersionsRequest
from generated.request_header import RequestHeader
from kwire.apiversions import (
    API_VERSIONS_KEY,
    DEFAULT_SUPPORTED_FEATURES,
    VersionRange,
    build_api_versions_response,
    controller_apis,
    unsupported_version_response,
    valid_client_software,
)
from kwire.errors import ErrorCode, KraftError, LocalProtocolError
from kwire.framing import DEFAULT_MAX_FRAME_SIZE, FrameDecoder, encode_frame
from kwire.headers import ParsedRequest, encode_response, parse_request

log = logging.getLogger("kwire.server")

DEFAULT_MAX_IN_FLIGHT = 16


@dataclass(frozen=True, slots=True)
class ConnectionInfo:
    connection_id: int
    peer: tuple[str, int]
    local: tuple[str, int]
    listener: str


Handler = Callable[[RequestHeader, Any, ConnectionInfo], Awaitable[Any]]
FinalizedFeatures = Callable[[], tuple[int, Mapping[str, VersionRange]]]


def _releaser(
    slots: asyncio.Semaphore, in_flight: set[asyncio.Task[bytes]]
) -> Callable[[asyncio.Task[bytes]], None]:
    def done(task: asyncio.Task[bytes]) -> None:
        slots.release()
        in_flight.discard(task)

    return done


class _Close(Exception):
    """Internal: the response for this request cannot be produced; close the connection."""


@dataclass(slots=True)
class ServerStats:
    """Running totals for metrics: bytes read and written (frames with their length prefix), connections."""

    bytes_in: int = 0
    bytes_out: int = 0
    connections_open: int = 0
    connections_total: int = 0


class KafkaServer:
    def __init__(
        self,
        handler: Handler,
        served: Mapping[int, VersionRange] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        listener: str = "controller",
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        supported_features: Mapping[str, VersionRange] = DEFAULT_SUPPORTED_FEATURES,
        finalized_features: FinalizedFeatures | None = None,
        read_chunk: int = 65536,
    ) -> None:
        if max_in_flight < 1:
            raise LocalProtocolError("max_in_flight must be at least 1")
        self._handler = handler
        served = dict(controller_apis(listener) if served is None else served)
        served.setdefault(API_VERSIONS_KEY, (0, 4))
        self.served: Mapping[int, VersionRange] = served
        self._host, self._port = host, port
        self.listener = listener
        self._max_frame = max_frame_size
        self._max_in_flight = max_in_flight
        self._supported = supported_features
        self._finalized = finalized_features
        self._chunk = read_chunk
        self._server: asyncio.Server | None = None
        self._conns: dict[int, tuple[asyncio.StreamWriter, asyncio.Task[None]]] = {}
        self._ids = itertools.count(1)
        self.stats = ServerStats()

    @property
    def port(self) -> int:
        if self._server is None or not self._server.sockets:
            raise LocalProtocolError("server is not started")
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._on_connect, self._host, self._port)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer, task in list(self._conns.values()):
            writer.close()
            task.cancel()
        for _, task in list(self._conns.values()):
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> KafkaServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------ per connection

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        cid = next(self._ids)
        peer = writer.get_extra_info("peername") or ("?", 0)
        local = writer.get_extra_info("sockname") or ("?", 0)
        info = ConnectionInfo(cid, (peer[0], peer[1]), (local[0], local[1]), self.listener)
        task = asyncio.create_task(self._serve(reader, writer, info))
        self._conns[cid] = (writer, task)
        self.stats.connections_open += 1
        self.stats.connections_total += 1
        try:
            await asyncio.wait({task})  # never raises, even when close() cancels the connection task
        finally:
            self.stats.connections_open -= 1
            self._conns.pop(cid, None)
            writer.close()

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, info: ConnectionInfo
    ) -> None:
        decoder = FrameDecoder(self._max_frame)
        slots = asyncio.Semaphore(self._max_in_flight)
        order: asyncio.Queue[asyncio.Task[bytes] | None] = asyncio.Queue()
        write_task = asyncio.create_task(self._write_in_order(order, writer, info))
        in_flight: set[asyncio.Task[bytes]] = set()
        try:
            while not write_task.done():
                data = await reader.read(self._chunk)
                if not data:
                    break
                self.stats.bytes_in += len(data)
                for frame in decoder.feed(data):
                    parsed = parse_request(frame, self.served)
                    if parsed.trailing:
                        log.debug(
                            "connection %d: %d bytes after %s v%d request ignored",
                            info.connection_id,
                            parsed.trailing,
                            parsed.spec.name,
                            parsed.api_version,
                        )
                    await slots.acquire()
                    t = asyncio.create_task(self._respond(parsed, info))
                    in_flight.add(t)
                    t.add_done_callback(_releaser(slots, in_flight))
                    order.put_nowait(t)
        except KraftError as exc:
            log.warning("closing connection %d from %s:%d: %s", info.connection_id, *info.peer, exc)
        except (ConnectionError, OSError):
            pass
        finally:
            for t in list(in_flight):
                t.cancel()
            write_task.cancel()
            try:
                await write_task
            except (asyncio.CancelledError, Exception):
                pass

    async def _write_in_order(
        self,
        order: asyncio.Queue[asyncio.Task[bytes] | None],
        writer: asyncio.StreamWriter,
        info: ConnectionInfo,
    ) -> None:
        while True:
            task = await order.get()
            if task is None:
                return
            try:
                payload = await task
            except Exception as exc:  # _Close, or anything unexpected: never leave the client waiting
                log.warning("closing connection %d from %s:%d: %s", info.connection_id, *info.peer, exc)
                writer.close()
                return
            frame = encode_frame(payload)
            self.stats.bytes_out += len(frame)
            writer.write(frame)
            await writer.drain()

    async def _respond(self, req: ParsedRequest, info: ConnectionInfo) -> bytes:
        try:
            if req.unsupported_api_versions:
                # KIP-511: a v0 body (and v0 header) whatever version the client asked for.
                return encode_response(
                    API_VERSIONS_KEY, 0, req.correlation_id, unsupported_version_response(self.served)
                )
            version = req.api_version
            if req.api_key == API_VERSIONS_KEY:
                body: Any = self._api_versions(req.body, version)
            else:
                try:
                    body = await self._handler(req.header, req.body, info)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    raise _Close(f"handler for {req.spec.name} v{version} failed: {exc!r}") from exc
                if not isinstance(body, req.spec.response):
                    raise _Close(f"handler for {req.spec.name} returned {type(body).__name__}")
            return encode_response(req.api_key, version, req.correlation_id, body)
        except KraftError as exc:
            raise _Close(f"cannot encode the {req.spec.name} response: {exc}") from exc

    def _api_versions(self, request: ApiVersionsRequest, version: int) -> Any:
        epoch, finalized = self._finalized() if self._finalized is not None else (-1, {})
        if version >= 3 and not (
            valid_client_software(request.client_software_name)
            and valid_client_software(request.client_software_version)
        ):
            return build_api_versions_response(
                version, {}, supported_features={}, error_code=ErrorCode.INVALID_REQUEST
            )
        return build_api_versions_response(
            version,
            self.served,
            supported_features=self._supported,
            finalized_features=finalized,
            finalized_features_epoch=epoch,
        )
