"""The read path alone (kraftd.core.reads invariant 7, issue #25): a barrier's start, a voter's ReadOffset at the
leader and the answer to a follower's ask are handled without the node's full poll, and stay linearizable.
Counted, not timed: each test counts the full polls (``RaftNode.poll`` calls) an event costs."""

from __future__ import annotations

from typing import Any

from kraftd.core import RaftNode
from kraftd.core import effects as fx
from kraftd.core import messages as m
from kraftd.core.events import ReadsDue, RequestReceived, ResponseReceived
from kwire.errors import ErrorCode
from tests.core.pump import Pump, commit, three_voters


def follower_of(p: Pump, leader: RaftNode) -> RaftNode:
    return next(n for i, n in p.nodes.items() if n is not leader and i not in p.down)


def polls_of(node: RaftNode) -> list[int]:
    """Counts the node's full polls from now on: ``[n]``."""
    calls = [0]
    real = node.poll

    def poll() -> list[fx.Effect]:
        calls[0] += 1
        return real()

    node.poll = poll  # type: ignore[method-assign]
    return calls


def ask_of(out: list[fx.Effect]) -> fx.SendRequest:
    (ask,) = [e for e in out if isinstance(e, fx.SendRequest) and isinstance(e.message, m.ReadOffsetRequest)]
    return ask


def answer_of(out: list[fx.Effect], token: int) -> Any:
    (resp,) = [e.message for e in out if isinstance(e, fx.SendResponse) and e.token == token]
    return resp


def test_a_voters_read_offset_is_answered_without_a_full_poll() -> None:
    p, leader = three_voters()
    commit(p, leader, b"x")
    f = follower_of(p, leader)
    polls = polls_of(leader)
    out = leader.step(
        RequestReceived(p.now, 4242, m.read_offset_request(leader.cluster_id, f.local.id, f.epoch))
    )
    part = m.single_partition(answer_of(out, 4242))
    assert part.error_code == ErrorCode.NONE and part.high_watermark == leader.high_watermark > 0
    assert polls == [0]
    assert not leader.reads.queued  # answered on arrival: no waiter, so no timer to re-arm either


def test_a_stale_epochs_read_offset_still_waits_for_a_round() -> None:
    """Invariant 1a on the read path: a ReadOffset naming another epoch is no acknowledgement."""
    p, leader = three_voters()
    f = follower_of(p, leader)
    polls = polls_of(leader)
    msg = m.read_offset_request(leader.cluster_id, f.local.id, leader.epoch - 1)
    out = leader.step(RequestReceived(p.now, 4243, msg))
    assert not [e for e in out if isinstance(e, fx.SendResponse)]
    assert [
        e for e in out if isinstance(e, fx.SendRequest) and isinstance(e.message, m.BeginQuorumEpochRequest)
    ]
    assert polls == [0]


def test_a_follower_barrier_asks_and_resolves_without_a_full_poll() -> None:
    p, leader = three_voters()
    last = commit(p, leader, b"x")
    f = follower_of(p, leader)
    p.run(p.now + 1_000, stop=lambda: f.applied > last)
    polls = polls_of(f)
    ticket = f.read_barrier()
    ask = ask_of(f.step(ReadsDue(p.now)))
    assert ask.destination == leader.local.id and ask.message.replica_epoch == f.epoch
    out = leader.step(RequestReceived(p.now, 7, ask.message))
    out = f.step(ResponseReceived(p.now, ask.destination, ask.request_id, answer_of(out, 7)))
    assert [(e.ticket, e.error) for e in out if isinstance(e, fx.ReadResolved)] == [(ticket, ErrorCode.NONE)]
    assert polls == [0]


def test_an_answer_naming_a_newer_epoch_takes_the_full_poll() -> None:
    p, leader = three_voters()
    f = follower_of(p, leader)
    polls = polls_of(f)
    f.read_barrier()
    ask = ask_of(f.step(ReadsDue(p.now)))
    newer = m.read_offset_response(
        ErrorCode.NONE, ErrorCode.FENCED_LEADER_EPOCH, leader.local.id, f.epoch + 1
    )
    f.step(ResponseReceived(p.now, ask.destination, ask.request_id, newer))
    assert f.epoch == leader.epoch + 1 and polls == [1]
    assert f.reads.queued  # invariant 5: the barrier asks again, never served stale


def test_other_events_still_take_the_full_poll() -> None:
    p, leader = three_voters()
    f = follower_of(p, leader)
    polls = polls_of(f)
    f.step(ResponseReceived(p.now, leader.local.id, 10**9, m.read_offset_response(ErrorCode.NONE, 0, 1, 1)))
    f.step(RequestReceived(p.now, 5, m.begin_quorum_request(f.cluster_id, f.voters.voters[0], 1, f.epoch)))
    assert polls == [2]


def test_the_leaders_confirmation_round_resolves_without_a_full_poll() -> None:
    p, leader = three_voters()
    polls = polls_of(leader)
    ticket = leader.read_barrier()
    out = leader.step(ReadsDue(p.now))
    sent = [e for e in out if isinstance(e, fx.SendRequest)]
    assert sent and all(isinstance(e.message, m.BeginQuorumEpochRequest) for e in sent)
    resolved_by: list[Any] = []
    for e in sent:
        peer = p.nodes[e.destination]
        answer = answer_of(peer.step(RequestReceived(p.now, 11, e.message)), 11)
        got = leader.step(ResponseReceived(p.now, e.destination, e.request_id, answer))
        resolved_by += [x.error for x in got if isinstance(x, fx.ReadResolved) and x.ticket == ticket]
    assert resolved_by == [ErrorCode.NONE]  # the first voter's ack made the majority (invariant 1)
    assert polls == [0] and not leader.inflight  # the round's requests left the in-flight table as before


def test_the_answer_between_steps_is_the_one_the_step_sends() -> None:
    """Invariant 7a: ``read_offset_answer`` changes nothing and answers only what the step answers on arrival."""
    p, leader = three_voters()
    f = follower_of(p, leader)
    stale = m.read_offset_request(leader.cluster_id, f.local.id, leader.epoch - 1)
    fresh = m.read_offset_request(leader.cluster_id, f.local.id, f.epoch)
    assert leader.read_offset_answer(stale) is None  # no acknowledgement: it needs a round
    assert f.read_offset_answer(fresh) is None  # not the leader
    commit(p, leader, b"x")
    steps = leader.steps
    now = leader.read_offset_answer(fresh)
    assert leader.steps == steps and not leader.reads.queued
    stepped = answer_of(leader.step(RequestReceived(p.now, 4244, fresh)), 4244)
    assert now == stepped and m.single_partition(now).high_watermark == leader.high_watermark > 0
