"""UpdateRaftVoter v0 (KIP-853) on the leader: every precondition and error in Kafka's order, the Voters record
at kraft.version 1, in-memory listeners at kraft.version 0."""

from __future__ import annotations

import random
import uuid
from typing import Any

import generated.update_raft_voter_request as UREQ
from kraftd.core import QuorumConfig, RaftNode, ReplicaKey, VoterSet
from kraftd.core import effects as fx
from kraftd.core.events import LogFlushed, RequestReceived, Tick
from kraftd.core.types import Listener
from kraftd.core.voters import control_entries
from kwire.control import ControlRecordType as CT
from kwire.errors import ErrorCode

D1 = uuid.UUID(int=1)
ONE = VoterSet((ReplicaKey(1, D1),), ((1, (Listener("CONTROLLER", "127.0.0.1", 9001),)),))


def leader(kraft_version: int = 1, commit: bool = True) -> RaftNode:
    n = RaftNode(
        local=ReplicaKey(1, D1),
        voters=ONE,
        config=QuorumConfig(),
        rng=random.Random(1),
        cluster_id="c",
        kraft_version=kraft_version,
    )
    n.step(Tick(0))
    if commit:
        n.step(LogFlushed(1, n.log.end_offset))
    return n


def request(epoch: int = 1, **kw: Any) -> Any:
    fields: dict[str, Any] = {
        "cluster_id": "c",
        "current_leader_epoch": epoch,
        "voter_id": 1,
        "voter_directory_id": D1,
        "listeners": [UREQ.Listener(name="CONTROLLER", host="10.0.0.1", port=9999)],
        "kraft_version_feature": UREQ.KRaftVersionFeature(0, 1),
    }
    fields.update(kw)
    return UREQ.UpdateRaftVoterRequest(**fields)


def ask(n: RaftNode, req: Any) -> Any:
    (resp,) = [e.message for e in n.step(RequestReceived(n.now, 7, req)) if isinstance(e, fx.SendResponse)]
    return resp


def test_success_at_kraft_version_1_appends_a_voters_record_and_answers_at_once() -> None:
    n = leader()
    end = n.log.end_offset
    resp = ask(n, request())
    assert resp.error_code == ErrorCode.NONE
    assert (resp.current_leader.leader_id, resp.current_leader.leader_epoch) == (1, 1)
    assert (resp.current_leader.host, resp.current_leader.port) == ("127.0.0.1", 9001)
    (batch,) = n.log.batches[-1:]
    assert batch.base_offset == end and [k for _, k, _ in control_entries(batch)] == [CT.KRAFT_VOTERS]
    assert n.voters.endpoints_of(1) == (Listener("CONTROLLER", "10.0.0.1", 9999),)
    assert n.voter_history.has_uncommitted(n.high_watermark)
    # A second change while that one is uncommitted: at most one uncommitted voter set.
    assert ask(n, request()).error_code == ErrorCode.REQUEST_TIMED_OUT
    n.step(LogFlushed(2, n.log.end_offset))
    assert ask(n, request()).error_code == ErrorCode.NONE


def test_errors_in_kafkas_order() -> None:
    n = leader()
    assert ask(n, request(cluster_id="other")).error_code == ErrorCode.INCONSISTENT_CLUSTER_ID
    assert ask(n, request(epoch=0)).error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert ask(n, request(epoch=2)).error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert ask(n, request(voter_directory_id=uuid.UUID(int=0))).error_code == ErrorCode.INVALID_REQUEST
    assert ask(n, request(listeners=[])).error_code == ErrorCode.INVALID_REQUEST
    feature = UREQ.KRaftVersionFeature(0, 0)
    assert ask(n, request(kraft_version_feature=feature)).error_code == ErrorCode.INVALID_REQUEST
    other = [UREQ.Listener(name="OTHER", host="h", port=1)]
    assert ask(n, request(listeners=other)).error_code == ErrorCode.INVALID_REQUEST
    assert ask(n, request(voter_id=5)).error_code == ErrorCode.VOTER_NOT_FOUND
    wrong_dir = request(voter_directory_id=uuid.UUID(int=9))
    assert ask(n, wrong_dir).error_code == ErrorCode.VOTER_NOT_FOUND


