"""RaftNode: one replica of the KRaft quorum as a pure state machine (KIP-595 as shipped, KIP-996).

Drive it with ``step(event) -> list[Effect]`` (see kraftd.core.events / kraftd.core.effects).

This module is the dispatcher: the only one that knows every handler module. It routes events and
responses to them and implements the hooks of :class:`kraftd.core.context.NodeContext`, whose numbered
invariants the handlers cite.
"""

from __future__ import annotations

from typing import Any

from kraftd.core import (
    add_voter,
    auto_join,
    election,
    following,
    kraft_upgrade,
    quorum_rpcs,
    reads,
    replication,
    snapshotting,
    voter_rpcs,
)
from kraftd.core import messages as m
from kraftd.core.context import NodeContext
from kraftd.core.effects import Effect, LeaderChanged, SetDeadline, ordered
from kraftd.core.events import (
    AppendRecords,
    Event,
    LogFlushed,
    ReadsDue,
    RequestReceived,
    ResponseReceived,
    Shutdown,
    Tick,
)
from kraftd.core.snapshots import Snapshot
from kraftd.core.states import Candidate, Follower, Leader, Prospective, Resigned
from kraftd.core.types import OffsetRange
from kwire.errors import ErrorCode


class RaftNode(NodeContext):
    """The dispatcher: the only module that knows every handler module (constructed as NodeContext)."""

    # ----- hooks (NodeContext) -----
    def become_leader(self, granting: tuple[int, ...]) -> None:
        replication.become_leader(self, granting)

    def resign(self, d: Leader) -> None:
        quorum_rpcs.resign(self, d)

    def send_begin_quorum(self, d: Leader) -> None:
        quorum_rpcs.send_begin_quorum(self, d)

    def to_prospective(self, jitter: bool = False) -> None:
        election.to_prospective(self, jitter)

    def leave_leader(self, d: Leader) -> None:
        voter_rpcs.abandon_voter_change(self, d)
        replication.leave_leader(self, d)
        reads.leave_leader(self)

    def append_control(self, entries: list[tuple[Any, Any]]) -> None:
        d = self.data
        assert isinstance(d, Leader)
        replication.append_control(self, d, entries)

    def send_fetch_snapshot(self, d: Follower) -> None:
        snapshotting.send_fetch_snapshot(self, d)

    # ----- the entry point -----
    def step(self, event: Event) -> list[Effect]:
        self.now = max(self.now, event.now_ms)
        self.steps += 1
        if isinstance(event, ReadsDue | RequestReceived | ResponseReceived):
            out = self._step_read(event)
            if out is not None:
                return out
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
            assert isinstance(event, Tick | ReadsDue)
        return self.poll()

    def _step_read(self, event: ReadsDue | RequestReceived | ResponseReceived) -> list[Effect] | None:
        """kraftd.core.reads invariant 7: an event only the read path needs runs that path, not ``poll``;
        None: not such an event, nothing done (the full step takes it)."""
        if self.out:  # effects an API call left for the next poll (``append``) get the full step
            return None
        if isinstance(event, RequestReceived):
            if not isinstance(event.message, reads.ReadOffsetRequest):
                return None
            queued = len(self.reads.queued)
            resp = reads.handle_read_offset(self, event.token, event.message)
            if resp is not None:
                replication.respond(self, event.token, resp)
            if len(self.reads.queued) == queued:  # answered at once: no waiter, no timer changed
                out = self.out
                self.out = []
                return out
        elif isinstance(event, ResponseReceived):
            inf = self.inflight.get(event.request_id)
            epoch_ack = inf is not None and isinstance(inf.message, m.BeginQuorumEpochRequest)
            if event.request_id not in self.reads.asks and not (epoch_ack and isinstance(self.data, Leader)):
                return None
            before = (self.role, self.epoch)
            self._on_response(event)
            if (self.role, self.epoch) != before:  # the answer named a newer epoch: the full poll follows it
                return self.poll()
        reads.poll(self)
        self.out.append(SetDeadline(self._deadline()))
        out = ordered(self.out)
        self.out = []
        return out

    def append(self, records: list[bytes]) -> OffsetRange:
        """Accept records as leader; raises NotLeaderError otherwise. Effects follow on the next poll."""
        return replication.append(self, records)

    def read_barrier(self) -> int:
        """A linearizable read barrier (kraftd.core.reads); a ``ReadResolved`` effect with the ticket ends it."""
        return reads.read_barrier(self)

    def read_offset_answer(self, msg: Any) -> Any | None:
        """A voter's ReadOffset answered from the state alone, or None: step it (kraftd.core.reads invariant 7a)."""
        return reads.answer_on_arrival(self, msg)

    def create_snapshot(self, end_offset: int, values: list[bytes]) -> Snapshot:
        """The state machine's snapshot of every record below ``end_offset`` (a committed batch boundary);
        effects (WriteSnapshot, maybe DeleteLogBefore) follow on the next poll."""
        return snapshotting.create_snapshot(self, end_offset, values)

    def plan_snapshot(self, end_offset: int) -> snapshotting.SnapshotPlan:
        """:meth:`create_snapshot` in two parts: the checks and parameters now, the O(image) build anywhere."""
        return snapshotting.plan_snapshot(self, end_offset)

    def add_snapshot(self, snap: Snapshot) -> Snapshot:
        return snapshotting.add_snapshot(self, snap)

    def upgrade_kraft_version(self, version: int, validate_only: bool) -> tuple[ErrorCode, str | None]:
        """UpdateFeatures for kraft.version (kraftd.core.kraft_upgrade); effects follow on the next poll."""
        return kraft_upgrade.upgrade(self, version, validate_only)

    def snapshot_due(self) -> bool:
        return snapshotting.snapshot_due(self)

    def poll(self) -> list[Effect]:
        self._expire_inflight()
        if isinstance(self.data, Leader):
            voter_rpcs.poll_voter_change(self, self.data)  # may request a resignation the loop carries out
        for _ in range(8):  # a single-voter quorum walks Unattached -> ... -> Leader in one poll
            before = (self.role, self.epoch)
            self._poll_role()
            if (self.role, self.epoch) == before:
                break
        auto_join.poll(self)
        auto_join.poll_update(self)
        replication.maybe_apply(self)
        if self.reads.busy():  # the step costs what it handles: no barrier, nothing to expire or ask
            reads.poll(self)
        last = self._last_leader
        if self.leader_id() != last.leader_id or self.epoch != last.epoch:
            self._last_leader = cur = self.leader_and_epoch()
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
            following.poll_follower(self, d)
        elif isinstance(d, Prospective | Candidate):
            election.poll_election(self, d)
        elif isinstance(d, Resigned):
            if self.voters.ids == (self.local.id,) and not self.shutting_down:
                election.to_prospective(self)  # kraftd.core.quorum_rpcs invariant 4a
            else:
                quorum_rpcs.poll_resigned(self, d)
        elif self.is_voter:
            election.poll_unattached(self, d)
        else:
            following.discover_leader(self)

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
        elif isinstance(msg, m.FetchSnapshotRequest):
            resp = snapshotting.handle_fetch_snapshot_request(self, msg)
        elif isinstance(msg, voter_rpcs.UpdateRaftVoterRequest):
            resp = voter_rpcs.handle_update_voter(self, msg)
        elif isinstance(msg, voter_rpcs.RemoveRaftVoterRequest):
            resp = voter_rpcs.handle_remove_voter(self, ev.token, msg)
        elif isinstance(msg, reads.ReadOffsetRequest):
            resp = reads.handle_read_offset(self, ev.token, msg)
        elif isinstance(msg, add_voter.AddRaftVoterRequest):
            resp = add_voter.handle_add_voter(self, ev.token, msg)
        else:
            return
        if resp is not None:
            replication.respond(self, ev.token, resp)

    def _on_response(self, ev: ResponseReceived) -> None:
        if reads.handle_response(self, ev.source, ev.request_id, ev.message):
            return
        inf = self.inflight.get(ev.request_id)
        if inf is None or inf.destination != ev.source:
            return  # duplicate, expired or from a previous role instance (context invariant 2)
        del self.inflight[ev.request_id]
        self._dispatch_response(ev.source, inf.message, ev.message)

    def _dispatch_response(self, source: int, request: Any, resp: Any) -> None:
        if resp.error_code != ErrorCode.NONE and resp.error_code != ErrorCode.UNSUPPORTED_VERSION:
            self.back_off(source)
        if isinstance(request, m.VoteRequest):
            election.handle_vote_response(self, source, request, resp)
        elif isinstance(request, m.FetchRequest):
            following.handle_fetch_response(self, source, resp)
        elif isinstance(request, m.FetchSnapshotRequest):
            snapshotting.handle_fetch_snapshot_response(self, source, resp)
        elif isinstance(request, m.BeginQuorumEpochRequest | m.EndQuorumEpochRequest):
            quorum_rpcs.handle_epoch_response(self, source, request, resp)
        elif isinstance(request, auto_join.JOIN_REQUESTS):
            auto_join.handle_response(self, request, resp)
        elif isinstance(request, add_voter.ApiVersionsRequest):
            add_voter.handle_probe_response(self, source, resp)

    def _expire_inflight(self) -> None:
        for rid, inf in list(self.inflight.items()):
            if inf.deadline <= self.now:
                del self.inflight[rid]
                resp = m.error_response(inf.message, ErrorCode.REQUEST_TIMED_OUT)
                reads.handle_response(self, inf.destination, rid, resp)
                self._dispatch_response(inf.destination, inf.message, resp)

    # ----- timers -----
    def _deadline(self) -> int:
        now = self.now
        cands = [i.deadline for i in self.inflight.values()]
        cands.extend(t for t in self.backoff.values() if t > now)
        d = self.data
        if isinstance(d, Leader):
            cands += [d.check_quorum_deadline, d.begin_quorum_deadline]
            if d.voter_change is not None:
                cands.append(d.voter_change.deadline)
            if d.parked.any_due():
                return now  # replication invariant 2b: the next step answers them
            parked = d.parked.next_deadline()  # O(log parked), kraftd.core.parked
            if parked is not None:
                cands.append(parked)
            if d.linger_deadline is not None:
                cands.append(d.linger_deadline)
            if d.drain_deadline is not None:
                cands.append(d.drain_deadline)
        elif isinstance(d, Follower):
            cands.append(d.fetch_deadline)
        elif isinstance(d, Candidate):
            cands.append(d.backoff_until if d.backoff_until is not None else d.election_deadline)
        else:
            cands.append(d.election_deadline)
            if isinstance(d, Prospective):
                cands.append(d.votes_not_before)
        if self.reads.busy():
            cands += reads.deadlines(self)
        future = [c for c in cands if c > now]
        return min(future) if future else now + self.config.retry_backoff_ms
