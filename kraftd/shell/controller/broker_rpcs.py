"""Controller RPCs served on the controller listener: BrokerRegistration (62), BrokerHeartbeat (63),
UnregisterBroker (64), ControllerRegistration (70), AllocateProducerIds (67), AlterPartition (56),
AssignReplicasToDirs (73), plus the periodic duties of the active controller.

Contracts:
1. Every answer is computed from the state machine's latest image and, when it carries records, given only
   after those records commit (kraftd.shell.controller.glue contract 3); a node that is not the active
   controller answers NOT_CONTROLLER, as Kafka's controller does, and the broker looks for the new leader.
2. Once a second the active controller fences brokers whose session timed out (kraftd.controller.brokers 3), in
   bounded writes (kraftd.shell.controller.fencing); a controlled shutdown's moves are written in bounded writes
   too, before its heartbeat is decided (fencing contract 4).
3. Once a second every node makes sure the image holds its own RegisterControllerRecord for this process
   (its incarnation): the active controller writes it, any other node sends ControllerRegistration to the
   leader; this is what DescribeCluster with ``--bootstrap-controller`` reports. Each listener carries the
   security protocol ``listener.security.protocol.map`` gives it (Kafka's SecurityProtocol ids), as Kafka's
   controllers register theirs.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Any, Protocol

from generated.allocate_producer_ids_request import AllocateProducerIdsRequest
from generated.allocate_producer_ids_response import AllocateProducerIdsResponse
from generated.alter_partition_request import AlterPartitionRequest
from generated.alter_partition_response import AlterPartitionResponse
from generated.alter_partition_response import PartitionData as ApPartitionData
from generated.alter_partition_response import TopicData as ApTopicData
from generated.assign_replicas_to_dirs_request import AssignReplicasToDirsRequest
from generated.assign_replicas_to_dirs_response import AssignReplicasToDirsResponse
from generated.assign_replicas_to_dirs_response import DirectoryData as ArdDirectory
from generated.assign_replicas_to_dirs_response import PartitionData as ArdPartition
from generated.assign_replicas_to_dirs_response import TopicData as ArdTopic
from generated.broker_heartbeat_request import BrokerHeartbeatRequest
from generated.broker_heartbeat_response import BrokerHeartbeatResponse
from generated.broker_registration_request import BrokerRegistrationRequest
from generated.broker_registration_response import BrokerRegistrationResponse
from generated.controller_registration_request import ControllerRegistrationRequest
from generated.controller_registration_request import Feature as CtlFeature
from generated.controller_registration_request import Listener as CtlListener
from generated.controller_registration_response import ControllerRegistrationResponse
from generated.messages import ApiKey
from generated.unregister_broker_request import UnregisterBrokerRequest
from generated.unregister_broker_response import UnregisterBrokerResponse
from kraftd.controller import broker_dirs, brokers, controller_registration, partitions
from kraftd.controller.features import MV_CONTROLLER_REGISTRATION, supported_ranges
from kraftd.security import PROTOCOLS
from kraftd.shell.controller import fencing
from kraftd.shell.controller.glue import ControllerPort
from kraftd.shell.net.transport import PeerConnection, PeerError
from kraftd.shell.observe.metrics import NodeMetrics
from kwire.errors import ErrorCode


class BrokerRpcsPort(ControllerPort, Protocol):
    metrics: NodeMetrics

    @property
    def port(self) -> int: ...


log = logging.getLogger("kraftd.controller")


class ControllerRpcs:
    def __init__(self, node: BrokerRpcsPort) -> None:
        self.node = node
        self.heartbeats = brokers.Heartbeats(node.config.broker_session_timeout_ms)
        self.incarnation_id = uuid.uuid4()
        self._registering: PeerConnection | None = None

    @property
    def machine(self) -> Any:
        return self.node.controller.machine

    def now_ms(self) -> int:
        from kraftd.shell.raft.clock import now_ms

        return now_ms()

    async def handle(self, api_key: int, body: Any, version: int = 0) -> Any:
        if api_key == ApiKey.ALTER_PARTITION:
            return await self._alter_partition(body, version)
        if api_key == ApiKey.BROKER_REGISTRATION:
            return await self._register_broker(body)
        if api_key == ApiKey.BROKER_HEARTBEAT:
            started = time.perf_counter()
            try:
                return await self._heartbeat(body)
            finally:
                self.node.metrics.heartbeat_done((time.perf_counter() - started) * 1000)
        if api_key == ApiKey.ALLOCATE_PRODUCER_IDS:
            return await self._allocate_producer_ids(body)
        if api_key == ApiKey.UNREGISTER_BROKER:
            return await self._unregister_broker(body)
        if api_key == ApiKey.ASSIGN_REPLICAS_TO_DIRS:
            return await self._assign_replicas_to_dirs(body)
        return await self._register_controller(body)

    async def _unregister_broker(self, req: UnregisterBrokerRequest) -> UnregisterBrokerResponse:
        records, error, message = broker_dirs.unregister(self.machine.latest(), req.broker_id)
        error = error or await self.node.controller.try_write(records)
        if error:
            return UnregisterBrokerResponse(error_code=error, error_message=message)
        self.heartbeats.last_ms.pop(req.broker_id, None)
        log.info("unregistered broker %d", req.broker_id)
        return UnregisterBrokerResponse(error_code=ErrorCode.NONE)

    async def _assign_replicas_to_dirs(
        self, req: AssignReplicasToDirsRequest
    ) -> AssignReplicasToDirsResponse:
        records, error, results = broker_dirs.assign_replicas_to_dirs(self.machine.latest(), req)
        error = error or await self.node.controller.try_write(records)
        if error:
            return AssignReplicasToDirsResponse(error_code=error)
        return AssignReplicasToDirsResponse(
            error_code=ErrorCode.NONE,
            directories=[
                ArdDirectory(
                    id=d,
                    topics=[
                        ArdTopic(
                            topic_id=t,
                            partitions=[ArdPartition(partition_index=p, error_code=c) for p, c in parts],
                        )
                        for t, parts in topics
                    ],
                )
                for d, topics in results
            ],
        )

    async def _register_broker(self, req: BrokerRegistrationRequest) -> BrokerRegistrationResponse:
        out = brokers.register(
            self.machine.latest(), req, self.node.cluster_id, self.heartbeats, self.now_ms()
        )
        error = out.error or await self.node.controller.try_write(out.records)
        if error:
            return BrokerRegistrationResponse(error_code=error)
        log.info("registered broker %d at epoch %d", req.broker_id, out.broker_epoch)
        return BrokerRegistrationResponse(error_code=ErrorCode.NONE, broker_epoch=out.broker_epoch)

    async def _heartbeat(self, req: BrokerHeartbeatRequest) -> BrokerHeartbeatResponse:
        b = self.machine.latest().brokers.get(req.broker_id) if self.machine.active else None
        if b is not None and b.epoch == req.broker_epoch and not req.want_fence:
            latest, write = self.machine.latest, self.node.controller.try_write
            error = ErrorCode.NONE
            if req.want_shut_down and not b.fenced:
                self.heartbeats.touch(req.broker_id, self.now_ms())  # its session goes on while moves commit
                error = await fencing.shut_down_in_chunks(latest, write, req.broker_id, req.broker_epoch)
            elif (
                not req.want_shut_down
                and b.fenced
                and not b.in_controlled_shutdown
                and req.current_metadata_offset >= b.registration_offset
            ):
                self.heartbeats.touch(req.broker_id, self.now_ms())
                error = await fencing.unfence_in_chunks(latest, write, req.broker_id, req.broker_epoch)
            if error:
                return BrokerHeartbeatResponse(error_code=error)
        out = brokers.heartbeat(self.machine.latest(), req, self.heartbeats, self.now_ms())
        error = out.error or await self.node.controller.try_write(out.records)
        if error:
            return BrokerHeartbeatResponse(error_code=error)
        if out.records:
            log.info(
                "broker %d heartbeat: %d record(s), fenced=%s", req.broker_id, len(out.records), out.is_fenced
            )
        return BrokerHeartbeatResponse(
            error_code=ErrorCode.NONE,
            is_caught_up=out.is_caught_up,
            is_fenced=out.is_fenced,
            should_shut_down=out.should_shut_down,
        )

    async def _alter_partition(self, req: AlterPartitionRequest, version: int) -> AlterPartitionResponse:
        records, top, results = partitions.alter_partition(self.machine.latest(), req, version)
        error = top or await self.node.controller.try_write(records)
        if error:
            return AlterPartitionResponse(error_code=error)
        by_topic: dict[Any, list[ApPartitionData]] = {}
        for tid, pid, code, state in results:
            part = ApPartitionData(partition_index=pid, error_code=code)
            if state is not None:
                part.leader_id, part.leader_epoch, part.isr = (
                    state.leader,
                    state.leader_epoch,
                    list(state.isr),
                )
                part.leader_recovery_state, part.partition_epoch = (
                    state.leader_recovery_state,
                    state.partition_epoch,
                )
            by_topic.setdefault(tid, []).append(part)
        return AlterPartitionResponse(
            error_code=ErrorCode.NONE,
            topics=[ApTopicData(topic_id=tid, partitions=parts) for tid, parts in by_topic.items()],
        )

    async def _allocate_producer_ids(self, req: AllocateProducerIdsRequest) -> AllocateProducerIdsResponse:
        records, error, start = brokers.allocate_producer_ids(
            self.machine.latest(), req.broker_id, req.broker_epoch
        )
        error = error or await self.node.controller.try_write(records)
        if error:
            return AllocateProducerIdsResponse(error_code=error)
        return AllocateProducerIdsResponse(
            error_code=ErrorCode.NONE, producer_id_start=start, producer_id_len=brokers.PRODUCER_ID_BLOCK
        )

    async def _register_controller(
        self, req: ControllerRegistrationRequest
    ) -> ControllerRegistrationResponse:
        records, error = controller_registration.register_controller(self.machine.latest(), req)
        if error:
            return ControllerRegistrationResponse(error_code=error)
        error = await self.node.controller.try_write(records)
        return ControllerRegistrationResponse(error_code=error, error_message=None)

    # ---- periodic duties (contracts 2, 3) ---------------------------------------------------------------------
    async def run_periodic(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            try:
                await self._fence_expired()
                await self._ensure_registered()
            except Exception as exc:  # noqa: BLE001 - a duty that fails is retried next second
                log.debug("periodic controller duty failed: %s", exc)

    async def _fence_expired(self) -> None:
        if not self.machine.active:
            self.heartbeats.last_ms.clear()
            return
        await self.node.controller.settled()
        image = self.machine.latest()
        for bid in brokers.expired(image, self.heartbeats, self.now_ms()):
            log.info("fencing broker %d: no heartbeat within the session timeout", bid)
            if await fencing.fence_in_chunks(self.machine.latest, self.node.controller.try_write, bid):
                return  # leadership lost (fencing contract 3): the next active controller checks again

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
            await self._register_controller(req)
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
