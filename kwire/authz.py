"""Authorization of requests on a listener: who the peer is (its principal) and what it may call.

Contracts:
1. A connection's principal follows Kafka's defaults: ``User:<name>`` after SASL, ``User:<subject DN>`` for a
   TLS client certificate (e.g. ``User:CN=admin``), ``User:ANONYMOUS`` otherwise.
2. :class:`Authorizer` is the interface (``authorize(principal, api_key, host, request, forwarded) -> bool``).
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
   (CreateTopics: CREATE on the cluster or CREATE on the topic). The checks come from one table,
   (api key -> :class:`Rule`: the operation and what it applies to, a :class:`RuleBook` the served APIs' table
   of kraftd.shell.apis.table writes), not from code per API. A config resource
   is checked on the topic or group it names, any other type on the cluster (:data:`CONFIG_ACL_RESOURCE`).
4a. Requests made of per-topic or per-resource entries (CreateTopics, DeleteTopics, CreatePartitions,
   AlterConfigs, IncrementalAlterConfigs, DescribeConfigs) are decided per entry, as Kafka's ControllerApis
   does: :meth:`AclAuthorizer.denied_entries` names the entries refused (one check per entry, in the request's
   order; for DeleteTopics the names, then the name/id pairs, an id alone needing DELETE on the cluster), and
   the listener serves the rest (kwire.server contract 8).
5. ApiVersions and the SASL APIs are never subject to authorization (they come before a principal exists), nor
   is Metadata (it needs Describe on topics, and a controller holds none). Kafka's controller takes the
   delegation-token APIs only inside an Envelope (CLUSTER_ACTION, the broker's principal inside); sent directly,
   kraftd records the token for ``User:ANONYMOUS``, so it admits them only with ALTER on the cluster.
6. A request a broker forwarded inside an Envelope (``forwarded``) is checked with the forwarded principal by the
   same rules, except the delegation-token APIs, which follow ControllerApis inside an Envelope
   (:attr:`RuleBook.forwarded`: CREATE_TOKENS on the owner, a USER resource, when it is not the requester; Renew and
   Expire need none, the controller checks the renewer).
7. :class:`Gate` puts an authorizer in front of a handler, so a listener's direct requests and the requests
   inside an Envelope are decided, split (4a) and refused by the same code.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

from kwire.resources import ConfigResourceType as CR

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

CREATE_TOKENS, USER = "CREATE_TOKENS", "USER"
# What a Rule's operation applies to (contract 4).
ON_CLUSTER, ON_TOPICS, ON_CONFIGS, ON_TOKEN_OWNER, ON_NOTHING = (
    "cluster",
    "topics",
    "configs",
    "owner",
    "nothing",
)


@dataclass(frozen=True, slots=True)
class Rule:
    """Contract 4: what a request of one API must be allowed, as Kafka's ControllerApis asks it: ``operation`` on
    the cluster (ON_CLUSTER); on each topic entry (ON_TOPICS; with ``or_cluster`` the operation on the cluster
    suffices too); on each config resource (ON_CONFIGS: a topic's own resource, the cluster for the other types);
    CREATE_TOKENS on the token's owner when it is not the requester (ON_TOKEN_OWNER); nothing (ON_NOTHING)."""

    operation: str
    on: str = ON_CLUSTER
    or_cluster: bool = False


@dataclass(frozen=True)
class RuleBook:
    """Contracts 4 and 6: api key -> Rule for requests sent directly and for those inside an Envelope. The
    served APIs' table (kraftd.shell.apis.table) writes it; an API not listed needs ALTER on the cluster."""

    direct: Mapping[int, Rule]
    forwarded: Mapping[int, Rule]

    def rule_of(self, api_key: int, forwarded: bool = False) -> Rule:
        return (self.forwarded if forwarded else self.direct).get(api_key, Rule(ALTER))

    @cached_property
    def per_entry(self) -> frozenset[int]:
        """Contract 4a: the APIs decided per entry."""
        return frozenset(k for k, r in self.direct.items() if r.on in (ON_TOPICS, ON_CONFIGS))


CONFIG_TOPIC, CONFIG_BROKER, CONFIG_GROUP = int(CR.TOPIC), int(CR.BROKER), int(CR.GROUP)
CONFIG_BROKER_LOGGER = int(CR.BROKER_LOGGER)
GROUP = "GROUP"
# Config resource type -> the ACL resource type its own name is checked on (ControllerApis
# authorizeAlterResource, ConfigHelper); any other type (BROKER, CLIENT_METRICS, ...): the cluster.
CONFIG_ACL_RESOURCE: Mapping[int, str] = {CONFIG_TOPIC: TOPIC, CONFIG_GROUP: GROUP}

Check = tuple[str, str, str]  # (resource type, resource name, operation)
Alternatives = tuple[Check, ...]


def required_checks(
    rules: RuleBook, api_key: int, request: Any, principal: str = ANONYMOUS, forwarded: bool = False
) -> list[Alternatives]:
    """Contract 4: the checks a request must pass (each a tuple of alternatives), from its Rule."""
    if api_key in UNAUTHORIZED_FREE:
        return []
    rule = rules.rule_of(api_key, forwarded)
    op, cluster = rule.operation, (CLUSTER, CLUSTER_NAME, rule.operation)
    if rule.on == ON_TOPICS:
        checks: list[Alternatives] = [
            (cluster, (TOPIC, n, op)) if rule.or_cluster else ((TOPIC, n, op),) for n in _topics(request)
        ]
        if api_key == 20 and any(t.name is None for t in request.topics):
            checks.append((cluster,))  # DeleteTopics by id alone
        return checks
    if rule.on == ON_CONFIGS:
        return [
            ((CONFIG_ACL_RESOURCE[r.resource_type], r.resource_name, op),)
            if r.resource_type in CONFIG_ACL_RESOURCE
            else (cluster,)
            for r in request.resources
        ]
    if rule.on == ON_TOKEN_OWNER:
        owner = f"{request.owner_principal_type}:{request.owner_principal_name}"
        return [((USER, owner, op),)] if request.owner_principal_name and owner != principal else []
    if rule.on == ON_NOTHING:
        return []
    return [(cluster,)]


def _topics(request: Any) -> list[str]:
    """The topic names of a per-topic request, in request order (DeleteTopics: names, then named pairs)."""
    if hasattr(request, "topic_names"):
        return list(request.topic_names) + [t.name for t in request.topics if t.name is not None]
    return [t.name for t in request.topics]


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
    def authorize(
        self, principal: str, api_key: int, host: str = WILDCARD, request: Any = None, forwarded: bool = False
    ) -> bool: ...


def entry_checks(rules: RuleBook, api_key: int, request: Any) -> list[Alternatives] | None:
    """Contract 4a: one check per entry of a per-entry request, in request order; None for other APIs."""
    if api_key not in rules.per_entry or request is None:
        return None
    if api_key != 20:
        return required_checks(rules, api_key, request)  # already one check per entry
    cluster = (CLUSTER, CLUSTER_NAME, DELETE)
    names: list[Alternatives] = [(cluster, (TOPIC, n, DELETE)) for n in request.topic_names]
    return names + [
        (cluster, (TOPIC, t.name, DELETE)) if t.name is not None else (cluster,) for t in request.topics
    ]


def _no_acls() -> tuple[AclEntry, ...]:
    return ()


@dataclass(frozen=True)
class AclAuthorizer:
    rules: RuleBook
    super_users: frozenset[str]
    acls: AclSource = _no_acls
    allow_if_no_acl: bool = False  # allow.everyone.if.no.acl.found

    def authorize(
        self, principal: str, api_key: int, host: str = WILDCARD, request: Any = None, forwarded: bool = False
    ) -> bool:
        if api_key in UNAUTHORIZED_FREE or principal in self.super_users:
            return True
        if request is None and api_key in self.rules.per_entry:
            checks: list[Alternatives] = [((CLUSTER, CLUSTER_NAME, ALTER),)]
        else:
            checks = required_checks(self.rules, api_key, request, principal, forwarded)
        entries = list(self.acls())
        return all(
            any(evaluate(entries, principal, host, c, self.allow_if_no_acl) for c in alternatives)
            for alternatives in checks
        )

    def denied_entries(
        self, principal: str, api_key: int, host: str = WILDCARD, request: Any = None
    ) -> frozenset[int] | None:
        """Contract 4a: indexes of the entries refused; None when the API is not decided per entry."""
        checks = entry_checks(self.rules, api_key, request)
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


Split = Callable[[int, Any, frozenset[int]], tuple[Any, Any] | None]  # (authorized part, refused part) | None
Merge = Callable[[int, Any, Any], Any]  # (api key, handler's response, refusal response) -> response


@dataclass(frozen=True)
class Gate:
    """Contract 7: an authorizer in front of a handler, for a listener's requests and for the requests a broker
    forwards inside an Envelope alike. ``denied(api_key, request, version)`` answers a refused request; with
    ``per_entry`` (split, merge) a per-entry request with some entries authorized is served for those and the
    refused entries' answers are merged into the response."""

    authorizer: Authorizer
    denied: Callable[[int, Any, int], Any]
    per_entry: tuple[Split, Merge] | None = None

    async def serve(
        self,
        principal: str,
        api_key: int,
        host: str,
        request: Any,
        version: int,
        call: Callable[[Any], Awaitable[Any]],
        forwarded: bool = False,
    ) -> tuple[Any, str | None]:
        """(response, None) when allowed; (response, how it was refused) otherwise ("" or " for some entries")."""
        if self.authorizer.authorize(principal, api_key, host, request, forwarded):
            return await call(request), None
        parts = self._split(principal, api_key, host, request)
        if parts is None:
            return self.denied(api_key, request, version), ""
        assert self.per_entry is not None
        served = await call(parts[0])
        return self.per_entry[1](
            api_key, served, self.denied(api_key, parts[1], version)
        ), " for some entries"

    def _split(self, principal: str, api_key: int, host: str, request: Any) -> tuple[Any, Any] | None:
        entries = getattr(self.authorizer, "denied_entries", None)
        if self.per_entry is None or entries is None:
            return None
        refused = entries(principal, api_key, host, request)
        return None if refused is None else self.per_entry[0](api_key, request, refused)


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
