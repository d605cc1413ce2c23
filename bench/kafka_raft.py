"""Kafka's own Raft on three JVMs (``kafka.tools.TestRaftServer`` from kafka_2.13), driven for bench/quorum.py.

TestRaftServer runs a real KafkaRaftManager (file log, fsync, Kafka's network stack) on the topic
``__raft_performance_test`` with its own workload: the leader appends single records at ``--throughput``
records/s (open loop) and every 5 s prints the committed bytes/s and the commit latency's p75/p99/p999 in ms
(integer milliseconds, 1 ms buckets, over a sliding window of two 30 s samples).

What we read, without touching Kafka's code:
1. The leader's log end offset, by walking the v2 batch headers of its newest segment (the same walk works on
   kraftd's segments).
2. ``LeaderState ... High watermark set to ... for the first time for epoch E`` (log4j, UNIX ms timestamps):
   the moment the leader of epoch E committed its first offset; that names the leader too.
3. The printed stats line.
"""

from __future__ import annotations

import os
import re
import signal
import struct
import subprocess
import time
from pathlib import Path

from kraftd.storage.uuids import random_uuid, uuid_to_str

TOPIC_DIR = "__raft_performance_test-0"
JVM_FLAGS = ["-Xms256m", "-Xmx512m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true"]
LOG4J = """status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = %d{UNIX_MILLIS} %p %c{1} %m%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
"""
FIRST_HW = re.compile(
    rb"^(\d+) INFO LeaderState \[RaftManager id=(\d+)\] High watermark set to .* for the first time for epoch (\d+)"
)
STATS = re.compile(
    rb"Throughput \(bytes/second\): ([\d.]+), Latency \(ms\): ([\d.]+) p75 ([\d.]+) p99 ([\d.]+) p999"
)
BATCH_HEAD = struct.Struct(">qi")  # base offset, batch length (bytes after this field pair)


def kafka_classpath() -> str | None:
    """Kafka 4.3.1's classpath: $KAFKA_CLASSPATH, else the interop harness's (scripts/fetch_kafka.sh); None when
    java or the jars are missing."""
    env = os.environ.get("KAFKA_CLASSPATH")
    if env:
        return env
    from kraftd.testing.kafka import KafkaUnavailable, find_classpath

    try:
        return find_classpath()
    except KafkaUnavailable:
        return None


class SegmentTail:
    """Follows the log end offset of a partition directory by walking batch headers incrementally."""

    def __init__(self, partition_dir: Path) -> None:
        self.dir = partition_dir
        self._file: Path | None = None
        self._pos = 0
        self._end = -1

    def log_end_offset(self) -> int:
        segs = sorted(self.dir.glob("*.log")) if self.dir.exists() else []
        if not segs:
            return 0
        if segs[-1] != self._file:
            self._file, self._pos = segs[-1], 0
            self._end = int(segs[-1].stem)
        with self._file.open("rb") as f:
            f.seek(self._pos)
            data = f.read()
        pos = 0
        while pos + 27 <= len(data):
            base, length = BATCH_HEAD.unpack_from(data, pos)
            if pos + 12 + length > len(data) or length <= 0:
                break
            (last_delta,) = struct.unpack_from(">i", data, pos + 23)
            self._end = base + last_delta + 1
            pos += 12 + length
        self._pos += pos
        return self._end


