"""AlterConfigs (33, the legacy whole-set replace) and the topic config validation it shares, as pure functions.

Facts (Kafka 4.3.1 LogConfig's ConfigDef, printed from the kafka-storage 4.3.1 jar: name, type, bounds):
1. :data:`TOPIC_CONFIGS` below is that table. A value is trimmed and parsed by type (INT/LONG decimal, DOUBLE,
   BOOLEAN true/false in any case, STRING, LIST comma separated) and then checked against its bounds / allowed
   values; a failure is INVALID_CONFIG "Invalid value V for configuration N: <reason>".

Contracts (ConfigurationControlManager.legacyAlterConfigs + ControllerConfigurationValidator):
2. A resource's new set replaces the old one: a ConfigRecord per given key whose value differs (every given key
   for BROKER resources), and a deleting ConfigRecord (null value) per old key not given.
3. Validation, first failure wins: BROKER names are "" (cluster default) or a base-10 number (else
   INVALID_REQUEST); TOPIC names must not be "" (INVALID_REQUEST), values must not be null, names must be topic
   configs and values valid (INVALID_CONFIG), min.compaction.lag.ms must not exceed max.compaction.lag.ms and
   remote storage cannot be enabled (kraftd's brokers are assumed to run without tiered storage); then the
   resource must exist (UNKNOWN_TOPIC_OR_PARTITION; BROKER_ID_NOT_REGISTERED for an unknown broker id); other
   resource types -> INVALID_REQUEST; then kraftd.controller.elr contract 4 (INVALID_CONFIG, and ClearElrRecords
   after the config records). A failed resource writes nothing; validateOnly writes nothing at all.
   CLIENT_METRICS (16) and GROUP (32) resources are validated by kraftd.controller.config_kinds; every other type
   -> INVALID_REQUEST "Unknown resource type <NAME>".
4. A BROKER name must not be negative ("Invalid negative broker ID.", INVALID_REQUEST).
5. IncrementalAlterConfigs (ConfigurationControlManager.incrementalAlterConfigResource): per resource, each
   operation - SET, DELETE, APPEND, SUBTRACT (0-3) - yields the key's new value (APPEND/SUBTRACT only on a LIST
   key, starting from its default when unset, else INVALID_CONFIG "Can't APPEND to key K because its type is
   not LIST."); a ConfigRecord is written per key whose value changes (every key for BROKER); the resulting set
   is validated as in contract 3 (without the broker registration check) before anything is written; then
   kraftd.controller.elr contract 4; validateOnly writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from generated.alter_configs_request import AlterConfigsRequest
from generated.config_record import ConfigRecord
from generated.incremental_alter_configs_request import IncrementalAlterConfigsRequest
from kraftd.controller import config_kinds as kinds
from kraftd.controller import elr
from kraftd.controller.image import NO_ENTRIES, MetadataImage
from kwire.errors import ErrorCode
from kwire.resources import ConfigResourceType as CR

TOPIC, BROKER = int(CR.TOPIC), int(CR.BROKER)
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
# ConfigResource.Type names, as Kafka's messages print them.
TYPE_NAMES = {int(t): t.name for t in CR if t is not CR.UNKNOWN}
INF = None
LONG_MAX = 9223372036854775807

# name -> (type, minimum, maximum, allowed values) (fact 1).
TOPIC_CONFIGS: dict[str, tuple[str, float | None, float | None, tuple[str, ...]]] = {
    "cleanup.policy": ("LIST", None, None, ("compact", "delete")),
    "compression.gzip.level": ("INT", 1, 9, ()),  # or -1
    "compression.lz4.level": ("INT", 1, 17, ()),
    "compression.type": ("STRING", None, None, ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    "compression.zstd.level": ("INT", -131072, 22, ()),
    "delete.retention.ms": ("LONG", 0, None, ()),
    "file.delete.delay.ms": ("LONG", 0, None, ()),
    "flush.messages": ("LONG", 1, None, ()),
    "flush.ms": ("LONG", 0, None, ()),
    "follower.replication.throttled.replicas": ("THROTTLE", None, None, ()),
    "index.interval.bytes": ("INT", 0, None, ()),
    "internal.segment.bytes": ("INT", None, None, ()),
    "leader.replication.throttled.replicas": ("THROTTLE", None, None, ()),
    "local.retention.bytes": ("LONG", -2, None, ()),
    "local.retention.ms": ("LONG", -2, None, ()),
    "max.compaction.lag.ms": ("LONG", 1, None, ()),
    "max.message.bytes": ("INT", 0, None, ()),
    "message.timestamp.after.max.ms": ("LONG", 0, None, ()),
    "message.timestamp.before.max.ms": ("LONG", 0, None, ()),
    "message.timestamp.type": ("STRING", None, None, ("CreateTime", "LogAppendTime")),
    "min.cleanable.dirty.ratio": ("DOUBLE", 0, 1, ()),
    "min.compaction.lag.ms": ("LONG", 0, None, ()),
    "min.insync.replicas": ("INT", 1, None, ()),
    "preallocate": ("BOOLEAN", None, None, ()),
    "remote.log.copy.disable": ("BOOLEAN", None, None, ()),
    "remote.log.delete.on.disable": ("BOOLEAN", None, None, ()),
    "remote.storage.enable": ("BOOLEAN", None, None, ()),
    "retention.bytes": ("LONG", None, None, ()),
    "retention.ms": ("LONG", -1, None, ()),
    "segment.bytes": ("INT", 1048576, None, ()),
    "segment.index.bytes": ("INT", 4, None, ()),
    "segment.jitter.ms": ("LONG", 0, None, ()),
    "segment.ms": ("LONG", 1, None, ()),
    "unclean.leader.election.enable": ("BOOLEAN", None, None, ()),
}
_INT_RANGE = {"INT": (-(2**31), 2**31 - 1), "LONG": (-(2**63), 2**63 - 1)}


def _value_error(name: str, raw: str) -> str | None:
    kind, lo, hi, allowed = TOPIC_CONFIGS[name]
    value = raw.strip()

    def bad(reason: str) -> str:
        return f"Invalid value {value} for configuration {name}: {reason}"

    number: float
    if kind in _INT_RANGE:
        try:
            number = int(value)
        except ValueError:
            return bad(f"Not a number of type {kind}")
        if not _INT_RANGE[kind][0] <= number <= _INT_RANGE[kind][1]:
            return bad(f"Not a number of type {kind}")
        if name == "compression.gzip.level" and number == -1:
            return None
    elif kind == "DOUBLE":
        try:
            number = float(value)
        except ValueError:
            return bad("Not a number of type DOUBLE")
    elif kind == "BOOLEAN":
        return (
            None if value.lower() in ("true", "false") else bad("Expected value to be either true or false")
        )
    elif kind == "STRING":
        return None if value in allowed else bad(f"String must be one of: {', '.join(allowed)}")
    elif kind == "LIST":
        items = [x.strip() for x in value.split(",") if x.strip()]
        wrong = [x for x in items if x not in allowed]
        return bad(f"String must be one of: {', '.join(allowed)}") if wrong else None
    else:  # THROTTLE: "*" or partition:broker pairs
        items = [x.strip() for x in value.split(",") if x.strip()]
        ok = items == ["*"] or all(_pair(x) for x in items)
        return (
            None
            if ok
            else bad(
                "must be the literal '*' or a list of replicas in the following format: "
                "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
            )
        )
    if lo is not None and number < lo:
        return bad(f"Value must be at least {lo}")
    if hi is not None and number > hi:
        return bad(f"Value must be no more than {hi}")
    return None


def _pair(text: str) -> bool:
    left, colon, right = text.partition(":")
    return bool(colon) and left.strip().isdigit() and right.strip().isdigit()


def validate_topic_configs(configs: Mapping[str, str | None]) -> str | None:
    """Contract 3's topic checks over the resulting set; the first problem as Kafka words it, else None."""
    nulls = sorted(k for k, v in configs.items() if v is None)
    if nulls:
        return f"Null value not supported for topic configs: {','.join(nulls)}"
    unknown = sorted(k for k in configs if k not in TOPIC_CONFIGS)
    if unknown:
        return f"Unknown topic config name: {','.join(unknown)}"
    for name, value in sorted(configs.items()):
        assert value is not None
        err = _value_error(name, value)
        if err is not None:
            return err
    lo = int(configs.get("min.compaction.lag.ms") or 0)
    hi = int(configs.get("max.compaction.lag.ms") or LONG_MAX)
    if lo > hi:
        return f"conflict topic config setting min.compaction.lag.ms ({lo}) > max.compaction.lag.ms ({hi})"
    if (configs.get("remote.storage.enable") or "false").strip().lower() == "true":
        return (
            "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote "
            "log storage."
        )
    return None


