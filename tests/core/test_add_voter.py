"""AddRaftVoter v0-1 on the leader (KIP-853, KIP-1186): preconditions in Kafka's order, the ApiVersions probe,
the caught-up check, commit by the new majority, AckWhenCommitted, and auto-join (KAFKA-19850)."""

from __future__ import annotations

import random
import uuid
from typing import Any

import generated.add_raft_voter_request as AREQ
import generated.api_versions_response as AVRESP
import generated.remove_raft_voter_request as RREQ
from generated.add_raft_voter_response import AddRaftVoterResponse
from kraftd.core import QuorumConfig, RaftNode, ReplicaKey
from kraftd.core import effects as fx
from kraftd.core import messages as m
from kraftd.core.events import LogFlushed, RequestReceived, ResponseReceived, Tick
from kraftd.core.states import Follower
from kraftd.core.types import Listener
from kwire.errors import ErrorCode
from tests.helpers.core import D1, D2, D3, K2, ONE, add_request, ask, caught_up, fetch, leader, responses


def versions(lo: int = 0, hi: int = 1, error: ErrorCode = ErrorCode.NONE) -> Any:
    feats = [AVRESP.SupportedFeatureKey(name="kraft.version", min_version=lo, max_version=hi)]
    return AVRESP.ApiVersionsResponse(error_code=int(error), supported_features=feats)


def test_add_probes_then_appends_and_answers_only_when_the_new_majority_commits() -> None:
    n = leader()
    caught_up(n)
    (), (probe,) = ask(n, add_request())
    assert probe.destination == 2 and type(probe.message).__name__ == "ApiVersionsRequest"
    assert probe.message.client_software_name  # Kafka refuses an empty software name at v3+
    assert n.probe_endpoints[2] == (Listener("CONTROLLER", "127.0.0.1", 9002),)
    end = n.log.end_offset
    out = n.step(ResponseReceived(n.now + 1, 2, probe.request_id, versions()))
    assert responses(out) == []
    assert n.voters.ids == (1, 2) and n.log.end_offset == end + 1  # in force at once, uncommitted
    assert 2 not in n.probe_endpoints
    n.step(LogFlushed(n.now + 1, n.log.end_offset))
    assert n.high_watermark == end  # the leader alone is no majority of {1, 2}
    out = fetch(n, ReplicaKey(2, D2), n.log.end_offset, n.now + 1)
    assert n.high_watermark == end + 1
    assert [r.error_code for r in responses(out)] == [ErrorCode.NONE]
    assert n.data.voter_change is None  # type: ignore[union-attr]


def test_ack_when_committed_false_answers_at_the_append_and_keeps_the_slot_until_the_commit() -> None:
    n = leader()
    caught_up(n)
    (), (probe,) = ask(n, add_request(ack=False))
    out = n.step(ResponseReceived(n.now + 1, 2, probe.request_id, versions()))
    assert [r.error_code for r in responses(out)] == [ErrorCode.NONE]
    got, _ = ask(n, add_request(3, D3))
    assert [r.error_code for r in got] == [ErrorCode.REQUEST_TIMED_OUT]  # one change at a time


def test_errors_before_the_probe_in_kafkas_order() -> None:
    n = leader(kraft_version=0)
    got, _ = ask(n, add_request())
    assert [r.error_code for r in got] == [ErrorCode.UNSUPPORTED_VERSION]
    n = leader()
    cases = [
        (add_request(cluster_id="other"), ErrorCode.INCONSISTENT_CLUSTER_ID),
        (add_request(voter_directory_id=uuid.UUID(int=0)), ErrorCode.INVALID_REQUEST),
        (add_request(listeners=[AREQ.Listener("OTHER", "h", 1)]), ErrorCode.INVALID_REQUEST),
        (add_request(1, D3), ErrorCode.DUPLICATE_VOTER),
    ]
    for req, code in cases:
        got, sent = ask(n, req)
        assert [r.error_code for r in got] == [code] and sent == []


def test_a_follower_answers_not_leader() -> None:
    n = RaftNode(
        local=ReplicaKey(2, D2), voters=ONE, config=QuorumConfig(), rng=random.Random(1), kraft_version=1
    )
    got, _ = ask(n, add_request(3, D3))
    assert [r.error_code for r in got] == [ErrorCode.NOT_LEADER_OR_FOLLOWER]


