"""CLIENT_METRICS (16, KIP-714) and GROUP (32, KIP-848/932/1071) config resources: validation and defaults, as
pure functions.

Facts (Kafka 4.3.1, printed from its jars: ClientMetricsConfigs, GroupConfig, KafkaConfig's group.* bounds):
1. :data:`CLIENT_METRICS_CONFIGS` and :data:`GROUP_CONFIGS` are those ConfigDefs in definition order (name, type,
   default, lower bound / allowed values); :data:`GROUP_LIMITS` are the broker bounds a Kafka controller checks
   group values against, at their defaults (kraftd's controllers take no ``group.*`` settings).
2. A value is trimmed and parsed by type (ConfigDef.parse): INT a base-10 int32 ("Not a number of type INT"),
   BOOLEAN true/false in any case, LIST comma separated with its items trimmed ("" is the empty list; an empty
   item is refused: "Configuration 'N' values must not be empty."). A ConfigDef failure reads
   "Invalid value V for configuration N: <reason>".

Contracts (ControllerConfigurationValidator.validate(resource, merged configs) in 4.3.1; first failure wins):
3. CLIENT_METRICS: null values -> INVALID_CONFIG "Null value not supported for client metrics configs: a,b";
   an empty name -> INVALID_REQUEST "Subscription name can't be empty"; an unknown key -> INVALID_REQUEST
   "Unknown client metrics configuration: K"; then parsing (INVALID_CONFIG); interval.ms outside [100, 3600000]
   -> INVALID_REQUEST; each ``match`` item must be ``<param>=<regex>`` with a known param and a regex that
   compiles -> INVALID_CONFIG "Illegal client matching pattern: P".
4. GROUP: an empty name -> INVALID_REQUEST "Default group resources are not allowed."; null values ->
   INVALID_CONFIG "Null value not supported for group configs: ..."; an unknown key -> INVALID_CONFIG
   "Unknown group config name: K"; then every key of the defaults overlaid with the given values is parsed in
   definition order; then the broker bounds of fact 1 and session timeout > heartbeat interval, each
   INVALID_CONFIG with Kafka's sentence.
5. Neither kind has a splittable key at a Kafka controller (its KafkaConfigSchema knows only BROKER and TOPIC):
   APPEND/SUBTRACT -> INVALID_CONFIG "Can't APPEND to key K because its type is not LIST.".
6. DescribeConfigs (Kafka's ConfigHelper on the controller): every key of the kind, its set value with source
   CLIENT_METRICS_CONFIG (7) / GROUP_CONFIG (8), else the default with DEFAULT_CONFIG (5); an empty name ->
   INVALID_REQUEST ("Client metrics subscription name must not be empty" / "Group name must not be empty").
   Synonyms, when asked for: the set value, and for GROUP the broker key ``group.<key>`` at its default.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kwire.errors import ErrorCode

CLIENT_METRICS, GROUP = 16, 32
DEFAULT_CONFIG, CLIENT_METRICS_CONFIG, GROUP_CONFIG = 5, 7, 8
# DescribeConfigs ConfigType codes (Kafka's DescribeConfigsResponse.ConfigType).
CONFIG_TYPES = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "LIST": 7}
Problem = tuple[ErrorCode, str]

# name -> (type, default, minimum or allowed values) (fact 1).
CLIENT_METRICS_CONFIGS: dict[str, tuple[str, str, object]] = {
    "metrics": ("LIST", "", None),
    "interval.ms": ("INT", "300000", None),
    "match": ("LIST", "", None),
}
_OFFSET_RESET = "by_duration"
GROUP_CONFIGS: dict[str, tuple[str, str, object]] = {
    "consumer.session.timeout.ms": ("INT", "45000", 1),
    "consumer.heartbeat.interval.ms": ("INT", "5000", 1),
    "consumer.assignment.interval.ms": ("INT", "1000", 0),
    "share.session.timeout.ms": ("INT", "45000", 1),
    "share.heartbeat.interval.ms": ("INT", "5000", 1),
    "share.record.lock.duration.ms": ("INT", "30000", 1000),
    "share.delivery.count.limit": ("INT", "5", 2),
    "share.partition.max.record.locks": ("INT", "2000", 100),
    "share.auto.offset.reset": ("STRING", "latest", _OFFSET_RESET),
    "share.isolation.level": ("STRING", "read_uncommitted", ("read_committed", "read_uncommitted")),
    "share.renew.acknowledge.enable": ("BOOLEAN", "true", None),
    "share.assignment.interval.ms": ("INT", "1000", 0),
    "streams.session.timeout.ms": ("INT", "45000", 1),
    "streams.heartbeat.interval.ms": ("INT", "5000", 1),
    "streams.num.standby.replicas": ("INT", "0", 0),
    "streams.initial.rebalance.delay.ms": ("INT", "3000", 0),
    "streams.assignment.interval.ms": ("INT", "1000", 0),
}
# The broker bounds a Kafka controller checks group values against, at Kafka 4.3.1's defaults (fact 1).
GROUP_LIMITS: dict[str, int] = {
    "group.consumer.min.heartbeat.interval.ms": 5000,
    "group.consumer.max.heartbeat.interval.ms": 15000,
    "group.consumer.min.session.timeout.ms": 45000,
    "group.consumer.max.session.timeout.ms": 60000,
    "group.consumer.min.assignment.interval.ms": 0,
    "group.consumer.max.assignment.interval.ms": 15000,
    "group.share.min.heartbeat.interval.ms": 5000,
    "group.share.max.heartbeat.interval.ms": 15000,
    "group.share.min.session.timeout.ms": 45000,
    "group.share.max.session.timeout.ms": 60000,
    "group.share.min.record.lock.duration.ms": 15000,
    "group.share.max.record.lock.duration.ms": 60000,
    "group.share.min.delivery.count.limit": 2,
    "group.share.max.delivery.count.limit": 10,
    "group.share.min.partition.max.record.locks": 100,
    "group.share.max.partition.max.record.locks": 4000,
    "group.share.min.assignment.interval.ms": 0,
    "group.share.max.assignment.interval.ms": 15000,
    "group.streams.min.heartbeat.interval.ms": 5000,
    "group.streams.max.heartbeat.interval.ms": 15000,
    "group.streams.min.session.timeout.ms": 45000,
    "group.streams.max.session.timeout.ms": 60000,
    "group.streams.max.standby.replicas": 2,
    "group.streams.min.assignment.interval.ms": 0,
    "group.streams.max.assignment.interval.ms": 15000,
}
# (group key, broker key of its lower bound or None, broker key of its upper bound, checked only when given) in
# the order Kafka checks them.
_BOUNDS: tuple[tuple[str, str | None, str, bool], ...] = (
    ("consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms", False),
    ("consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms", False),
    ("consumer.assignment.interval.ms", "group.consumer.min.assignment.interval.ms", "group.consumer.max.assignment.interval.ms", True),
    ("share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms", False),
    ("share.session.timeout.ms", "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms", False),
    ("share.record.lock.duration.ms", "group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms", False),
    ("share.delivery.count.limit", "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit", False),
    ("share.partition.max.record.locks", "group.share.min.partition.max.record.locks", "group.share.max.partition.max.record.locks", False),
    ("share.assignment.interval.ms", "group.share.min.assignment.interval.ms", "group.share.max.assignment.interval.ms", True),
    ("streams.heartbeat.interval.ms", "group.streams.min.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms", False),
    ("streams.session.timeout.ms", "group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms", False),
    ("streams.num.standby.replicas", None, "group.streams.max.standby.replicas", False),
    ("streams.assignment.interval.ms", "group.streams.min.assignment.interval.ms", "group.streams.max.assignment.interval.ms", True),
)  # fmt: skip
_MATCH_PARAMS = frozenset(
    (
        "client_instance_id",
        "client_id",
        "client_software_name",
        "client_software_version",
        "client_source_address",
        "client_source_port",
    )
)
_INT = re.compile(r"[+-]?[0-9]+")
# java.time.Duration.parse's grammar (the value after "by_duration:"), non-negative only.
_DURATION = re.compile(
    r"\+?P(?:\+?[0-9]+D)?(?:T(?:\+?[0-9]+H)?(?:\+?[0-9]+M)?(?:\+?[0-9]+(?:[.,][0-9]{0,9})?S)?)?",
    re.IGNORECASE,
)


def _parse(name: str, raw: str, spec: tuple[str, str, object]) -> tuple[object, str | None]:
    """Fact 2: (parsed value, None) or (None, Kafka's message)."""
    kind, _, rule = spec
    value = raw.strip()

    def bad(reason: str) -> tuple[object, str]:
        return None, f"Invalid value {value} for configuration {name}: {reason}"

    if kind == "INT":
        if not _INT.fullmatch(value) or not -(2**31) <= int(value) < 2**31:
            return bad("Not a number of type INT")
        if isinstance(rule, int) and int(value) < rule:
            return bad(f"Value must be at least {rule}")
        return int(value), None
    if kind == "BOOLEAN":
        if value.lower() not in ("true", "false"):
            return bad("Expected value to be either true or false")
        return value.lower() == "true", None
    if kind == "LIST":
        items = [x.strip() for x in value.split(",")] if value else []
        if "" in items:
            return None, f"Configuration '{name}' values must not be empty."
        return items, None
    if rule == _OFFSET_RESET:
        kind_, colon, duration = value.partition(":")
        ok = value in ("earliest", "latest") or (
            kind_ == _OFFSET_RESET and bool(colon) and bool(_DURATION.fullmatch(duration))
        )
        if not ok:
            return bad(
                f"Invalid value `{value}` for configuration {name}. The value must be either 'earliest', "
                "'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."
            )
        return value, None
    if isinstance(rule, tuple) and value not in rule:
        return bad(f"String must be one of: {', '.join(rule)}")
    return value, None


def _nulls(label: str, configs: Mapping[str, str | None]) -> Problem | None:
    nulls = [k for k, v in configs.items() if v is None]
    if nulls:
        return ErrorCode.INVALID_CONFIG, f"Null value not supported for {label} configs: {','.join(nulls)}"
    return None


def _parse_all(
    table: Mapping[str, tuple[str, str, object]], configs: Mapping[str, str | None]
) -> tuple[dict[str, object], Problem | None]:
    """Every key of ``table`` parsed from ``configs`` or its default; the first value that does not parse is
    INVALID_CONFIG with Kafka's message."""
    parsed: dict[str, object] = {}
    for key, spec in table.items():
        value, message = _parse(key, configs.get(key) or spec[1], spec)
        if message is not None:
            return parsed, (ErrorCode.INVALID_CONFIG, message)
        parsed[key] = value
    return parsed, None


def validate_client_metrics(name: str, configs: Mapping[str, str | None]) -> Problem | None:
    """Contract 3 over the resulting set of a subscription's configs."""
    problem = _nulls("client metrics", configs)
    if problem is not None:
        return problem
    if not name:
        return ErrorCode.INVALID_REQUEST, "Subscription name can't be empty"
    unknown = next((k for k in configs if k not in CLIENT_METRICS_CONFIGS), None)
    if unknown is not None:
        return ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {unknown}"
    parsed, problem = _parse_all(CLIENT_METRICS_CONFIGS, configs)
    if problem is not None:
        return problem
    interval = parsed["interval.ms"]
    assert isinstance(interval, int)
    if "interval.ms" in configs and not 100 <= interval <= 3600000:
        return (
            ErrorCode.INVALID_REQUEST,
            f"Invalid value {interval} for interval.ms, interval must be between 100 and 3600000 (1 hour)",
        )
    patterns = parsed["match"]
    assert isinstance(patterns, list)
    for pattern in patterns if "match" in configs else []:
        if not _match_ok(pattern):
            return ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}"
    return None


