"""The asyncio controller node: storage + core + transport, driven by one event loop task.

Contracts (numbers continue kraftd.shell's):
4. One driver task owns the core (kraftd.shell.raft.driver): every event goes through its inbox; effects of
   a step are executed in order before the next event is taken. 4a: an event that arrives while the driver
   waits on an empty inbox and no step runs (a Raft response, a Fetch, the leader's flush, an append's Tick) is
   stepped at once by whoever received it, as the driver would have stepped it next, saving the driver's
   wake-up; the driver is then nudged to re-read its deadline when the steps moved it earlier. While the core asked for a step now (a
   coalesced high-watermark answer, kraftd.core.replication invariant 2b) only an append's Tick is stepped so;
   the rest waits for the driver, after this turn of the loop, so that an append made in this turn rides that
   answer. PersistElectionState, TruncateLog and AppendBatches complete (fsync for the first) before any later
   effect of the same step, so a vote or epoch is durable before a peer sees it.
4b. The driver takes queued events one after another within one callback of the loop for at most
   ``DRIVE_SLICE_S``; with events still queued after that it gives the loop one turn (``sleep(0)``) before
   the next. Events queue while a step runs and, under 4a, while the core asked for a step now, so a wave of
   observers' Fetches can queue behind one step (kraftd.shell.apis.observer_fetches chunks them only when they are
   stepped at once): at 1M partitions and 100 brokers one callback stepped ~100 queued observer Fetches with
   catch-up answers of up to 8 MiB each, 640 ms of the loop's CPU (2.5 s wall at load 11), and the leader lost its
   quorum (issue 24, session 14). Order is unchanged (contract 4: events in inbox order, each step's effects
   before the next event). ``DRIVE_SLICE_S`` is the controller's slice (kraftd.shell.controller.glue ``SLICE_S``,
   10 ms), not twice it: during a 1M creation with hundreds of observers catching up, a busy leader's every turn
   held one driver slice and one replay slice (glue contract 9), and the lag probe's timer waits about three
   turns (its handle, then its task's wake-up behind the slicers' continuations); with 20 ms driver slices the
   turns averaged 32 ms (16 of them the driver) and the probe logged stalls of 100-134 ms (docs/PERFORMANCE.md,
   session 21).
5. Log flushes: kraftd.shell.raft.flushing (contracts 5, 5a, 11 there).
6. Which part answers a request: kraftd.shell.apis.routing (contracts 6, 9, 10 there).
7. :meth:`ControllerNode.append` resolves with the last offset once committed, under kraftd.shell.raft.commits'
   contracts (the committed batch must carry the append's epoch; a change of leader fails it).
7a. With a linger, an append's Tick is queued for the driver, never stepped at once: appenders resumed in the
   same turn of the loop (a commit resumes a closed append loop's workers together) all append first, so the
   adaptive linger (kraftd.core.replication invariant 5a) writes them as one batch instead of the first alone.
8. A LogIOError (or any unexpected error in the driver) stops the node; ``fatal`` then holds it and
   :meth:`wait_stopped` re-raises it.
12. Inside a step, in effect order: a SendRequest on a connected peer is written at once
   (kraftd.shell.net.transport contract 3; its answer is queued as ResponseReceived by the future's callback), and
   the SendResponse of a Fetch or ReadOffset taken by the listener's fast path (kwire.server contract 11) is encoded and
   written at once. Neither waits for a task or another turn of the loop; anything else takes the
   coroutine path. Persist, then send still holds: the storage effects before them completed first.
13. Persist, then send, then apply: the core's listeners (the controller's replay, kraftd.core.client contract
   1a) and the shell's own apply effects (ApplyCommitted, AppendFailed, LeaderChanged, ReadResolved,
   SnapshotLoaded) run after the step's storage effects and sends, in effect order, the listeners first for
   each effect. While contract 4a steps what a step queued (a non-leader's LogFlushed after its inline fsync,
   contract 5a), they wait for that step too: a follower writes its next Fetch before it replays what the
   previous answer committed (issue 25). Nothing else runs in between (one turn of the loop); a ReadResolved
   still follows the ApplyCommitted it waited for, and ``controller.after_step`` follows every apply.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from typing import Any

from kraftd.config import ConfigError, KraftConfig
from kraftd.controller.machine import MetadataController
from kraftd.core import effects as fx
from kraftd.core.client import RaftClient
from kraftd.core.events import Event, Shutdown, Tick
from kraftd.core.node import RaftNode
from kraftd.core.replication import NotLeaderError
from kraftd.core.states import Leader, Resigned
from kraftd.core.types import LeaderAndEpoch, Role
from kraftd.security import sasl_settings
from kraftd.shell import closing
from kraftd.shell.apis.routing import RequestRouter
from kraftd.shell.controller import image_security
from kraftd.shell.controller.broker_rpcs import ControllerRpcs
from kraftd.shell.controller.glue import ControllerGlue
from kraftd.shell.controller.partition_admin import ControllerOps
from kraftd.shell.controller.security_admin import ControllerSecurity
from kraftd.shell.controller.topic_admin import ControllerAdmin
from kraftd.shell.net import wiring
from kraftd.shell.net.transport import PeerConnection
from kraftd.shell.observe import observer
from kraftd.shell.observe.looplag import LoopLagProbe, tune_gc, tune_switch
from kraftd.shell.observe.metrics import NodeMetrics, start_listening
from kraftd.shell.observe.netlog import NetLog
from kraftd.shell.raft import persistence
from kraftd.shell.raft.clock import now_ms
from kraftd.shell.raft.commits import CommitWaiters
from kraftd.shell.raft.driver import RaftDriver
from kraftd.shell.raft.flushing import LogFlusher
from kraftd.shell.raft.inbox import EventInbox
from kraftd.shell.raft.persistence import DiskMirror, quorum_setup
from kraftd.shell.raft.reads import ReadBarriers
from kraftd.shell.raft.snapshot_writer import SnapshotWriter
from kraftd.storage.layout import NodeStorage, open_node_storage
from kwire import stagetrace

log = logging.getLogger("kraftd.node")


class ControllerNode:
    def __init__(self, config: KraftConfig, *, fsync: bool = True, seed: int | None = None) -> None:
        self.config = config
        self.fsync = fsync
        self.rng = random.Random(seed)
        self.fatal: BaseException | None = None
        self.driver = RaftDriver(self)  # contracts 4, 4a, 8, 12 (kraftd.shell.raft.driver)
        self.commits = CommitWaiters(lambda: self.core)
        self.flusher = LogFlusher(self)
        self.router = RequestRouter(self)
        self._closing = False
        self._stopped = asyncio.Event()
        self._done = asyncio.Event()
        self._leader_changed = asyncio.Event()
        self._first_commit_epoch = -1
        self._tasks: set[asyncio.Task[Any]] = set()
        self.storage: NodeStorage | None = None
        self.peers: dict[int, PeerConnection] = {}
        self.learned_endpoints: dict[int, tuple[str, int]] = {}  # kraftd.shell.net.membership contract 1
        self.applied = -1  # the last committed offset seen (kraftd.shell.apis.routing contract 10)
        self.metrics = NodeMetrics()
        self.lag = LoopLagProbe(config.node_id)
        self.metrics_port: int | None = None

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Open storage (refusing to start when it is not usable), build the core, listen, start driving."""
        storage = open_node_storage(self.config, fsync=self.fsync)
        self.storage = storage
        try:
            await self._start(storage)
        except BaseException:
            if getattr(self, "server", None) is not None:
                await self.server.close()
            storage.close()
            self.storage = None
            raise

    async def _start(self, storage: NodeStorage) -> None:
        cfg = self.config
        tune_gc()  # before the log and snapshot are loaded (kraftd.shell.observe.looplag contract 5)
        tune_switch()  # looplag contract 7
        for cut in storage.log.recovery_cuts:
            log.warning("recovered log: %s", cut.describe())
        observer.log_loaded(cfg.node_id, cfg.metadata_log_dir, storage)
        self.setup = quorum_setup(cfg, storage)
        self.mirror = DiskMirror(storage, self.setup)
        self.cluster_id = storage.meta.cluster_id
        quorum = wiring.quorum_config(cfg)
        core = persistence.open_core(cfg, storage, self.setup, quorum, self.rng, now_ms())
        self.client = RaftClient(core, notify=False)  # contract 13: the driver delivers at the apply effects
        server_tls, self.peer_tls = wiring.tls_contexts(cfg)
        server_sasl, self.peer_sasl = sasl_settings(cfg.security, ConfigError)
        bootstrap = wiring.bootstrap_records(cfg)
        self.controller = ControllerGlue(self, MetadataController(cfg.node_id, bootstrap))
        server_sasl, authorizer = image_security.listener_security(self, server_sasl)
        self.client.register(self.controller)
        self.snapshots = SnapshotWriter(self, self.mirror)
        self.rpcs = ControllerRpcs(self)
        self.reads = ReadBarriers(self)
        self.ctl_admin = ControllerAdmin(self)
        self.ctl_security = ControllerSecurity(self)
        self.ctl_ops = ControllerOps(self)
        self.observer = observer.NodeObserver(core)
        self.netlog = NetLog(cfg.node_id, self.cluster_id)
        self.peers = wiring.peer_connections(cfg, self.setup, self.peer_tls, self.peer_sasl)
        bind = cfg.controller_listener
        self.server = self.router.listener(bind, server_tls, server_sasl, authorizer)
        await start_listening(self, bind)
        where = (cfg.node_id, bind.host, self.server.port, self.cluster_id)
        log.info("node %d listening on %s:%d (cluster %s)", *where)
        self.driver.start()
        self._spawn(self.lag.run())
        self._spawn(self.rpcs.run_periodic())
        self._spawn(self.ctl_security.run_sweeper())
        if cfg.max_idle_interval_ms > 0:
            self._spawn(self.controller.run_idle_writes(cfg.max_idle_interval_ms / 1000))
        self._spawn(self.ctl_ops.run_rebalance())

    @property
    def core(self) -> RaftNode:
        return self.client.node

    @property
    def port(self) -> int:
        return self.server.port

    async def stop(self, graceful: bool = True) -> None:
        """Resign (EndQuorumEpoch) if leading, then close everything (bounded by the request timeout)."""
        if not self._closing:
            how = " (resigning first if leading)" if graceful else ""
            log.info("node %d: shutting down%s", self.config.node_id, how)
        if graceful and not self._stopped.is_set() and self._driver is not None:
            # A leader waits until another voter leads (kraftd.core.context invariant 6); others stop at once.
            leading = isinstance(self.core.data, Leader | Resigned)
            self.post(Shutdown(now_ms()))
            limit = time.monotonic() + self.config.request_timeout_ms / 1000
            while leading and time.monotonic() < limit and not self._stopped.is_set():
                if self.core.handed_over():
                    break
                await asyncio.sleep(0.01)
        await self.shutdown()

    async def shutdown(self) -> None:
        """Close everything now, without resigning first (a fatal error, or after :meth:`stop`)."""
        if self._closing:
            return
        self._closing = True
        self._stopped.set()
        if self._driver is not None and self._driver is not asyncio.current_task():
            self._driver.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._driver
        me = asyncio.current_task()
        for t in list(self._tasks):
            if t is not me:
                t.cancel()
        self.driver.cancel_pending()
        await closing.release(self)
        self._done.set()

    async def wait_stopped(self) -> None:
        """Until the node has stopped and released everything; re-raises a fatal error (contract 8)."""
        await self._done.wait()
        if self.fatal is not None:
            raise self.fatal

    # ------------------------------------------------------------------ driver (contract 4: kraftd.shell.raft.driver)
    @property
    def _driver(self) -> asyncio.Task[None] | None:
        return self.driver.task

    @property
    def _events(self) -> EventInbox:
        return self.driver.events

    @property
    def stopping(self) -> bool:
        return self._stopped.is_set()

    @property
    def closing(self) -> bool:
        return self._closing

    def step_now(self, event: Event) -> None:
        """Contract 4a: step ``event`` at once when the driver is idle, else queue it as ``post`` does."""
        self.driver.step_now(event)

    def step_tick(self) -> None:
        """Step the core with a Tick now (on the driver only: kraftd.shell.raft.snapshot_writer contract 2)."""
        self.driver.step(Tick(now_ms()))

    def _execute(self, effects: list[fx.Effect]) -> None:
        self.driver.execute(effects)

    def post(self, event: Event) -> None:
        """Queue an event for the driver (contract 4)."""
        self.driver.events.put_nowait(event)

    def queue_tick(self) -> None:
        """Let the core run its poll soon (one queued Tick is enough)."""
        self.driver.queue_tick()

    def ask_core_now(self, body: Any, answer: Any, later: bool = False) -> bool:
        """Contract 12 (kraftd.shell.raft.driver)."""
        return self.driver.ask_core_now(body, answer, later)

    def answer_read_offset(self, body: Any, answer: Any) -> bool:
        """kraftd.shell.apis.fast contract 1a (kraftd.shell.raft.driver)."""
        return self.driver.answer_read_offset(body, answer)

    async def ask_core(self, body: Any) -> Any:
        """A request for the Raft core: answered with the core's SendResponse (kraftd.shell.apis.routing 6)."""
        return await self.driver.ask_core(body)

    def spawn_task(self, coro: Any) -> asyncio.Task[Any]:
        """Run ``coro`` as a task the node owns (cancelled on stop)."""
        return self._spawn(coro)

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # ------------------------------------------------------------------ network
    def connect(self, host: str, port: int, prefix: str, timeout_ms: int = 0) -> PeerConnection:
        """A new connection to another controller (kraftd.shell.net.wiring.peer_connection)."""
        return wiring.peer_connection(
            self.config, host, port, prefix, self.peer_tls, self.peer_sasl, timeout_ms
        )

    @staticmethod
    def now_ms() -> int:
        return now_ms()

    # ------------------------------------------------------------------ RaftClient (contract 7)
    async def append(self, records: list[bytes], on_range: Any = None) -> int:
        """Append as leader; resolves with the last offset once committed. ``on_range`` (if given) is called
        with the OffsetRange synchronously, before anything else can append."""
        if self._stopped.is_set():
            raise NotLeaderError("the node is stopped")
        if stagetrace.ON:
            stagetrace.mark("append")
        rng = self.client.append(records)
        if on_range is not None:
            on_range(rng)
        t0 = time.perf_counter()
        fut = self.commits.add(rng.last, rng.epoch)
        if self.driver.tick_queued:
            pass
        elif self._events.idle() and self.config.append_linger_ms == 0:
            self.step_now(Tick(now_ms()))  # contract 4a: writes it now
        else:
            self.queue_tick()  # contract 7a: after the other appends of this turn
        last = await fut
        if stagetrace.ON:
            stagetrace.mark("committed")
        self.observer.measures.commit_latency_ms.add((time.perf_counter() - t0) * 1000)
        return last

    def commit_seen(self, hwm: int) -> None:
        """ApplyCommitted (kraftd.shell.raft.driver)."""
        self._commit(hwm)

    def leader_seen(self, leader: LeaderAndEpoch) -> None:
        """LeaderChanged (kraftd.shell.raft.driver)."""
        self._on_leader(leader)

    def _commit(self, hwm: int) -> None:
        self.applied = max(self.applied, hwm - 1)
        if self.core.role is Role.LEADER and self._first_commit_epoch != self.core.epoch:
            self._first_commit_epoch = self.core.epoch
            first = "node %d: high watermark %d is the first commit as leader of epoch %d"
            log.info(first, self.config.node_id, hwm, self.core.epoch)
        self.commits.on_commit(hwm)

    def _on_leader(self, leader: LeaderAndEpoch) -> None:
        log.info("node %d: leader is %d in epoch %d", self.config.node_id, leader.leader_id, leader.epoch)
        self.commits.on_leader(leader)
        self._leader_changed.set()
        self._leader_changed = asyncio.Event()

    def known_leader(self) -> int:
        """The leader this node knows of, -1 if none (a resigned leader no longer counts)."""
        if self.core.role is Role.RESIGNED:
            return -1
        return self.core.leader_id()

    async def wait_for_leader(self, timeout: float) -> LeaderAndEpoch:
        """The current leader once one is known (TimeoutError after ``timeout`` seconds)."""
        async with asyncio.timeout(timeout):
            while self.known_leader() < 0:
                await self._leader_changed.wait()
        return self.core.leader_and_epoch()
