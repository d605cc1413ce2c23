"""Kafka wire transport for the shell: a request server and one client connection per peer (asyncio).

Contracts:
1. Server: every connection is served one request at a time, so responses leave in request order (Kafka mutes
   a connection while its request is processed). A frame size outside 1..max_frame_size, an unknown api key,
   an unsupported version (other than ApiVersions, which the handler answers at v0) or undecodable bytes close
   that connection with a log line; other connections are unaffected.
2. The handler returns ``(response, version)`` or None (no response).
3. Client: :meth:`PeerConnection.request` negotiates ApiVersions once per connection, sends at the highest
   version both sides support and returns the decoded response, or raises :class:`PeerError` carrying the code
   Kafka's network channel would synthesize: BROKER_NOT_AVAILABLE (cannot connect / disconnected),
   UNSUPPORTED_VERSION (no common version, or the message cannot be written at it), REQUEST_TIMED_OUT.
   Any failure closes the connection; the next request reconnects, but not before a reconnect backoff that
   doubles from 50 ms to 1 s while connects keep failing (Kafka's reconnect.backoff.ms / .max.ms); requests
   inside the backoff fail at once with BROKER_NOT_AVAILABLE.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from collections.abc import Awaitable, Callable
from typing import Any

from generated.api_versions_request import ApiVersionsRequest
from generated.api_versions_response import ApiVersionsResponse
from generated.messages import API_SPECS
from generated.request_header import RequestHeader
from generated.response_header import ResponseHeader
from kwire.errors import ErrorCode, KraftError

log = logging.getLogger("kraftd.shell.transport")

MAX_FRAME_SIZE = 104857600
API_VERSIONS_KEY = 18
RECONNECT_BACKOFF_MS = 50
RECONNECT_BACKOFF_MAX_MS = 1000

Handler = Callable[[RequestHeader, Any, int], Awaitable[tuple[Any, int] | None]]


class PeerError(KraftError):
    """A request to a peer got no usable response (contract 3)."""


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


async def _read_frame(reader: asyncio.StreamReader, max_size: int) -> bytes | None:
    try:
        head = await reader.readexactly(4)
    except asyncio.IncompleteReadError:
        return None
    size = struct.unpack(">i", head)[0]
    if size <= 0 or size > max_size:
        raise KraftError(f"frame size {size} outside 1..{max_size}")
    return await reader.readexactly(size)


class Server:
    def __init__(
        self,
        host: str,
        port: int,
        handler: Handler,
        supported: dict[int, tuple[int, int]],
        *,
        max_frame_size: int = MAX_FRAME_SIZE,
    ) -> None:
        self.host = host
        self.port = port
        self.handler = handler
        self.supported = supported
        self.max_frame_size = max_frame_size
        self._server: asyncio.Server | None = None
        self._conns: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host or None, self.port)
        sock = self._server.sockets[0]
        self.port = sock.getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for w in list(self._conns):
            w.close()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 1.0)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        self._conns.add(writer)
        try:
            while True:
                payload = await _read_frame(reader, self.max_frame_size)
                if payload is None:
                    return
                out = await self._one(payload)
                writer.write(_frame(out))
                await writer.drain()
        except (KraftError, ValueError) as exc:
            log.warning("closing connection from %s: %s", peer, exc)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._conns.discard(writer)
            writer.close()

    async def _one(self, payload: bytes) -> bytes:
        if len(payload) < 8:
            raise KraftError("request shorter than a header")
        api_key, version = struct.unpack_from(">hh", payload, 0)
        spec = API_SPECS.get(api_key)
        if spec is None or api_key not in self.supported:
            raise KraftError(f"unsupported api key {api_key}")
        lo, hi = self.supported[api_key]
        if not lo <= version <= hi and api_key != API_VERSIONS_KEY:
            raise KraftError(f"unsupported version {version} of {spec.name}")
        if api_key == API_VERSIONS_KEY and not lo <= version <= hi:
            header, _ = RequestHeader.read(payload, 0, 1)
            body: Any = ApiVersionsRequest()
        else:
            header, pos = RequestHeader.read(payload, 0, spec.request_header_version(version))
            req_cls: Any = spec.request
            body = req_cls.decode(memoryview(payload)[pos:], version)
        result = await self.handler(header, body, version)
        if result is None:
            raise KraftError(f"no response for {spec.name}")
        response, resp_version = result
        hv = spec.response_header_version(resp_version)
        encoded: bytes = response.encode(resp_version)
        return ResponseHeader(correlation_id=header.correlation_id).encode(hv) + encoded


class PeerConnection:
    """One outbound connection to a peer (contract 3)."""

    def __init__(self, host: str, port: int, *, client_id: str, timeout_ms: int) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout = timeout_ms / 1000
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._versions: dict[int, tuple[int, int]] = {}
        self._correlation = 0
        self._lock = asyncio.Lock()
        self._backoff_ms = 0.0
        self._retry_at = 0.0

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None

    async def request(self, message: Any) -> Any:
        async with self._lock:
            try:
                return await asyncio.wait_for(self._request(message), self.timeout)
            except TimeoutError:
                self.close()
                raise PeerError(
                    f"request to {self.host}:{self.port} timed out", ErrorCode.REQUEST_TIMED_OUT
                ) from None
            except PeerError:
                raise
            except (OSError, asyncio.IncompleteReadError, KraftError) as exc:
                self.close()
                raise PeerError(f"{self.host}:{self.port}: {exc}", ErrorCode.BROKER_NOT_AVAILABLE) from None

    async def _request(self, message: Any) -> Any:
        if self._writer is None:
            loop = asyncio.get_running_loop()
            if loop.time() < self._retry_at:
                raise PeerError(
                    f"{self.host}:{self.port}: in reconnect backoff", ErrorCode.BROKER_NOT_AVAILABLE
                )
            try:
                self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
                self._versions = await self._negotiate()
            except (OSError, asyncio.IncompleteReadError, KraftError):
                self.close()
                self._backoff_ms = min(
                    max(self._backoff_ms * 2, RECONNECT_BACKOFF_MS), RECONNECT_BACKOFF_MAX_MS
                )
                self._retry_at = loop.time() + self._backoff_ms / 1000
                raise
            self._backoff_ms = 0.0
        key = type(message).API_KEY
        spec = API_SPECS[key]
        theirs = self._versions.get(key)
        if theirs is None or max(theirs[0], spec.lowest_version) > min(theirs[1], spec.highest_version):
            raise PeerError(
                f"{spec.name}: no version in common with {self.host}:{self.port}",
                ErrorCode.UNSUPPORTED_VERSION,
            )
        version = min(theirs[1], spec.highest_version)
        try:
            body = message.encode(version)
        except KraftError as exc:
            raise PeerError(f"{spec.name} v{version}: {exc}", ErrorCode.UNSUPPORTED_VERSION) from None
        return await self._roundtrip(key, version, body)

    async def _roundtrip(self, key: int, version: int, body: bytes) -> Any:
        assert self._reader is not None and self._writer is not None
        spec = API_SPECS[key]
        self._correlation += 1
        header = RequestHeader(key, version, self._correlation, self.client_id)
        self._writer.write(_frame(header.encode(spec.request_header_version(version)) + body))
        await self._writer.drain()
        payload = await _read_frame(self._reader, MAX_FRAME_SIZE)
        if payload is None:
            raise ConnectionError("connection closed by peer")
        rheader, pos = ResponseHeader.read(payload, 0, spec.response_header_version(version))
        if rheader.correlation_id != self._correlation:
            raise KraftError(f"correlation id {rheader.correlation_id}, expected {self._correlation}")
        if key == API_VERSIONS_KEY:
            try:
                return ApiVersionsResponse.decode(memoryview(payload)[pos:], version)
            except KraftError:
                return ApiVersionsResponse.decode(memoryview(payload)[pos:], 0)
        resp_cls: Any = spec.response
        return resp_cls.decode(memoryview(payload)[pos:], version)

    async def _negotiate(self) -> dict[int, tuple[int, int]]:
        spec = API_SPECS[API_VERSIONS_KEY]
        req = ApiVersionsRequest(client_software_name="kraftd", client_software_version="0.1.0")
        resp = await self._roundtrip(API_VERSIONS_KEY, spec.highest_version, req.encode(spec.highest_version))
        if resp.error_code == ErrorCode.UNSUPPORTED_VERSION:
            resp = await self._roundtrip(API_VERSIONS_KEY, 0, ApiVersionsRequest().encode(0))
        if resp.error_code != ErrorCode.NONE:
            raise KraftError(f"ApiVersions failed with error {resp.error_code}")
        return {a.api_key: (a.min_version, a.max_version) for a in resp.api_keys}