def _match_ok(pattern: str) -> bool:
    parts = pattern.split("=")
    while parts and not parts[-1]:  # Java's String.split drops trailing empty strings
        parts.pop()
    if len(parts) != 2 or parts[0].strip() not in _MATCH_PARAMS:
        return False
    try:
        re.compile(parts[1].strip())
    except re.error:
        return False
    return True


def validate_group(name: str, configs: Mapping[str, str | None]) -> Problem | None:
    """Contract 4 over the resulting set of a group's configs."""
    if not name:
        return ErrorCode.INVALID_REQUEST, "Default group resources are not allowed."
    problem = _nulls("group", configs)
    if problem is not None:
        return problem
    unknown = next((k for k in configs if k not in GROUP_CONFIGS), None)
    if unknown is not None:
        return ErrorCode.INVALID_CONFIG, f"Unknown group config name: {unknown}"
    parsed, problem = _parse_all(GROUP_CONFIGS, configs)
    if problem is not None:
        return problem
    for key, low, high, only_given in _BOUNDS:
        value = parsed[key]
        assert isinstance(value, int)
        if only_given and key not in configs:
            continue
        if low is not None and value < GROUP_LIMITS[low]:
            return ErrorCode.INVALID_CONFIG, f"{key} must be greater than or equal to {low}"
        if value > GROUP_LIMITS[high]:
            return ErrorCode.INVALID_CONFIG, f"{key} must be less than or equal to {high}"
    for kind in ("consumer", "share", "streams"):
        session, heartbeat = parsed[f"{kind}.session.timeout.ms"], parsed[f"{kind}.heartbeat.interval.ms"]
        assert isinstance(session, int) and isinstance(heartbeat, int)
        if session <= heartbeat:
            return (
                ErrorCode.INVALID_CONFIG,
                f"{kind}.session.timeout.ms must be greater than {kind}.heartbeat.interval.ms",
            )
    return None


