"""A real Prometheus scraping a 3-node kraftd quorum that a real Kafka 4.3.1 broker runs on.

Invariants, each observed through Prometheus' HTTP API (PromQL), on real processes over loopback:
1. Every series name a kraftd node exports is in Prometheus (kafka_controller_*, raft metrics and the event queue
   histograms from all three nodes).
2. The controller metrics say what the cluster is: exactly one active controller; the broker is registered and
   active on every node's image; the topic created through the broker is counted with its partitions (none
   offline, none off its preferred leader); no metadata errors; every node learned of a leader; the applied
   record lag is small (idle NoOpRecords every 500 ms).
3. ops/prometheus/kraftd-rules.yml loads into Prometheus, every rule evaluates without error, every recording rule
   has data and no alert fires on the healthy quorum.
4. Every panel of ops/grafana/kraftd.json returns data.
5. The broker killed: every node's fencedbrokercount reaches 1, the topic's partitions (replication factor 1) are
   counted offline and off their preferred leader, and KraftdFencedBrokers and KraftdOfflinePartitions go pending.
6. The active controller killed: a survivor becomes the one active controller and the leader changes are counted.
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kraftd.testing.brokers import broker_node as _broker
from kraftd.testing.brokers import wait_log as _wait_log
from tests.helpers.interop import MetricsQuorum
from tests.interop.kafka import Node, classpath
from tests.ops.prom import Prometheus, binary, dashboard_queries
from tools.local_quorum import free_ports

pytestmark = [pytest.mark.interop, pytest.mark.slow]
C = "kafka_controller_kafkacontroller_"
PARTITIONS = 5


class Cluster:
    def __init__(self, quorum: MetricsQuorum, broker: Node, prom: Prometheus) -> None:
        self.quorum = quorum
        self.broker = broker
        self.prom = prom

    @property
    def targets(self) -> list[str]:
        return [f"127.0.0.1:{p}" for p in self.quorum.__dict__["metrics_ports"].values()]

    def wait(self, what: str, check: Callable[[], Any], timeout: float = 60) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not within {timeout}s\n{self.prom.tail()}")
            time.sleep(0.5)

    def values(self, promql: str) -> dict[str, float]:
        """instance -> value of an instant query."""
        return {r["metric"].get("instance", ""): float(r["value"][1]) for r in self.prom.query(promql)}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    binary("prometheus")  # skip or fail (CI) before any process starts
    classpath()
    from kafka.admin import KafkaAdminClient, NewTopic

    root = tmp_path_factory.mktemp("prometheus")
    quorum = MetricsQuorum(root / "q", ["kraftd"] * 3, extra={"broker.session.timeout.ms": "4000"})
    broker = _broker(quorum, root, extra={"broker.heartbeat.interval.ms": "500"})
    (port,) = free_ports(1)
    prom = Prometheus(root / "prometheus", port, [])
    try:
        quorum.start_all()
        quorum.wait_leader()
        broker.start()
        _wait_log(broker, r"The broker has been unfenced\. Transitioning from RECOVERY to RUNNING", 90)
        admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{broker.port}", request_timeout_ms=15000)
        admin.create_topics([NewTopic("metrics", PARTITIONS, 1)])
        admin.close()
        c = Cluster(quorum, broker, prom)
        prom.__init__(root / "prometheus", port, c.targets)  # type: ignore[misc]
        prom.start()
        c.wait("all three nodes scraped", lambda: c.values("sum(up)") == {"": 3.0})
        yield c
    finally:
        prom.stop()
        broker.stop()
        quorum.stop_all()


def _exported(target: str) -> set[str]:
    text = urllib.request.urlopen(f"http://{target}/metrics", timeout=10).read().decode()
    return {s.name for fam in text_string_to_metric_families(text) for s in fam.samples}


def test_every_exported_name_is_in_prometheus(cluster: Cluster) -> None:
    names = set().union(*(_exported(t) for t in cluster.targets))
    controller = {n for n in names if n.startswith("kafka_controller_")}
    assert {
        C + "activecontrollercount",
        C + "globalpartitioncount",
        C + "lastappliedrecordlagms",
    } <= controller
    assert "kafka_controller_controllereventmanager_eventqueuetimems_bucket" in controller
    assert "kafka_controller_controllereventmanager_eventqueueprocessingtimems_count" in controller

    def missing() -> set[str]:
        return {n for n in sorted(names) if not cluster.prom.query(n)}

    cluster.wait("every exported name queryable", lambda: not missing() or None)
    for n in controller | {n for n in names if n.startswith("kafka_server_raft_metrics_")}:
        instances = {r["metric"]["instance"] for r in cluster.prom.query(n)}
        assert instances == set(cluster.targets), n


def test_controller_metrics_describe_the_cluster(cluster: Cluster) -> None:
    v = cluster.values
    cluster.wait("one active controller", lambda: v(f"sum({C}activecontrollercount)") == {"": 1.0})
    nodes = set(cluster.targets)
    everywhere = cluster.wait(
        "every node's image has the topic",
        lambda: set(v(f"{C}globalpartitioncount == {PARTITIONS}")) == nodes or None,
    )
    assert everywhere
    for name, expected in (
        ("activebrokercount", 1.0),
        ("fencedbrokercount", 0.0),
        ("controlledshutdownbrokercount", 0.0),
        ("globaltopiccount", 1.0),
        ("offlinepartitionscount", 0.0),
        ("preferredreplicaimbalancecount", 0.0),
        ("metadataerrorcount", 0.0),
    ):
        assert v(C + name) == dict.fromkeys(nodes, expected), name
    assert all(x >= 1 for x in v(f"{C}newactivecontrollerscount").values())
    assert all(0 <= x < 5000 for x in v(f"{C}lastappliedrecordlagms").values())
    leader_hw = max(v("kafka_server_raft_metrics_high_watermark").values())
    assert all(0 < x <= leader_hw for x in v(f"{C}lastcommittedrecordoffset").values())
    assert min(v("kafka_controller_controllereventmanager_eventqueuetimems_count").values()) > 0


def test_rules_load_and_evaluate(cluster: Cluster) -> None:
    def groups() -> list[dict[str, Any]]:
        gs: list[dict[str, Any]] = cluster.prom.api("rules")["groups"]
        return (
            gs
            if gs and all(r.get("lastEvaluation", "").startswith("20") for g in gs for r in g["rules"])
            else []
        )

    gs = cluster.wait("rules evaluated", groups)
    rules = [r for g in gs for r in g["rules"]]
    assert len(rules) == 14
    for r in rules:
        assert r["health"] == "ok", r
    for r in rules:
        if r["type"] == "recording":
            assert cluster.wait(r["name"], lambda r=r: cluster.prom.query(r["name"])), r["name"]
    # Right after the first scrapes a rule may hold for one evaluation (changes() over a single sample is 0):
    # the quorum is healthy when, within a few evaluations, no alert is pending or firing.
    cluster.wait("no alert pending or firing", lambda: cluster.prom.api("alerts")["alerts"] == [], 20)


def test_every_dashboard_panel_returns_data(cluster: Cluster) -> None:
    for title, expr in dashboard_queries("kraftd"):
        result = cluster.wait(f"panel {title!r}: {expr}", lambda expr=expr: cluster.prom.query(expr), 30)
        assert result, title


def test_a_dead_broker_is_fenced_and_alerted(cluster: Cluster) -> None:
    cluster.broker.stop()
    nodes = set(cluster.targets)
    cluster.wait(
        "every node counts the broker fenced",
        lambda: set(cluster.values(f"{C}fencedbrokercount == 1")) == nodes or None,
        30,
    )
    assert cluster.values(f"{C}activebrokercount") == dict.fromkeys(nodes, 0.0)
    # Its partitions (replication factor 1) lose their leader: offline, and so not on their preferred leader.
    cluster.wait(
        "every node counts the topic's partitions offline",
        lambda: set(cluster.values(f"{C}offlinepartitionscount == {PARTITIONS}")) == nodes or None,
        30,
    )
    assert cluster.values(f"{C}preferredreplicaimbalancecount") == dict.fromkeys(nodes, float(PARTITIONS))
    assert cluster.values(f"{C}globalpartitioncount") == dict.fromkeys(nodes, float(PARTITIONS))

    def pending() -> list[Any]:
        return [
            a
            for a in cluster.prom.api("alerts")["alerts"]
            if a["labels"]["alertname"] == "KraftdFencedBrokers"
        ]

    (alert,) = cluster.wait("KraftdFencedBrokers pending", pending, 20)
    assert alert["state"] == "pending" and float(alert["value"]) == 1.0, alert

    def offline() -> list[Any]:
        alerts = cluster.prom.api("alerts")["alerts"]
        return [a for a in alerts if a["labels"]["alertname"] == "KraftdOfflinePartitions"]

    (alert,) = cluster.wait("KraftdOfflinePartitions pending", offline, 20)
    assert float(alert["value"]) == PARTITIONS, alert


def test_a_controller_failover_is_counted(cluster: Cluster) -> None:
    """Invariant 6: the survivors' newactivecontrollerscount grows by at least one, the recorded leader changes
    rise, and again exactly one node is active."""
    (active,) = cluster.values(f"{C}activecontrollercount == 1")
    ports = cluster.quorum.__dict__["metrics_ports"]
    node = next(n for n in cluster.quorum.nodes if f"127.0.0.1:{ports[n.node_id]}" == active)
    before = cluster.values(f"{C}newactivecontrollerscount")
    changes = max(cluster.values("kraftd:leader_changes:increase1h").values())
    node.stop()
    survivors = set(cluster.targets) - {active}

    def new_leader() -> bool:
        counts = cluster.values(f"{C}newactivecontrollerscount")
        grown = all(counts.get(t, 0) >= before[t] + 1 for t in survivors)
        actives = cluster.values(f"{C}activecontrollercount == 1")
        return grown and len(actives) == 1 and set(actives) <= survivors

    cluster.wait("a new active controller among the survivors", new_leader, 60)
    cluster.wait(
        "the recorded leader changes rise",
        lambda: max(cluster.values("kraftd:leader_changes:increase1h").values()) > changes,
        30,
    )
