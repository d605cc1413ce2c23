"""Answers decoded once for the whole swarm (kraft-swarm's own CPU, issue 24 §1: 1,000 brokers well under a core).

A controller answers the swarm's brokers with byte-identical bodies: every observer parked at the log end gets the
same Fetch answer, every RUNNING broker the same heartbeat answer; only the correlation id differs.

Contracts:
1. :meth:`SharedDecodes.decode` is a ``KafkaClient`` decoder (kwire.client contract 10): for Fetch and
   BrokerHeartbeat answers of at most ``max_bytes`` it decodes each distinct (api key, version, bytes after the
   correlation id) once and hands every broker the same object; anything else is decoded as kwire decodes it.
2. Shared answers are read-only: no swarm code changes a decoded answer.
3. At most ``limit`` distinct answers are kept (the oldest is dropped first).
"""

from __future__ import annotations

from typing import Any

from kwire.headers import decode_response, peek_correlation_id

FETCH, BROKER_HEARTBEAT = 1, 63
SHARED_APIS = frozenset((FETCH, BROKER_HEARTBEAT))


class SharedDecodes:
    def __init__(self, limit: int = 64, max_bytes: int = 1 << 20) -> None:
        self.limit, self.max_bytes = limit, max_bytes
        self.entries: dict[tuple[int, int, bytes], Any] = {}
        self.decoded = 0  # answers decoded (a shared one counts once)
        self.shared = 0  # answers handed out from an earlier decoding

    def decode(self, frame: bytes, api_key: int, version: int) -> tuple[int, Any]:
        """Contract 1."""
        if api_key not in SHARED_APIS or len(frame) > self.max_bytes:
            self.decoded += 1
            return decode_response(frame, api_key, version)
        key = (api_key, version, bytes(frame[4:]))
        body = self.entries.get(key)
        if body is None:
            _, body = decode_response(frame, api_key, version)
            self.decoded += 1
            if len(self.entries) >= self.limit:
                del self.entries[next(iter(self.entries))]  # contract 3
            self.entries[key] = body
        else:
            self.shared += 1
        return peek_correlation_id(frame), body
