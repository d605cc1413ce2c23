"""Facts about the JSON specs in messages/ themselves (independent of the generated code).

Invariants:
1. One spec per file, named like Kafka's (<Name>.json); no 2026 "headerVersions" key (no release has it).
2. API keys, version ranges, flexible versions and listeners are the ones Kafka shipped (PROTOCOL-FACTS §1),
   and a request and its response agree on key and versions.
3. ReadOffset (KIP-650, never shipped) uses an api key far from Kafka's dense 0..~100 range.
4. Port is uint16 in the raft endpoint structs and int32 where Kafka uses int32 (PROTOCOL-FACTS §9.4).
5. Every field has an "about" of our own: none equals Kafka's text for the same field where kafka-python
   vendors Kafka's JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "messages"
KAFKA_JSON = ROOT / ".venv/lib/python3.11/site-packages/kafka/protocol/schemas/resources"


def _strip_comments(text: str) -> str:
    """Drop // comments outside string literals."""
    out: list[str] = []
    i, n, in_str = 0, len(text), False
    while i < n:
        ch = text[i]
        if in_str:
            out.append(ch)
            if ch == "\\":
                out.append(text[i + 1])
                i += 2
                continue
            in_str = ch != '"'
        elif ch == '"':
            in_str = True
            out.append(ch)
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_strip_comments(path.read_text()))
    return data


ALL = {p.stem: load(p) for p in sorted(SPECS.glob("*.json"))}


