"""The batch source's input partitions (kraft_spark.source contract 1): equal byte ranges over the files, each row
once and in order whatever the cut (kraft_spark.decode contract 5), as many partitions as the session's default
parallelism, and through Spark the same rows as the row decoder."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_schema

from kraft_spark.batches import slice_batches, to_batches
from kraft_spark.decode import LogFile, decode_file, find_files
from kraft_spark.source import MAX_SPLIT_BYTES, MIN_SPLIT_BYTES, partition_count, plan_slices, row_schema
from kraftd.storage.log import MetadataLog
from kwire.records import build_data_batch
from tests.helpers.spark import FEATURE_LEVEL, META, NO_OP, make_kraftd_log, three_controllers


def _rows(batches: Any) -> list[dict[str, Any]]:
    return pa.Table.from_batches(list(batches), schema=to_arrow_schema(row_schema())).to_pylist()


def _reference(files: list[LogFile], include_control: bool = True) -> list[dict[str, Any]]:
    rows = (r for f in files for r in decode_file(f, include_control=include_control))
    return _rows(to_batches(rows, row_schema(), 4096))


def _size(f: LogFile) -> int:
    return os.stat(f.path).st_size if os.path.exists(f.path) else 1


def _odd_logs(tmp_path: Path) -> list[LogFile]:
    """Varied files: three controllers' logs, a snapshot, a CRC mismatch with a torn tail, bad framing (magic
    3) mid-file, an empty segment and a file that is gone."""
    files = find_files(three_controllers(tmp_path / "three"))
    kraftd = make_kraftd_log(tmp_path / "kraftd")
    part = kraftd / "node" / META
    shutil.copy(part / "00000000000000000000.log", part / "00000000000000000002-0000000001.checkpoint")
    seg = part / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    data[200] ^= 0xFF  # a CRC mismatch in the second batch
    seg.write_bytes(bytes(data) + data[:30])  # and a torn tail
    bad = part / "00000000000000000100.log"
    pos = 0
    while pos < 400:  # the first batch at or after byte 400
        pos += 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
    framing = bytearray(data)
    framing[pos + 16] = 3  # its magic: the walk of this file ends there
    bad.write_bytes(bytes(framing))
    (part / "00000000000000000200.log").write_bytes(b"")
    files += find_files(kraftd)
    files.append(LogFile(str(tmp_path / "gone" / "00000000000000000000.log"), "segment", 3, 0))
    return files


@pytest.mark.parametrize("n", [1, 2, 3, 7, 50, 10_000])
def test_byte_ranges_yield_every_row_once_in_file_order(tmp_path: Path, n: int) -> None:
    files = _odd_logs(tmp_path)
    sizes = [_size(f) for f in files]
    parts = plan_slices(files, sizes, n)
    assert len(parts) == min(n, sum(sizes)) and all(parts)
    # Equal ranges: every partition's bytes within one byte of total / n.
    spans = [
        sum((sizes[files.index(f)] if end is None else end) - start for f, start, end in p) for p in parts
    ]
    assert max(spans) - min(spans) <= 1 and sum(spans) == sum(sizes)
    for include_control in (True, False):
        ours = [
            r
            for p in parts
            for r in _rows(
                slice_batches(p, to_arrow_schema(row_schema()), 5, include_control=include_control)
            )
        ]
        assert ours == _reference(files, include_control)
    errors = [r["error"] for r in _reference(files) if r["error"] is not None]
    assert any("CRC" in e for e in errors) and any("torn" in e for e in errors)
    assert any("framing" in e for e in errors) and any("cannot read" in e for e in errors)


def _log(root: Path, records: int, segment_bytes: int) -> Path:
    part = root / "n1" / META
    part.mkdir(parents=True)
    (root / "n1" / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=parts\n")
    log = MetadataLog(part, segment_bytes, fsync=False)
    for offset in range(0, records, 50):
        values = [FEATURE_LEVEL if i % 10 == 0 else NO_OP for i in range(50)]
        log.append(build_data_batch(values, base_offset=offset, partition_leader_epoch=1, timestamp=offset))
    log.flush()
    log.close()
    return root


def test_partitions_follow_the_default_parallelism_with_the_row_decoders_rows(
    spark: Any, tmp_path: Path
) -> None:
    root = _log(tmp_path / "big", 40_000, 100_000)
    files = find_files(root)
    assert len(files) >= 5 and sum(_size(f) for f in files) > 2 * MIN_SPLIT_BYTES
    assert spark.sparkContext.defaultParallelism == 2
    reference = _reference(files)
    for options, partitions in (({}, 2), ({"partitions": "5"}, 5), ({"partitions": "1"}, 1)):
        reader = spark.read.format("kraft")
        for k, v in options.items():
            reader = reader.option(k, v)
        df = reader.load(str(root))
        assert df.rdd.getNumPartitions() == partitions
        rows = [r.asDict(recursive=True) for r in df.collect()]
        assert rows == reference
    # A log under MIN_SPLIT_BYTES is one partition: a second task would cost more than it saves.
    small = make_kraftd_log(tmp_path / "small", segment_bytes=1500)
    assert len(find_files(small)) >= 3
    assert spark.read.format("kraft").load(str(small)).rdd.getNumPartitions() == 1


def test_the_default_count_is_one_per_slot_fewer_when_small_more_when_huge() -> None:
    assert [partition_count(10 * MIN_SPLIT_BYTES, p) for p in (1, 2, 8)] == [1, 2, 8]
    assert partition_count(MIN_SPLIT_BYTES + 1, 8) == 2 and partition_count(0, 8) == 1
    assert (
        partition_count(10 * MAX_SPLIT_BYTES, 2) == 10 and partition_count(10 * MAX_SPLIT_BYTES + 1, 2) == 11
    )
