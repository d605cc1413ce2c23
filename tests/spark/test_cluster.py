"""kraft-analytics on a real Spark standalone cluster: a master and two workers, each its own process started by
pyspark's ``spark-class``, on loopback. The batch source (the report's tables), the sweep and the live stream run
with ``--master spark://127.0.0.1:PORT`` in a separate driver process and give exactly local mode's results."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from kraft_spark.cli import main
from kraft_spark.standalone import StandaloneCluster
from tests.helpers.spark import three_controllers
from tools.local_quorum import LocalQuorum

pytestmark = pytest.mark.slow

CLI = str(Path(sys.executable).parent / "kraft-analytics")
TABLES = [
    "leader_timeline",
    "failovers",
    "broker_events",
    "topic_counts",
    "commit_rate",
    "node_lag",
    "voter_history",
    "topic_history",
    "broker_history",
    "sweep",
]


@pytest.fixture(scope="module")
def cluster(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    c = StandaloneCluster(tmp_path_factory.mktemp("standalone"), workers=2, cores=1, memory="1g")
    with c:
        assert c.alive_workers() == 2
        started = list(c.procs)
        yield c
    assert len(started) == 3 and all(p.poll() is not None for p in started), "every Spark process stopped"


def _on_cluster(cluster: StandaloneCluster, *args: str) -> str:
    done = subprocess.run(
        [CLI, *args, "--master", cluster.url], capture_output=True, text=True, timeout=900, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stderr


def _local(*args: str) -> str:
    result = CliRunner().invoke(main, [*args, "--master", "local[2]"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _rows(path: Path) -> list[dict[str, Any]]:
    """Every row, in one canonical order (the row's values as text)."""
    return sorted(pq.read_table(path).to_pylist(), key=lambda r: [str(r[k]) for k in sorted(r)])


def _stream_rows(path: Path, below: int) -> list[dict[str, Any]]:
    rows = [r for r in pq.read_table(path).to_pylist() if r["offset"] < below]
    return sorted(rows, key=lambda r: (r["file_kind"], r["offset"]))


def test_report_and_sweep_on_the_cluster_equal_local(
    spark: Any, cluster: StandaloneCluster, tmp_path: Path
) -> None:
    logs = three_controllers(tmp_path / "logs")
    args = ["--seeds", "0-11", "--scenario", "zombie_leader", "--scenario", "failover_kill"]
    args += ["--bug", "no_check_quorum"]
    _local("report", str(logs), "--out", str(tmp_path / "local"), *args)
    printed = _on_cluster(cluster, "report", str(logs), "--out", str(tmp_path / "remote"), *args)
    assert "decoded 258 rows from 3 files" in printed
    apps = cluster.status()["completedapps"]
    assert isinstance(apps, list) and apps, "the report ran as an application of the standalone master"
    for name in TABLES:
        ours, theirs = _rows(tmp_path / "local" / name), _rows(tmp_path / "remote" / name)
        assert ours == theirs and (ours or name == "voter_history"), name
    assert any(not r["ok"] for r in _rows(tmp_path / "remote" / "sweep"))


def _wait_hw(q: LocalQuorum, above: int, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, info = q.describe()
        if info.high_watermark > above:
            return int(info.high_watermark)
        time.sleep(0.5)
    raise AssertionError(f"the high watermark did not pass {above}")


def test_live_stream_on_the_cluster_equals_local(
    spark: Any, cluster: StandaloneCluster, tmp_path: Path
) -> None:
    (tmp_path / "q").mkdir()
    q = LocalQuorum(tmp_path / "q", 3, load=(1, 40, 1))
    try:
        q.start_all()
        q.wait_leader(timeout=60)
        target = _wait_hw(q, 30)
        bootstrap = ",".join(f"127.0.0.1:{p}" for p in q.ports)
        args = ["stream", "--bootstrap-controller", bootstrap, "--until-offset", str(target)]
        _on_cluster(cluster, *args, "--out", str(tmp_path / "remote"))
        _local(*args, "--out", str(tmp_path / "local"))
    finally:
        q.stop_all()
    ours = _stream_rows(tmp_path / "local" / "rows", target)
    theirs = _stream_rows(tmp_path / "remote" / "rows", target)
    assert [r["offset"] for r in theirs] == list(range(target)), "every committed offset exactly once"
    assert ours == theirs
