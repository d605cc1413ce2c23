"""Large response bodies: shared bodies written as they are (contract 11d), every write in pieces as the socket
drains (contract 11e). The numbering is kwire.server's (issue 24).

Contract 11d: a fast reply whose shared body (kwire.answers contract 11a) is ``LARGE`` bytes or more is the
:data:`Frame` (size and response header, the body itself): the one encoded body is handed to each connection's
socket write as it is, in a write of its own after that frame's size and header (joined with the small frames
before it, in order), never joined into a frame per reply. A copy of the body per connection (a 600 KB committed
batch to 100 observers; catch-up answers of up to 8 MiB) was a large part of the leader's fan-out step at 1M
partitions. Contract 2a (one write for the responses ready together) then holds per piece.

Contract 11e: every write of a connection goes through its :class:`Outbox`, in order. The transport is handed at
most ``PIECE`` bytes at a time, and only while its buffer is empty; what waits is kept as views of the caller's
bytes and handed over as the socket drains. asyncio's selector transport (CPython 3.11) copies whatever the socket
does not take at once into its own buffer, so a shared body (11d) was copied once per slow connection after all:
up to 8 MiB per observer catching up, 0.9-2.1 GB per controller at 1,000 observers (docs/SWARM.md, session 14).
Now a connection's transport holds at most one piece (plus small frames) and the body stays the only copy.

Contract 11f: an encoded body of ``LARGE`` bytes or more is also kept across turns of the loop (contract 11a keeps
it for one) by (object, api key, version), for at most ``KEPT_S`` seconds and within ``KEPT_BYTES`` in all, the
newest kept first: observers catching up at the same offset are handed one answer object (kraftd.core.replication
invariant 2e) over several callbacks (kraftd.shell.apis.observer_fetches), and each encoding would be one more copy
of up to 8 MiB. A caller never changes a large response object after handing it to ``reply``.

Contract 11g: the bytes waiting in a server's outboxes (:class:`Waiting`, ``KafkaServer.waiting``) are counted per
underlying buffer, each buffer once however many connections wait on views of it (a commit's one answer to 1,000
observers is one buffer), from the write that queues a view of it until its last view is handed to a transport or
its connection closes. It is the memory the server's writers hold beyond at most one ``PIECE`` per transport, and
what a caller bounds (kraftd.shell.apis.observer_fetches contract 7: observers' catch-up answers wait for it).

Contract 11h: a Fetch or FetchSnapshot response (flexible versions) whose one partition carries ``LARGE`` bytes of
records or more is encoded around them (:func:`spliced`): the encoding before the records (with their length), the
records object itself, the encoding after (the partition's tagged fields and what follows), byte for byte the whole
encoding, written as three pieces (11d), so the records are never copied into a body. Kafka sends a fetch answer's
records from its log (FileRecords) the same way. A catch-up answer of 8 MiB was two heap copies (the records
joined, then the body encoded); it is one (the records joined by kraftd.core.messages.fetch_response; a snapshot
chunk sliced by kraftd.core.snapshotting).

Contract 11k: the pieces a server's outboxes hand to their transports (contract 11e) are paced server-wide: at most
``ROUND`` bytes of them (plus the piece that crosses it) between two rounds. An outbox that finds the round's
bytes spent, or other outboxes already waiting for a round, waits in the server's FIFO of paced outboxes; a round is
a callback of the loop (``call_soon``, behind what the loop has ready) that renews the bytes and feeds the outboxes
in that order, the one it stops at first in the next round. Each callback of the transport's (its socket writable)
or of a caller's (a reply) so hands at most about one round of pieces, and a turn of the loop at most about two
rounds, whatever the number of connections: before, each transport's write callback handed pieces for as long as
its socket took them at once (several MiB each on loopback), and at 1,000 observers catching up at the same offset
(one shared 8 MiB answer, contract 11g counts it once) one turn of the loop ran 176 such callbacks of 6-14 ms of
CPU each: a stall of 1.8 s (session 18, 1,000 brokers x 200k partitions). Small frames (at most ``PIECE``, nothing
waiting before them: a heartbeat's answer) are handed at once, never paced, and so is everything written to a
connection whose id is in ``Waiting.urgent`` (the caller's: a Raft voter's, so the commit path never waits behind
observers' catch-up; kraftd.shell.apis.fast contract 1b).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque
from typing import Any

from kwire.varint import encode_unsigned_varint

# a whole frame, or (size and header, a large shared body), or (size, header and the body's head, records, its tail)
Frame = bytes | tuple[bytes, bytes] | tuple[bytes, bytes, bytes]
# contract 11h: (the encoding before the records, the records, after them)
Spliced = tuple[bytes, bytes, bytes]
LARGE = 64 * 1024
PIECE = 256 * 1024  # contract 11e: the most one connection's transport is handed at a time
ROUND = 8 * 1024 * 1024  # contract 11k: handed over between two rounds, ~10 ms of socket writes
KEPT_BYTES, KEPT_S = 32 * 1024 * 1024, 1.0  # contract 11f


def pieces(frames: list[Frame]) -> list[bytes]:
    """The socket writes of ``frames``, in order: small frames joined with the next large body's head, each large
    body alone."""
    out: list[bytes] = []
    small: list[bytes] = []
    for f in frames:
        small.append(f[0] if isinstance(f, tuple) else f)
        if isinstance(f, tuple):
            out += [b"".join(small), f[1]]
            small = [f[2]] if len(f) == 3 else []
    return [*out, b"".join(small)] if small else out


def spliced(body: Any, version: int) -> Spliced | None:
    """Contract 11h: ``body``'s encoding at ``version`` around its records, or None (encode it whole)."""
    topics = getattr(body, "responses", None) or getattr(body, "topics", None)
    if not topics or len(topics) != 1 or len(topics[0].partitions) != 1:
        return None
    part = topics[0].partitions[0]
    name = "records" if hasattr(part, "records") else "unaligned_records"  # Fetch, FetchSnapshot
    records = getattr(part, name, None)
    if type(records) is not bytes or len(records) < LARGE:
        return None
    try:  # the encodings with no records and with one byte differ only there: that is where records go
        setattr(part, name, b"")
        empty = body.encode(version)
        setattr(part, name, b"\x00")
        one = body.encode(version)
    finally:
        setattr(part, name, records)
    i = next((i for i, (a, b) in enumerate(zip(empty, one, strict=False)) if a != b), len(empty))
    if len(one) != len(empty) + 1 or empty[i : i + 1] != b"\x01" or one[i : i + 2] != b"\x02\x00":
        return None  # not a compact (flexible) records field
    if one[i + 2 :] != empty[i + 1 :]:
        return None
    return (empty[:i] + encode_unsigned_varint(len(records) + 1), records, empty[i + 1 :])


