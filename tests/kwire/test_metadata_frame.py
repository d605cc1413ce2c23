from __future__ import annotations

import pytest

from generated.kraft_version_record import KRaftVersionRecord
from kwire.errors import CorruptRecordError
from kwire.metadata_frame import decode_metadata_frame, decode_metadata_record, encode_metadata_record


def test_frame_golden_and_round_trip():
    msg = KRaftVersionRecord(version=0, kraft_version=1)
    raw = encode_metadata_record(300, 0, msg)
    assert raw[:4] == bytes.fromhex("01ac0200")  # frame 1, api key 300 (two-byte varint), version 0
    assert raw[4:] == msg.encode(0)
    key, version, body = decode_metadata_frame(raw)
    assert (key, version, bytes(body)) == (300, 0, msg.encode(0))
    assert decode_metadata_record(raw, {300: KRaftVersionRecord}) == (300, 0, msg)


@pytest.mark.parametrize(
    "raw", [b"", b"\x00\x01\x00", b"\x02\x01\x00", b"\x01", b"\x01\x80", b"\x01\x01\xff\xff\xff\xff\x7f"]
)
def test_bad_frames_are_corrupt(raw):
    with pytest.raises(CorruptRecordError):
        decode_metadata_frame(raw)


def test_unknown_api_key_and_bad_body():
    with pytest.raises(CorruptRecordError):
        decode_metadata_record(b"\x01\x05\x00", {})
    with pytest.raises(CorruptRecordError):
        decode_metadata_record(b"\x01\x05\x00\x00", {5: KRaftVersionRecord})
