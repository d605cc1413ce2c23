"""TCP stream reassembly for decoded captures.

Contracts:
1. Segments are grouped into connections by their address pair; a SYN (without ACK) on a pair whose previous
   connection already carried data or closed starts a new connection (port reuse).
2. Each direction's bytes are placed by sequence number relative to the SYN (or, for a connection whose start
   was not captured, to its first data segment): out-of-order segments wait for the hole before them,
   retransmitted bytes are delivered once. Bytes after a hole that never fills are not delivered; the
   direction records the gap (offset and size) so the Kafka layer can flag it.
3. ``Direction.ts_at(offset)`` is the capture time of the segment that delivered the byte at ``offset``.
4. The client of a connection is the SYN sender; without a SYN, the side whose port is not in ``server_ports``
   (when given), else the first side that sent data.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field

from tools.decode.pcap import TCP_ACK, TCP_FIN, TCP_RST, TCP_SYN, Segment

Endpoint = tuple[str, int]
MOD = 1 << 32


@dataclass(slots=True)
class Direction:
    data: bytearray = field(default_factory=bytearray)
    base: int | None = None  # sequence number of byte offset 0
    pending: dict[int, tuple[float, bytes]] = field(default_factory=dict)
    marks: list[int] = field(default_factory=list)  # offsets where delivered chunks start
    times: list[float] = field(default_factory=list)
    gap: tuple[int, int] | None = None  # (offset, missing bytes) of the first hole that never filled

    def add(self, seg: Segment, syn: bool) -> None:
        if self.base is None:
            self.base = (seg.seq + 1) % MOD if syn else seg.seq
            if syn:
                return
        if not seg.payload:
            return
        rel = (seg.seq - self.base) % MOD
        if rel >= MOD // 2:  # a segment from before our base (retransmission of the handshake or earlier)
            return
        prev = self.pending.get(rel)
        if prev is None or len(prev[1]) < len(seg.payload):
            self.pending[rel] = (seg.ts, seg.payload)
        self._drain()

    def _drain(self) -> None:
        progressed = True
        while progressed and self.pending:
            progressed = False
            end = len(self.data)
            for rel in sorted(self.pending):
                if rel > end:
                    break
                ts, payload = self.pending.pop(rel)
                fresh = payload[end - rel :]
                if fresh:
                    self.marks.append(end)
                    self.times.append(ts)
                    self.data += fresh
                    end = len(self.data)
                progressed = True

    def finish(self) -> None:
        if self.pending:
            first = min(self.pending)
            self.gap = (len(self.data), first - len(self.data))

    def ts_at(self, offset: int) -> float:
        i = bisect.bisect_right(self.marks, offset) - 1
        return self.times[i] if i >= 0 else 0.0


@dataclass(slots=True)
class Connection:
    index: int
    client: Endpoint
    server: Endpoint
    first_ts: float
    to_server: Direction = field(default_factory=Direction)
    to_client: Direction = field(default_factory=Direction)
    syn_seen: bool = False
    closed: bool = False

    def direction(self, src: Endpoint) -> Direction:
        return self.to_server if src == self.client else self.to_client


def reassemble(segments: Iterable[Segment], server_ports: frozenset[int] = frozenset()) -> list[Connection]:
    """Contracts 1-4: every TCP connection in capture order, its two byte streams reassembled."""
    live: dict[frozenset[Endpoint], Connection] = {}
    done: list[Connection] = []
    for seg in segments:
        key = frozenset((seg.src, seg.dst))
        syn, ack = bool(seg.flags & TCP_SYN), bool(seg.flags & TCP_ACK)
        conn = live.get(key)
        if (
            conn is not None
            and syn
            and not ack
            and (conn.closed or conn.to_server.data or conn.to_client.data)
        ):
            done.append(live.pop(key))
            conn = None
        if conn is None:
            if syn and not ack:
                client, server = seg.src, seg.dst
            elif syn and ack:
                client, server = seg.dst, seg.src
            elif seg.dst[1] in server_ports and seg.src[1] not in server_ports:
                client, server = seg.src, seg.dst
            elif seg.src[1] in server_ports and seg.dst[1] not in server_ports:
                client, server = seg.dst, seg.src
            elif not seg.payload:
                continue  # a bare ACK of a connection whose start we missed: wait for data to orient it
            else:
                client, server = seg.src, seg.dst
            conn = Connection(len(live) + len(done), client, server, seg.ts, syn_seen=syn)
            live[key] = conn
        conn.direction(seg.src).add(seg, syn)
        if seg.flags & (TCP_FIN | TCP_RST):
            conn.closed = True
    out = done + list(live.values())
    for c in out:
        c.to_server.finish()
        c.to_client.finish()
    out.sort(key=lambda c: c.first_ts)
    for i, c in enumerate(out):
        c.index = i
    return out
