"""kraft-decode on synthetic captures: reassembly (split, reordered and retransmitted segments), pairing by
correlation id, the ApiVersions v0 fallback, record batches in Fetch responses, malformed frames, pcapng."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from generated.api_versions_request import ApiVersionsRequest
from generated.describe_quorum_request import DescribeQuorumRequest
from generated.describe_quorum_request import PartitionData as DQP
from generated.describe_quorum_request import TopicData as DQT
from generated.describe_quorum_response import DescribeQuorumResponse
from generated.fetch_request import FetchPartition, FetchRequest, FetchTopic
from generated.fetch_response import FetchableTopicResponse, FetchResponse, PartitionData
from generated.leader_change_message import LeaderChangeMessage, Voter
from generated.request_header import RequestHeader
from kwire.apiversions import build_api_versions_response, unsupported_version_response
from kwire.control import ControlRecordType, build_control_batch
from kwire.headers import encode_request, encode_response
from kwire.metadata_frame import encode_metadata_record
from kwire.records import build_data_batch
from tools.decode.cli import decode_capture
from tools.decode.pcap import TCP_ACK, TCP_SYN, PcapError, PcapWriter, read_packets

CLIENT, SERVER = ("127.0.0.1", 40001), ("127.0.0.1", 9093)
DECODE = str(Path(sys.executable).with_name("kraft-decode"))


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def fetch_body() -> FetchResponse:
    control = build_control_batch(
        [(ControlRecordType.LEADER_CHANGE, LeaderChangeMessage(leader_id=2, voters=[Voter(1), Voter(2)]))],
        base_offset=0,
        partition_leader_epoch=3,
        timestamp=5,
    )
    noop = encode_metadata_record(20, 0, b"\x00")  # NoOpRecord v0: an empty tagged-field section
    feature = encode_metadata_record(
        12, 0, b"\x00\x01\x02"
    )  # not a FeatureLevelRecord body: flagged, shown as hex
    data = build_data_batch([noop, feature], base_offset=1, partition_leader_epoch=3, timestamp=6)
    part = PartitionData(partition_index=0, high_watermark=3, records=control + data + data[:20])
    return FetchResponse(responses=[FetchableTopicResponse(topic_id=uuid.UUID(int=1), partitions=[part])])


def exchange() -> list[tuple[tuple[str, int], bytes]]:
    """(sender, bytes) in send order: three request/response pairs, one ApiVersions at an unknown version."""
    av = ApiVersionsRequest(client_software_name="t", client_software_version="1").encode(4)
    head = RequestHeader(request_api_key=18, request_api_version=9, correlation_id=0, client_id="c").encode(2)
    dq_req = DescribeQuorumRequest([DQT("__cluster_metadata", [DQP(0)])])
    fetch_req = FetchRequest(
        max_wait_ms=0,
        topics=[FetchTopic(topic_id=uuid.UUID(int=1), partitions=[FetchPartition(fetch_offset=0)])],
    )
    return [
        (CLIENT, frame(head + av)),
        (SERVER, frame(encode_response(18, 0, 0, unsupported_version_response({18: (0, 4)})))),
        (
            CLIENT,
            frame(
                encode_request(
                    18, 4, 1, "c", ApiVersionsRequest(client_software_name="t", client_software_version="1")
                )
            ),
        ),
        (SERVER, frame(encode_response(18, 4, 1, build_api_versions_response(4, {18: (0, 4), 55: (0, 2)})))),
        (
            CLIENT,
            frame(encode_request(55, 2, 2, "c", dq_req)) + frame(encode_request(1, 17, 3, "c", fetch_req)),
        ),
        (SERVER, frame(encode_response(55, 2, 2, DescribeQuorumResponse()))),
        (SERVER, frame(encode_response(1, 17, 3, fetch_body()))),
        (SERVER, frame(encode_response(55, 2, 77, DescribeQuorumResponse()))),
        (CLIENT, struct.pack(">i", -3)),
    ]


def write(path: Path, *, shuffle: bool) -> None:
    w = PcapWriter(path)
    seq = {CLIENT: 100, SERVER: 900}
    w.write(1.0, CLIENT, SERVER, 99, b"", TCP_SYN)
    w.write(1.0, SERVER, CLIENT, 899, b"", TCP_SYN | TCP_ACK)
    t = 2.0
    for sender, data in exchange():
        other = SERVER if sender == CLIENT else CLIENT
        pieces = [(seq[sender] + i, data[i : i + 7]) for i in range(0, len(data), 7)]
        if shuffle and len(pieces) > 2:  # reorder and retransmit
            pieces = [pieces[1], pieces[0], pieces[1], *pieces[2:], pieces[-1]]
        for s, chunk in pieces:
            t += 0.001
            w.write(t, sender, other, s, chunk)
        seq[sender] += len(data)
    w.close()


@pytest.mark.parametrize("shuffle", [False, True])
def test_pairs_decodes_and_flags(tmp_path: Path, shuffle: bool) -> None:
    pcap = tmp_path / "x.pcap"
    write(pcap, shuffle=shuffle)
    msgs = decode_capture(pcap)
    summary = [(m.kind, m.api, m.version, m.correlation_id, m.paired) for m in msgs]
    assert summary == [
        ("request", "ApiVersions", 9, 0, True),
        ("response", "ApiVersions", 9, 0, True),
        ("request", "ApiVersions", 4, 1, True),
        ("response", "ApiVersions", 4, 1, True),
        ("request", "DescribeQuorum", 2, 2, True),
        ("request", "Fetch", 17, 3, True),
        ("response", "DescribeQuorum", 2, 2, True),
        ("response", "Fetch", 17, 3, True),
        ("response", None, None, 77, False),
        ("malformed", None, None, None, False),
    ]
    assert msgs[0].notes and "outside the spec" in msgs[0].notes[0]
    assert msgs[1].body["error_code"] == 35 and msgs[1].body["api_keys"] == [
        {"api_key": 18, "min_version": 0, "max_version": 4}
    ]
    assert msgs[3].body["api_keys"][1]["api_key"] == 55
    assert msgs[5].body["topics"][0]["topic_id"] == str(uuid.UUID(int=1)) and msgs[5].client_id == "c"
    records = msgs[7].body["responses"][0]["partitions"][0]["records"]
    batches = records["batches"]
    assert [(b["base_offset"], b["control"]) for b in batches] == [(0, True), (1, False)]
    assert batches[0]["records"][0]["control"] == "LEADER_CHANGE"
    assert batches[0]["records"][0]["value"]["leader_id"] == 2
    assert [(r["offset"], r["type"], r["value"]) for r in batches[1]["records"]] == [
        (1, "NoOpRecord", {}),  # decoded by the generated class: no fields
        (2, "FeatureLevelRecord", "000102"),
    ]
    assert "FeatureLevelRecord v0 does not decode" in batches[1]["records"][1]["error"]
    assert records["truncated_tail"] == 20
    assert "matches no request" in (msgs[8].error or "")
    assert "frame size -3" in (msgs[9].error or "")


def pcapng(path: Path, src: Path) -> None:
    """The same packets as ``src`` in a little-endian pcapng with raw-IP link type and nanosecond stamps."""
    raw = src.read_bytes()[24:]
    out = bytearray()
    shb_body = struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)
    out += (
        struct.pack("<II", 0x0A0D0D0A, 12 + len(shb_body)) + shb_body + struct.pack("<I", 12 + len(shb_body))
    )
    opts = struct.pack("<HHB3x", 9, 1, 9) + struct.pack("<HH", 0, 0)
    idb = struct.pack("<HHI", 101, 0, 0) + opts
    out += struct.pack("<II", 1, 12 + len(idb)) + idb + struct.pack("<I", 12 + len(idb))
    pos = 0
    while pos < len(raw):
        sec, usec, incl, _ = struct.unpack_from("<IIII", raw, pos)
        packet = raw[pos + 16 + 14 : pos + 16 + incl]  # drop the Ethernet header
        pos += 16 + incl
        ns = sec * 10**9 + usec * 1000
        body = struct.pack("<IIIII", 0, ns >> 32, ns & 0xFFFFFFFF, len(packet), len(packet)) + packet
        body += b"\x00" * (-len(body) % 4)
        out += struct.pack("<II", 6, 12 + len(body)) + body + struct.pack("<I", 12 + len(body))
    path.write_bytes(bytes(out))


def test_pcapng_reads_like_pcap(tmp_path: Path) -> None:
    write(tmp_path / "a.pcap", shuffle=True)
    pcapng(tmp_path / "a.pcapng", tmp_path / "a.pcap")
    a = [m.to_json() for m in decode_capture(tmp_path / "a.pcap")]
    b = [m.to_json() for m in decode_capture(tmp_path / "a.pcapng")]
    assert len(a) == 10 and a == b
    assert [s.ts for s in read_packets(tmp_path / "a.pcap")] == pytest.approx(
        [s.ts for s in read_packets(tmp_path / "a.pcapng")]
    )


def test_cli_json_text_and_bad_input(tmp_path: Path) -> None:
    write(tmp_path / "a.pcap", shuffle=False)
    out = subprocess.run(
        [DECODE, str(tmp_path / "a.pcap"), "--json", "--ports", "9093"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    lines = [json.loads(x) for x in out.stdout.splitlines()]
    assert [x["kind"] for x in lines].count("request") == 4 and lines[5]["api"] == "Fetch"
    text = subprocess.run(
        [DECODE, str(tmp_path / "a.pcap"), "--summary"], capture_output=True, text=True, timeout=60
    )
    assert (
        "request Fetch v17 cid=3" in text.stdout
        and "UNPAIRED ERROR: response with correlation id 77" in text.stdout
    )
    (tmp_path / "junk").write_bytes(b"not a capture")
    bad = subprocess.run([DECODE, str(tmp_path / "junk")], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("kraft-decode: ") and "Traceback" not in bad.stderr
    with pytest.raises(PcapError):
        list(read_packets(tmp_path / "junk"))


@pytest.mark.parametrize("version", [0, 1, 2])
def test_only_the_fields_of_the_decoded_version_are_shown(tmp_path: Path, version: int) -> None:
    """DescribeQuorum v0 has no error_message, nodes (v2+) nor the voters' timestamps (v1+): a v0 answer
    shows none of them; each field shows exactly in the versions its spec gives it."""
    req = DescribeQuorumRequest([DQT("__cluster_metadata", [DQP(0)])])
    w = PcapWriter(tmp_path / "dq.pcap")
    w.write(1.0, CLIENT, SERVER, 99, b"", TCP_SYN)
    w.write(1.0, SERVER, CLIENT, 899, b"", TCP_SYN | TCP_ACK)
    w.write(2.0, CLIENT, SERVER, 100, frame(encode_request(55, version, 5, "c", req)))
    w.write(2.1, SERVER, CLIENT, 900, frame(encode_response(55, version, 5, DescribeQuorumResponse())))
    w.close()
    (_, resp) = decode_capture(tmp_path / "dq.pcap")
    body = resp.to_json()["body"]
    assert ("error_message" in body, "nodes" in body) == (version >= 2, version >= 2), body
    assert set(body) == {f.attr for f in DescribeQuorumResponse.FIELDS if f.versions[0] <= version}
