"""Real Apache Kafka processes for the interop tests: jars, tools, controllers, mixed quorums.

The jars come from Maven Central through ``scripts/fetch_kafka.sh`` (``tests/interop/pom.xml``); nothing here
imitates Kafka. Every process is Kafka's own ``main`` run with ``java -cp``.

Contracts:
1. :func:`classpath` returns the classpath of a fetched Kafka version. When java or the jars are missing the calling
   test is skipped with one line, except under ``CI=true``, where it fails: CI must never skip the real peer.
2. Every process is started on 127.0.0.1 with ports picked free by the caller, is signalled only by its own pid,
   and writes its whole output to a log file under the test's directory; :meth:`Node.tail` returns the end of it.
3. A :class:`MixedQuorum` node is either ``"kafka"`` (``kafka.Kafka`` with ``process.roles=controller``) or
   ``"kraftd"``; all nodes of one quorum share the cluster id, the voter set and the timeouts, so leadership can land
   on either kind. :meth:`MixedQuorum.stop_all` leaves no process running.
4. Waits are bounded by deadlines and poll a real RPC (DescribeQuorum through kraftd's client) or the process's own
   log; no fixed sleeps.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kraftd.storage.uuids import random_uuid, uuid_to_str
from kwire.quorum_client import fetch_quorum
from tools.local_quorum import KRAFTD, free_ports
from tools.quorum_report import QuorumInfo

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_VERSION = "4.3.1"
VERSIONS = ("4.3.1", "3.9.2")
CI = os.environ.get("CI", "").lower() == "true"

# Kafka's own log line layout ([time] LEVEL message (logger)), to a file per process.
_LOG4J2 = """Configuration:
  Appenders:
    Console:
      name: STDOUT
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: {level}
      AppenderRef:
        - ref: STDOUT
"""
_LOG4J1 = """log4j.rootLogger={level}, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
"""
# Short-lived JVMs: fast start beats peak throughput.
JVM_OPTS = ["-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"]


def unavailable(reason: str) -> None:
    """Skip (a developer box without java/mvn) or fail (CI): contract 1."""
    if CI:
        pytest.fail(f"real Kafka is required under CI: {reason}", pytrace=False)
    pytest.skip(f"real Kafka unavailable: {reason}")


def classpath(version: str = DEFAULT_VERSION) -> str:
    if shutil.which("java") is None:
        unavailable("no java on PATH (install Java 17 and mvn, then run scripts/fetch_kafka.sh)")
    cp_file = ROOT / ".cache" / "kafka" / version / "classpath.txt"
    if not cp_file.exists():
        unavailable(f"{cp_file.relative_to(ROOT)} is missing (run scripts/fetch_kafka.sh)")
    cp = cp_file.read_text().strip()
    missing = [j for j in cp.split(":") if not Path(j).exists()]
    if missing:
        unavailable(f"{len(missing)} jars of Kafka {version} are missing (run scripts/fetch_kafka.sh)")
    return cp


def log_config(directory: Path, version: str, level: str = "INFO") -> list[str]:
    """JVM flags that make Kafka log in its own layout to stdout at ``level``."""
    directory.mkdir(parents=True, exist_ok=True)
    if version.startswith("3."):
        path = directory / "log4j.properties"
        path.write_text(_LOG4J1.format(level=level))
        return [f"-Dlog4j.configuration=file:{path}"]
    path = directory / "log4j2.yaml"
    path.write_text(_LOG4J2.format(level=level))
    return [f"-Dlog4j2.configurationFile={path}"]


@dataclass
class ToolResult:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    def check(self) -> ToolResult:
        assert self.returncode == 0, (
            f"{' '.join(self.args[-6:])} exited {self.returncode}:\n{self.stderr[-3000:]}"
        )
        return self


def run_tool(
    main_class: str,
    args: Sequence[str],
    *,
    version: str = DEFAULT_VERSION,
    workdir: Path,
    timeout: float = 60,
) -> ToolResult:
    """Run one of Kafka's command-line tools (``main_class``) and capture its output; tools log WARN and up."""
    cmd = ["java", *JVM_OPTS, *log_config(workdir / "tool-log", version, "WARN"), "-cp", classpath(version)]
    cmd += [main_class, *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=workdir)
    return ToolResult(cmd, done.returncode, done.stdout, done.stderr)


def metadata_quorum(bootstrap: str, *args: str, workdir: Path, version: str = DEFAULT_VERSION) -> ToolResult:
    """Kafka's ``kafka-metadata-quorum``; ``bootstrap`` is ``--bootstrap-controller X`` or ``--bootstrap-server X``."""
    flag, _, target = bootstrap.partition(" ")
    return run_tool(
        "org.apache.kafka.tools.MetadataQuorumCommand",
        [flag, target, *args],
        version=version,
        workdir=workdir,
    )


