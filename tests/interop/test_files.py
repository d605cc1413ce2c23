"""On-disk interop: each side reads and runs on the other's files.

References: org.apache.kafka.tools.DumpLogSegments (``kafka-dump-log --cluster-metadata-decoder``),
kafka.tools.StorageTool (``kafka-storage format``), and the controller's own start-up on a formatted directory
(meta.properties, bootstrap checkpoint, quorum-state, ``__cluster_metadata-0`` segments).
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.interop import assert_logs_agree
from tests.interop.kafka import MixedQuorum, classpath, dump_log

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(300)]

DUMP_TOOL = str(Path(sys.executable).with_name("kraft-dump-log"))
BATCH = re.compile(r"baseOffset: (\d+) lastOffset: (\d+)")


def batches_in(text: str) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in BATCH.findall(text)]


def metadata_files(q: MixedQuorum, node_id: int) -> list[Path]:
    d = q.node(node_id).metadata_dir
    return sorted(d.glob("*.log")) + sorted(d.glob("*.checkpoint"))


def our_dump(files: list[Path]) -> str:
    done = subprocess.run([DUMP_TOOL, *map(str, files)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    return done.stdout


def settle(q: MixedQuorum) -> None:
    q.wait_leader()
    assert_logs_agree(q)


def quiesce(q: MixedQuorum, timeout: float = 30) -> None:
    """Wait until the high watermark stops moving for a second: kraftd controllers write their own
    RegisterControllerRecords in their first seconds, so two dumps taken apart must wait for that."""
    deadline = time.monotonic() + timeout
    last = -1
    while time.monotonic() < deadline:
        hwm = q.wait_leader().high_watermark
        if hwm == last:
            return
        last = hwm
        time.sleep(1.0)
    raise AssertionError(f"the log kept growing for {timeout}s")


def test_kafka_dump_log_reads_kraftd_segments_and_checkpoints(kraftd_quorum: MixedQuorum) -> None:
    q = kraftd_quorum
    settle(q)
    quiesce(q)
    for node in q.nodes:
        files = metadata_files(q, node.node_id)
        assert any(f.suffix == ".checkpoint" for f in files), files
        theirs = dump_log(files, workdir=q.root).check()
        text = theirs.stdout + theirs.stderr
        assert not re.search(r"Exception|[Ee]rror|isvalid: false|Found \d+ invalid", text), text[-3000:]
        assert batches_in(theirs.stdout) == batches_in(our_dump(files))
        # Kafka's decoder names the control records it decoded (LeaderChange, KRaftVersion, KRaftVoters).
        assert "LeaderChange" in theirs.stdout and "KRaftVoters" in theirs.stdout


def test_kraftd_dump_log_reads_kafka_segments_and_checkpoints(kafka_quorum: MixedQuorum) -> None:
    q = kafka_quorum
    settle(q)
    files = metadata_files(q, 1)
    theirs = dump_log(files, workdir=q.root).check().stdout
    mine = our_dump(files)
    assert batches_in(mine) == batches_in(theirs) and batches_in(mine)
    assert "isvalid: false" not in mine


@pytest.mark.parametrize("bootstrap", ["static", "kip853"])
def test_each_side_starts_on_the_others_format_and_kraftd_takes_over_a_kafka_log(
    tmp_path: Path, bootstrap: str
) -> None:
    """Node 1 (Kafka) is formatted by kraft-storage, node 2 (kraftd) by Kafka's kafka-storage; later node 1's
    Kafka process is replaced by kraftd on the same directory, which must rejoin and catch up."""
    classpath()
    with MixedQuorum(tmp_path, ["kafka", "kraftd", "kraftd"], bootstrap=bootstrap, format_nodes=False) as q:
        q.format(q.node(1), tool="kraftd")
        q.format(q.node(2), tool="kafka")
        q.format(q.node(3))
        q.start_all()
        settle(q)
        first = q.node(1)
        first.stop(signal.SIGTERM)
        q.wait_leader(exclude=1)
        first.kind = "kraftd"
        first.start()
        upto = q.wait_for(
            "node 1 (kraftd on Kafka's directory) caught up",
            lambda i: any(v.replica_id == 1 and v.log_end_offset == i.high_watermark for v in i.voters),
        ).high_watermark
        assert assert_logs_agree(q) >= upto
