"""Forwarded requests are authorized with the client's principal (issue 21 §2), through a real Kafka 4.3.1 broker.

kraftd.testing.broker_cluster: controllers with an ACL authorizer (``allow.everyone.if.no.acl.found=false``,
``User:ANONYMOUS`` the only super user); the broker has no authorizer and forwards each admin request inside an
Envelope with the client's principal. ``User:alice`` (SASL PLAIN) has no ACLs.

Invariants, on three kraftd controllers and on three Kafka controllers, with the same answers on both:
1. alice is refused create topics, create partitions, delete topics, alter configs, incremental alter configs,
   elect leaders and alter partition reassignments (and list partition reassignments, delete ACLs, alter SCRAM
   credentials, update features): TOPIC_AUTHORIZATION_FAILED for her topic entries, CLUSTER_AUTHORIZATION_FAILED
   for the cluster-level APIs; nothing changes (no topic created or deleted, the partition count and configs as
   they were).
2. After one ACL per operation (created through the broker by the super user), each of the same requests is
   served.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kraftd.testing import broker_cluster
from kraftd.testing.broker_cluster import BrokerCluster
from tests.interop.kafka import classpath

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(600)]
TOPICS = ("parts", "doomed", "conf", "iconf", "elect", "moves")
SEEN: dict[tuple[str, str], dict[str, str]] = {}  # (phase, kind) -> operation -> outcome


@pytest.fixture(scope="module", params=["kafka", "kraftd"])
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BrokerCluster]:
    from kafka.admin import KafkaAdminClient

    classpath()
    c = broker_cluster.start(tmp_path_factory.mktemp(f"authz-{request.param}"), request.param)
    try:
        admin = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=30000)
        admin.create_topics({t: {"num_partitions": 1, "replication_factor": 1} for t in TOPICS})
        # The broker learns the topics from the metadata log after they commit: wait, so that a test's "before"
        # state is not read from a broker still behind (seen under load: 'parts' with 0 partitions).
        deadline = time.monotonic() + 60
        while not set(TOPICS) <= set(admin.list_topics()) and time.monotonic() < deadline:
            time.sleep(0.2)
        admin.close()
        yield c
    finally:
        c.stop()


def _alice(c: BrokerCluster) -> Any:
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(
        bootstrap_servers=c.sasl_bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username="alice",
        sasl_plain_password="alice-secret",
        request_timeout_ms=30000,
    )


def _codes(result: Any) -> list[int]:
    """Every error code in a kafka-python answer (responses, dicts, lists), in order."""
    out: list[int] = []
    if isinstance(result, dict):
        for k, v in result.items():
            if k == "error_code" and isinstance(v, int):
                out.append(v)
            else:
                out += _codes(v)
    elif isinstance(result, list | tuple):
        for v in result:
            out += _codes(v)
    elif hasattr(result, "to_object"):
        out += _codes(result.to_object())
    elif hasattr(result, "__dict__"):
        out += _codes(vars(result))
    return out


def _outcome(call: Callable[[], Any]) -> str:
    """ "ok", or the names of the errors a request met (kafka-python's exception class or error codes)."""
    from kafka.errors import for_code

    try:
        result = call()
    except Exception as exc:  # noqa: BLE001 - the outcome is the error's name
        return type(exc).__name__
    text = repr(result)  # alter_configs: an "[Error N] Name" per resource; delete_acls: error classes
    named = re.findall(r"\[Error \d+\] (\w+)", text) + re.findall(r"kafka\.errors\.(\w+)'>", text)
    failed = sorted(({for_code(c).__name__ for c in _codes(result) if c} | set(named)) - {"NoError"})
    return ",".join(failed) or "ok"


def _matrix(alice: Any) -> dict[str, Callable[[], Any]]:
    from kafka import TopicPartition
    from kafka.admin import (
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ConfigResource,
        ConfigResourceType,
        ResourcePatternFilter,
        ResourceType,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    nobody = ACLFilter(
        "User:nobody",
        "*",
        ACLOperation.ANY,
        ACLPermissionType.ANY,
        ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
    )
    carol = UserScramCredentialUpsertion("carol", ScramMechanism.SCRAM_SHA_256, "carol-pw", iterations=4096)

    def alter(name: str, incremental: bool) -> Any:
        resource = ConfigResource(ConfigResourceType.TOPIC, name, configs={"retention.ms": "1000"})
        return alice.alter_configs([resource], incremental=incremental)

    return {
        "create topics": lambda: alice.create_topics(
            {"alice-new": {"num_partitions": 1, "replication_factor": 1}}
        ),
        "create partitions": lambda: alice.create_partitions({"parts": 2}),
        "delete topics": lambda: alice.delete_topics(["doomed"]),
        "alter configs": lambda: alter("conf", False),
        "incremental alter configs": lambda: alter("iconf", True),
        "elect leaders": lambda: alice.elect_leaders(0, {"elect": [0]}),
        "alter partition reassignments": lambda: alice.alter_partition_reassignments(
            {TopicPartition("moves", 0): [broker_cluster.BROKER_ID]}
        ),
        # the other forwarded APIs kafka-python sends (docs/INTEROP.md lists all 20)
        "list partition reassignments": lambda: alice.list_partition_reassignments(),
        "delete acls": lambda: alice.delete_acls([nobody]),
        "alter user scram credentials": lambda: _refused_if_message(
            alice.alter_user_scram_credentials([carol])
        ),
        "update features": lambda: alice.update_features({"group.version": 1}),
    }


def _refused_if_message(result: dict[str, str | None]) -> dict[str, str | None]:
    """alter_user_scram_credentials answers user -> error message (the controller's own words): any message
    is a refusal."""
    if any(result.values()):
        raise PermissionError(str(result))
    return result


def _until_served(call: Callable[[], Any], timeout: float = 30) -> str:
    """The broker and the controllers apply a new ACL shortly after it commits: retry while refused."""
    deadline = time.monotonic() + timeout
    while True:
        outcome = _outcome(call)
        if "AuthorizationFailed" not in outcome or time.monotonic() > deadline:
            return outcome
        time.sleep(1)


def _grant(c: BrokerCluster) -> None:
    """One ALLOW per operation of the matrix, for alice, created through the broker by the super user."""
    from kafka.admin import (
        ACL,
        ACLOperation,
        ACLPermissionType,
        KafkaAdminClient,
        ResourcePattern,
        ResourceType,
    )

    def allow(op: ACLOperation, rtype: ResourceType, name: str) -> ACL:
        return ACL("User:alice", "*", op, ACLPermissionType.ALLOW, ResourcePattern(rtype, name))

    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=30000)
    try:
        created = admin.create_acls(
            [
                allow(ACLOperation.CREATE, ResourceType.TOPIC, "alice-new"),
                allow(ACLOperation.ALTER, ResourceType.TOPIC, "parts"),
                allow(ACLOperation.DELETE, ResourceType.TOPIC, "doomed"),
                allow(ACLOperation.ALTER_CONFIGS, ResourceType.TOPIC, "conf"),
                allow(ACLOperation.ALTER_CONFIGS, ResourceType.TOPIC, "iconf"),
                allow(ACLOperation.ALTER, ResourceType.CLUSTER, "kafka-cluster"),
            ]
        )
        assert not created["failed"], created
    finally:
        admin.close()


def _state(c: BrokerCluster) -> dict[str, Any]:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=30000)
    try:
        names = set(admin.list_topics())
        parts = {t["name"]: len(t["partitions"]) for t in admin.describe_topics(["parts"])}
        configs = admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, n) for n in ("conf", "iconf")]
        )
        return {"topics": sorted(names & {"alice-new", "doomed"}), "parts": parts, "configs": str(configs)}
    finally:
        admin.close()


