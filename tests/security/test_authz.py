"""Authorization on a listener (kwire.authz): super.users pass, everyone else is denied without ACLs, with the
principal taken from SASL or from the TLS client certificate."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from generated.describe_quorum_request import DescribeQuorumRequest
from generated.describe_quorum_response import DescribeQuorumResponse
from generated.vote_request import VoteRequest
from kraftd.config import config_from_properties
from kraftd.shell.apis.handlers import denied_response
from kraftd.shell.apis.table import RULE_BOOK
from kwire.authz import AclAuthorizer, AclEntry, parse_super_users
from kwire.client import KafkaClient
from kwire.errors import ErrorCode
from kwire.sasl import JaasCredentials, SaslClientConfig, SaslServerConfig
from kwire.server import KafkaServer
from kwire.tls import TlsSettings, client_context, server_context
from tests.security.certs import Pki

pytestmark = pytest.mark.timeout(60)


async def handler(header, request, info):
    return DescribeQuorumResponse(error_code=0, error_message="described")


def test_super_users_pass_and_others_get_cluster_authorization_failed(caplog) -> None:
    caplog.set_level(logging.WARNING, logger="kwire.server")
    sasl = SaslServerConfig(("PLAIN",), JaasCredentials({"admin": "a", "alice": "b"}))
    authz = AclAuthorizer(RULE_BOOK, parse_super_users("User:admin;User:CN=ops"))

    async def main() -> None:
        async with KafkaServer(handler, sasl=sasl, authorizer=authz, denied=denied_response) as srv:
            async with KafkaClient("127.0.0.1", srv.port, sasl=SaslClientConfig("PLAIN", "admin", "a")) as c:
                assert (await c.send(DescribeQuorumRequest())).error_message == "described"
            async with KafkaClient("127.0.0.1", srv.port, sasl=SaslClientConfig("PLAIN", "alice", "b")) as c:
                resp = await c.send(DescribeQuorumRequest())
                assert resp.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                vote = await c.send(VoteRequest())
                assert vote.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED

    asyncio.run(asyncio.wait_for(main(), 30))
    assert any("User:alice may not call DescribeQuorum" in r.getMessage() for r in caplog.records)


def test_acl_source_decides_for_non_super_users() -> None:
    reader = AclEntry("CLUSTER", "kafka-cluster", "LITERAL", "User:reader", "*", "DESCRIBE", True)
    authz = AclAuthorizer(RULE_BOOK, frozenset({"User:admin"}), lambda: [reader])
    assert authz.authorize("User:reader", 55)  # DescribeQuorum: Describe on Cluster
    assert not authz.authorize("User:reader", 52)  # Vote: ClusterAction
    assert not authz.authorize("User:reader", 60)  # DescribeCluster on a controller: Alter
    assert not authz.authorize("User:nobody", 55)
    assert authz.authorize("User:nobody", 18)  # ApiVersions is never authorized
    assert authz.authorize("User:admin", 52)


def test_tls_certificate_subject_is_the_principal(tmp_path: Path) -> None:
    pki = Pki(tmp_path)
    server = TlsSettings(
        keystore_location=str(pki.issue("server")),
        truststore_location=str(pki.ca_pem),
        client_auth="required",
    )
    authz = AclAuthorizer(RULE_BOOK, parse_super_users("User:CN=ops"))

    async def main() -> tuple[int, int]:
        async with KafkaServer(
            handler, ssl=server_context(server), authorizer=authz, denied=denied_response
        ) as srv:
            codes = []
            for cn in ("ops", "intern"):
                ctx = client_context(
                    TlsSettings(truststore_location=str(pki.ca_pem), keystore_location=str(pki.issue(cn)))
                )
                async with KafkaClient("127.0.0.1", srv.port, ssl=ctx) as c:
                    codes.append((await c.send(DescribeQuorumRequest())).error_code)
            return codes[0], codes[1]

    assert asyncio.run(asyncio.wait_for(main(), 30)) == (0, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)


def test_authorizer_keys_are_read_from_server_properties() -> None:
    cfg = config_from_properties(
        {
            "node.id": "1",
            "process.roles": "controller",
            "controller.listener.names": "CONTROLLER",
            "listeners": "CONTROLLER://127.0.0.1:9093",
            "controller.quorum.voters": "1@127.0.0.1:9093",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:admin; User:CN=controller",
        }
    )
    assert cfg.security.authorizer_class is not None
    assert cfg.security.super_users == {"User:admin", "User:CN=controller"}
    assert cfg.unknown_keys == ()
