"""CreateAcls (30), DeleteAcls (31) and DescribeAcls (29) on the active controller, as pure functions of the image.

The image's ACL shape (read by the authorizer): ``image.acls`` maps an ACL id (uuid.UUID) to the
AccessControlEntryRecord that created it, unchanged: ``resource_type``, ``resource_name``, ``pattern_type``,
``principal`` ("User:alice"), ``host`` ("*" = any), ``operation``, ``permission_type``, all with Kafka's byte codes
(the constants below). A RemoveAccessControlEntryRecord drops the id.

Contracts (Kafka 4.3.1: AclApis on the controller, AclControlManager, ResourcePatternFilter, AccessControlEntryFilter):
1. Creation, per entry, in this order: an UNKNOWN code anywhere -> INVALID_REQUEST; a CLUSTER resource not
   named ``kafka-cluster`` -> INVALID_REQUEST "The only valid name for the CLUSTER resource is kafka-cluster";
   an empty name -> INVALID_REQUEST "Invalid empty resource name"; resource
   type ANY, pattern type other than LITERAL/PREFIXED, operation ANY, permission ANY -> INVALID_REQUEST "Invalid
   <field> <VALUE>"; a principal without ':' -> INVALID_REQUEST "Could not parse principal ...". A valid ACL that
   already exists (in the image or earlier in the request) succeeds without a record; a new one becomes an
   AccessControlEntryRecord with a fresh id (from the injected random source, never an id in use).
2. Deletion, per filter: UNKNOWN codes -> INVALID_REQUEST for that filter; otherwise every ACL the filter matches is
   listed in that filter's result and removed (one RemoveAccessControlEntryRecord per id, even when several filters
   match it); more than 10,000 removals -> that filter fails with UNKNOWN_SERVER_ERROR.
3. Matching: resource type ANY matches any; pattern type ANY matches any with an exact name, MATCH matches LITERAL
   (same name or ``*``) and PREFIXED (name starts with the pattern), a concrete type only itself with an exact name;
   a null name / principal / host matches any; operation / permission ANY match any.
4. Without an authorizer (``authorizer.class.name`` unset) the controller answers SECURITY_DISABLED (the shell).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from generated.access_control_entry_record import AccessControlEntryRecord
from generated.remove_access_control_entry_record import RemoveAccessControlEntryRecord
from kraftd.controller.image import MetadataImage
from kwire.errors import ErrorCode

# ResourceType, PatternType, AclOperation, AclPermissionType codes (org.apache.kafka.common.*).
RESOURCE_TYPES = (
    "UNKNOWN",
    "ANY",
    "TOPIC",
    "GROUP",
    "CLUSTER",
    "TRANSACTIONAL_ID",
    "DELEGATION_TOKEN",
    "USER",
)
PATTERN_TYPES = ("UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED")
OPERATIONS = (
    "UNKNOWN",
    "ANY",
    "ALL",
    "READ",
    "WRITE",
    "CREATE",
    "DELETE",
    "ALTER",
    "DESCRIBE",
    "CLUSTER_ACTION",
    "DESCRIBE_CONFIGS",
    "ALTER_CONFIGS",
    "IDEMPOTENT_WRITE",
    "CREATE_TOKENS",
    "DESCRIBE_TOKENS",
    "TWO_PHASE_COMMIT",
)
PERMISSIONS = ("UNKNOWN", "ANY", "DENY", "ALLOW")
UNKNOWN, ANY = 0, 1
MATCH, LITERAL, PREFIXED = 2, 3, 4
CLUSTER = 4
CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
MAX_RECORDS_PER_USER_OP = 10_000


def _code(names: tuple[str, ...], value: int) -> int:
    """Kafka's fromCode: a byte no constant has is UNKNOWN."""
    return value if 0 <= value < len(names) else UNKNOWN


def _name(names: tuple[str, ...], value: int) -> str:
    return names[_code(names, value)]


@dataclass(frozen=True, slots=True)
class AclFilter:
    """A binding filter (DeleteAcls / DescribeAcls); None fields match anything."""

    resource_type: int
    resource_name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission_type: int

    @property
    def unknown(self) -> bool:
        return UNKNOWN in (
            _code(RESOURCE_TYPES, self.resource_type),
            _code(PATTERN_TYPES, self.pattern_type),
            _code(OPERATIONS, self.operation),
            _code(PERMISSIONS, self.permission_type),
        )

    def matches(self, acl: Any) -> bool:
        """Contract 3."""
        if self.resource_type != ANY and self.resource_type != acl.resource_type:
            return False
        if self.pattern_type not in (ANY, MATCH) and self.pattern_type != acl.pattern_type:
            return False
        if not self._name_matches(acl):
            return False
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != ANY and self.operation != acl.operation:
            return False
        return self.permission_type == ANY or self.permission_type == acl.permission_type

    def _name_matches(self, acl: Any) -> bool:
        if self.resource_name is None:
            return True
        if self.pattern_type in (ANY, acl.pattern_type):
            return bool(self.resource_name == acl.resource_name)
        if acl.pattern_type == LITERAL:
            return bool(self.resource_name == acl.resource_name or acl.resource_name == WILDCARD)
        return bool(acl.pattern_type == PREFIXED and self.resource_name.startswith(acl.resource_name))


