"""``server.properties`` for a kraftd controller: Kafka's keys, Kafka's defaults.

Contracts:
1. :func:`parse_properties` reads the Java ``.properties`` format: ``#``/``!`` comment lines, ``=``, ``:`` or
   whitespace as the key separator, backslash escapes (``\\t \\n \\r \\f \\uXXXX``, anything else stands for
   itself) and line continuation (an odd number of trailing backslashes). A later duplicate key wins.
2. :func:`load_config` / :func:`config_from_properties` return an immutable :class:`KraftConfig` or raise
   :class:`ConfigError` whose message names the offending key and the form it expects.
3. Keys we do not know are logged as warnings (never an error), before any validation error, each with the
   closest known key when one is close (``did you mean ...?``, difflib), and kept in ``KraftConfig.unknown_keys``;
   a short list of Kafka keys that make no sense for this controller is accepted silently.
4. Only the ``controller`` role is supported; the controller listener may be PLAINTEXT, SSL, SASL_PLAINTEXT or
   SASL_SSL (kraftd.security reads their ``ssl.*`` / ``sasl.*`` keys).
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kraftd.config_values import (
    ConfigError,
    Endpoint,
    StaticVoter,
    csv_items,
    flag_value,
    host_port,
    int_value,
    parse_endpoints,
    parse_properties,
    parse_voters,
)
from kraftd.controller.tokens import TokenSettings
from kraftd.core.config import QuorumConfig
from kraftd.security import PROTOCOLS, SECURITY_KEYS, ListenerSecurity, is_security_key, listener_security
from kwire.limits import DEFAULT_IDLE_MS, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_REQUEST_BYTES, ListenerLimits

# The value types and parsers live in kraftd.config_values; importers keep using them from here.
__all__ = [
    "ConfigError",
    "Endpoint",
    "KraftConfig",
    "StaticVoter",
    "config_from_properties",
    "load_config",
    "parse_endpoints",
    "parse_properties",
    "parse_voters",
]

log = logging.getLogger("kraftd.config")

DEFAULT_SEGMENT_BYTES = 1024 * 1024 * 1024
DEFAULT_MAX_IDLE_INTERVAL_MS = 500  # metadata.max.idle.interval.ms, as Kafka
DEFAULT_BROKER_SESSION_TIMEOUT_MS = 9000  # broker.session.timeout.ms, as Kafka
DEFAULT_SEGMENT_MS = 7 * 24 * 3600 * 1000  # Kafka's metadata.log.segment.ms default (7 days)
MIN_SEGMENT_BYTES = 1024
# Kafka's controller.quorum.* defaults live once, in the core's QuorumConfig.
_QUORUM_DEFAULTS = QuorumConfig()
_TOKEN_DEFAULTS = TokenSettings()
DEFAULT_LOG_DIR = "/tmp/kafka-logs"
DEFAULT_LISTENERS = "PLAINTEXT://:9092"
# Kafka's default listener.security.protocol.map.
DEFAULT_PROTOCOL_MAP = {
    "PLAINTEXT": "PLAINTEXT",
    "SSL": "SSL",
    "SASL_PLAINTEXT": "SASL_PLAINTEXT",
    "SASL_SSL": "SASL_SSL",
}


@dataclass(frozen=True, slots=True)
class KraftConfig:
    node_id: int
    process_roles: tuple[str, ...]
    controller_listener_names: tuple[str, ...]
    listeners: tuple[Endpoint, ...]
    advertised_listeners: tuple[Endpoint, ...]
    security_protocol_map: Mapping[str, str]
    metadata_log_dir: Path
    quorum_voters: tuple[StaticVoter, ...]
    bootstrap_servers: tuple[tuple[str, int], ...]
    election_timeout_ms: int = _QUORUM_DEFAULTS.election_timeout_ms
    fetch_timeout_ms: int = _QUORUM_DEFAULTS.fetch_timeout_ms
    election_backoff_max_ms: int = _QUORUM_DEFAULTS.election_backoff_max_ms
    request_timeout_ms: int = _QUORUM_DEFAULTS.request_timeout_ms
    retry_backoff_ms: int = _QUORUM_DEFAULTS.retry_backoff_ms
    append_linger_ms: int = _QUORUM_DEFAULTS.append_linger_ms
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    segment_ms: int = DEFAULT_SEGMENT_MS  # metadata.log.segment.ms: the active segment rolls once this old
    retention_bytes: int = _QUORUM_DEFAULTS.retention_bytes
    retention_ms: int = _QUORUM_DEFAULTS.retention_ms
    snapshot_interval_ms: int = _QUORUM_DEFAULTS.snapshot_interval_ms
    snapshot_max_record_bytes: int = _QUORUM_DEFAULTS.snapshot_max_record_bytes
    # metadata.max.idle.interval.ms: the active controller appends a NoOpRecord this often (Kafka's default); 0 = off.
    max_idle_interval_ms: int = DEFAULT_MAX_IDLE_INTERVAL_MS
    # broker.session.timeout.ms: the active controller fences a broker whose last heartbeat is this old.
    broker_session_timeout_ms: int = DEFAULT_BROKER_SESSION_TIMEOUT_MS
    metrics_port: int = (
        -1
    )  # kraftd's own key: the Prometheus endpoint's port, -1 = off (kraftd.shell.observe.metrics)
    log_dirs: tuple[Path, ...] = ()  # log.dirs (or log.dir) when set; kraft-storage formats each of them
    unknown_keys: tuple[str, ...] = field(default=())
    limits: ListenerLimits = field(default_factory=ListenerLimits)
    security: ListenerSecurity = field(default_factory=ListenerSecurity)
    tokens: TokenSettings = field(
        default_factory=TokenSettings
    )  # delegation.token.* (kraftd.controller.tokens)
    # kraftd's own key kraftd.read.consistency: "linearizable" (default) or "stale" (kraftd.shell.raft.reads).
    read_consistency: str = "linearizable"
    auto_leader_rebalance: bool = (
        True  # auto.leader.rebalance.enable (kraftd.shell.controller.partition_admin)
    )
    leader_imbalance_check_interval_s: int = 300  # leader.imbalance.check.interval.seconds
    # Test-only (chaos harness): a file holding a number of ms every log fsync is delayed by (slow disk).
    test_fsync_delay_file: Path | None = None
    auto_join: bool = False  # controller.quorum.auto.join.enable (KIP-853): an observer adds itself

    @property
    def controller_listener(self) -> Endpoint:
        """The listener the quorum speaks on: the first name of ``controller.listener.names``."""
        name = self.controller_listener_names[0]
        return next(e for e in self.listeners if e.name == name)

    @property
    def advertised_controller_listeners(self) -> tuple[Endpoint, ...]:
        """Every controller listener as peers should reach it, in ``controller.listener.names`` order."""
        out: list[Endpoint] = []
        for name in self.controller_listener_names:
            adv = next((e for e in self.advertised_listeners if e.name == name), None)
            bound = next((e for e in self.listeners if e.name == name), None)
            chosen = adv if adv is not None else bound
            if chosen is None:
                continue
            host = chosen.host or (bound.host if bound is not None else "") or "localhost"
            out.append(Endpoint(chosen.name, host, chosen.port))
        return tuple(out)


def _protocol_map(raw: str | None, controller_names: list[str]) -> dict[str, str]:
    key = "listener.security.protocol.map"
    if raw is None:
        # As Kafka does: an unset map still lets controller listener names default to PLAINTEXT.
        mapping = dict(DEFAULT_PROTOCOL_MAP)
        for name in controller_names:
            mapping.setdefault(name, "PLAINTEXT")
        return mapping
    mapping = {}
    for item in csv_items(raw):
        name, sep, proto = item.partition(":")
        if not sep or not name or not proto:
            raise ConfigError(
                f"{key}: {item!r} is malformed; expected a comma-separated list of NAME:PROTOCOL"
            )
        mapping[name.strip().upper()] = proto.strip().upper()
    return mapping


# Kafka keys that are valid in a server.properties but have no effect on this controller (contract 3).
_TOLERATED = frozenset(
    "num.network.threads num.io.threads socket.send.buffer.bytes socket.receive.buffer.bytes "
    "num.partitions num.recovery.threads.per.data.dir offsets.topic.replication.factor "
    "share.coordinator.state.topic.replication.factor share.coordinator.state.topic.min.isr "
    "transaction.state.log.replication.factor transaction.state.log.min.isr log.retention.hours "
    "log.segment.bytes log.retention.check.interval.ms inter.broker.listener.name".split()
)

_KNOWN = frozenset(
    "delegation.token.secret.key delegation.token.max.lifetime.ms delegation.token.expiry.time.ms "
    "delegation.token.expiry.check.interval.ms "
    "broker.session.timeout.ms "
    "metadata.max.idle.interval.ms metadata.max.retention.bytes metadata.max.retention.ms metadata.log.max.snapshot.interval.ms "
    "metadata.log.max.record.bytes.between.snapshots "
    "node.id process.roles controller.listener.names listeners advertised.listeners "
    "listener.security.protocol.map metadata.log.dir log.dirs log.dir controller.quorum.voters "
    "controller.quorum.bootstrap.servers controller.quorum.election.timeout.ms controller.quorum.fetch.timeout.ms "
    "controller.quorum.election.backoff.max.ms controller.quorum.request.timeout.ms "
    "controller.quorum.retry.backoff.ms controller.quorum.append.linger.ms metadata.log.segment.bytes "
    "metadata.log.segment.ms "
    "socket.request.max.bytes connections.max.idle.ms max.connections kraftd.test.fsync.delay.file "
    "kraftd.read.consistency "
    "metrics.port controller.quorum.auto.join.enable auto.leader.rebalance.enable "
    "leader.imbalance.check.interval.seconds".split()
)


def _read_consistency(props: Mapping[str, str]) -> str:
    value = props.get("kraftd.read.consistency", "linearizable").strip().lower()
    if value not in ("linearizable", "stale"):
        raise ConfigError(f"kraftd.read.consistency must be linearizable or stale, not {value!r}")
    return value


def _bool(props: Mapping[str, str], key: str) -> bool:
    raw = props.get(key, "false").strip().lower()
    if raw not in ("true", "false"):
        raise ConfigError(f"{key}: {props.get(key)!r} is not a boolean; expected true or false")
    return raw == "true"


def _warn_unknown(props: Mapping[str, str]) -> tuple[str, ...]:
    """Contract 3."""
    unknown = tuple(k for k in props if k not in _KNOWN and k not in _TOLERATED and not is_security_key(k))
    for key in unknown:
        close = difflib.get_close_matches(key, _KNOWN | _TOLERATED | SECURITY_KEYS, n=1, cutoff=0.8)
        hint = f"; did you mean {close[0]}?" if close else ""
        log.warning("unknown configuration key %r ignored%s", key, hint)
    return unknown


def config_from_properties(props: Mapping[str, str]) -> KraftConfig:
    """Validate parsed properties into a :class:`KraftConfig` (contracts 2-4)."""
    unknown = _warn_unknown(props)  # first: a mistyped key is often why validation fails below
    node_id = int_value(props, "node.id", None, 0)

    roles = tuple(r.lower() for r in csv_items(props.get("process.roles")))
    if roles != ("controller",):
        raise ConfigError(
            f"process.roles: {props.get('process.roles')!r} is not supported; expected 'controller' "
            "(kraftd runs KRaft controllers only)"
        )

    names = [n.upper() for n in csv_items(props.get("controller.listener.names"))]
    if not names:
        raise ConfigError(
            "controller.listener.names: required; expected a comma-separated list of listener names"
        )

    listeners = parse_endpoints(props.get("listeners", DEFAULT_LISTENERS), "listeners")
    advertised = parse_endpoints(props.get("advertised.listeners"), "advertised.listeners")
    if names[0] not in {e.name for e in listeners}:
        raise ConfigError(
            f"listeners: must contain the controller listener {names[0]!r} named first in "
            "controller.listener.names; expected e.g. CONTROLLER://127.0.0.1:9093"
        )
    proto_map = _protocol_map(props.get("listener.security.protocol.map"), names)
    for endpoint in listeners:
        proto = proto_map.get(endpoint.name)
        if proto is None:
            raise ConfigError(
                f"listener.security.protocol.map: no entry for listener {endpoint.name!r}; "
                "expected a comma-separated list of NAME:PROTOCOL covering every listener"
            )
        if endpoint.name in names and proto not in PROTOCOLS:
            raise ConfigError(
                f"listener.security.protocol.map: {endpoint.name}:{proto} is not supported; "
                f"expected one of {', '.join(PROTOCOLS)}"
            )
    security = listener_security(props, names[0], proto_map[names[0]], ConfigError)

    dirs = csv_items(props.get("log.dirs")) or csv_items(props.get("log.dir"))
    log_dir = props.get("metadata.log.dir", "").strip() or (dirs or [DEFAULT_LOG_DIR])[0]

    voters = parse_voters(props.get("controller.quorum.voters"))
    bootstrap = tuple(
        host_port(item, "controller.quorum.bootstrap.servers", "a comma-separated list of host:port")
        for item in csv_items(props.get("controller.quorum.bootstrap.servers"))
    )
    if not voters and not bootstrap:
        raise ConfigError(
            "controller.quorum.voters: either it or controller.quorum.bootstrap.servers must be set; "
            "expected id@host:port,... (or host:port,... for bootstrap servers)"
        )
    if voters and node_id not in {v.node_id for v in voters}:
        raise ConfigError(
            f"controller.quorum.voters: a controller's node.id {node_id} must be one of the voters; "
            "expected id@host:port,... including this node"
        )

    return KraftConfig(
        node_id=node_id,
        process_roles=roles,
        controller_listener_names=tuple(names),
        listeners=listeners,
        advertised_listeners=advertised,
        security_protocol_map=proto_map,
        metadata_log_dir=Path(log_dir),
        quorum_voters=voters,
        bootstrap_servers=bootstrap,
        auto_join=_bool(props, "controller.quorum.auto.join.enable"),
        election_timeout_ms=int_value(
            props, "controller.quorum.election.timeout.ms", _QUORUM_DEFAULTS.election_timeout_ms, 1
        ),
        fetch_timeout_ms=int_value(
            props, "controller.quorum.fetch.timeout.ms", _QUORUM_DEFAULTS.fetch_timeout_ms, 1
        ),
        election_backoff_max_ms=int_value(
            props, "controller.quorum.election.backoff.max.ms", _QUORUM_DEFAULTS.election_backoff_max_ms, 1
        ),
        request_timeout_ms=int_value(
            props, "controller.quorum.request.timeout.ms", _QUORUM_DEFAULTS.request_timeout_ms, 1
        ),
        retry_backoff_ms=int_value(
            props, "controller.quorum.retry.backoff.ms", _QUORUM_DEFAULTS.retry_backoff_ms, 0
        ),
        append_linger_ms=int_value(
            props, "controller.quorum.append.linger.ms", _QUORUM_DEFAULTS.append_linger_ms, 0
        ),
        segment_bytes=int_value(
            props, "metadata.log.segment.bytes", DEFAULT_SEGMENT_BYTES, MIN_SEGMENT_BYTES
        ),
        segment_ms=int_value(props, "metadata.log.segment.ms", DEFAULT_SEGMENT_MS, 1),
        retention_bytes=int_value(
            props, "metadata.max.retention.bytes", _QUORUM_DEFAULTS.retention_bytes, -1
        ),
        retention_ms=int_value(props, "metadata.max.retention.ms", _QUORUM_DEFAULTS.retention_ms, -1),
        max_idle_interval_ms=int_value(
            props, "metadata.max.idle.interval.ms", DEFAULT_MAX_IDLE_INTERVAL_MS, 0
        ),
        broker_session_timeout_ms=int_value(
            props, "broker.session.timeout.ms", DEFAULT_BROKER_SESSION_TIMEOUT_MS, 1
        ),
        snapshot_interval_ms=int_value(
            props, "metadata.log.max.snapshot.interval.ms", _QUORUM_DEFAULTS.snapshot_interval_ms, 0
        ),
        snapshot_max_record_bytes=int_value(
            props,
            "metadata.log.max.record.bytes.between.snapshots",
            _QUORUM_DEFAULTS.snapshot_max_record_bytes,
            1,
        ),
        metrics_port=int_value(props, "metrics.port", -1, -1),
        auto_leader_rebalance=flag_value(props, "auto.leader.rebalance.enable", True),
        leader_imbalance_check_interval_s=int_value(props, "leader.imbalance.check.interval.seconds", 300, 1),
        log_dirs=tuple(Path(d) for d in dirs),
        unknown_keys=unknown,
        security=security,
        tokens=TokenSettings(
            secret_key=props.get("delegation.token.secret.key", "").strip() or None,
            max_lifetime_ms=int_value(
                props, "delegation.token.max.lifetime.ms", _TOKEN_DEFAULTS.max_lifetime_ms, 1
            ),
            expiry_time_ms=int_value(
                props, "delegation.token.expiry.time.ms", _TOKEN_DEFAULTS.expiry_time_ms, 1
            ),
            expiry_check_interval_ms=int_value(
                props,
                "delegation.token.expiry.check.interval.ms",
                _TOKEN_DEFAULTS.expiry_check_interval_ms,
                1,
            ),
        ),
        read_consistency=_read_consistency(props),
        test_fsync_delay_file=Path(props["kraftd.test.fsync.delay.file"])
        if props.get("kraftd.test.fsync.delay.file", "").strip()
        else None,
        limits=ListenerLimits(
            max_request_bytes=int_value(props, "socket.request.max.bytes", DEFAULT_MAX_REQUEST_BYTES, 1),
            idle_ms=int_value(props, "connections.max.idle.ms", DEFAULT_IDLE_MS, 1),
            max_connections=int_value(props, "max.connections", DEFAULT_MAX_CONNECTIONS, 1),
        ),
    )


def load_config(path: str | Path) -> KraftConfig:
    """Read and validate a ``server.properties`` file (ISO-8859-1 is Java's encoding; we accept UTF-8 too)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read configuration file {p}: {exc.strerror or exc}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return config_from_properties(parse_properties(text))
