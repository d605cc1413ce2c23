"""A real kraftd process keeps and serves older snapshots as Kafka's KafkaRaftLog does (issue 21 §3): with a
snapshot every second and Kafka's default retention (100 MB), every snapshot file stays on disk, FetchSnapshot
serves an older one byte for byte, also after a restart (the shell loads the retained files back); with
``metadata.max.retention.bytes=0`` only the newest file remains."""

from __future__ import annotations

import socket
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kraftd.storage.layout import partition_dir
from kraftd.storage.meta import read_meta
from kraftd.storage.snapshots import list_snapshots, snapshot_name
from kwire.errors import ErrorCode
from kwire.headers import decode_response, encode_request
from tests.daemon.cluster import KRAFTD, free_ports
from tests.helpers.daemon import standalone_config, stop, wait_for
from tools.conformance import requests as rq

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]
EVERY_SECOND = {"metadata.log.max.snapshot.interval.ms": "1000"}


def fetch_snapshot(port: int, cluster_id: str, sid: Any, position: int) -> Any:
    """One FetchSnapshot v0 chunk from the (standalone) leader, at its current epoch."""
    epoch = 0
    for _ in range(3):
        req = rq.fetch_snapshot(
            cluster_id, epoch=epoch, end_offset=sid.offset, snapshot_epoch=sid.epoch, position=position
        )
        frame = encode_request(59, 0, 1, "retention-test", req)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(struct.pack(">i", len(frame)) + frame)
            buf = b""
            while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
                chunk = sock.recv(1 << 20)
                assert chunk, "closed"
                buf += chunk
        _, resp = decode_response(buf[4:], 59, 0)
        part = resp.topics[0].partitions[0]
        if part.error_code in (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH):
            epoch = part.current_leader.leader_epoch
            continue
        return part
    raise AssertionError("no epoch agreed")


def read_whole(port: int, cluster_id: str, sid: Any) -> bytes:
    data = b""
    while True:
        part = fetch_snapshot(port, cluster_id, sid, len(data))
        assert part.error_code == ErrorCode.NONE, part
        data += bytes(part.unaligned_records)
        if len(data) >= part.size:
            return data


def start(cfg: Path, err: Path) -> subprocess.Popen[bytes]:
    with err.open("ab") as out:
        return subprocess.Popen([KRAFTD, "start", str(cfg)], stderr=out)


def test_older_snapshots_are_kept_and_served_also_after_a_restart(tmp_path: Path) -> None:
    (port,) = free_ports(1)
    cfg = standalone_config(tmp_path, port, **EVERY_SECOND)
    data = tmp_path / "data"
    pdir = partition_dir(data)
    meta = read_meta(data)
    assert meta is not None
    err = tmp_path / "stderr.txt"
    proc = start(cfg, err)
    try:
        wait_for(lambda: len(list_snapshots(pdir)) >= 3, 30, "three snapshots")
        oldest = list_snapshots(pdir)[0]
        assert read_whole(port, meta.cluster_id, oldest) == (pdir / snapshot_name(oldest)).read_bytes()
        assert stop(proc) == 0
        proc = start(cfg, err)
        wait_for(lambda: len(list_snapshots(pdir)) >= 5, 30, "two more snapshots after the restart")
        assert list_snapshots(pdir)[0] == oldest  # retention (100 MB) deleted nothing
        assert read_whole(port, meta.cluster_id, oldest) == (pdir / snapshot_name(oldest)).read_bytes()
    finally:
        stop(proc)
    assert "Traceback" not in err.read_text()


def test_zero_retention_bytes_keeps_only_the_newest_snapshot(tmp_path: Path) -> None:
    (port,) = free_ports(1)
    cfg = standalone_config(tmp_path, port, **EVERY_SECOND, **{"metadata.max.retention.bytes": "0"})
    pdir = partition_dir(tmp_path / "data")
    meta = read_meta(tmp_path / "data")
    assert meta is not None
    seen: set[Any] = set()

    def several_taken() -> bool:
        seen.update(list_snapshots(pdir))
        return len(seen) >= 3

    proc = start(cfg, tmp_path / "stderr.txt")
    try:
        wait_for(several_taken, 30, "three snapshots taken")
        kept = list_snapshots(pdir)
        assert 1 <= len(kept) <= 2, (kept, seen)  # two only between a new file and the deletion it causes
        older = min(seen, key=lambda s: s.offset)
        assert older not in list_snapshots(pdir)
        assert fetch_snapshot(port, meta.cluster_id, older, 0).error_code == ErrorCode.SNAPSHOT_NOT_FOUND
    finally:
        stop(proc)