def test_no_change_before_the_leader_commits_in_its_own_epoch() -> None:
    n = leader(commit=False)
    assert n.high_watermark == 0
    assert ask(n, request()).error_code == ErrorCode.REQUEST_TIMED_OUT


def test_kraft_version_0_remembers_the_listeners_without_a_record() -> None:
    n = leader(kraft_version=0)
    static = n.voters.endpoints_of(1)
    before = len(n.log.batches)
    resp = ask(n, request(voter_directory_id=uuid.UUID(int=42)))  # directory ids are not compared at v0
    assert resp.error_code == ErrorCode.NONE
    assert len(n.log.batches) == before
    # The configured endpoints stay the ones dialled (a chaos run's proxy ports were bypassed when the
    # advertised listener replaced them); the advertised ones wait in the volatile voters for an upgrade.
    assert n.voters.endpoints_of(1) == static
    assert n.volatile_voters[1][1] == (Listener("CONTROLLER", "10.0.0.1", 9999),)


def test_a_follower_answers_not_leader() -> None:
    n = RaftNode(
        local=ReplicaKey(2),
        voters=VoterSet.of(1, 2, 3),
        config=QuorumConfig(),
        rng=random.Random(1),
        cluster_id="c",
    )
    n.step(Tick(0))
    assert ask(n, request(epoch=0)).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


# ----- RemoveRaftVoter v0 -----
D2, D3 = uuid.UUID(int=2), uuid.UUID(int=3)
THREE = VoterSet((ReplicaKey(1, D1), ReplicaKey(2, D2), ReplicaKey(3, D3)))


def three_leader(local: int = 1) -> RaftNode:
    """Node ``local`` leads voters 1-3 (kraft.version 1) with its epoch committed."""
    from kraftd.core import messages as m
    from kraftd.core.events import ResponseReceived

    key = THREE.voters[local - 1]
    n = RaftNode(
        local=key, voters=THREE, config=QuorumConfig(), rng=random.Random(1), cluster_id="c", kraft_version=1
    )
    out = n.step(Tick(2000))
    peer = next(k for k in THREE.voters if k != key)
    pre = next(e for e in out if isinstance(e, fx.SendRequest) and e.destination == peer.id)
    out = n.step(
        ResponseReceived(
            2001, peer.id, pre.request_id, m.vote_response(ErrorCode.NONE, ErrorCode.NONE, -1, 0, True)
        )
    )
    real = next(e for e in out if isinstance(e, fx.SendRequest) and e.destination == peer.id)
    n.step(
        ResponseReceived(
            2002, peer.id, real.request_id, m.vote_response(ErrorCode.NONE, ErrorCode.NONE, -1, 1, True)
        )
    )
    assert n.data.__class__.__name__ == "Leader"
    n.step(LogFlushed(2003, n.log.end_offset))
    fetch(n, peer, n.log.end_offset)
    assert n.high_watermark == n.log.end_offset
    return n


def fetch(n: RaftNode, who: ReplicaKey, offset: int) -> list[fx.Effect]:
    from kraftd.core import messages as m

    req = m.fetch_request(
        "c", who, n.epoch, offset, n.log.last_epoch if offset == n.log.end_offset else 1, 0, 1 << 20, 0
    )
    return n.step(RequestReceived(n.now + 1, 100 + who.id, req))


def remove(n: RaftNode, key: ReplicaKey, token: int = 9, **kw: Any) -> list[fx.Effect]:
    import generated.remove_raft_voter_request as RREQ

    fields: dict[str, Any] = {"cluster_id": "c", "voter_id": key.id, "voter_directory_id": key.directory_id}
    fields.update(kw)
    return n.step(RequestReceived(n.now + 1, token, RREQ.RemoveRaftVoterRequest(**fields)))


def answer_to(out: list[fx.Effect], token: int) -> Any:
    found = [e.message for e in out if isinstance(e, fx.SendResponse) and e.token == token]
    return found[0] if found else None


