"""The CI seed budget: KRAFTD_SIM_SEEDS seeds (default 6000) round-robin over every scenario, on
KRAFTD_SIM_WORKERS processes (default 2). Every invariant is checked after every event; every scenario
ends with a liveness check. Prints seeds/second."""

from __future__ import annotations

import os

from kraftd.sim.runner import run_many
from kraftd.sim.scenarios import SCENARIOS

SEEDS = int(os.environ.get("KRAFTD_SIM_SEEDS", "6000"))
WORKERS = int(os.environ.get("KRAFTD_SIM_WORKERS", "2"))


def test_ci_seed_budget() -> None:
    sweep = run_many(range(SEEDS), workers=WORKERS)
    assert len(sweep.results) == SEEDS
    assert {r.scenario for r in sweep.results} == set(SCENARIOS) or SEEDS < len(SCENARIOS)
    print(
        f"\n{SEEDS} seeds in {sweep.seconds:.1f}s: {sweep.seeds_per_second:.2f} seeds/s on {WORKERS} workers"
    )
    failures = sweep.failures
    assert not failures, "\n\n".join(r.report() for r in failures[:3])
