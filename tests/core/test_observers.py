"""Observers on the leader (KIP-595): each fetch records the observer's progress; observers silent for longer
than ``observer_session_timeout_ms`` are forgotten. With a thousand brokers fetching, the bookkeeping of one
fetch must not grow with the number of observers (issue 24: the leader used to walk every observer on every
fetch, and the voters' end offsets among every observer on every voter fetch)."""

from __future__ import annotations

import uuid

import pytest

from kraftd.core import QuorumConfig, RaftNode, ReplicaKey, VoterSet
from kraftd.core import messages as m
from kraftd.core.events import RequestReceived
from kraftd.core.states import Leader
from tests.helpers.core import leader as core_leader

SESSION_MS = 10_000


def leader() -> RaftNode:
    return core_leader(config=QuorumConfig(observer_session_timeout_ms=SESSION_MS))


def fetch(n: RaftNode, replica: int, now: int) -> None:
    key = ReplicaKey(replica, uuid.UUID(int=replica))
    req = m.fetch_request("c", key, n.epoch, n.log.end_offset, n.log.last_epoch, 0, 1 << 20, 0)
    n.step(RequestReceived(now, replica, req))


def observers(n: RaftNode) -> list[int]:
    assert isinstance(n.data, Leader)
    return sorted(n.data.replicas)


def test_an_observer_is_forgotten_once_silent_past_its_session() -> None:
    n = leader()
    for b in (100, 101, 102):
        fetch(n, b, 10)
    fetch(n, 101, 5_000)  # 101 fetches again: its session starts over
    fetch(n, 103, SESSION_MS + 11)  # 100 and 102 are now silent for longer than the session
    assert observers(n) == [101, 103]
    fetch(n, 103, 5_000 + SESSION_MS + 1)
    assert observers(n) == [103]


def test_one_fetch_costs_the_same_with_two_thousand_observers(monkeypatch: pytest.MonkeyPatch) -> None:
    n = leader()
    for b in range(100, 2100):
        fetch(n, b, 1_000 + b)
    calls = 0
    original = VoterSet.has_id

    def counted(self: VoterSet, node_id: int) -> bool:
        nonlocal calls
        calls += 1
        return original(self, node_id)

    monkeypatch.setattr(VoterSet, "has_id", counted)
    fetch(n, 150, 5_000)
    assert len(observers(n)) == 2000
    assert calls <= 10, f"one fetch walked {calls} replicas"
