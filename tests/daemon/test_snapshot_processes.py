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
from kwire.metadata_frame import decode_metadata_record
from tests.daemon.cluster import Cluster
from tests.helpers.daemon import log_records, read_acks

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]
FEATURE_LEVEL = 12  # FeatureLevelRecord's api key

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


def missing_from(cluster: Cluster, node_id: int, acks: dict[int, str]) -> list[str]:
    """Acknowledged load records a node lacks. Its latest snapshot stands for every offset below its end: a
    snapshot holds the metadata image, and load values are no metadata (kraftd.controller.image 2a), so the
    records at and past the snapshot's end must be in its log under their own offsets."""
    pdir = partition_dir(cluster.data_dir(node_id))
    snaps = list_snapshots(pdir)
    end = snaps[-1].offset if snaps else 0
    if snaps:  # the snapshot is the image: every value a framed metadata record, metadata.version among them
        snap = read_snapshot(snaps[-1], (pdir / snapshot_name(snaps[-1])).read_bytes())
        keys = [decode_metadata_record(v)[0] for v in snap.values()]
        assert FEATURE_LEVEL in keys and not [v for v in snap.values() if record_id_of(v)]
    log = log_records(cluster, node_id)
    return [rid for offset, rid in sorted(acks.items()) if offset >= end and log.get(offset) != rid]


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
    missing = missing_from(cluster, 3, acks)
    assert not missing, f"node 3 lacks {len(missing)} acknowledged records, e.g. {missing[:3]}"
    log3 = (tmp_path / "node-3.log").read_text(errors="replace")
    assert log3.count("loaded snapshot") >= 1 and "Traceback" not in log3, log3[-3000:]
