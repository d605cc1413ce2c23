"""A CI-sized broker swarm per controller kind (issue 24 §4): 50 emulated brokers and 20k partitions on three kraftd
controllers, and the same on three Kafka 4.3.1 controllers. Asserted on both kinds: no broker fenced by mistake
over a steady interval, a new topic reaches every observer, AlterPartition shrinks and expands an ISR, controlled
shutdown moves every leadership off the broker, a controller failover keeps every broker unfenced, and
placement and election follow the same rules (replicas spread, leaders balanced, leader = first replica)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftd.testing.swarm import ELECTION_BACKOFF_S, ELECTION_TIMEOUT_S, FETCH_TIMEOUT_S, SwarmCluster
from tests.interop.kafka import classpath, protocol_complaints
from tools.swarm.lifecycle import RUNNING, STOPPED
from tools.swarm.partition_leader import alter_isr
from tools.swarm.swarm import percentile

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(420)]

BROKERS, TOPICS, PARTITIONS, RF = 50, 200, 100, 3


def wait(what: str, predicate: object, timeout: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if predicate():  # type: ignore[operator]
            return time.monotonic() - started
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@pytest.fixture(scope="module", params=["kraftd", "kafka"])
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SwarmCluster]:
    classpath()
    root: Path = tmp_path_factory.mktemp(f"swarm-{request.param}")
    c = SwarmCluster(root, request.param, BROKERS)
    try:
        c.run(c.swarm.wait_running(120), 130)
        result, took = c.create_topics("t", TOPICS, PARTITIONS, RF)
        assert set(result.values()) == {0}, Counter(result.values())
        print(f"{c.kind}: {TOPICS * PARTITIONS} partitions created in {took:.2f}s")
        wait(
            "every partition in the replayed image",
            lambda: (
                sum(len(t.partitions) for t in c.swarm.replay.image.topics.values()) == TOPICS * PARTITIONS
            ),
            60,
        )
        yield c
        for node in c.q.nodes:
            assert not protocol_complaints(node.log_text()), protocol_complaints(node.log_text())[:5]
    finally:
        c.close()


def test_placement_and_election_follow_the_same_rules(cluster: SwarmCluster) -> None:
    parts = cluster.swarm.replay.partitions()
    assert len(parts) == TOPICS * PARTITIONS
    replicas: Counter[int] = Counter()
    leaders: Counter[int] = Counter()
    for _, _, p in parts:
        assert len(set(p.replicas)) == RF and set(p.replicas) <= cluster.swarm.brokers.keys()
        assert p.leader == p.replicas[0] and sorted(p.isr) == sorted(p.replicas), p
        replicas.update(p.replicas)
        leaders[p.leader] += 1
    for name, counts, total in (("replicas", replicas, len(parts) * RF), ("leaders", leaders, len(parts))):
        mean = total / BROKERS
        assert len(counts) == BROKERS, f"{name} on {len(counts)} of {BROKERS} brokers"
        spread = (min(counts.values()) / mean, max(counts.values()) / mean)
        print(
            f"{cluster.kind}: {name} per broker {min(counts.values())}..{max(counts.values())} (mean {mean})"
        )
        assert 0.8 <= spread[0] and spread[1] <= 1.2, (name, spread)


def test_a_new_topic_reaches_every_observer(cluster: SwarmCluster) -> None:
    w = cluster.swarm.watch("propagation-0")  # before the request: every observer's fetch time is seen
    result, _ = cluster.create_topics("propagation-", 1, 1)
    assert result == {"propagation-0": 0}
    wait("every observer to fetch the new topic", lambda: w.done, 15)
    delays = w.delays_ms()
    print(f"{cluster.kind}: propagation p50 {percentile(delays, 0.5):.1f} ms, max {max(delays):.1f} ms")
    assert len(delays) == len(cluster.swarm.running())


def test_steady_interval_fences_no_broker(cluster: SwarmCluster) -> None:
    started = time.monotonic()
    time.sleep(12)
    stats = cluster.swarm.heartbeat_stats(started, time.monotonic())
    print(f"{cluster.kind}: steady heartbeats {stats}")
    assert not cluster.swarm.mistaken_fences()
    assert all(b.state == RUNNING for b in cluster.swarm.brokers.values() if b.alive)
    assert stats["errors"] == 0
    # every broker heartbeats every 2 s: 6 per broker in 12 s, give or take one at each edge
    assert stats["count"] >= BROKERS * 4


def test_alter_partition_shrinks_and_expands_the_isr(cluster: SwarmCluster) -> None:
    swarm = cluster.swarm
    topic, index, p = next((t, i, p) for t, i, p in swarm.replay.partitions() if t.startswith("t"))
    leader = swarm.brokers[p.leader]
    full = list(p.isr)
    shrunk = [b for b in full if b != p.replicas[-1]]
    answer = cluster.run(alter_isr(leader, topic, index, shrunk), 30)
    assert answer is not None and answer.error_code == 0, answer
    assert sorted(answer.isr) == sorted(shrunk)
    state = lambda: swarm.replay.image.topics[swarm.replay.image.topic_ids[topic]].partitions[index]  # noqa: E731
    wait("the shrunk ISR in the metadata log", lambda: sorted(state().isr) == sorted(shrunk), 15)
    answer = cluster.run(alter_isr(leader, topic, index, full), 30)
    assert answer is not None and answer.error_code == 0, answer
    wait("the expanded ISR in the metadata log", lambda: sorted(state().isr) == sorted(full), 15)
    assert state().leader == leader.id


def test_controlled_shutdown_moves_every_leadership(cluster: SwarmCluster) -> None:
    swarm = cluster.swarm
    victim = max((b for b in swarm.running()), key=lambda b: swarm.replay.led_by(b.id))
    led = swarm.replay.led_by(victim.id)
    assert led > 0
    swarm.shut_down(victim.id)
    took = wait("the broker to be told to shut down", lambda: victim.state == STOPPED, 60)
    wait("no partition led by the stopped broker", lambda: swarm.replay.led_by(victim.id) == 0, 15)
    print(f"{cluster.kind}: controlled shutdown of a broker leading {led} partitions: {took:.2f}s")
    assert not swarm.mistaken_fences()


def test_the_kraft_swarm_command_runs_against_the_quorum(cluster: SwarmCluster) -> None:
    """The CLI beside the test's swarm: 5 more brokers (ids 500-504) come up, heartbeat for 4 s, and report."""
    voters = ",".join(f"{n.node_id}@127.0.0.1:{n.port}" for n in cluster.q.nodes)
    args = ["--voters", voters, "--cluster-id", cluster.q.cluster_id, "--brokers", "5", "--first-id", "500"]
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("kraft-swarm")),
            *args,
            "--duration",
            "4",
            "--report-every",
            "1",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)
    assert summary["brokers"] == 5 and summary["mistaken_fences"] == 0, summary
    assert summary["heartbeats"]["count"] >= 5 and summary["heartbeats"]["errors"] == 0, summary
    assert "swarm CPU" in done.stderr and summary["swarm_cpu_s"] > 0


def test_controller_failover_keeps_every_broker_unfenced(cluster: SwarmCluster) -> None:
    f = cluster.fail_over(settle=8.0)
    print(f"{cluster.kind}: {f}")
    assert (
        f.new_leader > 0 and f.leader_after_s <= FETCH_TIMEOUT_S + ELECTION_TIMEOUT_S + ELECTION_BACKOFF_S + 1
    )
    assert not f.unanswered and f.all_answered_s <= 5.0, f
    assert f.mistaken_fences == 0, f
    # kraftd: one election (election invariant 7 rules out the split vote of two followers timing out together).
    # Kafka's Raft has no such tie-break and splits now and then (epoch 1 -> 3 seen once here): its bound is two.
    assert f.new_epoch - f.old_epoch <= (1 if cluster.kind == "kraftd" else 2), f
    cluster.restart(f.killed)
