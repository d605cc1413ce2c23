"""One emulated Kafka 4.3.1 broker: its lifecycle against the active controller and its metadata observer.

Contracts (Kafka's BrokerLifecycleManager and KafkaRaftClient as an observer; docs/SWARM.md):
1-2. The lifecycle and controlled shutdown: :mod:`tools.swarm.lifecycle` (its contracts 1, 1a, 2).
3. Observer: Fetch long-polls go to the leader this broker knows, else (at start, an answer naming no leader) to the
   voters in turn; after one to the leader failed the next goes to a voter and the leader is kept for heartbeats
   (KafkaRaftClient.pollFollowerAsObserver; docs/SWARM.md session 18). Every answer's CurrentLeader with a newer
   epoch (or the same epoch and a leader where none was known) is taken. A diverging epoch truncates the fetch
   position to it; a snapshot id makes the broker fetch that snapshot chunk by chunk (FetchSnapshot) and continue
   from its end; a chunk that gets no answer is asked for again from its position after a Fetch to a voter in turn
   (tools.swarm.snapshot_fetch, as Kafka's FollowerState.fetchingSnapshot). Records advance the position to the last
   complete batch and are handed to the shared replay.
   Heartbeats go to the leader the observer knows (the broker's controller channel).
3b. The observer keeps one connection per voter, as Kafka's NetworkClient does, and sends no Fetch to a voter in its
   reconnect backoff (not ready: the next voter in turn is asked, KafkaRaftClient's observer picks a ready
   bootstrap server). With one connection for every target, each turn between the dead leader and a survivor
   after a kill -9 opened a new connection (ApiVersions first): ~7,800 closed by the swarm in one failover at
   1,000 brokers, with the swarm's loop 0.4-0.8 s late, and the brokers learnt the new leader 0.3-0.9 s after its
   first commit, on both kinds (docs/SWARM.md, session 20).
3a. A broker sent to a snapshot fetches every chunk (a real broker's load on the leader) but keeps them only if it
   took the snapshot (tools.swarm.replay contract 2a), and holds no answer while it asks for the next chunk: 1,000
   brokers each gathered the 107 MB snapshot of 1M partitions, +1.2 GB every 5 s (docs/SWARM.md, session 18).
4. Every heartbeat is reported to ``hooks.heartbeat(broker, sent, rtt_s, error, node)`` (error -1: no answer;
   node: the controller it went to last); ``rtt_s`` ends when the swarm read the answer (tools.swarm.decoding
   contract 6), not when the broker's coroutine next ran behind the other brokers' continuations on the one loop
   (a real broker is its own process; docs/SWARM.md, session 13); ``heartbeat_loop_read``: when the swarm's loop
   read it (decoding.read_instants). Every fetch answer that moved the position or the high watermark goes to
   ``hooks.progress(broker)``, with ``fetch_read`` the time the swarm read that answer (the same rule).
4b. The controller channel's last events (a heartbeat sent, each attempt that failed, NOT_CONTROLLER, the answer,
   the pause after it) are kept in ``trace`` (tools.swarm.trace): what a mistaken fence is traced with.
5. Requests wait out the swarm's own reading (kwire.client contract 4a): one loop reads 1,000 brokers' 8 MiB
   catch-up answers, the last seconds after it arrived (a broker in its own process reads it at once); timing them
   out closed the connections and fetched the same bytes again, and the swarm never caught up (docs/SWARM.md,
   session 16). A controller that stops sending still times out, as in Kafka's NetworkClient.
6. Every connection a channel's client closes goes to ``hooks.disconnected(channel, reason)`` (``raft-client``:
   Fetch and FetchSnapshot; ``broker-to-controller``: the rest), with why (kwire.client contract 12).
7. ``raft_read`` counts the Fetch and FetchSnapshot answers read whole (api key -> [answers, bytes]: what the
   leader wrote and the broker did not drop); ``transfers`` notes each snapshot transfer started (when, the
   snapshot's end offset, the broker's fetch position then): the catch-up's cost (docs/SWARM.md, session 20).
"""

from __future__ import annotations

import asyncio
import functools
import random
import time
import uuid
from typing import Any, Protocol

from kraftd.core.log import OffsetAndEpoch
from kwire.client import KafkaClient
from kwire.errors import ErrorCode, NetworkError, RequestTimeoutError
from tools.swarm import frames, lifecycle
from tools.swarm.decoding import BROKER_HEARTBEAT, FETCH, SharedDecodes, read_at, read_instants, send_request
from tools.swarm.lifecycle import SwarmConfig
from tools.swarm.observer import on_fetch
from tools.swarm.replay import SharedReplay
from tools.swarm.snapshot_fetch import DONE, LOST, SnapshotTransfer
from tools.swarm.trace import ChannelTrace


