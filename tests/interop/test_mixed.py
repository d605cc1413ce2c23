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
from pathlib import Path

import pytest

from tests.helpers.interop import assert_logs_agree, lead_with, move_leader
from tests.interop.kafka import MixedQuorum, classpath, protocol_complaints

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(420)]

FETCH_TIMEOUT_S = 2.0


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
