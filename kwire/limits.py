"""Listener limits (Kafka's keys) and a rate-limited warning for hostile or broken peers.

Contracts:
1. :class:`ListenerLimits` carries Kafka's ``socket.request.max.bytes`` (largest frame accepted; a larger size
   prefix closes the connection before any buffer of that size exists), ``connections.max.idle.ms`` (a connection
   with no bytes read or written and no request in progress for that long is closed), ``max.connections``
   (connections held at once) and a per-connection bound on requests being handled at once (beyond it the
   server stops reading that connection: back-pressure, not an error).
2. At ``max.connections`` a new connection is admitted by closing one held connection: the oldest of those that
   never completed a request, else the one whose last completed request is the oldest. Kafka protects its
   inter-broker listener the same way (least recently used first): peers that keep talking keep their
   connections, silent or slow ones go first.
3. :class:`RateLimitedWarning` emits at most ``burst`` lines per ``interval`` seconds on its logger; the lines it
   swallows are counted and reported in one line when the next line is let through, so a flood of bad
   connections costs a bounded number of log lines and still leaves a trace of its size.
4. :class:`IdleWatch` enforces ``connections.max.idle.ms`` with one timer per connection, re-armed only when it
   fires (issue 24: a timer per read was about 6% of a leader's CPU at 300 observers): when it fires, a
   connection quiet for the whole limit is closed, else the timer waits the rest of the limit.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

DEFAULT_MAX_REQUEST_BYTES = 104857600  # socket.request.max.bytes
DEFAULT_IDLE_MS = 600000  # connections.max.idle.ms
DEFAULT_MAX_CONNECTIONS = 2**31 - 1  # max.connections (Kafka: effectively unlimited)
DEFAULT_MAX_IN_FLIGHT = 16


@dataclass(frozen=True, slots=True)
class ListenerLimits:
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    idle_ms: int = DEFAULT_IDLE_MS
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    handshake_timeout_ms: int = 10000  # TLS handshake, then SASL authentication, must finish within this


class RateLimitedWarning:
    """Contract 3."""

    def __init__(
        self,
        logger: logging.Logger,
        *,
        burst: int = 10,
        interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = logger
        self._burst = burst
        self._interval = interval
        self._clock = clock
        self._window_start = -float("inf")
        self._emitted = 0
        self.suppressed = 0  # swallowed since the last line let through
        self.total_suppressed = 0

    def __call__(self, msg: str, *args: object) -> bool:
        """Log ``msg % args`` at WARNING unless the budget is spent; True when it was logged."""
        now = self._clock()
        if now - self._window_start >= self._interval:
            self._window_start = now
            self._emitted = 0
        if self._emitted >= self._burst:
            self.suppressed += 1
            self.total_suppressed += 1
            return False
        self._emitted += 1
        if self.suppressed:
            self._log.warning(
                "%d similar warnings suppressed (at most %d per %.0f s)",
                self.suppressed,
                self._burst,
                self._interval,
            )
            self.suppressed = 0
        self._log.warning(msg, *args)
        return True


class IdleWatch:
    """Contract 4: ``quiet_since()`` is when the connection last read, wrote or finished a request (None while a
    request is in progress); ``close()`` runs once, when it has been quiet for ``idle_s``."""

    __slots__ = ("_idle", "_quiet_since", "_close", "_timer")

    def __init__(
        self, idle_s: float, quiet_since: Callable[[], float | None], close: Callable[[], None]
    ) -> None:
        self._idle, self._quiet_since, self._close = idle_s, quiet_since, close
        self._timer: asyncio.TimerHandle | None = asyncio.get_running_loop().call_later(idle_s, self._check)

    def _check(self) -> None:
        since = self._quiet_since()
        rest = self._idle if since is None else since + self._idle - time.monotonic()
        if rest <= 0:
            self._timer = None
            self._close()
            return
        self._timer = asyncio.get_running_loop().call_later(rest, self._check)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
