"""Shared helpers for the daemon tests: server.properties files for loopback nodes."""

from __future__ import annotations

from pathlib import Path


def write_properties(
    path: Path,
    node_id: int,
    port: int,
    log_dir: Path,
    voters: str | None = None,
    extra: dict[str, str] | None = None,
) -> Path:
    props = {
        "node.id": str(node_id),
        "process.roles": "controller",
        "controller.listener.names": "CONTROLLER",
        "listeners": f"CONTROLLER://127.0.0.1:{port}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
        "metadata.log.dir": str(log_dir),
    }
    if voters is not None:
        props["controller.quorum.voters"] = voters
    else:
        props["controller.quorum.bootstrap.servers"] = f"127.0.0.1:{port}"
    props.update(extra or {})
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path
