"""The quorum a cluster reports: DescribeCluster, then DescribeQuorum to the active controller.

Shared by the operator tools (kraft-metadata-quorum, kraft-local-quorum) and the live pipeline (kraft_spark.live),
so it lives with the client and not in a CLI.

Contracts:
1. Flow (Kafka's ``--bootstrap-controller`` path): DescribeCluster (``endpoint_type`` 2 for controllers, 1 for
   brokers) to each bootstrap server in turn to learn the cluster id and the active controller, then
   DescribeQuorum for ``__cluster_metadata``-0 to that controller. A failed connection or request is reported
   as ``host:port: <reason>``.
2. Bounded retries: at most 20 rounds over the bootstrap servers, 0.2 s apart, within ``timeout_ms``; a leader
   change between the two requests is retried. When nothing answered, KraftError carries the last reason. A
   top-level DescribeQuorum error is raised at once.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from ssl import SSLContext
from typing import Any

from generated.describe_cluster_request import DescribeClusterRequest
from generated.describe_quorum_request import DescribeQuorumRequest, PartitionData, TopicData
from kwire.client import request_once
from kwire.errors import ErrorCode, KraftError
from kwire.sasl import SaslClientConfig

__all__ = ["QuorumInfo", "Replica", "fetch_quorum"]

CLIENT_ID = "kraft-metadata-quorum"


@dataclass(frozen=True, slots=True)
class Replica:
    replica_id: int
    directory_id: uuid.UUID
    log_end_offset: int
    last_fetch_timestamp: int = -1
    last_caught_up_timestamp: int = -1


@dataclass(frozen=True, slots=True)
class QuorumInfo:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[Replica, ...]
    observers: tuple[Replica, ...]
    endpoints: dict[int, tuple[str, ...]] = field(default_factory=dict)


class _Unanswered(KraftError):
    """One request got no usable response (contract 1)."""


async def _request(
    host: str, port: int, message: Any, timeout_ms: int, ssl: SSLContext | None, sasl: SaslClientConfig | None
) -> Any:
    try:
        return await request_once(
            host, port, message, timeout=timeout_ms / 1000, client_id=CLIENT_ID, ssl=ssl, sasl=sasl
        )
    except (KraftError, OSError, TimeoutError) as exc:
        raise _Unanswered(f"{host}:{port}: {exc}") from None


def _replica(r: Any) -> Replica:
    return Replica(
        r.replica_id,
        r.replica_directory_id,
        r.log_end_offset,
        r.last_fetch_timestamp,
        r.last_caught_up_timestamp,
    )


def _endpoint(name: str, host: str, port: int) -> str:
    return f"{name}://{('[' + host + ']') if ':' in host else host}:{port}"


async def fetch_quorum(
    hosts: list[tuple[str, int]],
    endpoint_type: int,
    timeout_ms: int,
    ssl: SSLContext | None = None,
    sasl: SaslClientConfig | None = None,
) -> tuple[str, QuorumInfo]:
    """The cluster id and the leader's DescribeQuorum answer (contracts 1 and 2)."""
    deadline = time.monotonic() + timeout_ms / 1000
    last_error = "no bootstrap server answered"
    for _attempt in range(20):
        if time.monotonic() > deadline:
            break
        for host, port in hosts:
            try:
                cluster = await _request(
                    host, port, DescribeClusterRequest(endpoint_type=endpoint_type), timeout_ms, ssl, sasl
                )
            except _Unanswered as exc:
                last_error = str(exc)
                continue
            if cluster.error_code != ErrorCode.NONE:
                last_error = f"DescribeCluster failed: {ErrorCode(cluster.error_code).name} {cluster.error_message or ''}"
                continue
            leader = next((b for b in cluster.brokers if b.broker_id == cluster.controller_id), None)
            if leader is None:
                last_error = "no active controller is known yet"
                continue
            req = DescribeQuorumRequest([TopicData("__cluster_metadata", [PartitionData(0)])])
            try:
                resp = await _request(leader.host, leader.port, req, timeout_ms, ssl, sasl)
            except _Unanswered as exc:
                last_error = str(exc)
                continue
            if resp.error_code != ErrorCode.NONE:
                raise KraftError(f"DescribeQuorum failed: {ErrorCode(resp.error_code).name}")
            part = resp.topics[0].partitions[0]
            if part.error_code != ErrorCode.NONE:
                last_error = f"DescribeQuorum failed: {ErrorCode(part.error_code).name}"
                continue
            endpoints = {
                n.node_id: tuple(_endpoint(lst.name, lst.host, lst.port) for lst in n.listeners)
                for n in resp.nodes
            }
            info = QuorumInfo(
                part.leader_id,
                part.leader_epoch,
                part.high_watermark,
                tuple(_replica(v) for v in part.current_voters),
                tuple(_replica(o) for o in part.observers),
                endpoints,
            )
            return cluster.cluster_id, info
        await asyncio.sleep(0.2)
    raise KraftError(last_error)
