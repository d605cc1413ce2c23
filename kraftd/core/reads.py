"""Linearizable reads from any replica: read index over KIP-650's ReadOffset (etcd's ReadIndex, Raft thesis §6.4).

A read barrier asks "which committed offset must my image reach before I may answer?". On the leader the answer
is its high watermark once it has confirmed its leadership after the barrier started; on any other replica it
is the same number, fetched from the leader with one ReadOffset request. The barrier resolves (``ReadResolved``)
once the local applied offset reaches that number.

We use read index, never a lease. Invariants:
1. Confirmation is a round of BeginQuorumEpoch requests the leader *sends after* every waiter of the round
   arrived, answered by voters that still recognise (this leader, this epoch). When a majority of the voters
   (the leader counting itself) has answered so, no other leader of a higher epoch had committed anything
   before the round: committing in epoch E' > E needs a majority at epoch E' before that point, a voter's
   epoch never goes down, and two majorities share a voter - who could then not have answered for epoch E
   after the round started. So every write acknowledged before a waiter arrived is at or below the leader's
   high watermark at confirmation (leader completeness, Raft thesis §3.6), and the answer covers it.
1a. The argument only needs each acknowledging voter to have been at (this leader, epoch E) at some point after
   the read was invoked. A voter's ReadOffset is built after every read it carries was invoked, and names the
   voter's epoch then (ReplicaEpoch): at epoch E it counts as an acknowledgement for those reads only (never
   for reads of other requests, which may have been invoked later). With 3 voters, leader + requester are a
   majority and a follower's read costs one round trip; otherwise the round adds the missing voters.
2. Only request/response pairs count, never time: ``ReadRound`` holds request ids and voter ids and no clock
   reading, and nothing here compares ``now`` except to expire waiters. A lease (trusting check-quorum's
   timer plus a clock-drift bound) therefore has no code path to be reached by accident; BugFlags
   ``read_without_confirm`` is the only way to skip the round, and the simulator must catch it (as it must
   catch ``read_without_read_offset``: a non-leader serving its applied state without asking).
3. A new leader answers only after it has committed in its own epoch (its reported high watermark is known,
   kraftd.core.replication); before that its high watermark may trail writes the previous leader acked.
4. Batching: every waiter queued when a round (or a non-leader's ReadOffset) starts shares that one round trip;
   waiters arriving later wait for the next one. A non-leader sends a new ReadOffset from any step that finds
   waiters queued, while fewer than ``MAX_ASKS`` of its own are in flight (pipelined: waiters arriving during
   one ask do not also wait for its answer before theirs is sent; issue #25); each ask is on its own request
   id outside context invariant 2's table and answers only the waiters it carries (the shell sends them on
   their own connection, so they never queue behind a long-polling Fetch).
5. Failure never degrades to stale: a barrier that has no confirmed offset by its deadline (request timeout
   after the call) resolves with NOT_CONTROLLER when no leader is known then, else REQUEST_TIMED_OUT.
   Losing leadership or an error from the leader puts the barrier back in the queue to ask again.
6. A leader that does not serve ReadOffset (a Kafka controller in a mixed quorum: UNSUPPORTED_VERSION) cannot
   confirm anything; its barriers resolve with UNSUPPORTED_VERSION at once, and the caller decides (the shell
   then serves its image and counts the answer as stale, kraftd.shell.raft.reads contract 2a).
7. The read path alone (issue #25): a ``ReadsDue`` event, a ReadOffset request, the answer to a non-leader's
   ask and a voter's answer to a leader's BeginQuorumEpoch (a confirmation round's or not) run :func:`poll`
   (and the event's usual handlers) without the node's full poll: none of them changes the log,
   the high watermark, the applied offset or the role, so the full poll would find nothing else to do for them
   (its timers are the driver's next deadline, re-emitted here). Leadership and the commit are still checked
   where they decide: ``handle_read_offset`` and :func:`_poll_leader` (leader, epoch, invariant 3), the ask's
   answer (its epoch, invariant 5); an answer that moves the epoch takes the full poll. A voter's ReadOffset
   that its own epoch already confirms (invariant 1a, with invariant 3 met) is answered on arrival without a
   waiter, so its step emits that answer only (no waiter, no timer changed).
7a. That on-arrival answer (:func:`answer_on_arrival`) is a function of the node's state alone (epoch, voters,
   high watermark, invariant 3), with no waiter, timer or effect: the shell may take it between two steps
   without stepping the core (kraftd.shell.apis.fast contract 1a, issue 25), and gets the answer the step would
   have sent. Invariant 1a's argument holds at any point after the request arrived: the requester was at
   (this leader, epoch E) after its reads were invoked, and the leader is at E when it answers.
"""

from __future__ import annotations

from typing import Any

