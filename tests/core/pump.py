"""A tiny deterministic network for core tests: every message is delivered at once, FlushLog completes at
once, time jumps to the earliest deadline. ``down`` nodes neither send nor receive."""

from __future__ import annotations

import random
from collections import deque
from typing import Any

from kraftd.core import QuorumConfig, RaftNode, ReplicaKey, VoterSet
from kraftd.core import effects as fx
from kraftd.core.events import Event, LogFlushed, RequestReceived, ResponseReceived, Tick


class Pump:
    def __init__(self, voters: VoterSet, config: QuorumConfig, kraft_version: int = 1, seed: int = 1) -> None:
        self.voters = voters
        self.config = config
        self.kraft_version = kraft_version
        self.now = 0
        self.nodes: dict[int, RaftNode] = {}
        self.down: set[int] = set()
        self.effects: dict[int, list[fx.Effect]] = {}
        self.sent: list[tuple[int, int, Any]] = []  # (source, destination, request)
        self._tokens: dict[int, tuple[int, int, int]] = {}  # token -> (dest node, source, request id)
        self._next = 1
        self._deadlines: dict[int, int] = {}
        self._queue: deque[tuple[int, Event]] = deque()
        self.seed = seed

    def add(self, key: ReplicaKey, **kw: Any) -> RaftNode:
        n = RaftNode(
            local=key,
            voters=self.voters,
            config=self.config,
            rng=random.Random(self.seed * 100 + key.id),
            cluster_id="c",
            kraft_version=self.kraft_version,
            now_ms=self.now,
            **kw,
        )
        self.nodes[key.id] = n
        self.effects[key.id] = []
        self._queue.append((key.id, Tick(self.now)))
        return n

    def _deliver(self, nid: int, ev: Event) -> None:
        if nid in self.down:
            return
        out = self.nodes[nid].step(ev)
        self.effects[nid].extend(out)
        for e in out:
            if isinstance(e, fx.FlushLog):
                self._queue.append((nid, LogFlushed(self.now, e.offset)))
            elif isinstance(e, fx.SendRequest):
                self.sent.append((nid, e.destination, e.message))
                if e.destination in self.down or e.destination not in self.nodes:
                    continue
                tok = self._next
                self._next += 1
                self._tokens[tok] = (nid, e.destination, e.request_id)
                self._queue.append((e.destination, RequestReceived(self.now, tok, e.message)))
            elif isinstance(e, fx.SendResponse):
                src, dest, rid = self._tokens.pop(e.token)
                if dest == nid:
                    self._queue.append((src, ResponseReceived(self.now, nid, rid, e.message)))
            elif isinstance(e, fx.SetDeadline):
                self._deadlines[nid] = e.at_ms

    def run(self, until_ms: int, stop: Any = None) -> None:
        steps = 0
        while self.now <= until_ms:
            while self._queue:
                nid, ev = self._queue.popleft()
                self._deliver(nid, ev)
                steps += 1
                assert steps < 200_000, "the cluster spins"
            if stop is not None and stop():
                return
            live = [t for i, t in self._deadlines.items() if i not in self.down]
            self.now = max(self.now + 1, min(live) if live else until_ms + 1)
            for nid in self.nodes:
                if nid not in self.down:
                    self._queue.append((nid, Tick(self.now)))

    def leader(self) -> RaftNode | None:
        from kraftd.core import Role

        return next((n for i, n in self.nodes.items() if i not in self.down and n.role is Role.LEADER), None)


def three_voters(config: QuorumConfig | None = None) -> tuple[Pump, RaftNode]:
    """Three voters (1, 2, 3) pumped until a leader has committed in its epoch; the pump and that leader."""
    p = Pump(VoterSet.of(1, 2, 3), config or QuorumConfig())
    for i in (1, 2, 3):
        p.add(ReplicaKey(i))
    p.run(20_000, stop=lambda: p.leader() is not None and p.leader().high_watermark > 0)  # type: ignore[union-attr]
    leader = p.leader()
    assert leader is not None
    return p, leader


def commit(p: Pump, leader: RaftNode, value: bytes) -> int:
    """Append ``value`` at ``leader`` and pump until it is committed; its offset."""
    rng = leader.append([value])
    p._queue.append((leader.local.id, Tick(p.now)))
    p.run(p.now + 5_000, stop=lambda: leader.high_watermark > rng.last)
    return rng.last
