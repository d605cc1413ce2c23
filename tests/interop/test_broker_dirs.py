"""A JBOD Kafka 4.3.1 broker places its replicas through kraftd (AssignReplicasToDirs), and Kafka's
``kafka-cluster unregister`` removes a broker registration from kraftd, directly and forwarded by a broker.

Invariants, observed on real processes over loopback:
1. A broker with two log directories registers both; kraftd creates each partition with the unassigned
   directory id (the broker has more than one), the broker picks a directory and reports it with
   AssignReplicasToDirs, and the committed metadata log ends with every partition placed in one of the broker's
   two directories, the one holding the partition's files on disk.
2. ``kafka-cluster unregister --bootstrap-server`` (UnregisterBroker forwarded inside an Envelope) for an id
   with no registration fails with Kafka's message "Broker ID N is not currently registered".
3. After the broker stops, ``kafka-cluster unregister --bootstrap-controller`` removes it: exit 0, an
   UnregisterBrokerRecord with its id and last broker epoch is committed, and a second run is refused as in 2.
"""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path

import pytest

from generated.partition_change_record import PartitionChangeRecord
from generated.partition_record import PartitionRecord
from generated.register_broker_record import RegisterBrokerRecord
from generated.topic_record import TopicRecord
from generated.unregister_broker_record import UnregisterBrokerRecord
from kraftd.storage.uuids import uuid_from_str
from kraftd.testing.broker_load import metadata_records
from kraftd.testing.brokers import broker_node as _broker
from kraftd.testing.brokers import wait_log as _wait_log
from tests.interop.kafka import MixedQuorum, run_tool

pytestmark = [pytest.mark.interop, pytest.mark.slow]

BROKER = 100
CLUSTER_TOOL = "org.apache.kafka.tools.ClusterTool"


def _directory_id(log_dir: Path) -> uuid.UUID:
    text = (log_dir / "meta.properties").read_text()
    m = re.search(r"^directory\.id=(\S+)$", text, re.M)
    assert m, text
    return uuid_from_str(m.group(1))


def _placements(quorum: MixedQuorum, topic: str) -> dict[int, uuid.UUID]:
    """Partition -> directory of the broker's replica, from the leader's committed log, by replay order."""
    tid = None
    out: dict[int, uuid.UUID] = {}
    for _, d in metadata_records(quorum.nodes[0].metadata_dir):
        r = d.record
        if isinstance(r, TopicRecord) and r.name == topic:
            tid = r.topic_id
        elif isinstance(r, (PartitionRecord, PartitionChangeRecord)) and r.topic_id == tid and r.directories:
            out[r.partition_id] = r.directories[0]
    return out


def test_jbod_broker_assigns_replicas_to_dirs_and_kafka_cluster_unregisters(tmp_path: Path) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    with MixedQuorum(tmp_path / "q", ["kraftd"]) as quorum:
        quorum.start_all()
        quorum.wait_leader()
        first, second = tmp_path / "jbod-a", tmp_path / "jbod-b"
        broker = _broker(quorum, tmp_path, BROKER, extra={"log.dirs": f"{first},{second}"})
        try:
            broker.start()
            _wait_log(broker, r"Kafka Server started", 120)
            dirs = {_directory_id(first): first, _directory_id(second): second}
            admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{broker.port}", request_timeout_ms=20000)
            admin.create_topics([NewTopic("jbod", 6, 1)])
            deadline = time.monotonic() + 60
            while True:
                placed = _placements(quorum, "jbod")
                if len(placed) == 6 and set(placed.values()) <= set(dirs):
                    break
                assert time.monotonic() < deadline, (placed, dirs, broker.tail())
                time.sleep(0.5)
            for pid, d in placed.items():
                assert (dirs[d] / f"jbod-{pid}").is_dir(), (pid, d)
            admin.close()

            bootstrap = f"127.0.0.1:{broker.port}"
            ghost = run_tool(
                CLUSTER_TOOL,
                ["unregister", "--bootstrap-server", bootstrap, "--id", "77"],
                workdir=tmp_path,
                timeout=90,
            )
            assert ghost.returncode != 0
            assert "Broker ID 77 is not currently registered" in ghost.stdout + ghost.stderr, (
                ghost.stdout + ghost.stderr
            )
        finally:
            broker.stop()

        epochs = [
            d.record.broker_epoch
            for _, d in metadata_records(quorum.nodes[0].metadata_dir)
            if isinstance(d.record, RegisterBrokerRecord) and d.record.broker_id == BROKER
        ]
        controller = f"127.0.0.1:{quorum.nodes[0].port}"
        args = ["unregister", "--bootstrap-controller", controller, "--id", str(BROKER)]
        done = run_tool(CLUSTER_TOOL, args, workdir=tmp_path, timeout=90)
        assert done.returncode == 0, done.stdout + done.stderr
        removed = [
            d.record
            for _, d in metadata_records(quorum.nodes[0].metadata_dir)
            if isinstance(d.record, UnregisterBrokerRecord)
        ]
        assert [(r.broker_id, r.broker_epoch) for r in removed] == [(BROKER, epochs[-1])]
        again = run_tool(CLUSTER_TOOL, args, workdir=tmp_path, timeout=90)
        assert again.returncode != 0
        assert f"Broker ID {BROKER} is not currently registered" in again.stdout + again.stderr
