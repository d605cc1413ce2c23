"""Inputs of the core. Every event is immutable and carries the caller's clock ``now_ms``.

Invariants:
1. ``now_ms`` never decreases across the events fed to one node.
2. A ``ResponseReceived`` names the ``request_id`` of a ``SendRequest`` effect; a failed or
   version-unsupported send is reported as a response whose top-level ``error_code`` says why
   (``BROKER_NOT_AVAILABLE``, ``UNSUPPORTED_VERSION``), the way Kafka's network channel synthesizes them.
   Responses to unknown or expired request ids are ignored.
3. ``LogFlushed(offset)`` means every log byte below ``offset`` is durable; ``offset`` never exceeds what
   the core asked to append.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Tick:
    now_ms: int


@dataclass(frozen=True, slots=True)
class RequestReceived:
    """A request from a peer; ``token`` is the shell's handle to answer it with ``SendResponse``."""

    now_ms: int
    token: int
    message: Any


@dataclass(frozen=True, slots=True)
class ResponseReceived:
    now_ms: int
    source: int
    request_id: int
    message: Any


@dataclass(frozen=True, slots=True)
class AppendRecords:
    """Records (already serialized values) to append as leader; see ``RaftClient.append``."""

    now_ms: int
    records: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class LogFlushed:
    now_ms: int
    offset: int


@dataclass(frozen=True, slots=True)
class Shutdown:
    """Graceful shutdown: a leader resigns and tells the voters (EndQuorumEpoch)."""

    now_ms: int


@dataclass(frozen=True, slots=True)
class ReadsDue:
    """Read barriers were started (``RaftClient.read_barrier``): the core runs its read path only, not a full poll
    (kraftd.core.reads invariant 7)."""

    now_ms: int


Event = Tick | ReadsDue | RequestReceived | ResponseReceived | AppendRecords | LogFlushed | Shutdown
