"""Real Kafka 4.3.1 brokers on controllers of one kind (kraftd or Kafka's), as operators run them: the broker-cluster
harness of the interop tests (one module for both shapes).

:func:`start` / :class:`BrokerCluster`: one broker on three controllers, with authorization and SASL. The
controllers run an ACL authorizer with ``allow.everyone.if.no.acl.found=false`` and ``User:ANONYMOUS`` (their
PLAINTEXT listener: the controllers themselves and the broker) as the only super user, so every request a broker
forwards inside an Envelope is authorized with the principal it carries. The broker has no authorizer of its own
and two listeners: PLAINTEXT (its clients are ``User:ANONYMOUS``, a super user at the controllers) and
SASL_PLAINTEXT with PLAIN (``User:admin`` and ``User:alice``, ordinary principals). The quorum is dynamic
(KIP-853): a fourth controller of the same kind, formatted ``--no-initial-controllers``, fetches as an observer so
``add-controller`` / ``remove-controller`` can be run through the broker.

:class:`ToolCluster`: a small cluster for operator-tool tests: one controller and unmodified brokers, Kafka's
tools run against it with their output normalised for comparison.

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
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from kraftd.testing.brokers import BROKER_ID, format_broker, wait_log, write_properties
from kraftd.testing.kafka import (
    DEFAULT_VERSION,
    JVM_OPTS,
    Node,
    ToolResult,
    classpath,
    log_config,
    random_cluster_id,
    run_tool,
)
from kraftd.testing.quorum import MixedQuorum
from tools.local_quorum import free_ports

__all__ = ["BIN", "BROKER_ID", "BrokerCluster", "ToolCluster", "start", "wait_log"]

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'user_admin="admin-secret" user_alice="alice-secret";'
)
CONTROLLER_AUTHZ = {
    "authorizer.class.name": AUTHORIZER,
    "super.users": "User:ANONYMOUS",
    "allow.everyone.if.no.acl.found": "false",
    "controller.quorum.auto.join.enable": "false",
}
BIN = Path(sys.executable).parent


@dataclass
class BrokerCluster:
    kind: str
    quorum: MixedQuorum
    broker: Node
    sasl_port: int

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.broker.port}"

    @property
    def sasl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.sasl_port}"

    @property
    def spare(self) -> Node:
        return self.quorum.nodes[3]

    def ids(self) -> list[str]:
        """The cluster id and every directory id (controllers' and the broker's), as tools print them."""
        meta = (self.broker.data_dir / "meta.properties").read_text()
        broker_dir = re.findall(r"^directory\.id=(\S+)", meta, re.M)
        return [self.quorum.cluster_id, *(n.directory_id for n in self.quorum.nodes), *broker_dir]

    def client_config(self, user: str, path: Path) -> Path:
        """A ``--command-config`` file for ``user`` on the SASL listener."""
        path.write_text(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
            "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="{user}" password="{user}-secret";\n'
        )
        return path

    def stop(self) -> None:
        self.broker.stop()
        self.quorum.stop_all()


def _format(q: MixedQuorum, node: Node, how: list[str]) -> None:
    args = [
        "format",
        "-t",
        q.cluster_id,
        "-c",
        str(node.config),
        "--release-version",
        q.release_version,
        *how,
    ]
    if node.kind == "kafka":
        run_tool("kafka.tools.StorageTool", args, workdir=q.root).check()
    else:
        done = subprocess.run([str(BIN / "kraft-storage"), *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
    q.pin_directory_id(node)


def start(root: Path, kind: str, cluster_id: str | None = None) -> BrokerCluster:
    """Three voters and one observer of ``kind``, then the broker, running and unfenced."""
    q = MixedQuorum(
        root,
        [kind] * 4,
        bootstrap="kip853",
        cluster_id=cluster_id or random_cluster_id(),
        format_nodes=False,
        extra={**CONTROLLER_AUTHZ, "metadata.max.idle.interval.ms": "0"},
    )
    voters = q.nodes[:3]
    bootstrap_servers = ",".join(f"127.0.0.1:{n.port}" for n in voters)
    for n in q.nodes:  # the observer finds the leader through the three voters only
        props = q.properties(n) | {"controller.quorum.bootstrap.servers": bootstrap_servers}
        n.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    initial = ",".join(f"{n.node_id}@127.0.0.1:{n.port}:{n.directory_id}" for n in voters)
    for n in voters:
        _format(q, n, ["--initial-controllers", initial])
    _format(q, q.nodes[3], ["--no-initial-controllers"])
    q.start_all()
    q.wait_for("an observer", lambda i: i.leader_id >= 0 and 4 in {o.replica_id for o in i.observers}, 120)
    plain, sasl = free_ports(2)
    broker = Node("kafka", BROKER_ID, plain, root)
    props = {
        "process.roles": "broker",
        "node.id": str(BROKER_ID),
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.bootstrap.servers": bootstrap_servers,
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "log.dirs": str(broker.data_dir),
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "group.initial.rebalance.delay.ms": "0",
    }
    write_properties(broker, props)
    format_broker(broker, q.cluster_id, root)
    cluster = BrokerCluster(kind, q, broker, sasl)
    try:
        broker.start()
        wait_log(broker, r"Kafka Server started", 120)
    except BaseException:
        cluster.stop()
        raise
    return cluster


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
            write_properties(node, props)
            format_broker(node, self.quorum.cluster_id, node.root, "--no-initial-controllers")
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
