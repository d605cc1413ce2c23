"""Kafka's ``kafka-dump-log --cluster-metadata-decoder`` decodes every metadata record type we write.

Invariant: a segment holding one populated record of every (type, version) Kafka 4.3.1 ships, written with
kwire's batch builder and metadata frame, is printed by Kafka's DumpLogSegments with one JSON payload per record,
of the right type and version, and with the values we wrote.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from generated.messages import METADATA_RECORDS
from kraft_spark.decode import decode_file, find_files
from kwire.metadata_frame import encode_metadata_record
from kwire.records import build_data_batch
from tests.interop.kafka import dump_log
from tests.messages.strategies import populated

pytestmark = [pytest.mark.interop]


def _type_name(cls_name: str) -> str:
    """Kafka's MetadataRecordType constant: RegisterBrokerRecord -> REGISTER_BROKER_RECORD."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", cls_name).upper().replace("K_RAFT", "KRAFT")


def test_dump_log_decodes_every_record_type(tmp_path: Path) -> None:
    written: list[tuple[str, int, object]] = []
    segment = bytearray()
    offset = 0
    for key, spec in sorted(METADATA_RECORDS.items()):
        for version in range(spec.lowest_version, spec.highest_version + 1):
            record = populated(spec.cls, version, flexible=True, seed=key)
            value = encode_metadata_record(key, version, record)
            segment += build_data_batch([value], base_offset=offset, partition_leader_epoch=1, timestamp=1000)
            written.append((_type_name(spec.cls.__name__), version, record))
            offset += 1
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(segment))
    out = dump_log([path], workdir=tmp_path).check().stdout
    payloads = [json.loads(line.split("payload: ", 1)[1]) for line in out.splitlines() if "payload: " in line]
    assert len(payloads) == len(written), out[-3000:]
    checked = 0
    for payload, (type_name, version, record) in zip(payloads, written, strict=True):
        assert (payload["type"], payload["version"]) == (type_name, version)
        data = payload["data"]
        # Spot-check values: every int/str/bool top-level field Kafka prints equals what we wrote.
        for info in type(record).FIELDS:  # type: ignore[attr-defined]
            camel = info.name[:1].lower() + info.name[1:]
            value = getattr(record, info.attr)
            if camel in data and isinstance(value, (int, str, bool)):
                assert data[camel] == value, (type_name, version, camel)
                checked += 1
    assert checked > 60  # the spot-check compared real values


def _with_tagged_defaults(record: Any, version: int) -> Any:
    """``record`` with every field that is tagged at ``version`` back at its spec default."""
    blank = type(record)()
    for info in type(record).FIELDS:
        tv = info.tagged_versions
        if tv is not None and tv[0] <= version <= tv[1]:
            setattr(record, info.attr, getattr(blank, info.attr))
    return record


def test_record_json_is_what_dump_log_prints_record_by_record(tmp_path: Path) -> None:
    """kraft_spark's record_json against Kafka's DumpLogSegments, for every (type, version) Kafka 4.3.1 ships:
    all defaults, every field set, and every field set but the tagged ones (which Kafka's generated JSON
    converter leaves out at their defaults: PartitionRecord leaderRecoveryState, PartitionChangeRecord replicas,
    BrokerRegistrationChangeRecord fenced, RegisterBrokerRecord cordonedLogDirs, ...)."""
    part = tmp_path / "__cluster_metadata-0"
    part.mkdir()
    segment = bytearray()
    offset = 0
    tagged_at_default = []  # per record: does it have a tagged field at its default?
    for key, spec in sorted(METADATA_RECORDS.items()):
        for version in range(spec.lowest_version, spec.highest_version + 1):
            has_tagged = any(
                i.tagged_versions is not None and i.tagged_versions[0] <= version <= i.tagged_versions[1]
                for i in spec.cls.FIELDS
            )
            records = [
                spec.cls(),
                populated(spec.cls, version, flexible=True, seed=key),
                _with_tagged_defaults(populated(spec.cls, version, flexible=True, seed=key), version),
            ]
            tagged_at_default += [has_tagged, False, has_tagged]
            values = [encode_metadata_record(key, version, r) for r in records]
            segment += build_data_batch(values, base_offset=offset, partition_leader_epoch=1, timestamp=1)
            offset += len(values)
    path = part / "00000000000000000000.log"
    path.write_bytes(bytes(segment))
    out = dump_log([path], workdir=tmp_path).check().stdout
    payloads = [json.loads(line.split("payload: ", 1)[1]) for line in out.splitlines() if "payload: " in line]
    (f,) = find_files(tmp_path)
    rows = list(decode_file(f))
    assert len(rows) == len(payloads) == offset, out[-2000:]
    for row, payload, omits in zip(rows, payloads, tagged_at_default, strict=True):
        assert row["record_json"] is not None and row["record_version"] == payload["version"]
        ours, kafka = json.loads(row["record_json"]), payload["data"]
        assert list(ours.items()) == list(kafka.items()), (payload["type"], row["record_json"], kafka)
        cls = METADATA_RECORDS[row["record_type_id"]].cls
        present = [i for i in cls.FIELDS if i.versions[0] <= payload["version"] <= i.versions[1]]
        assert (len(kafka) < len(present)) == omits, payload  # Kafka did leave out the tagged defaults
