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
2a. Responses of one connection that are ready together leave in one socket write (``stats.writes`` counts them).
3. A handler that raises, or returns something that is not the API's response class, or a response that cannot
   be encoded at the request's version, closes the connection with a log line (no partial frame is written).
4. ``close()`` stops accepting, closes every connection and cancels in-flight handler calls.
5. ``limits`` (kwire.limits.ListenerLimits) bounds frame size, idle time, connections held and requests per
   connection (over ``max_connections``: shed, kwire.limits contract 2); contract 1's WARNING is rate-limited.
6. With ``ssl`` (a server context from kwire.tls) every connection first completes a TLS handshake within
   ``limits.handshake_timeout``; a failed handshake (plaintext client, untrusted or expired certificate, wrong
   CA) closes that connection with one rate-limited WARNING naming the peer and the reason.
7. With ``sasl`` (kwire.sasl) the listener serves SaslHandshake v1 and SaslAuthenticate v0-2 and each connection
   must authenticate before any API but ApiVersions (kwire.sasl contract 1: refused requests close the
   connection unanswered; a refused SASL exchange closes it after its answer, with one WARNING). Without
   ``sasl`` those two APIs are not served.
8. With ``authorizer`` (kwire.authz) every request but ApiVersions/SASL/Metadata is checked against the
   connection's principal (SASL user, else TLS subject, else ANONYMOUS), its peer host and the request body;
   a denied one is answered with ``denied(api_key, request, version)`` (the caller's CLUSTER_AUTHORIZATION_FAILED /
   TOPIC_AUTHORIZATION_FAILED response) and logged (rate-limited). With ``per_entry`` and an authorizer that
   decides entries (kwire.authz contract 4a), a request with some entries authorized is split: the handler serves
   those, and the refused entries' answers are merged into its response. :attr:`KafkaServer.gate` (kwire.authz
   contract 7) decides, and decides the requests a handler unwraps from an Envelope too.
