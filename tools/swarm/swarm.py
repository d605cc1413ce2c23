"""N emulated brokers on one asyncio loop against one controller quorum (kraftd or Kafka's): kraft-swarm's engine.

Contracts:
1. :class:`Swarm` owns the brokers (ids ``first_id..first_id+N-1``, docs/SWARM.md), one :class:`SharedReplay`,
   and what they measured: every heartbeat (send time, round trip, error; the round trip also until the swarm's
   loop read the answer, tools.swarm.decoding contract 6), every fence of a swarm broker that
   the metadata log or a heartbeat answer showed, and its own CPU seconds (``cpu_seconds``).
2. A fence is *mistaken* when its broker had not been told to stop (:meth:`Swarm.kill`, :meth:`Swarm.shut_down`).
3. :meth:`Swarm.watch` measures propagation: from the call until each running broker has fetched, committed, the
   TopicRecord of the named topic (which may not exist yet: watch, then create it), until the swarm read that
   Fetch answer (tools.swarm.broker contract 4); :meth:`Watch.done` once every running broker has.
3a. Issue 24 §2 measures propagation from the commit on the leader, an instant inside the controller; the swarm
   sees it no later than the first of two reads, the same for either controller kind: the answer to the
   CreateTopics that created the topic (both kinds answer it once its records are committed: kraftd's append
   resolves at the commit, Kafka's QuorumController completes the write event in handleCommit), and the first
   Fetch answer whose high watermark covers the TopicRecord. :attr:`Watch.committed` is the earlier of the two;
   :meth:`Watch.from_commit_ms` each broker's delay from it (never negative: a broker reached the topic only with
   such a high watermark).
4. :meth:`Swarm.create_topics` is an admin's CreateTopics against the active controller, in requests of
   ``batch`` topics, retried on NOT_CONTROLLER and lost connections; a topic that already exists after a retry
   counts as created.
5. The swarm is the measuring instrument, so its own pauses must not be what a run measures: :meth:`Swarm.start`
   applies the controllers' garbage-collection policy to its process (kraftd.shell.observe.looplag contracts 5-6:
   a full collection longer than ``GC_FREEZE_MS`` (20 ms) freezes the survivors, the next one counts from there)
   and runs its maintenance every ``GC_MAINTAIN_S`` on the swarm's loop. Without it, a full collection of the swarm's process (the replayed
   image, 1,000 brokers' clients) took 117-143 ms every ~5 s at 1,000 brokers and 10k partitions, and most
   heartbeats slower than 100 ms, on either controller kind, spanned one (docs/SWARM.md, session 13).
6. :attr:`Swarm.disconnects` counts the brokers' closed connections by ``"channel: reason"`` (tools.swarm.broker
   contract 6; kwire.client contract 12): what a broker operator watches when a controller lets requests time out.
7. A mistaken fence carries its broker's controller-channel trace of the ``TRACED_S`` before it (tools.swarm.trace
   contract 1) and the wall-clock time the swarm saw it; :attr:`Swarm.loop_lag` notes each turn of the swarm's loop
   that held its periodic GC callback ``LATE_S`` or more (tools.swarm.trace contract 3). Together with the
   controllers' "fencing broker N" lines they say whether the broker stopped heartbeating or the controller did not
   hear it (docs/SWARM.md, session 19).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import random
import resource
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kraftd.shell.observe.looplag import gc_maintain, tune_gc
from kwire.client import KafkaClient
from kwire.errors import ErrorCode, NetworkError, RequestTimeoutError
from kwire.headers import decode_response
from tools.swarm import frames
from tools.swarm.broker import SwarmBroker
from tools.swarm.decoding import SharedDecodes, read_at
from tools.swarm.lifecycle import KILLED, RUNNING, STOPPED, SwarmConfig
from tools.swarm.replay import SharedReplay
from tools.swarm.trace import LoopLag

GC_MAINTAIN_S = 0.05
TRACED_S = 15.0  # contract 7
# Contract 5: the youngest generation collects at Python's default size, not the controllers' 10,000 (set for replay
# throughput): at 10,000 each young collection of the swarm took 20-37 ms at 1,000 brokers, a pause inside the round
# trips it measures; at 700 about 1 ms.
SWARM_GEN0 = 700


def cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


@dataclass
class Watch:
    topic: str
    started: float
    brokers: set[int]
    reached: dict[int, float] = field(default_factory=dict)
    answered: float = -1.0  # contract 3a: the CreateTopics answer creating the topic was read
    # contract 3a: the first Fetch answer whose high watermark covers the topic was read
    hwm_seen: float = -1.0

    @property
    def done(self) -> bool:
        return self.brokers <= self.reached.keys()

    @property
    def committed(self) -> float:
        """Contract 3a: the earliest read showing the TopicRecord committed (-1: none yet)."""
        seen = [t for t in (self.answered, self.hwm_seen) if t >= 0]
        return min(seen, default=-1.0)

    def delays_ms(self) -> list[float]:
        return [(t - self.started) * 1000 for t in self.reached.values()]

    def from_commit_ms(self) -> list[float]:
        """Contract 3a."""
        committed = self.committed
        return [(t - committed) * 1000 for t in self.reached.values()] if committed >= 0 else []


@dataclass
class Fence:
    at: float
    broker_id: int
    source: str  # "log" (a fence record) or "heartbeat" (an answer said fenced while RUNNING)
    mistaken: bool
    # contract 7: the broker's controller channel in the ``TRACED_S`` before a mistaken fence, timed from it
    trace: list[tuple[float, str, Any]] = field(default_factory=list)
    wall: float = 0.0  # time.time() when the swarm saw it (to find it in the controllers' logs)


class Swarm:
    def __init__(self, config: SwarmConfig, count: int, *, first_id: int = 100, seed: int = 0) -> None:
        self.config = config
        self.replay = SharedReplay(on_fence=self._on_fence_record)
        self.decodes = SharedDecodes()
        rng = random.Random(seed)
        self.brokers = {
            b: SwarmBroker(self, b, 19000 + (b % 40000), rng) for b in range(first_id, first_id + count)
        }
        self.heartbeats: list[tuple[float, float, int, int, int]] = []  # (sent, rtt s, error, broker, node)
        # (sent, rtt s until the swarm's loop read the answer) of each answered heartbeat (contract 1)
        self.heartbeats_loop: list[tuple[float, float]] = []
        self.fences: list[Fence] = []
        self.disconnects: Counter[str] = Counter()  # contract 6
        self.watches: list[Watch] = []
        self._admin: tuple[int, KafkaClient] | None = None
        self._admin_read = -1.0  # when the admin client last read an answer (contract 3a)
        self._gc_task: asyncio.Task[None] | None = None
        self.loop_lag = LoopLag()  # contract 7
        self.cpu_at_start = cpu_seconds()

    # ---- hooks (broker.Hooks) --------------------------------------------------------------------------------

    def heartbeat(self, broker: SwarmBroker, sent: float, rtt: float, error: int, node: int) -> None:
        self.heartbeats.append((sent, rtt, error, broker.id, node))
        if error == ErrorCode.NONE:
            self.heartbeats_loop.append((sent, max(rtt, broker.heartbeat_loop_read - sent)))

    def disconnected(self, channel: str, reason: str) -> None:
        self.disconnects[f"{channel}: {reason}"] += 1

    def progress(self, broker: SwarmBroker) -> None:
        if not self.watches:
            return
        now, read, committed = time.monotonic(), broker.fetch_read, broker.committed_offset
        for w in self.watches:
            offset = self.replay.topic_offset.get(w.topic)
            if offset is None:
                continue
            at = read if read >= w.started else now
            if broker.hwm > offset and (w.hwm_seen < 0 or at < w.hwm_seen):  # contract 3a
                w.hwm_seen = at
            if committed >= offset and broker.id not in w.reached:
                w.reached[broker.id] = at

    def fenced_while_running(self, broker: SwarmBroker) -> None:
        self._fenced(broker, "heartbeat", True)

    def _on_fence_record(self, broker_id: int, offset: int) -> None:
        b = self.brokers.get(broker_id)
        if b is not None:
            self._fenced(b, "log", not (b.state in (KILLED, STOPPED) or b.shutdown_at >= 0))

    def _fenced(self, b: SwarmBroker, source: str, mistaken: bool) -> None:
        now = time.monotonic()
        trace = b.trace.since(now - TRACED_S, now) if mistaken else []  # contract 7
        self.fences.append(Fence(now, b.id, source, mistaken, trace, time.time()))

    # ---- running -----------------------------------------------------------------------------------------------

    def start(self) -> None:
        tune_gc()  # contract 5
        gc.set_threshold(SWARM_GEN0, *gc.get_threshold()[1:])
        if self._gc_task is None:
            self._gc_task = asyncio.create_task(self._maintain_gc())
        for b in self.brokers.values():
            b.start()

    async def _maintain_gc(self) -> None:
        while True:
            gc_maintain()
            due = time.monotonic() + GC_MAINTAIN_S
            await asyncio.sleep(GC_MAINTAIN_S)
            self.loop_lag.ran(due)  # contract 7

    async def wait_running(self, timeout: float) -> float:
        """Seconds until every broker is RUNNING; TimeoutError naming the states otherwise."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if all(b.state == RUNNING for b in self.brokers.values()):
                return time.monotonic() - started
            await asyncio.sleep(0.1)
        states: dict[str, int] = {}
        for b in self.brokers.values():
            states[b.state] = states.get(b.state, 0) + 1
        raise TimeoutError(f"not every broker RUNNING after {timeout}s: {states}")

    async def close(self) -> None:
        if self._gc_task is not None:
            self._gc_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._gc_task
            self._gc_task = None
        for b in self.brokers.values():
            if b.alive:
                b.state = STOPPED
            await b.close()
        if self._admin is not None:
            await self._admin[1].close()
            self._admin = None

    async def kill(self, broker_id: int) -> None:
        await self.brokers[broker_id].kill()

    def shut_down(self, broker_id: int) -> None:
        self.brokers[broker_id].begin_shutdown()

    def running(self) -> list[SwarmBroker]:
        return [b for b in self.brokers.values() if b.alive]

    def watch(self, topic: str) -> Watch:
        w = Watch(topic, time.monotonic(), {b.id for b in self.running()})
        self.watches.append(w)
        for b in self.running():
            self.progress(b)
        return w

    def leader(self) -> tuple[int, int]:
        """(leader id, epoch) the most up-to-date running broker knows."""
        views = [(b.leader_epoch, b.leader_id) for b in self.running() if b.leader_id >= 0]
        if not views:
            return -1, -1
        epoch, leader = max(views)
        return leader, epoch

    def mistaken_fences(self) -> list[Fence]:
        return [f for f in self.fences if f.mistaken]

    def heartbeat_stats(self, since: float = 0.0, until: float = float("inf")) -> dict[str, float]:
        window = [h for h in self.heartbeats if since <= h[0] < until]
        rtts = [h[1] * 1000 for h in window if h[2] == ErrorCode.NONE]
        loop = [rtt * 1000 for sent, rtt in self.heartbeats_loop if since <= sent < until]
        return {
            "count": len(window),
            "errors": sum(1 for h in window if h[2] != ErrorCode.NONE),
            "p50_ms": percentile(rtts, 0.5),
            "p99_ms": percentile(rtts, 0.99),
            "max_ms": max(rtts, default=float("nan")),
            # contract 1: the same heartbeats until the swarm's loop read each answer (session 14's instrument)
            "loop_p50_ms": percentile(loop, 0.5),
            "loop_p99_ms": percentile(loop, 0.99),
        }

    def answered_after(self, t: float, exclude_node: int = -1, start: int = 0) -> dict[int, float]:
        """Per broker, seconds from ``t`` to its first heartbeat answered without error after ``t`` by a controller
        other than ``exclude_node`` (e.g. a killed leader). ``start``: ``len(self.heartbeats)`` taken at or before
        ``t`` (a heartbeat is recorded once answered, so none before it was answered after ``t``): only the
        heartbeats since are read, not the whole run's (150k at 1,000 brokers after 5 minutes, read every 0.1 s
        while a failover is measured, on the thread that holds the swarm's GIL)."""
        first: dict[int, float] = {}
        for sent, rtt, error, broker, node in self.heartbeats[start:]:
            done = sent + rtt
            if done >= t and error == ErrorCode.NONE and node != exclude_node:
                if broker not in first or done - t < first[broker]:
                    first[broker] = done - t
        return first

    # ---- admin (contract 4) ------------------------------------------------------------------------------------

    async def admin_send(self, request: Any, timeout: float = 60.0) -> tuple[Any, int]:
        """The answer of the active controller and the number of attempts it took."""
        deadline = time.monotonic() + timeout
        attempts = 0
        while True:
            leader, _ = self.leader()
            if leader >= 0:
                if self._admin is None or self._admin[0] != leader:
                    if self._admin is not None:
                        await self._admin[1].close()
                    host, port = self.config.voters[leader]
                    client = KafkaClient(
                        host,
                        port,
                        client_id="kraft-swarm-admin",
                        request_timeout=timeout,
                        decode=self._decode_admin,
                    )
                    self._admin = (leader, client)
                attempts += 1
                try:
                    resp = await self._admin[1].send(request)
                    if getattr(resp, "error_code", 0) != ErrorCode.NOT_CONTROLLER:
                        return resp, attempts
                except (NetworkError, RequestTimeoutError, OSError):
                    pass
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{type(request).__name__}: no controller answered within {timeout}s")
            await asyncio.sleep(0.2)

    def _decode_admin(self, frame: bytes, api_key: int, version: int) -> tuple[int, Any]:
        self._admin_read = read_at(self._admin[1] if self._admin is not None else None)
        return decode_response(frame, api_key, version)

    async def create_topics(
        self, names: Iterable[str], partitions: int, rf: int, *, batch: int = 50, timeout: float = 120.0
    ) -> dict[str, int]:
        """Contract 4: every topic's final error code (0 for created or already there after a retry)."""
        names = list(names)
        result: dict[str, int] = {}
        deadline = time.monotonic() + timeout
        for i in range(0, len(names), batch):
            chunk, retried = names[i : i + batch], False
            while chunk:
                request = frames.create_topics(chunk, partitions, rf)
                resp, attempts = await self.admin_send(request, max(1.0, deadline - time.monotonic()))
                retried = retried or attempts > 1
                retry = []
                self._answered([t.name for t in resp.topics if t.error_code == ErrorCode.NONE])
                for t in resp.topics:
                    if t.error_code == ErrorCode.NOT_CONTROLLER and time.monotonic() < deadline:
                        retry.append(t.name)
                    elif t.error_code == ErrorCode.TOPIC_ALREADY_EXISTS and retried:
                        result[t.name] = 0
                    else:
                        result[t.name] = t.error_code
                chunk, retried = retry, retried or bool(retry)
                if retry:
                    await asyncio.sleep(0.2)
        return result

    def _answered(self, created: list[str]) -> None:
        """Contract 3a: the CreateTopics answer that created a watched topic was read."""
        names = set(created)
        for w in self.watches:
            if w.topic in names and w.answered < 0:
                w.answered = self._admin_read
