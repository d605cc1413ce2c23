"""Which part of the node answers a request on the controller listener (kraftd.shell.node contracts 6, 9, 10).

Contracts:
6. Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot and the KIP-853 voter RPCs go to the Raft core
   and are answered with its SendResponse; each controller RPC goes to the one method the table names for it
   (kraftd.shell.apis.table contract 4) on its part (kraftd.shell.controller.broker_rpcs, topic_admin,
   partition_admin, security_admin), which answers with a ControllerResult; the rest are answered by
   kraftd.shell.apis.handlers from the node's cluster view.
6a. The listener's fast path (:meth:`RequestRouter.fast`, kraftd.shell.apis.fast): Fetch, FetchSnapshot, ReadOffset
   and BeginQuorumEpoch (a leader's read round, issue 25) answered from inside the step; an observer's Fetch or
   FetchSnapshot is queued first and stepped in chunks (kraftd.shell.apis.observer_fetches).
6b. A BrokerHeartbeat that changes nothing is answered on the fast path too, at once, without a task, a core
   step or a ControllerResult (kraftd.shell.controller.broker_rpcs contract 4); any other takes contract 6's path.
6c. A DescribeConfigs is answered on the fast path too, without a task (kraftd.shell.raft.reads contract 7).
9. A DescribeQuorum reaching a non-leader that knows the leader is relayed to it once (as a Kafka broker
   forwards it to the active controller), so clients that pick any node (kafka-python's admin client) get the
   leader's answer; relayed requests are never relayed again, and when relaying fails the answer is
   NOT_LEADER_OR_FOLLOWER, as a Kafka controller answers.
9a. Metadata, DescribeCluster, DescribeConfigs and the leader's DescribeQuorum pass a read barrier first
   (kraftd.shell.raft.reads contract 1).
10. ApiVersions (v3+; after a connection's handshake behind the read barrier, kwire.server contract 10)
   finalizes every feature of the committed image (metadata.version and the others) and kraft.version at the
   quorum's level when it is above 0, as Kafka's controllers do; SupportedFeatures are the
   ranges this controller can run (kraftd.controller.features.supported_ranges); its FinalizedFeaturesEpoch is
   the last committed offset seen (Kafka: the metadata image's offset).
"""

from __future__ import annotations

import ipaddress
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from generated.describe_cluster_request import DescribeClusterRequest
from generated.describe_quorum_request import DescribeQuorumRequest
from generated.envelope_request import EnvelopeRequest
from generated.envelope_response import EnvelopeResponse
from generated.messages import ApiKey
from generated.metadata_request import MetadataRequest
from generated.request_header import RequestHeader
from kraftd.config import Endpoint
from kraftd.controller.features import supported_ranges
from kraftd.core.replication import NotLeaderError
from kraftd.shell.apis import append, denials, handlers, not_controller, table
from kraftd.shell.apis.fast import FastPath
from kraftd.shell.apis.table import Part
from kraftd.shell.controller import security_admin
from kraftd.shell.controller.broker_rpcs import ControllerRpcs
from kraftd.shell.controller.glue import ControllerPort
from kraftd.shell.controller.partition_admin import ControllerOps
from kraftd.shell.controller.security_admin import ControllerSecurity
from kraftd.shell.controller.topic_admin import ControllerAdmin
from kraftd.shell.net import membership
from kraftd.shell.net.transport import ConnectionInfo, PeerConnection, PeerError
from kraftd.shell.observe.metrics import NodeMetrics
from kraftd.shell.observe.netlog import NetLog
from kraftd.shell.raft.reads import ReadBarriers
from kwire.errors import ErrorCode, KraftError
from kwire.headers import encode_response, parse_request
from kwire.server import KafkaServer, acting_as, request_principal

