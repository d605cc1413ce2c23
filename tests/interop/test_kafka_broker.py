"""A real Apache Kafka 4.3.1 broker (``process.roles=broker``) on a 3-node kraftd controller quorum.

Invariants, each observed on real processes over loopback:
1. The broker registers with the kraftd leader, catches up on the metadata log as an observer, is unfenced and
   reaches "Kafka Server started" (its own log line).
2. Through the broker, kafka-python creates a 6-partition topic (Envelope + CreateTopics on kraftd), produces
   100,000 records with acks=all and an idempotent producer (AllocateProducerIds), and a consumer group reads
   every record back in order per partition and commits (``__consumer_offsets`` is created through kraftd).
3. confluent-kafka does the same on its own 6-partition topic (100,000 records, a group, committed offsets);
   each client then adds partitions (6 -> 8), alters a topic config and reads it back, and deletes its topic.
   Kafka's own tools through the broker: kafka-topics creates a topic and describes the new partition count and
   config; kafka-configs alters and describes a topic's configs and the cluster-wide broker default;
   kafka-features describes the finalized metadata.version kraftd wrote.
4. Kafka's ``kafka-dump-log --cluster-metadata-decoder`` decodes every record of a kraftd node's log.
5. Every kraftd node's image is the same (checksum through ``kraftd``'s own decoder over each node's log).
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from pathlib import Path

import pytest

from kraftd.controller.machine import MetadataController
from kraftd.core.log import LogBatch
from kraftd.storage.batches import peek
from kraftd.storage.log import MetadataLog
from kraftd.testing.brokers import BROKER_ID
from kraftd.testing.brokers import broker_node as _broker
from kraftd.testing.brokers import wait_log as _wait_log
from tests.interop.kafka import MixedQuorum, dump_log, run_tool

pytestmark = [pytest.mark.interop, pytest.mark.slow]
RECORDS = 100_000


def test_real_broker_on_kraftd_quorum(tmp_path: Path) -> None:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        ResourceType,
    )
    from confluent_kafka.admin import NewTopic as CNewTopic
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import ConfigResource as KConfigResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient, NewTopic

    with MixedQuorum(tmp_path / "q", ["kraftd"] * 3) as quorum:
        quorum.start_all()
        quorum.wait_leader()
        broker = _broker(quorum, tmp_path)
        try:
            broker.start()
            registered = _wait_log(broker, r"Successfully registered broker 100 with broker epoch \d+", 90)
            _wait_log(broker, r"The broker has been unfenced\. Transitioning from RECOVERY to RUNNING", 60)
            _wait_log(broker, r"Kafka Server started", 60)
            assert registered
            bootstrap = f"127.0.0.1:{broker.port}"
            # A client bootstrapping at a kraftd controller is sent on to the registered broker.
            # (A follower learns the high watermark with its next fetch, so poll until its image has the broker.)
            at_controller = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{quorum.nodes[0].port}")
            deadline = time.monotonic() + 20
            while [b["broker_id"] for b in at_controller.describe_cluster()["brokers"]] != [BROKER_ID]:
                assert time.monotonic() < deadline, at_controller.describe_cluster()
                time.sleep(0.2)
            at_controller.close()

            admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
            created = admin.create_topics([NewTopic("orders", 6, 1)])
            assert (
                [t["error_code"] for t in created.to_object()["topics"]] == [0]
                if hasattr(created, "to_object")
                else True
            )
            producer = KafkaProducer(
                bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=5
            )
            futures = [producer.send("orders", key=b"%d" % (i % 97), value=b"%d" % i) for i in range(RECORDS)]
            producer.flush(60)
            acked = [f.get(timeout=30) for f in futures]
            producer.close()
            assert len(acked) == RECORDS
            sent: dict[int, list[bytes]] = defaultdict(list)
            for i, md in enumerate(acked):
                sent[md.partition].append(b"%d" % i)
            assert len(sent) == 6

            consumer = KafkaConsumer(
                "orders",
                bootstrap_servers=bootstrap,
                group_id="readers",
                auto_offset_reset="earliest",
                enable_auto_commit=False,
                consumer_timeout_ms=30000,
            )
            got: dict[int, list[bytes]] = defaultdict(list)
            total = 0
            for msg in consumer:
                got[msg.partition].append(msg.value)
                total += 1
                if total == RECORDS:
                    break
            consumer.commit()
            committed = {p: consumer.committed(TopicPartition("orders", p)) for p in range(6)}
            consumer.close()
            assert got == sent  # every acked record, in order per partition
            assert committed == {p: len(sent[p]) for p in range(6)}

            c_admin = AdminClient({"bootstrap.servers": bootstrap})
            meta = c_admin.list_topics(timeout=15)
            assert set(meta.brokers) == {BROKER_ID} and "orders" in meta.topics
            # confluent-kafka (librdkafka): create, produce with acks=all (idempotent), consume with a group.
            for fut in c_admin.create_topics(
                [CNewTopic("lib", num_partitions=6, replication_factor=1)]
            ).values():
                fut.result(30)
            c_producer = Producer(
                {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5}
            )
            c_sent: dict[int, list[bytes]] = defaultdict(list)

            def delivered(err: object, msg: object) -> None:
                assert err is None, err
                c_sent[msg.partition()].append(msg.value())  # type: ignore[attr-defined]

            for i in range(RECORDS):
                while True:
                    try:
                        c_producer.produce(
                            "lib", key=b"%d" % (i % 89), value=b"%d" % i, on_delivery=delivered
                        )
                        break
                    except BufferError:  # the local queue is full: serve delivery reports first
                        c_producer.poll(0.05)
                c_producer.poll(0)
            assert c_producer.flush(60) == 0
            assert sum(map(len, c_sent.values())) == RECORDS and len(c_sent) == 6
            c_consumer = Consumer(
                {
                    "bootstrap.servers": bootstrap,
                    "group.id": "lib-readers",
                    "auto.offset.reset": "earliest",
                    "enable.auto.commit": False,
                }
            )
            c_consumer.subscribe(["lib"])
            got_lib: dict[int, list[bytes]] = defaultdict(list)
            n_lib = 0
            deadline = time.monotonic() + 90
            while n_lib < RECORDS:
                assert time.monotonic() < deadline, n_lib
                for msg in c_consumer.consume(1000, 1.0):
                    if msg.error() is None:
                        got_lib[msg.partition()].append(msg.value())
                        n_lib += 1
            c_consumer.commit(asynchronous=False)
            from confluent_kafka import TopicPartition as CTopicPartition

            c_committed = {
                tp.partition: tp.offset
                for tp in c_consumer.committed([CTopicPartition("lib", p) for p in range(6)], timeout=15)
            }
            c_consumer.close()
            assert got_lib == c_sent  # every acked record, in order per partition
            assert c_committed == {p: len(c_sent[p]) for p in range(6)}
            # Add partitions (CreatePartitions) and alter a topic config (IncrementalAlterConfigs), both forwarded
            # to kraftd in Envelope; the broker then reports them from its own metadata image. confluent-kafka
            # on "lib", kafka-python on "orders".
            for fut in c_admin.create_partitions([NewPartitions("lib", 8)]).values():
                fut.result(30)
            entry = ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)
            res = ConfigResource(ResourceType.TOPIC, "lib", incremental_configs=[entry])
            for fut in c_admin.incremental_alter_configs([res]).values():
                fut.result(30)
            admin.create_partitions({"orders": 8})
            admin.alter_configs(
                [KConfigResource(ConfigResourceType.TOPIC, "orders", {"retention.ms": "3600000"})],
                incremental=True,
            )
            deadline = time.monotonic() + 20
            while True:
                described = c_admin.describe_configs([ConfigResource(ResourceType.TOPIC, "lib")])
                lib_retention = next(iter(described.values())).result(30)["retention.ms"].value
                lib_parts = len(c_admin.list_topics("lib", timeout=15).topics["lib"].partitions)
                k_described = admin.describe_configs([KConfigResource(ConfigResourceType.TOPIC, "orders")])
                orders_retention = k_described["topic"]["orders"].get("retention.ms", {}).get("value")
                orders_parts = len(admin.describe_topics(["orders"])[0]["partitions"])
                seen = (lib_retention, lib_parts, orders_retention, orders_parts)
                if seen == ("7200000", 8, "3600000", 8):
                    break
                assert time.monotonic() < deadline, seen
                time.sleep(0.2)
            topics_tool = run_tool(
                "org.apache.kafka.tools.TopicCommand",
                ["--bootstrap-server", bootstrap, "--create", "--topic", "by-tool", "--partitions", "3"],
                workdir=tmp_path,
            ).check()
            assert "Created topic by-tool." in topics_tool.stdout
            described_tool = run_tool(
                "org.apache.kafka.tools.TopicCommand",
                ["--bootstrap-server", bootstrap, "--describe", "--topic", "orders"],
                workdir=tmp_path,
            ).check()
            assert (
                "PartitionCount: 8" in described_tool.stdout
                and "retention.ms=3600000" in described_tool.stdout
            )
            # kafka-configs: alter and describe a topic's and the cluster-wide broker default's configs.
            configs_tool = [
                "--bootstrap-server",
                bootstrap,
                "--entity-type",
                "topics",
                "--entity-name",
                "by-tool",
            ]
            altered = run_tool(
                "kafka.admin.ConfigCommand",
                [*configs_tool, "--alter", "--add-config", "cleanup.policy=compact,segment.ms=600000"],
                workdir=tmp_path,
            ).check()
            assert "Completed updating config for topic by-tool." in altered.stdout, altered.stdout
            cluster_default = [
                "--bootstrap-server",
                bootstrap,
                "--entity-type",
                "brokers",
                "--entity-default",
            ]
            run_tool(
                "kafka.admin.ConfigCommand",
                [*cluster_default, "--alter", "--add-config", "log.retention.ms=86400000"],
                workdir=tmp_path,
            ).check()
            deadline = time.monotonic() + 20
            while True:
                shown = run_tool("kafka.admin.ConfigCommand", [*configs_tool, "--describe"], workdir=tmp_path)
                shown_default = run_tool(
                    "kafka.admin.ConfigCommand", [*cluster_default, "--describe"], workdir=tmp_path
                )
                if (
                    "cleanup.policy=compact" in shown.stdout
                    and "segment.ms=600000" in shown.stdout
                    and "log.retention.ms=86400000" in shown_default.stdout
                ):
                    break
                assert time.monotonic() < deadline, shown.stdout + shown.stderr + shown_default.stdout
            # kafka-features: the finalized levels kraftd wrote, as the broker reports them.
            features = run_tool(
                "org.apache.kafka.tools.FeatureCommand",
                ["--bootstrap-server", bootstrap, "describe"],
                workdir=tmp_path,
            ).check()
            assert re.search(
                r"Feature: metadata\.version\s+SupportedMinVersion: \S+\s+SupportedMaxVersion: \S+\s+"
                r"FinalizedVersionLevel: 4\.3-IV0",
                features.stdout,
            ), features.stdout
            for fut in c_admin.delete_topics(["lib"], operation_timeout=15).values():
                fut.result(30)
            admin.delete_topics(["orders"])
            del c_admin
            admin.close()
        finally:
            broker.stop()

        leader = quorum.wait_leader().leader_id
        seg = sorted(quorum.node(leader).metadata_dir.glob("*.log"))
        out = dump_log(seg, workdir=tmp_path).check().stdout
        types = re.findall(r'"type":"([A-Z_]+)"', out)
        for needed in (
            "REGISTER_BROKER_RECORD",
            "TOPIC_RECORD",
            "PARTITION_RECORD",
            "PRODUCER_IDS_RECORD",
            "REMOVE_TOPIC_RECORD",
            "BROKER_REGISTRATION_CHANGE_RECORD",
            "REGISTER_CONTROLLER_RECORD",
        ):
            assert needed in types, needed
        assert "Error" not in out and "error" not in out.lower().replace("errorcode", "")
        quorum.stop_all()
        # Invariant 5: replay each node's log with kraftd's own decoder up to the shortest log's end.
        logs = [MetadataLog(n.metadata_dir, 1 << 30, fsync=False) for n in quorum.nodes]
        try:
            end = min(log.end_offset for log in logs)
            sums = set()
            for log in logs:
                machine = MetadataController(0, [])
                batches = [
                    LogBatch(h.base_offset, h.last_offset, h.epoch, raw, h.is_control)
                    for raw in log.batches()
                    if (h := peek(raw)) is not None and h.last_offset < end
                ]
                machine.replay(batches, end)
                sums.add(machine.committed.checksum())
                # "orders" and "lib" were deleted
                assert set(machine.committed.topic_ids) == {"__consumer_offsets", "by-tool"}
                assert BROKER_ID in machine.committed.brokers
            assert len(sums) == 1
        finally:
            for log in logs:
                log.close()
