"""Behaviour of one RaftNode driven directly with events (KIP-595, KIP-996)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from kraftd.core import BugFlags, QuorumConfig, RaftClient, RaftNode, ReplicaKey, Role, VoterSet
from kraftd.core import effects as fx
from kraftd.core import messages as m
from kraftd.core.batches import data_batch
from kraftd.core.events import AppendRecords, LogFlushed, RequestReceived, ResponseReceived, Shutdown, Tick
from kraftd.core.log import OffsetAndEpoch, ReplicatedLog
from kraftd.core.replication import NotLeaderError
from kraftd.core.types import ElectionState, LeaderAndEpoch
from kwire.errors import ErrorCode
from tests.helpers.core import elect, node, sent, to_prospective, vote_resp


def answer(effects: list[fx.Effect]) -> Any:
    (resp,) = [e.message for e in effects if isinstance(e, fx.SendResponse)]
    return resp


def test_single_voter_elects_itself_at_once() -> None:
    n = node(voters=(1,))
    out = n.step(Tick(0))
    assert n.role is Role.LEADER and n.epoch == 1
    assert isinstance(out[0], fx.PersistElectionState)
    assert any(isinstance(e, fx.AppendBatches) and e.batches[0].is_control for e in out)
    out = n.step(LogFlushed(1, n.log.end_offset))
    assert n.high_watermark == 1
    assert any(isinstance(e, fx.ApplyCommitted) for e in out)


def test_prospective_keeps_epoch_and_persists_nothing() -> None:
    n = node()
    out = to_prospective(n)
    assert n.role is Role.PROSPECTIVE and n.epoch == 0
    assert not [e for e in out if isinstance(e, fx.PersistElectionState)]
    reqs = sent(out, m.VoteRequest)
    assert {r.destination for r in reqs} == {2, 3}
    part = m.single_partition(reqs[0].message)
    assert part.pre_vote and part.replica_epoch == 0


def test_majority_of_prevotes_makes_a_durable_candidate() -> None:
    n = node()
    out = to_prospective(n)
    req = sent(out, m.VoteRequest)[0]
    out = n.step(ResponseReceived(2001, req.destination, req.request_id, vote_resp(True, 0)))
    assert n.role is Role.CANDIDATE and n.epoch == 1
    assert isinstance(out[0], fx.PersistElectionState)
    assert out[0].state == ElectionState(1, -1, ReplicaKey(1))
    first_send = next(i for i, e in enumerate(out) if isinstance(e, fx.SendRequest))
    assert first_send > 0  # persisted before any vote request leaves
    assert not any(m.single_partition(r.message).pre_vote for r in sent(out, m.VoteRequest))


def test_prevote_rejections_return_to_unattached_without_epoch_change() -> None:
    n = node()
    out = to_prospective(n)
    for r in sent(out, m.VoteRequest):
        n.step(ResponseReceived(2001, r.destination, r.request_id, vote_resp(False, 0)))
    assert n.role is Role.UNATTACHED and n.epoch == 0


def test_unsupported_version_for_prevote_goes_straight_to_candidate() -> None:
    n = node()
    out = to_prospective(n)
    req = sent(out, m.VoteRequest)[0]
    err = m.error_response(req.message, ErrorCode.UNSUPPORTED_VERSION)
    n.step(ResponseReceived(2001, req.destination, req.request_id, err))
    assert n.role is Role.CANDIDATE and n.epoch == 1


def test_leader_appends_leader_change_and_hwm_needs_own_epoch_and_majority_flush() -> None:
    n = node()
    out = elect(n)
    assert n.role is Role.LEADER
    assert any(isinstance(e, fx.AppendBatches) and e.batches[0].is_control for e in out)
    n.step(LogFlushed(2003, 1))
    fetch = m.fetch_request("c", ReplicaKey(2), n.epoch, 1, 1, 500, 1 << 20, 0)
    n.step(RequestReceived(2004, 1, fetch))
    assert n.high_watermark == 1


def _leader_with_old_epoch_log(bugs: BugFlags | None = None) -> RaftNode:
    log = ReplicatedLog()
    log.append(data_batch(0, 1, [b"old"], 0))  # offset 0 from epoch 1, never committed
    n = node(bugs=bugs, log=log, election_state=ElectionState(1, -1, None))
    elect(n)
    n.step(LogFlushed(2003, n.log.end_offset))
    assert n.epoch == 2 and n.log.end_offset == 2  # LeaderChange at offset 1 (epoch start)
    fetch = m.fetch_request("c", ReplicaKey(2), 2, 1, 1, 500, 1, 0)  # follower holds only offset 0
    n.step(RequestReceived(2005, 9, fetch))
    return n


def test_hwm_waits_for_a_record_of_its_own_epoch() -> None:
    assert _leader_with_old_epoch_log().high_watermark == 0


def test_planted_bug_commits_old_epoch_records() -> None:
    assert _leader_with_old_epoch_log(BugFlags(commit_old_epoch=True)).high_watermark == 1


def test_check_quorum_resigns_and_sends_end_quorum_epoch() -> None:
    n = node()
    elect(n)
    out = n.step(Tick(2002 + 3000))
    assert n.role is Role.RESIGNED and n.epoch == 1
    assert {e.destination for e in sent(out, m.EndQuorumEpochRequest)} == {2, 3}


def test_planted_bug_no_check_quorum() -> None:
    n = node(bugs=BugFlags(no_check_quorum=True))
    elect(n)
    n.step(Tick(2002 + 10_000))
    assert n.role is Role.LEADER


def _vote(n: RaftNode, cand: int, epoch: int, pre: bool = False, cluster: str | None = "c") -> Any:
    req = m.vote_request(cluster, ReplicaKey(n.local.id), epoch, ReplicaKey(cand), OffsetAndEpoch(0, 0), pre)
    return n.step(RequestReceived(0, 5, req))


def test_one_vote_per_epoch_and_durable_before_the_answer() -> None:
    n = node()
    out = _vote(n, 2, 1)
    kinds = [type(e) for e in out if not isinstance(e, fx.SetDeadline | fx.LeaderChanged)]
    # Adopting epoch 1 and voting in it is one write (effects invariant 7), durable before the answer.
    assert kinds == [fx.PersistElectionState, fx.SendResponse]
    (state,) = [e.state for e in out if isinstance(e, fx.PersistElectionState)]
    assert (state.epoch, state.leader_id, state.voted_key) == (1, -1, ReplicaKey(2))
    assert m.single_partition(answer(out)).vote_granted
    assert not m.single_partition(answer(_vote(n, 3, 1))).vote_granted
    assert m.single_partition(answer(_vote(n, 2, 1))).vote_granted  # same candidate again


def test_planted_bug_double_vote() -> None:
    n = node(bugs=BugFlags(double_vote=True))
    _vote(n, 2, 1)
    assert m.single_partition(answer(_vote(n, 3, 1))).vote_granted


@pytest.mark.parametrize(
    ("kwargs", "top", "part"),
    [
        ({"cluster": "other"}, ErrorCode.INCONSISTENT_CLUSTER_ID, None),
        ({"epoch": 0}, ErrorCode.NONE, ErrorCode.INVALID_REQUEST),  # last epoch 0 >= epoch 0
    ],
)
def test_vote_validation(kwargs: dict[str, Any], top: ErrorCode, part: ErrorCode | None) -> None:
    n = node()
    args = {"cand": 2, "epoch": 1, **kwargs}
    resp = answer(_vote(n, args["cand"], args["epoch"], cluster=args.get("cluster", "c")))
    assert resp.error_code == top
    if part is not None:
        assert m.single_partition(resp).error_code == part


def test_fenced_and_unknown_epochs_on_fetch() -> None:
    n = node()
    elect(n)
    stale = m.fetch_request("c", ReplicaKey(2), 0, 0, 0, 0, 1, 0)
    future = m.fetch_request("c", ReplicaKey(2), 7, 0, 0, 0, 1, 0)
    assert (
        m.single_partition(answer(n.step(RequestReceived(1, 1, stale)))).error_code
        == ErrorCode.FENCED_LEADER_EPOCH
    )
    assert (
        m.single_partition(answer(n.step(RequestReceived(1, 2, future)))).error_code
        == ErrorCode.UNKNOWN_LEADER_EPOCH
    )


def test_follower_reports_only_flushed_offsets() -> None:
    n = node(2)
    req = m.begin_quorum_request("c", ReplicaKey(2), 1, 1)
    out = n.step(RequestReceived(0, 1, req))
    (fetch,) = sent(out, m.FetchRequest)
    batch = data_batch(0, 1, [b"a"], 0)
    resp = m.fetch_response(ErrorCode.NONE, ErrorCode.NONE, 1, 1, 0, [batch])
    out = n.step(ResponseReceived(1, 1, fetch.request_id, resp))
    assert any(isinstance(e, fx.FlushLog) for e in out)
    assert not sent(out, m.FetchRequest)  # waits for the flush
    out = n.step(LogFlushed(2, 1))
    (nxt,) = sent(out, m.FetchRequest)
    assert m.single_partition(nxt.message).fetch_offset == 1


def test_observer_never_campaigns() -> None:
    n = node(9)
    n.step(Tick(100_000))
    assert n.role is Role.UNATTACHED


def test_client_facade() -> None:
    n = node(voters=(1,))
    client = RaftClient(n)
    seen: list[Any] = []

    class Listener:
        def handle_commit(self, batches: Any, high_watermark: int) -> None:
            seen.append(("commit", high_watermark))

        def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
            seen.append(("leader", leader))

    client.register(Listener())
    client.step(Tick(0))
    client.step(LogFlushed(0, 1))
    r = client.append([b"x", b"y"])
    assert (r.first, r.last, r.epoch) == (1, 2, 1)
    client.step(Tick(25))
    client.step(LogFlushed(26, 3))
    assert client.high_watermark == 3 > r.last
    assert ("leader", LeaderAndEpoch(1, 1)) in seen and ("commit", 3) in seen
    info = client.describe_quorum()
    assert (info.leader_id, info.leader_epoch, info.high_watermark) == (1, 1, 3)
    assert [v.replica_id for v in info.voters] == [1] and info.voters[0].log_end_offset == 3
    out = client.step(Shutdown(30))
    assert n.role is Role.RESIGNED
    with pytest.raises(NotLeaderError):
        client.append([b"z"])
    assert not [e for e in out if isinstance(e, fx.PersistElectionState)]  # resigning is memory-only


def test_append_records_event_fails_cleanly_on_follower() -> None:
    n = node(2)
    out = n.step(AppendRecords(0, (b"x",)))
    assert any(isinstance(e, fx.AppendFailed) for e in out)


def test_describe_quorum_tracks_replicas() -> None:
    n = node()
    elect(n)
    client = RaftClient(n)
    fetch = m.fetch_request("c", ReplicaKey(2), 1, 0, 0, 0, 1 << 20, 0)
    n.step(RequestReceived(2100, 3, fetch))
    obs = m.fetch_request("c", ReplicaKey(7), 1, 0, 0, 0, 1 << 20, 0)
    n.step(RequestReceived(2101, 4, obs))
    info = client.describe_quorum()
    v2 = next(v for v in info.voters if v.replica_id == 2)
    assert v2.last_fetch_timestamp == 2100 and v2.log_end_offset == 0
    assert [o.replica_id for o in info.observers] == [7]


def test_follower_prevotes_at_once_on_its_fetch_timeout_as_kafkas_do() -> None:
    """Election invariant 6 (issue 24, session 15): Kafka 4.3.1's follower becomes Prospective on its fetch
    timeout and sends its pre-votes in the same poll (KafkaRaftClient.pollFollowerAsVoter, pollProspective);
    ours waited a random 0-150 ms first (a failover at 1M partitions: 99 ms between the fetch timeout and the
    pre-votes). Invariant 7 keeps two Prospectives from splitting the vote without it."""
    n = node(election_state=ElectionState(1, 2, None))
    assert n.role is Role.FOLLOWER
    out = n.step(Tick(2000))  # the fetch timeout
    assert n.role is Role.PROSPECTIVE
    assert sorted(e.destination for e in sent(out, m.VoteRequest)) == [2, 3]


def test_follower_fetch_timeout_delays_prevotes_but_grants_meanwhile() -> None:
    """Election invariant 6 with a jitter configured: a random pre-vote delay after a fetch timeout; the usual
    grant rules meanwhile."""
    jitter = 150
    n = RaftNode(
        local=ReplicaKey(1),
        voters=VoterSet.of(1, 2, 3),
        config=QuorumConfig(prospective_jitter_ms=jitter),
        rng=random.Random(7),
        cluster_id="c",
        election_state=ElectionState(1, 2, None),
    )
    assert n.role is Role.FOLLOWER
    out = n.step(Tick(2000))  # the fetch timeout
    assert n.role is Role.PROSPECTIVE and not sent(out, m.VoteRequest)
    (deadline,) = [e.at_ms for e in out if isinstance(e, fx.SetDeadline)]
    assert 2000 < deadline < 2000 + jitter
    req = m.vote_request("c", ReplicaKey(1), 1, ReplicaKey(3), OffsetAndEpoch(0, 0), True)
    assert answer(n.step(RequestReceived(deadline - 1, 9, req))).topics[0].partitions[0].vote_granted
    out = n.step(Tick(deadline))
    assert sorted(e.destination for e in sent(out, m.VoteRequest)) == [2, 3]


def test_end_quorum_epoch_timeout_sends_prevotes_at_once() -> None:
    n = node(election_state=ElectionState(1, 2, None))
    out = n.step(RequestReceived(10, 1, m.end_quorum_request("c", 2, 1, [ReplicaKey(1)])))  # first preferred
    assert n.role is Role.PROSPECTIVE
    assert sorted(e.destination for e in sent(out, m.VoteRequest)) == [2, 3]


def test_sole_voter_leader_is_exempt_from_check_quorum() -> None:
    """Kafka's LeaderState.timeUntilCheckQuorumExpires returns Long.MAX_VALUE when the voter set has one
    voter (KafkaRaftClient.pollLeader then never resigns): nobody else can fetch, so a lone leader must not
    resign for lack of fetches. Before the fix it resigned every check-quorum timeout (~3 s)."""
    n = node(voters=(1,))
    n.step(Tick(0))
    n.step(LogFlushed(1, n.log.end_offset))
    assert n.role is Role.LEADER and n.epoch == 1
    t = 0
    for _ in range(40):  # 40 x 1 s: > 10 check-quorum timeouts
        t += 1000
        n.step(Tick(t))
        n.step(AppendRecords(t, (b"x",)))
        n.step(LogFlushed(t, n.log.end_offset))
    assert n.role is Role.LEADER and n.epoch == 1
    assert n.high_watermark == n.log.end_offset


def test_two_voter_leader_still_resigns_without_fetches() -> None:
    """The exemption is for the sole voter only: a 2-voter leader needs its peer (Kafka LeaderState)."""
    n = node(voters=(1, 2))
    out = n.step(Tick(2000))
    (pre,) = sent(out, m.VoteRequest)
    out = n.step(ResponseReceived(2001, 2, pre.request_id, vote_resp(True, n.epoch)))
    (real,) = sent(out, m.VoteRequest)
    n.step(ResponseReceived(2002, 2, real.request_id, vote_resp(True, n.epoch)))
    assert n.role is Role.LEADER
    n.step(Tick(2002 + n.config.check_quorum_timeout_ms))
    assert n.role is Role.RESIGNED


def test_fetch_that_advances_the_high_watermark_is_answered_on_the_next_step() -> None:
    """Replication invariants 2a/2b (KIP-1166): the acknowledging follower learns the new HWM without a long poll,
    on the very next step (the core asks for one at once); a follower that already knows it waits (parked) as
    before, and a sender without the field (pre-v18) too."""
    n = node()
    elect(n)
    n.step(LogFlushed(2003, 1))
    ack = m.fetch_request("c", ReplicaKey(2), n.epoch, 1, n.epoch, 500, 1 << 20, -1)
    out = n.step(RequestReceived(2004, 1, ack))
    assert not [e for e in out if isinstance(e, fx.SendResponse)]
    assert [e.at_ms for e in out if isinstance(e, fx.SetDeadline)] == [2004]  # 2b: a step at once
    resp = answer(n.step(Tick(2004)))
    assert n.high_watermark == 1 and m.single_partition(resp).high_watermark == 1
    assert not m.single_partition(resp).records
    knows = m.fetch_request("c", ReplicaKey(2), n.epoch, 1, n.epoch, 500, 1 << 20, 1)
    out = n.step(RequestReceived(2005, 2, knows))
    assert not [e for e in out if isinstance(e, fx.SendResponse)]
    assert not [e for e in n.step(Tick(2005)) if isinstance(e, fx.SendResponse)]
    legacy = m.fetch_request("c", ReplicaKey(3), n.epoch, 1, n.epoch, 500, 1 << 20, (1 << 63) - 1)
    assert not [e for e in n.step(RequestReceived(2006, 3, legacy)) if isinstance(e, fx.SendResponse)]
    assert not [e for e in n.step(Tick(2006)) if isinstance(e, fx.SendResponse)]


def test_an_append_before_the_next_step_rides_the_high_watermark_answer() -> None:
    """Replication invariant 2b: the commit's acknowledgement and the next append share one answer, so a closed
    append loop costs a follower one round trip per commit; a parked Fetch completed by a new HWM (a flush of
    the leader's own log) is coalesced the same way."""
    n = node()
    elect(n)
    n.step(LogFlushed(2003, 1))
    ack = m.fetch_request("c", ReplicaKey(2), n.epoch, 1, n.epoch, 500, 1 << 20, -1)
    n.step(RequestReceived(2004, 1, ack))
    assert n.high_watermark == 1
    rng = n.append([b"next"])
    resp = answer(n.step(Tick(2004 + n.config.append_linger_ms)))
    part = m.single_partition(resp)
    assert part.high_watermark == 1 and part.records  # the new HWM and the next record, in one answer
    assert rng.first == 1
    # Follower 2 holds offset 1 durably and parks; the leader's own flush of offset 1 then commits it.
    t = n.now
    parked = m.fetch_request("c", ReplicaKey(2), n.epoch, 2, n.epoch, 500, 1 << 20, 1)
    assert not [e for e in n.step(RequestReceived(t, 2, parked)) if isinstance(e, fx.SendResponse)]
    out = n.step(LogFlushed(t + 1, 2))
    assert n.high_watermark == 2 and not [e for e in out if isinstance(e, fx.SendResponse)]
    assert [e.at_ms for e in out if isinstance(e, fx.SetDeadline)] == [t + 1]
    (later,) = [e for e in n.step(Tick(t + 1)) if isinstance(e, fx.SendResponse)]
    assert later.token == 2 and m.single_partition(later.message).high_watermark == 2


def test_restarted_single_voter_leader_elects_itself_at_once() -> None:
    """kraftd.core.quorum_rpcs invariant 4a: a former leader restarts Resigned, but as the only voter it does not
    wait out an election timeout (Kafka 4.3.1's KafkaRaftClient.initialize goes Prospective at once)."""
    first = node(voters=(1,))
    first.step(Tick(0))
    assert first.role is Role.LEADER and first.epoch == 1
    again = node(voters=(1,), log=first.log, election_state=ElectionState(1, 1, ReplicaKey(1)))
    assert again.role is Role.RESIGNED
    again.step(Tick(1))
    assert again.role is Role.LEADER and again.epoch == 2
    three = node(voters=(1, 2, 3), election_state=ElectionState(1, 1, ReplicaKey(1)))
    three.step(Tick(1))
    assert three.role is Role.RESIGNED  # with other voters it waits for its election timeout, as before
