"""The one table of the APIs this node serves on its controller listener (issue 23).

Contracts:
1. :data:`TABLE` maps each served api key to an :class:`Api`: the part of the node that answers it, whether
   only the active controller answers it, whether a Kafka 4.3.1 broker forwards it inside an Envelope, and how
   it is authorized (a kwire.authz :class:`Rule`, another one inside an Envelope where Kafka's ControllerApis
   differs). Nothing else lists served APIs: ApiVersions advertising (:func:`supported_versions`, every served
   API at its full generated range), dispatch (kraftd.shell.apis.routing), the forwardable set
   (:data:`FORWARDABLE`, the versions an Envelope's inner request may have) and the authorizer's rules
   (:data:`RULES`, :data:`FORWARDED_RULES`) are all read from it.
2. An Envelope's inner request re-enters the same table (dispatch and authorization) with the forwarded
   principal; only APIs marked ``forwarded`` may be inside one.
3. ``leader_only`` APIs are answered NOT_CONTROLLER (in the API's own error shape) by a node that is not the
   active controller; the others are answered by any controller (the Raft RPCs, reads behind a read barrier).
4. Each API of a controller part (brokers, topics, partitions, security) names its one handler, ``op``: a method
   of that part taking (request, version, principal); nothing dispatches by api key again inside a part.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from generated.messages import API_SPECS, ApiKey
from kwire.authz import (
    ALTER,
    ALTER_CONFIGS,
    CLUSTER_ACTION,
    CREATE,
    CREATE_TOKENS,
    DELETE,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    ON_CONFIGS,
    ON_NOTHING,
    ON_TOKEN_OWNER,
    ON_TOPICS,
    Rule,
    RuleBook,
)


class Part(Enum):
    """Who answers an API (kraftd.shell.node binds each part to its handler)."""

    CORE = "core"  # the Raft core (kraftd.core), through the driver
    SHELL = "shell"  # the shell's own answers from the cluster view (kraftd.shell.apis.handlers)
    VERSIONS = "versions"  # ApiVersions, answered by the listener itself (kwire.server)
    READS = "reads"  # DescribeConfigs behind the read barrier (kraftd.shell.raft.reads)
    BROKERS = "brokers"  # broker and controller lifecycle (kraftd.shell.controller.broker_rpcs)
    TOPICS = "topics"  # topics, configs, features (kraftd.shell.controller.topic_admin)
    PARTITIONS = "partitions"  # configs, elections, reassignments (kraftd.shell.controller.partition_admin)
    SECURITY = "security"  # ACLs, quotas, SCRAM, delegation tokens (kraftd.shell.controller.security_admin)
    APPEND = "append"  # kraftd's own KraftdAppend (kraftd.shell.apis.append)
    ENVELOPE = "envelope"  # a broker's forwarded request (kraftd.shell.apis.routing contract 11)


@dataclass(frozen=True, slots=True)
class Api:
    key: ApiKey
    part: Part
    rule: Rule | None  # None: never authorized (kwire.authz contract 5)
    leader_only: bool = False
    forwarded: str | None = None  # where Kafka 4.3.1's KafkaApis forwards it to the active controller
    forwarded_rule: Rule | None = None  # inside an Envelope, when it differs (kwire.authz contract 6)
    op: str = ""  # the part's one handler of this API (contract 4), where the part answers several

    @property
    def versions(self) -> tuple[int, int]:
        spec = API_SPECS[self.key]
        return spec.lowest_version, spec.highest_version


K = ApiKey
_CA, _FWD = Rule(CLUSTER_ACTION), "handle -> forwardToController"
_APIS = (
    Api(K.API_VERSIONS, Part.VERSIONS, None),
    Api(K.METADATA, Part.SHELL, None),
    # The Raft RPCs (KIP-595, KIP-853) and kraftd's ReadOffset (KIP-650 draft key).
    Api(K.FETCH, Part.CORE, _CA),  # of __cluster_metadata, by voters and observers
    Api(K.VOTE, Part.CORE, _CA),
    Api(K.BEGIN_QUORUM_EPOCH, Part.CORE, _CA),
    Api(K.END_QUORUM_EPOCH, Part.CORE, _CA),
    Api(K.FETCH_SNAPSHOT, Part.CORE, _CA),
    Api(K.ADD_RAFT_VOTER, Part.CORE, Rule(ALTER), forwarded=_FWD),
    Api(K.REMOVE_RAFT_VOTER, Part.CORE, Rule(ALTER), forwarded=_FWD),
    Api(K.UPDATE_RAFT_VOTER, Part.CORE, _CA),
    Api(K.READ_OFFSET, Part.CORE, Rule(ALTER)),
    Api(K.DESCRIBE_QUORUM, Part.SHELL, Rule(DESCRIBE), forwarded=_FWD),
    Api(K.DESCRIBE_CLUSTER, Part.SHELL, Rule(ALTER)),  # ALTER on a controller (Describe is the broker's rule)
    Api(K.DESCRIBE_CONFIGS, Part.READS, Rule(DESCRIBE_CONFIGS, ON_CONFIGS)),
    # Broker and controller lifecycle.
    Api(K.BROKER_REGISTRATION, Part.BROKERS, _CA, leader_only=True, op="register_broker"),
    Api(K.BROKER_HEARTBEAT, Part.BROKERS, _CA, leader_only=True, op="heartbeat"),
    Api(
        K.UNREGISTER_BROKER,
        Part.BROKERS,
        Rule(ALTER),
        leader_only=True,
        forwarded=_FWD,
        op="unregister_broker",
    ),
    Api(K.CONTROLLER_REGISTRATION, Part.BROKERS, _CA, leader_only=True, op="register_controller"),
    Api(K.ALLOCATE_PRODUCER_IDS, Part.BROKERS, _CA, leader_only=True, op="allocate_producer_ids"),
    Api(K.ALTER_PARTITION, Part.BROKERS, _CA, leader_only=True, op="alter_partition"),
    Api(K.ASSIGN_REPLICAS_TO_DIRS, Part.BROKERS, _CA, leader_only=True, op="assign_replicas_to_dirs"),
    # Topics, configs, features.
    Api(
        K.CREATE_TOPICS, Part.TOPICS, Rule(CREATE, ON_TOPICS, or_cluster=True), True, _FWD, op="create_topics"
    ),
    Api(
        K.DELETE_TOPICS, Part.TOPICS, Rule(DELETE, ON_TOPICS, or_cluster=True), True, _FWD, op="delete_topics"
    ),
    Api(K.CREATE_PARTITIONS, Part.TOPICS, Rule(ALTER, ON_TOPICS), True, _FWD, op="create_partitions"),
    Api(
        K.INCREMENTAL_ALTER_CONFIGS,
        Part.TOPICS,
        Rule(ALTER_CONFIGS, ON_CONFIGS),
        True,
        "handleIncrementalAlterConfigsRequest -> forwardingManager (all but BROKER_LOGGER)",
        op="incremental_alter_configs",
    ),
    Api(K.UPDATE_FEATURES, Part.TOPICS, Rule(ALTER), True, _FWD, op="update_features"),
    Api(
        K.ALTER_CONFIGS,
        Part.PARTITIONS,
        Rule(ALTER_CONFIGS, ON_CONFIGS),
        True,
        "handleAlterConfigsRequest -> forwardingManager (all but BROKER_LOGGER)",
        op="alter_configs",
    ),
    Api(K.ELECT_LEADERS, Part.PARTITIONS, Rule(ALTER), True, _FWD, op="elect_leaders"),
    Api(K.ALTER_PARTITION_REASSIGNMENTS, Part.PARTITIONS, Rule(ALTER), True, _FWD, op="alter_reassignments"),
    Api(K.LIST_PARTITION_REASSIGNMENTS, Part.PARTITIONS, Rule(DESCRIBE), True, _FWD, op="list_reassignments"),
    # ACLs, quotas, SCRAM, delegation tokens (sent directly: ALTER on the cluster, kwire.authz contract 5).
    # DescribeAcls: the committed image, on any controller.
    Api(K.DESCRIBE_ACLS, Part.SECURITY, Rule(DESCRIBE), op="describe_acls"),
    Api(K.CREATE_ACLS, Part.SECURITY, Rule(ALTER), True, _FWD, op="create_acls"),
    Api(K.DELETE_ACLS, Part.SECURITY, Rule(ALTER), True, _FWD, op="delete_acls"),
    Api(K.ALTER_CLIENT_QUOTAS, Part.SECURITY, Rule(ALTER_CONFIGS), True, _FWD, op="alter_client_quotas"),
    Api(K.ALTER_USER_SCRAM_CREDENTIALS, Part.SECURITY, Rule(ALTER), True, _FWD, op="alter_scram"),
    Api(
        K.CREATE_DELEGATION_TOKEN,
        Part.SECURITY,
        Rule(ALTER),
        True,
        "handleCreateTokenRequest -> forwardToController",
        Rule(CREATE_TOKENS, ON_TOKEN_OWNER),
        op="create_token",
    ),
    Api(
        K.RENEW_DELEGATION_TOKEN,
        Part.SECURITY,
        Rule(ALTER),
        True,
        "handleRenewTokenRequest -> forwardToController",
        Rule(DESCRIBE, ON_NOTHING),
        op="renew_token",
    ),
    Api(
        K.EXPIRE_DELEGATION_TOKEN,
        Part.SECURITY,
        Rule(ALTER),
        True,
        "handleExpireTokenRequest -> forwardToController",
        Rule(DESCRIBE, ON_NOTHING),
        op="expire_token",
    ),
    Api(K.KRAFTD_APPEND, Part.APPEND, Rule(ALTER)),
    Api(K.ENVELOPE, Part.ENVELOPE, _CA, leader_only=True),  # the broker's own principal
)
TABLE: Mapping[int, Api] = {int(a.key): a for a in _APIS}
# Contract 1: what the listener advertises and parses; what an Envelope may carry; the authorizer's rules.
SERVED: Mapping[int, tuple[int, int]] = {k: a.versions for k, a in TABLE.items()}
FORWARDED: Mapping[int, str] = {
    k: f"{API_SPECS[k].name}: {a.forwarded}" for k, a in TABLE.items() if a.forwarded
}
FORWARDABLE: Mapping[int, tuple[int, int]] = {k: SERVED[k] for k in FORWARDED}
RULES: Mapping[int, Rule] = {k: a.rule for k, a in TABLE.items() if a.rule is not None}
FORWARDED_RULES: Mapping[int, Rule] = {
    k: a.forwarded_rule or a.rule for k, a in TABLE.items() if a.rule is not None
}
LEADER_ONLY = frozenset(k for k, a in TABLE.items() if a.leader_only)


def supported_versions() -> dict[int, tuple[int, int]]:
    """Contract 1: ApiVersions' ApiKeys."""
    return dict(SERVED)


RULE_BOOK = RuleBook(RULES, FORWARDED_RULES)  # the authorizer's rules (kwire.authz contracts 4, 6)
