"""Shell glue between the Raft client and the metadata state machine (kraftd.controller).

Contracts:
1. The glue is a RaftClient listener: committed batches are replayed into the state machine, on every node, and
   nowhere else (a record is applied in one place): for up to ``SLICE_S`` inside the core's step, the rest in
   slices of ``SLICE_S`` in later event loop turns (kraftd.controller.machine contract 6), so a large
   committed batch never holds the loop (issue 22: a 10k-partition CreateTopics stalled every node for
   0.2-0.5 s). :meth:`caught_up` waits until everything committed so far is replayed (reads answer after it).
   The first time replay reaches the high watermark after the node learned one from the quorum (a commit), the
   node logs Kafka's MetadataLoader line ``The loader finished catching up to the current high water mark of N``
   once: a restarted controller is ready to lead only from then (kraftd.testing.swarm waits for that line on
   either kind before it kills again).
2. After each step the shell calls :meth:`ControllerGlue.after_step`; when the state machine reports activation
   records (first active leadership), they are appended as one batch and applied to the uncommitted view.
3. :meth:`ControllerGlue.write` is how RPC handlers write: validated records -> one atomic append -> resolved
   after commit; NotControllerError when this node is not the active controller.
4. :meth:`ControllerGlue.run_idle_writes` appends the state machine's idle records (a NoOpRecord) every
   ``metadata.max.idle.interval.ms`` while this node is the active controller (kraftd.controller.machine 5).
5. :meth:`ControllerGlue.settled` returns once the uncommitted view holds every record appended before the call,
   applied in the drain's slices (contract 1); a write's handler awaits it before it reads :meth:`MetadataController.latest`,
   which would otherwise apply all of them in one step (issue 24: a heartbeat or the session check arriving after
   a few 5k-partition CreateTopics writes applied them all at once, 0.5 s on the loop).
7. :meth:`ControllerGlue.compute` runs an operation's computing steps (a generator, e.g.
   kraftd.controller.topics contract 4) for up to ``SLICE_S`` a loop turn, so Raft traffic is served between its
   slices; the records it returns are written by the caller as one atomic batch (contract 3).
8. :meth:`ControllerGlue.frame` encodes a large write's records in the same slices (``FRAME_STEP`` records between
   two looks at the clock) for the metadata.version the latest image has once settled; :meth:`write` takes that
   framing when the version is still the same, so a 5,050-record CreateTopics write is never encoded in one step
   (issue 24: 60-95 ms of the loop's CPU in one callback at 1M partitions). The caller frames BEFORE its last
   validation: nothing yields between that validation and the append (the write stays atomic).
9. One budget a loop turn (:class:`TurnBudget`): the replay drain (contract 1) and every computing operation
   (contracts 7, 8) share ``SLICE_S`` a turn, opened by the first of them to run in the turn, instead of each
   taking ``SLICE_S`` (issue 24: a drain slice, a CreateTopics compute slice and its framing each under budget
   made turns of 60+ ms before the observers' Fetch answers and heartbeats of that turn were counted). Each still
   takes at least one step a turn, so none starves.
10. :meth:`ControllerGlue.append_settled` appends records (as :meth:`try_write`) and returns, once they are
   applied to the latest image (contract 5), the future of their commit: a loop of writes each computed from
   ``latest()`` (kraftd.shell.controller.fencing contract 1) computes the next before the last commits. The log
   keeps their order and a lost leadership fails every one not yet committed.
6. :meth:`ControllerGlue.run` is how an RPC handler answers with a controller operation's ControllerResult
   (kraftd.controller.result): log its notes, write its records (contract 3), then its response and done lines
   once they committed, else its ``failed`` response with the write's error (NOT_CONTROLLER).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from kraftd.controller.image_writer import snapshot_values
from kraftd.controller.machine import Framed, MetadataController, NotControllerError
from kraftd.controller.result import ControllerResult
from kraftd.core.log import LogBatch
from kraftd.core.replication import NotLeaderError
from kraftd.core.snapshots import Snapshot
from kraftd.core.types import LeaderAndEpoch, OffsetRange
from kraftd.shell.raft.port import RaftPort
from kwire.errors import ErrorCode


class ControllerPort(RaftPort, Protocol):
    """The Raft side plus the controller glue: what the controller's parts may ask of the node."""

    controller: ControllerGlue
    rng: random.Random


log = logging.getLogger("kraftd.controller")
R = TypeVar("R")
REPLAY_STEP = 25  # records between two looks at the clock
# The longest a turn of the loop replays or computes (contract 9). 10 ms, not 20 (session 17): a timer due during
# a turn runs its task two turns later (its handle in the next turn, the task's wake-up in the one after, behind
# the slicers' continuations), so the lag probe's stall is about three turns; with 20 ms slices at 1M partitions
# those were 20-40 ms each and the stalls logged 100-125 ms.
SLICE_S = 0.01
FRAME_STEP = 250  # records encoded between two looks at the clock (contract 8)


