"""ACL, client quota, SCRAM and delegation token writes of the state machine, driven as pure functions (no IO).

Each test builds an image only by applying records, asks kraftd.controller.acls / quotas / scram / tokens for the
records and answers of a request, applies the records, and checks image and answers against the contracts
(Kafka 4.3.1's AclControlManager, ClientQuotaControlManager, ScramControlManager, DelegationTokenControlManager).
The interop test (tests/interop/test_kafka_security_metadata.py) checks the same records against a real broker.
"""

from __future__ import annotations

import hashlib
import hmac
import random
import struct
from typing import Any

import pytest

from generated.alter_client_quotas_request import EntityData, EntryData, OpData
from generated.alter_user_scram_credentials_request import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from generated.create_acls_request import AclCreation
from generated.create_delegation_token_request import CreatableRenewers, CreateDelegationTokenRequest
from generated.default_principal_data import DefaultPrincipalData
from generated.feature_level_record import FeatureLevelRecord
from kraftd.controller import acls, quotas, scram, tokens
from kraftd.controller.acls import ANY, LITERAL, MATCH, PREFIXED, AclFilter
from kraftd.controller.apply import apply_record
from kraftd.controller.image import MetadataImage
from kraftd.shell.controller.security_admin import forwarded_principal
from kwire.errors import ErrorCode
from kwire.metadata_frame import decode_metadata_record, encode_record

TOPIC, GROUP, CLUSTER = 2, 3, 4
READ, WRITE, DESCRIBE = 3, 4, 8
DENY, ALLOW = 2, 3


def _apply(image: MetadataImage, records: list[Any]) -> None:
    for r in records:
        apply_record(image, image.offset + 1, type(r).API_KEY, 0, r)


def _image(mv: int = 30) -> MetadataImage:
    image = MetadataImage()
    _apply(image, [FeatureLevelRecord(name="metadata.version", feature_level=mv)])
    return image


def _acl(name: str = "orders", **kw: Any) -> AclCreation:
    base: dict[str, Any] = {
        "resource_type": TOPIC,
        "resource_name": name,
        "resource_pattern_type": LITERAL,
        "principal": "User:alice",
        "host": "*",
        "operation": READ,
        "permission_type": ALLOW,
    }
    base.update(kw)
    return AclCreation(**base)


def _filter(**kw: Any) -> AclFilter:
    base: dict[str, Any] = {
        "resource_type": ANY,
        "resource_name": None,
        "pattern_type": ANY,
        "principal": None,
        "host": None,
        "operation": ANY,
        "permission_type": ANY,
    }
    base.update(kw)
    return AclFilter(**base)


# ---- ACLs ---------------------------------------------------------------------------------------------------------


def test_create_acls_writes_new_acls_once_and_answers_duplicates_with_success() -> None:
    image, rng = _image(), random.Random(1)
    records, results = acls.create_acls(image, [_acl(), _acl(), _acl("payments")], rng)
    assert results == [(ErrorCode.NONE, None)] * 3
    assert [r.resource_name for r in records] == ["orders", "payments"]
    assert len({r.id for r in records}) == 2
    _apply(image, records)
    assert sorted(a.resource_name for a in image.acls.values()) == ["orders", "payments"]
    again, results = acls.create_acls(image, [_acl()], rng)
    assert again == [] and results == [(ErrorCode.NONE, None)]


@pytest.mark.parametrize(
    ("creation", "message"),
    [
        (_acl(resource_type=CLUSTER), "The only valid name for the CLUSTER resource is kafka-cluster"),
        (_acl(""), "Invalid empty resource name"),
        (_acl(resource_type=ANY), "Invalid resourceType ANY"),
        (_acl(resource_pattern_type=MATCH), "Invalid patternType MATCH"),
        (_acl(resource_pattern_type=ANY), "Invalid patternType ANY"),
        (_acl(operation=ANY), "Invalid operation ANY"),
        (_acl(permission_type=ANY), "Invalid permissionType ANY"),
        (_acl(principal="alice"), "Could not parse principal from `alice`"),
        (_acl(operation=0), "CreatableAcls contain unknown elements"),
        (_acl(resource_type=99), "CreatableAcls contain unknown elements"),
    ],
)
def test_create_acls_refuses_what_kafka_refuses(creation: AclCreation, message: str) -> None:
    records, results = acls.create_acls(_image(), [creation, _acl()], random.Random(2))
    assert [r.resource_name for r in records] == ["orders"]
    code, text = results[0]
    assert code == ErrorCode.INVALID_REQUEST and text is not None and text.startswith(message)
    assert results[1] == (ErrorCode.NONE, None)


