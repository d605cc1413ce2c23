"""The Spark reader's columnar batches (kraft_spark.batches) against the row decoder they replace, no Spark needed:
equal rows on varied, corrupt and torn logs, and each distinct record value decoded and rendered once."""

from __future__ import annotations

import gc
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_schema

import kraft_spark.decode as decode
from kraft_spark.batches import file_batches, to_batches
from kraft_spark.decode import LogFile, decode_file, find_files
from kraft_spark.source import row_schema
from kraft_spark.worker import freeze_imports
from kraftd.storage.log import MetadataLog
from kwire.records import build_data_batch
from tests.helpers.spark import META, NO_OP, make_kraftd_log, three_controllers


def _rows(batches: Any) -> list[dict[str, Any]]:
    return pa.Table.from_batches(list(batches), schema=to_arrow_schema(row_schema())).to_pylist()


def _same(f: LogFile, size: int, include_control: bool = True) -> int:
    schema = row_schema()
    ours = _rows(file_batches(f, to_arrow_schema(schema), size, include_control=include_control))
    reference = _rows(to_batches(decode_file(f, include_control=include_control), schema, size))
    assert ours == reference
    return len(ours)


@pytest.mark.parametrize("size", [1, 7, 4096])
def test_columnar_batches_equal_the_row_decoder(tmp_path: Path, size: int) -> None:
    root = three_controllers(tmp_path / "three")
    kraftd = make_kraftd_log(tmp_path / "kraftd")
    part = kraftd / "node" / META
    shutil.copy(part / "00000000000000000000.log", part / "00000000000000000002-0000000001.checkpoint")
    files = find_files(root) + find_files(kraftd)
    assert sum(_same(f, size) for f in files) > 100
    assert sum(_same(f, size, include_control=False) for f in files) > 100


def test_corrupt_torn_and_undecodable_rows_are_equal(tmp_path: Path) -> None:
    root = make_kraftd_log(tmp_path)
    seg = root / "node" / META / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    data[200] ^= 0xFF  # a CRC mismatch in the second batch
    seg.write_bytes(bytes(data) + data[:30])  # and a torn tail
    (f,) = find_files(root)
    assert _same(f, 5) > 40
    rows = _rows(file_batches(f, to_arrow_schema(row_schema()), 5))
    assert sum(r["error"] is not None for r in rows) == 2
    # A frame version that is not 1, an unknown api key, a truncated FeatureLevelRecord, then a good one.
    odd = tmp_path / "odd" / META
    odd.mkdir(parents=True)
    log = MetadataLog(odd, 1 << 20, fsync=False)
    log.append(
        build_data_batch(
            [b"\x02\x0c\x00", b"\x01\x63\x00\x00", b"\x01\x0c\x00\x05ab", NO_OP],
            base_offset=0,
            partition_leader_epoch=1,
            timestamp=5,
        )
    )
    log.flush()
    log.close()
    (g,) = find_files(odd)
    assert _same(g, 3) == 4
    odd_rows = _rows(file_batches(g, to_arrow_schema(row_schema()), 3))
    assert [r["error"] is not None for r in odd_rows] == [True, False, True, False]
    assert odd_rows[1]["record_type_id"] == 99 and odd_rows[1]["record"] is None
    gone = LogFile(str(tmp_path / "missing" / "00000000000000000000.log"), "segment", 3, 0)
    assert _same(gone, 5) == 1


def test_a_repeated_value_is_decoded_and_rendered_once(tmp_path: Path, monkeypatch: Any) -> None:
    # make_kraftd_log: 2 control records, 1 FeatureLevelRecord, ~80 identical NoOpRecords.
    calls: list[str] = []
    to_json = decode.to_json

    def counting(obj: Any, version: int = 32767) -> str:
        calls.append(type(obj).__name__)
        return to_json(obj, version)

    monkeypatch.setattr(decode, "to_json", counting)
    monkeypatch.setattr(decode, "_MEMO", {})
    (f,) = find_files(make_kraftd_log(tmp_path))
    rows = _rows(file_batches(f, to_arrow_schema(row_schema()), 4096))
    assert sum(r["record_type"] == "NoOpRecord" for r in rows) > 60
    assert sorted(calls) == ["FeatureLevelRecord", "KRaftVersionRecord", "LeaderChangeMessage", "NoOpRecord"]


def test_a_worker_freezes_its_imports_in_its_first_two_tasks_only() -> None:
    # pyspark's daemon collects after every task of a reused worker; frozen objects are not walked.
    import multiprocessing as mp

    def child(out: Any) -> None:
        counts = []
        for _ in range(3):
            freeze_imports()
            counts.append(gc.get_freeze_count())
            _garbage = [{"task": i} for i in range(1000)]  # noqa: F841
            del _garbage
            gc.collect()  # as the daemon does after each task
        out.put(counts)

    ctx = mp.get_context("fork")
    q = ctx.SimpleQueue()
    p = ctx.Process(target=child, args=(q,))
    p.start()
    p.join(60)
    first, second, third = q.get()
    assert 0 < first <= second and third <= second


def test_spark_workers_freeze_their_imports(spark: Any) -> None:
    from kraft_spark.sweep import sweep

    assert sweep(spark, range(0, 2), partitions=2).count() == 2
    counts = (
        spark.sparkContext.parallelize(range(8), 8)
        .mapPartitions(lambda _: [__import__("gc").get_freeze_count()])
        .collect()
    )
    assert max(counts) > 10_000