def walk(fields: list[dict[str, Any]], prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    for f in fields:
        path = f"{prefix}{f['name']}"
        yield path, f
        yield from walk(f.get("fields", []), path + ".")


def all_fields(spec: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    yield from walk(spec["fields"])
    for common in spec.get("commonStructs", []):
        yield from walk(common["fields"], common["name"] + ".")


# name -> (apiKey, validVersions, flexibleVersions, listeners)
APIS: dict[str, tuple[int, str, str, list[str]]] = {
    "ApiVersions": (18, "0-4", "3+", ["broker", "controller"]),
    "Fetch": (1, "4-18", "12+", ["broker", "controller"]),
    "Metadata": (3, "4-13", "9+", ["broker"]),
    "SaslHandshake": (17, "0-1", "none", ["broker", "controller"]),
    "SaslAuthenticate": (36, "0-2", "2+", ["broker", "controller"]),
    "Vote": (52, "0-2", "0+", ["controller"]),
    "BeginQuorumEpoch": (53, "0-1", "1+", ["controller"]),
    "EndQuorumEpoch": (54, "0-1", "1+", ["controller"]),
    "DescribeQuorum": (55, "0-2", "0+", ["broker", "controller"]),
    "UpdateFeatures": (57, "0-2", "0+", ["broker", "controller"]),
    "FetchSnapshot": (59, "0-1", "0+", ["controller"]),
    "DescribeCluster": (60, "0-2", "0+", ["broker", "controller"]),
    "AlterConfigs": (33, "0-2", "2+", ["broker", "controller"]),
    "ElectLeaders": (43, "0-2", "2+", ["broker", "controller"]),
    "AlterPartitionReassignments": (45, "0-1", "0+", ["broker", "controller"]),
    "ListPartitionReassignments": (46, "0", "0+", ["broker", "controller"]),
    "AddRaftVoter": (80, "0-1", "0+", ["controller", "broker"]),
    "RemoveRaftVoter": (81, "0", "0+", ["controller", "broker"]),
    "UpdateRaftVoter": (82, "0", "0+", ["controller"]),
    "ReadOffset": (650, "0", "0+", ["controller"]),
    "KraftdAppend": (651, "0", "0+", ["controller"]),
    # Controller RPCs of the metadata state machine (kafka-clients-4.3.1.jar common/message/*.json).
    "CreateTopics": (19, "2-7", "5+", ["broker", "controller"]),
    "DeleteTopics": (20, "1-6", "4+", ["broker", "controller"]),
    "CreatePartitions": (37, "0-3", "2+", ["broker", "controller"]),
    "IncrementalAlterConfigs": (44, "0-1", "1+", ["broker", "controller"]),
    "DescribeConfigs": (32, "1-4", "4+", ["broker", "controller"]),
    "AlterPartition": (56, "2-3", "0+", ["controller"]),
    "Envelope": (58, "0", "0+", ["controller"]),
    "BrokerRegistration": (62, "0-4", "0+", ["controller"]),
    "BrokerHeartbeat": (63, "0-2", "0+", ["controller"]),
    "AllocateProducerIds": (67, "0", "0+", ["controller"]),
    "UnregisterBroker": (64, "0", "0+", ["broker", "controller"]),
    "AssignReplicasToDirs": (73, "0", "0+", ["controller"]),
    "ControllerRegistration": (70, "0", "0+", ["controller"]),
    # Security metadata writes a broker forwards (kraftd.shell.controller.security_admin), same jar.
    "DescribeAcls": (29, "1-3", "2+", ["broker", "controller"]),
    "CreateAcls": (30, "1-3", "2+", ["broker", "controller"]),
    "DeleteAcls": (31, "1-3", "2+", ["broker", "controller"]),
    "AlterClientQuotas": (49, "0-1", "1+", ["broker", "controller"]),
    "AlterUserScramCredentials": (51, "0", "0+", ["broker", "controller"]),
    "CreateDelegationToken": (38, "1-3", "2+", ["broker", "controller"]),
    "RenewDelegationToken": (39, "1-2", "2+", ["broker", "controller"]),
    "ExpireDelegationToken": (40, "1-2", "2+", ["broker", "controller"]),
}
# KRaft metadata records as kafka-metadata-4.3.1.jar ships them: name -> (apiKey, validVersions); all flexible 0+.
METADATA = {
    "RegisterBrokerRecord": (0, "0-4"),
    "UnregisterBrokerRecord": (1, "0"),
    "TopicRecord": (2, "0"),
    "PartitionRecord": (3, "0-2"),
    "ConfigRecord": (4, "0"),
    "PartitionChangeRecord": (5, "0-2"),
    "FenceBrokerRecord": (7, "0"),
    "UnfenceBrokerRecord": (8, "0"),
    "RemoveTopicRecord": (9, "0"),
    "DelegationTokenRecord": (10, "0"),
    "UserScramCredentialRecord": (11, "0"),
    "FeatureLevelRecord": (12, "0"),
    "ClientQuotaRecord": (14, "0"),
    "ProducerIdsRecord": (15, "0"),
    "BrokerRegistrationChangeRecord": (17, "0-3"),
    "AccessControlEntryRecord": (18, "0"),
    "RemoveAccessControlEntryRecord": (19, "0"),
    "NoOpRecord": (20, "0"),
    "ZkMigrationRecord": (21, "0"),
    "RemoveUserScramCredentialRecord": (22, "0"),
    "BeginTransactionRecord": (23, "0"),
    "EndTransactionRecord": (24, "0"),
    "AbortTransactionRecord": (25, "0"),
    "RemoveDelegationTokenRecord": (26, "0"),
    "RegisterControllerRecord": (27, "0"),
    "ClearElrRecord": (28, "0"),
}
PRIVATE = ("ReadOffset", "KraftdAppend")  # kraftd's own RPCs, never shipped by Kafka
DATA = {
    "RequestHeader": ("header", "1-2", "2+"),
    "ResponseHeader": ("header", "0-1", "1+"),
    "LeaderChangeMessage": ("data", "0-1", "0+"),
    "VotersRecord": ("data", "0", "0+"),
    "KRaftVersionRecord": ("data", "0", "0+"),
    "SnapshotHeaderRecord": ("data", "0", "0+"),
    "SnapshotFooterRecord": ("data", "0", "0+"),
    "QuorumStateData": ("data", "0-1", "0+"),
    "DefaultPrincipalData": ("data", "0", "0+"),  # an Envelope's RequestPrincipal
}


def test_file_set() -> None:
    expected = {f"{a}{kind}" for a in APIS for kind in ("Request", "Response")} | set(DATA) | set(METADATA)
    assert set(ALL) == expected


@pytest.mark.parametrize("stem", sorted(METADATA))
def test_metadata_record_facts(stem: str) -> None:
    key, valid = METADATA[stem]
    spec = ALL[stem]
    assert (spec["type"], spec["apiKey"], spec["validVersions"], spec["flexibleVersions"]) == (
        "metadata",
        key,
        valid,
        "0+",
    )


@pytest.mark.parametrize("stem", sorted(ALL))
def test_file_named_after_spec_and_no_header_versions(stem: str) -> None:
    spec = ALL[stem]
    # ZkMigrationRecord.json holds ZkMigrationStateRecord, as Kafka's file does.
    assert spec["name"] == ("ZkMigrationStateRecord" if stem == "ZkMigrationRecord" else stem)
    assert "headerVersions" not in spec


@pytest.mark.parametrize("api", sorted(APIS))
def test_api_facts(api: str) -> None:
    key, valid, flexible, listeners = APIS[api]
    req, resp = ALL[api + "Request"], ALL[api + "Response"]
    assert (req["type"], resp["type"]) == ("request", "response")
    for spec in (req, resp):
        assert (spec["apiKey"], spec["validVersions"], spec["flexibleVersions"]) == (key, valid, flexible)
    assert req["listeners"] == listeners
    assert "listeners" not in resp


@pytest.mark.parametrize("name", sorted(DATA))
def test_data_and_header_facts(name: str) -> None:
    kind, valid, flexible = DATA[name]
    spec = ALL[name]
    assert (spec["type"], spec["validVersions"], spec["flexibleVersions"]) == (kind, valid, flexible)
    assert "apiKey" not in spec


@pytest.mark.parametrize("api", PRIVATE)
def test_private_keys_are_clear_of_kafka(api: str) -> None:
    key = ALL[api + "Request"]["apiKey"]
    kafka_keys = {s["apiKey"] for n, s in ALL.items() if "apiKey" in s and not n.startswith(PRIVATE)}
    assert key not in kafka_keys
    assert 200 <= key <= 32767  # well beyond Kafka's dense range (keys run into the 90s today)
    assert len({ALL[p + "Request"]["apiKey"] for p in PRIVATE}) == len(PRIVATE)


PORT_TYPES = {
    "VoteResponse": "uint16",
    "BeginQuorumEpochRequest": "uint16",
    "BeginQuorumEpochResponse": "uint16",
    "EndQuorumEpochRequest": "uint16",
    "EndQuorumEpochResponse": "uint16",
    "FetchSnapshotResponse": "uint16",
    "DescribeQuorumResponse": "uint16",
    "AddRaftVoterRequest": "uint16",
    "UpdateRaftVoterRequest": "uint16",
    "VotersRecord": "uint16",
    "ReadOffsetResponse": "uint16",
    "FetchResponse": "int32",
    "UpdateRaftVoterResponse": "int32",
    "DescribeClusterResponse": "int32",
    "MetadataResponse": "int32",
    # Broker and controller listeners of the metadata state machine: uint16, as Kafka ships them.
    "BrokerRegistrationRequest": "uint16",
    "ControllerRegistrationRequest": "uint16",
    "RegisterBrokerRecord": "uint16",
    "RegisterControllerRecord": "uint16",
}


def test_port_types() -> None:
    seen = {}
    for stem, spec in ALL.items():
        for path, f in all_fields(spec):
            if f["name"] == "Port":
                seen[stem] = f["type"]
                assert f["type"] == PORT_TYPES[stem], f"{stem}.{path}"
    assert seen == PORT_TYPES


def _field(stem: str, path: str) -> dict[str, Any]:
    return dict(all_fields(ALL[stem]))[path]


def test_tagged_and_flexible_quirks() -> None:
    assert _field("RequestHeader", "ClientId")["flexibleVersions"] == "none"
    fs_cluster = _field("FetchSnapshotRequest", "ClusterId")
    assert (fs_cluster["tag"], fs_cluster["taggedVersions"]) == (0, "0+")
    fetch_cluster = _field("FetchRequest", "ClusterId")
    assert (fetch_cluster["tag"], fetch_cluster["taggedVersions"]) == (0, "12+")
    assert "tag" not in _field("VoteRequest", "ClusterId")
    assert _field("FetchRequest", "Topics.Partitions.LastFetchedEpoch")["ignorable"] is False
    hwm = _field("FetchRequest", "Topics.Partitions.HighWatermark")
    assert (hwm["tag"], hwm["taggedVersions"], hwm["default"]) == (1, "18+", "9223372036854775807")
    assert "ignorable" not in _field("VoteRequest", "Topics.Partitions.PreVote")
    assert "PreVote" not in dict(all_fields(ALL["VoteResponse"]))  # v2 response body == v1


@pytest.mark.parametrize("stem", sorted(ALL))
def test_every_field_has_our_own_about(stem: str) -> None:
    kafka_path = KAFKA_JSON / f"{stem}.json"
    theirs = dict(all_fields(load(kafka_path))) if kafka_path.exists() else {}
    for path, f in all_fields(ALL[stem]):
        about = f.get("about", "")
        assert about.strip(), f"{stem}.{path} has no about"
        if path in theirs:
            assert about != theirs[path].get("about"), f"{stem}.{path} copies Kafka's about text"
