"""A core step costs what it handles (issue 25): poll's housekeeping for read barriers runs only while one waits.

The steady commit chain (append, Fetch answers, FetchResponse, LogFlushed) must not pay for subsystems that hold
nothing; the tests replace such a subsystem's poll with one that fails, then drive the chain.
"""

from __future__ import annotations

from typing import Any

import pytest

from kraftd.core import QuorumConfig, RaftNode, reads
from kraftd.core import effects as fx
from kraftd.core.events import AppendRecords
from tests.core.pump import Pump, three_voters


def steady() -> tuple[Pump, RaftNode]:
    return three_voters(QuorumConfig(append_linger_ms=0))


def commit_one(p: Pump, leader: RaftNode, value: bytes) -> None:
    before = leader.high_watermark
    p._queue.append((leader.local.id, AppendRecords(p.now, (value,))))
    while p._queue:
        nid, ev = p._queue.popleft()
        p._deliver(nid, ev)
    assert leader.high_watermark > before
    assert all(n.high_watermark == leader.high_watermark for n in p.nodes.values())


def test_commit_chain_skips_idle_read_housekeeping(monkeypatch: pytest.MonkeyPatch) -> None:
    p, leader = steady()

    def boom(*_: Any) -> Any:
        raise AssertionError("read housekeeping ran with no barrier waiting")

    monkeypatch.setattr(reads, "poll", boom)
    monkeypatch.setattr(reads, "deadlines", boom)
    for i in range(20):
        commit_one(p, leader, b"r%d" % i)


def test_a_waiting_barrier_still_gets_its_housekeeping() -> None:
    p, leader = steady()
    calls = {"poll": 0}
    real = reads.poll

    def counting(node: Any) -> None:
        calls["poll"] += 1
        real(node)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(reads, "poll", counting)
        ticket = leader.read_barrier()
        assert leader.reads.busy()
        p.run(p.now + 5_000, stop=lambda: not leader.reads.busy())
    assert calls["poll"] > 0
    done = [
        e.error for e in p.effects[leader.local.id] if isinstance(e, fx.ReadResolved) and e.ticket == ticket
    ]
    assert done == [0]
    assert not leader.reads.busy()
