"""Per-role volatile data. None of it is durable: a restart rebuilds it from ElectionState and the log.

Invariants:
1. ``Prospective``/``Candidate`` record at most one answer per voter; the local vote counts as granted.
2. ``Leader.replicas`` holds every voter but the leader, plus observers seen within the session timeout.
3. ``Follower.has_fetched`` turns True at the first successful fetch from ``leader_id`` in this state and
   never back (KIP-996: it then rejects pre-votes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kraftd.core.log import OffsetAndEpoch
from kraftd.core.parked import ParkedFetches
from kraftd.core.types import NO_LEADER, Listener, ReplicaKey


@dataclass(slots=True)
class Unattached:
    election_deadline: int
    leader_id: int = NO_LEADER


@dataclass(slots=True)
class Prospective:
    election_deadline: int
    leader_id: int = NO_LEADER
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)
    votes_not_before: int = 0  # no pre-vote leaves before this time (election invariant 6)
    refused: set[int] = field(default_factory=set)  # voters whose pre-vote this state refused (invariant 7a)
    resolicited: set[int] = field(default_factory=set)  # voters asked a second time (invariant 7a)


@dataclass(slots=True)
class Candidate:
    election_deadline: int
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)
    backoff_until: int | None = None


@dataclass(slots=True)
class ReplicaProgress:
    key: ReplicaKey
    end_offset: int = -1
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1
    leader_end_at_last_fetch: int = -1
    # kraftd.core.snapshotting invariant 2a: the snapshot this replica last asked a chunk of, where, and when;
    # when its reading position (a Fetch offset, a snapshot and position in it) last moved forward.
    snapshot_offset: int = -1
    snapshot_position: int = -1
    last_snapshot_fetch_ms: int = -1
    advanced_ms: int = -1

    def update(self, now_ms: int, fetch_offset: int, leader_end: int) -> None:
        """Kafka's caught-up rule: caught up now if at the leader's end; else as of the previous fetch if
        this fetch reached the leader's end at that time."""
        if fetch_offset >= leader_end:
            self.last_caught_up_ms = max(self.last_caught_up_ms, now_ms)
        elif fetch_offset >= self.leader_end_at_last_fetch >= 0:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        if fetch_offset > self.end_offset:
            self.advanced_ms = now_ms
        self.end_offset = fetch_offset
        self.last_fetch_ms = now_ms
        self.leader_end_at_last_fetch = leader_end


@dataclass(slots=True)
class PendingVoterChange:
    """A voter change whose answer waits until its Voters record (at ``offset``) commits."""

    token: int | None  # None once answered (AddRaftVoter without AckWhenCommitted answers at append)
    offset: int  # -1 while an AddRaftVoter still probes the new voter (nothing appended yet)
    deadline: int
    kind: str = "remove"  # "add" or "remove"
    key: ReplicaKey | None = None  # the voter being added
    listeners: tuple[Listener, ...] = ()
    ack_when_committed: bool = True


@dataclass(slots=True)
class Leader:
    epoch_start_offset: int
    check_quorum_deadline: int
    begin_quorum_deadline: int
    granting: tuple[int, ...]
    replicas: dict[int, ReplicaProgress] = field(default_factory=dict)
    fetched_voters: set[int] = field(default_factory=set)
    pending: list[bytes] = field(default_factory=list)
    pending_bytes: int = 0
    linger_deadline: int | None = None
    parked: ParkedFetches = field(default_factory=ParkedFetches)  # kraftd.core.parked
    voter_change: PendingVoterChange | None = None  # at most one (KIP-853)
    resign_requested: bool = False  # removed from the committed voter set (KIP-853)
    drain_deadline: int | None = None  # a graceful shutdown resigns by then (replication invariant 8)
    # replication invariant 2e: Fetch answers with records by (fetch offset, max bytes), for (log end, HWM)
    answers: dict[tuple[int, int], Any] = field(default_factory=dict)
    answers_at: tuple[int, int] = (-1, -1)
    answers_bytes: int = 0


@dataclass(slots=True)
class SnapshotFetch:
    """A FetchSnapshot transfer in progress: the bytes received so far of snapshot ``snapshot_id``."""

    snapshot_id: OffsetAndEpoch
    received: bytearray = field(default_factory=bytearray)


@dataclass(slots=True)
class Follower:
    leader_id: int
    fetch_deadline: int
    has_fetched: bool = False
    ended_by_leader: bool = False  # an EndQuorumEpoch set fetch_deadline (its backoff orders the voters)
    snapshot_fetch: SnapshotFetch | None = None  # set while the leader's log starts past ours (KIP-630)


@dataclass(slots=True)
class Resigned:
    election_deadline: int
    preferred: list[ReplicaKey]
    unacked: set[int]
    shutting_down: bool = False


@dataclass(slots=True)
class ReadWaiter:
    """A read waiting for its offset (kraftd.core.reads): a local barrier ticket, or the token of a ReadOffset
    request from another replica (``remote``)."""

    ident: int
    deadline: int
    remote: bool = False
    acks: frozenset[int] = frozenset()  # voters whose request carrying this read acknowledged the epoch


@dataclass(slots=True)
class ReadRound:
    """One leadership confirmation of a leader (kraftd.core.reads invariant 1): BeginQuorumEpoch requests
    sent after every waiter arrived, and the voters that acknowledged them."""

    epoch: int
    waiters: list[ReadWaiter]
    sent: dict[int, int] = field(default_factory=dict)  # request id -> voter id
    acked: set[int] = field(default_factory=set)


@dataclass(slots=True)
class ReadAsk:
    """A ReadOffset request a non-leader has in flight to its leader, and the barriers it serves."""

    request_id: int
    leader_id: int
    deadline: int
    waiters: list[ReadWaiter]


@dataclass(slots=True)
class ReadState:
    queued: list[ReadWaiter] = field(default_factory=list)  # not yet in a round or an ask
    round: ReadRound | None = None
    # request id -> a ReadOffset in flight (kraftd.core.reads invariant 4)
    asks: dict[int, ReadAsk] = field(default_factory=dict)
    ask_not_before: int = 0
    targets: list[tuple[int, ReadWaiter]] = field(default_factory=list)  # (offset, barrier): wait for apply
    next_ticket: int = 1

    def busy(self) -> bool:
        """A barrier is waiting somewhere: kraftd.core.reads' poll and deadlines are no-ops otherwise."""
        return bool(self.queued or self.round is not None or self.asks or self.targets)


RoleData = Unattached | Prospective | Candidate | Leader | Follower | Resigned
