"""Failover of a 3-controller kraftd quorum holding a large image (issue 22), shared by
tests/daemon/test_failover_at_scale.py and bench/failover.py (kraftd.testing).

:func:`populate`: a few emulated brokers (kraftd.testing.heartbeaters) register and heartbeat; topics of 100
partitions (RF 3) are created over the wire with CreateTopics (``per_request`` topics a request) until the image
holds ``partitions``. :func:`kill_leader`: kill -9 of the leader, then, over ``watch`` seconds, every leader the
survivors report (Describe​Quorum twice a second), the elections it took (the leader's epoch minus the killed one's),
the heartbeats' first answers, the survivors' "-> resigned" log lines and the new leader's longest event loop
stall (``event loop stalled`` lines, kraftd.shell.observe.looplag)."""

from __future__ import annotations

import asyncio
import re
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generated.create_topics_request import CreatableTopic, CreateTopicsRequest
from kraftd.testing.heartbeaters import Brokers
from kwire.client import KafkaClient
from kwire.errors import ErrorCode
from kwire.quorum_client import fetch_quorum
from tools.local_quorum import CLUSTER_ID
from tools.local_quorum import LocalQuorum as Cluster

PER_TOPIC = 100


@dataclass
class Kill:
    killed: int
    epoch: int
    leaders: list[tuple[float, int, int]] = field(default_factory=list)  # (s after kill, leader, epoch)
    heartbeats_s: list[float] = field(default_factory=list)
    resignations: int = 0
    longest_stall_ms: float = 0.0

    @property
    def final(self) -> tuple[int, int]:
        return self.leaders[-1][1:] if self.leaders else (-1, -1)

    @property
    def elections(self) -> int:
        return self.final[1] - self.epoch

    @property
    def leader_after_s(self) -> float:
        """Seconds from the kill to the first sighting of the final leader in its final epoch."""
        return next((t for t, lid, ep in self.leaders if (lid, ep) == self.final), float("inf"))

    def summary(self) -> dict[str, Any]:
        return {
            "killed": self.killed,
            "new_leader": self.final[0],
            "elections": self.elections,
            "leader_after_s": round(self.leader_after_s, 2),
            "resignations": self.resignations,
            "heartbeats_all_answered_after_s": round(max(self.heartbeats_s, default=float("inf")), 2),
            "new_leader_longest_stall_ms": self.longest_stall_ms,
        }


async def _leader(cluster: Cluster, nodes: list[int]) -> tuple[int, int]:
    targets = [("127.0.0.1", cluster.ports[i - 1]) for i in nodes]
    try:
        cid, info = await fetch_quorum(targets, 2, 500, None, None)
    except Exception:  # noqa: BLE001 - no answer is "no leader known"
        return -1, -1
    return (info.leader_id, info.leader_epoch) if cid == CLUSTER_ID else (-1, -1)


async def create(cluster: Cluster, partitions: int, per_request: int, prefix: str = "t") -> float:
    """Seconds to create ``partitions`` partitions (topics of 100, RF 3) through the active controller."""
    topics = max(1, partitions // PER_TOPIC)
    t0 = time.monotonic()
    clients = [KafkaClient("127.0.0.1", p, request_timeout=60, connect_timeout=5) for p in cluster.ports]
    try:
        next_topic = 0
        while next_topic < topics:
            names = [f"{prefix}{i:06d}" for i in range(next_topic, min(topics, next_topic + per_request))]
            req = CreateTopicsRequest(
                topics=[CreatableTopic(n, PER_TOPIC, 3) for n in names], timeout_ms=60_000
            )
            leader, _ = await _leader(cluster, [n for n in cluster.node_ids() if n in cluster.procs])
            resp = await clients[leader - 1].send(req) if leader > 0 else None
            codes = {t.error_code for t in resp.topics} if resp is not None else {-1}
            if codes <= {ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS}:
                next_topic += len(names)
            else:
                await asyncio.sleep(0.2)
    finally:
        for c in clients:
            await c.close()
    return time.monotonic() - t0


def _log_lines(path: Path, start: int) -> list[str]:
    return path.read_bytes()[start:].decode(errors="replace").splitlines()


async def kill_leader(cluster: Cluster, brokers: Brokers, watch: float) -> Kill:
    lid, epoch = await _leader(cluster, cluster.node_ids())
    survivors = [n for n in cluster.node_ids() if n != lid]
    marks = {n: cluster.log_file(n).stat().st_size for n in survivors}
    kill = Kill(lid, epoch)
    t0 = time.monotonic()
    cluster.kill(lid, signal.SIGKILL)
    while time.monotonic() - t0 < watch:
        got = await _leader(cluster, survivors)
        if got[0] > 0 and (not kill.leaders or kill.leaders[-1][1:] != got):
            kill.leaders.append((time.monotonic() - t0, *got))
        await asyncio.sleep(0.5)
    kill.heartbeats_s = brokers.first_answers_after(t0)
    new = kill.final[0]
    for n in survivors:
        lines = _log_lines(cluster.log_file(n), marks[n])
        kill.resignations += sum(1 for line in lines if "-> resigned" in line)
        if n == new:
            stalls = [float(m.group(1)) for line in lines if (m := re.search(r"stalled for (\d+) ms", line))]
            kill.longest_stall_ms = max(stalls, default=0.0)
    return kill
