"""SASL_SSL on real processes: a kraftd quorum whose controllers authenticate each other with PLAIN over TLS,
clients with SCRAM; kafka-python, confluent-kafka, Kafka 4.3.1's MetadataQuorumCommand and a real Kafka 4.3.1
controller joining a kraftd quorum; wrong passwords fail with SASL_AUTHENTICATION_FAILED and a log line.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from generated.describe_quorum_request import DescribeQuorumRequest
from kwire.errors import ErrorCode
from kwire.quorum_client import fetch_quorum
from kwire.sasl import SaslAuthenticationError, SaslClientConfig
from kwire.tls import TlsSettings, client_context
from tests.daemon.cluster import CLUSTER_ID, Cluster
from tests.security.certs import Pki

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

PLAIN_JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" '
    'user_admin="admin-secret" user_alice="alice-secret";'
)
SCRAM_JAAS = (
    'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret" '
    'user_alice="alice-secret";'
)


def sasl_ssl_properties(pki: Pki, cert: Path) -> dict[str, str]:
    return {
        "listener.security.protocol.map": "CONTROLLER:SASL_SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(cert),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca_pem),
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.controller.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.controller.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.controller.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        "connections.max.reauth.ms": "30000",
    }


@pytest.fixture(scope="module")
def sasl_cluster(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("sasl-quorum")
    pki = Pki(root / "pki")
    cluster = Cluster(root, extra=sasl_ssl_properties(pki, pki.issue("controller")))
    cluster.client_ssl = client_context(TlsSettings(truststore_location=str(pki.ca_pem)))
    cluster.client_sasl = SaslClientConfig("SCRAM-SHA-256", "alice", "alice-secret")
    cluster.start_all()
    try:
        yield cluster, pki
    finally:
        cluster.stop_all()


def test_controllers_authenticate_each_other_and_elect(sasl_cluster) -> None:
    cluster, _ = sasl_cluster
    info = cluster.wait_leader(60)
    assert sorted(v.replica_id for v in info.voters) == [1, 2, 3]
    # followers replicate: every voter's log end offset reaches the leader's high watermark
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        info = cluster.wait_leader(30)
        if info.high_watermark > 0 and all(v.log_end_offset >= info.high_watermark for v in info.voters):
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"followers did not catch up over SASL_SSL: {info}")


def test_kafka_python_scram_sha_256_over_sasl_ssl(sasl_cluster) -> None:
    from kafka import KafkaAdminClient

    cluster, pki = sasl_cluster
    info = cluster.wait_leader(60)
    admin = KafkaAdminClient(
        bootstrap_servers=f"127.0.0.1:{cluster.ports[0]}",
        security_protocol="SASL_SSL",
        ssl_cafile=str(pki.ca_pem),
        sasl_mechanism="SCRAM-SHA-256",
        sasl_plain_username="alice",
        sasl_plain_password="alice-secret",
        request_timeout_ms=10000,
    )
    try:
        assert admin.describe_cluster()["controller_id"] == info.leader_id
        part = admin.describe_metadata_quorum()["topics"][0]["partitions"][0]
        assert part["leader_id"] == info.leader_id
    finally:
        admin.close()


def test_confluent_kafka_scram_sha_512_over_sasl_ssl(sasl_cluster) -> None:
    from confluent_kafka.admin import AdminClient

    cluster, pki = sasl_cluster
    info = cluster.wait_leader(60)
    admin = AdminClient(
        {
            "bootstrap.servers": f"127.0.0.1:{cluster.ports[1]}",
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(pki.ca_pem),
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "alice",
            "sasl.password": "alice-secret",
        }
    )
    described = admin.describe_cluster(request_timeout=15).result()
    assert described.cluster_id == CLUSTER_ID
    assert described.controller.id == info.leader_id


def test_wrong_password_fails_cleanly_and_the_node_stays_up(sasl_cluster) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    errors: list[KafkaError] = []
    cluster, pki = sasl_cluster
    info = cluster.wait_leader(60)
    port = cluster.ports[2]
    admin = AdminClient(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(pki.ca_pem),
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "alice",
            "sasl.password": "not-her-password",
            "error_cb": errors.append,
            "log_level": 0,
        }
    )
    with pytest.raises(KafkaException):
        admin.describe_cluster(request_timeout=5).result()
    admin.poll(1)
    # librdkafka surfaces the server's SaslAuthenticate error as its _AUTHENTICATION error
    auth = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
    assert auth and "invalid credentials" in auth[0].str(), errors

    async def ours() -> None:
        with pytest.raises(SaslAuthenticationError) as info_:
            await fetch_quorum(
                [("127.0.0.1", port)],
                2,
                3000,
                cluster.client_ssl,
                SaslClientConfig("PLAIN", "alice", "wrong"),
            )
        assert info_.value.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED

    try:
        asyncio.run(ours())
    except AssertionError:
        raise
    except Exception as exc:  # fetch_quorum wraps per-host failures into one KraftError line
        assert "SASL_AUTHENTICATION_FAILED" in str(exc), exc
    text = cluster.log_file(3).read_text(errors="replace")
    assert "SASL authentication of connection" in text and "SASL_AUTHENTICATION_FAILED" in text
    assert "Traceback" not in text
    assert cluster.wait_leader(30).leader_epoch == info.leader_epoch
    assert cluster.procs[3].poll() is None


def test_plaintext_and_unauthenticated_clients_are_refused(sasl_cluster) -> None:
    cluster, _ = sasl_cluster
    cluster.wait_leader(60)
    from kraftd.shell.net.transport import PeerConnection, PeerError

    async def main() -> None:
        plain = PeerConnection("127.0.0.1", cluster.ports[0], client_id="t", timeout_ms=3000)
        with pytest.raises(PeerError):
            await plain.request(DescribeQuorumRequest())
        await plain.close()
        # another node: the plaintext client's reconnects above may spend node 1's warning budget (10 per 10 s)
        tls_only = PeerConnection(
            "127.0.0.1", cluster.ports[1], client_id="t", timeout_ms=3000, ssl=cluster.client_ssl
        )
        with pytest.raises(PeerError):  # TLS but no SASL: DescribeQuorum is refused (connection closed)
            await tls_only.request(DescribeQuorumRequest())
        await tls_only.close()

    asyncio.run(main())
    assert "TLS handshake with" in cluster.log_file(1).read_text(errors="replace")
    assert "before SASL authentication completed" in cluster.log_file(2).read_text(errors="replace")


@pytest.mark.interop
def test_kafka_metadata_quorum_command_over_sasl_ssl(sasl_cluster, tmp_path: Path) -> None:
    from tests.interop.kafka import metadata_quorum

    cluster, pki = sasl_cluster
    info = cluster.wait_leader(60)
    cfg = tmp_path / "command.properties"
    cfg.write_text(
        "security.protocol=SASL_SSL\n"
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.location={pki.ca_pem}\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" '
        'password="alice-secret";\n'
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


@pytest.mark.interop
def test_a_kafka_controller_joins_a_kraftd_quorum_over_sasl_ssl(tmp_path: Path) -> None:
    from tests.interop.kafka import MixedQuorum

    pki = Pki(tmp_path / "pki")
    extra = sasl_ssl_properties(pki, pki.issue("controller"))
    with MixedQuorum(tmp_path / "q", ["kafka", "kraftd", "kraftd"], extra=extra) as q:
        q.describe = lambda node_ids=None, timeout_ms=3000: asyncio.run(  # type: ignore[method-assign]
            fetch_quorum(
                [("127.0.0.1", n.port) for n in q.nodes if n.alive()],
                2,
                timeout_ms,
                client_context(TlsSettings(truststore_location=str(pki.ca_pem))),
                SaslClientConfig("PLAIN", "admin", "admin-secret"),
            )
        )[1]
        q.start_all()
        info = q.wait_for(
            "all three voters caught up",
            lambda i: (
                i.leader_id >= 0
                and i.high_watermark > 0
                and all(v.log_end_offset >= i.high_watermark for v in i.voters)
            ),
            timeout=120,
        )
        kafka_node = q.node(1)
        assert kafka_node.alive(), kafka_node.tail()
        assert "SaslAuthenticationException" not in kafka_node.log_text(), kafka_node.tail()
        # Force the Kafka controller to follow a kraftd leader (or lead kraftd followers): kill whoever leads.
        leader = info.leader_id
        q.node(leader).stop()
        q.wait_for("a new leader", lambda i: i.leader_id >= 0 and i.leader_id != leader, timeout=90)
