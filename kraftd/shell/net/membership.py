"""The shell's address book for a changing voter set (KIP-853): where a request to a node id goes.

Contracts:
1. A destination id resolves, in order, to: a voter being added (the core's AddRaftVoter probe endpoints), a
   voter of the newest voter set (its endpoint on the default listener), an endpoint a leader advertised in a
   Fetch response (NodeEndpoints), or a bootstrap server (ids -2, -3, ... for
   ``controller.quorum.bootstrap.servers`` in order, as Kafka numbers them). Unknown ids resolve to None.
2. A connection is made once per id and kept; a voter whose endpoint changed gets a new connection.
3. Fetch responses at v16+ name the leader's endpoint (NodeEndpoints) when this node knows it, as Kafka's
   leader does, so an observer that started with only bootstrap servers can reach the leader.
4. An election about to happen opens connections ahead of the requests that will need them (:func:`warm`):
   on EndQuorumEpoch to every other voter (a preferred successor's votes, and the Fetch to whoever wins), on
   a Vote request to its candidate (our Fetch if it wins). Opening one is TCP + ApiVersions (+ TLS/SASL),
   ~5-10 ms of a hand-off on loopback otherwise. A failed opening only leaves the client's reconnect backoff
   (kwire.client contract 5), as the request itself would have.
"""

from __future__ import annotations

from typing import Any

from generated.fetch_response import FetchResponse, NodeEndpoint
from kraftd.config import Endpoint, KraftConfig
from kraftd.shell.net import wiring
from kraftd.shell.net.transport import PeerConnection
from kraftd.shell.raft.port import RaftPort


def _address(node: RaftPort, dest: int) -> tuple[str, int] | None:
    core = node.core
    name = node.config.controller_listener_names[0]
    for eps in (core.probe_endpoints.get(dest, ()), core.voters.endpoints_of(dest)):
        ep = next((e for e in eps if e.name == name), None)
        if ep is not None:
            return ep.host, ep.port
    if dest in node.learned_endpoints:
        return node.learned_endpoints[dest]
    servers = node.config.bootstrap_servers
    if dest <= -2 and -dest - 2 < len(servers):
        return servers[-dest - 2]
    return None


def peer_for(node: RaftPort, dest: int) -> PeerConnection | None:
    """Contracts 1-2."""
    where = _address(node, dest)
    peer = node.peers.get(dest)
    if peer is not None and (where is None or (peer.host, peer.port) == where):
        return peer
    if where is None:
        return None
    if peer is not None:
        node.spawn_task(peer.close())
    peer = node.connect(where[0], where[1], wiring.RAFT_CLIENT)
    node.peers[dest] = peer
    return peer


def known_nodes(node: RaftPort) -> dict[int, tuple[Endpoint, ...]]:
    """The controllers DescribeCluster names: the voters of the newest voter set (so a controller added later
    appears, one removed disappears, and a node that started as an observer knows the leader), with the
    start-up endpoints for a voter whose listeners the voter set lacks."""
    nodes: dict[int, tuple[Endpoint, ...]] = {}
    voters = node.core.voters
    for vid in voters.ids:
        eps = voters.endpoints_of(vid)
        found = tuple(Endpoint(e.name, e.host, e.port) for e in eps) or node.setup.endpoints.get(vid, ())
        if found:
            nodes[vid] = found
    return nodes


def learn(node: RaftPort, resp: Any) -> None:
    """Remember the endpoints a Fetch response advertised (contract 1)."""
    if isinstance(resp, FetchResponse):
        for e in resp.node_endpoints:
            node.learned_endpoints[e.node_id] = (e.host, e.port)


_OWN: dict[int, tuple[KraftConfig, tuple[str, int] | None]] = {}


def _own_address(config: KraftConfig) -> tuple[str, int] | None:
    """The first advertised controller listener, derived once per (frozen) config, not on every Fetch answer."""
    hit = _OWN.get(id(config))
    if hit is None or hit[0] is not config:
        if len(_OWN) >= 64:  # many nodes in one process (tests): bounded, recomputed when evicted
            _OWN.clear()
        own = config.advertised_controller_listeners
        hit = _OWN[id(config)] = (config, (own[0].host, own[0].port) if own else None)
    return hit[1]


def advertise_leader(node: RaftPort, version: int, resp: Any) -> None:
    """Contract 3."""
    if not isinstance(resp, FetchResponse) or version < 16 or resp.node_endpoints:
        return
    leader = node.core.leader_id()
    if leader < 0:
        return
    if leader == node.config.node_id:
        addr = _own_address(node.config)
    else:
        addr = _address(node, leader)
    if addr is not None:
        resp.node_endpoints = [NodeEndpoint(node_id=leader, host=addr[0], port=addr[1], rack=None)]


def warm(node: RaftPort, targets: list[int]) -> None:
    """Contract 4: open the connection to each voter in ``targets`` (not ourselves) that has none."""
    for dest in targets:
        if dest == node.config.node_id or not node.core.voters.has_id(dest):
            continue
        peer = peer_for(node, dest)
        if peer is not None and not peer.connected:
            node.spawn_task(peer.warm())