class TurnBudget:
    """Contract 9."""

    def __init__(self) -> None:
        self._until: float | None = None

    def until(self) -> float:
        """When a slicer starting now must yield: the end of this turn's budget (opened now if none is)."""
        if self._until is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no loop (a test driving the node by hand): no turns to share
                return time.perf_counter() + SLICE_S
            self._until = time.perf_counter() + SLICE_S
            loop.call_soon(self._close)  # runs next turn, before the continuations the slicers schedule after
        return self._until

    def _close(self) -> None:
        self._until = None


@dataclass(frozen=True)
class Framing:
    """Contract 8: records encoded for ``metadata_version``, and each one's (api key, version, record)."""

    metadata_version: int
    values: list[bytes]
    framed: list[Framed]


def frame_steps(
    machine: MetadataController, records: Sequence[Any], mv: int
) -> Generator[None, None, Framing]:
    """Contract 8: :meth:`MetadataController.frame` for ``mv``, ``FRAME_STEP`` records at a time."""
    values: list[bytes] = []
    framed: list[Framed] = []
    for i in range(0, len(records), FRAME_STEP):
        if i:
            yield
        chunk_values, chunk_framed = machine.frame(records[i : i + FRAME_STEP], mv)
        values += chunk_values
        framed += chunk_framed
    return Framing(mv, values, framed)


