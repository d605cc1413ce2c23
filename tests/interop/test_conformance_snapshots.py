"""The conformance battery against three kraftd controllers that take a snapshot every second
(``metadata.log.max.snapshot.interval.ms=1000``, idle NoOp records on), as test_conformance runs it against
Kafka's: FetchSnapshot must serve any retained snapshot, so the snapshot checks pass even when the leader
writes a newer snapshot between a check's requests (issue 21 §3; Kafka's KafkaRaftClient serves every
snapshot its retention keeps).

``KRAFTD_SNAPSHOT_BATTERY_RUNS=10`` repeats the battery (the suite runs it once)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from tests.helpers.interop import NOT_ADVERTISED, NOT_PROBED, STATE_CHANGING, battery, failures
from tests.helpers.interop import running_quorum as _quorum
from tests.interop.kafka import MixedQuorum, classpath

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(1800)]

RUNS = int(os.environ.get("KRAFTD_SNAPSHOT_BATTERY_RUNS", "1"))
SNAPSHOT_CHECKS = {
    "fetch-snapshot.errors",
    "fetch-snapshot.positions",
    "fetch-snapshot.position-out-of-range",
}


@pytest.fixture(scope="module")
def kraftd_snapshotting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MixedQuorum]:
    classpath()
    quorum = _quorum(
        tmp_path_factory,
        "kraftd3-snapshots",
        ["kraftd"] * 3,
        bootstrap="kip853",
        extra={"metadata.log.max.snapshot.interval.ms": "1000"},
    )
    q = next(quorum)
    try:
        q.wait_leader()
        time.sleep(3)  # a few snapshots exist before the first battery (a fresh quorum has none to serve)
        yield q
    finally:
        quorum.close()  # stops the processes


@pytest.mark.parametrize("run", range(RUNS))
def test_battery_passes_on_kraftd_snapshotting_every_second(
    kraftd_snapshotting: MixedQuorum, run: int
) -> None:
    kraftd_snapshotting.wait_leader()
    results = battery(kraftd_snapshotting)
    assert not failures(results), failures(results)
    passed = {i for i, r in results.items() if r.status == "PASS"}
    assert passed >= SNAPSHOT_CHECKS, {i: results[i].detail for i in SNAPSHOT_CHECKS}
    for i, r in results.items():
        if r.status == "SKIP":
            assert NOT_ADVERTISED in r.detail or (i in STATE_CHANGING and NOT_PROBED in r.detail), (
                i,
                r.detail,
            )
