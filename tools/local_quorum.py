"""A local 3-controller quorum on loopback: the README's "run a local quorum" command, tests and benchmarks.

``python -m tools.local_quorum`` (what scripts/quorum.sh runs) formats temporary directories with a fresh
cluster id, starts three ``kraftd`` processes on 127.0.0.1, waits for a leader, prints ``describe --status``
and keeps running until Ctrl-C (then stops every process with SIGTERM and removes the directories; with
``--dir DIR`` the data and logs are kept in DIR).

Contracts:
1. Every wait is bounded; processes are only ever signalled by their own pid.
2. :class:`LocalQuorum` never leaves a process running after :meth:`LocalQuorum.stop_all` returns.
3. :meth:`LocalQuorum.wait_leader` accepts only an answer carrying this quorum's own cluster id while all of
   its processes run: a node that exits fails the wait at once (:class:`NodeExited`, with its log's tail),
   and a quorum of another cluster answering on the same ports never counts as ours.
4. ``main`` exits 1 with one message on stderr when its nodes do not come up or a node exits while it runs,
   and then keeps the directory (node-N.log) whatever ``--dir`` says; each node's pid is in node-N.pid.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from ssl import SSLContext

import click

from kraftd.config import load_config
from kraftd.storage.uuids import random_uuid, uuid_to_str
from kwire.errors import KraftError
from kwire.quorum_client import QuorumInfo, fetch_quorum
from kwire.sasl import SaslClientConfig
from tools.quorum_report import status_report
from tools.storage_cli import format_directory

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"  # the tests' fixed id; main() formats every run with a fresh one


class NodeExited(RuntimeError):
    """A node of the local quorum is no longer running (contract 3)."""


KRAFTD = str(Path(sys.executable).with_name("kraftd"))


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def write_properties(
    path: Path,
    node_id: int,
    port: int,
    log_dir: Path,
    voters: str | None = None,
    extra: dict[str, str] | None = None,
) -> Path:
    """A controller's server.properties on loopback (static voters, or bootstrap servers when None)."""
    props = {
        "node.id": str(node_id),
        "process.roles": "controller",
        "controller.listener.names": "CONTROLLER",
        "listeners": f"CONTROLLER://127.0.0.1:{port}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
        "metadata.log.dir": str(log_dir),
    }
    if voters is not None:
        props["controller.quorum.voters"] = voters
    else:
        props["controller.quorum.bootstrap.servers"] = f"127.0.0.1:{port}"
    props.update(extra or {})
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