def _check(
    image: MetadataImage, rtype: int, rname: str, configs: Mapping[str, str | None], registered: bool = True
) -> tuple[ErrorCode, str | None]:
    if rtype == BROKER:
        if rname and not (rname.isascii() and rname.lstrip("-").isdigit()):
            return ErrorCode.INVALID_REQUEST, "Unable to parse broker name as a base 10 number."
        if rname and int(rname) < 0:
            return ErrorCode.INVALID_REQUEST, "Invalid negative broker ID."
        if rname and int(rname) not in image.brokers and registered:
            return ErrorCode.BROKER_ID_NOT_REGISTERED, f"No broker with id {rname} found."
        return ErrorCode.NONE, None
    if rtype == TOPIC:
        if not rname:
            return ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed."
        err = validate_topic_configs(configs)
        if err is not None:
            return ErrorCode.INVALID_CONFIG, err
        if rname not in image.topic_ids:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{rname}' does not exist."
        return ErrorCode.NONE, None
    if rtype in (kinds.CLIENT_METRICS, kinds.GROUP):
        problem = kinds.validate(rtype, rname, configs)
        return problem if problem is not None else (ErrorCode.NONE, None)
    return ErrorCode.INVALID_REQUEST, f"Unknown resource type {TYPE_NAMES.get(rtype, rtype)}"


