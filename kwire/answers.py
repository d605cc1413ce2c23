"""What :class:`kwire.server.KafkaServer` answers: handler calls, ApiVersions, SASL steps, the fast path.

Split out of kwire.server (its contracts 3, 6-11 are implemented here; the numbering is kwire.server's).
Public names are re-exported by kwire.server: ``ConnectionInfo``, ``request_principal``, ``acting_as``.

Contract 11a (encode-once fan-out, issue 24): within one turn of the loop, fast-path replies (contract 11) that
carry the same response object at the same version share one encoding of its body (:class:`SharedBodies`); only
the frame's size and response header (the correlation id) are built per reply: 1,000 parked observer Fetches
answered with one object encode it once. Entries are dropped at the next turn (a reply never reuses the bytes
of an object changed since), but for large ones (11f). Contracts 11d-11h (large bodies): kwire.large_frames.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from ssl import SSLContext, SSLError
from typing import Any

from generated.api_versions_request import ApiVersionsRequest
from generated.request_header import RequestHeader
from kwire import stagetrace
from kwire.apiversions import (
    API_VERSIONS_KEY,
    VersionRange,
    build_api_versions_response,
    unsupported_version_response,
    valid_client_software,
)
from kwire.authz import ANONYMOUS, Gate
from kwire.errors import ErrorCode, KraftError, LocalProtocolError
from kwire.framing import DEFAULT_MAX_FRAME_SIZE
from kwire.headers import ParsedRequest, encode_response, response_header
from kwire.large_frames import LARGE, Frame, KeptBodies, Spliced, Written, pieces, spliced
from kwire.limits import ListenerLimits, RateLimitedWarning
from kwire.sasl import SASL_AUTHENTICATE, SASL_HANDSHAKE, SaslServerConfig, ServerSession

log = logging.getLogger("kwire.server")


@dataclass(frozen=True, slots=True)
class ConnectionInfo:
    connection_id: int
    peer: tuple[str, int]
    local: tuple[str, int]
    listener: str


Handler = Callable[[RequestHeader, Any, ConnectionInfo], Awaitable[Any]]
FastHandler = Callable[[RequestHeader, Any, "ConnectionInfo", Callable[[Any], None]], bool]
FinalizedFeatures = Callable[[], tuple[int, Mapping[str, VersionRange]]]


_PRINCIPAL: ContextVar[str] = ContextVar("kwire_request_principal", default=ANONYMOUS)


def request_principal() -> str:
    """Contract 9 (each request is served in its own task, so the value is that request's)."""
    return _PRINCIPAL.get()


@contextmanager
def acting_as(principal: str) -> Iterator[None]:
    """Contract 9: while a handler serves a request forwarded inside an Envelope, :func:`request_principal` names
    the principal the broker forwarded it for."""
    token = _PRINCIPAL.set(principal)
    try:
        yield
    finally:
        _PRINCIPAL.reset(token)


class _Close(Exception):
    """Internal: the response for this request cannot be produced; close the connection."""


@dataclass(slots=True)
class ServerStats:
    """Running totals for metrics: bytes read and written (frames with their length prefix), connections."""

    bytes_in: int = 0
    bytes_out: int = 0
    writes: int = 0  # socket writes of responses (kwire.server contract 2a)
    connections_open: int = 0
    connections_total: int = 0


class SharedBodies:
    """Contract 11a: encoded response bodies by (object, api key, version), kept until the loop's next turn."""

    __slots__ = ("entries", "clearing", "encodes", "kept")

    def __init__(self) -> None:
        self.entries: dict[tuple[int, int, int], tuple[Any, bytes | Spliced]] = {}
        self.clearing, self.encodes = False, 0  # encodes: bodies encoded (a fan-out of N replies counts 1)
        self.kept = KeptBodies()  # contract 11f

    def payload(self, api_key: int, version: int, body: Any) -> bytes | Spliced:
        key = (id(body), api_key, version)
        hit = self.entries.get(key) or self.kept.get(key)
        if hit is not None and hit[0] is body:
            return hit[1]
        if (encoded := spliced(body, version)) is None:  # contract 11h
            encoded = body.encode(version)
            self.kept.put(key, body, encoded)
        self.encodes += 1
        self.entries[key] = (body, encoded)  # holding ``body`` keeps its id from being reused meanwhile
        if not self.clearing:
            self.clearing = True
            asyncio.get_running_loop().call_soon(self.clear)
        return encoded

    def clear(self) -> None:
        self.entries.clear()
        self.clearing = False

    def frame(self, req: ParsedRequest, body: Any) -> Frame:
        """The response frame of ``req``: size, response header, the shared body (contract 11d from LARGE)."""
        payload = self.payload(req.api_key, req.api_version, body)
        header = response_header(req.api_key, req.api_version, req.correlation_id)
        n = len(header) + (sum(map(len, payload)) if isinstance(payload, tuple) else len(payload))
        if n > DEFAULT_MAX_FRAME_SIZE:
            raise LocalProtocolError(f"frame of {n} bytes exceeds the {DEFAULT_MAX_FRAME_SIZE} limit")
        head = n.to_bytes(4, "big") + header
        if isinstance(payload, tuple):  # contract 11h
            return (head + payload[0], payload[1], payload[2])
        return (head, payload) if len(payload) >= LARGE else head + payload


class _FastReply:
    """Contract 11's ``reply`` for one fast request: one object, not a closure (kwire.settle, contract 11j)."""

    __slots__ = ("answering", "req", "writer", "info", "counts", "entry")

    def __init__(
        self,
        answering: Answering,
        req: ParsedRequest,
        w: asyncio.StreamWriter,
        i: ConnectionInfo,
        c: Written,
        e: list[Any],
    ) -> None:
        self.answering, self.req, self.writer, self.info, self.counts, self.entry = answering, req, w, i, c, e

    def __call__(self, body: Any) -> None:
        self.answering._reply(self.req, self.writer, self.info, self.counts, self.entry, body)


class Answering:
    """The answering half of KafkaServer (a mixin: KafkaServer.__init__ sets these attributes)."""

    served: Mapping[int, VersionRange]
    gate: Gate | None
    warn: RateLimitedWarning
    _handler: Handler
    _fast: FastHandler | None
    _sasl: SaslServerConfig | None
    _supported: Mapping[str, VersionRange]
    _finalized: FinalizedFeatures | None
    _features_read: Callable[[], Awaitable[int]] | None
    stats: ServerStats
    shared: SharedBodies
    _last_done: dict[int, tuple[bool, float]]
    _ssl: SSLContext | None
    limits: ListenerLimits
    _held_depth: int
    _held: dict[int, tuple[asyncio.StreamWriter, ConnectionInfo, Written, list[Frame], list[Any]]]

    async def _handshake(self, writer: asyncio.StreamWriter, info: ConnectionInfo) -> bool:
        """Contract 6."""
        assert self._ssl is not None
        try:
            await writer.start_tls(self._ssl, ssl_handshake_timeout=self.limits.handshake_timeout_ms / 1000)
            return True
        except (SSLError, OSError, TimeoutError, ConnectionError) as exc:
            reason = getattr(exc, "reason", None) or str(exc) or type(exc).__name__
            detail = getattr(exc, "verify_message", None)  # e.g. "certificate has expired"
            if detail:
                reason = f"{reason} ({detail})"
            self.warn(
                "TLS handshake with %s:%d failed (connection %d): %s", *info.peer, info.connection_id, reason
            )
            writer.transport.abort()
            return False

    @contextmanager
    def coalesced(self) -> Iterator[None]:
        """Contract 11c: fast replies made inside leave in one write per connection, when the outermost exits."""
        self._held_depth += 1
        try:
            yield
        finally:
            self._held_depth -= 1
            if not self._held_depth:
                held, self._held = self._held, {}
                for writer, info, counts, frames, slots in held.values():
                    self._emit(writer, info, counts, frames, slots)

    def _offer(
        self, req: ParsedRequest, writer: asyncio.StreamWriter, info: ConnectionInfo, counts: Written
    ) -> asyncio.Future[bytes | None] | None:
        """Contract 11: a future resolved with None once ``reply`` wrote the response, or None if declined."""
        assert self._fast is not None
        slot: asyncio.Future[bytes | None] = counts.loop.create_future()  # kwire.server contract 11i
        entry: list[Any] = [slot, None]
        counts.chain.append(entry)
        if self._fast(req.header, req.body, info, _FastReply(self, req, writer, info, counts, entry)):
            return slot
        counts.chain.pop()
        return None

    def _reply(
        self,
        req: ParsedRequest,
        writer: asyncio.StreamWriter,
        info: ConnectionInfo,
        counts: Written,
        entry: list[Any],
        body: Any,
    ) -> None:
        """Contract 11: the reply to the fast request ``req`` whose chain entry is ``entry``."""
        slot = entry[0]
        if slot.done():  # the connection closed meanwhile
            return
        try:
            if not isinstance(body, req.spec.response):
                raise _Close(f"handler for {req.spec.name} returned {type(body).__name__}")
            entry[1] = self.shared.frame(req, body)  # contract 11a
        except KraftError as exc:
            slot.set_exception(_Close(f"cannot encode the {req.spec.name} response: {exc}"))
            return
        except _Close as exc:
            slot.set_exception(exc)
            return
        chain = counts.chain
        frames, slots = [], []
        while chain and chain[0][1] is not None:  # contract 11b: the replied prefix, in request order
            done = chain.popleft()
            slots.append(done[0])
            frames.append(done[1])
        if not frames:
            return
        if self._held_depth:  # contract 11c
            held = self._held.setdefault(id(counts), (writer, info, counts, [], []))
            held[3].extend(frames)
            held[4].extend(slots)
        else:
            self._emit(writer, info, counts, frames, slots)

    def _emit(
        self,
        writer: asyncio.StreamWriter,
        info: ConnectionInfo,
        counts: Written,
        frames: list[Frame],
        slots: list[asyncio.Future[bytes | None]],
    ) -> None:
        """Contract 11: fast replies written, in one socket write (contract 2a; 11d: a large shared body alone)."""
        if stagetrace.ON:
            stagetrace.mark("srv.write")
        for data in pieces(frames):
            self.stats.bytes_out += len(data)
            counts.out.write(data)
            self.stats.writes += 1
        counts.written += len(frames)
        if info.connection_id in self._last_done:  # kwire.limits contract 2: it completed a request
            self._last_done[info.connection_id] = (True, time.monotonic())
        for slot in slots:
            if not slot.done():
                slot.set_result(None)

    async def _respond(
        self,
        req: ParsedRequest,
        info: ConnectionInfo,
        session: ServerSession | None = None,
        principal: Callable[[], str] | None = None,
        handshake: bool = True,
    ) -> bytes | None:
        try:
            if req.unsupported_api_versions:
                # KIP-511: a v0 body (and v0 header) whatever version the client asked for.
                return encode_response(
                    API_VERSIONS_KEY, 0, req.correlation_id, unsupported_version_response(self.served)
                )
            version = req.api_version
            if req.api_key == API_VERSIONS_KEY:
                read = ErrorCode.NONE
                if self._features_read is not None and not handshake:
                    read = ErrorCode(await self._features_read())
                body: Any = self._api_versions(req.body, version, read)
            elif session is not None and req.api_key in (SASL_HANDSHAKE, SASL_AUTHENTICATE):
                body = self._sasl_step(session, req, info)
            elif self.gate is not None:
                who = principal() if principal else ANONYMOUS
                body, refused = await self.gate.serve(
                    who,
                    req.api_key,
                    info.peer[0],
                    req.body,
                    version,
                    lambda b: self._call_handler(req, req.header, b, info, principal),
                )
                if refused is not None:
                    self.warn(
                        "connection %d: %s may not call %s (denied%s)",
                        info.connection_id,
                        who,
                        req.spec.name,
                        refused,
                    )
            else:
                body = await self._call_handler(req, req.header, req.body, info, principal)
            return encode_response(req.api_key, version, req.correlation_id, body)
        except KraftError as exc:
            raise _Close(f"cannot encode the {req.spec.name} response: {exc}") from exc

    async def _call_handler(
        self,
        req: ParsedRequest,
        header: Any,
        body: Any,
        info: ConnectionInfo,
        principal: Callable[[], str] | None,
    ) -> Any:
        try:
            _PRINCIPAL.set(principal() if principal is not None else ANONYMOUS)
            out = await self._handler(header, body, info)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise _Close(f"handler for {req.spec.name} v{req.api_version} failed: {exc!r}") from exc
        if not isinstance(out, req.spec.response):
            raise _Close(f"handler for {req.spec.name} returned {type(out).__name__}")
        return out

    async def _raw_token(self, session: ServerSession, token: bytes, info: ConnectionInfo) -> bytes | None:
        """kwire.sasl contract 6: a failed v0 exchange closes the connection without an answer."""
        try:
            out = session.raw_token(token, int(time.monotonic() * 1000))
        except KraftError as exc:  # one warning line, from _write_in_order as it closes the connection
            raise _Close(f"SASL authentication failed (SaslHandshake v0): {exc}") from exc
        if session.authenticated and not session.raw_tokens:
            log.debug("connection %d authenticated as %s (v0)", info.connection_id, session.principal)
        return out

    def _sasl_step(self, session: ServerSession, req: ParsedRequest, info: ConnectionInfo) -> Any:
        if req.api_key == SASL_HANDSHAKE:
            body: Any = session.handshake(req.body, req.api_version)
        else:
            body = session.authenticate(req.body, req.api_version, int(time.monotonic() * 1000))
        if body.error_code != ErrorCode.NONE:
            self.warn(
                "SASL authentication of connection %d from %s:%d failed: %s %s",
                info.connection_id,
                *info.peer,
                ErrorCode.from_code(body.error_code).name,
                getattr(body, "error_message", None) or f"(mechanism {req.body.mechanism!r})",
            )
        elif req.api_key == SASL_AUTHENTICATE and session.authenticated:
            log.debug("connection %d authenticated as %s", info.connection_id, session.principal)
        return body

    def _api_versions(
        self, request: ApiVersionsRequest, version: int, read: ErrorCode = ErrorCode.NONE
    ) -> Any:
        epoch, finalized = self._finalized() if self._finalized is not None else (-1, {})
        if read != ErrorCode.NONE:  # contract 10: a failed read of the features never serves the local ones
            epoch, finalized = -1, {}
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
            error_code=read,
        )
