"""Brokers as clients of the simulated controller quorum (Kafka's BrokerLifecycleManager, AlterPartitionManager
and forwarded admin requests, reduced to the messages the controller acts on).

Contracts:
1. A running broker has one request in flight at a time; an answer that does not come within
   ``REQUEST_TIMEOUT_MS`` (lost, or its controller died) or NOT_CONTROLLER sends the next request to another
   controller, picked at random (a real broker learns the leader from the log; any guess is allowed here).
2. Lifecycle: an unregistered broker sends BrokerRegistration with its incarnation id; a registered one
   heartbeats every ``HEARTBEAT_MS`` with the metadata offset it has replayed (the committed offset of the
   controller it talks to), asking to shut down when a controlled shutdown was requested and stopping once told
   ShouldShutDown. STALE_BROKER_EPOCH or BROKER_ID_NOT_REGISTERED start a new registration.
3. Between heartbeats a registered broker may, as the leader of a partition in its view of the metadata, ask to
   shrink or expand the ISR (AlterPartition v3 with the broker epochs it sees; the view may be stale: the
   controller must refuse what no longer holds), and may forward CreateTopics or CreatePartitions.
4. A killed broker stops sending at once (its session then expires); a restarted one has a new incarnation id.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from generated.alter_partition_request import AlterPartitionRequest, BrokerState, PartitionData, TopicData
from generated.broker_heartbeat_request import BrokerHeartbeatRequest
from generated.broker_registration_request import BrokerRegistrationRequest, Feature, Listener
from generated.create_partitions_request import CreatePartitionsRequest, CreatePartitionsTopic
from generated.create_topics_request import CreatableTopic, CreateTopicsRequest
from kraftd.controller import brokers as cb
from kraftd.controller import partitions as cp
from kraftd.controller import topics as ct
from kraftd.controller.features import supported_ranges
from kraftd.controller.image import MetadataImage
from kraftd.sim.controller_cluster import ControllerCluster
from kwire.errors import ErrorCode

HEARTBEAT_MS = 200
REQUEST_TIMEOUT_MS = 1000
BROKER_ID_BASE = 100  # broker ids never collide with controller node ids
CLUSTER_ID = "sim"


@dataclass(slots=True)
class SimBroker:
    broker_id: int
    incarnation: uuid.UUID
    running: bool = True
    epoch: int = -1  # -1: not registered
    fenced: bool = True
    want_shutdown: bool = False
    target: int = 0  # the controller it sends to
    inflight: int = 0  # request sequence number awaited (0: none)
    seq: int = 0
    life: int = 0  # bumped when killed or restarted: answers to an earlier life are ignored
    answers: dict[str, int] = field(default_factory=dict)  # error name -> count (for reports)


class BrokerFleet:
    def __init__(self, c: ControllerCluster, rng: random.Random, count: int) -> None:
        self.c = c
        self.rng = rng
        self.brokers = {BROKER_ID_BASE + i: SimBroker(BROKER_ID_BASE + i, self._uuid()) for i in range(count)}
        self.admin = True  # scenarios may stop forwarding admin requests
        self.topic_count = 0
        for b in self.brokers.values():
            b.target = rng.choice(c.voter_ids)
            self._schedule(b)

    def _uuid(self) -> uuid.UUID:
        return uuid.UUID(int=self.rng.getrandbits(128))

    # ----- contract 4 -----
    def kill(self, broker_id: int) -> None:
        b = self.brokers[broker_id]
        b.running, b.life, b.inflight = False, b.life + 1, 0
        self.c.trace.append(f"{self.c.now:>7} broker {broker_id} killed")

    def restart(self, broker_id: int) -> None:
        b = self.brokers[broker_id]
        if b.running:
            return
        b.running, b.life, b.inflight = True, b.life + 1, 0
        b.incarnation, b.epoch, b.fenced, b.want_shutdown = self._uuid(), -1, True, False
        self.c.trace.append(f"{self.c.now:>7} broker {broker_id} restarted")
        self._schedule(b)

    def controlled_shutdown(self, broker_id: int) -> None:
        b = self.brokers[broker_id]
        if b.running and b.epoch >= 0:
            b.want_shutdown = True
            self.c.trace.append(f"{self.c.now:>7} broker {broker_id} asks for a controlled shutdown")

    # ----- scheduling (contracts 1, 2) -----
    def _schedule(self, b: SimBroker, delay: int | None = None) -> None:
        life = b.life
        when = self.c.now + (
            delay if delay is not None else self.rng.randint(HEARTBEAT_MS // 2, HEARTBEAT_MS)
        )
        self.c.at(when, lambda: self._act(b, life))

    def _act(self, b: SimBroker, life: int) -> None:
        if not b.running or b.life != life:
            return
        if b.inflight:
            self._schedule(b)
            return
        if b.epoch < 0:
            self._request(b, "register", self._register_request(b))
        elif self.rng.random() < 0.25:
            self._side_request(b)
        else:
            self._request(b, "heartbeat", self._heartbeat_request(b))
        self._schedule(b)

    def missing_topics(self, names: list[str]) -> list[str]:
        """``names`` the most advanced committed image of a running controller does not hold."""
        images = [m.committed for m in self.c.machines.values() if m is not None]
        image = max(images, key=lambda i: i.offset, default=None)
        return [n for n in names if image is None or n not in image.topic_ids]

    def create_topics(self, names: list[str], partitions: int) -> None:
        """One CreateTopics (RF 3) forwarded by a registered, running broker with nothing in flight, if any."""
        topics = [CreatableTopic(name=n, num_partitions=partitions, replication_factor=3) for n in names]
        for b in self.brokers.values():
            if b.running and b.epoch >= 0 and not b.inflight:
                self._request(b, "topics", CreateTopicsRequest(topics=topics))
                return

    def _view(self, b: SimBroker) -> MetadataImage | None:
        m = self.c.machines.get(b.target)
        return m.committed if m is not None else None

    def _register_request(self, b: SimBroker) -> BrokerRegistrationRequest:
        return BrokerRegistrationRequest(
            broker_id=b.broker_id,
            cluster_id=CLUSTER_ID,
            incarnation_id=b.incarnation,
            listeners=[Listener(name="PLAINTEXT", host=f"b{b.broker_id}", port=9092, security_protocol=0)],
            features=[
                Feature(name=n, min_supported_version=lo, max_supported_version=hi)
                for n, (lo, hi) in sorted(supported_ranges().items())
            ],
            rack=None,
            log_dirs=[uuid.UUID(int=1000 + b.broker_id)],
        )

    def _heartbeat_request(self, b: SimBroker) -> BrokerHeartbeatRequest:
        view = self._view(b)
        return BrokerHeartbeatRequest(
            broker_id=b.broker_id,
            broker_epoch=b.epoch,
            current_metadata_offset=view.offset if view is not None else -1,
            want_shut_down=b.want_shutdown,
        )

    def _side_request(self, b: SimBroker) -> None:
        """Contract 3."""
        view = self._view(b)
        if view is None:
            return
        roll = self.rng.random()
        if roll < 0.6:
            req = self._alter_request(b, view)
            if req is not None:
                self._request(b, "alter", req)
                return
        if not self.admin:
            return
        if roll < 0.8 and view.topic_ids:
            name = self.rng.choice(sorted(view.topic_ids))
            count = len(view.topics[view.topic_ids[name]].partitions) + self.rng.randint(0, 2)
            req2 = CreatePartitionsRequest(
                topics=[CreatePartitionsTopic(name=name, count=count, assignments=None)]
            )
            self._request(b, "partitions", req2)
        else:
            self.topic_count += 1
            name = f"t{self.rng.randint(0, self.topic_count)}"
            topic = CreatableTopic(
                name=name, num_partitions=self.rng.randint(1, 3), replication_factor=self.rng.randint(1, 3)
            )
            self._request(b, "topics", CreateTopicsRequest(topics=[topic]))

    def _alter_request(self, b: SimBroker, view: MetadataImage) -> AlterPartitionRequest | None:
        led = [
            (tid, pid, p)
            for tid, t in sorted(view.topics.items())
            for pid, p in sorted(t.partitions.items())
            if p.leader == b.broker_id
        ]
        if not led:
            return None
        tid, pid, p = self.rng.choice(led)
        outside = [r for r in p.replicas if r not in p.isr and self.brokers.get(r, b).running]
        inside = [r for r in p.isr if r != b.broker_id]
        if outside and (not inside or self.rng.random() < 0.5):
            isr = [*p.isr, self.rng.choice(outside)]  # a follower caught up
        elif inside:
            isr = [r for r in p.isr if r != self.rng.choice(inside)]  # a follower fell behind
        else:
            return None
        members = [
            BrokerState(broker_id=r, broker_epoch=view.brokers[r].epoch if r in view.brokers else -1)
            for r in isr
        ]
        part = PartitionData(
            partition_index=pid,
            leader_epoch=p.leader_epoch,
            new_isr_with_epochs=members,
            partition_epoch=p.partition_epoch,
        )
        return AlterPartitionRequest(
            broker_id=b.broker_id, broker_epoch=b.epoch, topics=[TopicData(topic_id=tid, partitions=[part])]
        )

    # ----- the controller's side of one request -----
    def _request(self, b: SimBroker, kind: str, req: Any) -> None:
        b.seq += 1
        seq, life, target = b.seq, b.life, b.target
        b.inflight = seq
        self.c.send(b.broker_id, target, lambda: self._serve(target, b, kind, req, seq, life))
        self.c.at(self.c.now + REQUEST_TIMEOUT_MS, lambda: self._timeout(b, seq, life))

    def _timeout(self, b: SimBroker, seq: int, life: int) -> None:
        if b.life == life and b.inflight == seq:
            b.inflight = 0
            b.target = self.rng.choice(self.c.voter_ids)

    def _serve(self, nid: int, b: SimBroker, kind: str, req: Any, seq: int, life: int) -> None:
        c = self.c
        m = c.machines.get(nid)
        if m is None or not m.active:
            self._answer(nid, b, seq, life, ErrorCode.NOT_CONTROLLER, kind, None)
            return
        image, hb, bugs = m.latest(), c.heartbeats[nid], c.bugs
        result: Any = None
        if kind == "register":
            out = cb.register(image, req, CLUSTER_ID, hb, c.now, bugs)
            records, error, result = out.records, out.error, out
        elif kind == "heartbeat":
            out = cb.heartbeat(image, req, hb, c.now, bugs)
            records, error, result = out.records, out.error, out
        elif kind == "alter":
            records, error, _ = cp.alter_partition(image, req, 3, bugs)
        elif kind == "partitions":
            records, _ = cp.create_partitions(image, req, c.rng)
            error = ErrorCode.NONE
        else:
            records, _ = ct.create_topics(image, req, c.rng)
            error = ErrorCode.NONE
        if error:
            self._answer(nid, b, seq, life, error, kind, result)
            return
        c.write(nid, records, lambda err: self._answer(nid, b, seq, life, err, kind, result))

    def _answer(
        self, nid: int, b: SimBroker, seq: int, life: int, error: ErrorCode, kind: str, out: Any
    ) -> None:
        self.c.send(nid, b.broker_id, lambda: self._on_answer(nid, b, seq, life, error, kind, out))

    def _on_answer(
        self, nid: int, b: SimBroker, seq: int, life: int, error: ErrorCode, kind: str, out: Any
    ) -> None:
        if b.life != life or b.inflight != seq:
            return  # a duplicate, or an answer to a request already given up on
        b.inflight = 0
        b.answers[error.name] = b.answers.get(error.name, 0) + 1
        if error == ErrorCode.NOT_CONTROLLER:
            b.target = self.rng.choice(self.c.voter_ids)
        elif error in (ErrorCode.STALE_BROKER_EPOCH, ErrorCode.BROKER_ID_NOT_REGISTERED):
            b.epoch = -1
        elif error == ErrorCode.NONE and kind == "register":
            b.epoch = out.broker_epoch
        elif error == ErrorCode.NONE and kind == "heartbeat":
            b.fenced = out.is_fenced
            if out.should_shut_down:
                self.c.trace.append(f"{self.c.now:>7} broker {b.broker_id} shut down (controlled)")
                self.kill(b.broker_id)

    # ----- views for scenarios -----
    def settled(self) -> bool:
        """Every running broker is registered and unfenced in the active controller's committed image."""
        nid = self.c.active_controller()
        if nid is None:
            return False
        image = self.c.machines[nid].committed
        for bid, b in self.brokers.items():
            if not b.running:
                continue
            reg = image.brokers.get(bid)
            if reg is None or reg.fenced or reg.incarnation_id != b.incarnation:
                return False
        return True
