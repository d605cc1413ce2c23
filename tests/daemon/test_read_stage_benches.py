"""bench/read_stages.py and bench/read_hops.py at a tiny size (issue 25): every read is split into its hops in
both quorums, and the bare relay times both kinds of read."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.bench import bench_json


def test_read_stages_splits_every_read_into_its_hops(tmp_path: Path) -> None:
    report = bench_json(
        "bench/read_stages.py", "--samples", "20", "--out", str(tmp_path), "--json", timeout=120
    )
    lin, stale = report["linearizable"], report["stale"]
    assert lin["reads"] == stale["reads"] == 20, report
    for stage in ("c->F", "F ask", "F->L", "L answer", "L->F", "F answer", "F->c", "c decode"):
        assert len(lin[stage]) == 4 and lin[stage][0] > 0, (stage, lin)
    assert "F->L" not in stale and stale["F answer"][0] > 0, stale
    assert lin["servers_slices_per_read"] > 0 and stale["servers_cpu_us_per_read"] > 0, report


def test_read_hops_times_the_direct_and_the_relayed_read() -> None:
    res = bench_json("bench/read_hops.py", "--samples", "40", "--slices", "2", "--json", timeout=60)
    assert 0 < res["direct_p50_us"] <= res["direct_p99_us"], res
    assert 0 < res["relayed_p50_us"] <= res["relayed_p99_us"], res
