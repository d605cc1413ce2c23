"""Control records: golden bytes written out by hand from the v0 layouts (wire-layouts.txt), kafka-python as an
independent reader of the control batch, and the skipping rules."""

from __future__ import annotations

import struct
import uuid

import pytest
from crc32c import crc32c
from kafka.record.default_records import DefaultRecordBatch

from generated.kraft_version_record import KRaftVersionRecord
from generated.leader_change_message import LeaderChangeMessage
from generated.leader_change_message import Voter as LcVoter
from generated.snapshot_footer_record import SnapshotFooterRecord
from generated.snapshot_header_record import SnapshotHeaderRecord
from generated.voters_record import Endpoint, KRaftVersionFeature, VotersRecord
from generated.voters_record import Voter as VrVoter
from kwire.control import (
    ControlRecordType,
    EndTransactionMarker,
    build_control_batch,
    control_key,
    decode_control_records,
    parse_control_key,
)
from kwire.errors import CorruptRecordError, LocalProtocolError
from kwire.records import Record, build_batch, decode_batch

DIR = uuid.UUID("0123456789abcdef0123456789abcdef")

LEADER_CHANGE = LeaderChangeMessage(
    version=0,
    leader_id=1,
    voters=[LcVoter(voter_id=1), LcVoter(voter_id=2), LcVoter(voter_id=3)],
    granting_voters=[LcVoter(voter_id=1), LcVoter(voter_id=3)],
)
# Version int16 | LeaderId int32 | Voters compact array (len+1) of {VoterId int32, tags} | GrantingVoters | tags
LEADER_CHANGE_V0 = bytes.fromhex("00000000000104000000010000000002000000000300030000000100000000030000")

GOLDEN = [
    (ControlRecordType.LEADER_CHANGE, LEADER_CHANGE, "00000002", LEADER_CHANGE_V0),
    (
        ControlRecordType.SNAPSHOT_HEADER,
        SnapshotHeaderRecord(version=0, last_contained_log_timestamp=0x0102030405060708),
        "00000003",
        bytes.fromhex("0000010203040506070800"),
    ),
    (ControlRecordType.SNAPSHOT_FOOTER, SnapshotFooterRecord(version=0), "00000004", bytes.fromhex("000000")),
    (
        ControlRecordType.KRAFT_VERSION,
        KRaftVersionRecord(version=0, kraft_version=1),
        "00000005",
        bytes.fromhex("0000000100"),
    ),
    (
        ControlRecordType.KRAFT_VOTERS,
        VotersRecord(
            version=0,
            voters=[
                VrVoter(
                    voter_id=7,
                    voter_directory_id=DIR,
                    endpoints=[Endpoint(name="CONTROLLER", host="h", port=9093)],
                    kraft_version_feature=KRaftVersionFeature(
                        min_supported_version=0, max_supported_version=1
                    ),
                )
            ],
        ),
        "00000006",
        bytes.fromhex("00000200000007" + DIR.hex)
        + bytes.fromhex("020b")
        + b"CONTROLLER"
        + bytes.fromhex("02")
        + b"h"
        + bytes.fromhex("23850000000001000000"),
    ),
]


@pytest.mark.parametrize(
    ("kind", "message", "key_hex", "value"), GOLDEN, ids=lambda g: getattr(g, "name", "")
)
def test_golden_control_records(kind, message, key_hex, value):
    raw = build_control_batch([(kind, message)], base_offset=0, partition_leader_epoch=1, timestamp=0)
    rec = decode_batch(raw).records[0]
    assert rec.key == bytes.fromhex(key_hex) == control_key(kind)
    assert rec.value == value
    assert decode_control_records(decode_batch(raw)) == [(kind, message)]


