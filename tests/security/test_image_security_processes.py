"""Real processes: a kraftd quorum on SASL_PLAINTEXT with an authorizer, whose SCRAM users and ACLs live in the
metadata image. A super user (PLAIN, from JAAS) stores a SCRAM-SHA-512 credential with AlterUserScramCredentials;
the new user then logs in with SCRAM on every node (kafka-python as the independent SCRAM client), a wrong password
fails with SASL_AUTHENTICATION_FAILED and the node stays up; the user is refused DescribeQuorum/DescribeCluster
until CreateAcls allows it, and a DENY ACL wins over the ALLOW. Kafka 4.3.1's kafka-acls and kafka-metadata-quorum
(--bootstrap-controller, --command-config) do the same against kraftd.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from generated.alter_user_scram_credentials_request import (
    AlterUserScramCredentialsRequest,
    ScramCredentialUpsertion,
)
from generated.create_acls_request import AclCreation, CreateAclsRequest
from generated.create_delegation_token_request import CreateDelegationTokenRequest
from generated.create_topics_request import CreatableTopic, CreateTopicsRequest
from generated.describe_cluster_request import DescribeClusterRequest
from generated.describe_quorum_request import DescribeQuorumRequest, PartitionData, TopicData
from kwire.client import KafkaClient
from kwire.errors import ErrorCode
from kwire.sasl import SaslAuthenticationError, SaslClientConfig
from tests.daemon.cluster import Cluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

PLAIN_JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" '
    'user_admin="admin-secret";'
)
SCRAM_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";'
ADMIN = SaslClientConfig("PLAIN", "admin", "admin-secret")
BOB = SaslClientConfig("SCRAM-SHA-512", "bob", "bob-secret")
# Kafka's codes: resource CLUSTER 4, pattern LITERAL 3, permission DENY 2 / ALLOW 3, operations below.
DESCRIBE, ALTER, ALL = 8, 7, 2


def properties() -> dict[str, str]:
    return {
        "listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "listener.name.controller.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.controller.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "delegation.token.secret.key": "image-security-test-secret",
    }


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    c = Cluster(tmp_path_factory.mktemp("image-security"), extra=properties())
    c.client_sasl = ADMIN
    c.start_all()
    try:
        yield c
    finally:
        c.stop_all()


async def call(port: int, sasl: SaslClientConfig, request: Any) -> Any:
    async with KafkaClient("127.0.0.1", port, sasl=sasl, connect_timeout=5, request_timeout=10) as c:
        return await c.send(request)


def ask(port: int, sasl: SaslClientConfig, request: Any) -> Any:
    return asyncio.run(call(port, sasl, request))


def at_leader(cluster: Cluster, request: Any, ok: Callable[[Any], bool]) -> Any:
    """Send an admin request to the active controller until it is answered without NOT_CONTROLLER."""
    deadline = time.monotonic() + 60
    while True:
        info = cluster.wait_leader(30)
        resp = ask(cluster.ports[info.leader_id - 1], ADMIN, request)
        if ok(resp) or time.monotonic() > deadline:
            return resp
        time.sleep(0.2)


def until(what: str, check: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def describe_quorum() -> DescribeQuorumRequest:
    return DescribeQuorumRequest(topics=[TopicData("__cluster_metadata", [PartitionData(0)])])


def quorum_code(port: int) -> int:
    return int(ask(port, BOB, describe_quorum()).error_code)


def cluster_code(port: int) -> int:
    return int(ask(port, BOB, DescribeClusterRequest()).error_code)


def acl(operation: int, permission: int) -> CreateAclsRequest:
    return CreateAclsRequest(
        creations=[AclCreation(4, "kafka-cluster", 3, "User:bob", "*", operation, permission)]
    )


def create_acl(cluster: Cluster, operation: int, permission: int) -> None:
    resp = at_leader(cluster, acl(operation, permission), lambda r: r.results[0].error_code == ErrorCode.NONE)
    assert [r.error_code for r in resp.results] == [ErrorCode.NONE], resp


def bob_describes_cluster(port: int) -> Any:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(
        bootstrap_servers=f"127.0.0.1:{port}",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username="bob",
        sasl_plain_password="bob-secret",
        request_timeout_ms=10000,
    )
    try:
        return admin.describe_cluster()
    finally:
        admin.close()


def test_scram_user_from_the_image_logs_in_and_acls_decide(cluster: Cluster) -> None:
    from kafka.errors import ClusterAuthorizationFailedError

    cluster.wait_leader(60)
    # A user the image does not hold cannot log in.
    with pytest.raises(SaslAuthenticationError) as refused:
        ask(cluster.ports[0], BOB, describe_quorum())
    assert refused.value.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED

    # (a) the super user stores bob's SCRAM-SHA-512 credential (salted password computed here, RFC 5802 Hi()).
    salt = os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha512", b"bob-secret", salt, 8192)
    upsert = AlterUserScramCredentialsRequest(
        upsertions=[ScramCredentialUpsertion("bob", 2, 8192, salt, salted)]
    )
    resp = at_leader(cluster, upsert, lambda r: r.results[0].error_code == ErrorCode.NONE)
    assert [(r.user, r.error_code) for r in resp.results] == [("bob", ErrorCode.NONE)], resp

    # (b) bob logs in with SCRAM on every node once the record is committed there; before an ACL he is refused.
    for port in cluster.ports:

        def refused_not_failed(port: int = port) -> bool:
            try:
                return quorum_code(port) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            except SaslAuthenticationError:
                return False

        until(f"bob's credential on port {port}", refused_not_failed)
        assert cluster_code(port) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED

    # An independent SCRAM client (kafka-python) authenticates with the stored credential and is refused
    # DescribeCluster (ALTER on the cluster, as on Kafka's controller).
    with pytest.raises(ClusterAuthorizationFailedError):
        bob_describes_cluster(cluster.ports[0])

    # Admin APIs are refused with Kafka's per-entry codes, and the connection stays usable for the answer.
    create = CreateTopicsRequest(topics=[CreatableTopic(name="bobs", num_partitions=1, replication_factor=1)])
    created = ask(cluster.ports[0], BOB, create)
    assert [(t.name, t.error_code) for t in created.topics] == [
        ("bobs", ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    ]
    scram = ask(cluster.ports[0], BOB, upsert)
    assert [r.error_code for r in scram.results] == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED]

    # A wrong password fails cleanly with Kafka's code and a log line; the node stays up.
    with pytest.raises(SaslAuthenticationError) as wrong:
        ask(cluster.ports[1], SaslClientConfig("SCRAM-SHA-512", "bob", "not-bobs"), describe_quorum())
    assert wrong.value.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert cluster.procs[2].poll() is None
    text = cluster.log_file(2).read_text(errors="replace")
    assert "SASL_AUTHENTICATION_FAILED" in text and "Traceback" not in text
    assert "User:bob may not call DescribeQuorum" in cluster.log_file(1).read_text(errors="replace")

    # (c) ALLOW Describe on the cluster: DescribeQuorum passes everywhere; DescribeCluster still needs Alter.
    create_acl(cluster, DESCRIBE, 3)
    for port in cluster.ports:
        until(f"the Describe ACL on port {port}", lambda port=port: quorum_code(port) == ErrorCode.NONE)
        assert cluster_code(port) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    create_acl(cluster, ALTER, 3)
    for port in cluster.ports:
        until(f"the Alter ACL on port {port}", lambda port=port: cluster_code(port) == ErrorCode.NONE)
    assert bob_describes_cluster(cluster.ports[2])["cluster_id"] == cluster.cluster_id

    # A DENY ACL wins over both ALLOWs.
    create_acl(cluster, ALL, 2)
    for port in cluster.ports:
        until(
            f"the DENY ACL on port {port}",
            lambda port=port: quorum_code(port) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        )
        assert cluster_code(port) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    # The super user is never subject to ACLs, and the quorum is intact.
    assert ask(cluster.ports[0], ADMIN, describe_quorum()).error_code == ErrorCode.NONE
    cluster.wait_leader(30)
    assert all(p.poll() is None for p in cluster.procs.values())


def test_a_token_created_over_sasl_is_owned_by_the_sasl_user(cluster: Cluster) -> None:
    """kwire.server contract 9 / kraftd.shell.controller.security_admin 3: sent straight to the controller (no
    Envelope), the token's owner and requester are the authenticated user, not User:ANONYMOUS."""
    req = CreateDelegationTokenRequest(
        owner_principal_type=None, owner_principal_name=None, max_lifetime_ms=-1
    )
    resp = at_leader(cluster, req, lambda r: r.error_code == ErrorCode.NONE)
    assert resp.error_code == ErrorCode.NONE, resp
    assert (resp.principal_type, resp.principal_name) == ("User", "admin")
    assert (resp.token_requester_principal_type, resp.token_requester_principal_name) == ("User", "admin")


