"""One Fetch answer of ``__cluster_metadata`` as a swarm broker's observer takes it (tools.swarm.broker contract 3).

Contracts:
1. :func:`on_fetch` learns the answer's CurrentLeader, and then: an error backs off (True; a leader that says
   another leads is forgotten); a diverging epoch truncates the position; a snapshot id is returned to be fetched;
   records advance the position to the end of their last complete batch (their batch headers only) and go to the
   shared replay only when it has not applied them yet; an answer that moved the position or the high
   watermark goes to ``hooks.progress``.
2. Nothing of the answer is kept: the caller drops it before its next request, so a broker waiting on its next
   long poll holds no records (1,000 brokers x an 8 MiB catch-up answer each: the swarm's 6.3 GB at 1,000 brokers
   x 1M partitions, docs/SWARM.md session 16).
"""

from __future__ import annotations

from typing import Any, Protocol

from kraftd.core.log import OffsetAndEpoch
from kwire.errors import ErrorCode
from tools.swarm.decoding import SharedDecodes
from tools.swarm.replay import SharedReplay


class ObserverHooks(Protocol):
    """What an answer reaches beyond its broker (tools.swarm.broker.Hooks has these)."""

    replay: SharedReplay
    decodes: SharedDecodes

    def progress(self, broker: Any) -> None: ...


class Observer(Protocol):
    """The observer's state an answer moves (tools.swarm.broker.SwarmBroker has it; no import of it here)."""

    leader_id: int
    fetch_end: int
    last_epoch: int
    hwm: int

    @property
    def hooks(self) -> ObserverHooks: ...

    def learn_leader(self, leader_id: int, leader_epoch: int) -> None: ...


def on_fetch(b: Observer, node: int, resp: Any) -> bool | OffsetAndEpoch:
    """Contract 1: True to back off, a snapshot to fetch, else False (fetch again at once)."""
    if not resp.responses or not resp.responses[0].partitions:
        return True
    part = resp.responses[0].partitions[0]
    b.learn_leader(part.current_leader.leader_id, part.current_leader.leader_epoch)
    if resp.error_code != ErrorCode.NONE or part.error_code != ErrorCode.NONE:
        if node == b.leader_id and part.current_leader.leader_id != node:
            b.leader_id = -1
        return True
    if part.diverging_epoch.epoch >= 0:
        b.fetch_end = min(b.fetch_end, part.diverging_epoch.end_offset)
        b.last_epoch = part.diverging_epoch.epoch
        return False
    if part.snapshot_id.end_offset >= 0:
        return OffsetAndEpoch(part.snapshot_id.end_offset, part.snapshot_id.epoch)
    moved = part.high_watermark != b.hwm
    records = part.records
    if records:
        ends = b.hooks.decodes.batch_ends(records)
        if ends is not None:
            if b.hooks.replay.next_offset < ends[0]:
                b.hooks.replay.feed(records)
            b.fetch_end, b.last_epoch = ends
            moved = True
    b.hwm = part.high_watermark
    if moved:
        b.hooks.progress(b)
    return False
