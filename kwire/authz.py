"""Authorization of requests on a listener: who the peer is (its principal) and what it may call.

Contracts:
1. A connection's principal follows Kafka's defaults: ``User:<name>`` after SASL, ``User:<subject DN>`` for a
   TLS client certificate (e.g. ``User:CN=admin``), ``User:ANONYMOUS`` otherwise.
2. :class:`Authorizer` is the interface (``authorize(principal, api_key, host, request) -> bool``).
   :class:`AclAuthorizer` grants everything to ``super.users`` and otherwise evaluates the ACL entries its
   source returns (the metadata image's AccessControlEntryRecords, converted by the shell) against the checks
   :func:`required_checks` derives from the request, as Kafka's controller (ControllerApis) asks them.
3. Evaluation of one (resource, operation) as Kafka's StandardAuthorizer: entries apply when their pattern
   matches the resource (LITERAL: same name or ``*``; PREFIXED: the name starts with it), their principal is the
   caller's or ``User:*``, their host the caller's or ``*``. A matching DENY for the operation (or ALL) wins;
   else a matching ALLOW for it, for ALL, or for an operation implying it (READ/WRITE/DELETE/ALTER imply
   DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS) allows. When no entry at all exists for the resource, the
   answer is ``allow.everyone.if.no.acl.found`` (default false); otherwise it is denied.
4. A request is allowed when every check passes; a check is a set of alternatives, any of which suffices
   (CreateTopics: CREATE on the cluster or CREATE on the topic).
4a. Requests made of per-topic or per-resource entries (CreateTopics, DeleteTopics, CreatePartitions,
   AlterConfigs, IncrementalAlterConfigs, DescribeConfigs) are decided per entry, as Kafka's ControllerApis
   does: :meth:`AclAuthorizer.denied_entries` names the entries refused (one check per entry, in the request's
   order; for DeleteTopics the names, then the name/id pairs, an id alone needing DELETE on the cluster), and
   the listener serves the rest (kwire.server contract 8).
5. ApiVersions and the SASL APIs are never subject to authorization (they come before a principal exists), nor
   is Metadata (it needs Describe on topics, and a controller holds none). Kafka's controller takes the
   delegation-token APIs only inside an Envelope (CLUSTER_ACTION, the broker's principal inside); sent directly,
   kraftd records the token for ``User:ANONYMOUS``, so it admits them only with ALTER on the cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

ANONYMOUS = "User:ANONYMOUS"
# ApiVersions, SaslHandshake, SaslAuthenticate, Metadata (contract 5).
UNAUTHORIZED_FREE = frozenset({18, 17, 36, 3})

CLUSTER, TOPIC = "CLUSTER", "TOPIC"
CLUSTER_NAME = "kafka-cluster"
CLUSTER_ACTION, DESCRIBE, ALTER = "CLUSTER_ACTION", "DESCRIBE", "ALTER"
CREATE, DELETE, ALL = "CREATE", "DELETE", "ALL"
ALTER_CONFIGS, DESCRIBE_CONFIGS = "ALTER_CONFIGS", "DESCRIBE_CONFIGS"
LITERAL, PREFIXED, WILDCARD = "LITERAL", "PREFIXED", "*"
IMPLIED_BY: Mapping[str, frozenset[str]] = {
    DESCRIBE: frozenset({"READ", "WRITE", DELETE, ALTER}),
    DESCRIBE_CONFIGS: frozenset({ALTER_CONFIGS}),
}

# The operation on the Cluster resource each cluster-level API needs (Kafka's ControllerApis / AclApis).
OPERATION_OF: Mapping[int, str] = {
    1: CLUSTER_ACTION,  # Fetch (of __cluster_metadata, by voters and observers)
    52: CLUSTER_ACTION,  # Vote
    53: CLUSTER_ACTION,  # BeginQuorumEpoch
    54: CLUSTER_ACTION,  # EndQuorumEpoch
    56: CLUSTER_ACTION,  # AlterPartition
    58: CLUSTER_ACTION,  # Envelope
    59: CLUSTER_ACTION,  # FetchSnapshot
    62: CLUSTER_ACTION,  # BrokerRegistration
    63: CLUSTER_ACTION,  # BrokerHeartbeat
    67: CLUSTER_ACTION,  # AllocateProducerIds
    70: CLUSTER_ACTION,  # ControllerRegistration
    73: CLUSTER_ACTION,  # AssignReplicasToDirs
    82: CLUSTER_ACTION,  # UpdateRaftVoter
    55: DESCRIBE,  # DescribeQuorum
    29: DESCRIBE,  # DescribeAcls
    46: DESCRIBE,  # ListPartitionReassignments
    60: ALTER,  # DescribeCluster: ALTER on a controller (Describe is the broker's rule)
    30: ALTER,  # CreateAcls
    31: ALTER,  # DeleteAcls
    43: ALTER,  # ElectLeaders
    45: ALTER,  # AlterPartitionReassignments
    51: ALTER,  # AlterUserScramCredentials
    57: ALTER,  # UpdateFeatures
    64: ALTER,  # UnregisterBroker
    80: ALTER,  # AddRaftVoter
    81: ALTER,  # RemoveRaftVoter
    49: ALTER_CONFIGS,  # AlterClientQuotas
    38: ALTER,  # CreateDelegationToken sent directly (contract 5)
    39: ALTER,  # RenewDelegationToken sent directly
    40: ALTER,  # ExpireDelegationToken sent directly
}
CONFIG_TOPIC, CONFIG_BROKER, CONFIG_BROKER_LOGGER = 2, 4, 8

Check = tuple[str, str, str]  # (resource type, resource name, operation)
Alternatives = tuple[Check, ...]


def required_checks(api_key: int, request: Any) -> list[Alternatives]:
    """Contract 4: the checks a request must pass (each a tuple of alternatives)."""

    def cluster(op: str) -> Check:
        return (CLUSTER, CLUSTER_NAME, op)

    if api_key in UNAUTHORIZED_FREE:
        return []
    if api_key == 19:  # CreateTopics
        return [(cluster(CREATE), (TOPIC, t.name, CREATE)) for t in request.topics]
    if api_key == 20:  # DeleteTopics: names (v0-5) or name/id pairs (v6+); an id alone needs the cluster
        names = list(request.topic_names) + [t.name for t in request.topics if t.name is not None]
        checks: list[Alternatives] = [(cluster(DELETE), (TOPIC, n, DELETE)) for n in names]
        if any(t.name is None for t in request.topics):
            checks.append((cluster(DELETE),))
        return checks
    if api_key == 37:  # CreatePartitions
        return [((TOPIC, t.name, ALTER),) for t in request.topics]
    if api_key in (33, 44, 32):  # AlterConfigs, IncrementalAlterConfigs, DescribeConfigs
        op = DESCRIBE_CONFIGS if api_key == 32 else ALTER_CONFIGS
        return [
            ((TOPIC, r.resource_name, op),) if r.resource_type == CONFIG_TOPIC else (cluster(op),)
            for r in request.resources
        ]
    return [(cluster(OPERATION_OF.get(api_key, ALTER)),)]


@dataclass(frozen=True, slots=True)
class AclEntry:
    """One ACL binding with Kafka's names (``TOPIC``, ``LITERAL``, ``User:alice``, ``DESCRIBE``)."""

    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    allow: bool

    def covers(self, resource_type: str, name: str) -> bool:
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == LITERAL:
            return self.resource_name in (name, WILDCARD)
        return self.pattern_type == PREFIXED and name.startswith(self.resource_name)