@pytest.mark.parametrize("version", [1, 2])
def test_a_token_created_at_v1_or_v2_is_answered_without_requester_fields(
    cluster: Cluster, version: int
) -> None:
    """The requester fields exist from v3 (KIP-373): below it the answer leaves them out, as Kafka's does; setting
    them cannot be encoded at v1-2 (the answer used to fail to encode and the client got no response)."""
    req = CreateDelegationTokenRequest(max_lifetime_ms=-1)  # no owner fields before v3 either
    deadline = time.monotonic() + 60
    while True:
        info = cluster.wait_leader(30)
        port = cluster.ports[info.leader_id - 1]
        resp = asyncio.run(_send_at(port, req, version))
        if resp.error_code == ErrorCode.NONE or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert resp.error_code == ErrorCode.NONE, resp
    assert (resp.principal_type, resp.principal_name) == ("User", "admin")
    assert (resp.token_requester_principal_type, resp.token_requester_principal_name) == ("", "")
    assert resp.token_id and resp.hmac


async def _send_at(port: int, request: Any, version: int) -> Any:
    async with KafkaClient("127.0.0.1", port, sasl=ADMIN, connect_timeout=5, request_timeout=10) as c:
        return await c.send(request, version)


def command_config(path: Path, mechanism: str, module: str, user: str, password: str) -> Path:
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        f"sasl.mechanism={mechanism}\n"
        f"sasl.jaas.config=org.apache.kafka.common.security.{module} required "
        f'username="{user}" password="{password}";\n'
    )
    return path