def test_cluster_acl_named_kafka_cluster_is_accepted() -> None:
    records, results = acls.create_acls(
        _image(), [_acl("kafka-cluster", resource_type=CLUSTER, operation=7)], random.Random(3)
    )
    assert results == [(ErrorCode.NONE, None)] and len(records) == 1


def _populated() -> MetadataImage:
    image = _image()
    records, _ = acls.create_acls(
        image,
        [
            _acl("orders"),
            _acl("*", operation=WRITE),
            _acl("ord", resource_pattern_type=PREFIXED, operation=DESCRIBE),
            _acl("orders", resource_type=GROUP, principal="User:bob", permission_type=DENY),
        ],
        random.Random(4),
    )
    _apply(image, records)
    return image


def test_filters_match_as_kafka_pattern_filters_do() -> None:
    image = _populated()

    def names(f: AclFilter) -> list[tuple[int, str, int]]:
        return sorted(
            (a.resource_type, a.resource_name, a.pattern_type) for a in image.acls.values() if f.matches(a)
        )

    assert len(names(_filter())) == 4
    # MATCH: the literal name, the literal wildcard and every prefix that covers it.
    assert names(_filter(resource_type=TOPIC, resource_name="orders", pattern_type=MATCH)) == [
        (TOPIC, "*", LITERAL),
        (TOPIC, "ord", PREFIXED),
        (TOPIC, "orders", LITERAL),
    ]
    # ANY pattern type: exact names only, any pattern type.
    assert names(_filter(resource_name="orders")) == [(TOPIC, "orders", LITERAL), (GROUP, "orders", LITERAL)]
    assert names(_filter(pattern_type=PREFIXED)) == [(TOPIC, "ord", PREFIXED)]
    # A concrete pattern type: that type only, exact name (the literal wildcard does not stand in).
    assert names(_filter(resource_type=TOPIC, resource_name="orders", pattern_type=LITERAL)) == [
        (TOPIC, "orders", LITERAL)
    ]
    assert names(_filter(principal="User:bob", permission_type=DENY)) == [(GROUP, "orders", LITERAL)]
    assert names(_filter(operation=WRITE, host="10.0.0.1")) == []


def test_delete_acls_lists_matches_per_filter_and_removes_each_id_once() -> None:
    image = _populated()
    bad = _filter(operation=0)
    records, results = acls.delete_acls(
        image, [_filter(resource_type=TOPIC), _filter(resource_name="orders"), bad]
    )
    assert [len(r.matches) for r in results[:2]] == [3, 2]
    assert results[2].error == ErrorCode.INVALID_REQUEST and results[2].matches == []
    assert len(records) == 4 and len({r.id for r in records}) == 4
    _apply(image, records)
    assert dict(image.acls) == {}
    records, results = acls.delete_acls(image, [_filter()])
    assert records == [] and results[0].error == ErrorCode.NONE and results[0].matches == []


def test_describe_acls_groups_by_resource_pattern() -> None:
    groups = acls.describe_acls(_populated(), _filter(resource_name="orders"))
    assert sorted(groups) == [(TOPIC, "orders", LITERAL), (GROUP, "orders", LITERAL)]
    assert [a.principal for a in groups[(GROUP, "orders", LITERAL)]] == ["User:bob"]


# ---- client quotas ------------------------------------------------------------------------------------------------


def _entry(entity: list[tuple[str, str | None]], *ops: tuple[str, float | None]) -> EntryData:
    return EntryData(
        entity=[EntityData(entity_type=t, entity_name=n) for t, n in entity],
        ops=[OpData(key=k, value=v or 0.0, remove=v is None) for k, v in ops],
    )


