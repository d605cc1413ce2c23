"""Discovery of the target quorum and the run loop.

Contracts:
1. Discovery (Kafka's MetadataQuorumCommand flow): ApiVersions on the bootstrap controller (v0 fallback via the
   UNSUPPORTED_VERSION reply), then DescribeCluster for the controller endpoints and the cluster id, completed by
   DescribeQuorum v2's Nodes (from the bootstrap node, and from the leader at every refresh): a Kafka controller
   lists only the controllers that have registered. Until some controller is named (a Kafka controller refuses
   DescribeCluster before it knows its metadata.version; a follower's DescribeQuorum names no nodes) both are
   asked again for up to 30 s. ``--cluster-id`` overrides what DescribeCluster says.
2. ``Context.refresh`` asks every known node for DescribeQuorum and returns the first answer with no error
   (the leader's view), retrying until a deadline when no node knows a leader yet.
3. Each check runs under its own time limit; its probes are closed afterwards and their evidence attached to
   the result (model contract 3).
"""

from __future__ import annotations

import asyncio
import time
import traceback

from generated.api_versions_request import ApiVersionsRequest
from generated.api_versions_response import ApiVersionsResponse
from generated.describe_cluster_request import DescribeClusterRequest
from generated.describe_quorum_request import DescribeQuorumRequest
from generated.describe_quorum_request import PartitionData as DQPartition
from generated.describe_quorum_request import TopicData as DQTopic
from generated.describe_quorum_response import DescribeQuorumResponse
from generated.messages import API_SPECS
from kwire.errors import ErrorCode
from tools.conformance.model import (
    REGISTRY,
    Check,
    CheckFailed,
    Context,
    NodeInfo,
    QuorumView,
    Result,
    Skip,
    ordered,
)
from tools.conformance.wire import Probe, ProbeError

API_VERSIONS, DESCRIBE_QUORUM, DESCRIBE_CLUSTER = 18, 55, 60
METADATA_TOPIC = "__cluster_metadata"
CHECK_TIMEOUT = 90.0
DISCOVERY_WAIT = 30.0


class DiscoveryError(Exception):
    """The bootstrap controller could not be described (one-line reason)."""


def describe_quorum_request() -> DescribeQuorumRequest:
    return DescribeQuorumRequest(topics=[DQTopic(METADATA_TOPIC, [DQPartition(0)])])


async def api_versions(probe: Probe, version: int = 4) -> ApiVersionsResponse:
    resp: ApiVersionsResponse = await probe.request(
        ApiVersionsRequest(client_software_name="kraft-conformance", client_software_version="1.0"), version
    )
    if resp.error_code == ErrorCode.UNSUPPORTED_VERSION:
        top = next((a.max_version for a in resp.api_keys if a.api_key == API_VERSIONS), 0)
        resp = await probe.request(ApiVersionsRequest(), min(top, version))
    return resp


async def describe_quorum(ctx: Context, node: NodeInfo | tuple[str, int]) -> DescribeQuorumResponse:
    async with ctx.probe(node) as p:
        version = ctx.highest(DESCRIBE_QUORUM)
        resp: DescribeQuorumResponse = await p.request(describe_quorum_request(), version)
        return resp


def quorum_view(resp: DescribeQuorumResponse) -> QuorumView | None:
    if resp.error_code != ErrorCode.NONE or len(resp.topics) != 1 or len(resp.topics[0].partitions) != 1:
        return None
    part = resp.topics[0].partitions[0]
    if part.error_code != ErrorCode.NONE:
        return None
    return QuorumView(
        leader_id=part.leader_id,
        leader_epoch=part.leader_epoch,
        high_watermark=part.high_watermark,
        voters={v.replica_id: (v.replica_directory_id, v.log_end_offset) for v in part.current_voters},
        observers=[o.replica_id for o in part.observers],
    )


def learn_nodes(ctx: Context, resp: DescribeQuorumResponse) -> None:
    """Contract 1: voters DescribeCluster did not list yet (a controller that has not registered) are added
    from DescribeQuorum v2's Nodes."""
    for n in resp.nodes:
        if n.node_id not in ctx.nodes and n.listeners:
            ctx.nodes[n.node_id] = NodeInfo(n.node_id, n.listeners[0].host, n.listeners[0].port)


