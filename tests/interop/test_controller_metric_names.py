"""kraftd's controller metrics against a real Kafka 4.3.1 controller's MBeans (read over JMX by Kafka's own JmxTool).

Invariants:
1. Every ``kafka_controller_*`` name a kraftd node exports is the name the Prometheus JMX exporter's usual Kafka rule
   (``kafka.(\\w+)<type=(.+), name=(.+)><>(Value|Count)`` -> ``kafka_$1_$2_$3``, lower case) gives one of Kafka's
   ``kafka.controller:type=KafkaController`` / ``type=ControllerEventManager`` MBeans; of Kafka's, only the
   documented ones (docs/OPERATIONS.md) are missing.
2. On a freshly started one-node quorum both say the same: one active controller, no brokers, topics or partitions,
   one new active controller seen, no metadata errors, no timed-out heartbeats.
"""

from __future__ import annotations

import csv
import re
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers.interop import MetricsQuorum
from tests.interop.kafka import JVM_OPTS, MixedQuorum, classpath, run_tool
from tools.local_quorum import free_ports

pytestmark = [pytest.mark.interop, pytest.mark.slow]
TYPES = ("KafkaController", "ControllerEventManager")
NOT_EXPORTED = {  # Kafka 4.3.1 gauges kraftd has no counterpart for (docs/OPERATIONS.md)
    "kafka_controller_kafkacontroller_eventqueueoperationsstartedcount",
    "kafka_controller_kafkacontroller_eventqueueoperationstimedoutcount",
    "kafka_controller_kafkacontroller_ignoredstaticvoters",
}
SAME_ON_A_FRESH_QUORUM = (
    "activecontrollercount",
    "activebrokercount",
    "fencedbrokercount",
    "controlledshutdownbrokercount",
    "globaltopiccount",
    "globalpartitioncount",
    "offlinepartitionscount",
    "preferredreplicaimbalancecount",
    "metadataerrorcount",
    "newactivecontrollerscount",
    "timedoutbrokerheartbeatcount",
)
MBEAN = re.compile(r"^kafka\.(\w+):type=(\w+),name=(\w+):(Value|Count)$")


def _kafka_controller(root: Path) -> dict[str, float]:
    """JMX-exporter name -> value of a one-node Kafka quorum's kafka.controller MBeans."""
    (jmx,) = free_ports(1)
    with MixedQuorum(root, ["kafka"]) as q:
        q.nodes[0].jvm_opts = [
            *JVM_OPTS,
            "-Dcom.sun.management.jmxremote",
            f"-Dcom.sun.management.jmxremote.port={jmx}",
            f"-Dcom.sun.management.jmxremote.rmi.port={jmx}",
            "-Dcom.sun.management.jmxremote.host=127.0.0.1",
            "-Djava.rmi.server.hostname=127.0.0.1",
            "-Dcom.sun.management.jmxremote.authenticate=false",
            "-Dcom.sun.management.jmxremote.ssl=false",
        ]
        q.start_all()
        q.wait_leader()
        url = f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{jmx}/jmxrmi"
        deadline = time.monotonic() + 30
        while True:  # the controller registers its gauges once it is active
            out = run_tool(
                "org.apache.kafka.tools.JmxTool",
                ["--jmx-url", url, "--object-name", "kafka.controller:*", "--one-time", "true"],
                workdir=root,
            ).check()
            header, values = csv.reader(line for line in out.stdout.splitlines() if line.strip())
            row = dict(zip(header, values, strict=True))
            if row.get("kafka.controller:type=KafkaController,name=ActiveControllerCount:Value") == "1":
                break
            assert time.monotonic() < deadline, row
            time.sleep(1)
    found: dict[str, float] = {}
    for name, value in row.items():
        m = MBEAN.match(name)
        if m and m.group(2) in TYPES:
            found[f"kafka_{m.group(1)}_{m.group(2)}_{m.group(3)}".lower()] = float(value)
    return found


def _kraftd(root: Path) -> dict[str, float]:
    q = MetricsQuorum(root, ["kraftd"])
    try:
        q.start_all()
        q.wait_leader()
        (port,) = q.__dict__["metrics_ports"].values()
        deadline = time.monotonic() + 30
        while True:
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
            samples = {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples}
            if samples.get("kafka_controller_kafkacontroller_activecontrollercount") == 1:
                return {n: v for n, v in samples.items() if n.startswith("kafka_controller_")}
            assert time.monotonic() < deadline, samples
            time.sleep(0.5)
    finally:
        q.stop_all()


def test_names_and_fresh_values_match_a_kafka_controller(tmp_path: Path) -> None:
    classpath()
    kafka = _kafka_controller(tmp_path / "kafka")
    ours = _kraftd(tmp_path / "kraftd")
    histogram = re.compile(r"_(bucket|sum|count)$")
    exported = {histogram.sub("", n) if "controllereventmanager_eventqueue" in n else n for n in ours}
    assert exported <= set(kafka), exported - set(kafka)
    assert set(kafka) - exported == NOT_EXPORTED
    for name in SAME_ON_A_FRESH_QUORUM:
        full = "kafka_controller_kafkacontroller_" + name
        assert ours[full] == kafka[full], (name, ours[full], kafka[full])
