"""Helpers shared by the daemon tests: standalone configs, log waits, process stops, acknowledged writes."""

from __future__ import annotations

import asyncio
import re
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from kraftd.config import load_config
from kraftd.shell.loadgen import parse_ack_line, record_id_of
from kraftd.shell.node import ControllerNode
from kraftd.storage.layout import partition_dir
from kraftd.storage.log import MetadataLog
from kraftd.storage.uuids import random_uuid, uuid_to_str
from kwire.records import decode_batch
from tests.daemon.cluster import CLUSTER_ID, Cluster, free_ports
from tests.daemon.conftest import write_properties
from tools.storage_cli import format_directory


# ---- first written for tests/daemon/test_durability_processes.py -------------------------------------------
def read_acks(cluster: Cluster) -> dict[int, str]:
    acks: dict[int, str] = {}
    for node_id in cluster.node_ids():
        path = cluster.ack_file(node_id)
        if path.exists():
            for line in path.read_text().splitlines():
                if line.count(" ") != 5:
                    continue  # a line cut short by kill -9 was never fully reported
                for offset, rid in parse_ack_line(line).records():
                    assert offset not in acks, f"offset {offset} acknowledged twice"
                    acks[offset] = rid
    return acks


def log_records(cluster: Cluster, node_id: int) -> dict[int, str]:
    log = MetadataLog(partition_dir(cluster.data_dir(node_id)), 1 << 30)
    try:
        out: dict[int, str] = {}
        for raw in log.batches():
            batch = decode_batch(raw)
            if batch.is_control:
                continue
            for rec in batch.records:
                assert rec.value is not None
                rid = record_id_of(rec.value)
                if rid:  # the active controller's own records (idle NoOps) are not the load's
                    out[batch.offset_of(rec)] = rid
        return out
    finally:
        log.close()


# ---- first written for tests/daemon/test_operator_logs.py --------------------------------------------------
# Kafka's config/log4j2.yaml layout "[%d] %p %m (%c)%n" (log4j's default date: yyyy-MM-dd HH:mm:ss,SSS).
KAFKA_LINE = re.compile(
    r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] (DEBUG|INFO|WARNING|ERROR|CRITICAL) .+ \([\w.]+\)$"
)


def fresh_id() -> str:
    return uuid_to_str(random_uuid())


def wait_for(pred: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def stop(proc: subprocess.Popen[bytes]) -> int:
    if proc.poll() is None:
        proc.terminate()
    try:
        return proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(5)


def standalone_config(root: Path, port: int, **extra: str) -> Path:
    cfg = write_properties(root / "s.properties", 1, port, root / "data", extra=extra)
    format_directory(load_config(cfg), fresh_id(), standalone=True)
    return cfg


async def wait_active(
    node: Any, timeout: float, what: str = "the single node never became the active controller"
) -> None:
    """Until the in-process ControllerNode ``node`` is the active controller (its image activated), else fail."""
    deadline = time.monotonic() + timeout
    while not node.controller.machine.active:
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.02)


# ---- first written for tests/daemon/test_read_answers.py ---------------------------------------------------
def single_node(tmp_path: Path, name: str = "s", data: str = "d") -> ControllerNode:
    """An in-process node, the only voter of a freshly formatted cluster (not started)."""
    cfg = tmp_path / f"{name}.properties"
    (port,) = free_ports(1)
    write_properties(cfg, 1, port, tmp_path / data, voters=f"1@127.0.0.1:{port}")
    format_directory(load_config(cfg), CLUSTER_ID)
    return ControllerNode(load_config(cfg), seed=1)


@asynccontextmanager
async def leading_single_node(tmp_path: Path) -> AsyncIterator[ControllerNode]:
    """:func:`single_node`, started and leading (within 10 s); stopped on exit."""
    node = single_node(tmp_path, "one", "one")
    await node.start()
    try:
        await node.wait_for_leader(10)
        yield node
    finally:
        await node.stop()
