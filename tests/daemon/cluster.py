"""A real-process kraftd quorum on loopback for tests and benchmarks (bounded waits everywhere)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from kraftd.config import load_config
from tests.daemon.conftest import write_properties
from tools.quorum_cli import fetch_quorum
from tools.quorum_report import QuorumInfo
from tools.storage_cli import format_directory

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
KRAFTD = str(Path(sys.executable).with_name("kraftd"))


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class Cluster:
    def __init__(
        self, root: Path, n: int = 3, extra: dict[str, str] | None = None, load: tuple[int, int] | None = None
    ):
        self.root = root
        self.ports = free_ports(n)
        self.voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(self.ports))
        self.configs: list[Path] = []
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.load = load
        for i, port in enumerate(self.ports):
            cfg = write_properties(
                root / f"server-{i + 1}.properties",
                i + 1,
                port,
                root / f"data-{i + 1}",
                voters=self.voters,
                extra=extra,
            )
            format_directory(load_config(cfg), CLUSTER_ID)
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
            in_flight, size = self.load
            args += [
                "--load-ack-file",
                str(self.ack_file(node_id)),
                "--load-in-flight",
                str(in_flight),
                "--load-record-size",
                str(size),
            ]
        out = self.log_file(node_id).open("ab")
        self.procs[node_id] = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=self.root)
        out.close()

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
        return asyncio.run(fetch_quorum(targets, 2, timeout_ms))

    def wait_leader(
        self, timeout: float = 20, hosts: list[int] | None = None, exclude: int | None = None
    ) -> QuorumInfo:
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                _, info = self.describe(2000, hosts)
                if info.leader_id >= 0 and info.leader_id != exclude:
                    return info
            except Exception as exc:  # noqa: BLE001 - retried until the deadline
                last = exc
            time.sleep(0.1)
        logs = "\n".join(
            self.log_file(i).read_text(errors="replace")[-2000:]
            for i in self.node_ids()
            if self.log_file(i).exists()
        )
        raise AssertionError(f"no leader within {timeout}s: {last}\n{logs}")