def _compare(phase: str, c: BrokerCluster, got: dict[str, str]) -> None:
    SEEN[(phase, c.kind)] = got
    other = SEEN.get((phase, "kafka" if c.kind == "kraftd" else "kraftd"))
    if other is not None:
        assert got == other, f"{phase}: {c.kind} {got} vs the other kind {other}"


_TOOLS = {  # Kafka's own tools as an operator runs them, through the broker's SASL listener as alice
    "kafka-topics --create": (
        "org.apache.kafka.tools.TopicCommand",
        ["--create", "--topic", "alice-tool", "--partitions", "1", "--replication-factor", "1"],
    ),
    "kafka-topics --alter": (
        "org.apache.kafka.tools.TopicCommand",
        ["--alter", "--topic", "parts", "--partitions", "4"],
    ),
    "kafka-topics --delete": ("org.apache.kafka.tools.TopicCommand", ["--delete", "--topic", "doomed"]),
    "kafka-configs --alter": (
        "kafka.admin.ConfigCommand",
        ["--alter", "--entity-type", "topics", "--entity-name", "conf", "--add-config", "retention.ms=1000"],
    ),
    "kafka-leader-election": (
        "org.apache.kafka.tools.LeaderElectionCommand",
        ["--election-type", "preferred", "--all-topic-partitions"],
    ),
    "kafka-metadata-quorum describe": (
        "org.apache.kafka.tools.MetadataQuorumCommand",
        ["describe", "--status"],
    ),
    "kafka-features describe": ("org.apache.kafka.tools.FeatureCommand", ["describe"]),
}