def test_probe_outcomes_are_kafkas_errors() -> None:
    for resp, fetched, code in [
        (versions(error=ErrorCode.BROKER_NOT_AVAILABLE), True, ErrorCode.REQUEST_TIMED_OUT),
        (versions(0, 0), True, ErrorCode.INVALID_REQUEST),
        (AVRESP.ApiVersionsResponse(), True, ErrorCode.INVALID_REQUEST),  # no kraft.version feature at all
        (versions(), False, ErrorCode.REQUEST_TIMED_OUT),  # never fetched: not caught up
    ]:
        n = leader()
        if fetched:
            caught_up(n)
        end = n.log.end_offset
        (), (probe,) = ask(n, add_request())
        out = n.step(ResponseReceived(n.now + 1, 2, probe.request_id, resp))
        assert [r.error_code for r in responses(out)] == [code]
        assert n.log.end_offset == end and n.voters.ids == (1,)


def test_a_lagging_observer_is_not_caught_up() -> None:
    n = leader()
    fetch(n, ReplicaKey(2, D2), 0, 1)  # far behind the leader's end
    (), (probe,) = ask(n, add_request())
    out = n.step(ResponseReceived(n.now + 1, 2, probe.request_id, versions()))
    assert [r.error_code for r in responses(out)] == [ErrorCode.REQUEST_TIMED_OUT]


def test_no_probe_answer_times_out_after_the_requests_timeout() -> None:
    n = leader()
    caught_up(n)
    (), (probe,) = ask(n, add_request(timeout_ms=500))
    assert responses(n.step(Tick(n.now + 499))) == []
    out = n.step(Tick(n.now + 2))
    assert [r.error_code for r in responses(out)] == [ErrorCode.REQUEST_TIMED_OUT]
    assert n.data.voter_change is None and n.probe_endpoints == {}  # type: ignore[union-attr]


def test_an_uncommitted_add_times_out_when_the_new_voter_never_fetches() -> None:
    n = leader()
    caught_up(n)
    (), (probe,) = ask(n, add_request(timeout_ms=1000))
    n.step(ResponseReceived(n.now + 1, 2, probe.request_id, versions()))
    n.step(LogFlushed(n.now, n.log.end_offset))
    out = n.step(Tick(n.now + 1000))
    assert [r.error_code for r in responses(out)] == [ErrorCode.REQUEST_TIMED_OUT]


def test_auto_join_of_a_key_that_was_a_voter_is_invalid_voter_key_but_an_operator_may_re_add() -> None:
    n = leader()
    caught_up(n)
    (), (probe,) = ask(n, add_request())
    n.step(ResponseReceived(n.now + 1, 2, probe.request_id, versions()))
    n.step(LogFlushed(n.now, n.log.end_offset))
    fetch(n, ReplicaKey(2, D2), n.log.end_offset, n.now + 1)
    assert n.voters.ids == (1, 2) and not n.voter_history.has_uncommitted(n.high_watermark)
    remove = RREQ.RemoveRaftVoterRequest(cluster_id="c", voter_id=2, voter_directory_id=D2)
    n.step(RequestReceived(n.now, 8, remove))
    n.step(LogFlushed(n.now, n.log.end_offset))
    fetch(n, ReplicaKey(2, D2), n.log.end_offset, n.now + 1)
    assert n.voters.ids == (1,) and not n.voter_history.has_uncommitted(n.high_watermark)
    got, sent = ask(n, add_request(ack=False))
    assert [r.error_code for r in got] == [ErrorCode.INVALID_VOTER_KEY] and sent == []
    got, (probe,) = ask(n, add_request(ack=True))  # the operator's add-controller still works
    assert got == [] and probe.destination == 2


def observer(auto_join: bool = True) -> RaftNode:
    cfg = QuorumConfig(auto_join=auto_join, local_listeners=(Listener("CONTROLLER", "127.0.0.1", 9002),))
    n = RaftNode(
        local=ReplicaKey(2, D2), voters=ONE, config=cfg, rng=random.Random(1), cluster_id="c", kraft_version=1
    )
    n.step(Tick(0))
    n.to_follower(1, 1)
    d = n.data
    assert isinstance(d, Follower)
    d.has_fetched = True
    return n


def test_an_observer_auto_joins_once_beside_its_fetch_and_stops_on_invalid_voter_key() -> None:
    n = observer()
    out = n.step(Tick(10))
    joins = [
        e for e in out if isinstance(e, fx.SendRequest) and isinstance(e.message, AREQ.AddRaftVoterRequest)
    ]
    fetches = [e for e in out if isinstance(e, fx.SendRequest) and isinstance(e.message, m.FetchRequest)]
    assert len(joins) == 1 and len(fetches) == 1  # the join never holds the fetch back
    req = joins[0].message
    assert (req.voter_id, req.voter_directory_id, req.ack_when_committed) == (2, D2, False)
    assert [(x.name, x.port) for x in req.listeners] == [("CONTROLLER", 9002)]
    n.step(
        ResponseReceived(
            20, 1, joins[0].request_id, AddRaftVoterResponse(error_code=ErrorCode.INVALID_VOTER_KEY)
        )
    )
    out = n.step(Tick(100_000))
    assert not [
        e for e in out if isinstance(e, fx.SendRequest) and isinstance(e.message, AREQ.AddRaftVoterRequest)
    ]


