"""Failure modes of reads on real processes (kraftd.shell.raft.reads): with the leader and a follower killed, the
survivor waits up to the request timeout and fails every image read (the finalized features of a later
ApiVersions included) instead of answering from its image;
with kraftd.read.consistency=stale it answers at once and marks the answer stale. About 15 s."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from generated.api_versions_request import ApiVersionsRequest
from generated.describe_cluster_request import DescribeClusterRequest
from generated.describe_configs_request import DescribeConfigsRequest, DescribeConfigsResource
from generated.incremental_alter_configs_request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from generated.metadata_request import MetadataRequest, MetadataRequestTopic
from kwire.client import KafkaClient
from kwire.errors import ErrorCode
from tests.daemon.cluster import Cluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

TIMEOUT_MS = 1500
DESCRIBE = DescribeConfigsRequest(
    resources=[DescribeConfigsResource(resource_type=4, resource_name="", configuration_keys=None)]
)


def features_read(port: int) -> tuple[dict[str, Any], Any]:
    """kwire.server contract 10: (finalized features of the handshake, a later ApiVersions on the connection)."""

    async def go() -> tuple[dict[str, Any], Any]:
        c = KafkaClient("127.0.0.1", port, request_timeout=30)
        try:
            await c.connect()
            assert c.versions is not None
            handshake = dict(c.versions.finalized_features)
            later = await c.send(ApiVersionsRequest(client_software_name="t", client_software_version="1"))
            return handshake, later
        finally:
            await c.close()

    return asyncio.run(go())


async def ask(port: int, req: Any) -> Any:
    c = KafkaClient("127.0.0.1", port, request_timeout=30)
    try:
        return await c.send(req)
    finally:
        await c.close()


def survivor(tmp_path: Path, consistency: str) -> tuple[Cluster, int]:
    """A quorum with one committed config entry, its leader and one follower then killed: the survivor's port."""
    q = Cluster(
        tmp_path,
        3,
        extra={
            "kraftd.read.consistency": consistency,
            "controller.quorum.request.timeout.ms": str(TIMEOUT_MS),
        },
    )
    q.start_all()
    leader = q.wait_leader(30).leader_id
    alter = IncrementalAlterConfigsRequest(
        resources=[
            AlterConfigsResource(
                resource_type=4,
                resource_name="",
                configs=[AlterableConfig(name="log.retention.ms", config_operation=0, value="4242")],
            )
        ]
    )
    deadline = time.monotonic() + 20  # the new leader answers NOT_CONTROLLER until its controller activates
    while (code := asyncio.run(ask(q.ports[leader - 1], alter)).responses[0].error_code) != 0:
        assert time.monotonic() < deadline, ErrorCode(code).name
        time.sleep(0.1)
        leader = q.wait_leader(10).leader_id
    rest = [i for i in q.node_ids() if i != leader]
    for p in q.ports:  # every node applied it (so the survivor's image holds the value)
        deadline = time.monotonic() + 10
        while True:
            got = asyncio.run(ask(p, DESCRIBE)).results[0]
            if any(c.value == "4242" for c in got.configs) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    q.kill(leader, signal.SIGKILL)
    q.kill(rest[0], signal.SIGKILL)
    return q, q.ports[rest[1] - 1]


def test_linearizable_reads_fail_without_a_leader(tmp_path: Path) -> None:
    q, port = survivor(tmp_path, "linearizable")
    try:
        t0 = time.monotonic()
        res = asyncio.run(ask(port, DESCRIBE)).results[0]
        waited = time.monotonic() - t0
        assert res.error_code in (ErrorCode.NOT_CONTROLLER, ErrorCode.REQUEST_TIMED_OUT), res
        assert res.configs == [], res  # nothing from the image
        assert waited >= TIMEOUT_MS / 1000 * 0.9, waited
        cluster = asyncio.run(ask(port, DescribeClusterRequest()))
        assert cluster.error_code in (ErrorCode.NOT_CONTROLLER, ErrorCode.REQUEST_TIMED_OUT), cluster
        meta = asyncio.run(ask(port, MetadataRequest(topics=[MetadataRequestTopic(name="t")])))
        assert meta.controller_id == -1 and meta.topics[0].error_code in (
            ErrorCode.NOT_CONTROLLER,
            ErrorCode.REQUEST_TIMED_OUT,
        ), meta
        # The connection's handshake is answered at once with the local features; a later ApiVersions (what
        # Kafka's Admin.describeFeatures sends) is a read and fails like the others.
        t0 = time.monotonic()
        handshake, later = features_read(port)
        assert "metadata.version" in handshake, handshake
        assert later.error_code in (ErrorCode.NOT_CONTROLLER, ErrorCode.REQUEST_TIMED_OUT), later
        assert later.finalized_features == [] and time.monotonic() - t0 >= TIMEOUT_MS / 1000 * 0.9
    finally:
        q.stop_all()


def test_stale_reads_answer_from_the_image_and_say_so(tmp_path: Path) -> None:
    q, port = survivor(tmp_path, "stale")
    try:
        res = asyncio.run(ask(port, DESCRIBE)).results[0]
        assert res.error_code == 0, res
        values = {c.name: c.value for c in res.configs}
        assert values["log.retention.ms"] == "4242" and values["kraftd.read.consistency"] == "stale", values
        _, later = features_read(port)
        assert later.error_code == 0 and "metadata.version" in [f.name for f in later.finalized_features]
    finally:
        q.stop_all()


@pytest.mark.parametrize("client", ["stream", "protocol"])
def test_reads_bench_runs_end_to_end(client: str) -> None:
    """``bench/reads.py`` at a tiny size: every read answered without error in both phases, server CPU measured;
    with either load client (bench.reads_load contract 5)."""
    import json
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    args = [
        "--json",
        "--seconds",
        "1",
        "--samples",
        "40",
        "--workers",
        "1",
        "--in-flight",
        "32",
        "--client",
        client,
    ]
    done = subprocess.run(
        [sys.executable, "bench/reads.py", *args], cwd=root, capture_output=True, text=True, timeout=100
    )
    assert done.returncode == 0, done.stderr[-3000:]
    res = json.loads(done.stdout.strip().splitlines()[-1])
    assert res["failed_reads"] == 0, res
    assert res["leader_alone_reads_per_s"] > 0 and res["three_controllers_reads_per_s"] > 0, res
    assert res["leader_alone_server_cpu_per_s"] > 0 and res["samples"] == 40, res
    assert res["three_controllers_client_cpu_per_s"] > 0, res
