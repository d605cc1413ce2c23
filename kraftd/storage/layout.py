"""Opening a node's storage: the refuse-to-start checks, the directory lock, and the partition directory.

Contracts:
1. :func:`open_node_storage` refuses to start (StorageNotReadyError subclasses) when meta.properties is missing,
   malformed, or disagrees with the configuration's node.id (or an expected cluster id), or when another process
   holds the directory lock.
2. On success the returned :class:`NodeStorage` owns an exclusive ``flock`` on ``<log dir>/.lock`` until
   :meth:`NodeStorage.close`; two nodes can never share a directory.
3. The log has been recovered (kraftd.storage.log contract 5) before the caller sees it.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass, field
from pathlib import Path

from kraftd.config import KraftConfig
from kraftd.storage.errors import LogIOError, StorageNotReadyError
from kraftd.storage.log import MetadataLog
from kraftd.storage.meta import MetaProperties, check_meta
from kraftd.storage.quorum_state import ElectionStateRecord, QuorumStateFile

PARTITION_DIR_NAME = "__cluster_metadata-0"
BOOTSTRAP_CHECKPOINT_NAME = "00000000000000000000-0000000000.checkpoint"
LOCK_FILE = ".lock"


def partition_dir(log_dir: Path) -> Path:
    return log_dir / PARTITION_DIR_NAME


def bootstrap_checkpoint_path(log_dir: Path) -> Path:
    return partition_dir(log_dir) / BOOTSTRAP_CHECKPOINT_NAME


@dataclass(slots=True)
class NodeStorage:
    log_dir: Path
    meta: MetaProperties
    log: MetadataLog
    quorum_state: QuorumStateFile
    election_state: ElectionStateRecord | None
    _lock_fd: int = field(default=-1, repr=False)

    @property
    def partition_dir(self) -> Path:
        return partition_dir(self.log_dir)

    @property
    def bootstrap_checkpoint(self) -> Path | None:
        path = bootstrap_checkpoint_path(self.log_dir)
        return path if path.exists() else None

    def close(self) -> None:
        self.log.close()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1


def _lock(log_dir: Path) -> int:
    path = log_dir / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise LogIOError(f"cannot create lock file {path}: {exc}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise StorageNotReadyError(
            f"{log_dir} is locked by another process: is another node using this directory?"
        ) from None
    return fd


def open_node_storage(
    config: KraftConfig, *, cluster_id: str | None = None, fsync: bool = True
) -> NodeStorage:
    """Validate and open the metadata log directory of ``config`` (contracts 1-3)."""
    log_dir = config.metadata_log_dir
    if not log_dir.is_dir():
        raise StorageNotReadyError(
            f"metadata log directory {log_dir} does not exist: the node is not formatted. "
            "Run `kraft-storage format --cluster-id <id> --config <server.properties> ...` first."
        )
    meta = check_meta(log_dir, config.node_id, cluster_id)
    lock_fd = _lock(log_dir)
    try:
        pdir = partition_dir(log_dir)
        pdir.mkdir(exist_ok=True)
        mlog = MetadataLog(pdir, config.segment_bytes, fsync=fsync, segment_ms=config.segment_ms)
        qs = QuorumStateFile(pdir)
        state = qs.read()
    except BaseException:
        os.close(lock_fd)
        raise
    return NodeStorage(log_dir, meta, mlog, qs, state, lock_fd)
