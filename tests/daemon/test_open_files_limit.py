"""tools.process_limits contract 1 on a real ``kraftd start``: a node started with a low soft open-files limit
runs with the hard one, as Kafka's controllers do (the JVM's MaxFDLimit), and says so in its log."""

from __future__ import annotations

import resource
import subprocess
from pathlib import Path

import pytest

from tests.daemon.cluster import KRAFTD, free_ports
from tests.helpers.daemon import standalone_config, stop, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]


def _soft_open_files(pid: int) -> int:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError("no open files limit in /proc/PID/limits")


def test_a_node_started_under_a_low_soft_limit_runs_with_the_hard_one(tmp_path: Path) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= 256:
        pytest.fail(f"this machine's hard open-files limit ({hard}) leaves nothing to raise")
    (port,) = free_ports(1)
    cfg = standalone_config(tmp_path, port)
    err = tmp_path / "stderr.txt"

    def low_soft_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))

    with err.open("wb") as out:
        proc = subprocess.Popen([KRAFTD, "start", str(cfg)], stderr=out, preexec_fn=low_soft_limit)
    try:
        wait_for(lambda: "-> leader in epoch" in err.read_text(), 30, "leadership")
        soft = _soft_open_files(proc.pid)
    finally:
        assert stop(proc) == 0
    assert soft > 256 and (hard == resource.RLIM_INFINITY or soft == hard), soft
    assert f"open files limit raised from 256 to {soft} (the hard limit)" in err.read_text()
