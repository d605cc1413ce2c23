"""The asyncio controller node: storage + core + transport, driven by one event loop task.

Contracts (numbers continue kraftd.shell's):
4. One driver task owns the core: every event goes through ``_events``; effects of a step are executed in
   order before the next event is taken. PersistElectionState, TruncateLog and AppendBatches complete (fsync
   for the first) before any later effect of the same step, so a vote or epoch is durable before a peer sees it.
5. FlushLog runs the fsync in a worker thread (so the loop keeps sending to followers meanwhile); at most one
   flush is in flight and a request arriving meanwhile is coalesced into one more flush. Only its completion
   feeds ``LogFlushed`` to the core. 5a. A non-leader (no flush in flight) fsyncs inline in the driver instead:
   the same LogFlushed, fed after the fsync returned, without the thread round trip.
6. Requests for Vote/BeginQuorumEpoch/EndQuorumEpoch/Fetch go to the core and are answered with its
   SendResponse; the rest are answered by kraftd.shell.handlers.
7. :meth:`ControllerNode.append` resolves with the last offset once the high watermark passes it and the
   committed batch there carries the append's epoch. It fails with NotLeaderError if the records can no longer
   commit (AppendFailed, stop), when the leader or epoch changes first, or if another leader's batch committed at
   that offset (a deposed leader's high watermark, advanced as a follower, covers the new leader's records at
   those offsets: resolving then would acknowledge records that were truncated away). Either guard alone closes
   the hole; both are kept.
8. A LogIOError (or any unexpected error in the driver) stops the node; ``fatal`` then holds it and
   :meth:`wait_stopped` re-raises it.
9. A DescribeQuorum reaching a non-leader that knows the leader is relayed to it once (as a Kafka broker
   forwards it to the active controller), so clients that pick any node (kafka-python's admin client) get
   the leader's answer; relayed requests are never relayed again, and when relaying fails the answer is
   NOT_LEADER_OR_FOLLOWER, as a Kafka controller answers.
10. ApiVersions (v3+) finalizes every feature of the committed image (metadata.version and the others) and
   kraft.version at the quorum's level when it is above 0, as Kafka's controllers do; SupportedFeatures are the
   ranges this controller can run (kraftd.controller.features.supported_ranges); its FinalizedFeaturesEpoch is the last committed offset seen (Kafka: the metadata image's offset).
11. Only when the test-only key ``kraftd.test.fsync.delay.file`` is set, every log flush first sleeps (in its
   worker thread) for the number of ms that file holds at that moment: the chaos harness's slow disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from ssl import SSLContext
from typing import Any

from generated.describe_cluster_request import DescribeClusterRequest
from generated.describe_quorum_request import DescribeQuorumRequest
from generated.metadata_request import MetadataRequest
from generated.request_header import RequestHeader
from kraftd.config import ConfigError, Endpoint, KraftConfig
from kraftd.controller.features import bootstrap_feature_records, resolve_features, supported_ranges
from kraftd.controller.machine import MetadataController
from kraftd.core import messages as core_messages
from kraftd.core.client import RaftClient
from kraftd.core.config import QuorumConfig
from kraftd.core.effects import (
    AppendBatches,
    AppendFailed,
    ApplyCommitted,
    DeleteLogBefore,
    Effect,
    FlushLog,
    InstallSnapshot,
    LeaderChanged,
    PersistElectionState,
    SendRequest,
    SendResponse,
    SetDeadline,
    TruncateLog,
    WriteSnapshot,
)
from kraftd.core.events import Event, LogFlushed, RequestReceived, ResponseReceived, Shutdown, Tick
from kraftd.core.node import RaftNode
from kraftd.core.replication import NotLeaderError
from kraftd.core.states import Leader, Resigned
from kraftd.core.types import LeaderAndEpoch, ReplicaKey, Role
from kraftd.security import sasl_settings
from kraftd.shell import admin, controller_admin, controller_ops, controller_rpcs, handlers, observe
from kraftd.shell.controller_admin import ControllerAdmin
from kraftd.shell.controller_glue import ControllerGlue
from kraftd.shell.controller_rpcs import ControllerRpcs
from kraftd.shell.inbox import EventInbox
from kraftd.shell.metrics import NodeMetrics, start_listening
from kraftd.shell.netlog import NetLog
from kraftd.shell.persistence import DiskMirror, load_snapshot_and_log, quorum_setup, to_core_state
from kraftd.shell.statemachine import RecordsState
from kraftd.shell.transport import ConnectionInfo, KafkaServer, PeerConnection, PeerError
from kraftd.storage.bootstrap_metadata import read_bootstrap_metadata
from kraftd.storage.layout import NodeStorage, open_node_storage
from kwire.authz import AclAuthorizer
from kwire.errors import ErrorCode
from kwire.metadata_frame import encode_record
from kwire.tls import TlsConfigError, client_context, server_context

log = logging.getLogger("kraftd.node")

FORWARD_CLIENT = "kraftd-forward-"


def tls_contexts(cfg: KraftConfig) -> tuple[SSLContext | None, SSLContext | None]:
    """Server and peer-client TLS contexts of the controller listener (None for PLAINTEXT / SASL_PLAINTEXT)."""
    tls = cfg.security.tls
    if tls is None:
        return None, None
    try:
        return server_context(tls), client_context(tls)
    except TlsConfigError as exc:
        raise ConfigError(str(exc)) from None


def now_ms() -> int:
    return int(time.time() * 1000)


class ControllerNode:
    def __init__(self, config: KraftConfig, *, fsync: bool = True, seed: int | None = None) -> None:
        self.config = config
        self.fsync = fsync
        self.rng = random.Random(seed)
        self.fatal: BaseException | None = None
        self._events = EventInbox()
        self._deadline = 0
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._next_token = 1
        self._waiters: list[tuple[int, int, asyncio.Future[int]]] = []  # last offset, epoch, future
        self._last_leader: tuple[int, int] | None = None
        self._flushing = False
        self._flush_again = False
        self._tick_queued = False
        self._closing = False
        self._stopped = asyncio.Event()
        self._done = asyncio.Event()
        self._leader_changed = asyncio.Event()
        self._first_commit_epoch = -1
        self._driver: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.storage: NodeStorage | None = None
        self.peers: dict[int, PeerConnection] = {}
        self._forwarders: dict[int, PeerConnection] = {}
        self._applied = -1  # the last committed offset the shell has seen (contract 10)
        self.metrics = NodeMetrics()
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
        for cut in storage.log.recovery_cuts:
            log.warning("recovered log: %s", cut.describe())
        observe.log_loaded(cfg.node_id, cfg.metadata_log_dir, storage)
        self.setup = quorum_setup(cfg, storage)
        self.mirror = DiskMirror(storage, self.setup)
        self.cluster_id = storage.meta.cluster_id
        local = ReplicaKey(cfg.node_id, storage.meta.directory_id)
        qc = QuorumConfig(
            election_timeout_ms=cfg.election_timeout_ms,
            fetch_timeout_ms=cfg.fetch_timeout_ms,
            election_backoff_max_ms=cfg.election_backoff_max_ms,
            request_timeout_ms=cfg.request_timeout_ms,
            retry_backoff_ms=cfg.retry_backoff_ms,
            append_linger_ms=cfg.append_linger_ms,
            retention_bytes=cfg.retention_bytes,
            retention_ms=cfg.retention_ms,
            snapshot_interval_ms=cfg.snapshot_interval_ms,
            snapshot_max_record_bytes=cfg.snapshot_max_record_bytes,
            listener_name=cfg.controller_listener_names[0],
        )
        snapshot, core_log = load_snapshot_and_log(storage)
        if snapshot is not None:
            log.info("loaded snapshot %s", snapshot.snapshot_id)
        core = RaftNode(
            local=local,
            voters=self.setup.voters,
            config=qc,
            rng=self.rng,
            cluster_id=self.cluster_id,
            election_state=to_core_state(storage.election_state),
            log=core_log,
            snapshot=snapshot,
            now_ms=now_ms(),
            kraft_version=self.setup.kraft_version,
        )
        self.client = RaftClient(core)
        server_tls, self.peer_tls = tls_contexts(cfg)
        server_sasl, self.peer_sasl = sasl_settings(cfg.security, ConfigError)
        bootstrap = read_bootstrap_metadata(cfg.metadata_log_dir)
        if bootstrap is None:
            levels = resolve_features(None, {})
            bootstrap = [encode_record(r, 0) for r in bootstrap_feature_records(levels)]
        self.controller = ControllerGlue(self, MetadataController(cfg.node_id, bootstrap))
        self.client.register(self.controller)
        self.rpcs = ControllerRpcs(self)
        self.ctl_admin = ControllerAdmin(self)
        self.ctl_ops = controller_ops.ControllerOps(self)
        self.state = RecordsState()
        self.client.register(self.state)
        self.observer = observe.NodeObserver(core)
        self.netlog = NetLog(cfg.node_id, self.cluster_id)
        name = cfg.controller_listener_names[0]
        for node_id, eps in self.setup.endpoints.items():
            ep = next((e for e in eps if e.name == name), eps[0] if eps else None)
            if node_id != cfg.node_id and ep is not None:
                self.peers[node_id] = PeerConnection(
                    ep.host,
                    ep.port,
                    client_id=f"raft-client-{cfg.node_id}",
                    timeout_ms=cfg.request_timeout_ms,
                    ssl=self.peer_tls,
                    sasl=self.peer_sasl,
                )
        bind = cfg.controller_listener
        self.server = KafkaServer(
            self.metrics.instrument(self._handle),
            handlers.supported_versions(),
            host=bind.host or "0.0.0.0",
            port=bind.port,
            finalized_features=self._finalized_features,
            supported_features=supported_ranges(),
            limits=cfg.limits,
            ssl=server_tls,
            sasl=server_sasl,
            authorizer=AclAuthorizer(cfg.security.super_users) if cfg.security.authorizer_class else None,
            denied=handlers.denied_response,
        )
        await start_listening(self, bind)
        log.info(
            "node %d listening on %s:%d (cluster %s)",
            cfg.node_id,
            bind.host,
            self.server.port,
            self.cluster_id,
        )
        self._driver = asyncio.create_task(self._drive())
        self._spawn(self.rpcs.run_periodic())
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
            log.info(
                "node %d: shutting down%s",
                self.config.node_id,
                " (resigning first if leading)" if graceful else "",
            )
        if graceful and not self._stopped.is_set() and self._driver is not None:
            self._events.put_nowait(Shutdown(now_ms()))
            limit = time.monotonic() + self.config.request_timeout_ms / 1000
            while time.monotonic() < limit and not self._stopped.is_set():
                d = self.core.data
                if not isinstance(d, Leader) and not (isinstance(d, Resigned) and d.unacked):
                    break
                await asyncio.sleep(0.01)
        await self._shutdown()

    async def _shutdown(self) -> None:
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
        for fut in self._pending.values():
            if not fut.done():
                fut.cancel()
        for _, _, fut in self._waiters:
            if not fut.done():
                fut.set_exception(NotLeaderError("the node stopped"))
        self._waiters.clear()
        for peer in [*self.peers.values(), *self._forwarders.values()]:
            with contextlib.suppress(Exception):
                await peer.close()
        if getattr(self, "rpcs", None) is not None:
            with contextlib.suppress(Exception):
                await self.rpcs.close()
        if getattr(self, "server", None) is not None:
            await self.server.close()
        if self.storage is not None:
            self.storage.close()
        self.metrics.close()
        if getattr(self, "observer", None) is not None:
            self.observer.log_stopped()
        self._done.set()

    async def wait_stopped(self) -> None:
        """Until the node has stopped and released everything; re-raises a fatal error (contract 8)."""
        await self._done.wait()
        if self.fatal is not None:
            raise self.fatal

    # ------------------------------------------------------------------ driver (contract 4)
    async def _drive(self) -> None:
        try:
            self._step(Tick(now_ms()))
            measures = self.observer.measures
            while not self._stopped.is_set():
                timeout = max(0.0, (self._deadline - now_ms()) / 1000)
                idle_from = time.perf_counter()
                event = await self._events.get(timeout)
                if event is None:
                    event = Tick(now_ms())
                busy_from = time.perf_counter()
                measures.idle_s.add(busy_from - idle_from)
                if isinstance(event, Tick):
                    self._tick_queued = False
                self._step(event)
                measures.busy_s.add(time.perf_counter() - busy_from)
                self._maybe_snapshot()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - contract 8: any driver failure is fatal
            log.critical("node %d stopping on a fatal error: %s", self.config.node_id, exc)
            self.fatal = exc
            self._spawn(self._shutdown())

    def _maybe_snapshot(self) -> None:
        """KIP-630: snapshot the state machine when the core says one is due (record bytes or interval)."""
        st = self.state
        latest = self.client.latest_snapshot
        newer = st.end_offset > (latest.snapshot_id.offset if latest else 0)
        if not self.client.snapshot_due() or not newer or not st.snapshot_safe:
            return
        snap = self.client.create_snapshot(st.end_offset, list(st.values))
        log.info("node %d: wrote snapshot %s", self.config.node_id, snap.snapshot_id)
        self._step(Tick(now_ms()))

    def spawn_task(self, coro: Any) -> None:
        """Run ``coro`` as a task the node owns (cancelled on stop)."""
        self._spawn(coro)

    def _step(self, event: Event) -> None:
        before = self.observer.snapshot()
        effects = self.client.step(event)
        self.observer.step(before, event, effects)
        self._execute(effects)
        self.controller.after_step()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _execute(self, effects: list[Effect]) -> None:
        for e in effects:
            if isinstance(
                e,
                PersistElectionState
                | TruncateLog
                | AppendBatches
                | WriteSnapshot
                | InstallSnapshot
                | DeleteLogBefore,
            ):
                self.mirror.apply(e)
            elif isinstance(e, FlushLog):
                self._request_flush()
            elif isinstance(e, SendRequest):
                self._spawn(self._send(e.destination, e.request_id, e.message))
            elif isinstance(e, SendResponse):
                fut = self._pending.pop(e.token, None)
                if fut is not None and not fut.done():
                    fut.set_result(e.message)
            elif isinstance(e, ApplyCommitted):
                self._commit(e.high_watermark)
            elif isinstance(e, AppendFailed):
                self._fail_range(e.first_offset, e.last_offset)
            elif isinstance(e, LeaderChanged):
                self._on_leader(e.leader)
            elif isinstance(e, SetDeadline):
                self._deadline = e.at_ms

    # ------------------------------------------------------------------ flushing (contract 5)
    def _request_flush(self) -> None:
        if self._flushing:
            self._flush_again = True
            return
        assert self.storage is not None
        if self.core.role is not Role.LEADER:
            # Contract 5a: nothing waits on a non-leader's loop while it syncs (its fetch goes out only after
            # the flush), so it fsyncs inline and skips two thread hand-offs per fetched batch.
            flushed = self.storage.log.flush()
            self._events.put_nowait(LogFlushed(now_ms(), flushed))
            return
        target, run = self.storage.log.begin_flush()
        self._flushing = True
        self._spawn(self._flush(target, run))

    async def _flush(self, target: int, run: Any) -> None:
        assert self.storage is not None
        try:
            await asyncio.to_thread(self._slow_disk(run))
        except BaseException as exc:  # noqa: BLE001 - contract 8
            log.critical("node %d: log flush failed, stopping: %s", self.config.node_id, exc)
            self.fatal = exc
            await self._shutdown()
            return
        flushed = self.storage.log.complete_flush(target)
        self._flushing = False
        self._events.put_nowait(LogFlushed(now_ms(), flushed))
        if self._flush_again:
            self._flush_again = False
            self._request_flush()

    def _slow_disk(self, run: Any) -> Any:
        """Contract 11: the test-only fsync delay (``kraftd.test.fsync.delay.file``), read on every flush."""
        path = self.config.test_fsync_delay_file
        if path is None:
            return run

        def delayed() -> None:
            try:
                delay_ms = int(path.read_text().strip() or 0)
            except (OSError, ValueError):
                delay_ms = 0
            if delay_ms > 0:
                time.sleep(delay_ms / 1000)
            run()

        return delayed

    # ------------------------------------------------------------------ network
    async def _send(self, dest: int, request_id: int, message: Any) -> None:
        peer = self.peers.get(dest)
        if peer is None:
            resp = core_messages.error_response(message, ErrorCode.BROKER_NOT_AVAILABLE)
        else:
            where = f"{peer.host}:{peer.port}"
            try:
                resp = await peer.request(message)
                self.netlog.reached(dest, where)
                self.netlog.sent_rejected(dest, where, message, resp)
            except PeerError as exc:
                self.netlog.failed(dest, where, str(exc).removeprefix(f"{where}: "))
                resp = core_messages.error_response(message, ErrorCode(exc.error_code))
        self._events.put_nowait(ResponseReceived(now_ms(), dest, request_id, resp))

    def cluster_view(self) -> handlers.ClusterView:
        nodes: dict[int, tuple[Endpoint, ...]] = dict(self.setup.endpoints)
        nodes[self.config.node_id] = self.config.advertised_controller_listeners
        image = self.controller.machine.committed
        name = self.config.controller_listener_names[0]
        if image.controllers and set(image.controllers) >= set(nodes):
            nodes = {
                cid: tuple(
                    Endpoint(n, h, p) for n, h, p, _ in sorted(c.listeners, key=lambda e: e[0] != name)
                )
                for cid, c in image.controllers.items()
                if cid in nodes
            }
        brokers = {
            bid: (Endpoint(*b.listeners[0][:3]), b.rack)
            for bid, b in image.brokers.items()
            if not b.fenced and b.listeners
        }
        return handlers.ClusterView(self.cluster_id, nodes, self.known_leader(), brokers or None)

    async def _handle(self, header: RequestHeader, body: Any, info: ConnectionInfo) -> Any:
        key = header.request_api_key
        if key == handlers.DESCRIBE_QUORUM:
            assert isinstance(body, DescribeQuorumRequest)
            try:
                quorum = self.client.describe_quorum()
            except NotLeaderError:
                quorum = None
                forwarded = await self._forward(header, body)
                if forwarded is not None:
                    return handlers.describe_quorum_for(forwarded, header.request_api_version)
            return handlers.describe_quorum_for(
                handlers.describe_quorum_response(body, quorum, self.cluster_view()),
                header.request_api_version,
            )
        if key == handlers.DESCRIBE_CLUSTER:
            assert isinstance(body, DescribeClusterRequest)
            return handlers.describe_cluster_response(body, self.cluster_view())
        if key in controller_rpcs.APIS:
            return await self.rpcs.handle(key, body, header.request_api_version)
        if key in controller_admin.APIS or key in controller_ops.APIS:
            return await self.ctl_admin.handle(key, body)
        if key == handlers.METADATA:
            assert isinstance(body, MetadataRequest)
            return handlers.metadata_response(body, self.cluster_view())
        if key == admin.KRAFTD_APPEND:
            return await admin.handle_append(self, body)
        token = self._next_token
        self._next_token += 1
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[token] = fut
        self._events.put_nowait(RequestReceived(now_ms(), token, body))
        resp = await fut
        self.netlog.answered(info.peer, body, resp)
        return resp

    async def _forward(self, header: RequestHeader, body: Any) -> Any | None:
        """Contract 9: relay a client's DescribeQuorum to the leader, once; None when that is not possible."""
        leader = self.known_leader()
        if leader < 0 or leader == self.config.node_id or (header.client_id or "").startswith(FORWARD_CLIENT):
            return None
        target = self.peers.get(leader)
        if target is None:
            return None
        conn = self._forwarders.get(leader)
        if conn is None:
            conn = PeerConnection(
                target.host,
                target.port,
                client_id=f"{FORWARD_CLIENT}{self.config.node_id}",
                timeout_ms=self.config.request_timeout_ms,
                ssl=self.peer_tls,
                sasl=self.peer_sasl,
            )
            self._forwarders[leader] = conn
        try:
            return await conn.request(body)
        except PeerError:
            return None

    # ------------------------------------------------------------------ RaftClient (contract 7)
    async def append(self, records: list[bytes], on_range: Any = None) -> int:
        """Append as leader; resolves with the last offset once committed. ``on_range`` (if given) is called
        with the OffsetRange synchronously, before anything else can append."""
        if self._stopped.is_set():
            raise NotLeaderError("the node is stopped")
        rng = self.client.append(records)
        if on_range is not None:
            on_range(rng)
        t0 = time.perf_counter()
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiters.append((rng.last, rng.epoch, fut))
        if not self._tick_queued:  # one queued Tick is enough to schedule the linger deadline
            self._tick_queued = True
            self._events.put_nowait(Tick(now_ms()))
        last = await fut
        self.observer.measures.commit_latency_ms.add((time.perf_counter() - t0) * 1000)
        return last

    def _finalized_features(self) -> tuple[int, dict[str, tuple[int, int]]]:
        """Contract 10: every feature the committed image finalizes, plus kraft.version at the level the quorum
        runs once above 0 (Kafka's KRaftMetadataCache.features), with the last committed offset as the epoch."""
        levels = {n: (v, v) for n, v in self.controller.machine.committed.features.items()}
        kraft_version = self.setup.kraft_version
        if kraft_version > 0:
            levels["kraft.version"] = (kraft_version, kraft_version)
        if not levels:
            return -1, {}
        return max(self._applied, 0), levels

    def _commit(self, hwm: int) -> None:
        self._applied = max(self._applied, hwm - 1)
        if self.core.role is Role.LEADER and self._first_commit_epoch != self.core.epoch:
            self._first_commit_epoch = self.core.epoch
            log.info(
                "node %d: high watermark %d is the first commit as leader of epoch %d",
                self.config.node_id,
                hwm,
                self.core.epoch,
            )
        keep = []
        for last, epoch, fut in self._waiters:
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
        self._waiters = keep

    def _holds(self, offset: int, epoch: int) -> bool:
        """Contract 7: the committed batch at ``offset`` is the one appended in ``epoch`` (same offset and epoch
        means the same entry, Raft's log matching); a leader deposed before its append committed may see the
        offset committed with another leader's batch after truncating its own."""
        found = self.core.log.read(offset, 1)
        return bool(found) and found[0].epoch == epoch

    def _fail_range(self, first: int, last: int) -> None:
        keep = []
        for off, epoch, fut in self._waiters:
            if first <= off <= last:
                if not fut.done():
                    fut.set_exception(NotLeaderError(f"records up to offset {off} will not commit"))
            else:
                keep.append((off, epoch, fut))
        self._waiters = keep

    def _on_leader(self, leader: LeaderAndEpoch) -> None:
        log.info("node %d: leader is %d in epoch %d", self.config.node_id, leader.leader_id, leader.epoch)
        # Contract 7: appends are only ever pending while this node leads one epoch; any change of leader or epoch
        # ends that epoch, and a later high watermark counts the new leader's records, not ours.
        changed = (leader.leader_id, leader.epoch) != self._last_leader
        self._last_leader = (leader.leader_id, leader.epoch)
        if changed and self._waiters:
            waiters, self._waiters = self._waiters, []
            for off, _, fut in waiters:
                if not fut.done():
                    fut.set_exception(
                        NotLeaderError(
                            f"leadership changed (leader {leader.leader_id}, epoch {leader.epoch}) "
                            f"before offset {off} committed"
                        )
                    )
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