def alter_configs(
    image: MetadataImage, req: AlterConfigsRequest
) -> tuple[list[Any], list[tuple[int, str, ErrorCode, str | None]]]:
    """Contracts 2 and 3: (records, (resource type, name, error, message) per resource)."""
    records: list[Any] = []
    results: list[tuple[int, str, ErrorCode, str | None]] = []
    for r in req.resources:
        given: dict[str, str | None] = {c.name: c.value for c in r.configs}
        error, message = _check(image, r.resource_type, r.resource_name, given)
        if error:
            results.append((r.resource_type, r.resource_name, error, message))
            continue
        current = image.configs.get((r.resource_type, r.resource_name), NO_ENTRIES)
        mine = [
            ConfigRecord(resource_type=r.resource_type, resource_name=r.resource_name, name=name, value=value)
            for name, value in given.items()
            if value != current.get(name) or r.resource_type == BROKER
        ]
        mine += [
            ConfigRecord(resource_type=r.resource_type, resource_name=r.resource_name, name=name, value=None)
            for name in current
            if name not in given
        ]
        refusal = elr.config_refusal(image, mine)
        if refusal is not None:
            results.append((r.resource_type, r.resource_name, ErrorCode.INVALID_CONFIG, refusal))
            continue
        results.append((r.resource_type, r.resource_name, ErrorCode.NONE, None))
        if not req.validate_only:
            records += mine
    records += elr.clear_records(image, records)
    return records, results


_LIST_DEFAULTS = {(TOPIC, "cleanup.policy"): "delete"}


def _splittable(rtype: int, name: str) -> bool:
    """Contract 5: LIST keys of TOPIC (and every BROKER key: kraftd keeps no broker schema); none elsewhere."""
    if rtype == TOPIC:
        return TOPIC_CONFIGS.get(name, ("",))[0] in ("LIST", "THROTTLE")
    return rtype == BROKER


def incremental_alter_configs(
    image: MetadataImage, req: IncrementalAlterConfigsRequest
) -> tuple[list[Any], list[tuple[int, str, ErrorCode, str | None]]]:
    """Contract 5: (records, (resource type, name, error, message) per resource)."""
    records: list[Any] = []
    results: list[tuple[int, str, ErrorCode, str | None]] = []
    for r in req.resources:
        rtype, rname = r.resource_type, r.resource_name
        current = image.configs.get((rtype, rname), NO_ENTRIES)
        merged: dict[str, str | None] = dict(current)
        changes: list[Any] = []
        error, message = ErrorCode.NONE, None
        for c in r.configs:
            old = current.get(c.name)
            if c.config_operation == SET:
                value: str | None = c.value
            elif c.config_operation == DELETE:
                value = None
            elif c.config_operation in (APPEND, SUBTRACT):
                if not _splittable(rtype, c.name):
                    op = "APPEND" if c.config_operation == APPEND else "SUBTRACT"
                    error, message = (
                        ErrorCode.INVALID_CONFIG,
                        f"Can't {op} to key {c.name} because its type is not LIST.",
                    )
                    break
                base = old if old is not None else _LIST_DEFAULTS.get((rtype, c.name), "")
                items = [x for x in base.split(",") if x]
                given = (c.value or "").split(",")
                if c.config_operation == APPEND:
                    items += [x for x in given if x not in items]
                else:
                    items = [x for x in items if x not in given]
                value = ",".join(items)
            else:
                error, message = ErrorCode.INVALID_REQUEST, f"Unknown config operation {c.config_operation}"
                break
            if value is None:
                merged.pop(c.name, None)
            else:
                merged[c.name] = value
            if value != old or rtype == BROKER:
                changes.append(
                    ConfigRecord(resource_type=rtype, resource_name=rname, name=c.name, value=value)
                )
        if not error:
            error, message = _check(image, rtype, rname, merged, registered=False)
        if not error:
            refusal = elr.config_refusal(image, changes)
            if refusal is not None:
                error, message = ErrorCode.INVALID_CONFIG, refusal
        results.append((rtype, rname, error, message))
        if not error and not req.validate_only:
            records += changes
    records += elr.clear_records(image, records)
    return records, results
