"""Parked observer Fetches at 1,000 brokers (kraftd.core.parked, replication invariant 2c; issue 24): parking and
the steps that answer nothing cost O(1) in the number parked, and a commit that wakes every observer parked at
the same offset builds one answer object for all of them (encode-once fan-out), once, when the high watermark
commits what was appended (invariant 2d), while each observer's fetch
offset is still tracked for DescribeQuorum (KIP-595)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kraftd.core import QuorumConfig, RaftNode, ReplicaKey, replication
from kraftd.core import effects as fx
from kraftd.core import messages as m
from kraftd.core.events import LogFlushed, RequestReceived, Tick
from kraftd.core.states import Leader
from tests.core.pump import commit, three_voters
from tests.helpers.core import count_calls
from tests.helpers.core import leader as core_leader

WAIT_MS = 500
N = 1000


def leader() -> RaftNode:
    return core_leader(config=QuorumConfig())


def park(n: RaftNode, replica: int, now: int, max_bytes: int = 1 << 20) -> list[fx.Effect]:
    """An observer's long poll at the leader's log end, knowing its high watermark: it parks."""
    key = ReplicaKey(replica, uuid.UUID(int=replica))
    req = m.fetch_request(
        "c", key, n.epoch, n.log.end_offset, n.log.last_epoch, WAIT_MS, max_bytes, n.high_watermark
    )
    return n.step(RequestReceived(now, replica, req))


def answers(effects: list[fx.Effect]) -> list[fx.SendResponse]:
    return [e for e in effects if isinstance(e, fx.SendResponse)]


class Reads:
    count = 0


def counting_parked_fetch(monkeypatch: pytest.MonkeyPatch) -> type[Reads]:
    """Every attribute read of a parked Fetch from here on is counted."""

    base: Any = getattr(replication, "ParkedFetch")  # noqa: B009 - the name the leader parks with

    class Counted(base):  # type: ignore[misc]
        def __getattribute__(self, name: str) -> Any:
            Reads.count += 1
            return object.__getattribute__(self, name)

    monkeypatch.setattr(replication, "ParkedFetch", Counted)
    Reads.count = 0
    return Reads


def test_parking_and_idle_steps_do_not_walk_the_parked_fetches(monkeypatch: pytest.MonkeyPatch) -> None:
    n = leader()
    reads = counting_parked_fetch(monkeypatch)
    for b in range(100, 100 + N):
        assert not answers(park(n, b, 10 + b // 100))
    assert isinstance(n.data, Leader) and len(n.data.parked) == N
    reads.count = 0
    out = park(n, 100 + N, 30)  # one more parks
    out += n.step(Tick(40))  # a step before any deadline
    assert not answers(out)
    assert [e.at_ms for e in out if isinstance(e, fx.SetDeadline)][-1] == 11 + WAIT_MS  # the first parked
    assert reads.count <= 10, f"two steps read parked Fetches {reads.count} times"


def test_expired_long_polls_are_answered_in_deadline_order_and_only_they() -> None:
    n = leader()
    for b in range(100, 110):
        park(n, b, 100 + b)  # deadlines 700..709
    out = n.step(Tick(704))
    assert sorted(e.token for e in answers(out)) == [100, 101, 102, 103, 104]
    assert [e.at_ms for e in out if isinstance(e, fx.SetDeadline)] == [705]
    assert sorted(e.token for e in answers(n.step(Tick(800)))) == [105, 106, 107, 108, 109]


def test_a_commit_wakes_every_parked_observer_with_one_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    n = leader()
    end = n.log.end_offset
    for b in range(100, 100 + N):
        park(n, b, 10)
    park(n, 5000, 10, max_bytes=1 << 10)  # another max bytes: its own answer
    built = count_calls(monkeypatch, m, "fetch_response")
    n.append([b"record"])
    at = 10 + n.config.append_linger_ms
    # Invariant 2d: the append wakes no observer; the high watermark that commits it (the sole voter's flush)
    # wakes each once, on the next step, with the records and that high watermark in one answer.
    assert not answers(n.step(Tick(at)))
    woken = answers(n.step(LogFlushed(at, n.log.end_offset)))
    woken += answers(n.step(Tick(at + 1)))
    assert len(woken) == N + 1
    assert built.n == 2, f"{built.n} answers built for {N + 1} parked Fetches at one offset"
    shared = {id(e.message) for e in woken if e.token != 5000}
    assert len(shared) == 1
    part = m.single_partition(woken[0].message)
    assert part is not None and part.records and part.high_watermark == n.high_watermark
    # KIP-595: each observer's fetch offset is tracked for DescribeQuorum all the same.
    assert isinstance(n.data, Leader)
    assert all(n.data.replicas[b].end_offset == end for b in range(100, 100 + N))
    assert len(n.data.parked) == 0


def test_an_append_wakes_parked_voters_and_its_commit_wakes_an_observer_once() -> None:
    """Invariant 2d: the voters' long polls are answered with the records (the commit needs them); an observer's
    is answered once, when the high watermark commits them, with the records and that high watermark."""
    p, ld = three_voters()
    observer, tok = 99, 10**6
    p.down.add(observer)  # its answer is recorded as the leader's effect, delivered nowhere
    p._tokens[tok] = (observer, ld.local.id, 0)
    key = ReplicaKey(observer, uuid.UUID(int=observer))
    req = m.fetch_request(
        "c", key, ld.epoch, ld.log.end_offset, ld.log.last_epoch, WAIT_MS, 1 << 20, ld.high_watermark
    )
    assert not answers(ld.step(RequestReceived(p.now, tok, req)))  # it parks at the log end
    seen = len(p.effects[ld.local.id])
    last = commit(p, ld, b"value")
    out = p.effects[ld.local.id][seen:]
    to_observer = [i for i, e in enumerate(out) if isinstance(e, fx.SendResponse) and e.token == tok]
    to_voters = [i for i, e in enumerate(out) if isinstance(e, fx.SendResponse) and e.token != tok]
    assert len(to_observer) == 1, "one answer for the observer, not one with records and one with the HWM"
    assert to_voters and to_voters[0] < to_observer[0]  # the voters had the records first
    part = m.single_partition(out[to_observer[0]].message)  # type: ignore[union-attr]
    assert part is not None and part.records and part.high_watermark > last
