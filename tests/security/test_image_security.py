"""The controller listener's image-backed security (kraftd.shell.controller.image_security, kwire.authz): SCRAM credentials
from UserScramCredentialRecords, ACL evaluation of AccessControlEntryRecords with Kafka's semantics, and the
operation each controller API requires."""

from __future__ import annotations

import asyncio
import random
import uuid

import pytest

from generated.access_control_entry_record import AccessControlEntryRecord
from generated.create_acls_request import AclCreation
from generated.create_partitions_request import CreatePartitionsRequest, CreatePartitionsTopic
from generated.create_topics_request import CreatableTopic, CreateTopicsRequest
from generated.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from generated.elect_leaders_request import ElectLeadersRequest
from generated.elect_leaders_request import TopicPartitions as ElectTopic
from generated.incremental_alter_configs_request import AlterConfigsResource, IncrementalAlterConfigsRequest
from generated.remove_access_control_entry_record import RemoveAccessControlEntryRecord
from generated.user_scram_credential_record import UserScramCredentialRecord
from kraftd.controller import acls, scram
from kraftd.controller.apply import apply_record
from kraftd.controller.image import MetadataImage
from kraftd.shell.apis.denials import denied
from kraftd.shell.apis.table import RULE_BOOK
from kraftd.shell.controller.image_security import ImageAcls, ImageCredentials
from kwire.authz import AclAuthorizer, evaluate, required_checks
from kwire.errors import ErrorCode
from kwire.sasl import (
    JaasCredentials,
    SaslAuthenticationError,
    SaslClientConfig,
    SaslServerConfig,
    ServerSession,
    client_exchange,
)
from tests.helpers.security import entry

CLUSTER = ("CLUSTER", "kafka-cluster")


def ok(entries, op, principal="User:alice", host="10.0.0.1", resource=CLUSTER, allow_if_no_acl=False) -> bool:
    return evaluate(entries, principal, host, (*resource, op), allow_if_no_acl)


# ------------------------------------------------------------------------------------------------ ACL evaluation


def test_allow_matches_principal_wildcard_principal_and_host() -> None:
    assert ok([entry()], "DESCRIBE")
    assert not ok([entry()], "DESCRIBE", principal="User:bob")
    assert ok([entry(principal="User:*")], "DESCRIBE", principal="User:bob")
    assert ok([entry(host="10.0.0.1")], "DESCRIBE")
    assert not ok([entry(host="10.0.0.2")], "DESCRIBE")
    assert not ok([entry()], "ALTER")
    assert not ok([entry()], "CLUSTER_ACTION")


def test_deny_wins_over_allow_and_all_covers_every_operation() -> None:
    assert not ok([entry(), entry(allow=False)], "DESCRIBE")
    assert not ok([entry(allow=False, principal="User:*"), entry()], "DESCRIBE")
    assert not ok([entry(op="ALL"), entry(allow=False, op="ALL")], "CLUSTER_ACTION")
    assert ok([entry(op="ALL")], "CLUSTER_ACTION")
    assert ok([entry(op="ALL")], "ALTER")
    # A DENY from another host does not apply.
    assert ok([entry(), entry(allow=False, host="10.9.9.9")], "DESCRIBE")


def test_implied_operations_allow_but_never_deny() -> None:
    assert ok([entry(op="ALTER")], "DESCRIBE")
    assert ok([entry(op="ALTER_CONFIGS")], "DESCRIBE_CONFIGS")
    assert not ok([entry(op="DESCRIBE")], "ALTER")
    assert ok([entry(op="DESCRIBE"), entry(op="ALTER", allow=False)], "DESCRIBE")


def test_literal_wildcard_and_prefixed_patterns() -> None:
    assert ok([entry(name="*")], "DESCRIBE")
    assert ok([entry(name="kafka-", pattern="PREFIXED")], "DESCRIBE")
    assert not ok([entry(name="kafka-", pattern="LITERAL")], "DESCRIBE")
    assert not ok([entry(name="kafka-clusterx", pattern="PREFIXED")], "DESCRIBE")
    topic = ("TOPIC", "orders-eu")
    assert ok([entry(name="orders-", pattern="PREFIXED", op="CREATE")], "CREATE", resource=topic)
    assert not ok([entry(name="orders-", pattern="PREFIXED", op="CREATE")], "CREATE")  # not the cluster
    assert not ok([entry(name="*", kind="TOPIC")], "DESCRIBE")  # a topic wildcard is not the cluster


def test_allow_everyone_if_no_acl_found_only_when_the_resource_has_no_acl() -> None:
    assert not ok([], "DESCRIBE")
    assert ok([], "DESCRIBE", allow_if_no_acl=True)
    # An ACL on the resource for someone else: the resource is not ACL-free any more.
    assert not ok([entry(principal="User:bob")], "DESCRIBE", allow_if_no_acl=True)
    # An ACL on another resource does not count.
    assert ok([entry(name="other", op="READ")], "DESCRIBE", allow_if_no_acl=True)