def validate(rtype: int, name: str, configs: Mapping[str, str | None]) -> Problem | None:
    """Contracts 3 and 4 by resource type (``rtype`` is CLIENT_METRICS or GROUP)."""
    if rtype == CLIENT_METRICS:
        return validate_client_metrics(name, configs)
    return validate_group(name, configs)


def describe(
    rtype: int, name: str, values: Mapping[str, str]
) -> tuple[Problem | None, list[tuple[str, str, int, int]]]:
    """Contract 6: (problem, [(key, value, source, config type)]) in definition order."""
    if not name:
        what = "Client metrics subscription name" if rtype == CLIENT_METRICS else "Group name"
        return (ErrorCode.INVALID_REQUEST, f"{what} must not be empty"), []
    table, source = (
        (CLIENT_METRICS_CONFIGS, CLIENT_METRICS_CONFIG)
        if rtype == CLIENT_METRICS
        else (GROUP_CONFIGS, GROUP_CONFIG)
    )
    out = []
    for key, (kind, default, _) in table.items():
        given = values.get(key)
        shown = default if given is None else _canonical(kind, given)
        out.append((key, shown, DEFAULT_CONFIG if given is None else source, CONFIG_TYPES[kind]))
    return None, out


_NO_BROKER_SYNONYM = frozenset(
    ("share.auto.offset.reset", "share.isolation.level", "share.renew.acknowledge.enable")
)


def synonyms(rtype: int, key: str, value: str, source: int) -> list[tuple[str, str, int]]:
    """Contract 6's synonyms, most specific first: the set value (if any), then for GROUP the broker key
    ``group.<key>`` (or the key itself where no broker key exists) at its default."""
    out = [] if source == DEFAULT_CONFIG else [(key, value, source)]
    if rtype == GROUP:
        default = GROUP_CONFIGS[key][1]
        out.append((key if key in _NO_BROKER_SYNONYM else f"group.{key}", default, DEFAULT_CONFIG))
    return out


def _canonical(kind: str, raw: str) -> str:
    """ConfigDef.convertToString of the parsed value, as Kafka shows a stored one."""
    value = raw.strip()
    if kind == "LIST":
        return ",".join(x.strip() for x in value.split(",")) if value else ""
    if kind == "BOOLEAN":
        return value.lower()
    if kind == "INT":
        return str(int(value))
    return value