class Hooks(Protocol):
    config: SwarmConfig
    replay: SharedReplay
    decodes: SharedDecodes  # answers decoded once for every broker (tools.swarm.decoding)

    def heartbeat(self, broker: SwarmBroker, sent: float, rtt: float, error: int, node: int) -> None: ...

    def progress(self, broker: SwarmBroker) -> None: ...

    def fenced_while_running(self, broker: SwarmBroker) -> None: ...

    def disconnected(self, channel: str, reason: str) -> None: ...


class SwarmBroker:
    def __init__(self, hooks: Hooks, broker_id: int, port: int, rng: random.Random) -> None:
        self.hooks, self.id, self.port = hooks, broker_id, port
        self.cfg = hooks.config
        # Random, as a real broker's: a controller refuses a log directory another broker registered (Kafka's
        # INVALID_REGISTRATION), so two swarms against one quorum must never share one.
        self.incarnation, self.log_dir, self.metadata_dir = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
        self.state = lifecycle.STARTING
        self.epoch = -1
        # observer
        # An empty log's end is (offset 0, epoch 0) and the quorum epoch starts at 0, as in KafkaRaftClient.
        self.fetch_end, self.last_epoch, self.hwm = 0, 0, -1
        self.leader_id, self.leader_epoch = -1, 0
        self._voter_ids = sorted(self.cfg.voters)
        self._next_voter, self._ask_voter = rng.randrange(len(self._voter_ids)), False  # contract 3
        self._clients: dict[str, tuple[int, KafkaClient]] = {}
        # contract 3b: the raft connections to voters not asked now
        self._raft_idle: dict[int, KafkaClient] = {}
        self.transfer: SnapshotTransfer | None = None  # contract 3a: Kafka's FollowerState.fetchingSnapshot
        self._wake = False  # begin_shutdown asked for a heartbeat now
        self._pending_answered = False  # an answer said not yet ShouldShutDown (contract 2)
        self._waiter: asyncio.Future[None] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.registered_at = self.running_at = self.shutdown_at = self.stopped_at = -1.0
        self.heartbeats_ok = 0
        self.last_target = -1  # the controller the last controller-channel request went to
        self._heartbeat_read = self.heartbeat_loop_read = -1.0  # the last heartbeat answer read (contract 4)
        self.fetch_read = -1.0  # when the last Fetch answer was read and decoded (contract 4)
        self.raft_read: dict[int, list[int]] = {}  # contract 7
        self.transfers: list[tuple[float, int, int]] = []  # contract 7
        self.trace = ChannelTrace()  # contract 4b

    @property
    def committed_offset(self) -> int:
        """The highest offset fetched and committed: what a broker reports as replayed."""
        return min(self.fetch_end, self.hwm) - 1

    @property
    def alive(self) -> bool:
        return self.state not in (lifecycle.STOPPED, lifecycle.KILLED)

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._lifecycle()), asyncio.create_task(self._observe())]

    def begin_shutdown(self) -> None:
        """Contract 2."""
        if self.state in (lifecycle.STOPPED, lifecycle.KILLED, lifecycle.PENDING_SHUTDOWN):
            return
        self.state = lifecycle.PENDING_SHUTDOWN
        self.shutdown_at = time.monotonic()
        self._wake = True
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def kill(self) -> None:
        self.state = lifecycle.KILLED
        await self.close()

    async def close(self) -> None:
        current = asyncio.current_task()
        for t in self._tasks:
            if t is not current:
                t.cancel()
        self._end_transfer()
        for _, client in self._clients.values():
            await client.close()
        self._clients.clear()
        for client in self._raft_idle.values():
            await client.close()
        self._raft_idle.clear()

    # ---- channels --------------------------------------------------------------------------------------------

    def _client(self, channel: str, node: int) -> KafkaClient:
        held = self._clients.get(channel)
        if held is not None and held[0] == node:
            return held[1]
        if held is not None and channel == "raft":
            self._raft_idle[held[0]] = held[1]  # contract 3b
        elif held is not None:
            asyncio.ensure_future(held[1].close())
        kept = self._raft_idle.pop(node, None) if channel == "raft" else None
        if kept is not None:
            self._clients[channel] = (node, kept)
            return kept
        host, port = self.cfg.voters[node]
        name = "raft-client" if channel == "raft" else "broker-to-controller"
        client = KafkaClient(
            host,
            port,
            client_id=f"{name}-{self.id}",
            client_software_name="kraft-swarm",
            request_timeout=self.cfg.request_timeout_s,
            connect_timeout=self.cfg.request_timeout_s,
            reconnect_backoff_ms=self.cfg.retry_backoff_ms,
            decode=self._decode_controller if channel == "controller" else self._decode_raft,
            patient=True,  # contract 5
            on_disconnect=functools.partial(self.hooks.disconnected, name),  # contract 6
        )
        self._clients[channel] = (node, client)
        return client

    def _decode_controller(self, frame: bytes, api_key: int, version: int) -> tuple[int, Any]:
        """Contract 4: the time a heartbeat answer was read (one heartbeat in flight per broker)."""
        if api_key == BROKER_HEARTBEAT:
            client = self._clients.get("controller", (0, None))[1]
            self._heartbeat_read, self.heartbeat_loop_read = read_instants(client)
        return self.hooks.decodes.decode(frame, api_key, version)

    def _decode_raft(self, frame: bytes, api_key: int, version: int) -> tuple[int, Any]:
        """Contracts 4, 7: the time a Fetch answer was read (one fetch in flight per broker)."""
        read = self.raft_read.setdefault(api_key, [0, 0])
        read[0], read[1] = read[0] + 1, read[1] + len(frame)
        if api_key == FETCH:
            self.fetch_read = read_at(self._clients.get("raft", (0, None))[1])
        return self.hooks.decodes.decode(frame, api_key, version)

    async def controller_send(self, request: Any) -> Any | None:
        """One request on the controller channel (Kafka's NodeToControllerChannelManager): sent to the leader the
        observer knows; after a lost connection or NOT_CONTROLLER it is sent again (``retry_backoff_ms`` later) to the
        leader the observer knows then, until ``request_timeout_s`` has passed (then None)."""
        deadline = time.monotonic() + self.cfg.request_timeout_s
        backoff = self.cfg.retry_backoff_ms / 1000
        while self.alive and time.monotonic() < deadline:
            if self.leader_id < 0:
                self.trace.note("no-leader")
                await asyncio.sleep(backoff)
                continue
            self.last_target = self.leader_id
            client = self._client("controller", self.leader_id)
            if client.reconnect_wait() > 0:  # contract 1a
                self.trace.note("backoff", self.last_target)
                await asyncio.sleep(backoff)
                continue
            try:
                left = max(0.01, deadline - time.monotonic())
                resp = await send_request(client, request, left)
            except (NetworkError, RequestTimeoutError, OSError) as exc:
                self.trace.note("failed", type(exc).__name__)
                await asyncio.sleep(backoff)
                continue
            if getattr(resp, "error_code", 0) != ErrorCode.NOT_CONTROLLER:
                return resp
            # An elected leader whose controller is not active yet, or a stale view: ask again.
            self.trace.note("not-controller", self.last_target)
            await asyncio.sleep(backoff)
        return None

    # ---- lifecycle (contracts 1, 2) --------------------------------------------------------------------------

    async def _pause(self, seconds: float) -> None:
        """Sleep ``seconds`` unless :meth:`begin_shutdown` asks for a heartbeat now (also if it asked meanwhile);
        one future and one timer, no task."""
        if not self._wake:
            loop = asyncio.get_running_loop()
            self._waiter = waiter = loop.create_future()
            timer = loop.call_later(seconds, _resolve, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                self._waiter = None
        self._wake = False

    async def _lifecycle(self) -> None:
        failures = 0
        interval = self.cfg.heartbeat_interval_ms / 1000
        while self.alive:
            if self.epoch < 0:
                req: Any = frames.registration(
                    self.id, self.cfg.cluster_id, self.incarnation, self.port, self.log_dir
                )
                resp = await self.controller_send(req)
                if resp is None or resp.error_code != ErrorCode.NONE:
                    failures += 1
                    await self._pause(lifecycle.backoff_s(failures, self.cfg.session_timeout_ms))
                    continue
                self.epoch, self.state, failures = resp.broker_epoch, lifecycle.STARTING, 0
                self.registered_at = time.monotonic()
            delay = self._heartbeat_delay(await self._heartbeat(), interval)
            failures = failures + 1 if delay is None else 0
            if not self.alive:
                break
            pause = delay if delay is not None else lifecycle.backoff_s(failures, self.cfg.session_timeout_ms)
            self.trace.note("pause", round(pause, 3))
            await self._pause(pause)

    async def _heartbeat(self) -> Any | None:
        shutting = self.state == lifecycle.PENDING_SHUTDOWN
        req = frames.heartbeat(
            self.id,
            self.epoch,
            self.committed_offset,
            want_fence=self.state == lifecycle.STARTING,
            want_shut_down=shutting,
        )
        sent = time.monotonic()
        self.trace.note("heartbeat", self.leader_id)
        resp = await self.controller_send(req)
        if not self.alive:
            return None
        error = -1 if resp is None else resp.error_code
        read = self._heartbeat_read if resp is not None and self._heartbeat_read >= sent else time.monotonic()
        self.trace.note("answer", (error, round(read - sent, 3)))
        self.hooks.heartbeat(self, sent, read - sent, error, self.last_target)
        return resp

    def _heartbeat_delay(self, resp: Any | None, interval: float) -> float | None:
        """The broker's next state from one answer; the pause before the next heartbeat (None: back off)."""
        if resp is None or not self.alive:
            return None
        if resp.error_code in lifecycle.REREGISTER:
            self.epoch, self.state = -1, lifecycle.STARTING
            return 0.0
        if resp.error_code != ErrorCode.NONE:
            return None
        self.heartbeats_ok += 1
        if self.state == lifecycle.STARTING:
            if resp.is_caught_up:
                self.state = lifecycle.RECOVERY
            return 0.01
        if self.state == lifecycle.RECOVERY and not resp.is_fenced:
            self.state, self.running_at = lifecycle.RUNNING, time.monotonic()
        elif self.state == lifecycle.RUNNING and resp.is_fenced:
            self.hooks.fenced_while_running(self)
            self.state = lifecycle.RECOVERY  # ask to be unfenced again
        elif self.state == lifecycle.PENDING_SHUTDOWN and resp.should_shut_down:
            self.state, self.stopped_at = lifecycle.STOPPED, time.monotonic()
            asyncio.ensure_future(self.close())
        elif self.state == lifecycle.PENDING_SHUTDOWN and not self._pending_answered:
            self._pending_answered = True  # contract 2: the first pending answer
            return lifecycle.FIRST_PENDING_SHUTDOWN_S
        return interval

    # ---- observer (contract 3) -------------------------------------------------------------------------------

    def _fetch_target(self) -> int:
        if self.leader_id >= 0 and not self._ask_voter:
            return self.leader_id
        self._ask_voter, self._next_voter = False, (self._next_voter + 1) % len(self._voter_ids)
        return self._voter_ids[self._next_voter]

    def learn_leader(self, leader_id: int, leader_epoch: int) -> None:
        if leader_epoch > self.leader_epoch or (
            leader_epoch == self.leader_epoch and self.leader_id < 0 and leader_id >= 0
        ):
            self.leader_id, self.leader_epoch = leader_id, leader_epoch

    async def _observe(self) -> None:
        backoff = self.cfg.retry_backoff_ms / 1000
        timeout = frames.FETCH_MAX_WAIT_MS / 1000 + self.cfg.quorum_request_timeout_s
        while self.alive:
            if self.transfer is not None and self.leader_id >= 0 and not self._ask_voter:
                if not await self._fetch_snapshot(self.leader_id):
                    await asyncio.sleep(backoff)
                continue
            node = self._fetch_target()
            client = self._client("raft", node)
            if client.reconnect_wait() > 0:  # contract 3b: not ready, ask the next voter
                self._ask_voter = True
                await asyncio.sleep(backoff)
                continue
            req = frames.observer_fetch(
                self.cfg.cluster_id,
                self.id,
                self.metadata_dir,
                self.leader_epoch,
                self.fetch_end,
                self.last_epoch,
                self.hwm,
            )
            try:
                resp = await send_request(client, req, timeout)
            except (NetworkError, RequestTimeoutError, OSError):
                self._ask_voter = node == self.leader_id  # contract 3
                await asyncio.sleep(backoff)
                continue
            step = on_fetch(self, node, resp)
            del resp  # tools.swarm.observer contract 2
            if isinstance(step, OffsetAndEpoch):
                self._end_transfer()  # tools.swarm.snapshot_fetch contract 1
                self.transfers.append((time.monotonic(), step.offset, self.fetch_end))  # contract 7
                self.transfer = SnapshotTransfer(self.id, step, self.hooks.replay)
            elif step:
                await asyncio.sleep(backoff)

    def _end_transfer(self) -> None:
        if self.transfer is not None:
            self.transfer.release()
            self.transfer = None

    async def _fetch_snapshot(self, node: int) -> bool:
        """Contract 3a; tools.swarm.snapshot_fetch contracts 2-4: the held transfer from its position; False when
        no answer came (the transfer is kept and the next request is a Fetch to a voter in turn)."""
        transfer = self.transfer
        assert transfer is not None
        client, snapshot = self._client("raft", node), transfer.snapshot

        def send(position: int) -> Any:
            req = frames.snapshot_fetch(
                self.cfg.cluster_id, self.id, self.metadata_dir, self.leader_epoch, snapshot, position
            )
            return send_request(client, req, self.cfg.request_timeout_s)

        outcome = await transfer.fetch(send)
        if outcome == LOST:
            self._ask_voter = True
            return False
        if outcome == DONE:
            transfer.load()
            if snapshot.offset > self.fetch_end:
                self.fetch_end, self.last_epoch = snapshot.offset, snapshot.epoch
        self._end_transfer()
        return True


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