def test_authorizer_maps_controller_apis_to_kafka_operations() -> None:
    cluster_ops = {
        "CLUSTER_ACTION": [1, 52, 53, 54, 56, 58, 59, 62, 63, 67, 70, 82],
        "DESCRIBE": [55, 29, 46],
        "ALTER": [60, 30, 31, 43, 45, 51, 57, 64, 80, 81, 38, 39, 40, 650],
        "ALTER_CONFIGS": [49],
    }
    for op, keys in cluster_ops.items():
        authz = AclAuthorizer(RULE_BOOK, frozenset(), lambda op=op: [entry(op=op)])
        for key in keys:
            assert authz.authorize("User:alice", key, "10.0.0.1"), (op, key)
            others = [k for o, ks in cluster_ops.items() if o != op for k in ks]
        for key in others:
            if op == "ALTER" and key in cluster_ops["DESCRIBE"]:
                continue  # ALTER implies DESCRIBE
            assert not authz.authorize("User:alice", key, "10.0.0.1"), (op, key)
    nobody = AclAuthorizer(RULE_BOOK, frozenset({"User:admin"}))
    assert all(nobody.authorize("User:x", k) for k in (18, 17, 36, 3))
    assert not nobody.authorize("User:x", 55)
    assert nobody.authorize("User:admin", 55)


def test_topic_requests_need_the_topic_or_the_cluster_operation() -> None:
    create = CreateTopicsRequest(topics=[CreatableTopic(name="a"), CreatableTopic(name="b")])
    assert required_checks(RULE_BOOK, 19, create)[0] == (
        ("CLUSTER", "kafka-cluster", "CREATE"),
        ("TOPIC", "a", "CREATE"),
    )
    topic_a = AclAuthorizer(RULE_BOOK, frozenset(), lambda: [entry(op="CREATE", name="a")])
    assert not topic_a.authorize("User:alice", 19, "h", create)  # b is not covered
    assert topic_a.authorize("User:alice", 19, "h", CreateTopicsRequest(topics=[CreatableTopic(name="a")]))
    assert AclAuthorizer(RULE_BOOK, frozenset(), lambda: [entry(op="CREATE")]).authorize(
        "User:alice", 19, "h", create
    )

    parts = CreatePartitionsRequest(topics=[CreatePartitionsTopic(name="a")])
    assert not AclAuthorizer(RULE_BOOK, frozenset(), lambda: [entry(op="ALL")]).authorize(
        "User:alice", 37, "h", parts
    )
    assert AclAuthorizer(RULE_BOOK, frozenset(), lambda: [entry(op="ALTER", name="a")]).authorize(
        "User:alice", 37, "h", parts
    )

    by_id = DeleteTopicsRequest(topics=[DeleteTopicState(name=None, topic_id=uuid.uuid4())])
    assert required_checks(RULE_BOOK, 20, by_id) == [(("CLUSTER", "kafka-cluster", "DELETE"),)]
    configs = IncrementalAlterConfigsRequest(
        resources=[AlterConfigsResource(resource_type=2, resource_name="t"), AlterConfigsResource(4, "1")]
    )
    assert required_checks(RULE_BOOK, 44, configs) == [
        (("TOPIC", "t", "ALTER_CONFIGS"),),
        (("CLUSTER", "kafka-cluster", "ALTER_CONFIGS"),),
    ]


