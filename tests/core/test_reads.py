"""Read barriers (kraftd.core.reads): read index over ReadOffset, batching, failure without stale answers."""

from __future__ import annotations

from typing import Any

from kraftd.core import BugFlags, QuorumConfig, RaftNode, Role, VoterSet
from kraftd.core import effects as fx
from kraftd.core import messages as m
from kraftd.core.events import RequestReceived, Tick
from kwire.errors import ErrorCode
from tests.core.pump import Pump, commit, three_voters

VOTERS = VoterSet.of(1, 2, 3)


def cluster(bugs: BugFlags | None = None) -> tuple[Pump, RaftNode]:
    return three_voters(QuorumConfig(bugs=bugs or BugFlags()))


def resolved(p: Pump, nid: int, ticket: int) -> list[int]:
    return [e.error for e in p.effects[nid] if isinstance(e, fx.ReadResolved) and e.ticket == ticket]


def follower_of(p: Pump, leader: RaftNode) -> RaftNode:
    return next(n for i, n in p.nodes.items() if n is not leader and i not in p.down)


def test_follower_barrier_waits_for_the_leaders_high_watermark() -> None:
    p, leader = cluster()
    last = commit(p, leader, b"x")
    f = follower_of(p, leader)
    p.down.add(next(i for i, n in p.nodes.items() if n is not leader and n is not f))
    ticket = f.read_barrier()
    p._queue.append((f.local.id, Tick(p.now)))
    p.run(p.now + 3_000, stop=lambda: bool(resolved(p, f.local.id, ticket)))
    assert resolved(p, f.local.id, ticket) == [ErrorCode.NONE]
    assert f.applied > last  # the image covers the write acknowledged before the barrier


def test_concurrent_barriers_share_one_read_offset() -> None:
    p, leader = cluster()
    f = follower_of(p, leader)
    before = sum(1 for s, _, msg in p.sent if s == f.local.id and isinstance(msg, m.ReadOffsetRequest))
    tickets = [f.read_barrier() for _ in range(5)]
    p._queue.append((f.local.id, Tick(p.now)))
    p.run(p.now + 3_000, stop=lambda: all(resolved(p, f.local.id, t) for t in tickets))
    assert all(resolved(p, f.local.id, t) == [ErrorCode.NONE] for t in tickets)
    after = sum(1 for s, _, msg in p.sent if s == f.local.id and isinstance(msg, m.ReadOffsetRequest))
    assert after - before == 1


def test_a_barrier_started_during_an_ask_sends_its_own_at_once() -> None:
    """Invariant 4 (pipelined asks): a read that misses a ReadOffset in flight is not held until that answer."""
    p, leader = cluster()
    f = follower_of(p, leader)

    def asks() -> list[Any]:
        return [msg for s, _, msg in p.sent if s == f.local.id and isinstance(msg, m.ReadOffsetRequest)]

    before = len(asks())
    first = f.read_barrier()
    p._deliver(f.local.id, Tick(p.now))  # its ask is queued for the leader, not yet delivered
    second = f.read_barrier()
    p._deliver(f.local.id, Tick(p.now))
    assert len(asks()) - before == 2
    p.run(
        p.now + 10_000, stop=lambda: bool(resolved(p, f.local.id, first) and resolved(p, f.local.id, second))
    )
    assert resolved(p, f.local.id, first) == resolved(p, f.local.id, second) == [ErrorCode.NONE]


def test_leader_confirms_with_a_majority_after_the_read() -> None:
    p, leader = cluster()
    sent_before = len(p.sent)
    ticket = leader.read_barrier()
    p._queue.append((leader.local.id, Tick(p.now)))
    p.run(p.now + 3_000, stop=lambda: bool(resolved(p, leader.local.id, ticket)))
    assert resolved(p, leader.local.id, ticket) == [ErrorCode.NONE]
    bqe = [d for s, d, msg in p.sent[sent_before:] if isinstance(msg, m.BeginQuorumEpochRequest)]
    assert bqe  # the round went out after the barrier started (invariant 1)


