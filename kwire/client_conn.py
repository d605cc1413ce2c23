"""A KafkaClient's connection state and its response callbacks (kwire.client contracts 6, 9a and 13; their text is in
kwire.client, which owns these)."""

from __future__ import annotations

import asyncio
import fcntl
import struct
import termios
import time
from collections.abc import Callable
from typing import Any

from kwire import stagetrace
from kwire.errors import KraftError, RemoteProtocolError
from kwire.framing import FrameDecoder
from kwire.headers import peek_correlation_id


class Connection:
    """One negotiated socket of a KafkaClient: its frames, correlation ids and in-flight requests."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        max_frame: int,
        on_close: Callable[[str], None] | None = None,
    ) -> None:
        self.reader, self.writer, self.on_close = reader, writer, on_close
        self.decoder = FrameDecoder(max_frame)
        self.next_id = 0
        self.pending: dict[int, tuple[int, int, asyncio.Future[Any]]] = {}
        self.eager: dict[int, Callable[[asyncio.Future[Any]], None]] = {}  # contract 9a, by correlation id
        self.closed = False
        self.reader_task: asyncio.Task[None] | None = None

    def deliver(self, data: bytes, decode: Callable[[bytes, int, int], tuple[int, Any]]) -> None:
        """Every response ``data`` completes goes to its request (contracts 9a, 13: nothing of them outlives this
        call, so the read loop holds none while it waits for the next bytes)."""
        for frame in self.decoder.feed(data):
            cid = peek_correlation_id(frame)
            if not self.pending:
                raise RemoteProtocolError(f"response with correlation id {cid} to no request")
            expected = next(iter(self.pending))
            if cid != expected:
                raise RemoteProtocolError(f"response correlation id {cid}, expected {expected}")
            api_key, version, fut = self.pending.pop(cid)
            _, body = decode(frame, api_key, version)
            if stagetrace.ON:
                stagetrace.mark(f"cli.decoded.{api_key}")
            if not fut.done():
                fut.set_result(body)
            eager = self.eager.pop(cid, None) if self.eager else None
            if eager is not None:
                call_eager(eager, fut)

    def delivering(self, since: float) -> bool:
        """Contract 4a: bytes wait in the kernel's receive queue, or reached the reader after ``since``."""
        if getattr(self.reader, "received", 0.0) > since:
            return True
        sock = self.writer.get_extra_info("socket")
        try:
            queued = fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0") if sock is not None else b""
        except (OSError, ValueError):
            return False
        return len(queued) == 4 and struct.unpack("i", queued)[0] > 0

    def fail_all(self, exc: KraftError) -> None:
        if not self.closed and self.on_close is not None:  # kwire.client contract 12: once per connection
            self.on_close(reason(exc))
        self.closed = True
        for _, _, fut in self.pending.values():
            if not fut.done():
                fut.set_exception(exc)
        self.pending.clear()
        self.eager.clear()
        self.writer.close()


# kwire.client contract 12: why a connection closed, by the start of its NetworkError's text
REASONS = (
    ("connection closed after a request timed out", "request timeout"),
    ("peer closed", "peer closed"),
    ("client closed", "client closed"),
    ("connection lost", "connection lost"),
    ("write failed", "write failed"),
    ("connection failed", "connect failed"),
    ("connecting was cancelled", "connect cancelled"),
    ("re-authentication failed", "re-authentication failed"),
)


def reason(exc: KraftError) -> str:
    """Contract 12: one of REASONS' names (a timeout with its request's API: ``request timeout (Fetch)``), or
    "protocol error" (an answer out of order, a frame refused)."""
    text = str(exc)
    name = next((name for start, name in REASONS if text.startswith(start)), "protocol error")
    return f"{name} ({text.rsplit(': ', 1)[1]})" if name == "request timeout" and ": " in text else name


def once(
    on_answer: Callable[[asyncio.Future[Any]], None], fut: asyncio.Future[Any]
) -> Callable[[asyncio.Future[Any]], None]:
    """Contract 9a: ``on_answer`` as a done callback of ``fut`` that runs only the first time it is called."""
    called = False

    def once_(done: asyncio.Future[Any]) -> None:
        nonlocal called
        if not called:
            called = True
            on_answer(done)

    fut.add_done_callback(once_)
    return once_


def call_eager(once: Callable[[asyncio.Future[Any]], None], fut: asyncio.Future[Any]) -> None:
    """Contract 9a: run the answer's callback now; what it raises goes where a done callback's would."""
    try:
        once(fut)
    except Exception as exc:  # noqa: BLE001 - reported like a done callback's failure, the read loop goes on
        asyncio.get_running_loop().call_exception_handler(
            {"message": "Exception in an answer callback (kwire.client contract 9a)", "exception": exc}
        )


def retrieve(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled():
        fut.exception()


def expire_later(
    loop: asyncio.AbstractEventLoop,
    wait: float,
    fut: asyncio.Future[Any],
    expire: Callable[[], None],
    conn: Connection | None,
) -> None:
    """Contract 4: ``expire()`` once ``wait`` seconds pass without ``fut`` done; contract 4a with ``conn`` (a
    patient client's): each time it fires while ``conn`` is delivering bytes, it waits ``wait`` seconds more."""
    if conn is None:  # contract 4 alone: one timer, as before contract 4a
        plain = loop.call_later(wait, _expire_unless_done, fut, expire)
        fut.add_done_callback(lambda _: plain.cancel())
        return
    _Patience(loop, wait, fut, expire, conn)


class _Patience:
    """Contract 4a's timer. No reference cycle outlives ``fut`` (contract 13): a closure re-arming itself was one
    (the function held its own cell), so every answer stayed alive until a full collection, and forever once a
    frozen collector (kraftd.shell.observe.looplag contract 5, the swarm's) had frozen it in flight."""

    __slots__ = ("loop", "wait", "fut", "expire", "conn", "armed", "timer")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        wait: float,
        fut: asyncio.Future[Any],
        expire: Callable[[], None],
        conn: Connection,
    ) -> None:
        self.loop, self.wait, self.fut, self.expire, self.conn = loop, wait, fut, expire, conn
        self.armed = time.monotonic()
        self.timer = loop.call_later(wait, self.fire)
        fut.add_done_callback(self.done)

    def fire(self) -> None:
        if self.fut.done():
            return
        if not self.conn.closed and self.conn.delivering(self.armed):
            self.armed = time.monotonic()
            self.timer = self.loop.call_later(self.wait, self.fire)
            return
        self.expire()

    def done(self, _: asyncio.Future[Any]) -> None:
        self.timer.cancel()


def _expire_unless_done(fut: asyncio.Future[Any], expire: Callable[[], None]) -> None:
    if not fut.done():
        expire()
