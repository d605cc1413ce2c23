"""Outputs of the core. The shell (and the simulator) executes the effects of one ``step`` as follows.

Execution contract ("persist, then send, then apply"):
1. Effects are executed in list order. The core orders them: ``PersistElectionState`` first, then log
   effects (``TruncateLog``, ``AppendBatches``, ``FlushLog``, ``WriteSnapshot``, ``InstallSnapshot``,
   ``DeleteLogBefore``), then messages (``SendRequest``,
   ``SendResponse``), then notifications (``ApplyCommitted``, ``LeaderChanged``), ``SetDeadline`` last.
2. ``PersistElectionState`` must be durable (fsync) before any later effect of the same step is executed:
   a vote or a new epoch is never visible to a peer before it is on disk (Kafka's durableTransitionTo).
3. ``TruncateLog``/``AppendBatches`` change the log immediately (page cache). ``FlushLog`` may complete
   later; its completion is reported with ``LogFlushed``. Data not yet flushed may be lost on a crash.
4. ``SetDeadline`` is the latest time at which the shell must deliver a ``Tick``; earlier is harmless.
5. ``ApplyCommitted`` batches are contiguous and each is reported once per core instance; a ``SnapshotLoaded``
   comes before the first ``ApplyCommitted`` that follows its end offset.
6. ``WriteSnapshot``/``InstallSnapshot`` are durable before any later effect of the same step (a log start
   that moves past records is always covered by a durable snapshot).
7. A step carries at most one ``PersistElectionState``: the last state it reached. The ones before it were
   never visible to a peer (they would have run before every message of the step, invariant 1), so writing
   only the last is a crash at one of the two ends of that sequence. A voter that adopts a candidate's epoch
   and grants its vote writes once, not twice (Kafka writes both; each write is two fsyncs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kraftd.core.log import LogBatch
from kraftd.core.snapshots import Snapshot
from kraftd.core.types import ElectionState, LeaderAndEpoch


@dataclass(frozen=True, slots=True)
class PersistElectionState:
    state: ElectionState


@dataclass(frozen=True, slots=True)
class TruncateLog:
    """Remove every batch at or above ``offset``."""

    offset: int


@dataclass(frozen=True, slots=True)
class AppendBatches:
    batches: tuple[LogBatch, ...]


@dataclass(frozen=True, slots=True)
class FlushLog:
    """Make the log durable up to ``offset`` (exclusive); answer with ``LogFlushed``."""

    offset: int


@dataclass(frozen=True, slots=True)
class WriteSnapshot:
    """Make ``snapshot`` durable as ``<end offset>-<epoch>.checkpoint`` (.part, fsync, rename) before any later
    effect of the step; the log is unchanged."""

    snapshot: Snapshot


@dataclass(frozen=True, slots=True)
class InstallSnapshot:
    """A fetched snapshot replaces the whole log: write it as WriteSnapshot does, then empty the log so it
    starts at the snapshot's end offset."""

    snapshot: Snapshot


@dataclass(frozen=True, slots=True)
class DeleteLogBefore:
    """The log now starts at ``offset`` (a snapshot covers everything below): delete segments wholly below it
    and snapshots older than the latest one."""

    offset: int


@dataclass(frozen=True, slots=True)
class SendRequest:
    destination: int
    request_id: int
    message: Any


@dataclass(frozen=True, slots=True)
class SendResponse:
    token: int
    message: Any


@dataclass(frozen=True, slots=True)
class ApplyCommitted:
    batches: tuple[LogBatch, ...]
    high_watermark: int


@dataclass(frozen=True, slots=True)
class SnapshotLoaded:
    """Listeners replace their state with ``snapshot``; ApplyCommitted continues after its end offset."""

    snapshot: Snapshot


@dataclass(frozen=True, slots=True)
class LeaderChanged:
    leader: LeaderAndEpoch


@dataclass(frozen=True, slots=True)
class AppendFailed:
    """Records accepted by ``append`` that will never commit (the leader lost its epoch first)."""

    first_offset: int
    last_offset: int
    epoch: int


@dataclass(frozen=True, slots=True)
class ReadResolved:
    """A read barrier (``RaftClient.read_barrier``) finished: ``error`` 0 means the state applied so far (the
    ApplyCommitted effects before this one included) is at least as new as the leader's at the call
    (kraftd.core.reads); otherwise NOT_CONTROLLER or REQUEST_TIMED_OUT and nothing may be served."""

    ticket: int
    error: int


@dataclass(frozen=True, slots=True)
class SetDeadline:
    at_ms: int


Effect = (
    PersistElectionState
    | TruncateLog
    | AppendBatches
    | FlushLog
    | WriteSnapshot
    | InstallSnapshot
    | DeleteLogBefore
    | SendRequest
    | SendResponse
    | SnapshotLoaded
    | ApplyCommitted
    | LeaderChanged
    | AppendFailed
    | ReadResolved
    | SetDeadline
)

_ORDER: dict[type, int] = {
    PersistElectionState: 0,
    TruncateLog: 1,
    AppendBatches: 1,
    FlushLog: 1,
    WriteSnapshot: 1,
    InstallSnapshot: 1,
    DeleteLogBefore: 1,
    SnapshotLoaded: 3,
    SendRequest: 2,
    SendResponse: 2,
    ApplyCommitted: 3,
    LeaderChanged: 3,
    AppendFailed: 3,
    ReadResolved: 3,
    SetDeadline: 4,
}


def ordered(effects: list[Effect]) -> list[Effect]:
    """Stable-sort effects into the execution contract's phases (invariant 1), keeping only the step's last
    ``PersistElectionState`` (invariant 7)."""
    states = [e for e in effects if isinstance(e, PersistElectionState)]
    if len(states) > 1:
        effects = [e for e in effects if not isinstance(e, PersistElectionState) or e is states[-1]]
    return sorted(effects, key=lambda e: _ORDER[type(e)])