def _first_error_line(text: str) -> str:
    """The exception a tool reports (its class and message), without stack frames, ports or ids."""
    lines = [ln.strip() for ln in text.splitlines() if not ln.strip().startswith("at ")]
    found = [ln for ln in lines if "Exception:" in ln] or [
        ln for ln in lines if "Error" in ln or "failed" in ln
    ]
    line = found[0] if found else ""
    line = re.sub(r"^\[[^\]]*\] ", "", line)  # a log line's timestamp
    return re.sub(r"127\.0\.0\.1:\d+", "<addr>", line)


def test_kafkas_tools_as_alice_through_the_broker_are_refused_as_on_kafkas_controllers(
    cluster: BrokerCluster, tmp_path: Path
) -> None:
    """Issue 21 §7: an ordinary principal runs Kafka's tools with --bootstrap-server at the broker before she has
    any ACL: the same exit codes and errors as on Kafka's controllers, and nothing written."""
    from tests.interop.kafka import run_tool

    config = cluster.client_config("alice", tmp_path / "alice.properties")
    before = _state(cluster)
    got: dict[str, str] = {}
    for name, (main, args) in _TOOLS.items():
        res = run_tool(
            main,
            ["--bootstrap-server", cluster.sasl_bootstrap, "--command-config", str(config), *args],
            workdir=tmp_path,
            timeout=90,
        )
        got[name] = f"exit {res.returncode}: {_first_error_line(res.stdout + res.stderr)}"
    assert got["kafka-features describe"].startswith("exit 0"), got  # ApiVersions needs no ACL
    refused = [n for n in _TOOLS if n != "kafka-features describe"]
    for name in refused:
        assert not got[name].startswith("exit 0") and "uthoriz" in got[name], (name, got)
    _compare("tools", cluster, got)
    assert _state(cluster) == before


def test_alice_is_refused_then_served_after_an_acl(cluster: BrokerCluster) -> None:
    alice = _alice(cluster)
    try:
        before = _state(cluster)
        denied = {op: _outcome(call) for op, call in _matrix(alice).items()}
        assert denied == {
            "create topics": "TopicAuthorizationFailedError",
            "create partitions": "TopicAuthorizationFailedError",
            "delete topics": "TopicAuthorizationFailedError",
            "alter configs": "TopicAuthorizationFailedError",
            "incremental alter configs": "TopicAuthorizationFailedError",
            "elect leaders": "ClusterAuthorizationFailedError",
            "alter partition reassignments": "ClusterAuthorizationFailedError",
            "list partition reassignments": "ClusterAuthorizationFailedError",
            "delete acls": "ClusterAuthorizationFailedError",
            "alter user scram credentials": "PermissionError",
            "update features": "ClusterAuthorizationFailedError",
        }, denied
        _compare("denied", cluster, denied)
        assert _state(cluster) == before  # nothing written for a refused request
        _grant(cluster)
        allowed = {op: _until_served(call) for op, call in _matrix(alice).items()}
        _compare("allowed", cluster, allowed)
        assert "AuthorizationFailed" not in "".join(allowed.values()), allowed
    finally:
        alice.close()
