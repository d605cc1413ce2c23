"""A ``--standalone`` controller (Kafka's documented first step: ``kafka-storage format --standalone``) keeps
one leader in one epoch while ``kraftd perf`` commits through it over the wire; perf against a 3-node quorum;
KraftdAppend refuses values that are not framed metadata records.

Follows Kafka's LeaderState.timeUntilCheckQuorumExpires (a one-voter set never expires check-quorum): before
that exemption the lone leader resigned every ~4.5 s (check-quorum 3 s plus re-election)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from generated.kraftd_append_request import KraftdAppendRequest, Record
from kraftd.config import load_config
from kraftd.shell.net.transport import PeerConnection
from kraftd.storage.uuids import random_uuid, uuid_to_str
from kwire.errors import ErrorCode
from kwire.quorum_client import fetch_quorum
from tests.daemon.cluster import KRAFTD, Cluster, free_ports
from tests.daemon.conftest import write_properties
from tools.perf_client import NOOP_RECORD
from tools.storage_cli import format_directory

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

OLD_RESIGN_PERIOD_S = 4.5  # check-quorum (1.5 x fetch timeout 2 s) plus a re-election, as measured before


class Standalone:
    def __init__(self, root: Path) -> None:
        (self.port,) = free_ports(1)
        self.cfg = write_properties(root / "s.properties", 1, self.port, root / "data")  # bootstrap servers
        self.cluster_id = uuid_to_str(random_uuid())
        format_directory(load_config(self.cfg), self.cluster_id, standalone=True)
        self.log = root / "node.log"
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [KRAFTD, "start", str(self.cfg)], stdout=out, stderr=subprocess.STDOUT
            )

    def describe(self) -> tuple[int, int]:
        _, info = asyncio.run(fetch_quorum([("127.0.0.1", self.port)], 2, 3000))
        return info.leader_id, info.leader_epoch

    def wait_leader(self, timeout: float = 30) -> tuple[int, int]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                got = self.describe()
                if got[0] >= 0:
                    return got
            except Exception:  # noqa: BLE001 - retried until the deadline
                pass
            time.sleep(0.1)
        raise TimeoutError(f"no leader: {self.log.read_text(errors='replace')[-3000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[Standalone]:
    node = Standalone(tmp_path)
    try:
        yield node
    finally:
        node.stop()


def perf(port: int, *args: str, timeout: float = 120) -> dict[str, float]:
    out = subprocess.run(
        [KRAFTD, "perf", "--bootstrap-controller", f"127.0.0.1:{port}", "--json", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert out.returncode == 0, out.stderr
    stats: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return stats


def test_standalone_leader_keeps_its_epoch_while_perf_commits(standalone: Standalone) -> None:
    leader, epoch = standalone.wait_leader()
    assert leader == 1
    window = 2.2 * OLD_RESIGN_PERIOD_S
    seen: list[tuple[int, int]] = []
    results: list[dict[str, float]] = []
    stop = threading.Event()

    def load() -> None:
        while not stop.is_set():
            results.append(perf(standalone.port, "--records", "2000", "--in-flight", "32", "--batch", "5"))

    t = threading.Thread(target=load)
    start = time.monotonic()
    t.start()
    try:
        while time.monotonic() - start < window:
            seen.append(standalone.describe())
            time.sleep(0.5)
    finally:
        stop.set()
        t.join(120)
    assert seen and all(s == (1, epoch) for s in seen), f"epoch moved from {epoch}: {sorted(set(seen))}"
    assert standalone.describe() == (1, epoch)
    assert results and all(r["records"] == 2000 and r["leaders"] == 1 for r in results)
    assert results[0]["p99_ms"] >= results[0]["p50_ms"] > 0


def test_append_rpc_refuses_values_that_are_not_metadata_records(standalone: Standalone) -> None:
    """Kafka's MetadataRecordSerde refuses a value whose frame version is not 1 ('unknown frame version');
    KraftdAppend refuses it before it reaches the log."""
    standalone.wait_leader()

    async def send(values: list[bytes], cluster_id: str | None) -> tuple[int, int]:
        conn = PeerConnection("127.0.0.1", standalone.port, client_id="t", timeout_ms=5000)
        try:
            resp = await conn.request(
                KraftdAppendRequest(cluster_id=cluster_id, records=[Record(v) for v in values])
            )
        finally:
            await conn.close()
        return resp.error_code, resp.last_offset

    code, last = asyncio.run(send([NOOP_RECORD, b"2xyz"], standalone.cluster_id))
    assert (code, last) == (ErrorCode.INVALID_RECORD, -1)
    code, _ = asyncio.run(send([NOOP_RECORD], "AAAAAAAAAAAAAAAAAAAAAA"))
    assert code == ErrorCode.INCONSISTENT_CLUSTER_ID
    code, last = asyncio.run(send([NOOP_RECORD, NOOP_RECORD], standalone.cluster_id))
    assert code == ErrorCode.NONE and last > 0
    assert NOOP_RECORD == bytes.fromhex("01140000")


def test_perf_against_a_running_three_node_quorum(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    cluster.start_all()
    try:
        cluster.wait_leader()
        stats = perf(cluster.ports[0], "--records", "3000", "--in-flight", "32", "--batch", "5")
        assert stats["records"] == 3000 and stats["records_per_sec"] > 0
        assert stats["p99_ms"] >= stats["p95_ms"] >= stats["p50_ms"] > 0
    finally:
        cluster.stop_all()


def test_perf_without_a_quorum_fails_with_one_line() -> None:
    (port,) = free_ports(1)
    out = subprocess.run(
        [KRAFTD, "perf", "--bootstrap-controller", f"127.0.0.1:{port}", "--timeout", "1"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 1
    assert out.stderr.startswith("Error: no leader found") and len(out.stderr.strip().splitlines()) == 1
