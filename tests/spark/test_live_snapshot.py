"""The live stream starting below a real Kafka leader's log start: the snapshot arrives through FetchSnapshot
(as rows of kind "snapshot", exactly Kafka's own dump of that checkpoint), then the log from its end offset."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kraft_spark.decode import SEGMENT_RE
from tests.helpers.spark import max_offset as _max_offset
from tests.helpers.spark import wait_until as _wait
from tests.interop.kafka import MixedQuorum, dump_log
from tests.spark.oracle import parse_dump

pytestmark = [pytest.mark.slow, pytest.mark.interop]


def _log_start(q: MixedQuorum) -> int:
    bases = [int(m.group(1)) for p in q.node(1).metadata_dir.iterdir() if (m := SEGMENT_RE.match(p.name))]
    return min(bases, default=0)


def _keep_checkpoints(q: MixedQuorum, keep: Path) -> None:
    """Copy every snapshot Kafka writes (its cleaner deletes old ones) so the served one can be dumped later."""
    keep.mkdir(exist_ok=True)
    for p in q.node(1).metadata_dir.glob("*.checkpoint"):
        if not (keep / p.name).exists():
            try:
                shutil.copyfile(p, keep / p.name)
            except FileNotFoundError:
                pass


def test_stream_behind_log_start_reads_the_snapshot_then_the_log(
    spark: Any, tmp_path: Path, type_ids: dict[str, int]
) -> None:
    # Small segments, a snapshot every 2 s, and retention so small that Kafka's metadata log cleaner (every 60 s)
    # deletes every segment a snapshot covers: the log start moves past 0.
    extra = {
        "metadata.max.idle.interval.ms": "50",
        "internal.metadata.log.segment.bytes": "4096",
        "metadata.log.max.snapshot.interval.ms": "2000",
        "metadata.max.retention.bytes": "1",
        "metadata.max.retention.ms": "1000",
    }
    q = MixedQuorum(tmp_path / "q", ["kafka"], bootstrap="kip853", extra=extra)
    out, checkpoint, keep = tmp_path / "out", tmp_path / "checkpoint", tmp_path / "snapshots"
    with q:
        q.start_all()
        q.wait_leader(timeout=120)
        _wait("Kafka to delete covered segments", lambda: _log_start(q) > 0, 150)
        _keep_checkpoints(q, keep)
        target = q.describe().high_watermark + 20
        stream = spark.readStream.format("kraft").option("bootstrap.controller", q.bootstrap_servers).load()
        query = (
            stream.writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="500 milliseconds")
            .start()
        )
        try:

            def done() -> bool:
                _keep_checkpoints(q, keep)
                return _max_offset(spark, out) >= target

            _wait(f"offset {target}", done, 120)
        finally:
            query.stop()
        q.stop_all()
    rows = spark.read.parquet(str(out)).orderBy("file_kind", "position", "offset").collect()
    snap = [r for r in rows if r.file_kind == "snapshot"]
    log = sorted((r for r in rows if r.file_kind == "log"), key=lambda r: r.offset)
    assert snap and snap[0].control_type == "SnapshotHeader" and snap[-1].control_type == "SnapshotFooter"
    end = log[0].offset
    assert end > 0
    assert [r.offset for r in log] == list(range(end, end + len(log))), (
        "the log resumes at the snapshot's end"
    )
    # Kafka's own dump of the snapshot it served: the same records, types and control payloads.
    (served,) = keep.glob(f"{end:020d}-*.checkpoint")
    kafka = parse_dump(dump_log([served], workdir=tmp_path).check().stdout)
    assert len(kafka) == len(snap)
    for k, r in zip(kafka, snap, strict=True):
        assert r.offset == k.offset and r.error is None
        if k.control is not None:
            assert r.control_type == k.control
            assert json.loads(r.record_json) == json.loads(k.json_text)
        else:
            assert r.record_type_id == type_ids[k.metadata_type] and r.record_version == k.version
    assert any(r.record_type_id == type_ids["FEATURE_LEVEL_RECORD"] for r in snap)
