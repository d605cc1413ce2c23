"""RaftNode: one replica of the KRaft quorum as a pure state machine (KIP-595 as shipped, KIP-996).

Drive it with ``step(event) -> list[Effect]`` (see kraftd.core.events / kraftd.core.effects).

Invariants (numbers are cited by the handlers):
1. Election state changes only inside ``_transition`` (or the vote-recording helper), which emits
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
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from kraftd.core import election, quorum_rpcs, replication
from kraftd.core import messages as m
from kraftd.core.config import QuorumConfig
from kraftd.core.effects import Effect, LeaderChanged, PersistElectionState, SendRequest, SetDeadline, ordered
from kraftd.core.events import (
    AppendRecords,
    Event,
    LogFlushed,
    RequestReceived,
    ResponseReceived,
    Shutdown,
    Tick,
)
from kraftd.core.log import ReplicatedLog
from kraftd.core.states import Candidate, Follower, Leader, Prospective, Resigned, RoleData, Unattached
from kraftd.core.transitions import IllegalTransitionError, check_transition
from kraftd.core.types import (
    NO_LEADER,
    ElectionState,
    LeaderAndEpoch,
    OffsetRange,
    ReplicaKey,
    Role,
    VoterSet,
)
from kwire.errors import ErrorCode


@dataclass(slots=True)
class Inflight:
    destination: int
    message: Any
    deadline: int


class RaftNode:
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
    ) -> None:
        self.local = local
        self.voters = voters
        self.config = config
        self.bugs = config.bugs
        self.rng = rng
        self.cluster_id = cluster_id
        self.log = log if log is not None else ReplicatedLog()
        self.flushed = self.log.end_offset  # a loaded log is durable
        self.high_watermark = self.log.start_offset
        self.applied = self.log.start_offset
        self.now = now_ms
        self.out: list[Effect] = []
        self.inflight: dict[int, Inflight] = {}
        self.backoff: dict[int, int] = {}
        self.shutting_down = False
        self._next_request_id = 1
        self.election_retries = 0
        self.discovery_cursor = 0
        self.follower_leader_hwm = 0
        self._last_leader = LeaderAndEpoch(NO_LEADER, -1)
        self.role, self.data, self.election = self._initial(election_state or ElectionState())

    # ----- start-up (Kafka's QuorumState.initialize) -----
    def _initial(self, e: ElectionState) -> tuple[Role, RoleData, ElectionState]:
        if e.epoch < self.log.last_epoch:
            e = ElectionState(self.log.last_epoch)
            self.out.append(PersistElectionState(e))
            return Role.UNATTACHED, Unattached(self.election_deadline()), e
        if e.leader_id == self.local.id and self.is_voter:
            others = {v for v in self.voters.ids if v != self.local.id}
            return Role.RESIGNED, Resigned(self.election_deadline(), [], others), e
        if e.leader_id >= 0 and e.leader_id != self.local.id:
            return Role.FOLLOWER, Follower(e.leader_id, self.now + self.config.fetch_timeout_ms), e
        return Role.UNATTACHED, Unattached(self.election_deadline()), e

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

    def election_deadline(self) -> int:
        t = self.config.election_timeout_ms
        return self.now + t + self.rng.randrange(t)

    # ----- the entry point -----
    def step(self, event: Event) -> list[Effect]:
        self.now = max(self.now, event.now_ms)
        if isinstance(event, RequestReceived):
            self._on_request(event)
        elif isinstance(event, ResponseReceived):
            self._on_response(event)
        elif isinstance(event, AppendRecords):
            replication.append_or_fail(self, list(event.records))
        elif isinstance(event, LogFlushed):
            replication.on_flushed(self, event.offset)
        elif isinstance(event, Shutdown):
            self.shutting_down = True
        else:
            assert isinstance(event, Tick)
        return self.poll()

    def append(self, records: list[bytes]) -> OffsetRange:
        """Accept records as leader; raises NotLeaderError otherwise. Effects follow on the next poll."""
        return replication.append(self, records)

    def poll(self) -> list[Effect]:
        self._expire_inflight()
        for _ in range(8):  # a single-voter quorum walks Unattached -> ... -> Leader in one poll
            before = (self.role, self.epoch)
            self._poll_role()
            if (self.role, self.epoch) == before:
                break
        replication.maybe_apply(self)
        cur = self.leader_and_epoch()
        if cur != self._last_leader:
            self._last_leader = cur
            self.out.append(LeaderChanged(cur))
        self.out.append(SetDeadline(self._deadline()))
        out = ordered(self.out)
        self.out = []
        return out

    def _poll_role(self) -> None:
        d = self.data
        if isinstance(d, Leader):
            replication.poll_leader(self, d)
        elif isinstance(d, Follower):
            replication.poll_follower(self, d)
        elif isinstance(d, Prospective | Candidate):
            election.poll_election(self, d)
        elif isinstance(d, Resigned):
            quorum_rpcs.poll_resigned(self, d)
        else:
            election.poll_unattached(self, d)

    # ----- messages -----
    def _on_request(self, ev: RequestReceived) -> None:
        msg = ev.message
        if isinstance(msg, m.VoteRequest):
            resp = election.handle_vote_request(self, msg)
        elif isinstance(msg, m.FetchRequest):
            resp = replication.handle_fetch_request(self, ev.token, msg)
        elif isinstance(msg, m.BeginQuorumEpochRequest):
            resp = quorum_rpcs.handle_begin_quorum(self, msg)
        elif isinstance(msg, m.EndQuorumEpochRequest):
            resp = quorum_rpcs.handle_end_quorum(self, msg)
        else:
            return
        if resp is not None:
            replication.respond(self, ev.token, resp)

    def _on_response(self, ev: ResponseReceived) -> None:
        inf = self.inflight.get(ev.request_id)
        if inf is None or inf.destination != ev.source:
            return  # duplicate, expired or from a previous role instance (invariant 2)
        del self.inflight[ev.request_id]
        self._dispatch_response(ev.source, inf.message, ev.message)

    def _dispatch_response(self, source: int, request: Any, resp: Any) -> None:
        if resp.error_code != ErrorCode.NONE and resp.error_code != ErrorCode.UNSUPPORTED_VERSION:
            self.backoff[source] = self.now + self.config.retry_backoff_ms
        if isinstance(request, m.VoteRequest):
            election.handle_vote_response(self, source, request, resp)
        elif isinstance(request, m.FetchRequest):
            replication.handle_fetch_response(self, source, resp)
        elif isinstance(request, m.BeginQuorumEpochRequest | m.EndQuorumEpochRequest):
            quorum_rpcs.handle_epoch_response(self, source, request, resp)

    def _expire_inflight(self) -> None:
        for rid, inf in list(self.inflight.items()):
            if inf.deadline <= self.now:
                del self.inflight[rid]
                self._dispatch_response(
                    inf.destination, inf.message, m.error_response(inf.message, ErrorCode.REQUEST_TIMED_OUT)
                )

    def can_send(self, dest: int) -> bool:
        if self.backoff.get(dest, 0) > self.now:
            return False
        return not any(i.destination == dest for i in self.inflight.values())

    def send(self, dest: int, message: Any) -> None:
        rid = self._next_request_id
        self._next_request_id += 1
        self.inflight[rid] = Inflight(dest, message, self.now + self.config.request_timeout_ms)
        self.out.append(SendRequest(dest, rid, message))

    # ----- transitions (invariant 1) -----
    def transition(self, role: Role, data: RoleData, new: ElectionState) -> None:
        check_transition(self.role, role, self.epoch, new.epoch, self.is_voter)
        if isinstance(self.data, Leader):
            replication.leave_leader(self, self.data)
        if new != self.election:
            self.out.append(PersistElectionState(new))
        self.election = new
        self.role = role
        self.data = data
        self.inflight.clear()
        self.backoff.clear()
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

    # ----- timers -----
    def _deadline(self) -> int:
        now = self.now
        cands = [i.deadline for i in self.inflight.values()]
        cands.extend(t for t in self.backoff.values() if t > now)
        d = self.data
        if isinstance(d, Leader):
            cands += [d.check_quorum_deadline, d.begin_quorum_deadline]
            cands += [p.deadline for p in d.parked.values()]
            if d.linger_deadline is not None:
                cands.append(d.linger_deadline)
        elif isinstance(d, Follower):
            cands.append(d.fetch_deadline)
        elif isinstance(d, Candidate):
            cands.append(d.backoff_until if d.backoff_until is not None else d.election_deadline)
        else:
            cands.append(d.election_deadline)
            if isinstance(d, Prospective):
                cands.append(d.votes_not_before)
        future = [c for c in cands if c > now]
        return min(future) if future else now + self.config.retry_backoff_ms
