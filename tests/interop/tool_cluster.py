"""A small real cluster for operator-tool tests: one controller of either kind (kraftd or Kafka's) and unmodified
Kafka 4.3.1 brokers on it, and Kafka's tools run against it with their output normalised for comparison.

Contracts:
1. :class:`ToolCluster` formats and starts the controller (KIP-853 bootstrap, so quorum tools see directory ids)
   and ``brokers`` Kafka brokers (ids 100, 101, ...) that find it through ``controller.quorum.bootstrap.servers``;
   :meth:`ToolCluster.start` returns once every broker logged "Kafka Server started"; :meth:`ToolCluster.stop`
   leaves no process running. Both kinds get the same properties, so two clusters differ only in the controller.
2. :meth:`ToolCluster.tool` runs one of Kafka's tools with ``{bs}`` / ``{bc}`` / ``{dir}`` in its arguments
   replaced by the broker bootstrap, the controller bootstrap and the cluster's work directory; a tool that has
   not exited within ``timeout`` seconds is killed and reported as exit code 124, stderr "TIMEOUT: ...". The
   first run writes a class-data-sharing archive that later runs map (JVM logging off, so no CDS line reaches
   the output).
3. :func:`normalise` maps what legitimately differs between two runs to placeholders: this cluster's ports
   (``<C0>`` for the controller, ``<B0>``.. for the brokers), its directories (``<dir>``), Kafka UUIDs (``<uuid>``;
   22 base64 characters with a digit or a capital that are not a CamelCase name),
   JVM object hashes, and with ``numbers=True`` every remaining number (``<n>``: offsets, epochs, timings and
   sizes that depend on how many records each controller wrote). Nothing else is rewritten.
"""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.interop.kafka import (
    DEFAULT_VERSION,
    JVM_OPTS,
    MixedQuorum,
    Node,
    ToolResult,
    classpath,
    log_config,
    run_tool,
)
from tools.local_quorum import free_ports

BROKER_BASE = 100
# A Kafka Uuid in text form: 22 URL-safe base64 characters with a digit or a capital, and not a CamelCase name
# (VoterNotFoundException, ConsumerGroupHeartbeat).
_UUID = re.compile(
    r"(?<![A-Za-z0-9_-])(?=[A-Za-z_-]*[0-9A-Z])(?!(?:[A-Z][a-z]+)+(?![A-Za-z0-9_-]))[A-Za-z0-9_-]{22}(?![A-Za-z0-9_-])"
)
_HASH = re.compile(r"@[0-9a-f]{6,8}\b")
_NUMBER = re.compile(r"(?<![A-Za-z<])-?\d+(?:\.\d+)?")


@dataclass
class ToolCluster:
    kind: str
    root: Path
    brokers: int = 2
    quorum: MixedQuorum = field(init=False)
    nodes: list[Node] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.quorum = MixedQuorum(
            self.root / "controllers",
            [self.kind],
            bootstrap="kip853",
            extra={"metadata.max.idle.interval.ms": "0"},
        )
        ports = free_ports(self.brokers)
        for i, port in enumerate(ports):
            node = Node("kafka", BROKER_BASE + i, port, self.root / "brokers")
            node.root.mkdir(parents=True, exist_ok=True)
            props = {
                "process.roles": "broker",
                "node.id": str(node.node_id),
                "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                "controller.listener.names": "CONTROLLER",
                "controller.quorum.bootstrap.servers": self.quorum.bootstrap_servers,
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                "inter.broker.listener.name": "PLAINTEXT",
                "log.dirs": str(node.data_dir),
                "offsets.topic.replication.factor": "1",
                "offsets.topic.num.partitions": "2",
                "transaction.state.log.replication.factor": "1",
                "transaction.state.log.min.isr": "1",
                "share.coordinator.state.topic.replication.factor": "1",
                "share.coordinator.state.topic.min.isr": "1",
                "group.initial.rebalance.delay.ms": "0",
            }
            node.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
            run_tool(
                "kafka.tools.StorageTool",
                ["format", "-t", self.quorum.cluster_id, "-c", str(node.config), "--no-initial-controllers"],
                workdir=node.root,
            ).check()
            self.nodes.append(node)

    @property
    def bootstrap_server(self) -> str:
        return f"127.0.0.1:{self.nodes[0].port}"

    @property
    def bootstrap_controller(self) -> str:
        return self.quorum.bootstrap_servers

    def start(self, timeout: float = 120) -> None:
        self.quorum.start_all()
        self.quorum.wait_leader(timeout=60)
        for node in self.nodes:
            node.start()
        deadline = time.monotonic() + timeout
        for node in self.nodes:
            while "Kafka Server started" not in node.log_text():
                assert node.alive(), node.tail()
                assert time.monotonic() < deadline, node.tail()
                time.sleep(0.2)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
        self.quorum.stop_all()

    def tails(self, chars: int = 2000) -> str:
        return self.quorum.tails(chars) + "\n" + "\n".join(n.tail(chars) for n in self.nodes)

    def tool(self, main_class: str, args: list[str], timeout: float = 40) -> ToolResult:
        """Contract 2."""
        subst = {"{bs}": self.bootstrap_server, "{bc}": self.bootstrap_controller, "{dir}": str(self.root)}
        real = []
        for a in args:
            for k, v in subst.items():
                a = a.replace(k, v)
            real.append(a)
        # Class-data sharing: the first tool run dumps the classes it loaded, later runs map them (a third less CPU
        # per tool start on this machine).
        archive = self.root / "tools.jsa"
        cds = [
            f"-XX:SharedArchiveFile={archive}" if archive.exists() else f"-XX:ArchiveClassesAtExit={archive}"
        ]
        cmd = [
            "java",
            *JVM_OPTS,
            *cds,
            "-Xlog:disable",
            *log_config(self.root / "tool-log", DEFAULT_VERSION, "WARN"),
        ]
        cmd += ["-cp", classpath(), main_class, *real]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=self.root)
        except subprocess.TimeoutExpired:
            return ToolResult(cmd, 124, "", f"TIMEOUT: no exit within {timeout}s")
        return ToolResult(cmd, done.returncode, done.stdout, done.stderr)

    def normalise(self, text: str, *, numbers: bool = False) -> str:
        """Contract 3."""
        text = text.replace(str(self.root), "<dir>")
        for i, node in enumerate(self.quorum.nodes):
            text = re.sub(rf"(?<!\d){node.port}(?!\d)", f"<C{i}>", text)
        for i, node in enumerate(self.nodes):
            text = re.sub(rf"(?<!\d){node.port}(?!\d)", f"<B{i}>", text)
        text = _UUID.sub("<uuid>", text)
        text = _HASH.sub("@<hash>", text)
        if numbers:
            text = _NUMBER.sub("<n>", text)
        return text
