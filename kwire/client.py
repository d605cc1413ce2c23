"""An asyncio Kafka-protocol client for one peer: ApiVersions negotiation, correlation, timeouts, reconnects.

Public API:
- ``KafkaClient(host, port, *, client_id="kraftd", ...)``; ``await client.connect() -> NegotiatedVersions``;
  ``await client.send(request_obj, version=None, timeout=None) -> response_obj``; ``await client.close()``
  (also an async context manager). ``client.versions`` is the last negotiation result (None before).
- ``await request_once(host, port, request, version=None, timeout=10.0) -> response`` for one-shot tools.

Contracts:
1. Negotiation (PROTOCOL-FACTS §2.2): on every new connection send ApiVersions at our highest version (4);
   a reply with UNSUPPORTED_VERSION carries the peer's ApiVersions range, and we retry once at the lower of
   its max and ours. The usable version of each API is the highest common one (kwire.apiversions.negotiate).
2. ``send`` with ``version=None`` uses the negotiated version; an API the peer lacks, or an explicit version
   outside both ranges, raises ApiNotSupportedError before anything is written.
3. Correlation ids increase per connection from 0; responses must come back in request order (Kafka's
   guarantee) — anything else is a RemoteProtocolError and closes the connection.
4. A request not answered within its timeout raises RequestTimeoutError and closes the connection (Kafka's
   NetworkClient disconnects on request timeout); every other in-flight request then fails with NetworkError.
4a. ``patient=True`` (kraft-swarm's): ``start``'s timeout firing while the connection delivers bytes (queued in the
   kernel, or read since sent or last checked) waits again: the peer answered, the reader is slower than the wire.
5. Reconnects back off exponentially like Kafka's reconnect.backoff.ms / reconnect.backoff.max.ms: after the
   n-th consecutive failed attempt the next waits base·2^(n-1), capped at max, with ±20% jitter; a successful
   negotiation resets it. ``send`` on a closed connection reconnects (waiting out the backoff).
6. ``close()`` fails every pending request with NetworkError; later ``send`` calls raise NetworkError.
7. With ``ssl`` (a client context from kwire.tls) the connection is TLS; the certificate is checked against
   ``server_hostname`` (default: ``host``) when the context checks host names. Handshake failures are
   NetworkError like any failed connect.
8. With ``sasl`` every new connection authenticates (SaslHandshake, SaslAuthenticate) right after ApiVersions;
   a failure raises kwire.sasl.SaslAuthenticationError (Kafka's code) and the connection is dropped. When the
   server reports a session lifetime, ``send`` re-authenticates in band once 90% of it has passed (KIP-368).
9. ``start(request)`` is ``send`` without a coroutine: on a negotiated connection with nothing to re-check it
   writes the request at once (inside the caller's turn of the loop) and returns the future of its response,
   under contracts 2-4 and 6 (a timeout fails it with RequestTimeoutError and closes the connection). It
   returns None, having written nothing, whenever ``send`` would first connect, re-authenticate or raise.
9a. ``start(request, on_answer=f)`` calls ``f(future)`` exactly once, with the done future: for a response, from
   the read loop right after its frame is decoded (the same turn of the loop, not the next one a done callback
   would take: on a controller that turn is the follower's step of a Fetch answer, issue 25); for any other
   outcome (timeout, disconnect, close) as a done callback. An exception ``f`` raises goes to the loop's
   exception handler, as a done callback's would, and never ends the read loop.
10. ``decode(frame, api_key, version) -> (correlation id, body)``, if given, decodes every response instead of
   kwire.headers.decode_response (kraft-swarm shares the decoding of identical answers among its clients); such
   a client's connections are stamped by the kernel (kwire.arrival contract 3), no other's.
11. Cancelling a caller of ``send``/``connect`` always cancels it, even with its response already there: timeouts
   use ``asyncio.timeout``, not 3.11's ``wait_for`` (it returns a result that arrived with the cancel).
12. ``on_disconnect(reason)`` runs once per connection closed, with why (kwire.client_conn.reason, naming a timed-out request's API).
13. The read loop holds no frame or decoded body of a delivered response while it waits for bytes (kraft-swarm's
   1,000 connections each held their last 8 MiB answer twice: GBs at 1,000 x 300k, docs/SWARM.md session 17),
   and no reference cycle of the client holds one: a response the caller drops is freed at once, without a
   garbage collection (kraft-swarm's frozen collector never collected the answers contract 4a's timer held).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable, Mapping
from ssl import SSLContext
from typing import Any

from generated.api_versions_request import ApiVersionsRequest
from generated.api_versions_response import ApiVersionsResponse
from generated.messages import API_SPECS
from kwire import arrival, stagetrace
from kwire.apiversions import API_VERSIONS_KEY, NegotiatedVersions, VersionRange, negotiate
from kwire.client_conn import Connection as _Connection
from kwire.client_conn import expire_later as _expire_later
from kwire.client_conn import once as _once
from kwire.client_conn import retrieve as _retrieve
from kwire.errors import (
    ApiNotSupportedError,
    ErrorCode,
    ErrorResponse,
    KraftError,
    LocalProtocolError,
    NetworkError,
    RequestTimeoutError,
)
from kwire.framing import DEFAULT_MAX_FRAME_SIZE, encode_frame
from kwire.headers import decode_response, encode_request
from kwire.sasl import SaslClientConfig, client_exchange
from kwire.version import VERSION


def all_apis() -> dict[int, VersionRange]:
    return {k: (s.lowest_version, s.highest_version) for k, s in API_SPECS.items()}


class KafkaClient:
    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str | None = "kraftd",
        client_software_name: str = "kraftd",
        client_software_version: str = VERSION,
        apis: Mapping[int, VersionRange] | None = None,
        request_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        reconnect_backoff_ms: int = 50,
        reconnect_backoff_max_ms: int = 1000,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        rng: random.Random | None = None,
        ssl: SSLContext | None = None,
        server_hostname: str | None = None,
        sasl: SaslClientConfig | None = None,
        decode: Callable[[bytes, int, int], tuple[int, Any]] | None = None,
        patient: bool = False,
        on_disconnect: Callable[[str], None] | None = None,
    ) -> None:
        self.host, self.port = host, port
        self.client_id = client_id
        self._software = (client_software_name, client_software_version)
        self._ours = dict(all_apis() if apis is None else apis)
        self.request_timeout = request_timeout
        self.connect_timeout = connect_timeout
        self._backoff_base = reconnect_backoff_ms / 1000
        self._backoff_max = reconnect_backoff_max_ms / 1000
        self._max_frame = max_frame_size
        self._rng = rng or random.Random()
        self._ssl = ssl
        self._server_hostname = server_hostname
        self._sasl = sasl
        self._decode = decode or decode_response  # contract 10
        self._patient, self._on_disconnect = patient, on_disconnect  # contracts 4a, 12
        self._reauth_at: float | None = None
        self._conn: _Connection | None = None
        self._connecting: asyncio.Lock = asyncio.Lock()
        self._failures = 0
        self._next_attempt = 0.0
        self._closed = False
        self.versions: NegotiatedVersions | None = None

    async def __aenter__(self) -> KafkaClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def connected(self) -> bool:
        return self._conn is not None and not self._conn.closed

    def reconnect_wait(self) -> float:
        """Contract 5: seconds before a send on this client may try to connect again (0: connected, or it may now)."""
        return 0.0 if self.connected else max(0.0, self._next_attempt - time.monotonic())

    def backoff_delay(self, failures: int) -> float:
        """Seconds to wait after ``failures`` consecutive failures (contract 5)."""
        if failures <= 0:
            return 0.0
        delay = min(self._backoff_base * 2 ** (failures - 1), self._backoff_max)
        return float(delay * self._rng.uniform(0.8, 1.2))

    # ------------------------------------------------------------ connecting

    async def connect(self) -> NegotiatedVersions:
        async with self._connecting:
            if self._closed:
                raise NetworkError("client is closed")
            if self.connected and self.versions is not None:
                return self.versions
            wait = self._next_attempt - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            try:
                self.versions = await self._open_and_negotiate()
            except asyncio.CancelledError:
                # A connect cancelled half-way leaves no half-negotiated connection behind (contract 6).
                if self._conn is not None:
                    self._conn.fail_all(NetworkError("connecting was cancelled"))
                    self._conn = None
                raise
            except (TimeoutError, KraftError, OSError) as exc:
                self._failures += 1
                self._next_attempt = time.monotonic() + self.backoff_delay(self._failures)
                if self._conn is not None:
                    self._conn.fail_all(NetworkError(f"connection failed: {exc}"))
                    self._conn = None
                if isinstance(exc, KraftError):
                    raise
                raise NetworkError(f"cannot connect to {self.host}:{self.port}: {exc!r}") from exc
            self._failures = 0
            return self.versions

    async def _open_and_negotiate(self) -> NegotiatedVersions:
        hostname = (self._server_hostname or self.host) if self._ssl is not None else None
        stamp = self._decode is not decode_response  # contract 10
        async with asyncio.timeout(self.connect_timeout):  # contract 11
            reader, writer = await arrival.open_connection(self.host, self.port, self._ssl, hostname, stamp)
        conn = _Connection(reader, writer, self._max_frame, self._on_disconnect)
        conn.reader_task = asyncio.create_task(self._read_loop(conn))
        self._conn = conn
        lo, hi = self._ours.get(API_VERSIONS_KEY, (0, 4))
        version = hi
        name, sw_version = self._software
        for _ in range(2):
            req = ApiVersionsRequest(client_software_name=name, client_software_version=sw_version)
            resp: ApiVersionsResponse = await self._request(conn, req, version, self.connect_timeout)
            if resp.error_code == ErrorCode.UNSUPPORTED_VERSION:
                peer_max = next((a.max_version for a in resp.api_keys if a.api_key == API_VERSIONS_KEY), None)
                if peer_max is None or peer_max >= version or peer_max < lo:
                    raise ApiNotSupportedError(f"no ApiVersions version in common (peer max {peer_max})")
                version = peer_max
                continue
            if resp.error_code != ErrorCode.NONE:
                raise ErrorResponse(ErrorCode.from_code(resp.error_code), "ApiVersions request refused")
            negotiated = negotiate(self._ours, resp)
            if self._sasl is not None:
                await self._authenticate(conn, negotiated)
            return negotiated
        raise ApiNotSupportedError("ApiVersions negotiation did not converge")

    async def _authenticate(self, conn: _Connection, nv: NegotiatedVersions) -> None:
        """Contract 8: SASL on this connection; re-authenticate at 90% of the session lifetime."""
        assert self._sasl is not None

        async def request(message: Any) -> Any:
            api_key = type(message).API_KEY
            return await self._request(conn, message, nv.version_for(api_key), self.connect_timeout)

        lifetime_ms = await client_exchange(request, self._sasl)
        self._reauth_at = time.monotonic() + lifetime_ms * 0.9 / 1000 if lifetime_ms > 0 else None

    # ------------------------------------------------------------ requests

    async def send(self, request: Any, version: int | None = None, *, timeout: float | None = None) -> Any:
        api_key = getattr(type(request), "API_KEY", None)
        if api_key is None or api_key not in API_SPECS:
            raise LocalProtocolError(f"{type(request).__name__} is not a request message")
        if self._closed:
            raise NetworkError("client is closed")
        if not self.connected or self.versions is None:
            await self.connect()
        assert self.versions is not None and self._conn is not None
        if self._reauth_at is not None and time.monotonic() >= self._reauth_at:
            self._reauth_at = None
            try:
                await self._authenticate(self._conn, self.versions)
            except KraftError as exc:
                self._conn.fail_all(NetworkError(f"re-authentication failed: {exc}"))
                raise
        if version is None:
            version = self.versions.version_for(api_key)
        else:
            peer = self.versions.peer.get(api_key)
            ours = self._ours.get(api_key)
            if (
                peer is None
                or ours is None
                or not (max(peer[0], ours[0]) <= version <= min(peer[1], ours[1]))
            ):
                raise ApiNotSupportedError(
                    f"{API_SPECS[api_key].name} v{version} is not supported by both sides"
                )
        return await self._request(
            self._conn, request, version, self.request_timeout if timeout is None else timeout
        )

    def start(
        self,
        request: Any,
        *,
        timeout: float | None = None,
        on_answer: Callable[[asyncio.Future[Any]], None] | None = None,
    ) -> asyncio.Future[Any] | None:
        """Contracts 9, 9a."""
        conn, nv = self._conn, self.versions
        api_key = getattr(type(request), "API_KEY", None)
        if conn is None or conn.closed or nv is None or self._closed or api_key not in API_SPECS:
            return None
        if self._reauth_at is not None and time.monotonic() >= self._reauth_at:
            return None
        cid = conn.next_id
        try:
            version = nv.version_for(api_key)
            payload = encode_frame(
                encode_request(api_key, version, cid, self.client_id, request), self._max_frame
            )
        except KraftError:
            return None  # send() raises it
        conn.next_id = (cid + 1) & 0x7FFFFFFF
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        fut.add_done_callback(_retrieve)
        conn.pending[cid] = (api_key, version, fut)
        if on_answer is not None:
            conn.eager[cid] = _once(on_answer, fut)
        if stagetrace.ON:
            stagetrace.mark(f"cli.write.{api_key}")
        try:
            conn.writer.write(payload)
        except (ConnectionError, OSError) as exc:
            self._disconnect(conn, NetworkError(f"write failed: {exc!r}"))
            return fut
        wait = self.request_timeout if timeout is None else timeout

        def expire() -> None:  # fut not done (kwire.client_conn.expire_later)
            conn.pending.pop(cid, None)
            conn.eager.pop(cid, None)
            name = API_SPECS[api_key].name
            self._disconnect(conn, NetworkError(f"connection closed after a request timed out: {name}"))
            fut.set_exception(RequestTimeoutError(f"{name} v{version} got no response in {wait}s"))

        _expire_later(loop, wait, fut, expire, conn if self._patient else None)
        return fut

    async def _request(self, conn: _Connection, request: Any, version: int, timeout: float) -> Any:
        if conn.closed:
            raise NetworkError("connection is closed")
        api_key: int = type(request).API_KEY
        cid = conn.next_id
        payload = encode_request(api_key, version, cid, self.client_id, request)
        conn.next_id = (cid + 1) & 0x7FFFFFFF
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        fut.add_done_callback(_retrieve)  # a caller cancelled while waiting never reads a later failure
        conn.pending[cid] = (api_key, version, fut)
        try:
            if stagetrace.ON:
                stagetrace.mark(f"cli.write.{api_key}")
            conn.writer.write(encode_frame(payload, self._max_frame))
            await conn.writer.drain()
        except (ConnectionError, OSError) as exc:
            self._disconnect(conn, NetworkError(f"write failed: {exc!r}"))
        try:
            async with asyncio.timeout(timeout):  # contract 11: not wait_for, which can swallow a cancel
                return await asyncio.shield(fut)
        except TimeoutError:
            conn.pending.pop(cid, None)
            name = API_SPECS[api_key].name
            self._disconnect(conn, NetworkError(f"connection closed after a request timed out: {name}"))
            raise RequestTimeoutError(f"{name} v{version} got no response in {timeout}s") from None

    def _disconnect(self, conn: _Connection, exc: KraftError) -> None:
        if not conn.closed:
            conn.fail_all(exc)
            self._next_attempt = time.monotonic() + self.backoff_delay(max(1, self._failures))
        if self._conn is conn:
            self._conn = None

    async def _read_loop(self, conn: _Connection) -> None:
        try:
            while True:
                data = await conn.reader.read(65536)
                if not data:
                    raise NetworkError("peer closed the connection")
                if stagetrace.ON:
                    stagetrace.mark("cli.read")
                conn.deliver(data, self._decode)  # contract 13
        except KraftError as exc:
            self._disconnect(conn, exc if isinstance(exc, NetworkError) else NetworkError(str(exc)))
        except (ConnectionError, OSError) as exc:
            self._disconnect(conn, NetworkError(f"connection lost: {exc!r}"))
        except asyncio.CancelledError:
            self._disconnect(conn, NetworkError("client closed"))
            raise

    async def close(self) -> None:
        self._closed = True
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.fail_all(NetworkError("client closed"))
            if conn.reader_task is not None:
                conn.reader_task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await conn.reader_task
            with contextlib.suppress(ConnectionError, OSError):
                await conn.writer.wait_closed()


async def request_once(
    host: str,
    port: int,
    request: Any,
    *,
    version: int | None = None,
    timeout: float = 10.0,
    **client_args: Any,
) -> Any:
    """Connect, negotiate, send one request, close (what a CLI tool needs). Errors as for ``send``."""
    client = KafkaClient(host, port, request_timeout=timeout, connect_timeout=timeout, **client_args)
    try:
        await client.connect()
        return await client.send(request, version)
    finally:
        await client.close()
