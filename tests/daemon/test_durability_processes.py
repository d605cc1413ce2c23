"""Real processes: kill -9 under load, recovery from torn tails and bit flips, wrong cluster ids, bad frames."""

from __future__ import annotations

import asyncio
import signal
import socket
import struct
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from generated.vote_request import PartitionData, TopicData, VoteRequest
from kraftd.config import load_config
from kraftd.shell.net.transport import PeerConnection
from kraftd.storage.layout import partition_dir
from kwire.errors import ErrorCode
from tests.daemon.cluster import KRAFTD, Cluster
from tests.daemon.conftest import write_properties
from tests.helpers.daemon import log_records, read_acks
from tools.storage_cli import format_directory

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def wait_restarted(cluster: Cluster, node_id: int, timeout: float = 20) -> None:
    """Until the node's log shows a second start (the restarted process is serving)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cluster.log_file(node_id).read_text(errors="replace").count(" listening on ") >= 2:
            return
        time.sleep(0.05)
    raise AssertionError(f"node {node_id} did not restart")


def wait_caught_up(cluster: Cluster, offset: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            _, info = cluster.describe(2000)
            if all(v.log_end_offset > offset for v in info.voters):
                return
        except Exception:  # noqa: BLE001 - retried until the deadline
            pass
        time.sleep(0.2)
    raise AssertionError(f"voters did not reach offset {offset}")


def wait_acks(cluster: Cluster, more_than: int, timeout: float = 30) -> int:
    """Deadline-based: the load generator starts once the leader is the active controller (after its
    activation records), which takes longer on a loaded machine."""
    deadline = time.monotonic() + timeout
    while (n := len(read_acks(cluster))) <= more_than:
        assert time.monotonic() < deadline, f"no more than {more_than} acknowledgements within {timeout}s"
        time.sleep(0.1)
    return n


def test_kill_9_of_the_leader_under_load_loses_nothing(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, load=(4, 100))
    cluster.start_all()
    try:
        first = cluster.wait_leader()
        wait_acks(cluster, 200)
        cluster.kill(first.leader_id, signal.SIGKILL)
        acked_before = len(read_acks(cluster))
        assert acked_before > 0, "the leader acknowledged nothing under load"
        others = [i for i in cluster.node_ids() if i != first.leader_id]
        second = cluster.wait_leader(hosts=others, exclude=first.leader_id)
        assert second.leader_epoch > first.leader_epoch
        wait_acks(cluster, acked_before)  # the new leader commits
        cluster.start(first.leader_id)
        wait_restarted(cluster, first.leader_id)
        time.sleep(0.5)
        acks = read_acks(cluster)
        wait_caught_up(cluster, max(acks))
    finally:
        cluster.stop_all()
    for node_id in cluster.node_ids():
        records = log_records(cluster, node_id)
        missing = [o for o, rid in acks.items() if records.get(o) != rid]
        assert not missing, f"node {node_id} lacks acknowledged offsets {missing[:5]}"
        dupes = [rid for rid, n in Counter(records.values()).items() if n > 1]
        assert not dupes, f"node {node_id} holds duplicated records {dupes[:5]}"


@pytest.mark.parametrize("damage", ["torn", "bitflip"])
def test_a_damaged_follower_cuts_its_tail_and_catches_up(tmp_path: Path, damage: str) -> None:
    cluster = Cluster(tmp_path, load=(4, 100))
    cluster.start_all()
    try:
        info = cluster.wait_leader()
        wait_acks(cluster, 100)
        victim = next(i for i in cluster.node_ids() if i != info.leader_id)
        cluster.kill(victim, signal.SIGKILL)
        seg = partition_dir(cluster.data_dir(victim)) / "00000000000000000000.log"
        data = bytearray(seg.read_bytes())
        assert len(data) > 500
        if damage == "torn":
            seg.write_bytes(bytes(data[:-37]))
        else:
            data[-20] ^= 0x08
            seg.write_bytes(bytes(data))
        cluster.start(victim)
        wait_restarted(cluster, victim)
        time.sleep(0.5)
        acks = read_acks(cluster)
        wait_caught_up(cluster, max(acks))
        text = cluster.log_file(victim).read_text()
        assert "recovered log: truncated" in text, text[-3000:]
        assert ("torn" in text) if damage == "torn" else ("CRC" in text)
    finally:
        cluster.stop_all()
    records = log_records(cluster, victim)
    assert all(records.get(o) == rid for o, rid in acks.items())


def test_a_node_with_another_cluster_id_gets_no_vote(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    # Re-format node 3 with a different cluster id.
    import shutil

    shutil.rmtree(cluster.data_dir(3))
    format_directory(load_config(cluster.configs[2]), "AAAAAAAAAAAAAAAAAAAABA")
    cluster.start_all()
    try:
        info = cluster.wait_leader(hosts=[1, 2])
        assert info.leader_id in (1, 2)

        async def probe() -> tuple[int, bool]:
            conn = PeerConnection("127.0.0.1", cluster.ports[0], client_id="probe", timeout_ms=3000)
            try:
                part = PartitionData(
                    0, info.leader_epoch + 5, 3, last_offset_epoch=info.leader_epoch, last_offset=10**6
                )
                resp = await conn.request(
                    VoteRequest(
                        cluster_id="AAAAAAAAAAAAAAAAAAAABA",
                        voter_id=1,
                        topics=[TopicData("__cluster_metadata", [part])],
                    )
                )
            finally:
                await conn.close()
            granted = bool(resp.topics and resp.topics[0].partitions[0].vote_granted)
            return resp.error_code, granted

        code, granted = asyncio.run(probe())
        assert code == ErrorCode.INCONSISTENT_CLUSTER_ID and not granted
        time.sleep(2.0)
        _, again = cluster.describe(hosts=[1, 2])
        assert again.leader_id in (1, 2) and again.leader_epoch == info.leader_epoch
        n3 = next(v for v in again.voters if v.replica_id == 3)
        assert n3.log_end_offset <= 0
    finally:
        cluster.stop_all()


def test_garbage_and_oversize_frames_close_only_that_connection(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    cluster.start_all()
    try:
        cluster.wait_leader()
        port = cluster.ports[0]
        for payload in [
            struct.pack(">i", 2**31 - 1) + b"x" * 10,
            struct.pack(">i", 16) + b"\xff" * 16,
            b"\x00\x00\x00\x00",
        ]:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(payload)
                s.settimeout(5)
                assert s.recv(100) == b"", f"connection stayed open after {payload[:8]!r}"
        with socket.create_connection(("127.0.0.1", port), timeout=5) as healthy:
            _, info = cluster.describe(hosts=[1])
            assert info.leader_id >= 0
            healthy.sendall(b"\x00\x00")  # a partial frame on a live connection does not disturb others
            _, info2 = cluster.describe(hosts=[1])
            assert info2.leader_id >= 0
    finally:
        cluster.stop_all()


def test_unformatted_directory_refuses_to_start(tmp_path: Path) -> None:
    cfg = write_properties(tmp_path / "s.properties", 1, 1, tmp_path / "nodata", voters="1@127.0.0.1:1")
    out = subprocess.run([KRAFTD, "start", str(cfg)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 1
    assert "cannot start" in out.stderr and "not formatted" in out.stderr
    (tmp_path / "nodata").mkdir()
    format_directory(load_config(cfg), "MkU3OEVBNTcwNTJENDM2Qg")
    other = write_properties(tmp_path / "o.properties", 2, 1, tmp_path / "nodata", voters="2@127.0.0.1:1")
    out = subprocess.run([KRAFTD, "start", str(other)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 1 and "node.id=1" in out.stderr
