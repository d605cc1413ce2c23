"""Controller RPCs served on the controller listener: BrokerRegistration (62), BrokerHeartbeat (63),
UnregisterBroker (64), ControllerRegistration (70), AllocateProducerIds (67), AlterPartition (56),
AssignReplicasToDirs (73), plus the periodic duties of the active controller.

Contracts:
1. Every answer is computed from the state machine's latest image and, when it carries records, given only
   after those records commit (kraftd.shell.controller.glue contract 3); a node that is not the active
   controller answers NOT_CONTROLLER, as Kafka's controller does, and the broker looks for the new leader.
2. The active controller fences brokers whose session timed out (kraftd.controller.brokers 3), in bounded writes
   (kraftd.shell.controller.fencing), checking when the first running session ends
   (kraftd.controller.brokers.next_check_ms, as Kafka's controller schedules its stale-broker check at
   nextCheckTimeNs) and at least once a second (``CHECK_S``): a killed broker is fenced at its session's end, not
   up to a second later (issue 24: broker failure). A controlled shutdown's moves are written in bounded writes
   too, pipelined, before its heartbeat is decided (fencing contracts 4, 4a).
2a. A broker listed as expired is checked again, with the time then, just before it is fenced: a session check
   fences several brokers one after the other (each in chunks, fencing contract 6), and one that heartbeated
   meanwhile is not fenced (1,000 brokers x 1M partitions, session 18: "last one -70303 ms ago").
3. Once a second every node makes sure the image holds its own RegisterControllerRecord for this process
   (its incarnation): the active controller writes it, any other node sends ControllerRegistration to the
   leader; this is what DescribeCluster with ``--bootstrap-controller`` reports. Each listener carries the
   security protocol ``listener.security.protocol.map`` gives it (Kafka's SecurityProtocol ids), as Kafka's
   controllers register theirs.
4. The short path (issue 24: at 1,000 brokers most heartbeats change nothing): :meth:`ControllerRpcs.heartbeat_now`
   answers at once, on the listener's fast path (kraftd.shell.apis.routing contract 6b), the heartbeat of a
   registered, unfenced broker at its current epoch that asks for no state change (no controlled shutdown, no
   fence, no offline directory), on the active controller with nothing appended still to apply (so the image it
   reads is the one glue contract 5 would have waited for). Such a heartbeat writes no record (kraftd.controller
   .brokers contract 2): its session is touched, its metadata offset noted, and the answer is the one
   :meth:`heartbeat` would give (kraftd.controller.ops.brokers contract 3). Every other heartbeat (None) takes
   :meth:`heartbeat`.
5. A held controlled shutdown (kraftd.controller.brokers contract 4a; issue 24: controlled shutdown took one or two
   heartbeat intervals by chance): a WantShutDown heartbeat answered "not yet" only because active brokers have
   not reported its shutdown offset is held, at most ``session timeout / HOLD_DIVISOR`` (2.25 s at Kafka's 9 s;
   a broker's heartbeat request times out at half the session timeout, Kafka's KAFKA-14392), until the report that
   brings the last of them there (on either heartbeat path), then decided again with the same request and receipt
   time and answered (ShouldShutDown and the fencing record, or "not yet" once more). One held answer per broker.
   The first answer is timed for the metrics, not the hold.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from generated.allocate_producer_ids_request import AllocateProducerIdsRequest
from generated.alter_partition_request import AlterPartitionRequest
from generated.assign_replicas_to_dirs_request import AssignReplicasToDirsRequest
from generated.broker_heartbeat_request import BrokerHeartbeatRequest
from generated.broker_registration_request import BrokerRegistrationRequest
from generated.controller_registration_request import ControllerRegistrationRequest
from generated.controller_registration_request import Feature as CtlFeature
from generated.controller_registration_request import Listener as CtlListener
from generated.unregister_broker_request import UnregisterBrokerRequest
from kraftd.controller import brokers
from kraftd.controller.features import MV_CONTROLLER_REGISTRATION, supported_ranges
from kraftd.controller.ops import brokers as ops
from kraftd.security import PROTOCOLS
from kraftd.shell.controller import fencing
from kraftd.shell.controller.glue import ControllerPort
from kraftd.shell.net.transport import PeerConnection, PeerError
from kraftd.shell.observe.metrics import NodeMetrics
from kraftd.shell.raft.clock import now_ms
from kwire.errors import ErrorCode


class BrokerRpcsPort(ControllerPort, Protocol):
    metrics: NodeMetrics

    @property
    def port(self) -> int: ...


log = logging.getLogger("kraftd.controller")
T = TypeVar("T")
CHECK_S = 1.0  # contract 2: the longest time between two session checks (and between two registration checks)
MIN_CHECK_S = 0.01  # contract 2: the shortest (a session ending now is checked in the next loop turns)
HOLD_DIVISOR = 4  # contract 5


class ControllerRpcs:
    def __init__(self, node: BrokerRpcsPort) -> None:
        self.node = node
        self.heartbeats = brokers.Heartbeats(node.config.broker_session_timeout_ms)
        self.incarnation_id = uuid.uuid4()
        self._registering: PeerConnection | None = None
        self.moving = fencing.OneAtATime()  # fencing contract 6
        self._held: dict[
            int, asyncio.Event
        ] = {}  # contract 5: per broker, set when its shutdown may be decided

    @property
    def machine(self) -> Any:
        return self.node.controller.machine

    def now_ms(self) -> int:
        return now_ms()

    async def alter_partition(self, req: AlterPartitionRequest, version: int, principal: str) -> Any:
        return await self.node.controller.run(ops.alter_partition(self.machine.latest(), req, version))

    async def register_broker(self, req: BrokerRegistrationRequest, version: int, principal: str) -> Any:
        now = self.now_ms()
        result = ops.register_broker(self.machine.latest(), req, self.node.cluster_id, self.heartbeats, now)
        return await self.node.controller.run(result)

    async def heartbeat(self, req: BrokerHeartbeatRequest, version: int, principal: str) -> Any:
        started = time.perf_counter()
        try:
            error = await self._moves_first(req)
            if error:
                return ops.heartbeat_failed(error)
            received = self.now_ms()
            result = ops.heartbeat(self.machine.latest(), req, self.heartbeats, received)
            self._release_held()
            answer = await self.node.controller.run(result)
        finally:
            self.node.metrics.heartbeat_done((time.perf_counter() - started) * 1000)
        if req.want_shut_down and answer.error_code == ErrorCode.NONE and not answer.should_shut_down:
            return await self._held_shutdown(req, received, answer)
        return answer

    async def _held_shutdown(self, req: BrokerHeartbeatRequest, received: int, answer: Any) -> Any:
        """Contract 5."""
        bid, hb = req.broker_id, self.heartbeats
        if (
            not self.machine.active
            or bid in self._held
            or not brokers.await_shutdown(self.machine.latest(), hb, bid)
        ):
            return answer
        self._held[bid] = ready = asyncio.Event()
        try:
            await asyncio.wait_for(ready.wait(), hb.session_timeout_ms / HOLD_DIVISOR / 1000)
        except TimeoutError:
            pass
        finally:
            del self._held[bid]
            hb.stop_waiting(bid)
        if not self.machine.active:
            return answer
        return await self.node.controller.run(ops.heartbeat(self.machine.latest(), req, hb, received))

    def _release_held(self) -> None:
        """Contract 5: wake each held shutdown that no active broker holds back any longer."""
        for bid, ready in self._held.items():
            if self.heartbeats.shutdown_ready(bid):
                ready.set()

    def heartbeat_now(self, req: BrokerHeartbeatRequest) -> Any | None:
        """Contract 4: the answer to a heartbeat that changes nothing, or None (the coroutine path answers)."""
        m = self.machine
        if not m.active or m.appended_pending:
            return None
        started = time.perf_counter()
        answer = ops.heartbeat_unchanged(m.latest(), req, self.heartbeats, self.now_ms())
        if answer is not None:
            if self._held:
                self._release_held()  # contract 5
            self.node.metrics.heartbeat_done((time.perf_counter() - started) * 1000)
        return answer

    async def _moves_first(self, req: BrokerHeartbeatRequest) -> ErrorCode:
        """Contract 2: a controlled shutdown's or an unfencing's partition moves, written in bounded writes before
        the heartbeat is decided (fencing contract 4); the broker's session goes on while they commit."""
        b = self.machine.latest().brokers.get(req.broker_id) if self.machine.active else None
        if b is None or b.epoch != req.broker_epoch or req.want_fence:
            return ErrorCode.NONE
        latest, write = self.machine.latest, self.node.controller.write_settled
        if req.want_shut_down and not b.fenced:
            self.heartbeats.touch(req.broker_id, self.now_ms())
            return await self.moving.run(
                req.broker_id,
                lambda: fencing.shut_down_in_chunks(
                    latest, write, req.broker_id, req.broker_epoch, self.node.controller.append_settled
                ),
            )
        if (
            not req.want_shut_down
            and b.fenced
            and not b.in_controlled_shutdown
            and req.current_metadata_offset >= b.registration_offset
        ):
            self.heartbeats.touch(req.broker_id, self.now_ms())
            return await self.moving.run(
                req.broker_id,
                lambda: fencing.unfence_in_chunks(latest, write, req.broker_id, req.broker_epoch),
            )
        return ErrorCode.NONE

    async def allocate_producer_ids(
        self, req: AllocateProducerIdsRequest, version: int, principal: str
    ) -> Any:
        return await self.node.controller.run(ops.allocate_producer_ids(self.machine.latest(), req))

    async def unregister_broker(self, req: UnregisterBrokerRequest, version: int, principal: str) -> Any:
        response = await self.node.controller.run(ops.unregister_broker(self.machine.latest(), req))
        if response.error_code == ErrorCode.NONE:
            self.heartbeats.last_ms.pop(req.broker_id, None)
        return response

    async def assign_replicas_to_dirs(
        self, req: AssignReplicasToDirsRequest, version: int, principal: str
    ) -> Any:
        return await self.node.controller.run(ops.assign_replicas_to_dirs(self.machine.latest(), req))

    async def register_controller(
        self, req: ControllerRegistrationRequest, version: int = 0, principal: str = ""
    ) -> Any:
        return await self.node.controller.run(ops.register_controller(self.machine.latest(), req))

    # ---- periodic duties (contracts 2, 3) ---------------------------------------------------------------------
    async def run_periodic(self) -> None:
        registered_at = 0.0
        while True:
            await asyncio.sleep(self.fence_check_delay_s())
            try:
                await self._fence_expired()
                if time.monotonic() - registered_at >= CHECK_S:
                    registered_at = time.monotonic()
                    await self._ensure_registered()
            except Exception as exc:  # noqa: BLE001 - a duty that fails is retried next second
                log.debug("periodic controller duty failed: %s", exc)

    def fence_check_delay_s(self) -> float:
        """Contract 2: seconds until the next session check (the first session's end, at most ``CHECK_S``)."""
        if not self.machine.active:
            return CHECK_S
        end = brokers.next_check_ms(self.machine.committed, self.heartbeats)  # latest() may apply (glue 5)
        if end is None:
            return CHECK_S
        return min(CHECK_S, max(MIN_CHECK_S, (end - self.now_ms() + 1) / 1000))

    async def _fence_expired(self) -> None:
        if not self.machine.active:
            self.heartbeats.last_ms.clear()
            return
        await self.node.controller.settled()
        for bid in brokers.expired(self.machine.latest(), self.heartbeats, self.now_ms()):
            # Contract 2a: each broker's session is checked again just before it is fenced. Fencing one that leads
            # thousands of partitions takes seconds; a broker listed at the check may have heartbeated since.
            now = self.now_ms()
            if not brokers.still_expired(self.machine.latest(), self.heartbeats, bid, now):
                continue
            log.info(
                "fencing broker %d: no heartbeat within the session timeout (last one %d ms ago)",
                bid,
                now - self.heartbeats.last_ms.get(bid, now),
            )
            started, writes = time.perf_counter(), [0]
            ctl = self.node.controller
            write, append = _counted(writes, ctl.write_settled), _counted(writes, ctl.append_settled)
            if await fencing.fence_in_chunks(self.machine.latest, write, bid, append):
                return  # leadership lost (fencing contract 3): the next active controller checks again
            log.info(
                "fenced broker %d in %d write(s), %.0f ms after its session check",
                bid,
                writes[0],
                (time.perf_counter() - started) * 1000,
            )

    def _registration(self) -> ControllerRegistrationRequest:
        cfg = self.node.config
        return ControllerRegistrationRequest(
            controller_id=cfg.node_id,
            incarnation_id=self.incarnation_id,
            zk_migration_ready=False,
            listeners=[
                CtlListener(
                    name=e.name,
                    host=e.host,
                    port=e.port if e.port else self.node.port,
                    security_protocol=PROTOCOLS.index(cfg.security_protocol_map[e.name]),
                )
                for e in cfg.advertised_controller_listeners
            ],
            features=[
                CtlFeature(name=n, min_supported_version=lo, max_supported_version=hi)
                for n, (lo, hi) in sorted(supported_ranges().items())
            ],
        )

    async def _ensure_registered(self) -> None:
        image = self.machine.committed
        if image.metadata_version < MV_CONTROLLER_REGISTRATION:
            return
        mine = image.controllers.get(self.node.config.node_id)
        if mine is not None and mine.incarnation_id == self.incarnation_id:
            return
        req = self._registration()
        if self.machine.active:
            await self.register_controller(req)
            return
        leader = self.node.known_leader()
        peer = self.node.peers.get(leader)
        if leader < 0 or peer is None:
            return
        if self._registering is None or (self._registering.host, self._registering.port) != (
            peer.host,
            peer.port,
        ):
            if self._registering is not None:
                await self._registering.close()
            self._registering = self.node.connect(peer.host, peer.port, "controller-registration-", 3000)
        try:
            await self._registering.request(req)
        except PeerError:
            return

    async def close(self) -> None:
        if self._registering is not None:
            await self._registering.close()


def _counted(
    writes: list[int], call: Callable[[list[Any]], Awaitable[T]]
) -> Callable[[list[Any]], Awaitable[T]]:
    """``call`` (a write, or fencing contract 1's pipelined append: glue contract 10), counted into ``writes``."""

    async def counted(records: list[Any]) -> T:
        writes[0] += 1
        return await call(records)

    return counted
