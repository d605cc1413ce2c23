"""Catch-up Fetch answers shared (kraftd.core.replication invariant 2e; issue 24): observers behind the log end
that fetch at the same offset and max bytes while the log end and high watermark are unchanged get one answer
object (the shell encodes it once: kwire.server contract 11f), read and joined once, never one with a stale high
watermark."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kraftd.core import QuorumConfig, RaftNode, ReplicaKey
from kraftd.core import effects as fx
from kraftd.core import messages as m
from kraftd.core.events import LogFlushed, RequestReceived, Tick
from tests.helpers.core import count_calls
from tests.helpers.core import leader as core_leader

N = 200


def committed(n: RaftNode, at: int, value: bytes) -> int:
    """Append ``value`` as its own batch and commit it (the sole voter's flush); returns the next time."""
    n.append([value])
    at += n.config.append_linger_ms
    n.step(Tick(at))
    n.step(LogFlushed(at, n.log.end_offset))
    n.step(Tick(at + 1))
    assert n.high_watermark == n.log.end_offset
    return at + 2


def fetch(n: RaftNode, replica: int, now: int, offset: int, max_bytes: int) -> Any:
    key = ReplicaKey(replica, uuid.UUID(int=replica))
    req = m.fetch_request(
        "c", key, n.epoch, offset, n.log.epoch_at(offset - 1) if offset else 0, 500, max_bytes, -1
    )
    (answer,) = [e for e in n.step(RequestReceived(now, replica, req)) if isinstance(e, fx.SendResponse)]
    return answer.message


def test_observers_catching_up_at_one_offset_share_one_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    n = core_leader(config=QuorumConfig())
    at = 10
    for i in range(40):
        at = committed(n, at, b"v%d" % i * 50)
    built = count_calls(monkeypatch, m, "fetch_response")
    start = n.log.batches[1].base_offset  # past the leader's first control batch: records of its epoch
    first = [fetch(n, 100 + b, at, start, 2048) for b in range(N)]
    assert built.n == 1, f"{built.n} answers built for {N} catch-up Fetches at one offset"  # before: one each
    assert len({id(a) for a in first}) == 1
    part = m.single_partition(first[0])
    assert part is not None and part.records and part.high_watermark == n.high_watermark
    assert len(part.records) <= 2048 + max(len(b.data) for b in n.log.batches)
    other = fetch(n, 999, at, n.log.batches[2].base_offset, 2048)  # another offset: its own answer
    assert other is not first[0] and built.n == 2
    # The log end and high watermark move: the next Fetch at that offset gets a fresh answer, never the old one.
    at = committed(n, at, b"later")
    again = fetch(n, 100, at, start, 2048)
    assert again is not first[0] and built.n == 3
    fresh = m.single_partition(again)
    assert fresh is not None and fresh.high_watermark == n.high_watermark > part.high_watermark


def test_answers_kept_stay_within_their_byte_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    from kraftd.core import replication
    from kraftd.core.states import Leader

    n = core_leader(config=QuorumConfig())
    at = 10
    for i in range(40):
        at = committed(n, at, b"v%d" % i * 50)
    monkeypatch.setattr(replication, "ANSWERS_KEPT_BYTES", 4096)
    for b in range(1, 40):
        fetch(n, 100 + b, at, n.log.batches[b].base_offset, 1024)
    assert isinstance(n.data, Leader)
    assert 0 < n.data.answers_bytes <= 4096
    assert sum(len(m.single_partition(a).records) for a in n.data.answers.values()) == n.data.answers_bytes