class Waiting:
    """Contract 11g: buffers that outboxes' views wait on, by id, with the number of views waiting on each; and
    contract 11k's pacing of the server's outboxes."""

    __slots__ = ("held", "bytes", "left", "paced", "scheduled", "rounds", "round_bytes", "urgent")

    def __init__(self, round_bytes: int = ROUND) -> None:
        self.held: dict[int, tuple[Any, int]] = {}  # id(buffer) -> (buffer, views waiting)
        self.bytes = 0  # the distinct buffers' sizes
        self.round_bytes = round_bytes  # contract 11k
        self.left = round_bytes  # the bytes this round may still hand over
        self.paced: deque[Outbox] = deque()  # outboxes waiting for a round, in order
        self.scheduled = False
        self.rounds = 0  # rounds run (counted work)
        self.urgent: set[int] = set()  # contract 11k: connection ids never paced

    def defer(self, box: Outbox) -> None:
        """Contract 11k: ``box`` waits for a round (once, at the back)."""
        if not box.paced:
            box.paced = True
            self.paced.append(box)
        if not self.scheduled:
            self.scheduled = True
            asyncio.get_running_loop().call_soon(self._round)

    def _round(self) -> None:
        """Contract 11k: renews the bytes and feeds the paced outboxes in order while they last."""
        self.rounds += 1
        self.left, paced = self.round_bytes, self.paced
        while paced and self.left > 0:
            box = paced[0]
            box._feed(paced=True)
            if box.paced and self.left <= 0 and box.waiting and not box.transport.is_closing():
                break  # spent within this outbox: it goes first next round
            if paced and paced[0] is box:
                paced.popleft()
                box.paced = False
                if box.fed is not None and not box.fed.done():
                    box.fed.set_result(None)  # its drain looks again
        if paced:
            asyncio.get_running_loop().call_soon(self._round)
        else:
            self.scheduled = False

    def add(self, view: memoryview) -> None:
        obj = view.obj
        entry = self.held.get(id(obj))
        if entry is None:
            self.bytes += memoryview(obj).nbytes
            self.held[id(obj)] = (obj, 1)
        else:
            self.held[id(obj)] = (obj, entry[1] + 1)

    def done(self, view: memoryview) -> None:
        obj = view.obj
        entry = self.held.get(id(obj))
        if entry is None:
            return
        if entry[1] > 1:
            self.held[id(obj)] = (obj, entry[1] - 1)
        else:
            del self.held[id(obj)]
            self.bytes -= memoryview(obj).nbytes