def test_quotas_set_change_and_remove_write_only_changes() -> None:
    image = _image()
    alice = [("user", "alice"), ("client-id", None)]
    records, results = quotas.alter_client_quotas(image, [_entry(alice, ("producer_byte_rate", 1024.0))])
    assert results == [((("client-id", None), ("user", "alice")), ErrorCode.NONE, None)]
    _apply(image, records)
    assert {e: dict(q) for e, q in image.quotas.items()} == {
        (("client-id", None), ("user", "alice")): {"producer_byte_rate": 1024.0}
    }
    same, _ = quotas.alter_client_quotas(
        image, [_entry(alice, ("producer_byte_rate", 1024.0), ("request_percentage", None))]
    )
    assert same == []
    gone, _ = quotas.alter_client_quotas(image, [_entry(alice, ("producer_byte_rate", None))])
    assert [(r.key, r.remove) for r in gone] == [("producer_byte_rate", True)]
    _apply(image, gone)
    assert dict(image.quotas) == {}


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (_entry([], ("producer_byte_rate", 1.0)), "Invalid empty client quota entity"),
        (_entry([("group", "g")], ("producer_byte_rate", 1.0)), "Unhandled client quota entity type: group"),
        (_entry([("user", "")], ("producer_byte_rate", 1.0)), "Empty user not supported"),
        (
            _entry([("user", "a"), ("ip", "1.2.3.4")], ("connection_creation_rate", 1.0)),
            "Invalid quota entity combination",
        ),
        (
            _entry([("ip", "no.such.host.invalid")], ("connection_creation_rate", 1.0)),
            "no.such.host.invalid is not a valid IP",
        ),
        (
            _entry([("user", "a")], ("connection_creation_rate", 1.0)),
            "Invalid configuration key connection_creation_rate",
        ),
        (
            _entry([("ip", "10.0.0.1")], ("producer_byte_rate", 1.0)),
            "Invalid configuration key producer_byte_rate",
        ),
        (
            _entry([("user", "a")], ("consumer_byte_rate", 0.0)),
            "Quota consumer_byte_rate must be greater than 0",
        ),
        (
            _entry([("user", "a")], ("producer_byte_rate", 10.5)),
            "producer_byte_rate cannot be a fractional value.",
        ),
        (
            _entry([("ip", None)], ("connection_creation_rate", 2.0**31)),
            "Proposed value for connection_creation_rate is too large for an INT.",
        ),
        (
            _entry([("user", "a")], ("producer_byte_rate", 1.0), ("producer_byte_rate", 2.0)),
            "Ignoring duplicate entity",
        ),
    ],
)
def test_quotas_refuse_what_kafka_refuses(entry: EntryData, message: str) -> None:
    records, results = quotas.alter_client_quotas(_image(), [entry])
    assert records == []
    [(_, code, text)] = results
    assert code == ErrorCode.INVALID_REQUEST and text is not None and text.startswith(message), text


def test_quota_fractions_are_fine_for_doubles_and_resolved_hosts_are_accepted() -> None:
    records, results = quotas.alter_client_quotas(
        _image(),
        [
            _entry([("user", "a")], ("request_percentage", 12.5)),
            _entry([("ip", "broker.local")], ("connection_creation_rate", 5.0)),
        ],
        resolvable={"broker.local"}.__contains__,
    )
    assert [code for _, code, _ in results] == [ErrorCode.NONE, ErrorCode.NONE] and len(records) == 2


def test_a_repeated_entity_is_refused_but_its_first_occurrence_is_written() -> None:
    e = [("user", "a")]
    records, results = quotas.alter_client_quotas(
        _image(), [_entry(e, ("producer_byte_rate", 5.0)), _entry(e, ("consumer_byte_rate", 6.0))]
    )
    assert [r.key for r in records] == ["producer_byte_rate"]
    [(_, code, text)] = results
    assert (
        code == ErrorCode.INVALID_REQUEST
        and text is not None
        and text.startswith("Ignoring duplicate entity")
    )


# ---- SCRAM --------------------------------------------------------------------------------------------------------


def _upsert(name: str = "alice", mechanism: int = 1, iterations: int = 4096) -> ScramCredentialUpsertion:
    salt = b"0123456789abcdef"
    return ScramCredentialUpsertion(
        name=name,
        mechanism=mechanism,
        iterations=iterations,
        salt=salt,
        salted_password=scram.salted_password(mechanism, "pencil", salt, iterations)
        if mechanism in scram.MECHANISMS
        else b"x",
    )


