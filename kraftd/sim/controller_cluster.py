"""The simulated cluster with the metadata state machine (kraftd.controller) on every node, on top of the Raft
core, answering brokers' requests (brokers are clients: kraftd.sim.controller_brokers).

Contracts:
1. Each live node runs a :class:`MetadataController` fed exactly as the daemon's glue feeds it: committed batches
   (``ApplyCommitted``) are replayed, a loaded snapshot (``SnapshotLoaded``) replaces the committed image, and the
   Raft role decides leadership (become_leader / resign). A crash loses the controller; a restart rebuilds it from
   the durable snapshot and log only.
2. Writes go through the active controller only: validated against its latest (uncommitted) image, framed at the
   metadata.version's record versions, appended as one batch, applied to the uncommitted view, and answered once
   the batch commits in the same epoch (NOT_CONTROLLER if leadership is lost first).
3. The active controller fences brokers whose session timed out (broker.session.timeout.ms) on its own periodic
   duty; heartbeat clocks are in memory and restart with each new leader, as in Kafka.
4. Snapshots are the committed image written as records (kraftd.controller.image_writer), at the end of the last
   committed batch replayed, never inside a metadata transaction. Workload appends are NoOpRecords.
5. Broker traffic crosses the simulated network: delayed, dropped or duplicated, and cut by partitions (brokers
   have ids of their own, so a scenario can cut them off from some controllers).
6. A node's event loop is one thread (issue 22): the virtual time a step costs makes the node busy, and every
   event (Raft messages, timers, broker requests) reaching it meanwhile waits until it is free. The cost model
   charges activation what it costs on the daemon's loop for an image of ``image_weight`` more partitions than
   the simulated one: O(1) with the persistent image (kraftd.controller.image 3), and, with the planted
   ``copy_image_on_activation``, the copy made before issue 22 (``COPY_US_PER_PARTITION``, measured).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

from generated.no_op_record import NoOpRecord
from kraftd.controller import brokers as cb
from kraftd.controller.features import ELR_VERSION, bootstrap_feature_records, resolve_features
from kraftd.controller.image_writer import image_from_batches, snapshot_values
from kraftd.controller.machine import MetadataController
from kraftd.core import effects as fx
from kraftd.core.config import QuorumConfig
from kraftd.core.events import Event, Tick
from kraftd.core.node import RaftNode
from kraftd.core.replication import NotLeaderError
from kraftd.core.states import Leader
from kraftd.core.types import Role
from kraftd.sim.cluster import Cluster
from kraftd.sim.controller_invariants import ControllerChecker
from kraftd.sim.invariants import Checker
from kraftd.sim.storage import SimNode
from kwire.errors import ErrorCode
from kwire.metadata_frame import encode_record

Reply = Callable[[ErrorCode], None]
MVS = (8, 14, 17, 23, 30)  # 3.4-IV0, 3.6-IV2, 3.7-IV2 (directories), 4.0-IV1 (ELR), 4.3-IV0
DUTY_MS = 250  # how often the active controller looks for expired broker sessions
COPY_US_PER_PARTITION = 37  # MetadataImage.copy (copy.deepcopy) before issue 22: 3.69 s at 100k partitions


class ControllerCluster(Cluster):
    def __init__(
        self,
        rng: random.Random,
        voters: list[int],
        observers: list[int],
        config: QuorumConfig,
        checker: Checker,
        **kw: Any,
    ) -> None:
        ours = ControllerChecker(checker.voters, checker.check_monotonic_epoch, checker.check_majority_hwm)
        super().__init__(rng, voters, observers, config, ours, **kw)
        self.cchecker = ours
        self.bugs = config.bugs
        # A metadata.version per run: with or without metadata transactions, directories, ELR fields.
        mv = rng.choice(MVS)
        levels = resolve_features(None, {"metadata.version": mv})
        self.bootstrap = [encode_record(r, 0) for r in bootstrap_feature_records(levels)]
        # With ELR on (KIP-966), a cluster-level min.insync.replicas of 2 half the time, so ISR shrinks below it
        # (and ELR upkeep) happen without the ISR emptying.
        self.min_isr = rng.choice((1, 2)) if levels.get(ELR_VERSION, 0) >= 1 else 1
        self.session_timeout_ms = 2000
        self.machines: dict[int, MetadataController] = {}
        self.heartbeats: dict[int, cb.Heartbeats] = {}
        self.end_offsets: dict[int, int] = {}
        self.waiting: dict[int, list[tuple[int, int, Reply]]] = {}
        self._settled_at: dict[int, tuple[int, int]] = {}  # (epoch, offset) of the last (29) check per node
        self.snapshot_loads = 0  # images rebuilt from a snapshot (a restart, or one fetched from the leader)
        self.image_weight = 0  # contract 6: partitions the cost model adds to every image
        self.busy_until: dict[int, int] = {}

    # ----- life cycle (contract 1) -----
    def start(self, node_id: int) -> None:
        self.machines[node_id] = MetadataController(node_id, self.bootstrap, min_insync_replicas=self.min_isr)
        self.heartbeats[node_id] = cb.Heartbeats(self.session_timeout_ms)
        self.end_offsets[node_id] = 0
        self.waiting[node_id] = []
        super().start(node_id)
        inc = self.nodes[node_id].incarnation
        self.at(self.now + DUTY_MS, partial(self._duty, node_id, inc))

    def crash(self, node_id: int, lose_state: bool = False) -> None:
        super().crash(node_id, lose_state)
        self.machines.pop(node_id, None)
        self.waiting[node_id] = []
        self.busy_until.pop(node_id, None)

    # ----- a node's single event loop (contract 6) -----
    def deliver(self, node_id: int, event: Event) -> None:
        until = self.busy_until.get(node_id, 0)
        if until > self.now:
            self.at(until, partial(self._later, node_id, self.nodes[node_id].incarnation, event))
            return
        super().deliver(node_id, event)

    def _later(self, node_id: int, inc: int, event: Event) -> None:
        if self.nodes[node_id].incarnation == inc:
            self.deliver(node_id, replace(event, now_ms=self.now))

    def activation_cost_ms(self, m: MetadataController) -> int:
        if not self.bugs.copy_image_on_activation:
            return 0
        held = sum(len(t.partitions) for t in m.committed.topics.values())
        return (held + self.image_weight) * COPY_US_PER_PARTITION // 1000

    def _execute(self, n: SimNode, core: RaftNode, out: list[fx.Effect], event: Event) -> None:
        super()._execute(n, core, out, event)
        nid = n.node_id
        m = self.machines.get(nid)
        if m is None or n.core is not core:
            return
        for e in out:
            if isinstance(e, fx.ApplyCommitted) and e.batches:
                m.replay(e.batches, core.high_watermark)
                end = e.batches[-1].next_offset
                self.end_offsets[nid] = max(self.end_offsets[nid], end)
                self.cchecker.on_node_commit(nid, self.end_offsets[nid], m.committed)
            elif isinstance(e, fx.SnapshotLoaded):
                end = e.snapshot.snapshot_id.offset
                m.committed = image_from_batches(e.snapshot.batches, end)
                m.uncommitted = None
                self.end_offsets[nid] = end
                self.snapshot_loads += 1
                self.cchecker.on_node_commit(nid, end, m.committed)
        self._sync_leadership(nid, core, m)
        self._resolve(nid, core)
        d = core.data
        settled = isinstance(d, Leader) and not d.pending and core.high_watermark == core.log.end_offset
        if settled and m.active and m.uncommitted is not None and m.committed.offset == m.uncommitted.offset:
            if self._settled_at.get(nid) != (core.epoch, m.committed.offset):  # once per commit
                self._settled_at[nid] = (core.epoch, m.committed.offset)
                self.cchecker.on_settled_leader(nid, m.uncommitted, m.committed)

    def _sync_leadership(self, nid: int, core: RaftNode, m: MetadataController) -> None:
        leading = core.role is Role.LEADER
        if leading and (not m.leading or m.leader_epoch != core.epoch):
            m.become_leader(core.epoch, core.log.end_offset)
            self.heartbeats[nid] = cb.Heartbeats(self.session_timeout_ms)
        elif not leading and m.leading:
            m.resign(core.epoch)
        was_active = m.active
        records = m.activation_records()
        if m.active and not was_active:
            self.busy_until[nid] = self.now + self.activation_cost_ms(m)
        if records:
            self.trace.append(f"{self.now:>7} n{nid} controller active, {len(records)} activation record(s)")
            self.write(nid, records, lambda err: None)

    def _resolve(self, nid: int, core: RaftNode) -> None:
        """Contract 2: answer writes whose batch committed, or failed with the leadership."""
        pending = self.waiting.get(nid)
        if not pending:
            return
        keep = []
        for last, epoch, reply in pending:
            if core.epoch != epoch or core.role is not Role.LEADER:
                reply(ErrorCode.NOT_CONTROLLER)
            elif core.high_watermark > last:
                reply(ErrorCode.NONE)
            else:
                keep.append((last, epoch, reply))
        self.waiting[nid] = keep

    # ----- writes (contract 2) -----
    def write(self, nid: int, records: list[Any], reply: Reply) -> None:
        m = self.machines.get(nid)
        core = self.nodes[nid].core
        if m is None or core is None or not m.active:
            reply(ErrorCode.NOT_CONTROLLER)
            return
        if not records:
            reply(ErrorCode.NONE)
            return
        values, framed = m.frame(records)  # the shell's path (kraftd.controller.machine contract 3b)
        try:
            rng = core.append(values)
        except NotLeaderError:
            reply(ErrorCode.NOT_CONTROLLER)
            return
        m.append_records_later(rng.first, framed)
        m.apply_appended(None)
        self.waiting[nid].append((rng.last, rng.epoch, reply))
        self._kick(nid)

    def _kick(self, nid: int) -> None:
        inc = self.nodes[nid].incarnation

        def tick() -> None:
            if self.nodes[nid].incarnation == inc:
                self.deliver(nid, Tick(self.now))

        self.at(self.now, tick)

    def append(self, node_id: int, records: list[bytes]) -> tuple[int, int] | None:
        """Contract 4: the workload's appends are NoOpRecords (through the controller's view when active)."""
        m = self.machines.get(node_id)
        core = self.nodes[node_id].core
        if m is None or core is None:
            return None
        values = m.encode([NoOpRecord() for _ in records])
        try:
            rng = core.append(values)
        except NotLeaderError:
            return None
        m.on_appended(rng.first, values)
        self._kick(node_id)
        return (rng.last, rng.epoch)

    # ----- periodic duty (contract 3) -----
    def _duty(self, nid: int, inc: int) -> None:
        if self.nodes[nid].incarnation != inc:
            return
        m = self.machines.get(nid)
        if m is not None and m.active:
            hb = self.heartbeats[nid]
            for bid in cb.expired(m.latest(), hb, self.now):
                self.trace.append(f"{self.now:>7} n{nid} fences broker {bid} (session timeout)")
                self.write(nid, cb.fence(m.latest(), bid, self.bugs), lambda err: None)
        self.at(self.now + DUTY_MS, partial(self._duty, nid, inc))

    # ----- snapshots (contract 4) -----
    def snapshot(self, node_id: int) -> bool:
        n = self.nodes[node_id]
        core, m = n.core, self.machines.get(node_id)
        if core is None or m is None or m.committed.pending_transaction is not None:
            return False
        end = self.end_offsets[node_id]
        latest = core.snapshot.snapshot_id.offset if core.snapshot is not None else 0
        if end <= latest or end < core.log.start_offset or end > core.high_watermark:
            return False
        core.create_snapshot(end, snapshot_values(m.committed))
        self.trace.append(f"{self.now:>7} n{node_id} image snapshot at {end}")
        self.deliver(node_id, Tick(self.now))
        return True

    # ----- broker traffic (contract 5) -----
    def send(self, src: int, dst: int, action: Callable[[], None]) -> None:
        """Deliver ``action`` from ``src`` to ``dst`` over the simulated network (maybe lost or duplicated)."""
        for delay in self.net.delays():
            self.at(self.now + delay, partial(self._arrive, src, dst, action))

    def _arrive(self, src: int, dst: int, action: Callable[[], None]) -> None:
        until = self.busy_until.get(dst, 0)
        if until > self.now:  # contract 6: a busy node reads the request once free
            self.at(until, partial(self._arrive, src, dst, action))
        elif self.net.reachable(src, dst) and (dst not in self.nodes or self.is_up(dst)):
            action()

    def active_controller(self) -> int | None:
        for nid, m in sorted(self.machines.items()):
            if m.active and self.is_up(nid):
                return nid
        return None
