"""Real kraftd processes on loopback: election, the describe tool, kafka-python's and librdkafka's admin
clients, shutdown."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.cluster import CLUSTER_ID, Cluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

QUORUM_TOOL = str(Path(sys.executable).with_name("kraft-metadata-quorum"))


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(tmp_path)
    c.start_all()
    try:
        yield c
    finally:
        c.stop_all()


def test_three_nodes_elect_and_the_tool_reports_it(cluster: Cluster) -> None:
    info = cluster.wait_leader()
    assert info.leader_id in (1, 2, 3) and info.leader_epoch >= 1
    assert sorted(v.replica_id for v in info.voters) == [1, 2, 3]
    port = cluster.ports[0]
    out = subprocess.run(
        [QUORUM_TOOL, "--bootstrap-controller", f"127.0.0.1:{port}", "describe", "--status"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"ClusterId:              {CLUSTER_ID}"
    assert lines[1].startswith("LeaderId:               ")
    leader = int(lines[1].split()[-1])
    assert leader in (1, 2, 3)
    assert [line.split(":")[0] for line in lines] == [
        "ClusterId",
        "LeaderId",
        "LeaderEpoch",
        "HighWatermark",
        "MaxFollowerLag",
        "MaxFollowerLagTimeMs",
        "CurrentVoters",
        "CurrentObservers",
    ]
    assert f'"endpoints": ["CONTROLLER://127.0.0.1:{cluster.ports[leader - 1]}"]' in lines[6]
    out = subprocess.run(
        [QUORUM_TOOL, "--bootstrap-server", f"127.0.0.1:{port}", "describe", "--replication"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    rows = [line.split("\t") for line in out.stdout.splitlines()]
    assert [c.strip() for c in rows[0][:-1]][0] == "NodeId"
    statuses = [r[6].strip() for r in rows[1:]]
    assert statuses == ["Leader", "Follower", "Follower"]
    assert int(rows[1][0]) == leader


def test_kafka_python_admin_client_sees_the_quorum(cluster: Cluster) -> None:
    from kafka import KafkaAdminClient

    info = cluster.wait_leader()
    follower = next(i for i in cluster.node_ids() if i != info.leader_id)
    # Bootstrapping at a follower: the admin client picks any node, the answer must still be the leader's.
    admin = KafkaAdminClient(
        bootstrap_servers=f"127.0.0.1:{cluster.ports[follower - 1]}", request_timeout_ms=5000
    )
    try:
        quorum = admin.describe_metadata_quorum()
        part = quorum["topics"][0]["partitions"][0]
        assert part["error"] is None
        assert part["leader_id"] == info.leader_id
        assert part["leader_epoch"] == info.leader_epoch
        assert part["high_watermark"] >= 1
        assert sorted(v["replica_id"] for v in part["current_voters"]) == [1, 2, 3]
        assert part["observers"] == []
        described = admin.describe_cluster()
        assert described["cluster_id"] == CLUSTER_ID
        assert described["controller_id"] == info.leader_id
        assert sorted(b["broker_id"] for b in described["brokers"]) == [1, 2, 3]
    finally:
        admin.close()


def test_librdkafka_bootstraps_from_every_controller(cluster: Cluster) -> None:
    # confluent-kafka bundles librdkafka, an implementation independent of Kafka's and kafka-python's. Its
    # Metadata v13 requests carry bytes after the body, which Kafka ignores (kwire.headers contract 4).
    from confluent_kafka.admin import AdminClient

    info = cluster.wait_leader()
    for node in cluster.node_ids():
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{cluster.ports[node - 1]}"})
        metadata = admin.list_topics(timeout=10)
        assert metadata.cluster_id == CLUSTER_ID
        assert metadata.controller_id == info.leader_id
        assert sorted(metadata.brokers) == [1, 2, 3]
        assert metadata.topics == {}
        described = admin.describe_cluster(request_timeout=10).result()
        assert described.cluster_id == CLUSTER_ID
        assert described.controller.id == info.leader_id
        assert sorted(n.id for n in described.nodes) == [1, 2, 3]


def test_sigterm_of_the_leader_hands_over(cluster: Cluster) -> None:
    info = cluster.wait_leader()
    started = time.monotonic()
    assert cluster.kill(info.leader_id, signal.SIGTERM) == 0
    others = [i for i in cluster.node_ids() if i != info.leader_id]
    new = cluster.wait_leader(timeout=20, hosts=others, exclude=info.leader_id)
    assert new.leader_epoch > info.leader_epoch
    # EndQuorumEpoch lets the others elect at once, well before their 2 s fetch timeout would fire.
    assert time.monotonic() - started < 1.9
    log = cluster.log_file(info.leader_id).read_text()
    assert "Traceback" not in log
    # Kafka's maybeCompleteShutdown (kraftd.core.context invariant 6): the old leader stayed up, able to grant
    # votes, until it followed its successor; before, it left as soon as its EndQuorumEpoch was acknowledged.
    (stopped,) = re.findall(r"node \d+: shut down: (\w+) in epoch (\d+)", log)
    assert stopped == ("follower", str(new.leader_epoch))
