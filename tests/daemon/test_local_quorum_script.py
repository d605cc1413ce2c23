"""scripts/quorum.sh (it execs ``python -m tools.local_quorum``): fails loudly and keeps the logs when its own
nodes do not come up or one dies, formats every run with a fresh cluster id, and exits 0 on Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon.cluster import CLUSTER_ID, Cluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "quorum.sh"


def consecutive_free_ports(n: int = 3) -> int:
    for _ in range(200):
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        base = probe.getsockname()[1]
        probe.close()
        socks = []
        try:
            for p in range(base, base + n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no run of free ports")


def launch(base: int, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tools.local_quorum", "--base-port", str(base), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def other_quorum(tmp_path: Path) -> Iterator[Cluster]:
    base = consecutive_free_ports()
    (tmp_path / "other").mkdir()
    c = Cluster(tmp_path / "other", ports=[base, base + 1, base + 2])
    c.start_all()
    try:
        c.wait_leader()
        yield c
    finally:
        c.stop_all()


def test_fails_loudly_when_another_quorum_holds_its_ports(other_quorum: Cluster, tmp_path: Path) -> None:
    """Before: the other quorum (same fixed cluster id) answered, so the script reported success."""
    keep = tmp_path / "run"
    proc = launch(other_quorum.ports[0], "--dir", str(keep))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, out + err
    assert "local quorum failed: node" in err and "exited with code 1" in err
    assert "cannot listen on" in err and f"logs kept in {keep}" in err
    assert any("cannot listen on" in (keep / f"node-{i}.log").read_text() for i in (1, 2, 3))
    assert "Local quorum" not in out


def test_a_node_that_dies_fails_the_run_and_keeps_the_logs(tmp_path: Path) -> None:
    base = consecutive_free_ports()
    keep = tmp_path / "run"
    proc = launch(base, "--dir", str(keep))
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("Local quorum (cluster "), first
        cluster_id = re.search(r"cluster (\S+)\)", first)
        assert cluster_id is not None and cluster_id.group(1) != CLUSTER_ID  # a fresh id per run
        os.kill(int((keep / "node-2.pid").read_text()), signal.SIGKILL)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 1
    assert "local quorum failed: node 2 exited with code -9" in err and f"logs kept in {keep}" in err
    assert all((keep / f"node-{i}.log").exists() for i in (1, 2, 3))


def test_ctrl_c_stops_cleanly_and_removes_the_temporary_directory() -> None:
    base = consecutive_free_ports()
    proc = launch(base)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    where = re.search(r"running in (\S+) ", first)
    assert where is not None, first
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert not Path(where.group(1)).exists()


def test_quorum_sh_runs_the_module_and_documents_dir() -> None:
    text = SCRIPT.read_text()
    assert "exec .venv/bin/python -m tools.local_quorum" in text and "--dir" in text
