"""The leader's adaptive linger (kraftd.core.replication invariant 5a, issue 25's batched throughput): accepted
records are written at once when everything written is committed, gather while a batch is in flight, and are
written by the step that commits it; with the rule off they wait the whole linger, as in Kafka."""

from __future__ import annotations

import dataclasses

from kraftd.core import RaftNode
from kraftd.core import effects as fx
from kraftd.core import messages as m
from kraftd.core.events import LogFlushed, RequestReceived, Tick
from kraftd.core.types import ReplicaKey
from tests.helpers.core import elect, node


def _leader(adaptive: bool = True) -> RaftNode:
    """Node 1 leads {1, 2, 3} with everything written committed (high watermark at the log end)."""
    n = node()
    n.config = dataclasses.replace(n.config, append_linger_ms=25, append_linger_adaptive=adaptive)
    elect(n)
    n.step(LogFlushed(2003, n.log.end_offset))
    _ack(n, 2, 2004)
    assert n.high_watermark == n.log.end_offset
    return n


def _ack(n: RaftNode, follower: int, now: int) -> list[fx.Effect]:
    end = n.log.end_offset
    req = m.fetch_request("c", ReplicaKey(follower), n.epoch, end, n.epoch, 500, 1 << 20, -1)
    return n.step(RequestReceived(now, 100 + follower, req))


def _written(out: list[fx.Effect]) -> list[int]:
    """The record count of every batch an effect list writes."""
    return [
        b.last_offset - b.base_offset + 1 for e in out if isinstance(e, fx.AppendBatches) for b in e.batches
    ]


def test_an_append_to_an_idle_pipeline_is_written_at_once() -> None:
    n = _leader()
    n.append([b"a", b"b"])
    assert _written(n.step(Tick(2005))) == [2]  # 20 ms before the linger expires


def test_appends_gather_while_a_batch_is_in_flight_and_the_commit_writes_them() -> None:
    n = _leader()
    n.append([b"a"])
    assert _written(n.step(Tick(2005))) == [1]
    n.append([b"b"])
    n.append([b"c", b"d"])
    assert _written(n.step(Tick(2006))) == []  # batch "a" is not committed yet
    n.step(LogFlushed(2007, n.log.end_offset))
    assert n.high_watermark < n.log.end_offset
    out = _ack(n, 3, 2008)  # the leader's flush and follower 3 make the majority: "a" commits
    assert _written(out) == [3]  # b, c, d in one batch, in the committing step
    assert any(isinstance(e, fx.ApplyCommitted) for e in out)


def test_the_linger_still_bounds_the_wait_when_the_commit_is_late() -> None:
    n = _leader()
    n.append([b"a"])
    n.step(Tick(2005))
    n.append([b"b"])
    assert _written(n.step(Tick(2029))) == []
    assert _written(n.step(Tick(2031))) == [1]  # the linger from 2005 expired, "a" still uncommitted


def test_without_the_adaptive_rule_records_wait_the_whole_linger() -> None:
    n = _leader(adaptive=False)
    n.append([b"a", b"b"])
    assert _written(n.step(Tick(2005))) == []
    assert _written(n.step(Tick(2005 + 25))) == [2]
