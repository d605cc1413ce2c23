"""A live 3-node quorum under hostile clients: the leader keeps its role and keeps committing.

Attacks on the leader's controller listener (each bounded so the test stays under a minute): random frames,
mutated ApiVersions requests, a 2 GB size prefix, slowloris (200 connections sending one byte a second for 20 s,
more than ``max.connections``), then 300 idle connections past ``connections.max.idle.ms``. Longer runs:
``KRAFTD_SLOWLORIS_SECONDS=600 KRAFTD_SLOWLORIS_CONNECTIONS=500 pytest tests/daemon/test_hostile_clients.py``.
"""

from __future__ import annotations

import os
import random
import socket
import struct
import time
from pathlib import Path

import pytest

from generated.api_versions_request import ApiVersionsRequest
from kwire.headers import encode_request
from tests.daemon.cluster import Cluster
from tests.helpers.daemon import read_acks

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SLOWLORIS_SECONDS = float(os.environ.get("KRAFTD_SLOWLORIS_SECONDS", "20"))
SLOWLORIS_CONNECTIONS = int(os.environ.get("KRAFTD_SLOWLORIS_CONNECTIONS", "200"))
MAX_CONNECTIONS = 150
IDLE_MS = 3000
ATTACK_MB = 16  # leader RSS the attacks may add beyond the load's commits
COMMIT_KB = 0.85  # leader RSS a commit of the load may add (measured 0.76-0.79)
LIMITS = {
    "max.connections": str(MAX_CONNECTIONS),
    "connections.max.idle.ms": str(IDLE_MS),
    "socket.request.max.bytes": str(1 << 20),
    # Generous timeouts: a loaded 2-core box must not fail over for reasons unrelated to the attack.
    "controller.quorum.election.timeout.ms": "3000",
    "controller.quorum.fetch.timeout.ms": "6000",
}


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def closed_by_server(sock: socket.socket, timeout: float) -> bool:
    """True once the server closed (EOF or reset); responses that arrive first are skipped."""
    sock.settimeout(timeout)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not sock.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
    return False


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def api_versions_v3() -> bytes:
    return encode_request(18, 3, 7, "hostile", ApiVersionsRequest("kraftd-test", "1.0"))


def mutate(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(buf))
        buf[i] = rng.randrange(256)
    if rng.random() < 0.3:
        del buf[rng.randrange(len(buf)) :]
    return bytes(buf)


def test_hostile_clients_do_not_move_the_leader_or_stop_commits(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, load=(2, 100), extra=LIMITS)
    cluster.start_all()
    rng = random.Random(14)
    try:
        before = cluster.wait_leader(30)
        leader, port = before.leader_id, cluster.ports[before.leader_id - 1]
        pid = cluster.procs[leader].pid
        time.sleep(1.0)
        rss_before = rss_kb(pid)
        acks_before = len(read_acks(cluster))

        # 1. Bad frames: every connection is closed by the server.
        not_closed = 0
        for i in range(300):
            with connect(port) as s:
                if i % 3 == 0:
                    blob = rng.randbytes(rng.randint(0, 64))
                    s.sendall(struct.pack(">i", len(blob)) + blob)
                elif i % 3 == 1:
                    body = mutate(rng, api_versions_v3())
                    # a mutated request may still be valid; garbage after it then makes the frame invalid
                    s.sendall(struct.pack(">i", len(body)) + body + b"\xff\xff\xff\xf0")
                else:
                    s.sendall(rng.randbytes(rng.randint(1, 32)) + b"\x80\x00\x00\x00")
                not_closed += not closed_by_server(s, 5)
        assert not_closed == 0, f"{not_closed} bad connections left open"
        with connect(port) as s:
            s.sendall(struct.pack(">i", 2**31 - 1) + b"\x00\x12")  # 2 GB size prefix
            assert closed_by_server(s, 5)

        # 2. Slowloris: more connections than max.connections, each one byte a second.
        lorises = []
        for _ in range(SLOWLORIS_CONNECTIONS):
            try:
                lorises.append(connect(port))
            except OSError:
                pass
        prefix = struct.pack(">i", 1000)
        end = time.monotonic() + SLOWLORIS_SECONDS
        sent = 0
        while time.monotonic() < end:
            for s in lorises:
                try:
                    s.send(prefix[sent % 4 : sent % 4 + 1] if sent < 4 else b"x")
                except OSError:
                    pass
            sent += 1
            time.sleep(1.0)
        shed = sum(closed_by_server(s, 0.01) for s in lorises)
        for s in lorises:
            s.close()
        assert shed >= SLOWLORIS_CONNECTIONS - MAX_CONNECTIONS, f"only {shed} slowloris connections shed"

        # 3. Hundreds of idle connections: all closed after connections.max.idle.ms.
        idle = [connect(port) for _ in range(300)]
        t0 = time.monotonic()
        still_open = [
            s for s in idle if not closed_by_server(s, max(0.1, IDLE_MS / 1000 + 5 - (time.monotonic() - t0)))
        ]
        for s in idle:
            s.close()
        assert not still_open, f"{len(still_open)} idle connections still open"

        # The leader kept its role and kept committing; memory stayed bounded.
        after = cluster.wait_leader(30)
        assert (after.leader_id, after.leader_epoch) == (leader, before.leader_epoch)
        time.sleep(1.0)
        acks_after = len(read_acks(cluster))
        assert acks_after > acks_before + 100, f"commits stalled: {acks_before} -> {acks_after}"
        rss_growth_mb = (rss_kb(pid) - rss_before) / 1024
        # The load's own commits are kept too: 0.76-0.79 KB of anonymous RSS per commit in five runs (52.5 MB for
        # 66k commits on pyenv's 3.11.7, 60.7-65.3 MB for 79-84k on Debian's faster 3.11.2), so the bound allows
        # for them and leaves the attacks ATTACK_MB: a fixed 64 MB failed once a faster interpreter committed more.
        allowed_mb = ATTACK_MB + (acks_after - acks_before) * COMMIT_KB / 1024
        print(
            f"\nhostile: acks {acks_before} -> {acks_after}, leader RSS +{rss_growth_mb:.1f} MB"
            f" (allowed {allowed_mb:.1f}), shed {shed}"
        )
        assert rss_growth_mb < allowed_mb
        assert cluster.procs[leader].poll() is None
    finally:
        cluster.stop_all()
    text = cluster.log_file(leader).read_text(errors="replace")
    assert "Traceback" not in text
    warnings = text.count(" WARNING kwire.server")
    # 300 bad frames + 2 GB + shed connections, at most 10 lines per 10 s window plus one summary each.
    assert warnings <= 10 * 12, f"{warnings} warning lines"
    assert "similar warnings suppressed" in text