FORWARD_CLIENT = "kraftd-forward-"
# Contract 11: the APIs a Kafka 4.3.1 broker forwards, at the versions served on the listener (what the broker
# saw in ApiVersions), from the one table (kraftd.shell.apis.table).
FORWARDED, _FORWARDABLE = table.FORWARDED, table.FORWARDABLE
_ELECTION_APIS = (ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH)
Handler = Callable[[RequestHeader, Any, ConnectionInfo], Awaitable[Any]]
log = logging.getLogger("kraftd.routing")
# The node's attribute holding each controller part, and its class (table contract 4).
_CONTROLLER_PARTS = {
    Part.BROKERS: "rpcs",
    Part.TOPICS: "ctl_admin",
    Part.PARTITIONS: "ctl_ops",
    Part.SECURITY: "ctl_security",
}
_PART_CLASSES: dict[Part, type] = {
    Part.BROKERS: ControllerRpcs,
    Part.TOPICS: ControllerAdmin,
    Part.PARTITIONS: ControllerOps,
    Part.SECURITY: ControllerSecurity,
}


class RouterPort(ControllerPort, Protocol):
    """What the router asks of the node: the parts that answer requests, and the core for the Raft RPCs."""

    applied: int
    server: KafkaServer
    netlog: NetLog
    reads: ReadBarriers
    rpcs: ControllerRpcs
    ctl_admin: ControllerAdmin
    ctl_security: ControllerSecurity
    ctl_ops: ControllerOps

    metrics: NodeMetrics

    async def ask_core(self, body: Any) -> Any: ...

    def ask_core_now(self, body: Any, answer: Callable[[Any], None], later: bool = False) -> bool: ...

    def answer_read_offset(self, body: Any, answer: Callable[[Any], None]) -> bool: ...


