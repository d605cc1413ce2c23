"""NodeContext: the state of one replica and the helpers every handler shares (KIP-595 as shipped, KIP-996).

Layout: the handler modules (election, replication, quorum_rpcs) import this module and never each other;
:mod:`kraftd.core.node` (the dispatcher) subclasses it, routes events to the handlers and implements the
hooks below, the only place a handler's work continues in another handler. tests/core/test_import_graph.py
keeps kraftd/core acyclic.

Invariants (numbers are cited by the handlers):
1. Election state changes only inside ``transition`` (or ``record_vote``), which emits
   ``PersistElectionState`` ordered before every message of the same step: nothing a peer can observe
   (a vote, a new epoch, a leader claim) precedes durability (Kafka's durableTransitionTo).
2. At most one request per destination is in flight; an unanswered request expires after the request
   timeout and is handled as a REQUEST_TIMED_OUT response. Responses to requests of an earlier role
   instance are ignored (the in-flight table is cleared on every transition).
3. A follower reports (fetch offset) only log it has flushed, so the leader's HWM counts durable copies
   (Raft thesis §3.8; BugFlags.ack_before_flush breaks this).
4. The leader's HWM is the largest offset flushed by a majority of voters, moves only forward and only
   once it passes the epoch start offset (Raft thesis §3.6.2; BugFlags.commit_old_epoch breaks this).
5. The election timeout is re-armed randomized in [T, 2T) on every entry to Unattached, Prospective,
   Candidate and Resigned.
6. A leader's graceful shutdown completes only once another voter is known to lead (``handed_over``), or the
   node is an observer or the only voter (Kafka 4.3.1's maybeCompleteShutdown). Until then it stays up,
   Resigned and then Unattached/Follower in the next epoch, and keeps answering Vote requests: in a 3-voter
   quorum the other follower rejects a pre-vote (it has fetched, KIP-996), so the resigned leader's grant is
   the one the preferred successor needs.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kraftd.core.config import QuorumConfig
from kraftd.core.effects import Effect, PersistElectionState, SendRequest, SnapshotLoaded
from kraftd.core.log import LogBatch, OffsetAndEpoch, ReplicatedLog
from kraftd.core.snapshots import Snapshot, log_agrees
from kraftd.core.states import Follower, Leader, Prospective, ReadState, Resigned, RoleData, Unattached
from kraftd.core.transitions import IllegalTransitionError, check_transition
from kraftd.core.types import NO_LEADER, ElectionState, LeaderAndEpoch, Listener, ReplicaKey, Role, VoterSet
from kraftd.core.voters import VoterHistory


@dataclass(slots=True)
class Inflight:
    destination: int
    message: Any
    deadline: int
    side: bool = False  # an auto-join request beside the fetch: not counted by invariant 2


class NodeContext:
    def __init__(
        self,
        *,
        local: ReplicaKey,
        voters: VoterSet,
        config: QuorumConfig,
        rng: random.Random,
        cluster_id: str | None = None,
        election_state: ElectionState | None = None,
        log: ReplicatedLog | None = None,
        now_ms: int = 0,
        kraft_version: int = 0,
        snapshot: Snapshot | None = None,
        retained: Sequence[Snapshot] = (),
    ) -> None:
        self.local = local
        self._last_leader = LeaderAndEpoch(NO_LEADER, -1)  # the last leader reported to listeners
        self.config = config
        self.bugs = config.bugs
        self.rng = rng
        self.cluster_id = cluster_id
        self.log = log if log is not None else ReplicatedLog()
        self.now = now_ms
        self.steps = 0  # events stepped so far (replication invariant 2b counts steps)
        self.out: list[Effect] = []
        self.voter_history = VoterHistory(voters, kraft_version)
        self.snapshot: Snapshot | None = None
        # Every snapshot still served by FetchSnapshot (kraftd.core.snapshotting invariant 2): the latest and
        # the older ones Kafka's retention has not deleted yet (on restart: the files the shell found).
        self.retained: dict[OffsetAndEpoch, Snapshot] = {s.snapshot_id: s for s in retained}
        self.high_watermark = self.log.start_offset
        self.applied = self.log.start_offset
        if snapshot is not None:
            self.load_snapshot(snapshot)
        else:
            for b in self.log.batches:
                self.voter_history.observe(b)
        self.flushed = self.log.end_offset  # a loaded log is durable
        self.bytes_since_snapshot = 0
        self.last_snapshot_ms = now_ms
        self.inflight: dict[int, Inflight] = {}
        self.backoff: dict[int, int] = {}
        self.shutting_down = False
        self._next_request_id = 1
        self.election_retries = 0
        self.discovery_cursor = 0
        self.follower_leader_hwm = 0
        self.reads = ReadState()  # kraftd.core.reads
        # Endpoints of a voter being added (AddRaftVoter's ApiVersions probe): the shell's address book for ids
        # that are not voters yet.
        self.probe_endpoints: dict[int, tuple[Listener, ...]] = {}
        self.has_joined = False  # kraftd.core.auto_join invariant 3
        # kraft.version 0: what each voter told the leader in UpdateRaftVoter (kraftd.core.kraft_upgrade)
        self.volatile_voters: dict[int, tuple[ReplicaKey, tuple[Listener, ...], tuple[int, int]]] = {}
        self.join_not_before = 0
        self.updated_epoch = -1  # the epoch whose leader heard this voter's UpdateRaftVoter (auto_join 4)
        self.update_not_before = 0
        self.role, self.data, self.election = self._initial(election_state or ElectionState())

    # ----- hooks: implemented by the dispatcher (kraftd.core.node) -----
    def become_leader(self, granting: tuple[int, ...]) -> None:
        """A Candidate won its election (replication starts the epoch)."""
        raise NotImplementedError

    def resign(self, d: Leader) -> None:
        """A leader gives up its epoch (check-quorum or shutdown)."""
        raise NotImplementedError

    def send_begin_quorum(self, d: Leader) -> None:
        raise NotImplementedError

    def to_prospective(self, jitter: bool = False) -> None:
        """A voter's fetch or election timer expired (KIP-996)."""
        raise NotImplementedError

    def send_fetch_snapshot(self, d: Follower) -> None:
        """A follower whose leader's log starts past its own asks for the next chunk (KIP-630)."""
        raise NotImplementedError

    def append_control(self, entries: list[tuple[Any, Any]]) -> None:
        """A leader appends one control batch now (after any pending records), e.g. a Voters record."""
        raise NotImplementedError

    def leave_leader(self, d: Leader) -> None:
        """Called by ``transition`` before a Leader's data is dropped."""
        raise NotImplementedError

    # ----- start-up (Kafka's QuorumState.initialize) -----
    def _initial(self, e: ElectionState) -> tuple[Role, RoleData, ElectionState]:
        if e.epoch < self.log.last_epoch:
            e = ElectionState(self.log.last_epoch)
            self.out.append(PersistElectionState(e))
            return Role.UNATTACHED, Unattached(self.election_deadline()), e
        if e.leader_id == self.local.id:
            # Kafka's QuorumState: a former leader restarts Resigned in its epoch even when its log's newest voter
            # set no longer holds it (it removed itself and crashed before the commit): it never votes again in
            # that epoch and tells the voters to elect, then waits as an observer.
            others = {v for v in self.voters.ids if v != self.local.id}
            return Role.RESIGNED, Resigned(self.election_deadline(), [], others), e
        if e.leader_id >= 0 and e.leader_id != self.local.id:
            return Role.FOLLOWER, Follower(e.leader_id, self.now + self.config.fetch_timeout_ms), e
        return Role.UNATTACHED, Unattached(self.election_deadline()), e

    @property
    def voters(self) -> VoterSet:
        """The newest voter set in the log, committed or not (kraftd.core.voters invariant 2)."""
        return self.voter_history.latest()

    def load_snapshot(self, snap: Snapshot) -> None:
        """Restart (or a fetched snapshot): the state is the snapshot's, the log continues after its end. A log
        that ends before the snapshot or disagrees with its epoch is dropped (kraftd.core.snapshots inv. 1)."""
        sid = snap.snapshot_id
        log = self.log
        if not log_agrees(log, sid):
            log.reset(sid.offset, sid.epoch)
        self.snapshot = snap
        # A fetched snapshot replaces the whole log: older snapshots go with it (Kafka's FullTruncation).
        self.retained = {k: v for k, v in self.retained.items() if log.start_offset <= k.offset < sid.offset}
        self.retained[sid] = snap
        base = snap.voters if snap.voters is not None else self.voter_history.history[0][1]
        version = snap.kraft_version if snap.voters is not None else self.voter_history.kraft_version
        self.voter_history.reset(base, version, sid.offset - 1)
        for b in log.batches:
            if b.base_offset >= sid.offset:
                self.voter_history.observe(b)
        self.high_watermark = max(self.high_watermark, sid.offset)
        self.applied = max(self.applied, sid.offset)
        self.out.append(SnapshotLoaded(snap))

    # ----- the log: every change goes through these, so the voter history follows it -----
    def log_append(self, batch: LogBatch) -> None:
        self.log.append(batch)
        self.voter_history.observe(batch)

    def log_truncate(self, offset: int) -> int:
        end = self.log.truncate_to(offset)
        self.voter_history.truncate(end)
        self.flushed = min(self.flushed, end)
        return end

    @property
    def is_voter(self) -> bool:
        return self.voters.is_voter(self.local)

    @property
    def epoch(self) -> int:
        return self.election.epoch

    def leader_id(self) -> int:
        d = self.data
        if isinstance(d, Leader | Resigned):
            return self.local.id
        if isinstance(d, Follower | Unattached | Prospective):
            return d.leader_id
        return NO_LEADER

    def leader_and_epoch(self) -> LeaderAndEpoch:
        return LeaderAndEpoch(self.leader_id(), self.epoch)

    def handed_over(self) -> bool:
        """Invariant 6: a graceful shutdown may complete (Kafka 4.3.1's maybeCompleteShutdown)."""
        if isinstance(self.data, Leader):
            return False  # it resigns first, after committing its tail (kraftd.core.replication invariant 8)
        if not self.is_voter or self.voters.ids == (self.local.id,):
            return True
        return not isinstance(self.data, Resigned) and self.leader_id() >= 0

    def election_deadline(self) -> int:
        t = self.config.election_timeout_ms
        return self.now + t + self.rng.randrange(t)

    def note_voter_fetch(self, d: Leader, voter_id: int) -> None:
        """Check-quorum: a voter fetched (Fetch or FetchSnapshot); a majority of voters (the leader counts
        itself when it is one) within the timeout re-arms it (KIP-595)."""
        d.fetched_voters.add(voter_id)
        needed = self.voters.majority() - (1 if self.is_voter else 0)
        if len(d.fetched_voters) >= needed:
            d.fetched_voters.clear()
            d.check_quorum_deadline = self.now + self.config.check_quorum_timeout_ms

    # ----- requests (invariant 2) -----
    def can_send(self, dest: int) -> bool:
        if self.backoff.get(dest, 0) > self.now:
            return False
        return not any(i.destination == dest and not i.side for i in self.inflight.values())

    def send(self, dest: int, message: Any, side: bool = False) -> int:
        rid = self.next_request_id()
        self.inflight[rid] = Inflight(dest, message, self.now + self.config.request_timeout_ms, side)
        self.out.append(SendRequest(dest, rid, message))
        return rid

    def next_request_id(self) -> int:
        rid = self._next_request_id
        self._next_request_id += 1
        return rid

    def back_off(self, dest: int) -> None:
        """No request to ``dest`` before ``controller.quorum.retry.backoff.ms`` has passed."""
        self.backoff[dest] = self.now + self.config.retry_backoff_ms

    # ----- transitions (invariant 1) -----
    def transition(self, role: Role, data: RoleData, new: ElectionState) -> None:
        check_transition(self.role, role, self.epoch, new.epoch, self.is_voter)
        if isinstance(self.data, Leader):
            self.leave_leader(self.data)
        if new != self.election:
            self.out.append(PersistElectionState(new))
        self.election = new
        self.role = role
        self.data = data
        self.inflight.clear()
        self.backoff.clear()
        for ask in self.reads.asks.values():  # their SendRequests are dropped below: the barriers ask again
            self.reads.queued[:0] = ask.waiters  # (kraftd.core.reads)
        self.reads.asks.clear()
        # Requests the old role queued in this step would be answered into the void (invariant 2).
        self.out = [e for e in self.out if not isinstance(e, SendRequest)]

    def record_vote(self, candidate: ReplicaKey) -> None:
        """Unattached/Prospective grant a standard vote: durable before the response (invariant 1)."""
        new = ElectionState(self.epoch, NO_LEADER, candidate)
        if self.role not in (Role.UNATTACHED, Role.PROSPECTIVE):
            raise IllegalTransitionError(f"{self.role.value} cannot record a vote")
        self.election = new
        self.out.append(PersistElectionState(new))

    def to_unattached(self, epoch: int) -> None:
        voted = self.election.voted_key if epoch == self.epoch else None
        state = ElectionState(epoch, NO_LEADER, voted)
        self.transition(Role.UNATTACHED, Unattached(self.election_deadline()), state)

    def to_follower(self, epoch: int, leader_id: int) -> None:
        voted = self.election.voted_key if epoch == self.epoch else None
        state = ElectionState(epoch, leader_id, voted)
        self.transition(Role.FOLLOWER, Follower(leader_id, self.now + self.config.fetch_timeout_ms), state)

    def maybe_transition(self, leader_id: int, epoch: int) -> None:
        """React to a peer's (leader id, epoch): follow a newer leader, adopt a newer epoch, or follow the
        leader of our own epoch once it is known (Kafka's maybeTransition)."""
        if epoch < self.epoch:
            return
        known = leader_id >= 0 and leader_id != self.local.id
        if epoch > self.epoch:
            if known:
                self.to_follower(epoch, leader_id)
            else:
                self.to_unattached(epoch)
            return
        no_leader = self.leader_id() < 0
        if known and no_leader and self.role in (Role.UNATTACHED, Role.PROSPECTIVE, Role.CANDIDATE):
            self.to_follower(epoch, leader_id)
