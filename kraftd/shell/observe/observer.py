"""What an operator sees of the core: role transitions with their reason, elections and their outcome,
high-watermark progress, truncation; and the windowed raft measures behind kraftd.shell.observe.metrics.

Contracts:
1. :meth:`NodeObserver.step` is called once per core step with the role snapshot taken before it, the event
   and the step's effects; it only reads the core (the core stays the single writer of its state).
2. Every role change is logged at INFO with the epoch and a reason derived from the event (a timer and which
   one, or the message and its sender); an election is logged when it starts and with its outcome (won with
   whose votes, or the leader it lost to) and how long it took.
3. High-watermark progress is logged at most every ``hwm_interval_s`` (and only when it moved), and at
   once on its first move after a role change; a log truncation is logged at WARNING every time.
4. :class:`Window` keeps samples of the last ``WINDOW_S`` seconds (Kafka's metrics use a 30 s window of
   samples) for rates, averages and maxima.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kraftd.core.effects import AppendBatches, Effect, TruncateLog
from kraftd.core.events import Event, RequestReceived, ResponseReceived, Shutdown, Tick
from kraftd.core.node import RaftNode
from kraftd.core.states import Leader, Unattached
from kraftd.core.types import Role
from kraftd.storage.layout import NodeStorage

log = logging.getLogger("kraftd.raft")
WINDOW_S = 30.0


class Window:
    """Contract 4: (time, value) samples of the last ``WINDOW_S`` seconds."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._started = clock()
        self._samples: deque[tuple[float, float]] = deque()

    def add(self, value: float) -> None:
        self._samples.append((self._clock(), value))
        self._trim()

    def _trim(self) -> None:
        cutoff = self._clock() - WINDOW_S
        while self._samples and self._samples[0][0] < cutoff:
            self._samples.popleft()

    def rate(self) -> float:
        """Sum of the samples per second over the window (or since start, when younger)."""
        self._trim()
        span = min(WINDOW_S, max(self._clock() - self._started, 1e-3))
        return sum(v for _, v in self._samples) / span

    def avg(self) -> float:
        self._trim()
        return sum(v for _, v in self._samples) / len(self._samples) if self._samples else 0.0

    def max(self) -> float:
        self._trim()
        return max((v for _, v in self._samples), default=0.0)


@dataclass(slots=True)
class RaftMeasures:
    commit_latency_ms: Window = field(default_factory=Window)
    election_latency_ms: Window = field(default_factory=Window)
    fetch_records: Window = field(default_factory=Window)
    append_records: Window = field(default_factory=Window)
    idle_s: Window = field(default_factory=Window)
    busy_s: Window = field(default_factory=Window)

    def poll_idle_ratio(self) -> float:
        idle, busy = self.idle_s.rate(), self.busy_s.rate()
        return idle / (idle + busy) if idle + busy > 0 else 0.0


@dataclass(frozen=True, slots=True)
class Snapshot:
    role: Role
    epoch: int
    leader_id: int


def _sender(event: Event) -> str:
    if isinstance(event, ResponseReceived):
        return f"{type(event.message).__name__} from node {event.source}"
    if isinstance(event, RequestReceived):
        return type(event.message).__name__
    return type(event).__name__


