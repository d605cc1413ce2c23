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
    before = len(n.log.batches)
    resp = ask(n, request(voter_directory_id=uuid.UUID(int=42)))  # directory ids are not compared at v0
    assert resp.error_code == ErrorCode.NONE
    assert len(n.log.batches) == before
    assert n.voters.endpoints_of(1) == (Listener("CONTROLLER", "10.0.0.1", 9999),)


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