def _binding(acl: Any) -> tuple[int, str, int, str, str, int, int]:
    return (
        acl.resource_type,
        acl.resource_name,
        acl.pattern_type,
        acl.principal,
        acl.host,
        acl.operation,
        acl.permission_type,
    )


def _creation_error(c: Any) -> str | None:
    """Contract 1's checks in Kafka's order; None when the ACL may be created."""
    codes = (
        _code(RESOURCE_TYPES, c.resource_type),
        _code(PATTERN_TYPES, c.resource_pattern_type),
        _code(OPERATIONS, c.operation),
        _code(PERMISSIONS, c.permission_type),
    )
    if UNKNOWN in codes:
        return "CreatableAcls contain unknown elements"
    if c.resource_type == CLUSTER and c.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not c.resource_name:
        return "Invalid empty resource name"
    if c.resource_type == ANY:
        return "Invalid resourceType ANY"
    if c.resource_pattern_type not in (LITERAL, PREFIXED):
        return f"Invalid patternType {_name(PATTERN_TYPES, c.resource_pattern_type)}"
    if c.operation == ANY:
        return "Invalid operation ANY"
    if c.permission_type == ANY:
        return "Invalid permissionType ANY"
    if ":" not in c.principal:
        return (
            f"Could not parse principal from `{c.principal}` (no colon is present separating the principal "
            "type from the principal name)"
        )
    return None


def create_acls(
    image: MetadataImage, creations: Iterable[Any], rng: random.Random
) -> tuple[list[Any], list[tuple[ErrorCode, str | None]]]:
    """Contract 1: the records to append and one (error, message) per creation, in request order."""
    existing = {_binding(a) for a in image.acls.values()}
    used = set(image.acls)
    records: list[Any] = []
    results: list[tuple[ErrorCode, str | None]] = []
    for c in creations:
        error = _creation_error(c)
        if error is not None:
            results.append((ErrorCode.INVALID_REQUEST, error))
            continue
        record = AccessControlEntryRecord(
            id=_new_id(rng, used),
            resource_type=c.resource_type,
            resource_name=c.resource_name,
            pattern_type=c.resource_pattern_type,
            principal=c.principal,
            host=c.host,
            operation=c.operation,
            permission_type=c.permission_type,
        )
        if _binding(record) not in existing:
            existing.add(_binding(record))
            used.add(record.id)
            records.append(record)
        results.append((ErrorCode.NONE, None))
    return records, results


def _new_id(rng: random.Random, used: set[uuid.UUID]) -> uuid.UUID:
    while True:
        candidate = uuid.UUID(int=rng.getrandbits(128), version=4)
        if candidate not in used and candidate.int != 0:
            return candidate


@dataclass(frozen=True, slots=True)
class FilterResult:
    error: ErrorCode
    message: str | None
    matches: list[Any]  # the AccessControlEntryRecords the filter matched


def delete_acls(image: MetadataImage, filters: Iterable[AclFilter]) -> tuple[list[Any], list[FilterResult]]:
    """Contract 2: the removal records (one per id) and one result per filter, in request order."""
    removed: dict[uuid.UUID, Any] = {}
    results: list[FilterResult] = []
    for f in filters:
        if f.unknown:
            results.append(FilterResult(ErrorCode.INVALID_REQUEST, "Filters contain UNKNOWN elements", []))
            continue
        matched = [acl for acl in image.acls.values() if f.matches(acl)]
        ids = set(removed) | {acl.id for acl in matched}
        if len(ids) > MAX_RECORDS_PER_USER_OP:
            message = f"Cannot remove more than {MAX_RECORDS_PER_USER_OP} acls in a single delete operation."
            results.append(FilterResult(ErrorCode.UNKNOWN_SERVER_ERROR, message, []))
            continue
        for acl in matched:
            removed[acl.id] = acl
        results.append(FilterResult(ErrorCode.NONE, None, matched))
    return [RemoveAccessControlEntryRecord(id=i) for i in removed], results


def describe_acls(image: MetadataImage, f: AclFilter) -> dict[tuple[int, str, int], list[Any]]:
    """Matching ACLs grouped by resource pattern (type, name, pattern type), as DescribeAclsResponse lists them."""
    out: dict[tuple[int, str, int], list[Any]] = {}
    for acl in image.acls.values():
        if f.matches(acl):
            out.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(acl)
    return out
