"""The conformance battery in-process: against one real kraftd node (the shell fixes it found) and against a
deliberately wrong Kafka-protocol server (the battery must fail it)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from generated import describe_quorum_response as dq
from generated.describe_quorum_request import DescribeQuorumRequest
from generated.fetch_request import FetchPartition, FetchRequest, FetchTopic, ReplicaState
from kraftd.config import load_config
from kraftd.shell.node import ControllerNode
from kwire.apiversions import API_VERSIONS_KEY
from kwire.client import KafkaClient
from kwire.server import KafkaServer
from tests.daemon.cluster import CLUSTER_ID, free_ports
from tests.daemon.conftest import write_properties
from tools.conformance import checks_fetch, checks_protocol, checks_quorum, checks_raft, checks_voters  # noqa: F401
from tools.conformance.model import REGISTRY
from tools.conformance.runner import describe_quorum_request, discover, run_all
from tools.storage_cli import format_directory


def standalone_node(tmp_path: Path) -> ControllerNode:
    (port,) = free_ports(1)
    cfg = write_properties(tmp_path / "s.properties", 1, port, tmp_path / "d")
    format_directory(load_config(cfg), CLUSTER_ID, standalone=True)
    return ControllerNode(load_config(cfg), seed=1)


def test_kraftd_shell_answers_the_battery_found_wrong(tmp_path: Path) -> None:
    """DescribeQuorum v0/v1 used to close the connection (Nodes written at v0); kraft.version was never
    finalized; a Fetch from replica -1 made -1 an observer. Each failed before its fix."""

    async def run() -> tuple[Any, list[Any], Any]:
        node = standalone_node(tmp_path)
        await node.start()
        try:
            await node.wait_for_leader(10)
            async with KafkaClient("127.0.0.1", node.port) as client:
                assert client.versions is not None
                features = (client.versions.finalized_features, client.versions.finalized_features_epoch)
                old = [await client.send(describe_quorum_request(), v) for v in (0, 1)]
                leader = old[0].topics[0].partitions[0]
                fetch = FetchRequest(
                    cluster_id=CLUSTER_ID,
                    replica_state=ReplicaState(replica_id=-1),
                    max_wait_ms=0,
                    topics=[
                        FetchTopic(
                            topic_id=uuid.UUID(int=1),
                            partitions=[
                                FetchPartition(
                                    current_leader_epoch=leader.leader_epoch,
                                    fetch_offset=0,
                                    last_fetched_epoch=0,
                                )
                            ],
                        )
                    ],
                )
                fetched = await client.send(fetch)
                assert fetched.responses[0].partitions[0].error_code == 0
                after = await client.send(describe_quorum_request(), 2)
            return features, old, after
        finally:
            await node.stop()

    (finalized, epoch), old, after = asyncio.run(run())
    # kraft.version is finalized; the image's own features (metadata.version, ...) are too once the handshake's
    # read barrier finds them committed, which depends on how fast the leader's first commit was.
    assert finalized["kraft.version"] == (1, 1) and epoch >= 0
    for resp in old:
        part = resp.topics[0].partitions[0]
        assert part.error_code == 0 and resp.nodes == []
        assert [v.replica_directory_id for v in part.current_voters] == [uuid.UUID(int=0)]
    part = after.topics[0].partitions[0]
    assert part.current_voters[0].replica_directory_id != uuid.UUID(int=0) and len(after.nodes) == 1
    assert part.observers == []


def test_the_battery_fails_a_wrong_server_and_skips_what_it_lacks() -> None:
    """A server that serves only ApiVersions and DescribeQuorum, naming itself leader at epoch 0 with a high
    watermark above its log end, and writing Nodes even at v0: discovery goes through DescribeQuorum's Nodes, the
    shape and version checks fail with evidence, the malformed-input checks pass, DescribeCluster checks skip."""
    port_box: list[int] = []

    async def handler(header: Any, request: Any, info: Any) -> Any:
        assert isinstance(request, DescribeQuorumRequest)
        voter = dq.ReplicaState(replica_id=1, replica_directory_id=uuid.uuid4(), log_end_offset=5)
        part = dq.PartitionData(0, 0, None, 1, 0, 9, [voter], [])
        nodes = [dq.Node(1, [dq.Listener("CONTROLLER", "127.0.0.1", port_box[0])])]
        return dq.DescribeQuorumResponse(topics=[dq.TopicData("__cluster_metadata", [part])], nodes=nodes)

    async def run() -> dict[str, Any]:
        server = KafkaServer(handler, {API_VERSIONS_KEY: (0, 4), 55: (0, 2)})
        await server.start()
        port_box.append(server.port)
        try:
            ctx = await discover("127.0.0.1", server.port, cluster_id="c", intrusive=False, timeout=5)
            assert set(ctx.nodes) == {1}
            chosen = [
                c for c in REGISTRY if c.id.startswith(("describe-", "malformed.", "versions.Describe"))
            ]
            return {r.check.id: r for r in await run_all(ctx, chosen)}
        finally:
            await server.close()

    results = asyncio.run(run())
    shape = results["describe-quorum.leader-shape"]
    assert shape.status == "FAIL" and "leader epoch 0" in shape.detail
    assert any(e.get("api") == "DescribeQuorum" and "response" in e for e in shape.evidence)
    assert results["describe-cluster.controllers"].status == "SKIP"
    assert "DescribeCluster" in results["describe-cluster.controllers"].detail
    low = results["versions.DescribeQuorum"]
    assert low.status == "FAIL" and "DescribeQuorum v0" in low.detail
    for name in ("malformed.truncated-body", "malformed.bad-header", "malformed.oversize-frame"):
        assert results[name].status == "PASS", (name, results[name].detail)