def test_scram_upsertion_stores_rfc5802_keys_and_deletion_removes_them() -> None:
    image = _image()
    req = AlterUserScramCredentialsRequest(upsertions=[_upsert(), _upsert("bob", 2, 8192)])
    records, results = scram.alter_credentials(image, req)
    assert results == [("alice", ErrorCode.NONE, None), ("bob", ErrorCode.NONE, None)]
    salted = hashlib.pbkdf2_hmac("sha256", b"pencil", b"0123456789abcdef", 4096)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    assert records[0].stored_key == hashlib.sha256(client_key).digest()
    assert records[0].server_key == hmac.new(salted, b"Server Key", hashlib.sha256).digest()
    assert len(records[1].stored_key) == 64 and records[1].iterations == 8192
    _apply(image, records)
    assert set(image.scram) == {("alice", 1), ("bob", 2)}
    records, results = scram.alter_credentials(
        image,
        AlterUserScramCredentialsRequest(deletions=[ScramCredentialDeletion(name="alice", mechanism=1)]),
    )
    assert results == [("alice", ErrorCode.NONE, None)]
    _apply(image, records)
    assert set(image.scram) == {("bob", 2)}


@pytest.mark.parametrize(
    ("req", "code", "message"),
    [
        (
            AlterUserScramCredentialsRequest(upsertions=[_upsert(iterations=4095)]),
            ErrorCode.UNACCEPTABLE_CREDENTIAL,
            "Too few iterations",
        ),
        (
            AlterUserScramCredentialsRequest(upsertions=[_upsert(iterations=16385)]),
            ErrorCode.UNACCEPTABLE_CREDENTIAL,
            "Too many iterations",
        ),
        (
            AlterUserScramCredentialsRequest(upsertions=[_upsert(mechanism=3)]),
            ErrorCode.UNSUPPORTED_SASL_MECHANISM,
            "Unknown SCRAM mechanism",
        ),
        (
            AlterUserScramCredentialsRequest(upsertions=[_upsert(name="")]),
            ErrorCode.UNACCEPTABLE_CREDENTIAL,
            "Username must not be empty",
        ),
        (
            AlterUserScramCredentialsRequest(deletions=[ScramCredentialDeletion(name="alice", mechanism=1)]),
            ErrorCode.RESOURCE_NOT_FOUND,
            "Attempt to delete a user credential that does not exist",
        ),
        (
            AlterUserScramCredentialsRequest(upsertions=[_upsert(), _upsert(mechanism=2)]),
            ErrorCode.DUPLICATE_RESOURCE,
            "A user credential cannot be altered twice in the same request",
        ),
    ],
)
def test_scram_refuses_what_kafka_refuses(
    req: AlterUserScramCredentialsRequest, code: ErrorCode, message: str
) -> None:
    records, results = scram.alter_credentials(_image(), req)
    assert records == [] and [(c, m) for _, c, m in results] == [(code, message)]


def test_scram_needs_metadata_version_3_5_iv2() -> None:
    records, results = scram.alter_credentials(
        _image(mv=10), AlterUserScramCredentialsRequest(upsertions=[_upsert()])
    )
    assert records == [] and results == [
        ("alice", ErrorCode.UNSUPPORTED_VERSION, "The current metadata.version does not support SCRAM")
    ]


# ---- delegation tokens --------------------------------------------------------------------------------------------

SETTINGS = tokens.TokenSettings(secret_key="s3cret", max_lifetime_ms=10_000, expiry_time_ms=1_000)


def _token(
    image: MetadataImage, owner: str = "User:alice", renewers: tuple[str, ...] = ()
) -> tuple[Any, bytes]:
    req = CreateDelegationTokenRequest(
        renewers=[CreatableRenewers(principal_type="User", principal_name=r) for r in renewers]
    )
    out, who = tokens.create(image, SETTINGS, req, owner, 100_000, random.Random(5))
    assert out.error == ErrorCode.NONE and who == owner
    _apply(image, out.records)
    return out.record, out.hmac


