"""Linearizable reads in the asyncio shell (the core's read barriers, kraftd.core.reads) and DescribeConfigs (32).

Contracts:
1. ``kraftd.read.consistency=linearizable`` (the default): every answer built from the image - Metadata,
   DescribeCluster, DescribeQuorum's voters view, DescribeConfigs, ListPartitionReassignments and the finalized
   features of any ApiVersions after a connection's handshake (kwire.server contract 10) - first passes a read
   barrier, so it reflects every write acknowledged (by any controller) before the request arrived. A barrier
   that fails (no leader, or none reachable, within ``controller.quorum.request.timeout.ms``) fails the read:
   NOT_CONTROLLER or REQUEST_TIMED_OUT in the response's error fields; the local image is never served instead.
2. ``stale``: the answer comes from the locally applied image at once. It is still error-free; DescribeConfigs
   then carries the read-only entry ``kraftd.read.consistency=stale`` in each result, and every stale answer
   counts in the metric ``kraftd_reads_total{consistency="stale"}`` (docs/CONFIG.md).
2a. In a mixed quorum led by a Kafka controller (which has no ReadOffset, and itself answers reads from its own
   image), a barrier fails with UNSUPPORTED_VERSION: the read is then answered from the local image and counted
   as ``kraftd_reads_total{consistency="stale_kafka_leader"}``, with one warning per leader and epoch in the
   log; linearizable reads need a kraftd leader.
3. ReadOffset requests to the leader travel on their own connection per peer, never behind a long-polling
   Fetch on the Raft connection (kraftd.core.reads invariant 4).
4. DescribeConfigs answers as Kafka's controller does from its image: TOPIC (2) the topic's dynamic configs
   (UNKNOWN_TOPIC_OR_PARTITION when absent), BROKER (4) with an id the broker's dynamic configs and with the
   empty name the cluster-wide dynamic defaults; BROKER_LOGGER (8) lists no loggers (kraftd keeps none per
   broker); CLIENT_METRICS (16) and GROUP (32) every key with its value or default and Kafka's source
   (kraftd.controller.config_kinds contract 6); other types are INVALID_REQUEST. ``ConfigurationKeys`` filters
   the keys when not null. With IncludeSynonyms each entry carries its own level (and, for a broker id, the
   cluster-wide dynamic default of the same key when set), as Kafka's ConfigHelper lists them.
5. Batching (kraftd.core.reads invariant 4, issue #25): the reads that reach :meth:`ReadBarriers.barrier` between
   two steps of the core share one barrier ticket and one future; the driver calls :meth:`ReadBarriers.seal` before
   every step, so each read sharing a ticket was invoked before the step that starts that ticket's ReadOffset (or
   the leader's confirmation round), which is all invariant 1a asks. ``kraftd_read_barriers_total`` counts the
   tickets, ``kraftd_reads_total`` the reads.
5a. A new ticket is handed to the core as a ``ReadsDue`` event, stepped at once when the driver idles
   (kraftd.shell.node contract 4a): no Tick, no driver wake-up and no full poll (kraftd.core.reads invariant 7).
   With nothing in flight (no ReadOffset ask, no confirmation round, nothing queued) that happens in the call
   itself, so a lone read asks without waiting for a turn of the loop; otherwise once the loop has run the
   callbacks already ready, so the reads parsed in the same turn join the ticket.
6. Reads that share a barrier share their answers (issue #25): within one turn of the loop, a DescribeConfigs
   result is built once per (image and its offset, error code, resource, keys, IncludeSynonyms); each request
   still gets its own response object (kraftd.shell.apis.denials merges refused entries into it).
7. DescribeConfigs on the listener's fast path (kraftd.shell.apis.routing contract 6c, kwire.server contracts
   11b-11c; issue #25): :meth:`ReadBarriers.describe_now` answers a stale read at once, and makes a linearizable
   read join the open ticket (contract 5) as a callback, with no task: when the ticket resolves, from inside that
   step, its fast reads are answered in ticket order, all of the step's replies held to one write per connection.
   Only a read that finds the barrier failed or the controller still replaying takes the coroutine path's
   handling (contracts 1, 2a) in a task. The answer is the one :meth:`ReadBarriers.describe_configs` builds.
7a. Fast reads that share a turn of the loop, ask the same (resources, keys, IncludeSynonyms) and are answered
   from the same image share one response object (issue 25), so kwire.server encodes its body once per turn
   (contract 11a) instead of once per read. The fast path runs only without an authorizer (kwire.server
   contract 11), so no denial is ever merged into a shared response (contract 6's reason for one per request).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from prometheus_client import Counter

from generated.describe_configs_request import DescribeConfigsRequest
from generated.describe_configs_response import DescribeConfigsResponse, DescribeConfigsResult
from kraftd.core.effects import ReadResolved
from kraftd.core.events import ReadsDue
from kraftd.shell.controller.glue import ControllerPort
from kraftd.shell.net.transport import PeerConnection
from kraftd.shell.observe.loopmetrics import LoopCounters
from kraftd.shell.observe.metrics import NodeMetrics
from kraftd.shell.raft.clock import now_ms
from kraftd.shell.raft.config_answers import STALE, describe
from kwire.errors import ErrorCode
from kwire.server import KafkaServer


class ReadsPort(ControllerPort, Protocol):
    metrics: NodeMetrics
    server: KafkaServer


log = logging.getLogger("kraftd.reads")

LINEARIZABLE = "linearizable"


class ReadUnavailableError(Exception):
    """A read barrier failed (contract 1); ``code`` is NOT_CONTROLLER or REQUEST_TIMED_OUT."""

    def __init__(self, code: int) -> None:
        super().__init__(ErrorCode(code).name)
        self.code = code


class _FastRead:
    """Contract 7: one fast read waiting on its ticket, one object rather than closures (kwire.settle)."""

    __slots__ = ("barriers", "req", "reply", "count", "latency", "started")

    def __init__(
        self,
        barriers: ReadBarriers,
        req: DescribeConfigsRequest,
        reply: Callable[[Any], None],
        count: Any,
        latency: Any,
    ) -> None:
        self.barriers, self.req, self.reply, self.count, self.latency = barriers, req, reply, count, latency
        self.started = time.perf_counter()

    def __call__(self, code: int) -> None:
        self.barriers._answer(self.req, self.answered, code)

    def answered(self, resp: Any) -> None:
        self.reply(resp)
        self.count.inc()
        self.latency.observe(time.perf_counter() - self.started)


class ReadBarriers:
    def __init__(self, node: ReadsPort) -> None:
        self.node = node
        self._waiting: dict[int, asyncio.Future[int]] = {}
        self._conns: dict[int, PeerConnection] = {}
        self.stale = node.config.read_consistency == STALE
        self._warned: object = None
        self._answers: dict[tuple[Any, ...], tuple[Any, DescribeConfigsResult]] = {}  # contract 6
        self._shared_answers: dict[tuple[Any, ...], tuple[Any, DescribeConfigsResponse]] = {}  # contract 7a
        # The ticket later reads join until the core's next step (contract 5), and its number.
        self._open: asyncio.Future[int] | None = None
        self._open_ticket = -1
        self._fast: dict[int, list[Callable[[int], None]]] = {}  # ticket -> its fast reads (contract 7)
        self.served = LoopCounters(  # on the loop only, without a lock (kraftd.shell.observe.loopmetrics)
            "kraftd_reads",
            "Reads answered from the image, by consistency",
            "consistency",
            node.metrics.registry,
        )
        self._served_lin = self.served.labels(LINEARIZABLE)
        self._served_stale = self.served.labels(STALE)
        self.tickets = Counter(
            "kraftd_read_barriers",
            "Read barriers asked of the Raft core; the reads between two steps share one (batching)",
            registry=node.metrics.registry,
        )

    def seal(self) -> None:
        """Contract 5: the core steps next; a later read needs a new ticket."""
        self._open = None

    def _join(self, fast: Callable[[int], None] | None = None) -> asyncio.Future[int]:
        """Contract 5: the open ticket's future (a new ticket when none is open); ``fast`` is called with its
        outcome from the step that resolves it (contract 7), registered before that step can run."""
        fut = self._open
        if fut is not None:
            if fast is not None:
                self._fast.setdefault(self._open_ticket, []).append(fast)
        else:
            node = self.node
            ticket = self._open_ticket = node.client.read_barrier()
            fut = self._open = asyncio.get_running_loop().create_future()
            self._waiting[ticket] = fut
            self._fast[ticket] = [] if fast is None else [fast]
            self.tickets.inc()
            st = node.core.reads
            if st.asks or st.round is not None or st.queued:
                asyncio.get_running_loop().call_soon(self._due)  # contract 5a
            else:
                self._due()  # contract 5a: nothing in flight, this read asks at once
        return fut

    async def barrier(self) -> None:
        """RaftClient.read_barrier over asyncio: returns once the applied image is as new as the leader's
        was at the call; raises ReadUnavailableError otherwise."""
        code = await self._join()
        if code != ErrorCode.NONE:
            raise ReadUnavailableError(code)
        await self.node.controller.caught_up()  # batches the glue is still replaying (machine contract 6)

    async def before_read(self) -> int:
        """Contracts 1-2: ErrorCode.NONE when the caller may answer from the image now."""
        if self.stale:
            self._served_stale.inc()
            return ErrorCode.NONE
        try:
            await self.barrier()
        except ReadUnavailableError as exc:
            return self._failed(exc.code)
        self._served_lin.inc()
        return ErrorCode.NONE

    def _failed(self, code: int) -> int:
        """Contracts 1 and 2a: a failed barrier's code, or NONE for a Kafka leader's (served as stale)."""
        if code == ErrorCode.UNSUPPORTED_VERSION:
            leader = self.node.client.leader_and_epoch
            if leader != self._warned:
                self._warned = leader
                log.warning(
                    "node %d: leader %d (epoch %d) does not serve ReadOffset; reads are answered from the "
                    "local image (stale) while it leads",
                    self.node.config.node_id,
                    leader.leader_id,
                    leader.epoch,
                )
            self.served.labels("stale_kafka_leader").inc()
            return ErrorCode.NONE
        return code

    def describe_now(self, req: DescribeConfigsRequest, reply: Callable[[Any], None]) -> bool:
        """Contract 7 (kraftd.shell.apis.routing contract 6c), with the request metrics the coroutine path's
        instrument counts; False: the coroutine path takes it."""
        read = _FastRead(self, req, reply, *self.node.metrics.children("DescribeConfigs"))
        try:
            if self.stale:
                self._served_stale.inc()
                read.answered(self._response(req, ErrorCode.NONE))
            else:
                self._join(read)  # answered from the step resolving the ticket
        except Exception:  # noqa: BLE001 - the coroutine path answers it (and reports what it finds)
            log.exception("node %d: the DescribeConfigs short path failed", self.node.config.node_id)
            return False
        return True

    def _answer(self, req: DescribeConfigsRequest, reply: Callable[[Any], None], code: int) -> None:
        """Contract 7; an answer that cannot be built closes that connection (kwire.server contract 3)."""
        try:
            if code != ErrorCode.NONE or self.node.controller.machine.replay_pending:
                self.node.spawn_task(self._answer_later(req, reply, code))
                return
            self._served_lin.inc()
            answer = self._shared(req)
        except Exception:  # noqa: BLE001 - one read's failure never stops the step that resolved it
            log.exception("node %d: answering a DescribeConfigs failed", self.node.config.node_id)
            answer = None
        reply(answer)

    def _shared(self, req: DescribeConfigsRequest) -> DescribeConfigsResponse:
        """Contract 7a: one response object for the fast reads of a turn that ask the same of the same image."""
        image = self.node.controller.machine.committed
        key: tuple[Any, ...] = (id(image), image.offset, req.include_synonyms)
        for r in req.resources:
            keys = r.configuration_keys
            key += (r.resource_type, r.resource_name, None if keys is None else tuple(keys))
        hit = self._shared_answers.get(key)
        if hit is not None and hit[0] is image:
            return hit[1]
        if not self._shared_answers:
            asyncio.get_running_loop().call_soon(self._shared_answers.clear)
        answer = self._response(req, ErrorCode.NONE)
        # holding ``image`` keeps its id from being reused meanwhile
        self._shared_answers[key] = (image, answer)
        return answer

    async def _answer_later(
        self, req: DescribeConfigsRequest, reply: Callable[[Any], None], code: int
    ) -> None:
        """Contract 7: what :meth:`before_read` does after the barrier, then the answer."""
        if code == ErrorCode.NONE:
            await self.node.controller.caught_up()
            self._served_lin.inc()
        else:
            code = self._failed(code)
        reply(self._response(req, code))

    def _due(self) -> None:
        """Contract 5a."""
        self.node.step_now(ReadsDue(now_ms()))

    def resolved(self, e: ReadResolved) -> None:
        fut = self._waiting.pop(e.ticket, None)
        if fut is not None and not fut.done():
            fut.set_result(e.error)
        if fast := self._fast.pop(e.ticket, None):
            with self.node.server.coalesced():  # contract 7: one write per connection
                for answer in fast:
                    answer(e.error)

    def fail_all(self) -> None:
        self._open = None
        for fut in self._waiting.values():
            if not fut.done():
                fut.set_result(ErrorCode.NOT_CONTROLLER)
        self._waiting.clear()
        fast, self._fast = self._fast, {}
        for answers in fast.values():
            for answer in answers:
                answer(ErrorCode.NOT_CONTROLLER)

    def connection(self, dest: int) -> PeerConnection | None:
        """Contract 3."""
        conn = self._conns.get(dest)
        peer = self.node.peers.get(dest)
        if conn is None and peer is not None:
            conn = self.node.connect(peer.host, peer.port, "raft-read-")
            self._conns[dest] = conn
        return conn

    async def close(self) -> None:
        self.fail_all()
        for conn in self._conns.values():
            try:
                await conn.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass

    async def describe_configs(self, req: DescribeConfigsRequest) -> DescribeConfigsResponse:
        return self._response(req, await self.before_read())

    def _response(self, req: DescribeConfigsRequest, code: int) -> DescribeConfigsResponse:
        image = self.node.controller.machine.committed
        results = [self._described(image, r, code, req.include_synonyms) for r in req.resources]
        return DescribeConfigsResponse(throttle_time_ms=0, results=results)

    def _described(self, image: Any, r: Any, code: int, synonyms: bool) -> DescribeConfigsResult:
        """Contract 6."""
        keys = r.configuration_keys
        key: tuple[Any, ...] = (id(image), image.offset, code, r.resource_type, r.resource_name, synonyms)
        key += (None,) if keys is None else tuple(keys)
        hit = self._answers.get(key)
        if hit is not None and hit[0] is image:
            return hit[1]
        if not self._answers:
            asyncio.get_running_loop().call_soon(self._answers.clear)
        out = describe(image, r, code, self.stale, synonyms)
        self._answers[key] = (image, out)  # holding ``image`` keeps its id from being reused meanwhile
        return out