def evaluate(
    entries: Iterable[AclEntry], principal: str, host: str, check: Check, allow_if_no_acl: bool = False
) -> bool:
    """Contract 3 for one (resource, operation)."""
    resource_type, name, op = check
    found = allowed = False
    for e in entries:
        if not e.covers(resource_type, name):
            continue
        found = True
        if e.principal not in (principal, "User:*") or e.host not in (host, WILDCARD):
            continue
        if not e.allow:
            if e.operation in (op, ALL):
                return False
        elif e.operation in (op, ALL) or e.operation in IMPLIED_BY.get(op, ()):
            allowed = True
    return allowed or (not found and allow_if_no_acl)


AclSource = Callable[[], Iterable[AclEntry]]


class Authorizer(Protocol):
    def authorize(self, principal: str, api_key: int, host: str = WILDCARD, request: Any = None) -> bool: ...


PER_ENTRY_APIS = frozenset({19, 20, 37, 33, 44, 32})


def entry_checks(api_key: int, request: Any) -> list[Alternatives] | None:
    """Contract 4a: one check per entry of a per-entry request, in request order; None for other APIs."""
    if api_key not in PER_ENTRY_APIS or request is None:
        return None
    cluster = (CLUSTER, CLUSTER_NAME)
    if api_key == 19:
        return [((*cluster, CREATE), (TOPIC, t.name, CREATE)) for t in request.topics]
    if api_key == 20:
        names: list[Alternatives] = [((*cluster, DELETE), (TOPIC, n, DELETE)) for n in request.topic_names]
        return names + [
            ((*cluster, DELETE), (TOPIC, t.name, DELETE)) if t.name is not None else ((*cluster, DELETE),)
            for t in request.topics
        ]
    return required_checks(api_key, request)  # 37, 33, 44, 32: already one check per entry


