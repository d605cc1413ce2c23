"""Real kraftd processes and KIP-630 snapshots: under load the leader snapshots and deletes old segments; a
voter that was down fetches the snapshot (FetchSnapshot), loads it and catches up; nothing acknowledged lost;
a restart loads the latest snapshot and replays the log after it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kraftd.core.snapshots import read_snapshot
from kraftd.shell.loadgen import record_id_of
from kraftd.storage.layout import partition_dir
from kraftd.storage.snapshots import list_snapshots, snapshot_name
from tests.daemon.cluster import Cluster
from tests.daemon.test_durability_processes import log_records, read_acks

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

SNAPSHOTTING = {
    "metadata.log.max.record.bytes.between.snapshots": "20000",
    "metadata.max.retention.bytes": "0",
    "metadata.log.segment.bytes": "8192",
}


def first_segment(cluster: Cluster, node_id: int) -> int:
    segs = sorted(partition_dir(cluster.data_dir(node_id)).glob("*.log"))
    return int(segs[0].name[:-4]) if segs else 0


def wait_for(what: str, cond: object, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def records_of(cluster: Cluster, node_id: int) -> set[str]:
    """Record ids a node holds: its latest snapshot's values plus its log."""
    pdir = partition_dir(cluster.data_dir(node_id))
    ids = set(log_records(cluster, node_id).values())
    snaps = list_snapshots(pdir)
    if snaps:
        snap = read_snapshot(snaps[-1], (pdir / snapshot_name(snaps[-1])).read_bytes())
        ids |= {record_id_of(v) for v in snap.values()}
    return ids


def test_a_voter_behind_the_log_start_catches_up_from_the_snapshot(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, load=(4, 100), extra=SNAPSHOTTING)
    cluster.start(1)
    cluster.start(2)
    try:
        first = cluster.wait_leader(hosts=[1, 2], timeout=30)
        leader = first.leader_id
        wait_for(
            "a snapshot and deleted segments on the leader",
            lambda: (
                list_snapshots(partition_dir(cluster.data_dir(leader))) and first_segment(cluster, leader) > 0
            ),
        )
        cluster.start(3)
        wait_for("node 3 to install a snapshot", lambda: list_snapshots(partition_dir(cluster.data_dir(3))))
        time.sleep(1.0)
        acks = read_acks(cluster)
        assert acks, "nothing was acknowledged under load"
        target = max(acks)

        def caught_up() -> bool:
            try:
                _, info = cluster.describe(2000)
            except Exception:  # noqa: BLE001 - retried until the deadline
                return False
            return any(v.replica_id == 3 and v.log_end_offset > target for v in info.voters)

        wait_for("node 3 to catch up past the last acknowledged offset", caught_up)
        log3 = (tmp_path / "node-3.log").read_text(errors="replace")
        assert "log reset to start at offset" in log3, log3[-3000:]  # the fetched snapshot replaced its log
        cluster.kill(3)
        cluster.start(3)  # a restart loads the latest snapshot, then replays the log after it
        cluster.wait_leader(timeout=30)
        time.sleep(1.0)
        acks = read_acks(cluster)
        target = max(acks)
        wait_for("node 3 to catch up again after its restart", caught_up)
    finally:
        cluster.stop_all()
    assert first_segment(cluster, 3) > 0  # its log starts past 0: it came from the snapshot
    held = records_of(cluster, 3)
    missing = [rid for rid in acks.values() if rid not in held]
    assert not missing, f"node 3 lacks {len(missing)} acknowledged records, e.g. {missing[:3]}"
    log3 = (tmp_path / "node-3.log").read_text(errors="replace")
    assert log3.count("loaded snapshot") >= 1 and "Traceback" not in log3, log3[-3000:]