async def discover(
    host: str, port: int, *, cluster_id: str | None, intrusive: bool, timeout: float
) -> Context:
    """Contract 1."""
    probe = Probe(host, port, timeout=timeout)
    try:
        await probe.open()
    except (OSError, TimeoutError) as exc:
        raise DiscoveryError(f"cannot connect to {host}:{port}: {exc}") from None
    try:
        av = await api_versions(probe)
        if av.error_code != ErrorCode.NONE:
            raise DiscoveryError(f"ApiVersions failed with error {av.error_code}")
        ctx = Context(
            bootstrap=(host, port),
            cluster_id=cluster_id or "",
            peer_apis={a.api_key: (a.min_version, a.max_version) for a in av.api_keys},
            nodes={},
            intrusive=intrusive,
            timeout=timeout,
            supported_features={f.name: (f.min_version, f.max_version) for f in av.supported_features},
            finalized_features={
                f.name: (f.min_version_level, f.max_version_level) for f in av.finalized_features
            },
        )
        deadline = time.monotonic() + DISCOVERY_WAIT
        last = "no answer"
        while not ctx.nodes:
            if ctx.common(DESCRIBE_CLUSTER) is not None and ctx.highest(DESCRIBE_CLUSTER) >= 1:
                dc = await probe.request(
                    DescribeClusterRequest(endpoint_type=2), ctx.highest(DESCRIBE_CLUSTER)
                )
                if dc.error_code == ErrorCode.NONE:
                    ctx.cluster_id = cluster_id or dc.cluster_id
                    ctx.nodes = {b.broker_id: NodeInfo(b.broker_id, b.host, b.port) for b in dc.brokers}
                else:
                    last = f"DescribeCluster error {dc.error_code}: {dc.error_message}"
            if ctx.common(DESCRIBE_QUORUM) is not None:
                learn_nodes(ctx, await probe.request(describe_quorum_request(), ctx.highest(DESCRIBE_QUORUM)))
            if ctx.nodes or time.monotonic() > deadline:
                break
            # A Kafka controller refuses DescribeCluster until it knows its metadata.version, and a follower's
            # DescribeQuorum names no nodes: ask again.
            await asyncio.sleep(0.5)
    except ProbeError as exc:
        raise DiscoveryError(f"{host}:{port}: {exc}") from None
    finally:
        await probe.close()
    if not ctx.nodes:
        raise DiscoveryError(f"{host}:{port} named no controllers within {DISCOVERY_WAIT}s ({last})")

    async def refresh(deadline_s: float = 30.0) -> QuorumView:
        """Contract 2."""
        deadline = time.monotonic() + deadline_s
        last = "no node answered"
        while True:
            for node in list(ctx.nodes.values()):
                try:
                    resp = await describe_quorum(ctx, node)
                except (ProbeError, OSError, TimeoutError) as exc:
                    last = f"{node.host}:{node.port}: {exc}"
                    continue
                view = quorum_view(resp)
                if view is not None and view.leader_id >= 0:
                    learn_nodes(ctx, resp)
                    return view
            if time.monotonic() > deadline:
                raise CheckFailed(f"no node reported a leader within {deadline_s}s ({last})")
            await asyncio.sleep(0.2)

    ctx.refresh = refresh
    return ctx


async def run_check(ctx: Context, chk: Check) -> Result:
    """Contract 3 (model contract 2 for the outcome)."""
    started = time.monotonic()
    ctx.probes, ctx.evidence = [], []
    missing = [k for k in chk.apis if ctx.common(k) is None]
    if missing:
        names = ", ".join(API_SPECS[k].name if k in API_SPECS else str(k) for k in missing)
        return Result(chk, "SKIP", f"the target does not advertise {names}", [], 0.0)
    if chk.intrusive and not ctx.intrusive:
        return Result(
            chk, "SKIP", "intrusive (crafts Raft messages); run with --intrusive on a test quorum", [], 0.0
        )
    try:
        await asyncio.wait_for(chk.fn(ctx), CHECK_TIMEOUT)
        status, detail = "PASS", ""
    except CheckFailed as exc:
        status, detail = "FAIL", str(exc)
    except Skip as exc:
        status, detail = "SKIP", str(exc)
    except TimeoutError:
        status, detail = "FAIL", f"the check did not finish within {CHECK_TIMEOUT}s"
    except ProbeError as exc:
        status, detail = "FAIL", str(exc)
    except Exception as exc:  # noqa: BLE001 - a crashing check is reported, the run goes on
        status, detail = (
            "FAIL",
            f"check error: {exc!r} at {traceback.format_exc(limit=-1).strip().splitlines()[-3:]}",
        )
    for p in ctx.probes:
        await p.close()
    return Result(chk, status, detail, ctx.evidence, time.monotonic() - started)


async def run_all(ctx: Context, selected: list[Check] | None = None) -> list[Result]:
    return [await run_check(ctx, chk) for chk in ordered(REGISTRY if selected is None else selected)]
