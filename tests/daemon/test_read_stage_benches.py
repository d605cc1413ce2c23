"""bench/read_stages.py and bench/read_hops.py at a tiny size (issue 25): every read is split into its hops in
both quorums, and the bare relay times both kinds of read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_read_stages_splits_every_read_into_its_hops(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "bench/read_stages.py", "--samples", "20", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())
    lin, stale = report["linearizable"], report["stale"]
    assert lin["reads"] == stale["reads"] == 20, report
    for stage in ("c->F", "F ask", "F->L", "L answer", "L->F", "F answer", "F->c", "c decode"):
        assert len(lin[stage]) == 4 and lin[stage][0] > 0, (stage, lin)
    assert "F->L" not in stale and stale["F answer"][0] > 0, stale
    assert lin["servers_slices_per_read"] > 0 and stale["servers_cpu_us_per_read"] > 0, report


def test_read_hops_times_the_direct_and_the_relayed_read() -> None:
    done = subprocess.run(
        [sys.executable, "bench/read_hops.py", "--samples", "40", "--slices", "2", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    res = json.loads(done.stdout.strip().splitlines()[-1])
    assert 0 < res["direct_p50_us"] <= res["direct_p99_us"], res
    assert 0 < res["relayed_p50_us"] <= res["relayed_p99_us"], res
