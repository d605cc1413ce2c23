"""Linearizable reads from every controller, shown on histories of real processes (issue #11's proof).

8 clients write configs through the leader and read them from every controller while the leader is partitioned,
a follower isolated, the leader SIGSTOPped and killed with -9 (tests.chaos.histories). The checker
(tools.lincheck) must accept every linearizable run and reject the same run with kraftd.read.consistency=stale.
About 85 s on 2 cores.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chaos.histories import Run, record_history
from tools.lincheck import check, dump

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _summary(r: Run) -> str:
    return (
        f"reads ok {r.reads_ok} failed {r.reads_failed}, writes ok {r.writes_ok} unknown {r.writes_unknown}, "
        f"faults {r.faults}"
    )


@pytest.mark.parametrize("nodes", [3, 5])
def test_every_history_is_linearizable(tmp_path: Path, nodes: int) -> None:
    run = record_history(tmp_path / "q", nodes=nodes, consistency="linearizable", seed=nodes)
    dump(run.ops, tmp_path / "history.jsonl")
    print(_summary(run))
    assert run.reads_ok >= 100 and run.writes_ok >= 50, _summary(run)
    assert len(run.faults) == 4, run.faults
    verdict = check(run.ops)
    assert verdict.ok, verdict.explain()


def test_stale_reads_are_caught(tmp_path: Path) -> None:
    run = record_history(tmp_path / "q", nodes=3, consistency="stale", seed=3)
    dump(run.ops, tmp_path / "history.jsonl")
    print(_summary(run))
    verdict = check(run.ops)
    assert not verdict.ok, "the checker accepted stale reads: " + _summary(run)