def test_remove_voter_waits_for_the_commit_by_the_new_majority() -> None:
    n = three_leader()
    out = remove(n, THREE.voters[2])
    assert answer_to(out, 9) is None  # waits for the commit
    assert n.voters.ids == (1, 2)  # in force at once
    assert answer_to(remove(n, THREE.voters[1], token=10), 10).error_code == ErrorCode.REQUEST_TIMED_OUT
    out = n.step(LogFlushed(n.now + 1, n.log.end_offset))
    assert answer_to(out, 9) is None  # the leader alone is not a majority of {1, 2}
    out = fetch(n, THREE.voters[1], n.log.end_offset)
    assert answer_to(out, 9).error_code == ErrorCode.NONE
    assert not n.voter_history.has_uncommitted(n.high_watermark)


def test_remove_voter_errors() -> None:
    n = three_leader()
    assert (
        answer_to(remove(n, THREE.voters[2], cluster_id="x"), 9).error_code
        == ErrorCode.INCONSISTENT_CLUSTER_ID
    )
    no_dir = answer_to(remove(n, THREE.voters[2], voter_directory_id=uuid.UUID(int=0)), 9)
    assert (no_dir.error_code, no_dir.error_message) == (
        ErrorCode.INVALID_REQUEST,
        "Remove voter request didn't include a valid voter",  # Kafka 4.3.1's words
    )
    unknown = answer_to(remove(n, ReplicaKey(3, uuid.UUID(int=77))), 9)
    assert unknown.error_code == ErrorCode.VOTER_NOT_FOUND
    assert unknown.error_message is not None
    assert unknown.error_message.startswith(
        "Cannot remove voter ReplicaKey(id=3, directoryId=AAAAAAAAAAAAAAAAAAAATQ) from the set of voters "
        "[ReplicaKey(id=1, directoryId="
    ), unknown.error_message
    v0 = leader(kraft_version=0)
    assert answer_to(remove(v0, ReplicaKey(1, D1)), 9).error_code == ErrorCode.UNSUPPORTED_VERSION
    lone = leader()
    assert (
        answer_to(remove(lone, ReplicaKey(1, D1)), 9).error_code == ErrorCode.VOTER_NOT_FOUND
    )  # the last voter
    uncommitted = leader(commit=False)
    assert answer_to(remove(uncommitted, ReplicaKey(1, D1)), 9).error_code == ErrorCode.REQUEST_TIMED_OUT


def test_remove_voter_times_out_without_a_majority() -> None:
    n = three_leader()
    remove(n, THREE.voters[2])
    out = n.step(Tick(n.now + QuorumConfig().request_timeout_ms + 1))
    resp = answer_to(out, 9)
    assert resp is not None and resp.error_code in (
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
    )


def test_a_leader_that_removes_itself_keeps_serving_without_counting_itself_then_resigns() -> None:
    n = three_leader()
    remove(n, THREE.voters[0])  # the leader itself (KAFKA-16530)
    assert not n.is_voter and n.role.value == "leader"
    out = n.step(LogFlushed(n.now + 1, n.log.end_offset))
    assert answer_to(out, 9) is None
    out = fetch(n, THREE.voters[1], n.log.end_offset)  # one of {2, 3}: no majority without the leader
    assert answer_to(out, 9) is None
    out = fetch(n, THREE.voters[2], n.log.end_offset)  # now 2 of {2, 3}
    assert answer_to(out, 9).error_code == ErrorCode.NONE
    assert n.role.value == "resigned"  # then it steps down
    end_quorum = [
        e
        for e in out
        if isinstance(e, fx.SendRequest) and type(e.message).__name__ == "EndQuorumEpochRequest"
    ]
    assert {e.destination for e in end_quorum} == {2, 3}


def test_a_set_shrunk_to_one_keeps_its_leader_past_check_quorum() -> None:
    n = three_leader()
    remove(n, THREE.voters[2])
    n.step(LogFlushed(n.now + 1, n.log.end_offset))
    fetch(n, THREE.voters[1], n.log.end_offset)
    remove(n, THREE.voters[1], token=11)
    out = n.step(LogFlushed(n.now + 1, n.log.end_offset))  # {1} alone is the new majority
    assert answer_to(out, 11).error_code == ErrorCode.NONE and n.voters.ids == (1,)
    n.step(Tick(n.now + 10 * QuorumConfig().check_quorum_timeout_ms))
    assert n.role.value == "leader"  # a one-voter set is exempt from check-quorum
