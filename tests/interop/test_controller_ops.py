"""Operator RPCs of a kraftd controller, proved through real Kafka 4.3.1 processes.

Invariants, each observed on real processes over loopback:
1. ApiVersions on the controller listener: a kraftd controller and a Kafka controller, both formatted at
   4.3-IV0, advertise the same supported feature ranges and finalize the same features at the same levels
   (eligible.leader.replicas.version 1 among them), each with an epoch >= 0.
2. Through a real broker whose controller is kraftd (two brokers on racks "east"/"west"): topics are placed
   across both racks; Kafka's ``kafka-reassign-partitions`` --execute / --verify / --list moves a partition
   (AlterPartitionReassignments, completed by the leaders' AlterPartition, ListPartitionReassignments);
   ``kafka-leader-election`` runs a PREFERRED election that moves leadership back and then reports it not
   needed, and an UNCLEAN election on a led partition is not needed either; kafka-python's legacy
   ``alter_configs`` (AlterConfigs) replaces a topic's config set, refuses an invalid value with INVALID_CONFIG,
   and ``kafka-features describe`` through the broker shows kraftd's finalized levels.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path

import pytest

from generated.api_versions_request import ApiVersionsRequest
from kraftd.shell.net.transport import PeerConnection
from kraftd.testing.brokers import broker_node as _broker
from kraftd.testing.brokers import wait_log as _wait_log
from tests.interop.kafka import MixedQuorum, run_tool

pytestmark = [pytest.mark.interop, pytest.mark.slow]


def _api_versions(port: int) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]], int]:
    async def ask() -> object:
        conn = PeerConnection("127.0.0.1", port, client_id="h9a-apiversions", timeout_ms=5000)
        try:
            return await conn.request(
                ApiVersionsRequest(client_software_name="kraftd-test", client_software_version="1")
            )
        finally:
            await conn.close()

    resp = asyncio.run(ask())
    supported = {f.name: (f.min_version, f.max_version) for f in resp.supported_features}  # type: ignore[attr-defined]
    finalized = {f.name: (f.min_version_level, f.max_version_level) for f in resp.finalized_features}  # type: ignore[attr-defined]
    return supported, finalized, resp.finalized_features_epoch  # type: ignore[attr-defined]


def _settled(port: int) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]], int]:
    deadline = time.monotonic() + 60
    while True:
        got = _api_versions(port)
        if "metadata.version" in got[1] or time.monotonic() > deadline:
            return got
        time.sleep(0.3)


def test_controller_api_versions_features_match_kafka(tmp_path: Path) -> None:
    with MixedQuorum(tmp_path / "k", ["kafka"]) as kafka, MixedQuorum(tmp_path / "d", ["kraftd"]) as kraftd:
        kafka.start_all()
        kraftd.start_all()
        kafka.wait_leader()
        kraftd.wait_leader()
        k_sup, k_fin, k_epoch = _settled(kafka.nodes[0].port)
        d_sup, d_fin, d_epoch = _settled(kraftd.nodes[0].port)
    assert d_sup == k_sup, (d_sup, k_sup)
    assert d_fin == k_fin, (d_fin, k_fin)
    assert k_fin["eligible.leader.replicas.version"] == (1, 1)  # ELR is on at 4.3-IV0
    assert k_epoch >= 0 and d_epoch >= 0


def _tool(main: str, args: list[str], root: Path) -> str:
    out = run_tool(main, args, workdir=root, timeout=90)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    return out.stdout


def test_kafka_tools_through_a_broker_on_kraftd(tmp_path: Path) -> None:
    from confluent_kafka.admin import AdminClient, ConfigSource, ResourceType
    from confluent_kafka.admin import ConfigResource as CResource
    from kafka.admin import KafkaAdminClient, NewTopic

    with MixedQuorum(tmp_path / "q", ["kraftd"]) as quorum:
        quorum.start_all()
        quorum.wait_leader()
        nodes = [_broker(quorum, tmp_path, 100 + i, rf=1) for i in range(2)]
        for n, rack in zip(nodes, ["east", "west"], strict=True):
            n.config.write_text(n.config.read_text() + f"broker.rack={rack}\n")
        try:
            for n in nodes:
                n.start()
            for n in nodes:
                _wait_log(n, r"Kafka Server started", 120)
            bootstrap = ",".join(f"127.0.0.1:{n.port}" for n in nodes)
            admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20000)
            # "Kafka Server started" precedes unfencing: until both brokers are in the metadata, a broker may
            # name the other as controller and kafka-python cannot route to it (UnknownBrokerIdError).
            deadline = time.monotonic() + 60
            while len(admin.describe_cluster()["brokers"]) < 2:
                assert time.monotonic() < deadline, "both brokers unfenced"
                time.sleep(0.2)
            admin.create_topics(
                [NewTopic("spread", 4, 2), NewTopic("moves", 1, replica_assignments={0: [100, 101]})]
            )

            c_admin = AdminClient({"bootstrap.servers": bootstrap})

            def layout(topic: str) -> dict[int, tuple[list[int], int, list[int]]]:
                meta = c_admin.list_topics(topic, timeout=15).topics[topic]
                return {p.id: (list(p.replicas), p.leader, sorted(p.isrs)) for p in meta.partitions.values()}

            def until(what: str, pred: object, timeout: float = 60, show: object = None) -> None:
                deadline = time.monotonic() + timeout
                while not pred():  # type: ignore[operator]
                    assert time.monotonic() < deadline, (what, show() if show else None)  # type: ignore[operator]
                    time.sleep(0.5)

            until("spread placed", lambda: len(layout("spread")) == 4)
            assert all(
                sorted(r) == [100, 101] for r, _, _ in layout("spread").values()
            )  # both racks each time
            assert {lead for _, lead, _ in layout("spread").values()} == {100, 101}
            until("moves in sync", lambda: layout("moves")[0][2] == [100, 101])

            # Reassign: reverse the replica order (the leader stays 100, preferred becomes 101).
            plan = tmp_path / "plan.json"
            plan.write_text(
                json.dumps(
                    {"version": 1, "partitions": [{"topic": "moves", "partition": 0, "replicas": [101, 100]}]}
                )
            )
            reassign = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
            out = _tool(
                reassign,
                ["--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan), "--execute"],
                tmp_path,
            )
            assert "Successfully started partition reassignment" in out, out
            until(
                "reassignment verified",
                lambda: (
                    "Reassignment of partition moves-0 is completed"
                    in _tool(
                        reassign,
                        ["--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan), "--verify"],
                        tmp_path,
                    )
                ),
            )
            assert "No partition reassignments found" in _tool(
                reassign, ["--bootstrap-server", bootstrap, "--list"], tmp_path
            )
            assert layout("moves")[0][:2] == ([101, 100], 100)

            # A real move: partition 0 of "spread" goes to one broker only (replica removed), then back to two.
            plan.write_text(
                json.dumps(
                    {"version": 1, "partitions": [{"topic": "spread", "partition": 0, "replicas": [101]}]}
                )
            )
            _tool(
                reassign,
                ["--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan), "--execute"],
                tmp_path,
            )
            until("shrunk", lambda: layout("spread")[0] == ([101], 101, [101]))

            election = "org.apache.kafka.tools.LeaderElectionCommand"
            args = [
                "--bootstrap-server",
                bootstrap,
                "--election-type",
                "PREFERRED",
                "--topic",
                "moves",
                "--partition",
                "0",
            ]
            out = _tool(election, args, tmp_path)
            assert "Successfully completed leader election (PREFERRED) for partitions moves-0" in out, out
            until("preferred leader", lambda: layout("moves")[0][1] == 101)
            out = _tool(election, args, tmp_path)
            assert "Valid replica already elected for partitions moves-0" in out, out
            out = _tool(
                election,
                ["--bootstrap-server", bootstrap, "--election-type", "UNCLEAN", "--all-topic-partitions"],
                tmp_path,
            )
            assert "Successfully completed" not in out, out

            # Legacy AlterConfigs (kafka-python sends AlterConfigs): a whole-set replace, and a refused value.
            def legacy(configs: dict[str, str]) -> object:
                """confluent-kafka's legacy alter_configs sends AlterConfigs (the whole set, nothing merged)."""
                (future,) = c_admin.alter_configs(
                    [CResource(ResourceType.TOPIC, "moves", set_config=configs)]
                ).values()
                try:
                    return future.result(timeout=30)
                except Exception as exc:  # noqa: BLE001 - the refused case returns the error to inspect
                    return exc

            def topic_configs() -> dict[str, str]:
                (future,) = c_admin.describe_configs([CResource(ResourceType.TOPIC, "moves")]).values()
                return {
                    k: e.value
                    for k, e in future.result().items()
                    if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
                }

            ok = legacy({"retention.ms": "3600000", "cleanup.policy": "compact"})
            until(
                "first set",
                lambda: topic_configs() == {"retention.ms": "3600000", "cleanup.policy": "compact"},
            )
            ok = legacy({"segment.ms": "600000"})  # replaces the whole set: the two keys above go
            until(
                "set replaced",
                lambda: topic_configs() == {"segment.ms": "600000"},
                timeout=30,
                show=topic_configs,
            )
            refused = legacy({"retention.ms": "soon"})
            assert "INVALID_CONFIG" in repr(refused) and "retention.ms" in repr(refused), (ok, refused)
            assert topic_configs() == {"segment.ms": "600000"}
            admin.close()

            out = _tool(
                "org.apache.kafka.tools.FeatureCommand",
                ["--bootstrap-server", bootstrap, "describe"],
                tmp_path,
            )
            levels = dict(
                re.findall(
                    r"Feature: (\S+)\s+SupportedMinVersion: \S+\s+SupportedMaxVersion: \S+\s+FinalizedVersionLevel: (\S+)",
                    out,
                )
            )
            assert (
                levels["metadata.version"] == "4.3-IV0" and levels["eligible.leader.replicas.version"] == "1"
            ), out
        finally:
            for n in nodes:
                n.stop()