class RequestRouter:
    def __init__(self, node: RouterPort) -> None:
        self.node = node
        self.forwarders: dict[int, PeerConnection] = {}
        self.fastpath = FastPath(node)
        self.parts = self._bind()
        self.ops = {k: self._op(a) for k, a in table.TABLE.items() if a.op}
        self._routes = self.routes()

    def routes(self) -> dict[int, tuple[bool, Handler]]:
        """api key -> (leader only, its handler), read from the table once: the API's own op where its part
        answers by op (a controller part: table contract 4), else the part's handler."""
        routes = {}
        for k, a in table.TABLE.items():
            if a.part in self.parts:
                part = self.parts[a.part]
                routes[k] = (a.leader_only, self.ops[k] if part == self._by_op else part)
        return routes

    async def handle(self, header: RequestHeader, body: Any, info: ConnectionInfo) -> Any:
        """Contract 6: the table names the part that answers (the listener parses only served keys)."""
        key = header.request_api_key
        leader_only, part = self._routes[key]
        if leader_only and not self.node.controller.machine.active:  # the one NOT_CONTROLLER decision
            enabled = self.node.config.security.authorizer_class is not None
            version = header.request_api_version
            return not_controller.answer(key, body, version, request_principal(), enabled)
        if leader_only:
            await self.node.controller.settled()  # kraftd.shell.controller.glue contract 5
        return await part(header, body, info)

    def _bind(self) -> dict[Part, Handler]:
        node = self.node

        async def reads(header: RequestHeader, body: Any, info: ConnectionInfo) -> Any:
            return await node.reads.describe_configs(body)

        async def kraftd_append(header: RequestHeader, body: Any, info: ConnectionInfo) -> Any:
            return await append.handle_append(node, body)

        async def envelope(header: RequestHeader, body: Any, info: ConnectionInfo) -> Any:
            assert isinstance(body, EnvelopeRequest)
            return await self.envelope(body, info)

        return {
            **dict.fromkeys(_CONTROLLER_PARTS, self._by_op),
            Part.CORE: self._core,
            Part.SHELL: self._shell,
            Part.READS: reads,
            Part.APPEND: kraftd_append,
            Part.ENVELOPE: envelope,
        }

    async def _by_op(self, header: RequestHeader, body: Any, info: ConnectionInfo) -> Any:
        """A controller part: :meth:`routes` binds each of its APIs to its op directly."""
        return await self.ops[header.request_api_key](header, body, info)

    def _op(self, api: table.Api) -> Handler:
        """Table contract 4: the one method of a controller part that answers ``api``."""
        attr = _CONTROLLER_PARTS[api.part]
        if not callable(getattr(_PART_CLASSES[api.part], api.op, None)):
            raise TypeError(f"{api.key.name}: {_PART_CLASSES[api.part].__name__} has no {api.op}")
        node, op = self.node, api.op

        async def answer(header: RequestHeader, body: Any, info: ConnectionInfo) -> Any:
            method = getattr(getattr(node, attr), op)  # the parts are built when the node starts
            return await method(body, header.request_api_version, request_principal())

        return answer

    async def _shell(self, header: RequestHeader, body: Any, info: ConnectionInfo) -> Any:
        """DescribeQuorum (contract 9), DescribeCluster and Metadata (9a), from the node's cluster view."""
        node = self.node
        key = header.request_api_key
        if key == ApiKey.DESCRIBE_QUORUM:
            assert isinstance(body, DescribeQuorumRequest)
            try:
                # kraftd.shell.raft.reads contract 1: a leader confirms it still leads before describing voters.
                if node.client.leader_and_epoch.leader_id == node.config.node_id:
                    code = await node.reads.before_read()
                    if code != ErrorCode.NONE:
                        raise NotLeaderError(ErrorCode(code).name)
                quorum = node.client.describe_quorum()
            except NotLeaderError:
                quorum = None
                forwarded = await self.forward(header, body)
                if forwarded is not None:
                    return handlers.describe_quorum_for(forwarded, header.request_api_version)
            return handlers.describe_quorum_for(
                handlers.describe_quorum_response(body, quorum, self.cluster_view()),
                header.request_api_version,
            )
        code = await node.reads.before_read()
        if key == ApiKey.DESCRIBE_CLUSTER:
            assert isinstance(body, DescribeClusterRequest)
            if code != ErrorCode.NONE:
                return handlers.describe_cluster_failed(body, code)
            return handlers.describe_cluster_response(body, self.cluster_view())
        assert isinstance(body, MetadataRequest)
        if code != ErrorCode.NONE:
            return handlers.metadata_failed(body, self.cluster_view(), code)
        return handlers.metadata_response(body, self.cluster_view())

    async def _core(self, header: RequestHeader, body: Any, info: ConnectionInfo) -> Any:
        """Contract 6: the Raft RPCs, answered with the core's SendResponse."""
        node = self.node
        key = header.request_api_key
        if key == ApiKey.END_QUORUM_EPOCH or key == ApiKey.VOTE:
            membership.warm(node, _election_peers(key, body))
        started = time.perf_counter()
        resp = await node.ask_core(body)
        if key in _ELECTION_APIS and log.isEnabledFor(logging.DEBUG):
            took = (time.perf_counter() - started) * 1000
            log.debug("answered %s from %s:%d in %.1f ms", type(body).__name__, *info.peer, took)
        membership.advertise_leader(node, header.request_api_version if key == ApiKey.FETCH else -1, resp)
        node.netlog.answered(info.peer, body, resp)
        return resp

    def listener(self, bind: Endpoint, ssl: Any, sasl: Any, authorizer: Any) -> KafkaServer:
        """The controller listener (not yet started): the table's versions, this router's handling (metered),
        the fast path (contract 6a), the read barrier before a handshake's features (contract 10) and per-entry
        denials (kraftd.shell.apis.denials)."""
        node = self.node
        return KafkaServer(
            node.metrics.instrument(self.handle),
            table.supported_versions(),
            host=bind.host or "0.0.0.0",
            port=bind.port,
            finalized_features=self.finalized_features,
            supported_features=supported_ranges(),
            limits=node.config.limits,
            ssl=ssl,
            sasl=sasl,
            authorizer=authorizer,
            denied=handlers.denied_response,
            features_read=node.reads.before_read,
            per_entry=(denials.split, denials.merge),
            fast=self.fast,
        )

    def fast(
        self, header: RequestHeader, body: Any, info: ConnectionInfo, reply: Callable[[Any], None]
    ) -> bool:
        """Contracts 6a-6c (kraftd.shell.apis.fast); False: the coroutine path takes it."""
        return self.fastpath.offer(header, body, info, reply)

    async def envelope(self, req: EnvelopeRequest, info: ConnectionInfo) -> EnvelopeResponse:
        """Contract 11."""
        node = self.node
        try:
            inner = parse_request(bytes(req.request_data), _FORWARDABLE)
        except KraftError as exc:
            log.info("envelope: cannot parse the forwarded request: %s", exc)
            return EnvelopeResponse(response_data=None, error_code=ErrorCode.INVALID_REQUEST)
        principal = security_admin.forwarded_principal(req.request_principal)
        host = _client_host(req.client_host_address, info.peer[0])
        client = ConnectionInfo(info.connection_id, (host, 0), info.local, info.listener)

        async def call(body: Any) -> Any:
            with acting_as(principal):
                return await self.handle(inner.header, body, client)

        gate = node.server.gate
        if gate is None:
            body = await call(inner.body)
        else:
            body, refused = await gate.serve(
                principal, inner.api_key, host, inner.body, inner.api_version, call, forwarded=True
            )
            if refused is not None:
                node.server.warn(
                    "connection %d: %s (forwarded) may not call %s (denied%s)",
                    info.connection_id,
                    principal,
                    inner.spec.name,
                    refused,
                )
        data = encode_response(inner.api_key, inner.api_version, inner.correlation_id, body)
        return EnvelopeResponse(response_data=data, error_code=ErrorCode.NONE)

    async def forward(self, header: RequestHeader, body: Any) -> Any | None:
        """Contract 9: relay a client's DescribeQuorum to the leader, once; None when that is not possible."""
        node = self.node
        leader = node.known_leader()
        if leader < 0 or leader == node.config.node_id or (header.client_id or "").startswith(FORWARD_CLIENT):
            return None
        target = node.peers.get(leader)
        if target is None:
            return None
        conn = self.forwarders.get(leader)
        if conn is None:
            conn = node.connect(target.host, target.port, FORWARD_CLIENT)
            self.forwarders[leader] = conn
        try:
            return await conn.request(body)
        except PeerError:
            return None

    def cluster_view(self) -> handlers.ClusterView:
        node = self.node
        nodes = membership.known_nodes(node)
        nodes[node.config.node_id] = node.config.advertised_controller_listeners
        image = node.controller.machine.committed
        name = node.config.controller_listener_names[0]
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
        return handlers.ClusterView(node.cluster_id, nodes, node.known_leader(), brokers or None)

    def finalized_features(self) -> tuple[int, dict[str, tuple[int, int]]]:
        """Contract 10 (Kafka's KRaftMetadataCache.features): every feature of the committed image, plus
        kraft.version once above 0; epoch = last commit."""
        levels = {n: (v, v) for n, v in self.node.controller.machine.committed.features.items()}
        core = self.node.core  # the committed level: an upgrade shows once its KRaftVersion record commits
        kraft_version = core.voter_history.committed_version(core.high_watermark)
        if kraft_version > 0:
            levels["kraft.version"] = (kraft_version, kraft_version)
        if not levels:
            return -1, {}
        return max(self.node.applied, 0), levels

    async def close(self) -> None:
        for conn in self.forwarders.values():
            try:
                await conn.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass


def _client_host(address: bytes, fallback: str) -> str:
    """The forwarded client's address (4 or 16 bytes, Kafka's InetAddress.getAddress) as text."""
    try:
        return str(ipaddress.ip_address(bytes(address)))
    except ValueError:
        return fallback


def _election_peers(key: int, body: Any) -> list[int]:
    """kraftd.shell.net.membership contract 4: whom an EndQuorumEpoch or Vote request tells us to connect to."""
    parts = [p for t in body.topics for p in t.partitions]
    if key == ApiKey.VOTE:
        return [p.replica_id for p in parts]
    return [c.candidate_id for p in parts for c in p.preferred_candidates] + [
        i for p in parts for i in p.preferred_successors
    ]
