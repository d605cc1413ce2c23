"""Requests forwarded inside an Envelope are authorized with the forwarded principal, as Kafka's ControllerApis
re-dispatches them (kraftd.shell.apis.routing contract 11, kwire.authz contracts 4, 6, 7), on one in-process kraftd
controller with ``allow.everyone.if.no.acl.found=false`` and ``User:ANONYMOUS`` (the test's broker) a super user.

A refused request answers exactly as the same request sent directly (TOPIC_AUTHORIZATION_FAILED per topic,
CLUSTER_AUTHORIZATION_FAILED otherwise) and writes nothing; once an ACL allows it, the same forwarded request
is served; a request of mixed entries is served for the authorized ones only."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path
from typing import Any

import pytest

from generated.create_acls_request import AclCreation, CreateAclsRequest
from generated.create_topics_request import CreatableTopic, CreateTopicsRequest
from generated.default_principal_data import DefaultPrincipalData
from generated.describe_acls_request import DescribeAclsRequest
from generated.describe_quorum_request import DescribeQuorumRequest, PartitionData, TopicData
from generated.envelope_request import EnvelopeRequest
from generated.incremental_alter_configs_request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from kraftd.config import load_config
from kraftd.controller import acls
from kraftd.shell.apis.table import RULE_BOOK
from kraftd.shell.node import ControllerNode
from kwire.client import KafkaClient
from kwire.errors import ErrorCode
from kwire.headers import decode_response, encode_request
from tests.daemon.cluster import CLUSTER_ID, free_ports
from tests.helpers.daemon import wait_active
from tools.local_quorum import write_properties
from tools.storage_cli import format_directory

pytestmark = pytest.mark.timeout(90)
ALICE = "alice"
BROKER_RESOURCE, TOPIC_ACL_RESOURCE = 4, 2  # ConfigResource BROKER; ResourceType TOPIC


def _principal(name: str) -> bytes:
    return struct.pack(">h", 0) + DefaultPrincipalData(type="User", name=name).encode(0)


async def _forward(client: KafkaClient, user: str, request: Any, version: int) -> Any:
    """What a broker sends: the client's request (header included) in an Envelope, with the client's principal."""
    key = type(request).API_KEY
    data = encode_request(key, version, 41, "alice-client", request)
    envelope = await client.send(
        EnvelopeRequest(
            request_data=data, request_principal=_principal(user), client_host_address=b"\x7f\0\0\1"
        )
    )
    assert envelope.error_code == ErrorCode.NONE, envelope
    correlation_id, body = decode_response(bytes(envelope.response_data), key, version)
    assert correlation_id == 41
    return body


def _configs(value: str) -> IncrementalAlterConfigsRequest:
    config = AlterableConfig(name="log.retention.ms", config_operation=0, value=value)
    return IncrementalAlterConfigsRequest(
        resources=[AlterConfigsResource(resource_type=BROKER_RESOURCE, resource_name="", configs=[config])]
    )


def _allow(operation: str, resource_type: int, name: str) -> CreateAclsRequest:
    return CreateAclsRequest(
        creations=[
            AclCreation(
                resource_type=resource_type,
                resource_name=name,
                resource_pattern_type=acls.LITERAL,
                principal=f"User:{ALICE}",
                host="*",
                operation=acls.OPERATIONS.index(operation),
                permission_type=acls.PERMISSIONS.index("ALLOW"),
            )
        ]
    )


def test_forwarded_requests_are_authorized_with_the_forwarded_principal(tmp_path: Path) -> None:
    (port,) = free_ports(1)
    extra = {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS",
        "allow.everyone.if.no.acl.found": "false",
    }
    cfg = write_properties(tmp_path / "s.properties", 1, port, tmp_path / "d", f"1@127.0.0.1:{port}", extra)
    format_directory(load_config(cfg), CLUSTER_ID)

    async def main() -> None:
        node = ControllerNode(load_config(cfg), seed=1)
        await node.start()
        try:
            await wait_active(node, 15, "no active controller")
            async with KafkaClient("127.0.0.1", port) as broker:
                await scenario(node, broker)
        finally:
            await node.stop()

    async def scenario(node: ControllerNode, broker: KafkaClient) -> None:
        image = node.controller.machine
        # Denied: nothing is written, the answers are the direct ones.
        before = image.latest().offset
        created = await _forward(broker, ALICE, CreateTopicsRequest(topics=[CreatableTopic(name="t")]), 7)
        assert [(t.name, t.error_code) for t in created.topics] == [
            ("t", ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        ]
        altered = await _forward(broker, ALICE, _configs("1000"), 1)
        assert [r.error_code for r in altered.responses] == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
        quorum = DescribeQuorumRequest([TopicData("__cluster_metadata", [PartitionData(0)])])
        described = await _forward(broker, ALICE, quorum, 2)
        assert described.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert image.latest().offset == before
        assert "t" not in image.latest().topic_ids
        assert "log.retention.ms" not in image.latest().configs.get((BROKER_RESOURCE, ""), {})
        # The broker's own principal (a super user) is served.
        described = await _forward(broker, "ANONYMOUS", quorum, 2)
        assert described.error_code == ErrorCode.NONE and described.topics[0].partitions[0].leader_id == 1
        # After an ACL (forwarded for the super user), alice is served.
        granted = await _forward(
            broker, "ANONYMOUS", _allow("ALTER_CONFIGS", acls.CLUSTER, "kafka-cluster"), 3
        )
        assert [r.error_code for r in granted.results] == [ErrorCode.NONE]
        altered = await _forward(broker, ALICE, _configs("2000"), 1)
        assert [r.error_code for r in altered.responses] == [ErrorCode.NONE]
        assert image.committed.configs[(BROKER_RESOURCE, "")]["log.retention.ms"] == "2000"
        # Mixed entries: the authorized topic entry is served (here refused for want of brokers), the other
        # carries TOPIC_AUTHORIZATION_FAILED.
        await _forward(broker, "ANONYMOUS", _allow("CREATE", TOPIC_ACL_RESOURCE, "u"), 3)
        request = CreateTopicsRequest(topics=[CreatableTopic(name="u"), CreatableTopic(name="v")])
        created = await _forward(broker, ALICE, request, 7)
        codes = {t.name: t.error_code for t in created.topics}
        assert codes["v"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert codes["u"] != ErrorCode.TOPIC_AUTHORIZATION_FAILED, codes
        # An API a broker does not forward (DescribeAcls) is refused whole, as Kafka's EnvelopeUtils does.
        data = encode_request(29, 3, 42, "c", DescribeAclsRequest())
        refused = await broker.send(
            EnvelopeRequest(request_data=data, request_principal=_principal("ANONYMOUS"))
        )
        assert refused.error_code == ErrorCode.INVALID_REQUEST

    asyncio.run(asyncio.wait_for(main(), 60))


def test_forwarded_token_requests_follow_kafkas_controller_rules() -> None:
    """kwire.authz contract 6: inside an Envelope a token for oneself needs no ACL, one for another owner needs
    CREATE_TOKENS on that user (refused: DELEGATION_TOKEN_AUTHORIZATION_FAILED); sent directly, ALTER on the
    cluster (contract 5)."""
    from generated.create_delegation_token_request import CreateDelegationTokenRequest
    from kraftd.shell.apis.handlers import denied_response
    from kwire.authz import AclAuthorizer, AclEntry

    own = CreateDelegationTokenRequest(owner_principal_type=None, owner_principal_name=None)
    for_bob = CreateDelegationTokenRequest(owner_principal_type="User", owner_principal_name="bob")
    nobody = AclAuthorizer(RULE_BOOK, frozenset())
    assert nobody.authorize("User:alice", 38, "h", own, forwarded=True)
    assert nobody.authorize("User:alice", 39, "h", None, forwarded=True)
    assert not nobody.authorize("User:alice", 38, "h", own)  # direct
    assert not nobody.authorize("User:alice", 38, "h", for_bob, forwarded=True)
    may = AclEntry("USER", "User:bob", "LITERAL", "User:alice", "*", "CREATE_TOKENS", True)
    assert AclAuthorizer(RULE_BOOK, frozenset(), lambda: [may]).authorize(
        "User:alice", 38, "h", for_bob, forwarded=True
    )
    refused = denied_response(38, for_bob, 3)
    assert refused.error_code == ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED
    assert (refused.principal_type, refused.principal_name) == ("User", "bob")


def test_config_resources_are_checked_on_what_they_name() -> None:
    """kwire.authz contract 4 (ControllerApis authorizeAlterResource): a topic or group config resource needs
    ALTER_CONFIGS on that topic or group, refused with TOPIC_ / GROUP_AUTHORIZATION_FAILED; others the cluster."""
    from kraftd.shell.apis.handlers import denied_response
    from kwire.authz import AclAuthorizer, AclEntry

    def resource(rtype: int, name: str) -> AlterConfigsResource:
        return AlterConfigsResource(resource_type=rtype, resource_name=name, configs=[])

    req = IncrementalAlterConfigsRequest(
        resources=[resource(2, "t"), resource(32, "g"), resource(BROKER_RESOURCE, ""), resource(16, "m")]
    )
    on_group = AclEntry("GROUP", "g", "LITERAL", "User:alice", "*", "ALTER_CONFIGS", True)
    assert AclAuthorizer(RULE_BOOK, frozenset(), lambda: [on_group]).denied_entries(
        "User:alice", 44, "h", req
    ) == {
        0,
        2,
        3,
    }
    refused = denied_response(44, req, 1)
    assert [r.error_code for r in refused.responses] == [
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ]


def test_every_forwarded_api_is_served_has_a_rule_and_a_refusal() -> None:
    """kraftd.shell.apis.routing contract 11: the 20 APIs a 4.3.1 broker forwards are served at the listener's
    versions, each has an authorization rule and a refusal that encodes; nothing else is taken from an Envelope."""
    from generated.messages import API_SPECS
    from kraftd.shell.apis import handlers, routing, table
    from kraftd.shell.apis.table import FORWARDED_RULES
    from kwire.authz import required_checks
    from kwire.headers import encode_response

    assert len(routing.FORWARDED) == 20 and routing.FORWARDED.keys() <= table.supported_versions().keys()
    assert routing._FORWARDABLE == {k: table.supported_versions()[k] for k in routing.FORWARDED}
    assert {29, 52, 58, 62, 67}.isdisjoint(routing.FORWARDED)  # DescribeAcls, Vote, Envelope, ...
    for key in routing.FORWARDED:
        request = API_SPECS[key].request()
        if key in FORWARDED_RULES and key not in (38, 39, 40):
            assert required_checks(RULE_BOOK, key, request, "User:alice", forwarded=True) == required_checks(
                RULE_BOOK, key, request
            )
        low, high = table.supported_versions()[key]
        assert encode_response(key, high, 1, handlers.denied_response(key, request, high)), key


def test_every_served_api_has_its_rule_in_the_table() -> None:
    """kwire.authz contract 4: RULES names every API the controller listener serves (none falls to a default)."""
    from kraftd.shell.apis import table
    from kraftd.shell.apis.table import RULES
    from kwire.authz import UNAUTHORIZED_FREE

    assert set(table.supported_versions()) - UNAUTHORIZED_FREE <= set(RULES)