def test_golden_epoch_start_batch():
    """The batch a KRaft leader appends on election at epoch 5, offset 42, kraft.version 0: one LeaderChange."""
    ts = 1_700_000_000_000
    raw = build_control_batch(
        [(ControlRecordType.LEADER_CHANGE, LEADER_CHANGE)],
        base_offset=42,
        partition_leader_epoch=5,
        timestamp=ts,
    )
    key = b"\x00\x00\x00\x02"
    body_len = 1 + 1 + 1 + 1 + len(key) + 1 + len(LEADER_CHANGE_V0) + 1
    record = bytes([body_len << 1, 0, 0, 0, len(key) << 1]) + key + bytes([len(LEADER_CHANGE_V0) << 1])
    record += LEADER_CHANGE_V0 + b"\x00"
    #        attributes: control bit only | last delta | base ts | max ts | pid | pepoch | seq | count
    covered = struct.pack(">hiqqqhii", 0x20, 0, ts, ts, -1, -1, -1, 1) + record
    expected = struct.pack(">qiibI", 42, len(covered) + 9, 5, 2, crc32c(covered)) + covered
    assert raw == expected
    # the same bytes spelled out: offset 42 | length 94 | epoch 5 | magic 2 | crc | attributes 0x20 | delta 0 |
    # timestamps | producer id/epoch/sequence -1 | 1 record: length 44, attrs, ts delta, offset delta, key (4 bytes),
    # value (34 bytes), no headers
    assert raw.hex() == (
        "000000000000002a"
        "0000005e"
        "00000005"
        "02" + f"{crc32c(covered):08x}" + "0020"
        "00000000"
        "0000018bcfe56800"
        "0000018bcfe56800"
        "ffffffffffffffff"
        "ffff"
        "ffffffff"
        "00000001"
        "58"
        "00"
        "00"
        "00"
        "08"
        "00000002"
        "44" + LEADER_CHANGE_V0.hex() + "00"
    )
    # an independent reader agrees
    kb = DefaultRecordBatch(bytearray(raw))
    assert kb.validate_crc() and kb.is_control_batch and kb.base_offset == 42 and kb.leader_epoch == 5
    assert kb.producer_id == -1 and kb.producer_epoch == -1 and kb.base_sequence == -1
    assert [(r.type, r.value) for r in kb] == [(2, LEADER_CHANGE_V0)]


def test_epoch_start_with_kraft_version_1_holds_three_records():
    voters = GOLDEN[4][1]
    raw = build_control_batch(
        [
            (ControlRecordType.LEADER_CHANGE, LEADER_CHANGE),
            (ControlRecordType.KRAFT_VERSION, KRaftVersionRecord(version=0, kraft_version=1)),
            (ControlRecordType.KRAFT_VOTERS, voters),
        ],
        base_offset=10,
        partition_leader_epoch=3,
        timestamp=7,
    )
    b = decode_batch(raw)
    assert b.is_control and not b.is_transactional and b.last_offset == 12
    assert [t for t, _ in decode_control_records(b)] == [2, 5, 6]


def test_leader_change_is_written_at_v0_so_directory_ids_are_refused():
    # Kafka builds the on-disk LeaderChangeMessage from voter ids only and writes it at v0; a directory id
    # (a v1-only, non-ignorable field) cannot be represented, so asking for one is our caller's mistake.
    msg = LeaderChangeMessage(version=0, leader_id=1, voters=[LcVoter(voter_id=1, voter_directory_id=DIR)])
    with pytest.raises(LocalProtocolError, match="VoterDirectoryId"):
        build_control_batch(
            [(ControlRecordType.LEADER_CHANGE, msg)], base_offset=0, partition_leader_epoch=1, timestamp=0
        )


def test_unknown_types_are_skipped_and_versions_above_zero_read_as_zero():
    records = [
        Record(0, 0, b"\x00\x00\x00\x63", b"whatever"),  # unknown type 99
        Record(1, 0, b"\x00\x01\x00\x05", KRaftVersionRecord(version=0, kraft_version=1).encode(0)),
        Record(2, 0, b"\x00\x00\x00\x00", EndTransactionMarker(0, 12).encode()),
    ]
    b = decode_batch(build_batch(records, is_control=True))
    assert decode_control_records(b) == [
        (ControlRecordType.KRAFT_VERSION, KRaftVersionRecord(version=0, kraft_version=1)),
        (ControlRecordType.ABORT, EndTransactionMarker(0, 12)),
    ]


@pytest.mark.parametrize("key", [None, b"", b"\x00\x00\x00", b"\xff\xff\x00\x02"])
def test_malformed_keys_are_corrupt(key):
    b = decode_batch(build_batch([Record(0, 0, key, b"\x00\x00\x00")], is_control=True))
    with pytest.raises(CorruptRecordError):
        decode_control_records(b)
    if key is not None and len(key) >= 4:
        with pytest.raises(CorruptRecordError):
            parse_control_key(key)


def test_undecodable_value_is_corrupt():
    b = decode_batch(build_batch([Record(0, 0, control_key(2), b"\x00")], is_control=True))
    with pytest.raises(CorruptRecordError):
        decode_control_records(b)


def test_misuse_is_local():
    with pytest.raises(LocalProtocolError):
        build_control_batch([], base_offset=0, partition_leader_epoch=0, timestamp=0)
    with pytest.raises(LocalProtocolError):
        build_control_batch(
            [(ControlRecordType.LEADER_CHANGE, SnapshotFooterRecord())],
            base_offset=0,
            partition_leader_epoch=0,
            timestamp=0,
        )
    with pytest.raises(LocalProtocolError):
        decode_control_records(decode_batch(build_batch([Record(0, 0, None, b"x")])))
