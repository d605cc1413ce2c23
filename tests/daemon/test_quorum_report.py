"""kraft-metadata-quorum report layout (Kafka's MetadataQuorumCommand output)."""

from __future__ import annotations

import uuid

import pytest
from click.testing import CliRunner

from kraftd.storage.uuids import ZERO_UUID, uuid_to_str
from tests.daemon.cluster import free_ports
from tools.quorum_cli import main
from tools.quorum_report import QuorumInfo, Replica, ReportError, replication_report, status_report

D1, D2 = uuid.UUID(int=5), uuid.UUID(int=6)


def info(**kw: object) -> QuorumInfo:
    base: dict[str, object] = dict(
        leader_id=2,
        leader_epoch=7,
        high_watermark=40,
        voters=(
            Replica(1, D1, 38, 1000, 990),
            Replica(2, D2, 41, 1005, 1005),
            Replica(3, ZERO_UUID, 41, 1003, 1003),
        ),
        observers=(Replica(9, ZERO_UUID, 12, 900, -1),),
        endpoints={1: ("CONTROLLER://127.0.0.1:9093",), 2: ("CONTROLLER://127.0.0.1:9094", "X://[::1]:1")},
    )
    base.update(kw)
    return QuorumInfo(**base)  # type: ignore[arg-type]


def test_status_report_matches_kafka_layout() -> None:
    text = status_report("abc", info())
    assert text == (
        "ClusterId:              abc\n"
        "LeaderId:               2\n"
        "LeaderEpoch:            7\n"
        "HighWatermark:          40\n"
        "MaxFollowerLag:         3\n"
        "MaxFollowerLagTimeMs:   15\n"
        f'CurrentVoters:          [{{"id": 1, "directoryId": "{uuid_to_str(D1)}", '
        '"endpoints": ["CONTROLLER://127.0.0.1:9093"]}, '
        f'{{"id": 2, "directoryId": "{uuid_to_str(D2)}", '
        '"endpoints": ["CONTROLLER://127.0.0.1:9094", "X://[::1]:1"]}, {"id": 3}]\n'
        'CurrentObservers:       [{"id": 9}]\n'
    )


def test_status_lag_time_rules() -> None:
    caught_up = (Replica(2, D2, 41, 1, 1), Replica(1, D1, 41, 1, 1))
    assert "MaxFollowerLagTimeMs:   0\n" in status_report("c", info(voters=caught_up))
    unknown = (Replica(1, D1, 30, -1, -1), Replica(2, D2, 41, 1, 1))
    assert "MaxFollowerLagTimeMs:   -1\n" in status_report("c", info(voters=unknown))
    with pytest.raises(ReportError):
        status_report("c", info(leader_id=-1))


def test_replication_report_columns_and_order() -> None:
    text = replication_report(info())
    lines = text.splitlines()
    assert lines[0].split("\t")[:-1] == [
        "NodeId",
        "DirectoryId           ",
        "LogEndOffset",
        "Lag",
        "LastFetchTimestamp",
        "LastCaughtUpTimestamp",
        "Status  ",
    ]
    cells = [[c.strip() for c in line.split("\t")[:-1]] for line in lines[1:]]
    assert cells == [
        ["2", uuid_to_str(D2), "41", "0", "1005", "1005", "Leader"],
        ["1", uuid_to_str(D1), "38", "3", "1000", "990", "Follower"],
        ["3", "AAAAAAAAAAAAAAAAAAAAAA", "41", "0", "1003", "1003", "Follower"],
        ["9", "AAAAAAAAAAAAAAAAAAAAAA", "12", "29", "900", "-1", "Observer"],
    ]
    assert all(line.endswith("\t") for line in lines)


def test_replication_report_human_readable() -> None:
    text = replication_report(info(), human_readable=True, now_ms=2000)
    assert "995 ms ago" in text and "1000 ms ago" in text


def test_quorum_cli_usage_and_unreachable_errors() -> None:
    (port,) = free_ports(1)  # nothing listens there
    runner = CliRunner()
    result = runner.invoke(main, ["describe", "--status"])
    assert (
        result.exit_code == 2
        and "Exactly one of --bootstrap-server or --bootstrap-controller" in result.output
    )
    base = ["--bootstrap-controller", f"127.0.0.1:{port}", "--timeout-ms", "300"]
    result = runner.invoke(main, [*base, "describe"])
    assert result.exit_code == 1 and "One of --status or --replication" in result.output
    result = runner.invoke(main, [*base, "describe", "--status", "--replication"])
    assert result.exit_code == 1 and "Only one of --status or --replication" in result.output
    result = runner.invoke(main, [*base, "describe", "--status", "--human-readable"])
    assert result.exit_code == 1 and "--human-readable is only supported" in result.output
    result = runner.invoke(main, [*base, "describe", "--status"])
    assert result.exit_code == 1 and f"127.0.0.1:{port}" in result.output


@pytest.mark.parametrize("reset", [False, True])
def test_quorum_cli_hints_at_security_when_a_listener_closes_a_plaintext_client(
    tmp_path, reset: bool
) -> None:
    """A TLS or SASL listener closes a plaintext client unanswered (or resets it, when the request's bytes were not
    all read); the one-line error says what to configure."""
    import socket
    import struct
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]

    def refuse() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.recv(1 if reset else 64)
            if reset:  # close with unread bytes and no linger: the peer gets a RST
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()

    threading.Thread(target=refuse, daemon=True).start()
    runner = CliRunner()
    base = ["--bootstrap-controller", f"127.0.0.1:{port}", "--timeout-ms", "300"]
    remove = [
        "remove-controller",
        "--controller-id",
        "2",
        "--controller-directory-id",
        uuid_to_str(uuid.uuid4()),
    ]
    try:
        for args in (["describe", "--status"], remove):
            result = runner.invoke(main, [*base, *args])
            lines = result.output.strip().splitlines()
            assert result.exit_code == 1 and len(lines) == 1, result.output
            assert "set security.protocol" in lines[0], lines
        cfg = tmp_path / "client.properties"
        cfg.write_text(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
            'sasl.jaas.config=x required username="a" password="b";\n'
        )
        result = runner.invoke(main, [*base, "--command-config", str(cfg), "describe", "--status"])
        assert result.exit_code == 1 and "security.protocol" not in result.output, result.output
    finally:
        server.close()