def dump_log(files: Iterable[Path], *, workdir: Path, version: str = DEFAULT_VERSION) -> ToolResult:
    """Kafka's ``kafka-dump-log --cluster-metadata-decoder`` over segments or checkpoints."""
    args = ["--cluster-metadata-decoder", "--print-data-log", "--files", ",".join(str(f) for f in files)]
    return run_tool("org.apache.kafka.tools.DumpLogSegments", args, version=version, workdir=workdir)


def random_directory_id() -> str:
    """A directory id in Kafka's text form (URL-safe base64 of 16 bytes, no padding). Like Kafka's
    Uuid.randomUuid it never starts with '-': Kafka's tools would read such a cluster id as an option."""
    return uuid_to_str(random_uuid())


def random_cluster_id() -> str:
    return random_directory_id()


@dataclass
class Node:
    """One controller of a quorum: its kind, id, port, directory id and files."""

    kind: str
    node_id: int
    port: int
    root: Path
    directory_id: str = field(default_factory=random_directory_id)
    version: str = DEFAULT_VERSION
    proc: subprocess.Popen[bytes] | None = None
    # JVM flags for a "kafka" node in place of JVM_OPTS (a benchmark sizes the heap and JIT like a server).
    jvm_opts: list[str] | None = None
    log_level: str = "INFO"

    @property
    def data_dir(self) -> Path:
        return self.root / f"data-{self.node_id}"

    @property
    def config(self) -> Path:
        return self.root / f"server-{self.node_id}.properties"

    @property
    def log_file(self) -> Path:
        return self.root / f"node-{self.node_id}-{self.kind}.log"

    @property
    def metadata_dir(self) -> Path:
        return self.data_dir / "__cluster_metadata-0"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_text(self) -> str:
        return self.log_file.read_text(errors="replace") if self.log_file.exists() else ""

    def tail(self, chars: int = 4000) -> str:
        return f"--- {self.log_file.name} ---\n{self.log_text()[-chars:]}"

    def start(self) -> None:
        assert not self.alive(), f"node {self.node_id} is already running"
        if self.kind == "kafka":
            opts = JVM_OPTS if self.jvm_opts is None else self.jvm_opts
            cmd = [
                "java",
                *opts,
                *log_config(self.root / f"log4j-{self.node_id}", self.version, self.log_level),
            ]
            cmd += ["-cp", classpath(self.version), "kafka.Kafka", str(self.config)]
        else:
            cmd = [KRAFTD, "start", str(self.config)]
        with self.log_file.open("ab") as out:
            out.write(f"\n==== start {time.strftime('%H:%M:%S')} ====\n".encode())
            out.flush()
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=self.root)

    def send_signal(self, sig: int) -> None:
        if self.alive():
            assert self.proc is not None
            os.kill(self.proc.pid, sig)

    def stop(self, sig: int = signal.SIGKILL, timeout: float = 20) -> int | None:
        if self.proc is None:
            return None
        proc, self.proc = self.proc, None
        if proc.poll() is None:
            os.kill(proc.pid, sig)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait(10)


# What a Kafka process logs when a peer sent something it could not parse or did not expect. Test-driver requests
# (our tool's client id) are excluded: they are not Raft traffic between the controllers.
_COMPLAINT = re.compile(
    r"UnsupportedVersion|unsupported version|InvalidRequest|invalid request|SchemaException|Error parsing|"
    r"BufferUnderflow|CorruptRecord|InvalidRecord|MetadataParseException|unknown frame version|"
    r"INCONSISTENT_CLUSTER_ID|Unexpected error|Unknown API key|IllegalStateException|RecordBatchTooLarge",
    re.IGNORECASE,
)
DRIVER_CLIENT_ID = "clientId=kraft-metadata-quorum"
# Kafka's own races around a leader change (a request reaching a controller that just lost the epoch).
_KAFKA_RACE = re.compile(r"NotControllerException|NOT_CONTROLLER")


def protocol_complaints(log_text: str) -> list[str]:
    """WARN/ERROR lines (with the exception line under each) naming a protocol or parse failure."""
    lines = log_text.splitlines()
    found = []
    for i, line in enumerate(lines):
        if not re.match(r"\[[^]]+\] (WARN|ERROR) ", line) or DRIVER_CLIENT_ID in line:
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        context = line if nxt.startswith("[") else f"{line} {nxt}"
        if _COMPLAINT.search(context) and not _KAFKA_RACE.search(context):
            found.append(context[:600])
    return found


# Every quorum made in this process, so a failing test can keep and print its logs (tests/interop/conftest.py).
CREATED: list[MixedQuorum] = []


class MixedQuorum:
    """A controller quorum of real Kafka controllers and kraftd nodes on loopback (contract 3).

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
        """Poll DescribeQuorum until ``predicate(info)`` holds (contract 4)."""
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