def test_an_observer_whose_id_is_a_voter_under_another_directory_removes_the_stale_key_first() -> None:
    cfg = QuorumConfig(auto_join=True, local_listeners=(Listener("CONTROLLER", "127.0.0.1", 9001),))
    n = RaftNode(
        local=ReplicaKey(1, D3), voters=ONE, config=cfg, rng=random.Random(1), cluster_id="c", kraft_version=1
    )
    n.to_follower(1, 2)
    d = n.data
    assert isinstance(d, Follower)
    d.has_fetched = True
    out = n.step(Tick(10))
    (rm,) = [
        e.message
        for e in out
        if isinstance(e, fx.SendRequest) and isinstance(e.message, RREQ.RemoveRaftVoterRequest)
    ]
    assert (rm.voter_id, rm.voter_directory_id) == (1, D1)


def test_without_auto_join_an_observer_never_asks() -> None:
    n = observer(auto_join=False)
    out = n.step(Tick(10))
    assert not [e for e in out if isinstance(e, fx.SendRequest) and not isinstance(e.message, m.FetchRequest)]


def test_an_observer_reusing_a_voters_id_under_a_new_directory_never_counts_for_the_high_watermark() -> None:
    n = leader()
    caught_up(n)
    (), (probe,) = ask(n, add_request())
    n.step(ResponseReceived(n.now + 1, 2, probe.request_id, versions()))
    n.step(LogFlushed(n.now, n.log.end_offset))
    fetch(n, K2, n.log.end_offset, n.now + 1)
    assert n.voters.ids == (1, 2) and not n.voter_history.has_uncommitted(n.high_watermark)
    n.append([b"x"])
    n.step(Tick(n.now + 100))  # past the linger
    n.step(LogFlushed(n.now, n.log.end_offset))
    start = n.high_watermark
    assert n.log.end_offset > start
    fetch(n, ReplicaKey(2, D3), n.log.end_offset, n.now + 1)  # voter 2's replaced disk: not a voter
    n.step(LogFlushed(n.now, n.log.end_offset))  # the leader recomputes its HWM
    assert n.high_watermark == start
    fetch(n, K2, n.log.end_offset, n.now + 1)  # the voter's own key
    assert n.high_watermark == n.log.end_offset


def test_a_long_alone_leader_keeps_leading_once_a_second_voter_is_added() -> None:
    """Found against a Kafka observer: the check-quorum deadline of a one-voter leader had long passed, so the
    leader resigned the moment its Voters record made it one of two."""
    n = leader()
    n.step(Tick(60_000))  # a minute alone
    caught_up(n)
    (), (probe,) = ask(n, add_request())
    n.step(ResponseReceived(n.now + 1, 2, probe.request_id, versions()))
    assert n.voters.ids == (1, 2)
    n.step(Tick(n.now + 10))
    assert n.role.value == "leader"


def test_a_leader_that_removed_itself_and_crashed_before_the_commit_restarts_resigned_as_kafka_does() -> None:
    """Kafka's QuorumState.initialize: a former leader starts Resigned in its epoch whatever the voter set says.
    The uncommitted Voters record without it is the set in force, so it is an observer: it asks the remaining
    voters to elect (EndQuorumEpoch) and, after the election timeout, waits unattached in the next epoch."""
    n = leader()
    caught_up(n)
    (), (probe,) = ask(n, add_request())
    n.step(ResponseReceived(n.now + 1, 2, probe.request_id, versions()))
    n.step(LogFlushed(n.now, n.log.end_offset))
    fetch(n, K2, n.log.end_offset, n.now + 1)
    remove = RREQ.RemoveRaftVoterRequest(cluster_id="c", voter_id=1, voter_directory_id=D1)
    n.step(RequestReceived(n.now, 8, remove))
    n.step(LogFlushed(n.now, n.log.end_offset))
    assert n.voters.ids == (2,) and n.voter_history.has_uncommitted(n.high_watermark)
    again = RaftNode(
        local=ReplicaKey(1, D1),
        voters=ONE,
        config=QuorumConfig(),
        rng=random.Random(2),
        cluster_id="c",
        kraft_version=1,
        log=n.log,
        election_state=n.election,
        now_ms=n.now,
    )
    assert again.role.value == "resigned" and again.epoch == n.epoch and not again.is_voter
    out = again.step(Tick(again.now))
    sent = [e for e in out if isinstance(e, fx.SendRequest)]
    assert [(e.destination, type(e.message).__name__) for e in sent] == [(2, "EndQuorumEpochRequest")]
    again.step(Tick(again.now + 5000))
    assert (again.role.value, again.epoch) == ("unattached", n.epoch + 1)
