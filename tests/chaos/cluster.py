"""Real kraftd processes on loopback for the chaos harness, every peer link through tests.chaos.proxy.

Contracts:
1. Node i reaches node j only through the proxy link (i, j); clients and the harness reach nodes directly.
2. Every node runs kraftd's load generator (appends through its RaftClient while it leads; each acknowledged
   append is a line in ``acks-<id>.txt``) and the test-only slow-disk hook (``slow-<id>`` holds the fsync delay).
3. ``disk_node`` (when given and tmpfs can be mounted) keeps its log directory on a small tmpfs of its own.
4. Processes are signalled only by their own pid; :meth:`ChaosCluster.close` leaves none running and unmounts.
5. ``kafka_nodes`` run Apache Kafka's own controller (tests.interop.kafka's jars and JVM flags) instead of kraftd,
   formatted by Kafka's StorageTool; they have no load generator and no slow-disk hook, and the harness never
   picks them for the slow-disk or disk-full faults.
6. When Debian's libfaketime is installed, every kraftd node runs under it with its own ``clock-<id>`` file: the
   wall clock (CLOCK_REALTIME) of that one process jumps when the file changes (within a second), while
   CLOCK_MONOTONIC is left alone, as with an NTP step or ``date -s`` on a real machine.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path

from kraftd.config import load_config
from kwire.quorum_client import fetch_quorum
from tests.chaos.proxy import Mode, Proxy
from tools.local_quorum import CLUSTER_ID, KRAFTD, free_ports
from tools.quorum_report import QuorumInfo
from tools.storage_cli import format_directory

ELECTION_MS, FETCH_MS = 1000, 2000
FAKETIME_GLOBS = ("/usr/lib/*/faketime/libfaketimeMT.so.1", "/usr/lib/faketime/libfaketimeMT.so.1")


def faketime_library() -> str | None:
    """Debian's libfaketime (package ``faketime``, installed by scripts/setup.sh): contract 6."""
    import glob

    return next((hit for pattern in FAKETIME_GLOBS for hit in sorted(glob.glob(pattern))), None)


def try_mount_tmpfs(path: Path, size_mb: int) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(path)],
        capture_output=True,
        timeout=10,
    )
    return done.returncode == 0


