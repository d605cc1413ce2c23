"""Pure constructors the asyncio node assembles itself from: the core's quorum settings, the controller
listener's TLS contexts, the Raft peer connections and the bootstrap metadata records."""

from __future__ import annotations

from ssl import SSLContext
from typing import Any

from kraftd.config import ConfigError, KraftConfig
from kraftd.controller.features import bootstrap_feature_records, resolve_features
from kraftd.core.config import QuorumConfig
from kraftd.shell.persistence import QuorumSetup
from kraftd.shell.transport import PeerConnection
from kraftd.storage.bootstrap_metadata import read_bootstrap_metadata
from kwire.metadata_frame import encode_record
from kwire.tls import TlsConfigError, client_context, server_context


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


def peer_connections(
    cfg: KraftConfig, setup: QuorumSetup, ssl: SSLContext | None, sasl: Any
) -> dict[int, PeerConnection]:
    """One connection per other voter, to its endpoint on our controller listener's name (else its first)."""
    name = cfg.controller_listener_names[0]
    peers = {}
    for node_id, eps in setup.endpoints.items():
        ep = next((e for e in eps if e.name == name), eps[0] if eps else None)
        if node_id != cfg.node_id and ep is not None:
            peers[node_id] = PeerConnection(
                ep.host,
                ep.port,
                client_id=f"raft-client-{cfg.node_id}",
                timeout_ms=cfg.request_timeout_ms,
                ssl=ssl,
                sasl=sasl,
            )
    return peers


def bootstrap_records(cfg: KraftConfig) -> list[bytes]:
    """The bootstrap checkpoint's metadata records; without one, the default features' levels (as Kafka)."""
    found = read_bootstrap_metadata(cfg.metadata_log_dir)
    if found is not None:
        return found
    return [encode_record(r, 0) for r in bootstrap_feature_records(resolve_features(None, {}))]
