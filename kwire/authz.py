"""Authorization of requests on a listener: who the peer is (its principal) and what it may call.

Contracts:
1. A connection's principal follows Kafka's defaults: ``User:<name>`` after SASL, ``User:<subject DN>`` for a
   TLS client certificate (e.g. ``User:CN=admin``), ``User:ANONYMOUS`` otherwise.
2. :class:`Authorizer` is the interface (``authorize(principal, api_key) -> bool``). :class:`AclAuthorizer`
   grants everything to ``super.users`` and asks an ACL lookup for everyone else; without an answer it denies
   (Kafka's ``allow.everyone.if.no.acl.found=false``). The lookup is where the metadata image's
   AccessControlEntryRecords plug in (ClusterAction for controller RPCs, Describe/Alter for admin RPCs).
3. ApiVersions and the SASL APIs are never subject to authorization (they come before a principal exists), nor
   is Metadata (it needs Describe on topics, and a controller holds none).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

ANONYMOUS = "User:ANONYMOUS"
# ApiVersions, SaslHandshake, SaslAuthenticate; Metadata needs Describe on topics only, and we hold none.
UNAUTHORIZED_FREE = frozenset({18, 17, 36, 3})

# The operation on the Cluster resource each API needs (Kafka's controller APIs).
CLUSTER_ACTION = "ClusterAction"
DESCRIBE = "Describe"
ALTER = "Alter"
OPERATION_OF: Mapping[int, str] = {
    1: CLUSTER_ACTION,  # Fetch (of __cluster_metadata, by voters and observers)
    52: CLUSTER_ACTION,  # Vote
    53: CLUSTER_ACTION,  # BeginQuorumEpoch
    54: CLUSTER_ACTION,  # EndQuorumEpoch
    59: CLUSTER_ACTION,  # FetchSnapshot
    82: CLUSTER_ACTION,  # UpdateRaftVoter
    55: DESCRIBE,  # DescribeQuorum
    60: DESCRIBE,  # DescribeCluster
    57: ALTER,  # UpdateFeatures
    80: ALTER,  # AddRaftVoter
    81: ALTER,  # RemoveRaftVoter
}

AclLookup = Callable[[str, str], bool | None]  # (principal, operation on Cluster) -> allow / deny / no ACL


class Authorizer(Protocol):
    def authorize(self, principal: str, api_key: int) -> bool: ...


@dataclass(frozen=True)
class AclAuthorizer:
    super_users: frozenset[str]
    acls: AclLookup | None = None

    def authorize(self, principal: str, api_key: int) -> bool:
        if api_key in UNAUTHORIZED_FREE or principal in self.super_users:
            return True
        verdict = self.acls(principal, OPERATION_OF.get(api_key, ALTER)) if self.acls is not None else None
        return bool(verdict)


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