def _out(result: Any) -> str:
    return str(result.stdout + result.stderr)


@pytest.mark.interop
def test_kafka_tools_store_a_scram_user_and_acls_at_kraftd(cluster: Cluster, tmp_path: Path) -> None:
    """Kafka 4.3.1's kafka-acls / kafka-metadata-quorum with --bootstrap-controller and
    --command-config. Kafka's Admin discovers controllers with DescribeCluster, which a controller grants only with
    ALTER on the cluster, so the tool needs ALTER (which implies the DESCRIBE of DescribeQuorum)."""
    from tests.interop.kafka import metadata_quorum, run_tool

    cluster.wait_leader(60)
    bootstrap = ",".join(f"127.0.0.1:{p}" for p in cluster.ports)
    admin = command_config(
        tmp_path / "admin.properties", "PLAIN", "plain.PlainLoginModule", "admin", "admin-secret"
    )
    carol = command_config(
        tmp_path / "carol.properties", "SCRAM-SHA-512", "scram.ScramLoginModule", "carol", "carol-secret"
    )
    wrong = command_config(
        tmp_path / "wrong.properties", "SCRAM-SHA-512", "scram.ScramLoginModule", "carol", "nope"
    )

    def tool(main: str, config: Path, *args: str) -> Any:
        return run_tool(
            main,
            ["--bootstrap-controller", bootstrap, "--command-config", str(config), *args],
            workdir=tmp_path,
        )

    def status(config: Path) -> Any:
        return metadata_quorum(
            f"--bootstrap-controller {bootstrap}",
            "--command-config",
            str(config),
            "describe",
            "--status",
            workdir=tmp_path,
        )

    # Kafka 4.3.1's Admin refuses AlterUserScramCredentials with --bootstrap-controller on the client side
    # (UnsupportedEndpointTypeException), so the credential is stored with our client, as a broker would forward it.
    salt = os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha512", b"carol-secret", salt, 4096)
    upsert = AlterUserScramCredentialsRequest(
        upsertions=[ScramCredentialUpsertion("carol", 2, 4096, salt, salted)]
    )
    resp = at_leader(cluster, upsert, lambda r: r.results[0].error_code == ErrorCode.NONE)
    assert resp.results[0].error_code == ErrorCode.NONE, resp
    # carol authenticates but may not describe: refused with Kafka's authorization error, not an authentication one.
    until(
        "carol's credential everywhere",
        lambda: "Authentication failed" not in _out(status(carol)),
        timeout=60,
    )
    refused = status(carol)
    assert refused.returncode != 0
    assert "Authorization" in refused.stderr + refused.stdout, refused.stderr + refused.stdout
    bad = status(wrong)
    assert bad.returncode != 0 and "Authentication failed" in bad.stderr + bad.stdout, bad.stderr + bad.stdout
    assert all(p.poll() is None for p in cluster.procs.values())

    acl = ["--add", "--allow-principal", "User:carol", "--operation", "Alter", "--cluster"]
    assert tool("org.apache.kafka.tools.AclCommand", admin, *acl).returncode == 0
    until("carol describes the quorum", lambda: status(carol).returncode == 0, timeout=60)
    info = cluster.wait_leader(30)
    assert f"LeaderId:               {info.leader_id}" in status(carol).stdout
    deny = ["--add", "--deny-principal", "User:carol", "--operation", "Describe", "--cluster"]
    assert tool("org.apache.kafka.tools.AclCommand", admin, *deny).returncode == 0
    until("carol is refused again", lambda: status(carol).returncode != 0, timeout=60)
    listed = tool("org.apache.kafka.tools.AclCommand", admin, "--list", "--cluster")
    assert "User:carol" in listed.stdout and "DENY" in listed.stdout, listed.stdout