def test_denied_answers_carry_kafka_codes_per_entry() -> None:
    create = CreateTopicsRequest(topics=[CreatableTopic(name="a")])
    assert denied(19, create).topics[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    configs = IncrementalAlterConfigsRequest(
        resources=[AlterConfigsResource(resource_type=2, resource_name="t"), AlterConfigsResource(4, "1")]
    )
    codes = [r.error_code for r in denied(44, configs).responses]
    assert codes == [ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
    from generated.messages import API_SPECS

    elect = denied(43, ElectLeadersRequest(topic_partitions=[ElectTopic(topic="t", partitions=[3])]), 0)
    assert elect.error_code == ErrorCode.NONE  # v0 has no top-level error code
    assert (
        elect.replica_election_results[0].partition_result[0].error_code
        == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    )
    for key in (45, 46, 57, 62, 63, 64, 67, 70, 80, 81):
        if key in API_SPECS:
            assert denied(key, API_SPECS[key].request()).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


# ------------------------------------------------------------------------------------------------ image sources


def test_image_acls_follow_committed_records() -> None:
    image = MetadataImage()
    source = ImageAcls(lambda: image)
    authz = AclAuthorizer(RULE_BOOK, frozenset(), source)
    assert not authz.authorize("User:alice", 55, "127.0.0.1")
    creation = AclCreation(
        resource_type=acls.CLUSTER,
        resource_name="kafka-cluster",
        resource_pattern_type=acls.LITERAL,
        principal="User:alice",
        host="*",
        operation=acls.OPERATIONS.index("DESCRIBE"),
        permission_type=acls.PERMISSIONS.index("ALLOW"),
    )
    records, results = acls.create_acls(image, [creation], random.Random(1))
    assert results == [(ErrorCode.NONE, None)]
    (record,) = records
    assert isinstance(record, AccessControlEntryRecord)
    apply_record(image, 5, AccessControlEntryRecord.API_KEY, 0, record)
    assert authz.authorize("User:alice", 55, "127.0.0.1")
    assert not authz.authorize("User:alice", 60, "127.0.0.1")  # DescribeCluster needs ALTER
    apply_record(
        image, 6, RemoveAccessControlEntryRecord.API_KEY, 0, RemoveAccessControlEntryRecord(id=record.id)
    )
    assert not authz.authorize("User:alice", 55, "127.0.0.1")


def _exchange(store, mechanism: str, user: str, password: str) -> None:
    session = ServerSession(SaslServerConfig(("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"), store))

    async def request(msg):
        if type(msg).__name__ == "SaslHandshakeRequest":
            return session.handshake(msg)
        return session.authenticate(msg, 1, 0)

    asyncio.run(client_exchange(request, SaslClientConfig(mechanism, user, password)))
    assert session.principal == user


def _store_credential(image: MetadataImage, user: str, mechanism: int, password: str) -> None:
    salt, iterations = b"salt-for-" + user.encode(), 4096
    stored, server = scram.keys_for(mechanism, scram.salted_password(mechanism, password, salt, iterations))
    record = UserScramCredentialRecord(
        name=user, mechanism=mechanism, salt=salt, stored_key=stored, server_key=server, iterations=iterations
    )
    apply_record(image, image.offset + 1, record.API_KEY, 0, record)


@pytest.mark.parametrize(("mechanism", "code"), [("SCRAM-SHA-256", 1), ("SCRAM-SHA-512", 2)])
def test_scram_credentials_come_from_the_image(mechanism: str, code: int) -> None:
    image = MetadataImage()
    store = ImageCredentials(JaasCredentials({"admin": "admin-secret", "carol": "jaas-pw"}), lambda: image)
    with pytest.raises(SaslAuthenticationError):
        _exchange(store, mechanism, "bob", "bob-pw")  # not stored yet
    _store_credential(image, "bob", code, "bob-pw")
    _exchange(store, mechanism, "bob", "bob-pw")
    with pytest.raises(SaslAuthenticationError):
        _exchange(store, mechanism, "bob", "wrong")
    other = "SCRAM-SHA-512" if code == 1 else "SCRAM-SHA-256"
    with pytest.raises(SaslAuthenticationError):
        _exchange(store, other, "bob", "bob-pw")  # only the stored mechanism
    # JAAS users still log in with SCRAM while the image holds nothing for them ...
    _exchange(store, mechanism, "carol", "jaas-pw")
    # ... and the image's credential wins once stored.
    _store_credential(image, "carol", code, "image-pw")
    _exchange(store, mechanism, "carol", "image-pw")
    with pytest.raises(SaslAuthenticationError):
        _exchange(store, mechanism, "carol", "jaas-pw")
    # PLAIN reads the JAAS entry only.
    _exchange(store, "PLAIN", "carol", "jaas-pw")
    with pytest.raises(SaslAuthenticationError):
        _exchange(store, "PLAIN", "bob", "bob-pw")


def test_every_served_api_has_a_denied_answer_that_encodes_at_every_version() -> None:
    from generated.messages import API_SPECS
    from kraftd.shell.apis import handlers, table
    from kwire.authz import UNAUTHORIZED_FREE
    from kwire.headers import encode_response

    create = CreateTopicsRequest(topics=[CreatableTopic(name="a")])
    elect = ElectLeadersRequest(topic_partitions=[ElectTopic(topic="t", partitions=[0, 1])])
    samples = {19: create, 37: CreatePartitionsRequest(topics=[CreatePartitionsTopic(name="a")]), 43: elect}
    for key, (low, high) in table.supported_versions().items():
        if key in UNAUTHORIZED_FREE:
            continue
        request = samples.get(key, API_SPECS[key].request())
        for version in range(low, high + 1):
            answer = handlers.denied_response(key, request, version)
            assert isinstance(answer, API_SPECS[key].response), key
            assert encode_response(key, version, 7, answer), (key, version)


def test_allow_everyone_if_no_acl_found_is_read_from_server_properties() -> None:
    from kraftd.config import ConfigError
    from kraftd.security import listener_security

    props = {"authorizer.class.name": "x", "allow.everyone.if.no.acl.found": "true"}
    assert listener_security(props, "CONTROLLER", "PLAINTEXT", ConfigError).allow_if_no_acl
    assert not listener_security({}, "CONTROLLER", "PLAINTEXT", ConfigError).allow_if_no_acl
    with pytest.raises(ConfigError, match="allow.everyone.if.no.acl.found"):
        listener_security({"allow.everyone.if.no.acl.found": "yes"}, "CONTROLLER", "PLAINTEXT", ConfigError)
