"""kafka-python 3.0.12's own client (KafkaNetClient) negotiating ApiVersions with our server on loopback."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from kafka.net.compat import KafkaNetClient
from kafka.protocol.admin.cluster import DescribeQuorumRequest as KpDescribeQuorumRequest

from generated.describe_quorum_response import DescribeQuorumResponse, PartitionData, TopicData
from kwire.apiversions import controller_apis
from kwire.server import KafkaServer

pytestmark = pytest.mark.timeout(60)


async def handler(header, request, info):
    assert header.client_id.startswith("kafka-python")
    return DescribeQuorumResponse(
        topics=[
            TopicData(
                topic_name=t.topic_name,
                partitions=[PartitionData(partition_index=0, leader_id=3, leader_epoch=9, high_watermark=77)],
            )
            for t in request.topics
        ]
    )


@contextmanager
def served(api_versions_max: int) -> Iterator[KafkaServer]:
    apis = {**controller_apis(), 18: (0, api_versions_max)}
    loop = asyncio.new_event_loop()
    server = KafkaServer(handler, apis)
    loop.run_until_complete(server.start())
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


@contextmanager
def kafka_python_connection(port: int) -> Iterator[tuple[KafkaNetClient, str, object]]:
    client = KafkaNetClient(bootstrap_servers=f"127.0.0.1:{port}", request_timeout_ms=10000)
    try:
        node = client.cluster.bootstrap_brokers()[0].node_id
        client.await_ready(node, timeout_ms=10000)
        yield client, node, client._manager._conns[node]
    finally:
        client.close()


@pytest.mark.parametrize("api_versions_max", [4, 3])
def test_kafka_python_negotiates_with_our_server(api_versions_max):
    with served(api_versions_max) as server, kafka_python_connection(server.port) as (client, node, conn):
        # a v3-limited server answers kafka-python's first (v4) attempt with the v0 UNSUPPORTED_VERSION body;
        # kafka-python then retries at the advertised max
        assert conn._api_versions_idx == api_versions_max
        versions = conn.broker_version_data.api_versions
        assert versions == {**controller_apis(), 18: (0, api_versions_max)}
        # and a real request round-trips through both codecs at the negotiated version
        topic_cls = KpDescribeQuorumRequest.TopicData
        req = KpDescribeQuorumRequest(
            topics=[
                topic_cls(
                    topic_name="__cluster_metadata", partitions=[topic_cls.PartitionData(partition_index=0)]
                )
            ]
        )
        resp = client.send_and_receive(node, req, timeout_ms=10000)
        (topic,) = resp.topics
        assert topic.topic_name == "__cluster_metadata"
        assert (topic.partitions[0].leader_id, topic.partitions[0].leader_epoch) == (3, 9)
        assert topic.partitions[0].high_watermark == 77
