"""Opening a node's storage: refuse-to-start checks and the directory lock."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftd.config import config_from_properties
from kraftd.storage.errors import InconsistentMetaError, NotFormattedError, StorageNotReadyError
from kraftd.storage.layout import open_node_storage, partition_dir
from kraftd.storage.meta import MetaProperties, write_meta
from kraftd.storage.quorum_state import ElectionStateRecord, QuorumStateFile
from kraftd.storage.uuids import random_uuid


def cfg(log_dir: Path, node_id: int = 1):  # type: ignore[no-untyped-def]
    return config_from_properties(
        {
            "node.id": str(node_id),
            "process.roles": "controller",
            "controller.listener.names": "CONTROLLER",
            "listeners": "CONTROLLER://127.0.0.1:9093",
            "controller.quorum.voters": f"{node_id}@127.0.0.1:9093",
            "metadata.log.dir": str(log_dir),
        }
    )


def test_unformatted_directories_are_refused(tmp_path: Path) -> None:
    with pytest.raises(StorageNotReadyError, match="does not exist"):
        open_node_storage(cfg(tmp_path / "missing"))
    with pytest.raises(NotFormattedError, match="kraft-storage format"):
        open_node_storage(cfg(tmp_path))


def test_node_and_cluster_mismatch_are_refused(tmp_path: Path) -> None:
    write_meta(tmp_path, MetaProperties("clusterA", 1, random_uuid()))
    with pytest.raises(InconsistentMetaError, match="node.id=1"):
        open_node_storage(cfg(tmp_path, node_id=2))
    with pytest.raises(InconsistentMetaError, match="clusterA"):
        open_node_storage(cfg(tmp_path), cluster_id="clusterB")


def test_open_recovers_state_and_locks_the_directory(tmp_path: Path) -> None:
    write_meta(tmp_path, MetaProperties("clusterA", 1, random_uuid()))
    partition_dir(tmp_path).mkdir()
    QuorumStateFile(partition_dir(tmp_path)).write(ElectionStateRecord(leader_epoch=4, leader_id=1))
    storage = open_node_storage(cfg(tmp_path))
    try:
        assert storage.election_state == ElectionStateRecord(leader_epoch=4, leader_id=1)
        assert storage.log.end_offset == 0
        assert storage.partition_dir.name == "__cluster_metadata-0"
        with pytest.raises(StorageNotReadyError, match="locked"):
            open_node_storage(cfg(tmp_path))
    finally:
        storage.close()
    open_node_storage(cfg(tmp_path)).close()
