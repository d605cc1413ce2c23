"""The CI chaos run (about two minutes): seeded faults on real 3- and 5-node quorums, then every check.

Longer runs: ``scripts/chaos.sh --minutes 60 [--nodes 5] [--seed S]`` (writes a report).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chaos.run import chaos_run, summary
from tests.interop.kafka import classpath

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]


@pytest.mark.parametrize(
    ("nodes", "seconds", "seed", "kafka_nodes"),
    [
        (3, 75, 2, 0),
        (5, 45, 5, 0),
        pytest.param(3, 50, 3, 1, marks=pytest.mark.interop, id="3-50-3-kafka1"),
    ],
)
def test_seeded_chaos_run_loses_nothing(
    tmp_path: Path, nodes: int, seconds: int, seed: int, kafka_nodes: int
) -> None:
    """The third run is a mixed quorum: node 1 is Apache Kafka's own controller (faults reach it as any other
    node's; slow-disk, disk-full and clock jumps stay on kraftd nodes)."""
    if kafka_nodes:
        classpath()  # skips, or fails under CI, without Kafka's jars
    r = chaos_run(
        tmp_path,
        nodes=nodes,
        seconds=seconds,
        seed=seed,
        hold=(1.0, 4.0),
        gap=(1.0, 3.0),
        kafka_nodes=kafka_nodes,
    )
    print("\n" + summary(r))
    assert r["records_acked"] > 200, summary(r)
    assert not r["unexpected_deaths"], (r["unexpected_deaths"], summary(r))  # a cause before its consequences
    assert r["records_lost"] == 0 and r["duplicates"] == 0, (r["lost_sample"], summary(r))
    assert not r["divergent"], r["divergent"]
    assert r["caught_up"], summary(r)
    assert not r["liveness_violations"], r["liveness_violations"]
    assert sum(r["faults"].values()) >= 5, r["faults"]
