"""Issue 22's proof: a new leader serves within seconds at any image size. Three controllers, 30 emulated brokers
heartbeating (kraft-swarm), the partitions created over the wire with CreateTopics (50 topics per request, as an
admin batches them), then kill -9 of the leader three times in a row (the killed controller restarted and caught
up before the next kill). Each time: one new leader within the fetch timeout plus election time, every running
broker's heartbeat answered within 5 s of the kill, no broker fenced, one election per kill on kraftd (Kafka's
Raft splits a vote now and then, so at most two there).

The same test against Kafka 4.3.1's controllers proves the test. 30k partitions by default (CI);
KRAFTD_SCALE=1 runs issue 22's 100k (several minutes per kind).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftd.testing.swarm import ELECTION_BACKOFF_S, ELECTION_TIMEOUT_S, FETCH_TIMEOUT_S, SwarmCluster
from tests.interop.kafka import classpath

SCALE = os.environ.get("KRAFTD_SCALE", "") == "1"
BROKERS, PARTITIONS_PER_TOPIC, TOPICS = 30, 100, (1000 if SCALE else 300)
KILLS = 3
# Fetch timeout (the followers notice), then one pre-vote and vote round (election timeout, at most one backoff),
# plus a second of slack for a loaded 2-core machine.
NEW_LEADER_WITHIN_S = FETCH_TIMEOUT_S + ELECTION_TIMEOUT_S + ELECTION_BACKOFF_S + 1.0
ANSWERED_WITHIN_S = 5.0

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(1800 if SCALE else 600)]


@pytest.fixture(scope="module", params=["kraftd", "kafka"])
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SwarmCluster]:
    classpath()
    root: Path = tmp_path_factory.mktemp(f"failover-{request.param}")
    c = SwarmCluster(root, request.param, BROKERS)
    try:
        c.run(c.swarm.wait_running(120), 130)
        result, took = c.create_topics("f", TOPICS, PARTITIONS_PER_TOPIC)
        assert set(result.values()) == {0}, Counter(result.values())
        print(f"{c.kind}: {TOPICS * PARTITIONS_PER_TOPIC} partitions created in {took:.1f}s")
        yield c
    finally:
        c.close()


def _elections(cluster: SwarmCluster, last: int = 20) -> str:
    """The last state transitions each controller logged (kraftd's raft lines, Kafka's "Transitioning" and
    "Completed transition" lines)."""
    out = []
    for node in cluster.q.nodes:
        text = node.log_file.read_text(errors="replace") if node.log_file.exists() else ""
        lines = [ln for ln in text.splitlines() if "(kraftd.raft)" in ln or "ransition" in ln]
        out.append(f"--- controller {node.node_id}\n" + "\n".join(lines[-last:]))
    return "\n".join(out)


def test_three_leader_kills_each_fail_over_within_seconds(cluster: SwarmCluster) -> None:
    failures = []
    for kill in range(1, KILLS + 1):
        f = cluster.fail_over(settle=10.0)
        print(f"{cluster.kind} kill {kill}: {f}")
        problems = []
        if f.new_leader < 0 or f.leader_after_s > NEW_LEADER_WITHIN_S:
            problems.append(f"new leader after {f.leader_after_s:.2f}s (bound {NEW_LEADER_WITHIN_S}s)")
        if f.unanswered or f.all_answered_s > ANSWERED_WITHIN_S:
            problems.append(
                f"last heartbeat answered {f.all_answered_s:.2f}s after the kill, {f.unanswered[:5]}"
            )
        if f.mistaken_fences:
            problems.append(f"{f.mistaken_fences} broker(s) fenced")
        # kraftd: one election per kill (election invariant 7 rules out the split vote of two followers timing
        # out together); Kafka's Raft has no such tie-break and splits now and then, so its bound is two.
        if f.new_epoch - f.old_epoch > (1 if cluster.kind == "kraftd" else 2):
            problems.append(f"epoch {f.old_epoch} -> {f.new_epoch} (more elections than allowed)")
        if problems:
            failures.append(f"kill {kill} of leader {f.killed}: " + "; ".join(problems))
            print(_elections(cluster))  # who waited on what: this failure was seen on CI, not here
            break  # a quorum that did not settle cannot be killed again meaningfully
        cluster.restart(f.killed)
    assert not failures, failures