class ControllerGlue:
    def __init__(self, node: RaftPort, machine: MetadataController) -> None:
        self.node = node
        self.machine = machine
        self._draining = False
        self._committed_seen = False
        self._loading = True  # contract 1: until replay first reaches a high watermark the quorum gave
        self._started_at = time.perf_counter()
        self._replayed: asyncio.Event | None = None  # set while nothing committed waits to be replayed
        self._settled: asyncio.Event | None = None  # set while nothing appended waits to be applied
        self._elected_at = (
            time.perf_counter()
        )  # when this node last became the Raft leader (activation's log line)
        self.budget = TurnBudget()  # contract 9

    @property
    def end_offset(self) -> int:
        """The offset after the last committed batch replayed in full (a snapshot may end there)."""
        return self.machine.replayed_end

    # ---- RaftListener (contract 1) ----------------------------------------------------------------------------
    def handle_commit(self, batches: tuple[LogBatch, ...], high_watermark: int) -> None:
        self._committed_seen = True
        self.machine.enqueue(batches, high_watermark)
        if not self._draining:  # else the drain already scheduled replays these too
            self._drain()

    def _drain(self) -> None:
        self._draining = False
        until = self.budget.until()
        while True:
            self.machine.replay_some(REPLAY_STEP)
            self.machine.apply_appended(REPLAY_STEP)
            if not self.machine.apply_pending or time.perf_counter() >= until:
                break
        if self._settled is not None:
            self._settled.set()  # each waiter checks its own end again
        if self.machine.apply_pending:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no loop (a test driving the node by hand): the rest at once
                self.machine.replay_some(None)
                self.machine.apply_appended(None)
            else:
                if self._replayed is not None:
                    self._replayed.clear()
                self._draining = True
                loop.call_soon(self._drain)
                return
        if self._replayed is not None:
            self._replayed.set()
        if self._loading and self._committed_seen:
            self._loading = False
            log.info(
                "node %d: The loader finished catching up to the current high water mark of %d (%.0f ms after start)",
                self.node.config.node_id,
                self.machine.replayed_end,
                (time.perf_counter() - self._started_at) * 1000,
            )
        self.after_step()  # activation may have waited for this replay (machine contract 2)

    async def caught_up(self) -> None:
        """Contract 1: returns once every batch committed so far is replayed."""
        if not self.machine.replay_pending:
            return
        if self._replayed is None:
            self._replayed = asyncio.Event()
        self._replayed.clear()
        await self._replayed.wait()

    async def settled(self) -> None:
        """Contract 5: waits for the records appended before the call only, so a stream of writes cannot starve
        a handler (a heartbeat) that waits here."""
        end = self.machine.appended_end
        while not self.machine.applied_before(end):
            if self._settled is None:
                self._settled = asyncio.Event()
            self._settled.clear()
            if not self._draining:
                self._drain()
                continue
            await self._settled.wait()

    def handle_load_snapshot(self, snapshot: Snapshot) -> None:
        """KIP-630: a snapshot (fetched from the leader, or the latest on disk at start) replaces the committed
        image; replay continues after its end offset."""
        end = snapshot.snapshot_id.offset
        self.machine.load_later(snapshot.batches, end)  # machine contract 6a: in the drain's slices
        if not self._draining:
            self._drain()

    # ---- KIP-630 snapshots of the image (kraftd.controller.image_writer) ---------------------------------------
    @property
    def snapshot_safe(self) -> bool:
        """Kafka never snapshots inside an open metadata transaction; nor inside a batch being replayed."""
        return self.machine.committed.pending_transaction is None and not self.machine.replay_pending

    def snapshot_values(self) -> list[bytes]:
        """The committed image as records, for a snapshot ending at :attr:`end_offset`."""
        return snapshot_values(self.machine.committed)

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        if leader.leader_id == self.node.config.node_id:
            self._elected_at = time.perf_counter()
            self.machine.become_leader(leader.epoch, self.node.core.log.end_offset)
        else:
            self.machine.resign(leader.epoch)

    # ---- activation (contract 2) ------------------------------------------------------------------------------
    def after_step(self) -> None:
        records = self.machine.activation_records()
        if records is None:
            return
        log.info(
            "node %d: active controller in epoch %d, %.0f ms after its election (replayed to the election's log end)",
            self.node.config.node_id,
            self.machine.leader_epoch,
            (time.perf_counter() - self._elected_at) * 1000,
        )
        if records:
            log.info(
                "node %d: controller activation, appending %d record(s) at epoch %d",
                self.node.config.node_id,
                len(records),
                self.machine.leader_epoch,
            )
            self.node.spawn_task(self._append_logged(records))

    async def _append_logged(self, records: Sequence[Any]) -> None:
        try:
            await self.write(records)
        except Exception as exc:  # noqa: BLE001 - a lost leadership is normal; the next leader activates
            log.warning("node %d: activation records did not commit: %s", self.node.config.node_id, exc)

    # ---- writes (contract 3) ----------------------------------------------------------------------------------
    async def frame(self, records: Sequence[Any]) -> Framing:
        """Contract 8 (yields: call it before the write's last validation)."""
        await self.settled()
        return await self.compute(frame_steps(self.machine, records, self.machine.write_metadata_version()))

    async def write(self, records: Sequence[Any], framing: Framing | None = None) -> int:
        """Append ``records`` atomically as the active controller; the last offset once committed. ``framing``:
        their encoding by :meth:`frame` (contract 8), used when the metadata.version is still the same."""
        self.machine.check_active()
        if framing is not None and framing.metadata_version == self.machine.write_metadata_version():
            values, framed = framing.values, framing.framed
        else:
            values, framed = self.machine.frame(records)  # machine contract 3b: applied as objects

        def applied(rng: OffsetRange) -> None:
            self.machine.append_records_later(rng.first, framed)
            if not self._draining:
                self._drain()

        return await self.node.append(values, on_range=applied)

    async def run_idle_writes(self, interval_s: float) -> None:
        """Contract 4 (a task the node owns; cancelled when it stops)."""
        while True:
            await asyncio.sleep(interval_s)
            await self.settled()
            records = self.machine.idle_records()
            if records:
                try:
                    await self.try_write(records)
                except Exception as exc:  # noqa: BLE001 - the next interval tries again
                    log.debug("node %d: idle NoOpRecord not written: %s", self.node.config.node_id, exc)

    async def compute(self, steps: Generator[None, None, R]) -> R:
        """Contract 7."""
        while True:
            until = self.budget.until()
            try:
                while True:
                    next(steps)
                    if time.perf_counter() >= until:
                        break
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            await asyncio.sleep(0)

    async def run(self, result: ControllerResult[R], framing: Framing | None = None) -> R:
        """Contract 5 (``framing``: contract 8)."""
        for fmt, args in result.notes:
            log.info(fmt, *args)
        error = await self.try_write(result.records, framing)
        if error:
            return result.failed(error)
        for fmt, args in result.done:
            log.info(fmt, *args)
        return result.response

    async def write_settled(self, records: Sequence[Any]) -> ErrorCode:
        """:meth:`try_write`, then :meth:`settled` (contract 5): for a loop of writes each computed from
        ``latest()`` (kraftd.shell.controller.fencing), so the next one does not apply in one step whatever other
        writes (a 5,000-partition CreateTopics) appended meanwhile."""
        error = await self.try_write(records)
        await self.settled()
        return error

    async def append_settled(self, records: Sequence[Any]) -> asyncio.Future[ErrorCode]:
        """Contract 10."""
        written = asyncio.ensure_future(self.try_write(records))
        await asyncio.sleep(0)  # its first step appends (the node appends before it awaits the commit)
        await self.settled()
        return written

    async def try_write(self, records: Sequence[Any], framing: Framing | None = None) -> ErrorCode:
        """:meth:`write` for RPC handlers: NONE once committed (or nothing to write), NOT_CONTROLLER when this node
        is not, or stops being, the active controller before the records commit."""
        if not records:
            return ErrorCode.NONE
        try:
            await self.write(records, framing)
        except (NotControllerError, NotLeaderError):
            return ErrorCode.NOT_CONTROLLER
        return ErrorCode.NONE