class Outbox:
    """Contract 11e: one connection's writes, in order, at most ``PIECE`` bytes in its transport's hands."""

    __slots__ = ("writer", "transport", "waiting", "most_buffered", "counted", "paced", "cid", "fed")

    def __init__(self, writer: asyncio.StreamWriter, counted: Waiting | None = None, cid: int = -1) -> None:
        """``cid``: the connection's id (contract 11k's ``urgent``)."""
        self.writer, self.transport, self.cid = writer, writer.transport, cid
        self.counted = counted if counted is not None else Waiting()  # contract 11g
        # the protocol is paused while anything is buffered and resumed from inside the transport's own write
        # callback once it is all sent: the next piece is handed over there, in the same turn of the loop
        self.transport.set_write_buffer_limits(high=0)
        protocol = self.transport.get_protocol()
        resume = protocol.resume_writing

        def resumed() -> None:
            resume()
            self._feed()

        protocol.resume_writing = resumed  # type: ignore[method-assign]
        self.waiting: deque[memoryview] = deque()  # views of the callers' bytes not yet handed over, in order
        self.most_buffered = 0  # the transport's largest buffer seen right after a write (counted, for tests)
        self.paced = False  # in the server's FIFO of paced outboxes (contract 11k)
        self.fed: asyncio.Future[None] | None = None  # set by the round that takes it out of that FIFO

    def write(self, data: bytes) -> None:
        if self.transport.is_closing():  # nothing more is sent (_feed); never counted (contract 11g)
            return
        if not self.waiting and len(data) <= PIECE:
            self._hand(data)
            return
        view = memoryview(data)
        self.waiting.append(view)
        self.counted.add(view)
        if not self.transport.get_write_buffer_size():
            self._feed()

    def _hand(self, data: bytes | memoryview) -> None:
        self.writer.write(data)
        self.most_buffered = max(self.most_buffered, self.transport.get_write_buffer_size())

    def _feed(self, paced: bool = False) -> None:
        """Hand pieces over while the transport's buffer is empty, within the round's bytes (contract 11k;
        ``paced``: called by the round, else it waits behind the outboxes already paced)."""
        transport, waiting, counted = self.transport, self.waiting, self.counted
        while waiting and not transport.get_write_buffer_size():
            if transport.is_closing():
                self.close()
                return
            if (counted.left <= 0 or (not paced and counted.paced)) and self.cid not in counted.urgent:
                counted.defer(self)
                return
            view = waiting[0]
            if len(view) > PIECE:
                waiting[0], view = view[PIECE:], view[:PIECE]
            else:
                waiting.popleft()
                counted.done(view)
            counted.left -= len(view)
            self._hand(view)

    async def drain(self) -> None:
        """Until everything written so far is in the socket (back-pressure for kwire.server's writer)."""
        transport = self.transport
        while True:
            if transport.is_closing():
                self.close()
            self._feed()
            if not transport.get_write_buffer_size():
                if not self.waiting:
                    return
                if self.paced:  # contract 11k: wait for the round that feeds it, not a turn at a time
                    self.fed = asyncio.get_running_loop().create_future()
                    await self.fed
                else:
                    await asyncio.sleep(0)
                continue
            await self.writer.drain()  # returns once the transport's buffer is empty (high water 0)

    def close(self) -> None:
        while self.waiting:
            self.counted.done(self.waiting.popleft())


class KeptBodies:
    """Contract 11f: large encoded bodies by (id(object), api key, version); holding the object keeps its id."""

    __slots__ = ("entries", "size")

    def __init__(self) -> None:
        self.entries: OrderedDict[tuple[int, int, int], tuple[Any, bytes, float]] = OrderedDict()
        self.size = 0

    def get(self, key: tuple[int, int, int]) -> tuple[Any, bytes, float] | None:
        """The kept (object, encoding, when) under ``key``: the caller checks the object is its own."""
        return self.entries.get(key)

    def put(self, key: tuple[int, int, int], body: Any, encoded: bytes) -> None:
        """Keeps ``encoded`` if it is ``LARGE`` or more; drops the oldest past ``KEPT_S`` or ``KEPT_BYTES``."""
        if len(encoded) < LARGE:
            return
        now, entries = time.monotonic(), self.entries
        old = entries.pop(key, None)
        self.size += len(encoded) - (len(old[1]) if old is not None else 0)
        entries[key] = (body, encoded, now)
        while entries:
            _, (_, oldest, at) = next(iter(entries.items()))
            if self.size <= KEPT_BYTES and now - at <= KEPT_S:
                break
            entries.popitem(last=False)
            self.size -= len(oldest)


class Written:
    """Contract 11: responses queued and written on one connection; ``chain`` holds its fast slots not yet
    written, in request order (contract 11b), each with its frame once replied; ``out`` writes (contract 11e);
    ``loop``: the connection's, looked up once (kwire.server contract 11i)."""

    __slots__ = ("queued", "written", "chain", "out", "loop")

    def __init__(self, out: Outbox, loop: asyncio.AbstractEventLoop) -> None:
        self.out, self.loop, self.queued, self.written = out, loop, 0, 0
        self.chain: deque[list[Any]] = deque()  # [slot, frame or None]

    def all_fast(self) -> bool:
        """Contract 11b: every response not yet written is a fast slot's (the writer task holds none)."""
        return self.queued == self.written + len(self.chain)
