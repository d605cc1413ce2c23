"""A follower that gets a Fetch answer it cannot act on backs off ``controller.quorum.retry.backoff.ms``; it
never re-sends at once (issue 10: 23,141 Fetches in 25 s against a Kafka leader that answered SnapshotId)."""

from __future__ import annotations

import random
from typing import Any

import generated.fetch_response as FRESP
from kraftd.core import QuorumConfig, RaftNode, ReplicaKey, VoterSet
from kraftd.core import effects as fx
from kraftd.core import messages as m
from kraftd.core.events import ResponseReceived, Tick
from kraftd.core.types import ElectionState
from kwire.errors import ErrorCode

BACKOFF = 50


def follower() -> RaftNode:
    return RaftNode(
        local=ReplicaKey(1),
        voters=VoterSet.of(1, 2, 3),
        config=QuorumConfig(retry_backoff_ms=BACKOFF),
        rng=random.Random(3),
        cluster_id="c",
        election_state=ElectionState(3, 2),
    )


def snapshot_answer(end_offset: int = 12, epoch: int = 3) -> Any:
    resp = m.fetch_response(ErrorCode.NONE, ErrorCode.NONE, 2, 3, 12)
    part = m.single_partition(resp)
    part.snapshot_id = FRESP.SnapshotId(end_offset=end_offset, epoch=epoch)
    return resp


def drive(n: RaftNode, answer: Any, span_ms: int) -> list[tuple[int, Any]]:
    """Run the follower for ``span_ms`` of its clock, answering every request at once with ``answer(req)``;
    returns (time, request) for every request sent. Bounded in steps so a spin cannot hang the test."""
    now = 0
    effects = n.step(Tick(now))
    seen: list[tuple[int, Any]] = []
    for _ in range(10_000):
        reqs = [e for e in effects if isinstance(e, fx.SendRequest)]
        deadline = next(e.at_ms for e in effects if isinstance(e, fx.SetDeadline))
        if reqs:
            req = reqs[0]
            seen.append((now, req.message))
            effects = n.step(ResponseReceived(now, req.destination, req.request_id, answer(req.message)))
            continue
        now = max(now + 1, deadline)
        if now > span_ms:
            break
        effects = n.step(Tick(now))
    return seen


def test_snapshot_id_answer_is_retried_only_after_the_backoff() -> None:
    n = follower()

    def answer(req: Any) -> Any:
        if isinstance(req, m.FetchRequest):
            return snapshot_answer()
        return m.error_response(req, ErrorCode.UNSUPPORTED_VERSION)  # a leader without FetchSnapshot

    seen = drive(n, answer, 1000)
    times = [t for t, _ in seen]
    assert times, "the follower never fetched"
    assert times[-1] >= 900, "the follower's clock stalled: it re-sent without waiting"
    assert len(seen) <= 2 * (1000 // BACKOFF) + 2
    fetches = [t for t, r in seen if isinstance(r, m.FetchRequest)]
    assert all(b - a >= BACKOFF for a, b in zip(fetches, fetches[1:], strict=False))


def test_records_that_do_not_extend_the_log_are_retried_after_the_backoff() -> None:
    n = follower()

    def answer(req: Any) -> Any:  # a leader that keeps answering with nothing usable and no wait
        resp = m.fetch_response(ErrorCode.NONE, ErrorCode.NONE, 2, 3, 0)
        m.single_partition(resp).records = b"\x00" * 20  # garbage: fails the batch checks
        return resp

    seen = drive(n, answer, 1000)
    assert len(seen) <= 1000 // BACKOFF + 2


def test_records_below_the_log_end_are_retried_after_the_backoff() -> None:
    from kraftd.core.batches import data_batch

    n = follower()
    old = data_batch(0, 1, [b"x"], 0)
    n.log.append(old)
    n.flushed = n.log.end_offset

    def answer(req: Any) -> Any:  # a leader answering at once with a batch the follower already holds
        return m.fetch_response(ErrorCode.NONE, ErrorCode.NONE, 2, 3, 0, [old])

    seen = drive(n, answer, 1000)
    assert len(seen) <= 1000 // BACKOFF + 2
