"""kraft-dump-log: batches, CRC status, torn tails and decoded control records."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from generated.leader_change_message import LeaderChangeMessage, Voter
from kraftd.config import Endpoint
from kraftd.storage.bootstrap import BootstrapVoter, write_bootstrap_checkpoint
from kraftd.storage.log import MetadataLog
from kraftd.storage.uuids import random_uuid, uuid_to_str
from kwire.control import ControlRecordType, control_key
from kwire.records import Record, build_batch, build_data_batch
from tools.dump_log_cli import main


def make_log(tmp_path: Path) -> Path:
    log = MetadataLog(tmp_path, 1 << 20)
    lc = LeaderChangeMessage(version=0, leader_id=2, voters=[Voter(1), Voter(2)], granting_voters=[Voter(2)])
    rec = Record(0, 0, control_key(ControlRecordType.LEADER_CHANGE), lc.encode(0))
    log.append(build_batch([rec], base_offset=0, partition_leader_epoch=3, base_timestamp=5, is_control=True))
    log.append(build_data_batch([b"ab", b"cde"], base_offset=1, partition_leader_epoch=3, timestamp=7))
    log.flush()
    log.close()
    return tmp_path / "00000000000000000000.log"


def test_dump_segment_with_control_and_data(tmp_path: Path) -> None:
    seg = make_log(tmp_path)
    result = CliRunner().invoke(main, [str(seg), "--print-data-log"])
    assert result.exit_code == 0, result.output
    out = result.output.splitlines()
    assert out[0] == f"Dumping {seg}"
    assert out[1] == "Log starting offset: 0"
    assert out[2].startswith("baseOffset: 0 lastOffset: 0 count: 1 ")
    assert (
        "partitionLeaderEpoch: 3" in out[2]
        and "isControl: true" in out[2]
        and out[2].endswith("isvalid: true")
    )
    assert "| offset: 0 " in out[3]
    assert (
        'LeaderChange: {"version":0,"leaderId":2,"voters":[{"voterId":1},{"voterId":2}],"grantingVoters":[{"voterId":2}]}'
        in out[3]
    )
    assert out[4].startswith("baseOffset: 1 lastOffset: 2 count: 2 ") and "isControl: false" in out[4]
    assert out[5].endswith("payload: 6162") and "valueSize: 2" in out[5]


def test_dump_reports_bad_crc_and_torn_tail(tmp_path: Path) -> None:
    seg = make_log(tmp_path)
    data = bytearray(seg.read_bytes())
    data[-2] ^= 0x10
    seg.write_bytes(bytes(data) + b"\x00" * 20)
    result = CliRunner().invoke(main, [str(seg)])
    assert result.exit_code == 1
    assert "baseOffset: 1 lastOffset: 2 partitionLeaderEpoch: 3" in result.output
    assert "isvalid: false" in result.output
    assert "torn batch" in result.output


def test_dump_bootstrap_checkpoint(tmp_path: Path) -> None:
    d = random_uuid()
    path = write_bootstrap_checkpoint(
        tmp_path, [BootstrapVoter(1, d, (Endpoint("CONTROLLER", "127.0.0.1", 9093),))], now_ms=1000
    )
    result = CliRunner().invoke(main, [str(path)])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "SnapshotHeader: {" in out and "SnapshotFooter: {" in out
    assert 'KRaftVersion: {"version":0,"kraftVersion":1}' in out
    assert f'"voterDirectoryId":"{uuid_to_str(d)}"' in out and '"port":9093' in out
    assert "baseOffset: 3 lastOffset: 3" in out
