"""``meta.properties`` at the root of the metadata log directory.

Contracts:
1. We write version 1: ``version``, ``cluster.id``, ``node.id``, ``directory.id`` (Kafka base64url uuid), in the
   Java properties text format, atomically (tmp + fsync + rename).
2. We read versions 0 and 1 (v0 carries ``broker.id`` instead of ``node.id``).
3. :func:`check_meta` refuses a directory whose cluster id or node id disagree with what the caller expects,
   with :class:`InconsistentMetaError`; a missing file is :class:`NotFormattedError`.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from kraftd.config import ConfigError, parse_properties
from kraftd.storage.errors import InconsistentMetaError, MalformedFileError, NotFormattedError
from kraftd.storage.fsio import atomic_write
from kraftd.storage.uuids import uuid_from_str, uuid_to_str

META_FILE = "meta.properties"


@dataclass(frozen=True, slots=True)
class MetaProperties:
    cluster_id: str
    node_id: int
    directory_id: uuid.UUID | None
    version: int = 1

    def to_text(self) -> str:
        lines = ["#", "#" + time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime())]
        lines.append(f"node.id={self.node_id}")
        if self.directory_id is not None:
            lines.append(f"directory.id={uuid_to_str(self.directory_id)}")
        lines.append(f"version={self.version}")
        lines.append(f"cluster.id={self.cluster_id}")
        return "\n".join(lines) + "\n"


def meta_path(log_dir: Path) -> Path:
    return log_dir / META_FILE


def write_meta(log_dir: Path, meta: MetaProperties) -> None:
    log_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(meta_path(log_dir), meta.to_text().encode("latin-1"))


def read_meta(log_dir: Path) -> MetaProperties | None:
    """The parsed file, or None when it does not exist (contract 2)."""
    path = meta_path(log_dir)
    try:
        text = path.read_text("latin-1")
    except FileNotFoundError:
        return None
    try:
        props = parse_properties(text)
    except ConfigError as exc:
        raise MalformedFileError(f"{path}: {exc}") from exc
    version_text = props.get("version", "0")
    if version_text not in ("0", "1"):
        raise MalformedFileError(f"{path}: unsupported version {version_text!r}; expected 0 or 1")
    version = int(version_text)
    id_key = "node.id" if version == 1 else "broker.id"
    raw_id = props.get(id_key)
    try:
        node_id = int(raw_id) if raw_id is not None else -1
    except ValueError:
        raise MalformedFileError(f"{path}: {id_key}={raw_id!r} is not an integer") from None
    cluster_id = props.get("cluster.id")
    if version == 1 and (cluster_id is None or raw_id is None):
        raise MalformedFileError(f"{path}: version 1 requires cluster.id and node.id")
    directory_id = None
    if "directory.id" in props:
        try:
            directory_id = uuid_from_str(props["directory.id"])
        except ValueError as exc:
            raise MalformedFileError(f"{path}: directory.id: {exc}") from None
    return MetaProperties(cluster_id or "", node_id, directory_id, version)


def check_meta(log_dir: Path, node_id: int, cluster_id: str | None = None) -> MetaProperties:
    """Load meta.properties and verify it belongs to this node (contract 3)."""
    meta = read_meta(log_dir)
    if meta is None:
        raise NotFormattedError(
            f"{meta_path(log_dir)} not found: the log directory is not formatted. "
            "Run `kraft-storage format --cluster-id <id> --config <server.properties> ...` first."
        )
    if meta.node_id != node_id:
        raise InconsistentMetaError(
            f"{meta_path(log_dir)} says node.id={meta.node_id} but the configuration says node.id={node_id}"
        )
    if cluster_id is not None and meta.cluster_id != cluster_id:
        raise InconsistentMetaError(
            f"{meta_path(log_dir)} says cluster.id={meta.cluster_id} but {cluster_id} was expected"
        )
    if not meta.cluster_id:
        raise InconsistentMetaError(f"{meta_path(log_dir)} has no cluster.id; reformat the directory")
    return meta