class NodeObserver:
    def __init__(self, core: RaftNode, hwm_interval_s: float = 10.0) -> None:
        self.core = core
        self.measures = RaftMeasures()
        self.hwm_interval_s = hwm_interval_s
        self._hwm_logged_at = 0.0
        self._hwm_logged = -1
        self._election_started: float | None = None

    def snapshot(self) -> Snapshot:
        c = self.core
        return Snapshot(c.role, c.epoch, c.leader_id())

    def step(self, before: Snapshot, event: Event, effects: list[Effect]) -> None:
        """Contract 1."""
        c = self.core
        for e in effects:
            if isinstance(e, TruncateLog):
                log.warning(
                    "node %d: truncating the log to offset %d (it diverged from leader %d in epoch %d)",
                    c.local.id,
                    e.offset,
                    c.leader_id(),
                    c.epoch,
                )
            elif isinstance(e, AppendBatches):
                n = sum(b.next_offset - b.base_offset for b in e.batches if not b.is_control)
                if n:
                    (
                        self.measures.append_records if c.role is Role.LEADER else self.measures.fetch_records
                    ).add(n)
        if c.role is not before.role or c.epoch != before.epoch:
            self._transition(before, event)
        self._hwm()

    def _transition(self, before: Snapshot, event: Event) -> None:
        c = self.core
        reason = self._reason(before, event)
        log.info(
            "node %d: %s in epoch %d -> %s in epoch %d: %s",
            c.local.id,
            before.role.value,
            before.epoch,
            c.role.value,
            c.epoch,
            reason,
        )
        now = time.monotonic()
        self._hwm_logged_at = 0.0  # contract 3: the first HWM move in a new role is logged at once
        if c.role in (Role.PROSPECTIVE, Role.CANDIDATE):
            if self._election_started is None:
                self._election_started = now
            what = "pre-vote (KIP-996)" if c.role is Role.PROSPECTIVE else "election"
            log.info(
                "node %d: starting %s for epoch %d", c.local.id, what, c.epoch + (c.role is Role.PROSPECTIVE)
            )
            return
        if c.role is Role.LEADER:
            d = c.data
            votes = sorted(d.granting) if isinstance(d, Leader) else []
            took_ms = (now - (self._election_started or now)) * 1000
            log.info(
                "node %d: won the election for epoch %d with votes from %s in %.0f ms",
                c.local.id,
                c.epoch,
                votes,
                took_ms,
            )
        elif c.leader_id() >= 0 and self._election_started is not None:
            took_ms = (now - self._election_started) * 1000
            log.info(
                "node %d: election ended: node %d leads epoch %d (after %.0f ms)",
                c.local.id,
                c.leader_id(),
                c.epoch,
                took_ms,
            )
        else:
            return  # still no leader (e.g. pre-vote rejected): the election goes on
        self.measures.election_latency_ms.add(took_ms)
        self._election_started = None

    def _reason(self, before: Snapshot, event: Event) -> str:
        c = self.core
        cfg = c.config
        if isinstance(event, Shutdown):
            return "shutting down"
        if c.role is Role.LEADER:
            if len(c.voters.voters) == 1:
                return "the only voter elects itself"
            return f"a majority of voters granted the vote ({_sender(event)})"
        # Entering Prospective is always a timer's doing, whatever event's step polled it (an observer's Fetch,
        # a heartbeat): the event is not the reason.
        timer = (before.role, c.role) in _TIMER_ONLY
        if isinstance(event, Tick) or timer:
            if before.role is Role.LEADER:
                return f"check-quorum: a majority of voters did not fetch within {cfg.check_quorum_timeout_ms} ms"
            if before.role is Role.FOLLOWER:
                return f"fetch timeout: no fetch from leader {before.leader_id} succeeded within {cfg.fetch_timeout_ms} ms"
            if before.role is Role.CANDIDATE:
                return "election timed out without a majority"
            return "election timeout expired"
        if c.role is Role.CANDIDATE and before.role is Role.PROSPECTIVE:
            return f"a majority granted the pre-vote ({_sender(event)})"
        if c.role is Role.FOLLOWER:
            return f"node {c.leader_id()} leads epoch {c.epoch} ({_sender(event)})"
        if c.role is Role.UNATTACHED:
            d = c.data
            voted = isinstance(d, Unattached) and c.election.voted_key is not None
            if c.epoch > before.epoch:
                return f"saw epoch {c.epoch} in {_sender(event)}" + (" and voted" if voted else "")
            return f"{_sender(event)}" + (" (voted)" if voted else "")
        return _sender(event)

    def log_stopped(self) -> None:
        c = self.core
        log.info(
            "node %d: shut down: %s in epoch %d, high watermark %d, log end offset %d",
            c.local.id,
            c.role.value,
            c.epoch,
            c.high_watermark,
            c.log.end_offset,
        )

    def _hwm(self) -> None:
        c = self.core
        hwm = c.high_watermark
        now = time.monotonic()
        if hwm != self._hwm_logged and now - self._hwm_logged_at >= self.hwm_interval_s:
            self._hwm_logged_at = now
            self._hwm_logged = hwm
            log.info(
                "node %d: high watermark %d, log end offset %d, %s in epoch %d (leader %d)",
                c.local.id,
                hwm,
                c.log.end_offset,
                c.role.value,
                c.epoch,
                c.leader_id(),
            )


_TIMER_ONLY = {(r, Role.PROSPECTIVE) for r in (Role.FOLLOWER, Role.UNATTACHED, Role.CANDIDATE)}


def log_loaded(node_id: int, where: Path, storage: NodeStorage) -> None:
    """Recovery: what the node found on disk before it starts."""
    log.info(
        "node %d: loaded the metadata log in %s: offsets [%d, %d), election state %s",
        node_id,
        where,
        storage.log.start_offset,
        storage.log.end_offset,
        storage.election_state,
    )
