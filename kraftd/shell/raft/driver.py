"""The Raft driver: the one task that steps the core and executes its effects (kraftd.shell.node contracts 4,
4a, 8, 12, 13; their text is in kraftd.shell.node, which owns a :class:`RaftDriver`).

The driver depends on :class:`DriverPort` (the RaftPort plus the parts it hands effects to), never on
ControllerNode.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Protocol

from kraftd.core import effects as fx
from kraftd.core.events import Event, RequestReceived, ResponseReceived, Tick
from kraftd.core.types import LeaderAndEpoch
from kraftd.shell.controller.glue import SLICE_S, ControllerGlue
from kraftd.shell.net import peers
from kraftd.shell.observe.metrics import NodeMetrics
from kraftd.shell.observe.observer import NodeObserver
from kraftd.shell.raft.clock import now_ms
from kraftd.shell.raft.commits import CommitWaiters
from kraftd.shell.raft.flushing import LogFlusher
from kraftd.shell.raft.inbox import EventInbox
from kraftd.shell.raft.persistence import DiskMirror
from kraftd.shell.raft.snapshot_writer import SnapshotWriter
from kwire import stagetrace

log = logging.getLogger("kraftd.node")
DRIVE_SLICE_S = SLICE_S  # node contract 4b: stepping queued events for longer gives the loop a turn first
# Effects the disk mirror executes in order, before any later effect of the step (node contract 4).
_STORAGE_EFFECTS = fx.PersistElectionState | fx.TruncateLog | fx.AppendBatches | fx.WriteSnapshot
_STORAGE_EFFECTS |= fx.InstallSnapshot | fx.DeleteLogBefore
# Effects applied after the step's storage effects and sends, in effect order (node contract 13).
_APPLY_EFFECTS = fx.ApplyCommitted | fx.LeaderChanged | fx.SnapshotLoaded | fx.AppendFailed | fx.ReadResolved


class DriverPort(peers.PeersPort, Protocol):
    """What the driver asks of the node: the parts effects go to, and its commit and leader bookkeeping."""

    mirror: DiskMirror
    flusher: LogFlusher
    commits: CommitWaiters
    controller: ControllerGlue
    snapshots: SnapshotWriter
    observer: NodeObserver
    metrics: NodeMetrics

    @property
    def stopping(self) -> bool: ...

    @property
    def closing(self) -> bool: ...

    def commit_seen(self, hwm: int) -> None: ...

    def leader_seen(self, leader: LeaderAndEpoch) -> None: ...


class RaftDriver:
    def __init__(self, node: DriverPort) -> None:
        self.node = node
        self.events = EventInbox()
        self.deadline = 0
        self.pending: dict[int, asyncio.Future[Any] | Any] = {}  # a future, or a reply (contract 12)
        self.next_token = 1
        self.tick_queued = False
        self.stepping = False
        self.batching = False  # inside step_now's run of queued events (contract 13)
        self.applies: list[fx.Effect] = []  # contract 13: apply effects not yet applied, in effect order
        self.inline_busy = 0.0  # seconds of contract 4a steps, not the driver's idle time
        self.task: asyncio.Task[None] | None = None
        self.yields = 0  # loop turns given up with events still queued (node contract 4b)

    def start(self) -> None:
        self.task = asyncio.create_task(self._drive())

    def _fatal(self, exc: BaseException) -> None:
        """Contract 8: any driver failure stops the node."""
        log.critical("node %d stopping on a fatal error: %s", self.node.config.node_id, exc)
        self.node.fatal = exc
        self.node.spawn_task(self.node.shutdown())

    async def _drive(self) -> None:
        try:
            self.step(Tick(now_ms()))
            measures = self.node.observer.measures
            turn_from = time.perf_counter()
            while not self.node.stopping:
                if self.events.qsize() and time.perf_counter() - turn_from >= DRIVE_SLICE_S:  # contract 4b
                    self.yields += 1
                    await asyncio.sleep(0)
                    turn_from = time.perf_counter()
                waits = not self.events.qsize()
                timeout = max(0.0, (self.deadline - now_ms()) / 1000)
                idle_from = time.perf_counter()
                self.inline_busy = 0.0
                event = await self.events.get(timeout)
                measures.idle_s.add(max(0.0, time.perf_counter() - idle_from - self.inline_busy))
                if waits:
                    turn_from = time.perf_counter()  # a new callback of the loop
                if event is None:
                    if now_ms() < self.deadline:
                        continue  # nudged (contract 4a): the deadline may have moved
                    event = Tick(now_ms())
                self._run(event)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - contract 8: any driver failure is fatal
            self._fatal(exc)

    def _run(self, event: Event) -> float:
        """Contract 4: one event through the core, with the driver's bookkeeping; returns the seconds it took."""
        node = self.node
        busy_from = time.perf_counter()
        if isinstance(event, Tick):
            self.tick_queued = False
        self.stepping = True
        try:
            self.step(event)
        finally:
            self.stepping = False
        node.observer.measures.busy_s.add(busy := time.perf_counter() - busy_from)
        node.metrics.event_done(event.now_ms, busy)
        node.snapshots.poll()  # KIP-630, encoded off the loop (kraftd.shell.raft.snapshot_writer)
        return busy

    def step_now(self, event: Event, later: bool = False) -> None:
        """Contract 4a: step ``event`` at once when the driver is idle, else queue it as ``post`` does (``later``:
        in the observers' lane, kraftd.shell.raft.inbox contract 5)."""
        due = self.deadline <= now_ms() and not isinstance(event, Tick)
        if due or self.stepping or self.node.closing or self.task is None or not self.events.idle():
            if later:
                self.events.put_later(event)
            else:
                self.events.put_nowait(event)
            return
        deadline = self.deadline
        try:
            queued: Event | None = event
            while queued is not None:
                self.batching = True
                while (
                    queued is not None and not self.node.closing
                ):  # and what the step queued, as the driver would
                    self.inline_busy += self._run(queued)
                    queued = self.events.pop()
                self.batching = False
                if not self.applies:
                    break
                self.stepping = True  # contract 13: what the steps above left to apply
                try:
                    self.apply_deferred()
                finally:
                    self.stepping = False
                queued = None if self.node.closing else self.events.pop()  # what the listeners queued
        except BaseException as exc:  # noqa: BLE001 - contract 8, as in the driver
            self._fatal(exc)
            return
        finally:
            self.batching = False
        if self.deadline < deadline:  # a later deadline only wakes the driver early, to wait again
            self.events.nudge()

    def step(self, event: Event) -> None:
        node = self.node
        if stagetrace.ON:
            stagetrace.mark(f"step.{type(event).__name__}")
        before = node.observer.snapshot()
        node.reads.seal()  # kraftd.shell.raft.reads contract 5: later reads need the next barrier
        effects = node.client.step(event)  # built with notify=False: listeners at their effect (contract 13)
        node.observer.step(before, event, effects)
        self.execute(effects)
        if not (self.batching and self.events.qsize()):  # contract 13: else after the queued event's step
            self.apply_deferred()
        if stagetrace.ON:
            stagetrace.mark("step.end")

    def execute(self, effects: list[fx.Effect]) -> None:
        node = self.node
        flush_after_sends = False
        for e in effects:
            if isinstance(e, _STORAGE_EFFECTS):
                node.mirror.apply(e)
            elif isinstance(e, fx.FlushLog):
                if node.flusher.hands_over():  # kraftd.shell.raft.flushing contract 5: after the sends
                    flush_after_sends = True
                else:
                    node.flusher.request()  # contract 5a: inline, before any later effect
            elif isinstance(e, fx.SendRequest):
                if not self._send_now(e.destination, e.request_id, e.message):
                    node.spawn_task(self._send(e.destination, e.request_id, e.message))
            elif isinstance(e, fx.SendResponse):
                fut = self.pending.pop(e.token, None)
                if isinstance(fut, asyncio.Future):
                    if not fut.done():
                        fut.set_result(e.message)
                elif fut is not None:
                    fut(e.message)  # contract 12
            elif isinstance(e, _APPLY_EFFECTS):
                self.applies.append(e)  # contract 13
            elif isinstance(e, fx.SetDeadline):
                self.deadline = e.at_ms
        if flush_after_sends:
            node.flusher.request()

    def apply_deferred(self) -> None:
        """Contract 13: the apply effects of the steps so far, in effect order, listeners first for each."""
        node = self.node
        while self.applies:
            applies, self.applies = self.applies, []
            for e in applies:
                node.client.deliver(e)  # kraftd.core.client contract 1a
                if isinstance(e, fx.ApplyCommitted):
                    node.commit_seen(e.high_watermark)
                elif isinstance(e, fx.AppendFailed):
                    node.commits.fail_range(e.first_offset, e.last_offset)
                elif isinstance(e, fx.LeaderChanged):
                    node.leader_seen(e.leader)
                elif isinstance(e, fx.ReadResolved):
                    node.reads.resolved(e)
        node.controller.after_step()

    # ------------------------------------------------------------------ network (contract 12)
    def _send_now(self, dest: int, request_id: int, message: Any) -> bool:
        """Write a request now (kraftd.shell.net.peers contract 4); False: the coroutine path."""

        def answered(resp: Any) -> None:
            self.step_now(ResponseReceived(now_ms(), dest, request_id, resp))

        return peers.start_now(self.node, dest, message, answered)

    async def _send(self, dest: int, request_id: int, message: Any) -> None:
        resp = await peers.exchange(self.node, dest, message)  # kraftd.shell.net.peers
        self.events.put_nowait(ResponseReceived(now_ms(), dest, request_id, resp))

    def ask_core_now(self, body: Any, answer: Any, later: bool = False) -> bool:
        """Step ``body`` for the core now (queued if the driver is busy; ``later``: an observer's, queued behind
        the Raft traffic, kraftd.shell.raft.inbox contract 5); ``answer`` is called with its SendResponse from
        inside the step that makes it. False once the node is stopping."""
        if self.node.stopping:
            return False
        token = self.next_token
        self.next_token += 1
        self.pending[token] = answer
        self.step_now(RequestReceived(now_ms(), token, body), later)
        return True

    def answer_read_offset(self, body: Any, answer: Any) -> bool:
        """kraftd.shell.apis.fast contract 1a: a voter's ReadOffset that the core's state confirms on arrival
        (kraftd.core.reads invariant 7a) answered now, between steps, without one; False: step it."""
        if self.stepping or self.batching or self.node.stopping:
            return False
        resp = self.node.core.read_offset_answer(body)
        if resp is None:
            return False
        answer(resp)
        return True

    async def ask_core(self, body: Any) -> Any:
        """A request for the Raft core: answered with the core's SendResponse (kraftd.shell.apis.routing 6)."""
        token = self.next_token
        self.next_token += 1
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[token] = fut
        self.events.put_nowait(RequestReceived(now_ms(), token, body))
        out = await fut
        if stagetrace.ON:
            stagetrace.mark("ask.resumed")
        return out

    def queue_tick(self) -> None:
        """Let the core run its poll soon (one queued Tick is enough)."""
        if not self.tick_queued:
            self.tick_queued = True
            self.events.put_nowait(Tick(now_ms()))

    def cancel_pending(self) -> None:
        for fut in self.pending.values():
            if isinstance(fut, asyncio.Future) and not fut.done():
                fut.cancel()
