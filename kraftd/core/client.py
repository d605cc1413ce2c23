"""A sans-IO RaftClient facade over RaftNode (Kafka's RaftClient, without threads or futures).

Contract for the shell (the daemon wraps each method with asyncio):
1. ``step(event)`` feeds one event and returns the effects to execute (kraftd.core.effects contract);
   registered listeners are called synchronously, before it returns, for ``ApplyCommitted`` and
   ``LeaderChanged`` effects, in effect order.
1a. A client built with ``notify=False`` returns the same effects from ``step`` without calling the listeners: the
   caller then hands
   every ``ApplyCommitted``, ``LeaderChanged`` and ``SnapshotLoaded`` of them, in effect order, to
   :meth:`RaftClient.deliver`, which calls the listeners as ``step`` would have (the asyncio shell does so after
   the step's storage effects and sends: persist, then send, then apply; kraftd.shell.node contract 13).
2. ``append(records)`` returns the ``OffsetRange`` the records will occupy, or raises ``NotLeaderError``;
   they are committed once a ``handle_commit`` call reports ``high_watermark > range.last``, and never if an
   ``AppendFailed`` covering them is emitted. Call ``step(Tick(now))`` after appending so the linger
   deadline is scheduled.
3. ``describe_quorum()`` returns what DescribeQuorum needs; it raises ``NotLeaderError`` on a non-leader.
4. Snapshots (KIP-630): the state machine calls ``create_snapshot(end_offset, values)`` with the records that
   rebuild its state as of ``end_offset`` (a committed batch boundary it has applied), typically when
   ``snapshot_due()`` says so; the core never looks inside the values. A listener that also defines
   ``handle_load_snapshot(snapshot)`` is called with a snapshot to replace its state with (on start and when a
   follower fetched one), before the ``handle_commit`` calls that continue after it.
5. ``read_barrier()`` returns a ticket; a later ``ReadResolved(ticket, error)`` effect (after the
   ``ApplyCommitted`` effects it waited for, so listeners have applied them) ends it. Error 0: serve the read
   from the listener's state now and it is linearizable; NOT_CONTROLLER / REQUEST_TIMED_OUT: do not serve.
   Step ``ReadsDue(now)`` after starting barriers (any event does; that one runs the read path only,
   kraftd.core.reads invariant 7) so the core asks for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from kraftd.core.effects import ApplyCommitted, Effect, LeaderChanged, SnapshotLoaded
from kraftd.core.events import Event
from kraftd.core.log import LogBatch
from kraftd.core.node import RaftNode
from kraftd.core.replication import NotLeaderError, reported_high_watermark
from kraftd.core.snapshots import Snapshot
from kraftd.core.snapshotting import SnapshotPlan
from kraftd.core.states import Leader
from kraftd.core.types import LeaderAndEpoch, OffsetRange


class RaftListener(Protocol):
    def handle_commit(self, batches: tuple[LogBatch, ...], high_watermark: int) -> None: ...

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None: ...


@dataclass(frozen=True, slots=True)
class ReplicaInfo:
    replica_id: int
    directory_id: object | None
    log_end_offset: int
    last_fetch_timestamp: int
    last_caught_up_timestamp: int


@dataclass(frozen=True, slots=True)
class QuorumInfo:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaInfo, ...]
    observers: tuple[ReplicaInfo, ...]


class RaftClient:
    def __init__(self, node: RaftNode, *, notify: bool = True) -> None:
        self.node = node
        self.notify = notify  # contract 1a
        self._listeners: list[RaftListener] = []

    def register(self, listener: RaftListener) -> None:
        self._listeners.append(listener)

    def step(self, event: Event) -> list[Effect]:
        """Contracts 1 and 1a."""
        effects = self.node.step(event)
        if self.notify:
            for e in effects:
                self.deliver(e)
        return effects

    def deliver(self, e: Effect) -> None:
        """Contract 1a: the listeners' calls for one effect (nothing for an effect they do not take)."""
        if isinstance(e, ApplyCommitted):
            for lst in self._listeners:
                lst.handle_commit(e.batches, e.high_watermark)
        elif isinstance(e, LeaderChanged):
            for lst in self._listeners:
                lst.handle_leader_change(e.leader)
        elif isinstance(e, SnapshotLoaded):
            for lst in self._listeners:
                load = getattr(lst, "handle_load_snapshot", None)
                if load is not None:
                    load(e.snapshot)

    def append(self, records: list[bytes]) -> OffsetRange:
        return self.node.append(records)

    def read_barrier(self) -> int:
        """Contract 5: a ticket; the ``ReadResolved`` effect carrying it says when (and whether) the image the
        listeners have applied is at least as new as the leader's at this call (kraftd.core.reads)."""
        return self.node.read_barrier()

    def create_snapshot(self, end_offset: int, values: list[bytes]) -> Snapshot:
        """Contract 4; raises SnapshotOffsetError for an offset that is not a committed batch boundary past
        the latest snapshot. Call ``step(Tick(now))`` afterwards to get the effects."""
        return self.node.create_snapshot(end_offset, values)

    def plan_snapshot(self, end_offset: int) -> SnapshotPlan:
        """Contract 4 in two parts: :meth:`plan_snapshot` checks the offset and returns a plan whose pure
        ``build(values)`` may run on another thread; :meth:`add_snapshot` then takes the built snapshot (checked
        again; SnapshotOffsetError when it is no longer past the latest one)."""
        return self.node.plan_snapshot(end_offset)

    def add_snapshot(self, snap: Snapshot) -> Snapshot:
        return self.node.add_snapshot(snap)

    def snapshot_due(self) -> bool:
        return self.node.snapshot_due()

    @property
    def latest_snapshot(self) -> Snapshot | None:
        return self.node.snapshot

    @property
    def leader_and_epoch(self) -> LeaderAndEpoch:
        return self.node.leader_and_epoch()

    @property
    def high_watermark(self) -> int:
        return self.node.high_watermark

    def describe_quorum(self) -> QuorumInfo:
        node = self.node
        d = node.data
        if not isinstance(d, Leader):
            raise NotLeaderError(f"node {node.local.id} is not the leader")
        now = node.now
        me = ReplicaInfo(node.local.id, node.local.directory_id, node.log.end_offset, now, now)
        voters: list[ReplicaInfo] = []
        observers: list[ReplicaInfo] = []
        for rid, p in sorted(d.replicas.items()):
            info = ReplicaInfo(rid, p.key.directory_id, p.end_offset, p.last_fetch_ms, p.last_caught_up_ms)
            (voters if node.voters.has_id(rid) else observers).append(info)
        if node.is_voter:
            voters.insert(0, me)
        else:
            observers.insert(0, me)
        hwm = reported_high_watermark(node, d)
        return QuorumInfo(node.local.id, node.epoch, hwm, tuple(voters), tuple(observers))