9. While a handler serves a request, :func:`request_principal` names that connection's principal (as in 8,
   with or without an authorizer), so a handler can record who asked (a delegation token's owner).
10. The first ApiVersions of a connection is its version handshake (KIP-511) and is answered at once from
   ``finalized_features()``. With ``features_read``, every later ApiVersions on that connection is a read of the
   finalized features (Kafka's Admin.describeFeatures sends one on an established connection): it is answered
   only after ``await features_read()`` returns NONE, and otherwise carries that error code and no finalized
   features. Exempting the handshake keeps connection set-up (Raft peers, brokers, the read barrier's own
   connection to the leader) from ever waiting on a read barrier, which itself needs those connections.
   The handshake is the first supported ApiVersions once authenticated; a client's retry after KIP-511's
   UNSUPPORTED_VERSION, and a SASL client's ApiVersions before and after authenticating, are each set-up.
11. With ``fast`` (no SASL, no authorizer), a request arriving when every earlier response of its connection
   is written is first offered to ``fast(header, request, info, reply)``; when it returns True the caller
   answers later by calling ``reply(response)``, which encodes and writes the frame at once, inside the
   caller's own turn of the loop (no task, no writer hop: a Raft leader answers a parked Fetch from its step).
   Responses stay in request order (contract 2): later requests queue behind it; contract 3 holds. Its slot
   enters the connection's writer queue only when a later request arrives before its reply, or when it fails.
11b. A request is offered to ``fast`` also while earlier fast requests of its connection wait for their replies
   (every response not yet written is a fast one): a reply made before those of earlier requests is held until
   they are made, then the replied prefix leaves in one write, in request order.
11c. Inside ``with server.coalesced():`` fast replies are held and leave at its (outermost) exit in one write per
   connection: a caller answering many requests at once (the reads of one barrier) writes each connection once.
11i. A fast request makes no system call: its connection's loop is looked up once (3.11's lookup calls getpid).
11j. A waiting request holds no closure of its own; its done callback is its connection's (kwire.settle).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from ssl import SSLContext
from typing import Any

from kwire import stagetrace
from kwire.answers import (
    Answering,
    ConnectionInfo,
    FastHandler,
    FinalizedFeatures,
    Handler,
    ServerStats,
    SharedBodies,
    acting_as,
    request_principal,
)
from kwire.apiversions import API_VERSIONS_KEY, DEFAULT_SUPPORTED_FEATURES, VersionRange, controller_apis
from kwire.authz import ANONYMOUS, Authorizer, Gate, tls_principal
from kwire.errors import KraftError, LocalProtocolError
from kwire.framing import FrameDecoder, encode_frame
from kwire.headers import parse_request
from kwire.large_frames import Outbox, Waiting, Written
from kwire.limits import DEFAULT_MAX_IN_FLIGHT, IdleWatch, ListenerLimits, RateLimitedWarning
from kwire.sasl import SASL_AUTHENTICATE, SASL_HANDSHAKE, SaslServerConfig, ServerSession
from kwire.settle import settles

log = logging.getLogger("kwire.server")

__all__ = [
    "DEFAULT_MAX_IN_FLIGHT",
    "ConnectionInfo",
    "FastHandler",
    "Handler",
    "KafkaServer",
    "ServerStats",
    "acting_as",
    "request_principal",
]

# contract 8's per-entry decisions: (split(api key, request, refused entry indexes) -> (authorized, refused) | None,
#  merge(api key, handler's response, refusal response) -> response)
PerEntry = tuple[Callable[[int, Any, frozenset[int]], tuple[Any, Any] | None], Callable[[int, Any, Any], Any]]


class KafkaServer(Answering):
    def __init__(
        self,
        handler: Handler,
        served: Mapping[int, VersionRange] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        listener: str = "controller",
        max_frame_size: int | None = None,
        max_in_flight: int | None = None,
        supported_features: Mapping[str, VersionRange] = DEFAULT_SUPPORTED_FEATURES,
        finalized_features: FinalizedFeatures | None = None,
        read_chunk: int = 65536,
        limits: ListenerLimits | None = None,
        ssl: SSLContext | None = None,
        sasl: SaslServerConfig | None = None,
        authorizer: Authorizer | None = None,
        denied: Callable[[int, Any, int], Any] | None = None,
        features_read: Callable[[], Awaitable[int]] | None = None,
        per_entry: PerEntry | None = None,
        fast: FastHandler | None = None,
    ) -> None:
        limits = limits or ListenerLimits()
        max_frame_size = limits.max_request_bytes if max_frame_size is None else max_frame_size
        max_in_flight = limits.max_in_flight if max_in_flight is None else max_in_flight
        if max_in_flight < 1:
            raise LocalProtocolError("max_in_flight must be at least 1")
        self.limits = limits
        self._ssl = ssl
        self.warn = RateLimitedWarning(log)
        self._handler = handler
        self._fast = fast if sasl is None and authorizer is None else None
        if served is None:  # contract 7: by default only SASL listeners offer the SASL APIs
            served = {
                k: v
                for k, v in controller_apis(listener).items()
                if k not in (SASL_HANDSHAKE, SASL_AUTHENTICATE)
            }
        served = dict(served)
        served.setdefault(API_VERSIONS_KEY, (0, 4))
        if sasl is not None:
            served[SASL_HANDSHAKE] = (0, 1)  # v0: raw tokens follow the handshake (kwire.sasl contract 6)
            served[SASL_AUTHENTICATE] = (0, 2)
        self._sasl = sasl
        if authorizer is not None and denied is None:
            raise LocalProtocolError(
                "an authorizer needs a denied(api_key, request, version) response builder"
            )
        # contract 8: the same gate serves the requests brokers forward inside an Envelope (kwire.authz 7)
        self.gate = (
            Gate(authorizer, denied, per_entry) if authorizer is not None and denied is not None else None
        )
        self.served: Mapping[int, VersionRange] = served
        self._host, self._port = host, port
        self.listener = listener
        self._max_frame = max_frame_size
        self._max_in_flight = max_in_flight
        self._supported = supported_features
        self._finalized = finalized_features
        self._features_read = features_read
        self._chunk = read_chunk
        self._server: asyncio.Server | None = None
        self._conns: dict[int, tuple[asyncio.StreamWriter, asyncio.Task[None]]] = {}
        # connection id -> (has completed a request, when it last did / when it connected)
        self._last_done: dict[int, tuple[bool, float]] = {}
        self._ids = itertools.count(1)
        self.stats = ServerStats()
        self.shared = SharedBodies()  # contract 11a (kwire.answers)
        self.waiting = Waiting()  # contract 11g (kwire.large_frames)
        self._held_depth = 0  # contract 11c
        self._held: dict[int, Any] = {}

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
        if len(self._conns) >= self.limits.max_connections:
            self._shed_one()
        if self._ssl is not None and not await self._handshake(writer, info):
            return
        task = asyncio.create_task(self._serve(reader, writer, info))
        self._conns[cid] = (writer, task)
        self._last_done[cid] = (False, time.monotonic())
        self.stats.connections_open += 1
        self.stats.connections_total += 1
        try:
            await asyncio.wait({task})  # never raises, even when close() cancels the connection task
        finally:
            self.stats.connections_open -= 1
            self._conns.pop(cid, None)
            self._last_done.pop(cid, None)
            writer.close()

    def _shed_one(self) -> None:
        """Contract 5 / kwire.limits contract 2: close the connection whose last completed request is oldest."""
        victim = min(self._last_done, key=self._last_done.__getitem__, default=None)
        if victim is None:
            return
        writer, task = self._conns[victim]
        self._last_done.pop(victim, None)
        self.warn("max.connections (%d) reached: closing connection %d", self.limits.max_connections, victim)
        writer.transport.abort()
        task.cancel()

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, info: ConnectionInfo
    ) -> None:
        decoder = FrameDecoder(self._max_frame)
        slots = asyncio.Semaphore(self._max_in_flight)
        order: asyncio.Queue[asyncio.Future[bytes | None] | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()  # contract 11i
        counts = Written(Outbox(writer, self.waiting, info.connection_id), loop)  # contracts 11e, 11g, 11k
        session = ServerSession(self._sasl) if self._sasl is not None else None
        versioned = False  # contract 10: this connection's handshake ApiVersions has arrived
        tls_user = tls_principal(writer.get_extra_info("peercert")) if self._ssl is not None else None

        def principal() -> str:
            if session is not None and session.principal is not None:
                return f"User:{session.principal}"
            return tls_user or ANONYMOUS

        write_task = loop.create_task(self._write_in_order(order, writer, info, session, counts))
        in_flight: set[asyncio.Future[bytes | None]] = set()
        # contract 11: a fast request's slot, not in ``order``
        unordered: list[asyncio.Future[bytes | None]] = []
        done, fast_done, context = settles(slots, in_flight, unordered, order)  # contract 11j
        last_active = time.monotonic()

        def quiet_since() -> float | None:
            return (
                None if in_flight else max(last_active, self._last_done.get(info.connection_id, (0, 0.0))[1])
            )

        def idle_close() -> None:
            log.debug("closing connection %d: idle for %d ms", info.connection_id, self.limits.idle_ms)
            writer.close()  # the read below ends (no data): the connection closes as a peer's close does

        watch = IdleWatch(self.limits.idle_ms / 1000, quiet_since, idle_close)  # kwire.limits contract 4
        try:
            while not write_task.done():
                data = await reader.read(self._chunk)
                if not data:
                    break
                if stagetrace.ON:
                    stagetrace.mark("srv.read")
                last_active = time.monotonic()
                self.stats.bytes_in += len(data)
                for frame in decoder.feed(data):
                    if session is not None and session.raw_tokens:
                        await slots.acquire()
                        raw = loop.create_task(self._raw_token(session, frame, info))
                        in_flight.add(raw)
                        raw.add_done_callback(done, context=context)
                        counts.queued += 1
                        order.put_nowait(raw)
                        continue
                    parsed = parse_request(frame, self.served)
                    if stagetrace.ON:
                        stagetrace.mark(f"srv.parsed.{parsed.api_key}")
                    if parsed.trailing:
                        log.debug(
                            "connection %d: %d bytes after %s v%d request ignored",
                            info.connection_id,
                            parsed.trailing,
                            parsed.spec.name,
                            parsed.api_version,
                        )
                    if session is not None:
                        session.admit(parsed.api_key, int(time.monotonic() * 1000))
                    handshake = parsed.api_key == API_VERSIONS_KEY and not versioned
                    versioned = versioned or (
                        handshake
                        and not parsed.unsupported_api_versions
                        and (session is None or session.authenticated)
                    )
                    await slots.acquire()
                    t: asyncio.Future[bytes | None] | None = None
                    if self._fast is not None and counts.all_fast() and not handshake:  # contracts 11, 11b
                        t = self._offer(parsed, writer, info, counts)
                    if t is not None:  # contract 11: ordered only once a later request must wait for it
                        counts.queued += 1
                        if t.done() and t.exception() is None:  # written inside the offer
                            slots.release()
                            continue
                        in_flight.add(t)
                        unordered.append(t)
                        t.add_done_callback(fast_done, context=context)  # contract 11j
                        continue
                    while unordered:  # contract 11b: the fast slots ahead, in request order
                        order.put_nowait(unordered.pop(0))
                    t = loop.create_task(self._respond(parsed, info, session, principal, handshake))
                    in_flight.add(t)
                    t.add_done_callback(done, context=context)
                    counts.queued += 1
                    order.put_nowait(t)
        except KraftError as exc:
            self.warn("closing connection %d from %s:%d: %s", info.connection_id, *info.peer, exc)
        except (ConnectionError, OSError):
            pass
        finally:
            watch.cancel()
            counts.out.close()
            self.waiting.urgent.discard(info.connection_id)  # contract 11k (kwire.large_frames)
            for t in list(in_flight):
                t.cancel()
            write_task.cancel()
            try:
                await write_task
            except (asyncio.CancelledError, Exception):
                pass

    async def _write_in_order(
        self,
        order: asyncio.Queue[asyncio.Future[bytes | None] | None],
        writer: asyncio.StreamWriter,
        info: ConnectionInfo,
        session: ServerSession | None,
        counts: Written,
    ) -> None:
        out: list[bytes] = []  # contract 2a: answers ready together leave in one write
        taken: list[asyncio.Future[bytes | None] | None] = []  # the next of ``order``, looked at already
        while True:
            task = taken.pop() if taken else await order.get()
            if task is None:
                return
            try:
                payload = await task
            except Exception as exc:  # _Close, or anything unexpected: never leave the client waiting
                self.warn("closing connection %d from %s:%d: %s", info.connection_id, *info.peer, exc)
                writer.close()
                return
            if payload is not None:  # None: contract 11's reply wrote it already
                out.append(frame := encode_frame(payload))
                self.stats.bytes_out += len(frame)
            if session is None and not order.empty():
                taken.append(nxt := order.get_nowait())
                if nxt is not None and nxt.done() and not nxt.cancelled() and nxt.exception() is None:
                    continue
            if out:
                if stagetrace.ON:
                    stagetrace.mark("srv.write")
                counts.out.write(b"".join(out) if len(out) > 1 else out[0])
                self.stats.writes += 1
                counts.written += len(out)
                out.clear()
            await counts.out.drain()
            if session is not None and session.close_after_response:
                writer.close()  # contract 7: a refused SASL exchange ends the connection after its answer
                return
            if info.connection_id in self._last_done:
                self._last_done[info.connection_id] = (True, time.monotonic())