from kraftd.core import messages as m
from kraftd.core.context import NodeContext
from kraftd.core.effects import ReadResolved, SendRequest
from kraftd.core.replication import reported_high_watermark, respond
from kraftd.core.states import Leader, ReadAsk, ReadRound, ReadWaiter
from kwire.errors import ErrorCode

ReadOffsetRequest = m.ReadOffsetRequest
MAX_ASKS = 4  # invariant 4: ReadOffset requests a non-leader keeps in flight at once


def read_barrier(node: NodeContext) -> int:
    """Start a barrier; returns its ticket, resolved by a later ``ReadResolved`` effect."""
    st = node.reads
    ticket = st.next_ticket
    st.next_ticket += 1
    st.queued.append(ReadWaiter(ticket, node.now + node.config.request_timeout_ms))
    return ticket


def _answer(node: NodeContext, token: int, part_error: ErrorCode, hwm: int = -1) -> None:
    resp = m.read_offset_response(ErrorCode.NONE, part_error, node.leader_id(), node.epoch, hwm, node.applied)
    respond(node, token, resp)


def handle_read_offset(node: NodeContext, token: int, msg: Any) -> Any | None:
    """The leader queues the request for the next round (invariant 4); others say who leads."""
    if msg.cluster_id is not None and node.cluster_id is not None and msg.cluster_id != node.cluster_id:
        return m.read_offset_response(ErrorCode.INCONSISTENT_CLUSTER_ID, ErrorCode.NONE, -1, -1)
    if m.single_partition(msg) is None:
        return m.read_offset_response(ErrorCode.INVALID_REQUEST, ErrorCode.NONE, -1, -1)
    if not isinstance(node.data, Leader) or node.shutting_down:
        return m.read_offset_response(
            ErrorCode.NONE, ErrorCode.NOT_LEADER_OR_FOLLOWER, node.leader_id(), node.epoch
        )
    resp = answer_on_arrival(node, msg)
    if resp is not None:
        respond(node, token, resp)
        return None
    rid = msg.replica_id
    voter = rid != node.local.id and node.voters.has_id(rid)
    acks = frozenset({rid}) if voter and msg.replica_epoch == node.epoch else frozenset()  # invariant 1a
    node.reads.queued.append(ReadWaiter(token, node.now + node.config.request_timeout_ms, True, acks))
    return None


def answer_on_arrival(node: NodeContext, msg: Any) -> Any | None:
    """Invariant 7a: the answer to a voter's ReadOffset that its own epoch confirms (invariants 1a, 3), or None
    (the request then takes a step). Reads the node's state only, so the shell may call it between steps."""
    d = node.data
    rid = msg.replica_id
    if (
        not isinstance(d, Leader)
        or node.shutting_down
        or msg.replica_epoch != node.epoch
        or rid == node.local.id
        or (msg.cluster_id is not None and node.cluster_id is not None and msg.cluster_id != node.cluster_id)
        or m.single_partition(msg) is None
        or not node.voters.has_id(rid)
        or _needed(node) > 1
        or reported_high_watermark(node, d) < 0
    ):
        return None
    hwm = node.high_watermark
    return m.read_offset_response(
        ErrorCode.NONE, ErrorCode.NONE, node.leader_id(), node.epoch, hwm, node.applied
    )


def _needed(node: NodeContext) -> int:
    """Invariant 1: the acknowledgements from other voters that make a majority with the leader's own."""
    return node.voters.majority() - (1 if node.is_voter else 0)


def handle_response(node: NodeContext, source: int, request_id: int, resp: Any) -> bool:
    """A ReadOffset answer (True: consumed here) or an ack for the leader's round (returns False)."""
    st = node.reads
    ask = st.asks.pop(request_id, None)
    if ask is not None:
        part = m.single_partition(resp) if resp.error_code == ErrorCode.NONE else None
        if resp.error_code == ErrorCode.UNSUPPORTED_VERSION:  # invariant 6: a leader without ReadOffset
            node.out.extend(ReadResolved(w.ident, ErrorCode.UNSUPPORTED_VERSION) for w in ask.waiters)
        elif part is None or part.error_code != ErrorCode.NONE or part.high_watermark < 0:
            st.queued[:0] = ask.waiters  # invariant 5: ask again, after a backoff
            st.ask_not_before = node.now + node.config.retry_backoff_ms
            if part is not None and part.current_leader.leader_epoch > node.epoch:
                node.maybe_transition(part.current_leader.leader_id, part.current_leader.leader_epoch)
        else:
            st.targets.extend((part.high_watermark, w) for w in ask.waiters)
        return True
    rnd = st.round
    if rnd is not None and request_id in rnd.sent and isinstance(resp, m.BeginQuorumEpochResponse):
        part = m.single_partition(resp) if resp.error_code == ErrorCode.NONE else None
        ok = part is not None and part.error_code == ErrorCode.NONE
        if (
            ok
            and part is not None
            and part.leader_id == node.local.id
            and part.leader_epoch == rnd.epoch == node.epoch
        ):
            rnd.acked.add(rnd.sent[request_id])
        del rnd.sent[request_id]
    return False


