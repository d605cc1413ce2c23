"""A loopback TCP proxy for fault injection and capture: one listening port per directed link.

Contracts:
1. A :class:`Link` listens on 127.0.0.1 (a free port) and forwards every accepted connection to ``target``;
   bytes flow unchanged while both directions are ``PASS``.
2. ``link.set(up=..., down=...)`` changes each direction at once for existing and new connections: ``PASS``
   forwards, ``DROP`` stalls the direction (bytes are held, never discarded, so a stream is never spliced; the
   sender sees a live connection that stops answering: a one-way cut); a stalled direction still reads, up to
   ``HOLD_BYTES`` held (then TCP back-pressure), so a sender that gives up and closes is seen at once and the
   connection pair is closed, its held bytes dropped (a muted node's peers reconnecting every request timeout
   left one idle pair per attempt open in this process and in the target node until the heal),
   ``CUT`` on either direction closes every connection and refuses new ones (a partition as TCP shows it:
   connection reset / refused). ``up`` is client -> target, ``down`` is target -> client.
3. ``record`` (optional) is called with (direction, frame payload) for every complete Kafka frame that was
   forwarded, decoded with kwire.framing; a stream that stops being framed is no longer recorded.
4. :class:`Proxy` runs Links on its own event loop thread so a synchronous harness can drive it; every method is
   thread-safe and returns once the change is in effect.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Future
from enum import Enum
from typing import Any

from kwire.errors import KraftError
from kwire.framing import FrameDecoder


class Mode(Enum):
    PASS = "pass"
    DROP = "drop"
    CUT = "cut"


Recorder = Callable[[str, bytes], None]
HOLD_BYTES = 4 << 20  # contract 2: bytes a stalled direction holds before it stops reading
POLL_S = 0.02


class Link:
    def __init__(self, target: tuple[str, int], record: Recorder | None = None) -> None:
        self.target = target
        self.up = Mode.PASS
        self.down = Mode.PASS
        self.record = record
        self._server: asyncio.Server | None = None
        self._conns: set[asyncio.StreamWriter] = set()
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        self._drop_all()

    def set(self, up: Mode, down: Mode) -> None:
        self.up, self.down = up, down
        if Mode.CUT in (up, down):
            self._drop_all()

    def _drop_all(self) -> None:
        for w in list(self._conns):
            with contextlib.suppress(Exception):
                w.transport.abort()
        self._conns.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if Mode.CUT in (self.up, self.down):
            writer.transport.abort()
            return
        try:
            t_reader, t_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._conns.update((writer, t_writer))
        pumps = [
            asyncio.create_task(self._pump(reader, t_writer, "up")),
            asyncio.create_task(self._pump(t_reader, writer, "down")),
        ]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for p in pumps:
                p.cancel()
            for w in (writer, t_writer):
                self._conns.discard(w)
                with contextlib.suppress(Exception):
                    w.transport.abort()

    def _mode(self, direction: str) -> Mode:
        return self.up if direction == "up" else self.down

    async def _pump(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, direction: str) -> None:
        frames: FrameDecoder | None = FrameDecoder() if self.record is not None else None
        held: list[bytes] = []
        held_bytes = 0
        while True:
            mode = self._mode(direction)
            if mode is Mode.CUT:
                return
            if mode is Mode.PASS and held:  # the heal: held bytes flow on, in order
                data, held, held_bytes = b"".join(held), [], 0
            elif mode is Mode.DROP and held_bytes >= HOLD_BYTES:
                await asyncio.sleep(POLL_S)
                continue
            else:
                try:
                    read = src.read(65536)
                    data = await (asyncio.wait_for(read, POLL_S) if mode is Mode.DROP else read)
                except TimeoutError:
                    continue
                if not data:  # the sender closed: contract 2 closes the pair (held bytes go with it)
                    return
                if held or self._mode(direction) is not Mode.PASS:
                    held.append(data)
                    held_bytes += len(data)
                    continue
            dst.write(data)
            await dst.drain()
            if frames is not None and self.record is not None:
                try:
                    for frame in frames.feed(data):
                        self.record(direction, frame)
                except KraftError:
                    frames = None


class Proxy:
    """Links on a private event loop thread (contract 4)."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="chaos-proxy", daemon=True)
        self._thread.start()
        self.links: dict[Any, Link] = {}

    def _call(self, coro: Any) -> Any:
        fut: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return fut.result(10)

    def add(self, key: Any, target: tuple[str, int], record: Recorder | None = None) -> int:
        link = Link(target, record)
        self._call(link.start())
        self.links[key] = link
        return link.port

    def set(self, key: Any, up: Mode = Mode.PASS, down: Mode = Mode.PASS) -> None:
        link = self.links[key]

        async def change() -> None:
            link.set(up, down)

        self._call(change())

    def heal_all(self) -> None:
        for key in self.links:
            self.set(key)

    def close(self) -> None:
        for link in self.links.values():
            self._call(link.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
