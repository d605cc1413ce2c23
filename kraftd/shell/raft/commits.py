"""Appends waiting for their commit (kraftd.shell.node contract 7).

Contracts:
1. A waiter is (last offset, epoch of the append, future). It resolves with the last offset once the high
   watermark passes it and the committed batch at that offset carries the append's epoch (Raft's log matching:
   same offset and epoch means the same entry).
2. It fails with NotLeaderError when the records can no longer commit (AppendFailed, stop), when the leader or
   epoch changes first, or when another leader's batch committed at that offset: a deposed leader's high
   watermark, advanced as a follower, covers the new leader's records at those offsets, and resolving then
   would acknowledge records that were truncated away. Either guard alone closes the hole; both are kept.
3. Waiters exist only while this node leads one epoch; ``on_leader`` with a new (leader, epoch) fails them all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kraftd.core.replication import NotLeaderError
from kraftd.core.types import LeaderAndEpoch

Waiter = tuple[int, int, "asyncio.Future[int]"]


class CommitWaiters:
    def __init__(self, core: Callable[[], Any]) -> None:
        self._core = core  # the Raft core, looked up on use (tests swap it)
        self.waiters: list[Waiter] = []
        self._last_leader: tuple[int, int] | None = None

    def add(self, last: int, epoch: int) -> asyncio.Future[int]:
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.waiters.append((last, epoch, fut))
        return fut

    def on_commit(self, hwm: int) -> None:
        """Contracts 1 and 2: resolve what the high watermark passed, if the committed batch is ours."""
        keep = []
        for last, epoch, fut in self.waiters:
            if last >= hwm:
                keep.append((last, epoch, fut))
            elif fut.done():
                continue
            elif self._holds(last, epoch):
                fut.set_result(last)
            else:
                fut.set_exception(
                    NotLeaderError(f"the record at offset {last} was replaced by another leader's")
                )
        self.waiters = keep

    def _holds(self, offset: int, epoch: int) -> bool:
        found = self._core().log.read(offset, 1)
        return bool(found) and found[0].epoch == epoch

    def fail_range(self, first: int, last: int) -> None:
        keep = []
        for off, epoch, fut in self.waiters:
            if first <= off <= last:
                if not fut.done():
                    fut.set_exception(NotLeaderError(f"records up to offset {off} will not commit"))
            else:
                keep.append((off, epoch, fut))
        self.waiters = keep

    def on_leader(self, leader: LeaderAndEpoch) -> None:
        """Contract 3."""
        changed = (leader.leader_id, leader.epoch) != self._last_leader
        self._last_leader = (leader.leader_id, leader.epoch)
        if changed and self.waiters:
            waiters, self.waiters = self.waiters, []
            for off, _, fut in waiters:
                if not fut.done():
                    fut.set_exception(
                        NotLeaderError(
                            f"leadership changed (leader {leader.leader_id}, epoch {leader.epoch}) "
                            f"before offset {off} committed"
                        )
                    )

    def fail_all(self, reason: str) -> None:
        for _, _, fut in self.waiters:
            if not fut.done():
                fut.set_exception(NotLeaderError(reason))
        self.waiters.clear()