class KafkaRaftQuorum:
    """Three TestRaftServer JVMs on loopback with static voters; every wait is bounded."""

    def __init__(
        self,
        root: Path,
        ports: list[int],
        classpath: str,
        *,
        linger_ms: int,
        throughput: int,
        record_size: int,
        fetch_timeout_ms: int = 2000,
    ) -> None:
        self.root = root
        self.ports = ports
        self.classpath = classpath
        self.throughput = throughput
        self.record_size = record_size
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.dir_ids = {i: uuid_to_str(random_uuid()) for i in self.node_ids()}
        (root / "log4j2.properties").write_text(LOG4J)
        voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in zip(self.node_ids(), ports, strict=True))
        for i, port in zip(self.node_ids(), ports, strict=True):
            props = {
                "node.id": i,
                "process.roles": "controller",
                "controller.listener.names": "CONTROLLER",
                "listeners": f"CONTROLLER://127.0.0.1:{port}",
                "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
                "controller.quorum.voters": voters,
                "log.dirs": self.data_dir(i),
                "metadata.log.dir": self.data_dir(i),
                "controller.quorum.append.linger.ms": linger_ms,
                "controller.quorum.fetch.timeout.ms": fetch_timeout_ms,
            }
            (root / f"raft-{i}.properties").write_text("".join(f"{k}={v}\n" for k, v in props.items()))

    def node_ids(self) -> list[int]:
        return list(range(1, len(self.ports) + 1))

    def data_dir(self, node_id: int) -> Path:
        return self.root / f"kdata-{node_id}"

    def out_file(self, node_id: int) -> Path:
        return self.root / f"kafka-{node_id}.out"

    def tail(self, node_id: int) -> SegmentTail:
        return SegmentTail(self.data_dir(node_id) / TOPIC_DIR)

    def start(self, node_id: int) -> None:
        args = [
            "java",
            *JVM_FLAGS,
            f"-Dlog4j2.configurationFile={self.root / 'log4j2.properties'}",
            "-cp",
            self.classpath,
            "kafka.tools.TestRaftServer",
            "--config",
            str(self.root / f"raft-{node_id}.properties"),
            f"--replica-directory-id={self.dir_ids[node_id]}",
            "--throughput",
            str(self.throughput),
            "--record-size",
            str(self.record_size),
        ]
        with self.out_file(node_id).open("ab") as out:
            self.procs[node_id] = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)

    def start_all(self) -> None:
        for i in self.node_ids():
            self.start(i)

    def signal(self, node_id: int, sig: int) -> int:
        """Send ``sig`` to the node's JVM and reap it; returns the wall-clock ms just before the signal."""
        proc = self.procs.pop(node_id)
        at = int(time.time() * 1000)
        if proc.poll() is None:
            os.kill(proc.pid, sig)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        return at

    def stop_all(self) -> None:
        for i in list(self.procs):
            self.signal(i, signal.SIGKILL)

    def first_commits(self) -> list[tuple[int, int, int]]:
        """(wall ms, leader id, epoch) of every 'first high watermark of an epoch' the leaders logged."""
        out = []
        for i in self.node_ids():
            f = self.out_file(i)
            if f.exists():
                for line in f.read_bytes().splitlines():
                    m = FIRST_HW.match(line)
                    if m:
                        out.append((int(m.group(1)), int(m.group(2)), int(m.group(3))))
        return sorted(out)

    def wait_leader(self, timeout: float, after_epoch: int = 0) -> tuple[int, int, int]:
        """(ms, leader, epoch) of the first commit of an epoch above ``after_epoch``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [c for c in self.first_commits() if c[2] > after_epoch]
            if found:
                return found[0]
            time.sleep(0.05)
        raise TimeoutError(
            f"Kafka raft: no leader committed in an epoch above {after_epoch} within {timeout}s"
        )

    def committed_offset(self, tails: dict[int, SegmentTail]) -> int:
        """The median of the nodes' log end offsets: what a majority holds (close to the high watermark)."""
        return sorted(t.log_end_offset() for t in tails.values())[len(tails) // 2]

    def stats(self, node_id: int) -> tuple[float, float, float, float] | None:
        """The last printed (bytes/s, p75 ms, p99 ms, p999 ms) of ``node_id``, if any."""
        f = self.out_file(node_id)
        found = STATS.findall(f.read_bytes()) if f.exists() else []
        if not found:
            return None
        rate, p75, p99, p999 = found[-1]
        return float(rate), float(p75), float(p99), float(p999)

    def stats_count(self, node_id: int) -> int:
        f = self.out_file(node_id)
        return len(STATS.findall(f.read_bytes())) if f.exists() else 0
