"""A follower's high watermark moves only on a Fetch answer that validated its log against the leader's
(Kafka's KafkaRaftClient takes the leader's high watermark only from an answer without a diverging epoch or
snapshot id). Found by the membership simulation (seed 497): an observer whose log held an old epoch's
uncommitted tail past a later leader's entries truncated once to the end of its own older epoch, still past the
real divergence point, took the leader's high watermark from that same answer and applied its stale batches
as committed before the next answer truncated them."""

from __future__ import annotations

import random
from typing import Any

from kraftd.core import QuorumConfig, RaftNode, ReplicaKey, VoterSet
from kraftd.core import effects as fx
from kraftd.core import messages as m
from kraftd.core.batches import data_batch
from kraftd.core.events import LogFlushed, ResponseReceived, Tick
from kraftd.core.log import LogBatch, OffsetAndEpoch, ReplicatedLog
from kraftd.core.types import ElectionState
from kwire.errors import ErrorCode

LEADER = 2


def _follower() -> RaftNode:
    """Offsets 0-4 (epoch 1) agree with the leader; 5-9 (epoch 1) and 10 (epoch 3) are a dead leader's
    uncommitted tail. The leader of epoch 4 holds 0-4 at epoch 1, then 5 onwards at epoch 2."""
    log = ReplicatedLog()
    for b in (
        data_batch(0, 1, [b"a"] * 5, 0),
        data_batch(5, 1, [b"stale"] * 5, 0),
        data_batch(10, 3, [b"x"], 0),
    ):
        log.append(b)
    return RaftNode(
        local=ReplicaKey(1),
        voters=VoterSet.of(1, 2, 3),
        config=QuorumConfig(),
        rng=random.Random(1),
        cluster_id="c",
        election_state=ElectionState(4, LEADER),
        log=log,
    )


def _answer(n: RaftNode, effects: list[fx.Effect], now: int, resp: Any) -> list[fx.Effect]:
    fetch = next(
        e for e in effects if isinstance(e, fx.SendRequest) and isinstance(e.message, m.FetchRequest)
    )
    return n.step(ResponseReceived(now, fetch.destination, fetch.request_id, resp))


def _applied(effects: list[fx.Effect]) -> list[LogBatch]:
    return [b for e in effects if isinstance(e, fx.ApplyCommitted) for b in e.batches]


def test_a_diverging_answer_never_moves_the_high_watermark() -> None:
    n = _follower()
    out = n.step(Tick(0))
    # 1. The leader's epoch 2 ends at 12; our newest epoch at or below 2 is 1, ending at 10: truncate to 10.
    out = _answer(
        n,
        out,
        1,
        m.fetch_response(ErrorCode.NONE, ErrorCode.NONE, LEADER, 4, 20, diverging=OffsetAndEpoch(12, 2)),
    )
    assert n.log.end_offset == 10
    assert n.high_watermark == 0 and not _applied(out), "offsets 5-9 were never validated against the leader"
    # 2. The leader's epoch 1 ends at 5: truncate the stale tail.
    out = _answer(
        n,
        out,
        2,
        m.fetch_response(ErrorCode.NONE, ErrorCode.NONE, LEADER, 4, 20, diverging=OffsetAndEpoch(5, 1)),
    )
    assert n.log.end_offset == 5 and n.high_watermark == 0 and not _applied(out)
    # 3. Now the log matches the leader's: its records and high watermark are taken.
    fresh = data_batch(5, 2, [b"b"] * 3, 0)
    out = _answer(n, out, 3, m.fetch_response(ErrorCode.NONE, ErrorCode.NONE, LEADER, 4, 8, batches=[fresh]))
    out += n.step(LogFlushed(4, 8))
    assert n.high_watermark == 8
    assert [(b.base_offset, b.epoch) for b in _applied(out)] == [(0, 1), (5, 2)]
