"""Real Kafka controllers and kraftd nodes as voters of one quorum.

What each case shows (issue: real Apache Kafka as a peer):
1. Leadership lands on each kind: kill -9 (and restart) moves it until both kinds have led.
2. EndQuorumEpoch hand-off both ways: SIGTERM to a leader whose two followers are of the other kind hands the
   epoch to one of them well inside the fetch timeout (Kafka's KafkaRaftClient resigns with EndQuorumEpoch).
3. The high watermark advances on every voter, and the committed prefix of every voter's log is byte-identical
   batch by batch, so records written by a Kafka leader (bootstrap records, NoOp records) reach kraftd unchanged,
   and they survive a kraftd restart.
4. Kafka's controllers log no protocol complaint about anything a kraftd peer sent (KafkaNetworkChannel,
   SocketServer and the request handlers log every parse or version failure).
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from kwire.batches import iter_batches
from tests.interop.kafka import MixedQuorum, classpath, protocol_complaints

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(420)]

FETCH_TIMEOUT_S = 2.0


def committed_batches(q: MixedQuorum, node_id: int, below: int) -> list[tuple[int, bytes]]:
    """(base offset, raw bytes) of every batch that ends below ``below``, read from the node's segments."""
    out = []
    for seg in sorted(q.node(node_id).metadata_dir.glob("*.log")):
        for b in iter_batches(seg.read_bytes(), verify_crc=True, strict=False):
            if b.last_offset < below:
                out.append((b.base_offset, bytes(b.data)))
    return out


def assert_logs_agree(q: MixedQuorum) -> int:
    """Every live voter holds the same batches below the smallest log end offset; returns that offset."""
    info = q.wait_for(
        "every live voter at the high watermark",
        lambda i: (
            i.leader_id >= 0
            and all(v.log_end_offset == i.high_watermark for v in i.voters if q.node(v.replica_id).alive())
        ),
    )
    upto = info.high_watermark
    live = [n.node_id for n in q.nodes if n.alive()]
    logs = {i: committed_batches(q, i, upto) for i in live}
    first = logs[live[0]]
    assert first, "no committed batch to compare"
    for i in live[1:]:
        assert [o for o, _ in logs[i]] == [o for o, _ in first], f"batch offsets differ: node {i}"
        assert logs[i] == first, f"node {i} ({q.node(i).kind}) holds different bytes than node {live[0]}"
    return upto


def move_leader(q: MixedQuorum, sig: int) -> tuple[int, float]:
    """Signal the leader, wait for a successor, restart the old leader.

    Returns the new leader and the seconds from the old leader's exit to the new epoch's leader being known
    (a JVM's shutdown takes its own time before the process exits; a successor ordered by EndQuorumEpoch is
    elected around the exit, one that waits out its fetch timeout only a fetch timeout after it)."""
    old = q.wait_leader()
    q.node(old.leader_id).stop(sig)
    t0 = time.monotonic()
    new = q.wait_for("a new leader", lambda i: i.leader_id >= 0 and i.leader_epoch > old.leader_epoch)
    elapsed = time.monotonic() - t0
    q.node(old.leader_id).start()
    return new.leader_id, elapsed


def lead_with(q: MixedQuorum, kind: str, attempts: int = 8) -> int:
    """kill -9 leaders of the other kind until a node of ``kind`` leads."""
    leader = q.wait_leader().leader_id
    for _ in range(attempts):
        if q.node(leader).kind == kind:
            return leader
        leader, _ = move_leader(q, signal.SIGKILL)
    raise AssertionError(f"no {kind} node led after {attempts} elections\n{q.tails()}")


KKR = ("kafka", "kafka", "kraftd")
KRR = ("kafka", "kraftd", "kraftd")
CASES = [
    (KKR, "static", "4.3.1"),
    (KRR, "static", "4.3.1"),
    (KKR, "kip853", "4.3.1"),
    (KRR, "kip853", "4.3.1"),
    # The matrix entry: Kafka 3.9 (the first KIP-853 release; Vote 0-1, Fetch up to 17).
    (KKR, "kip853", "3.9.2"),
    (KRR, "static", "3.9.2"),
]


@pytest.mark.parametrize(
    "kinds,bootstrap,version", CASES, ids=lambda c: "-".join(c) if isinstance(c, tuple) else c
)
def test_mixed_quorum(tmp_path: Path, kinds: tuple[str, ...], bootstrap: str, version: str) -> None:
    classpath(version)
    with MixedQuorum(tmp_path, kinds, bootstrap=bootstrap, version=version) as q:
        q.start_all()
        # Kafka leads first (its bootstrap records and NoOps are what kraftd must store unchanged) ...
        lead_with(q, "kafka")
        q.wait_for("the Kafka leader's bootstrap records committed", lambda i: i.high_watermark > 2)
        hwm_kafka = assert_logs_agree(q)
        assert hwm_kafka > 1, "a Kafka leader commits its bootstrap records"
        # ... then kraftd, with Kafka following.
        lead_with(q, "kraftd")
        hwm_kraftd = assert_logs_agree(q)
        assert hwm_kraftd > hwm_kafka
        # EndQuorumEpoch hand-off towards the kind that is the majority of the followers.
        minority = "kraftd" if kinds.count("kafka") == 2 else "kafka"
        lead_with(q, minority)
        before = q.wait_leader()
        new_leader, seconds = move_leader(q, signal.SIGTERM)
        assert q.node(new_leader).kind != minority, f"{minority} leader handed over to {new_leader}"
        assert seconds < FETCH_TIMEOUT_S, f"graceful hand-off took {seconds:.2f}s (no EndQuorumEpoch?)"
        assert q.wait_leader().leader_epoch > before.leader_epoch
        # A kraftd follower restarts (kill -9) on the log it shares with Kafka and catches up.
        follower = next(n for n in q.nodes if n.kind == "kraftd" and n.node_id != q.wait_leader().leader_id)
        follower.stop(signal.SIGKILL)
        follower.start()
        assert assert_logs_agree(q) >= hwm_kraftd
        for node in q.nodes:
            if node.kind == "kafka":
                complaints = protocol_complaints(node.log_text())
                assert not complaints, f"node {node.node_id} complained:\n" + "\n".join(complaints[:5])
