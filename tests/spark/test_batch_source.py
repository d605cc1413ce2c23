"""The ``kraft`` batch source against Kafka's own kafka-dump-log: kraftd logs and a real Kafka controller's log."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kraft_spark.decode import find_files
from tests.helpers.spark import META, make_kraftd_log
from tests.interop.kafka import MixedQuorum, dump_log
from tests.spark.oracle import KafkaRecord, parse_dump


def _ours(spark: Any, path: Path, **options: str) -> list[Any]:
    reader = spark.read.format("kraft")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(str(path)).orderBy("node", "file", "position", "offset").collect()


def _compare(rows: list[Any], kafka: list[KafkaRecord], type_ids: dict[str, int]) -> None:
    assert len(rows) == len(kafka) > 0
    for ours, theirs in zip(rows, kafka, strict=True):
        assert ours.error is None and ours.crc_ok
        assert (ours.offset, ours.timestamp) == (theirs.offset, theirs.timestamp)
        if theirs.control is not None:
            assert ours.is_control and ours.control_type == theirs.control
            assert json.loads(ours.record_json) == json.loads(theirs.json_text)
        else:
            assert not ours.is_control
            assert ours.record_type_id == type_ids[theirs.metadata_type]
            assert ours.record_version == theirs.version
            if ours.record_json is not None:  # a generated class exists for this type
                assert json.loads(ours.record_json) == json.loads(theirs.json_text)


def _kafka_view(files: list[Path], workdir: Path) -> list[KafkaRecord]:
    # Kafka dumps the files in the order given: ours (node, file, position).
    return parse_dump(dump_log(files, workdir=workdir).check().stdout)


@pytest.mark.interop
def test_kraftd_log_matches_kafka_dump_log(spark: Any, tmp_path: Path, type_ids: dict[str, int]) -> None:
    root = make_kraftd_log(tmp_path, segment_bytes=1500)  # several segments: several partitions
    files = [Path(f.path) for f in find_files(root)]
    assert len(files) >= 3
    rows = _ours(spark, root)
    _compare(rows, _kafka_view(files, tmp_path), type_ids)
    assert {r.node for r in rows} == {7}
    assert rows[0].record.leader_change.granting_voters[0].voter_id == 7
    assert [r.offset for r in rows] == list(range(len(rows)))


def test_options_skip_control_records_and_snapshots(spark: Any, tmp_path: Path) -> None:
    root = make_kraftd_log(tmp_path)
    part = root / "node" / META
    shutil.copy(part / "00000000000000000000.log", part / "00000000000000000002-0000000001.checkpoint")
    everything = _ours(spark, root)
    no_control = _ours(spark, root, includeControl="false")
    no_snap = _ours(spark, root, includeSnapshots="false")
    per_file = len(everything) // 2
    assert {r.file_kind for r in everything} == {"segment", "snapshot"}
    assert len(no_control) == len(everything) - 4 and not any(r.is_control for r in no_control)
    assert len(no_snap) == per_file and {r.file_kind for r in no_snap} == {"segment"}


def test_corrupt_and_torn_batches_are_rows_not_crashes(spark: Any, tmp_path: Path) -> None:
    root = make_kraftd_log(tmp_path)
    seg = root / "node" / META / "00000000000000000000.log"
    clean = _ours(spark, root)
    data = bytearray(seg.read_bytes())
    data[200] ^= 0xFF  # inside the second batch's CRC-covered bytes
    seg.write_bytes(bytes(data) + data[:30])  # and a torn tail: a header with no body
    rows = _ours(spark, root)
    bad = [r for r in rows if r.error is not None]
    assert [r.crc_ok for r in bad] == [False, None]
    assert "CRC" in bad[0].error and bad[0].batch_base_offset == 2
    assert "torn" in bad[1].error
    # Every other batch still decodes: one row lost for the one-record batch at offset 2, one error row added.
    good = [r for r in rows if r.error is None]
    assert [r.offset for r in good] == [r.offset for r in clean if r.offset != 2]


@pytest.mark.interop
def test_real_kafka_controller_log_matches_kafka_dump_log(
    spark: Any, tmp_path: Path, type_ids: dict[str, int]
) -> None:
    q = MixedQuorum(
        tmp_path / "q", ["kafka"], bootstrap="kip853", extra={"metadata.max.idle.interval.ms": "100"}
    )
    with q:
        q.start_all()
        q.wait_for(
            "a dozen committed records", lambda i: i.leader_id == 1 and i.high_watermark >= 12, timeout=120
        )
        q.stop_all()
    copy = tmp_path / "copy"
    shutil.copytree(q.node(1).data_dir, copy / "n1")
    files = [Path(f.path) for f in find_files(copy)]
    assert any(f.name.endswith(".checkpoint") for f in files) and any(f.name.endswith(".log") for f in files)
    rows = _ours(spark, copy)
    kafka = _kafka_view(files, tmp_path)
    _compare(rows, kafka, type_ids)
    kinds = {r.record_type_id for r in rows if not r.is_control}
    assert type_ids["FEATURE_LEVEL_RECORD"] in kinds and type_ids["NO_OP_RECORD"] in kinds
