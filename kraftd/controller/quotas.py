"""AlterClientQuotas (49) on the active controller, as a pure function of the image.

The image's quota shape: ``image.quotas`` maps an entity, a tuple of (entity type, entity name) pairs sorted by
type (types ``user``, ``client-id``, ``ip``; a None name is the default entity), to {quota key: value}.

Contracts (Kafka 4.3.1 ControllerApis.handleAlterClientQuotas, ClientQuotaControlManager):
1. An entry's entity is the map of its (type, name) pairs, a later pair of the same type replacing an earlier
   one. Entries are answered per distinct entity: an entity seen twice gets INVALID_REQUEST "Ignoring duplicate
   entity ..." (the first occurrence's records are still written, as Kafka does); a key twice within one entry ->
   INVALID_REQUEST "Duplicate quota key ...", and the entity's answer then also reads "Ignoring duplicate entity".
2. Entity checks: empty -> "Invalid empty client quota entity"; a type other than user / client-id / ip ->
   "Unhandled client quota entity type: T"; an empty name -> "Empty T not supported"; ip with user or client-id
   -> "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId" (Kafka's text);
   an ip that is neither an IP literal nor a name the shell resolved -> "N is not a valid IP or resolvable host.".
3. Keys: user / client-id entities take producer_byte_rate, consumer_byte_rate (LONG), request_percentage,
   controller_mutation_rate (DOUBLE); ip entities take connection_creation_rate (INT). Another key -> "Invalid
   configuration key K"; a value <= 0 -> "Quota K must be greater than 0"; an integral type takes no fraction
   (> 1e-6) and no value above its maximum. All errors are INVALID_REQUEST; a failing entity writes nothing.
4. A set writes a ClientQuotaRecord only when the value changes; a remove writes one (remove=true) only when the
   key is set. validateOnly (the shell) answers the same and writes nothing.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from typing import Any

from generated.client_quota_record import ClientQuotaRecord, EntityData
from kraftd.controller.image import NO_ENTRIES, MetadataImage
from kwire.errors import ErrorCode

USER, CLIENT_ID, IP = "user", "client-id", "ip"
LONG_MAX, INT_MAX = 2**63 - 1, 2**31 - 1
USER_CLIENT_KEYS = {
    "producer_byte_rate": LONG_MAX,
    "consumer_byte_rate": LONG_MAX,
    "request_percentage": None,  # DOUBLE
    "controller_mutation_rate": None,
}
IP_KEYS = {"connection_creation_rate": INT_MAX}
_TYPE_NAMES = {LONG_MAX: "a LONG", INT_MAX: "an INT"}

Entity = tuple[tuple[str, str | None], ...]
Result = tuple[Entity, ErrorCode, str | None]


def entity_key(pairs: Iterable[tuple[str, str | None]]) -> Entity:
    """The image's key for an entity: later pairs of a type replace earlier ones, sorted by type."""
    return tuple(sorted(dict(pairs).items()))


def is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _describe(entity: Entity) -> str:
    return "ClientQuotaEntity(entries=" + str(dict(entity)) + ")"


def _entity_error(entity: Entity, resolvable: Callable[[str], bool]) -> tuple[str | None, dict[str, Any]]:
    """Contract 2; on success the valid keys with their integral maximum (None = DOUBLE)."""
    if not entity:
        return "Invalid empty client quota entity", {}
    for etype, ename in entity:
        if etype not in (USER, CLIENT_ID, IP):
            return f"Unhandled client quota entity type: {etype}", {}
        if ename is not None and not ename:
            return f"Empty {etype} not supported", {}
    types = {t for t, _ in entity}
    if IP in types:
        if types & {USER, CLIENT_ID}:
            return (
                "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId",
                {},
            )
        ip = dict(entity)[IP]
        if ip is not None and not is_ip_literal(ip) and not resolvable(ip):
            return f"{ip} is not a valid IP or resolvable host.", {}
        return None, IP_KEYS
    return None, USER_CLIENT_KEYS


def _value_error(keys: dict[str, Any], key: str, value: float) -> str | None:
    """Contract 3."""
    if key not in keys:
        return f"Invalid configuration key {key}"
    if value <= 0.0:
        return f"Quota {key} must be greater than 0"
    maximum = keys[key]
    if maximum is None:
        return None
    if value > maximum:
        return f"Proposed value for {key} is too large for {_TYPE_NAMES[maximum]}."
    if abs(value % 1.0) > 1e-6:
        return f"{key} cannot be a fractional value."
    return None


def alter_client_quotas(
    image: MetadataImage, entries: Iterable[Any], resolvable: Callable[[str], bool] = lambda _: False
) -> tuple[list[Any], list[Result]]:
    """Contracts 1-4: records to append and one result per distinct entity (first-seen order)."""
    records: list[Any] = []
    results: dict[Entity, tuple[ErrorCode, str | None]] = {}
    for entry in entries:
        entity = entity_key((e.entity_type, e.entity_name) for e in entry.entity)
        ops: dict[str, float | None] = {}
        for op in entry.ops:
            if op.key in ops:
                message = (
                    f"Duplicate quota key {op.key} not updating quota for this entity {_describe(entity)}"
                )
                results[entity] = (ErrorCode.INVALID_REQUEST, message)
            else:
                ops[op.key] = None if op.remove else op.value
        if entity in results:
            results[entity] = (ErrorCode.INVALID_REQUEST, f"Ignoring duplicate entity {_describe(entity)}")
            continue
        results[entity] = _alter_entity(image, entity, ops, records, resolvable)
    return records, [(entity, code, message) for entity, (code, message) in results.items()]


def _alter_entity(
    image: MetadataImage,
    entity: Entity,
    ops: dict[str, float | None],
    records: list[Any],
    resolvable: Callable[[str], bool],
) -> tuple[ErrorCode, str | None]:
    error, keys = _entity_error(entity, resolvable)
    if error is not None:
        return ErrorCode.INVALID_REQUEST, error
    current = image.quotas.get(entity, NO_ENTRIES)
    mine: list[Any] = []
    for key, value in ops.items():
        names = [EntityData(entity_type=t, entity_name=n) for t, n in entity]
        if value is None:
            if key in current:
                mine.append(ClientQuotaRecord(entity=names, key=key, value=0.0, remove=True))
            continue
        error = _value_error(keys, key, value)
        if error is not None:
            return ErrorCode.INVALID_REQUEST, error
        if current.get(key) != value:
            mine.append(ClientQuotaRecord(entity=names, key=key, value=value, remove=False))
    records.extend(mine)
    return ErrorCode.NONE, None
