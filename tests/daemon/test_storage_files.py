"""meta.properties, quorum-state, leader-epoch-checkpoint, uuids and atomic writes."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from kraftd.storage import fsio
from kraftd.storage.epoch_checkpoint import EpochCheckpointFile, EpochEntry
from kraftd.storage.errors import (
    InconsistentMetaError,
    LogIOError,
    MalformedFileError,
    NotFormattedError,
)
from kraftd.storage.meta import MetaProperties, check_meta, read_meta, write_meta
from kraftd.storage.quorum_state import ElectionStateRecord, QuorumStateFile
from kraftd.storage.uuids import ONE_UUID, ZERO_UUID, random_uuid, uuid_from_str, uuid_to_str
from kwire.errors import ErrorCode


def test_uuid_text_matches_kafka() -> None:
    assert uuid_to_str(ZERO_UUID) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert uuid_to_str(ONE_UUID) == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert uuid_from_str("AAAAAAAAAAAAAAAAAAAAAQ") == ONE_UUID
    u = random_uuid()
    assert uuid_from_str(uuid_to_str(u)) == u
    assert not uuid_to_str(u).startswith("-")
    for bad in ["", "short", "AAAAAAAAAAAAAAAAAAAAA=", "AAAAAAAAAAAAAAAAAAAAA!", "AAAAAAAAAAAAAAAAAAAAAB"]:
        with pytest.raises(ValueError):
            uuid_from_str(bad)


def test_meta_properties_round_trip_and_text(tmp_path: Path) -> None:
    dir_id = uuid.UUID(int=12345)
    write_meta(tmp_path, MetaProperties("MkU3OEVBNTcwNTJENDM2Qg", 3, dir_id))
    text = (tmp_path / "meta.properties").read_text()
    assert "version=1\n" in text
    assert "cluster.id=MkU3OEVBNTcwNTJENDM2Qg\n" in text
    assert "node.id=3\n" in text
    assert f"directory.id={uuid_to_str(dir_id)}\n" in text
    assert read_meta(tmp_path) == MetaProperties("MkU3OEVBNTcwNTJENDM2Qg", 3, dir_id, 1)
    assert not (tmp_path / "meta.properties.tmp").exists()


def test_meta_properties_reads_kafka_v0_and_v1_files(tmp_path: Path) -> None:
    (tmp_path / "meta.properties").write_text("#\n#Thu Jan 01\nbroker.id=5\nversion=0\ncluster.id=abc\n")
    assert read_meta(tmp_path) == MetaProperties("abc", 5, None, 0)
    (tmp_path / "meta.properties").write_text(
        "#\n#Sun\nnode.id=1\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAQ\nversion=1\ncluster.id=xyz\n"
    )
    assert read_meta(tmp_path) == MetaProperties("xyz", 1, ONE_UUID, 1)


@pytest.mark.parametrize(
    "text",
    [
        "version=7\n",
        "version=1\nnode.id=1\n",
        "version=1\nnode.id=x\ncluster.id=c\n",
        "version=1\nnode.id=1\ncluster.id=c\ndirectory.id=nope\n",
    ],
)
def test_meta_properties_malformed(tmp_path: Path, text: str) -> None:
    (tmp_path / "meta.properties").write_text(text)
    with pytest.raises(MalformedFileError):
        read_meta(tmp_path)


def test_check_meta_refuses_missing_and_mismatched(tmp_path: Path) -> None:
    with pytest.raises(NotFormattedError, match="not formatted"):
        check_meta(tmp_path, 1)
    write_meta(tmp_path, MetaProperties("clusterA", 1, random_uuid()))
    assert check_meta(tmp_path, 1, "clusterA").cluster_id == "clusterA"
    with pytest.raises(InconsistentMetaError, match="node.id=1 but the configuration says node.id=2"):
        check_meta(tmp_path, 2)
    with pytest.raises(InconsistentMetaError, match="cluster.id=clusterA") as info:
        check_meta(tmp_path, 1, "clusterB")
    assert info.value.error_code == ErrorCode.INCONSISTENT_CLUSTER_ID


def test_quorum_state_v1_is_kafkas_single_line(tmp_path: Path) -> None:
    qs = QuorumStateFile(tmp_path)
    assert qs.read() is None
    qs.write(ElectionStateRecord(leader_epoch=7, leader_id=1))
    raw = (tmp_path / "quorum-state").read_text()
    assert raw == (
        '{"leaderId":1,"leaderEpoch":7,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}\n'
    )
    assert qs.read() == ElectionStateRecord(7, 1)
    voted = ElectionStateRecord(leader_epoch=8, voted_id=2, voted_directory_id=ONE_UUID)
    qs.write(voted)
    assert qs.read() == voted
    assert not (tmp_path / "quorum-state.tmp").exists()


def test_quorum_state_v0_round_trip_and_kafka_fixture(tmp_path: Path) -> None:
    qs = QuorumStateFile(tmp_path)
    rec = ElectionStateRecord(leader_epoch=3, voted_id=2, data_version=0, current_voters=(1, 2, 3))
    qs.write(rec)
    obj = json.loads((tmp_path / "quorum-state").read_text())
    assert list(obj) == [
        "clusterId",
        "leaderId",
        "leaderEpoch",
        "votedId",
        "appliedOffset",
        "currentVoters",
        "data_version",
    ]
    assert qs.read() == rec
    (tmp_path / "quorum-state").write_text(
        '{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,'
        '"currentVoters":[{"voterId":1}],"data_version":0}\n'
    )
    got = qs.read()
    assert got is not None and (got.leader_id, got.leader_epoch, got.current_voters) == (1, 2, (1,))


@pytest.mark.parametrize(
    "line",
    [
        '{"leaderId":1,"leaderEpoch":2,"votedId":-1}',
        '{"leaderId":9990,"leaderEpoch":3012,"data_version":2}',
        "not json",
        '{"leaderId":"x","leaderEpoch":1,"data_version":1}',
        "[1]",
    ],
)
def test_quorum_state_rejects_bad_files(tmp_path: Path, line: str) -> None:
    (tmp_path / "quorum-state").write_text(line + "\n")
    with pytest.raises(MalformedFileError):
        QuorumStateFile(tmp_path).read()


def test_epoch_checkpoint_format(tmp_path: Path) -> None:
    cp = EpochCheckpointFile(tmp_path)
    assert cp.read() == []
    cp.write([EpochEntry(1, 0), EpochEntry(3, 17)])
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n2\n1 0\n3 17\n"
    assert cp.read() == [EpochEntry(1, 0), EpochEntry(3, 17)]
    (tmp_path / "leader-epoch-checkpoint").write_text("0\n1\n4    9\n")
    assert cp.read() == [EpochEntry(4, 9)]


@pytest.mark.parametrize("text", ["1\n0\n", "0\n2\n1 0\n", "0\n1\n1\n", "0\n2\n3 5\n2 9\n", "0\nx\n", ""])
def test_epoch_checkpoint_malformed(tmp_path: Path, text: str) -> None:
    (tmp_path / "leader-epoch-checkpoint").write_text(text)
    with pytest.raises(MalformedFileError):
        EpochCheckpointFile(tmp_path).read()


def test_failed_fsync_is_fatal_and_keeps_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    qs = QuorumStateFile(tmp_path)
    qs.write(ElectionStateRecord(leader_epoch=1))

    def broken(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(fsio.os, "fsync", broken)
    with pytest.raises(LogIOError, match="fsync"):
        qs.write(ElectionStateRecord(leader_epoch=2))
    monkeypatch.undo()
    assert qs.read() == ElectionStateRecord(leader_epoch=1)
    assert not (tmp_path / "quorum-state.tmp").exists()
    assert os.listdir(tmp_path) == ["quorum-state"]
