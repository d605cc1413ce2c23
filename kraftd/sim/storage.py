"""A simulated node's durable storage (what survives a crash) and its volatile incarnation.

Invariant: ``Storage`` holds only what the node made durable: its election state, the flushed prefix of its log
and its latest complete snapshot; everything else lives in ``SimNode.core`` and ``SimNode.state`` and is lost
on a crash (kraftd.sim.cluster invariant 3).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kraftd.core.log import LogBatch
from kraftd.core.node import RaftNode
from kraftd.core.snapshots import Snapshot
from kraftd.core.types import ElectionState


@dataclass(slots=True)
class Storage:
    election: ElectionState = field(default_factory=ElectionState)
    batches: list[LogBatch] = field(default_factory=list)
    snapshot: Snapshot | None = None  # the latest durable snapshot (KIP-630)

    @property
    def end_offset(self) -> int:
        return self.batches[-1].next_offset if self.batches else 0


@dataclass(slots=True)
class SimNode:
    node_id: int
    storage: Storage = field(default_factory=Storage)
    core: RaftNode | None = None
    incarnation: int = 0
    tick_at: int | None = None
    state: list[bytes] = field(default_factory=list)  # the state machine: committed data values (volatile)
