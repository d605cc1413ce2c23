"""The live ``kraft`` stream: tailing a running quorum's metadata log over the wire as an observer.

``spark.readStream.format("kraft").option("bootstrap.controller", "host:port[,host:port...]").load()``;
options ``startingOffset`` (0), ``requestTimeoutMs`` (5000), ``readTimeoutMs`` (120000).

Contracts (KIP-595 observers, KIP-630 snapshots):
1. The stream's offset is ``{"offset": N}``: every record below N is in an earlier micro-batch. The latest
   offset is the largest high watermark any leader has reported (DescribeQuorum); entries below a high
   watermark are committed and never change, so a micro-batch ``[start, end)`` re-read after a restart (Spark
   replays the last planned batch from its offset log) yields exactly the same rows: exactly once with an
   idempotent or transactional sink (the file sinks).
2. Reading ``[start, end)`` fetches from the current leader as an observer (Fetch, replica id -1, no directory
   id, current and last-fetched epoch = the leader's epoch), keeps only offsets in ``[start, min(end, high
   watermark))`` and advances by whole batches. A leader change, a lost connection or an election in progress
   is retried against whoever leads next until ``readTimeoutMs``.
3. When planning finds the start below the leader's log start (Fetch answers with a snapshot id), the end
   offset names that snapshot and is at least its end offset; reading the batch fetches exactly that snapshot
   with FetchSnapshot in position order (its records become rows with ``file_kind`` "snapshot", offsets the
   snapshot's own), then the log from the snapshot's end offset. A replayed batch whose snapshot is gone, or a
   log start that moved past a planned range, fails the query with one line (no silent gap).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from generated import fetch_request as FREQ
from generated import fetch_snapshot_request as FSREQ
from kraft_spark.decode import LogFile, decode_buffer
from kraft_spark.source import to_batches
from kraft_spark.worker import freeze_imports
from kwire.client import KafkaClient
from kwire.errors import ErrorCode, KraftError
from kwire.quorum_client import fetch_quorum

METADATA_TOPIC = "__cluster_metadata"
METADATA_TOPIC_ID = uuid.UUID(int=1)  # Kafka's fixed topic id of __cluster_metadata
_RETRYABLE = {
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.UNKNOWN_LEADER_EPOCH,
    ErrorCode.BROKER_NOT_AVAILABLE,
}


def parse_bootstrap(text: str) -> list[tuple[str, int]]:
    out = []
    for item in text.split(","):
        host, _, port = item.strip().rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"bootstrap.controller entry {item!r} is not host:port")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise ValueError("bootstrap.controller is empty")
    return out


class Leader:
    """Who leads now, as DescribeQuorum tells (contract 2)."""

    def __init__(self, cluster_id: str, leader_id: int, epoch: int, hwm: int, host: str, port: int) -> None:
        self.cluster_id, self.id, self.epoch, self.hwm = cluster_id, leader_id, epoch, hwm
        self.host, self.port = host, port


async def discover(bootstrap: list[tuple[str, int]], timeout_ms: int) -> Leader:
    cluster_id, info = await fetch_quorum(bootstrap, 2, timeout_ms)
    if info.leader_id < 0:
        raise KraftError("no leader is known yet")
    endpoint = next(iter(info.endpoints.get(info.leader_id, ())), "")
    hostport = endpoint.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if not port.isdigit():
        raise KraftError(f"leader {info.leader_id} has no usable endpoint ({endpoint!r})")
    return Leader(
        cluster_id, info.leader_id, info.leader_epoch, info.high_watermark, host.strip("[]"), int(port)
    )


def _fetch(leader: Leader, offset: int, max_bytes: int) -> Any:
    part = FREQ.FetchPartition(
        partition=0,
        current_leader_epoch=leader.epoch,
        fetch_offset=offset,
        last_fetched_epoch=leader.epoch,
        partition_max_bytes=max_bytes,
    )
    return FREQ.FetchRequest(
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=max_bytes,
        topics=[FREQ.FetchTopic(topic=METADATA_TOPIC, topic_id=METADATA_TOPIC_ID, partitions=[part])],
        cluster_id=leader.cluster_id,
        replica_id=-1,
        replica_state=FREQ.ReplicaState(replica_id=-1, replica_epoch=-1),
    )


async def _snapshot_bytes(client: KafkaClient, leader: Leader, end_offset: int, epoch: int) -> bytes:
    """The whole snapshot (end_offset, epoch), chunk by chunk (contract 3)."""
    chunks: list[bytes] = []
    position = 0
    while True:
        req = FSREQ.FetchSnapshotRequest(
            cluster_id=leader.cluster_id,
            replica_id=-1,
            max_bytes=1 << 20,
            topics=[
                FSREQ.TopicSnapshot(
                    name=METADATA_TOPIC,
                    partitions=[
                        FSREQ.PartitionSnapshot(
                            partition=0,
                            current_leader_epoch=leader.epoch,
                            snapshot_id=FSREQ.SnapshotId(end_offset=end_offset, epoch=epoch),
                            position=position,
                        )
                    ],
                )
            ],
        )
        resp = await client.send(req)
        if resp.error_code != ErrorCode.NONE or not resp.topics or not resp.topics[0].partitions:
            raise KraftError(f"FetchSnapshot failed: {ErrorCode(resp.error_code).name}")
        part = resp.topics[0].partitions[0]
        if part.error_code != ErrorCode.NONE:
            raise KraftError(f"FetchSnapshot failed: {ErrorCode(part.error_code).name}")
        data = bytes(part.unaligned_records or b"")
        chunks.append(data)
        position += len(data)
        if position >= part.size or not data:
            return b"".join(chunks)


class LogStartMovedError(KraftError):
    """The range's start is below the leader's log start and its planned snapshot is not the one to read."""


async def _fetch_part(client: KafkaClient, leader: Leader, pos: int) -> Any:
    resp = await client.send(_fetch(leader, pos, 1 << 20))
    if resp.error_code != ErrorCode.NONE:
        raise KraftError(f"Fetch failed: {ErrorCode(resp.error_code).name}")
    part = resp.responses[0].partitions[0]
    if part.error_code != ErrorCode.NONE:
        raise KraftError(f"Fetch failed: {ErrorCode(part.error_code).name}")
    return part


class _Session:
    """A connection to whoever leads now, re-discovered after any failure (contract 2)."""

    def __init__(self, bootstrap: list[tuple[str, int]], request_timeout_ms: int) -> None:
        self.bootstrap, self.timeout_ms = bootstrap, request_timeout_ms
        self.leader: Leader | None = None
        self.client: KafkaClient | None = None

    async def connect(self) -> tuple[Leader, KafkaClient]:
        if self.leader is None or self.client is None:
            await self.close()
            self.leader = await discover(self.bootstrap, self.timeout_ms)
            self.client = KafkaClient(
                self.leader.host, self.leader.port, client_id="kraft-spark", request_timeout=5.0
            )
        return self.leader, self.client

    async def reset(self) -> None:
        await self.close()
        await asyncio.sleep(0.1)

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()
        self.leader, self.client = None, None


async def probe(
    bootstrap: list[tuple[str, int]], offset: int, request_timeout_ms: int
) -> tuple[int, tuple[int, int] | None]:
    """(high watermark, the snapshot (end offset, epoch) to read first when ``offset`` is below the log start)."""
    session = _Session(bootstrap, request_timeout_ms)
    try:
        leader, client = await session.connect()
        part = await _fetch_part(client, leader, offset)
        hwm = max(leader.hwm, part.high_watermark)
        if part.snapshot_id.end_offset >= 0:
            return hwm, (part.snapshot_id.end_offset, part.snapshot_id.epoch)
        return hwm, None
    finally:
        await session.close()


async def read_range(
    bootstrap: list[tuple[str, int]],
    start: int,
    end: int,
    *,
    snapshot: tuple[int, int] | None = None,
    request_timeout_ms: int,
    read_timeout_ms: int,
) -> list[dict[str, Any]]:
    """Rows of the committed records in ``[start, end)``, after ``snapshot`` if planned (contracts 2-3)."""
    deadline = time.monotonic() + read_timeout_ms / 1000
    rows: list[dict[str, Any]] = []
    pos = start
    session = _Session(bootstrap, request_timeout_ms)
    last_error = ""
    try:
        while pos < end:
            if time.monotonic() > deadline:
                raise KraftError(f"could not read offsets {pos}..{end} in time: {last_error}")
            try:
                leader, client = await session.connect()
                if snapshot is not None and pos < snapshot[0]:
                    snap = await _snapshot_bytes(client, leader, *snapshot)
                    where = LogFile(f"fetch-snapshot://{leader.host}:{leader.port}", "snapshot", leader.id, 0)
                    rows.extend(decode_buffer(where, snap))
                    pos = snapshot[0]
                    continue
                part = await _fetch_part(client, leader, pos)
            except (KraftError, OSError) as exc:
                last_error = str(exc)
                await session.reset()
                continue
            if part.snapshot_id.end_offset >= 0:
                raise LogStartMovedError(
                    f"offset {pos} is below the leader's log start (snapshot {part.snapshot_id.end_offset}); "
                    "start a new query with a later startingOffset"
                )
            limit = min(end, part.high_watermark)
            where = LogFile(f"fetch://{leader.host}:{leader.port}", "log", leader.id, pos)
            advanced = pos
            for row in decode_buffer(where, bytes(part.records or b"")):
                offset = row.get("offset")
                if offset is None:
                    if str(row.get("error", "")).startswith("torn"):
                        break  # a Fetch answer may end inside a batch (MaxBytes): read it next time
                    raise KraftError(f"leader {leader.id} sent a bad batch: {row['error']}")
                if pos <= offset < limit:
                    rows.append(row)
                    advanced = max(advanced, offset + 1)
            if advanced == pos:
                # Nothing new below the limit yet: a new leader still learning the high watermark.
                last_error = f"leader {leader.id} high watermark {part.high_watermark} below {end}"
                await asyncio.sleep(0.05)
            pos = advanced
    finally:
        await session.close()
    return rows


class RangePartition(InputPartition):
    def __init__(self, start: int, end: int, snapshot: tuple[int, int] | None) -> None:
        super().__init__((start, end, snapshot))
        self.start, self.end, self.snapshot = start, end, snapshot


class KraftStreamReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str], schema: T.StructType) -> None:
        text = options.get("bootstrap.controller")
        if not text:
            raise ValueError("the kraft stream needs option('bootstrap.controller', 'host:port')")
        self.bootstrap = parse_bootstrap(text)
        self.schema = schema
        self.start = int(options.get("startingOffset", "0"))
        self.request_timeout_ms = int(options.get("requestTimeoutMs", "5000"))
        self.read_timeout_ms = int(options.get("readTimeoutMs", "120000"))
        self.latest = self.start

    def initialOffset(self) -> dict[str, int]:
        return {"offset": self.start}

    def latestOffset(self, start: dict[str, int] | None = None, limit: Any = None) -> dict[str, int]:
        """The high watermark (contract 1); ``start``/``limit`` are pyspark >= 4.2's admission control (the
        default limit reads all available), absent on 4.0-4.1."""
        begin = self.latest if start is None else int(start["offset"])
        try:
            hwm, snapshot = asyncio.run(probe(self.bootstrap, begin, self.request_timeout_ms))
        except (KraftError, OSError):
            return {"offset": self.latest}  # an election in progress: no new offsets this trigger
        self.latest = max(self.latest, hwm)
        if snapshot is not None and snapshot[0] > begin:
            # Below the log start: this batch is the snapshot, then the log from its end (contract 3).
            self.latest = max(self.latest, snapshot[0])
            return {"offset": self.latest, "snapshot_end": snapshot[0], "snapshot_epoch": snapshot[1]}
        return {"offset": self.latest}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        if end["offset"] <= start["offset"]:
            return []
        snapshot = None
        if "snapshot_end" in end and start["offset"] < end["snapshot_end"]:
            snapshot = (end["snapshot_end"], end["snapshot_epoch"])
        return [RangePartition(start["offset"], end["offset"], snapshot)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, RangePartition)
        freeze_imports()
        rows = asyncio.run(
            read_range(
                self.bootstrap,
                partition.start,
                partition.end,
                snapshot=partition.snapshot,
                request_timeout_ms=self.request_timeout_ms,
                read_timeout_ms=self.read_timeout_ms,
            )
        )
        yield from to_batches(iter(rows), self.schema, 4096)

    def commit(self, end: dict[str, int]) -> None:
        """Nothing to release: the quorum keeps committed entries (until a snapshot, contract 3)."""
