"""Graceful hand-off (issue 15): a stopping leader commits its tail before it resigns, EndQuorumEpoch's backoff is
Kafka 4.3.1's, a fetch answer sent before the resignation does not delay the election, and the shutdown
completes only once another voter leads."""

from __future__ import annotations

import pytest

from kraftd.core import QuorumConfig, RaftNode, ReplicaKey, Role
from kraftd.core import effects as fx
from kraftd.core import messages as m
from kraftd.core.events import LogFlushed, RequestReceived, ResponseReceived, Shutdown, Tick
from kraftd.core.quorum_rpcs import end_epoch_backoff_ms
from kraftd.core.replication import NotLeaderError
from kraftd.core.types import ElectionState
from kwire.errors import ErrorCode
from tests.helpers.core import elect, node, sent


def _fetch(replica: int, epoch: int, offset: int, last_epoch: int) -> object:
    return m.fetch_request("c", ReplicaKey(replica), epoch, offset, last_epoch, 0, 1 << 20, 0)


def _preferred(out: list[fx.Effect]) -> list[list[int]]:
    reqs = sent(out, m.EndQuorumEpochRequest)
    return [[c.candidate_id for c in m.single_partition(r.message).preferred_candidates] for r in reqs]


def _leader_with_followers() -> RaftNode:
    """Node 1 leads epoch 1 of {1, 2, 3}; both followers hold and acknowledged the LeaderChange batch."""
    n = node()
    elect(n)
    n.step(LogFlushed(2003, n.log.end_offset))
    end = n.log.end_offset
    for f in (2, 3):
        n.step(RequestReceived(2004, 100 + f, _fetch(f, n.epoch, end, n.epoch)))
    assert n.role is Role.LEADER and n.high_watermark == end
    return n


def test_shutdown_commits_the_tail_then_names_a_follower_holding_it_first() -> None:
    """Replication invariant 8. Before it, the leader resigned at once: the accepted records failed, and
    follower 2 (tied with 3 on fetched offset, lower id) was named first although only 3 would hold them."""
    n = _leader_with_followers()
    start = n.log.end_offset
    rng = n.append([b"a", b"b"])  # accepted, still lingering
    out = n.step(Shutdown(2010))
    assert n.role is Role.LEADER and not sent(out, m.EndQuorumEpochRequest)
    assert not [e for e in out if isinstance(e, fx.AppendFailed)]
    assert any(isinstance(e, fx.AppendBatches) for e in out)  # written at once, not after the linger
    with pytest.raises(NotLeaderError):
        n.append([b"c"])
    n.step(LogFlushed(2011, n.log.end_offset))
    # Follower 3 fetches the tail (answered with it, not refused for the shutdown), then acknowledges it.
    out = n.step(RequestReceived(2012, 200, _fetch(3, n.epoch, start, n.epoch)))
    (resp,) = [e.message for e in out if isinstance(e, fx.SendResponse)]
    part = m.single_partition(resp)
    assert part.error_code == ErrorCode.NONE and part.records
    out = n.step(RequestReceived(2013, 201, _fetch(3, n.epoch, rng.last + 1, n.epoch)))
    assert n.high_watermark == n.log.end_offset == rng.last + 1
    assert n.role is Role.RESIGNED
    assert _preferred(out) == [[3, 2], [3, 2]]


def test_shutdown_resigns_at_the_drain_bound_when_nothing_commits() -> None:
    n = _leader_with_followers()
    n.append([b"a"])
    n.step(Shutdown(2010))
    out = n.step(Tick(2010 + QuorumConfig().shutdown_drain_ms - 1))
    assert n.role is Role.LEADER and not sent(out, m.EndQuorumEpochRequest)
    deadline = [e.at_ms for e in out if isinstance(e, fx.SetDeadline)]
    assert deadline == [2010 + QuorumConfig().shutdown_drain_ms]
    out = n.step(Tick(deadline[0]))
    assert n.role is Role.RESIGNED and len(sent(out, m.EndQuorumEpochRequest)) == 2


def test_shutdown_with_nothing_uncommitted_resigns_at_once() -> None:
    n = _leader_with_followers()
    out = n.step(Shutdown(2010))
    assert n.role is Role.RESIGNED and len(sent(out, m.EndQuorumEpochRequest)) == 2


def test_fetch_answer_sent_before_the_resignation_keeps_the_election_deadline() -> None:
    """Replication invariant 4a. Before it, this answer pushed the election a whole fetch timeout (2 s) away."""
    n = node(election_state=ElectionState(1, 2, None))
    out = n.step(Tick(0))
    (fetch,) = sent(out, m.FetchRequest)
    end = m.end_quorum_request("c", 2, 1, [ReplicaKey(3), ReplicaKey(1)])  # second of two: 500 ms
    n.step(RequestReceived(10, 1, end))
    ok = m.fetch_response(ErrorCode.NONE, ErrorCode.NONE, 2, 1, 0)
    n.step(ResponseReceived(20, 2, fetch.request_id, ok))
    assert n.role is Role.FOLLOWER
    n.step(Tick(10 + 500))
    assert n.role is Role.PROSPECTIVE


@pytest.mark.parametrize(
    ("named", "expected"),
    [
        ([1, 2], 0),  # first: campaign at once
        ([2, 1], 500),  # 2nd of 2: (1000 >> 1) << 0
        ([2, 3, 4, 1], 500),  # 4th of 4: (1000 >> 3) << 2
        ([2, 1, 3, 4], 125),  # 2nd of 4
        ([2, 3], 1000),  # not named: the election backoff max
        ([], 0),  # an empty list: position 0 as Kafka counts it
    ],
)
def test_end_quorum_backoff_is_kafkas_strict_exponential(named: list[int], expected: int) -> None:
    """Kafka 4.3.1's endEpochElectionBackoff (quorum_rpcs invariant 3); before, the 2nd of 2 waited 20 ms and
    a replica not named campaigned at once."""
    assert end_epoch_backoff_ms(node(), [ReplicaKey(i) for i in named]) == expected


def test_handed_over_only_once_another_voter_leads() -> None:
    """Context invariant 6 (Kafka's maybeCompleteShutdown)."""
    n = _leader_with_followers()
    assert not n.handed_over()
    n.step(Shutdown(2010))
    assert n.role is Role.RESIGNED and not n.handed_over()
    vote = m.vote_request("c", ReplicaKey(1), 2, ReplicaKey(2), m.OffsetAndEpoch(n.log.end_offset, 1), False)
    n.step(RequestReceived(2020, 300, vote))
    assert n.role is Role.UNATTACHED and n.epoch == 2 and not n.handed_over()
    n.step(RequestReceived(2030, 301, m.begin_quorum_request("c", ReplicaKey(1), 2, 2)))
    assert n.role is Role.FOLLOWER and n.handed_over()
    alone = node(voters=(1,))
    alone.step(Tick(0))
    alone.step(LogFlushed(1, alone.log.end_offset))
    assert alone.role is Role.LEADER and not alone.handed_over()  # a leader resigns first
    alone.step(Shutdown(2))
    assert alone.role is Role.RESIGNED and alone.handed_over()  # the only voter has nobody to hand over to
