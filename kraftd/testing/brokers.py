"""Real Apache Kafka brokers (``process.roles=broker``) on a controller quorum of either kind.

Contracts:
1. :func:`broker_node` writes the properties of a real Kafka broker of ``quorum``'s cluster on a free port of
   127.0.0.1 and formats its directory with Kafka's own StorageTool; it does not start it (``node.start()``).
2. :func:`wait_log` polls the process's own log for a pattern until a deadline and returns the first match; it
   fails at once, with the log's tail, when the process has exited.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from kraftd.testing.kafka import Node, run_tool
from kraftd.testing.quorum import MixedQuorum
from tools.local_quorum import free_ports

__all__ = ["BROKER_ID", "broker_node", "format_broker", "wait_log", "write_properties"]

BROKER_ID = 100


def write_properties(node: Node, props: dict[str, str]) -> None:
    node.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))


def format_broker(node: Node, cluster_id: str, workdir: Path, *args: str) -> None:
    """Kafka's StorageTool ``format`` over a broker's directory (contract 1)."""
    run_tool(
        "kafka.tools.StorageTool",
        ["format", "-t", cluster_id, "-c", str(node.config), *args],
        workdir=workdir,
    ).check()


def broker_node(
    quorum: MixedQuorum,
    root: Path,
    broker_id: int = BROKER_ID,
    rf: int = 1,
    extra: dict[str, str] | None = None,
    *,
    bootstrap: bool = False,
) -> Node:
    """A formatted (not started) real Kafka broker of ``quorum``'s cluster; ``extra`` adds or overrides keys.
    ``bootstrap``: it finds the controllers through ``controller.quorum.bootstrap.servers`` (KIP-853) instead of
    the static ``controller.quorum.voters``."""
    (port,) = free_ports(1)
    node = Node("kafka", broker_id, port, root)
    props = {
        "process.roles": "broker",
        "node.id": str(broker_id),
        "listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        **(
            {"controller.quorum.bootstrap.servers": quorum.bootstrap_servers}
            if bootstrap
            else {"controller.quorum.voters": quorum.voters}
        ),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(node.data_dir),
        "offsets.topic.replication.factor": str(rf),
        "offsets.topic.num.partitions": "4",
        "transaction.state.log.replication.factor": str(rf),
        "replica.lag.time.max.ms": "5000",
        "group.initial.rebalance.delay.ms": "0",
        **(extra or {}),
    }
    write_properties(node, props)
    format_broker(node, quorum.cluster_id, root)
    return node


def wait_log(node: Node, pattern: str, timeout: float) -> str:
    """Contract 2."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = re.search(pattern, node.log_text())
        if m:
            return m.group(0)
        assert node.alive(), node.tail()
        time.sleep(0.2)
    raise AssertionError(f"no {pattern!r} in {node.log_file.name} within {timeout}s\n{node.tail()}")