def leave_leader(node: NodeContext) -> None:
    """The epoch ends: remote waiters hear NOT_LEADER_OR_FOLLOWER, local barriers ask the next leader."""
    st = node.reads
    waiting = st.queued + (st.round.waiters if st.round is not None else [])
    st.round = None
    st.queued = []
    for w in waiting:
        if w.remote:
            _answer(node, w.ident, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        else:
            st.queued.append(w)


def poll(node: NodeContext) -> None:
    """Run after the log was applied this step: expire, confirm, ask, resolve."""
    st = node.reads
    _expire(node)
    d = node.data
    if isinstance(d, Leader) and not node.shutting_down:
        _poll_leader(node, d)
    elif node.bugs.read_without_read_offset:
        st.targets.extend((node.applied, w) for w in st.queued)  # planted: serve what is applied
        st.queued = []
    elif st.queued and len(st.asks) < MAX_ASKS and node.now >= st.ask_not_before:
        leader = node.leader_id()
        if leader >= 0 and leader != node.local.id:
            rid = node.next_request_id()
            deadline = node.now + node.config.request_timeout_ms
            st.asks[rid] = ReadAsk(rid, leader, deadline, st.queued)
            st.queued = []
            msg = m.read_offset_request(node.cluster_id, node.local.id, node.epoch)
            node.out.append(SendRequest(leader, rid, msg))
    keep = []
    for target, w in st.targets:
        if node.applied >= target:
            node.out.append(ReadResolved(w.ident, ErrorCode.NONE))
        else:
            keep.append((target, w))
    st.targets = keep


def _poll_leader(node: NodeContext, d: Leader) -> None:
    st = node.reads
    if reported_high_watermark(node, d) < 0:  # invariant 3
        return
    others = {v.id for v in node.voters.voters if v.id != node.local.id}
    needed = _needed(node)
    bug = node.bugs.read_without_confirm

    def confirmed(w: ReadWaiter, acked: set[int]) -> bool:
        return bug or len((acked | w.acks) & others) >= needed

    _serve(node, [w for w in st.queued if confirmed(w, set())])  # invariant 1a: their request acknowledged
    st.queued = [w for w in st.queued if not confirmed(w, set())]
    rnd = st.round
    if rnd is not None:
        _serve(node, [w for w in rnd.waiters if confirmed(w, rnd.acked)])
        rnd.waiters = [w for w in rnd.waiters if not confirmed(w, rnd.acked)]
        if not rnd.waiters:
            rnd = st.round = None
    if rnd is None:
        if not st.queued:
            return
        rnd = st.round = ReadRound(node.epoch, st.queued)
        st.queued = []
    asked = set(rnd.sent.values()) | rnd.acked
    for v in node.voters.voters:
        if v.id != node.local.id and v.id not in asked and node.can_send(v.id):
            msg = m.begin_quorum_request(node.cluster_id, v, node.local.id, node.epoch)
            rnd.sent[node.send(v.id, msg)] = v.id


def _serve(node: NodeContext, waiters: list[ReadWaiter]) -> None:
    """Invariant 1: the high watermark now covers every write acknowledged before these reads arrived."""
    hwm = node.high_watermark
    for w in waiters:
        if w.remote:
            _answer(node, w.ident, ErrorCode.NONE, hwm)
        else:
            node.reads.targets.append((hwm, w))


def _expire(node: NodeContext) -> None:
    """Invariant 5 (and the ask's own request timeout)."""
    st = node.reads
    now = node.now
    for rid in [rid for rid, ask in st.asks.items() if ask.deadline <= now]:
        st.queued[:0] = st.asks.pop(rid).waiters
    code = ErrorCode.NOT_CONTROLLER if node.leader_id() < 0 else ErrorCode.REQUEST_TIMED_OUT
    groups = [st.queued, st.round.waiters if st.round is not None else []]
    groups += [ask.waiters for ask in st.asks.values()]
    for group in groups:
        for w in [w for w in group if w.deadline <= now]:
            group.remove(w)
            if w.remote:
                _answer(node, w.ident, ErrorCode.REQUEST_TIMED_OUT)
            else:
                node.out.append(ReadResolved(w.ident, code))
    late = [(t, w) for t, w in st.targets if w.deadline <= now and node.applied < t]
    for t, w in late:
        st.targets.remove((t, w))
        node.out.append(ReadResolved(w.ident, ErrorCode.REQUEST_TIMED_OUT))


def deadlines(node: NodeContext) -> list[int]:
    st = node.reads
    out = [w.deadline for w in st.queued] + [w.deadline for _, w in st.targets]
    if st.round is not None:
        out += [w.deadline for w in st.round.waiters]
    out += [ask.deadline for ask in st.asks.values()]
    if st.queued:
        out.append(st.ask_not_before)
    return out
