"""A 3-node kraftd quorum on SSL listeners with mutual TLS between controllers (real processes on loopback).

Independent clients prove the listener speaks standard TLS + Kafka: kafka-python, confluent-kafka (librdkafka)
and Apache Kafka 4.3.1's own ``kafka-metadata-quorum`` with ``--command-config``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from kwire.tls import TlsSettings, client_context
from tests.daemon.cluster import CLUSTER_ID, Cluster
from tests.security.certs import Pki

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("tls-quorum")
    pki = Pki(root / "pki")
    node_cert = pki.issue("controller")  # SAN 127.0.0.1: peers verify it as a host name (https)
    client_cert = pki.issue("admin-client")
    extra = {
        "listener.security.protocol.map": "CONTROLLER:SSL",
        "ssl.keystore.type": "PEM",
        "listener.name.controller.ssl.keystore.location": str(node_cert),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca_pem),
        "ssl.client.auth": "required",
    }
    cluster = Cluster(root, extra=extra)
    cluster.client_ssl = client_context(
        TlsSettings(truststore_location=str(pki.ca_pem), keystore_location=str(client_cert))
    )
    cluster.start_all()
    try:
        yield cluster, pki, client_cert
    finally:
        cluster.stop_all()


def test_controllers_elect_a_leader_over_mutual_tls(tls_cluster) -> None:
    cluster, _, _ = tls_cluster
    info = cluster.wait_leader(60)
    assert info.leader_id in (1, 2, 3)
    assert sorted(v.replica_id for v in info.voters) == [1, 2, 3]
    time.sleep(3)  # let the controllers' own peer traffic (Raft, controller registration) run for a while
    for node in cluster.node_ids():
        text = cluster.log_file(node).read_text(errors="replace")
        assert "Traceback" not in text
        # every connection between controllers uses TLS: no plaintext peer ever reaches a listener
        assert "TLS handshake with" not in text, text[-2000:]


def test_kafka_python_admin_over_ssl(tls_cluster) -> None:
    from kafka import KafkaAdminClient

    cluster, pki, client_cert = tls_cluster
    info = cluster.wait_leader(60)
    admin = KafkaAdminClient(
        bootstrap_servers=f"127.0.0.1:{cluster.ports[0]}",
        security_protocol="SSL",
        ssl_cafile=str(pki.ca_pem),
        ssl_certfile=str(client_cert.with_suffix(".crt")),
        ssl_keyfile=str(client_cert.with_suffix(".key")),
        request_timeout_ms=10000,
    )
    try:
        described = admin.describe_cluster()
        assert described["cluster_id"] == CLUSTER_ID
        assert described["controller_id"] == info.leader_id
        quorum = admin.describe_metadata_quorum()
        part = quorum["topics"][0]["partitions"][0]
        assert part["leader_id"] == info.leader_id
    finally:
        admin.close()


def test_confluent_kafka_admin_over_ssl(tls_cluster) -> None:
    from confluent_kafka.admin import AdminClient

    cluster, pki, client_cert = tls_cluster
    info = cluster.wait_leader(60)
    admin = AdminClient(
        {
            "bootstrap.servers": f"127.0.0.1:{cluster.ports[1]}",
            "security.protocol": "SSL",
            "ssl.ca.location": str(pki.ca_pem),
            "ssl.certificate.location": str(client_cert.with_suffix(".crt")),
            "ssl.key.location": str(client_cert.with_suffix(".key")),
        }
    )
    described = admin.describe_cluster(request_timeout=15).result()
    assert described.cluster_id == CLUSTER_ID
    assert described.controller.id == info.leader_id


def test_our_quorum_tool_with_command_config(tls_cluster, tmp_path: Path) -> None:
    cluster, pki, client_cert = tls_cluster
    info = cluster.wait_leader(60)
    cfg = tmp_path / "client.properties"
    cfg.write_text(
        f"security.protocol=SSL\nssl.truststore.location={pki.ca_pem}\nssl.keystore.location={client_cert}\n"
    )
    tool = str(Path(sys.executable).with_name("kraft-metadata-quorum"))
    out = subprocess.run(
        [tool, "--bootstrap-controller", f"127.0.0.1:{cluster.ports[2]}", "--command-config", str(cfg)]
        + ["describe", "--status"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert f"LeaderId:               {info.leader_id}" in out.stdout


@pytest.mark.interop
def test_kafka_metadata_quorum_command_over_ssl(tls_cluster, tmp_path: Path) -> None:
    from tests.interop.kafka import metadata_quorum

    cluster, pki, client_cert = tls_cluster
    info = cluster.wait_leader(60)
    cfg = tmp_path / "command.properties"
    cfg.write_text(
        "security.protocol=SSL\n"
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.location={pki.ca_pem}\n"
        "ssl.keystore.type=PEM\n"
        f"ssl.keystore.location={client_cert}\n"
    )
    res = metadata_quorum(
        f"--bootstrap-controller 127.0.0.1:{cluster.ports[0]}",
        "--command-config",
        str(cfg),
        "describe",
        "--status",
        workdir=tmp_path,
    )
    assert res.returncode == 0, res.stderr + res.stdout
    assert f"LeaderId:               {info.leader_id}" in res.stdout
    assert CLUSTER_ID in res.stdout