def _no_acls() -> tuple[AclEntry, ...]:
    return ()


@dataclass(frozen=True)
class AclAuthorizer:
    super_users: frozenset[str]
    acls: AclSource = _no_acls
    allow_if_no_acl: bool = False  # allow.everyone.if.no.acl.found

    def authorize(self, principal: str, api_key: int, host: str = WILDCARD, request: Any = None) -> bool:
        if api_key in UNAUTHORIZED_FREE or principal in self.super_users:
            return True
        if request is None and api_key in (19, 20, 37, 33, 44, 32):
            checks: list[Alternatives] = [((CLUSTER, CLUSTER_NAME, ALTER),)]
        else:
            checks = required_checks(api_key, request)
        entries = list(self.acls())
        return all(
            any(evaluate(entries, principal, host, c, self.allow_if_no_acl) for c in alternatives)
            for alternatives in checks
        )

    def denied_entries(
        self, principal: str, api_key: int, host: str = WILDCARD, request: Any = None
    ) -> frozenset[int] | None:
        """Contract 4a: indexes of the entries refused; None when the API is not decided per entry."""
        checks = entry_checks(api_key, request)
        if checks is None:
            return None
        if principal in self.super_users:
            return frozenset()
        entries = list(self.acls())
        return frozenset(
            i
            for i, alternatives in enumerate(checks)
            if not any(evaluate(entries, principal, host, c, self.allow_if_no_acl) for c in alternatives)
        )


def parse_super_users(text: str | None) -> frozenset[str]:
    """``super.users``: principals separated by semicolons (``User:admin;User:CN=controller``)."""
    return frozenset(p.strip() for p in (text or "").split(";") if p.strip())


def tls_principal(peercert: Any) -> str | None:
    """``User:<DN>`` from ``ssl.getpeercert()`` (RFC 2253 order: most specific first), None without one."""
    if not peercert:
        return None
    rdns = []
    short = {
        "commonName": "CN",
        "organizationName": "O",
        "organizationalUnitName": "OU",
        "countryName": "C",
        "localityName": "L",
        "stateOrProvinceName": "ST",
    }
    for rdn in reversed(peercert.get("subject", ())):
        for key, value in rdn:
            rdns.append(f"{short.get(key, key)}={value}")
    return "User:" + ",".join(rdns) if rdns else None