class LocalQuorum:
    def __init__(
        self,
        root: Path,
        n: int = 3,
        *,
        ports: list[int] | None = None,
        extra: dict[str, str] | None = None,
        load: tuple[int, int] | tuple[int, int, int] | None = None,
        cluster_id: str = CLUSTER_ID,
    ) -> None:
        self.root = root
        self.cluster_id = cluster_id
        self.ports = ports or free_ports(n)
        self.voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(self.ports))
        self.configs: list[Path] = []
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.load = load
        self.client_ssl: SSLContext | None = None  # for describe() against TLS listeners
        self.client_sasl: SaslClientConfig | None = None  # and SASL ones
        for i, port in enumerate(self.ports):
            cfg = write_properties(
                root / f"server-{i + 1}.properties", i + 1, port, self.data_dir(i + 1), self.voters, extra
            )
            format_directory(load_config(cfg), cluster_id)
            self.configs.append(cfg)

    def node_ids(self) -> list[int]:
        return list(range(1, len(self.ports) + 1))

    def data_dir(self, node_id: int) -> Path:
        return self.root / f"data-{node_id}"

    def ack_file(self, node_id: int) -> Path:
        return self.root / f"acks-{node_id}.txt"

    def log_file(self, node_id: int) -> Path:
        return self.root / f"node-{node_id}.log"

    def start(self, node_id: int) -> None:
        args = [KRAFTD, "start", str(self.configs[node_id - 1])]
        if self.load is not None:
            in_flight, size, *rest = self.load
            args += ["--load-ack-file", str(self.ack_file(node_id)), "--load-in-flight", str(in_flight)]
            args += ["--load-record-size", str(size), "--load-batch", str(rest[0] if rest else 1)]
        with self.log_file(node_id).open("ab") as out:
            self.procs[node_id] = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=self.root)
        (self.root / f"node-{node_id}.pid").write_text(f"{self.procs[node_id].pid}\n")

    def check_running(self) -> None:
        """Raise :class:`NodeExited` naming the first started node that is no longer running."""
        for node_id, proc in sorted(self.procs.items()):
            code = proc.poll()
            if code is not None:
                tail = self.log_file(node_id).read_text(errors="replace")[-1500:].strip()
                raise NodeExited(f"node {node_id} exited with code {code}; the end of its log:\n{tail}")

    def start_all(self) -> None:
        for node_id in self.node_ids():
            self.start(node_id)

    def kill(self, node_id: int, sig: int = signal.SIGKILL, timeout: float = 15) -> int:
        proc = self.procs.pop(node_id)
        if proc.poll() is None:
            os.kill(proc.pid, sig)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait(5)

    def stop_all(self) -> None:
        for node_id in list(self.procs):
            self.kill(node_id, signal.SIGTERM)

    def describe(self, timeout_ms: int = 5000, hosts: list[int] | None = None) -> tuple[str, QuorumInfo]:
        targets = [("127.0.0.1", self.ports[i - 1]) for i in (hosts or self.node_ids())]
        return asyncio.run(fetch_quorum(targets, 2, timeout_ms, self.client_ssl, self.client_sasl))

    def wait_leader(
        self, timeout: float = 20, hosts: list[int] | None = None, exclude: int | None = None
    ) -> QuorumInfo:
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            self.check_running()
            try:
                cluster_id, info = self.describe(2000, hosts)
                if cluster_id != self.cluster_id:
                    last = RuntimeError(f"a quorum of another cluster ({cluster_id}) answers on these ports")
                elif info.leader_id >= 0 and info.leader_id != exclude:
                    return info
            except Exception as exc:  # noqa: BLE001 - retried until the deadline
                last = exc
            time.sleep(0.1)
        tails = [
            self.log_file(i).read_text(errors="replace")[-2000:]
            for i in self.node_ids()
            if self.log_file(i).exists()
        ]
        raise TimeoutError(f"no leader within {timeout}s: {last}\n" + "\n".join(tails))


@click.command(help="Start a local 3-controller quorum on loopback until Ctrl-C.")
@click.option("--base-port", default=9093, show_default=True, help="Ports base, base+1, base+2.")
@click.option(
    "--dir",
    "root",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep data and node logs (node-N.log) in DIR instead of a temporary directory removed on exit.",
)
@click.option("--timeout", default=30.0, show_default=True, help="Seconds to wait for a leader.")
def main(base_port: int, root: Path | None, timeout: float) -> None:
    tmp = root or Path(tempfile.mkdtemp(prefix="kraftd-quorum-"))
    tmp.mkdir(parents=True, exist_ok=True)
    cluster_id = uuid_to_str(random_uuid())
    stop = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    failure: str | None = None
    quorum: LocalQuorum | None = None
    try:
        quorum = LocalQuorum(tmp, ports=[base_port, base_port + 1, base_port + 2], cluster_id=cluster_id)
        quorum.start_all()
        quorum.wait_leader(timeout=timeout)
        _, info = quorum.describe()
        click.echo(
            f"Local quorum (cluster {cluster_id}) running in {tmp} (logs: node-N.log); Ctrl-C stops it.\n"
        )
        click.echo(f"$ kraft-metadata-quorum --bootstrap-controller 127.0.0.1:{base_port} describe --status")
        click.echo(status_report(cluster_id, info), nl=False)
        while not stop:
            quorum.check_running()
            time.sleep(0.2)
    except (NodeExited, TimeoutError, KraftError, OSError) as exc:
        if not stop:  # Ctrl-C reaches the nodes too; one that exits on it is not a failure
            failure = str(exc)
    finally:
        if quorum is not None:
            quorum.stop_all()
    if failure is not None:
        click.echo(f"local quorum failed: {failure}\nlogs kept in {tmp}", err=True)
        sys.exit(1)
    if root is None:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