class ChaosCluster:
    def __init__(
        self,
        root: Path,
        n: int,
        *,
        disk_node: int | None = None,
        tmpfs_mb: int = 24,
        kafka_nodes: frozenset[int] = frozenset(),
    ) -> None:
        self.root = root
        self.n = n
        self.kafka_nodes = kafka_nodes
        self.ids = list(range(1, n + 1))
        self.ports = dict(zip(self.ids, free_ports(n), strict=True))
        self.proxy = Proxy()
        self.faketime = faketime_library()
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.paused: set[int] = set()
        self.mounted: Path | None = None
        self.disk_node = None
        for a in self.ids:
            for b in self.ids:
                if a != b:
                    self.proxy.add((a, b), ("127.0.0.1", self.ports[b]))
        if disk_node is not None and try_mount_tmpfs(self.data_dir(disk_node), tmpfs_mb):
            self.mounted = self.data_dir(disk_node)
            self.disk_node = disk_node
        for i in self.ids:
            self.slow_file(i).write_text("0")
            voters = ",".join(
                f"{j}@127.0.0.1:{self.ports[j] if j == i else self.proxy.links[(i, j)].port}"
                for j in self.ids
            )
            props = {
                "node.id": str(i),
                "process.roles": "controller",
                "controller.listener.names": "CONTROLLER",
                "listeners": f"CONTROLLER://127.0.0.1:{self.ports[i]}",
                "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
                "metadata.log.dir": str(self.data_dir(i)),
                "controller.quorum.voters": voters,
                "controller.quorum.election.timeout.ms": str(ELECTION_MS),
                "controller.quorum.fetch.timeout.ms": str(FETCH_MS),
            }
            if i in kafka_nodes:
                props["log.dirs"] = str(self.data_dir(i))
            else:
                props["metadata.log.segment.bytes"] = str(1 << 20)
                props["kraftd.test.fsync.delay.file"] = str(self.slow_file(i))
            self.config(i).write_text("".join(f"{k}={v}\n" for k, v in props.items()))
            if i in kafka_nodes:
                from tests.interop.kafka import run_tool

                args = ["format", "-t", CLUSTER_ID, "-c", str(self.config(i))]
                run_tool("kafka.tools.StorageTool", args, workdir=self.root).check()
            else:
                format_directory(load_config(self.config(i)), CLUSTER_ID)

    # ---- files
    def data_dir(self, i: int) -> Path:
        return self.root / f"data-{i}"

    def last_words(self, i: int) -> str:
        """The last line node ``i`` wrote (its fatal error, when it died of one), for the harness's report."""
        try:
            lines = self.log_file(i).read_bytes().decode(errors="replace").splitlines()
        except OSError as exc:
            return f"(no log: {exc})"
        return next((ln.strip()[:300] for ln in reversed(lines) if ln.strip()), "(empty log)")

    def config(self, i: int) -> Path:
        return self.root / f"server-{i}.properties"

    def ack_file(self, i: int) -> Path:
        return self.root / f"acks-{i}.txt"

    def log_file(self, i: int) -> Path:
        return self.root / f"node-{i}.log"

    def slow_file(self, i: int) -> Path:
        return self.root / f"slow-{i}"

    def clock_file(self, i: int) -> Path:
        return self.root / f"clock-{i}"

    def jump_clock(self, i: int, seconds: float) -> None:
        """Contract 6: node i's wall clock reads ``seconds`` off from now on (0 restores it)."""
        self.clock_file(i).write_text(f"{seconds:+.0f}\n")

    # ---- processes
    def start(self, i: int, *, load: bool = True) -> None:
        if i in self.kafka_nodes:
            from tests.interop.kafka import DEFAULT_VERSION, JVM_OPTS, classpath, log_config

            args = ["java", *JVM_OPTS, *log_config(self.root / f"log4j-{i}", DEFAULT_VERSION)]
            args += ["-cp", classpath(DEFAULT_VERSION), "kafka.Kafka", str(self.config(i))]
        else:
            args = [KRAFTD, "start", str(self.config(i))]
        if load and i not in self.kafka_nodes:
            args += [
                "--load-ack-file",
                str(self.ack_file(i)),
                "--load-in-flight",
                "2",
                "--load-record-size",
                "64",
            ]
            if self.kafka_nodes:  # Kafka's controller replays every record: give it valid NoOpRecords
                args.append("--load-noop-records")
        env = None
        if self.faketime is not None and i not in self.kafka_nodes:
            if not self.clock_file(i).exists():
                self.jump_clock(i, 0)
            env = {
                **os.environ,
                "LD_PRELOAD": self.faketime,
                "FAKETIME_TIMESTAMP_FILE": str(self.clock_file(i)),
                "FAKETIME_CACHE_DURATION": "1",
                "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            }
        with self.log_file(i).open("ab") as out:
            self.procs[i] = subprocess.Popen(
                args, stdout=out, stderr=subprocess.STDOUT, cwd=self.root, env=env
            )

    def start_all(self) -> None:
        for i in self.ids:
            self.start(i)

    def alive(self, i: int) -> bool:
        p = self.procs.get(i)
        return p is not None and p.poll() is None

    def send_signal(self, i: int, sig: int) -> None:
        p = self.procs[i]
        if p.poll() is None:
            os.kill(p.pid, sig)
        if sig == signal.SIGSTOP:
            self.paused.add(i)
        elif sig == signal.SIGCONT:
            self.paused.discard(i)

    def kill(self, i: int, sig: int = signal.SIGKILL) -> int:
        p = self.procs.pop(i)
        if i in self.paused:
            os.kill(p.pid, signal.SIGCONT)
            self.paused.discard(i)
        if p.poll() is None:
            os.kill(p.pid, sig)
        try:
            return p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            return p.wait(10)

    def exited(self) -> dict[int, int]:
        """Nodes whose process ended without the harness asking (id -> exit code); they are forgotten."""
        out = {}
        for i, p in list(self.procs.items()):
            code = p.poll()
            if code is not None:
                out[i] = code
                del self.procs[i]
        return out

    # ---- network
    def isolate(self, i: int) -> None:
        for a, b in self.proxy.links:
            if i in (a, b):
                self.proxy.set((a, b), Mode.CUT, Mode.CUT)

    def mute(self, i: int) -> None:
        """One-way cut: nothing node i sends reaches a peer; it still hears everything."""
        for a, b in self.proxy.links:
            if a == i:
                self.proxy.set((a, b), up=Mode.DROP)
            elif b == i:
                self.proxy.set((a, b), down=Mode.DROP)

    def heal(self) -> None:
        self.proxy.heal_all()

    # ---- observation
    def describe(self, timeout_ms: int = 1500) -> QuorumInfo | None:
        targets = [("127.0.0.1", self.ports[i]) for i in self.ids if self.alive(i) and i not in self.paused]
        if not targets:
            return None
        try:
            return asyncio.run(fetch_quorum(targets, 2, timeout_ms))[1]
        except Exception:  # noqa: BLE001 - no answer is an answer: no leader known right now
            return None

    def wait_leader(
        self, timeout: float, *, newer_than: int = -1, exclude: int | None = None
    ) -> QuorumInfo | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            info = self.describe()
            if (
                info is not None
                and info.leader_id >= 0
                and info.leader_epoch > newer_than
                and info.leader_id != exclude
                and self.alive(info.leader_id)
                and info.leader_id not in self.paused
            ):
                return info
            time.sleep(0.1)
        return None

    def stop_all(self) -> None:
        for i in list(self.procs):
            self.kill(i, signal.SIGTERM)

    def close(self) -> None:
        """Stop everything, close the proxy, unmount the tmpfs (its log directory is gone afterwards)."""
        self.stop_all()
        self.proxy.close()
        if self.mounted is not None:
            subprocess.run(["umount", "-l", str(self.mounted)], capture_output=True, timeout=10)
            self.mounted = None
