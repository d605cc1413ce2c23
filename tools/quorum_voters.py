"""``kraft-metadata-quorum add-controller`` / ``remove-controller``: AddRaftVoter and RemoveRaftVoter as
Kafka's tool sends them (KIP-853).

Contracts:
1. ``add-controller`` reads the joining controller's own properties (the ``--command-config`` file): node.id
   (not negative), process.roles containing controller, its metadata directory (metadata.log.dir, else the
   first of log.dirs) whose meta.properties gives the directory id, and the endpoints of every listener in
   controller.listener.names (advertised.listeners first, else listeners). Each missing piece is one line
   naming it, as Kafka's tool words it.
2. The request goes to the active controller: the bootstrap controllers are asked in turn (a follower answers
   NOT_LEADER_OR_FOLLOWER, then DescribeCluster names the leader). Connections use the command config's
   security.protocol / ssl.* / sasl.* settings.
3. Any error code other than NONE fails with its name and the leader's message.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from ssl import SSLContext
from typing import Any

from generated.add_raft_voter_request import AddRaftVoterRequest, Listener
from generated.describe_cluster_request import DescribeClusterRequest
from generated.remove_raft_voter_request import RemoveRaftVoterRequest
from kraftd.config import ConfigError, Endpoint, parse_endpoints
from kraftd.shell.net.transport import PeerConnection, PeerError
from kraftd.storage.meta import read_meta
from kwire.errors import ErrorCode, KraftError
from kwire.sasl import SaslClientConfig

CONTROLLERS = 2


@dataclass(frozen=True, slots=True)
class JoiningController:
    node_id: int
    directory_id: uuid.UUID
    endpoints: tuple[Endpoint, ...]

    def describe_endpoints(self) -> str:
        """Kafka's tool: NAME://host:port joined by commas, IPv6 hosts in brackets."""
        return ",".join(
            f"{e.name}://{f'[{e.host}]' if ':' in e.host else e.host}:{e.port}" for e in self.endpoints
        )


def joining_controller(props: dict[str, str]) -> JoiningController:
    """Contract 1."""
    suffix = "Is this a valid controller configuration file?"
    raw_id = props.get("node.id")
    if raw_id is None:
        raise KraftError(f"node.id not found in configuration file. {suffix}")
    try:
        node_id = int(raw_id.strip())
    except ValueError:
        raise KraftError(f"node.id {raw_id!r} is not a number. {suffix}") from None
    if node_id < 0:
        raise KraftError(f"node.id was negative in configuration file. {suffix}")
    roles = [r.strip().lower() for r in props.get("process.roles", "").split(",")]
    if "controller" not in roles:
        raise KraftError(f"process.roles did not contain 'controller' in configuration file. {suffix}")
    log_dir = props.get("metadata.log.dir", "").strip()
    if not log_dir:
        dirs = [
            d.strip() for d in (props.get("log.dirs") or props.get("log.dir") or "").split(",") if d.strip()
        ]
        if not dirs:
            raise KraftError(f"Neither metadata.log.dir nor log.dirs were found. {suffix}")
        log_dir = dirs[0]
    meta = read_meta(Path(log_dir))
    if meta is None:
        raise KraftError(f"Unable to read meta.properties from {log_dir}")
    if meta.directory_id is None:
        raise KraftError(f"No directory id found in {log_dir}/meta.properties")
    names = [n.strip().upper() for n in props.get("controller.listener.names", "").split(",") if n.strip()]
    if not names:
        raise KraftError(f"controller.listener.names was not found. {suffix}")
    try:
        advertised = parse_endpoints(props.get("advertised.listeners"), "advertised.listeners")
        bound = parse_endpoints(props.get("listeners"), "listeners")
    except ConfigError as exc:
        raise KraftError(str(exc)) from None
    chosen: list[Endpoint] = []
    for name in names:
        ep = next((e for e in advertised if e.name == name), None) or next(
            (e for e in bound if e.name == name), None
        )
        if ep is not None:
            chosen.append(Endpoint(ep.name, ep.host or "localhost", ep.port))
    if not chosen:
        raise KraftError(f"no listener of controller.listener.names {names} is configured. {suffix}")
    return JoiningController(node_id, meta.directory_id, tuple(chosen))


async def _ask(
    host: str, port: int, req: Any, timeout_ms: int, ssl: SSLContext | None, sasl: SaslClientConfig | None
) -> Any:
    conn = PeerConnection(
        host, port, client_id="kraft-metadata-quorum", timeout_ms=timeout_ms, ssl=ssl, sasl=sasl
    )
    try:
        return await conn.request(req)
    finally:
        await conn.close()


async def to_leader(
    hosts: list[tuple[str, int]],
    req: Any,
    timeout_ms: int,
    ssl: SSLContext | None = None,
    sasl: SaslClientConfig | None = None,
) -> Any:
    """Contract 2: the leader's answer to ``req``."""
    last = "no controller answered"
    tried: set[tuple[str, int]] = set()
    queue = list(hosts)
    while queue:
        host, port = queue.pop(0)
        if (host, port) in tried:
            continue
        tried.add((host, port))
        try:
            resp = await _ask(host, port, req, timeout_ms, ssl, sasl)
        except PeerError as exc:
            last = str(exc)
            continue
        if resp.error_code != ErrorCode.NOT_LEADER_OR_FOLLOWER:
            return resp
        last = "NOT_LEADER_OR_FOLLOWER"
        try:
            cluster = await _ask(
                host, port, DescribeClusterRequest(endpoint_type=CONTROLLERS), timeout_ms, ssl, sasl
            )
        except PeerError:
            continue
        leader = next((b for b in cluster.brokers if b.broker_id == cluster.controller_id), None)
        if leader is not None:
            queue.insert(0, (leader.host, leader.port))
    raise KraftError(last)


def _check(resp: Any, what: str) -> None:
    code = ErrorCode.from_code(resp.error_code)
    if code != ErrorCode.NONE:
        text = f": {resp.error_message}" if resp.error_message else ""
        raise KraftError(f"{what} failed: {code.name}{text}")


async def add_voter(
    hosts: list[tuple[str, int]],
    joining: JoiningController,
    timeout_ms: int,
    ssl: SSLContext | None = None,
    sasl: SaslClientConfig | None = None,
) -> None:
    req = AddRaftVoterRequest(
        cluster_id=None,
        timeout_ms=timeout_ms,
        voter_id=joining.node_id,
        voter_directory_id=joining.directory_id,
        listeners=[Listener(e.name, e.host, e.port) for e in joining.endpoints],
        ack_when_committed=True,
    )
    _check(await to_leader(hosts, req, timeout_ms, ssl, sasl), f"adding controller {joining.node_id}")


async def remove_voter(
    hosts: list[tuple[str, int]],
    voter_id: int,
    directory_id: uuid.UUID,
    timeout_ms: int,
    ssl: SSLContext | None = None,
    sasl: SaslClientConfig | None = None,
) -> None:
    req = RemoveRaftVoterRequest(cluster_id=None, voter_id=voter_id, voter_directory_id=directory_id)
    _check(await to_leader(hosts, req, timeout_ms, ssl, sasl), f"removing controller {voter_id}")
