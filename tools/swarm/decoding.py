"""Answers decoded once for the whole swarm (kraft-swarm's own CPU, issue 24 §1: 1,000 brokers well under a core).

A controller answers the swarm's brokers with byte-identical bodies: every observer parked at the log end gets the
same Fetch answer, every RUNNING broker the same heartbeat answer; only the correlation id differs.

Contracts:
1. :meth:`SharedDecodes.decode` is a ``KafkaClient`` decoder (kwire.client contract 10): for Fetch and
   BrokerHeartbeat answers of at most ``max_bytes`` it decodes each distinct answer once and hands every broker the
   same object; anything else is decoded as kwire decodes it.
2. Shared answers are read-only: no swarm code changes a decoded answer.
3. At most ``limit`` distinct answers are kept, and at most ``budget`` bytes of frames (the oldest is dropped first).
4. An answer of at most ``FINGERPRINT_OVER`` bytes is known by its bytes after the correlation id. A larger Fetch
   answer (records: one commit's batches reach every observer at the log end, 0.6 MB at 1M partitions, and every
   catching-up observer gets up to 8 MiB) is known by its length, its first and its last ``EDGE`` bytes, not by
   hashing all of it (129 us per 0.6 MB answer and broker, more than decoding it, 31 us): the head holds the high
   watermark, the log start and the first batch's header (base offset, epoch, CRC), the tail the answering
   leader and its epoch (tagged fields). Answers equal there hold the same records: a leader's log is append-only
   within its epoch (Raft's log matching), so the batches from one offset are a prefix of one sequence, and their
   total length (the frame's length, the same head) fixes which prefix.
"""

from __future__ import annotations

from typing import Any

from kwire.headers import decode_response, peek_correlation_id

FETCH, BROKER_HEARTBEAT = 1, 63
SHARED_APIS = frozenset((FETCH, BROKER_HEARTBEAT))
FINGERPRINT_OVER = 4096  # contract 4
EDGE = 512


class SharedDecodes:
    def __init__(self, limit: int = 64, max_bytes: int = 16 << 20, budget: int = 128 << 20) -> None:
        self.limit, self.max_bytes, self.budget = limit, max_bytes, budget
        self.entries: dict[tuple[int, int, int, bytes, bytes], tuple[Any, int]] = {}
        self.held = 0  # frame bytes of the kept answers (contract 3)
        self.decoded = 0  # answers decoded (a shared one counts once)
        self.shared = 0  # answers handed out from an earlier decoding

    def decode(self, frame: bytes, api_key: int, version: int) -> tuple[int, Any]:
        """Contracts 1 and 4."""
        size = len(frame)
        if api_key not in SHARED_APIS or size > self.max_bytes:
            self.decoded += 1
            return decode_response(frame, api_key, version)
        if size <= FINGERPRINT_OVER or api_key != FETCH:
            key = (api_key, version, size, bytes(frame[4:]), b"")
        else:
            key = (api_key, version, size, frame[4 : 4 + EDGE], frame[-EDGE:])
        held = self.entries.get(key)
        if held is None:
            _, body = decode_response(frame, api_key, version)
            self.decoded += 1
            while self.entries and (len(self.entries) >= self.limit or self.held + size > self.budget):
                self.held -= self.entries.pop(next(iter(self.entries)))[1]  # contract 3
            self.entries[key] = (body, size)
            self.held += size
            return peek_correlation_id(frame), body
        self.shared += 1
        return peek_correlation_id(frame), held[0]
