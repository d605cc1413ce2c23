"""Helpers shared by the Raft core tests: a node, elections, voter sets and voter-change requests."""

from __future__ import annotations

import random
import uuid
from typing import Any

import generated.add_raft_voter_request as AREQ
from kraftd.core import BugFlags, QuorumConfig, RaftNode, ReplicaKey, VoterSet
from kraftd.core import effects as fx
from kraftd.core import messages as m
from kraftd.core.events import LogFlushed, RequestReceived, ResponseReceived, Tick
from kraftd.core.types import Listener
from kwire.errors import ErrorCode

# ---- first written for tests/core/test_add_voter.py --------------------------------------------------------
D1, D2, D3 = (uuid.UUID(int=i) for i in (21, 22, 23))
L1 = (Listener("CONTROLLER", "127.0.0.1", 9001),)
ONE = VoterSet((ReplicaKey(1, D1),), ((1, L1),))


def leader(kraft_version: int = 1, config: QuorumConfig | None = None) -> RaftNode:
    """Node 1, the only voter, elected and with its log flushed: the leader, its high watermark at its log end."""
    n = RaftNode(
        local=ReplicaKey(1, D1),
        voters=ONE,
        config=config or QuorumConfig(),
        rng=random.Random(1),
        cluster_id="c",
        kraft_version=kraft_version,
    )
    n.step(Tick(0))
    n.step(LogFlushed(1, n.log.end_offset))
    assert n.high_watermark == n.log.end_offset
    return n


def fetch(n: RaftNode, key: ReplicaKey, offset: int, now: int) -> list[fx.Effect]:
    req = m.fetch_request("c", key, n.epoch, offset, n.log.last_epoch if offset else 0, 0, 1 << 20, 0)
    return n.step(RequestReceived(now, 100 + key.id, req))


def add_request(voter: int = 2, d: uuid.UUID = D2, ack: bool = True, **kw: Any) -> Any:
    fields: dict[str, Any] = {
        "cluster_id": "c",
        "timeout_ms": 30000,
        "voter_id": voter,
        "voter_directory_id": d,
        "listeners": [AREQ.Listener("CONTROLLER", "127.0.0.1", 9000 + voter)],
        "ack_when_committed": ack,
    }
    fields.update(kw)
    return AREQ.AddRaftVoterRequest(**fields)


def responses(out: list[fx.Effect], token: int = 7) -> list[Any]:
    return [e.message for e in out if isinstance(e, fx.SendResponse) and e.token == token]


def ask(n: RaftNode, req: Any, now: int | None = None) -> tuple[list[Any], list[fx.SendRequest]]:
    out = n.step(RequestReceived(n.now if now is None else now, 7, req))
    return responses(out), [e for e in out if isinstance(e, fx.SendRequest)]


K2 = ReplicaKey(2, D2)


def caught_up(n: RaftNode, key: ReplicaKey = K2) -> None:
    fetch(n, key, n.log.end_offset, n.now + 1)


# ---- first written for tests/core/test_node.py -------------------------------------------------------------
def node(
    nid: int = 1, voters: tuple[int, ...] = (1, 2, 3), bugs: BugFlags | None = None, **kw: Any
) -> RaftNode:
    return RaftNode(
        local=ReplicaKey(nid),
        voters=VoterSet.of(*voters),
        config=QuorumConfig(bugs=bugs or BugFlags()),
        rng=random.Random(7),
        cluster_id="c",
        **kw,
    )


def sent(effects: list[fx.Effect], cls: type) -> list[fx.SendRequest]:
    return [e for e in effects if isinstance(e, fx.SendRequest) and isinstance(e.message, cls)]


def to_prospective(n: RaftNode) -> list[fx.Effect]:
    return n.step(Tick(2000))  # past any randomized election timeout in [1000, 2000)


def vote_resp(granted: bool, epoch: int, leader: int = -1, error: ErrorCode = ErrorCode.NONE) -> Any:
    return m.vote_response(error, ErrorCode.NONE, leader, epoch, granted)


def elect(n: RaftNode) -> list[fx.Effect]:
    """Drive a 3-voter node to leadership: pre-vote grant from 2, then vote grant from 2."""
    out = to_prospective(n)
    (pre,) = [e for e in sent(out, m.VoteRequest) if e.destination == 2]
    out = n.step(ResponseReceived(2001, 2, pre.request_id, vote_resp(True, n.epoch)))
    (real,) = [e for e in sent(out, m.VoteRequest) if e.destination == 2]
    return n.step(ResponseReceived(2002, 2, real.request_id, vote_resp(True, n.epoch)))


class Calls:
    """How often a patched function was called (:func:`count_calls`); it still does what it did."""

    n = 0


def count_calls(monkeypatch: Any, owner: Any, name: str) -> Calls:
    """Patches ``owner.name`` with a wrapper that counts its calls (counted-work tests)."""
    calls, original = Calls(), getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.n += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls
