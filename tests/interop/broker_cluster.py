"""One real Kafka 4.3.1 broker on three controllers of one kind (kraftd or Kafka's), as operators run it.

The controllers run an ACL authorizer with ``allow.everyone.if.no.acl.found=false`` and ``User:ANONYMOUS`` (their
PLAINTEXT listener: the controllers themselves and the broker) as the only super user, so every request a broker
forwards inside an Envelope is authorized with the principal it carries. The broker has no authorizer of its own
and two listeners: PLAINTEXT (its clients are ``User:ANONYMOUS``, a super user at the controllers) and
SASL_PLAINTEXT with PLAIN (``User:admin`` and ``User:alice``, ordinary principals). The quorum is dynamic
(KIP-853): a fourth controller of the same kind, formatted ``--no-initial-controllers``, fetches as an observer so
``add-controller`` / ``remove-controller`` can be run through the broker.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.interop.kafka import MixedQuorum, Node, random_cluster_id, run_tool
from tools.local_quorum import free_ports

BROKER_ID = 100
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


def wait_log(node: Node, pattern: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not re.search(pattern, node.log_text()):
        assert node.alive(), node.tail()
        assert time.monotonic() < deadline, f"no {pattern!r} in {node.log_file.name}\n{node.tail()}"
        time.sleep(0.2)


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
    broker.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    run_tool(
        "kafka.tools.StorageTool", ["format", "-t", q.cluster_id, "-c", str(broker.config)], workdir=root
    ).check()
    cluster = BrokerCluster(kind, q, broker, sasl)
    try:
        broker.start()
        wait_log(broker, r"Kafka Server started", 120)
    except BaseException:
        cluster.stop()
        raise
    return cluster
