"""kraft_spark's ``record_json`` equals what Kafka's ``kafka-dump-log --cluster-metadata-decoder`` prints, record
by record, on a log Kafka made: one Kafka 4.3.1 controller and one real broker that registers, creates topics,
adds partitions, alters a topic config, deletes a topic and shuts down (controlled shutdown), so the log holds
RegisterBrokerRecord, BrokerRegistrationChangeRecord, PartitionRecord, PartitionChangeRecord, ConfigRecord,
TopicRecord and RemoveTopicRecord with tagged fields both at and away from their defaults."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from kraft_spark.decode import decode_file, find_files
from kraftd.testing.brokers import broker_node as _broker
from kraftd.testing.brokers import wait_log as _wait_log
from tests.interop.kafka import MixedQuorum, classpath, dump_log

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(300)]


def test_record_json_equals_dump_log_on_a_kafka_made_log(tmp_path: Path) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewPartitions, NewTopic

    classpath()
    with MixedQuorum(tmp_path / "q", ["kafka"], extra={"metadata.max.idle.interval.ms": "0"}) as quorum:
        quorum.start_all()
        quorum.wait_leader()
        broker = _broker(quorum, tmp_path)
        try:
            broker.start()
            _wait_log(broker, r"Kafka Server started", 120)
            admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{broker.port}", request_timeout_ms=15000)
            admin.create_topics([NewTopic("orders", 3, 1), NewTopic("gone", 2, 1)])
            time.sleep(1)
            admin.create_partitions({"orders": NewPartitions(5)})
            admin.alter_configs(
                [ConfigResource(ConfigResourceType.TOPIC, "orders", {"retention.ms": "60000"})]
            )
            admin.delete_topics(["gone"])
            admin.close()
            time.sleep(1)
            broker.stop(signal.SIGTERM, timeout=60)  # controlled shutdown: leaderships move, then fenced
            time.sleep(2)
        finally:
            broker.stop()
        controller = quorum.nodes[0]
        quorum.stop_all()
        segments = sorted(controller.metadata_dir.glob("*.log"))
        out = dump_log(segments, workdir=tmp_path).check().stdout
    payloads = [json.loads(line.split("payload: ", 1)[1]) for line in out.splitlines() if "payload: " in line]
    rows = [r for f in find_files(controller.metadata_dir) if f.kind == "segment" for r in decode_file(f)]
    rows = [r for r in rows if not r["is_control"]]
    assert len(rows) == len(payloads) > 20, out[-2000:]
    types = set()
    for row, payload in zip(rows, payloads, strict=True):
        assert row["record_version"] == payload["version"], payload
        assert row["record_json"] is not None, payload
        ours, kafka = json.loads(row["record_json"]), payload["data"]
        assert list(ours.items()) == list(kafka.items()), (payload["type"], row["record_json"], kafka)
        types.add(payload["type"])
    assert {
        "REGISTER_BROKER_RECORD",
        "BROKER_REGISTRATION_CHANGE_RECORD",
        "TOPIC_RECORD",
        "PARTITION_RECORD",
        "PARTITION_CHANGE_RECORD",
        "CONFIG_RECORD",
        "REMOVE_TOPIC_RECORD",
    } <= types, types
