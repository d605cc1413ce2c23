"""What an operator sees on real processes: one-line start-up errors, logs in Kafka's layout (stderr and
``--log-dir``), role transitions, peer failures and cluster-id mismatches, Prometheus metrics."""

from __future__ import annotations

import re
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from kraftd.config import load_config
from tests.daemon.cluster import KRAFTD, free_ports
from tests.daemon.conftest import write_properties
from tests.helpers.daemon import KAFKA_LINE, fresh_id, standalone_config, stop, wait_for
from tools.storage_cli import format_directory

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.mark.parametrize("which", ["listener", "metrics"])
def test_a_port_in_use_is_a_one_line_error(tmp_path: Path, which: str) -> None:
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    taken = busy.getsockname()[1]
    try:
        if which == "listener":
            cfg = standalone_config(tmp_path, taken)
        else:
            (port,) = free_ports(1)
            cfg = standalone_config(tmp_path, port, **{"metrics.port": str(taken)})
        out = subprocess.run([KRAFTD, "start", str(cfg)], capture_output=True, text=True, timeout=30)
    finally:
        busy.close()
    assert out.returncode == 1
    errors = [ln for ln in out.stderr.splitlines() if not KAFKA_LINE.match(ln)]
    assert len(errors) == 1, out.stderr
    assert errors[0].startswith("kraftd: cannot start: ") and "in use" in errors[0]
    assert str(taken) in errors[0] and "Traceback" not in out.stderr


def test_logs_follow_kafkas_layout_to_stderr_and_a_rotating_file(tmp_path: Path) -> None:
    (port, mport) = free_ports(2)
    cfg = standalone_config(tmp_path, port, **{"metrics.port": str(mport)})
    logs = tmp_path / "logs"
    err = tmp_path / "stderr.txt"
    with err.open("wb") as out:
        proc = subprocess.Popen([KRAFTD, "start", str(cfg), "--log-dir", str(logs)], stderr=out)
    try:
        wait_for(lambda: "-> leader in epoch" in err.read_text(), 30, "leadership")
    finally:
        assert stop(proc) == 0
    stderr_lines = err.read_text().splitlines()
    file_lines = (logs / "server.log").read_text().splitlines()
    assert stderr_lines == file_lines and len(file_lines) >= 5
    for line in file_lines:
        assert KAFKA_LINE.match(line), line
    text = "\n".join(file_lines)
    assert "loaded the metadata log" in text
    assert "unattached in epoch 0 -> leader in epoch 1: the only voter elects itself (kraftd.raft)" in text
    assert "won the election for epoch 1 with votes from [1]" in text
    assert "received SIGTERM, stopping" in text
    assert re.search(r"shut down: resigned in epoch 1, high watermark \d+", text)


def test_three_nodes_log_elections_followers_hwm_and_a_lost_peer(tmp_path: Path) -> None:
    ports = free_ports(3)
    voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(ports))
    cid = fresh_id()
    procs: dict[int, subprocess.Popen[bytes]] = {}
    files = {i: tmp_path / f"node-{i}.log" for i in (1, 2, 3)}
    for i, port in enumerate(ports, 1):
        cfg = write_properties(tmp_path / f"s{i}.properties", i, port, tmp_path / f"d{i}", voters)
        format_directory(load_config(cfg), cid)
        with files[i].open("wb") as out:
            procs[i] = subprocess.Popen([KRAFTD, "start", str(cfg)], stderr=out)

    def text(i: int) -> str:
        return files[i].read_text(errors="replace")

    try:
        wait_for(lambda: any("won the election" in text(i) for i in procs), 30, "an elected leader")
        leader = next(i for i in procs if "won the election" in text(i))
        followers = [i for i in procs if i != leader]
        for i in followers:
            wait_for(lambda i=i: "-> follower in epoch" in text(i), 20, f"node {i} following")
            hwm = re.compile(
                rf"node {i}: high watermark [1-9]\d*, .* follower in epoch \d+ \(leader {leader}\)"
            )
            wait_for(lambda i=i, hwm=hwm: hwm.search(text(i)) is not None, 20, f"node {i} logging its HWM")
        assert f"node {leader}: connected to node" in text(leader)
        victim = followers[0]
        stop(procs.pop(victim))
        wait_for(lambda: f"cannot reach node {victim}" in text(leader), 20, "the lost peer logged")
    finally:
        for p in procs.values():
            stop(p)
    assert f"node {victim}: shutting down" in text(victim)


