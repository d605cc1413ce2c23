"""A controller quorum of one kind (kraftd or Kafka 4.3.1's controllers) with a kraft-swarm of emulated brokers, for
the swarm tests (issue 24 §4, issue 22's proof).

Contracts:
1. :class:`SwarmCluster` starts three controllers of ``kind`` (KIP-853 bootstrap, the interop timeouts: fetch 2 s,
   election 1 s, backoff 1 s) and a :class:`Swarm` of N brokers on an asyncio loop in its own thread;
   :meth:`SwarmCluster.run` runs a coroutine on that loop and waits for it. :meth:`SwarmCluster.close` stops
   the swarm, the loop and every controller process.
2. :meth:`SwarmCluster.quorum` asks DescribeQuorum of the live controllers (None when none answers in time);
   :meth:`SwarmCluster.fail_over` kill -9s the leader and measures issue 22's failover: the time until a new
   leader is known to a broker (and to each broker: median and last), until every running broker had a heartbeat
   answered, and the epochs it took.
3. :meth:`SwarmCluster.restart` returns once the restarted controller's state machine has replayed what the quorum
   committed (its log's MetadataLoader line since the start), not only once its log caught up: a controller elected
   while still replaying answers NOT_CONTROLLER until it is done (20 s for 200k records at 1M partitions, load 12),
   which is not the failover being measured.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kraftd.testing.quorum import MixedQuorum
from kwire.quorum_client import QuorumInfo, fetch_quorum
from tools.swarm.lifecycle import SwarmConfig
from tools.swarm.swarm import Swarm, percentile

T = TypeVar("T")
FETCH_TIMEOUT_S, ELECTION_TIMEOUT_S, ELECTION_BACKOFF_S = 2.0, 1.0, 1.0
# Kafka's MetadataLoader logs it once its replay reached the high watermark; kraftd's glue logs the same (contract 3).
CAUGHT_UP = b"The loader finished catching up to the current high water mark of"


@dataclass
class Failover:
    killed: int
    old_epoch: int
    new_leader: int
    new_epoch: int  # the epoch ``settle`` seconds after the kill (DescribeQuorum, else the brokers' view)
    leader_after_s: float  # kill -> a swarm broker learnt a new leader from a Fetch answer
    all_answered_s: (
        float  # kill -> the last running broker had a heartbeat answered by a survivor (inf: never)
    )
    unanswered: list[int]
    mistaken_fences: int
    # The last-answered broker's heartbeats after the kill: (sent, round trip, error).
    slowest: list[tuple[float, float, int]]
    # kill -> each running broker's observer knew the new epoch (sampled every 20 ms): median and last (inf: never)
    learned_p50_s: float = float("inf")
    learned_max_s: float = float("inf")


class SwarmCluster:
    def __init__(
        self,
        root: Path,
        kind: str,
        brokers: int,
        *,
        extra: dict[str, str] | None = None,
        jvm_opts: list[str] | None = None,
        log_level: str = "INFO",
    ) -> None:
        self.kind = kind
        self.q = MixedQuorum(root, [kind] * 3, bootstrap="kip853", extra=extra)
        for node in self.q.nodes:
            node.jvm_opts, node.log_level = jvm_opts, log_level
        self.q.start_all()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="swarm-loop", daemon=True)
        self.thread.start()
        self.q.wait_leader(120)
        voters = {n.node_id: ("127.0.0.1", n.port) for n in self.q.nodes}
        self.swarm = Swarm(SwarmConfig(self.q.cluster_id, voters), brokers)
        self.run(self._start(), 10)

    async def _start(self) -> None:
        self.swarm.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 120) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        try:
            self.run(self.swarm.close(), 30)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.q.stop_all()

    def quorum(self, timeout_ms: int = 1000) -> QuorumInfo | None:
        targets = [("127.0.0.1", n.port) for n in self.q.nodes if n.alive()]
        try:
            return asyncio.run(fetch_quorum(targets, 2, timeout_ms))[1]
        except Exception:  # noqa: BLE001 - no controller answered: the caller polls again
            return None

    def create_topics(
        self, prefix: str, topics: int, partitions: int, rf: int = 3
    ) -> tuple[dict[str, int], float]:
        started = time.monotonic()
        names = [f"{prefix}{i}" for i in range(topics)]
        result = self.run(self.swarm.create_topics(names, partitions, rf, batch=50, timeout=600), 660)
        return result, time.monotonic() - started

    def fail_over(
        self, settle: float = 10.0, answered_within: float = 30.0, wait_before_kill_s: float = 0.0
    ) -> Failover:
        """Contract 2: kill -9 the leader ``wait_before_kill_s`` after asking who leads, wait ``settle`` seconds,
        report what happened."""
        before = self.quorum(3000)
        assert before is not None and before.leader_id > 0, "no leader before the kill"
        time.sleep(wait_before_kill_s)
        leader = self.q.node(before.leader_id)
        mark = len(self.swarm.heartbeats)  # answered_after reads only the heartbeats recorded since
        killed_at = time.monotonic()
        leader.stop(signal.SIGKILL)
        new_leader, leader_after = -1, float("inf")
        learned: dict[int, float] = {}  # broker -> kill to the first sample that saw it know the new epoch
        deadline = killed_at + answered_within
        running = {b.id for b in self.swarm.running()}
        checked = 0.0
        while time.monotonic() < deadline:
            # The brokers' view (CurrentLeader in Fetch answers): a leader that serves its observers.
            now = time.monotonic()
            for b in self.swarm.running():
                if b.id not in learned and b.leader_epoch > before.leader_epoch and b.leader_id > 0:
                    learned[b.id] = now - killed_at
                    if new_leader < 0:
                        new_leader, leader_after = b.leader_id, now - killed_at
            if now - checked >= 0.1:
                checked = now
                if running <= self.swarm.answered_after(killed_at, before.leader_id, mark).keys():
                    break
            time.sleep(0.02)
        answered = self.swarm.answered_after(killed_at, before.leader_id, mark)
        time.sleep(max(0.0, killed_at + settle - time.monotonic()))
        after = self.quorum(3000)
        last = max(running, key=lambda b: answered.get(b, float("inf")), default=-1)
        learned_s = [learned.get(b, float("inf")) for b in running]  # kill -> each broker knew the new leader
        trace = [
            (round(sent - killed_at, 3), round(rtt, 3), error)
            for sent, rtt, error, b, _ in self.swarm.heartbeats
            if b == last and sent + rtt >= killed_at
        ]
        return Failover(
            killed=before.leader_id,
            old_epoch=before.leader_epoch,
            new_leader=new_leader,
            new_epoch=after.leader_epoch if after is not None else self.swarm.leader()[1],
            leader_after_s=leader_after,
            all_answered_s=max((answered.get(b, float("inf")) for b in running), default=0.0),
            unanswered=sorted(running - answered.keys()),
            mistaken_fences=len(self.swarm.mistaken_fences()),
            slowest=trace[:6],
            learned_p50_s=percentile(learned_s, 0.5) if learned_s else float("inf"),
            learned_max_s=max(learned_s, default=float("inf")),
        )

    def restart(self, node_id: int, timeout: float = 120) -> None:
        """Contract 3: start a killed controller again and wait until its log has caught up with the leader's high
        watermark and its state machine has replayed it (the MetadataLoader line, on either kind)."""
        node = self.q.node(node_id)
        mark = node.log_file.stat().st_size if node.log_file.exists() else 0
        node.start()
        deadline = time.monotonic() + timeout
        logged = False
        while time.monotonic() < deadline:
            if not logged:
                with node.log_file.open("rb") as f:
                    f.seek(mark)
                    logged = CAUGHT_UP in f.read()
            info = self.quorum(2000) if logged else None
            if info is not None and info.leader_id > 0:
                voter = next((v for v in info.voters if v.replica_id == node_id), None)
                if voter is not None and voter.log_end_offset >= info.high_watermark > 0:
                    return
            time.sleep(0.2)
        raise AssertionError(f"controller {node_id} did not catch up within {timeout}s\n{self.q.tails()}")
