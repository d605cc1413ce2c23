"""Real Apache Kafka processes for the interop tests and the benchmarks: jars, tools, one node's process.

The jars come from Maven Central through ``scripts/fetch_kafka.sh`` (``tests/interop/pom.xml``); nothing here
imitates Kafka. Every process is Kafka's own ``main`` run with ``java -cp``. Quorums: kraftd.testing.quorum.

Contracts:
1. :func:`classpath` returns the classpath of a fetched Kafka version. When java or the jars are missing, a calling
   test (pytest is running) is skipped with one line, except under ``CI=true``, where it fails: CI must never skip
   the real peer. Outside pytest (a benchmark) :class:`KafkaUnavailable` is raised with the same line.
2. Every process is started on 127.0.0.1 with ports picked free by the caller, is signalled only by its own pid,
   and writes its whole output to a log file under the test's directory; :meth:`Node.tail` returns the end of it.
"""

from __future__ import annotations

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

from kraftd.storage.uuids import random_uuid, uuid_to_str
from tools.local_quorum import KRAFTD

__all__ = [
    "CI",
    "DEFAULT_VERSION",
    "JVM_OPTS",
    "KRAFTD",
    "ROOT",
    "KafkaUnavailable",
    "Node",
    "ToolResult",
    "classpath",
    "dump_log",
    "find_classpath",
    "log_config",
    "metadata_quorum",
    "protocol_complaints",
    "random_cluster_id",
    "random_directory_id",
    "run_tool",
]

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


class KafkaUnavailable(RuntimeError):
    """Java or Kafka's jars are missing (contract 1)."""


def find_classpath(version: str = DEFAULT_VERSION) -> str:
    """The classpath of a fetched Kafka version, or :class:`KafkaUnavailable` with a one-line reason."""
    if shutil.which("java") is None:
        raise KafkaUnavailable("no java on PATH (install Java 17 and mvn, then run scripts/fetch_kafka.sh)")
    cp_file = ROOT / ".cache" / "kafka" / version / "classpath.txt"
    if not cp_file.exists():
        raise KafkaUnavailable(f"{cp_file.relative_to(ROOT)} is missing (run scripts/fetch_kafka.sh)")
    cp = cp_file.read_text().strip()
    missing = [j for j in cp.split(":") if not Path(j).exists()]
    if missing:
        raise KafkaUnavailable(
            f"{len(missing)} jars of Kafka {version} are missing (run scripts/fetch_kafka.sh)"
        )
    return cp


def unavailable(reason: str) -> None:
    """Skip (a developer box without java/mvn) or fail (CI) under pytest; raise otherwise: contract 1."""
    if "pytest" in sys.modules:
        import pytest

        if CI:
            pytest.fail(f"real Kafka is required under CI: {reason}", pytrace=False)
        pytest.skip(f"real Kafka unavailable: {reason}")
    raise KafkaUnavailable(reason)


def classpath(version: str = DEFAULT_VERSION) -> str:
    """Contract 1."""
    try:
        return find_classpath(version)
    except KafkaUnavailable as exc:
        unavailable(str(exc))
        raise


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
