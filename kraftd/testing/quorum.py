"""A controller quorum of real Kafka controllers and kraftd nodes on loopback (tests and benchmarks).

Contracts:
1. A :class:`MixedQuorum` node is either ``"kafka"`` (``kafka.Kafka`` with ``process.roles=controller``) or
   ``"kraftd"``; all nodes of one quorum share the cluster id, the voter set and the timeouts, so leadership can land
   on either kind. :meth:`MixedQuorum.stop_all` leaves no process running.
2. Waits are bounded by deadlines and poll a real RPC (DescribeQuorum through kraftd's client) or the process's own
   log; no fixed sleeps.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from kraftd.testing.kafka import DEFAULT_VERSION, Node, random_cluster_id, run_tool
from kwire.quorum_client import QuorumInfo, fetch_quorum
from tools.local_quorum import free_ports

__all__ = ["CREATED", "MixedQuorum"]

# Every quorum made in this process, so a failing test can keep and print its logs (tests/interop/conftest.py).
CREATED: list[MixedQuorum] = []


class MixedQuorum:
    """A controller quorum of real Kafka controllers and kraftd nodes on loopback (contract 1).

    ``bootstrap`` is ``"static"`` (``controller.quorum.voters``, kraft.version 0) or ``"kip853"``
    (``controller.quorum.bootstrap.servers`` and ``--initial-controllers`` with directory ids, kraft.version 1).
    """

    def __init__(
        self,
        root: Path,
        kinds: Sequence[str],
        *,
        bootstrap: str = "static",
        version: str = DEFAULT_VERSION,
        cluster_id: str | None = None,
        extra: dict[str, str] | None = None,
        format_nodes: bool = True,
    ) -> None:
        assert bootstrap in ("static", "kip853")
        self.root = root
        self.bootstrap = bootstrap
        self.version = version
        self.cluster_id = cluster_id or random_cluster_id()
        ports = free_ports(len(kinds))
        self.nodes = [
            Node(kind, i + 1, port, root, version=version)
            for i, (kind, port) in enumerate(zip(kinds, ports, strict=True))
        ]
        self.extra = dict(extra or {})
        root.mkdir(parents=True, exist_ok=True)
        CREATED.append(self)
        for node in self.nodes:
            self.write_config(node)
            if format_nodes:
                self.format(node)

    # ---- configuration and formatting -------------------------------------------------------------------------

    @property
    def voters(self) -> str:
        return ",".join(f"{n.node_id}@127.0.0.1:{n.port}" for n in self.nodes)

    @property
    def initial_controllers(self) -> str:
        return ",".join(f"{n.node_id}@127.0.0.1:{n.port}:{n.directory_id}" for n in self.nodes)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)

    def properties(self, node: Node) -> dict[str, str]:
        props = {
            "process.roles": "controller",
            "node.id": str(node.node_id),
            "controller.listener.names": "CONTROLLER",
            "listeners": f"CONTROLLER://127.0.0.1:{node.port}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
            "log.dirs": str(node.data_dir),
            "metadata.log.dir": str(node.data_dir),
            # Kafka's defaults, stated so both kinds agree whatever their own defaults are.
            "controller.quorum.election.timeout.ms": "1000",
            "controller.quorum.fetch.timeout.ms": "2000",
            "controller.quorum.election.backoff.max.ms": "1000",
            "controller.quorum.request.timeout.ms": "2000",
            "controller.quorum.retry.backoff.ms": "20",
        }
        if self.bootstrap == "static":
            props["controller.quorum.voters"] = self.voters
        else:
            props["controller.quorum.bootstrap.servers"] = self.bootstrap_servers
        props.update(self.extra)
        return props

    def write_config(self, node: Node) -> None:
        node.config.write_text("".join(f"{k}={v}\n" for k, v in self.properties(node).items()))

    @property
    def release_version(self) -> str:
        """One metadata.version for every node, whichever tool formats it: the first leader of an empty log writes
        its own bootstrap checkpoint's level, and a Kafka 3.9 controller halts on a level it does not know."""
        major, minor = self.version.split(".")[:2]
        return f"{major}.{minor}-IV0"

    def format_args(self, node: Node) -> list[str]:
        args = [
            "format",
            "-t",
            self.cluster_id,
            "-c",
            str(node.config),
            "--release-version",
            self.release_version,
        ]
        if self.bootstrap == "kip853":
            args += ["--initial-controllers", self.initial_controllers]
        return args

    def format(self, node: Node, *, tool: str | None = None) -> None:
        """Format ``node``'s directory with its own kind's tool, or with ``tool`` ("kafka"/"kraftd")."""
        tool = tool or node.kind
        if tool == "kafka":
            run_tool(
                "kafka.tools.StorageTool", self.format_args(node), version=self.version, workdir=self.root
            ).check()
        else:
            kraft_storage = str(Path(sys.executable).with_name("kraft-storage"))
            done = subprocess.run(
                [kraft_storage, *self.format_args(node)], capture_output=True, text=True, timeout=60
            )
            assert done.returncode == 0, done.stderr
        if self.bootstrap == "kip853":
            self.pin_directory_id(node)

    def pin_directory_id(self, node: Node) -> None:
        """With --initial-controllers the formatter takes the directory id from the list; read it back."""
        for line in (node.data_dir / "meta.properties").read_text().splitlines():
            if line.startswith("directory.id="):
                node.directory_id = line.split("=", 1)[1].strip()

    # ---- processes ----------------------------------------------------------------------------------------------

    def node(self, node_id: int) -> Node:
        return self.nodes[node_id - 1]

    def start_all(self) -> None:
        for node in self.nodes:
            node.start()

    def stop_all(self) -> None:
        for node in self.nodes:
            node.stop(signal.SIGKILL)

    def tails(self, chars: int = 3000) -> str:
        return "\n".join(n.tail(chars) for n in self.nodes)

    def describe(self, node_ids: Sequence[int] | None = None, timeout_ms: int = 3000) -> QuorumInfo:
        """DescribeQuorum through kraftd's client, tried against the given (default: live) nodes."""
        # kraftd nodes first: a Kafka controller without metadata.version logs an ERROR for DescribeCluster.
        ids = node_ids or [
            n.node_id for n in sorted(self.nodes, key=lambda n: n.kind != "kraftd") if n.alive()
        ]
        targets = [("127.0.0.1", self.node(i).port) for i in ids]
        _, info = asyncio.run(fetch_quorum(targets, 2, timeout_ms))
        return info

    def wait_for(self, what: str, predicate: object, timeout: float = 60) -> QuorumInfo:
        """Poll DescribeQuorum until ``predicate(info)`` holds (contract 2)."""
        deadline = time.monotonic() + timeout
        last: object = None
        while time.monotonic() < deadline:
            dead = [n for n in self.nodes if n.proc is not None and n.proc.poll() is not None]
            if dead:
                raise AssertionError(
                    f"node(s) {[n.node_id for n in dead]} exited while waiting for {what}\n{self.tails()}"
                )
            try:
                info = self.describe()
                if predicate(info):  # type: ignore[operator]
                    return info
                last = info
            except Exception as exc:  # noqa: BLE001 - retried until the deadline
                last = exc
            time.sleep(0.2)
        raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last}\n{self.tails()}")

    def wait_leader(self, timeout: float = 60, exclude: int | None = None) -> QuorumInfo:
        return self.wait_for(
            "a leader", lambda i: i.leader_id >= 0 and i.leader_id != exclude, timeout=timeout
        )

    def __enter__(self) -> MixedQuorum:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_all()
