"""Pure constructors the asyncio node assembles itself from: the core's quorum settings, the controller
listener's TLS contexts, the Raft peer connections and the bootstrap metadata records."""

from __future__ import annotations

from ssl import SSLContext
from typing import Any

from kraftd.config import ConfigError, KraftConfig
from kraftd.controller.features import bootstrap_feature_records, resolve_features
from kraftd.core.config import QuorumConfig
from kraftd.core.types import Listener
from kraftd.shell.net.transport import PeerConnection
from kraftd.shell.raft.persistence import QuorumSetup
from kraftd.storage.bootstrap_metadata import read_bootstrap_metadata
from kwire.metadata_frame import encode_record
from kwire.tls import TlsConfigError, client_context, server_context
from kwire.version import VERSION

RAFT_CLIENT = "raft-client-"


def quorum_config(cfg: KraftConfig) -> QuorumConfig:
    return QuorumConfig(
        election_timeout_ms=cfg.election_timeout_ms,
        fetch_timeout_ms=cfg.fetch_timeout_ms,
        election_backoff_max_ms=cfg.election_backoff_max_ms,
        request_timeout_ms=cfg.request_timeout_ms,
        retry_backoff_ms=cfg.retry_backoff_ms,
        append_linger_ms=cfg.append_linger_ms,
        retention_bytes=cfg.retention_bytes,
        retention_ms=cfg.retention_ms,
        snapshot_interval_ms=cfg.snapshot_interval_ms,
        snapshot_max_record_bytes=cfg.snapshot_max_record_bytes,
        listener_name=cfg.controller_listener_names[0],
        bootstrap_ids=bootstrap_ids(len(cfg.bootstrap_servers)),
        auto_join=cfg.auto_join,
        report_to_leader=True,
        local_listeners=tuple(Listener(e.name, e.host, e.port) for e in cfg.advertised_controller_listeners),
        software_version=VERSION,
    )


def tls_contexts(cfg: KraftConfig) -> tuple[SSLContext | None, SSLContext | None]:
    """Server and peer-client TLS contexts of the controller listener (None for PLAINTEXT / SASL_PLAINTEXT)."""
    tls = cfg.security.tls
    if tls is None:
        return None, None
    try:
        return server_context(tls), client_context(tls)
    except TlsConfigError as exc:
        raise ConfigError(str(exc)) from None


def peer_connection(
    cfg: KraftConfig,
    host: str,
    port: int,
    prefix: str,
    ssl: SSLContext | None,
    sasl: Any,
    timeout_ms: int = 0,
) -> PeerConnection:
    """A connection to another controller as this node (client id ``<prefix><node id>``), over the controller
    listener's TLS/SASL; ``timeout_ms`` 0 means ``controller.quorum.request.timeout.ms``."""
    return PeerConnection(
        host,
        port,
        client_id=f"{prefix}{cfg.node_id}",
        timeout_ms=timeout_ms or cfg.request_timeout_ms,
        ssl=ssl,
        sasl=sasl,
    )


def peer_connections(
    cfg: KraftConfig, setup: QuorumSetup, ssl: SSLContext | None, sasl: Any
) -> dict[int, PeerConnection]:
    """One connection per other voter, to its endpoint on our controller listener's name (else its first)."""
    name = cfg.controller_listener_names[0]
    peers = {}
    for node_id, eps in setup.endpoints.items():
        ep = next((e for e in eps if e.name == name), eps[0] if eps else None)
        if node_id != cfg.node_id and ep is not None:
            peers[node_id] = peer_connection(cfg, ep.host, ep.port, RAFT_CLIENT, ssl, sasl)
    return peers


def bootstrap_records(cfg: KraftConfig) -> list[bytes]:
    """The bootstrap checkpoint's metadata records; without one, the default features' levels (as Kafka)."""
    found = read_bootstrap_metadata(cfg.metadata_log_dir)
    if found is not None:
        return found
    return [encode_record(r, 0) for r in bootstrap_feature_records(resolve_features(None, {}))]


def bootstrap_ids(count: int) -> tuple[int, ...]:
    """kraftd.shell.net.membership contract 1: the ids -2, -3, ... of the bootstrap servers."""
    return tuple(-(i + 2) for i in range(count))