def test_inconsistent_cluster_id_is_logged_on_both_sides_once_per_interval(tmp_path: Path) -> None:
    """Kafka's receiving controller logs a request with another cluster id (KafkaRaftClient's
    INCONSISTENT_CLUSTER_ID handling); kraftd logs it on both sides, rate-limited to once per 30 s per peer."""
    ports = free_ports(2)
    voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(ports))
    procs = {}
    files = {i: tmp_path / f"node-{i}.log" for i in (1, 2)}
    for i, port in enumerate(ports, 1):
        cfg = write_properties(tmp_path / f"s{i}.properties", i, port, tmp_path / f"d{i}", voters)
        format_directory(load_config(cfg), fresh_id())  # a different cluster id on each node
        with files[i].open("wb") as out:
            procs[i] = subprocess.Popen([KRAFTD, "start", str(cfg)], stderr=out)
    try:

        def both_logged() -> bool:
            t = [files[i].read_text(errors="replace") for i in (1, 2)]
            return all("rejected our VoteRequest with INCONSISTENT_CLUSTER_ID" in x for x in t) and all(
                "rejected VoteRequest from 127.0.0.1:" in x for x in t
            )

        wait_for(both_logged, 30, "INCONSISTENT_CLUSTER_ID on both nodes")
        time.sleep(5)  # several more pre-vote rounds (election timeout 1-2 s): still one line each
    finally:
        for p in procs.values():
            stop(p)
    for i in (1, 2):
        t = files[i].read_text(errors="replace")
        assert t.count("rejected our VoteRequest with INCONSISTENT_CLUSTER_ID") == 1, t
        assert t.count("with INCONSISTENT_CLUSTER_ID: its cluster id") == 1, t


def scrape(port: int) -> dict[str, float]:
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    out = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def test_prometheus_endpoint_on_a_live_node(tmp_path: Path) -> None:
    """Names follow Kafka's KafkaRaftMetrics ('raft-metrics' group) as a JMX exporter spells them."""
    (port, mport) = free_ports(2)
    cfg = standalone_config(tmp_path, port, **{"metrics.port": str(mport)})
    proc = subprocess.Popen([KRAFTD, "start", str(cfg)], stderr=subprocess.DEVNULL)
    try:

        def leading() -> bool:
            try:
                return scrape(mport).get('kafka_server_raft_metrics_current_state{state="leader"}') == 1.0
            except OSError:
                return False

        wait_for(leading, 30, "the metrics endpoint")
        perf = subprocess.run(
            [
                KRAFTD,
                "perf",
                "--bootstrap-controller",
                f"127.0.0.1:{port}",
                "--records",
                "500",
                "--batch",
                "5",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert perf.returncode == 0, perf.stderr
        m = scrape(mport)
    finally:
        stop(proc)
    r = "kafka_server_raft_metrics_"
    issue_names = (
        "current_leader current_epoch high_watermark log_end_offset commit_latency_avg commit_latency_max "
        "election_latency_avg election_latency_max fetch_records_rate append_records_rate poll_idle_ratio_avg "
        "number_of_voters number_of_observers uncommitted_voter_change"
    ).split()
    assert all(r + n in m for n in issue_names), [n for n in issue_names if r + n not in m]
    assert m[r + "current_leader"] == 1 and m[r + "current_epoch"] >= 1
    assert m[r + "high_watermark"] >= 501 and m[r + "log_end_offset"] >= m[r + "high_watermark"]
    assert m[r + "number_of_voters"] == 1 and m[r + "number_of_observers"] == 0
    assert m[r + "uncommitted_voter_change"] == 0
    assert m[r + "commit_latency_max"] >= m[r + "commit_latency_avg"] > 0
    assert m[r + "append_records_rate"] > 0 and m[r + "fetch_records_rate"] == 0
    assert 0 < m[r + "poll_idle_ratio_avg"] <= 1
    assert m[r + "election_latency_max"] >= m[r + "election_latency_avg"] >= 0
    assert sum(v for k, v in m.items() if k.startswith(r + "current_state{")) == 1
    assert m['kafka_network_request_metrics_requests_total{request="KraftdAppend"}'] == 100
    assert m['kafka_network_request_metrics_total_time_seconds_count{request="KraftdAppend"}'] == 100
    assert m["kafka_server_socket_server_metrics_incoming_byte_total"] > 100 * 20
    assert m["kafka_server_socket_server_metrics_outgoing_byte_total"] > 0
    assert m["kafka_server_socket_server_metrics_connection_count"] >= 0
    assert m["process_resident_memory_bytes"] > 0 and m["process_cpu_seconds_total"] > 0