def test_create_token_times_and_hmac() -> None:
    image = _image()
    record, mac = _token(image, renewers=("bob",))
    assert (record.issue_timestamp, record.expiration_timestamp, record.max_timestamp) == (
        100_000,
        101_000,
        110_000,
    )
    assert record.renewers == ["User:bob"] and record.owner == record.requester == "User:alice"
    assert mac == hmac.new(b"s3cret", record.token_id.encode(), hashlib.sha512).digest()
    assert len(record.token_id) == 22 and not record.token_id.startswith("-")
    assert dict(image.delegation_tokens) == {record.token_id: record}


def test_token_gates_and_principal_types() -> None:
    req = CreateDelegationTokenRequest()
    assert tokens.create(_image(), tokens.TokenSettings(), req, "User:a", 0, random.Random())[0].error == (
        ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    )
    assert (
        tokens.create(_image(mv=13), SETTINGS, req, "User:a", 0, random.Random())[0].error
        == ErrorCode.UNSUPPORTED_VERSION
    )
    bad = CreateDelegationTokenRequest(
        renewers=[CreatableRenewers(principal_type="Group", principal_name="g")]
    )
    assert (
        tokens.create(_image(), SETTINGS, bad, "User:a", 0, random.Random())[0].error
        == ErrorCode.INVALID_PRINCIPAL_TYPE
    )


def test_renew_and_expire_follow_owner_renewers_and_time() -> None:
    image = _image()
    record, mac = _token(image, renewers=("bob",))
    assert (
        tokens.renew(image, SETTINGS, b"nope", 0, "User:alice", 100_500).error
        == ErrorCode.DELEGATION_TOKEN_NOT_FOUND
    )
    assert (
        tokens.renew(image, SETTINGS, mac, 0, "User:eve", 100_500).error
        == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    )
    out = tokens.renew(image, SETTINGS, mac, 500, "User:bob", 100_800)
    assert out.error == ErrorCode.NONE and out.expiry_ms == 101_300
    _apply(image, out.records)
    assert image.delegation_tokens[record.token_id].expiration_timestamp == 101_300
    assert (
        tokens.renew(image, SETTINGS, mac, 0, "User:alice", 101_301).error
        == ErrorCode.DELEGATION_TOKEN_EXPIRED
    )
    out = tokens.expire(image, SETTINGS, mac, 100, "User:alice", 101_000)
    assert out.error == ErrorCode.NONE and out.expiry_ms == 101_100
    assert tokens.sweep(image, 101_200) == []
    _apply(image, out.records)
    assert [r.token_id for r in tokens.sweep(image, 101_200)] == [record.token_id]
    out = tokens.expire(image, SETTINGS, mac, -1, "User:alice", 101_000)
    assert out.expiry_ms == 101_000
    _apply(image, out.records)
    assert dict(image.delegation_tokens) == {}


def test_forwarded_principal_is_read_from_the_envelope() -> None:
    data = struct.pack(">h", 0) + DefaultPrincipalData(type="User", name="alice").encode(0)
    assert forwarded_principal(data) == "User:alice"
    assert forwarded_principal(None) == "User:ANONYMOUS"


# ---- replay and snapshots -----------------------------------------------------------------------------------------


def test_security_records_survive_framing_and_replay_into_an_equal_image() -> None:
    """What a snapshot holds is the framed records; a fresh image replayed from them equals the original."""
    image = _populated()
    s_records, _ = scram.alter_credentials(image, AlterUserScramCredentialsRequest(upsertions=[_upsert()]))
    q_records, _ = quotas.alter_client_quotas(image, [_entry([("user", "a")], ("producer_byte_rate", 7.0))])
    _apply(image, s_records + q_records)
    _token(image)
    d_records, _ = acls.delete_acls(image, [_filter(resource_type=GROUP)])
    _apply(image, d_records)
    framed = [encode_record(a, 0) for a in image.acls.values()]
    framed += [
        encode_record(r, 0) for r in (*image.scram.values(), *image.delegation_tokens.values(), *q_records)
    ]
    replayed = _image()
    for value in framed:
        key, version, obj = decode_metadata_record(value)
        apply_record(replayed, replayed.offset + 1, key, version, obj)
    assert (replayed.acls, replayed.scram, replayed.delegation_tokens, replayed.quotas) == (
        image.acls,
        image.scram,
        image.delegation_tokens,
        image.quotas,
    )
    assert len(replayed.acls) == 3