def _isolated_leader(bugs: BugFlags) -> tuple[Pump, RaftNode, int]:
    p, leader = cluster(bugs)
    for i in p.nodes:
        if p.nodes[i] is not leader:
            p.down.add(i)
    ticket = leader.read_barrier()
    p._queue.append((leader.local.id, Tick(p.now)))
    p.run(p.now + 10_000, stop=lambda: bool(resolved(p, leader.local.id, ticket)))
    return p, leader, ticket


def test_a_cut_off_leader_never_answers_and_times_out() -> None:
    p, leader, ticket = _isolated_leader(BugFlags())
    (err,) = resolved(p, leader.local.id, ticket)
    assert err in (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_CONTROLLER)


def test_planted_read_without_confirm_answers_from_a_cut_off_leader() -> None:
    p, leader, ticket = _isolated_leader(BugFlags(read_without_confirm=True))
    assert resolved(p, leader.local.id, ticket) == [ErrorCode.NONE]


def test_follower_without_leader_fails_after_the_request_timeout() -> None:
    p, leader = cluster()
    f = follower_of(p, leader)
    for i, n in p.nodes.items():
        if n is not f:
            p.down.add(i)
    start = p.now
    ticket = f.read_barrier()
    p._queue.append((f.local.id, Tick(p.now)))
    p.run(p.now + 10_000, stop=lambda: bool(resolved(p, f.local.id, ticket)))
    (err,) = resolved(p, f.local.id, ticket)
    assert err in (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_CONTROLLER)
    assert p.now - start >= QuorumConfig().request_timeout_ms


def test_new_leader_answers_only_after_committing_in_its_epoch() -> None:
    from tests.helpers.core import elect, node

    n = node(1)
    elect(n)
    assert n.role is Role.LEADER and n.high_watermark <= 0  # nothing of its epoch committed yet
    ticket = n.read_barrier()
    out = n.step(RequestReceived(2003, 77, m.read_offset_request("c")))
    out += n.step(Tick(2004))
    assert not [e for e in out if isinstance(e, fx.ReadResolved | fx.SendResponse)]
    assert ticket not in [e.ticket for e in out if isinstance(e, fx.ReadResolved)]


def test_a_voters_read_offset_counts_as_its_acknowledgement() -> None:
    """Invariant 1a: with 3 voters, leader + requesting follower are a majority, so no BeginQuorumEpoch round."""
    p, leader = cluster()
    f = follower_of(p, leader)
    mark = len(p.sent)
    ticket = f.read_barrier()
    p._queue.append((f.local.id, Tick(p.now)))
    p.run(p.now + 3_000, stop=lambda: bool(resolved(p, f.local.id, ticket)))
    assert resolved(p, f.local.id, ticket) == [ErrorCode.NONE]
    assert not [msg for _, _, msg in p.sent[mark:] if isinstance(msg, m.BeginQuorumEpochRequest)]
    # A client's ReadOffset (no replica) does not count: the leader runs a round before answering.
    mark = len(p.sent)
    out = leader.step(RequestReceived(p.now, 9999, m.read_offset_request("c")))
    assert not [e for e in out if isinstance(e, fx.SendResponse)]
    assert [
        e for e in out if isinstance(e, fx.SendRequest) and isinstance(e.message, m.BeginQuorumEpochRequest)
    ]


def test_a_leader_without_read_offset_resolves_at_once_as_unsupported() -> None:
    """Invariant 6 (a Kafka controller leading a mixed quorum)."""
    from kraftd.core.events import ResponseReceived

    p, leader = cluster()
    f = follower_of(p, leader)
    ticket = f.read_barrier()
    out = f.step(Tick(p.now))
    (ask,) = [e for e in out if isinstance(e, fx.SendRequest) and isinstance(e.message, m.ReadOffsetRequest)]
    resp = m.error_response(ask.message, ErrorCode.UNSUPPORTED_VERSION)
    out = f.step(ResponseReceived(p.now, ask.destination, ask.request_id, resp))
    assert [(e.ticket, e.error) for e in out if isinstance(e, fx.ReadResolved)] == [
        (ticket, ErrorCode.UNSUPPORTED_VERSION)
    ]
