"""One simulated run: a seeded cluster, a background workload of random appends, and the helpers the
scenarios use (wait for a leader, wait for a fresh append to commit, faults).

Liveness bound (stated): once faults are healed and a majority of voters is up, a leader exists and an
append made then commits within ``LIVENESS_BOUND_MS`` of virtual time. Derivation with the defaults: a
zombie resigns within check-quorum (3 s); followers notice within the fetch timeout (2 s); an election
needs at most a couple of randomized timeouts in [1 s, 2 s) plus election backoff (<= 1 s) each; we allow
20 s to cover repeated split pre-votes under message loss.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from kraftd.core.config import BugFlags, QuorumConfig
from kraftd.core.node import RaftNode
from kraftd.core.types import Role
from kraftd.sim.cluster import Cluster
from kraftd.sim.invariants import Checker
from kraftd.sim.network import NetworkFaults, wire_roundtrip

LIVENESS_BOUND_MS = 20_000


class LivenessFailure(AssertionError):
    pass


class ScenarioFailure(AssertionError):
    pass


@dataclass(slots=True)
class Workload:
    enabled: bool = True
    counter: int = 0
    pending: list[tuple[int, int, int]] = field(default_factory=list)  # (node, last offset, epoch)
    committed: int = 0


class Harness:
    def __init__(self, seed: int, bugs: BugFlags | None = None, trace_len: int = 120) -> None:
        self.seed = seed
        self.trace_len = trace_len
        self.rng = random.Random(seed)
        self.bugs = bugs or BugFlags()
        self.cluster: Cluster | None = None
        self.work = Workload()
        self.max_commit_wait_ms = 0  # the slowest liveness check of the run (reported by sweeps)

    # ----- setup -----
    def setup(
        self,
        voters: int,
        observers: int = 0,
        faults: NetworkFaults | None = None,
        check_monotonic_epoch: bool = True,
        check_majority_hwm: bool = True,
        fetch_max_bytes: int | None = None,
        snapshots: bool = False,
        kraft_version: int = 0,
        cluster_class: type[Cluster] = Cluster,
        configure: Callable[[Cluster], None] | None = None,
    ) -> Cluster:
        """``cluster_class``: Cluster, or a subclass running a state machine on the nodes (the controller).
        ``snapshots``: the nodes' state machines snapshot at random times and every snapshot deletes the
        log it covers (retention 0), so lagging replicas must catch up with FetchSnapshot. ``configure`` runs
        before any node starts (per-node start-up voters and configs: kraftd.sim.membership)."""
        rng = self.rng
        vids = list(range(voters))
        oids = list(range(voters, voters + observers))
        cfg = QuorumConfig(
            bugs=self.bugs,
            fetch_max_bytes=fetch_max_bytes or 8 * 1024 * 1024,
            retention_bytes=0 if snapshots else QuorumConfig().retention_bytes,
        )
        checker = Checker(tuple(vids), check_monotonic_epoch, check_majority_hwm)
        c = cluster_class(
            rng,
            vids,
            oids,
            cfg,
            checker,
            max_storage_delay_ms=rng.choice([0, 2, 5, 20]),
            trace_len=self.trace_len,
            kraft_version=kraft_version,
        )
        c.net.faults = faults or NetworkFaults(
            max_delay_ms=rng.choice([2, 5, 10, 30]),
            disconnect_rate=rng.choice([0.0, 0.01, 0.05]),
            duplicate_rate=rng.choice([0.0, 0.01, 0.05]),
        )
        c.roundtrip = wire_roundtrip(rng, 0.1)
        self.cluster = c
        if configure is not None:
            configure(c)
        for i in [*vids, *oids]:
            c.start(i)
        self._schedule_append(c)
        if snapshots:
            self._schedule_snapshot(c)
        return c

    def _schedule_snapshot(self, c: Cluster) -> None:
        def tick() -> None:
            up = [i for i in c.nodes if c.is_up(i)]
            if up:
                c.snapshot(self.rng.choice(up))
            self._schedule_snapshot(c)

        c.at(c.now + self.rng.randint(100, 800), tick)

    @property
    def c(self) -> Cluster:
        assert self.cluster is not None
        return self.cluster

    # ----- reads (invariant 12) -----
    def enable_reads(self, min_gap_ms: int = 5, max_gap_ms: int = 80) -> None:
        """Clients read at random up nodes (voters and observers) from now on, each read a barrier."""
        c = self.c

        def tick() -> None:
            up = [i for i in c.nodes if c.is_up(i)]
            if up:
                c.read(self.rng.choice(up))
            c.at(c.now + self.rng.randint(min_gap_ms, max_gap_ms), tick)

        c.at(c.now + self.rng.randint(min_gap_ms, max_gap_ms), tick)

    # ----- workload -----
    def _schedule_append(self, c: Cluster) -> None:
        c.at(c.now + self.rng.randint(10, 150), lambda: self._append_tick(c))

    def _append_tick(self, c: Cluster) -> None:
        if self.work.enabled:
            self.append_now()
        self._schedule_append(c)

    def append_now(self) -> tuple[int, int, int] | None:
        c = self.c
        leader = c.leader()
        if leader is None:
            return None
        self.work.counter += 1
        values = [f"s{self.seed}-r{self.work.counter}-{i}".encode() for i in range(self.rng.randint(1, 3))]
        got = c.append(leader.local.id, values)
        if got is None:
            return None
        entry = (leader.local.id, got[0], got[1])
        self.work.pending.append(entry)
        return entry

    def is_committed(self, entry: tuple[int, int, int]) -> bool:
        node_id, last, epoch = entry
        core = self.c.nodes[node_id].core
        return core is not None and core.epoch == epoch and core.high_watermark > last

    # ----- waiting -----
    def run(self, ms: int) -> None:
        self.c.run_until(self.c.now + ms)

    def wait_leader(self, timeout_ms: int = LIVENESS_BOUND_MS, exclude: int | None = None) -> RaftNode:
        c = self.c

        def ready() -> bool:
            lead = c.leader()
            return lead is not None and lead.local.id != exclude and lead.high_watermark > 0

        if not c.run_until(c.now + timeout_ms, ready):
            raise LivenessFailure(f"no leader within {timeout_ms} ms (t={c.now})")
        lead = c.leader()
        assert lead is not None
        return lead

    def wait_commit(self, timeout_ms: int = LIVENESS_BOUND_MS) -> None:
        """Liveness: a fresh append commits within the bound (retried on every new leader)."""
        c = self.c
        start = c.now
        deadline = c.now + timeout_ms
        while c.now < deadline:
            entry = self.append_now()
            if entry is None:
                c.run_until(min(deadline, c.now + 50))
                continue
            epoch = entry[2]

            def done(entry: tuple[int, int, int] = entry, epoch: int = epoch) -> bool:
                lead = c.leader()
                return self.is_committed(entry) or lead is None or lead.epoch != epoch

            c.run_until(deadline, done)
            if self.is_committed(entry):
                self.max_commit_wait_ms = max(self.max_commit_wait_ms, c.now - start)
                return
        raise LivenessFailure(f"no append committed within {timeout_ms} ms (t={c.now})")

    def up_voters(self) -> list[int]:
        return [i for i in self.c.voter_ids if self.c.is_up(i)]

    def role(self, node_id: int) -> Role | None:
        core = self.c.nodes[node_id].core
        return None if core is None else core.role
