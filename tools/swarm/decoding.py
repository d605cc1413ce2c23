"""Answers decoded once for the whole swarm (kraft-swarm's own CPU, issue 24 §1: 1,000 brokers well under a core).

A controller answers the swarm's brokers with byte-identical bodies: every observer parked at the log end gets the
same Fetch answer, every RUNNING broker the same heartbeat answer; only the correlation id differs.

Contracts:
1. :meth:`SharedDecodes.decode` is a ``KafkaClient`` decoder (kwire.client contract 10): for Fetch and
   BrokerHeartbeat answers of at most ``max_bytes`` it decodes each distinct (api key, version, bytes after the
   correlation id) once and hands every broker the same object; anything else is decoded as kwire decodes it.
2. Shared answers are read-only: no swarm code changes a decoded answer.
3. At most ``limit`` distinct answers are kept, and at most ``budget`` bytes of frames (the oldest is dropped first).
4. Finding an answer costs O(1) Python work and one comparison of its bytes (C speed), not a hash of all of them:
   an answer is looked up by its size and its first and last ``EDGE`` bytes after the correlation id, and taken
   only when all its bytes equal the stored answer's (else it is decoded on its own, not kept). A committed batch
   of 5,050 records (600 KB) answered to 1,000 brokers cost the swarm ~0.5 ms of hashing per broker before.
   Answers up to ``max_bytes`` (16 MiB) are shared: every catching-up observer gets up to 8 MiB, decoded per
   broker before.
5. :meth:`SharedDecodes.batch_ends` is tools.swarm.replay.batch_ends once per shared records section (every broker
   handed the same answer object walks its batch headers once, not once each).
6. :func:`read_at` is when an answer a broker's client is decoding was read (tools.swarm.broker contract 4): when
   its bytes reached the swarm's socket, by the kernel's receive stamp (kwire.arrival contract 3), not when the
   swarm's loop read them or the client's read loop next ran. One loop runs all N brokers: in one turn it takes in
   the bytes of every ready connection, then runs ~1,000 read loops, each behind the others' decoding and the
   re-fetches their brokers send, and a garbage collection or a wave of answers holds it for tens of ms, which a
   broker in its own process would not wait for (docs/SWARM.md, sessions 14 and 15). ``KRAFT_SWARM_STAMP`` in the
   environment is the A/B switch for the instrument, the same for either controller kind: ``loop`` for the
   instant the loop read the bytes (session 14's), ``decode`` for the decode itself (session 13's).
   :func:`read_instants` adds the ``loop`` instant whatever the switch (the swarm reports both).
"""

from __future__ import annotations

import os
import time
from typing import Any

from kwire import arrival
from kwire.client import KafkaClient
from kwire.headers import decode_response, peek_correlation_id
from tools.swarm.replay import batch_ends

FETCH, BROKER_HEARTBEAT = 1, 63
SHARED_APIS = frozenset((FETCH, BROKER_HEARTBEAT))
EDGE = 64  # contract 4
ENDS_KEPT = 8  # contract 5: the records sections whose ends are kept (each kept alive: up to 8 MiB)
STAMP = os.environ.get("KRAFT_SWARM_STAMP", "kernel")  # contract 6: kernel, loop or decode


def read_at(client: Any) -> float:
    """Contract 6 (``client``: the kwire.client.KafkaClient decoding the answer, or None)."""
    at = arrival.arrived(client, STAMP == "kernel") if STAMP != "decode" and client is not None else 0.0
    return at if at > 0 else time.monotonic()


def read_instants(client: Any) -> tuple[float, float]:
    """Contract 6: :func:`read_at`, and when the swarm's loop read the answer's bytes whatever the switch."""
    at = arrival.arrived(client, kernel=False) if client is not None else 0.0
    return read_at(client), at if at > 0 else time.monotonic()


class SharedDecodes:
    def __init__(self, limit: int = 64, max_bytes: int = 16 << 20, budget: int = 128 << 20) -> None:
        self.limit, self.max_bytes, self.budget = limit, max_bytes, budget
        self.held = 0  # frame bytes of the kept answers (contract 3)
        self.entries: dict[tuple[int, int, int, bytes, bytes], tuple[bytes, Any]] = {}
        self.ends: dict[int, tuple[Any, tuple[int, int] | None]] = {}  # contract 5, by id of the records
        self.decoded = 0  # answers decoded (a shared one counts once)
        self.shared = 0  # answers handed out from an earlier decoding
        self.walks = 0  # records sections walked by batch_ends (contract 5)

    def decode(self, frame: bytes, api_key: int, version: int) -> tuple[int, Any]:
        """Contract 1."""
        if api_key not in SHARED_APIS or len(frame) > self.max_bytes:
            self.decoded += 1
            return decode_response(frame, api_key, version)
        n = len(frame)
        key = (
            api_key,
            version,
            n,
            bytes(frame[4 : 4 + EDGE]),
            bytes(frame[max(4, n - EDGE) :]),
        )  # contract 4
        hit = self.entries.get(key)
        if hit is not None and hit[0].startswith(memoryview(frame)[4:], 4):
            self.shared += 1
            return peek_correlation_id(frame), hit[1]
        _, body = decode_response(frame, api_key, version)
        self.decoded += 1
        if hit is None:
            while self.entries and (len(self.entries) >= self.limit or self.held + n > self.budget):
                self.held -= len(self.entries.pop(next(iter(self.entries)))[0])  # contract 3
            self.entries[key] = (bytes(frame), body)
            self.held += n
        return peek_correlation_id(frame), body

    def batch_ends(self, records: Any) -> tuple[int, int] | None:
        """Contract 5 (``records`` is read-only, contract 2, so its id names it while it is kept here)."""
        hit = self.ends.get(id(records))
        if hit is not None and hit[0] is records:
            return hit[1]
        self.walks += 1
        ends = batch_ends(records)
        if len(self.ends) >= ENDS_KEPT:
            del self.ends[next(iter(self.ends))]
        self.ends[id(records)] = (records, ends)
        return ends


async def send_request(client: KafkaClient, request: Any, timeout: float) -> Any:
    """``client.send`` without its task and shield on an open connection (kwire.client contract 9)."""
    fut = client.start(request, timeout=timeout)
    if fut is None:
        return await client.send(request, timeout=timeout)
    return await fut
